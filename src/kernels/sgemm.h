/* Single-precision GEMM family for the quantizers' linear algebra: Hessian
 * accumulation (H += X^T X, lb_ssyrk_upper_tn) and GPTQ's blocked Cholesky,
 * triangular inverse and lazy updates (lb_sgemm). The driver (kernels/sgemm.c)
 * packs panels and blocks for the caches; the micro-kernel comes from the ISA
 * level in force (kernels/cpu.h), so LOWBIT_ISA / lb_cpu_force_level select it. */
#ifndef LB_SGEMM_H
#define LB_SGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu.h"

/* C = alpha * op(A) * op(B) + beta * C, all row-major; op(X) = X or X transposed (ta/tb = 1).
 * op(A) is M x K, op(B) is K x N, C is M x N with row stride ldc.
 * A is stored M x K (lda >= K) when ta = 0, K x M (lda >= M) when ta = 1; likewise B.
 * beta == 0 overwrites C without reading it. Multi-threaded over n_threads (OpenMP; <= 0: all cores). */
void lb_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, size_t lda,
              const float *B, size_t ldb, float beta, float *C, size_t ldc, int n_threads);
/* Symmetric rank-k update of the upper triangle: C[i][j] = alpha * sum_r A[r][i] * A[r][j] + beta * C[i][j]
 * for j >= i (A is K x n row-major, lda >= n; C is n x n). Entries below the diagonal may be written
 * (with any value) only inside the diagonal tiles; the rest of the lower triangle is left untouched.
 * Does about half the work of the full product.
 * (This implementation writes no entry below the diagonal: diagonal tiles are stored through a mask.) */
void lb_ssyrk_upper_tn(int64_t n, int64_t K, float alpha, const float *A, size_t lda, float beta, float *C,
                       size_t ldc, int n_threads);

/* ---- micro-kernels: kernels/sgemm.c and its per-ISA files only ----
 * C[i][j] = alpha * sum_k Ap[k*mr + i] * Bp[k*nr + j] + beta * C[i][j] for a
 * full mr x nr tile (beta == 0: C is not read). Ap is an mr-row panel packed
 * k-major, Bp an nr-column panel packed k-major, both 64-byte aligned. */
typedef void (*lb_sgemm_ukr_fn)(int64_t kc, const float *Ap, const float *Bp, float *C, size_t ldc, float alpha,
                                float beta);

typedef struct {
    int mr, nr;         /* tile rows (broadcast side) and columns (vector side) */
    lb_sgemm_ukr_fn fn;
    const char *name;   /* e.g. "avx512_14x32" */
} lb_sgemm_kernel;

/* Largest tile of any kernel: the driver's fixed-size buffers use them. */
#define LB_SGEMM_MR_MAX 16
#define LB_SGEMM_NR_MAX 32

/* The kernel lb_sgemm uses at a level (tests check each level has its own). */
const lb_sgemm_kernel *lb_sgemm_kernel_at(lb_isa level);

/* Tests: 1 makes the driver use its small fixed-size stack buffers, as it
 * does when the heap packing buffer cannot be allocated; 0 restores. */
void lb_sgemm_force_stack_buffers(int on);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LB_SGEMM_X86 1
void lb_sgemm_ukr_avx2_6x16(int64_t kc, const float *Ap, const float *Bp, float *C, size_t ldc, float alpha,
                            float beta);
void lb_sgemm_ukr_avx512_14x32(int64_t kc, const float *Ap, const float *Bp, float *C, size_t ldc, float alpha,
                               float beta);
#else
#define LB_SGEMM_X86 0
#endif

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define LB_SGEMM_ARM 1
void lb_sgemm_ukr_neon_8x12(int64_t kc, const float *Ap, const float *Bp, float *C, size_t ldc, float alpha,
                            float beta);
#else
#define LB_SGEMM_ARM 0
#endif

#endif
