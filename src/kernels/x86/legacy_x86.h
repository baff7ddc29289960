/* x86 AVX2 dot products for the legacy 32-weight formats Q4_1, Q5_1
 * (weights . Q8_1 activations) and Q5_0 (weights . Q8_0). Chosen at run time
 * by dispatch.c; the integer inner sums are exact, so each matches the scalar
 * reference in formats/ up to float summation order. */
#ifndef LB_LEGACY_X86_H
#define LB_LEGACY_X86_H
#include <stdint.h>

#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
/* AVX2 + FMA + F16C */
void lb_vec_dot_q4_1_q8_1_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q5_0_q8_0_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q5_1_q8_1_avx2(int64_t n, float *s, const void *w, const void *a);
#endif
#endif
