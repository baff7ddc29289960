/* MX matrices in lb_quantize_file (model/quantize_mx.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/mx_gptq.h"
#include "model/quantize_mx.h"

int lb_qmx_applies(const gguf_tensor *t) {
    if (t->n_dims != 2 || t->name.len < 11 || memcmp(t->name.ptr, "blk.", 4)) return 0;
    if (memcmp(t->name.ptr + t->name.len - 7, ".weight", 7)) return 0;
    return t->ne[0] % LB_MX_M == 0 && t->ne[1] % LB_MX_ROWS == 0 && t->ne[0] <= 65536 && t->ne[1] > 0;
}

/* What the quantizer will give t: its 4-bit groups and outlier budget */
static void plan(const gguf_tensor *t, const lb_mx_params *p, int64_t *n_hi, int64_t *cap) {
    const int64_t G = t->ne[0] / LB_MX_M;
    *n_hi = LB_MIN((int64_t)lrint((double)p->hi_frac * (double)G), G - 1); /* as lb_mx_quantize */
    *cap = (int64_t)((double)p->outlier_frac * (double)t->ne[0] * (double)t->ne[1]);
}

lb_status lb_qmx_add(gguf_writer *w, const gguf_tensor *t, const lb_mx_params *p, int kinds[5], int *n,
                     uint64_t *bytes) {
    const int64_t K = t->ne[0], N = t->ne[1], G = K / LB_MX_M, T = N / LB_MX_ROWS;
    int64_t n_hi, cap;
    plan(t, p, &n_hi, &cap);
    char name[300];
    const int nl = (int)LB_MIN(t->name.len, 255);
    *n = 0, *bytes = 0;
    struct {
        int kind;
        const char *sfx;
        uint32_t type;
        int dims;
        int64_t ne0, ne1;
        uint64_t bytes;
    } pieces[5] = {{LB_QMX_LO, "", LB_TYPE_MX2, 2, 512 * (G - n_hi), T, (uint64_t)(T * (G - n_hi)) * sizeof(block_mx2)},
                   {LB_QMX_HI, LB_MX_SFX_HI, LB_TYPE_MX4, 2, 512 * n_hi, T, (uint64_t)(T * n_hi) * sizeof(block_mx4)},
                   {LB_QMX_MAP, LB_MX_SFX_MAP, LB_TYPE_I8, 1, G, 1, (uint64_t)G},
                   {LB_QMX_ROWS, LB_MX_SFX_ROWS, LB_TYPE_I32, 1, N + 1, 1, 4u * (uint64_t)(N + 1)},
                   {LB_QMX_OUT, LB_MX_SFX_OUT, LB_TYPE_I32, 1, cap, 1, 4u * (uint64_t)cap}};
    lb_status s = LB_OK;
    for (int i = 0; i < 5 && s == LB_OK; i++) {
        if (pieces[i].ne0 == 0 || (pieces[i].kind == LB_QMX_ROWS && cap == 0)) continue;
        const int64_t ne[2] = {pieces[i].ne0, pieces[i].ne1};
        snprintf(name, sizeof name, "%.*s%s", nl, t->name.ptr, pieces[i].sfx);
        s = gguf_writer_add_tensor(w, name, pieces[i].type, pieces[i].dims, ne, NULL);
        kinds[(*n)++] = pieces[i].kind;
        *bytes += pieces[i].bytes;
    }
    return s;
}

void lb_qmx_cache_free(lb_qmx_cache *c) {
    lb_mx_free(&c->m);
    c->in_index = -1;
}

static lb_status quantize(lb_qmx_cache *c, lb_quant_extras *x, const lb_mx_params *p, const gguf_tensor *t,
                          const float *W) {
    const int64_t K = t->ne[0], N = t->ne[1];
    float *H = NULL;
    int have = 0;
    if (x->calib) {
        if (!(H = malloc((size_t)K * (size_t)K * sizeof *H)))
            return lb_fail(LB_ERR_NOMEM, "out of memory (a %lld x %lld Hessian)", (long long)K, (long long)K);
        have = lb_calib_hessian(x->calib, t->name.ptr, t->name.len, K, H);
    }
    const float *imp = have ? NULL : lb_quant_extras_importance(x, t);
    double loss = 0.0;
    lb_mx_params pf = *p;
    pf.fp16_scales = 0; /* the ablation is no file format */
    const lb_gptq_params gp = lb_quant_extras_gptq_params(x, LB_TYPE_MX); /* 2-4 bits: 0.01 by default */
    lb_status s = lb_mx_quantize_calibrated(W, N, K, have ? H : NULL, imp, &pf, &gp, have, &c->m, &loss);
    free(H);
    if (s) return lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr);
    int64_t n_hi, cap;
    plan(t, p, &n_hi, &cap);
    if (c->m.n_hi != n_hi || c->m.n_out > cap) {
        lb_mx_free(&c->m);
        return lb_fail(LB_ERR_ARG, "%.*s: MX quantizer gave %lld 4-bit groups and %lld outliers, planned %lld and at most %lld",
                       (int)t->name.len, t->name.ptr, (long long)c->m.n_hi, (long long)c->m.n_out, (long long)n_hi,
                       (long long)cap);
    }
    c->gptq = have;
    if (have) x->n_gptq++, x->gptq_loss += loss;
    c->bits = lb_mx_bits(N, K, n_hi, cap);
    c->eq10 = lb_mx_bpw_eq10((double)(K / LB_MX_M - n_hi) / (double)(K / LB_MX_M), LB_MX_G1, LB_MX_ROWS, 4) +
              32.0 * (double)c->m.n_out / ((double)N * (double)K);
    return LB_OK;
}

lb_status lb_qmx_produce(lb_qmx_cache *c, lb_quant_extras *x, const lb_mx_params *p, const gguf_tensor *t,
                         int64_t in_index, const float *W, int kind, void *dst, uint64_t nbytes, int *quantized) {
    *quantized = 0;
    if (c->in_index != in_index) {
        lb_qmx_cache_free(c);
        if (!W) return lb_fail(LB_ERR_ARG, "MX: no weights for %.*s", (int)t->name.len, t->name.ptr);
        lb_status s = quantize(c, x, p, t, W);
        if (s) return s;
        c->in_index = in_index;
        *quantized = 1;
    }
    const lb_mx_matrix *m = &c->m;
    const int64_t T = m->N / LB_MX_ROWS, G = m->K / LB_MX_M;
    uint64_t want = 0;
    switch (kind) {
    case LB_QMX_LO: want = (uint64_t)(T * (G - m->n_hi)) * sizeof(block_mx2); break;
    case LB_QMX_HI: want = (uint64_t)(T * m->n_hi) * sizeof(block_mx4); break;
    case LB_QMX_MAP: want = (uint64_t)G; break;
    case LB_QMX_ROWS: want = 4u * (uint64_t)(m->N + 1); break;
    case LB_QMX_OUT: want = nbytes; break; /* the capacity; unused words stay 0 */
    }
    if (want != nbytes || (kind == LB_QMX_OUT && 4u * (uint64_t)m->n_out > nbytes))
        return lb_fail(LB_ERR_ARG, "MX: piece %d of %.*s has %llu bytes, the matrix %llu", kind, (int)t->name.len,
                       t->name.ptr, (unsigned long long)nbytes, (unsigned long long)want);
    switch (kind) {
    case LB_QMX_LO: memcpy(dst, m->lo, nbytes); break;
    case LB_QMX_HI: memcpy(dst, m->hi, nbytes); break;
    case LB_QMX_MAP: lb_mx_map_bytes(m, dst); break;
    case LB_QMX_ROWS: memcpy(dst, m->row_ptr, nbytes); break;
    case LB_QMX_OUT:
        memset(dst, 0, nbytes);
        lb_mx_outlier_words(m, dst);
        break;
    }
    return LB_OK;
}
