/* Arm kernels of the ABQ types (formats/abq.h), aarch64, ASIMD (every
 * aarch64 CPU; also the kernel of the dotprod and i8mm levels):
 *   abq_w{q}_abq_act_neon   the bit-plane dot: per group, weight plane s
 *       ANDed with activation plane t, bytes counted by CNT, pairs widened
 *       by UADDLP and weighted by 2^t (MLA by a scalar) into 16-bit lanes per
 *       s (<= 16 * 255 per lane), summed across (UADDLV) and shifted by s;
 *       the integer group dot and the double accumulation as the reference:
 *       bit-identical to it. Activations: the scalar per-token quantizer.
 * The int8 way of the x86 kernel (planes recombined into bytes, SDOT) is
 * part 2 (docs/abq.md). */
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
#define LB_ABQ_ARM_KERNELS LB_ABQ_LIST(LB_ABQ_NEON_KERNEL)
#endif

#endif
