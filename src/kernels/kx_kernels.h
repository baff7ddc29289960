/* lb_kernel_list entries (kernels/dispatch.c) for the 16-row layouts of
 * formats/repack_kx.h: the scalar references here, the x86 and Arm kernels
 * in kernels/x86/kx_x86.h and kernels/arm/kx_arm.h. Field order:
 * kernels/repack_kernels.h. */
#ifndef LB_KX_KERNELS_H
#define LB_KX_KERNELS_H

#include "formats/repack_kx.h"

/* The activation side of each base: plain rows (act_type, quantize_act)
 * for the GEMV, 4-row groups for the GEMM (quantizer, bytes per 4 x 32). */
#define LB_KX_ACT_q8_K LB_TYPE_Q8_K
#define LB_KX_ACT_q8_0 LB_TYPE_Q8_0
#define LB_KX_ACT_q8_1 LB_TYPE_Q8_1
#define LB_KX_QACT_q8_K lb_quantize_row_q8_K_ref
#define LB_KX_QACT_q8_0 lb_quantize_row_q8_0_ref
#define LB_KX_QACT_q8_1 lb_quantize_row_q8_1_ref
#define LB_KX_X4_q8_K lb_quantize_q8_Kx4_ref, sizeof(lb_block_q8_Kx4) / 8
#define LB_KX_X4_q8_0 lb_quantize_q8_0x4v_ref, sizeof(lb_block_q8_0x4v)
#define LB_KX_X4_q8_1 lb_quantize_q8_1x4_ref, sizeof(lb_block_q8_1x4)

/* Scalar references: any repacked file runs at any level. */
#define LB_KX_REF_ENTRY(T, w, a)                                                                          \
    {T, LB_KX_ACT_##a, LB_ISA_SCALAR, #w "x16_" #a "_16x4_ref", LB_KX_QACT_##a, NULL,                     \
     lb_gemm_##w##x16_##a##x4_16x4_ref, lb_gemv_##w##x16_##a##_16x4_ref, 4, LB_KX_X4_##a}

/* The eight layouts as (type, weight name, activation name), for the
 * per-level entry lists: LB_KX_TYPE_LIST(ENTRY) gives ENTRY(T, w, a), ... */
#define LB_KX_TYPE_LIST(E)                         \
    E(LB_TYPE_Q3_K_16X4, q3_K, q8_K),              \
    E(LB_TYPE_Q4_K_16X4, q4_K, q8_K),              \
    E(LB_TYPE_Q5_K_16X4, q5_K, q8_K),              \
    E(LB_TYPE_Q6_K_16X4, q6_K, q8_K),              \
    E(LB_TYPE_IQ4_XS_16X4, iq4_xs, q8_K),          \
    E(LB_TYPE_Q4_1_16X4, q4_1, q8_1),              \
    E(LB_TYPE_Q5_0_16X4, q5_0, q8_0),              \
    E(LB_TYPE_Q5_1_16X4, q5_1, q8_1)

#define LB_KX_REF_KERNELS LB_KX_TYPE_LIST(LB_KX_REF_ENTRY)

#endif
