/* Dense linear algebra that GPTQ needs (model/gptq.c), blocked over
 * kernels/sgemm.h so a 8960 x 8960 Hessian takes seconds, not minutes. */
#ifndef LB_LINALG_H
#define LB_LINALG_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

/* In place: A (n x n, row-major, lda, symmetric positive definite; only the
 * upper triangle is read) becomes its upper Cholesky factor U, A = Uᵀ U,
 * with zeros below the diagonal. LB_ERR_ARG (with the failing column) if A
 * is not positive definite. */
lb_status lb_cholesky_upper(float *A, int64_t n, size_t lda, int n_threads);

/* In place: L (lower triangular, non-zero diagonal, zeros above) becomes L⁻¹
 * (lower, zeros above). */
void lb_trinv_lower(float *L, int64_t n, size_t lda, int n_threads);

/* GPTQ's factor: in place, H (symmetric positive definite) becomes the
 * upper triangular U with H⁻¹ = Uᵀ U (zeros below the diagonal), i.e.
 * torch.linalg.cholesky(H.inverse(), upper=True). Computed without forming
 * H⁻¹: with J the order reversal, J H J = L Lᵀ gives H = R Rᵀ for the upper
 * R = J L J, so H⁻¹ = R⁻ᵀ R⁻¹ and U = R⁻¹ = J L⁻¹ J: one Cholesky (n³/3
 * flops, as symmetric rank updates) and one triangular inverse (2n³/3 as
 * dense GEMMs), L taken as the transpose of the upper factor of J H J. */
lb_status lb_chol_inverse_upper(float *H, int64_t n, size_t ldh, int n_threads);

#endif
