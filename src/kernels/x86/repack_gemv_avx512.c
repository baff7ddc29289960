/* AVX-512 VNNI decode GEMV on the interleaved Q4_0 / IQ4_NL / Q8_0 layouts
 * against up to 4 plain Q8_0 rows (the scheme: repack_avx512.c, which holds
 * the GEMM; apart so the two compile in parallel). */
#include "kernels/cpu.h"
#include "kernels/x86/repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/repack_avx512_impl.h"
#include "kernels/x86/prefetch_x86.h"

/* Decode prefetch distance in blocks, by where the prefetches put the lines
 * (lb_cpu_prefetch_l2): into L1 12 (measured best on Intel); into L2 (AMD)
 * 24: on Zen 4, tinyllama-1.1b Q4_0 decode 85.0 / 85.1 t/s against 79.9 /
 * 81.4 at 12 and 85.2 / 86.4 at 40 (quiet rounds of an alternating run). */
#ifndef LB_GEMV512_PREFETCH_L1
#define LB_GEMV512_PREFETCH_L1 12
#endif
#ifndef LB_GEMV512_PREFETCH_L2
#define LB_GEMV512_PREFETCH_L2 24
#endif

/* ---- GEMV: plain Q8_0 activation rows, up to 4 per pass ---- */

enum { GEMV_KC = 256 }; /* blocks per pass: their scales and bias sums live on the stack */

/* acc[v][m] over blocks [0, nb) for 16*NV rows and MR activation rows.
 * Prefetch runs LB_GEMV512_PREFETCH_L1 or _L2 blocks ahead of each weight stream and,
 * near its end, on into the stream the next call reads (jump bytes on):
 * with short rows (K = 2048 is 64 blocks) the first blocks of every tile
 * would otherwise wait for memory. */
INLINE void gemv_tile(int wt, int NV, int MR, const geom *G, const __m512i *idx, const rows16 *r, int64_t nb,
                      ptrdiff_t jump, const uint8_t *const *aq, const float (*da)[GEMV_KC],
                      const int32_t (*bias)[GEMV_KC], __m512 acc[2][4]) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) acc[v][m] = _mm512_setzero_ps();
    const int pf_l2 = lb_cpu_prefetch_l2(); /* L2 on AMD (kernels/cpu.h) */
    const int64_t dist = pf_l2 ? LB_GEMV512_PREFETCH_L2 : LB_GEMV512_PREFETCH_L1;
    for (int64_t b = 0; b < nb; b++) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            const ptrdiff_t pf = (ptrdiff_t)((b + dist) * G->xbs) + (b + dist >= nb ? jump : 0);
            for (int i = 0; i < 16 / G->R; i++) lb_prefetch_span((const char *)r[v].g[i] + pf, G->xbs, pf_l2);
            __m512i w[8];
            decode16(wt, 0, G, idx, &r[v], b, w);
            const __m512 dw = scales16(G, &r[v], b);
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const uint8_t *q = aq[m] + (size_t)b * sizeof(block_q8_0) + 2;
                /* two chains: eight dependent VNNI would be a 40-cycle
                 * latency chain per block, too long for decode's few rows */
                __m512i s0 = _mm512_set1_epi32(bias[m][b]), s1 = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int kk = 0; kk < 8; kk++) {
                    int32_t a4;
                    memcpy(&a4, q + 4 * kk, 4);
                    if (kk & 1) s1 = _mm512_dpbusd_epi32(s1, w[kk], _mm512_set1_epi32(a4));
                    else s0 = _mm512_dpbusd_epi32(s0, w[kk], _mm512_set1_epi32(a4));
                }
                const __m512i s = _mm512_add_epi32(s0, s1);
                acc[v][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(da[m][b])), acc[v][m]);
            }
        }
    }
}

INLINE void gemv_put(int NV, int MR, const __m512 acc[2][4], float *y, size_t ldy, int n, int n1, int add) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
        const __mmask16 k = row_mask(n + 16 * v, n1);
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            float *p = y + (size_t)m * ldy + 16 * v;
            __m512 o = acc[v][m];
            if (add) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(k, p));
            _mm512_mask_storeu_ps(p, k, o);
        }
    }
}

#define GEMV_CASE(NV, MR)                                                                                \
    do {                                                                                                 \
        __m512 acc[2][4];                                                                                \
        gemv_tile(wt, NV, MR, &G, idx, r, kb, jump, aq, da, bias, acc);                                  \
        gemv_put(NV, MR, acc, Y + (size_t)m0 * ldy + n, ldy, n, n1, b0 > 0);                             \
    } while (0)

INLINE void gemv(int wt, int R, int C, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                 size_t a_row_size, int M, float *Y, size_t ldy) {
    geom G;
    geom_init(&G, R, C, wt == WQ8 ? 32 : 16, w_row_size);
    __m512i idx[8];
    for (int t = 0; t < G.ntgt; t++) idx[t] = _mm512_loadu_si512(G.idx[t]);
    const int64_t nb = K / 32;
    const int off = wt_offset(wt);
    float da[4][GEMV_KC];
    int32_t bias[4][GEMV_KC];
    for (int m0 = 0; m0 < M; m0 += 4) {
        const int mr = LB_MIN(4, M - m0);
        for (int64_t b0 = 0; b0 < nb; b0 += GEMV_KC) {
            const int64_t kb = LB_MIN((int64_t)GEMV_KC, nb - b0);
            const uint8_t *aq[4];
            for (int m = 0; m < mr; m++) {
                const block_q8_0 *row = (const block_q8_0 *)((const char *)A + (size_t)(m0 + m) * a_row_size) + b0;
                aq[m] = (const uint8_t *)row;
                for (int64_t b = 0; b < kb; b++) {
                    da[m][b] = _cvtsh_ss(row[b].d);
                    /* sum of the signed bytes: sad of (a ^ 0x80) against 0 is sum(a + 128) */
                    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)row[b].qs),
                                                       _mm256_set1_epi8((char)0x80));
                    const __m256i s = _mm256_sad_epu8(q, _mm256_setzero_si256());
                    const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
                    const int32_t sum = (int32_t)(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128;
                    bias[m][b] = -off * sum;
                }
            }
            /* past its kb blocks a stream's prefetch moves on to the same
             * blocks of the next 32 rows (the next tile of this pass) */
            const ptrdiff_t jump = (ptrdiff_t)(32 / R) * (ptrdiff_t)G.gstride - (ptrdiff_t)(kb * G.xbs);
            for (int n = n0; n < n1; n += 32) {
                rows16 r[2];
                r[0] = rows_at(&G, W, n, n1);
                r[1] = rows_at(&G, W, LB_MIN(n + 16, n1 - 1) / G.R * G.R, n1);
                for (int v = 0; v < 2; v++)
                    for (int i = 0; i < 4; i++) r[v].g[i] += (size_t)b0 * G.xbs;
                const int nv = n + 16 < n1 ? 2 : 1;
                if (nv == 2) {
                    switch (mr) {
                    case 1: GEMV_CASE(2, 1); break;
                    case 2: GEMV_CASE(2, 2); break;
                    case 3: GEMV_CASE(2, 3); break;
                    default: GEMV_CASE(2, 4); break;
                    }
                } else {
                    switch (mr) {
                    case 1: GEMV_CASE(1, 1); break;
                    case 2: GEMV_CASE(1, 2); break;
                    case 3: GEMV_CASE(1, 3); break;
                    default: GEMV_CASE(1, 4); break;
                    }
                }
            }
        }
    }
}

#define GEMV_KERNEL(w, R, C, WT)                                                                            \
    LB_AVX512 void lb_gemv_##w##x##R##_q8_0_##R##x##C##_avx512vnni(int64_t K, const void *W, size_t wrs,    \
                                                                   int n0, int n1, const void *A,           \
                                                                   size_t ars, int M, float *Y, size_t ldy) { \
        gemv(WT, R, C, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                               \
    }
LB_REPACK_LAYOUTS(GEMV_KERNEL)
#endif
