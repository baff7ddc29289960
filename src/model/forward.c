/* The forward pass, one batch of tokens at a time. A reader can follow a
 * token here from its embedding row to the logits:
 *   x = embed(token)
 *   per layer: x += Wo * attention(rope(Wq * norm(x)), rope(Wk * norm(x)), Wv * norm(x))
 *              x += Wdown * (silu(Wgate * norm(x)) * (Wup * norm(x)))
 *   logits = Wout * norm(x)
 * Gemma 3 adds (as llama.cpp's gemma3 graph): x scaled by sqrt(n_embd) after
 * the lookup, per-head RMSNorm of q and k before RoPE, an RMSNorm on the
 * attention and FFN outputs before each residual add, GELU(tanh) instead of
 * SiLU, and sliding-window layers with their own RoPE table (base 10000).
 * Prefill (n > 1) and decode (n = 1) take the same path: lb_matmul turns into
 * a matrix-matrix product for a batch and a matrix-vector product for one token. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "model/model.h"

lb_context_params lb_context_default_params(void) {
    lb_context_params p = {0, 0, 0};
    return p;
}

static int default_threads(void) { return omp_get_num_procs(); }

void lb_context_free(lb_context *c) {
    if (!c) return;
    void *bufs[] = {c->k_cache, c->v_cache, c->x, c->xn, c->q, c->k, c->v, c->att_out, c->ff_gate,
                    c->ff_up, c->logits_tmp, c->att_scores, c->act_scratch, c->inv_freq, c->inv_freq_local};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) lb_free_aligned(bufs[i]);
    free(c);
}

static float *alloc_f(size_t n) { return lb_malloc_aligned(n * sizeof(float)); }

static void rope_inv_freq(const lb_model *m, float base, float scale, float *out) {
    const lb_hparams *hp = &m->hp;
    for (int i = 0; i < hp->rope_dim / 2; i++) {
        /* same expression as llama2.c, so its greedy output is reproduced exactly */
        float f = 1.0f / powf(base, (float)(2 * i) / (float)hp->rope_dim);
        if (m->rope_freq_factors) f /= m->rope_freq_factors[i];
        out[i] = f * scale;
    }
}

lb_status lb_context_new(lb_model *m, const lb_context_params *params, lb_context **out) {
    *out = NULL;
    lb_context_params p = params ? *params : lb_context_default_params();
    const lb_hparams *hp = &m->hp;
    lb_context *c = calloc(1, sizeof *c);
    if (!c) return lb_fail(LB_ERR_NOMEM, "out of memory");
    c->model = m;
    c->n_ctx = p.n_ctx > 0 ? p.n_ctx : hp->n_ctx_train;
    if (c->n_ctx > (1 << 22)) {
        int n = c->n_ctx;
        free(c);
        return lb_fail(LB_ERR_ARG, "context length %d is too large", n);
    }
    c->n_batch = p.n_batch > 0 ? LB_MIN(p.n_batch, c->n_ctx) : LB_MIN(512, c->n_ctx);
    c->n_threads = p.n_threads > 0 ? p.n_threads : (m->n_threads > 0 ? m->n_threads : default_threads());
    const size_t B = (size_t)c->n_batch, d = (size_t)hp->n_embd;
    const size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t cache = (size_t)hp->n_layer * (size_t)c->n_ctx * kvd;
    c->k_cache = alloc_f(cache);
    c->v_cache = alloc_f(cache);
    c->x = alloc_f(B * d);
    c->xn = alloc_f(B * LB_MAX(d, (size_t)hp->n_ff));
    c->q = alloc_f(B * qd);
    c->k = alloc_f(B * kvd);
    c->v = alloc_f(B * kvd);
    c->att_out = alloc_f(B * LB_MAX(qd, d));
    c->ff_gate = alloc_f(B * hp->n_ff);
    c->ff_up = alloc_f(B * hp->n_ff);
    c->logits_tmp = alloc_f((size_t)hp->n_vocab);
    c->att_scores = alloc_f((size_t)c->n_threads * c->n_ctx);
    c->inv_freq = alloc_f((size_t)hp->rope_dim / 2 + 1);
    c->inv_freq_local = alloc_f((size_t)hp->rope_dim / 2 + 1);
    /* the largest activation scratch any matmul of the model needs */
    size_t act = 0;
    const lb_matrix *probe[] = {&m->output, &m->layers[0].wq, &m->layers[0].wo, &m->layers[0].w_gate, &m->layers[0].w_down};
    for (int il = 0; il < hp->n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (int i = 0; i < 7; i++) act = LB_MAX(act, lb_matmul_scratch_size(ws[i], c->n_batch));
    }
    act = LB_MAX(act, lb_matmul_scratch_size(probe[0], c->n_batch));
    c->act_scratch_size = act;
    c->act_scratch = lb_malloc_aligned(act);
    if (!c->k_cache || !c->v_cache || !c->x || !c->xn || !c->q || !c->k || !c->v || !c->att_out ||
        !c->ff_gate || !c->ff_up || !c->logits_tmp || !c->att_scores || !c->act_scratch ||
        !c->inv_freq || !c->inv_freq_local) {
        lb_context_free(c);
        return lb_fail(LB_ERR_NOMEM, "out of memory for a context of %d tokens (KV cache %.1f MiB)",
                       p.n_ctx > 0 ? p.n_ctx : hp->n_ctx_train, 2.0 * cache * 4 / 1048576.0);
    }
    rope_inv_freq(m, hp->rope_freq_base, hp->rope_freq_scale, c->inv_freq);
    /* Gemma 3's sliding-window layers: their own base and no scaling (llama.cpp
     * rope_freq_scale_train_swa = 1); other models use one table for all layers. */
    if (hp->arch == LB_ARCH_GEMMA3) rope_inv_freq(m, hp->rope_freq_base_local, 1.0f, c->inv_freq_local);
    else rope_inv_freq(m, hp->rope_freq_base, hp->rope_freq_scale, c->inv_freq_local);
    *out = c;
    return LB_OK;
}

int lb_context_n_ctx(const lb_context *c) { return c->n_ctx; }
int lb_context_threads(const lb_context *c) { return c->n_threads; }
void lb_context_reset(lb_context *c) { (void)c; /* positions drive the cache: nothing to clear */ }

/* y = x / rms(x) * w, per row */
static void rmsnorm_rows(float *y, const float *x, const float *w, int n, int d, float eps, int nth) {
    if ((int64_t)n * d < 65536) nth = 1;
#pragma omp parallel for num_threads(nth)
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * d;
        float *yi = y + (size_t)i * d;
        float ss = 0.0f;
        for (int j = 0; j < d; j++) ss += xi[j] * xi[j];
        const float scale = 1.0f / sqrtf(ss / (float)d + eps);
        for (int j = 0; j < d; j++) yi[j] = w[j] * (scale * xi[j]);
    }
}

static void add_bias(float *y, const float *b, int n, int d) {
    if (!b) return;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) y[(size_t)i * d + j] += b[j];
}

/* Rotates each head of each row: interleaved pairs (2i, 2i+1) for llama,
 * halves (i, i + rope_dim/2) for NeoX-style models. */
static void rope_rows(float *x, int n, int n_heads, const lb_hparams *hp, int pos0, const float *inv_freq) {
    const int hd = hp->head_dim, half = hp->rope_dim / 2;
    for (int t = 0; t < n; t++) {
        const float p = (float)(pos0 + t);
        for (int i = 0; i < half; i++) {
            const float val = p * inv_freq[i];
            const float c = cosf(val), s = sinf(val);
            for (int h = 0; h < n_heads; h++) {
                float *v = x + ((size_t)t * n_heads + h) * hd;
                const int a = hp->rope_neox ? i : 2 * i, b = hp->rope_neox ? i + half : 2 * i + 1;
                const float v0 = v[a], v1 = v[b];
                v[a] = v0 * c - v1 * s;
                v[b] = v0 * s + v1 * c;
            }
        }
    }
}

static void attention(lb_context *c, int il, int n, int pos0) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const int hd = hp->head_dim, nh = hp->n_head, group = hp->n_head / hp->n_head_kv;
    const size_t kvd = (size_t)hp->n_head_kv * hd;
    const float *kc = c->k_cache + (size_t)il * c->n_ctx * kvd;
    const float *vc = c->v_cache + (size_t)il * c->n_ctx * kvd;
    const int window = m->layers[il].is_local ? hp->sliding_window : 0;
    const int nth = (int64_t)n * nh * (pos0 + n) * hd < 65536 ? 1 : c->n_threads;
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
    for (int job = 0; job < n * nh; job++) {
        const int t = job / nh, h = job % nh, kvh = h / group;
        const int pos = pos0 + t;
        const int first = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
        float *sc = c->att_scores + (size_t)omp_get_thread_num() * c->n_ctx;
        const float *q = c->q + ((size_t)t * nh + h) * hd;
        float maxv = -INFINITY;
        for (int p = first; p <= pos; p++) {
            const float *k = kc + (size_t)p * kvd + (size_t)kvh * hd;
            float s = 0.0f;
            for (int i = 0; i < hd; i++) s += q[i] * k[i];
            s *= hp->query_scale;
            sc[p] = s;
            if (s > maxv) maxv = s;
        }
        float sum = 0.0f;
        for (int p = first; p <= pos; p++) {
            sc[p] = expf(sc[p] - maxv);
            sum += sc[p];
        }
        float *o = c->att_out + ((size_t)t * nh + h) * hd;
        for (int i = 0; i < hd; i++) o[i] = 0.0f;
        const float inv = 1.0f / sum;
        for (int p = first; p <= pos; p++) {
            const float *v = vc + (size_t)p * kvd + (size_t)kvh * hd;
            const float a = sc[p] * inv;
            for (int i = 0; i < hd; i++) o[i] += a * v[i];
        }
    }
}

static void matmul(lb_context *c, const lb_matrix *w, const float *x, int n, float *y) {
    if (c->on_matmul) c->on_matmul(c->on_matmul_user, w, x, n);
    lb_matmul(w, x, n, y, (size_t)w->N, c->act_scratch, c->n_threads);
}

static float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

/* One batch of n <= n_batch tokens at positions pos0..pos0+n-1. */
static void forward_batch(lb_context *c, const int32_t *tokens, int n, int pos0, float *logits, int all_logits) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const int d = hp->n_embd, ff = hp->n_ff, hd = hp->head_dim;
    const int qd = hp->n_head * hd, kvd = hp->n_head_kv * hd;
    const int nth = c->n_threads;

    const lb_type_traits *et = lb_traits(m->tok_embd.type);
    for (int t = 0; t < n; t++) {
        float *x = c->x + (size_t)t * d;
        et->to_float((const char *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_size, x, d);
        if (hp->arch == LB_ARCH_GEMMA3) {
            const float s = sqrtf((float)d);
            for (int j = 0; j < d; j++) x[j] *= s;
        }
    }

    for (int il = 0; il < hp->n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        /* attention */
        rmsnorm_rows(c->xn, c->x, l->attn_norm, n, d, hp->norm_eps, nth);
        matmul(c, &l->wq, c->xn, n, c->q);
        matmul(c, &l->wk, c->xn, n, c->k);
        matmul(c, &l->wv, c->xn, n, c->v);
        add_bias(c->q, l->bq, n, qd);
        add_bias(c->k, l->bk, n, kvd);
        add_bias(c->v, l->bv, n, kvd);
        if (l->q_norm) rmsnorm_rows(c->q, c->q, l->q_norm, n * hp->n_head, hd, hp->norm_eps, nth);
        if (l->k_norm) rmsnorm_rows(c->k, c->k, l->k_norm, n * hp->n_head_kv, hd, hp->norm_eps, nth);
        const float *inv_freq = l->is_local ? c->inv_freq_local : c->inv_freq;
        rope_rows(c->q, n, hp->n_head, hp, pos0, inv_freq);
        rope_rows(c->k, n, hp->n_head_kv, hp, pos0, inv_freq);
        float *kc = c->k_cache + ((size_t)il * c->n_ctx + pos0) * kvd;
        float *vc = c->v_cache + ((size_t)il * c->n_ctx + pos0) * kvd;
        memcpy(kc, c->k, (size_t)n * kvd * sizeof(float));
        memcpy(vc, c->v, (size_t)n * kvd * sizeof(float));
        attention(c, il, n, pos0);
        matmul(c, &l->wo, c->att_out, n, c->xn);
        if (l->attn_post_norm) rmsnorm_rows(c->xn, c->xn, l->attn_post_norm, n, d, hp->norm_eps, nth);
        for (size_t i = 0; i < (size_t)n * d; i++) c->x[i] += c->xn[i];

        /* feed-forward */
        rmsnorm_rows(c->xn, c->x, l->ffn_norm, n, d, hp->norm_eps, nth);
        matmul(c, &l->w_gate, c->xn, n, c->ff_gate);
        matmul(c, &l->w_up, c->xn, n, c->ff_up);
        const size_t nf = (size_t)n * ff;
        if (hp->arch == LB_ARCH_GEMMA3) {
            for (size_t i = 0; i < nf; i++) c->ff_gate[i] = gelu_tanh(c->ff_gate[i]) * c->ff_up[i];
        } else {
            for (size_t i = 0; i < nf; i++) {
                const float g = c->ff_gate[i];
                c->ff_gate[i] = g / (1.0f + expf(-g)) * c->ff_up[i];
            }
        }
        matmul(c, &l->w_down, c->ff_gate, n, c->xn);
        if (l->ffn_post_norm) rmsnorm_rows(c->xn, c->xn, l->ffn_post_norm, n, d, hp->norm_eps, nth);
        for (size_t i = 0; i < (size_t)n * d; i++) c->x[i] += c->xn[i];
    }

    if (!logits) return;
    const int first = all_logits ? 0 : n - 1, rows = all_logits ? n : 1;
    rmsnorm_rows(c->xn, c->x + (size_t)first * d, m->output_norm, rows, d, hp->norm_eps, nth);
    matmul(c, &m->output, c->xn, rows, logits);
    if (hp->final_logit_softcap > 0.0f) {
        const float cap = hp->final_logit_softcap;
        for (size_t i = 0; i < (size_t)rows * hp->n_vocab; i++) logits[i] = cap * tanhf(logits[i] / cap);
    }
}

lb_status lb_eval(lb_context *c, const int32_t *tokens, int n, int pos, float *logits, int all_logits) {
    const int V = c->model->hp.n_vocab;
    if (n <= 0) return lb_fail(LB_ERR_ARG, "lb_eval: no tokens");
    if (pos < 0 || (int64_t)pos + n > c->n_ctx)
        return lb_fail(LB_ERR_ARG, "lb_eval: positions %d..%d exceed the context length %d", pos, pos + n - 1, c->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return lb_fail(LB_ERR_ARG, "lb_eval: token id %d is outside the vocabulary (0..%d)", tokens[i], V - 1);
    for (int done = 0; done < n; done += c->n_batch) {
        const int nb = LB_MIN(c->n_batch, n - done);
        const int last = done + nb == n;
        float *out = NULL;
        if (logits && all_logits) out = logits + (size_t)done * V;
        else if (logits && last) out = logits;
        forward_batch(c, tokens + done, nb, pos + done, out, all_logits);
    }
    return LB_OK;
}
