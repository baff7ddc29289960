/* Building an lb_model from a GGUF file: hyperparameters from metadata,
 * weights as zero-copy views into the mapping, every shape checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/float.h"
#include "formats/legacy.h"
#include "formats/mxfp4.h"
#include "model/model.h"
#include "formats/cb_gguf.h"
#include "formats/gc.h"
#include "formats/abq.h"
#include "formats/mx.h"
#include "formats/repack.h"

lb_model_params lb_model_default_params(void) {
    lb_model_params p = {0, 0, 0};
    return p;
}

void *lb_model_own(lb_model *m, void *p) {
    if (!p) return NULL;
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? m->cap_owned * 2 : 64;
        void **n = realloc(m->owned, (size_t)cap * sizeof *n);
        if (!n) { lb_free_aligned(p); lb_fail(LB_ERR_NOMEM, "out of memory"); return NULL; }
        m->owned = n;
        m->cap_owned = cap;
    }
    m->owned[m->n_owned++] = p;
    return p;
}

int lb_model_owned_index(const lb_model *m, const void *p) {
    for (int i = 0; i < m->n_owned; i++)
        if (m->owned[i] == p) return i;
    return -1;
}

void lb_model_free(lb_model *m) {
    if (!m) return;
    if (m->dev_weights && m->dev_weights_free) m->dev_weights_free(m->dev_weights);
    for (int i = 0; i < m->n_owned; i++) lb_free_aligned(m->owned[i]);
    free(m->owned);
    free(m->layers);
    free(m->kernel_summary);
    if (m->tok) lb_tokenizer_free(m->tok);
    lb_cb_release_held(m->cb_held);
    if (m->gguf) gguf_close(m->gguf);
    free(m);
}

typedef struct {
    lb_model *m;
    const gguf_file *g;
    const char *path;
} loader;

static const char *arch_key(const loader *L, const char *suffix) {
    static _Thread_local char buf[160];
    snprintf(buf, sizeof buf, "%s.%s", L->m->hp.arch_name, suffix);
    return buf;
}

static lb_status need_u32(const loader *L, const char *suffix, int *out) {
    uint32_t v;
    const char *key = arch_key(L, suffix);
    if (!gguf_get_u32(L->g, key, &v)) return lb_fail(LB_ERR_FORMAT, "missing or non-integer metadata key %s", key);
    if (v == 0 || v > (1u << 30)) return lb_fail(LB_ERR_FORMAT, "metadata %s = %u is out of range", key, v);
    *out = (int)v;
    return LB_OK;
}

static int opt_u32(const loader *L, const char *suffix, int def) {
    uint32_t v;
    return gguf_get_u32(L->g, arch_key(L, suffix), &v) && v > 0 && v < (1u << 30) ? (int)v : def;
}

static float opt_f32(const loader *L, const char *suffix, float def) {
    float v;
    return gguf_get_f32(L->g, arch_key(L, suffix), &v) ? v : def;
}

/* An MX matrix (formats/mx.h, "in a GGUF file"): its primary tensor t (the
 * 2-bit tiles) and side tensors, each checked, seen in place by a view the
 * model owns. */
static lb_status get_mx(loader *L, const char *name, const gguf_tensor *t, int64_t K, int64_t N, lb_matrix *out) {
    char side[300];
    const gguf_tensor *ts[4];
    static const char *const sfx[4] = {LB_MX_SFX_HI, LB_MX_SFX_MAP, LB_MX_SFX_ROWS, LB_MX_SFX_OUT};
    static const uint32_t types[4] = {LB_TYPE_MX4, LB_TYPE_I8, LB_TYPE_I32, LB_TYPE_I32};
    for (int i = 0; i < 4; i++) {
        snprintf(side, sizeof side, "%s%s", name, sfx[i]);
        ts[i] = gguf_find_tensor(L->g, side);
        if (ts[i] && (ts[i]->type != types[i] || ts[i]->ne[2] != 1 || ts[i]->ne[3] != 1 ||
                      (i && ts[i]->ne[1] != 1) || (!i && ts[i]->ne[1] != t->ne[1])))
            return lb_fail(LB_ERR_FORMAT, "MX tensor %s has type %s and shape [%lld, %lld], not what %s needs", side,
                           lb_type_name((int)ts[i]->type) ? lb_type_name((int)ts[i]->type) : "?",
                           (long long)ts[i]->ne[0], (long long)ts[i]->ne[1], name);
    }
    if (!ts[1]) return lb_fail(LB_ERR_FORMAT, "MX matrix %s has no group map (%s%s)", name, name, LB_MX_SFX_MAP);
    if (ts[1]->ne[0] * LB_MX_M != K || t->ne[1] * LB_MX_ROWS != N || t->ne[2] != 1 || t->ne[3] != 1)
        return lb_fail(LB_ERR_SHAPE, "MX matrix %s is %lld x %lld (from its tiles and map), expected %lld x %lld", name,
                       (long long)(t->ne[1] * LB_MX_ROWS), (long long)(ts[1]->ne[0] * LB_MX_M), (long long)N,
                       (long long)K);
    if (!ts[2] != !ts[3])
        return lb_fail(LB_ERR_FORMAT, "MX matrix %s has %s but not %s", name, ts[2] ? LB_MX_SFX_ROWS : LB_MX_SFX_OUT,
                       ts[2] ? LB_MX_SFX_OUT : LB_MX_SFX_ROWS);
    const lb_mx_parts p = {N, K, ts[1]->data, t->data, ts[0] ? ts[0]->data : NULL, t->size, ts[0] ? ts[0]->size : 0,
                           ts[2] ? ts[2]->data : NULL, ts[2] ? ts[2]->ne[0] : 0, ts[3] ? ts[3]->data : NULL,
                           ts[3] ? ts[3]->ne[0] : 0};
    lb_mx_view *v = NULL;
    lb_status s = lb_mx_view_make(&p, &v);
    if (s) return lb_fail_prefix(s, "%s", name);
    if (!lb_model_own(L->m, v)) return LB_ERR_NOMEM;
    *out = (lb_matrix){LB_TYPE_MX, K, N, 0, v, 0};
    return LB_OK;
}

/* A GC matrix (formats/gc.h: GQ{b}_GC, BCQ{q}_GC): its codes t and its
 * side tensor (NAME.gq_sz, F16 [2N]: each row's scale and zero; NAME.bcq_az,
 * F16 [(q+1)N]: each row's alphas and z), checked, seen in place by a view
 * the model owns. */
static lb_status get_gc(loader *L, const char *name, const gguf_tensor *t, int64_t K, int64_t N, lb_matrix *out) {
    char side[300];
    const int type = (int)t->type, sn = lb_gc_side_n(type);
    snprintf(side, sizeof side, "%s%s", name, lb_gc_sfx(type));
    const gguf_tensor *sz = gguf_find_tensor(L->g, side);
    if (!sz)
        return lb_fail(LB_ERR_FORMAT, "%s matrix %s has no %s tensor %s (F16 [%lld])", lb_type_name(type), name,
                       lb_gc_side_what(type), side, (long long)(sn * N));
    if (sz->type != LB_GQC_SIDE_TYPE || sz->n_dims != 1 || sz->ne[0] != sn * N)
        return lb_fail(LB_ERR_FORMAT, "%s has type %s and shape [%lld, %lld] (%d dims), not the F16 [%lld] (%d "
                       "values for each of %lld rows) that %s matrix %s needs", side,
                       gguf_type_label(sz->type) ? gguf_type_label(sz->type) : "?", (long long)sz->ne[0],
                       (long long)sz->ne[1], sz->n_dims, (long long)(sn * N), sn, (long long)N, lb_type_name(type),
                       name);
    lb_gc_view *v = NULL;
    lb_status s = lb_gc_view_make(type, N, K, t->data, t->size, sz->data, sn * N, &v);
    if (s) return lb_fail_prefix(s, "%s", name);
    if (!lb_model_own(L->m, v)) return LB_ERR_NOMEM;
    *out = (lb_matrix){(int)t->type, K, N, lb_row_size((int)t->type, K), v, 0};
    return LB_OK;
}

/* A tensor of plain rows (rows of K) the kernels can take: no layout made
 * at load, a type with a kernel, ABQ blocks well formed. */
static lb_status check_plain(const char *name, const gguf_tensor *t, int64_t K, int64_t rows) {
    if (lb_abq_plain_of_codes((int)t->type) >= 0 || lb_abq_codes_of_x16((int)t->type) >= 0) /* their sums are trusted: made by the load only */
        return lb_fail(LB_ERR_FORMAT, "tensor %s has type %s, a layout lowbit makes at load, never stored in a file",
                       name, lb_type_name((int)t->type));
    /* Q6_K_16X4_V1 has no kernel: lb_model_repack converts it (model/repack.c) */
    if (!lb_traits((int)t->type) || (!lb_kernel_get((int)t->type) && t->type != LB_TYPE_Q6_K_16X4_V1))
        return lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has type %s (id %u), which lowbit cannot compute with yet",
                       name, lb_type_name((int)t->type) ? lb_type_name((int)t->type) : "unknown", t->type);
    /* ABQ: scales, zero points and balanced codes checked once, so no kernel meets a malformed block */
    if (lb_abq_check_blocks((int)t->type, t->data, K, rows) != LB_OK)
        return lb_fail_prefix(LB_ERR_FORMAT, "tensor %s", name);
    return LB_OK;
}

/* An MXFP4 tensor of rows of K runs as MXFP4_NL (formats/mxfp4.h): its rows
 * converted once into buffers the model owns, one for each of `parts`
 * equal row ranges (a 3-D tensor's experts), data[0..parts). Separate
 * buffers, because repacking frees a matrix's own buffer once its copy is
 * made (model/repack.c), which must not pull rows from under another. */
static lb_status mxfp4_as_nl(loader *L, const char *name, const gguf_tensor *t, int64_t K, int64_t rows,
                               int parts, const void **data) {
    if (K % QK_MXFP4) return lb_fail(LB_ERR_FORMAT, "MXFP4 tensor %s has rows of %lld", name, (long long)K);
    const int64_t nb = K / QK_MXFP4 * (rows / parts);
    int64_t inexact = 0;
    for (int p = 0; p < parts; p++) {
        void *q = lb_model_own(L->m, lb_malloc_aligned((size_t)nb * sizeof(block_mxfp4_nl)));
        if (!q) return LB_ERR_NOMEM;
        const int64_t k = lb_mxfp4_to_nl((const block_mxfp4 *)t->data + (size_t)(p * nb), q, nb);
        if (k < 0)
            return lb_fail(LB_ERR_FORMAT,
                           "MXFP4 tensor %s has a block scale above 2^15 (no weight that large is real)", name);
        inexact += k;
        data[p] = q;
    }
    if (inexact)
        lb_log(1, "note: MXFP4 tensor %s: %lld blocks with scales below 2^-24 rounded (weights below 3e-7)\n", name,
               (long long)inexact);
    return LB_OK;
}

/* A 2-D weight of shape [K (row length), N rows]. */
static lb_status get_matrix(loader *L, const char *name, int64_t K, int64_t N, int optional,
                            lb_matrix *out) {
    const gguf_tensor *t = gguf_find_tensor(L->g, name);
    memset(out, 0, sizeof *out);
    if (!t) return optional ? LB_OK : lb_fail(LB_ERR_FORMAT, "tensor %s is missing", name);
    if (t->type == LB_TYPE_MX2) {
        if (!strcmp(name, "token_embd.weight"))
            return lb_fail(LB_ERR_UNSUPPORTED, "token_embd.weight is MX: the embedding is read by rows, which MX "
                                               "tiles of 16 rows do not give (quantize it to another type)");
        return get_mx(L, name, t, K, N, out);
    }
    if (t->ne[0] != K || t->ne[1] != N || t->ne[2] != 1 || t->ne[3] != 1)
        return lb_fail(LB_ERR_SHAPE, "tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                       name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                       (long long)t->ne[3], (long long)K, (long long)N);
    if (lb_gc_is((int)t->type)) return get_gc(L, name, t, K, N, out);
    const void *data = t->data;
    int type = (int)t->type;
    lb_status s = type == LB_TYPE_MXFP4 ? mxfp4_as_nl(L, name, t, K, N, 1, &data) : check_plain(name, t, K, N);
    if (s) return s;
    if (type == LB_TYPE_MXFP4) type = LB_TYPE_MXFP4_NL;
    out->type = type;
    out->K = K;
    out->N = N;
    out->row_size = lb_row_size(out->type, K);
    out->data = data;
    return LB_OK;
}

lb_status lb_matrix_rows(const lb_matrix *whole, int64_t r0, int64_t n, lb_matrix *out, void **alloc) {
    *alloc = NULL;
    const int R = whole->type == LB_TYPE_MX ? LB_MX_ROWS : lb_type_rows(whole->type);
    if (r0 < 0 || n < 1 || r0 + n > whole->N)
        return lb_fail(LB_ERR_ARG, "rows %lld..%lld of a matrix of %lld", (long long)r0, (long long)(r0 + n),
                       (long long)whole->N);
    if (r0 % R || (n % R && r0 + n != whole->N))
        return lb_fail(LB_ERR_UNSUPPORTED, "%s splits at row %lld, inside one of its %d-row groups",
                       lb_type_name(whole->type), (long long)(r0 % R ? r0 : r0 + n), R);
    *out = *whole;
    out->N = n;
    if (whole->type == LB_TYPE_MX) {
        const lb_mx_view *w = whole->data;
        lb_mx_view *v = lb_malloc_aligned(sizeof *v);
        if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory");
        *v = *w;
        v->N = n;
        v->lo += (size_t)(r0 / LB_MX_ROWS) * (size_t)w->n_lo;
        if (v->hi) v->hi += (size_t)(r0 / LB_MX_ROWS) * (size_t)w->n_hi;
        if (v->row_ptr) v->row_ptr += r0; /* the outlier words stay where they are */
        v->bytes = (uint64_t)((double)w->bytes * (double)n / (double)w->N);
        out->data = *alloc = v;
    } else if (lb_gc_is(whole->type)) {
        const lb_gc_view *w = whole->data;
        lb_gc_view *v = lb_malloc_aligned(sizeof *v);
        if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory");
        *v = *w;
        v->N = n;
        v->codes += (size_t)r0 * w->row_size;
        v->side += (size_t)r0 * (size_t)w->side_n;
        out->data = *alloc = v;
    } else {
        out->data = (const char *)whole->data + (size_t)r0 * whole->row_size;
    }
    return LB_OK;
}

/* lb_matrix_rows for a fused tensor of the file (phi3's attn_qkv, ffn_up):
 * a sub-view the model owns; errors name the tensor. */
static lb_status split_rows(loader *L, const lb_matrix *whole, const char *name, int64_t r0, int64_t n,
                            lb_matrix *out) {
    void *alloc;
    lb_status s = lb_matrix_rows(whole, r0, n, out, &alloc);
    if (s) return lb_fail_prefix(s, "tensor %s holds several matrices", name);
    if (alloc && !lb_model_own(L->m, alloc)) return LB_ERR_NOMEM;
    if (!alloc && lb_model_owned_index(L->m, whole->data) >= 0) { /* converted at load (MXFP4): a copy of its own (mxfp4_as_nl) */
        const size_t bytes = out->row_size * (size_t)n;
        void *copy = lb_model_own(L->m, lb_malloc_aligned(bytes));
        if (!copy) return LB_ERR_NOMEM;
        memcpy(copy, out->data, bytes);
        out->data = copy;
    }
    return LB_OK;
}

/* The ne matrices (each [K, N]) of one 3-D tensor [K, N, ne] (each expert's
 * of a layer; deepseek2's per-head k_b, v_b): row views of it as one matrix
 * of N * ne rows. */
static lb_status get_stack(loader *L, const char *name, int64_t K, int64_t N, int ne, const char *what,
                           lb_matrix **out) {
    const gguf_tensor *t = gguf_find_tensor(L->g, name);
    if (!t) return lb_fail(LB_ERR_FORMAT, "tensor %s is missing (a model with %d %s needs it)", name, ne, what);
    if (t->ne[0] != K || t->ne[1] != N || t->ne[2] != ne || t->ne[3] != 1)
        return lb_fail(LB_ERR_SHAPE, "tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %d]", name,
                       (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                       (long long)K, (long long)N, ne);
    if (t->type == LB_TYPE_MX2 || lb_gc_is((int)t->type)) /* their side tensors are per matrix */
        return lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has type %s, which holds 2-D matrices only", name,
                       lb_type_name((int)t->type));
    int type = (int)t->type;
    const void **conv = type == LB_TYPE_MXFP4 ? calloc((size_t)ne, sizeof *conv) : NULL;
    if (type == LB_TYPE_MXFP4 && !conv) return LB_ERR_NOMEM;
    lb_status s = conv ? mxfp4_as_nl(L, name, t, K, N * ne, ne, conv) : check_plain(name, t, K, N * ne);
    if (conv) type = LB_TYPE_MXFP4_NL;
    lb_matrix *m = s ? NULL : lb_model_own(L->m, lb_malloc_aligned((size_t)ne * sizeof *m));
    if (!s && !m) s = LB_ERR_NOMEM;
    const size_t row = lb_row_size(type, K);
    for (int e = 0; !s && e < ne; e++)
        m[e] = (lb_matrix){type, K, N, row, conv ? conv[e] : (const char *)t->data + (size_t)e * (size_t)N * row, 0};
    free(conv);
    if (s) return s;
    *out = m;
    return LB_OK;
}

static lb_status get_experts(loader *L, const char *name, int64_t K, int64_t N, lb_matrix **out) {
    return get_stack(L, name, K, N, L->m->hp.n_expert, "experts", out);
}

/* The first GGUF layout of Mixtral (llama.cpp before its 3-D tensors, e.g.
 * TheBloke's files): one 2-D tensor a expert, blk.N.ffn_PART.E.weight, each
 * read as an ordinary matrix. */
static lb_status get_expert_list(loader *L, int il, const char *part, int64_t K, int64_t N, lb_matrix **out) {
    const int ne = L->m->hp.n_expert;
    lb_matrix *m = lb_model_own(L->m, lb_malloc_aligned((size_t)ne * sizeof *m));
    if (!m) return LB_ERR_NOMEM;
    for (int e = 0; e < ne; e++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%d.ffn_%s.%d.weight", il, part, e);
        lb_status s = get_matrix(L, name, K, N, 0, &m[e]);
        if (s) return s;
    }
    *out = m;
    return LB_OK;
}

/* A 1-D weight of n floats, converted to F32 (norms and biases are small). */
static lb_status get_vec(loader *L, const char *name, int64_t n, int optional, lb_vec *out) {
    const gguf_tensor *t = gguf_find_tensor(L->g, name);
    *out = NULL;
    if (!t) return optional ? LB_OK : lb_fail(LB_ERR_FORMAT, "tensor %s is missing", name);
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return lb_fail(LB_ERR_SHAPE, "tensor %s has %lld x %lld elements, expected %lld", name,
                       (long long)t->ne[0], (long long)t->ne[1], (long long)n);
    const lb_type_traits *tr = lb_traits((int)t->type);
    if (!tr) return lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has unsupported type id %u", name, t->type);
    float *v = lb_model_own(L->m, lb_malloc_aligned((size_t)n * sizeof(float)));
    if (!v) return LB_ERR_NOMEM;
    tr->to_float(t->data, v, n);
    *out = v;
    return LB_OK;
}

/* A 2-D float parameter [n0, n1] (gpt-oss's per-expert biases), as floats. */
static lb_status get_vec2(loader *L, const char *name, int64_t n0, int64_t n1, lb_vec *out) {
    const gguf_tensor *t = gguf_find_tensor(L->g, name);
    *out = NULL;
    if (!t) return lb_fail(LB_ERR_FORMAT, "tensor %s is missing", name);
    if (t->ne[0] != n0 || t->ne[1] != n1 || t->ne[2] != 1 || t->ne[3] != 1)
        return lb_fail(LB_ERR_SHAPE, "tensor %s has shape [%lld, %lld, %lld], expected [%lld, %lld]", name,
                       (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)n0, (long long)n1);
    const lb_type_traits *tr = lb_traits((int)t->type);
    if (!tr || !tr->to_float || n0 % tr->blck)
        return lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has type id %u, which cannot be read as floats", name, t->type);
    float *v = lb_model_own(L->m, lb_malloc_aligned((size_t)(n0 * n1) * sizeof(float)));
    if (!v) return LB_ERR_NOMEM;
    const size_t row = lb_row_size((int)t->type, n0);
    for (int64_t r = 0; r < n1; r++) tr->to_float((const char *)t->data + (size_t)r * row, v + r * n0, n0);
    *out = v;
    return LB_OK;
}

/* deepseek2's experts, as llama.cpp reads them: the shared experts' width, the
 * weights' scale (required) and renormalisation, softmax or (V3, gating
 * function 2) sigmoid probabilities, and expert groups if the file has them.
 * glm4moe's (GLM-4.5, 4.6) are read the same way, their gating sigmoid
 * unless the file says otherwise (ik_llama.cpp: 0 or absent means sigmoid). */
static lb_status load_deepseek_moe(loader *L) {
    lb_hparams *hp = &L->m->hp;
    const int glm = hp->arch == LB_ARCH_GLM4MOE;
    hp->n_ff_shexp = hp->n_ff_exp * opt_u32(L, "expert_shared_count", 0);
    const char *key = arch_key(L, "expert_weights_scale");
    if (!gguf_get_f32(L->g, key, &hp->expert_scale) || !(hp->expert_scale > 0.0f && hp->expert_scale < 1e3f))
        return lb_fail(LB_ERR_FORMAT, "%s is missing or not a positive number (a %s model needs it)", key,
                       hp->arch_name);
    int norm = 0;
    key = arch_key(L, "expert_weights_norm");
    if (gguf_find_kv(L->g, key) && !gguf_get_bool(L->g, key, &norm)) return lb_fail(LB_ERR_FORMAT, "%s is not a bool", key);
    hp->expert_norm = norm;
    int gating = opt_u32(L, "expert_gating_func", glm ? 2 : 1);
    if (glm && gating == 0) gating = 2;
    if (gating != 1 && gating != 2)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s = %d: softmax (1) and sigmoid (2) are supported",
                       arch_key(L, "expert_gating_func"), gating);
    hp->expert_sigmoid = gating == 2;
    hp->expert_groups = opt_u32(L, "expert_group_count", 1);
    hp->expert_groups_used = opt_u32(L, "expert_group_used_count", hp->expert_groups);
    if (hp->expert_groups > 1 && (hp->n_expert % hp->expert_groups || hp->n_expert / hp->expert_groups < 2 ||
                                  hp->expert_groups_used > hp->expert_groups))
        return lb_fail(LB_ERR_FORMAT, "%d experts in %d groups, %d used: not groups of 2 or more", hp->n_expert,
                       hp->expert_groups, hp->expert_groups_used);
    return LB_OK;
}

/* Mixture of experts, as llama.cpp reads it: expert_count and
 * expert_used_count (Mixtral's llama files have them too), each expert's
 * hidden size (expert_feed_forward_length, else the dense one), and for
 * qwen2moe the shared expert's (expert_shared_feed_forward_length), which
 * the dense FFN slots hold. llama.cpp renormalises the chosen experts'
 * weights for Mixtral and qwen3moe, not for qwen2moe. */

/* deepseek2's attention (model/mla.c), from either conversion: llama.cpp's
 * MLA files (key_length_mla / value_length_mla for a head, key_length =
 * kv_lora_rank + rope, head_count_kv 1) or the earlier ones (key_length =
 * nope + rope, value_length). The cache then holds one head of
 * kv_lora_rank + rope floats; the scale is llama.cpp's: YaRN's mscale
 * squared over sqrt(nope + rope), RoPE itself not scaled. */
static lb_status load_mla_hparams(loader *L) {
    lb_hparams *hp = &L->m->hp;
    lb_status s;
    if ((s = need_u32(L, "rope.dimension_count", &hp->rope_dim)) || (s = need_u32(L, "attention.kv_lora_rank", &hp->mla_kv_rank)))
        return s;
    hp->mla_q_rank = opt_u32(L, "attention.q_lora_rank", 0);
    const int mla_file = gguf_find_kv(L->g, arch_key(L, "attention.key_length_mla")) != NULL;
    int k = 0, v = 0;
    if ((s = need_u32(L, mla_file ? "attention.key_length_mla" : "attention.key_length", &k)) ||
        (s = need_u32(L, mla_file ? "attention.value_length_mla" : "attention.value_length", &v)))
        return s;
    hp->mla_nope = k - hp->rope_dim;
    hp->mla_v = v;
    if (hp->mla_nope < 1 || hp->rope_dim % 2 || hp->n_head > LB_MAX_MLA_HEADS)
        return lb_fail(LB_ERR_FORMAT, "deepseek2 heads of %d (%d of them RoPE), %d heads: outside what it can be "
                       "(RoPE even, fewer than the head, at most %d heads)", k, hp->rope_dim, hp->n_head, LB_MAX_MLA_HEADS);
    hp->head_dim = hp->mla_kv_rank + hp->rope_dim;
    hp->n_head_kv = 1;
    return LB_OK;
}

static lb_status load_moe_hparams(loader *L) {
    lb_hparams *hp = &L->m->hp;
    const int moe_arch = hp->arch == LB_ARCH_QWEN2MOE || hp->arch == LB_ARCH_QWEN3MOE || hp->arch == LB_ARCH_GPT_OSS ||
                         hp->arch == LB_ARCH_GLM4MOE;
    const int ds = hp->arch == LB_ARCH_DEEPSEEK2 || hp->arch == LB_ARCH_GLM4MOE, ernie = hp->arch == LB_ARCH_ERNIE45;
    uint32_t ne = 0, nu = 0;
    const char *kc = arch_key(L, "expert_count");
    if (gguf_find_kv(L->g, kc) && !gguf_get_u32(L->g, kc, &ne)) return lb_fail(LB_ERR_FORMAT, "%s is not a count", kc);
    if (!ne) {
        if (moe_arch) return lb_fail(LB_ERR_FORMAT, "%s is missing (a %s model has experts)", kc, hp->arch_name);
        return LB_OK;
    }
    if (hp->arch != LB_ARCH_LLAMA && hp->arch != LB_ARCH_MISTRAL3 && hp->arch != LB_ARCH_GRANITE && !moe_arch && !ds && !ernie)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s models with experts are not supported", hp->arch_name);
    const char *ku = arch_key(L, "expert_used_count");
    if (!gguf_get_u32(L->g, ku, &nu)) return lb_fail(LB_ERR_FORMAT, "%s is missing or not a count", ku);
    if (ne > LB_MAX_EXPERTS || nu < 1 || nu > ne)
        return lb_fail(LB_ERR_FORMAT, "%u experts, %u used a token: outside 1 <= used <= experts <= %d", ne, nu,
                       LB_MAX_EXPERTS);
    hp->n_expert = (int)ne;
    hp->n_expert_used = (int)nu;
    hp->n_ff_exp = opt_u32(L, "expert_feed_forward_length", hp->n_ff);
    if (hp->arch == LB_ARCH_QWEN2MOE) hp->n_ff = opt_u32(L, "expert_shared_feed_forward_length", hp->n_ff);
    /* gpt-oss: top-k of the biased logits, then a softmax over those k
     * (llama.cpp's LLM_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT) */
    hp->expert_softmax_k = hp->arch == LB_ARCH_GPT_OSS;
    hp->expert_norm = hp->arch != LB_ARCH_QWEN2MOE && !hp->expert_softmax_k;
    hp->moe_step = 1;
    if (ds || ernie) { /* their first leading_dense_block_count layers are dense */
        hp->n_dense_lead = opt_u32(L, "leading_dense_block_count", 0);
        if (hp->n_dense_lead > hp->n_layer)
            return lb_fail(LB_ERR_FORMAT, "%d leading dense layers of %d", hp->n_dense_lead, hp->n_layer);
    }
    if (ernie) { /* as llama.cpp's build_ernie4_5_moe: softmax, the selection bias, weights renormalised */
        hp->moe_step = opt_u32(L, "interleave_moe_layer_step", 1);
        hp->n_ff_shexp = opt_u32(L, "expert_shared_feed_forward_length", 0);
        hp->expert_norm = 1;
    }
    return ds ? load_deepseek_moe(L) : LB_OK;
}

static lb_status load_hparams(loader *L) {
    lb_hparams *hp = &L->m->hp;
    const char *arch = gguf_get_str(L->g, "general.architecture");
    if (!arch) return lb_fail(LB_ERR_FORMAT, "missing general.architecture");
    if (!strcmp(arch, "llama") || !strcmp(arch, "mistral")) hp->arch = LB_ARCH_LLAMA;
    /* exaone (EXAONE 3.x): qwen2's layer, biases optional, as llama.cpp's build_exaone */
    else if (!strcmp(arch, "qwen2") || !strcmp(arch, "exaone")) hp->arch = LB_ARCH_QWEN2;
    else if (!strcmp(arch, "qwen3")) hp->arch = LB_ARCH_QWEN3;
    else if (!strcmp(arch, "gemma2")) hp->arch = LB_ARCH_GEMMA2;
    else if (!strcmp(arch, "gemma3")) hp->arch = LB_ARCH_GEMMA3;
    else if (!strcmp(arch, "phi3")) hp->arch = LB_ARCH_PHI3;
    else if (!strcmp(arch, "qwen2moe")) hp->arch = LB_ARCH_QWEN2MOE;
    else if (!strcmp(arch, "qwen3moe")) hp->arch = LB_ARCH_QWEN3MOE;
    else if (!strcmp(arch, "gpt-oss")) hp->arch = LB_ARCH_GPT_OSS;
    else if (!strcmp(arch, "smollm3")) hp->arch = LB_ARCH_SMOLLM3;
    else if (!strcmp(arch, "mistral3")) hp->arch = LB_ARCH_MISTRAL3;
    else if (!strcmp(arch, "granite") || !strcmp(arch, "granitemoe")) hp->arch = LB_ARCH_GRANITE;
    else if (!strcmp(arch, "glm4")) hp->arch = LB_ARCH_GLM4;
    else if (!strcmp(arch, "olmo2")) hp->arch = LB_ARCH_OLMO2;
    else if (!strcmp(arch, "deepseek2")) hp->arch = LB_ARCH_DEEPSEEK2;
    else if (!strcmp(arch, "ernie4_5") || !strcmp(arch, "ernie4_5-moe")) hp->arch = LB_ARCH_ERNIE45;
    else if (!strcmp(arch, "command-r") || !strcmp(arch, "cohere2")) hp->arch = LB_ARCH_COHERE;
    else if (!strcmp(arch, "glm4moe")) hp->arch = LB_ARCH_GLM4MOE;
    else
        return lb_fail(LB_ERR_UNSUPPORTED,
                       "architecture '%s' is not supported (llama, mistral, mistral3, smollm3, granite, granitemoe, "
                       "glm4, glm4moe, exaone, olmo2, deepseek2, ernie4_5, ernie4_5-moe, command-r, cohere2, qwen2, qwen3, qwen2moe, qwen3moe, gpt-oss, gemma2, gemma3, phi3 are)", arch);
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", arch);

    lb_status s;
    if ((s = need_u32(L, "embedding_length", &hp->n_embd))) return s;
    if ((s = need_u32(L, "block_count", &hp->n_layer))) return s;
    if (hp->arch == LB_ARCH_GLM4MOE) {
        /* GLM-4.5's last nextn_predict_layers blocks predict further tokens
         * (multi-token prediction); like llama.cpp, generation runs the others
         * and leaves those blocks' tensors unread */
        const int nextn = opt_u32(L, "nextn_predict_layers", 0);
        if (nextn < 0 || nextn >= hp->n_layer)
            return lb_fail(LB_ERR_FORMAT, "%s: %d of %d blocks are NextN layers", arch_key(L, "nextn_predict_layers"),
                           nextn, hp->n_layer);
        hp->n_layer -= nextn;
    }
    if ((s = need_u32(L, "feed_forward_length", &hp->n_ff))) return s;
    if ((s = need_u32(L, "attention.head_count", &hp->n_head))) return s;
    hp->n_head_kv = opt_u32(L, "attention.head_count_kv", hp->n_head);
    hp->n_ctx_train = opt_u32(L, "context_length", 2048);
    hp->head_dim = opt_u32(L, "attention.key_length", hp->n_embd / hp->n_head);
    if (hp->arch == LB_ARCH_DEEPSEEK2 && (s = load_mla_hparams(L))) return s;
    if (hp->arch != LB_ARCH_DEEPSEEK2 && opt_u32(L, "attention.value_length", hp->head_dim) != hp->head_dim)
        return lb_fail(LB_ERR_UNSUPPORTED, "different key and value head sizes are not supported");
    if (hp->n_head % hp->n_head_kv)
        return lb_fail(LB_ERR_FORMAT, "head_count %d is not a multiple of head_count_kv %d", hp->n_head, hp->n_head_kv);
    hp->rope_dim = opt_u32(L, "rope.dimension_count", hp->head_dim);
    if (hp->rope_dim > hp->head_dim || hp->rope_dim % 2)
        return lb_fail(LB_ERR_FORMAT, "rope.dimension_count %d does not fit head size %d", hp->rope_dim, hp->head_dim);
    /* ggml: llama and its descendants use normal rope, the others neox */
    hp->rope_neox = hp->arch != LB_ARCH_LLAMA && hp->arch != LB_ARCH_SMOLLM3 && hp->arch != LB_ARCH_MISTRAL3 &&
                    hp->arch != LB_ARCH_GRANITE && hp->arch != LB_ARCH_GLM4 && hp->arch != LB_ARCH_DEEPSEEK2 &&
                    hp->arch != LB_ARCH_ERNIE45 && hp->arch != LB_ARCH_COHERE;
    hp->rope_freq_base = opt_f32(L, "rope.freq_base", 10000.0f);
    hp->rope_freq_scale = 1.0f;
    const char *scaling = gguf_get_str(L->g, arch_key(L, "rope.scaling.type"));
    float factor = opt_f32(L, "rope.scaling.factor", 0.0f);
    /* llama.cpp: no type means linear; any type but none takes the factor */
    const int yarn = scaling && !strcmp(scaling, "yarn");
    if ((!scaling || !strcmp(scaling, "linear") || yarn) && factor > 0) hp->rope_freq_scale = 1.0f / factor;
    else if (scaling && strcmp(scaling, "none") && strcmp(scaling, "linear") && !yarn)
        lb_log(1, "warning: rope scaling '%s' is not implemented; using plain RoPE\n", scaling);
    hp->rope_yarn = yarn;
    hp->norm_eps = opt_f32(L, "attention.layer_norm_rms_epsilon", 1e-5f);
    hp->rope_attn_factor = opt_f32(L, "rope.scaling.attn_factor", 1.0f);
    hp->n_ctx_orig = opt_u32(L, "rope.scaling.original_context_length", hp->n_ctx_train);
    if (!(hp->rope_attn_factor > 0.0f) || hp->rope_attn_factor > 16.0f)
        return lb_fail(LB_ERR_FORMAT, "rope.scaling.attn_factor %g is not in (0, 16]", hp->rope_attn_factor);
    /* YaRN's magnitude correction (ggml rope_yarn's mscale, ext_factor 1) */
    if (yarn && factor > 0) hp->rope_attn_factor *= 1.0f + 0.1f * logf(factor);
    hp->yarn_beta_fast = opt_f32(L, "rope.scaling.yarn_beta_fast", 32.0f);
    hp->yarn_beta_slow = opt_f32(L, "rope.scaling.yarn_beta_slow", 1.0f);
    if (!(hp->yarn_beta_fast > 0.0f && hp->yarn_beta_fast <= 1e4f) || !(hp->yarn_beta_slow > 0.0f && hp->yarn_beta_slow <= 1e4f))
        return lb_fail(LB_ERR_FORMAT, "rope.scaling.yarn_beta_fast / _slow %g / %g are not in (0, 1e4]",
                       hp->yarn_beta_fast, hp->yarn_beta_slow);
    if (hp->arch == LB_ARCH_MISTRAL3) {
        /* As llama.cpp (LLM_ARCH_MISTRAL3): YaRN's attention factor divided
         * by its mscale at yarn_log_multiplier (mscale_all_dim; 1 cancels),
         * and Llama 4's attention temperature past the original context */
        const float log_mul = opt_f32(L, "rope.scaling.yarn_log_multiplier", 0.0f);
        if (log_mul != 0.0f && factor > 1.0f) hp->rope_attn_factor *= (1.0f + 0.1f * logf(factor)) /
                                                                      (1.0f + 0.1f * log_mul * logf(factor));
        hp->attn_temp_scale = opt_f32(L, "attention.temperature_scale", 0.0f);
        hp->attn_temp_floor = hp->n_ctx_orig;
        if (hp->attn_temp_scale != 0.0f && hp->attn_temp_floor < 1)
            return lb_fail(LB_ERR_FORMAT, "attention.temperature_scale needs rope.scaling.original_context_length");
    }
    if (hp->arch == LB_ARCH_PHI3) {
        /* As llama.cpp (LLM_ARCH_PHI3): the file's sliding window (0: none,
         * Phi-4), else the defaults of the Phi-3 models that predate the key */
        uint32_t w = 0;
        const char *key = arch_key(L, "attention.sliding_window");
        if (gguf_find_kv(L->g, key)) {
            if (!gguf_get_u32(L->g, key, &w) || w > (1u << 30)) return lb_fail(LB_ERR_FORMAT, "%s is not a count", key);
        } else if ((hp->n_layer == 32 || hp->n_layer == 40) && hp->n_ctx_train == 4096) {
            w = 2047; /* Phi-3-mini-4k, Phi-3-medium-4k */
        } else if (hp->n_ctx_train != 131072 || (hp->n_layer != 32 && hp->n_layer != 40)) {
            return lb_fail(LB_ERR_FORMAT, "%s is missing (a phi3 model needs it)", key);
        } /* the 128k models: a window longer than any context, so none */
        hp->sliding_window = (int)w;
    }
    hp->query_scale = 1.0f / sqrtf((float)hp->head_dim);
    if (hp->arch == LB_ARCH_DEEPSEEK2) { /* load_mla_hparams */
        const float log_mul = opt_f32(L, "rope.scaling.yarn_log_multiplier", 0.0f);
        const float mscale = opt_f32(L, "rope.scaling.attn_factor", 1.0f) *
                             (1.0f + (yarn && factor > 0 ? log_mul * logf(factor) : 0.0f));
        hp->query_scale = mscale * mscale / sqrtf((float)(hp->mla_nope + hp->rope_dim));
        hp->rope_attn_factor = 1.0f;
    }
    if (hp->arch == LB_ARCH_GEMMA3) {
        /* As llama.cpp (llama-model.cpp, LLM_ARCH_GEMMA3): without a sliding
         * window every layer is global; with one, every 6th layer is global and
         * the local layers use RoPE base 10000 with no position scaling. */
        hp->sliding_window = opt_u32(L, "attention.sliding_window", 0);
        hp->swa_pattern = hp->sliding_window > 0 ? opt_u32(L, "attention.sliding_window_pattern", 6) : 0;
        hp->rope_freq_base_local = opt_f32(L, "rope.freq_base_swa", 10000.0f);
        /* query_pre_attn_scalar is not in the GGUF: llama.cpp scales by
         * 1/sqrt(head_dim), except 27B (62 layers) by 1/sqrt(n_embd/n_head). */
        const float qpas = hp->n_layer == 62 ? (float)(hp->n_embd / hp->n_head) : (float)hp->head_dim;
        hp->query_scale = opt_f32(L, "attention.scale", 1.0f / sqrtf(qpas));
        hp->final_logit_softcap = opt_f32(L, "final_logit_softcapping", 0.0f);
    }
    if (hp->arch == LB_ARCH_GEMMA2) {
        /* As llama.cpp (LLM_ARCH_GEMMA2): every other layer (0, 2, ...) sees a
         * window (4096 unless the file says), one RoPE base for all; scores
         * and logits soft-capped; 27B (46 layers) scales q by
         * 1/sqrt(n_embd/n_head), the others by 1/sqrt(head_dim). */
        hp->sliding_window = opt_u32(L, "attention.sliding_window", 4096);
        hp->swa_pattern = 2;
        hp->rope_freq_base_local = hp->rope_freq_base;
        hp->query_scale = 1.0f / sqrtf(hp->n_layer == 46 ? (float)(hp->n_embd / hp->n_head) : (float)hp->head_dim);
        hp->attn_softcap = opt_f32(L, "attn_logit_softcapping", 0.0f);
        hp->final_logit_softcap = opt_f32(L, "final_logit_softcapping", 0.0f);
        if (hp->attn_softcap < 0.0f || hp->final_logit_softcap < 0.0f)
            return lb_fail(LB_ERR_FORMAT, "gemma2 soft-capping values must not be negative");
    }
    hp->no_pre_norm = hp->arch == LB_ARCH_OLMO2;
    if (hp->arch == LB_ARCH_COHERE) {
        /* As llama.cpp (LLM_ARCH_COMMAND_R, _COHERE2): LayerNorm, the parallel
         * block, the logits times logit_scale; cohere2's layers 0-2 of every 4
         * see a window with RoPE, the 4th everything without positions */
        hp->layer_norm = hp->parallel_block = 1;
        hp->norm_eps = opt_f32(L, "attention.layer_norm_epsilon", 1e-5f);
        hp->logit_mul = opt_f32(L, "logit_scale", 1.0f);
        if (!(hp->norm_eps > 0.0f && hp->norm_eps < 1.0f) || !isfinite(hp->logit_mul) || hp->logit_mul <= 0.0f)
            return lb_fail(LB_ERR_FORMAT, "%s's layer_norm_epsilon %g or logit_scale %g is out of range",
                           hp->arch_name, hp->norm_eps, hp->logit_mul);
        if (!strcmp(arch, "cohere2")) {
            hp->swa_pattern = 4;
            if ((s = need_u32(L, "attention.sliding_window", &hp->sliding_window))) return s;
        }
    }
    if (hp->arch == LB_ARCH_GRANITE) {
        /* As llama.cpp (LLM_ARCH_GRANITE, _MOE): llama's layer with four
         * multipliers, all required; the attention one replaces 1/sqrt(head_dim) */
        static const char *const keys[4] = {"embedding_scale", "residual_scale", "logit_scale", "attention.scale"};
        float *vals[4] = {&hp->embedding_scale, &hp->residual_scale, &hp->logit_scale, &hp->query_scale};
        for (int i = 0; i < 4; i++) {
            const char *key = arch_key(L, keys[i]);
            if (!gguf_get_f32(L->g, key, vals[i]) || !isfinite(*vals[i]) || *vals[i] <= 0.0f)
                return lb_fail(LB_ERR_FORMAT, "%s is missing or not a positive number (a granite model needs it)", key);
        }
    }
    if (hp->arch == LB_ARCH_GPT_OSS) {
        /* As llama.cpp (LLM_ARCH_OPENAI_MOE): layers 0, 2, ... see a window,
         * the others everything; one RoPE base (YaRN in the file) */
        hp->sliding_window = opt_u32(L, "attention.sliding_window", 128);
        hp->swa_pattern = 2;
        hp->rope_freq_base_local = hp->rope_freq_base;
    }
    if ((s = load_moe_hparams(L))) return s;
    const gguf_tensor *emb = gguf_find_tensor(L->g, "token_embd.weight");
    if (!emb) return lb_fail(LB_ERR_FORMAT, "tensor token_embd.weight is missing");
    if (emb->ne[1] < 1 || emb->ne[1] > (1 << 24)) return lb_fail(LB_ERR_FORMAT, "token_embd.weight has an absurd vocabulary size");
    hp->n_vocab = (int)emb->ne[1];
    return LB_OK;
}

/* deepseek2's per-head k_b (kv_rank rows of nope) and v_b (v rows of
 * kv_rank) from the earlier files' attn_kv_b (each head's nope rows of
 * kv_rank, then its v rows): v_b[h] row views, k_b[h] transposed into a
 * matrix the model owns, F32 from an F32 tensor, else F16 (from a
 * quantized one the rounding is 2^-11 of each weight's). */
static lb_status split_kv_b(loader *L, const char *name, lb_layer *l) {
    const lb_hparams *hp = &L->m->hp;
    const int64_t nh = hp->n_head, r = hp->mla_kv_rank, nope = hp->mla_nope, vd = hp->mla_v;
    lb_matrix kv;
    lb_status s = get_matrix(L, name, r, nh * (nope + vd), 0, &kv);
    if (s) return s;
    const lb_type_traits *tr = lb_traits(kv.type);
    if (kv.type == LB_TYPE_MX || lb_gc_is(kv.type) || !tr || !tr->to_float || r % tr->blck)
        return lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has type %s, whose rows cannot be read back as floats "
                       "(quantize it to another type)", name, lb_type_name(kv.type));
    const int type = kv.type == LB_TYPE_F32 ? LB_TYPE_F32 : LB_TYPE_F16;
    const size_t row = lb_row_size(type, nope);
    l->wk_b = lb_model_own(L->m, lb_malloc_aligned((size_t)nh * sizeof *l->wk_b));
    l->wv_b = lb_model_own(L->m, lb_malloc_aligned((size_t)nh * sizeof *l->wv_b));
    float *f = malloc((size_t)(nope * r + nope) * sizeof *f);
    if (!l->wk_b || !l->wv_b || !f) {
        free(f);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    float *col = f + nope * r;
    for (int64_t h = 0; h < nh && !s; h++) {
        for (int64_t i = 0; i < nope; i++) /* head h's nope rows, each of r */
            tr->to_float((const char *)kv.data + (size_t)(h * (nope + vd) + i) * kv.row_size, f + i * r, r);
        char *kb = lb_model_own(L->m, lb_malloc_aligned(row * (size_t)r));
        if (!kb) s = LB_ERR_NOMEM;
        for (int64_t j = 0; j < r && !s; j++) { /* row j of k_b[h]: column j of those */
            for (int64_t i = 0; i < nope; i++) col[i] = f[i * r + j];
            if (type == LB_TYPE_F32) memcpy(kb + (size_t)j * row, col, (size_t)nope * sizeof *col);
            else lb_f16_from_float(col, kb + (size_t)j * row, nope);
        }
        if (!s) l->wk_b[h] = (lb_matrix){type, nope, r, row, kb, 0};
        if (!s) s = split_rows(L, &kv, name, h * (nope + vd) + nope, vd, &l->wv_b[h]);
    }
    free(f);
    return s;
}

/* deepseek2's attention weights (model/mla.c): q in one matrix or its
 * low-rank pair, the compressed KV with the RoPE key, and per head k_b and
 * v_b, from llama.cpp's MLA files or split from attn_kv_b. */
static lb_status load_mla_layer(loader *L, int il, lb_layer *l) {
    const lb_hparams *hp = &L->m->hp;
    const int64_t d = hp->n_embd, nh = hp->n_head, r = hp->mla_kv_rank, rd = hp->rope_dim, nope = hp->mla_nope;
    const int64_t qa = hp->mla_q_rank, vd = hp->mla_v;
    char n[96];
#define BLK(suffix) (snprintf(n, sizeof n, "blk.%d.%s", il, suffix), n)
    lb_status s;
    if (qa) {
        if ((s = get_matrix(L, BLK("attn_q_a.weight"), d, qa, 0, &l->wq_a)) ||
            (s = get_vec(L, BLK("attn_q_a_norm.weight"), qa, 0, &l->q_a_norm)) ||
            (s = get_matrix(L, BLK("attn_q_b.weight"), qa, nh * (nope + rd), 0, &l->wq_b)))
            return s;
    } else if ((s = get_matrix(L, BLK("attn_q.weight"), d, nh * (nope + rd), 0, &l->wq))) {
        return s;
    }
    if ((s = get_matrix(L, BLK("attn_kv_a_mqa.weight"), d, r + rd, 0, &l->wkv_a)) ||
        (s = get_vec(L, BLK("attn_kv_a_norm.weight"), r, 0, &l->kv_a_norm)))
        return s;
    if (!gguf_find_tensor(L->g, BLK("attn_k_b.weight"))) return split_kv_b(L, BLK("attn_kv_b.weight"), l);
    if ((s = get_stack(L, n, nope, r, (int)nh, "heads", &l->wk_b))) return s;
    return get_stack(L, BLK("attn_v_b.weight"), r, vd, (int)nh, "heads", &l->wv_b);
#undef BLK
}

static lb_status load_weights(loader *L) {
    lb_model *m = L->m;
    const lb_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim;
    const int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim, ff = hp->n_ff;
    lb_status s;
    if ((s = get_matrix(L, "token_embd.weight", d, hp->n_vocab, 0, &m->tok_embd))) return s;
    if ((s = get_vec(L, "output_norm.weight", d, 0, &m->output_norm))) return s;
    if ((s = get_matrix(L, "output.weight", d, hp->n_vocab, 1, &m->output))) return s;
    if (!m->output.data) m->output = m->tok_embd; /* tied embeddings */
    if ((s = get_vec(L, "rope_freqs.weight", hp->rope_dim / 2, 1, &m->rope_freq_factors))) return s;
    if ((s = get_vec(L, "rope_factors_long.weight", hp->rope_dim / 2, 1, &m->rope_factors_long))) return s;
    if ((s = get_vec(L, "rope_factors_short.weight", hp->rope_dim / 2, 1, &m->rope_factors_short))) return s;
    if (!m->rope_factors_long != !m->rope_factors_short)
        return lb_fail(LB_ERR_FORMAT, "rope_factors_long.weight and rope_factors_short.weight come together");

    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int il = 0; il < hp->n_layer; il++) {
        lb_layer *l = &m->layers[il];
        char n[96];
#define BLK(suffix) (snprintf(n, sizeof n, "blk.%d.%s", il, suffix), n)
        const int olmo2 = hp->arch == LB_ARCH_OLMO2; /* no norms before attention and FFN */
        if (!olmo2 && (s = get_vec(L, BLK("attn_norm.weight"), d, 0, &l->attn_norm))) return s;
        lb_matrix fused;
        const int ds = hp->arch == LB_ARCH_DEEPSEEK2, ernie = hp->arch == LB_ARCH_ERNIE45;
        const int moe = hp->n_expert && il >= hp->n_dense_lead && (il + 1) % hp->moe_step == 0;
        if (ds) {
            if ((s = load_mla_layer(L, il, l))) return s;
        } else if ((s = get_matrix(L, BLK("attn_qkv.weight"), d, qd + 2 * kvd, 1, &fused))) {
            return s;
        } else if (fused.data) { /* phi3: Q, K and V in one tensor, split into row ranges */
            if ((s = split_rows(L, &fused, n, 0, qd, &l->wq)) || (s = split_rows(L, &fused, n, qd, kvd, &l->wk)) ||
                (s = split_rows(L, &fused, n, qd + kvd, kvd, &l->wv)))
                return s;
        } else {
            if (hp->arch == LB_ARCH_PHI3 && !gguf_find_tensor(L->g, BLK("attn_q.weight")))
                return lb_fail(LB_ERR_FORMAT, "tensor blk.%d.attn_qkv.weight is missing (nor are Q, K, V apart)", il);
            if ((s = get_matrix(L, BLK("attn_q.weight"), d, qd, 0, &l->wq))) return s;
            if ((s = get_matrix(L, BLK("attn_k.weight"), d, kvd, 0, &l->wk))) return s;
            if ((s = get_matrix(L, BLK("attn_v.weight"), d, kvd, 0, &l->wv))) return s;
        }
        if ((s = get_matrix(L, BLK("attn_output.weight"), ds ? (int64_t)hp->n_head * hp->mla_v : qd, d, 0, &l->wo)))
            return s;
        if ((s = get_vec(L, BLK("attn_q.bias"), qd, 1, &l->bq))) return s;
        if ((s = get_vec(L, BLK("attn_k.bias"), kvd, 1, &l->bk))) return s;
        if ((s = get_vec(L, BLK("attn_v.bias"), kvd, 1, &l->bv))) return s;
        /* gpt-oss and glm4moe name the FFN's norm post_attention_norm */
        const int oss = hp->arch == LB_ARCH_GPT_OSS, glm = hp->arch == LB_ARCH_GLM4MOE;
        if (!olmo2 && !hp->parallel_block &&
            (s = get_vec(L, BLK(oss || glm ? "post_attention_norm.weight" : "ffn_norm.weight"), d, 0, &l->ffn_norm)))
            return s;
        if ((ernie || hp->arch == LB_ARCH_COHERE) && (s = get_vec(L, BLK("attn_output.bias"), d, 1, &l->bo))) return s;
        if (oss && ((s = get_vec(L, BLK("attn_output.bias"), d, 0, &l->bo)) ||
                    (s = get_vec(L, BLK("attn_sinks.weight"), hp->n_head, 0, &l->attn_sinks))))
            return s;
        if (moe) {
            const int64_t fe = hp->n_ff_exp;
            if ((s = get_matrix(L, BLK("ffn_gate_inp.weight"), d, hp->n_expert, 0, &l->router))) return s;
            const int legacy = (hp->arch == LB_ARCH_LLAMA || hp->arch == LB_ARCH_MISTRAL3) && !gguf_find_tensor(L->g, BLK("ffn_gate_exps.weight")) &&
                               gguf_find_tensor(L->g, BLK("ffn_gate.0.weight"));
            if (legacy) {
                if ((s = get_expert_list(L, il, "gate", d, fe, &l->exp_gate)) ||
                    (s = get_expert_list(L, il, "up", d, fe, &l->exp_up)) ||
                    (s = get_expert_list(L, il, "down", fe, d, &l->exp_down)))
                    return s;
            } else if ((s = get_experts(L, BLK("ffn_gate_exps.weight"), d, fe, &l->exp_gate)) ||
                       (s = get_experts(L, BLK("ffn_up_exps.weight"), d, fe, &l->exp_up)) ||
                       (s = get_experts(L, BLK("ffn_down_exps.weight"), fe, d, &l->exp_down)))
                return s;
            if (oss && ((s = get_vec(L, BLK("ffn_gate_inp.bias"), hp->n_expert, 0, &l->router_b)) ||
                        (s = get_vec2(L, BLK("ffn_gate_exps.bias"), fe, hp->n_expert, &l->exp_gate_b)) ||
                        (s = get_vec2(L, BLK("ffn_up_exps.bias"), fe, hp->n_expert, &l->exp_up_b)) ||
                        (s = get_vec2(L, BLK("ffn_down_exps.bias"), d, hp->n_expert, &l->exp_down_b))))
                return s;
            if (hp->arch == LB_ARCH_QWEN2MOE && gguf_find_tensor(L->g, BLK("ffn_gate_inp_shexp.weight"))) {
                if ((s = get_vec(L, BLK("ffn_gate_inp_shexp.weight"), d, 0, &l->shexp_gate)) ||
                    (s = get_matrix(L, BLK("ffn_gate_shexp.weight"), d, ff, 0, &l->w_gate)) ||
                    (s = get_matrix(L, BLK("ffn_up_shexp.weight"), d, ff, 0, &l->w_up)) ||
                    (s = get_matrix(L, BLK("ffn_down_shexp.weight"), ff, d, 0, &l->w_down)))
                    return s;
            }
            if ((ds || ernie || glm) && hp->n_ff_shexp) { /* the shared experts, one FFN of their summed width */
                const int64_t fs = hp->n_ff_shexp;
                if ((s = get_matrix(L, BLK("ffn_gate_shexp.weight"), d, fs, 0, &l->w_gate)) ||
                    (s = get_matrix(L, BLK("ffn_up_shexp.weight"), d, fs, 0, &l->w_up)) ||
                    (s = get_matrix(L, BLK("ffn_down_shexp.weight"), fs, d, 0, &l->w_down)))
                    return s;
            }
            if ((ds || ernie || glm) && (s = get_vec(L, BLK("exp_probs_b.bias"), hp->n_expert, 1, &l->exp_probs_b)))
                return s;
        } else if (hp->arch == LB_ARCH_PHI3 || hp->arch == LB_ARCH_GLM4) {
            /* gate and up in one tensor: gate the first n_ff rows (ggml_swiglu) */
            if ((s = get_matrix(L, BLK("ffn_up.weight"), d, 2 * ff, 0, &fused))) return s;
            if ((s = split_rows(L, &fused, n, 0, ff, &l->w_gate)) || (s = split_rows(L, &fused, n, ff, ff, &l->w_up)))
                return s;
        } else {
            if ((s = get_matrix(L, BLK("ffn_gate.weight"), d, ff, 0, &l->w_gate))) return s;
            if ((s = get_matrix(L, BLK("ffn_up.weight"), d, ff, 0, &l->w_up))) return s;
        }
        if (!moe && (s = get_matrix(L, BLK("ffn_down.weight"), ff, d, 0, &l->w_down))) return s;
        if (hp->arch == LB_ARCH_GEMMA2 || hp->arch == LB_ARCH_GLM4 || olmo2) { /* glm4, olmo2: no window */
            if ((s = get_vec(L, BLK("post_attention_norm.weight"), d, 0, &l->attn_post_norm))) return s;
            if ((s = get_vec(L, BLK("post_ffw_norm.weight"), d, 0, &l->ffn_post_norm))) return s;
            l->is_local = hp->arch == LB_ARCH_GEMMA2 && il % 2 == 0;
            /* olmo2: RMS norms of the whole q and k (llama.cpp's build_olmo2) */
            if (olmo2 && ((s = get_vec(L, BLK("attn_q_norm.weight"), qd, 0, &l->q_norm)) ||
                          (s = get_vec(L, BLK("attn_k_norm.weight"), kvd, 0, &l->k_norm))))
                return s;
            l->qk_norm_full = olmo2;
        } else if (hp->arch == LB_ARCH_GEMMA3) {
            if ((s = get_vec(L, BLK("post_attention_norm.weight"), d, 0, &l->attn_post_norm))) return s;
            if ((s = get_vec(L, BLK("post_ffw_norm.weight"), d, 0, &l->ffn_post_norm))) return s;
            if ((s = get_vec(L, BLK("attn_q_norm.weight"), hp->head_dim, 0, &l->q_norm))) return s;
            if ((s = get_vec(L, BLK("attn_k_norm.weight"), hp->head_dim, 0, &l->k_norm))) return s;
            l->is_local = hp->swa_pattern > 0 && (il + 1) % hp->swa_pattern != 0;
        } else if (hp->arch == LB_ARCH_QWEN3 || hp->arch == LB_ARCH_QWEN3MOE) {
            /* as llama.cpp's LLM_ARCH_QWEN3: Qwen2's layer without the q/k/v
             * biases (read if present: harmless), with per-head q/k norms */
            if ((s = get_vec(L, BLK("attn_q_norm.weight"), hp->head_dim, 0, &l->q_norm))) return s;
            if ((s = get_vec(L, BLK("attn_k_norm.weight"), hp->head_dim, 0, &l->k_norm))) return s;
        } else if (glm) { /* per-head q/k norms in some GLM-4.5 files (llama.cpp: optional) */
            if ((s = get_vec(L, BLK("attn_q_norm.weight"), hp->head_dim, 1, &l->q_norm)) ||
                (s = get_vec(L, BLK("attn_k_norm.weight"), hp->head_dim, 1, &l->k_norm)))
                return s;
            if (!l->q_norm != !l->k_norm)
                return lb_fail(LB_ERR_FORMAT, "blk.%d: attn_q_norm and attn_k_norm come together", il);
        } else if (hp->arch == LB_ARCH_PHI3) {
            l->is_local = hp->sliding_window > 0;
        } else if (oss) {
            l->is_local = il % 2 == 0;
        } else if (hp->arch == LB_ARCH_SMOLLM3) {
            l->no_rope = (il + 1) % 4 == 0; /* llama.cpp's n_no_rope_layer_step, fixed at 4 */
        } else if (hp->arch == LB_ARCH_COHERE) {
            if (gguf_find_tensor(L->g, BLK("attn_q_norm.weight")))
                return lb_fail(LB_ERR_UNSUPPORTED, "%s with q/k LayerNorms (Command R+) is not supported",
                               hp->arch_name);
            l->is_local = hp->swa_pattern && il % hp->swa_pattern < hp->swa_pattern - 1;
            l->no_rope = hp->swa_pattern && !l->is_local;
        }
#undef BLK
    }
    return LB_OK;
}

/* One of the file's ABQ activation-bit keys: absent leaves *v as it is. */
static lb_status get_bits_kv(const gguf_file *g, const char *key, uint32_t *v) {
    if (gguf_find_kv(g, key) && (!gguf_get_u32(g, key, v) || *v > LB_ABQ_ACT_F32 || !lb_abq_act_bits_ok((int)*v)))
        return lb_fail(LB_ERR_FORMAT, "%s is not 1..8 or 16 (activation bits)", key);
    return LB_OK;
}

/* ABQ's activation bits (formats/abq.h), held by each ABQ matrix: the
 * caller's for all of them, else the file's (ffn_down's may differ: its
 * input is the one seed 004 finds most sensitive), else 8. */
static lb_status set_act_bits(lb_model *m, int requested) {
    uint32_t all = LB_ABQ_MAX_BITS, down = 0;
    lb_status s = get_bits_kv(m->gguf, "lowbit.abq.act_bits", &all);
    if (s == LB_OK) s = get_bits_kv(m->gguf, "lowbit.abq.act_bits_ffn_down", &down);
    if (s != LB_OK) return s;
    if (requested && !lb_abq_act_bits_ok(requested))
        return lb_fail(LB_ERR_ARG, "activation bits %d: ABQ takes 1..8, or 16 (unquantized)", requested);
    if (requested) all = down = (uint32_t)requested;
    lb_model_set_act_bits(m, (int)all, down ? (int)down : (int)all);
    /* the ABQ search's per-layer bits of ffn_down's input, unless the caller set all */
    const char *key = "lowbit.abq.act_bits_ffn_down_layers";
    if (!gguf_find_kv(m->gguf, key)) return LB_OK;
    const gguf_kv *a = gguf_get_arr(m->gguf, key, GGUF_TYPE_UINT32);
    if (!a || a->arr_n != (uint64_t)m->hp.n_layer)
        return lb_fail(LB_ERR_FORMAT, "%s is not an array of %d integers (one per layer)", key, m->hp.n_layer);
    for (int il = 0; il < m->hp.n_layer; il++) {
        uint32_t b;
        memcpy(&b, (const char *)a->data + 4 * (size_t)il, 4);
        if (b > LB_ABQ_ACT_F32 || !lb_abq_act_bits_ok((int)b))
            return lb_fail(LB_ERR_FORMAT, "%s[%d] = %u: not 1..8 or 16", key, il, b);
        lb_matrix *w = &m->layers[il].w_down;
        if (!requested && lb_abq_bits(w->type)) w->act_bits = (int)b;
    }
    return LB_OK;
}

lb_status lb_model_load(const char *path, const lb_model_params *params, lb_model **out) {
    *out = NULL;
    if (!path) return lb_fail(LB_ERR_ARG, "no model path given");
    lb_model_params p = params ? *params : lb_model_default_params();
    double t0 = lb_time_s();
    lb_model *m = calloc(1, sizeof *m);
    if (!m) return lb_fail(LB_ERR_NOMEM, "out of memory");
    m->n_threads = p.n_threads;
    lb_status s = gguf_open(path, &m->gguf);
    loader L = {m, m->gguf, path};
    if (s == LB_OK) s = lb_cb_acquire_for_file(m->gguf, &m->cb_held); /* CB2/CB3 books */
    if (s == LB_OK) s = load_hparams(&L);
    if (s == LB_OK) s = load_weights(&L);
    if (s == LB_OK) s = set_act_bits(m, p.act_bits);
    if (s == LB_OK) {
        s = lb_tokenizer_load(m->gguf, &m->tok);
        if (s == LB_OK && lb_tokenizer_n_vocab(m->tok) != m->hp.n_vocab) {
            lb_log(1, "warning: vocabulary has %d tokens but token_embd has %d rows\n",
                   lb_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
        }
        if (s != LB_OK) {
            /* A model without a usable vocabulary still runs on token ids (bench). */
            lb_log(1, "warning: %s: no usable tokenizer (%s)\n", path, lb_last_error());
            m->tok = NULL;
            s = LB_OK;
        }
    }
    if (s == LB_OK) s = lb_model_finish(m);
    if (s != LB_OK) {
        lb_fail_prefix(s, "loading %s", path);
        lb_model_free(m);
        return s;
    }
    if (p.verbose) lb_log(1, "loaded %s in %.2f s: %s\n", path, lb_time_s() - t0, m->desc);
    *out = m;
    return LB_OK;
}
