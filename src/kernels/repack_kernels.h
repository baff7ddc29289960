/* lb_kernel_list entries (kernels/dispatch.c) for the interleaved weight
 * types of formats/repack.h, as initializer lists so dispatch.c needs one
 * line per group. Field order: type, act_type, isa, name, quantize_act,
 * vec_dot, gemm, gemv, act_rows, quantize_act_x4, act_x4_block. */
#ifndef LB_REPACK_KERNELS_H
#define LB_REPACK_KERNELS_H

#include "formats/repack.h"

/* Scalar references: slow, but any repacked file runs at any level. */
#define LB_REPACK_REF_ENTRY(T, w, R, C, QX4)                                                        \
    {T, LB_TYPE_Q8_0, LB_ISA_SCALAR, #w "x" #R "_q8_0_" #R "x" #C "_ref", lb_quantize_row_q8_0_ref, \
     NULL, lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_ref, lb_gemv_##w##x##R##_q8_0_##R##x##C##_ref, 4,  \
     QX4, sizeof(lb_block_q8_0x4a)}

#define LB_REPACK_REF_KERNELS                                                              \
    LB_REPACK_REF_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4, lb_quantize_q8_0x4_c4_ref),          \
    LB_REPACK_REF_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8, lb_quantize_q8_0x4_c8_ref),          \
    LB_REPACK_REF_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8, lb_quantize_q8_0x4_c8_ref),          \
    LB_REPACK_REF_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4, lb_quantize_q8_0x4_c4_ref),      \
    LB_REPACK_REF_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8, lb_quantize_q8_0x4_c8_ref),      \
    LB_REPACK_REF_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8, lb_quantize_q8_0x4_c8_ref),      \
    LB_REPACK_REF_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4, lb_quantize_q8_0x4_c4_ref),          \
    LB_REPACK_REF_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8, lb_quantize_q8_0x4_c8_ref),          \
    LB_REPACK_REF_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8, lb_quantize_q8_0x4_c8_ref),          \
    LB_REPACK_REF_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4, lb_quantize_q8_0x4_c4_ref),  \
    LB_REPACK_REF_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8, lb_quantize_q8_0x4_c8_ref),  \
    LB_REPACK_REF_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8, lb_quantize_q8_0x4_c8_ref)

#endif
