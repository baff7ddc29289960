/* ABQ's block-wise calibration by grid search (model/abq_search.h). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/abq.h"
#include "kernels/vecops.h"
#include "model/abq_dc.h"
#include "model/abq_search.h"
#include "model/quantize_smooth.h"

/* A block's matrices, and which input each reads: the three smoothing
 * groups of quantize_smooth.c (attn_norm -> q, k, v; ffn_norm -> gate, up;
 * ffn_up's rows -> down) and attn_output's input (smoothed only with
 * smooth_vo: attn_v's rows -> attn_output). */
enum { M_Q, M_K, M_V, M_O, M_GATE, M_UP, M_DOWN, N_MAT };
enum { G_ATTN, G_FFN, G_DOWN, G_O, N_IN };
static const char *const mat_names[N_MAT] = {"attn_q",      "attn_k",   "attn_v",  "attn_output",
                                             "ffn_gate",    "ffn_up",   "ffn_down"};
static const int mat_input[N_MAT] = {G_ATTN, G_ATTN, G_ATTN, G_O, G_FFN, G_FFN, G_DOWN};

static lb_matrix *mat_of(lb_layer *l, int i) {
    lb_matrix *const a[N_MAT] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    return a[i];
}

/* One candidate block: quantized matrices and (smoothed) norms. */
typedef struct {
    void *w[N_MAT];
    size_t bytes[N_MAT];
    float *attn_norm, *ffn_norm;
    float *bv; /* attn_v's bias over the vo group's 1/s (smooth_vo and a bias only) */
} cand;

typedef struct {
    lb_model *m;
    lb_abq_search_params p;
    lb_context *c;
    int n_chunks, chunk, d, layer;
    size_t stream;             /* floats of one residual stream: n_chunks * chunk * d */
    float *xfp, *xq, *yfp, *y1, *y1best, *y2;
    float *wf[N_MAT];          /* the current layer's full-precision weights */
    float *wtmp;               /* one matrix, scaled for a candidate */
    double *sum2[N_IN];        /* sums of squares of the current layer's inputs */
    int64_t rows[N_IN], kin[N_IN];
    float *ms[N_IN], *s[N_IN], *imp;
    lb_layer orig;             /* the current layer as loaded */
    cand cur, best;
    /* eq. (4): the fp block's queries and keys per chunk, and what the
     * attention observer does now (0 nothing, 1 keep fp's, 2 add the KL) */
    float *qfp, *kfp;
    double *akl_part;          /* per head and query, summed in order */
    float *score_rows;         /* per thread: two score rows of a chunk */
    int akl_mode, akl_chunk;
    double akl_sum;
    /* eq. (3)'s correction (dc), T = n_chunks x chunk tokens: ffn_down's
     * inputs in the fp block (hfp, T x n_ff) and in the quantized one on X~
     * and on Xfp (hq, 2T x n_ff); the fp block's ffn_down output (T x d) and
     * the quantized one's error in both runs (2T x d); the fitted vectors; a
     * second ffn_down buffer for the corrected candidate */
    float *hfp, *hq, *dfp, *err, *dc_a, *dc_b;
    float *s_pool; /* smooth_vo: pooled rms and max|W| per KV column */
    void *dcw;
    size_t dcw_bytes;
    int64_t hq_rows;
} search;

static void cand_free(cand *c) {
    for (int i = 0; i < N_MAT; i++) lb_free_aligned(c->w[i]);
    lb_free_aligned(c->attn_norm);
    lb_free_aligned(c->bv);
    lb_free_aligned(c->ffn_norm);
    memset(c, 0, sizeof *c);
}

/* The matmul observer while the full-precision layer runs: its inputs' x^2. */
static void observe(void *user, const lb_matrix *w, const float *x, int n) {
    search *S = user;
    lb_layer *l = &S->m->layers[S->layer];
    const int g = w == &l->wq ? G_ATTN : w == &l->w_gate ? G_FFN : w == &l->w_down ? G_DOWN : w == &l->wo ? G_O : -1;
    if (g < 0) return;
    const int64_t K = w->K;
    if (g == G_DOWN && S->hfp && S->rows[g] + n <= (int64_t)S->n_chunks * S->chunk)
        memcpy(S->hfp + S->rows[g] * K, x, (size_t)n * K * sizeof *x);
    for (int t = 0; t < n; t++)
        for (int64_t j = 0; j < K; j++) S->sum2[g][j] += (double)x[t * K + j] * x[t * K + j];
    S->rows[g] += n;
}

/* The matmul observer while the chosen quantized layer runs on X~, then on
 * Xfp (dc): ffn_down's inputs, in token order. */
static void observe_down(void *user, const lb_matrix *w, const float *x, int n) {
    search *S = user;
    if (w != &S->m->layers[S->layer].w_down || S->hq_rows + n > 2 * (int64_t)S->n_chunks * S->chunk) return;
    memcpy(S->hq + S->hq_rows * w->K, x, (size_t)n * w->K * sizeof *x);
    S->hq_rows += n;
}

/* Eq. (4) of one chunk, summed over heads and queries: KL(q || fp) +
 * KL(fp || q) = sum_j (p_j - r_j)(log p_j - log r_j) per query row, the
 * maps softmax(scale q.k) over the keys the row sees (causal, and the
 * sliding window of a local layer), scores soft-capped as the model's
 * attention caps them (Gemma 2). */
static double akl_chunk(search *S, const float *q, const float *k, const float *qf, const float *kf, int n) {
    const lb_hparams *hp = &S->m->hp;
    const int nh = hp->n_head, nkv = hp->n_head_kv, hd = hp->head_dim, grp = nh / nkv;
    const int window = S->m->layers[S->layer].is_local ? hp->sliding_window : 0;
    const float scale = hp->query_scale, cap = hp->attn_softcap;
#pragma omp parallel for schedule(static) num_threads(S->c->n_threads)
    for (int r = 0; r < nh * n; r++) {
        const int h = r / n, t = r % n, kv = h / grp, j0 = window > 0 && t - window + 1 > 0 ? t - window + 1 : 0;
        float *a = S->score_rows + (size_t)omp_get_thread_num() * 2 * n, *b = a + n;
        const float *qt = q + ((size_t)t * nh + h) * hd, *ft = qf + ((size_t)t * nh + h) * hd;
        for (int j = j0; j <= t; j++) {
            const float *kj = k + ((size_t)j * nkv + kv) * hd, *gj = kf + ((size_t)j * nkv + kv) * hd;
            float sa = 0.0f, sb = 0.0f;
            for (int e = 0; e < hd; e++) sa += qt[e] * kj[e], sb += ft[e] * gj[e];
            a[j - j0] = scale * sa, b[j - j0] = scale * sb;
            if (cap > 0.0f) a[j - j0] = cap * tanhf(a[j - j0] / cap), b[j - j0] = cap * tanhf(b[j - j0] / cap);
        }
        const int m = t - j0 + 1;
        lb_log_softmax(a, m, a);
        lb_log_softmax(b, m, b);
        double kl = 0.0;
        for (int j = 0; j < m; j++) kl += (exp((double)a[j]) - exp((double)b[j])) * ((double)a[j] - b[j]);
        S->akl_part[r] = kl;
    }
    double sum = 0.0;
    for (int r = 0; r < nh * n; r++) sum += S->akl_part[r];
    return sum;
}

/* The attention observer: the fp block's queries and keys kept (mode 1), or
 * a quantized run's maps against them (mode 2), chunk S->akl_chunk. */
static void observe_attn(void *user, int layer, const float *q, const float *k, int n) {
    search *S = user;
    if (layer != S->layer || n != S->chunk || !S->akl_mode) return;
    const lb_hparams *hp = &S->m->hp;
    const size_t qn = (size_t)n * hp->n_head * hp->head_dim, kn = (size_t)n * hp->n_head_kv * hp->head_dim;
    float *qf = S->qfp + (size_t)S->akl_chunk * qn, *kf = S->kfp + (size_t)S->akl_chunk * kn;
    if (S->akl_mode == 1) {
        memcpy(qf, q, qn * sizeof *qf);
        memcpy(kf, k, kn * sizeof *kf);
    } else {
        S->akl_sum += akl_chunk(S, q, k, qf, kf, n);
    }
}

/* The layer's matrices as floats (F32, F16, BF16 only: the fp reference). */
static lb_status load_layer(search *S, int il) {
    lb_layer *l = &S->m->layers[il];
    for (int i = 0; i < N_MAT; i++) {
        const lb_matrix *w = mat_of(l, i);
        const lb_type_traits *t = lb_traits(w->type);
        if (!w->data || (w->type != LB_TYPE_F32 && w->type != LB_TYPE_F16 && w->type != LB_TYPE_BF16) || !t)
            return lb_fail(LB_ERR_UNSUPPORTED, "ABQ search: blk.%d.%s is %s; it needs an F32, F16 or BF16 model", il,
                           mat_names[i], w->data && t ? t->name : "absent");
        if (w->K % LB_ABQ_G)
            return lb_fail(LB_ERR_UNSUPPORTED, "ABQ search: blk.%d.%s has rows of %lld, not a multiple of %d", il,
                           mat_names[i], (long long)w->K, LB_ABQ_G);
        for (int64_t r = 0; r < w->N; r++)
            t->to_float((const char *)w->data + (size_t)r * w->row_size, S->wf[i] + (size_t)r * w->K, w->K);
    }
    if (!l->attn_norm || !l->ffn_norm) return lb_fail(LB_ERR_UNSUPPORTED, "ABQ search: blk.%d has no attn_norm or ffn_norm", il);
    return LB_OK;
}

/* attn_v's output r (KV head r / head_dim) feeds attn_output's columns of
 * every query head of its group: their shared scale sits at the group's
 * first head's column */
static int64_t vo_col(const lb_hparams *hp, int64_t r) {
    const int hd = hp->head_dim, grp = hp->n_head / hp->n_head_kv;
    return (r / hd) * grp * hd + r % hd;
}

/* The vo group's balance vector (smooth_vo): attn_v's rows carry 1/s,
 * attn_output's columns take s; the query heads that share a KV head share
 * s, so rms and max|W| are pooled over them (GQA) and the group's scale
 * written to each of their columns. */
static void scales_vo(search *S, float alpha) {
    const lb_hparams *hp = &S->m->hp;
    const int hd = hp->head_dim, grp = hp->n_head / hp->n_head_kv;
    const int64_t kv = (int64_t)hp->n_head_kv * hd, K = S->kin[G_O];
    const lb_matrix *w = &S->orig.wo;
    float *s = S->s[G_O], *ms = S->s_pool, *mw = S->s_pool + kv;
    for (int64_t r = 0; r < kv; r++) {
        double sum = 0.0;
        float mx = 0.0f;
        for (int h = 0; h < grp; h++) {
            const int64_t j = vo_col(hp, r) + (int64_t)h * hd;
            sum += S->ms[G_O][j];
            for (int64_t n = 0; n < w->N; n++) mx = fmaxf(mx, fabsf(S->wf[M_O][n * K + j]));
        }
        ms[r] = (float)(sum / grp), mw[r] = mx;
    }
    lb_smooth_scales(ms, mw, kv, alpha);
    for (int64_t r = 0; r < kv; r++)
        for (int h = 0; h < grp; h++) s[vo_col(hp, r) + (int64_t)h * hd] = mw[r];
}

/* The balance vectors of smoothing alpha into S->s (all 1 for alpha < 0;
 * attn_output's input only with smooth_vo). */
static void scales(search *S, float alpha) {
    const lb_layer *o = &S->orig;
    const int d = S->d;
    const int64_t kg[3] = {d, d, S->m->hp.n_ff};
    static const int first[3] = {M_Q, M_GATE, M_DOWN}, last[3] = {M_V, M_UP, M_DOWN};
    for (int g = 0; g < 3; g++) {
        if (alpha < 0.0f) { /* no smoothing: s = 1 */
            for (int64_t j = 0; j < kg[g]; j++) S->s[g][j] = 1.0f;
            continue;
        }
        memset(S->s[g], 0, (size_t)kg[g] * sizeof(float)); /* max |W_j| over the group's rows */
        for (int i = first[g]; i <= last[g]; i++) {
            const lb_matrix *w = mat_of((lb_layer *)o, i);
            for (int64_t r = 0; r < w->N; r++)
                for (int64_t j = 0; j < w->K; j++) {
                    const float a = fabsf(S->wf[i][r * w->K + j]);
                    if (a > S->s[g][j]) S->s[g][j] = a;
                }
        }
        lb_smooth_scales(S->ms[g], S->s[g], kg[g], alpha);
    }
    if (alpha >= 0.0f && S->p.smooth_vo) scales_vo(S, alpha);
    else for (int64_t j = 0; j < S->kin[G_O]; j++) S->s[G_O][j] = 1.0f;
}

/* Matrix i of the current layer into dst (its ABQ rows), smoothed by S->s
 * and clipped under cap clip, importance its input's mean squares; plus
 * gamma a b^T (eq. (3)) where a is not NULL. */
static void quantize_mat(search *S, int i, float clip, void *dst, const float *a, const float *b, float gamma) {
    const lb_matrix *w = mat_of(&S->orig, i);
    const int64_t K = w->K, N = w->N;
    const int g = mat_input[i];
    const float *sc = S->s[g];
    for (int64_t j = 0; j < K; j++) S->imp[j] = S->ms[g][j] / (sc[j] * sc[j]);
    for (int64_t r = 0; r < N; r++) {
        /* ffn_up carries ffn_down's 1/s, attn_v attn_output's */
        const float rs = i == M_UP ? 1.0f / S->s[G_DOWN][r] : i == M_V ? 1.0f / S->s[G_O][vo_col(&S->m->hp, r)] : 1.0f;
        const float ar = a ? gamma * a[r] : 0.0f;
        for (int64_t j = 0; j < K; j++) S->wtmp[r * K + j] = S->wf[i][r * K + j] * sc[j] * rs + (a ? ar * b[j] : 0.0f);
    }
    const size_t rb = lb_row_size(S->p.type, K);
#pragma omp parallel for schedule(static) num_threads(S->c->n_threads)
    for (int64_t r = 0; r < N; r++)
        lb_abq_quantize_row_clip(S->p.type, S->wtmp + r * K, (char *)dst + (size_t)r * rb, K, S->imp, clip);
}

/* Candidate (alpha, clip) of the current layer into S->cur: the balance
 * vectors folded exactly as quantize_smooth.c folds them, then every matrix
 * quantized with its input's mean squares as importance. */
static lb_status build(search *S, float alpha, float clip) {
    const lb_layer *o = &S->orig;
    const int d = S->d, type = S->p.type;
    scales(S, alpha);
    cand *c = &S->cur;
    if (!c->attn_norm) c->attn_norm = lb_malloc_aligned((size_t)d * sizeof(float));
    if (!c->ffn_norm) c->ffn_norm = lb_malloc_aligned((size_t)d * sizeof(float));
    if (!c->attn_norm || !c->ffn_norm) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int j = 0; j < d; j++) c->attn_norm[j] = o->attn_norm[j] / S->s[G_ATTN][j];
    for (int j = 0; j < d; j++) c->ffn_norm[j] = o->ffn_norm[j] / S->s[G_FFN][j];
    if (S->p.smooth_vo && o->bv) {
        const int64_t kv = (int64_t)S->m->hp.n_head_kv * S->m->hp.head_dim;
        if (!c->bv && !(c->bv = lb_malloc_aligned((size_t)kv * sizeof(float)))) return lb_fail(LB_ERR_NOMEM, "out of memory");
        for (int64_t r = 0; r < kv; r++) c->bv[r] = o->bv[r] / S->s[G_O][vo_col(&S->m->hp, r)];
    }
    for (int i = 0; i < N_MAT; i++) {
        const lb_matrix *w = mat_of((lb_layer *)o, i);
        const size_t bytes = lb_row_size(type, w->K) * (size_t)w->N;
        if (c->bytes[i] != bytes) {
            lb_free_aligned(c->w[i]);
            if (!(c->w[i] = lb_malloc_aligned(bytes))) return lb_fail(LB_ERR_NOMEM, "out of memory");
            c->bytes[i] = bytes;
        }
        quantize_mat(S, i, clip, c->w[i], NULL, NULL, 0.0f);
    }
    return LB_OK;
}

/* ffn_down's input bits unless the search raises them */
static int base_down(const lb_abq_search_params *p) { return p->act_bits_down ? p->act_bits_down : p->act_bits; }

/* Layer il of the model takes candidate c, ffn_down's input at down bits. */
static void apply(search *S, int il, const cand *c, int down) {
    lb_layer *l = &S->m->layers[il];
    for (int i = 0; i < N_MAT; i++) {
        lb_matrix *w = mat_of(l, i);
        const int bits = i == M_DOWN ? down : S->p.act_bits;
        *w = (lb_matrix){S->p.type, w->K, w->N, lb_row_size(S->p.type, w->K), c->w[i], bits};
    }
    l->attn_norm = c->attn_norm;
    l->ffn_norm = c->ffn_norm;
    if (c->bv) l->bv = c->bv;
}

static double cos_loss(const float *a, const float *b, int d) {
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int j = 0; j < d; j++) ab += (double)a[j] * b[j], aa += (double)a[j] * a[j], bb += (double)b[j] * b[j];
    if (aa == 0.0 || bb == 0.0) return aa == bb ? 0.0 : 1.0;
    return 1.0 - ab / sqrt(aa * bb);
}

/* Eq. (2) for the layer as it now stands in the model: Y1 = layer(X~) into
 * S->y1, Y2 = layer(Xfp), both against S->yfp; mean over tokens. With
 * akl_weight, plus that times eq. (4) of Y1's run (mean over heads and
 * queries) into *akl. */
static lb_status objective(search *S, int il, double *obj, double *akl) {
    const size_t n = (size_t)S->chunk * S->d;
    double sum = 0.0;
    S->akl_sum = 0.0;
    for (int ch = 0; ch < S->n_chunks; ch++) {
        float *y1 = S->y1 + ch * n, *y2 = S->y2;
        memcpy(y1, S->xq + ch * n, n * sizeof *y1);
        memcpy(y2, S->xfp + ch * n, n * sizeof *y2);
        S->akl_mode = S->p.akl_weight > 0.0f ? 2 : 0, S->akl_chunk = ch;
        lb_status st = lb_eval_layers(S->c, y1, S->chunk, il, il + 1);
        S->akl_mode = 0;
        if (st == LB_OK) st = lb_eval_layers(S->c, y2, S->chunk, il, il + 1);
        if (st != LB_OK) return st;
        const float *yf = S->yfp + ch * n;
        for (int t = 0; t < S->chunk; t++)
            sum += cos_loss(y1 + (size_t)t * S->d, yf + (size_t)t * S->d, S->d) +
                   cos_loss(y2 + (size_t)t * S->d, yf + (size_t)t * S->d, S->d);
    }
    *obj = sum / ((double)S->n_chunks * S->chunk);
    *akl = S->akl_sum / ((double)S->n_chunks * S->chunk * S->m->hp.n_head);
    if (S->p.akl_weight > 0.0f) *obj += (double)S->p.akl_weight * *akl;
    return LB_OK;
}

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)

/* Eq. (3) on the chosen block (now in the model at ffn_down's chosen bits):
 * ffn_down's inputs when the block runs on X~ and on Xfp (eq. (2)'s two
 * terms), its output error in both against the fp block on Xfp, one rank-1
 * fit to the two stacked, then ffn_down requantized as W + gamma a b^T for
 * gamma 1, 0.5 and 0.25; the one of least objective, where that is strictly
 * below *best, is kept in S->best. */
static lb_status dc_try(search *S, int il, lb_abq_search_layer *res, double *best) {
    lb_layer *l = &S->m->layers[il];
    const int64_t T = (int64_t)S->n_chunks * S->chunk, K = l->w_down.K, d = S->d;
    const size_t n = (size_t)S->chunk * d;
    lb_status st = LB_OK;
    res->obj_dc = NAN;
    S->hq_rows = 0;
    S->c->on_matmul = observe_down, S->c->on_matmul_user = S;
    for (int pass = 0; pass < 2; pass++)
        for (int ch = 0; ch < S->n_chunks && st == LB_OK; ch++) {
            memcpy(S->y2, (pass ? S->xfp : S->xq) + ch * n, n * sizeof *S->y2);
            st = lb_eval_layers(S->c, S->y2, S->chunk, il, il + 1);
        }
    S->c->on_matmul = NULL, S->c->on_matmul_user = NULL;
    if (st != LB_OK) return st;
    if (S->hq_rows != 2 * T || S->rows[G_DOWN] != T)
        return lb_fail(LB_ERR_SHAPE, "ABQ search: blk.%d.ffn_down saw %lld and %lld tokens, not %lld", il,
                       (long long)S->hq_rows, (long long)S->rows[G_DOWN], (long long)T);
    /* E = fp block's ffn_down output (fp weights on the fp inputs) minus the quantized one's */
    for (int ch = 0; ch < S->n_chunks; ch++) {
        const size_t h0 = (size_t)ch * S->chunk * K, y0 = (size_t)ch * S->chunk * d;
        lb_matmul(&S->orig.w_down, S->hfp + h0, S->chunk, S->dfp + y0, (size_t)d, S->c->act_scratch, S->c->n_threads);
        for (int pass = 0; pass < 2; pass++)
            lb_matmul(&l->w_down, S->hq + pass * T * K + h0, S->chunk, S->err + pass * T * d + y0, (size_t)d,
                      S->c->act_scratch, S->c->n_threads);
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < (size_t)T * d; i++) S->err[pass * T * d + i] = S->dfp[i] - S->err[pass * T * d + i];
    lb_abq_dc_fit_info fit;
    const double ridge = S->p.dc_ridge > 0.0f ? S->p.dc_ridge : LB_ABQ_DC_RIDGE;
    if (lb_abq_dc_fit(S->hq, S->err, 2 * T, K, d, ridge, S->c->n_threads, S->dc_a, S->dc_b, &fit))
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    res->dc_err0 = fit.err0, res->dc_err1 = fit.err1;
    if (!(fit.err1 < fit.err0)) return LB_OK; /* nothing to correct */
    const size_t bytes = lb_row_size(S->p.type, K) * (size_t)l->w_down.N;
    if (S->dcw_bytes != bytes) {
        lb_free_aligned(S->dcw);
        if (!(S->dcw = lb_malloc_aligned(bytes))) return lb_fail(LB_ERR_NOMEM, "out of memory");
        S->dcw_bytes = bytes;
    }
    scales(S, res->alpha);
    static const float gammas[] = {1.0f, 0.5f, 0.25f};
    for (size_t gi = 0; gi < sizeof gammas / sizeof gammas[0]; gi++) {
        double obj = 0.0, akl = 0.0;
        quantize_mat(S, M_DOWN, res->clip, S->dcw, S->dc_a, S->dc_b, gammas[gi]);
        l->w_down.data = S->dcw;
        st = objective(S, il, &obj, &akl);
        l->w_down.data = S->best.w[M_DOWN];
        if (st != LB_OK) return st;
        if (isnan(res->obj_dc) || obj < res->obj_dc) res->obj_dc = obj;
        if (obj < *best) {
            *best = obj, res->akl_best = akl, res->dc_gamma = gammas[gi];
            SWAP(void *, S->dcw, S->best.w[M_DOWN]);
            SWAP(float *, S->y1, S->y1best);
        }
    }
    l->w_down.data = S->best.w[M_DOWN];
    return LB_OK;
}

static lb_status search_layer(search *S, int il, lb_abq_search_layer *res) {
    const size_t n = (size_t)S->chunk * S->d;
    S->layer = il;
    S->orig = S->m->layers[il];
    lb_status st = load_layer(S, il);
    if (st != LB_OK) return st;
    /* the full-precision block on the full-precision input, its inputs' mean squares on the way */
    for (int g = 0; g < N_IN; g++) memset(S->sum2[g], 0, (size_t)S->kin[g] * sizeof(double)), S->rows[g] = 0;
    S->c->on_matmul = observe, S->c->on_matmul_user = S;
    memcpy(S->yfp, S->xfp, S->stream * sizeof(float));
    for (int ch = 0; ch < S->n_chunks && st == LB_OK; ch++) {
        S->akl_mode = S->p.akl_weight > 0.0f, S->akl_chunk = ch; /* keep the fp queries and keys */
        st = lb_eval_layers(S->c, S->yfp + ch * n, S->chunk, il, il + 1);
    }
    S->akl_mode = 0;
    S->c->on_matmul = NULL, S->c->on_matmul_user = NULL;
    if (st != LB_OK) return st;
    for (int g = 0; g < N_IN; g++)
        for (int64_t j = 0; j < S->kin[g]; j++) S->ms[g][j] = S->rows[g] ? (float)(S->sum2[g][j] / (double)S->rows[g]) : 0.0f;
    /* the grid, alpha-major; the first pair is the default, and only a
     * strictly lower objective replaces the best so far */
    double best = INFINITY;
    for (int a = 0; a < S->p.n_alpha; a++)
        for (int k = 0; k < S->p.n_clip; k++) {
            double obj = 0.0, akl = 0.0;
            if ((st = build(S, S->p.alphas[a], S->p.clips[k])) != LB_OK) return st;
            apply(S, il, &S->cur, base_down(&S->p));
            if ((st = objective(S, il, &obj, &akl)) != LB_OK) return st;
            res->grid[a * S->p.n_clip + k] = obj;
            if (a == 0 && k == 0) res->obj_default = obj, res->akl_default = akl;
            if (obj < best) {
                best = obj, res->akl_best = akl;
                res->alpha = S->p.alphas[a], res->clip = S->p.clips[k];
                SWAP(cand, S->cur, S->best);
                SWAP(float *, S->y1, S->y1best);
            }
        }
    res->obj_best = res->obj_grid = best;
    res->down_bits = base_down(&S->p);
    res->obj_down_hi = NAN;
    if (S->p.down_bits_hi > res->down_bits) {
        /* the same weights, ffn_down's input at more bits: kept only for a
         * gain worth its bytes of activations */
        double obj = 0.0, akl = 0.0;
        apply(S, il, &S->best, S->p.down_bits_hi);
        if ((st = objective(S, il, &obj, &akl)) != LB_OK) return st;
        res->obj_down_hi = obj;
        if (obj <= best * (1.0 - (double)S->p.down_gain)) {
            res->down_bits = S->p.down_bits_hi, res->obj_best = obj, res->akl_best = akl;
            SWAP(float *, S->y1, S->y1best);
        }
    }
    res->obj_dc = NAN;
    if (S->p.dc) {
        apply(S, il, &S->best, res->down_bits);
        double b = res->obj_best;
        if ((st = dc_try(S, il, res, &b)) != LB_OK) return st;
        res->obj_best = b;
    }
    /* the choice stays in the model (which frees it); the next layer reads
     * X~ = this layer's output on X~, and Xfp its fp output */
    apply(S, il, &S->best, res->down_bits);
    int owned = 1;
    for (int i = 0; i < N_MAT; i++) owned &= lb_model_own(S->m, S->best.w[i]) != NULL;
    owned &= lb_model_own(S->m, S->best.attn_norm) != NULL;
    owned &= lb_model_own(S->m, S->best.ffn_norm) != NULL;
    if (S->best.bv) owned &= lb_model_own(S->m, S->best.bv) != NULL;
    memset(&S->best, 0, sizeof S->best); /* (a buffer the model could not take leaks: it is in use) */
    if (!owned) return lb_fail(LB_ERR_NOMEM, "out of memory");
    SWAP(float *, S->xq, S->y1best);
    SWAP(float *, S->xfp, S->yfp);
    return LB_OK;
}

static void search_free(search *S) {
    float *f[] = {S->xfp, S->xq, S->yfp, S->y1, S->y1best, S->y2, S->wtmp, S->imp, S->s[0], S->s[1], S->s[2], S->s[3], S->s_pool,
                  S->qfp, S->kfp, S->score_rows, S->hfp, S->hq, S->dfp, S->err, S->dc_a, S->dc_b};
    lb_free_aligned(S->dcw);
    free(S->akl_part);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) free(f[i]);
    for (int i = 0; i < N_MAT; i++) free(S->wf[i]);
    for (int g = 0; g < N_IN; g++) free(S->sum2[g]), free(S->ms[g]);
    cand_free(&S->cur);
    cand_free(&S->best);
    lb_context_free(S->c);
}

/* The default grid: none and SmoothQuant's range of alpha; clip caps down to 0.85. */
static void default_grid(lb_abq_search_params *p) {
    static const float a[] = {-1.0f, 0.25f, 0.5f, 0.75f}, k[] = {1.0f, 0.95f, 0.9f, 0.85f};
    if (p->n_alpha <= 0) p->n_alpha = 4, memcpy(p->alphas, a, sizeof a);
    if (p->n_clip <= 0) p->n_clip = 4, memcpy(p->clips, k, sizeof k);
}

static lb_status check(const lb_model *m, const lb_abq_search_params *p, int n_chunks, int chunk) {
    if (!lb_abq_bits(p->type)) return lb_fail(LB_ERR_ARG, "ABQ search: %s is no ABQ type", lb_type_name(p->type) ? lb_type_name(p->type) : "type");
    if (p->act_bits < 0 || p->act_bits > 8 || p->act_bits_down < 0 || p->act_bits_down > 8)
        return lb_fail(LB_ERR_ARG, "ABQ search: activation bits %d, %d (1..8)", p->act_bits, p->act_bits_down);
    if (p->down_bits_hi < 0 || p->down_bits_hi > 8 || (p->down_bits_hi && p->down_bits_hi <= base_down(p)))
        return lb_fail(LB_ERR_ARG, "ABQ search: ffn_down's raised bits %d must be above its %d (and at most 8)",
                       p->down_bits_hi, base_down(p));
    if (!(p->akl_weight >= 0.0f && p->akl_weight <= 100.0f))
        return lb_fail(LB_ERR_ARG, "ABQ search: attention-map weight %g (0..100)", (double)p->akl_weight);
    if (!(p->dc_ridge >= 0.0f && p->dc_ridge <= 1e6f))
        return lb_fail(LB_ERR_ARG, "ABQ search: the correction's ridge %g (> 0; 0: the default)", (double)p->dc_ridge);
    if (!(p->down_gain >= 0.0f && p->down_gain < 1.0f))
        return lb_fail(LB_ERR_ARG, "ABQ search: ffn_down's gain %g (0..1: a share of eq. (2))", (double)p->down_gain);
    if (n_chunks <= 0 || chunk < 2) return lb_fail(LB_ERR_ARG, "ABQ search: %d chunks of %d tokens", n_chunks, chunk);
    if (p->n_alpha > LB_ABQ_SEARCH_MAX_GRID || p->n_clip > LB_ABQ_SEARCH_MAX_GRID)
        return lb_fail(LB_ERR_ARG, "ABQ search: a grid of at most %d values per axis", LB_ABQ_SEARCH_MAX_GRID);
    for (int i = 0; i < p->n_alpha; i++)
        if (!(p->alphas[i] <= 1.0f)) return lb_fail(LB_ERR_ARG, "ABQ search: alpha %g (< 0: none, else 0..1)", (double)p->alphas[i]);
    for (int i = 0; i < p->n_clip; i++)
        if (!(p->clips[i] > 0.5f && p->clips[i] <= 1.0f)) return lb_fail(LB_ERR_ARG, "ABQ search: clip %g (0.55..1)", (double)p->clips[i]);
    for (int il = 0; il < m->hp.n_layer; il++)
        if (!m->layers[il].w_gate.data)
            return lb_fail(LB_ERR_UNSUPPORTED, "ABQ search: blk.%d has no ffn_gate (a gated FFN is needed)", il);
    return LB_OK;
}

lb_status lb_abq_search_run(lb_model *m, const int32_t *tokens, int n_chunks, int chunk, const lb_abq_search_params *params,
                            lb_abq_search **out) {
    *out = NULL;
    search S;
    memset(&S, 0, sizeof S);
    S.p = *params;
    default_grid(&S.p);
    if (!S.p.act_bits) S.p.act_bits = LB_ABQ_MAX_BITS;
    if (m->hp.n_expert)
        return lb_fail(LB_ERR_UNSUPPORTED, "the ABQ search runs dense FFNs only: %s has %d experts a layer",
                       m->hp.arch_name, m->hp.n_expert);
    lb_status st = check(m, &S.p, n_chunks, chunk);
    if (st != LB_OK) return st;
    const lb_hparams *hp = &m->hp;
    S.m = m, S.n_chunks = n_chunks, S.chunk = chunk, S.d = hp->n_embd;
    S.stream = (size_t)n_chunks * chunk * S.d;
    const lb_context_params cp = {.n_ctx = chunk, .n_batch = chunk, .n_threads = S.p.n_threads, .n_seq = 1};
    if ((st = lb_context_new(m, &cp, &S.c)) != LB_OK) return st;
    lb_abq_search *res = calloc(1, sizeof *res);
    if (res) res->layers = calloc((size_t)hp->n_layer, sizeof *res->layers);
    /* the ABQ matrices need more activation scratch than the F32 ones the context was sized for */
    size_t scratch = S.c->act_scratch_size;
    int64_t kmax = 0;
    for (int il = 0; il < hp->n_layer; il++)
        for (int i = 0; i < N_MAT; i++) {
            lb_matrix w = *mat_of(&m->layers[il], i);
            w.type = S.p.type;
            scratch = LB_MAX(scratch, lb_matmul_scratch_size(&w, chunk));
            kmax = LB_MAX(kmax, w.K * w.N);
        }
    if (scratch > S.c->act_scratch_size) {
        lb_free_aligned(S.c->act_scratch);
        S.c->act_scratch = lb_malloc_aligned(scratch);
        S.c->act_scratch_size = scratch;
    }
    const int64_t kin[N_IN] = {S.d, S.d, hp->n_ff, (int64_t)hp->n_head * hp->head_dim};
    int oom = !res || !res->layers || !S.c->act_scratch;
    float **streams[] = {&S.xfp, &S.xq, &S.yfp, &S.y1, &S.y1best};
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++) oom |= !(*streams[i] = malloc(S.stream * sizeof(float)));
    oom |= !(S.y2 = malloc((size_t)chunk * S.d * sizeof(float)));
    oom |= !(S.wtmp = malloc((size_t)kmax * sizeof(float)));
    oom |= !(S.s_pool = malloc((size_t)2 * hp->n_head_kv * hp->head_dim * sizeof(float)));
    oom |= !(S.imp = malloc((size_t)LB_MAX(S.d, LB_MAX(hp->n_ff, kin[G_O])) * sizeof(float)));
    for (int g = 0; g < N_IN; g++) {
        S.kin[g] = kin[g];
        oom |= !(S.sum2[g] = malloc((size_t)kin[g] * sizeof(double))) || !(S.ms[g] = malloc((size_t)kin[g] * sizeof(float)));
        oom |= !(S.s[g] = malloc((size_t)kin[g] * sizeof(float)));
    }
    for (int i = 0; i < N_MAT; i++) oom |= !(S.wf[i] = malloc((size_t)kmax * sizeof(float)));
    if (S.p.akl_weight > 0.0f) {
        const size_t per = (size_t)chunk * hp->head_dim;
        oom |= !(S.qfp = malloc((size_t)n_chunks * per * hp->n_head * sizeof(float)));
        oom |= !(S.kfp = malloc((size_t)n_chunks * per * hp->n_head_kv * sizeof(float)));
        oom |= !(S.akl_part = malloc((size_t)chunk * hp->n_head * sizeof(double)));
        /* a row pair per thread of akl_chunk's region (num_threads: the context's) */
        oom |= !(S.score_rows = malloc((size_t)S.c->n_threads * 2 * chunk * sizeof(float)));
        S.c->on_attention = observe_attn, S.c->on_attention_user = &S;
    }
    if (S.p.dc) {
        const size_t T = (size_t)n_chunks * chunk;
        oom |= !(S.hfp = malloc(T * hp->n_ff * sizeof(float))) || !(S.hq = malloc(2 * T * hp->n_ff * sizeof(float)));
        oom |= !(S.dfp = malloc(S.stream * sizeof(float))) || !(S.err = malloc(2 * S.stream * sizeof(float)));
        oom |= !(S.dc_a = malloc((size_t)S.d * sizeof(float))) || !(S.dc_b = malloc((size_t)hp->n_ff * sizeof(float)));
    }
    if (oom) st = lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int il = 0; il < hp->n_layer && st == LB_OK; il++)
        for (int i = 0; i < N_MAT; i++) {
            const lb_matrix *w = mat_of(&m->layers[il], i);
            if (w->K != kin[mat_input[i]]) st = lb_fail(LB_ERR_UNSUPPORTED, "ABQ search: blk.%d.%s: %lld inputs, expected %lld", il,
                                                        mat_names[i], (long long)w->K, (long long)kin[mat_input[i]]);
        }
    for (int i = 0; i < n_chunks * chunk && st == LB_OK; i++)
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab)
            st = lb_fail(LB_ERR_ARG, "ABQ search: token id %d is outside the vocabulary (0..%d)", tokens[i], hp->n_vocab - 1);
    if (st == LB_OK) {
        for (int ch = 0; ch < n_chunks; ch++) lb_embed_tokens(m, tokens + (size_t)ch * chunk, chunk, S.xfp + (size_t)ch * chunk * S.d);
        memcpy(S.xq, S.xfp, S.stream * sizeof(float));
    }
    for (int il = 0; il < hp->n_layer && st == LB_OK; il++) {
        lb_abq_search_layer *r = &res->layers[il];
        st = search_layer(&S, il, r);
        if (st != LB_OK) m->layers[il] = S.orig; /* not a candidate about to be freed */
        if (st == LB_OK && S.p.progress)
            S.p.progress(S.p.user, il, hp->n_layer, r);
    }
    search_free(&S);
    if (st != LB_OK) {
        lb_abq_search_free(res);
        return st;
    }
    res->n_layer = hp->n_layer, res->n_alpha = S.p.n_alpha, res->n_clip = S.p.n_clip, res->model = m;
    res->smooth_vo = S.p.smooth_vo;
    memcpy(res->alphas, S.p.alphas, sizeof res->alphas);
    memcpy(res->clips, S.p.clips, sizeof res->clips);
    *out = res;
    return LB_OK;
}

void lb_abq_search_free(lb_abq_search *s) {
    if (!s) return;
    free(s->layers);
    free(s);
}

int lb_abq_search_tensor(const lb_abq_search *s, const char *name, size_t len, int *type, const void **data,
                         size_t *bytes) {
    char full[128], part[64];
    int L = -1, off = 0;
    if (!s || len >= sizeof full) return 0;
    memcpy(full, name, len);
    full[len] = 0;
    if (sscanf(full, "blk.%d.%n", &L, &off) != 1 || off == 0 || L < 0 || L >= s->n_layer) return 0;
    lb_layer *l = &s->model->layers[L];
    for (int i = 0; i < N_MAT; i++) {
        snprintf(part, sizeof part, "%s.weight", mat_names[i]);
        if (strcmp(full + off, part)) continue;
        const lb_matrix *w = mat_of(l, i);
        *type = w->type, *data = w->data, *bytes = w->row_size * (size_t)w->N;
        return 1;
    }
    if (s->smooth_vo && l->bv && !strcmp(full + off, "attn_v.bias")) { /* over the vo group's 1/s */
        *type = LB_TYPE_F32, *data = l->bv, *bytes = (size_t)s->model->hp.n_head_kv * s->model->hp.head_dim * sizeof(float);
        return 1;
    }
    const float *v = !strcmp(full + off, "attn_norm.weight") ? l->attn_norm
                   : !strcmp(full + off, "ffn_norm.weight")  ? l->ffn_norm : NULL;
    if (!v) return 0;
    *type = LB_TYPE_F32, *data = v, *bytes = (size_t)s->model->hp.n_embd * sizeof(float);
    return 1;
}
