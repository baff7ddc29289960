/* The AVX2 activation quantizer of the ABQ kernels: per token, exactly the
 * reference's ABQ_ACT blocks (lb_abq_quantize_act, formats/abq.c), byte for
 * byte. Decode quantizes one row per matmul, and the reference's plane loop
 * (p read-modify-writes per value) took about as long as the code-layout
 * GEMV itself; here a plane of 32 values is one shift and one movemask.
 *
 * Same float operations in the same order: the range by min / max from 0
 * (a NaN never replaces the running value: vminps / vmaxps return their
 * second operand then, as the reference's `x < lo` is false), d and 1/d in
 * scalar as there, v = x * id, codes by round-to-nearest-even conversion
 * (lrintf under the default rounding mode), the reference's guards against
 * NaN and out-of-range values before the conversion. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#define LB_ABQA2 __attribute__((target("avx2,fma")))

LB_ABQA2 static float hmin(__m256 v) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

LB_ABQA2 static float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* 8 codes of x * id, the reference's expression for each */
LB_ABQA2 static __m256i codes8(const float *x, __m256 id, __m256i z, int cmax) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id), top = _mm256_set1_ps((float)cmax);
    const __m256i r = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(v), z), _mm256_setzero_si256()),
                                       _mm256_set1_epi32(cmax));
    const __m256 ge = _mm256_cmp_ps(v, top, _CMP_GE_OQ), gt = _mm256_cmp_ps(v, _mm256_sub_ps(_mm256_setzero_ps(), top), _CMP_GT_OQ);
    /* v >= cmax: cmax; else v > -cmax: r; else (and NaN): 0 */
    const __m256i mid = _mm256_and_si256(r, _mm256_castps_si256(gt));
    return _mm256_blendv_epi8(mid, _mm256_set1_epi32(cmax), _mm256_castps_si256(ge));
}

LB_ABQA2 void lb_abq_quantize_act_avx2(const float *x, void *vy, int64_t k, int p_in) {
    block_abq_act *y = vy;
    __m256 lo8 = _mm256_setzero_ps(), hi8 = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= k; j += 8) {
        const __m256 v = _mm256_loadu_ps(x + j);
        lo8 = _mm256_min_ps(v, lo8), hi8 = _mm256_max_ps(v, hi8);
    }
    const lb_abq_act_scale sc = lb_abq_act_scale_of(x, j, k, hmin(lo8), hmax(hi8), p_in);
    const float d = sc.d, id = sc.id;
    const int z = sc.z, p = sc.p, cmax = sc.cmax;
    const __m256 id8 = _mm256_set1_ps(id);
    const __m256i z8 = _mm256_set1_epi32(z), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t i = 0; i < k / LB_ABQ_G; i++) {
        block_abq_act *b = &y[i];
        memset(b, 0, sizeof *b);
        b->d = d, b->z = (int16_t)z, b->p = (uint8_t)p;
        __m256i sum = _mm256_setzero_si256();
        for (int q = 0; q < LB_ABQ_G / 32; q++) {
            const float *xs = x + i * LB_ABQ_G + 32 * q;
            const __m256i c0 = codes8(xs, id8, z8, cmax), c1 = codes8(xs + 8, id8, z8, cmax);
            const __m256i c2 = codes8(xs + 16, id8, z8, cmax), c3 = codes8(xs + 24, id8, z8, cmax);
            sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)));
            /* 32 codes as bytes in value order: the packs interleave lanes, the permute undoes it */
            const __m256i w = _mm256_packus_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3));
            const __m256i c = _mm256_permutevar8x32_epi32(w, order);
            _mm256_storeu_si256((__m256i *)(b->c + 32 * q), _mm256_xor_si256(c, _mm256_set1_epi8((char)0x80)));
            for (int t = 0; t < p; t++) {
                const uint32_t bits = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(c, 7 - t));
                memcpy(&b->b[t][4 * q], &bits, 4);
            }
        }
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
        b->sum = _mm_cvtsi128_si32(s);
    }
}

LB_ABQA2 void lb_abq_quantize_act8_avx2(const float *x, void *y, int64_t k) { lb_abq_quantize_act_avx2(x, y, k, 8); }

#endif
