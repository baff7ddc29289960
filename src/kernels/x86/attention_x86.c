/* AVX2 and AVX-512 attention work units: kernels/attention_x86_tmpl.h
 * instantiated for 8 and 16 floats per vector. */
#include "kernels/x86/attention_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <math.h>

#include "formats/types.h" /* block_q8_0 */
#include "kernels/attention_impl.h" /* and kernels/vmath.h */
#include "kernels/x86/vmath_x86.h"

__attribute__((target("avx2,f16c"))) void lb_attn_to_fp16_f16c(const float *s, uint16_t *d, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = (uint16_t)_cvtss_sh(s[i], _MM_FROUND_TO_NEAREST_INT);
}

/* ---- AVX2: 6 x 2 accumulators + 2 loads + 1 broadcast = 15 registers ---- */
#define ATTR __attribute__((target("avx2,fma,f16c")))
#define ATTR_INLINE ATTR __attribute__((always_inline)) static inline
#define SFX(name) name##_avx2
#define W 8
#define NR 6
#define VT __m256
#define VLOAD _mm256_loadu_ps
#define VLOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define VLOADB(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#define VLOADQ4(p, hi) q4_load_avx2((const uint8_t *)(p), hi)
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VFMA _mm256_fmadd_ps
#define VMUL _mm256_mul_ps
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VDIV _mm256_div_ps
#define VMAX _mm256_max_ps
#define VEXP lb_exp8
#define VHMAX hmax_avx2
/* lanes i, i+16 of P into lane i of the 16 sums: keys 0-7 and 16-23 to the
 * low half, 8-15 and 24-31 to the high half */
#define VLANE_SUM(lv, x)                                                                   \
    do {                                                                                   \
        _mm256_storeu_ps(lv, _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(lv), x[0]), x[2]));         \
        _mm256_storeu_ps(lv + 8, _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(lv + 8), x[1]), x[3])); \
    } while (0)
#define VHSUM16(lv) lb_hsum16_avx2(_mm256_loadu_ps(lv), _mm256_loadu_ps(lv + 8))
#define VMASK_SCORES mask_scores_avx2
#define VANY_GT(v, x) (_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(x), _CMP_GT_OQ)) != 0)

/* 8 bytes' low (hi = 0) or high nibbles, minus 8, as floats */
ATTR static inline __m256 q4_load_avx2(const uint8_t *p, int hi) {
    __m128i b = _mm_loadl_epi64((const __m128i *)p);
    if (hi) b = _mm_srli_epi16(b, 4);
    b = _mm_and_si128(b, _mm_set1_epi8(15));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(b), _mm256_set1_epi32(8)));
}

ATTR static inline float hmax_avx2(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* -inf outside lanes [lo, hi) (lane i is key base + i) */
ATTR static inline __m256 mask_scores_avx2(__m256 x, int base, int lo, int hi) {
    const __m256i i = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(base));
    const __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(i, _mm256_set1_epi32(lo - 1)),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), i));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, _mm256_castsi256_ps(in));
}

#include "kernels/x86/attention_x86_tmpl.h"

#undef ATTR
#undef ATTR_INLINE
#undef SFX
#undef W
#undef NR
#undef VT
#undef VLOAD
#undef VLOADH
#undef VLOADB
#undef VLOADQ4
#undef VSTORE
#undef VSET1
#undef VZERO
#undef VFMA
#undef VMUL
#undef VADD
#undef VSUB
#undef VDIV
#undef VMAX
#undef VEXP
#undef VHMAX
#undef VLANE_SUM
#undef VHSUM16
#undef VMASK_SCORES
#undef VANY_GT

/* ---- AVX-512: 8 x 2 accumulators of 32 registers ---- */
#define ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define ATTR_INLINE ATTR __attribute__((always_inline)) static inline
#define SFX(name) name##_avx512
#define W 16
#define NR 8
#define VT __m512
#define VLOAD _mm512_loadu_ps
#define VLOADH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define VLOADB(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#define VLOADQ4(p, hi) q4_load_avx512((const uint8_t *)(p), hi)
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VZERO _mm512_setzero_ps
#define VFMA _mm512_fmadd_ps
#define VMUL _mm512_mul_ps
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VDIV _mm512_div_ps
#define VMAX _mm512_max_ps
#define VEXP lb_exp16
#define VHMAX _mm512_reduce_max_ps
#define VLANE_SUM(lv, x) _mm512_storeu_ps(lv, _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(lv), x[0]), x[1]))
#define VHSUM16(lv) lb_hsum16_avx512(_mm512_loadu_ps(lv))
#define VMASK_SCORES mask_scores_avx512
#define VANY_GT(v, x) (_mm512_cmp_ps_mask(v, _mm512_set1_ps(x), _CMP_GT_OQ) != 0)

/* 16 bytes' low (hi = 0) or high nibbles, minus 8, as floats */
ATTR static inline __m512 q4_load_avx512(const uint8_t *p, int hi) {
    __m128i b = _mm_loadu_si128((const __m128i *)p);
    if (hi) b = _mm_srli_epi16(b, 4);
    b = _mm_and_si128(b, _mm_set1_epi8(15));
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(b), _mm512_set1_epi32(8)));
}

ATTR static inline __m512 mask_scores_avx512(__m512 x, int base, int lo, int hi) {
    const __m512i i = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                       _mm512_set1_epi32(base));
    const __mmask16 in = _mm512_cmpge_epi32_mask(i, _mm512_set1_epi32(lo)) & _mm512_cmplt_epi32_mask(i, _mm512_set1_epi32(hi));
    return _mm512_mask_blend_ps(in, _mm512_set1_ps(-INFINITY), x);
}

#include "kernels/x86/attention_x86_tmpl.h"

/* ---- AMX-BF16: the AVX-512 unit with its two products on the tile unit
 * (kernels/x86/attention_amx_impl.h) for units of 16 rows or more ---- */
#include "kernels/x86/attention_amx_impl.h"
#undef ATTR
#undef ATTR_INLINE
#undef SFX
#define ATTR ATTR_AMX
#define ATTR_INLINE ATTR __attribute__((always_inline)) static inline
#define SFX(name) name##_amx
#define ATTN_AMX 1
#include "kernels/x86/attention_x86_tmpl.h"
#undef ATTN_AMX
#endif
