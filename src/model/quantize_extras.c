/* Codebooks and importance for lb_quantize_file (model/quantize_extras.h). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/cb_gguf.h"
#include "formats/gc.h"
#include "formats/grid.h"
#include "formats/repack.h"
#include "model/quantize_extras.h"

static void say_progress(void *user, const char *what, int done, int total) {
    const lb_quantize_params *p = user;
    if (p->progress) p->progress(p->user, what, done, total);
}

static int takes_importance(int type) {
    return type == LB_TYPE_MX || type == LB_TYPE_CB2 || type == LB_TYPE_CB3 || type == LB_TYPE_Q2_K || type == LB_TYPE_Q3_K ||
           type == LB_TYPE_IQ4_XS || lb_bcq_is_plain(lb_type_base(type)) ||
           lb_abq_bits(type);
}

/* The output's books: from o->codebooks, else discovered from the input. */
static lb_status output_books(const gguf_file *in, const lb_quantize_params *p, const lb_quantize_options *o,
                              lb_cb_books *b) {
    const int type = lb_type_base(p->type); /* CB2_16X4 carries CB2's books */
    if (o->codebooks) {
        gguf_file *g = NULL;
        lb_status s = gguf_open(o->codebooks, &g);
        if (s) return lb_fail_prefix(s, "reading codebooks %s", o->codebooks);
        int found = 0;
        s = lb_cb_books_read(g, type, b, &found);
        gguf_close(g);
        if (s) return lb_fail_prefix(s, "%s", o->codebooks);
        if (!found)
            return lb_fail(LB_ERR_FORMAT, "%s has no %s codebooks (make them with lowbit codebooks --bits %d)",
                           o->codebooks, lb_type_name(type), type == LB_TYPE_CB2 ? 2 : 3);
        lb_log(1, "%s: %d codebooks from %s\n", lb_type_name(type), b->count, o->codebooks);
        return LB_OK;
    }
    /* an input that already carries books for this type (a CB file, plain or
     * interleaved, being re-packed or unpacked) keeps them: its tensors use them */
    int in_found = 0;
    lb_status rs = lb_cb_books_read(in, type, b, &in_found);
    if (rs) return rs;
    if (in_found) {
        lb_log(1, "%s: keeping the input's %d codebooks\n", lb_type_name(type), b->count);
        return LB_OK;
    }
    lb_cb_discover_params dp = {o->cb_count > 0 ? o->cb_count : 8, lb_cb_k(type), o->cb_seed, 0, 0, 10,
                                p->n_threads, p->progress ? say_progress : NULL, (void *)p};
    int64_t total = 0, used = 0;
    const int64_t sample = 1 << 20;
    lb_log(1, "%s: no --codebooks given: discovering %d codebooks from the input model (seed %llu)\n",
           lb_type_name(type), dp.count, (unsigned long long)o->cb_seed);
    lb_status s = lb_cb_discover_file(in, &dp, sample, b, &total, &used);
    if (s == LB_OK && used < total)
        lb_log(1, "%s: codebooks learned from a sample of %lld of %lld weight groups\n", lb_type_name(type),
               (long long)used, (long long)total);
    return s;
}

lb_status lb_quant_extras_begin(const gguf_file *in, const lb_quantize_params *p, const lb_quantize_options *o,
                                gguf_writer *w, lb_quant_extras *x) {
    memset(x, 0, sizeof *x);
    const lb_quantize_options none = {0};
    if (!o) o = &none;
    /* An input that is itself CB needs its books to be read. */
    lb_status s = lb_cb_acquire_for_file(in, &x->in_held);
    const int cb_type = lb_type_base(p->type);
    if (s == LB_OK && lb_cb_k(cb_type)) {
        lb_cb_books b;
        s = output_books(in, p, o, &b);
        if (s == LB_OK) s = lb_cb_acquire(cb_type, &b);
        if (s == LB_OK) {
            x->out_cb_type = cb_type;
            s = lb_cb_books_write(w, cb_type, &b);
        }
    }
    if (s == LB_OK && o->imatrix) {
        s = lb_imatrix_load(o->imatrix, &x->imatrix);
        if (s == LB_OK) {
            if (!takes_importance(p->type))
                lb_log(1, "warning: %s does not use an importance matrix; ignoring %s\n", lb_type_name(p->type),
                       o->imatrix);
            else
                lb_log(1, "importance matrix %s: %d matrices\n", o->imatrix, lb_imatrix_count(x->imatrix));
        }
    }
    if (s == LB_OK && o->gptq) {
        s = lb_calib_load(o->gptq, &x->calib);
        x->gptq = lb_gptq_default_params();
        x->gptq.damp = o->gptq_damp > 0.0f ? o->gptq_damp : 0.0f; /* 0: by each matrix's type */
        if (o->gptq_block > 0) x->gptq.block = o->gptq_block;
        x->gptq.act_order = o->gptq_act_order;
        x->gptq.refit = o->gptq_refit;
        x->gptq.n_threads = p->n_threads;
        x->gptq.sym = o->sym;
        if (s == LB_OK && p->type != LB_TYPE_MX && !lb_gc_is(p->type) && !lb_grid_get(lb_type_base(p->type)))
            lb_log(0, "warning: GPTQ cannot round onto %s; quantizing without it\n", lb_type_name(p->type));
        else if (s == LB_OK)
            lb_log(1, "GPTQ: %d Hessians from %s (damp %g, block %d%s)\n", lb_calib_count(x->calib), o->gptq,
                   (double)lb_quant_extras_gptq_params(x, p->type).damp, x->gptq.block,
                   x->gptq.act_order ? ", act-order" : "");
    }
    if (s) lb_quant_extras_end(x);
    return s;
}

lb_gptq_params lb_quant_extras_gptq_params(const lb_quant_extras *x, int out_type) {
    lb_gptq_params p = x->gptq;
    if (!(p.damp > 0.0f)) p.damp = lb_gptq_default_damp(out_type);
    return p;
}

lb_status lb_quant_extras_gptq(lb_quant_extras *x, const gguf_tensor *t, const void *src, int src_type, void *dst,
                               int out_type, int64_t K, int64_t rows, int n_threads, int *done) {
    *done = 0;
    if (!x->calib || !(x->gptq.sym ? lb_grid_get_sym(out_type) : lb_grid_get(out_type))) return LB_OK;
    float *H = malloc((size_t)K * (size_t)K * sizeof *H), *W = NULL;
    if (!H) return lb_fail(LB_ERR_NOMEM, "out of memory (a %lld x %lld Hessian)", (long long)K, (long long)K);
    if (!lb_calib_hessian(x->calib, t->name.ptr, t->name.len, K, H)) {
        free(H);
        return LB_OK;
    }
    lb_status s = LB_OK;
    if (!(W = malloc((size_t)K * (size_t)rows * sizeof *W))) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    const lb_type_traits *st = lb_traits(src_type);
    const size_t in_row = lb_row_size(src_type, K);
    if (s == LB_OK) {
#pragma omp parallel for schedule(static) num_threads(n_threads)
        for (int64_t r = 0; r < rows; r++) st->to_float((const char *)src + (size_t)r * in_row, W + (size_t)r * K, K);
        double loss = 0.0;
        const lb_gptq_params gp = lb_quant_extras_gptq_params(x, out_type);
        s = lb_gptq_quantize(out_type, W, rows, K, H, &gp, dst, &loss);
        if (s) s = lb_fail_prefix(s, "%.*s", (int)t->name.len, t->name.ptr);
        else {
            *done = 1;
            x->n_gptq++;
            x->gptq_loss += loss;
            lb_log(2, "%.*s: GPTQ objective %.6g\n", (int)t->name.len, t->name.ptr, loss);
        }
    }
    free(W);
    free(H);
    return s;
}

const float *lb_quant_extras_importance(const lb_quant_extras *x, const gguf_tensor *t) {
    return x && x->imatrix ? lb_imatrix_get(x->imatrix, t->name.ptr, t->name.len, t->ne[0]) : NULL;
}

/* Mixtral's first layout keeps expert E of blk.N.ffn_X_exps in a tensor of
 * its own, blk.N.ffn_X.E.weight; the imatrix has one entry for all (as
 * llama-imatrix names the merged tensor): E's row of it. */
static const float *legacy_expert_row(const lb_quant_extras *x, const gguf_tensor *t) {
    char name[96], part[16];
    int il, e;
    if (t->n_dims != 2 || !lb_legacy_expert_name(t->name.ptr, t->name.len, &il, part, &e)) return NULL;
    snprintf(name, sizeof name, "blk.%d.ffn_%s_exps.weight", il, part);
    int n_mat = 0;
    const float *m = lb_imatrix_get_mats(x->imatrix, name, strlen(name), t->ne[0], &n_mat);
    return m && e >= 0 && e < n_mat ? m + (size_t)e * (size_t)t->ne[0] : NULL;
}

const float *lb_quant_extras_importance_rows(const lb_quant_extras *x, const gguf_tensor *t, int64_t *imp_rows) {
    *imp_rows = 0;
    int n_mat = 0;
    const float *m = x && x->imatrix ? lb_imatrix_get_mats(x->imatrix, t->name.ptr, t->name.len, t->ne[0], &n_mat) : NULL;
    if (!m && x && x->imatrix) return legacy_expert_row(x, t);
    if (n_mat == 1) return m;
    if (!m || t->n_dims != 3 || t->ne[2] != n_mat) return NULL; /* experts that do not match the tensor's */
    *imp_rows = t->ne[1];
    return m;
}

lb_status lb_quant_extras_convert(const float *imp, int64_t imp_rows, const void *src, int src_type, void *dst,
                                  int out_type, int64_t K, int64_t rows, int n_threads) {
    const lb_type_traits *st = lb_traits(src_type), *dt = lb_traits(out_type);
    const size_t in_row = lb_row_size(src_type, K), out_row = lb_row_size(out_type, K);
    int oom = 0;
#pragma omp parallel num_threads(n_threads)
    {
        float *buf = malloc((size_t)K * sizeof *buf);
        if (!buf) oom = 1;
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < rows; r++) {
            if (!buf) continue;
            st->to_float((const char *)src + (size_t)r * in_row, buf, K);
            /* a tensor that fell back to a type without importance quantizes plainly */
            const float *w = imp_rows > 0 ? imp + (size_t)(r / imp_rows) * (size_t)K : imp;
            if (!lb_quantize_row_weighted(out_type, buf, (char *)dst + (size_t)r * out_row, K, w))
                dt->from_float(buf, (char *)dst + (size_t)r * out_row, K);
        }
        free(buf);
    }
    return oom ? lb_fail(LB_ERR_NOMEM, "out of memory") : LB_OK;
}

void lb_quant_extras_end(lb_quant_extras *x) {
    if (x->out_cb_type) lb_cb_release(x->out_cb_type);
    lb_cb_release_held(x->in_held);
    lb_imatrix_free(x->imatrix);
    lb_calib_free(x->calib);
    memset(x, 0, sizeof *x);
}
