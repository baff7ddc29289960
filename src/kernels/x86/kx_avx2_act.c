/* AVX2 activation quantizers of the 16-row layouts' kernels (kx_avx2.h):
 * Q8_1 rows (the Q4_1 / Q5_1 GEMV), lb_block_q8_1x4 (their GEMM) and
 * lb_block_q8_0x4v (the Q5_0 GEMM), each bit-identical to its scalar
 * reference (lb_quantize_row_q8_1_ref, lb_quantize_q8_1x4_ref,
 * lb_quantize_q8_0x4v_ref): the same float operations in the same order,
 * roundf's ties away from zero, F16C's round-to-nearest-even fp16. Prefill
 * runs the 4-row quantizer over every activation row of every matmul. */
#include "kernels/x86/kx_avx2.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "formats/legacy.h"
#include "formats/repack.h"
#include "formats/repack_kx.h"

#define LB_AVX2Q __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_AVX2Q static inline __attribute__((always_inline))

/* roundf: truncate, then away from zero when the dropped part is >= 0.5 */
INLINE __m256i round_away(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(x, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, _mm256_or_ps(_mm256_set1_ps(1.0f), sign))));
}

/* One block of 32 as lb_quantize_row_q8_0_ref (Q8_1's bytes and d are the
 * same): the bytes, d = amax / 127 (float, before its fp16 rounding) and
 * the sum of the bytes. */
INLINE void quant32(const float *x, int8_t *qs, float *d_out, int32_t *sum) {
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
    const __m256i i0 = round_away(_mm256_mul_ps(v0, vid)), i1 = round_away(_mm256_mul_ps(v1, vid));
    const __m256i i2 = round_away(_mm256_mul_ps(v2, vid)), i3 = round_away(_mm256_mul_ps(v3, vid));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    *sum = _mm_cvtsi128_si32(h);
    *d_out = d;
    /* packs interleave 128-bit lanes; the permute restores element order */
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    _mm256_storeu_si256((__m256i *)qs, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

INLINE uint16_t fp16_of(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

LB_AVX2Q void lb_quantize_row_q8_1_avx2(const float *x, void *vy, int64_t k) {
    block_q8_1 *y = vy;
    for (int64_t b = 0; b < k / QK8_1; b++) {
        float d;
        int32_t sum;
        quant32(x + b * QK8_1, y[b].qs, &d, &sum);
        y[b].d = fp16_of(d);
        y[b].s = fp16_of((float)sum * d);
    }
}

LB_AVX2Q void lb_quantize_q8_1x4_avx2(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_1x4 *y = vy;
    for (int64_t b = 0; b < k / QK8_1; b++)
        for (int m = 0; m < 4; m++) {
            float d;
            int32_t sum;
            quant32(x + m * ldx + b * QK8_1, y[b].qs[m], &d, &sum);
            y[b].d[m] = _cvtsh_ss(fp16_of(d));
            y[b].s[m] = _cvtsh_ss(fp16_of((float)sum * d));
        }
}

LB_AVX2Q void lb_quantize_q8_0x4v_avx2(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_0x4v *y = vy;
    for (int64_t b = 0; b < k / QK8_0; b++)
        for (int m = 0; m < 4; m++) {
            float d;
            int32_t sum;
            quant32(x + m * ldx + b * QK8_0, y[b].qs[m], &d, &sum);
            y[b].d[m] = _cvtsh_ss(fp16_of(d));
            y[b].b8[m] = -8 * sum;
            y[b].b128[m] = -128 * sum;
        }
}
#endif
