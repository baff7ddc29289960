/* llama2.c checkpoint + tokenizer -> GGUF "llama", matching what llama.cpp's
 * convert-llama2c-to-ggml writes (same keys, token strings and tensor bytes),
 * plus the keys that converter forgets (rope base, file type, add_bos).
 *
 * Checkpoint ("legacy"/version 0 export, read by karpathy/llama2.c run.c):
 * 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
 * seq_len; vocab_size < 0 means a separate classifier), then float32 arrays:
 * token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
 * freq_cis_real, freq_cis_imag, [wcls]. The weights are already in Meta's
 * interleaved-pair RoPE order, which is GGUF's, so nothing is permuted. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/convert.h"

#define L2C_HEADER_BYTES 28
#define L2C_MAGIC_V1 0x616b3432 /* "ak42": llama2.c's newer export versions */

typedef struct {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared;                 /* classifier tied to the embedding */
} l2c_config;

/* Byte offsets of each weight array (per-layer arrays: of layer 0). */
typedef struct {
    uint64_t tok, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, wcls, end;
} l2c_layout;

static lb_status check_config(const l2c_config *c) {
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 ||
        c->vocab_size <= 0 || c->seq_len <= 0)
        return lb_fail(LB_ERR_FORMAT,
                       "bad llama2.c header (dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d, "
                       "seq_len %d): all must be positive",
                       c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len);
    if (c->dim % c->n_heads != 0 || (c->dim / c->n_heads) % 2 != 0)
        return lb_fail(LB_ERR_FORMAT, "dim %d is not n_heads %d times an even head size", c->dim, c->n_heads);
    if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads != 0)
        return lb_fail(LB_ERR_FORMAT, "n_heads %d is not a multiple of n_kv_heads %d", c->n_heads,
                       c->n_kv_heads);
    return LB_OK;
}

/* Lays the arrays out as run.c's memory_map_weights does; every product is
 * overflow-checked since the header is untrusted. */
static lb_status compute_layout(const l2c_config *c, l2c_layout *L) {
    uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden_dim, nl = (uint64_t)c->n_layers;
    uint64_t kv_dim = dim / (uint64_t)c->n_heads * (uint64_t)c->n_kv_heads;
    uint64_t head_size = dim / (uint64_t)c->n_heads;
    uint64_t counts[13], pos = L2C_HEADER_BYTES;
    uint64_t *slots[13] = {&L->tok, &L->rms_att, &L->wq, &L->wk, &L->wv, &L->wo, &L->rms_ffn,
                           &L->w1, &L->w2, &L->w3, &L->rms_final, NULL, &L->wcls};
    int ok = lb_mul_ok((uint64_t)c->vocab_size, dim, &counts[0]) && lb_mul_ok(nl, dim, &counts[1]) &&
             lb_mul_ok(nl * dim, dim, &counts[2]) && lb_mul_ok(nl * dim, kv_dim, &counts[3]) &&
             lb_mul_ok(nl * dim, hid, &counts[7]) && lb_mul_ok((uint64_t)c->seq_len, head_size, &counts[11]);
    if (!ok) return lb_fail(LB_ERR_FORMAT, "llama2.c header sizes overflow");
    counts[4] = counts[3];               /* wv like wk */
    counts[5] = counts[2];               /* wo like wq */
    counts[6] = counts[1];               /* rms_ffn like rms_att */
    counts[8] = counts[9] = counts[7];   /* w2, w3 like w1 */
    counts[10] = dim;                    /* rms_final */
    /* counts[11]: freq_cis_real + freq_cis_imag, seq_len * head_size / 2 each */
    counts[12] = c->shared ? 0 : counts[0];
    for (int i = 0; i < 13; i++) {
        uint64_t bytes;
        if (slots[i]) *slots[i] = pos;
        if (!lb_mul_ok(counts[i], 4, &bytes) || !lb_add_ok(pos, bytes, &pos))
            return lb_fail(LB_ERR_FORMAT, "llama2.c header sizes overflow");
    }
    L->end = pos;
    return LB_OK;
}

static lb_status read_checkpoint(int fd, uint64_t file_size, l2c_config *c, l2c_layout *L) {
    unsigned char h[L2C_HEADER_BYTES];
    if (file_size < L2C_HEADER_BYTES || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h)
        return lb_fail(LB_ERR_FORMAT, "checkpoint is %llu bytes, too short for the 28-byte header",
                       (unsigned long long)file_size);
    int32_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = (int32_t)((uint32_t)h[4 * i] | (uint32_t)h[4 * i + 1] << 8 | (uint32_t)h[4 * i + 2] << 16 |
                         (uint32_t)h[4 * i + 3] << 24);
    if (v[0] == L2C_MAGIC_V1)
        return lb_fail(LB_ERR_UNSUPPORTED, "this is a llama2.c version 1/2 export (magic \"ak42\"); "
                       "only the legacy (version 0) float32 format is supported");
    *c = (l2c_config){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[5] > 0};
    if (c->vocab_size < 0 && c->vocab_size != INT32_MIN) c->vocab_size = -c->vocab_size;
    lb_status s = check_config(c);
    if (s == LB_OK) s = compute_layout(c, L);
    if (s != LB_OK) return s;
    if (file_size < L->end)
        return lb_fail(LB_ERR_FORMAT, "checkpoint is truncated: %llu bytes, the header implies %llu",
                       (unsigned long long)file_size, (unsigned long long)L->end);
    if (file_size > L->end)
        return lb_fail(LB_ERR_FORMAT, "checkpoint has %llu unexpected trailing bytes (header implies %llu bytes%s)",
                       (unsigned long long)(file_size - L->end), (unsigned long long)L->end,
                       c->shared ? "; a positive vocab_size means the classifier is shared" : "");
    return LB_OK;
}

/* ---- tokenizer.bin: int32 max_token_length, then per token float score,
 * int32 length, bytes ---- */

typedef struct {
    char **tokens;
    float *scores;
    int32_t *types;
    int n;
} l2c_vocab;

static void vocab_free(l2c_vocab *v) {
    if (v->tokens)
        for (int i = 0; i < v->n; i++) free(v->tokens[i]);
    free(v->tokens);
    free(v->scores);
    free(v->types);
    memset(v, 0, sizeof *v);
}

static int32_t rd_i32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int is_byte_token(const unsigned char *s, size_t n) {
    return n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && strchr("0123456789ABCDEFabcdef", s[3]) &&
           strchr("0123456789ABCDEFabcdef", s[4]) && s[3] && s[4];
}

/* The GGUF form of token `id`, as llama.cpp's converter makes it: ids 0-2 are
 * renamed <unk>/<s>/</s> (llama2.c stores "\n<s>\n"), spaces become U+2581. */
static lb_status map_token(int id, const unsigned char *s, size_t n, char **out, int32_t *type) {
    static const char *special[3] = {"<unk>", "<s>", "</s>"};
    if (id < 3) {
        *type = id == 0 ? 2 : 3; /* unknown, control */
        s = (const unsigned char *)special[id];
        n = strlen(special[id]);
    } else if (n == 0) {
        *type = 3;
    } else if (is_byte_token(s, n)) {
        *type = 6;
    } else {
        *type = 1;
    }
    if (memchr(s, 0, n)) return lb_fail(LB_ERR_UNSUPPORTED, "token %d contains a NUL byte", id);
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    char *o = malloc(n + 2 * spaces + 1), *q = o;
    if (!o) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(q, "\xe2\x96\x81", 3), q += 3;
        else *q++ = (char)s[i];
    }
    *q = 0;
    *out = o;
    return LB_OK;
}

static lb_status read_vocab(const char *path, int vocab_size, l2c_vocab *v) {
    char *data;
    size_t len;
    lb_status s = lb_read_file(path, &data, &len);
    if (s != LB_OK) return s;
    const unsigned char *b = (const unsigned char *)data;
    /* First pass: count tokens, so a size mismatch and a truncation read differently. */
    size_t pos = 4;
    int n = 0;
    if (len < 4) {
        s = lb_fail(LB_ERR_FORMAT, "tokenizer is %zu bytes, too short for its header", len);
        goto done;
    }
    while (pos < len) {
        if (len - pos < 8) {
            s = lb_fail(LB_ERR_FORMAT, "tokenizer is truncated inside token %d", n);
            goto done;
        }
        int32_t tl = rd_i32(b + pos + 4);
        if (tl < 0 || (size_t)tl > len - pos - 8) {
            s = lb_fail(LB_ERR_FORMAT, tl < 0 ? "tokenizer token %d has negative length %d"
                                              : "tokenizer is truncated inside token %d (length %d)",
                        n, (int)tl);
            goto done;
        }
        pos += 8 + (size_t)tl;
        n++;
    }
    if (n != vocab_size) {
        s = lb_fail(LB_ERR_FORMAT, "tokenizer has %d tokens but the checkpoint's vocab_size is %d "
                    "(wrong tokenizer for this model?)", n, vocab_size);
        goto done;
    }
    v->n = n;
    v->tokens = calloc((size_t)n, sizeof *v->tokens);
    v->scores = malloc((size_t)n * sizeof *v->scores);
    v->types = malloc((size_t)n * sizeof *v->types);
    if (!v->tokens || !v->scores || !v->types) {
        s = lb_fail(LB_ERR_NOMEM, "out of memory");
        goto done;
    }
    pos = 4;
    for (int i = 0; i < n && s == LB_OK; i++) {
        memcpy(&v->scores[i], b + pos, 4);
        size_t tl = (size_t)rd_i32(b + pos + 4);
        s = map_token(i, b + pos + 8, tl, &v->tokens[i], &v->types[i]);
        pos += 8 + tl;
    }
done:
    free(data);
    if (s != LB_OK) {
        vocab_free(v);
        lb_fail_prefix(s, "%s", path);
    }
    return s;
}

/* ---- metadata ---- */

static char *model_name(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base) n = (size_t)(dot - base);
    char *name = malloc(n + 1);
    if (name) memcpy(name, base, n), name[n] = 0;
    return name;
}

static lb_status set_metadata(gguf_writer *w, const l2c_config *c, const l2c_vocab *v, const char *name,
                              int want_type) {
    lb_status s = LB_OK;
    /* sep/pad: llama.cpp's converter writes -1 as u32 ("none"); so do we */
#define TRY(x) do { if (s == LB_OK) s = (x); } while (0)
    TRY(gguf_writer_set_str(w, "general.architecture", "llama"));
    TRY(gguf_writer_set_str(w, "general.name", name ? name : "llama"));
    TRY(gguf_writer_set_u32(w, "general.file_type", imp_file_type(want_type)));
    TRY(gguf_writer_set_u32(w, "llama.vocab_size", (uint32_t)c->vocab_size));
    TRY(gguf_writer_set_u32(w, "llama.context_length", (uint32_t)c->seq_len));
    TRY(gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)c->dim));
    TRY(gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)c->hidden_dim));
    TRY(gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads));
    TRY(gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads));
    TRY(gguf_writer_set_u32(w, "llama.block_count", (uint32_t)c->n_layers));
    TRY(gguf_writer_set_u32(w, "llama.rope.dimension_count", (uint32_t)(c->dim / c->n_heads)));
    TRY(gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
    TRY(gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f));
    TRY(gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"));
    TRY(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tokens, (uint64_t)v->n));
    TRY(gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v->scores, (uint64_t)v->n));
    TRY(gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->types, (uint64_t)v->n));
    TRY(gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0));
    TRY(gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1));
    TRY(gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2));
    TRY(gguf_writer_set_u32(w, "tokenizer.ggml.seperator_token_id", UINT32_MAX));
    TRY(gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", UINT32_MAX));
    TRY(gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1));
    TRY(gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", 0));
#undef TRY
    return s;
}

/* ---- tensors ---- */

static lb_status add(imp_plan *p, int fd, const char *name, uint64_t off, int64_t ne0, int64_t ne1) {
    imp_tensor t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.n_dims = ne1 > 0 ? 2 : 1;
    t.ne[0] = ne0;
    t.ne[1] = ne1 > 0 ? ne1 : 1;
    t.fd = fd;
    t.offset = off;
    t.src_type = LB_TYPE_F32;
    t.n_src_rows = t.ne[1];
    t.src_row_len = ne0;
    return imp_plan_add(p, &t);
}

static lb_status add_tensors(imp_plan *p, int fd, const l2c_config *c, const l2c_layout *L) {
    int64_t dim = c->dim, hid = c->hidden_dim, kv_dim = (int64_t)c->dim / c->n_heads * c->n_kv_heads;
    lb_status s = add(p, fd, "token_embd.weight", L->tok, dim, c->vocab_size);
    if (s == LB_OK) s = add(p, fd, "output_norm.weight", L->rms_final, dim, 0);
    /* A tied classifier is not duplicated: the loader falls back to token_embd. */
    if (s == LB_OK && !c->shared) s = add(p, fd, "output.weight", L->wcls, dim, c->vocab_size);
    for (int64_t l = 0; l < c->n_layers && s == LB_OK; l++) {
        char n[64];
        uint64_t u = (uint64_t)l * 4; /* bytes per float times layer index */
#define LAYER(suffix, base, per_layer, ne0, ne1)                                 \
        if (s == LB_OK) {                                                      \
            snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);         \
            s = add(p, fd, n, (base) + u * (uint64_t)(per_layer), ne0, ne1);   \
        }
        LAYER("attn_q.weight", L->wq, dim * dim, dim, dim);
        LAYER("attn_k.weight", L->wk, dim * kv_dim, dim, kv_dim);
        LAYER("attn_v.weight", L->wv, dim * kv_dim, dim, kv_dim);
        LAYER("attn_output.weight", L->wo, dim * dim, dim, dim);
        LAYER("attn_norm.weight", L->rms_att, dim, dim, 0);
        LAYER("ffn_gate.weight", L->w1, dim * hid, dim, hid);
        LAYER("ffn_down.weight", L->w2, dim * hid, hid, dim);
        LAYER("ffn_up.weight", L->w3, dim * hid, dim, hid);
        LAYER("ffn_norm.weight", L->rms_ffn, dim, dim, 0);
#undef LAYER
    }
    return s;
}

lb_status lb_convert_llama2c(const char *model_bin, const char *tokenizer_bin, const char *out_gguf,
                             int out_type, lb_progress_fn progress, void *user) {
    if (!model_bin || !tokenizer_bin || !out_gguf)
        return lb_fail(LB_ERR_ARG, "lb_convert_llama2c: missing path");
    imp_plan plan;
    lb_status s = imp_plan_init(&plan, out_type);
    if (s != LB_OK) return s;
    l2c_vocab vocab = {0};
    l2c_config c = {0};
    l2c_layout L = {0};
    char *name = NULL;
    int fd = open(model_bin, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        s = lb_fail(LB_ERR_IO, "cannot open %s: %s", model_bin, strerror(errno));
        goto done;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        s = lb_fail(LB_ERR_IO, "%s is not a regular file", model_bin);
        goto done;
    }
    if ((s = read_checkpoint(fd, (uint64_t)sb.st_size, &c, &L)) != LB_OK) {
        lb_fail_prefix(s, "%s", model_bin);
        goto done;
    }
    if ((s = read_vocab(tokenizer_bin, c.vocab_size, &vocab)) != LB_OK) goto done;
    name = model_name(model_bin);
    if ((s = set_metadata(plan.w, &c, &vocab, name, out_type)) != LB_OK) goto done;
    vocab_free(&vocab); /* the writer has copied the strings */
    if ((s = add_tensors(&plan, fd, &c, &L)) != LB_OK) goto done;
    lb_log(2, "llama2.c: dim %d, hidden %d, %d layers, %d/%d heads, vocab %d, seq %d, %s classifier\n",
           c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
           c.shared ? "tied" : "separate");
    s = imp_plan_write(&plan, out_gguf, progress, user);
done:
    if (fd >= 0) close(fd);
    vocab_free(&vocab);
    free(name);
    imp_plan_free(&plan);
    return s;
}
