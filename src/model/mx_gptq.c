/* MX with GPTQ (model/mx_gptq.h). */
#include <stdlib.h>
#include <string.h>

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
