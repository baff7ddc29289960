/* Random-weight models of real shapes, built in memory, so `lowbit bench
 * --synthetic` measures the engine with no download. Weights are Gaussian
 * (std 0.02, as at initialisation) and deterministic for a shape and type. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "formats/abq.h"
#include "formats/gc.h"
#include "formats/mx.h"
#include "model/model.h"

typedef struct {
    const char *name;
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    float rope_base;
    int tied;
} shape_def;

static const shape_def shapes[] = {
    {"stories15m", 32000, 288, 6, 6, 6, 768, 256, 10000.0f, 1},
    {"stories110m", 32000, 768, 12, 12, 12, 2048, 1024, 10000.0f, 1},
    {"tinyllama-1.1b", 32000, 2048, 22, 32, 4, 5632, 2048, 10000.0f, 0},
    {"llama-3.2-1b", 128256, 2048, 16, 32, 8, 8192, 8192, 500000.0f, 1},
    {"llama-2-7b", 32000, 4096, 32, 32, 32, 11008, 4096, 10000.0f, 0},
    {"llama-3-8b", 128256, 4096, 32, 32, 8, 14336, 8192, 500000.0f, 0},
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

const char *const *lb_synthetic_shapes(void) {
    static const char *names[N_SHAPES + 1];
    for (int i = 0; i < N_SHAPES; i++) names[i] = shapes[i].name;
    return names;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Approximately Gaussian values (Irwin-Hall: the sum of four uniforms), four
 * per 64-bit draw, from a per-row generator: rows are independent, so the
 * fill parallelises and stays deterministic. Fast matters here: a 7B shape
 * needs billions of values. */
static void gaussian_row(float *x, int64_t n, uint64_t seed, float std) {
    uint64_t s = seed;
    /* sum of 4 uniforms on [0, 65535] has mean 131070 and std 65536/sqrt(3) */
    const float scale = std * 1.7320508f / 65536.0f;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = splitmix(&s);
        int32_t sum = (int32_t)(r & 0xffff) + (int32_t)((r >> 16) & 0xffff) + (int32_t)((r >> 32) & 0xffff) +
                      (int32_t)(r >> 48) - 131070;
        x[i] = (float)sum * scale;
    }
}

/* MX (formats/mx.h) at the default shares, random codes
 * (lb_mx_random_pieces), in one owned buffer as a file holds them. */
static lb_status random_mx(lb_model *m, int64_t K, int64_t N, uint64_t seed, lb_matrix *out) {
    const lb_mx_params p = lb_mx_default_params();
    uint8_t *buf = lb_model_own(m, lb_malloc_huge(lb_mx_random_size(N, K, &p)));
    if (!buf) return LB_ERR_NOMEM;
    lb_mx_parts parts;
    lb_mx_random_pieces(N, K, &p, seed, buf, &parts);
    lb_mx_view *v = NULL;
    lb_status st = lb_mx_view_make(&parts, &v);
    if (st) return st;
    if (!lb_model_own(m, v)) return LB_ERR_NOMEM;
    *out = (lb_matrix){LB_TYPE_MX, K, N, 0, v, 0};
    return LB_OK;
}

/* GC types (formats/gc.h): Gaussian rows quantized, codes and per-row
 * grids in owned buffers, as a file holds them, and a view. */
static lb_status random_gqc(lb_model *m, int type, int64_t K, int64_t N, uint64_t seed, lb_matrix *out) {
    const size_t row = lb_row_size(type, K);
    uint8_t *codes = lb_model_own(m, lb_malloc_huge(row * (size_t)N));
    const int sn = lb_gc_side_n(type);
    lb_fp16 *sz = lb_model_own(m, lb_malloc_aligned(2 * (size_t)sn * (size_t)N));
    if (!codes || !sz) return LB_ERR_NOMEM;
    int failed = 0;
#pragma omp parallel num_threads(m->n_threads > 0 ? m->n_threads : omp_get_num_procs())
    {
        float *x = malloc((size_t)K * sizeof *x);
        if (!x) failed = 1;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            if (!x) continue;
            gaussian_row(x, K, seed * 1000003ull + (uint64_t)n, 0.02f);
            if (lb_gc_quantize_row(type, x, codes + (size_t)n * row, K, 0, NULL, &sz[sn * n])) failed = 1;
        }
        free(x);
    }
    if (failed) return lb_fail(LB_ERR_NOMEM, "out of memory");
    lb_gc_view *v = NULL;
    lb_status st = lb_gc_view_make(type, N, K, codes, row * (size_t)N, sz, sn * N, &v);
    if (st) return st;
    if (!lb_model_own(m, v)) return LB_ERR_NOMEM;
    *out = (lb_matrix){type, K, N, row, v, 0};
    return LB_OK;
}

static lb_status random_matrix(lb_model *m, int type, int64_t K, int64_t N, uint64_t seed, lb_matrix *out) {
    if (lb_gc_is(type) && K % QK_GQ == 0) return random_gqc(m, type, K, N, seed, out);
    if (type == LB_TYPE_MX) {
        if (K % LB_MX_M == 0 && N % LB_MX_ROWS == 0 && K <= 65536) return random_mx(m, K, N, seed, out);
        type = LB_TYPE_Q4_0; /* as quantize's fallback for a matrix MX cannot hold */
    }
    type = lb_type_fallback(type, K);
    const lb_type_traits *t = lb_traits(type);
    out->type = type;
    out->K = K;
    out->N = N;
    out->row_size = lb_row_size(type, K);
    void *data = lb_model_own(m, lb_malloc_aligned(out->row_size * (size_t)N));
    if (!data) return LB_ERR_NOMEM;
    out->data = data;
    int failed = 0;
#pragma omp parallel num_threads(m->n_threads > 0 ? m->n_threads : omp_get_num_procs())
    {
        float *row = malloc((size_t)K * sizeof *row);
        if (!row) failed = 1;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            if (!row) continue;
            gaussian_row(row, K, seed * 1000003ull + (uint64_t)n, 0.02f);
            t->from_float(row, (char *)data + (size_t)n * out->row_size, K);
        }
        free(row);
    }
    return failed ? lb_fail(LB_ERR_NOMEM, "out of memory") : LB_OK;
}

static lb_vec ones(lb_model *m, int n) {
    float *v = lb_model_own(m, lb_malloc_aligned((size_t)n * sizeof(float)));
    if (v)
        for (int i = 0; i < n; i++) v[i] = 1.0f;
    return v;
}

lb_status lb_model_synthetic(const char *shape, int type, const lb_model_params *params, lb_model **out) {
    *out = NULL;
    const shape_def *sd = NULL;
    for (int i = 0; i < N_SHAPES; i++)
        if (!strcasecmp(shape, shapes[i].name)) sd = &shapes[i];
    if (!sd) {
        char list[512] = "";
        for (int i = 0; i < N_SHAPES; i++) {
            strncat(list, shapes[i].name, sizeof list - strlen(list) - 1);
            if (i + 1 < N_SHAPES) strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        return lb_fail(LB_ERR_ARG, "unknown synthetic shape '%s' (known: %s)", shape, list);
    }
    const lb_type_traits *tt = lb_traits(type);
    if (!tt || (!tt->from_float && type != LB_TYPE_MX && !lb_gc_is(type)) || !lb_kernel_get(type))
        return lb_fail(LB_ERR_UNSUPPORTED, "type %s cannot be used for a synthetic model",
                       lb_type_name(type) ? lb_type_name(type) : "?");
    lb_model *m = calloc(1, sizeof *m);
    if (!m) return lb_fail(LB_ERR_NOMEM, "out of memory");
    m->n_threads = params ? params->n_threads : 0;
    lb_hparams *hp = &m->hp;
    hp->arch = LB_ARCH_LLAMA;
    snprintf(hp->arch_name, sizeof hp->arch_name, "llama");
    hp->n_vocab = sd->n_vocab;
    hp->n_embd = sd->n_embd;
    hp->n_layer = sd->n_layer;
    hp->n_head = sd->n_head;
    hp->n_head_kv = sd->n_head_kv;
    hp->head_dim = sd->n_embd / sd->n_head;
    hp->n_ff = sd->n_ff;
    hp->n_ctx_train = sd->n_ctx;
    hp->rope_dim = hp->head_dim;
    hp->rope_freq_base = sd->rope_base;
    hp->rope_freq_scale = 1.0f;
    hp->norm_eps = 1e-5f;
    hp->rope_attn_factor = 1.0f;
    hp->n_ctx_orig = sd->n_ctx;
    hp->query_scale = 1.0f / sqrtf((float)hp->head_dim);

    const int64_t d = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim;
    const int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim, ff = hp->n_ff;
    uint64_t seed = 1;
    /* MX holds the layers' matrices; the embedding and the head take the
     * types lowbit quantize gives them in an MX file (model/quantize.c) */
    const int embd_type = type == LB_TYPE_MX ? (sd->tied ? LB_TYPE_Q6_K : LB_TYPE_Q4_K) : type;
    const int out_type = type == LB_TYPE_MX ? LB_TYPE_Q6_K : type;
    lb_status s = random_matrix(m, embd_type, d, hp->n_vocab, seed++, &m->tok_embd);
    if (s == LB_OK && !sd->tied) s = random_matrix(m, out_type, d, hp->n_vocab, seed++, &m->output);
    if (s == LB_OK && sd->tied) m->output = m->tok_embd;
    if (s == LB_OK && !(m->output_norm = ones(m, (int)d))) s = LB_ERR_NOMEM;
    if (s == LB_OK && !(m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers)))
        s = lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int il = 0; s == LB_OK && il < hp->n_layer; il++) {
        lb_layer *l = &m->layers[il];
        if (!(l->attn_norm = ones(m, (int)d)) || !(l->ffn_norm = ones(m, (int)d))) { s = LB_ERR_NOMEM; break; }
        struct { lb_matrix *w; int64_t K, N; } mats[] = {
            {&l->wq, d, qd}, {&l->wk, d, kvd}, {&l->wv, d, kvd}, {&l->wo, qd, d},
            {&l->w_gate, d, ff}, {&l->w_up, d, ff}, {&l->w_down, ff, d}};
        for (int i = 0; i < 7 && s == LB_OK; i++) s = random_matrix(m, type, mats[i].K, mats[i].N, seed++, mats[i].w);
    }
    /* no file type to name: the type asked for (matrices that don't fit its
     * block keep a wider one, as in a file llama-quantize writes) */
    snprintf(m->ftype_name, sizeof m->ftype_name, "%s", lb_type_name(type));
    if (s == LB_OK) {
        const int p = params && lb_abq_act_bits_ok(params->act_bits) ? params->act_bits : 8;
        lb_model_set_act_bits(m, p, p); /* ABQ types (formats/abq.h) */
        s = lb_model_finish(m);
    }
    if (s != LB_OK) {
        lb_model_free(m);
        return s;
    }
    snprintf(m->desc + strlen(m->desc), sizeof m->desc - strlen(m->desc), " (synthetic %s)", sd->name);
    *out = m;
    return LB_OK;
}
