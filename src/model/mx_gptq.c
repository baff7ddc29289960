/* MX with GPTQ (model/mx_gptq.h). */
#include <stdlib.h>
#include <string.h>

#include "kernels/linalg.h"
#include "model/mx_gptq.h"

static float round_mx(void *user, int64_t row, int64_t col, float x) { return lb_mx_round_at(user, row, col, x); }

lb_status lb_mx_quantize_gptq(const float *W, int64_t N, int64_t K, float *H, const float *hinv_diag, const float *imp,
                              const lb_mx_params *mp, const lb_gptq_params *gp, lb_mx_matrix *out, double *loss) {
    lb_status s = lb_mx_quantize(W, N, K, hinv_diag, imp, mp, out);
    if (s) return s;
    float *w = malloc((size_t)N * (size_t)K * sizeof *w);
    if (!w) s = lb_fail(LB_ERR_NOMEM, "out of memory (MX GPTQ copy of %lld x %lld)", (long long)N, (long long)K);
    if (s == LB_OK) {
        memcpy(w, W, (size_t)N * (size_t)K * sizeof *w);
        s = lb_gptq_quantize_fixed(round_mx, out, w, N, K, H, gp, loss);
    }
    free(w);
    if (s) lb_mx_free(out);
    return s;
}

/* diag(H) (dead columns: 1, as GPTQ) and diag(H^-1) of H damped by damp of
 * its mean diagonal, from a copy of H */
static lb_status hessian_diags(const float *H, int64_t K, float damp, int n_threads, float *hdiag, float *hinv) {
    float *F = malloc((size_t)K * (size_t)K * sizeof *F);
    if (!F) return lb_fail(LB_ERR_NOMEM, "out of memory (a %lld x %lld Hessian)", (long long)K, (long long)K);
    memcpy(F, H, (size_t)K * (size_t)K * sizeof *F);
    double mean = 0.0;
    for (int64_t i = 0; i < K; i++) {
        float *h = &F[(size_t)i * (size_t)K + (size_t)i];
        if (!(*h > 0.0f)) *h = 1.0f;
        hdiag[i] = *h;
        mean += *h;
    }
    for (int64_t i = 0; i < K; i++) F[(size_t)i * (size_t)K + (size_t)i] += (float)(damp * mean / (double)K);
    lb_status s = lb_chol_inverse_upper(F, K, (size_t)K, n_threads);
    for (int64_t c = 0; c < K && s == LB_OK; c++) { /* H^-1 = U^T U: column norms of U */
        double d = 0.0;
        for (int64_t k = 0; k <= c; k++) d += (double)F[(size_t)k * (size_t)K + (size_t)c] * F[(size_t)k * (size_t)K + (size_t)c];
        hinv[c] = (float)d;
    }
    free(F);
    return s;
}

lb_status lb_mx_quantize_calibrated(const float *W, int64_t N, int64_t K, float *H, const float *imp,
                                    const lb_mx_params *mp, const lb_gptq_params *gp, int gptq, lb_mx_matrix *out,
                                    double *loss) {
    const lb_gptq_params g = gp ? *gp : lb_gptq_default_params();
    lb_mx_params q = mp ? *mp : lb_mx_default_params();
    if (!H) q.rank_by_error = 1;
    mp = &q;
    if (!H && !imp) return lb_mx_quantize(W, N, K, NULL, NULL, mp, out);
    float *hinv = malloc((size_t)K * sizeof *hinv), *hdiag = malloc((size_t)K * sizeof *hdiag);
    lb_status s = hinv && hdiag ? LB_OK : lb_fail(LB_ERR_NOMEM, "out of memory");
    if (s == LB_OK && H) s = hessian_diags(H, K, g.damp, g.n_threads, hdiag, hinv);
    else if (s == LB_OK)
        for (int64_t k = 0; k < K; k++) hdiag[k] = imp[k] > 0.0f ? imp[k] : 1.0f, hinv[k] = 1.0f / hdiag[k];
    if (s == LB_OK)
        s = H && gptq ? lb_mx_quantize_gptq(W, N, K, H, hinv, hdiag, mp, &g, out, loss)
                      : lb_mx_quantize(W, N, K, hinv, hdiag, mp, out);
    free(hinv), free(hdiag);
    return s;
}
