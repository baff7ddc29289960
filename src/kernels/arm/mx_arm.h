/* Arm kernels of the MX format (formats/mx.h: 2- and 4-bit tiles of 16 rows
 * x 32 columns, W an lb_mx_view), aarch64 only; plain Q8_0 activation rows
 * (act_rows 0), any number of them, all through gemv:
 *   mx_q8_0_neon     SDOT emulated (SMLAL into int16, SADALP),     mx_neon.c
 *                    2 activation rows per decoded tile
 *   mx_q8_0_dotprod  SDOT by lane, 2 rows per decoded tile         mx_dotprod.c
 *   mx_q8_0_i8mm     SMMLA (2 weight rows x 2 activation rows x    mx_i8mm.c
 *                    8 weights), 4 rows per decoded tile; the last
 *                    M % 4 rows through the dotprod GEMV
 * Per 16-row tile row: its 2-bit slots, its 4-bit slots, then its rows'
 * outliers, as the scalar reference (lb_gemv_mx_q8_0_ref); integer sums
 * exact, scales in float (mx_arm_impl.h has the arithmetic). Weight tiles
 * are decoded once per pass of 2 or 4 activation rows, not once per call
 * (whole_m 0).
 *
 * Instructions per 16 rows x 32 weights x 1 activation row in the loop of
 * a 2- or 4-bit slot (gcc 12 -O2, all classes: SIMD, loads, moves, address
 * arithmetic; scripts/arm-loop-insns.py, divided by the rows of the pass).
 * The floor is 32 SDOT (dotprod) or 16 SMMLA (i8mm); about as much again
 * goes to the scales (per 4 rows and 16-column half MUL, MLS, SCVTF, FMLA:
 * two scales and zeros per row and 32 weights), and the 2-bit decode takes
 * 6 instructions per 64 codes, shared by the rows of a pass.
 *                     2-bit  4-bit
 *   neon, 1 row         244    186
 *   neon, 2 rows        200    177
 *   dotprod, 1 row      192    131
 *   dotprod, 2 rows     142     98
 *   i8mm, 4 rows        114     77 */
#ifndef LB_MX_ARM_H
#define LB_MX_ARM_H

#include "kernels/arm/arm_kernels.h" /* LB_HAVE_ARM_KERNELS, LB_ARM_GEMM_ARGS */

#if LB_HAVE_ARM_KERNELS

void lb_gemv_mx_q8_0_neon(LB_ARM_GEMM_ARGS);
void lb_gemv_mx_q8_0_dotprod(LB_ARM_GEMM_ARGS);
void lb_gemv_mx_q8_0_i8mm(LB_ARM_GEMM_ARGS);

/* lb_kernel_list entries (kernels/dispatch.c; field order in kernels/dispatch.h):
 * vec_dot and gemm NULL, gemv, act_rows 0; each ends in a comma. The
 * activation quantizer is bit-identical to lb_quantize_row_q8_0_ref. */
#define LB_MX_ARM_ENTRY(isa, sfx)                                                                          \
    {LB_TYPE_MX, LB_TYPE_Q8_0, isa, "mx_q8_0_" #sfx, lb_quantize_row_q8_0_neon, NULL, NULL,               \
     lb_gemv_mx_q8_0_##sfx},
#define LB_MX_ARM_KERNELS                                                                                  \
    LB_MX_ARM_ENTRY(LB_ISA_NEON, neon) LB_MX_ARM_ENTRY(LB_ISA_DOTPROD, dotprod) LB_MX_ARM_ENTRY(LB_ISA_I8MM, i8mm)

#endif
#endif
