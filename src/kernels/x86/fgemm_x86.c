/* x86 entries of the float-weight prefill GEMM (kernels/fgemm.h): the row
 * conversions (F16 by F16C, BF16 by a shift) and the micro-kernel of each
 * level. Below LB_FGEMM_MIN_M activation rows (decode, short prompts) the
 * weights are streamed once per row by the vec_dot instead: packing a panel
 * pays for itself only over several rows. */
#include "kernels/x86/fgemm_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/fgemm.h"
#include "kernels/x86/bf16_avx2.h"
#include "kernels/thread_scratch.h"

#define LB_FG __attribute__((target("avx2,fma,f16c")))

typedef float f32_t; /* bytes per weight of each type, for FG_DEFINE */
typedef uint16_t f16_t, bf16_t;
#ifdef LB_FGEMM_NO_PREFETCH
#define FG_ESIZE(w) 0
#else
#define FG_ESIZE(w) sizeof(w##_t)
#endif

static void cvt_f32(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    memcpy(out, (const float *)row + k0, (size_t)n * sizeof(float));
}

LB_FG static void cvt_f16(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    const uint16_t *w = (const uint16_t *)row + k0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))));
    for (; i < n; i++) out[i] = lb_fp16_to_f32(w[i]);
}

LB_FG static void cvt_bf16(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    const uint16_t *w = (const uint16_t *)row + k0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, lb_bf16x8_to_ps_avx2(w + i));
    for (; i < n; i++) out[i] = lb_bf16_to_f32(w[i]);
}

#define FG_DEFINE(w, isa, ISA)                                                                                   \
    void lb_gemm_##w##_f32_##isa(int64_t K, const void *W, size_t rs, int n0, int n1, const void *A, size_t ars, \
                                 int M, float *Y, size_t ldy) {                                                  \
        lb_fgemm_or_dot(lb_sgemm_kernel_at(LB_ISA_##ISA), cvt_##w, FG_ESIZE(w), lb_vec_dot_##w##_avx2, K, W, rs, \
                        n0, n1, A, ars, M, Y, ldy);                                                             \
    }
FG_DEFINE(f32, avx2, AVX2)
FG_DEFINE(f16, avx2, AVX2)
FG_DEFINE(bf16, avx2, AVX2)
FG_DEFINE(f32, avx512, AVX512)
FG_DEFINE(f16, avx512, AVX512)
FG_DEFINE(bf16, avx512, AVX512)

/* ---- BF16 weights on AVX512-BF16: vdpbf16ps, two products per lane ----
 * The weights are bf16 already (exact); the activations are rounded to bf16
 * once per call (what llama.cpp does for BF16 files, and the AMX-BF16 tiles
 * do here). Same blocking as lb_fgemm, on k pairs: a panel holds per pair
 * one dword (w[k], w[k + 1]) per row, so packing it moves dwords, and a
 * strip one dword (a[k], a[k + 1]) per activation row, broadcast against
 * it: 14 x 32 outputs, 28 vdpbf16ps per pair of k (twice the fp32 FMA's
 * products per instruction). */
#define LB_FG_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))

enum { BMR = 14, BNR = 32, BKP = 256 }; /* tile rows, columns; k pairs per block (512 weights) */

LB_FG_BF16 static void ukr_bf16(int kp, const uint32_t *ap, const uint32_t *bp, float *c, size_t ldc, int add) {
    __m512 acc[BMR][2];
#pragma GCC unroll 14
    for (int i = 0; i < BMR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int k = 0; k < kp; k++, ap += BMR, bp += BNR) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(bp), b1 = (__m512bh)_mm512_load_si512(bp + 16);
#pragma GCC unroll 14
        for (int i = 0; i < BMR; i++) {
            const __m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a, b1);
        }
    }
#pragma GCC unroll 14
    for (int i = 0; i < BMR; i++) {
        float *ci = c + (size_t)i * ldc;
        __m512 r0 = acc[i][0], r1 = acc[i][1];
        if (add) r0 = _mm512_add_ps(r0, _mm512_loadu_ps(ci)), r1 = _mm512_add_ps(r1, _mm512_loadu_ps(ci + 16));
        _mm512_storeu_ps(ci, r0);
        _mm512_storeu_ps(ci + 16, r1);
    }
}

/* the dword of bf16 values k, k + 1 of a row of K (0 past K) */
static inline uint32_t pair16(const uint16_t *v, int64_t k, int64_t K) {
    return (uint32_t)v[k] | (k + 1 < K ? (uint32_t)v[k + 1] << 16 : 0u);
}

LB_FG_BF16 static int gemm_bf16_dp(int64_t K, const void *W, size_t rs, int n0, int n1, const float *A, size_t ars,
                                   int M, float *Y, size_t ldy) {
    const int strips = (M + BMR - 1) / BMR;
    const size_t strip = (size_t)BMR * BKP + 16; /* dwords per packed strip, a multiple of 16 */
    uint32_t *buf = lb_thread_scratch(((size_t)strips * strip + (size_t)BNR * BKP) * 4 + BMR * BNR * 4 + 64);
    if (!buf) return -1;
    buf = (uint32_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    uint32_t *ap = buf, *bp = ap + (size_t)strips * strip;
    float *tile = (float *)(bp + (size_t)BNR * BKP);
    for (int64_t k0 = 0; k0 < K; k0 += 2 * BKP) {
        const int kn = (int)LB_MIN((int64_t)2 * BKP, K - k0), kp = (kn + 1) / 2;
        for (int s = 0; s < strips; s++) /* activation pairs, rounded to bf16 */
            for (int i = 0; i < BMR; i++) {
                const int m = s * BMR + i;
                const float *x = m < M ? (const float *)((const char *)A + (size_t)m * ars) + k0 : NULL;
                uint32_t *p = ap + (size_t)s * strip + i;
                for (int k = 0; k < kp; k++) {
                    const uint32_t lo = x ? lb_f32_to_bf16(x[2 * k]) : 0;
                    const uint32_t hi = x && 2 * k + 1 < kn ? lb_f32_to_bf16(x[2 * k + 1]) : 0;
                    p[(size_t)k * BMR] = lo | hi << 16;
                }
            }
        for (int nb = n0; nb < n1; nb += BNR) {
            const int nn = LB_MIN(BNR, n1 - nb);
            for (int r = 0; r < BNR; r++) {
                const uint16_t *w = r < nn ? (const uint16_t *)((const char *)W + (size_t)(nb + r) * rs) + k0 : NULL;
                for (int k = 0; k < kp; k++) bp[k * BNR + r] = w ? pair16(w, 2 * k, kn) : 0u;
            }
            if (nb + BNR < n1) /* the next panel's rows, fetched meanwhile */
                for (int r = 0; r < LB_MIN(BNR, n1 - nb - BNR); r++) {
                    const char *q = (const char *)W + (size_t)(nb + BNR + r) * rs + (size_t)k0 * 2;
                    for (int b = 0; b < 2 * kn; b += 64) _mm_prefetch(q + b, _MM_HINT_T0);
                }
            for (int s = 0; s < strips; s++) {
                const int m0 = s * BMR, mm = LB_MIN(BMR, M - m0);
                float *c = Y + (size_t)m0 * ldy + nb;
                if (mm == BMR && nn == BNR) {
                    ukr_bf16(kp, ap + (size_t)s * strip, bp, c, ldy, k0 > 0);
                    continue;
                }
                ukr_bf16(kp, ap + (size_t)s * strip, bp, tile, BNR, 0);
                for (int i = 0; i < mm; i++)
                    for (int j = 0; j < nn; j++)
                        c[(size_t)i * ldy + j] = (k0 ? c[(size_t)i * ldy + j] : 0.0f) + tile[i * BNR + j];
            }
        }
    }
    return 0;
}

void lb_gemm_bf16_bf16_avx512bf16(int64_t K, const void *W, size_t rs, int n0, int n1, const void *A, size_t ars,
                                  int M, float *Y, size_t ldy) {
    if (M >= LB_FGEMM_MIN_M && gemm_bf16_dp(K, W, rs, n0, n1, (const float *)A, ars, M, Y, ldy) == 0) return;
    lb_fgemm_or_dot(lb_sgemm_kernel_at(LB_ISA_AVX512), cvt_bf16, FG_ESIZE(bf16), lb_vec_dot_bf16_avx2, K, W, rs, n0,
                    n1, A, ars, M, Y, ldy);
}
#endif
