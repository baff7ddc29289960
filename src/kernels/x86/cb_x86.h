/* AVX2 dot products of CB2 / CB3 weights with Q8_K activations (formats/cb.h).
 * Every block's integer sum is exact; blocks are summed in float lanes, so
 * results equal the scalar reference up to float summation order. */
#ifndef LB_CB_X86_H
#define LB_CB_X86_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
/* The books in force are read once per call (lb_cb_current); each picks
 * the faster lookup for the book count (kernels/cb_x86.c). */
void lb_vec_dot_cb2_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_cb3_q8_K_avx2(int64_t n, float *s, const void *w, const void *a);
/* One lookup always, for tests and comparison: the combined index (except
 * CB3 with 16 books, 128 entries, which always uses pair tables) ... */
void lb_vec_dot_cb2_q8_K_avx2_combined(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_cb3_q8_K_avx2_combined(int64_t n, float *s, const void *w, const void *a);
/* ... and the pair tables. */
void lb_vec_dot_cb2_q8_K_avx2_pairs(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_cb3_q8_K_avx2_pairs(int64_t n, float *s, const void *w, const void *a);
/* lb_gemm_fn (kernels/dispatch.h): each weight block decoded once for up to
 * 64 activation rows (pair tables); one row goes to the vec_dot above. */
void lb_gemm_cb2_q8_K_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                           size_t a_row_size, int M, float *Y, size_t ldy);
void lb_gemm_cb3_q8_K_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                           size_t a_row_size, int M, float *Y, size_t ldy);
#endif
#endif
