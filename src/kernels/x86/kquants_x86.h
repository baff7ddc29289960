/* x86 dot products for the K-quants (weights . Q8_K activations) and IQ4_NL
 * (weights . Q8_0), plus the AVX2 Q8_K activation quantizer. Compiled with
 * per-function target attributes and chosen at run time by dispatch.c; each
 * matches the scalar reference in formats/ up to float summation order (the
 * integer inner sums are exact). */
#ifndef LB_KQUANTS_X86_H
#define LB_KQUANTS_X86_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
/* Bit-identical to lb_quantize_row_q8_K_ref (values, d and bsums). */
void lb_quantize_row_q8_K_avx2(const float *x, void *y, int64_t k);
/* 4 rows (x, x + ldx, ...) -> k/256 lb_block_q8_Kx4 (formats/repack.h), bit-identical to
 * lb_quantize_q8_Kx4_ref: the rows through lb_quantize_row_q8_K_avx2. */
void lb_quantize_q8_Kx4_avx2(const float *x, size_t ldx, void *y, int64_t k);

/* AVX2 + FMA + F16C */
void lb_vec_dot_q2_K_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q3_K_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q4_K_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q5_K_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q6_K_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_iq4_nl_q8_0_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_mxfp4_nl_q8_0_avx2(int64_t n, float *s, const void *w, const void *a); /* formats/mxfp4.h */

/* AVX-512 F/BW/VL + VNNI */
void lb_vec_dot_q4_K_q8_K_avx512(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q5_K_q8_K_avx512(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_q6_K_q8_K_avx512(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_iq4_nl_q8_0_avx512(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_mxfp4_nl_q8_0_avx512(int64_t n, float *s, const void *w, const void *a);
#endif
#endif
