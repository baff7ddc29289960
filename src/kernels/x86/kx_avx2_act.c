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
#include "kernels/x86/q8_block_avx2.h"

#define LB_AVX2Q __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_AVX2Q static inline __attribute__((always_inline))

/* One block of 32 as lb_quantize_row_q8_0_ref (Q8_1's bytes and d are the
 * same): the bytes, d = amax / 127 (float, before its fp16 rounding) and
 * the sum of the bytes. */
INLINE void quant32(const float *x, int8_t *qs, float *d_out, int32_t *sum) {
    _mm256_storeu_si256((__m256i *)qs, lb_q8_block32_avx2(x, d_out, sum));
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
