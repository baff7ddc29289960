/* 8- and 16-lane versions of kernels/vmath.h: exp (the same operations, so
 * bit-identical to lb_exp_canon: multiplying by 2^n and vscalefps round
 * alike) and the canonical 16-lane sum. Include only under
 * LB_HAVE_X86_KERNELS. */
#ifndef LB_VMATH_X86_H
#define LB_VMATH_X86_H
#include <immintrin.h>

#include "kernels/vmath.h"

#define LB_VM_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#define LB_VM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"), always_inline)) static inline

#define LB_EXP_POLY(P, FMA, SET1, r)           \
    do {                                       \
        P = FMA(P, r, SET1(LB_EXP_P1));        \
        P = FMA(P, r, SET1(LB_EXP_P2));        \
        P = FMA(P, r, SET1(LB_EXP_P3));        \
        P = FMA(P, r, SET1(LB_EXP_P4));        \
        P = FMA(P, r, SET1(LB_EXP_P5));        \
    } while (0)

LB_VM_AVX2 __m256 lb_exp8(__m256 x) {
    const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(LB_EXP_LO), _CMP_GE_OQ); /* false for NaN, -inf */
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(LB_EXP_LO)), _mm256_set1_ps(LB_EXP_HI));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LB_EXP_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LB_EXP_C1), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LB_EXP_C2), r);
    __m256 p = _mm256_set1_ps(LB_EXP_P0);
    LB_EXP_POLY(p, _mm256_fmadd_ps, _mm256_set1_ps, r);
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* n is in [-126, 127]: 2^n built in the exponent field */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
}

LB_VM_AVX512 __m512 lb_exp16(__m512 x) {
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(LB_EXP_LO), _CMP_GE_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(LB_EXP_LO)), _mm512_set1_ps(LB_EXP_HI));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LB_EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LB_EXP_C1), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LB_EXP_C2), r);
    __m512 p = _mm512_set1_ps(LB_EXP_P0);
    LB_EXP_POLY(p, _mm512_fmadd_ps, _mm512_set1_ps, r);
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_scalef_ps(keep, p, n);
}
#undef LB_EXP_POLY

/* canonical sum of 16 lanes held as lanes 0-7 (lo) and 8-15 (hi) */
LB_VM_AVX2 float lb_hsum16_avx2(__m256 lo, __m256 hi) {
    const __m256 a = _mm256_add_ps(lo, hi);                                        /* i + (i+8) */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1)); /* i + (i+4) */
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                        /* i + (i+2) */
    s = _mm_add_ss(s, _mm_movehdup_ps(s));                                         /* 0 + 1 */
    return _mm_cvtss_f32(s);
}

LB_VM_AVX512 float lb_hsum16_avx512(__m512 v) {
    return lb_hsum16_avx2(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

#endif
