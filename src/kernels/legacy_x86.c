/* AVX2 kernels for Q4_1, Q5_0 and Q5_1. Each block's 32 quants are unpacked
 * into one register of bytes (low lane weights 0..15, high lane 16..31, the
 * order of the activations), multiplied with the int8 activations by
 * maddubs and summed exactly in int32; the float scale and the min term
 * (m * s of Q8_1) are applied per block. */
#include "kernels/legacy_x86.h"

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

LB_AVX2 void lb_vec_dot_q4_1_q8_1_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_1 *w = vw;
    const block_q8_1 *a = va;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK4_1; b++) {
        const __m256 d = _mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d));
        const __m256i aq = _mm256_loadu_si256((const __m256i *)a[b].qs);
        acc = _mm256_fmadd_ps(d, dot_u8_i8(unpack_nibbles(w[b].qs), aq), acc);
        mins += FP16(w[b].m) * FP16(a[b].s);
    }
    *s = hsum_ps(acc) + mins;
}

LB_AVX2 void lb_vec_dot_q5_0_q8_0_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_0 *w = vw;
    const block_q8_0 *a = va;
    const __m256i f0 = _mm256_set1_epi8((char)0xF0);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK5_0; b++) {
        const __m256 d = _mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d));
        /* q - 16 as a signed byte: the nibble alone when the fifth bit is
         * set, else the nibble with 0xF0 or-ed in (= nibble - 16) */
        const __m256i hi = _mm256_andnot_si256(high_bit_mask(w[b].qh), f0);
        const __m256i wq = _mm256_or_si256(unpack_nibbles(w[b].qs), hi);
        const __m256i aq = _mm256_loadu_si256((const __m256i *)a[b].qs);
        acc = _mm256_fmadd_ps(d, dot_i8_i8(wq, aq), acc);
    }
    *s = hsum_ps(acc);
}

LB_AVX2 void lb_vec_dot_q5_1_q8_1_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_1 *w = vw;
    const block_q8_1 *a = va;
    const __m256i x10 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK5_1; b++) {
        const __m256 d = _mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d));
        const __m256i hi = _mm256_and_si256(high_bit_mask(w[b].qh), x10);
        const __m256i wq = _mm256_or_si256(unpack_nibbles(w[b].qs), hi); /* 0..31 */
        const __m256i aq = _mm256_loadu_si256((const __m256i *)a[b].qs);
        acc = _mm256_fmadd_ps(d, dot_u8_i8(wq, aq), acc);
        mins += FP16(w[b].m) * FP16(a[b].s);
    }
    *s = hsum_ps(acc) + mins;
}
#endif
