/* Prefill GEMM for weights stored as floats of some kind (F32, F16, BF16,
 * and ABQ's exact dequantization at 16 activation bits): Y = X W^T with fp32
 * activation rows, on the fp32 GEMM family's micro-kernels (kernels/sgemm.h).
 *
 * One call takes weight rows [n0, n1) against M activation rows: K in
 * blocks of 256; per block the activations are packed once (mr-row strips,
 * k-major), then each nr-row panel of weights is converted to floats by the
 * caller's function, packed k-major and run against every strip. So every
 * weight is converted once per call, the activations are packed once per
 * call, and the panel (32 KiB) stays in L1 while the strips stream from L2.
 * The per-ISA files choose the micro-kernel and the conversion
 * (kernels/x86/fgemm_x86.c). */
#ifndef LB_FGEMM_H
#define LB_FGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "formats/types.h"
#include "kernels/sgemm.h"

/* Activation rows from which the GEMM pays: below, packing a panel costs
 * more than streaming the weights once per row */
#define LB_FGEMM_MIN_M 4

/* out[0 .. n) = the floats of weights k0 .. k0 + n - 1 of the weight row at
 * row (n <= 256; k0 a multiple of 256); ctx: the caller's, passed through */
typedef void (*lb_fgemm_cvt_fn)(const void *ctx, const void *row, int64_t k0, int64_t n, float *out);

/* Y[m][n] (row stride ldy) = sum_k A[m][k] W[n][k] for n in [n0, n1),
 * m < M; W rows rs bytes apart, A rows ars bytes apart (fp32); esize: bytes
 * per weight where that is fixed (the next panel is prefetched), else 0. The sums are
 * in float, in blocks of 256 (not the reference's order). Returns 0, or -1
 * when the scratch could not be allocated (nothing written then). */
int lb_fgemm(const lb_sgemm_kernel *uk, lb_fgemm_cvt_fn cvt, const void *ctx, size_t esize, int64_t K, const void *W,
             size_t rs, int n0, int n1, const float *A, size_t ars, int M, float *Y, size_t ldy);

/* lb_fgemm from LB_FGEMM_MIN_M activation rows; below that, or without its
 * scratch, one dot(K, ...) per output (the per-ISA entries' decode path) */
void lb_fgemm_or_dot(const lb_sgemm_kernel *uk, lb_fgemm_cvt_fn cvt, size_t esize, lb_vec_dot_fn dot, int64_t K,
                     const void *W, size_t rs, int n0, int n1, const void *A, size_t ars, int M, float *Y, size_t ldy);

#endif
