/* The scale refit after GPTQ (model/gptq_refit.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/sgemm.h"
#include "model/gptq_refit.h"

/* Solves A x = b in place (A: n x n SPD, row-major, destroyed; x in b);
 * 0 if A is not positive definite. */
static int chol_solve(double *A, double *b, int n) {
    for (int j = 0; j < n; j++) {
        double d = A[j * n + j];
        for (int k = 0; k < j; k++) d -= A[j * n + k] * A[j * n + k];
        if (!(d > 0.0)) return 0;
        d = sqrt(d);
        A[j * n + j] = d;
        for (int i = j + 1; i < n; i++) {
            double v = A[i * n + j];
            for (int k = 0; k < j; k++) v -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = v / d;
        }
    }
    for (int i = 0; i < n; i++) {
        double v = b[i];
        for (int k = 0; k < i; k++) v -= A[i * n + k] * b[k];
        b[i] = v / A[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double v = b[i];
        for (int k = i + 1; k < n; k++) v -= A[k * n + i] * b[k];
        b[i] = v / A[i * n + i];
    }
    return 1;
}

/* Rows [0, N) of dst / W0 / W (a chunk of the matrix) with the buffers
 * C, Z (N x K), M (N x G x G), b and S (N x G); acc += ‖W0 X‖², the error
 * change from the current scales, the refit's gain. */
static void refit_chunk(const lb_grid *g, const lb_type_traits *tt, void *dst, const float *W0, float *W, int64_t N,
                        int64_t K, const float *H0, int nt, float *C, float *Z, double *M, double *b, float *S,
                        double acc[3]) {
    const int w = g->width;
    const int64_t G = K / w;
    const size_t rs = (size_t)(K / tt->blck) * tt->type_size, NK = (size_t)N * (size_t)K;
#define BLK(r, c) ((char *)dst + (size_t)(r) * rs + (size_t)((c) / tt->blck) * tt->type_size)
    /* C and S: every row's codes and current scales */
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < N; r++)
        for (int64_t c = 0; c < K; c += w)
            S[(size_t)r * G + c / w] = g->codes(BLK(r, c), (int)(c % tt->blck), C + (size_t)r * K + c);
    /* b = Cᵀ H w0 per group, from Z = W0 H */
    lb_sgemm(0, 0, N, K, K, 1.0f, W0, (size_t)K, H0, (size_t)K, 0.0f, Z, (size_t)K, nt);
    double wHw = 0.0;
#pragma omp parallel for schedule(static) num_threads(nt) reduction(+ : wHw)
    for (size_t i = 0; i < NK; i++) wHw += (double)W0[i] * Z[i];
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < N; r++)
        for (int64_t gi = 0; gi < G; gi++) {
            double t = 0.0;
            for (int64_t i = gi * w; i < (gi + 1) * w; i++) t += (double)C[(size_t)r * K + i] * Z[(size_t)r * K + i];
            b[(size_t)r * G + gi] = t;
        }
    /* M column by column, the lower half (g >= h) mirrored: Y = C[:, group h] H[group h, groups >= h] (into Z) */
    for (int64_t h = 0; h < G; h++) {
        const int64_t c0 = h * w;
        lb_sgemm(0, 0, N, K - c0, w, 1.0f, C + c0, (size_t)K, H0 + (size_t)c0 * K + c0, (size_t)K, 0.0f, Z + c0,
                 (size_t)K, nt);
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t r = 0; r < N; r++)
            for (int64_t gi = h; gi < G; gi++) {
                double t = 0.0;
                for (int64_t i = gi * w; i < (gi + 1) * w; i++)
                    t += (double)C[(size_t)r * K + i] * Z[(size_t)r * K + i];
                M[(size_t)r * G * G + gi * G + h] = M[(size_t)r * G * G + h * G + gi] = t;
            }
    }
    double total = 0.0, err0 = 0.0;
#pragma omp parallel num_threads(nt) reduction(+ : total, err0)
    {
        double *A = malloc((size_t)(G * G) * sizeof *A), *x = malloc((size_t)G * sizeof *x),
               *s1 = malloc((size_t)G * sizeof *s1);
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < N; r++) {
            if (!A || !x || !s1) continue;
            const double *Mr = M + (size_t)r * G * G, *br = b + (size_t)r * G;
            const float *s0 = S + (size_t)r * G;
            double tr = 0.0;
            for (int64_t gi = 0; gi < G; gi++) tr += Mr[gi * G + gi];
            memcpy(A, Mr, (size_t)(G * G) * sizeof *A);
            for (int64_t gi = 0; gi < G; gi++) A[gi * G + gi] += 1e-9 * tr / (double)G + 1e-30, x[gi] = br[gi];
            if (!chol_solve(A, x, (int)G)) continue;
            /* rounded as stored; error against the current scales (w0ᵀHw0 left out) */
            for (int64_t gi = 0; gi < G; gi++) s1[gi] = lb_fp16_to_f32(lb_f32_to_fp16((float)x[gi]));
            double e0 = 0.0, e1 = 0.0;
            for (int64_t gi = 0; gi < G; gi++) {
                double m0 = 0.0, m1 = 0.0;
                for (int64_t h = 0; h < G; h++) m0 += Mr[gi * G + h] * (double)s0[h], m1 += Mr[gi * G + h] * s1[h];
                e0 += (double)s0[gi] * (m0 - 2.0 * br[gi]);
                e1 += s1[gi] * (m1 - 2.0 * br[gi]);
            }
            err0 += e0;
            if (!(e1 < e0)) continue;
            total += e0 - e1;
            for (int64_t gi = 0; gi < G; gi++) {
                const float sv = g->set_scale(BLK(r, gi * w), (int)((gi * w) % tt->blck), (float)s1[gi]);
                for (int64_t i = gi * w; i < (gi + 1) * w; i++) W[(size_t)r * K + i] = sv * C[(size_t)r * K + i];
            }
        }
        free(A), free(x), free(s1);
    }
#undef BLK
    acc[0] += wHw, acc[1] += err0, acc[2] += total;
}

static int64_t chunk_rows_forced;
void lb_gptq_refit_force_chunk_rows(int64_t rows) { chunk_rows_forced = rows > 0 ? rows : 0; }

lb_status lb_gptq_refit_scales(const lb_grid *g, const lb_type_traits *tt, void *dst, const float *W0, float *W,
                               int64_t N, int64_t K, const float *H0, int nt, double err[2]) {
    const int64_t G = K / g->width;
    /* rows a chunk: M's G x G per row within about 256 MiB (Q4_0 at K = 14336: G = 448, 1.6 MB a row) */
    const size_t per_row = (size_t)(G * G + G) * sizeof(double) + (2 * (size_t)K + (size_t)G) * sizeof(float);
    const int64_t R = LB_MIN(N, chunk_rows_forced ? chunk_rows_forced
                                                  : LB_MAX((int64_t)16, (int64_t)(((size_t)256 << 20) / per_row)));
    float *C = malloc((size_t)R * (size_t)K * sizeof *C), *Z = malloc((size_t)R * (size_t)K * sizeof *Z);
    double *M = malloc((size_t)R * (size_t)(G * G) * sizeof *M), *b = malloc((size_t)R * (size_t)G * sizeof *b);
    float *S = malloc((size_t)R * (size_t)G * sizeof *S);
    if (!C || !Z || !M || !b || !S) {
        free(C), free(Z), free(M), free(b), free(S);
        return lb_fail(LB_ERR_NOMEM, "out of memory (GPTQ scale refit, %lld rows at a time)", (long long)R);
    }
    const size_t rs = (size_t)(K / tt->blck) * tt->type_size;
    double acc[3] = {0.0, 0.0, 0.0};
    for (int64_t r0 = 0; r0 < N; r0 += R)
        refit_chunk(g, tt, (char *)dst + (size_t)r0 * rs, W0 + (size_t)r0 * K, W + (size_t)r0 * K, LB_MIN(R, N - r0), K,
                    H0, nt, C, Z, M, b, S, acc);
    /* the errors before and after, as shares of ‖W0 X‖² (0 for an all-zero matrix) */
    err[0] = acc[0] > 0.0 ? (acc[0] + acc[1]) / acc[0] : 0.0;
    err[1] = acc[0] > 0.0 ? (acc[0] + acc[1] - acc[2]) / acc[0] : 0.0;
    free(C), free(Z), free(M), free(b), free(S);
    return LB_OK;
}
