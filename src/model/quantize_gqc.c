/* GC matrices (GQ{b}_GC, BCQ{q}_GC) in lb_quantize_file (model/quantize_gqc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gqc_gptq.h"
#include "model/quantize_gqc.h"

lb_status lb_qgc_add(gguf_writer *w, const char *name, const gguf_tensor *t, int type, uint64_t *bytes) {
    char side[300];
    const int sn = lb_gc_side_n(type);
    const int64_t N = t->ne[1] * t->ne[2] * t->ne[3], ne_codes[2] = {t->ne[0], N}, ne_sz[1] = {sn * N};
    snprintf(side, sizeof side, "%s%s", name, lb_gc_sfx(type));
    *bytes = lb_row_size(type, t->ne[0]) * (uint64_t)N + 2u * (uint64_t)sn * (uint64_t)N;
    lb_status s = gguf_writer_add_tensor(w, name, (uint32_t)type, 2, ne_codes, NULL);
    if (s == LB_OK) s = gguf_writer_add_tensor(w, side, LB_GQC_SIDE_TYPE, 1, ne_sz, NULL);
    return s;
}

static const gguf_tensor *side_of(const gguf_file *in, const gguf_tensor *t) {
    char side[300];
    snprintf(side, sizeof side, "%.*s%s", (int)LB_MIN(t->name.len, 255), t->name.ptr, lb_gc_sfx((int)t->type));
    return gguf_find_tensor(in, side);
}

int lb_qgc_is_input_side(const gguf_file *in, const gguf_tensor *t) {
    const size_t n = lb_gc_side_sfx_len(t->name.ptr, t->name.len);
    if (!n || t->name.len - n > 255) return 0;
    char name[300];
    snprintf(name, sizeof name, "%.*s", (int)(t->name.len - n), t->name.ptr);
    const gguf_tensor *m = gguf_find_tensor(in, name);
    /* the matrix is GC, and of the family this suffix belongs to */
    const char *sfx = m && lb_gc_is((int)m->type) ? lb_gc_sfx((int)m->type) : NULL;
    return sfx && strlen(sfx) == n && !memcmp(sfx, t->name.ptr + t->name.len - n, n);
}

lb_status lb_qgc_input_view(const gguf_file *in, const gguf_tensor *t, lb_gc_view **out) {
    *out = NULL;
    const gguf_tensor *sz = side_of(in, t);
    const int sn = lb_gc_side_n((int)t->type);
    const int64_t N = t->ne[1] * t->ne[2] * t->ne[3];
    if (!sz || sz->type != LB_GQC_SIDE_TYPE || sz->n_dims != 1 || sz->ne[0] != sn * N)
        return lb_fail(LB_ERR_FORMAT, "%s matrix %.*s has no %s tensor %.*s%s of F16 [%lld]",
                       lb_type_name((int)t->type), (int)t->name.len, t->name.ptr, lb_gc_side_what((int)t->type),
                       (int)t->name.len, t->name.ptr,
                       lb_gc_sfx((int)t->type), (long long)(sn * N));
    lb_status s = lb_gc_view_make((int)t->type, N, t->ne[0], t->data, t->size, sz->data, sn * N, out);
    return s ? lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr) : LB_OK;
}

void lb_qgc_cache_free(lb_qgc_cache *c) {
    free(c->sz);
    c->sz = NULL;
    c->in_index = -1;
}

int lb_qgc_converts(int src_type, int type) {
    return lb_gqc_bits(src_type) && lb_gqc_bits(src_type) == lb_bcqc_bits(type);
}

/* GQ{q}_GC -> BCQ{q}_GC row by row (lb_bcqc_from_gqc); a row is exact when
 * its values equal the source's (as lb_bcq_from_uniform counts groups) */
static lb_status convert(lb_qgc_cache *c, int type, const lb_gc_view *src, void *dst) {
    const int q = lb_bcqc_bits(type);
    const int64_t K = src->K;
    const size_t row = lb_row_size(type, K);
    float *a = malloc(2 * sizeof(float) * (size_t)K);
    if (!a) return lb_fail(LB_ERR_NOMEM, "out of memory");
    float *b = a + K;
    c->converted = 1;
    c->inexact = 0;
    for (int64_t n = 0; n < src->N; n++) {
        uint8_t *codes = (uint8_t *)dst + (size_t)n * row;
        lb_fp16 *az = c->sz + (q + 1) * n;
        lb_bcqc_from_gqc(q, lb_gc_view_row(src, n), src->side[2 * n], lb_gqc_view_zero(src, n), codes, az, K);
        lb_gc_dequantize_row(src->type, lb_gc_view_row(src, n), a, K, lb_gc_view_side(src, n));
        lb_bcqc_dequantize_row(type, codes, b, K, az);
        int same = 1;
        for (int64_t k = 0; k < K; k++) same &= a[k] == b[k];
        c->inexact += !same;
    }
    free(a);
    return LB_OK;
}

static lb_status quantize(lb_qgc_cache *c, lb_quant_extras *x, int sym, const gguf_tensor *t, int type, float *W,
                          const lb_gc_view *same, void *dst, int n_threads, int *gptq) {
    const int64_t K = t->ne[0], N = c->N;
    if (same && same->type != type) return convert(c, type, same, dst);
    if (same) {
        memcpy(dst, same->codes, same->row_size * (size_t)N);
        memcpy(c->sz, same->side, 2 * (size_t)same->side_n * (size_t)N);
        return LB_OK;
    }
    float *H = NULL;
    if (x->calib) {
        if (!(H = malloc((size_t)K * (size_t)K * sizeof *H)))
            return lb_fail(LB_ERR_NOMEM, "out of memory (a %lld x %lld Hessian)", (long long)K, (long long)K);
        if (!lb_calib_hessian(x->calib, t->name.ptr, t->name.len, K, H)) free(H), H = NULL;
    }
    if (!H) { /* --imatrix weights the fit */
        lb_status s = lb_gc_quantize_matrix(type, W, N, K, sym, lb_quant_extras_importance(x, t), dst, c->sz, n_threads);
        return s ? lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr) : LB_OK;
    }
    lb_gptq_params p = lb_quant_extras_gptq_params(x, type);
    p.sym = sym;
    double loss = 0.0;
    lb_status s = lb_gc_gptq(type, W, N, K, H, &p, dst, c->sz, &loss);
    free(H);
    if (s) return lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr);
    *gptq = 1;
    x->n_gptq++;
    x->gptq_loss += loss;
    lb_log(2, "%.*s: GPTQ objective %.6g\n", (int)t->name.len, t->name.ptr, loss);
    return LB_OK;
}

lb_status lb_qgc_produce(lb_qgc_cache *c, lb_quant_extras *x, int sym, const gguf_tensor *t, int64_t in_index, int type,
                         float *W, const lb_gc_view *same, int kind, void *dst, uint64_t nbytes, int n_threads,
                         int *gptq) {
    *gptq = 0;
    const int64_t N = t->ne[1] * t->ne[2] * t->ne[3];
    const uint64_t side_bytes = 2u * (uint64_t)lb_gc_side_n(type) * (uint64_t)N;
    const uint64_t want = kind == LB_QGC_CODES ? lb_row_size(type, t->ne[0]) * (uint64_t)N : side_bytes;
    if (nbytes != want)
        return lb_fail(LB_ERR_ARG, "GC: piece %d of %.*s has %llu bytes, the matrix %llu", kind, (int)t->name.len,
                       t->name.ptr, (unsigned long long)nbytes, (unsigned long long)want);
    if (kind == LB_QGC_CODES) {
        lb_qgc_cache_free(c);
        if (!same && !W) return lb_fail(LB_ERR_ARG, "GC: no weights for %.*s", (int)t->name.len, t->name.ptr);
        if (!(c->sz = malloc((size_t)side_bytes))) return lb_fail(LB_ERR_NOMEM, "out of memory");
        c->converted = 0;
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
