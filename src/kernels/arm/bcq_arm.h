/* Arm kernels of the BCQ types (formats/bcq.h), aarch64 only, on the _LUT
 * layouts (16 rows interleaved, repacked at load) and Q8_0_LUT4 activations:
 *   bcq{q}_g{g}_lut_q8_0_lut4_1x16_neon   mu = 4 table lookup, a tile of
 *       1 activation row x 16 weight rows: TBL (vqtbl1q_u8) of the plane
 *       nibbles into the low- and high-byte tables, bytes re-joined to int16
 *       (ZIP1 / ZIP2) and summed exactly over a Q8_0 block, then scaled in
 *       float in the reference's order: bit-identical to it (bcq_neon.c);
 *   lb_quantize_row_q8_0_lut4_neon        the activations: Q8_0 by
 *       lb_quantize_row_q8_0_neon, the 16 signed sums of every 4 by MUL /
 *       MLA on int16 sign vectors, split into bytes by UZP1 / UZP2; byte-
 *       identical to lb_quantize_row_q8_0_lut4_ref.
 * The lookup uses plain ASIMD only (SDOT / SMMLA have nothing to multiply
 * here), so the NEON entry is also the kernel of the dotprod and i8mm
 * levels (dispatch takes the highest level at or below the one in force). */
#ifndef LB_BCQ_ARM_H
#define LB_BCQ_ARM_H

#include "formats/bcq.h"
#include "kernels/arm/arm_kernels.h" /* LB_HAVE_ARM_KERNELS, LB_ARM_GEMM_ARGS */

#if LB_HAVE_ARM_KERNELS
void lb_quantize_row_q8_0_lut4_neon(const float *x, void *y, int64_t k);

#define LB_BCQ_NEON_DECLARE(name, NAME, Q, G) void lb_gemv_##name##_lut_q8_0_lut4_1x16_neon(LB_ARM_GEMM_ARGS);
LB_BCQ_LIST(LB_BCQ_NEON_DECLARE)
#undef LB_BCQ_NEON_DECLARE

/* lb_kernel_list entries (kernels/dispatch.c; fields: kernels/dispatch.h) */
#define LB_BCQ_NEON_KERNEL(name, NAME, Q, G)                                                               \
    {LB_TYPE_##NAME##_LUT, LB_TYPE_Q8_0_LUT4, LB_ISA_NEON, #name "_lut_q8_0_lut4_1x16_neon",                 \
     lb_quantize_row_q8_0_lut4_neon, NULL, NULL, lb_gemv_##name##_lut_q8_0_lut4_1x16_neon},
#define LB_BCQ_ARM_KERNELS LB_BCQ_LIST(LB_BCQ_NEON_KERNEL)
#endif

#endif
