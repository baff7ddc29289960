/* Peak int8 rate (kernels/peak.h): 12 independent accumulator chains per
 * thread, enough to cover the dot instructions' latency (4-5 cycles) at 2
 * per cycle, on operands that stay in registers. */
#include "kernels/peak.h"

#include <omp.h>

#include "core/common.h"
#include "kernels/cpu.h"

enum { CHAINS = 12, ITERS = 4 << 20 };

static volatile long long lb_peak_sink_; /* keeps the sums alive */

#if defined(__x86_64__)
#include <immintrin.h>
/* The empty asm keeps the weights opaque, so nothing is folded or hoisted. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double run_avx512(void) {
    __m512i acc[CHAINS], w = _mm512_set1_epi8(3);
    const __m512i x = _mm512_set1_epi8(5);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_epi32(c);
    for (long i = 0; i < ITERS; i++) {
        __asm__("" : "+v"(w));
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], w, x);
    }
    __m512i s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_epi32(s, acc[c]);
    lb_peak_sink_ = _mm512_reduce_add_epi32(s);
    return 64.0 * CHAINS * ITERS; /* multiply-adds */
}
/* VEX vpdpbusd by inline asm, as kernels/q4_0_repack_x86.c (no avxvnni
 * target attribute needed from the compiler) */
__attribute__((target("avx2"))) static double run_avxvnni(void) {
    __m256i acc[CHAINS], w = _mm256_set1_epi8(3);
    const __m256i x = _mm256_set1_epi8(5);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_epi32(c);
    for (long i = 0; i < ITERS; i++) {
        __asm__("" : "+x"(w));
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc[c]) : "x"(w), "x"(x));
    }
    __m256i s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm256_add_epi32(s, acc[c]);
    lb_peak_sink_ = _mm256_extract_epi32(s, 0);
    return 32.0 * CHAINS * ITERS;
}
/* AVX2 without VNNI: what the AVX2 kernels do per 32 bytes, vpmaddubsw
 * (byte pairs to int16) then vpmaddwd by ones (to int32) and an add. */
__attribute__((target("avx2"))) static double run_avx2(void) {
    __m256i acc[CHAINS], w = _mm256_set1_epi8(3);
    const __m256i x = _mm256_set1_epi8(5), ones = _mm256_set1_epi16(1);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_epi32(c);
    for (long i = 0; i < ITERS; i++) {
        __asm__("" : "+x"(w));
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++)
            acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), ones));
    }
    __m256i s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm256_add_epi32(s, acc[c]);
    lb_peak_sink_ = _mm256_extract_epi32(s, 0);
    return 32.0 * CHAINS * ITERS;
}
/* AMX: tdpbssd on tiles that never leave the tile unit, 4 accumulators
 * (16 x 16 int32) fed by 2 A tiles and 2 B tiles (16 x 64 int8): each
 * tdpbssd is 16 x 16 x 64 multiply-adds. Every thread configures its own
 * tiles (the state is per thread; Linux granted it at detection). */
#include "kernels/x86/amx_config.h"
enum { AMX_ITERS = 1 << 17 };
__attribute__((target("amx-tile,amx-int8,avx512f"))) static double run_amx(void) {
    static const int8_t src[16][64] __attribute__((aligned(64))) = {{3}};
    int32_t out[16][16] __attribute__((aligned(64)));
    _tile_loadconfig(lb_amx_cfg_full());
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, src, 64);
    _tile_loadd(5, src, 64);
    _tile_loadd(6, src, 64);
    _tile_loadd(7, src, 64);
    for (long i = 0; i < AMX_ITERS; i++) {
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    long long s = out[0][0];
    _tile_stored(3, out, 64);
    s += out[15][15];
    _tile_release();
    lb_peak_sink_ = s;
    return 4.0 * 16 * 16 * 64 * AMX_ITERS;
}
#elif defined(__aarch64__)
#include "kernels/arm/arm_common.h" /* arm_neon.h with SDOT declared, LB_ARM_DOTPROD spelled per compiler */
LB_ARM_DOTPROD static double run_dotprod(void) {
    int32x4_t acc[CHAINS];
    int8x16_t w = vdupq_n_s8(3);
    const int8x16_t x = vdupq_n_s8(5);
    for (int c = 0; c < CHAINS; c++) acc[c] = vdupq_n_s32(c);
    for (long i = 0; i < ITERS; i++) {
        __asm__("" : "+w"(w));
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) acc[c] = vdotq_s32(acc[c], w, x);
    }
    int32x4_t s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = vaddq_s32(s, acc[c]);
    lb_peak_sink_ = vgetq_lane_s32(s, 0);
    return 16.0 * CHAINS * ITERS;
}
#endif

typedef double (*peak_fn)(void);

static peak_fn pick(const char **what) {
    const lb_isa l = lb_cpu_level();
    *what = "";
#if defined(__x86_64__)
    if (l == LB_ISA_AMX) { *what = "AMX tdpbssd"; return run_amx; }
    if (l == LB_ISA_AVX512) { *what = "zmm vpdpbusd"; return run_avx512; }
    if (l == LB_ISA_AVX2 && (lb_cpu_extra_features() & LB_CPU_AVXVNNI)) { *what = "ymm vpdpbusd (AVX-VNNI)"; return run_avxvnni; }
    if (l == LB_ISA_AVX2) { *what = "ymm vpmaddubsw + vpmaddwd"; return run_avx2; }
#elif defined(__aarch64__)
    if (l == LB_ISA_DOTPROD || l == LB_ISA_I8MM) { *what = "sdot"; return run_dotprod; }
#endif
    (void)l;
    return NULL;
}

const char *lb_int8_peak_what(void) {
    const char *what;
    pick(&what);
    return what;
}

double lb_int8_peak_gops(int n_threads, int reps) {
    const char *what;
    const peak_fn fn = pick(&what);
    if (!fn) return 0.0;
    double best = 0.0;
    for (int r = 0; r < reps; r++) {
        double macs = 0.0;
        const double t0 = lb_time_s();
#pragma omp parallel num_threads(n_threads < 1 ? 1 : n_threads) reduction(+ : macs)
        macs += fn();
        const double dt = lb_time_s() - t0, gops = 2.0 * macs / (dt > 0 ? dt : 1e-9) / 1e9;
        if (gops > best) best = gops;
    }
    return best;
}
