/* Blocked Cholesky and triangular inverse (kernels/linalg.h). Blocks of NB
 * columns: the small diagonal blocks are done unblocked in double, all the
 * O(n³) work is lb_sgemm. */
#include <math.h>
#include <stdlib.h>

#include "kernels/linalg.h"
#include "kernels/sgemm.h"

#define NB 128

#define AT(A, lda, i, j) ((A)[(size_t)(i) * (lda) + (size_t)(j)])

/* X (nb x nb, ldx) = inverse of the lower triangular L (n x n, lda), in
 * double; zeros above the diagonal. */
static void small_trinv_lower(const float *L, size_t lda, int64_t n, float *X, size_t ldx) {
    double col[NB];
    for (int64_t j = 0; j < n; j++) {
        /* column j of L⁻¹ by forward substitution of e_j */
        for (int64_t i = 0; i < j; i++) col[i] = 0.0;
        col[j] = 1.0 / AT(L, lda, j, j);
        for (int64_t i = j + 1; i < n; i++) {
            double s = 0.0;
            for (int64_t p = j; p < i; p++) s += (double)AT(L, lda, i, p) * col[p];
            col[i] = -s / AT(L, lda, i, i);
        }
        for (int64_t i = 0; i < n; i++) AT(X, ldx, i, j) = (float)col[i];
    }
}

lb_status lb_cholesky_lower(float *A, int64_t n, size_t lda, int n_threads) {
    float *Sinv = malloc((size_t)NB * NB * sizeof *Sinv), *T = malloc((size_t)n * NB * sizeof *T);
    if (!Sinv || !T) {
        free(Sinv), free(T);
        return lb_fail(LB_ERR_NOMEM, "out of memory (Cholesky of %lld columns)", (long long)n);
    }
    lb_status s = LB_OK;
    for (int64_t k0 = 0; k0 < n && s == LB_OK; k0 += NB) {
        const int64_t kb = LB_MIN(NB, n - k0), k1 = k0 + kb;
        /* the diagonal block, already updated by the blocks left of it */
        for (int64_t j = k0; j < k1 && s == LB_OK; j++) {
            double d = AT(A, lda, j, j);
            for (int64_t p = k0; p < j; p++) d -= (double)AT(A, lda, j, p) * AT(A, lda, j, p);
            if (!(d > 0.0) || !isfinite(d)) {
                s = lb_fail(LB_ERR_ARG, "matrix is not positive definite (pivot %lld of %lld is %g)", (long long)j,
                            (long long)n, d);
                break;
            }
            d = sqrt(d);
            AT(A, lda, j, j) = (float)d;
            for (int64_t i = j + 1; i < k1; i++) {
                double t = AT(A, lda, i, j);
                for (int64_t p = k0; p < j; p++) t -= (double)AT(A, lda, i, p) * AT(A, lda, j, p);
                AT(A, lda, i, j) = (float)(t / d);
            }
        }
        if (s || k1 >= n) break;
        /* the panel below: A21 <- A21 L11⁻ᵀ, through the small inverse */
        small_trinv_lower(&AT(A, lda, k0, k0), lda, kb, Sinv, NB);
        const int64_t m = n - k1;
        lb_sgemm(0, 1, m, kb, kb, 1.0f, &AT(A, lda, k1, k0), lda, Sinv, NB, 0.0f, T, NB, n_threads);
        for (int64_t i = 0; i < m; i++) memcpy(&AT(A, lda, k1 + i, k0), T + (size_t)i * NB, (size_t)kb * sizeof *T);
        /* the trailing lower triangle, one block row at a time: A22 -= A21 A21ᵀ */
        for (int64_t ib = k1; ib < n; ib += NB) {
            const int64_t ie = LB_MIN(ib + NB, n);
            lb_sgemm(0, 1, ie - ib, ie - k1, kb, -1.0f, &AT(A, lda, ib, k0), lda, &AT(A, lda, k1, k0), lda, 1.0f,
                     &AT(A, lda, ib, k1), lda, n_threads);
        }
    }
    if (s == LB_OK)
        for (int64_t i = 0; i < n; i++) memset(&AT(A, lda, i, i + 1), 0, (size_t)(n - i - 1) * sizeof *A);
    free(Sinv);
    free(T);
    return s;
}

void lb_trinv_lower(float *L, int64_t n, size_t lda, int n_threads) {
    float *S = malloc((size_t)NB * NB * sizeof *S), *T = malloc((size_t)n * NB * sizeof *T);
    if (!S || !T) { /* unblocked fallback: slow but needs no memory */
        free(S), free(T);
        for (int64_t j = 0; j < n; j++) {
            AT(L, lda, j, j) = 1.0f / AT(L, lda, j, j);
            for (int64_t i = j + 1; i < n; i++) {
                /* rows above i already hold the inverse in columns < row */
                double t = 0.0;
                for (int64_t p = j; p < i; p++) t += (double)AT(L, lda, i, p) * AT(L, lda, p, j);
                AT(L, lda, i, j) = (float)(-t / AT(L, lda, i, i));
            }
        }
        return;
    }
    /* block row by block row: X_ii = L_ii⁻¹, X_i,<i = -X_ii (L_i,<i X_<i,<i);
     * the rows above hold X already, zeros above their diagonal */
    for (int64_t i0 = 0; i0 < n; i0 += NB) {
        const int64_t ib = LB_MIN(NB, n - i0);
        small_trinv_lower(&AT(L, lda, i0, i0), lda, ib, S, NB);
        if (i0 > 0) {
            lb_sgemm(0, 0, ib, i0, i0, 1.0f, &AT(L, lda, i0, 0), lda, L, lda, 0.0f, T, (size_t)n, n_threads);
            lb_sgemm(0, 0, ib, i0, ib, -1.0f, S, NB, T, (size_t)n, 0.0f, &AT(L, lda, i0, 0), lda, n_threads);
        }
        for (int64_t i = 0; i < ib; i++) memcpy(&AT(L, lda, i0 + i, i0), S + (size_t)i * NB, (size_t)ib * sizeof *S);
    }
    free(S);
    free(T);
}

/* A[i][j] <-> A[n-1-i][n-1-j]: reverses the order of rows and columns. */
static void reverse_both(float *A, int64_t n, size_t lda) {
    for (int64_t i = 0; i < (n + 1) / 2; i++) {
        const int64_t jn = i == n - 1 - i ? n / 2 : n; /* the middle row swaps with itself: half of it */
        for (int64_t j = 0; j < jn; j++) {
            float *a = &AT(A, lda, i, j), *b = &AT(A, lda, n - 1 - i, n - 1 - j);
            const float t = *a;
            *a = *b;
            *b = t;
        }
    }
}

lb_status lb_chol_inverse_upper(float *H, int64_t n, size_t ldh, int n_threads) {
    reverse_both(H, n, ldh);
    lb_status s = lb_cholesky_lower(H, n, ldh, n_threads);
    if (s) return s;
    lb_trinv_lower(H, n, ldh, n_threads);
    reverse_both(H, n, ldh);
    return LB_OK;
}
