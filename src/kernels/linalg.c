/* Blocked Cholesky and triangular inverse (kernels/linalg.h). Blocks of NB
 * columns: the small diagonal blocks are done unblocked in double, all the
 * O(n³) work is lb_sgemm. */
#include <math.h>
#include <stdlib.h>

#include "kernels/linalg.h"
#include "kernels/sgemm.h"

#define NB 128
#define TRINV_CHUNK 2048 /* columns per product in lb_trinv_lower */

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

/* X (n x n, ldx) = inverse of the upper triangular U (n x n, lda), in
 * double; zeros below the diagonal. */
static void small_trinv_upper(const float *U, size_t lda, int64_t n, float *X, size_t ldx) {
    double col[NB];
    for (int64_t j = 0; j < n; j++) {
        /* column j of U⁻¹ by back substitution of e_j */
        for (int64_t i = j + 1; i < n; i++) col[i] = 0.0;
        col[j] = 1.0 / AT(U, lda, j, j);
        for (int64_t i = j - 1; i >= 0; i--) {
            double s = 0.0;
            for (int64_t p = i + 1; p <= j; p++) s += (double)AT(U, lda, i, p) * col[p];
            col[i] = -s / AT(U, lda, i, i);
        }
        for (int64_t i = 0; i < n; i++) AT(X, ldx, i, j) = (float)col[i];
    }
}

/* Right-looking, by blocks of NB rows: factor the diagonal block (double),
 * solve the row panel to its right (U12 = U11⁻ᵀ A12, through the small
 * inverse), then the trailing upper triangle takes A22 -= U12ᵀ U12 as one
 * symmetric rank-NB update (lb_ssyrk_upper_tn: half the work of a GEMM, one
 * call per step instead of one per block row). */
lb_status lb_cholesky_upper(float *A, int64_t n, size_t lda, int n_threads) {
    float *Sinv = malloc((size_t)NB * NB * sizeof *Sinv), *T = malloc((size_t)n * NB * sizeof *T);
    if (!Sinv || !T) {
        free(Sinv), free(T);
        return lb_fail(LB_ERR_NOMEM, "out of memory (Cholesky of %lld columns)", (long long)n);
    }
    lb_status s = LB_OK;
    for (int64_t k0 = 0; k0 < n && s == LB_OK; k0 += NB) {
        const int64_t kb = LB_MIN(NB, n - k0), k1 = k0 + kb;
        /* the diagonal block, already updated by the steps above it */
        for (int64_t j = k0; j < k1 && s == LB_OK; j++) {
            double d = AT(A, lda, j, j);
            for (int64_t p = k0; p < j; p++) d -= (double)AT(A, lda, p, j) * AT(A, lda, p, j);
            if (!(d > 0.0) || !isfinite(d)) {
                s = lb_fail(LB_ERR_ARG, "matrix is not positive definite (pivot %lld of %lld is %g)", (long long)j,
                            (long long)n, d);
                break;
            }
            d = sqrt(d);
            AT(A, lda, j, j) = (float)d;
            for (int64_t i = j + 1; i < k1; i++) {
                double t = AT(A, lda, j, i);
                for (int64_t p = k0; p < j; p++) t -= (double)AT(A, lda, p, j) * AT(A, lda, p, i);
                AT(A, lda, j, i) = (float)(t / d);
            }
        }
        if (s || k1 >= n) break;
        const int64_t m = n - k1;
        small_trinv_upper(&AT(A, lda, k0, k0), lda, kb, Sinv, NB);
        lb_sgemm(1, 0, kb, m, kb, 1.0f, Sinv, NB, &AT(A, lda, k0, k1), lda, 0.0f, T, (size_t)m, n_threads);
        for (int64_t i = 0; i < kb; i++) memcpy(&AT(A, lda, k0 + i, k1), T + (size_t)i * m, (size_t)m * sizeof *T);
        lb_ssyrk_upper_tn(m, kb, -1.0f, &AT(A, lda, k0, k1), lda, 1.0f, &AT(A, lda, k1, k1), lda, n_threads);
    }
    if (s == LB_OK)
        for (int64_t i = 1; i < n; i++) memset(&AT(A, lda, i, 0), 0, (size_t)i * sizeof *A);
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
            /* T = L_i,<i X_<i,<i by column chunks: X is lower triangular, so
             * columns c0.. of T need only rows c0..i0 of X (about half the
             * work of one dense product) */
            for (int64_t c0 = 0; c0 < i0; c0 += TRINV_CHUNK) {
                const int64_t cw = LB_MIN(TRINV_CHUNK, i0 - c0);
                lb_sgemm(0, 0, ib, cw, i0 - c0, 1.0f, &AT(L, lda, i0, c0), lda, &AT(L, lda, c0, c0), lda, 0.0f, T + c0,
                         (size_t)n, n_threads);
            }
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

/* Upper triangular U (zeros below) -> its transpose, lower (zeros above), by
 * 64 x 64 tiles so both sides stream through the cache. */
static void transpose_upper_to_lower(float *A, int64_t n, size_t lda) {
    enum { TB = 64 };
    for (int64_t i0 = 0; i0 < n; i0 += TB)
        for (int64_t j0 = i0; j0 < n; j0 += TB)
            for (int64_t i = i0; i < LB_MIN(i0 + TB, n); i++)
                for (int64_t j = LB_MAX(j0, i + 1); j < LB_MIN(j0 + TB, n); j++) {
                    AT(A, lda, j, i) = AT(A, lda, i, j);
                    AT(A, lda, i, j) = 0.0f;
                }
}

lb_status lb_chol_inverse_upper(float *H, int64_t n, size_t ldh, int n_threads) {
    reverse_both(H, n, ldh); /* J H J, symmetric: its upper triangle is read */
    lb_status s = lb_cholesky_upper(H, n, ldh, n_threads);
    if (s) return s;
    transpose_upper_to_lower(H, n, ldh); /* L = Uᵀ: J H J = L Lᵀ */
    lb_trinv_lower(H, n, ldh, n_threads);
    reverse_both(H, n, ldh);
    return LB_OK;
}
