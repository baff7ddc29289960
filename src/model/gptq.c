/* GPTQ (model/gptq.h). The steps, as in the paper's Algorithm 1:
 *   1. dead columns (H_ii = 0) get H_ii = 1 and weight 0;
 *   2. act-order: columns sorted by descending H_ii, every group's
 *      parameters fixed from the original weights first (static groups);
 *   3. H += λ I with λ = damp * mean(diag H);
 *   4. U = the upper Cholesky factor of H⁻¹ (kernels/linalg.h);
 *   5. in lazy batches of B columns: each column is rounded, its error
 *      e = (w - q) / U_ii corrects the batch's later columns at once
 *      (w_j -= e U_ij), and the batch's errors correct every column after
 *      it in one GEMM: W[:, i2:] -= E U[i1:i2, i2:]. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "formats/grid.h"
#include "formats/types.h"
#include "kernels/linalg.h"
#include "kernels/sgemm.h"
#include "model/gptq.h"
#include "model/gptq_refit.h"

lb_gptq_params lb_gptq_default_params(void) { return (lb_gptq_params){0.01f, 128, 0, 0, 0, 0}; }

float lb_gptq_default_damp(int type) { return lb_type_bits_per_weight(type) >= 3.0 ? 0.1f : 0.01f; }

static float *row_of(float *A, int64_t K, int64_t r) { return A + (size_t)r * (size_t)K; }

/* Act-order: descending H_ii; ties keep the column order (qsort is not
 * stable). The key travels with the column so no global state is needed. */
typedef struct {
    float h;
    int64_t col;
} diag_col;
static int by_diag_desc(const void *a, const void *b) {
    const diag_col *x = a, *y = b;
    if (x->h != y->h) return x->h > y->h ? -1 : 1;
    return (x->col > y->col) - (x->col < y->col);
}

/* Column i of the permuted W is column perm[i] of W (dir 1) or back (dir -1). */
static lb_status permute_columns(float *W, int64_t N, int64_t K, const int64_t *perm, int dir, int nt) {
    int oom = 0;
#pragma omp parallel num_threads(nt)
    {
        float *tmp = malloc((size_t)K * sizeof *tmp);
        if (!tmp) oom = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < N; r++) {
            if (!tmp) continue;
            float *w = row_of(W, K, r);
            for (int64_t i = 0; i < K; i++) {
                if (dir > 0) tmp[i] = w[perm[i]];
                else tmp[perm[i]] = w[i];
            }
            memcpy(w, tmp, (size_t)K * sizeof *w);
        }
        free(tmp);
    }
    return oom ? lb_fail(LB_ERR_NOMEM, "out of memory") : LB_OK;
}

/* The lazy batches (step 5). U: K x K upper factor in the working order;
 * perm: the column of the file for each working column (NULL: the same). */
/* The rounding of one weight: onto a type's grid (g, tt: parameters fixed
 * by g->fix as columns come up, codes into dst) or through a caller's
 * function onto a grid it fixed beforehand (rf). */
typedef struct {
    const lb_grid *g;
    const lb_type_traits *tt;
    char *dst;
    lb_gptq_round_fn rf;
    void *user;
} rounder;

static double quantize_batches(const rounder *rd, float *W, int64_t N, int64_t K, const float *U,
                               const int64_t *perm, const float *imp, int B, float *E, int nt) {
    double loss = 0.0;
    const lb_grid *g = rd->g;
    const lb_type_traits *tt = rd->tt;
    const size_t rs = tt ? (size_t)(K / tt->blck) * tt->type_size : 0;
    for (int64_t i1 = 0; i1 < K; i1 += B) {
        const int64_t i2 = LB_MIN(i1 + B, K);
#pragma omp parallel for schedule(static) reduction(+ : loss) num_threads(nt)
        for (int64_t r = 0; r < N; r++) {
            float *w = row_of(W, K, r), *e = E + (size_t)r * (size_t)B;
            for (int64_t i = i1; i < i2; i++) {
                const int64_t col = perm ? perm[i] : i;
                float q;
                if (rd->rf) {
                    q = rd->rf(rd->user, r, col, w[i]);
                } else {
                    void *blk = rd->dst + (size_t)r * rs + (size_t)(col / tt->blck) * tt->type_size;
                    const int in_blk = (int)(col % tt->blck);
                    if (!perm && i % g->width == 0) g->fix(blk, in_blk, w + i, imp ? imp + i : NULL);
                    q = g->round(blk, in_blk, w[i]);
                }
                const float *u = row_of((float *)U, K, i);
                const float d = u[i], err = w[i] - q, ei = err / d;
                loss += 0.5 * (double)err * err / ((double)d * d);
                w[i] = q;
                for (int64_t j = i + 1; j < i2; j++) w[j] -= ei * u[j];
                e[i - i1] = ei;
            }
        }
        if (i2 < K)
            lb_sgemm(0, 0, N, K - i2, i2 - i1, -1.0f, E, (size_t)B, row_of((float *)U, K, i1) + i2, (size_t)K, 1.0f,
                     W + i2, (size_t)K, nt);
    }
    return loss;
}

static lb_status gptq_run(const rounder *rd, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *pp,
                          double *loss);

lb_status lb_gptq_quantize(int type, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *pp, void *dst,
                           double *loss) {
    const lb_gptq_params p = pp ? *pp : lb_gptq_default_params();
    const lb_grid *g = p.sym ? lb_grid_get_sym(type) : lb_grid_get(type);
    const lb_type_traits *tt = lb_traits(type);
    if (!g || !tt)
        return lb_fail(LB_ERR_UNSUPPORTED, "GPTQ cannot round onto type %s%s",
                       lb_type_name(type) ? lb_type_name(type) : "?", p.sym ? " symmetrically" : "");
    if (N <= 0 || K <= 0 || K % tt->blck)
        return lb_fail(LB_ERR_SHAPE, "GPTQ: rows of %lld are not whole %s blocks of %d", (long long)K, tt->name, tt->blck);
    const rounder rd = {g, tt, dst, NULL, NULL};
    return gptq_run(&rd, W, N, K, H, &p, loss);
}

lb_status lb_gptq_quantize_fixed(lb_gptq_round_fn round, void *user, float *W, int64_t N, int64_t K, float *H,
                                 const lb_gptq_params *pp, double *loss) {
    const lb_gptq_params p = pp ? *pp : lb_gptq_default_params();
    if (N <= 0 || K <= 0) return lb_fail(LB_ERR_SHAPE, "GPTQ: empty matrix");
    const rounder rd = {NULL, NULL, NULL, round, user};
    return gptq_run(&rd, W, N, K, H, &p, loss);
}

static lb_status gptq_run(const rounder *rd, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *pp,
                          double *loss) {
    const lb_gptq_params p = *pp;
    const int nt = p.n_threads > 0 ? p.n_threads : omp_get_num_procs();
    const lb_grid *g = rd->g;
    const lb_type_traits *tt = rd->tt;
    void *dst = rd->dst;
    const int width = g ? g->width : 1;
    int B = p.block > 0 ? p.block : 128;
    B = (B + width - 1) / width * width;

    float *diag = malloc((size_t)K * sizeof *diag), *E = malloc((size_t)N * (size_t)B * sizeof *E), *Hp = NULL;
    int64_t *perm = NULL;
    lb_status s = diag && E ? LB_OK : lb_fail(LB_ERR_NOMEM, "out of memory");
    /* the scale refit's inputs: the undamped Hessian here, the weights once dead columns are zeroed */
    const int refit = p.refit && g && g->codes;
    float *W0 = NULL, *H0 = NULL;
    if (refit && s == LB_OK) {
        W0 = malloc((size_t)N * (size_t)K * sizeof *W0);
        H0 = malloc((size_t)K * (size_t)K * sizeof *H0);
        if (!W0 || !H0)
            s = lb_fail(LB_ERR_NOMEM, "out of memory (GPTQ scale refit of a %lld x %lld matrix)", (long long)N,
                        (long long)K);
        else memcpy(H0, H, (size_t)K * (size_t)K * sizeof *H0);
    }
    double mean = 0.0;
    for (int64_t i = 0; i < K && s == LB_OK; i++) {
        float *h = &row_of(H, K, i)[i];
        diag[i] = *h > 0.0f ? *h : 0.0f;
        if (!(*h > 0.0f)) { /* never activated: nothing to preserve */
            *h = 1.0f;
            for (int64_t r = 0; r < N; r++) row_of(W, K, r)[i] = 0.0f;
        }
        mean += *h;
    }
    mean /= (double)K;
    if (W0 && s == LB_OK) memcpy(W0, W, (size_t)N * (size_t)K * sizeof *W0); /* dead columns zeroed */
    if (s == LB_OK && p.act_order) {
        /* static groups: every group's parameters from the original weights
         * (a caller's fixed grid has them already) */
        const size_t rs = tt ? (size_t)(K / tt->blck) * tt->type_size : 0;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; g && c < K; c += g->width)
                g->fix((char *)dst + (size_t)r * rs + (size_t)(c / tt->blck) * tt->type_size, (int)(c % tt->blck),
                       row_of(W, K, r) + c, diag + c);
        perm = malloc((size_t)K * sizeof *perm);
        Hp = malloc((size_t)K * (size_t)K * sizeof *Hp);
        diag_col *order = malloc((size_t)K * sizeof *order);
        if (!perm || !Hp || !order)
            s = lb_fail(LB_ERR_NOMEM, "out of memory (act-order copy of a %lld x %lld Hessian)", (long long)K, (long long)K);
        if (s == LB_OK) {
            for (int64_t i = 0; i < K; i++) order[i] = (diag_col){diag[i], i};
            qsort(order, (size_t)K, sizeof *order, by_diag_desc);
            for (int64_t i = 0; i < K; i++) perm[i] = order[i].col;
#pragma omp parallel for schedule(static) num_threads(nt)
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < K; j++) row_of(Hp, K, i)[j] = row_of(H, K, perm[i])[perm[j]];
            H = Hp;
            s = permute_columns(W, N, K, perm, 1, nt);
        }
        free(order);
    }
    if (s == LB_OK) {
        const float lambda = (float)(p.damp * mean);
        for (int64_t i = 0; i < K; i++) row_of(H, K, i)[i] += lambda;
        s = lb_chol_inverse_upper(H, K, (size_t)K, nt);
        if (s) s = lb_fail_prefix(s, "GPTQ (damp %g)", (double)p.damp);
    }
    if (s == LB_OK) {
        const double l = quantize_batches(rd, W, N, K, H, perm, p.act_order ? NULL : diag, B, E, nt);
        if (loss) *loss = l;
        if (perm) s = permute_columns(W, N, K, perm, -1, nt);
    }
    if (refit && s == LB_OK) {
        double err[2] = {0.0, 0.0};
        s = lb_gptq_refit_scales(g, tt, dst, W0, W, N, K, H0, nt, err);
        lb_log(2, "GPTQ scale refit %lld x %lld: output error %.5g %% -> %.5g %% of |W X|^2\n", (long long)N,
               (long long)K, 100.0 * err[0], 100.0 * err[1]);
    }
    free(W0);
    free(H0);
    free(Hp);
    free(perm);
    free(E);
    free(diag);
    return s;
}
