/* Multi-head latent attention (DeepSeek-V2 and V3; "deepseek2" in GGUF), in
 * the absorbed form llama.cpp's MLA path computes. A token's keys and values
 * come from one compressed vector c = norm(Wkv_a x) of mla_kv_rank floats
 * plus one RoPE key k_r shared by every head:
 *   head h:  k_h = [Wk_b[h]^T c, k_r],  v_h = Wv_b[h] c
 *   score:   q_h . k_h = (Wk_b[h] q_nope) . c + q_rope . k_r
 * so the cache keeps [c, k_r] once a token (one KV "head" of head_dim =
 * mla_kv_rank + rope_dim floats, for all n_head query heads), each query is
 * absorbed to [Wk_b[h] q_nope, q_rope], and the attention's output o_h (a
 * mix of c's) goes through Wv_b[h] before the output projection. That is
 * the same function as the expanded form (llama.cpp b4748, or files with
 * attn_kv_b only: model_load.c splits it) at an eighth of its cache. */
#include <string.h>

#include "kernels/attention.h"
#include "kernels/vecops.h"
#include "model/model.h"

static void observe(lb_context *c, const lb_matrix *w, const float *x, int n) {
    if (c->on_matmul) c->on_matmul(c->on_matmul_user, w, x, n);
}

static void mm(lb_context *c, const lb_matrix *w, const float *x, int n, float *y, size_t ldy) {
    observe(c, w, x, n);
    lb_matmul(w, x, n, y, ldy, c->act_scratch, c->n_threads);
}

/* Per head h, y + h * y_head (row stride y_ld) = W[h] times the rows
 * x + h * x_head (row stride x_ld) of n tokens: one region for all heads
 * when decoding, else each head's rows gathered and multiplied. */
static void per_head(lb_context *c, const lb_matrix *W, const float *x, int x_head, size_t x_ld, float *y, int y_head,
                     size_t y_ld, int n) {
    enum { MAX_H = 16 }; /* lb_matmul_rows' matrices a region (its scratch: lb_context_new) */
    const int nh = c->model->hp.n_head, K = (int)W[0].K;
    if (n == 1) {
        for (int h0 = 0; h0 < nh; h0 += MAX_H) {
            const int k = LB_MIN(MAX_H, nh - h0);
            const lb_matrix *w[MAX_H];
            const float *xs[MAX_H];
            float *ys[MAX_H];
            for (int j = 0; j < k; j++) {
                w[j] = &W[h0 + j], xs[j] = x + (size_t)(h0 + j) * x_head, ys[j] = y + (size_t)(h0 + j) * y_head;
                observe(c, w[j], xs[j], 1);
            }
            lb_matmul_rows(w, k, xs, ys, c->act_scratch, c->n_threads);
        }
        return;
    }
    for (int h = 0; h < nh; h++) {
        for (int t = 0; t < n; t++)
            memcpy(c->mla_g + (size_t)t * K, x + (size_t)t * x_ld + (size_t)h * x_head, (size_t)K * sizeof(float));
        mm(c, &W[h], c->mla_g, n, y + (size_t)h * y_head, y_ld);
    }
}

void lb_mla_attention(lb_context *c, int il, int n, const lb_seg *segs, int n_segs) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const lb_layer *l = &m->layers[il];
    const lb_vecops *vo = lb_vecops_get();
    const int nh = hp->n_head, r = hp->mla_kv_rank, rd = hp->rope_dim, nope = hp->mla_nope, vd = hp->mla_v;
    const int hq = nope + rd, hd = hp->head_dim; /* a head of q before absorption; after it, and a cache row: r + rd */
    const float eps = hp->norm_eps;
    float *qr = c->mla_a; /* n x nh x hq */
    {   /* q (or its low-rank half) and [c, k_r] read the same x */
        const lb_matrix *w[2] = {l->wq_a.data ? &l->wq_a : &l->wq, &l->wkv_a};
        float *y[2] = {l->wq_a.data ? c->mla_g : qr, c->k};
        const size_t ldy[2] = {(size_t)w[0]->N, (size_t)hd};
        observe(c, w[0], c->xn, n), observe(c, w[1], c->xn, n);
        lb_matmul_multi(w, 2, c->xn, n, y, ldy, c->act_scratch, c->n_threads);
    }
    if (l->wq_a.data) {
        const int qa = hp->mla_q_rank;
        for (int t = 0; t < n; t++) vo->rmsnorm(c->mla_g + (size_t)t * qa, c->mla_g + (size_t)t * qa, l->q_a_norm, qa, eps);
        mm(c, &l->wq_b, c->mla_g, n, qr, (size_t)nh * hq);
    }
    const int nth = lb_stage_threads(c, (int64_t)n * (nh * hq + hd));
    LB_FOR_ROWS(nth, n, t, {
        float *kv = c->k + (size_t)t * hd;
        const float *cs = c->rope_cs + (size_t)t * rd, *sn = c->rope_sn + (size_t)t * rd;
        vo->rmsnorm(kv, kv, l->kv_a_norm, r, eps);
        vo->rope(kv + r, cs, sn, rd, hp->rope_neox);
        for (int h = 0; h < nh; h++) {
            float *qh = qr + ((size_t)t * nh + h) * hq;
            vo->rope(qh + nope, cs, sn, rd, hp->rope_neox);
            memcpy(c->q + ((size_t)t * nh + h) * hd + r, qh + nope, (size_t)rd * sizeof(float));
        }
        lb_attn_store_kv(lb_k_cache_of(c, c->tok_seq[t], il), lb_v_cache_of(c, c->tok_seq[t], il), c->k_type, c->v_type,
                         lb_kv_slots(c, il), 1,
                         hd, kv, (size_t)hd, kv, (size_t)hd, 1, c->tok_pos[t]);
    });
    /* q absorbed: [Wk_b[h] q_nope, q_rope] */
    per_head(c, l->wk_b, qr, hq, (size_t)nh * hq, c->q, hd, (size_t)nh * hd, n);
    lb_attention_segs(c, il, segs, n_segs);
    /* each head's mix of c's through Wv_b[h], then the output projection */
    per_head(c, l->wv_b, c->att_out, hd, (size_t)nh * hd, c->mla_a, vd, (size_t)nh * vd, n);
    mm(c, &l->wo, c->mla_a, n, c->xn, (size_t)hp->n_embd);
}
