/* The mixture-of-experts FFN (qwen2moe, qwen3moe, Mixtral, gpt-oss), as
 * llama.cpp's build_moe_ffn computes it:
 *   p = softmax(router * x);  the k largest p_e chosen, weights w_j = p_e
 *   (divided by their sum for qwen3moe and Mixtral);
 *   out = sum_j w_j * down_e(silu(gate_e(x)) * up_e(x))
 * gpt-oss: logits router * x + b, the k largest chosen, w = softmax of those
 * k; each expert's gate, up and down with biases and swiglu_oai for silu.
 * Each expert's gate, up and down are row views of the file's 3-D tensors,
 * or its own 2-D tensors (Mixtral's first layout), or converted rows
 * (MXFP4: model_load.c), repacked at load like any matrix.
 *
 * Two ways through, one result: every chosen expert writes its output row
 * into a slot of its own (token t's j-th choice), and the slots are summed in
 * the order j = 0, 1, ..., so the bits do not depend on the path or the
 * number of threads:
 *  - decode (one token): its k experts' gate and up in one parallel region
 *    (they read the same row), their downs in another (lb_matmul_rows);
 *  - a batch: each expert's rows gathered (in chunks of at most CHUNK, which
 *    bounds the buffers for long batches) and multiplied by its matrices, the
 *    threads splitting each matrix, so an expert's weights are read once a
 *    batch. Chunks of 64 rows ran Mixtral's shape at 0.90-0.94x 512 (a GEMM
 *    decodes each weight tile once per call).
 * Tried and not kept: dealing whole experts out to the threads (one parallel
 * region a layer instead of two an expert) ran Qwen3-30B-A3B's layer shape at
 * 0.95-1.0x this on 2 cores (docs/architectures.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vecops.h"
#include "model/moe.h"

enum { CHUNK = 512 };

struct lb_moe_buffers {
    float *logits, *w, *slots; /* n x E router logits; n x k weights; n x k x d expert outputs */
    int *sel, *count, *start, *order; /* n x k choices; per expert its count and offset into order (slots) */
    float *x, *g, *u, *y;      /* CHUNK rows of an expert: gathered input, gate, up, down output */
    void *scratch;             /* the experts' matmuls' activation scratch */
    float *shexp_gate;         /* qwen2moe: n sigmoid gates */
};

static void *zalloc(size_t bytes) {
    void *p = lb_malloc_aligned(bytes ? bytes : 1);
    if (p) memset(p, 0, bytes);
    return p;
}

void lb_moe_buffers_free(lb_moe_buffers *b) {
    if (!b) return;
    void *ps[] = {b->logits, b->w, b->slots, b->sel, b->count, b->start, b->order,
                  b->x, b->g, b->u, b->y, b->scratch, b->shexp_gate};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) lb_free_aligned(ps[i]);
    free(b);
}

lb_status lb_moe_buffers_new(const lb_model *m, int n_batch, lb_moe_buffers **out) {
    *out = NULL;
    const lb_hparams *hp = &m->hp;
    const size_t B = (size_t)n_batch, k = (size_t)hp->n_expert_used, d = (size_t)hp->n_embd;
    const size_t fe = (size_t)hp->n_ff_exp, E = (size_t)hp->n_expert;
    lb_moe_buffers *b = calloc(1, sizeof *b);
    if (!b) return lb_fail(LB_ERR_NOMEM, "out of memory");
    /* rows of an expert a matmul takes: a chunk (no more than a batch) */
    const int chunk = LB_MIN(CHUNK, n_batch);
    /* the largest activation scratch an expert's matmul needs: a chunk, or
     * decode's k (gate and up), or their k rows (down) */
    size_t sc = 0;
    for (int il = 0; il < hp->n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        if (!l->exp_gate) continue; /* deepseek2's dense first layers */
        const lb_matrix *xs[] = {&l->exp_gate[0], &l->exp_up[0], &l->exp_down[0]};
        for (int i = 0; i < 3; i++) {
            sc = LB_MAX(sc, LB_MAX(lb_matmul_scratch_size(xs[i], chunk), lb_matmul_rows_scratch_size(xs[i], (int)k)));
        }
    }
    /* a chunk, and at least decode's k */
    const size_t R = LB_MAX((size_t)chunk, k);
    const int oom = !(b->logits = zalloc(B * E * 4)) || !(b->w = zalloc(B * k * 4)) ||
                    !(b->slots = zalloc(B * k * d * 4)) || !(b->sel = zalloc(B * k * sizeof(int))) ||
                    !(b->count = zalloc(E * sizeof(int))) || !(b->start = zalloc((E + 1) * sizeof(int))) ||
                    !(b->order = zalloc(B * k * sizeof(int))) || !(b->x = zalloc(R * d * 4)) ||
                    !(b->g = zalloc(R * fe * 4)) || !(b->u = zalloc(R * fe * 4)) || !(b->y = zalloc(R * d * 4)) ||
                    !(b->scratch = zalloc(sc)) || !(b->shexp_gate = zalloc(B * 4));
    if (oom) {
        lb_moe_buffers_free(b);
        return lb_fail(LB_ERR_NOMEM, "out of memory for the experts' buffers (%d tokens a batch)", n_batch);
    }
    *out = b;
    return LB_OK;
}

static void observe(lb_context *c, const lb_matrix *w, const float *x, int n) {
    if (c->on_matmul) c->on_matmul(c->on_matmul_user, w, x, n);
}

/* The k largest of p[0..E) in sel, largest first (ties to the lower index). */
static void top_k(const float *p, int E, int k, int *sel) {
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j; i++) taken |= sel[i] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        sel[j] = best;
    }
}

/* gpt-oss: each token's k largest logits, their weights a softmax over
 * those k (llama.cpp's softmax_weight gating). */
static void route_softmax_k(lb_moe_buffers *b, int E, int k, int n) {
    for (int t = 0; t < n; t++) {
        const float *p = b->logits + (size_t)t * E;
        int *sel = b->sel + (size_t)t * k;
        float *w = b->w + (size_t)t * k, mx = -INFINITY, sum = 0.0f;
        top_k(p, E, k, sel);
        for (int j = 0; j < k; j++) mx = LB_MAX(mx, p[sel[j]]);
        for (int j = 0; j < k; j++) sum += w[j] = expf(p[sel[j]] - mx);
        for (int j = 0; j < k; j++) w[j] /= sum;
    }
}

/* deepseek2 and ernie4_5-moe, as llama.cpp's build_moe_ffn: p = softmax or
 * (V3) sigmoid of the logits; the choice by p + exp_probs_b, within the
 * expert_groups_used groups of the largest top-2 sums when the experts come
 * in groups; the weights p of those chosen, renormalised if expert_norm,
 * times expert_scale if set. */
static void route_biased(const lb_hparams *hp, const lb_layer *l, lb_moe_buffers *b, int n) {
    const int E = hp->n_expert, k = hp->n_expert_used, G = hp->expert_groups;
    float score[LB_MAX_EXPERTS];
    for (int t = 0; t < n; t++) {
        float *p = b->logits + (size_t)t * E, mx = p[0], sum = 0.0f;
        if (hp->expert_sigmoid) {
            for (int e = 0; e < E; e++) p[e] = 1.0f / (1.0f + expf(-p[e]));
        } else {
            for (int e = 1; e < E; e++) mx = LB_MAX(mx, p[e]);
            for (int e = 0; e < E; e++) sum += p[e] = expf(p[e] - mx);
            for (int e = 0; e < E; e++) p[e] /= sum;
        }
        for (int e = 0; e < E; e++) score[e] = p[e] + (l->exp_probs_b ? l->exp_probs_b[e] : 0.0f);
        if (G > 1 && hp->expert_groups_used < G) {
            const int per = E / G;
            float gs[LB_MAX_EXPERTS];
            int top[2], keep[LB_MAX_EXPERTS];
            for (int g = 0; g < G; g++) {
                top_k(score + g * per, per, 2, top);
                gs[g] = score[g * per + top[0]] + score[g * per + top[1]];
            }
            top_k(gs, G, hp->expert_groups_used, keep);
            for (int g = 0; g < G; g++) {
                int kept = 0;
                for (int i = 0; i < hp->expert_groups_used; i++) kept |= keep[i] == g;
                if (!kept)
                    for (int e = g * per; e < (g + 1) * per; e++) score[e] = -INFINITY;
            }
        }
        int *sel = b->sel + (size_t)t * k;
        float *w = b->w + (size_t)t * k, wsum = 0.0f;
        top_k(score, E, k, sel);
        for (int j = 0; j < k; j++) wsum += w[j] = p[sel[j]];
        for (int j = 0; j < k; j++) {
            if (hp->expert_norm) w[j] /= wsum;
            if (hp->expert_scale > 0.0f) w[j] *= hp->expert_scale;
        }
    }
}

/* Each token's k experts and their weights (ties to the lower index). */
static void route(lb_context *c, lb_moe_buffers *b, const lb_layer *l, const float *xn, int n) {
    const lb_hparams *hp = &c->model->hp;
    const int E = hp->n_expert, k = hp->n_expert_used;
    observe(c, &l->router, xn, n);
    lb_matmul(&l->router, xn, n, b->logits, (size_t)E, c->act_scratch, c->n_threads);
    if (l->router_b)
        for (int t = 0; t < n; t++)
            for (int e = 0; e < E; e++) b->logits[(size_t)t * E + e] += l->router_b[e];
    if (hp->expert_softmax_k) {
        route_softmax_k(b, E, k, n);
        return;
    }
    if (hp->arch == LB_ARCH_DEEPSEEK2 || hp->arch == LB_ARCH_ERNIE45 || hp->arch == LB_ARCH_GLM4MOE) {
        route_biased(hp, l, b, n);
        return;
    }
    for (int t = 0; t < n; t++) {
        float *p = b->logits + (size_t)t * E, mx = p[0], sum = 0.0f;
        for (int e = 1; e < E; e++) mx = LB_MAX(mx, p[e]);
        for (int e = 0; e < E; e++) sum += p[e] = expf(p[e] - mx);
        int *sel = b->sel + (size_t)t * k;
        float *w = b->w + (size_t)t * k, wsum = 0.0f;
        top_k(p, E, k, sel);
        for (int j = 0; j < k; j++) wsum += w[j] = p[sel[j]] / sum;
        if (hp->expert_norm)
            for (int j = 0; j < k; j++) w[j] /= wsum;
    }
}

/* gpt-oss's activation (ggml_swiglu_oai, alpha 1.702, limit 7): the gate
 * clipped above, the linear part clipped both ways and shifted by 1,
 * x sigmoid(1.702 x) (y + 1) = silu(1.702 x) (y + 1) / 1.702, so the
 * vector SiLU does the exp (a NaN clips to the limit, as fminf / fmaxf did) */
static void swiglu_oai(const lb_vecops *vo, float *g, float *u, int ff) {
    for (int i = 0; i < ff; i++) {
        const float x = g[i] < 7.0f ? g[i] : 7.0f, y0 = u[i] > -7.0f ? u[i] : -7.0f, y = y0 < 7.0f ? y0 : 7.0f;
        g[i] = 1.702f * x;
        u[i] = (y + 1.0f) * (1.0f / 1.702f);
    }
    vo->silu_mul(g, u, ff);
}

/* n rows of expert e's hidden layer: g = act(g + bg) * (u + bu), the
 * biases gpt-oss's */
static void act_row(const lb_context *c, const lb_vecops *vo, const lb_layer *l, int e, float *gt, float *ut, int ff) {
    if (l->exp_gate_b) vo->add(gt, l->exp_gate_b + (size_t)e * ff, ff);
    if (l->exp_up_b) vo->add(ut, l->exp_up_b + (size_t)e * ff, ff);
    if (c->model->hp.arch == LB_ARCH_GPT_OSS) swiglu_oai(vo, gt, ut, ff);
    else vo->silu_mul(gt, ut, ff);
}

/* rows in parallel once they are worth waking the threads for (an exp
 * each: a chunk of gpt-oss-20b's rows is 512 x 2880 of them) */
static void act_rows(const lb_context *c, const lb_layer *l, int e, float *g, float *u, int n, int ff) {
    const lb_vecops *vo = lb_vecops_get();
    const int nth = lb_stage_threads(c, (int64_t)n * ff);
    LB_FOR_ROWS(nth, n, t, { act_row(c, vo, l, e, g + (size_t)t * ff, u + (size_t)t * ff, ff); });
}

/* n output rows of expert e's down matrix (stride d): + its bias, if any */
static void down_bias(const lb_layer *l, int e, float *y, size_t stride, int n, int d) {
    if (!l->exp_down_b) return;
    const lb_vecops *vo = lb_vecops_get();
    for (int t = 0; t < n; t++) vo->add(y + (size_t)t * stride, l->exp_down_b + (size_t)e * d, d);
}

/* Expert e's slots [s0, s1) of order (its rows): gather, gate and up,
 * SiLU, down, into the slots. */
static void run_expert(lb_context *c, lb_moe_buffers *b, const lb_layer *l, const float *xn, int e, int s0, int s1) {
    const lb_hparams *hp = &c->model->hp;
    const int d = hp->n_embd, k = hp->n_expert_used, fe = hp->n_ff_exp;
    for (int c0 = s0; c0 < s1; c0 += CHUNK) {
        const int m = LB_MIN(CHUNK, s1 - c0);
        for (int r = 0; r < m; r++)
            memcpy(b->x + (size_t)r * d, xn + (size_t)(b->order[c0 + r] / k) * d, (size_t)d * sizeof(float));
        const lb_matrix *gu[2] = {&l->exp_gate[e], &l->exp_up[e]};
        float *y[2] = {b->g, b->u};
        const size_t ldy[2] = {(size_t)fe, (size_t)fe};
        observe(c, gu[0], b->x, m), observe(c, gu[1], b->x, m);
        lb_matmul_multi(gu, 2, b->x, m, y, ldy, b->scratch, c->n_threads);
        act_rows(c, l, e, b->g, b->u, m, fe);
        observe(c, &l->exp_down[e], b->g, m);
        lb_matmul(&l->exp_down[e], b->g, m, b->y, (size_t)d, b->scratch, c->n_threads);
        down_bias(l, e, b->y, (size_t)d, m, d);
        for (int r = 0; r < m; r++)
            memcpy(b->slots + (size_t)b->order[c0 + r] * d, b->y + (size_t)r * d, (size_t)d * sizeof(float));
    }
}

/* A batch: the slots grouped by expert (a counting sort), then the experts
 * one after another. */
static void batch(lb_context *c, lb_moe_buffers *b, const lb_layer *l, const float *xn, int n) {
    const lb_hparams *hp = &c->model->hp;
    const int E = hp->n_expert, k = hp->n_expert_used;
    memset(b->count, 0, (size_t)E * sizeof(int));
    for (int i = 0; i < n * k; i++) b->count[b->sel[i]]++;
    b->start[0] = 0;
    for (int e = 0; e < E; e++) b->start[e + 1] = b->start[e] + b->count[e];
    for (int e = 0; e < E; e++) b->count[e] = b->start[e];
    for (int i = 0; i < n * k; i++) b->order[b->count[b->sel[i]]++] = i;
    for (int e = 0; e < E; e++)
        if (b->start[e + 1] > b->start[e]) run_expert(c, b, l, xn, e, b->start[e], b->start[e + 1]);
}

/* One token: its experts' gate and up in one region, their downs in another. */
static void token(lb_context *c, lb_moe_buffers *b, const lb_layer *l, const float *xn) {
    enum { MAX_K = 16 }; /* lb_matmul_multi's 32 matrices a region */
    const lb_hparams *hp = &c->model->hp;
    const int d = hp->n_embd, fe = hp->n_ff_exp;
    for (int j0 = 0; j0 < hp->n_expert_used; j0 += MAX_K) {
        const int k = LB_MIN(MAX_K, hp->n_expert_used - j0);
        const lb_matrix *w[2 * MAX_K], *wd[MAX_K];
        float *y[2 * MAX_K], *yd[MAX_K];
        const float *h[MAX_K];
        size_t ldy[2 * MAX_K];
        for (int j = 0; j < k; j++) {
            const int e = b->sel[j0 + j];
            w[2 * j] = &l->exp_gate[e], w[2 * j + 1] = &l->exp_up[e];
            y[2 * j] = b->g + (size_t)j * fe, y[2 * j + 1] = b->u + (size_t)j * fe;
            ldy[2 * j] = ldy[2 * j + 1] = (size_t)fe;
            wd[j] = &l->exp_down[e], h[j] = y[2 * j], yd[j] = b->slots + (size_t)(j0 + j) * d;
        }
        for (int i = 0; i < 2 * k; i++) observe(c, w[i], xn, 1);
        lb_matmul_multi(w, 2 * k, xn, 1, y, ldy, b->scratch, c->n_threads);
        for (int j = 0; j < k; j++) act_rows(c, l, b->sel[j0 + j], b->g + (size_t)j * fe, b->u + (size_t)j * fe, 1, fe);
        for (int j = 0; j < k; j++) observe(c, wd[j], h[j], 1);
        lb_matmul_rows(wd, k, h, yd, b->scratch, c->n_threads);
        for (int j = 0; j < k; j++) down_bias(l, b->sel[j0 + j], yd[j], (size_t)d, 1, d);
    }
}

void lb_moe_ffn(lb_context *c, const lb_layer *l, const float *xn, int n, float *out) {
    lb_moe_buffers *b = c->moe;
    const lb_hparams *hp = &c->model->hp;
    const int d = hp->n_embd, k = hp->n_expert_used;
    route(c, b, l, xn, n);
    if (n == 1) token(c, b, l, xn);
    else batch(c, b, l, xn, n);
    /* the weighted sum of each token's slots, in the order chosen */
    for (int t = 0; t < n; t++) {
        float *o = out + (size_t)t * d;
        const float *s = b->slots + (size_t)t * k * d, *w = b->w + (size_t)t * k;
        for (int i = 0; i < d; i++) o[i] = w[0] * s[i];
        for (int j = 1; j < k; j++)
            for (int i = 0; i < d; i++) o[i] += w[j] * s[(size_t)j * d + i];
    }
}

float *lb_moe_shexp_gates(lb_context *c, const lb_layer *l, const float *xn, int n) {
    const int d = c->model->hp.n_embd;
    float *g = c->moe->shexp_gate;
    for (int t = 0; t < n; t++) {
        if (!l->shexp_gate) { /* deepseek2: the shared experts join ungated */
            g[t] = 1.0f;
            continue;
        }
        float s = 0.0f;
        for (int j = 0; j < d; j++) s += l->shexp_gate[j] * xn[(size_t)t * d + j];
        g[t] = 1.0f / (1.0f + expf(-s));
    }
    return g;
}
