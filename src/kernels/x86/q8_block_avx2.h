/* The AVX2 Q8_0 block quantizer that the AVX2 activation paths share
 * (q4_0_repack_x86.c for the 4/8-row layouts, kx_avx2_act.c for the 16-row
 * ones): 32 floats to 32 bytes bit-identical to lb_quantize_row_q8_0_ref's
 * (and Q8_1's): amax / 127 in float, roundf's ties away from zero. */
#ifndef LB_Q8_BLOCK_AVX2_H
#define LB_Q8_BLOCK_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#define LB_Q8B_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* roundf: truncate, then away from zero when the dropped part is >= 0.5 */
LB_Q8B_INLINE __m256i lb_round_away_avx2(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(x, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, _mm256_or_ps(_mm256_set1_ps(1.0f), sign))));
}

/* One block of 32: the quants in order (returned), d = amax / 127 (float,
 * before any fp16 rounding) and the sum of the quants. */
LB_Q8B_INLINE __m256i lb_q8_block32_avx2(const float *x, float *d_out, int32_t *sum) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    const __m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v0, absmask), _mm256_and_ps(v1, absmask)),
                                    _mm256_max_ps(_mm256_and_ps(v2, absmask), _mm256_and_ps(v3, absmask)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float d = _mm_cvtss_f32(m4) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i i0 = lb_round_away_avx2(_mm256_mul_ps(v0, vid)), i1 = lb_round_away_avx2(_mm256_mul_ps(v1, vid));
    const __m256i i2 = lb_round_away_avx2(_mm256_mul_ps(v2, vid)), i3 = lb_round_away_avx2(_mm256_mul_ps(v3, vid));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    *sum = _mm_cvtsi128_si32(h);
    *d_out = d;
    /* packs interleave 128-bit lanes; the permute restores element order */
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

#endif
