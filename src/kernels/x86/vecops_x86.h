/* AVX2 and AVX-512 element-wise ops (kernels/vecops.h). */
#ifndef LB_VECOPS_X86_H
#define LB_VECOPS_X86_H

#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
void lb_rmsnorm_avx2(float *y, const float *x, const float *w, int n, float eps);
void lb_add_avx2(float *y, const float *a, int n);
void lb_silu_mul_avx2(float *g, const float *u, int n);
void lb_gelu_mul_avx2(float *g, const float *u, int n);
void lb_rope_avx2(float *v, const float *cs, const float *sn, int n, int neox);
void lb_rmsnorm_avx512(float *y, const float *x, const float *w, int n, float eps);
void lb_add_avx512(float *y, const float *a, int n);
void lb_silu_mul_avx512(float *g, const float *u, int n);
void lb_gelu_mul_avx512(float *g, const float *u, int n);
void lb_rope_avx512(float *v, const float *cs, const float *sn, int n, int neox);
#endif
#endif
