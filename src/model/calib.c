/* Calibration Hessians (model/calib.h): collecting through the forward
 * pass's matmul observer, writing, and reading back for GPTQ. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "gguf/gguf.h"
#include "kernels/sgemm.h"
#include "model/calib.h"

/* The four distinct inputs of a layer; the first matrix of each is the one
 * whose multiply is observed (the others read the same rows). */
enum { SLOT_QKV, SLOT_ATTN_OUT, SLOT_GATE_UP, SLOT_DOWN, N_SLOTS };
static const char *const slot_names[N_SLOTS] = {"attn_qkv", "attn_output", "ffn_gate_up", "ffn_down"};

/* Packed upper triangle: row i starts at i*K - i*(i-1)/2. */
static inline size_t tri_at(int64_t K, int64_t i) { return (size_t)(i * K - i * (i - 1) / 2); }
static inline size_t tri_size(int64_t K) { return (size_t)(K * (K + 1) / 2); }

/* Every layer matrix and the input it reads: the reader maps a matrix name to
 * its Hessian, the writer names each slot's imatrix tensors. */
static const struct {
    const char *m;
    int slot;
} matrices[] = {{"attn_q", SLOT_QKV},           {"attn_k", SLOT_QKV},        {"attn_v", SLOT_QKV},
                {"attn_output", SLOT_ATTN_OUT}, {"ffn_gate", SLOT_GATE_UP}, {"ffn_up", SLOT_GATE_UP},
                {"ffn_down", SLOT_DOWN},        {"attn_qkv", SLOT_QKV}}; /* attn_qkv: phi3's fused Q, K, V */
#define N_MATRICES (sizeof matrices / sizeof matrices[0])

int lb_calib_slot_name(const char *name, size_t len, char *out, size_t cap) {
    int layer, used = 0;
    char mid[32];
    char buf[128];
    if (len >= sizeof buf) return 0;
    memcpy(buf, name, len);
    buf[len] = 0;
    if (sscanf(buf, "blk.%d.%31[a-z_].weight%n", &layer, mid, &used) != 2 || (size_t)used != len) return 0;
    for (size_t i = 0; i < N_MATRICES; i++)
        if (!strcmp(mid, matrices[i].m))
            return snprintf(out, cap, "blk.%d.%s.hessian", layer, slot_names[matrices[i].slot]) < (int)cap;
    return 0;
}

/* ---- collecting ---- */

typedef struct {
    int layer, slot;
    const lb_matrix *w;    /* the observed matrix */
    int64_t K;
    double *acc;           /* packed upper triangle of XᵀX */
    int64_t rows;
} slot_acc;

struct lb_calib_collector {
    lb_context *ctx;
    slot_acc *s;
    int n;
    float *tmp;            /* K x K of the widest input: one batch's XᵀX */
    int64_t tmp_k;
    int n_threads;
};

static void observe(void *user, const lb_matrix *w, const float *x, int n) {
    lb_calib_collector *col = user;
    slot_acc *a = NULL;
    for (int i = 0; i < col->n && !a; i++)
        if (col->s[i].w == w) a = &col->s[i];
    if (!a || n <= 0) return;
    const int64_t K = a->K;
    lb_ssyrk_upper_tn(K, n, 1.0f, x, (size_t)K, 0.0f, col->tmp, (size_t)K, col->n_threads);
    double *acc = a->acc;
    const float *t = col->tmp;
#pragma omp parallel for schedule(dynamic, 16) num_threads(col->n_threads)
    for (int64_t i = 0; i < K; i++) {
        double *d = acc + tri_at(K, i) - i; /* d[j], j >= i */
        const float *r = t + (size_t)i * (size_t)K;
        for (int64_t j = i; j < K; j++) d[j] += r[j];
    }
    a->rows += n;
}

lb_status lb_calib_collector_new(lb_context *ctx, lb_calib_collector **out, uint64_t *bytes_out) {
    *out = NULL;
    const lb_model *m = ctx->model;
    lb_calib_collector *col = calloc(1, sizeof *col);
    if (!col || !(col->s = calloc((size_t)m->hp.n_layer * N_SLOTS, sizeof *col->s))) {
        free(col);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    col->ctx = ctx;
    col->n_threads = ctx->n_threads;
    uint64_t bytes = 0;
    lb_status s = LB_OK;
    for (int il = 0; il < m->hp.n_layer && s == LB_OK; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[N_SLOTS] = {&l->wq, &l->wo, &l->w_gate, &l->w_down};
        for (int k = 0; k < N_SLOTS && s == LB_OK; k++) {
            if (!ws[k]->data) continue;
            slot_acc *a = &col->s[col->n];
            a->layer = il, a->slot = k, a->w = ws[k], a->K = ws[k]->K;
            a->acc = calloc(tri_size(a->K), sizeof *a->acc);
            if (!a->acc) {
                s = lb_fail(LB_ERR_NOMEM, "out of memory: the Hessians need %.1f GiB so far",
                            (double)(bytes + tri_size(a->K) * 8) / (1u << 30));
                break;
            }
            bytes += tri_size(a->K) * sizeof *a->acc;
            col->tmp_k = LB_MAX(col->tmp_k, a->K);
            col->n++;
        }
    }
    if (s == LB_OK && !(col->tmp = malloc((size_t)col->tmp_k * (size_t)col->tmp_k * sizeof *col->tmp)))
        s = lb_fail(LB_ERR_NOMEM, "out of memory");
    if (s) {
        lb_calib_collector_free(col);
        return s;
    }
    bytes += (uint64_t)col->tmp_k * (uint64_t)col->tmp_k * sizeof *col->tmp;
    if (bytes_out) *bytes_out = bytes;
    ctx->on_matmul = observe;
    ctx->on_matmul_user = col;
    *out = col;
    return LB_OK;
}

void lb_calib_collector_free(lb_calib_collector *col) {
    if (!col) return;
    if (col->ctx && col->ctx->on_matmul_user == col) {
        col->ctx->on_matmul = NULL;
        col->ctx->on_matmul_user = NULL;
    }
    for (int i = 0; i < col->n; i++) free(col->s[i].acc);
    free(col->s);
    free(col->tmp);
    free(col);
}

/* The writer asks for tensors in order: per slot its Hessian, then the
 * in_sum2 and counts of each matrix that reads that input. */
typedef struct {
    const lb_calib_collector *col;
    int64_t *slot_of;  /* tensor index -> slot */
    char *what;        /* tensor index -> 0 hessian, 1 in_sum2, 2 counts */
} write_ctx;

static lb_status produce(void *user, int64_t index, void *dst, uint64_t nbytes) {
    const write_ctx *w = user;
    const slot_acc *a = &w->col->s[w->slot_of[index]];
    float *out = dst;
    const int64_t K = a->K;
    const double scale = a->rows > 0 ? 2.0 / (double)a->rows : 0.0;
    if (w->what[index] == 0) {
        if (nbytes != tri_size(K) * sizeof *out) return lb_fail(LB_ERR_ARG, "calibration writer: size mismatch");
        const size_t n = tri_size(K);
        for (size_t i = 0; i < n; i++) out[i] = (float)(a->acc[i] * scale);
    } else if (w->what[index] == 1) {
        for (int64_t i = 0; i < K; i++) out[i] = (float)a->acc[tri_at(K, i)];
    } else {
        out[0] = (float)a->rows;
    }
    return LB_OK;
}

lb_status lb_calib_collector_write(const lb_calib_collector *col, const char *path, int chunks, int chunk_size,
                                   const char *dataset, lb_progress_fn progress, void *progress_user) {
    gguf_writer *w = gguf_writer_new();
    const int cap = col->n * (int)(2 * N_MATRICES + 1) + 1;
    write_ctx wc = {col, calloc((size_t)cap, sizeof(int64_t)), calloc((size_t)cap, 1)};
    lb_status s = w && wc.slot_of && wc.what ? LB_OK : lb_fail(LB_ERR_NOMEM, "out of memory");
    int64_t tokens = 0;
    for (int i = 0; i < col->n; i++) tokens = LB_MAX(tokens, col->s[i].rows);
    if (s == LB_OK) s = gguf_writer_set_str(w, "general.type", "calibration");
    if (s == LB_OK) s = gguf_writer_set_u32(w, "lowbit.calib.chunk_count", (uint32_t)chunks);
    if (s == LB_OK) s = gguf_writer_set_u32(w, "lowbit.calib.chunk_size", (uint32_t)chunk_size);
    if (s == LB_OK) s = gguf_writer_set_u64(w, "lowbit.calib.tokens", (uint64_t)tokens);
    if (s == LB_OK) s = gguf_writer_set_str(w, "lowbit.calib.dataset", dataset ? dataset : "");
    if (s == LB_OK)
        s = gguf_writer_set_str(w, "lowbit.calib.hessian_layout",
                                "upper triangle packed by rows; H = 2 X^T X / n over the calibration tokens");
    int nt = 0;
    for (int i = 0; i < col->n && s == LB_OK; i++) {
        const slot_acc *a = &col->s[i];
        if (a->rows == 0) continue;
        char name[160];
        snprintf(name, sizeof name, "blk.%d.%s.hessian", a->layer, slot_names[a->slot]);
        const int64_t ne_h[1] = {(int64_t)tri_size(a->K)}, ne_k[1] = {a->K}, ne_1[1] = {1};
        wc.slot_of[nt] = i, wc.what[nt++] = 0;
        s = gguf_writer_add_tensor(w, name, LB_TYPE_F32, 1, ne_h, NULL);
        for (size_t m = 0; m < N_MATRICES && s == LB_OK; m++) {
            if (matrices[m].slot != a->slot) continue;
            snprintf(name, sizeof name, "blk.%d.%s.weight.in_sum2", a->layer, matrices[m].m);
            wc.slot_of[nt] = i, wc.what[nt++] = 1;
            s = gguf_writer_add_tensor(w, name, LB_TYPE_F32, 1, ne_k, NULL);
            snprintf(name, sizeof name, "blk.%d.%s.weight.counts", a->layer, matrices[m].m);
            wc.slot_of[nt] = i, wc.what[nt++] = 2;
            if (s == LB_OK) s = gguf_writer_add_tensor(w, name, LB_TYPE_F32, 1, ne_1, NULL);
        }
    }
    if (s == LB_OK && nt == 0) s = lb_fail(LB_ERR_ARG, "no matrix saw any calibration input");
    if (s == LB_OK) s = gguf_writer_write(w, path, produce, &wc, progress, progress_user);
    gguf_writer_free(w);
    free(wc.slot_of);
    free(wc.what);
    return s;
}

/* ---- reading ---- */

struct lb_calib {
    gguf_file *g;
    int n;
};

lb_status lb_calib_load(const char *path, lb_calib **out) {
    *out = NULL;
    gguf_file *g = NULL;
    lb_status s = gguf_open(path, &g);
    if (s) return lb_fail_prefix(s, "reading calibration %s", path);
    const char *type = gguf_get_str(g, "general.type");
    if (!type || strcmp(type, "calibration")) {
        gguf_close(g);
        return lb_fail(LB_ERR_FORMAT, "%s is not a calibration file (general.type is '%s'; make one with lowbit calibrate)",
                       path, type ? type : "absent");
    }
    int n = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (t->name.len > 8 && !memcmp(t->name.ptr + t->name.len - 8, ".hessian", 8)) {
            if (t->type != LB_TYPE_F32 || t->n_dims != 1) {
                gguf_close(g);
                return lb_fail(LB_ERR_FORMAT, "%s: %.*s is not a 1-D F32 tensor", path, (int)t->name.len, t->name.ptr);
            }
            n++;
        }
    }
    lb_calib *c = calloc(1, sizeof *c);
    if (!c) {
        gguf_close(g);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    c->g = g, c->n = n;
    *out = c;
    return n ? LB_OK : (lb_calib_free(c), *out = NULL, lb_fail(LB_ERR_FORMAT, "%s holds no Hessians", path));
}

void lb_calib_free(lb_calib *c) {
    if (!c) return;
    gguf_close(c->g);
    free(c);
}

int lb_calib_count(const lb_calib *c) { return c ? c->n : 0; }

int lb_calib_hessian(const lb_calib *c, const char *name, size_t len, int64_t K, float *H) {
    char hname[160];
    if (!c || !lb_calib_slot_name(name, len, hname, sizeof hname)) return 0;
    const gguf_tensor *t = gguf_find_tensor(c->g, hname);
    if (!t || t->ne[0] != (int64_t)tri_size(K)) return 0;
    const float *p = t->data; /* aligned: GGUF data sits on general.alignment */
    for (int64_t i = 0; i < K; i++) {
        const float *r = p + tri_at(K, i) - i;
        float *hi = H + (size_t)i * (size_t)K;
        for (int64_t j = i; j < K; j++) hi[j] = r[j];
    }
    /* the lower triangle mirrors the upper by 64 x 64 tiles: a column walk
     * of a 8960-wide matrix would miss the cache on every read */
    enum { TB = 64 };
    for (int64_t i0 = 0; i0 < K; i0 += TB)
        for (int64_t j0 = 0; j0 <= i0; j0 += TB)
            for (int64_t i = i0; i < LB_MIN(i0 + TB, K); i++)
                for (int64_t j = j0; j < LB_MIN(LB_MIN(j0 + TB, K), i); j++)
                    H[(size_t)i * (size_t)K + (size_t)j] = H[(size_t)j * (size_t)K + (size_t)i];
    return 1;
}
