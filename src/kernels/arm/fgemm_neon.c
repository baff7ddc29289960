/* Arm entries of the float-weight prefill GEMM (kernels/fgemm.h): the row
 * conversions (F16 by vcvt, BF16 by a widening shift) and the NEON 8 x 12
 * fp32 micro-kernel (kernels/sgemm.h), at every Arm level. Below
 * LB_FGEMM_MIN_M activation rows the NEON vec_dot streams the weights
 * instead. */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include <arm_neon.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/fgemm.h"

static void cvt_f32(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    memcpy(out, (const float *)row + k0, (size_t)n * sizeof(float));
}

static void cvt_f16(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    const lb_fp16 *w = (const lb_fp16 *)row + k0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w + i))));
    for (; i < n; i++) out[i] = lb_fp16_to_f32(w[i]);
}

static void cvt_bf16(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    const lb_bf16 *w = (const lb_bf16 *)row + k0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(w + i), 16)));
    for (; i < n; i++) out[i] = lb_bf16_to_f32(w[i]);
}

static void gemm(lb_fgemm_cvt_fn cvt, size_t esize, lb_vec_dot_fn dot, LB_ARM_GEMM_ARGS) {
    lb_fgemm_or_dot(lb_sgemm_kernel_at(LB_ISA_NEON), cvt, esize, dot, K, W, w_row_size, n0, n1, A, a_row_size, M, Y,
                    ldy);
}

void lb_gemm_f32_f32_neon(LB_ARM_GEMM_ARGS) {
    gemm(cvt_f32, 4, lb_vec_dot_f32_neon, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
}
void lb_gemm_f16_f32_neon(LB_ARM_GEMM_ARGS) {
    gemm(cvt_f16, 2, lb_vec_dot_f16_neon, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
}
void lb_gemm_bf16_f32_neon(LB_ARM_GEMM_ARGS) {
    gemm(cvt_bf16, 2, lb_vec_dot_bf16_neon, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
}
#endif
