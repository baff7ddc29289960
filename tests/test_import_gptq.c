/* GPTQ checkpoints through `lowbit convert --hf` (lb_convert_hf_ex): tiny
 * Hugging Face directories whose linear layers this test quantizes itself
 * with known codes, scales and zero points, packed by the documented AutoGPTQ
 * layout (bit by bit here, independently of the importer's unpacking):
 *
 *   qweight I32 [K*b/32, N]: column n is a little-endian bit stream over the
 *                            rows, input k at bits b*k .. b*k + b - 1;
 *   qzeros  I32 [G, N*b/32]: row g is such a stream over the outputs;
 *   scales  F16 [G, N], g_idx I32 [K]; v1 stores zero - 1, v2 the zero.
 *
 * Converted files must hold every code, scale and zero exactly (GQ types;
 * group_size -1: GQ{b}_GC and its side tensor NAME.gq_sz, act-order or not) or,
 * dequantized, exactly s * (q - z); files that cannot be kept or are broken
 * must fail with a message and leave nothing behind. */
#include <sys/stat.h>
#include <unistd.h>

#include "core/fp16.h"
#include "formats/gq.h"
#include "formats/gc.h"
#include "formats/types.h"
#include "gguf/gguf.h"
#include "lowbit.h"
#include "test_util.h"

#define H 128       /* hidden size: K of most matrices */
#define NHEAD 4
#define NKV 2
#define HDIM 32
#define VOCAB 32

/* ---- safetensors writing ---- */

typedef struct {
    char name[96];
    const char *dtype;      /* safetensors dtype name */
    int n_dims;
    int64_t shape[2];
    unsigned char *data;
    size_t nbytes;
} tens;

typedef struct {
    tens t[64];
    int n;
} tlist;

static size_t dtype_size(const char *dt) {
    return !strcmp(dt, "F16") || !strcmp(dt, "BF16") || !strcmp(dt, "I16") ? 2 : !strcmp(dt, "I64") ? 8 : 4;
}

/* Adds (or replaces) a zero-filled tensor; d1 = 0 for a vector. */
static tens *tl_set(tlist *l, const char *name, const char *dtype, int64_t d0, int64_t d1) {
    tens *t = NULL;
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->t[i].name, name)) t = &l->t[i];
    if (!t) {
        t = &l->t[l->n++];
        snprintf(t->name, sizeof t->name, "%s", name);
    } else {
        free(t->data);
    }
    t->dtype = dtype;
    t->n_dims = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->nbytes = (size_t)(d0 * (d1 ? d1 : 1)) * dtype_size(dtype);
    t->data = calloc(1, t->nbytes ? t->nbytes : 1);
    return t;
}

static tens *tl_find(tlist *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->t[i].name, name)) return &l->t[i];
    return NULL;
}

static void tl_remove(tlist *l, const char *name) {
    tens *t = tl_find(l, name);
    if (!t) return;
    free(t->data);
    *t = l->t[--l->n];
}

static void tl_free(tlist *l) {
    for (int i = 0; i < l->n; i++) free(l->t[i].data);
    l->n = 0;
}

static void tl_write(const tlist *l, const char *path) {
    char *hdr = malloc(65536);
    size_t n = 0;
    uint64_t off = 0;
    n += (size_t)snprintf(hdr + n, 65536 - n, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < l->n; i++) {
        const tens *t = &l->t[i];
        if (t->n_dims == 2)
            n += (size_t)snprintf(hdr + n, 65536 - n, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld,%lld],"
                                  "\"data_offsets\":[%llu,%llu]}", t->name, t->dtype, (long long)t->shape[0],
                                  (long long)t->shape[1], (unsigned long long)off,
                                  (unsigned long long)(off + t->nbytes));
        else
            n += (size_t)snprintf(hdr + n, 65536 - n, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld],"
                                  "\"data_offsets\":[%llu,%llu]}", t->name, t->dtype, (long long)t->shape[0],
                                  (unsigned long long)off, (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
    }
    n += (size_t)snprintf(hdr + n, 65536 - n, "}");
    while (n % 8) hdr[n++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        free(hdr);
        return;
    }
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(hdr, 1, n, f);
    for (int i = 0; i < l->n; i++) fwrite(l->t[i].data, 1, l->t[i].nbytes, f);
    fclose(f);
    free(hdr);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* ---- the fixture ---- */

/* Sets code v (bits wide) at position idx of the little-endian bit stream
 * whose words are w[0], w[stride], w[2 * stride], ..., one bit at a time. */
static void put_code(uint32_t *w, int64_t stride, int bits, int64_t idx, unsigned v) {
    for (int i = 0; i < bits; i++) {
        int64_t p = (int64_t)bits * idx + i;
        if ((v >> i) & 1u) w[(p / 32) * stride] |= 1u << (p % 32);
    }
}

/* One quantized linear layer and the values it was built from. */
typedef struct {
    char prefix[96], gguf[64];
    int64_t N, K, G;
    int group_len;              /* inputs per group (K for group_size -1) */
    uint8_t *q;                 /* [K][N] codes */
    uint8_t *z;                 /* [G][N] real zero points */
    float *s;                   /* [G][N] scales (fp16 values) */
    int32_t *gidx;              /* [K] */
    int perm_heads;             /* llama q/k: GGUF rows are permuted */
} qlayer;

typedef struct {
    const char *arch;           /* "llama" or "qwen2" */
    int bits, group;            /* group -1: one per column */
    int v1, sym;
    int gidx;                   /* 0 absent, 1 trivial, 2 act-order permutation */
    int in_config_json;         /* quantization_config in config.json, else quantize_config.json */
    int quant_lm_head, zero_bias;
    int64_t ff;                 /* intermediate_size */
    const char *scale_dtype;    /* "F16" (default), "BF16", "F32" */
    const char *fmt;            /* checkpoint_format written, or NULL */
    const char *base_name;      /* model_file_base_name (weights under that name), or NULL */
} fx_params;

typedef struct {
    fx_params p;
    tlist tl;
    qlayer ql[8];
    int nq;
    char qcfg[512];             /* the quantization config object, as JSON */
} fx;

static void make_qlayer(fx *f, const char *prefix, const char *gguf, int64_t N, int64_t K, int perm,
                        uint64_t *rng) {
    const fx_params *p = &f->p;
    qlayer *L = &f->ql[f->nq++];
    const int b = p->bits;
    const unsigned levels = 1u << b;
    snprintf(L->prefix, sizeof L->prefix, "%s", prefix);
    snprintf(L->gguf, sizeof L->gguf, "%s", gguf);
    L->N = N;
    L->K = K;
    L->group_len = p->group > 0 ? p->group : (int)K;
    L->G = (K + L->group_len - 1) / L->group_len;
    L->perm_heads = perm;
    L->q = malloc((size_t)(K * N));
    L->z = malloc((size_t)(L->G * N));
    L->s = malloc(sizeof(float) * (size_t)(L->G * N));
    L->gidx = malloc(sizeof(int32_t) * (size_t)K);
    for (int64_t i = 0; i < K * N; i++) L->q[i] = (uint8_t)(lb_test_rand(rng) % levels);
    for (int64_t i = 0; i < L->G * N; i++) {
        L->z[i] = (uint8_t)(p->sym ? levels / 2 : lb_test_rand(rng) % levels);
        if (i % 7 == 3 && !p->sym) L->z[i] = 0; /* v1 stores 0 - 1: all ones */
        float v = 0.001f + 0.05f * (float)(lb_test_rand(rng) % 1000) / 1000.0f;
        /* a value every scale dtype holds exactly, and fp16 too */
        L->s[i] = lb_bf16_to_f32(lb_f32_to_bf16(v));
    }
    for (int64_t k = 0; k < K; k++) L->gidx[k] = (int32_t)(k / L->group_len);
    if (p->gidx == 2) { /* act order: inputs visited in a random order, groups along that order */
        int64_t *order = malloc(sizeof(int64_t) * (size_t)K);
        for (int64_t k = 0; k < K; k++) order[k] = k;
        for (int64_t k = K - 1; k > 0; k--) {
            int64_t j = (int64_t)(lb_test_rand(rng) % (uint64_t)(k + 1)), t = order[k];
            order[k] = order[j];
            order[j] = t;
        }
        for (int64_t i = 0; i < K; i++) L->gidx[order[i]] = (int32_t)(i / L->group_len);
        free(order);
    }

    char name[160];
    snprintf(name, sizeof name, "%s.qweight", prefix);
    tens *qw = tl_set(&f->tl, name, "I32", K * b / 32, N);
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) put_code((uint32_t *)qw->data + n, N, b, k, L->q[k * N + n]);
    snprintf(name, sizeof name, "%s.qzeros", prefix);
    tens *qz = tl_set(&f->tl, name, "I32", L->G, N * b / 32);
    for (int64_t g = 0; g < L->G; g++)
        for (int64_t n = 0; n < N; n++) {
            unsigned z = L->z[g * N + n];
            unsigned stored = p->v1 ? (z + levels - 1) % levels : z;
            put_code((uint32_t *)qz->data + g * (N * b / 32), 1, b, n, stored);
        }
    snprintf(name, sizeof name, "%s.scales", prefix);
    const char *sdt = p->scale_dtype ? p->scale_dtype : "F16";
    tens *sc = tl_set(&f->tl, name, sdt, L->G, N);
    for (int64_t i = 0; i < L->G * N; i++) {
        if (!strcmp(sdt, "F32")) memcpy(sc->data + 4 * i, &L->s[i], 4);
        else {
            uint16_t h = !strcmp(sdt, "F16") ? lb_f32_to_fp16(L->s[i]) : lb_f32_to_bf16(L->s[i]);
            memcpy(sc->data + 2 * i, &h, 2);
        }
    }
    if (p->gidx) {
        snprintf(name, sizeof name, "%s.g_idx", prefix);
        tens *gi = tl_set(&f->tl, name, "I32", K, 0);
        memcpy(gi->data, L->gidx, sizeof(int32_t) * (size_t)K);
    }
    if (p->zero_bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        tl_set(&f->tl, name, "F16", N, 0);
    }
}

static void float_tensor(fx *f, const char *name, int64_t d0, int64_t d1, uint64_t *rng) {
    tens *t = tl_set(&f->tl, name, "F32", d0, d1);
    for (int64_t i = 0; i < d0 * (d1 ? d1 : 1); i++) {
        float v = d1 ? 0.05f * lb_test_randf(rng) : 1.0f + 0.1f * lb_test_randf(rng);
        memcpy(t->data + 4 * i, &v, 4);
    }
}

static void fx_build(fx *f, const fx_params *p) {
    memset(f, 0, sizeof *f);
    f->p = *p;
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(p->bits * 1000 + p->group * 10 + p->v1 + 2 * p->sym);
    const int llama = !strcmp(p->arch, "llama");
    const int64_t qd = NHEAD * HDIM, kvd = NKV * HDIM, ff = p->ff ? p->ff : 256;
    float_tensor(f, "model.embed_tokens.weight", VOCAB, H, &rng);
    float_tensor(f, "model.layers.0.input_layernorm.weight", H, 0, &rng);
    float_tensor(f, "model.layers.0.post_attention_layernorm.weight", H, 0, &rng);
    float_tensor(f, "model.norm.weight", H, 0, &rng);
    make_qlayer(f, "model.layers.0.self_attn.q_proj", "blk.0.attn_q.weight", qd, H, llama ? NHEAD : 0, &rng);
    make_qlayer(f, "model.layers.0.self_attn.k_proj", "blk.0.attn_k.weight", kvd, H, llama ? NKV : 0, &rng);
    make_qlayer(f, "model.layers.0.self_attn.v_proj", "blk.0.attn_v.weight", kvd, H, 0, &rng);
    make_qlayer(f, "model.layers.0.self_attn.o_proj", "blk.0.attn_output.weight", H, qd, 0, &rng);
    make_qlayer(f, "model.layers.0.mlp.gate_proj", "blk.0.ffn_gate.weight", ff, H, 0, &rng);
    make_qlayer(f, "model.layers.0.mlp.up_proj", "blk.0.ffn_up.weight", ff, H, 0, &rng);
    make_qlayer(f, "model.layers.0.mlp.down_proj", "blk.0.ffn_down.weight", H, ff, 0, &rng);
    if (p->quant_lm_head) make_qlayer(f, "lm_head", "output.weight", VOCAB, H, 0, &rng);
    else float_tensor(f, "lm_head.weight", VOCAB, H, &rng);
    if (!llama) { /* qwen2's own q/k/v biases */
        float_tensor(f, "model.layers.0.self_attn.q_proj.bias", qd, 0, &rng);
        float_tensor(f, "model.layers.0.self_attn.k_proj.bias", kvd, 0, &rng);
        float_tensor(f, "model.layers.0.self_attn.v_proj.bias", kvd, 0, &rng);
    }
    snprintf(f->qcfg, sizeof f->qcfg,
             "{\"bits\": %d, \"group_size\": %d, \"damp_percent\": 0.01, \"desc_act\": %s, \"static_groups\": false, "
             "\"sym\": %s, \"true_sequential\": true, \"quant_method\": \"gptq\"%s%s%s%s%s%s}",
             p->bits, p->group, p->gidx == 2 ? "true" : "false", p->sym ? "true" : "false",
             p->fmt ? ", \"checkpoint_format\": \"" : "", p->fmt ? p->fmt : "", p->fmt ? "\"" : "",
             p->base_name ? ", \"model_file_base_name\": \"" : "", p->base_name ? p->base_name : "",
             p->base_name ? "\"" : "");
}

static void fx_free(fx *f) {
    tl_free(&f->tl);
    for (int i = 0; i < f->nq; i++) {
        free(f->ql[i].q);
        free(f->ql[i].z);
        free(f->ql[i].s);
        free(f->ql[i].gidx);
    }
    f->nq = 0;
}

static const char *TOKENIZER =
    "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true},"
    " {\"id\": 10, \"content\": \"</s>\", \"special\": true}], \"normalizer\": null,"
    " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true,"
    " \"use_regex\": true},"
    " \"model\": {\"type\": \"BPE\", \"vocab\": {\"h\": 0, \"e\": 1, \"l\": 2, \"o\": 3, \"he\": 4, \"ll\": 5,"
    " \"hell\": 6, \"hello\": 7, \"\\u0120\": 8}, \"merges\": [\"h e\", \"l l\", \"he ll\", \"hell o\"]}}";

static void fx_write(const fx *f, const char *dir) {
    mkdir(dir, 0755);
    static const char *old[] = {"config.json", "quantize_config.json", "tokenizer.json", "model.safetensors",
                                "gptq_model-4bit-128g.safetensors"};
    char path[4300];
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, old[i]);
        remove(path);
    }
    const int llama = !strcmp(f->p.arch, "llama");
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": %d, \"intermediate_size\": %lld,"
             " \"num_hidden_layers\": 1, \"num_attention_heads\": %d, \"num_key_value_heads\": %d,"
             " \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-06, \"vocab_size\": %d,"
             " \"tie_word_embeddings\": false, \"bos_token_id\": 9, \"eos_token_id\": 10%s%s}",
             llama ? "LlamaForCausalLM" : "Qwen2ForCausalLM", llama ? "llama" : "qwen2", H,
             (long long)(f->p.ff ? f->p.ff : 256), NHEAD, NKV, VOCAB,
             f->p.in_config_json ? ", \"quantization_config\": " : "", f->p.in_config_json ? f->qcfg : "");
    write_text(dir, "config.json", cfg);
    if (!f->p.in_config_json) write_text(dir, "quantize_config.json", f->qcfg);
    write_text(dir, "tokenizer.json", TOKENIZER);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, f->p.base_name ? f->p.base_name : "model");
    tl_write(&f->tl, path);
}

/* ---- checks ---- */

static int gone(const char *path) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    return !lb_test_have(path) && !lb_test_have(tmp);
}

/* HF output channel that lands at GGUF row r (llama q/k: Meta's interleaved
 * pairs from HF's rotate-half halves, head by head). */
static int64_t hf_row(const qlayer *L, int64_t r) {
    if (!L->perm_heads) return r;
    int64_t per = L->N / L->perm_heads, half = per / 2, head = r / per, i = (r % per) / 2, j = r % 2;
    return head * per + j * half + i;
}

static float expect_w(const qlayer *L, int64_t n, int64_t k) {
    int64_t g = L->gidx[k];
    return L->s[g * L->N + n] * (float)((int)L->q[k * L->N + n] - (int)L->z[g * L->N + n]);
}

/* group_size -1: a GQ{b}_GC tensor holds the layer's codes, and its side
 * tensor NAME.gq_sz (F16 [2N]) each row's fp16 scale and zero, exactly; the
 * row dequantizes to exactly s * (q - z). */
static void check_gc(const gguf_file *g, const qlayer *L, int bits) {
    const int type = lb_gqc_type(bits);
    char side[128];
    snprintf(side, sizeof side, "%s%s", L->gguf, LB_GQC_SFX);
    const gguf_tensor *t = gguf_find_tensor(g, L->gguf), *sz = gguf_find_tensor(g, side);
    CHECK_MSG(t && (int)t->type == type && t->n_dims == 2 && t->ne[0] == L->K && t->ne[1] == L->N, "%s: type or shape",
              L->gguf);
    CHECK_MSG(sz && sz->type == LB_TYPE_F16 && sz->n_dims == 1 && sz->ne[0] == 2 * L->N, "%s: type or shape", side);
    if (!t || !sz || (int)t->type != type || t->ne[0] != L->K || t->ne[1] != L->N || sz->ne[0] != 2 * L->N) return;
    const uint64_t row = lb_row_size(type, L->K);
    CHECK(row == (uint64_t)(L->K * bits / 8) && t->size == row * (uint64_t)L->N);
    float *deq = malloc(sizeof(float) * (size_t)L->K);
    int64_t bad_code = 0, bad_s = 0, bad_z = 0, bad_w = 0;
    const lb_fp16 *sv = sz->data;
    for (int64_t r = 0; r < L->N; r++) {
        const int64_t n = hf_row(L, r);
        const unsigned char *rowp = (const unsigned char *)t->data + r * row;
        for (int64_t k = 0; k < L->K; k++)
            bad_code += lb_gq_get_code(rowp + (k / 128) * 16 * bits, bits, (int)(k % 128)) != L->q[k * L->N + n];
        bad_s += sv[2 * r] != lb_f32_to_fp16(L->s[n]);
        bad_z += lb_fp16_to_f32(sv[2 * r + 1]) != (float)L->z[n];
        lb_gqc_dequantize_row(type, rowp, deq, L->K, sv[2 * r], (int)lb_fp16_to_f32(sv[2 * r + 1]));
        for (int64_t k = 0; k < L->K; k++) {
            float w = expect_w(L, n, k);
            bad_w += memcmp(&w, &deq[k], 4) != 0;
        }
    }
    CHECK_MSG(!bad_code && !bad_s && !bad_z && !bad_w, "%s: %lld codes, %lld scales, %lld zeros, %lld weights differ",
              L->gguf, (long long)bad_code, (long long)bad_s, (long long)bad_z, (long long)bad_w);
    free(deq);
}

/* A GQ tensor holds the layer's codes, fp16 scales and zeros exactly, and
 * dequantizes to exactly s * (q - z). */
static void check_gq(const gguf_file *g, const qlayer *L, int bits, int group) {
    if (group == -1) {
        check_gc(g, L, bits);
        return;
    }
    const gguf_tensor *t = gguf_find_tensor(g, L->gguf);
    CHECK_MSG(t != NULL, "%s missing", L->gguf);
    if (!t) return;
    int type = lb_gq_type(bits, group);
    CHECK_MSG((int)t->type == type, "%s: type %u, expected %s", L->gguf, t->type, lb_type_name(type));
    CHECK(t->n_dims == 2 && t->ne[0] == L->K && t->ne[1] == L->N);
    if ((int)t->type != type || t->ne[0] != L->K || t->ne[1] != L->N) return;
    const uint64_t row = lb_row_size(type, L->K), bsz = (uint64_t)LB_GQ_SIZE(bits, group);
    CHECK(row == bsz * (uint64_t)(L->K / 128) && t->size == row * (uint64_t)L->N);
    float *deq = malloc(sizeof(float) * (size_t)L->K);
    int64_t bad_code = 0, bad_s = 0, bad_z = 0, bad_w = 0;
    for (int64_t r = 0; r < L->N; r++) {
        const int64_t n = hf_row(L, r);
        const unsigned char *rowp = (const unsigned char *)t->data + r * row;
        for (int64_t b = 0; b < L->K / 128; b++) {
            const unsigned char *blk = rowp + b * bsz;
            for (int j = 0; j < 128; j++) bad_code += lb_gq_get_code(blk, bits, j) != L->q[(b * 128 + j) * L->N + n];
            for (int j = 0; j < 128 / group; j++) {
                int64_t gi = (b * 128) / group + j;
                uint16_t h;
                memcpy(&h, blk + LB_GQ_S_OFF(bits) + 2 * j, 2);
                bad_s += h != lb_f32_to_fp16(L->s[gi * L->N + n]);
                bad_z += blk[LB_GQ_Z_OFF(bits, group) + j] != L->z[gi * L->N + n];
            }
        }
        lb_traits(type)->to_float(rowp, deq, L->K);
        for (int64_t k = 0; k < L->K; k++) {
            float w = expect_w(L, n, k);
            bad_w += memcmp(&w, &deq[k], 4) != 0;
        }
    }
    CHECK_MSG(!bad_code && !bad_s && !bad_z && !bad_w, "%s: %lld codes, %lld scales, %lld zeros, %lld weights differ",
              L->gguf, (long long)bad_code, (long long)bad_s, (long long)bad_z, (long long)bad_w);
    free(deq);
}

/* A dequantized tensor (F32: exactly s * (q - z); F16: that, rounded). */
static void check_float(const gguf_file *g, const qlayer *L, int type) {
    const gguf_tensor *t = gguf_find_tensor(g, L->gguf);
    CHECK_MSG(t && (int)t->type == type && t->ne[0] == L->K && t->ne[1] == L->N, "%s: missing, type or shape",
              L->gguf);
    if (!t || (int)t->type != type || t->ne[0] != L->K || t->ne[1] != L->N) return;
    int64_t bad = 0;
    for (int64_t r = 0; r < L->N; r++)
        for (int64_t k = 0; k < L->K; k++) {
            float w = expect_w(L, hf_row(L, r), k);
            if (type == LB_TYPE_F32) bad += memcmp(&w, (const float *)t->data + r * L->K + k, 4) != 0;
            else bad += ((const uint16_t *)t->data)[r * L->K + k] != lb_f32_to_fp16(w);
        }
    CHECK_MSG(bad == 0, "%s: %lld of %lld weights differ", L->gguf, (long long)bad, (long long)(L->N * L->K));
}

/* The file loads in lowbit's model loader and evaluates to finite logits. */
static void check_runs(const char *path) {
    lb_model *m = NULL;
    CHECK_OK(lb_model_load(path, NULL, &m));
    if (!m) return;
    lb_context *ctx = NULL;
    lb_context_params cp = lb_context_default_params();
    cp.n_threads = 1;
    CHECK_OK(lb_context_new(m, &cp, &ctx));
    if (ctx) {
        const int32_t ids[4] = {9, 7, 8, 3};
        float logits[VOCAB];
        int finite = 1;
        CHECK_OK(lb_eval(ctx, ids, 4, 0, logits, 0));
        for (int i = 0; i < VOCAB; i++) finite &= isfinite(logits[i]) != 0;
        CHECK(finite);
        lb_context_free(ctx);
    }
    lb_model_free(m);
}

static lb_status convert(const char *dir, const char *out, int type, int dequantize) {
    remove(out);
    lb_convert_hf_options o = {type, dequantize};
    return lb_convert_hf_ex(dir, out, &o, NULL, NULL);
}

/* ---- tests ---- */

static void test_keep(const char *dir, const fx_params *p) {
    fx f;
    fx_build(&f, p);
    fx_write(&f, dir);
    char out[4300];
    snprintf(out, sizeof out, "%s.gguf", dir);
    lb_status s = convert(dir, out, LB_TYPE_F32, 0);
    CHECK_MSG(s == LB_OK, "%s %d-bit g%d v%d sym %d: %s", p->arch, p->bits, p->group, p->v1 ? 1 : 2, p->sym,
              lb_last_error());
    gguf_file *g = NULL;
    if (s == LB_OK) CHECK_OK(gguf_open(out, &g));
    if (g) {
        for (int i = 0; i < f.nq; i++) check_gq(g, &f.ql[i], p->bits, p->group);
        const gguf_tensor *e = gguf_find_tensor(g, "token_embd.weight");
        const gguf_tensor *o = gguf_find_tensor(g, "output.weight");
        CHECK(e && e->type == LB_TYPE_F32 && !memcmp(e->data, tl_find(&f.tl, "model.embed_tokens.weight")->data,
                                                     e->size));
        CHECK(o && (p->quant_lm_head || o->type == LB_TYPE_F32));
        uint32_t ft;
        CHECK(!gguf_get_u32(g, "general.file_type", &ft)); /* GQ has no llama.cpp file type */
        CHECK(!gguf_find_tensor(g, "blk.0.attn_output.bias")); /* zero biases are dropped */
        CHECK(!strcmp(p->arch, "qwen2") || !gguf_find_tensor(g, "blk.0.attn_q.bias"));
        gguf_close(g);
        check_runs(out);
    }
    remove(out);
    fx_free(&f);
}

/* Matrices no GQ type holds: refused with the reason and the way out; with
 * dequantize, exact floats. */
static void test_dequantize(const char *dir, const fx_params *p, const char *why) {
    fx f;
    fx_build(&f, p);
    fx_write(&f, dir);
    char out[4300];
    snprintf(out, sizeof out, "%s.gguf", dir);
    lb_status s = convert(dir, out, LB_TYPE_F32, 0);
    CHECK_MSG(s == LB_ERR_UNSUPPORTED, "%s: status %s", why, lb_status_name(s));
    CHECK_MSG(strstr(lb_last_error(), why) && strstr(lb_last_error(), "--dequantize"), "message \"%s\" lacks \"%s\"",
              lb_last_error(), why);
    CHECK(gone(out));
    static const int types[] = {LB_TYPE_F32, LB_TYPE_F16};
    for (int i = 0; i < 2; i++) {
        s = convert(dir, out, types[i], 1);
        CHECK_MSG(s == LB_OK, "%s --dequantize: %s", why, lb_last_error());
        gguf_file *g = NULL;
        if (s == LB_OK) CHECK_OK(gguf_open(out, &g));
        if (!g) continue;
        for (int k = 0; k < f.nq; k++) check_float(g, &f.ql[k], types[i]);
        uint32_t ft;
        CHECK(gguf_get_u32(g, "general.file_type", &ft) && ft == (types[i] == LB_TYPE_F32 ? 0u : 1u));
        gguf_close(g);
        if (i == 0) check_runs(out);
        remove(out);
    }
    fx_free(&f);
}

/* --dequantize on a checkpoint GQ could keep: exact floats all the same. */
static void test_dequantize_keepable(const char *dir, const fx_params *p) {
    fx f;
    fx_build(&f, p);
    fx_write(&f, dir);
    char out[4300];
    snprintf(out, sizeof out, "%s.gguf", dir);
    const lb_status s = convert(dir, out, LB_TYPE_F32, 1);
    CHECK_MSG(s == LB_OK, "%d-bit g%d --dequantize: %s", p->bits, p->group, lb_last_error());
    gguf_file *g = NULL;
    if (s == LB_OK) CHECK_OK(gguf_open(out, &g));
    if (g) {
        for (int k = 0; k < f.nq; k++) check_float(g, &f.ql[k], LB_TYPE_F32);
        CHECK(!gguf_find_tensor(g, "blk.0.attn_q.weight.gq_sz"));
        gguf_close(g);
        check_runs(out);
    }
    remove(out);
    fx_free(&f);
}

static fx_params base_params(void) {
    fx_params p = {"qwen2", 4, 128, 0, 0, 0, 0, 0, 0, 0, NULL, "gptq_v2", NULL};
    return p;
}

static void expect_fail(const char *dir, const fx *f, int dequantize, lb_status want, const char *part) {
    fx_write(f, dir);
    char out[4300];
    snprintf(out, sizeof out, "%s.gguf", dir);
    lb_status s = convert(dir, out, LB_TYPE_F32, dequantize);
    CHECK_MSG(s == want, "\"%s\": status %s, expected %s (%s)", part, lb_status_name(s), lb_status_name(want),
              lb_last_error());
    CHECK_MSG(strstr(lb_last_error(), part) != NULL, "message \"%s\" lacks \"%s\"", lb_last_error(), part);
    CHECK_MSG(gone(out), "output left behind after: %s", part);
}

static void fill_f32(tens *t, float v) {
    for (size_t i = 0; i < t->nbytes / 4; i++) memcpy(t->data + 4 * i, &v, 4);
}

static void test_errors(const char *dir) {
    const char *up = "model.layers.0.mlp.up_proj";
    char name[160];
    fx f;
    fx_params p = base_params();
    const int64_t K = H, N = 256, G = 1;

#define CASE(setup, deq, want, part)                                                                  \
    do {                                                                                             \
        fx_build(&f, &p);                                                                            \
        setup;                                                                                       \
        expect_fail(dir, &f, deq, want, part);                                                       \
        fx_free(&f);                                                                                 \
    } while (0)
#define NAME(suffix) (snprintf(name, sizeof name, "%s.%s", up, suffix), name)

    /* shapes */
    CASE(tl_set(&f.tl, NAME("qweight"), "I32", K * 4 / 32 + 1, N), 0, LB_ERR_FORMAT, "up_proj.qweight\" has shape [17, 256]");
    CASE(tl_set(&f.tl, NAME("qweight"), "I32", K * 4 / 32, N - 8), 0, LB_ERR_FORMAT, "need [16, 256]");
    CASE(tl_set(&f.tl, NAME("scales"), "F16", G + 1, N), 0, LB_ERR_FORMAT, "up_proj.scales\" has shape [2, 256]");
    CASE(tl_set(&f.tl, NAME("qzeros"), "I32", G, N * 4 / 32 - 1), 0, LB_ERR_FORMAT, "up_proj.qzeros\" has shape [1, 31]");
    CASE(tl_set(&f.tl, NAME("g_idx"), "I32", K - 1, 0), 0, LB_ERR_FORMAT, "up_proj.g_idx\" has shape [127]");
    /* g_idx entries out of range (too large, negative) */
    CASE(((int32_t *)tl_set(&f.tl, NAME("g_idx"), "I32", K, 0)->data)[5] = 1, 0, LB_ERR_FORMAT,
         "entry 5 is 1, outside the 1 groups");
    CASE(((int32_t *)tl_set(&f.tl, NAME("g_idx"), "I32", K, 0)->data)[0] = -3, 1, LB_ERR_FORMAT,
         "entry 0 is -3, outside");
    /* missing parts, dtypes */
    CASE(tl_remove(&f.tl, NAME("qzeros")), 0, LB_ERR_FORMAT, "missing tensor \"model.layers.0.mlp.up_proj.qzeros\"");
    CASE(tl_remove(&f.tl, NAME("scales")), 0, LB_ERR_FORMAT, "missing tensor \"model.layers.0.mlp.up_proj.scales\"");
    CASE(tl_remove(&f.tl, NAME("qweight")), 0, LB_ERR_FORMAT, "missing tensor \"model.layers.0.mlp.up_proj.qweight\"");
    CASE(tl_set(&f.tl, NAME("qweight"), "F32", K * 4 / 32, N), 0, LB_ERR_FORMAT, "qweight\" has dtype F32");
    CASE(tl_set(&f.tl, NAME("qweight"), "I16", K * 4 / 32, N), 0, LB_ERR_FORMAT, "qweight\" has dtype I16");
    CASE(tl_set(&f.tl, NAME("scales"), "I32", G, N), 0, LB_ERR_FORMAT, "scales\" has dtype I32");
    CASE(tl_set(&f.tl, NAME("qzeros"), "F16", G, N * 4 / 32), 0, LB_ERR_FORMAT, "qzeros\" has dtype F16");
    CASE(tl_set(&f.tl, NAME("g_idx"), "F32", K, 0), 0, LB_ERR_FORMAT, "g_idx\" has dtype F32");
    /* both a float weight and GPTQ tensors for one layer */
    CASE(tl_set(&f.tl, NAME("weight"), "F16", N, K), 0, LB_ERR_FORMAT, "both hold layer");
    /* a bias the model has no place for */
    CASE(((uint16_t *)tl_set(&f.tl, "model.layers.0.self_attn.o_proj.bias", "F16", H, 0)->data)[3] = 0x3c00, 0,
         LB_ERR_UNSUPPORTED, "o_proj.bias\" is not all zeros");
    /* scales no fp16 holds exactly (GQ keeps fp16 scales); dequantizing is fine */
    CASE(fill_f32(tl_set(&f.tl, NAME("scales"), "F32", G, N), 0.1f), 0, LB_ERR_UNSUPPORTED,
         "scale 0 (0.1) is not exactly an fp16 value");
    /* group_size -1 (GQ{b}_GC): one group, so scales [1, N] and g_idx all 0 */
    p.group = -1;
    CASE(tl_set(&f.tl, NAME("scales"), "F16", G + 1, N), 0, LB_ERR_FORMAT, "up_proj.scales\" has shape [2, 256]");
    CASE(fill_f32(tl_set(&f.tl, NAME("scales"), "F32", G, N), 0.1f), 0, LB_ERR_UNSUPPORTED,
         "scale 0 (0.1) is not exactly an fp16 value");
    CASE(((int32_t *)tl_set(&f.tl, NAME("g_idx"), "I32", K, 0)->data)[7] = 1, 0, LB_ERR_FORMAT,
         "entry 7 is 1, outside the 1 groups");
    CASE(tl_set(&f.tl, NAME("qzeros"), "I32", G + 1, N * 4 / 32), 0, LB_ERR_FORMAT, "up_proj.qzeros\" has shape [2, 32]");
    p.group = 128;
    /* config */
#define CFG(...) snprintf(f.qcfg, sizeof f.qcfg, __VA_ARGS__)
    CASE(CFG("{\"bits\": 5, \"group_size\": 128}"), 0, LB_ERR_UNSUPPORTED, "bits 5 is not supported");
    CASE(CFG("{\"bits\": 1, \"group_size\": 128}"), 1, LB_ERR_UNSUPPORTED, "bits 1 is not supported");
    CASE(CFG("{\"bits\": 8, \"group_size\": 128}"), 0, LB_ERR_UNSUPPORTED, "bits 8 cannot be kept as a GQ type");
    CASE(CFG("{\"bits\": 8, \"group_size\": -1}"), 0, LB_ERR_UNSUPPORTED, "bits 8 cannot be kept as a GQ type");
    CASE(CFG("{\"bits\": 4, \"group_size\": 0}"), 1, LB_ERR_FORMAT, "group_size 0 is invalid");
    CASE(CFG("{\"bits\": 4, \"group_size\": -2}"), 0, LB_ERR_FORMAT, "group_size -2 is invalid");
    CASE(CFG("{\"bits\": 4, \"group_size\": 7}"), 0, LB_ERR_UNSUPPORTED, "group_size 7 cannot be kept");
    CASE(CFG("{\"bits\": 4}"), 0, LB_ERR_FORMAT, "\"group_size\" is missing");
    CASE(CFG("{\"group_size\": 128}"), 0, LB_ERR_FORMAT, "\"bits\" is missing");
    CASE(CFG("{\"bits\": \"4\", \"group_size\": 128}"), 0, LB_ERR_FORMAT, "\"bits\" is missing or not an integer");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"desc_act\": 1}"), 0, LB_ERR_FORMAT, "\"desc_act\" is not a boolean");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"checkpoint_format\": \"marlin\"}"), 0, LB_ERR_UNSUPPORTED,
         "checkpoint format \"marlin\"");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"is_marlin_format\": true}"), 0, LB_ERR_UNSUPPORTED,
         "checkpoint format \"marlin\"");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"pack_dtype\": \"int16\"}"), 0, LB_ERR_UNSUPPORTED,
         "pack_dtype \"int16\"");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"quant_method\": \"awq\"}"), 0, LB_ERR_UNSUPPORTED,
         "quant_method \"awq\"");
    CASE(CFG("[4, 128]"), 0, LB_ERR_FORMAT, "quantize_config.json is not a JSON object");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"desc_act\": true}"), 0, LB_ERR_FORMAT,
         "desc_act (inputs in activation order) but \"model.layers.0.self_attn.q_proj.g_idx\" is missing");
    /* bits in the config that do not match the tensors: their shapes say so */
    CASE(CFG("{\"bits\": 2, \"group_size\": 128}"), 0, LB_ERR_FORMAT, "at 2 bits need [8, 128]");
    p.in_config_json = 1;
    CASE(CFG("{\"bits\": 4, \"group_size\": 128, \"quant_method\": \"awq\"}"), 0, LB_ERR_UNSUPPORTED,
         "quantization_config: quant_method \"awq\" is not supported");
    CASE(CFG("{\"bits\": 4, \"group_size\": 128}"), 0, LB_ERR_FORMAT, "\"quant_method\" is missing");
    /* GPTQ tensors without any quantization config */
    CASE(CFG("null"), 0, LB_ERR_FORMAT, "looks like a GPTQ checkpoint");
#undef CFG
#undef NAME
#undef CASE
}

/* A llama checkpoint's non-zero q/k/v biases (AutoGPTQ saves a bias for every
 * layer) go where the loader reads them, q and k rows permuted like the
 * weights; zero ones are dropped. */
static void test_qkv_bias(const char *dir) {
    fx f;
    fx_params p = {"llama", 4, 128, 1, 0, 1, 0, 0, 1, 0, NULL, "gptq", NULL};
    fx_build(&f, &p);
    tens *b = tl_set(&f.tl, "model.layers.0.self_attn.q_proj.bias", "F32", NHEAD * HDIM, 0);
    for (int i = 0; i < NHEAD * HDIM; i++) ((float *)b->data)[i] = (float)(i + 1);
    fx_write(&f, dir);
    char out[4300];
    snprintf(out, sizeof out, "%s.gguf", dir);
    CHECK_OK(convert(dir, out, LB_TYPE_F32, 0));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        const gguf_tensor *t = gguf_find_tensor(g, "blk.0.attn_q.bias");
        CHECK(t && t->type == LB_TYPE_F32 && t->ne[0] == NHEAD * HDIM);
        int bad = 0;
        for (int r = 0; t && r < NHEAD * HDIM; r++) bad += ((const float *)t->data)[r] != (float)(hf_row(&f.ql[0], r) + 1);
        CHECK(t && bad == 0);
        CHECK(!gguf_find_tensor(g, "blk.0.attn_k.bias") && !gguf_find_tensor(g, "blk.0.ffn_up.bias"));
        check_gq(g, &f.ql[0], 4, 128);
        gguf_close(g);
        check_runs(out);
    }
    remove(out);
    fx_free(&f);
}

/* With LB_WRITE_GPTQ_FIXTURE=DIR: only write DIR/keep (4-bit, group 128,
 * v1, a quantized lm_head), DIR/actorder (desc_act, permuted g_idx) and
 * DIR/column (3-bit, group_size -1, desc_act) for tests/cli_convert_gptq.sh. */
static int write_fixtures(const char *dir) {
    char sub[4300];
    mkdir(dir, 0755);
    fx f;
    fx_params keep = {"llama", 4, 128, 1, 0, 1, 0, 1, 1, 0, NULL, "gptq", NULL};
    fx_params act = {"qwen2", 4, 32, 0, 1, 2, 1, 0, 0, 0, NULL, "gptq_v2", NULL};
    fx_build(&f, &keep);
    snprintf(sub, sizeof sub, "%s/keep", dir);
    fx_write(&f, sub);
    fx_free(&f);
    fx_build(&f, &act);
    snprintf(sub, sizeof sub, "%s/actorder", dir);
    fx_write(&f, sub);
    fx_free(&f);
    fx_params col = {"llama", 3, -1, 1, 0, 2, 1, 0, 1, 0, NULL, "gptq", NULL};
    fx_build(&f, &col);
    snprintf(sub, sizeof sub, "%s/column", dir);
    fx_write(&f, sub);
    fx_free(&f);
    return 0;
}

int main(void) {
    const char *fixture = getenv("LB_WRITE_GPTQ_FIXTURE");
    if (fixture && *fixture) return write_fixtures(fixture);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("gptq_hf"));
    /* arch, bits, group, v1, sym, g_idx, config.json, lm_head, zero biases, ff, scale dtype, format, file */
    static const fx_params keep[] = {
        {"llama", 4, 128, 1, 1, 1, 0, 1, 1, 0, NULL, NULL, NULL},       /* old AutoGPTQ: no checkpoint_format */
        {"qwen2", 4, 32, 0, 0, 0, 1, 0, 0, 0, NULL, "gptq_v2", NULL},
        {"llama", 4, 32, 1, 0, 1, 1, 0, 1, 0, "BF16", "gptq", NULL},
        {"qwen2", 3, 128, 0, 0, 1, 0, 0, 0, 0, NULL, "gptq_v2", NULL},
        {"llama", 3, 32, 1, 0, 0, 0, 1, 0, 0, NULL, "gptq", "gptq_model-4bit-128g"},
        {"qwen2", 3, 32, 1, 1, 1, 1, 0, 0, 0, "F32", "gptq", NULL},
        {"llama", 2, 32, 1, 1, 1, 1, 0, 1, 0, NULL, "gptq", NULL},
        {"qwen2", 2, 128, 0, 0, 0, 0, 1, 0, 0, NULL, "gptq_v2", NULL},
        {"llama", 2, 128, 1, 0, 1, 0, 0, 0, 0, NULL, "gptq", NULL},
        {"qwen2", 4, 64, 0, 1, 1, 0, 0, 0, 0, NULL, "gptq_v2", NULL},
        {"llama", 3, 16, 1, 0, 1, 1, 0, 0, 0, NULL, "gptq", NULL},
        /* group_size -1: one group per column, GQ{b}_GC */
        {"llama", 4, -1, 1, 1, 1, 1, 0, 0, 0, NULL, "gptq", NULL},
        {"qwen2", 3, -1, 0, 0, 0, 0, 1, 0, 0, NULL, "gptq_v2", NULL},
        {"llama", 2, -1, 1, 0, 1, 1, 1, 1, 0, "BF16", "gptq", NULL},
        {"qwen2", 4, -1, 1, 0, 0, 0, 0, 0, 0, "F32", "gptq", "gptq_model-4bit-128g"},
        /* desc_act with one group per column: g_idx is all zeros, nothing to regroup */
        {"llama", 4, -1, 1, 0, 2, 1, 0, 0, 0, NULL, "gptq", NULL},
        {"qwen2", 3, -1, 0, 1, 2, 0, 0, 0, 0, NULL, "gptq_v2", NULL},
    };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) test_keep(dir, &keep[i]);

    fx_params p = {"llama", 4, 32, 1, 0, 2, 0, 0, 0, 0, NULL, "gptq", NULL}; /* desc_act: permuted g_idx */
    test_dequantize(dir, &p, "g_idx reorders the inputs");
    p.bits = 3, p.v1 = 0, p.fmt = "gptq_v2", p.arch = "qwen2";
    test_dequantize(dir, &p, "g_idx reorders the inputs");
    p = (fx_params){"llama", 4, -1, 1, 1, 1, 1, 0, 0, 0, NULL, "gptq", NULL}; /* one group per column */
    test_dequantize_keepable(dir, &p);
    p = (fx_params){"qwen2", 2, -1, 0, 0, 2, 0, 0, 0, 0, NULL, "gptq_v2", NULL};
    test_dequantize_keepable(dir, &p);
    p = (fx_params){"llama", 4, -1, 1, 0, 1, 0, 0, 0, 160, NULL, "gptq", NULL}; /* down_proj: K = 160 */
    test_dequantize(dir, &p, "160 inputs is not a multiple of 128");
    p = (fx_params){"qwen2", 8, 32, 1, 0, 1, 0, 1, 0, 0, NULL, "gptq", NULL};
    test_dequantize(dir, &p, "bits 8");
    p = (fx_params){"llama", 2, 32, 0, 0, 1, 0, 0, 0, 160, NULL, "gptq_v2", NULL}; /* down_proj: K = 160 */
    test_dequantize(dir, &p, "160 inputs is not a multiple of 128");
    p = (fx_params){"qwen2", 4, 48, 1, 0, 0, 0, 0, 0, 0, NULL, "gptq", NULL};
    test_dequantize(dir, &p, "group_size 48 cannot be kept");

    test_qkv_bias(dir);
    test_errors(dir);
    return lb_test_result("test_import_gptq");
}
