/* Arm kernels of the ABQ types (formats/abq.h), aarch64:
 *   abq_w{q}_abq_act_neon   the bit-plane dot: per group, weight plane s
 *       ANDed with activation plane t, bytes counted by CNT, pairs widened
 *       by UADDLP and weighted by 2^t (MLA by a scalar) into 16-bit lanes per
 *       s (<= 16 * 255 per lane), summed across (UADDLV) and shifted by s;
 *       the integer group dot and the double accumulation as the reference:
 *       bit-identical to it. Activations: the scalar per-token quantizer.
 *   abq_w{q}_c{4,2}_abq_act_dotprod   the int8 way, on the code layouts
 *       the load makes at this level and above (model/repack.c): 8 SDOT per
 *       group, 4 x 4 tiles of weight and activation rows in the GEMM
 *       (abq_codes_dotprod.c). Bit-identical.
 *   abq_w{q}_c{4,2}_abq_act_i8mm   the same with the GEMM by SMMLA, tiles of
 *       2 x 2 row pairs (abq_codes_i8mm.c); a single activation row (decode)
 *       by the SDOT tiles. Bit-identical.
 * Why SDOT from the dotprod level and the popcount below it (counted in
 * gcc 12's loops, not timed: qemu; docs/abq.md): per group of 128 weights
 * and one activation row the popcount way takes about 20 + 10 q + 11 q p
 * instructions (W4A8 ~412, W2*A8 ~314), the SDOT way 36 (the GEMM
 * decode tile, per row) whatever p; without SDOT its emulation
 * (SMULL, SADALP) doubles the multiply part, and the plane types of q > 4
 * have no code layout. The ASIMD kernel is also the dotprod and i8mm
 * levels' for those. */
#ifndef LB_ABQ_ARM_H
#define LB_ABQ_ARM_H

#include "formats/abq.h"
#include "kernels/arm/arm_kernels.h" /* LB_HAVE_ARM_KERNELS */

#if LB_HAVE_ARM_KERNELS
#define LB_ABQ_NEON_DECLARE(name, NAME, Q) void lb_vec_dot_##name##_neon(int64_t n, float *s, const void *w, const void *a);
LB_ABQ_LIST(LB_ABQ_NEON_DECLARE)
#undef LB_ABQ_NEON_DECLARE

/* lb_kernel_list entries (kernels/dispatch.c; fields: kernels/dispatch.h): whole activation rows */
#define LB_ABQ_NEON_KERNEL(name, NAME, Q)                                                                     \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_NEON, #name "_abq_act_neon", lb_quantize_row_abq_act_ref,          \
     lb_vec_dot_##name##_neon, NULL, NULL, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act},
#define LB_ABQ_CODES_DOTPROD_DECLARE(name, NAME, WB)                                                           \
    void lb_vec_dot_##name##_dotprod(int64_t n, float *s, const void *w, const void *a);                      \
    void lb_gemm_##name##_dotprod(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,  \
                                  size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_CODES_LIST(LB_ABQ_CODES_DOTPROD_DECLARE)
#define LB_ABQ_CODES_I8MM_DECLARE(name, NAME, WB)                                                              \
    void lb_gemm_##name##_i8mm(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,     \
                               size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_CODES_LIST(LB_ABQ_CODES_I8MM_DECLARE)
#undef LB_ABQ_CODES_I8MM_DECLARE
#undef LB_ABQ_CODES_DOTPROD_DECLARE
#define LB_ABQ_CODES_DOTPROD_KERNEL(name, NAME, WB)                                                            \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_DOTPROD, #name "_abq_act_dotprod", lb_quantize_row_abq_act_ref,    \
     lb_vec_dot_##name##_dotprod, lb_gemm_##name##_dotprod, NULL, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act},
#define LB_ABQ_CODES_I8MM_KERNEL(name, NAME, WB)                                                               \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_I8MM, #name "_abq_act_i8mm", lb_quantize_row_abq_act_ref,          \
     lb_vec_dot_##name##_dotprod, lb_gemm_##name##_i8mm, NULL, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act},
#define LB_ABQ_ARM_KERNELS                                                                                     \
    LB_ABQ_LIST(LB_ABQ_NEON_KERNEL) LB_ABQ_CODES_LIST(LB_ABQ_CODES_DOTPROD_KERNEL)                            \
    LB_ABQ_CODES_LIST(LB_ABQ_CODES_I8MM_KERNEL)
#endif

#endif
