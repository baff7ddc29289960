/* AVX2 kernels of the BCQ types (kernels/x86/bcq_x86.h; layout and order of
 * operations in formats/bcq.h).
 *
 * mu = 4 GEMV, per 16 rows (one _LUT x-block per group) and activation row:
 * a 32-byte load of plane i holds bytes k, k+1 of the 16 rows; its low
 * nibbles index the tables of slices 2k (lane 0) and 2k+2 (lane 1), its
 * high nibbles those of 2k+1 and 2k+3. Each lookup is two vpshufb (low and
 * high table bytes) re-joined to int16 by vpunpcklbw / vpunpckhbw (rows 0-7
 * and 8-15); over a Q8_0 block (8 slices, |sum| <= 8 * 508) the int16 sums
 * are exact. The two lanes' sums (different slices, the same rows) are added
 * after a vperm2i128, widened, converted, and scaled by d, alpha_i and the
 * z term with separate multiplies and adds in the reference's order, so
 * every output is the reference's float, bit for bit. */
#include "kernels/x86/bcq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "core/common.h"

#define LB_BCQA __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_BCQA static inline __attribute__((always_inline))

INLINE __m256 load_h8(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* ---- Q8_0_LUT4 activations ---- */

LB_BCQA void lb_quantize_row_q8_0_lut4_avx2(const float *x, void *vy, int64_t k) {
    block_q8_0_lut4 *y = vy;
    /* entry e of a slice: bytes 2e, 2e+1 of the pair vectors get the signs of
     * bits (0, 1) and (2, 3) of e */
    int8_t s01[32], s23[32];
    for (int e = 0; e < 16; e++) {
        s01[2 * e] = (e & 1) ? 1 : -1, s01[2 * e + 1] = (e & 2) ? 1 : -1;
        s23[2 * e] = (e & 4) ? 1 : -1, s23[2 * e + 1] = (e & 8) ? 1 : -1;
    }
    const __m256i S01 = _mm256_loadu_si256((const __m256i *)s01), S23 = _mm256_loadu_si256((const __m256i *)s23);
    const __m256i ones = _mm256_set1_epi8(1);
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10,
                                           12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    for (int64_t b = 0; b < k / 32; b++) {
        block_q8_0 q;
        lb_quantize_row_q8_0_avx2(x + 32 * b, &q, 32);
        block_q8_0_lut4 *o = &y[b];
        uint16_t dh;
        memcpy(&dh, &q.d, 2);
        o->d = _cvtsh_ss(dh);
        memcpy(o->qs, q.qs, 32);
        int32_t S = 0;
        for (int j = 0; j < 32; j++) S += q.qs[j];
        o->ds = o->d * (float)S;
        __m256i Rs[8]; /* slice s: [low bytes of T_s (16) | high bytes (16)] */
        for (int s = 0; s < 8; s++) {
            int16_t p01, p23;
            memcpy(&p01, q.qs + 4 * s, 2);
            memcpy(&p23, q.qs + 4 * s + 2, 2);
            const __m256i a = _mm256_sign_epi8(_mm256_set1_epi16(p01), S01);
            const __m256i c = _mm256_sign_epi8(_mm256_set1_epi16(p23), S23);
            const __m256i T = _mm256_add_epi16(_mm256_maddubs_epi16(ones, a), _mm256_maddubs_epi16(ones, c));
            Rs[s] = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(T, split), _MM_SHUFFLE(3, 1, 2, 0));
        }
        for (int h = 0; h < 2; h++) {
            __m256i *t = (__m256i *)(o->t + 128 * h);
            const __m256i r0 = Rs[4 * h], r1 = Rs[4 * h + 1], r2 = Rs[4 * h + 2], r3 = Rs[4 * h + 3];
            _mm256_storeu_si256(t + 0, _mm256_permute2x128_si256(r0, r2, 0x20));
            _mm256_storeu_si256(t + 1, _mm256_permute2x128_si256(r0, r2, 0x31));
            _mm256_storeu_si256(t + 2, _mm256_permute2x128_si256(r1, r3, 0x20));
            _mm256_storeu_si256(t + 3, _mm256_permute2x128_si256(r1, r3, 0x31));
        }
        memset(o->pad, 0, sizeof o->pad);
    }
}

/* ---- mu = 4 GEMV ---- */

/* Exact int16 sums of one plane over one Q8_0 block for 16 rows: rows 0-7
 * in the low lane, 8-15 in the high lane of the result. pl: plane bytes
 * 4c .. 4c+3 of the 16 rows (64 bytes). */
INLINE __m256i plane_block(const uint8_t *pl, const block_q8_0_lut4 *a) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(pl + 32 * h));
        const __m256i ilo = _mm256_and_si256(v, m4), ihi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        const __m256i *t = (const __m256i *)(a->t + 128 * h);
        __m256i l = _mm256_shuffle_epi8(_mm256_loadu_si256(t + 0), ilo);
        __m256i u = _mm256_shuffle_epi8(_mm256_loadu_si256(t + 1), ilo);
        acc0 = _mm256_add_epi16(acc0, _mm256_unpacklo_epi8(l, u));
        acc1 = _mm256_add_epi16(acc1, _mm256_unpackhi_epi8(l, u));
        l = _mm256_shuffle_epi8(_mm256_loadu_si256(t + 2), ihi);
        u = _mm256_shuffle_epi8(_mm256_loadu_si256(t + 3), ihi);
        acc0 = _mm256_add_epi16(acc0, _mm256_unpacklo_epi8(l, u));
        acc1 = _mm256_add_epi16(acc1, _mm256_unpackhi_epi8(l, u));
    }
    /* acc0: rows 0-7, lane 0 slices {0,1,4,5}, lane 1 slices {2,3,6,7}; acc1: rows 8-15 */
    return _mm256_add_epi16(_mm256_permute2x128_si256(acc0, acc1, 0x20), _mm256_permute2x128_si256(acc0, acc1, 0x31));
}

INLINE void gemv_lut4(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const size_t xs = LB_BCQ_XSIZE(Q, G);
    const int NC = G / 32;
    for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        for (int m = 0; m < M; m++) {
            const block_q8_0_lut4 *a = (const block_q8_0_lut4 *)((const char *)A + (size_t)m * a_row_size);
            __m256 y0 = _mm256_setzero_ps(), y1 = _mm256_setzero_ps();
            const uint8_t *xb = xg;
            for (int64_t gi = 0; gi < K / G; gi++, xb += xs, a += NC) {
                float zs = 0.0f;
                for (int c = 0; c < NC; c++) zs += a[c].ds;
                const __m256 zv = _mm256_set1_ps(zs);
                y0 = _mm256_add_ps(y0, _mm256_mul_ps(load_h8(xb + 32 * Q), zv));
                y1 = _mm256_add_ps(y1, _mm256_mul_ps(load_h8(xb + 32 * Q + 16), zv));
                for (int i = 0; i < Q; i++) {
                    const uint8_t *pl = xb + 32 * (Q + 1) + (size_t)i * (G / 8) * LB_BCQ_ROWS;
                    __m256 p0 = _mm256_setzero_ps(), p1 = _mm256_setzero_ps();
                    for (int c = 0; c < NC; c++) {
                        const __m256i s = plane_block(pl + 64 * c, &a[c]);
                        const __m256 d = _mm256_set1_ps(a[c].d);
                        const __m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(s)));
                        const __m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(s, 1)));
                        p0 = _mm256_add_ps(p0, _mm256_mul_ps(d, f0));
                        p1 = _mm256_add_ps(p1, _mm256_mul_ps(d, f1));
                    }
                    y0 = _mm256_add_ps(y0, _mm256_mul_ps(load_h8(xb + 32 * i), p0));
                    y1 = _mm256_add_ps(y1, _mm256_mul_ps(load_h8(xb + 32 * i + 16), p1));
                }
            }
            float *y = Y + (size_t)m * ldy + n;
            _mm256_storeu_ps(y, y0);
            _mm256_storeu_ps(y + 8, y1);
        }
    }
}

#define BCQ_AVX2_DEFINE(name, NAME, Q, G)                                                                    \
    LB_BCQA void lb_gemv_##name##_lut4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1,     \
                                            const void *A, size_t a_row_size, int M, float *Y, size_t ldy) { \
        gemv_lut4(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                  \
    }
LB_BCQ_LIST(BCQ_AVX2_DEFINE)
#undef BCQ_AVX2_DEFINE

/* ---- mu = 8 float tables ---- */

INLINE void gemv_f8(const int Q, const int G, int64_t K, const uint8_t *W, int64_t groups, const float *T,
                    const float *sums, float *y) {
    const size_t xs = LB_BCQ_XSIZE(Q, G), row = (size_t)(K / G) * LB_BCQ_SIZE(Q, G);
    const int NC = G / 32, NK = G / 8;
    for (int64_t rg = 0; rg < groups; rg++) {
        const uint8_t *xb = W + (size_t)rg * LB_BCQ_ROWS * row;
        __m256 y0 = _mm256_setzero_ps(), y1 = _mm256_setzero_ps();
        const float *Tg = T, *sg = sums;
        for (int64_t gi = 0; gi < K / G; gi++, xb += xs, Tg += (size_t)NK * 256, sg += NC) {
            float gs = 0.0f;
            for (int c = 0; c < NC; c++) gs += sg[c];
            const __m256 zv = _mm256_set1_ps(gs);
            y0 = _mm256_add_ps(y0, _mm256_mul_ps(load_h8(xb + 32 * Q), zv));
            y1 = _mm256_add_ps(y1, _mm256_mul_ps(load_h8(xb + 32 * Q + 16), zv));
            for (int i = 0; i < Q; i++) {
                const uint8_t *pl = xb + 32 * (Q + 1) + (size_t)i * NK * LB_BCQ_ROWS;
                __m256 p0 = _mm256_setzero_ps(), p1 = _mm256_setzero_ps();
                for (int k = 0; k < NK; k++) {
                    const __m128i idx = _mm_loadu_si128((const __m128i *)(pl + LB_BCQ_ROWS * k));
                    const float *Tk = Tg + 256 * k;
                    p0 = _mm256_add_ps(p0, _mm256_i32gather_ps(Tk, _mm256_cvtepu8_epi32(idx), 4));
                    p1 = _mm256_add_ps(p1, _mm256_i32gather_ps(Tk, _mm256_cvtepu8_epi32(_mm_srli_si128(idx, 8)), 4));
                }
                y0 = _mm256_add_ps(y0, _mm256_mul_ps(load_h8(xb + 32 * i), p0));
                y1 = _mm256_add_ps(y1, _mm256_mul_ps(load_h8(xb + 32 * i + 16), p1));
            }
        }
        _mm256_storeu_ps(y + LB_BCQ_ROWS * rg, y0);
        _mm256_storeu_ps(y + LB_BCQ_ROWS * rg + 8, y1);
    }
}

LB_BCQA void lb_bcq_gemv_f8_avx2(int lut_type, int64_t K, const void *W, int64_t N, const void *act, float *y) {
    const int base = lb_bcq_plain_of_lut(lut_type);
    if (base < 0) return;
    const int q = lb_bcq_bits(lut_type), g = lb_bcq_group(lut_type);
    const float *T = act, *sums = T + (size_t)(K / 8) * 256;
    const int64_t groups = N / LB_BCQ_ROWS;
    switch (lut_type) {
#define BCQ_F8_CASE(name, NAME, Q, G)                                                                        \
    case LB_TYPE_##NAME##_LUT: gemv_f8(Q, G, K, W, groups, T, sums, y); break;
        LB_BCQ_LIST(BCQ_F8_CASE)
#undef BCQ_F8_CASE
    }
    const size_t row = (size_t)(K / g) * LB_BCQ_SIZE(q, g);
    for (int64_t n = groups * LB_BCQ_ROWS; n < N; n++)
        y[n] = lb_bcq_dot_f8_ref(base, K, (const uint8_t *)W + (size_t)n * row, act);
}
#endif
