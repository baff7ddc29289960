/* AVX-512 (F, BW, VL) kernel of the BCQ types (kernels/x86/bcq_x86.h;
 * layout and order of operations in formats/bcq.h). test_bcq checks it
 * against the reference at the avx512 and amx levels where the CPU has them
 * (passed on an Intel Xeon, SPR-class: docs/bcq.md).
 *
 * mu = 4 GEMV, per 16 rows (one _LUT x-block per group) and activation row,
 * 4 slices per register: a 64-byte load of a plane holds its bytes
 * k = 0..3 of a Q8_0 block for the 16 rows, lane k = byte k, whose low
 * nibbles index slice 2k and high nibbles slice 2k+1. The block's tables
 * are gathered into four registers once (two 32-byte loads each: the
 * Q8_0_LUT4 order keeps slices 0, 2 | 4, 6 and 1, 3 | 5, 7 side by side) and
 * serve all q planes: per plane four vpshufb, vpunpck{l,h}bw to int16 (rows
 * 0-7, 8-15 per lane, exact over a block: |sum| <= 8 * 508), and the four
 * lanes are added by two lane shuffles. The 16 rows' sums then fill one
 * zmm of floats, scaled in the reference's order (separate multiplies and
 * adds): every output is the reference's float, bit for bit. */
#include "kernels/x86/bcq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "core/common.h"

/* the reference's float steps, unfused */
#include "core/fp_strict.h"

#define LB_BCQ512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define INLINE LB_BCQ512 static inline __attribute__((always_inline))

INLINE __m512 load_h16(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }

INLINE __m512i load_2x256(const uint8_t *lo, const uint8_t *hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                              _mm256_loadu_si256((const __m256i *)hi), 1);
}

/* The tables of one Q8_0_LUT4 block, lane j of: le / he the low / high
 * bytes of slice 2j, lo / ho those of slice 2j+1 (lb_lut4_pos). */
typedef struct {
    __m512i le, he, lo, ho;
} bcq_tables4;

INLINE bcq_tables4 load_tables(const block_q8_0_lut4 *a) {
    const uint8_t *t = a->t;
    return (bcq_tables4){load_2x256(t, t + 128), load_2x256(t + 32, t + 160), load_2x256(t + 64, t + 192),
                         load_2x256(t + 96, t + 224)};
}

/* One plane over one Q8_0 block for 16 rows: the exact integer sums as
 * floats, row r in element r. pl: plane bytes 4c .. 4c+3 of the 16 rows. */
INLINE __m512 plane_block(const uint8_t *pl, const bcq_tables4 *T) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_loadu_si512((const void *)pl);
    const __m512i ie = _mm512_and_si512(v, m4), io = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    const __m512i le = _mm512_shuffle_epi8(T->le, ie), he = _mm512_shuffle_epi8(T->he, ie);
    const __m512i lo = _mm512_shuffle_epi8(T->lo, io), ho = _mm512_shuffle_epi8(T->ho, io);
    /* int16, lane j: rows 0-7 (a) and 8-15 (b), slices 2j and 2j+1 */
    const __m512i a = _mm512_add_epi16(_mm512_unpacklo_epi8(le, he), _mm512_unpacklo_epi8(lo, ho));
    const __m512i b = _mm512_add_epi16(_mm512_unpackhi_epi8(le, he), _mm512_unpackhi_epi8(lo, ho));
    /* [a0 + a2 | a1 + a3 | b0 + b2 | b1 + b3], then lanes 0 + 1 and 2 + 3 */
    const __m512i t = _mm512_add_epi16(_mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512i u = _mm512_add_epi16(t, _mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m256i rows = _mm512_castsi512_si256(_mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(2, 0, 2, 0)));
    return _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(rows));
}

INLINE void gemv_lut4(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const size_t xs = LB_BCQ_XSIZE(Q, G), plane = (size_t)(G / 8) * LB_BCQ_ROWS;
    const int NC = G / 32;
    for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        for (int m = 0; m < M; m++) {
            const block_q8_0_lut4 *a = (const block_q8_0_lut4 *)((const char *)A + (size_t)m * a_row_size);
            __m512 y = _mm512_setzero_ps();
            const uint8_t *xb = xg;
            for (int64_t gi = 0; gi < K / G; gi++, xb += xs, a += NC) {
                float zs = 0.0f;
                for (int c = 0; c < NC; c++) zs += a[c].ds;
                y = _mm512_add_ps(y, _mm512_mul_ps(load_h16(xb + 32 * Q), _mm512_set1_ps(zs)));
                /* the planes' sums, each over the blocks in order as in the reference */
                __m512 p[LB_BCQ_MAX_Q];
                for (int i = 0; i < Q; i++) p[i] = _mm512_setzero_ps();
                for (int c = 0; c < NC; c++) {
                    const bcq_tables4 T = load_tables(&a[c]);
                    const __m512 d = _mm512_set1_ps(a[c].d);
                    for (int i = 0; i < Q; i++) {
                        const uint8_t *pl = xb + 32 * (Q + 1) + (size_t)i * plane + 64 * c;
                        p[i] = _mm512_add_ps(p[i], _mm512_mul_ps(d, plane_block(pl, &T)));
                    }
                }
                for (int i = 0; i < Q; i++) y = _mm512_add_ps(y, _mm512_mul_ps(load_h16(xb + 32 * i), p[i]));
            }
            _mm512_storeu_ps(Y + (size_t)m * ldy + n, y);
        }
    }
}

#define BCQ_AVX512_DEFINE(name, NAME, Q, G)                                                                    \
    LB_BCQ512 void lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512(int64_t K, const void *W, size_t w_row_size,    \
                                                              int n0, int n1, const void *A, size_t a_row_size, \
                                                              int M, float *Y, size_t ldy) {                   \
        gemv_lut4(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                    \
    }
LB_BCQ_LIST(BCQ_AVX512_DEFINE)
#undef BCQ_AVX512_DEFINE
#endif
