/* quantize --abq-search: the block search run on the input model before the
 * file is written (model/abq_search.h), its choices in the metadata. */
#include <stdio.h>
#include <stdlib.h>

#include "formats/abq.h"
#include "model/quantize_search.h"

/* The whole file as a string. */
static lb_status read_text(const char *path, char **out, size_t *len) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return lb_fail(LB_ERR_IO, "cannot open calibration text %s", path);
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *b = n >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) free(b), b = NULL;
    fclose(f);
    if (!b) return n < 0 ? lb_fail(LB_ERR_IO, "cannot read %s", path) : lb_fail(LB_ERR_NOMEM, "out of memory");
    b[n] = 0;
    *out = b, *len = (size_t)n;
    return LB_OK;
}

static void progress(void *user, int layer, int n_layer, const lb_abq_search_layer *r) {
    const lb_quantize_options *o = user;
    char a[16], d[40] = "", c[96] = "";
    if (r->alpha < 0.0f) snprintf(a, sizeof a, "none");
    else snprintf(a, sizeof a, "%.2f", (double)r->alpha);
    if (o->abq_down_bits) snprintf(d, sizeof d, ", ffn_down's input %d bits", r->down_bits);
    if (o->abq_dc && r->dc_gamma > 0.0f)
        snprintf(c, sizeof c, ", correction gamma %.2f (fit %.3g -> %.3g)", (double)r->dc_gamma, r->dc_err0, r->dc_err1);
    else if (o->abq_dc)
        snprintf(c, sizeof c, ", no correction (fit %.3g -> %.3g, objective %.6f)", r->dc_err0, r->dc_err1, r->obj_dc);
    lb_log(1, "ABQ search: layer %d/%d: alpha %s, clip %.2f%s%s, objective %.6f (default %.6f)\n", layer + 1, n_layer, a,
           (double)r->clip, d, c, r->obj_best, r->obj_default);
}

lb_status lb_quantize_search_begin(const char *in_path, int type, const lb_quantize_options *o, int n_threads,
                                   gguf_writer *w, lb_quantize_search *out) {
    *out = (lb_quantize_search){0};
    if (!lb_abq_bits(type)) return lb_fail(LB_ERR_ARG, "--abq-search applies to the ABQ types only, not %s", lb_type_name(type));
    if (o->smooth_set || o->gptq)
        return lb_fail(LB_ERR_ARG, "--abq-search chooses the smoothing itself: not with --smooth-alpha or --gptq");
    lb_model_params mp = lb_model_default_params();
    mp.n_threads = n_threads;
    char *text = NULL;
    int32_t *tok = NULL;
    size_t len = 0;
    lb_status s = read_text(o->abq_search, &text, &len);
    if (s == LB_OK) s = lb_model_load(in_path, &mp, &out->model);
    const int ctx = o->abq_search_ctx > 0 ? o->abq_search_ctx : 512;
    int n_tok = 0;
    if (s == LB_OK && len + 2 > (size_t)1 << 30) s = lb_fail(LB_ERR_ARG, "calibration text %s: too long", o->abq_search);
    if (s == LB_OK && !(tok = malloc((len + 2) * sizeof *tok))) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    if (s == LB_OK) s = lb_tokenize(out->model, text, len, 1, tok, (int)len + 2, &n_tok);
    const int want = o->abq_search_chunks > 0 ? o->abq_search_chunks : 8, chunks = LB_MIN(want, n_tok / ctx);
    if (s == LB_OK && chunks < 1)
        s = lb_fail(LB_ERR_ARG, "calibration text %s: %d tokens, fewer than one chunk of %d", o->abq_search, n_tok, ctx);
    if (s == LB_OK) {
        if (chunks < want) lb_log(1, "ABQ search: the text holds %d chunks of %d tokens, not %d\n", chunks, ctx, want);
        lb_log(1, "ABQ search: %d layers, %d chunks of %d tokens\n", out->model->hp.n_layer, chunks, ctx);
        lb_abq_search_params sp = {0};
        sp.type = type, sp.act_bits = o->act_bits, sp.act_bits_down = o->act_bits_down, sp.n_threads = n_threads;
        sp.down_bits_hi = o->abq_down_bits, sp.down_gain = o->abq_down_gain_set ? o->abq_down_gain : 0.05f;
        sp.akl_weight = o->abq_akl;
        sp.dc = o->abq_dc, sp.dc_ridge = o->abq_dc_ridge, sp.smooth_vo = o->abq_smooth_vo;
        sp.progress = progress, sp.user = (void *)o;
        out->chunks = chunks;
        s = lb_abq_search_run(out->model, tok, chunks, ctx, &sp, &out->search);
    }
    free(tok);
    free(text);
    const lb_abq_search *r = out->search;
    float *a = r ? malloc((size_t)r->n_layer * 2 * sizeof *a) : NULL;
    if (s == LB_OK && !a) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    if (s == LB_OK) {
        for (int l = 0; l < r->n_layer; l++) a[l] = r->layers[l].alpha, a[r->n_layer + l] = r->layers[l].clip;
        s = gguf_writer_set_arr(w, "lowbit.abq.search_alpha", GGUF_TYPE_FLOAT32, a, (uint64_t)r->n_layer);
        if (s == LB_OK) s = gguf_writer_set_arr(w, "lowbit.abq.search_clip", GGUF_TYPE_FLOAT32, a + r->n_layer, (uint64_t)r->n_layer);
        if (s == LB_OK) s = gguf_writer_set_u32(w, "lowbit.abq.search_chunks", (uint32_t)chunks);
        if (s == LB_OK) s = gguf_writer_set_u32(w, "lowbit.abq.search_ctx", (uint32_t)ctx);
        if (s == LB_OK && o->abq_smooth_vo) s = gguf_writer_set_u32(w, "lowbit.abq.search_smooth_vo", 1);
        /* ffn_down's input bits per layer, where the search chose them */
        uint32_t *db = o->abq_down_bits && s == LB_OK ? malloc((size_t)r->n_layer * sizeof *db) : NULL;
        if (o->abq_down_bits && s == LB_OK && !db) s = lb_fail(LB_ERR_NOMEM, "out of memory");
        for (int l = 0; db && l < r->n_layer; l++) db[l] = (uint32_t)r->layers[l].down_bits;
        if (db) s = gguf_writer_set_arr(w, "lowbit.abq.act_bits_ffn_down_layers", GGUF_TYPE_UINT32, db, (uint64_t)r->n_layer);
        free(db);
        /* eq. (3)'s gamma per layer, where the correction was tried */
        float *g = o->abq_dc && s == LB_OK ? malloc((size_t)r->n_layer * sizeof *g) : NULL;
        if (o->abq_dc && s == LB_OK && !g) s = lb_fail(LB_ERR_NOMEM, "out of memory");
        for (int l = 0; g && l < r->n_layer; l++) g[l] = r->layers[l].dc_gamma;
        if (g) s = gguf_writer_set_arr(w, "lowbit.abq.search_dc", GGUF_TYPE_FLOAT32, g, (uint64_t)r->n_layer);
        free(g);
    }
    free(a);
    if (s != LB_OK) lb_quantize_search_end(out);
    return s;
}

void lb_quantize_search_end(lb_quantize_search *q) {
    lb_abq_search_free(q->search);
    lb_model_free(q->model);
    *q = (lb_quantize_search){0};
}
