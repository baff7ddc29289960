/* Kernel table entries of the BCQ types (formats/bcq.h) at the scalar level:
 * the plain types' reference dot and the _LUT layouts' scalar GEMV, both on
 * Q8_0_LUT4 activations (the one activation type of every BCQ kernel, so
 * the plain tail rows of a _LUT matrix read the rows its kernel was given).
 * The fast kernels: kernels/x86/bcq_x86.h. */
#ifndef LB_BCQ_KERNELS_H
#define LB_BCQ_KERNELS_H

#include "formats/bcq.h"

#define LB_BCQ_REF_KERNEL(name, NAME, Q, G)                                                                   \
    {LB_TYPE_##NAME, LB_TYPE_Q8_0_LUT4, LB_ISA_SCALAR, #name "_q8_0_lut4_ref", lb_quantize_row_q8_0_lut4_ref,      \
     lb_vec_dot_##name##_ref, NULL},                                                                            \
    {LB_TYPE_##NAME##_LUT, LB_TYPE_Q8_0_LUT4, LB_ISA_SCALAR, #name "_lut_q8_0_lut4_ref",                         \
     lb_quantize_row_q8_0_lut4_ref, NULL, NULL, lb_gemv_##name##_lut_ref},
#define LB_BCQ_REF_KERNELS LB_BCQ_LIST(LB_BCQ_REF_KERNEL)

#endif
