/* bf16 -> fp32 for 8 lanes (AVX2), shared by the BF16 vec_dot
 * (kernels_x86.c) and the float GEMM's row conversion (fgemm_x86.c): a bf16
 * is the top half of its fp32, so the widening is exact. Include only
 * under LB_HAVE_X86_KERNELS. */
#ifndef LB_BF16_AVX2_H
#define LB_BF16_AVX2_H

#include <immintrin.h>
#include <stdint.h>

static inline __attribute__((always_inline, target("avx2,fma,f16c"))) __m256 lb_bf16x8_to_ps_avx2(const uint16_t *p) {
    const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
}

#endif
