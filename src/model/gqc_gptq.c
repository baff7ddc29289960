/* GC matrices by rounding and with GPTQ (model/gqc_gptq.h). */
#include <omp.h>
#include <stdlib.h>

#include "model/gqc_gptq.h"

lb_status lb_gc_quantize_matrix(int type, const float *W, int64_t N, int64_t K, int sym, const float *imp,
                                 void *codes, lb_fp16 *sz, int n_threads) {
    const size_t row = lb_row_size(type, K);
    const int sn = lb_gc_side_n(type);
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 4) num_threads(n_threads > 0 ? n_threads : omp_get_num_procs()) \
    reduction(| : failed)
    for (int64_t n = 0; n < N; n++)
        failed |= lb_gc_quantize_row(type, W + (size_t)n * (size_t)K, (uint8_t *)codes + (size_t)n * row, K, sym, imp,
                                     &sz[sn * n]) != 0;
    return failed ? lb_fail(LB_ERR_NOMEM, "out of memory quantizing %s rows of %lld", lb_type_name(type), (long long)K)
                  : LB_OK;
}

typedef struct {
    int type;
    uint8_t *codes;
    size_t row;
    const lb_fp16 *sz;
} rounder;

static float round_gqc(void *user, int64_t row, int64_t col, float x) {
    const rounder *r = user;
    return lb_gc_round(r->type, r->codes + (size_t)row * r->row, col, x, r->sz + lb_gc_side_n(r->type) * row);
}

lb_status lb_gc_gptq(int type, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *pp, void *codes,
                      lb_fp16 *sz, double *loss) {
    const lb_gptq_params p = pp ? *pp : lb_gptq_default_params();
    if (!lb_gc_is(type))
        return lb_fail(LB_ERR_ARG, "GPTQ: %s is not a GC type", lb_type_name(type) ? lb_type_name(type) : "?");
    if (N <= 0 || K <= 0 || K % QK_GQ)
        return lb_fail(LB_ERR_SHAPE, "GPTQ: rows of %lld are not whole %s blocks of %d", (long long)K,
                       lb_type_name(type), QK_GQ);
    float *imp = malloc((size_t)K * sizeof *imp);
    if (!imp) return lb_fail(LB_ERR_NOMEM, "out of memory");
    /* diag H weights the grid's fit, as GQ's static groups; a dead column
     * (H_ii <= 0) counts for nothing: GPTQ quantizes it from 0 */
    for (int64_t i = 0; i < K; i++) {
        const float h = H[(size_t)i * (size_t)K + (size_t)i];
        imp[i] = h > 0.0f ? h : 0.0f;
    }
    lb_status s = lb_gc_quantize_matrix(type, W, N, K, p.sym, imp, codes, sz, p.n_threads);
    free(imp);
    if (s) return s;
    const rounder r = {type, codes, lb_row_size(type, K), sz};
    return lb_gptq_quantize_fixed(round_gqc, (void *)&r, W, N, K, H, &p, loss);
}
