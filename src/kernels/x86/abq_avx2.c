/* AVX2 kernels of the ABQ types (kernels/x86/abq_x86.h; layout and order of
 * operations in formats/abq.h). Two ways to the same integer group dot:
 *
 * popcount: per weight plane s, its 16 bytes in both lanes, ANDed with
 * activation planes t (lane 0) and t + 1 (lane 1), which lie side by side in
 * block_abq_act; the bytes' popcounts (two vpshufb of the nibble table, each
 * <= 8) summed by vpsadbw into one 64-bit count per half lane and shifted
 * left by s + t or s + t + 1 (vpsllvq). Planes p..7 of an activation block
 * are zero, so an odd p reads one zero plane. Cost ~ q ceil(p/2) steps.
 *
 * int8: the q weight planes recombined into one code byte per weight (each
 * 4-byte slice of a plane broadcast, bytes spread by vpshufb, bit j % 8
 * picked, 0/1 by vpminub, shifted to 2^s, ORed), then vpmaddubsw against the
 * block's codes as bytes ca - 128: |pair sum| <= 2 * 127 * 128 fits int16
 * for q <= 7; sum cw ca = that + 128 Sw. Cost ~ q steps, whatever p.
 *
 * Both give the group's exact int32, then the reference's double
 * accumulation: every output is the reference's float, bit for bit. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

/* the reference's double multiply, then add: never fused */
#include "core/fp_strict.h"

#define LB_ABQA __attribute__((target("avx2,fma,f16c,popcnt")))
#define INLINE LB_ABQA static inline __attribute__((always_inline))

/* sum_s sum_t 2^(s+t) popcount(W_s & A_t) of one group */
INLINE int32_t planes_product(const uint8_t *wp, int q, const block_abq_act *a) {
    const __m256i nibble = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1,
                                            2, 2, 3, 2, 3, 3, 4);
    const __m256i low4 = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    const int pairs = (a->p + 1) / 2;
    __m256i acc = zero;
    for (int s = 0; s < q; s++) {
        const __m256i w = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(wp + LB_ABQ_PLANE * s)));
        for (int tp = 0; tp < pairs; tp++) {
            const __m256i x = _mm256_and_si256(w, _mm256_loadu_si256((const __m256i *)a->b[2 * tp]));
            const __m256i cnt = _mm256_add_epi8(_mm256_shuffle_epi8(nibble, _mm256_and_si256(x, low4)),
                                                _mm256_shuffle_epi8(nibble, _mm256_and_si256(_mm256_srli_epi16(x, 4), low4)));
            const int sh = s + 2 * tp;
            const __m256i shift = _mm256_setr_epi64x(sh, sh, sh + 1, sh + 1);
            acc = _mm256_add_epi64(acc, _mm256_sllv_epi64(_mm256_sad_epu8(cnt, zero), shift));
        }
    }
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    return (int32_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1));
}

/* Weights 32k .. 32k+31 of a group as code bytes, from 4 bytes of each of
 * its q planes (q <= 7). */
INLINE __m256i expand_chunk(const uint8_t *wp, int q, int k) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                            3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32,
                                         64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    const __m256i one8 = _mm256_set1_epi8(1);
    __m256i cw = _mm256_setzero_si256();
    for (int s = 0; s < q; s++) {
        int32_t bits;
        memcpy(&bits, wp + LB_ABQ_PLANE * s + 4 * k, 4);
        const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32(bits), spread);
        const __m256i v01 = _mm256_min_epu8(_mm256_and_si256(b, bit), one8);
        /* 0/1 bytes shifted by s < 8 stay within their byte */
        cw = _mm256_or_si256(cw, _mm256_sll_epi16(v01, _mm_cvtsi32_si128(s)));
    }
    return cw;
}

/* 32 code bytes times 32 activation bytes ca - 128, as 8 int32 partial sums */
INLINE __m256i chunk_dot(__m256i cw, const int8_t *ca) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(cw, _mm256_loadu_si256((const __m256i *)ca)), _mm256_set1_epi16(1));
}

/* sum_j cw_j ca_j from the partial sums; sw = sum_j cw_j */
INLINE int32_t chunk_total(__m256i acc, int32_t sw) {
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
    return _mm_cvtsi128_si32(h) + 128 * sw;
}

/* one group, one activation row: each chunk expanded and used at once */
INLINE int32_t codes_product(const uint8_t *wp, int q, const block_abq_act *a, int32_t sw) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < LB_ABQ_G / 32; k++) acc = _mm256_add_epi32(acc, chunk_dot(expand_chunk(wp, q, k), a->c + 32 * k));
    return chunk_total(acc, sw);
}

INLINE float row_dot(int q, int header, int zfixed, int use_int8, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    const size_t bs = (size_t)header + LB_ABQ_PLANE * (size_t)q;
    double acc = 0.0;
    for (int64_t i = 0; i < n / LB_ABQ_G; i++) {
        const uint8_t *blk = (const uint8_t *)w + i * bs, *wp = blk + header;
        double dw;
        int zw;
        int32_t sw;
        lb_abq_group_head(blk, q, header, zfixed, &dw, &zw, &sw);
        const int32_t P = use_int8 ? codes_product(wp, q, &a[i], sw) : planes_product(wp, q, &a[i]);
        acc += dw * (double)(P - a[i].z * sw - zw * a[i].sum + LB_ABQ_G * zw * a[i].z);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* int8 way, many activation rows: each weight group recombined once and
 * dotted with the M rows' groups; per output the groups in order, so every
 * output is row_dot's. At most GEMM_ROWS rows per pass. */
#define GEMM_ROWS 64
INLINE void gemm_int8(int q, int header, int zfixed, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    double acc[GEMM_ROWS];
    for (int m0 = 0; m0 < M; m0 += GEMM_ROWS) {
        const int mr = LB_MIN(GEMM_ROWS, M - m0);
        for (int n = n0; n < n1; n++) {
            const uint8_t *row = (const uint8_t *)W + (size_t)n * w_row_size;
            for (int m = 0; m < mr; m++) acc[m] = 0.0;
            for (int64_t i = 0; i < nb; i++) {
                const uint8_t *blk = row + (size_t)i * ((size_t)header + LB_ABQ_PLANE * (size_t)q);
                double dw;
                int zw;
                int32_t sw;
                lb_abq_group_head(blk, q, header, zfixed, &dw, &zw, &sw);
                __m256i cw[LB_ABQ_G / 32];
                for (int k = 0; k < LB_ABQ_G / 32; k++) cw[k] = expand_chunk(blk + header, q, k);
                for (int m = 0; m < mr; m++) {
                    const block_abq_act *a = (const block_abq_act *)((const uint8_t *)A + (size_t)(m0 + m) * a_row_size) + i;
                    __m256i pacc = _mm256_setzero_si256();
                    for (int k = 0; k < LB_ABQ_G / 32; k++) pacc = _mm256_add_epi32(pacc, chunk_dot(cw[k], a->c + 32 * k));
                    const int32_t P = chunk_total(pacc, sw);
                    acc[m] += dw * (double)(P - a->z * sw - zw * a->sum + LB_ABQ_G * zw * a->z);
                }
            }
            for (int m = 0; m < mr; m++) {
                const block_abq_act *a = (const block_abq_act *)((const uint8_t *)A + (size_t)(m0 + m) * a_row_size);
                Y[(size_t)(m0 + m) * ldy + n] = nb ? (float)(acc[m] * (double)a->d) : 0.0f;
            }
        }
    }
}

/* The faster way (bench/abq, AMD EPYC Zen 3, docs/abq.md): per group,
 * popcount takes ~6.6 ns + 1.45 ns per (s, pair of t) step, q ceil(p/2)
 * steps; int8 ~6.5 ns + 3.7 ns per weight plane, whatever p. So int8 once
 * 1.45 ceil(p/2) > 3.7, i.e. p >= 5, for any q; popcount for q = 8 (codes
 * up to 255 would overflow vpmaddubsw's int16 pairs). */
static int int8_wins(int q, int p) { return q <= 7 && p >= LB_ABQ_INT8_MIN_P; }

int lb_abq_avx2_int8_wins(int q, int p) { return int8_wins(q, p); }

LB_ABQA float lb_abq_dot_avx2(int type, int way, int64_t n, const void *w, const void *a) {
    const int q = lb_abq_bits(type), balanced = lb_abq_is_balanced(type);
    const int p = n >= LB_ABQ_G ? ((const block_abq_act *)a)->p : 8;
    const int use_int8 = way < 0 ? int8_wins(q, p) : way == 1 && q <= 7;
    return row_dot(q, balanced ? 2 : 4, balanced ? 2 : -1, use_int8, n, w, a);
}

/* W2S: d alone (2 header bytes), z = 2; the others d and z (4 bytes) */
#define ABQ_AVX2(name, NAME, Q)                                                                              \
    LB_ABQA void lb_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *va) {              \
        const int balanced = LB_TYPE_##NAME == LB_TYPE_ABQ_W2S;                                              \
        const int p = n >= LB_ABQ_G ? ((const block_abq_act *)va)->p : 8;                                    \
        *s = row_dot(Q, balanced ? 2 : 4, balanced ? 2 : -1, int8_wins(Q, p), n, w, va);                    \
    }                                                                                                       \
    LB_ABQA void lb_gemm_##name##_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1,          \
                                        const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {     \
        const int balanced = LB_TYPE_##NAME == LB_TYPE_ABQ_W2S;                                              \
        const int p = K >= LB_ABQ_G ? ((const block_abq_act *)A)->p : 8;                                    \
        if (M > 1 && Q <= 7) {                                                                               \
            gemm_int8(Q, balanced ? 2 : 4, balanced ? 2 : -1, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy); \
            return;                                                                                          \
        }                                                                                                    \
        for (int m = 0; m < M; m++)                                                                          \
            for (int n = n0; n < n1; n++)                                                                    \
                Y[(size_t)m * ldy + n] = row_dot(Q, balanced ? 2 : 4, balanced ? 2 : -1, int8_wins(Q, p), K,  \
                                                 (const uint8_t *)W + (size_t)n * w_row_size,                \
                                                 (const uint8_t *)A + (size_t)m * a_row_size);               \
    }
LB_ABQ_LIST(ABQ_AVX2)
#undef ABQ_AVX2

#endif
