/* AVX2 kernels of ABQ's code layouts (formats/abq.h: ABQ_W{q}_C4 / _C2,
 * made at load from the plane types). Per group of 128 weights, one or two
 * 32-byte loads and masks give the codes in the order of the activations'
 * bytes ca - 128; four vpmaddubsw (|pair| <= 2 * 15 * 128, four of them
 * summed <= 15360: int16 holds it) and one vpmaddwd give 8 int32 partial
 * sums. Four groups' sums are reduced at once (vphaddd), then each group's
 * exact integer dot, I = P + 128 sw - za sw - zw Sa + 128 zw za, joins the
 * reference's double accumulation in group order: every output is the
 * reference's float, bit for bit.
 *
 * The gemm (prefill) decodes each group's codes once and reuses them for
 * every activation row, four rows reduced at once. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

/* the reference's double multiply, then add: never fused */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define LB_ABQC __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_ABQC static inline __attribute__((always_inline))

/* The 4 x 32 code bytes of a group (width 4 or 2 bits). */
INLINE void codes(const uint8_t *qs, int w, __m256i c[4]) {
    if (w == 4) {
        const __m256i m = _mm256_set1_epi8(0x0f);
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)qs), x1 = _mm256_loadu_si256((const __m256i *)(qs + 32));
        c[0] = _mm256_and_si256(x0, m), c[1] = _mm256_and_si256(_mm256_srli_epi16(x0, 4), m);
        c[2] = _mm256_and_si256(x1, m), c[3] = _mm256_and_si256(_mm256_srli_epi16(x1, 4), m);
    } else {
        const __m256i m = _mm256_set1_epi8(0x03);
        const __m256i x = _mm256_loadu_si256((const __m256i *)qs);
        c[0] = _mm256_and_si256(x, m), c[1] = _mm256_and_si256(_mm256_srli_epi16(x, 2), m);
        c[2] = _mm256_and_si256(_mm256_srli_epi16(x, 4), m), c[3] = _mm256_and_si256(_mm256_srli_epi16(x, 6), m);
    }
}

#define LD(p) _mm256_loadu_si256((const __m256i *)(p))

/* 8 int32 partial sums of sum_j c_j (ca_j - 128) */
INLINE __m256i sums4(__m256i c0, __m256i c1, __m256i c2, __m256i c3, const int8_t *ca) {
    const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(c0, LD(ca)), _mm256_maddubs_epi16(c1, LD(ca + 32)));
    const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(c2, LD(ca + 64)), _mm256_maddubs_epi16(c3, LD(ca + 96)));
    return _mm256_madd_epi16(_mm256_add_epi16(s01, s23), _mm256_set1_epi16(1));
}
INLINE __m256i group_sums(const __m256i c[4], const int8_t *ca) { return sums4(c[0], c[1], c[2], c[3], ca); }

/* decode and sums of one group, in registers */
INLINE __m256i group_dot(const uint8_t *qs, int w, const int8_t *ca) {
    if (w == 4) {
        const __m256i m = _mm256_set1_epi8(0x0f), x0 = LD(qs), x1 = LD(qs + 32);
        return sums4(_mm256_and_si256(x0, m), _mm256_and_si256(_mm256_srli_epi16(x0, 4), m), _mm256_and_si256(x1, m),
                     _mm256_and_si256(_mm256_srli_epi16(x1, 4), m), ca);
    }
    const __m256i m = _mm256_set1_epi8(0x03), x = LD(qs);
    return sums4(_mm256_and_si256(x, m), _mm256_and_si256(_mm256_srli_epi16(x, 2), m),
                 _mm256_and_si256(_mm256_srli_epi16(x, 4), m), _mm256_and_si256(_mm256_srli_epi16(x, 6), m), ca);
}

/* the totals of 4 vectors of 8 int32, in order */
INLINE __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i abcd = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

typedef struct {
    double d;
    int32_t z, sw;
} head;

INLINE head head_of(const uint8_t *blk) {
    float d;
    int16_t sw, z;
    memcpy(&d, blk, 4), memcpy(&sw, blk + 4, 2), memcpy(&z, blk + 6, 2);
    return (head){(double)d, z, sw};
}

/* the group's integer dot from P' = sum c (ca - 128) */
INLINE int32_t group_int(int32_t p, head h, const block_abq_act *a) {
    return p + 128 * h.sw - a->z * h.sw - h.z * a->sum + LB_ABQ_G * h.z * a->z;
}

/* One row against one activation row: groups four at a time. */
INLINE float row_dot(int w, size_t bs, int64_t n, const uint8_t *row, const block_abq_act *a) {
    const int64_t nb = n / LB_ABQ_G;
    double acc = 0.0;
    int64_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        const uint8_t *r = row + (size_t)i * bs + 8;
        int32_t p[4];
        _mm_storeu_si128((__m128i *)p, hsum4(group_dot(r, w, a[i].c), group_dot(r + bs, w, a[i + 1].c),
                                             group_dot(r + 2 * bs, w, a[i + 2].c), group_dot(r + 3 * bs, w, a[i + 3].c)));
        for (int g = 0; g < 4; g++) {
            const head h = head_of(row + (size_t)(i + g) * bs);
            acc += h.d * (double)group_int(p[g], h, &a[i + g]);
        }
    }
    for (; i < nb; i++) {
        const __m256i z = _mm256_setzero_si256();
        int32_t p[4];
        _mm_storeu_si128((__m128i *)p, hsum4(group_dot(row + (size_t)i * bs + 8, w, a[i].c), z, z, z));
        const head h = head_of(row + (size_t)i * bs);
        acc += h.d * (double)group_int(p[0], h, &a[i]);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* Rows [n0, n1) x M activation rows: each group decoded once for all rows,
 * passes of up to GEMM_ROWS rows. Four rows at a time: their sums reduced
 * together, their integer dots in one SSE vector (I = P' + sw (128 - za) -
 * z (Sa - 128 za): the same integers), their double accumulations in the
 * four lanes of one AVX vector (a lane per row, groups in order: each lane
 * is the reference's sequence of multiplies and adds). */
#define GEMM_ROWS 64
INLINE void gemm(int w, size_t bs, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                 size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    __m256d acc4[GEMM_ROWS / 4];
    __m128i c1[GEMM_ROWS / 4], c2[GEMM_ROWS / 4];
    double acc[GEMM_ROWS];
    for (int m0 = 0; m0 < M; m0 += GEMM_ROWS) {
        const int mr = LB_MIN(GEMM_ROWS, M - m0), m4 = mr & ~3;
        const block_abq_act *a0 = (const block_abq_act *)((const uint8_t *)A + (size_t)m0 * a_row_size);
#define ACT(m, i) ((const block_abq_act *)((const uint8_t *)a0 + (size_t)(m) * a_row_size) + (i))
        for (int m = 0; m < m4; m += 4) { /* per token: 128 - za and 128 za */
            const __m128i za = _mm_setr_epi32(ACT(m, 0)->z, ACT(m + 1, 0)->z, ACT(m + 2, 0)->z, ACT(m + 3, 0)->z);
            c1[m / 4] = _mm_sub_epi32(_mm_set1_epi32(128), za), c2[m / 4] = _mm_slli_epi32(za, 7);
        }
        for (int n = n0; n < n1; n++) {
            const uint8_t *row = (const uint8_t *)W + (size_t)n * w_row_size;
            for (int m = 0; m < m4; m += 4) acc4[m / 4] = _mm256_setzero_pd();
            for (int m = m4; m < mr; m++) acc[m] = 0.0;
            for (int64_t i = 0; i < nb; i++) {
                const uint8_t *blk = row + (size_t)i * bs;
                const head h = head_of(blk);
                const __m128i sw = _mm_set1_epi32(h.sw), zw = _mm_set1_epi32(h.z);
                const __m256d d = _mm256_set1_pd(h.d);
                __m256i c[4];
                codes(blk + 8, w, c);
                for (int m = 0; m < m4; m += 4) {
                    const __m128i p = hsum4(group_sums(c, ACT(m, i)->c), group_sums(c, ACT(m + 1, i)->c),
                                            group_sums(c, ACT(m + 2, i)->c), group_sums(c, ACT(m + 3, i)->c));
                    const __m128i sa = _mm_setr_epi32(ACT(m, i)->sum, ACT(m + 1, i)->sum, ACT(m + 2, i)->sum,
                                                      ACT(m + 3, i)->sum);
                    const __m128i I = _mm_sub_epi32(_mm_add_epi32(p, _mm_mullo_epi32(sw, c1[m / 4])),
                                                    _mm_mullo_epi32(zw, _mm_sub_epi32(sa, c2[m / 4])));
                    acc4[m / 4] = _mm256_add_pd(acc4[m / 4], _mm256_mul_pd(d, _mm256_cvtepi32_pd(I)));
                }
                for (int m = m4; m < mr; m++) {
                    const __m256i z = _mm256_setzero_si256();
                    int32_t p[4];
                    _mm_storeu_si128((__m128i *)p, hsum4(group_sums(c, ACT(m, i)->c), z, z, z));
                    acc[m] += h.d * (double)group_int(p[0], h, ACT(m, i));
                }
            }
            for (int m = 0; m < m4; m += 4) _mm256_storeu_pd(acc + m, acc4[m / 4]);
            for (int m = 0; m < mr; m++) Y[(size_t)(m0 + m) * ldy + n] = nb ? (float)(acc[m] * (double)ACT(m, 0)->d) : 0.0f;
        }
#undef ACT
    }
}

#define ABQ_CODES_AVX2(name, NAME, block)                                                                    \
    LB_ABQC void lb_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *a) {              \
        *s = row_dot(sizeof(block) == sizeof(block_abq_c4) ? 4 : 2, sizeof(block), n, w, a);                 \
    }                                                                                                       \
    LB_ABQC void lb_gemm_##name##_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1,          \
                                        const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {     \
        const int w = sizeof(block) == sizeof(block_abq_c4) ? 4 : 2;                                        \
        if (M > 1) {                                                                                         \
            gemm(w, sizeof(block), K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                     \
            return;                                                                                          \
        }                                                                                                    \
        for (int n = n0; n < n1; n++)                                                                        \
            Y[n] = row_dot(w, sizeof(block), K, (const uint8_t *)W + (size_t)n * w_row_size, A);             \
    }
LB_ABQ_CODES_LIST(ABQ_CODES_AVX2)
#undef ABQ_CODES_AVX2

#endif
