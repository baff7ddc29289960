#include "kernels/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__linux__)
#include <unistd.h>
#endif

#include "core/common.h"

static unsigned lb_extra; /* LB_CPU_* bits found by detect() (x86 only so far) */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
static int xgetbv_ok(unsigned mask) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (eax & mask) == mask;
}
static char lb_features[256];

/* Linux hands out the 8 KiB AMX tile state only on request (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, process-wide); without it the
 * first tile instruction faults. */
static int amx_permitted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

static lb_isa detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return LB_ISA_SCALAR;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !xgetbv_ok(0x6)) return LB_ISA_SCALAR; /* OS saves SSE+AVX state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return LB_ISA_SCALAR;
    int avx2 = (b >> 5) & 1;
    int avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
    int vnni = (c >> 11) & 1, vbmi = (c >> 1) & 1, vpopcnt = (c >> 14) & 1;
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
    int avxvnni = (a1 >> 4) & 1;
    int amx = ((d >> 24) & 1) && ((d >> 25) & 1); /* AMX-TILE + AMX-INT8 */
    const int gfni = (c >> 8) & 1, amxbf16 = (d >> 22) & 1;
    const int avx512bf16 = (a1 >> 5) & 1;
    snprintf(lb_features, sizeof lb_features, "%s%s%s%s%s%s%s%s%s%s%s%s%s", avx2 ? "avx2 " : "",
             fma ? "fma " : "", f16c ? "f16c " : "", avxvnni ? "avx-vnni " : "",
             avx512f ? "avx512f " : "", avx512bw ? "avx512bw " : "", vnni ? "avx512vnni " : "",
             vbmi ? "avx512vbmi " : "", vpopcnt ? "avx512vpopcntdq " : "", avx512bf16 ? "avx512bf16 " : "",
             gfni ? "gfni " : "",
             amx ? "amx-int8" : "", amx && amxbf16 ? " amx-bf16" : "");
    if (!(avx && avx2 && fma && f16c)) return LB_ISA_SCALAR;
    if (vbmi && avx512f && avx512bw && xgetbv_ok(0xe6)) lb_extra |= LB_CPU_VBMI;
    if (gfni) lb_extra |= LB_CPU_GFNI;
    /* with AVX512-BF16 (vcvtne2ps2bf16), which the bf16 tile kernels use to fill tiles */
    if (amxbf16 && avx512bf16) lb_extra |= LB_CPU_AMXBF16;
    if (avxvnni) lb_extra |= LB_CPU_AVXVNNI;
    if (vpopcnt && avx512f && xgetbv_ok(0xe6)) lb_extra |= LB_CPU_VPOPCNTDQ;
    if (avx512bf16 && avx512f && xgetbv_ok(0xe6)) lb_extra |= LB_CPU_AVX512BF16;
    if (!(avx512f && avx512bw && avx512vl && vnni && xgetbv_ok(0xe6))) return LB_ISA_AVX2;
    /* XCR0 bits 17-18: the OS manages the tile configuration and data */
    if (amx && xgetbv_ok(0x60000) && amx_permitted()) {
        lb_extra |= LB_CPU_AMXQ8;
        return LB_ISA_AMX;
    }
    return LB_ISA_AVX512;
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
static char lb_features[64];
static lb_isa detect(void) {
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    int dp = (hw & HWCAP_ASIMDDP) != 0, mm = (hw2 & HWCAP2_I8MM) != 0;
    snprintf(lb_features, sizeof lb_features, "neon%s%s", dp ? " dotprod" : "", mm ? " i8mm" : "");
    if (dp && mm) return LB_ISA_I8MM;
    if (dp) return LB_ISA_DOTPROD;
    return LB_ISA_NEON;
}
#else
static char lb_features[8];
static lb_isa detect(void) { return LB_ISA_SCALAR; }
#endif


static int lb_detected = -1;
static unsigned lb_disabled;

/* The bits LOWBIT_CPU_OFF names (read once; an unknown name is warned of). */
static unsigned env_off(void) {
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"vbmi", LB_CPU_VBMI},           {"gfni", LB_CPU_GFNI},           {"amx-bf16", LB_CPU_AMXBF16},
                 {"avx-vnni", LB_CPU_AVXVNNI},     {"vpopcntdq", LB_CPU_VPOPCNTDQ}, {"avx512-bf16", LB_CPU_AVX512BF16},
                 {"amx-q8", LB_CPU_AMXQ8}};
    static int done;
    static unsigned off;
    if (done) return off;
    const char *env = getenv("LOWBIT_CPU_OFF");
    for (const char *p = env ? env : ""; *p;) {
        const size_t n = strcspn(p, ",");
        size_t i = 0;
        while (i < sizeof names / sizeof names[0] && (strlen(names[i].name) != n || strncmp(p, names[i].name, n))) i++;
        if (i < sizeof names / sizeof names[0]) off |= names[i].bit;
        else if (n) lb_log(0, "warning: LOWBIT_CPU_OFF: '%.*s' is not one of vbmi|gfni|amx-bf16|avx-vnni|vpopcntdq|avx512-bf16|amx-q8; ignored\n", (int)n, p);
        p += n + (p[n] == ',');
    }
    done = 1;
    return off;
}

unsigned lb_cpu_extra_features(void) {
    lb_cpu_detected();
    return lb_extra & ~lb_disabled & ~env_off();
}

void lb_cpu_disable_features(unsigned bits) { lb_disabled = bits; }
static int lb_level = -1;

lb_isa lb_cpu_detected(void) {
    if (lb_detected < 0) lb_detected = (int)detect();
    return (lb_isa)lb_detected;
}

int lb_cpu_runs(lb_isa level) {
    const lb_isa hw = lb_cpu_detected();
    if (level == LB_ISA_SCALAR) return 1;
    return (lb_isa_is_x86(level) ? lb_isa_is_x86(hw) : lb_isa_is_arm(hw)) && hw >= level;
}

static lb_isa clamp_level(lb_isa want) {
    lb_isa hw = lb_cpu_detected();
    if (want == LB_ISA_SCALAR) return want;
    /* Same family only */
    if (lb_isa_is_x86(hw) != lb_isa_is_x86(want)) return LB_ISA_SCALAR;
    return want < hw ? want : hw;
}

lb_isa lb_cpu_level(void) {
    if (lb_level < 0) {
        lb_isa l = lb_cpu_detected();
        const char *env = getenv("LOWBIT_ISA");
        if (env && *env) {
            int want = lb_isa_from_name(env);
            if (want < 0)
                lb_log(0, "warning: LOWBIT_ISA=%s is not one of scalar|avx2|avx512|amx|neon|dotprod|i8mm; ignored\n", env);
            else
                l = clamp_level((lb_isa)want);
        }
        lb_level = (int)l;
    }
    return (lb_isa)lb_level;
}

static size_t lb_l2;

size_t lb_cpu_l2_bytes(void) {
    if (!lb_l2) {
        long v = -1;
#if defined(__linux__) && defined(_SC_LEVEL2_CACHE_SIZE)
        v = sysconf(_SC_LEVEL2_CACHE_SIZE); /* glibc: from cpuid on x86; 0 or -1 where unknown */
#endif
        /* unknown or implausible: 1 MiB, a common per-core L2 */
        lb_l2 = v >= (256 << 10) && v <= (64 << 20) ? (size_t)v : (size_t)1 << 20;
    }
    return lb_l2;
}

void lb_cpu_set_l2_bytes(size_t bytes) { lb_l2 = bytes; }

static int lb_pf_l2 = -1;

static int cpu_is_amd(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    return b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* "AuthenticAMD" */
#else
    return 0;
#endif
}

/* The lazily probed settings below are first read from inside the
 * kernels' threads: each thread probes, the first to store its value wins,
 * and only that one says that a bad environment value was ignored. */
static int settle(int *slot, int unset, int v, const char *var, const char *bad, const char *expected) {
    if (__atomic_compare_exchange_n(slot, &unset, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) && bad)
        lb_log(0, "warning: %s=%s is not %s; ignored\n", var, bad, expected);
    return __atomic_load_n(slot, __ATOMIC_RELAXED);
}

int lb_cpu_prefetch_l2(void) {
    int l2 = __atomic_load_n(&lb_pf_l2, __ATOMIC_RELAXED);
    if (l2 >= 0) return l2;
    l2 = cpu_is_amd();
    const char *env = getenv("LOWBIT_PREFETCH"), *bad = NULL;
    if (env && *env) {
        if (strcasecmp(env, "l1") == 0) l2 = 0;
        else if (strcasecmp(env, "l2") == 0) l2 = 1;
        else bad = env;
    }
    return settle(&lb_pf_l2, -1, l2, "LOWBIT_PREFETCH", bad, "l1 or l2");
}

void lb_cpu_set_prefetch_l2(int l2) { __atomic_store_n(&lb_pf_l2, l2 < 0 ? -1 : l2 != 0, __ATOMIC_RELAXED); }

static int lb_gemv_groups = 0;

int lb_cpu_gemv_groups(void) {
    int n = __atomic_load_n(&lb_gemv_groups, __ATOMIC_RELAXED);
    if (n) return n;
    n = cpu_is_amd() ? 1 : 2;
    const char *env = getenv("LOWBIT_GEMV_GROUPS"), *bad = NULL;
    if (env && *env) {
        if (strcmp(env, "1") == 0 || strcmp(env, "2") == 0) n = env[0] - '0';
        else bad = env;
    }
    return settle(&lb_gemv_groups, 0, n, "LOWBIT_GEMV_GROUPS", bad, "1 or 2");
}

void lb_cpu_set_gemv_groups(int n) { __atomic_store_n(&lb_gemv_groups, n == 1 || n == 2 ? n : 0, __ATOMIC_RELAXED); }

lb_isa lb_cpu_force_level(lb_isa isa) {
    lb_level = (int)clamp_level(isa);
    return (lb_isa)lb_level;
}

const char *lb_isa_name(lb_isa isa) {
    static const char *names[LB_ISA_COUNT] = {"scalar", "avx2", "avx512", "amx", "neon", "dotprod", "i8mm"};
    return (unsigned)isa < LB_ISA_COUNT ? names[isa] : "?";
}

int lb_isa_from_name(const char *name) {
    for (int i = 0; i < LB_ISA_COUNT; i++)
        if (strcasecmp(name, lb_isa_name((lb_isa)i)) == 0) return i;
    return -1;
}

const char *lb_cpu_features_string(void) {
    lb_cpu_detected();
    return lb_features;
}
