/* The Arm kernels (kernels/arm_*.c) at every Arm level this CPU has (neon,
 * dotprod, i8mm; under qemu the CPU model decides, see scripts/test-arm.sh),
 * called directly, against the scalar references. Skipped on other CPUs.
 *
 *  detection: LOWBIT_EXPECT_ISA, when set, is the level getauxval must give;
 *             each level hands out the kernel of that level (or the highest
 *             one below it) for every type.
 *  quantizers: Q8_0 row and 4-row (chunk 4 and 8) quantizers byte-identical
 *             to the references, ties (x.5) included.
 *  vec_dot:   plain Q4_0 / IQ4_NL / Q8_0 / F32 / F16 / BF16 rows, random and
 *             extreme data; |got - ref| <= 1e-5 * sum|w_i a_i| (float
 *             summation order differs, integer block sums are exact).
 *  interleaved GEMV / GEMM (formats/repack.h), 9 types: K = 32, 96, 288, 2080
 *             (not multiples of 256), GEMV M = 1..5, GEMM M = 4..16, N = 1..5
 *             groups with sub-ranges [n0, n1) (odd group counts hit the
 *             4-row tails of the 8-row tiles), Y with a row stride wider than
 *             N and a sentinel outside [n0, n1). Integer data (unit scales) must
 *             match exactly; random data within 1e-6 * sum|w_i a_i| (the
 *             kernels keep the reference's per-block order, so outputs are
 *             expected bit-identical: the count is printed).
 * Weights and activations end right at a PROT_NONE page: a kernel reading
 * past its data crashes the test (ASan does not see NEON loads, which gcc
 * emits through builtins, and LeakSanitizer does not run under qemu). */
#include "test_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include "formats/float.h"
#include "formats/repack.h"
#include "kernels/arm/arm_kernels.h"
#include "kernels/dispatch.h"

#if !LB_HAVE_ARM_KERNELS
int main(void) { SKIP("not an aarch64 build"); }
#else

#define TOL_DOT 1e-5
#define TOL_GEMM 1e-6
static const lb_isa kArmLevels[] = {LB_ISA_NEON, LB_ISA_DOTPROD, LB_ISA_I8MM};
static int n_levels; /* Arm levels this CPU has: kArmLevels[0 .. n_levels) */
static double worst_dot, worst_gemm;
static long exact_outputs, total_outputs;

/* n bytes ending exactly at an inaccessible page. */
static void *guarded_alloc(size_t n) {
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), span = (n + ps - 1) / ps * ps;
    uint8_t *base = mmap(NULL, span + ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        fprintf(stderr, "mmap failed\n");
        exit(1);
    }
    mprotect(base + span, ps, PROT_NONE);
    return base + span - n;
}

static void guarded_free(void *p, size_t n) {
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), span = (n + ps - 1) / ps * ps;
    munmap((uint8_t *)p + n - span, span + ps);
}

static float rand_gauss(uint64_t *s) {
    const double u1 = 1.0 - (lb_test_randf(s) + 1.0) / 2.0, u2 = (lb_test_randf(s) + 1.0) / 2.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ---------------- detection and dispatch ---------------- */

/* The highest Arm level a type has a kernel at. */
static lb_isa top_level(int type) {
    switch (type) {
    case LB_TYPE_Q4_0_4X8: case LB_TYPE_Q4_0_8X8: case LB_TYPE_IQ4_NL_4X8:
    case LB_TYPE_IQ4_NL_8X8: case LB_TYPE_Q8_0_4X8: case LB_TYPE_Q8_0_8X8:
    case LB_TYPE_MXFP4_NL_4X8: case LB_TYPE_MXFP4_NL_8X8:
        return LB_ISA_I8MM;
    case LB_TYPE_F32: case LB_TYPE_F16: case LB_TYPE_BF16:
        return LB_ISA_NEON;
    default:
        return LB_ISA_DOTPROD;
    }
}

static void test_dispatch(void) {
    const lb_isa hw = lb_cpu_detected();
    printf("detected: %s (%s)\n", lb_isa_name(hw), lb_cpu_features_string());
    CHECK_MSG(hw >= LB_ISA_NEON, "an aarch64 CPU must report at least neon, got %s", lb_isa_name(hw));
    const char *expect = getenv("LOWBIT_EXPECT_ISA");
    if (expect && *expect)
        CHECK_MSG(strcmp(expect, lb_isa_name(hw)) == 0, "detected %s, expected %s", lb_isa_name(hw), expect);
    n_levels = 0;
    while (n_levels < 3 && kArmLevels[n_levels] <= hw) n_levels++;

    const int types[] = {LB_TYPE_F32, LB_TYPE_F16, LB_TYPE_BF16, LB_TYPE_Q8_0, LB_TYPE_Q4_0, LB_TYPE_IQ4_NL,
                         LB_TYPE_Q4_0_4X4, LB_TYPE_Q4_0_4X8, LB_TYPE_Q4_0_8X8, LB_TYPE_IQ4_NL_4X4,
                         LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL_8X8, LB_TYPE_Q8_0_4X4, LB_TYPE_Q8_0_4X8,
                         LB_TYPE_Q8_0_8X8, LB_TYPE_MXFP4_NL, LB_TYPE_MXFP4_NL_4X4, LB_TYPE_MXFP4_NL_4X8,
                         LB_TYPE_MXFP4_NL_8X8};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (int l = 0; l < n_levels; l++) {
            const lb_kernel *k = lb_kernel_get_at(types[t], kArmLevels[l]);
            const lb_isa want = kArmLevels[l] < top_level(types[t]) ? kArmLevels[l] : top_level(types[t]);
            CHECK_MSG(k && k->isa == want, "type %d at %s: got %s, want a %s kernel", types[t],
                      lb_isa_name(kArmLevels[l]), k ? k->name : "none", lb_isa_name(want));
        }
        const lb_kernel *k = lb_kernel_get(types[t]);
        if (k && types[t] >= LB_TYPE_Q4_0_4X4) printf("  %-12s -> %s\n", lb_type_name(types[t]), k->name);
    }
    /* forcing a level is clamped to the hardware and honoured by lb_kernel_get */
    CHECK(lb_cpu_force_level(LB_ISA_I8MM) == hw);
    CHECK(lb_cpu_force_level(LB_ISA_NEON) == LB_ISA_NEON);
    CHECK(lb_kernel_get(LB_TYPE_Q4_0)->isa == LB_ISA_NEON);
    CHECK(lb_cpu_force_level(LB_ISA_AVX2) == LB_ISA_SCALAR); /* other family: scalar */
    CHECK(lb_kernel_get(LB_TYPE_Q4_0)->isa == LB_ISA_SCALAR);
    lb_cpu_force_level(hw);
}

/* ---------------- activation quantizers ---------------- */

static void check_q8_0_rows(const float *x, int64_t k, const char *what) {
    static block_q8_0 ref[128], got[128];
    static _Alignas(16) uint8_t ref4[128 * 160], got4[128 * 160];
    const size_t bytes = (size_t)(k / 32) * sizeof(block_q8_0);
    memset(ref, 0x11, bytes);
    memset(got, 0x22, bytes);
    lb_quantize_row_q8_0_ref(x, ref, k);
    lb_quantize_row_q8_0_neon(x, got, k);
    CHECK_MSG(memcmp(ref, got, bytes) == 0, "q8_0 neon quantizer differs: %s", what);
    /* 4 rows: x, x + k/4 ... as rows of k/4 (k/4 a multiple of 32) */
    if (k % 128) return;
    const int64_t kr = k / 4;
    const size_t bytes4 = (size_t)(kr / 32) * sizeof(lb_block_q8_0x4a);
    for (int c = 4; c <= 8; c += 4) {
        memset(ref4, 0x11, bytes4);
        memset(got4, 0x22, bytes4);
        (c == 4 ? lb_quantize_q8_0x4_c4_ref : lb_quantize_q8_0x4_c8_ref)(x, (size_t)kr, ref4, kr);
        (c == 4 ? lb_quantize_q8_0x4_c4_neon : lb_quantize_q8_0x4_c8_neon)(x, (size_t)kr, got4, kr);
        CHECK_MSG(memcmp(ref4, got4, bytes4) == 0, "q8_0x4 chunk %d neon quantizer differs: %s", c, what);
    }
}

static void test_quantizers(void) {
    static float x[4096];
    uint64_t s = 7;
    for (int rep = 0; rep < 20; rep++) {
        const float scale = rep < 10 ? 1.0f : rep < 15 ? 1e-4f : 3e4f;
        for (int i = 0; i < 4096; i++) x[i] = scale * rand_gauss(&s);
        check_q8_0_rows(x, 4096, "gaussian");
    }
    /* ties: a block whose largest magnitude is 127 has d = 1, so n + 0.5
     * scales to itself and must round away from zero like roundf */
    for (int i = 0; i < 512; i++) x[i] = (i % 32 == 0) ? 127.0f : (float)((int)(i % 250) - 125) + 0.5f;
    for (int i = 512; i < 1024; i++) x[i] = -x[i - 512];
    check_q8_0_rows(x, 1024, "ties");
    memset(x, 0, sizeof x);
    check_q8_0_rows(x, 1024, "zeros");
    for (int i = 0; i < 1024; i++) x[i] = (i % 7) ? 1e-30f * (float)(i % 13) : -0.0f; /* d underflows */
    check_q8_0_rows(x, 1024, "tiny");
    for (int i = 0; i < 1024; i++) x[i] = (i % 5 - 2) * 1e30f;
    check_q8_0_rows(x, 1024, "huge");
    /* every level's entries use these quantizers */
    for (int l = 0; l < n_levels; l++) {
        const lb_kernel *k = lb_kernel_get_at(LB_TYPE_Q4_0_4X4, kArmLevels[l]);
        CHECK(k->quantize_act == lb_quantize_row_q8_0_neon && k->quantize_act_x4 == lb_quantize_q8_0x4_c4_neon);
        k = lb_kernel_get_at(LB_TYPE_Q4_0_8X8, kArmLevels[l]);
        CHECK(k->quantize_act_x4 == lb_quantize_q8_0x4_c8_neon && k->act_x4_block == sizeof(lb_block_q8_0x4a));
    }
}

/* ---------------- plain rows ---------------- */

static double abs_dot(const float *w, const float *a, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += fabs((double)w[i] * a[i]);
    return s;
}

static void compare_vec_dot(int type, const void *wq0, const void *aq0, const float *wf, const float *af, int64_t n,
                            const char *what) {
    const lb_type_traits *t = lb_traits(type);
    const size_t wbytes = lb_row_size(type, n), abytes = lb_row_size(t->vec_dot_type, n);
    void *wq = guarded_alloc(wbytes), *aq = guarded_alloc(abytes);
    memcpy(wq, wq0, wbytes);
    memcpy(aq, aq0, abytes);
    float ref = 0.0f;
    t->vec_dot(n, &ref, wq, aq);
    const double mag = abs_dot(wf, af, n);
    for (int l = 0; l < n_levels; l++) {
        const lb_kernel *k = lb_kernel_get_at(type, kArmLevels[l]);
        if (!k || k->isa < LB_ISA_NEON) continue;
        float got = -12345.0f;
        k->vec_dot(n, &got, wq, aq);
        const double err = fabs((double)got - ref);
        if (mag > 0 && err / mag > worst_dot) worst_dot = err / mag;
        CHECK_MSG(err <= TOL_DOT * mag, "%s %s n=%lld: got %.9g want %.9g", k->name, what, (long long)n, got, ref);
    }
    guarded_free(wq, wbytes), guarded_free(aq, abytes);
}

static void test_vec_dot(void) {
    enum { MAXN = 4128 };
    static float wf[MAXN], af[MAXN], wd[MAXN], ad[MAXN];
    static _Alignas(16) uint8_t wq[MAXN * 4], aq[MAXN * 4];
    uint64_t s = 11;
    const int qtypes[] = {LB_TYPE_Q4_0, LB_TYPE_IQ4_NL, LB_TYPE_Q8_0, LB_TYPE_MXFP4_NL};
    const int64_t qsizes[] = {32, 64, 96, 128, 160, 224, 4128};
    for (int ti = 0; ti < 4; ti++) {
        const lb_type_traits *t = lb_traits(qtypes[ti]);
        for (int si = 0; si < 7; si++) {
            const int64_t n = qsizes[si];
            for (int rep = 0; rep < 4; rep++) {
                for (int64_t i = 0; i < n; i++) wf[i] = rand_gauss(&s), af[i] = rand_gauss(&s);
                t->from_float(wf, wq, n);
                lb_quantize_row_q8_0_ref(af, aq, n);
                if (rep == 3) { /* random bytes: every quant value, scale in [0.5, 1] */
                    for (size_t i = 0; i < lb_row_size(qtypes[ti], n); i++) wq[i] = (uint8_t)lb_test_rand(&s);
                    for (int64_t b = 0; b < n / 32; b++) {
                        lb_fp16 d = lb_f32_to_fp16(0.5f + 0.25f * (lb_test_randf(&s) + 1.0f));
                        memcpy(wq + b * t->type_size, &d, 2);
                        block_q8_0 *ab = (block_q8_0 *)aq + b; /* extreme activations */
                        for (int j = 0; j < 32; j++) ab->qs[j] = (int8_t)((j & 1) ? -128 : 127);
                    }
                }
                t->to_float(wq, wd, n);
                lb_dequantize_row_q8_0(aq, ad, n);
                compare_vec_dot(qtypes[ti], wq, aq, wd, ad, n, rep == 3 ? "random-bytes" : "gaussian");
            }
        }
    }
    const int ftypes[] = {LB_TYPE_F32, LB_TYPE_F16, LB_TYPE_BF16};
    const int64_t fsizes[] = {1, 7, 8, 15, 16, 17, 33, 4099};
    for (int ti = 0; ti < 3; ti++) {
        const lb_type_traits *t = lb_traits(ftypes[ti]);
        for (int si = 0; si < 8; si++) {
            const int64_t n = fsizes[si];
            for (int64_t i = 0; i < n; i++) wf[i] = rand_gauss(&s), af[i] = rand_gauss(&s);
            t->from_float(wf, wq, n);
            t->to_float(wq, wd, n);
            compare_vec_dot(ftypes[ti], wq, af, wd, af, n, "gaussian");
        }
    }
}

/* ---------------- interleaved GEMV / GEMM ---------------- */

typedef struct {
    int type, base, R, C;
    const lb_type_traits *bt;
    int64_t K, N;
    size_t rs;       /* bytes per weight row */
    uint8_t *plain;  /* N plain rows */
    uint8_t *packed; /* the same, repacked */
    float *wd;       /* dequantized weights, N x K */
} weights;

static void make_weights(weights *w, int type, int64_t K, int64_t N, int unit, uint64_t *s) {
    const lb_repack_layout *L = lb_repack_layout_of(type);
    w->type = type, w->base = L->base, w->R = L->rows, w->C = L->chunk;
    w->bt = lb_traits(L->base);
    w->K = K, w->N = N, w->rs = lb_row_size(L->base, K);
    w->plain = malloc(w->rs * N);
    w->packed = guarded_alloc(w->rs * N);
    w->wd = malloc(sizeof(float) * K * N);
    if (unit) { /* random quants, scale 1: every output an exact integer */
        const size_t bs = w->bt->type_size;
        for (size_t b = 0; b < w->rs * N / bs; b++) {
            uint8_t *blk = w->plain + b * bs;
            const lb_fp16 one = 0x3C00;
            memcpy(blk, &one, 2);
            for (size_t i = 2; i < bs; i++) blk[i] = (uint8_t)lb_test_rand(s);
        }
    } else {
        float *f = malloc(sizeof(float) * K);
        for (int64_t n = 0; n < N; n++) {
            for (int64_t i = 0; i < K; i++) f[i] = 0.02f * rand_gauss(s);
            w->bt->from_float(f, w->plain + n * w->rs, K);
        }
        free(f);
    }
    for (int64_t n = 0; n < N; n++) w->bt->to_float(w->plain + n * w->rs, w->wd + n * K, K);
    lb_repack_tensor(type, w->plain, w->packed, K, N);
}

static void free_weights(weights *w) { free(w->plain), guarded_free(w->packed, w->rs * w->N), free(w->wd); }

/* M activation rows: fp32 (integers with one +-127 per block when unit, so
 * Q8_0 keeps them with d = 1), their plain Q8_0 rows, 4-row groups in chunks
 * of C, and the dequantized values. */
typedef struct {
    int M;
    float *x, *xd;
    uint8_t *plain, *x4;
    size_t prs, x4rs;
} acts;

static void make_acts(acts *a, int64_t K, int M, int C, int unit, uint64_t *s) {
    a->M = M;
    a->x = malloc(sizeof(float) * K * M);
    a->xd = malloc(sizeof(float) * K * M);
    a->prs = lb_row_size(LB_TYPE_Q8_0, K);
    a->x4rs = (size_t)(K / 32) * sizeof(lb_block_q8_0x4a);
    a->plain = guarded_alloc(a->prs * M);
    a->x4 = guarded_alloc(a->x4rs * (size_t)(M < 4 ? 1 : M / 4)); /* whole blocks: aligned */
    for (int64_t i = 0; i < K * M; i++) {
        if (unit) a->x[i] = (i % 32 == 3) ? ((lb_test_rand(s) & 1) ? 127.0f : -127.0f)
                                          : (float)((int)(lb_test_rand(s) % 255) - 127);
        else a->x[i] = rand_gauss(s);
    }
    for (int m = 0; m < M; m++) {
        lb_quantize_row_q8_0_ref(a->x + (size_t)m * K, a->plain + m * a->prs, K);
        lb_dequantize_row_q8_0(a->plain + m * a->prs, a->xd + (size_t)m * K, K);
    }
    for (int g = 0; g < M / 4; g++)
        (C == 4 ? lb_quantize_q8_0x4_c4_ref : lb_quantize_q8_0x4_c8_ref)(a->x + (size_t)g * 4 * K, (size_t)K,
                                                                          a->x4 + g * a->x4rs, K);
}

static void free_acts(acts *a) {
    free(a->x), free(a->xd);
    guarded_free(a->plain, a->prs * a->M), guarded_free(a->x4, a->x4rs * (size_t)(a->M < 4 ? 1 : a->M / 4));
}

/* One kernel call over rows [n0, n1) against the reference call, Y with
 * row stride N + 3 and a sentinel everywhere else. */
static void check_call(const weights *w, const acts *a, int gemm, const lb_kernel *k, int n0, int n1, int unit) {
    const int M = a->M;
    const size_t ldy = (size_t)w->N + 3;
    float *yr = malloc(sizeof(float) * ldy * M), *yg = guarded_alloc(sizeof(float) * ldy * M);
    for (size_t i = 0; i < ldy * M; i++) yr[i] = yg[i] = -777.0f;
    const lb_kernel *ref = lb_kernel_get_at(w->type, LB_ISA_SCALAR);
    const void *A = gemm ? (const void *)a->x4 : (const void *)a->plain;
    const size_t ars = gemm ? a->x4rs : a->prs;
    (gemm ? ref->gemm : ref->gemv)(w->K, w->packed, w->rs, n0, n1, A, ars, M, yr, ldy);
    (gemm ? k->gemm : k->gemv)(w->K, w->packed, w->rs, n0, n1, A, ars, M, yg, ldy);
    int bad = 0;
    for (int m = 0; m < M && bad < 3; m++) {
        for (size_t n = 0; n < ldy && bad < 3; n++) {
            const float r = yr[m * ldy + n], g = yg[m * ldy + n];
            if ((int)n < n0 || (int)n >= n1) {
                if (g != -777.0f) {
                    bad++;
                    CHECK_MSG(0, "%s wrote outside [%d, %d): m=%d n=%zu", k->name, n0, n1, m, n);
                }
                continue;
            }
            const double mag = abs_dot(w->wd + n * w->K, a->xd + (size_t)m * w->K, w->K);
            const double err = fabs((double)g - r);
            total_outputs++;
            exact_outputs += memcmp(&g, &r, sizeof g) == 0;
            if (mag > 0 && err / mag > worst_gemm) worst_gemm = err / mag;
            const int ok = unit ? g == r : err <= TOL_GEMM * mag;
            if (!ok) {
                bad++;
                CHECK_MSG(0, "%s %s K=%lld M=%d [%d,%d) m=%d n=%zu: got %.9g want %.9g", k->name,
                          unit ? "unit" : "random", (long long)w->K, M, n0, n1, m, n, g, r);
            }
        }
    }
    lb_test_checks++;
    free(yr), guarded_free(yg, sizeof(float) * ldy * M);
}

static void test_interleaved(void) {
    static const int types[] = {LB_TYPE_Q4_0_4X4,   LB_TYPE_Q4_0_4X8,   LB_TYPE_Q4_0_8X8,
                                LB_TYPE_IQ4_NL_4X4, LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL_8X8,
                                LB_TYPE_Q8_0_4X4,   LB_TYPE_Q8_0_4X8,   LB_TYPE_Q8_0_8X8,
                                LB_TYPE_MXFP4_NL_4X4, LB_TYPE_MXFP4_NL_4X8, LB_TYPE_MXFP4_NL_8X8};
    const int64_t Ks[] = {32, 96, 288, 2080};
    uint64_t s = 0x51ed270b;
    for (int ti = 0; ti < (int)(sizeof types / sizeof types[0]); ti++) {
        const int R = lb_type_rows(types[ti]);
        for (int ki = 0; ki < 4; ki++) {
            const int64_t K = Ks[ki];
            for (int unit = 0; unit < 2; unit++) {
                const int groups = K > 300 ? 3 : 5;
                weights w;
                make_weights(&w, types[ti], K, (int64_t)groups * R, unit, &s);
                /* [n0, n1): everything, all but the first group, one group */
                const int ranges[3][2] = {{0, groups * R}, {R, groups * R}, {2 * R, 3 * R}};
                for (int l = 0; l < n_levels; l++) {
                    const lb_kernel *k = lb_kernel_get_at(types[ti], kArmLevels[l]);
                    CHECK(k && k->isa >= LB_ISA_NEON && k->gemv && k->gemm && k->act_rows == 4);
                    if (!k || k->isa < LB_ISA_NEON) continue;
                    for (int M = 1; M <= (K > 300 ? 4 : 16); M++) {
                        acts a;
                        make_acts(&a, K, M, w.C, unit, &s);
                        for (int r = 0; r < 3; r++) {
                            if (M <= 5) check_call(&w, &a, 0, k, ranges[r][0], ranges[r][1], unit);
                            if (M % 4 == 0) check_call(&w, &a, 1, k, ranges[r][0], ranges[r][1], unit);
                        }
                        free_acts(&a);
                    }
                }
                free_weights(&w);
            }
        }
    }
}

int main(void) {
    test_dispatch();
    if (n_levels == 0) SKIP("no Arm level detected");
    test_quantizers();
    test_vec_dot();
    test_interleaved();
    printf("plain vec_dot: worst |err| / sum|w*a| = %.3g (bound %g)\n", worst_dot, TOL_DOT);
    printf("interleaved: worst |err| / sum|w*a| = %.3g (bound %g); bit-identical to the reference: %ld of %ld outputs\n",
           worst_gemm, TOL_GEMM, exact_outputs, total_outputs);
    return lb_test_result("test_kernels_arm");
}
#endif
