/* AVX-512 VNNI tiles of ABQ's code-layout GEMM (formats/abq.h:
 * ABQ_W{q}_C4 / _C2, made at load from the plane types; the GEMM's driver
 * and its decoded groups are abq_codes_avx2.c's, and so is the decode, whose
 * group sums take four ymm vpdpbusd at this level, lb_abq_codes_gemv_vnni).
 * A zmm decode (two vpdpbusd per group on codes unpacked in the
 * activations' order, eight groups' 16-lane sums reduced together by
 * unpacks and lane shuffles) streamed 15.4-18.5 GB/s against the AVX2
 * kernel's 17.6-21.7 on Zen 4, one thread, three rounds alternated
 * (docs/abq.md), and was not kept: on Zen 4 a zmm operation takes two of
 * the four vector pipes, and per group the exact integer total, its
 * reduction and the double sum in group order cost as much as the
 * products. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "kernels/x86/abq_codes_tile.h"

/* no contraction behind our back: the one fused multiply-add below is
 * written out, and exact (see the tiles) */
#include "core/fp_strict.h"

#define LB_ABQC512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define LD512(p) _mm512_loadu_si512((const void *)(p))

/* ---- prefill: the tiles of abq_codes_avx2.c's GEMM by vpdpbusd ----
 * vpdpbusd takes the operands of vpmaddubsw (codes unsigned, activation
 * bytes signed) and sums each four products straight into int32: no int16
 * chains to bound (one tile for every chain length), no vpmaddwd. Two
 * chains per activation row (even and odd columns). The 16-row tile takes
 * two decoded 8-row groups as one zmm a column (lb_abq_g16): each broadcast
 * activation dword feeds 16 rows. Zen 4 ran 1.5-1.8 G zmm vpdpbusd a
 * second against 1.8-2.1 G ymm ones (independent chains): 1.5-1.7x the
 * products, so the ymm tile serves only a leftover block of 8 rows. Same integers, same double sums
 * in group order as the reference: d I is exact in double (|I| < 2^21, d a
 * float), so the fused multiply-add rounds once, where the reference's add
 * does (one operation a vector fewer: GEMM 5632 x 2048, M = 512, one
 * thread, Zen 4: 344-355 GOPS against 320-334 with a multiply and an add;
 * with the activation dwords as embedded broadcasts, 361-363). */
LB_ABQC512 void lb_abq_tile8_vnni(const void *vB, int64_t g0, int64_t kc, int last, const block_abq_act *const *a,
                                  const int8_t *const *ac, size_t astr, const int32_t *const *cz, double *const *st,
                                  float *const *y) {
    const lb_abq_g8 *B = vB;
    __m256d acc[LB_ABQ_MR][2];
#pragma GCC unroll 4
    for (int m = 0; m < LB_ABQ_MR; m++)
        acc[m][0] = g0 ? _mm256_loadu_pd(st[m]) : _mm256_setzero_pd(),
        acc[m][1] = g0 ? _mm256_loadu_pd(st[m] + 4) : _mm256_setzero_pd();
    for (int64_t i = g0; i < g0 + kc; i++) {
        const lb_abq_g8 *b = &B[i - g0];
        __m256i P[LB_ABQ_MR], Q[LB_ABQ_MR];
#pragma GCC unroll 4
        for (int m = 0; m < LB_ABQ_MR; m++)
            P[m] = _mm256_madd_epi16(b->swz, _mm256_set1_epi32(cz[m][i])), Q[m] = _mm256_setzero_si256();
#pragma GCC unroll 16
        for (int c = 0; c < 32; c += 2) {
#pragma GCC unroll 4
            for (int m = 0; m < LB_ABQ_MR; m++) {
                const int8_t *x = ac[m] + (size_t)i * astr + 4 * c;
                P[m] = _mm256_dpbusd_epi32(P[m], b->col[c], _mm256_set1_epi32(*(const int32_t *)x));
                Q[m] = _mm256_dpbusd_epi32(Q[m], b->col[c + 1], _mm256_set1_epi32(*(const int32_t *)(x + 4)));
            }
        }
#pragma GCC unroll 4
        for (int m = 0; m < LB_ABQ_MR; m++) {
            const __m256i I = _mm256_add_epi32(P[m], Q[m]);
            acc[m][0] = _mm256_fmadd_pd(b->d[0], _mm256_cvtepi32_pd(_mm256_castsi256_si128(I)), acc[m][0]);
            acc[m][1] = _mm256_fmadd_pd(b->d[1], _mm256_cvtepi32_pd(_mm256_extracti128_si256(I, 1)), acc[m][1]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < LB_ABQ_MR; m++) {
        if (!last) {
            _mm256_storeu_pd(st[m], acc[m][0]), _mm256_storeu_pd(st[m] + 4, acc[m][1]);
            continue;
        }
        const __m256d da = _mm256_set1_pd((double)a[m][0].d);
        _mm_storeu_ps(y[m], _mm256_cvtpd_ps(_mm256_mul_pd(acc[m][0], da)));
        _mm_storeu_ps(y[m] + 4, _mm256_cvtpd_ps(_mm256_mul_pd(acc[m][1], da)));
    }
}

LB_ABQC512 void lb_abq_tile16_vnni(const void *vB, int64_t g0, int64_t kc, int last, const block_abq_act *const *a,
                                   const int8_t *const *ac, size_t astr, const int32_t *const *cz, double *const *st,
                                   float *const *y) {
    const lb_abq_g16 *B = vB;
    __m512d acc[LB_ABQ_MR][2];
#pragma GCC unroll 4
    for (int m = 0; m < LB_ABQ_MR; m++)
        acc[m][0] = g0 ? _mm512_loadu_pd(st[m]) : _mm512_setzero_pd(),
        acc[m][1] = g0 ? _mm512_loadu_pd(st[m] + 8) : _mm512_setzero_pd();
    for (int64_t i = g0; i < g0 + kc; i++) {
        const lb_abq_g16 *b = &B[i - g0];
        const __m512i swz = LD512(b->swz);
        __m512i P[LB_ABQ_MR], Q[LB_ABQ_MR];
#pragma GCC unroll 4
        for (int m = 0; m < LB_ABQ_MR; m++)
            P[m] = _mm512_madd_epi16(swz, _mm512_set1_epi32(cz[m][i])), Q[m] = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (int c = 0; c < 32; c += 2) {
            const __m512i w0 = _mm512_load_si512(b->col[c]), w1 = _mm512_load_si512(b->col[c + 1]);
#pragma GCC unroll 4
            for (int m = 0; m < LB_ABQ_MR; m++) {
                const int32_t *x = (const int32_t *)(ac[m] + (size_t)i * astr + 4 * c);
                /* the activation dword as an embedded broadcast: one operation, where
                 * GCC's vpbroadcastd + vpdpbusd are two */
                __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(P[m]) : "v"(w0), "m"(x[0]));
                __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(Q[m]) : "v"(w1), "m"(x[1]));
            }
        }
        const __m512d d0 = _mm512_loadu_pd(b->d), d1 = _mm512_loadu_pd(b->d + 8);
#pragma GCC unroll 4
        for (int m = 0; m < LB_ABQ_MR; m++) {
            const __m512i I = _mm512_add_epi32(P[m], Q[m]);
            acc[m][0] = _mm512_fmadd_pd(d0, _mm512_cvtepi32_pd(_mm512_castsi512_si256(I)), acc[m][0]);
            acc[m][1] = _mm512_fmadd_pd(d1, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(I, 1)), acc[m][1]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < LB_ABQ_MR; m++) {
        if (!last) {
            _mm512_storeu_pd(st[m], acc[m][0]), _mm512_storeu_pd(st[m] + 8, acc[m][1]);
            continue;
        }
        const __m512d da = _mm512_set1_pd((double)a[m][0].d);
        _mm256_storeu_ps(y[m], _mm512_cvtpd_ps(_mm512_mul_pd(acc[m][0], da)));
        _mm256_storeu_ps(y[m] + 8, _mm512_cvtpd_ps(_mm512_mul_pd(acc[m][1], da)));
    }
}

/* the level's entry points: M > 1 the GEMM with these tiles, decode the AVX2 kernel's with vpdpbusd */
#define ABQ_CODES_AVX512(name, NAME, W)                                                                      \
    LB_ABQC512 void lb_gemm_##name##_avx512(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1,    \
                                             const void *A, size_t a_row_size, int M, float *Y, size_t ldy) { \
        if (M > 1) lb_abq_codes_gemm(W, LB_TYPE_##NAME, 1, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy); \
        else lb_abq_codes_gemv_vnni(W, K, Wt, w_row_size, n0, n1, A, Y);                                    \
    }
LB_ABQ_CODES_LIST(ABQ_CODES_AVX512)
#undef ABQ_CODES_AVX512

#endif
