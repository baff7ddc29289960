/* x86 kernels of the ABQ types (formats/abq.h), AVX2, also those of every
 * higher x86 level (dispatch picks the highest level at or below the one in
 * force):
 *   abq_w{q}_abq_act_avx2   the bit-plane dot: per group, each weight plane
 *       (16 bytes, broadcast to both lanes) ANDed with two activation planes
 *       at once, bytes counted by the vpshufb nibble table, summed by
 *       vpsadbw and shifted by 2^(s+t) (vpsllvq); the integer group dot and
 *       the double accumulation as the reference: bit-identical to it.
 * The activations are quantized by the scalar reference (per token, whole
 * rows): a row costs O(K p), nothing beside the N K q p / 256 vector ANDs. */
#ifndef LB_ABQ_X86_H
#define LB_ABQ_X86_H

#include "formats/abq.h"
#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
#define LB_ABQ_AVX2_DECLARE(name, NAME, Q) void lb_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *a);
LB_ABQ_LIST(LB_ABQ_AVX2_DECLARE)
#undef LB_ABQ_AVX2_DECLARE

/* lb_kernel_list entries (kernels/dispatch.c; fields: kernels/dispatch.h):
 * whole activation rows (act_whole_row), the token's scale being per row */
#define LB_ABQ_AVX2_KERNEL(name, NAME, Q)                                                                     \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AVX2, #name "_abq_act_avx2", lb_quantize_row_abq_act_ref,          \
     lb_vec_dot_##name##_avx2, NULL, NULL, 0, NULL, 0, 0, 0, 1},
#define LB_ABQ_X86_KERNELS LB_ABQ_LIST(LB_ABQ_AVX2_KERNEL)
#endif

#endif
