/* Importance matrices (model/imatrix.h): loading for the quantizer and
 * collecting through the forward pass's matmul observer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gguf/gguf.h"
#include "model/imatrix.h"

/* ---- loading ---- */

typedef struct {
    char *name;    /* matrix name (without .in_sum2) */
    int64_t K;
    int n_mat;     /* 1, or a MoE tensor's experts */
    float *mean;   /* in_sum2 / counts: n_mat rows of K */
} im_entry;

struct lb_imatrix {
    im_entry *e;
    int n;
};

static int has_suffix(const char *s, size_t len, const char *suf, size_t *stem) {
    const size_t n = strlen(suf);
    if (len < n || memcmp(s + len - n, suf, n)) return 0;
    *stem = len - n;
    return 1;
}

lb_status lb_imatrix_load(const char *path, lb_imatrix **out) {
    *out = NULL;
    gguf_file *g = NULL;
    lb_status s = gguf_open(path, &g);
    if (s) return lb_fail_prefix(s, "reading imatrix %s", path);
    lb_imatrix *im = calloc(1, sizeof *im);
    const int64_t nt = gguf_n_tensors(g);
    if (!im || !(im->e = calloc((size_t)(nt > 0 ? nt : 1), sizeof *im->e))) {
        free(im);
        gguf_close(g);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    const char *type = gguf_get_str(g, "general.type");
    /* a calibration file (model/calib.h) carries the same per-matrix sums */
    if (type && strcmp(type, "imatrix") && strcmp(type, "calibration"))
        s = lb_fail(LB_ERR_FORMAT, "%s: general.type is '%s', not 'imatrix'", path, type);
    for (int64_t i = 0; i < nt && s == LB_OK; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        size_t stem;
        if (!has_suffix(t->name.ptr, t->name.len, ".in_sum2", &stem)) continue;
        char cname[512];
        snprintf(cname, sizeof cname, "%.*s.counts", (int)LB_MIN(stem, 400), t->name.ptr);
        const gguf_tensor *c = gguf_find_tensor(g, cname);
        if (!c) {
            s = lb_fail(LB_ERR_FORMAT, "%s: %.*s has no matching .counts tensor", path, (int)t->name.len, t->name.ptr);
            break;
        }
        /* [K] and [1], or per expert [K, n] and [1, n] (llama-imatrix's MoE tensors) */
        if (t->type != LB_TYPE_F32 || c->type != LB_TYPE_F32 || t->ne[1] < 1 || t->ne[1] > LB_MAX_EXPERTS ||
            t->ne[2] != 1 || t->ne[3] != 1 || c->ne[0] != 1 || c->ne[1] != t->ne[1] || c->ne[2] != 1 || c->ne[3] != 1) {
            s = lb_fail(LB_ERR_FORMAT, "%s: %.*s is not F32 [K] with an F32 count [1] (or [K, n] and [1, n] for n "
                        "experts)", path, (int)t->name.len, t->name.ptr);
            break;
        }
        im_entry *e = &im->e[im->n];
        e->n_mat = (int)t->ne[1];
        e->name = malloc(stem + 1);
        e->mean = malloc((size_t)t->ne[0] * (size_t)e->n_mat * sizeof *e->mean);
        if (!e->name || !e->mean) {
            free(e->name), free(e->mean);
            s = lb_fail(LB_ERR_NOMEM, "out of memory");
            break;
        }
        memcpy(e->name, t->name.ptr, stem);
        e->name[stem] = 0;
        e->K = t->ne[0];
        const float *sum2 = t->data; /* GGUF data is aligned to general.alignment */
        for (int j = 0; j < e->n_mat; j++) {
            float count;
            memcpy(&count, (const float *)c->data + j, sizeof count);
            float *mean = e->mean + (size_t)j * (size_t)e->K;
            for (int64_t k = 0; k < e->K; k++) {
                float v;
                memcpy(&v, sum2 + (size_t)j * (size_t)e->K + k, sizeof v);
                mean[k] = count > 0.0f && isfinite(v) && v >= 0.0f ? v / count : 0.0f;
            }
            /* an expert the text never reached: every column alike */
            if (!(count > 0.0f) && e->n_mat > 1)
                for (int64_t k = 0; k < e->K; k++) mean[k] = 1.0f;
        }
        im->n++;
    }
    gguf_close(g);
    if (s == LB_OK && im->n == 0) s = lb_fail(LB_ERR_FORMAT, "%s holds no .in_sum2 tensors: not an imatrix", path);
    if (s) {
        lb_imatrix_free(im);
        return s;
    }
    *out = im;
    return LB_OK;
}

void lb_imatrix_free(lb_imatrix *im) {
    if (!im) return;
    for (int i = 0; i < im->n; i++) free(im->e[i].name), free(im->e[i].mean);
    free(im->e);
    free(im);
}

int lb_imatrix_count(const lb_imatrix *im) { return im ? im->n : 0; }

const float *lb_imatrix_get_mats(const lb_imatrix *im, const char *name, size_t len, int64_t K, int *n_mat) {
    *n_mat = 0;
    if (!im) return NULL;
    for (int i = 0; i < im->n; i++)
        if (strlen(im->e[i].name) == len && !memcmp(im->e[i].name, name, len)) {
            if (im->e[i].K != K) return NULL;
            *n_mat = im->e[i].n_mat;
            return im->e[i].mean;
        }
    return NULL;
}

const float *lb_imatrix_get(const lb_imatrix *im, const char *name, size_t len, int64_t K) {
    int n_mat;
    const float *m = lb_imatrix_get_mats(im, name, len, K, &n_mat);
    return n_mat == 1 ? m : NULL;
}

/* ---- collecting ---- */

typedef struct {
    char name[96];
    const lb_matrix *w; /* n_mat matrices in a row (a MoE layer's experts of one kind) */
    int n_mat;
    double *sum2;       /* n_mat rows of K */
    int64_t *rows;      /* n_mat */
} col_entry;

struct lb_imatrix_collector {
    lb_context *ctx;
    col_entry *e;
    int n;
};

static void observe(void *user, const lb_matrix *w, const float *x, int n) {
    lb_imatrix_collector *col = user;
    for (int i = 0; i < col->n; i++) {
        col_entry *e = &col->e[i];
        if (w < e->w || w >= e->w + e->n_mat) continue;
        const size_t j = (size_t)(w - e->w);
        double *sum2 = e->sum2 + j * (size_t)w->K;
        for (int r = 0; r < n; r++) {
            const float *xr = x + (size_t)r * w->K;
            for (int64_t k = 0; k < w->K; k++) sum2[k] += (double)xr[k] * xr[k];
        }
        e->rows[j] += n;
        return;
    }
}

static lb_status add_entry(lb_imatrix_collector *col, const lb_matrix *w, int n_mat, const char *name) {
    if (!w || !w->data) return LB_OK;
    col_entry *e = &col->e[col->n];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->w = w;
    e->n_mat = n_mat;
    e->sum2 = calloc((size_t)w->K * (size_t)n_mat, sizeof *e->sum2);
    e->rows = calloc((size_t)n_mat, sizeof *e->rows);
    if (!e->sum2 || !e->rows) return free(e->sum2), free(e->rows), lb_fail(LB_ERR_NOMEM, "out of memory");
    col->n++;
    return LB_OK;
}

lb_status lb_imatrix_collector_new(lb_context *ctx, lb_imatrix_collector **out) {
    *out = NULL;
    const lb_model *m = ctx->model;
    lb_imatrix_collector *col = calloc(1, sizeof *col);
    if (!col || !(col->e = calloc((size_t)m->hp.n_layer * 16 + 1, sizeof *col->e))) {
        free(col);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    col->ctx = ctx;
    lb_status s = LB_OK;
    static const char *const names[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    static const char *const shexp[3] = {"ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"};
    static const char *const mla[3] = {"attn_q_a", "attn_q_b", "attn_kv_a_mqa"};
    for (int il = 0; il < m->hp.n_layer && s == LB_OK; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        const int ds = m->hp.arch == LB_ARCH_DEEPSEEK2;
        for (int i = 0; i < 7 && s == LB_OK; i++) {
            char name[96];
            /* a layer with experts holds its shared ones (qwen2moe, deepseek2, ernie4_5-moe) in the FFN slots */
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, i >= 4 && l->router.data ? shexp[i - 4] : names[i]);
            if (ds && i < 3) { /* deepseek2: q alone (or its low-rank pair), the compressed KV, each head's k_b */
                if (i == 0) s = add_entry(col, ws[0], 1, name);
                const lb_matrix *ms[3] = {&l->wq_a, &l->wq_b, &l->wkv_a};
                snprintf(name, sizeof name, "blk.%d.%s.weight", il, mla[i]);
                if (s == LB_OK) s = add_entry(col, ms[i], 1, name);
                continue;
            }
            /* a tensor holding several matrices (phi3's attn_qkv, and its
             * ffn_up with the gate's rows first) gets the first one's sums,
             * under its own name: the others read the same input */
            const int fused_qkv = i < 3 && m->gguf && !gguf_find_tensor(m->gguf, name);
            const int fused_ffn = (i == 4 || i == 5) && m->hp.arch == LB_ARCH_PHI3;
            if ((fused_qkv && i > 0) || (fused_ffn && i == 5)) continue;
            if (fused_qkv) snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", il);
            if (fused_ffn) snprintf(name, sizeof name, "blk.%d.ffn_up.weight", il);
            s = add_entry(col, ws[i], 1, name);
        }
        /* MoE: one entry per kind, a row of sums per expert, as llama-imatrix writes them */
        static const char *const xnames[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
        const lb_matrix *xs[3] = {l->exp_gate, l->exp_up, l->exp_down};
        for (int i = 0; i < 3 && m->hp.n_expert && l->exp_gate && s == LB_OK; i++) {
            char name[96];
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, xnames[i]);
            s = add_entry(col, xs[i], m->hp.n_expert, name);
        }
        if (l->wk_b && m->gguf && s == LB_OK) { /* llama.cpp's MLA files: per head, a row of sums each */
            char name[96];
            snprintf(name, sizeof name, "blk.%d.attn_k_b.weight", il);
            if (gguf_find_tensor(m->gguf, name)) s = add_entry(col, l->wk_b, m->hp.n_head, name);
            snprintf(name, sizeof name, "blk.%d.attn_v_b.weight", il);
            if (s == LB_OK && gguf_find_tensor(m->gguf, name)) s = add_entry(col, l->wv_b, m->hp.n_head, name);
        }
    }
    /* the output projection reuses the embedding's data when they are tied */
    const int tied = m->gguf && !gguf_find_tensor(m->gguf, "output.weight");
    if (s == LB_OK) s = add_entry(col, &m->output, 1, tied ? "token_embd.weight" : "output.weight");
    if (s) {
        ctx->on_matmul = NULL;
        lb_imatrix_collector_free(col);
        return s;
    }
    ctx->on_matmul = observe;
    ctx->on_matmul_user = col;
    *out = col;
    return LB_OK;
}

lb_status lb_imatrix_collector_write(const lb_imatrix_collector *col, const char *path, int chunks, int chunk_size,
                                     const char *dataset) {
    gguf_writer *w = gguf_writer_new();
    if (!w) return LB_ERR_NOMEM;
    float *buf = NULL;
    size_t total = 0;
    for (int i = 0; i < col->n; i++) total += ((size_t)col->e[i].w->K + 1) * (size_t)col->e[i].n_mat;
    buf = malloc(total * sizeof *buf);
    lb_status s = buf ? LB_OK : lb_fail(LB_ERR_NOMEM, "out of memory");
    if (s == LB_OK) s = gguf_writer_set_str(w, "general.type", "imatrix");
    if (s == LB_OK) s = gguf_writer_set_u32(w, "imatrix.chunk_count", (uint32_t)chunks);
    if (s == LB_OK) s = gguf_writer_set_u32(w, "imatrix.chunk_size", (uint32_t)chunk_size);
    if (s == LB_OK) {
        const char *ds[1] = {dataset ? dataset : ""};
        s = gguf_writer_set_arr_str(w, "imatrix.datasets", ds, 1);
    }
    float *p = buf;
    for (int i = 0; i < col->n && s == LB_OK; i++) {
        const col_entry *e = &col->e[i];
        int64_t seen = 0;
        for (int j = 0; j < e->n_mat; j++) seen += e->rows[j];
        if (seen == 0) continue; /* never multiplied: nothing learned */
        char name[128];
        const int64_t K = e->w->K, ne_sum[2] = {K, e->n_mat}, ne_cnt[2] = {1, e->n_mat};
        const int dims = e->n_mat > 1 ? 2 : 1; /* per expert: [K, n] and [1, n] */
        for (int64_t k = 0; k < K * e->n_mat; k++) p[k] = (float)e->sum2[k];
        snprintf(name, sizeof name, "%s.in_sum2", e->name);
        s = gguf_writer_add_tensor(w, name, LB_TYPE_F32, dims, ne_sum, p);
        p += K * e->n_mat;
        for (int j = 0; j < e->n_mat; j++) p[j] = (float)e->rows[j];
        snprintf(name, sizeof name, "%s.counts", e->name);
        if (s == LB_OK) s = gguf_writer_add_tensor(w, name, LB_TYPE_F32, dims, ne_cnt, p);
        p += e->n_mat;
    }
    if (s == LB_OK) s = gguf_writer_write(w, path, NULL, NULL, NULL, NULL);
    gguf_writer_free(w);
    free(buf);
    return s;
}

void lb_imatrix_collector_free(lb_imatrix_collector *col) {
    if (!col) return;
    if (col->ctx && col->ctx->on_matmul_user == col) {
        col->ctx->on_matmul = NULL;
        col->ctx->on_matmul_user = NULL;
    }
    for (int i = 0; i < col->n; i++) free(col->e[i].sum2), free(col->e[i].rows);
    free(col->e);
    free(col);
}
