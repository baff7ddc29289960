/* The forward pass on the GPU: the same steps as forward.c, token by token
 * the same formulas, with every tensor on the device.
 *   x = embed(token)                      (host row lookup, one copy up)
 *   per layer: xn = norm(x); q, k, v = Wq xn, Wk xn, Wv xn
 *              bias, q/k norms, RoPE, k and v into the cache   (lb_cuda_qkv)
 *              att = attention(q, cache)                        (lb_cuda_attention)
 *              x += Wo att; xn = norm(x)                        (lb_cuda_residual)
 *              x += Wdown (act(Wgate xn) * Wup xn); xn = next layer's norm(x)
 *   logits = Wout norm(x)                 (one copy down)
 * The matmuls are lb_cuda_matmul's kernels: GEMVs on the int8 activations
 * the CPU would make for decode, cuBLAS on fp16 for prefill (docs/cuda.md).
 * A type with no GPU kernel (Q6_K, IQ4_NL, ...) is dequantized once at upload
 * and multiplied by cuBLAS: fp16 weights, or fp32 for F32 files.
 *
 * The weights are uploaded by the first context and kept with the model
 * (lb_model.dev_weights), so `bench`'s one context per test does not
 * upload them again. One host thread at a time; a context queues all its
 * work on a stream of its own. */
#include "model/forward_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/repack.h"
#include "formats/types.h"
#include "kernels/cuda/lb_cuda.h"

typedef struct {
    lb_cuda_matrix *wq, *wk, *wv, *wo, *gate, *up, *down;
    /* q, k, v (gate, up) stacked into one matrix where their rows can be:
     * one GEMV launch instead of three (two), and the small k and v ones
     * no longer run on a corner of the GPU; the separate ones are NULL then */
    lb_cuda_matrix *qkv, *gate_up;
    float *attn_norm, *ffn_norm, *bq, *bk, *bv, *attn_post_norm, *ffn_post_norm, *q_norm, *k_norm;
} dev_layer;

typedef struct {
    int n_layer, sm_count;
    dev_layer *layers;
    lb_cuda_matrix *output;
    float *output_norm;
    char describe[512];
} dev_weights;

typedef struct {
    float *x, *xn, *q, *k, *v, *att, *gate, *up, *logits;
    float *qkv, *gate_up; /* the stacked matrices' outputs: rows of qd + 2 kvd, of 2 ff */
    float *kc, *vc;       /* per sequence, per layer: n_head_kv x n_ctx x head_dim */
    size_t layer_floats;  /* of one layer's K (or V) cache */
    float *cs, *sn, *cs_local, *sn_local;
    int *pos, *seq, *rows;
    void *stream;         /* everything of this context is queued here */
    void *graph;          /* a decode step's launches, captured (NULL: none yet) */
    unsigned graph_epoch; /* lb_cuda_scratch_epoch when it was captured */
    int graph_failed;     /* a capture failed: decode runs launch by launch */
    long decodes;         /* decode steps run */
} dev_ctx;

static lb_status cu_fail(const char *what) {
    return lb_fail(LB_ERR_UNSUPPORTED, "CUDA: %s: %s", what, lb_cuda_last_error());
}

static void free_weights(void *p) {
    dev_weights *w = p;
    if (!w) return;
    for (int il = 0; il < w->n_layer && w->layers; il++) {
        dev_layer *l = &w->layers[il];
        lb_cuda_matrix *ms[] = {l->wq, l->wk, l->wv, l->wo, l->gate, l->up, l->down, l->qkv, l->gate_up};
        for (int i = 0; i < 9; i++) lb_cuda_matrix_free(ms[i]);
        float *vs[] = {l->attn_norm, l->ffn_norm, l->bq, l->bk, l->bv, l->attn_post_norm, l->ffn_post_norm,
                       l->q_norm, l->k_norm};
        for (int i = 0; i < 9; i++) lb_cuda_free(vs[i]);
    }
    free(w->layers);
    lb_cuda_matrix_free(w->output);
    lb_cuda_free(w->output_norm);
    free(w);
}

/* A device copy of n floats (NULL in, NULL out); 0 or -1. */
static int vec_up(const float *h, size_t n, float **out) {
    *out = NULL;
    if (!h) return 0;
    if (!(*out = lb_cuda_alloc(n * sizeof(float)))) return -1;
    return lb_cuda_to_device(*out, h, n * sizeof(float), NULL) || lb_cuda_synchronize();
}

/* Per type, how many matrices took the fallback (for the log and describe). */
typedef struct {
    int type, n, as_f32;
} fallback_count;

/* W on the device: its own kernels where the backend has them, else its
 * rows dequantized (the CPU's to_float) and multiplied by cuBLAS, as fp16
 * (F32 files, rows of K % 32 != 0 or values beyond fp16's range: fp32). */
static lb_status matrix_up(const lb_matrix *W, const char *name, lb_cuda_matrix **out, fallback_count *fb, int *n_fb,
                           double *bytes) {
    *out = NULL;
    const int t = W->type;
    if (t != LB_TYPE_F32) {
        *out = lb_cuda_matrix_upload(W);
        if (*out) {
            *bytes += (double)lb_cuda_matrix_bytes(*out);
            return LB_OK;
        }
    }
    const lb_type_traits *tt = lb_traits(t);
    if (lb_type_base(t) != t || lb_type_rows(t) != 1 || t == LB_TYPE_MX || !tt || !tt->to_float)
        return lb_fail(LB_ERR_UNSUPPORTED,
                       "CUDA: %s (%s) cannot go to the GPU: %s (a layout the CPU repacked at load? the GPU "
                       "takes the file's layouts: LOWBIT_REPACK=off; lowbit's --device cuda sets it)",
                       name, lb_type_name(t) ? lb_type_name(t) : "?", lb_cuda_last_error());
    const size_t K = (size_t)W->K, N = (size_t)W->N;
    float *row = malloc(K * sizeof(float));
    if (!row) return lb_fail(LB_ERR_NOMEM, "out of memory");
    /* fp16 unless the values need fp32 */
    int as_f32 = t == LB_TYPE_F32 || K % 32 != 0;
    for (size_t n = 0; n < N && !as_f32; n++) {
        tt->to_float((const char *)W->data + n * W->row_size, row, (int64_t)K);
        for (size_t k = 0; k < K; k++)
            if (!(fabsf(row[k]) < 65504.0f)) as_f32 = 1;
    }
    const size_t es = as_f32 ? 4 : 2;
    void *buf = malloc(N * K * es);
    if (!buf) {
        free(row);
        return lb_fail(LB_ERR_NOMEM, "out of memory converting %s for the GPU (%.1f MiB)", name,
                       (double)N * K * es / 1048576.0);
    }
    for (size_t n = 0; n < N; n++) {
        tt->to_float((const char *)W->data + n * W->row_size, row, (int64_t)K);
        if (as_f32) memcpy((float *)buf + n * K, row, K * sizeof(float));
        else
            for (size_t k = 0; k < K; k++) ((lb_fp16 *)buf)[n * K + k] = lb_f32_to_fp16(row[k]);
    }
    free(row);
    const lb_matrix C = {as_f32 ? LB_TYPE_F32 : LB_TYPE_F16, W->K, W->N, K * es, buf, 0};
    *out = lb_cuda_matrix_upload(&C);
    free(buf);
    if (!*out) return cu_fail(name);
    *bytes += (double)(N * K * es);
    int i = 0;
    while (i < *n_fb && (fb[i].type != t || fb[i].as_f32 != as_f32)) i++;
    if (i == *n_fb && *n_fb < 16) fb[(*n_fb)++] = (fallback_count){t, 0, as_f32};
    if (i < 16) fb[i].n++;
    return LB_OK;
}

/* The rows of ws[0..nw) in one matrix (host memory, *buf to free), when
 * they share type, K and activation bits and the type's rows stand alone
 * (not MX's tiles); 0 if they cannot be stacked. */
static int stack_rows(const lb_matrix *const *ws, int nw, lb_matrix *out, void **buf) {
    *buf = NULL;
    const lb_matrix *a = ws[0];
    if (a->type == LB_TYPE_MX || lb_type_rows(a->type) != 1 || lb_type_base(a->type) != a->type) return 0;
    int64_t N = 0;
    for (int i = 0; i < nw; i++) {
        if (ws[i]->type != a->type || ws[i]->K != a->K || ws[i]->act_bits != a->act_bits ||
            ws[i]->row_size != a->row_size || !ws[i]->data)
            return 0;
        N += ws[i]->N;
    }
    char *p = malloc((size_t)N * a->row_size);
    if (!p) return 0;
    size_t off = 0;
    for (int i = 0; i < nw; i++) {
        memcpy(p + off, ws[i]->data, (size_t)ws[i]->N * a->row_size);
        off += (size_t)ws[i]->N * a->row_size;
    }
    *out = *a;
    out->N = N, out->data = p;
    *buf = p;
    return 1;
}

static lb_status upload_weights(lb_model *m, dev_weights **out) {
    const lb_hparams *hp = &m->hp;
    const int d = hp->n_embd, hd = hp->head_dim;
    dev_weights *w = calloc(1, sizeof *w);
    if (!w) return lb_fail(LB_ERR_NOMEM, "out of memory");
    w->n_layer = hp->n_layer;
    w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
    if (!w->layers) {
        free(w);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    lb_cuda_device_info info;
    if (lb_cuda_device_info_get(0, &info)) {
        free_weights(w);
        return cu_fail("device 0");
    }
    w->sm_count = info.sm_count;
    fallback_count fb[16];
    int n_fb = 0;
    double bytes = 0;
    lb_status s = LB_OK;
    char name[64];
    for (int il = 0; il < hp->n_layer && !s; il++) {
        const lb_layer *L = &m->layers[il];
        dev_layer *D = &w->layers[il];
        const lb_matrix *src[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        lb_cuda_matrix **dst[] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->gate, &D->up, &D->down};
        static const char *const names[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                                            "ffn_down"};
        int done[7] = {0};
        /* stacked q|k|v and gate|up where possible */
        static const struct {
            int first, n;
            const char *name;
        } stacks[2] = {{0, 3, "attn_qkv"}, {4, 2, "ffn_gate_up"}};
        for (int k = 0; k < 2 && !s; k++) {
            lb_matrix stacked;
            void *buf = NULL;
            if (!stack_rows(src + stacks[k].first, stacks[k].n, &stacked, &buf)) continue;
            snprintf(name, sizeof name, "blk.%d.%s", il, stacks[k].name);
            s = matrix_up(&stacked, name, k == 0 ? &D->qkv : &D->gate_up, fb, &n_fb, &bytes);
            free(buf);
            for (int i = 0; i < stacks[k].n; i++) done[stacks[k].first + i] = 1;
        }
        for (int i = 0; i < 7 && !s; i++) {
            if (done[i]) continue;
            snprintf(name, sizeof name, "blk.%d.%s", il, names[i]);
            s = matrix_up(src[i], name, dst[i], fb, &n_fb, &bytes);
        }
        const size_t qd = (size_t)hp->n_head * hd, kvd = (size_t)hp->n_head_kv * hd;
        if (!s && (vec_up(L->attn_norm, d, &D->attn_norm) || vec_up(L->ffn_norm, d, &D->ffn_norm) ||
                   vec_up(L->bq, qd, &D->bq) || vec_up(L->bk, kvd, &D->bk) || vec_up(L->bv, kvd, &D->bv) ||
                   vec_up(L->attn_post_norm, d, &D->attn_post_norm) ||
                   vec_up(L->ffn_post_norm, d, &D->ffn_post_norm) || vec_up(L->q_norm, hd, &D->q_norm) ||
                   vec_up(L->k_norm, hd, &D->k_norm)))
            s = cu_fail("norms and biases");
        if (!s) lb_log(2, "cuda: layer %d of %d on the GPU\n", il + 1, hp->n_layer);
    }
    if (!s) s = matrix_up(&m->output, "output", &w->output, fb, &n_fb, &bytes);
    if (!s && vec_up(m->output_norm, d, &w->output_norm)) s = cu_fail("output_norm");
    if (s) {
        free_weights(w);
        return s;
    }
    int len = snprintf(w->describe, sizeof w->describe, "%s (sm_%d%d, %d SMs), weights %.2f GiB on the GPU",
                       info.name, info.major, info.minor, info.sm_count, bytes / 1073741824.0);
    for (int i = 0; i < n_fb && len > 0 && (size_t)len < sizeof w->describe; i++) {
        const char *tn = lb_type_name(fb[i].type) ? lb_type_name(fb[i].type) : "?";
        len += snprintf(w->describe + len, sizeof w->describe - (size_t)len, "%s %d %s as %s (no GPU kernel)",
                        i ? "," : ";", fb[i].n, tn, fb[i].as_f32 ? "F32" : "F16");
        lb_log(1, "cuda: %d %s matrices have no GPU kernel: dequantized once, multiplied by cuBLAS as %s\n", fb[i].n,
               tn, fb[i].as_f32 ? "F32" : "F16");
    }
    *out = w;
    return LB_OK;
}

static void detach(lb_context *c) {
    dev_ctx *D = c->dev_state;
    if (!D) return;
    void *p[] = {D->x, D->xn, D->q, D->k, D->v, D->att, D->gate, D->up, D->logits, D->qkv, D->gate_up, D->kc, D->vc,
                 D->cs, D->sn, D->cs_local, D->sn_local, D->pos, D->seq, D->rows};
    if (D->stream) lb_cuda_stream_sync(D->stream);
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) lb_cuda_free(p[i]);
    lb_cuda_graph_free(D->graph);
    lb_cuda_stream_free(D->stream);
    free(D);
    c->dev_state = NULL;
}

static lb_status attach(lb_context *c) {
    lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    if (hp->arch == LB_ARCH_DEEPSEEK2)
        return lb_fail(LB_ERR_UNSUPPORTED, "the CUDA backend does not run deepseek2's latent attention yet: run this "
                                           "one on the CPU");
    if (hp->arch == LB_ARCH_COHERE)
        return lb_fail(LB_ERR_UNSUPPORTED, "the CUDA backend does not run %s's LayerNorm and parallel block yet: run "
                                           "this one on the CPU", hp->arch_name);
    if (hp->n_expert)
        return lb_fail(LB_ERR_UNSUPPORTED, "the CUDA backend does not run mixture-of-experts models (%s) yet: run "
                                           "this one on the CPU", hp->arch_name);
    for (int il = 0; il < hp->n_layer; il++)
        if (m->layers[il].bo)
            return lb_fail(LB_ERR_UNSUPPORTED, "the CUDA backend does not run %s's attention output bias yet: run this "
                                               "one on the CPU", hp->arch_name);
    if (hp->attn_temp_scale != 0.0f || hp->arch == LB_ARCH_SMOLLM3 || hp->arch == LB_ARCH_GRANITE ||
        hp->arch == LB_ARCH_GLM4 || hp->arch == LB_ARCH_OLMO2)
        return lb_fail(LB_ERR_UNSUPPORTED, "the CUDA backend does not run %s's %s yet: run this one on the CPU",
                       hp->arch_name, hp->arch == LB_ARCH_SMOLLM3 ? "layers without RoPE"
                                      : hp->arch == LB_ARCH_GRANITE ? "multipliers"
                                      : hp->arch == LB_ARCH_GLM4 || hp->arch == LB_ARCH_OLMO2 ? "post-norms"
                                                                                             : "attention temperature");
    if (lb_cuda_device_count() < 1) return lb_fail(LB_ERR_UNSUPPORTED, "no CUDA device: %s", lb_cuda_last_error());
    if (!m->dev_weights) {
        dev_weights *w = NULL;
        lb_status s = upload_weights(m, &w);
        if (s) return s;
        m->dev_weights = w;
        m->dev_weights_free = free_weights;
    }
    dev_ctx *D = calloc(1, sizeof *D);
    if (!D) return lb_fail(LB_ERR_NOMEM, "out of memory");
    c->dev_state = D;
    if (!(D->stream = lb_cuda_stream_new())) {
        lb_status s = cu_fail("a stream");
        detach(c);
        return s;
    }
    const size_t B = (size_t)c->n_batch, d = (size_t)hp->n_embd, ff = (size_t)hp->n_ff;
    const size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t rd = (size_t)hp->rope_dim;
    D->layer_floats = (size_t)hp->n_head_kv * c->n_ctx * hp->head_dim;
    const size_t cache = (size_t)c->n_seq * hp->n_layer * D->layer_floats * sizeof(float);
    struct {
        void **p;
        size_t bytes;
    } a[] = {
        {(void **)&D->x, B * d * 4},           {(void **)&D->xn, B * (d > ff ? d : ff) * 4},
        {(void **)&D->q, B * qd * 4},          {(void **)&D->k, B * kvd * 4},
        {(void **)&D->v, B * kvd * 4},         {(void **)&D->att, B * (qd > d ? qd : d) * 4},
        {(void **)&D->gate, B * ff * 4},       {(void **)&D->up, B * ff * 4},
        {(void **)&D->logits, B * (size_t)hp->n_vocab * 4},
        {(void **)&D->qkv, B * (qd + 2 * kvd) * 4}, {(void **)&D->gate_up, B * 2 * ff * 4},
        {(void **)&D->kc, cache},              {(void **)&D->vc, cache},
        {(void **)&D->cs, B * rd * 4 + 4},     {(void **)&D->sn, B * rd * 4 + 4},
        {(void **)&D->cs_local, B * rd * 4 + 4}, {(void **)&D->sn_local, B * rd * 4 + 4},
        {(void **)&D->pos, B * 4},             {(void **)&D->seq, B * 4},
        {(void **)&D->rows, B * 4},
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        if (!(*a[i].p = lb_cuda_alloc(a[i].bytes))) {
            lb_status s = lb_fail(LB_ERR_NOMEM, "CUDA: out of device memory for a context of %d tokens x %d "
                                                "sequences (KV cache %.1f MiB): %s",
                                  c->n_ctx, c->n_seq, 2.0 * (double)cache / 1048576.0, lb_cuda_last_error());
            detach(c);
            return s;
        }
    return LB_OK;
}

/* Matrices that read the same x: one activation conversion while their
 * types (and an ABQ matrix's activation bits) agree with the matrix the
 * workspace was last prepared for, as forward.c's matmul_same_x. */
static int matmul_same_x(int nw, const lb_matrix *const *hw, lb_cuda_matrix *const *w, const float *x, int n,
                         float *const *y, void *st) {
    int last = -1;
    for (int i = 0; i < nw; i++) {
        const int share = last >= 0 && hw[i]->type == hw[last]->type && hw[i]->K == hw[last]->K &&
                          hw[i]->act_bits == hw[last]->act_bits &&
                          lb_cuda_matrix_type(w[i]) == lb_cuda_matrix_type(w[last]);
        if (!share) {
            if (lb_cuda_prepare(w[i], x, n, LB_CUDA_AUTO, st)) return -1;
            last = i;
        }
        if (lb_cuda_run_prepared(w[i], n, y[i], LB_CUDA_AUTO, st)) return -1;
    }
    return 0;
}

/* The batch's layers and, when rows > 0, the logits of rows [first, first +
 * rows) of x (or of the rows D->rows lists) into D->logits: everything
 * between the copies up and down, queued on the context's stream (what a
 * decode step's CUDA graph captures). 0 or -1 (lb_cuda_last_error). */
static int layers_and_logits(lb_context *c, int n, int max_len, int first, int rows, int by_index) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const dev_weights *W = m->dev_weights;
    dev_ctx *D = c->dev_state;
    void *st = D->stream;
    const int d = hp->n_embd, ff = hp->n_ff, gemma = hp->arch == LB_ARCH_GEMMA3; /* its local layers' RoPE */
    const int gelu = hp->arch == LB_ARCH_GEMMA2 || hp->arch == LB_ARCH_GEMMA3;
    const size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    const float eps = hp->norm_eps;
    const size_t seq_stride = (size_t)hp->n_layer * D->layer_floats;
    if (lb_cuda_rmsnorm_rows(D->xn, D->x, NULL, W->layers[0].attn_norm, n, d, eps, st)) return -1;
    for (int il = 0; il < hp->n_layer; il++) {
        const lb_layer *L = &m->layers[il];
        const dev_layer *G = &W->layers[il];
        const int local = L->is_local && gemma;
        lb_cuda_qkv_args qa = {0};
        if (G->qkv) {
            if (lb_cuda_matmul(G->qkv, D->xn, n, D->qkv, st)) return -1;
            qa.q = D->qkv, qa.k = D->qkv + qd, qa.v = D->qkv + qd + kvd, qa.ld_q = qa.ld_kv = qd + 2 * kvd;
        } else {
            const lb_matrix *hw[3] = {&L->wq, &L->wk, &L->wv};
            lb_cuda_matrix *const w[3] = {G->wq, G->wk, G->wv};
            float *const y[3] = {D->q, D->k, D->v};
            if (matmul_same_x(3, hw, w, D->xn, n, y, st)) return -1;
            qa.q = D->q, qa.k = D->k, qa.v = D->v, qa.ld_q = qd, qa.ld_kv = kvd;
        }
        qa.bq = G->bq, qa.bk = G->bk, qa.bv = G->bv, qa.q_norm = G->q_norm, qa.k_norm = G->k_norm;
        qa.cs = local ? D->cs_local : D->cs, qa.sn = local ? D->sn_local : D->sn;
        qa.pos = D->pos, qa.seq = D->seq;
        qa.k_cache = D->kc + (size_t)il * D->layer_floats, qa.v_cache = D->vc + (size_t)il * D->layer_floats;
        qa.seq_stride = seq_stride;
        qa.n = n, qa.n_head = hp->n_head, qa.n_head_kv = hp->n_head_kv, qa.head_dim = hp->head_dim;
        qa.rope_dim = hp->rope_dim, qa.neox = hp->rope_neox, qa.n_ctx = c->n_ctx, qa.eps = eps;
        if (lb_cuda_qkv(&qa, st)) return -1;
        lb_cuda_attn_args aa = {0};
        aa.q = qa.q, aa.ld_q = qa.ld_q, aa.out = D->att, aa.k_cache = qa.k_cache, aa.v_cache = qa.v_cache, aa.seq_stride = seq_stride;
        aa.pos = D->pos, aa.seq = D->seq, aa.n = n, aa.n_head = hp->n_head, aa.n_head_kv = hp->n_head_kv;
        aa.head_dim = hp->head_dim, aa.n_ctx = c->n_ctx, aa.window = L->is_local ? hp->sliding_window : 0;
        aa.softcap = hp->attn_softcap;
        aa.max_len = aa.window > 0 && aa.window < max_len ? aa.window : max_len;
        aa.scale = hp->query_scale;
        if (lb_cuda_attention(&aa, W->sm_count, st)) return -1;
        if (lb_cuda_matmul(G->wo, D->att, n, D->xn, st)) return -1;
        if (lb_cuda_residual(D->x, D->xn, G->attn_post_norm, D->xn, G->ffn_norm, n, d, eps, st)) return -1;
        if (G->gate_up) {
            if (lb_cuda_matmul(G->gate_up, D->xn, n, D->gate_up, st) ||
                lb_cuda_gated(D->gate, D->gate_up, D->gate_up + ff, n, ff, 2 * (size_t)ff, gelu, st))
                return -1;
        } else {
            const lb_matrix *hw[2] = {&L->w_gate, &L->w_up};
            lb_cuda_matrix *const w[2] = {G->gate, G->up};
            float *const y[2] = {D->gate, D->up};
            if (matmul_same_x(2, hw, w, D->xn, n, y, st) || lb_cuda_gated(D->gate, D->gate, D->up, n, ff, ff, gelu, st))
                return -1;
        }
        if (lb_cuda_matmul(G->down, D->gate, n, D->xn, st)) return -1;
        const float *next = il + 1 < hp->n_layer ? W->layers[il + 1].attn_norm : NULL;
        if (lb_cuda_residual(D->x, D->xn, G->ffn_post_norm, D->xn, next, n, d, eps, st)) return -1;
    }
    if (rows <= 0) return 0;
    if (lb_cuda_rmsnorm_rows(D->xn, D->x + (by_index ? 0 : (size_t)first * d), by_index ? D->rows : NULL,
                             W->output_norm, rows, d, eps, st))
        return -1;
    return lb_cuda_matmul(W->output, D->xn, rows, D->logits, st);
}

/* LOWBIT_CUDA_GRAPHS=0 runs decode steps launch by launch. */
static int graphs_enabled(void) {
    const char *e = getenv("LOWBIT_CUDA_GRAPHS");
    return !e || strcmp(e, "0") != 0;
}

static lb_status forward(lb_context *c, const int32_t *tokens, int n, const lb_seg *segs, int n_segs, float *logits,
                         int first, int rows, const int *row_idx) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    dev_ctx *D = c->dev_state;
    void *st = D->stream;
    const int d = hp->n_embd, rd = hp->rope_dim, gemma = hp->arch == LB_ARCH_GEMMA3;
    int max_len = 1;
    for (int s = 0; s < n_segs; s++)
        for (int t = 0; t < segs[s].n; t++) {
            c->tok_pos[segs[s].t0 + t] = segs[s].pos0 + t;
            c->tok_seq[segs[s].t0 + t] = segs[s].seq;
            if (segs[s].pos0 + t + 1 > max_len) max_len = segs[s].pos0 + t + 1;
        }
    if (!logits) rows = 0;
    /* A decode step (one token, its logits) always splits attention's keys
     * as for the whole context, so every step launches the same kernels
     * with the same arguments: a CUDA graph replays them (the positions and
     * sequence are read from device memory). */
    const int decode = n == 1 && rows == 1 && (row_idx ? row_idx[0] == 0 : first == 0);
    if (decode) max_len = c->n_ctx;
    /* the embedding rows and RoPE tables are made on the host (the CPU's
     * values exactly) and copied up: n x (d + 2 rope_dim) floats */
    lb_embed_tokens(m, tokens, n, c->x);
    lb_rope_tables(c, n);
    const size_t tb = (size_t)n * rd * sizeof(float);
    if (lb_cuda_to_device(D->x, c->x, (size_t)n * d * sizeof(float), st) ||
        lb_cuda_to_device(D->cs, c->rope_cs, tb, st) || lb_cuda_to_device(D->sn, c->rope_sn, tb, st) ||
        lb_cuda_to_device(D->pos, c->tok_pos, (size_t)n * sizeof(int), st) ||
        lb_cuda_to_device(D->seq, c->tok_seq, (size_t)n * sizeof(int), st) ||
        (gemma && (lb_cuda_to_device(D->cs_local, c->rope_cs_local, tb, st) ||
                   lb_cuda_to_device(D->sn_local, c->rope_sn_local, tb, st))) ||
        (!decode && row_idx && rows > 0 && lb_cuda_to_device(D->rows, row_idx, (size_t)rows * sizeof(int), st)))
        return cu_fail("copying the batch to the GPU");
    int rc;
    if (decode && D->graph && D->graph_epoch != lb_cuda_scratch_epoch()) {
        lb_cuda_graph_free(D->graph); /* a scratch buffer it uses has moved */
        D->graph = NULL;
    }
    if (decode && !D->graph && !D->graph_failed && D->decodes > 0 && graphs_enabled()) {
        /* the first decode step ran eagerly (workspaces sized, cuBLAS set up):
         * capture this one */
        const unsigned epoch = lb_cuda_scratch_epoch();
        if (lb_cuda_capture_begin(st) == 0) {
            const int body = layers_and_logits(c, 1, max_len, 0, 1, 0);
            void *g = lb_cuda_capture_end(st);
            if (body || !g || lb_cuda_scratch_epoch() != epoch) {
                lb_cuda_graph_free(g);
                D->graph_failed = 1;
                lb_log(1, "cuda: decode runs without a CUDA graph (capture failed: %s)\n", lb_cuda_last_error());
            } else {
                D->graph = g;
                D->graph_epoch = epoch;
            }
        } else {
            D->graph_failed = 1;
        }
    }
    if (decode && D->graph) rc = lb_cuda_graph_launch(D->graph, st);
    else rc = layers_and_logits(c, n, max_len, first, rows, row_idx != NULL);
    if (decode) D->decodes++;
    if (rc) return cu_fail("forward pass");
    if (rows <= 0) return lb_cuda_stream_sync(st) ? cu_fail("forward pass") : LB_OK;
    if (lb_cuda_to_host(logits, D->logits, (size_t)rows * hp->n_vocab * sizeof(float), st)) return cu_fail("logits");
    if (hp->final_logit_softcap > 0.0f) {
        const float cap = hp->final_logit_softcap;
        for (size_t i = 0; i < (size_t)rows * hp->n_vocab; i++) logits[i] = cap * tanhf(logits[i] / cap);
    }
    return LB_OK;
}

static lb_status seq_copy(lb_context *c, int src, int dst, int n) {
    const lb_hparams *hp = &c->model->hp;
    dev_ctx *D = c->dev_state;
    const size_t seq_stride = (size_t)hp->n_layer * D->layer_floats, hd = (size_t)hp->head_dim;
    for (int il = 0; il < hp->n_layer; il++)
        for (int h = 0; h < hp->n_head_kv; h++) {
            const size_t o = (size_t)il * D->layer_floats + (size_t)h * c->n_ctx * hd;
            const size_t so = (size_t)src * seq_stride + o, dof = (size_t)dst * seq_stride + o;
            const size_t bytes = (size_t)n * hd * sizeof(float);
            if (lb_cuda_copy(D->kc + dof, D->kc + so, bytes, D->stream) ||
                lb_cuda_copy(D->vc + dof, D->vc + so, bytes, D->stream))
                return cu_fail("lb_seq_copy");
        }
    return lb_cuda_stream_sync(D->stream) ? cu_fail("lb_seq_copy") : LB_OK;
}

static const lb_device_ops cuda_ops = {"cuda", attach, detach, forward, seq_copy};

void lb_cuda_backend_register(void) { lb_device_register(LB_DEVICE_CUDA, &cuda_ops); }

const char *lb_cuda_backend_describe(const lb_model *m) {
    return m->dev_weights && m->dev_weights_free == free_weights ? ((const dev_weights *)m->dev_weights)->describe
                                                                  : "";
}

double lb_cuda_backend_read_gbs(void) {
    const size_t bytes = (size_t)1 << 30;
    lb_cuda_device_info info;
    if (lb_cuda_device_info_get(0, &info)) return 0;
    void *buf = lb_cuda_alloc(bytes);
    int *sink = lb_cuda_alloc(sizeof(int));
    double best = 0;
    for (int i = 0; buf && sink && i < 6; i++) {
        const double t0 = lb_time_s();
        if (lb_cuda_bench_read(buf, bytes, sink, info.sm_count, NULL) || lb_cuda_synchronize()) break;
        const double dt = lb_time_s() - t0;
        if (i > 0 && dt > 0 && bytes / dt / 1e9 > best) best = bytes / dt / 1e9; /* the first one warms up */
    }
    lb_cuda_free(buf);
    lb_cuda_free(sink);
    return best;
}
