/* AVX2 kernels for Q4_1, Q5_0 and Q5_1. Each block's 32 quants are unpacked
 * into one register of bytes (low lane weights 0..15, high lane 16..31, the
 * order of the activations), multiplied with the int8 activations by
 * maddubs and summed exactly in int32; the float scale and the min term
 * (m * s of Q8_1) are applied per block. */
#include "kernels/x86/legacy_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "formats/legacy.h"

#define LB_AVX2 __attribute__((target("avx2,fma,f16c")))
#define FP16(h) _cvtsh_ss(h) /* hardware half -> float, exact */

LB_AVX2 static inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 32 low nibbles of a block as bytes 0..15 in element order. */
LB_AVX2 static inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

/* 0xFF in byte j where bit j of the Q5 high-bit word is set, else 0: byte j
 * is given byte j/8 of the word, then tested against bit j%8. */
LB_AVX2 static inline __m256i high_bit_mask(const uint8_t qh[4]) {
    uint32_t bits;
    memcpy(&bits, qh, sizeof bits);
    const __m256i spread = _mm256_setr_epi64x(0x0000000000000000LL, 0x0101010101010101LL,
                                              0x0202020202020202LL, 0x0303030303030303LL);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Sum of 32 products of unsigned bytes u and signed bytes a, as 8 float
 * lanes of 4 products each. Exact while u <= 32: a pair never saturates
 * maddubs' int16 and a lane stays far below 2^24. */
LB_AVX2 static inline __m256 dot_u8_i8(__m256i u, __m256i a) {
    const __m256i p16 = _mm256_maddubs_epi16(u, a);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

/* Same for two signed operands: |w| times a with w's sign moved onto a. */
LB_AVX2 static inline __m256 dot_i8_i8(__m256i w, __m256i a) {
    return dot_u8_i8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}

/* One block of each format: 8 float lanes of exact integer dot products,
 * to be scaled by d_w * d_a. */
LB_AVX2 static inline __m256 dot_block_q4_1(const block_q4_1 *w, const block_q8_1 *a) {
    return dot_u8_i8(unpack_nibbles(w->qs), _mm256_loadu_si256((const __m256i *)a->qs));
}

LB_AVX2 static inline __m256 dot_block_q5_0(const block_q5_0 *w, const block_q8_0 *a) {
    /* q - 16 as a signed byte: the nibble alone when the fifth bit is set,
     * else the nibble with 0xF0 or-ed in (= nibble - 16) */
    const __m256i hi = _mm256_andnot_si256(high_bit_mask(w->qh), _mm256_set1_epi8((char)0xF0));
    const __m256i wq = _mm256_or_si256(unpack_nibbles(w->qs), hi);
    return dot_i8_i8(wq, _mm256_loadu_si256((const __m256i *)a->qs));
}

LB_AVX2 static inline __m256 dot_block_q5_1(const block_q5_1 *w, const block_q8_1 *a) {
    const __m256i hi = _mm256_and_si256(high_bit_mask(w->qh), _mm256_set1_epi8(0x10));
    const __m256i wq = _mm256_or_si256(unpack_nibbles(w->qs), hi); /* 0..31 */
    return dot_u8_i8(wq, _mm256_loadu_si256((const __m256i *)a->qs));
}

/* Two blocks per step into two accumulators, so consecutive FMAs don't wait
 * on each other; the min terms (m * s) of Q4_1 / Q5_1 are summed apart.
 * Expects w, a (typed block pointers), n and s in scope. */
#define DOT_LOOP_WITH_MIN(BLOCK)                                                              \
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                           \
    float min0 = 0.0f, min1 = 0.0f;                                                          \
    const int64_t nb = n / 32;                                                               \
    int64_t b = 0;                                                                           \
    for (; b + 1 < nb; b += 2) {                                                             \
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d)), BLOCK(&w[b], &a[b]), acc0); \
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(FP16(w[b + 1].d) * FP16(a[b + 1].d)),          \
                               BLOCK(&w[b + 1], &a[b + 1]), acc1);                           \
        min0 += FP16(w[b].m) * FP16(a[b].s);                                                 \
        min1 += FP16(w[b + 1].m) * FP16(a[b + 1].s);                                         \
    }                                                                                        \
    if (b < nb) {                                                                            \
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d)), BLOCK(&w[b], &a[b]), acc0); \
        min0 += FP16(w[b].m) * FP16(a[b].s);                                                 \
    }                                                                                        \
    *s = hsum_ps(_mm256_add_ps(acc0, acc1)) + (min0 + min1)

LB_AVX2 void lb_vec_dot_q4_1_q8_1_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_1 *w = vw;
    const block_q8_1 *a = va;
    DOT_LOOP_WITH_MIN(dot_block_q4_1);
}

/* Q5_0: the same two-accumulator loop without a min term. */
LB_AVX2 void lb_vec_dot_q5_0_q8_0_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_0 *w = vw;
    const block_q8_0 *a = va;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t nb = n / 32;
    int64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d)), dot_block_q5_0(&w[b], &a[b]), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(FP16(w[b + 1].d) * FP16(a[b + 1].d)),
                               dot_block_q5_0(&w[b + 1], &a[b + 1]), acc1);
    }
    if (b < nb)
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d)), dot_block_q5_0(&w[b], &a[b]), acc0);
    *s = hsum_ps(_mm256_add_ps(acc0, acc1));
}

LB_AVX2 void lb_vec_dot_q5_1_q8_1_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_1 *w = vw;
    const block_q8_1 *a = va;
    DOT_LOOP_WITH_MIN(dot_block_q5_1);
}
#endif
