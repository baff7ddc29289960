/* Helpers of the end-to-end model tests (test_gqc_model, test_mx_model,
 * test_bcqc): the logits of one fixed prompt, and a tolerance check. */
#ifndef LB_TEST_MODEL_UTIL_H
#define LB_TEST_MODEL_UTIL_H

#include "test_util.h"

#include "formats/gc.h"
#include "gguf/gguf.h"
#include "model/model.h"

static const int32_t lb_test_prompt[] = {1, 403, 407, 261, 378, 300, 290, 266, 17, 99, 5, 311, 42, 250, 8, 123, 77, 64, 3};

/* The logits of lb_test_prompt (one batch: the GEMM path, 16- and 4-row
 * groups and a tail) and of one more token (the GEMV path), 2 threads:
 * 2 * V floats (free them), NULL if the model does not load. *wq_type
 * (optional): the type blk.0.attn_q runs as. keep (optional): the model
 * is handed over there instead of freed. */
static inline float *lb_test_logits_keep(const char *path, int *V_out, int *wq_type, lb_model **keep) {
    enum { N_PROMPT = sizeof lb_test_prompt / sizeof lb_test_prompt[0] };
    lb_model *m = NULL;
    if (lb_model_load(path, NULL, &m) != LB_OK) {
        fprintf(stderr, "load %s: %s\n", path, lb_last_error());
        return NULL;
    }
    if (wq_type) *wq_type = m->layers[0].wq.type;
    lb_context *ctx = NULL;
    lb_context_params cp = lb_context_default_params();
    cp.n_threads = 2, cp.n_ctx = 64;
    if (lb_context_new(m, &cp, &ctx) != LB_OK) {
        lb_model_free(m);
        return NULL;
    }
    const int V = lb_model_n_vocab(m);
    float *out = malloc(sizeof(float) * 2 * V);
    CHECK_OK(lb_eval(ctx, lb_test_prompt, N_PROMPT, 0, out, 0));
    const int32_t next = 300;
    CHECK_OK(lb_eval(ctx, &next, 1, N_PROMPT, out + V, 0));
    lb_context_free(ctx);
    if (keep) *keep = m;
    else lb_model_free(m);
    *V_out = V;
    return out;
}
static inline float *lb_test_logits(const char *path, int *V_out, int *wq_type) {
    return lb_test_logits_keep(path, V_out, wq_type, NULL);
}

/* Every b[i] within rel times the largest |a| of a[i]. */
static inline void lb_test_check_close(const float *a, const float *b, int n, const char *what, double rel) {
    double mx = 0, worst = 0;
    for (int i = 0; i < n; i++) mx = fmax(mx, fabs(a[i]));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]);
        bad += !(d <= rel * mx), worst = fmax(worst, d);
    }
    CHECK_MSG(!bad, "%s: %d of %d logits differ by more than %g (worst %g)", what, bad, n, rel * mx, worst);
}

/* The F32 twin of a file: every tensor as F32 (a GC matrix through its side
 * tensor, which the twin leaves out), the same metadata, written to out. */
static inline void lb_test_f32_twin(const char *path, const char *out) {
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(path, &g));
    if (!g) return;
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(g); i++) gguf_writer_copy_kv(w, gguf_kv_at(g, i));
    float **deq = calloc((size_t)gguf_n_tensors(g), sizeof *deq);
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const int type = (int)t->type;
        const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        char name[256], side[300];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (t->type == LB_TYPE_F16 && lb_gc_is_side(t->name.ptr, t->name.len)) continue;
        if (lb_gc_is(type)) {
            snprintf(side, sizeof side, "%s%s", name, lb_gc_sfx(type));
            const gguf_tensor *s = gguf_find_tensor(g, side);
            lb_gc_view *v = NULL;
            CHECK_MSG(s != NULL, "%s has no side tensor", name);
            if (s) CHECK_OK(lb_gc_view_make(type, t->ne[1], t->ne[0], t->data, t->size, s->data, s->ne[0], &v));
            if (v && (deq[i] = malloc(sizeof(float) * (size_t)n))) lb_gc_view_dequantize(v, deq[i]);
            lb_free_aligned(v);
        } else if (lb_traits(type) && lb_traits(type)->to_float && (deq[i] = malloc(sizeof(float) * (size_t)n))) {
            lb_traits(type)->to_float(t->data, deq[i], n);
        }
        CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F32, t->n_dims, t->ne, deq[i] ? deq[i] : t->data));
    }
    CHECK_OK(gguf_writer_write(w, out, NULL, NULL, NULL, NULL));
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) free(deq[i]);
    free(deq);
    gguf_writer_free(w);
    gguf_close(g);
}

/* A copy of GC file gc_path with side tensor `side` (of matrix
 * blk.1.attn_v.weight) changed: mode 0 left out, 1 stored as F32, 2 shaped
 * [2, n / 2], 3 its element idx set to the fp16 bits h. Loading it must
 * fail with a message holding want and the matrix's name; with the side
 * tensor left out, quantize cannot read the matrix either. */
static inline void lb_test_corrupt_side(const char *gc_path, const char *side, int mode, int idx, lb_fp16 h,
                                        const char *want) {
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(gc_path, &g));
    if (!g) return;
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(g); i++) gguf_writer_copy_kv(w, gguf_kv_at(g, i));
    void *buf = NULL;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (strcmp(name, side)) {
            CHECK_OK(gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data));
            continue;
        }
        const int64_t n = t->ne[0];
        if (mode == 1) {
            float *f = buf = malloc(sizeof(float) * (size_t)n);
            for (int64_t j = 0; j < n; j++) f[j] = lb_fp16_to_f32(((const lb_fp16 *)t->data)[j]);
            CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F32, 1, t->ne, f));
        } else if (mode == 2) {
            const int64_t ne[2] = {2, n / 2};
            CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F16, 2, ne, t->data));
        } else if (mode == 3) {
            lb_fp16 *v = buf = malloc(t->size);
            memcpy(v, t->data, t->size);
            v[idx] = h;
            CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F16, 1, t->ne, v));
        }
    }
    char bad[4096];
    snprintf(bad, sizeof bad, "%s", lb_test_tmp("gc_bad.gguf"));
    CHECK_OK(gguf_writer_write(w, bad, NULL, NULL, NULL, NULL));
    gguf_writer_free(w);
    free(buf);
    gguf_close(g);
    lb_model *m = NULL;
    const lb_status s = lb_model_load(bad, NULL, &m);
    CHECK_MSG(s == LB_ERR_FORMAT && !m && strstr(lb_last_error(), want) && strstr(lb_last_error(), "blk.1.attn_v.weight"),
              "corrupt side tensor %s (mode %d): status %d, '%s' (want '%s')", side, mode, (int)s, lb_last_error(), want);
    lb_model_free(m);
    if (mode == 0) {
        lb_quantize_params qp = {LB_TYPE_Q8_0, 2, NULL, NULL};
        lb_quantize_stats st;
        const lb_status qs = lb_quantize_file(bad, lb_test_tmp("gc_bad_q8.gguf"), &qp, &st);
        CHECK_MSG(qs == LB_ERR_FORMAT && strstr(lb_last_error(), want), "quantize: %d '%s'", (int)qs, lb_last_error());
    }
    remove(bad);
}

#endif
