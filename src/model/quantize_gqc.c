/* GQ{b}_GC matrices in lb_quantize_file (model/quantize_gqc.h). */
#include <stdio.h>
#include <stdlib.h>

#include "model/gqc_gptq.h"
#include "model/quantize_gqc.h"

lb_status lb_qgc_add(gguf_writer *w, const char *name, const gguf_tensor *t, int type, uint64_t *bytes) {
    char side[300];
    const int64_t N = t->ne[1] * t->ne[2] * t->ne[3], ne_codes[2] = {t->ne[0], N}, ne_sz[1] = {2 * N};
    snprintf(side, sizeof side, "%s%s", name, LB_GQC_SFX);
    *bytes = lb_row_size(type, t->ne[0]) * (uint64_t)N + 4u * (uint64_t)N;
    lb_status s = gguf_writer_add_tensor(w, name, (uint32_t)type, 2, ne_codes, NULL);
    if (s == LB_OK) s = gguf_writer_add_tensor(w, side, LB_GQC_SIDE_TYPE, 1, ne_sz, NULL);
    return s;
}

static const gguf_tensor *side_of(const gguf_file *in, const gguf_tensor *t) {
    char side[300];
    snprintf(side, sizeof side, "%.*s%s", (int)LB_MIN(t->name.len, 255), t->name.ptr, LB_GQC_SFX);
    return gguf_find_tensor(in, side);
}

int lb_qgc_is_input_side(const gguf_file *in, const gguf_tensor *t) {
    const size_t n = sizeof LB_GQC_SFX - 1;
    if (!lb_gqc_is_side(t->name.ptr, t->name.len) || t->name.len - n > 255) return 0;
    char name[300];
    snprintf(name, sizeof name, "%.*s", (int)(t->name.len - n), t->name.ptr);
    const gguf_tensor *m = gguf_find_tensor(in, name);
    return m && lb_gqc_bits((int)m->type);
}

lb_status lb_qgc_input_view(const gguf_file *in, const gguf_tensor *t, lb_gqc_view **out) {
    *out = NULL;
    const gguf_tensor *sz = side_of(in, t);
    const int64_t N = t->ne[1] * t->ne[2] * t->ne[3];
    if (!sz || sz->type != LB_GQC_SIDE_TYPE || sz->n_dims != 1 || sz->ne[0] != 2 * N)
        return lb_fail(LB_ERR_FORMAT, "%s matrix %.*s has no scale/zero tensor %.*s%s of F16 [%lld]",
                       lb_type_name((int)t->type), (int)t->name.len, t->name.ptr, (int)t->name.len, t->name.ptr,
                       LB_GQC_SFX, (long long)(2 * N));
    lb_status s = lb_gqc_view_make((int)t->type, N, t->ne[0], t->data, t->size, sz->data, 2 * N, out);
    return s ? lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr) : LB_OK;
}

void lb_qgc_cache_free(lb_qgc_cache *c) {
    free(c->sz);
    c->sz = NULL;
    c->in_index = -1;
}

static lb_status quantize(lb_qgc_cache *c, lb_quant_extras *x, int sym, const gguf_tensor *t, int type, float *W,
                          const lb_gqc_view *same, void *dst, int n_threads, int *gptq) {
    const int64_t K = t->ne[0], N = c->N;
    if (same) {
        memcpy(dst, same->codes, same->row_size * (size_t)N);
        memcpy(c->sz, same->sz, 4 * (size_t)N);
        return LB_OK;
    }
    float *H = NULL;
    if (x->calib) {
        if (!(H = malloc((size_t)K * (size_t)K * sizeof *H)))
            return lb_fail(LB_ERR_NOMEM, "out of memory (a %lld x %lld Hessian)", (long long)K, (long long)K);
        if (!lb_calib_hessian(x->calib, t->name.ptr, t->name.len, K, H)) free(H), H = NULL;
    }
    if (!H) {
        lb_gqc_quantize_matrix(type, W, N, K, sym, NULL, dst, c->sz, n_threads);
        return LB_OK;
    }
    lb_gptq_params p = lb_quant_extras_gptq_params(x, type);
    p.sym = sym;
    double loss = 0.0;
    lb_status s = lb_gqc_gptq(type, W, N, K, H, &p, dst, c->sz, &loss);
    free(H);
    if (s) return lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr);
    *gptq = 1;
    x->n_gptq++;
    x->gptq_loss += loss;
    lb_log(2, "%.*s: GPTQ objective %.6g\n", (int)t->name.len, t->name.ptr, loss);
    return LB_OK;
}

lb_status lb_qgc_produce(lb_qgc_cache *c, lb_quant_extras *x, int sym, const gguf_tensor *t, int64_t in_index, int type,
                         float *W, const lb_gqc_view *same, int kind, void *dst, uint64_t nbytes, int n_threads,
                         int *gptq) {
    *gptq = 0;
    const int64_t N = t->ne[1] * t->ne[2] * t->ne[3];
    const uint64_t want = kind == LB_QGC_CODES ? lb_row_size(type, t->ne[0]) * (uint64_t)N : 4u * (uint64_t)N;
    if (nbytes != want)
        return lb_fail(LB_ERR_ARG, "GC: piece %d of %.*s has %llu bytes, the matrix %llu", kind, (int)t->name.len,
                       t->name.ptr, (unsigned long long)nbytes, (unsigned long long)want);
    if (kind == LB_QGC_CODES) {
        lb_qgc_cache_free(c);
        if (!same && !W) return lb_fail(LB_ERR_ARG, "GC: no weights for %.*s", (int)t->name.len, t->name.ptr);
        if (!(c->sz = malloc(4 * (size_t)N))) return lb_fail(LB_ERR_NOMEM, "out of memory");
        c->N = N;
        lb_status s = quantize(c, x, sym, t, type, W, same, dst, n_threads, gptq);
        if (s) return s;
        c->in_index = in_index;
        return LB_OK;
    }
    if (c->in_index != in_index || !c->sz)
        return lb_fail(LB_ERR_ARG, "GC: the scales of %.*s come before its codes", (int)t->name.len, t->name.ptr);
    memcpy(dst, c->sz, nbytes);
    return LB_OK;
}
