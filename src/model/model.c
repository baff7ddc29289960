/* Model-level queries and the summary lines `info` and `bench` print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/abq.h"
#include "formats/gc.h"
#include "formats/mx.h"
#include "formats/repack.h"
#include "model/model.h"
#include "model/repack.h"

static void count_matrix(const lb_matrix *w, uint64_t *bytes_by_type, int64_t *params) {
    if (!w->data) return;
    *params += w->K * w->N;
    bytes_by_type[w->type] += lb_matrix_bytes(w);
}

/* llama.cpp's name of a general.file_type value (LLAMA_FTYPE_*, as its
 * llama_model_ftype_name), so desc reads like llama-bench's model column. */
static const char *ftype_name(uint32_t ft) {
    static const char *const names[] = {
        [0] = "all F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0", [9] = "Q5_1",
        [10] = "Q2_K - Medium", [11] = "Q3_K - Small", [12] = "Q3_K - Medium", [13] = "Q3_K - Large",
        [14] = "Q4_K - Small", [15] = "Q4_K - Medium", [16] = "Q5_K - Small", [17] = "Q5_K - Medium",
        [18] = "Q6_K", [19] = "IQ2_XXS - 2.0625 bpw", [20] = "IQ2_XS - 2.3125 bpw", [21] = "Q2_K - Small",
        [22] = "IQ3_XS - 3.3 bpw", [23] = "IQ3_XXS - 3.0625 bpw", [24] = "IQ1_S - 1.5625 bpw",
        [25] = "IQ4_NL - 4.5 bpw", [26] = "IQ3_S - 3.4375 bpw", [27] = "IQ3_S mix - 3.66 bpw",
        [28] = "IQ2_S - 2.5 bpw", [29] = "IQ2_M - 2.7 bpw", [30] = "IQ4_XS - 4.25 bpw",
        [31] = "IQ1_M - 1.75 bpw", [32] = "BF16", [36] = "TQ1_0 - 1.69 bpw ternary",
        [37] = "TQ2_0 - 2.06 bpw ternary", [38] = "MXFP4 - 4.25 bpw"};
    return ft < sizeof names / sizeof *names ? names[ft] : NULL;
}

/* llama.cpp's general.file_type (LLAMA_FTYPE_*) for a file of type t (its
 * base type): mixed = 0, every matrix is t, as lowbit quantize writes it
 * (Q4_K, Q5_K: the _S names); mixed = 1, t is the type most tensors have, as
 * llama.cpp guesses when the key is absent (_M). -1 for types it lacks. */
int lb_llama_ftype(int t, int mixed) {
    switch (lb_type_base(t)) {
    case LB_TYPE_F32: return 0;
    case LB_TYPE_F16: return 1;
    case LB_TYPE_BF16: return 32;
    case LB_TYPE_Q4_0: return 2;
    case LB_TYPE_Q4_1: return 3;
    case LB_TYPE_Q5_0: return 8;
    case LB_TYPE_Q5_1: return 9;
    case LB_TYPE_Q8_0: return 7;
    case LB_TYPE_Q2_K: return 10;
    case LB_TYPE_Q3_K: return 12;
    case LB_TYPE_Q4_K: return mixed ? 15 : 14;
    case LB_TYPE_Q5_K: return mixed ? 17 : 16;
    case LB_TYPE_Q6_K: return 18;
    case LB_TYPE_IQ4_NL: return 25;
    case LB_TYPE_IQ4_XS: return 30;
    case LB_TYPE_MXFP4: return 38; /* ik_llama.cpp's name; mainline's "MXFP4 MoE" */
    default: return -1;
    }
}

/* From the file, as llama.cpp counts: size and parameters over every tensor
 * (llama_model_size / llama_model_n_params: norms and biases included, a
 * tied output counted once as it is stored once), and the file type from
 * general.file_type, else guessed from the type most tensors have. */
static lb_status from_file(lb_model *m, const gguf_file *g) {
    enum { NT = 2048 };
    int *count = calloc(NT, sizeof *count);
    if (!count) return lb_fail(LB_ERR_NOMEM, "out of memory");
    uint64_t bytes = 0;
    int64_t params = 0;
    int top = -1, top_count = 0, n_mx = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        int64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
        bytes += t->size;
        n_mx += t->type == LB_TYPE_MX2;
        /* an MX matrix's weights are its tiles' (MX2 and MX4 count one per
         * weight); its map and outliers add bytes, not parameters */
        if ((t->type == LB_TYPE_I8 || t->type == LB_TYPE_I32) && lb_mx_side_piece(t->name.ptr, t->name.len)) continue;
        /* so are a GC matrix's grids (formats/gc.h) */
        if (t->type == LB_GQC_SIDE_TYPE && lb_gc_is_side(t->name.ptr, t->name.len)) continue;
        params += n;
        if (t->type < NT && ++count[t->type] > top_count) { top_count = count[t->type]; top = (int)t->type; }
    }
    free(count);
    m->n_params = params;
    m->weight_bytes = bytes;
    uint32_t ft;
    if (n_mx) {
        snprintf(m->ftype_name, sizeof m->ftype_name, "MX 2/4/16-bit");
    } else if (gguf_get_u32(g, "general.file_type", &ft)) {
        if (ftype_name(ft)) snprintf(m->ftype_name, sizeof m->ftype_name, "%s", ftype_name(ft));
        else snprintf(m->ftype_name, sizeof m->ftype_name, "file type %u (unknown)", ft);
    } else if (top >= 0) {
        const int gf = lb_llama_ftype(top, 1);
        snprintf(m->ftype_name, sizeof m->ftype_name, "%s (guessed)",
                 gf >= 0 ? ftype_name((uint32_t)gf) : lb_type_name(top) ? lb_type_name(top) : "?");
    }
    return LB_OK;
}

int lb_layer_n_matrices(const lb_hparams *hp) {
    return 7 + (hp->n_expert ? 1 + 3 * hp->n_expert : 0) + (hp->arch == LB_ARCH_DEEPSEEK2 ? 3 + 2 * hp->n_head : 0);
}

int lb_legacy_expert_name(const char *name, size_t len, int *il, char part[16], int *e) {
    char buf[96];
    int end = 0;
    if (len >= sizeof buf) return 0;
    memcpy(buf, name, len);
    buf[len] = 0;
    return sscanf(buf, "blk.%d.ffn_%15[a-z].%d.weight%n", il, part, e, &end) == 3 && end == (int)len &&
           (!strcmp(part, "gate") || !strcmp(part, "up") || !strcmp(part, "down"));
}

int lb_layer_matrices(const lb_hparams *hp, lb_layer *l, lb_matrix **out) {
    lb_matrix *dense[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    int n = 0;
    for (int i = 0; i < 7; i++)
        if (dense[i]->data) out[n++] = dense[i];
    if (hp->n_expert && l->router.data) {
        out[n++] = &l->router;
        for (int e = 0; e < hp->n_expert; e++) out[n++] = &l->exp_gate[e];
        for (int e = 0; e < hp->n_expert; e++) out[n++] = &l->exp_up[e];
        for (int e = 0; e < hp->n_expert; e++) out[n++] = &l->exp_down[e];
    }
    lb_matrix *mla[] = {&l->wq_a, &l->wq_b, &l->wkv_a};
    for (int i = 0; i < 3; i++)
        if (mla[i]->data) out[n++] = mla[i];
    for (int h = 0; l->wk_b && h < hp->n_head; h++) out[n++] = &l->wk_b[h];
    for (int h = 0; l->wv_b && h < hp->n_head; h++) out[n++] = &l->wv_b[h];
    return n;
}

/* A matrix of type t (the first: Q of layer 0 before the others), for the
 * kernel summary: an ABQ type's kernel depends on its activation bits. */
static const lb_matrix *first_of_type(const lb_model *m, int t) {
    lb_matrix *ws[LB_LAYER_MATRICES_MAX];
    for (int il = 0; il < m->hp.n_layer; il++) {
        const int nw = lb_layer_matrices(&m->hp, &m->layers[il], ws);
        for (int i = 0; i < nw; i++)
            if (ws[i]->type == t) return ws[i];
    }
    return m->tok_embd.type == t ? &m->tok_embd : m->output.type == t ? &m->output : NULL;
}

lb_status lb_model_finish(lb_model *m) {
    enum { NT = 2048 };
    const int tied = m->output.data == m->tok_embd.data; /* before repacking gives output its own copy */
    lb_status rs = lb_model_repack(m);
    if (rs != LB_OK) return rs;
    uint64_t *bytes = calloc(NT, sizeof *bytes);
    if (!bytes) return lb_fail(LB_ERR_NOMEM, "out of memory");
    int64_t params = 0;
    const lb_hparams *hp = &m->hp;
    count_matrix(&m->tok_embd, bytes, &params);
    if (!tied) count_matrix(&m->output, bytes, &params);
    lb_matrix *ws[LB_LAYER_MATRICES_MAX];
    for (int il = 0; il < hp->n_layer; il++) {
        const int nw = lb_layer_matrices(hp, &m->layers[il], ws);
        for (int i = 0; i < nw; i++) count_matrix(ws[i], bytes, &params);
        params += 2 * (int64_t)hp->n_embd; /* norms */
    }
    params += hp->n_embd;
    uint64_t total = 0;
    size_t cap = 4096, len = 0;
    char *sum = malloc(cap);
    if (!sum) { free(bytes); return lb_fail(LB_ERR_NOMEM, "out of memory"); }
    sum[0] = 0;
    for (int t = 0; t < NT; t++) {
        if (!bytes[t]) continue;
        total += bytes[t];
        const lb_matrix *w = first_of_type(m, t);
        const lb_kernel *k = w ? lb_kernel_for(w) : lb_kernel_get(t);
        len += (size_t)snprintf(sum + len, cap - len, "  %-6s weights: %8.2f MiB, kernel %s (%s)\n",
                                lb_type_name(t), bytes[t] / 1048576.0, k ? k->name : "none",
                                lb_isa_name(lb_cpu_level()));
        if (len >= cap - 200) break;
    }
    m->kernel_summary = sum;
    /* a model built in memory: its matrices plus the F32 norms a file of it would hold */
    m->n_params = params;
    m->weight_bytes = total + 4 * (uint64_t)hp->n_embd * (2 * (uint64_t)hp->n_layer + 1);
    free(bytes);
    if (m->gguf && (rs = from_file(m, m->gguf)) != LB_OK) return rs;
    char size[32];
    if (m->n_params >= 1000000000) snprintf(size, sizeof size, "%.1fB", m->n_params / 1e9);
    else if (m->n_params >= 1000000) snprintf(size, sizeof size, "%.0fM", m->n_params / 1e6);
    else snprintf(size, sizeof size, "%.0fK", m->n_params / 1e3);
    snprintf(m->desc, sizeof m->desc, "%s %s %s", hp->arch_name, size, m->ftype_name[0] ? m->ftype_name : "?");
    return LB_OK;
}

int lb_model_n_vocab(const lb_model *m) { return m->hp.n_vocab; }
int lb_model_n_ctx_train(const lb_model *m) { return m->hp.n_ctx_train; }
int lb_model_n_embd(const lb_model *m) { return m->hp.n_embd; }
int lb_model_n_layer(const lb_model *m) { return m->hp.n_layer; }
int64_t lb_model_n_params(const lb_model *m) { return m->n_params; }
void lb_model_set_act_bits(lb_model *m, int all, int down) {
    for (int il = 0; il < m->hp.n_layer; il++) {
        lb_layer *l = &m->layers[il];
        lb_matrix *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up};
        for (int i = 0; i < 6; i++) ws[i]->act_bits = lb_abq_bits(ws[i]->type) ? all : 0;
        l->w_down.act_bits = lb_abq_bits(l->w_down.type) ? down : 0;
        lb_matrix *mla[] = {&l->wq_a, &l->wq_b, &l->wkv_a}; /* deepseek2 */
        for (int i = 0; i < 3; i++) mla[i]->act_bits = lb_abq_bits(mla[i]->type) ? all : 0;
        for (int h = 0; l->wk_b && h < m->hp.n_head; h++) {
            l->wk_b[h].act_bits = lb_abq_bits(l->wk_b[h].type) ? all : 0;
            l->wv_b[h].act_bits = lb_abq_bits(l->wv_b[h].type) ? all : 0;
        }
        for (int e = 0; l->exp_gate && e < m->hp.n_expert; e++) { /* the experts' inputs are the FFN's */
            lb_matrix *xs[3] = {&l->exp_gate[e], &l->exp_up[e], &l->exp_down[e]};
            for (int i = 0; i < 3; i++) xs[i]->act_bits = lb_abq_bits(xs[i]->type) ? (i == 2 ? down : all) : 0;
        }
    }
    m->tok_embd.act_bits = lb_abq_bits(m->tok_embd.type) ? all : 0;
    m->output.act_bits = lb_abq_bits(m->output.type) ? all : 0;
}

uint64_t lb_model_size_bytes(const lb_model *m) { return m->weight_bytes; }
const char *lb_model_arch(const lb_model *m) { return m->hp.arch_name; }
const char *lb_model_desc(const lb_model *m) { return m->desc; }
const char *lb_model_kernel_summary(const lb_model *m) { return m->kernel_summary; }

int lb_token_bos(const lb_model *m) { return m->tok ? lb_tokenizer_bos(m->tok) : -1; }
int lb_token_eos(const lb_model *m) { return m->tok ? lb_tokenizer_eos(m->tok) : -1; }
int lb_add_bos_default(const lb_model *m) { return m->tok ? lb_tokenizer_add_bos(m->tok) : 0; }
int lb_token_is_eog(const lb_model *m, int32_t t) { return m->tok ? lb_tokenizer_is_eog(m->tok, t) : 0; }
int lb_model_has_vocab(const lb_model *m) { return m->tok != NULL; }

/* Fill-in-the-middle markers by their texts, in the families' spellings:
 * Qwen2.5-Coder / CodeQwen, StarCoder / SantaCoder, DeepSeek-Coder,
 * CodeLlama / CodeGemma. */
lb_status lb_token_fim(const lb_model *m, int32_t ids[3]) {
    static const char *const names[][3] = {
        {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
        {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
        {"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},
        {"<|fim_begin|>", "<|fim_hole|>", "<|fim_end|>"},
        {"▁<PRE>", "▁<SUF>", "▁<MID>"},
        {"<PRE>", "<SUF>", "<MID>"},
    };
    if (!m->tok) return lb_fail(LB_ERR_UNSUPPORTED, "this model has no vocabulary");
    const int V = lb_tokenizer_n_vocab(m->tok);
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        int found = 0;
        for (int k = 0; k < 3; k++) {
            ids[k] = -1;
            for (int t = 0; t < V && ids[k] < 0; t++)
                if (!strcmp(lb_tokenizer_token_text(m->tok, t), names[f][k])) ids[k] = t;
            found += ids[k] >= 0;
        }
        if (found == 3) return LB_OK;
    }
    return lb_fail(LB_ERR_UNSUPPORTED, "this model has no fill-in-the-middle tokens (<|fim_prefix|>, <fim_prefix>, "
                                       "<PRE>, ...)");
}

lb_status lb_tokenize(const lb_model *m, const char *text, size_t len, int add_bos, int32_t *out,
                      int cap, int *n_out) {
    *n_out = 0;
    if (!m->tok) return lb_fail(LB_ERR_UNSUPPORTED, "this model has no vocabulary (synthetic or vocab-less GGUF)");
    int32_t *ids = NULL;
    int n = 0;
    lb_status s = lb_tokenizer_encode(m->tok, text, len, add_bos, &ids, &n);
    if (s != LB_OK) return s;
    memcpy(out, ids, (size_t)LB_MIN(n, cap) * sizeof *ids);
    free(ids);
    *n_out = n;
    return LB_OK;
}

const char *lb_token_to_piece(const lb_model *m, int32_t token, size_t *len) {
    *len = 0;
    if (!m->tok || token < 0 || token >= lb_tokenizer_n_vocab(m->tok)) return "";
    return lb_tokenizer_piece(m->tok, token, len);
}
