/* x86 AVX2 kernels (compiled with per-function target attributes, chosen at
 * run time by dispatch.c). */
#ifndef LB_KERNELS_X86_H
#define LB_KERNELS_X86_H
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LB_HAVE_X86_KERNELS 1
void lb_vec_dot_f32_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_f16_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_bf16_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_quantize_row_q8_0_avx2(const float *x, void *y, int64_t k);
void lb_vec_dot_q8_0_q8_0_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q4_0_q8_0_avx2(int64_t n, float *s, const void *w, const void *a);
#else
#define LB_HAVE_X86_KERNELS 0
#endif
#endif
