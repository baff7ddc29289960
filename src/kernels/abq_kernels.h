/* Kernel table entries of the ABQ types (formats/abq.h) at the scalar
 * level: the reference plane-popcount dot on ABQ_ACT rows, quantized per
 * token (whole rows: act_whole_row). The fast kernels: kernels/x86/abq_x86.h. */
#ifndef LB_ABQ_KERNELS_H
#define LB_ABQ_KERNELS_H

#include "formats/abq.h"
#include "formats/float.h"

#define LB_ABQ_REF_KERNEL(name, NAME, Q)                                                                      \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_SCALAR, #name "_abq_act_ref", lb_quantize_row_abq_act_ref,         \
     lb_vec_dot_##name##_ref, NULL, NULL, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act},
#define LB_ABQ_CODES_REF_KERNEL(name, NAME, W)                                                            \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_SCALAR, #name "_abq_act_ref", lb_quantize_row_abq_act_ref,         \
     lb_vec_dot_##name##_ref, NULL, NULL, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act},
/* 16 rows interleaved: whole blocks of rows, so a gemv and no vec_dot */
#define LB_ABQ_X16_REF_KERNEL(name, NAME, W)                                                              \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_SCALAR, #name "_abq_act_ref", lb_quantize_row_abq_act_ref,         \
     NULL, NULL, lb_gemv_##name##_ref, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act},
/* the plane types, then their code layouts (formats/abq.h, made at load) */
#define LB_ABQ_REF_KERNELS                                                                                    \
    LB_ABQ_LIST(LB_ABQ_REF_KERNEL) LB_ABQ_CODES_LIST(LB_ABQ_CODES_REF_KERNEL) LB_ABQ_X16_LIST(LB_ABQ_X16_REF_KERNEL)

/* 16 activation bits (formats/abq.h, LB_ABQ_ACT_F32): fp32 activation rows
 * against the weights' floats; these serve lb_kernel_for, not lb_kernel_get
 * (kernels/dispatch.c keeps them in a list of their own). */
#define LB_ABQ_F32_REF_KERNEL(name, NAME, Q)                                                                  \
    {LB_TYPE_##NAME, LB_TYPE_F32, LB_ISA_SCALAR, #name "_f32_ref", lb_f32_from_float, lb_vec_dot_##name##_f32_ref, NULL},
#define LB_ABQ_F32_REF_KERNELS LB_ABQ_LIST(LB_ABQ_F32_REF_KERNEL) LB_ABQ_CODES_LIST(LB_ABQ_F32_REF_KERNEL)

#endif
