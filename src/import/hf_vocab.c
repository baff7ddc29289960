/* tokenizer.json (Hugging Face "tokenizers") -> tokenizer.ggml.* keys.
 *
 * Two BPE flavours are understood, as llama.cpp's converter maps them:
 *  - byte-level BPE (GPT-2, Llama 3, Qwen2): model "gpt2", tokens as stored
 *    (byte-level unicode), merges copied, pre-tokenizer named by a heuristic
 *    on the Split regex since llama.cpp's own check hashes a reference
 *    tokenization we cannot run here;
 *  - BPE with byte_fallback and a "▁" space marker (Llama 2, Mistral,
 *    TinyLlama): model "llama" (SentencePiece). SPM merges greedily by token
 *    score, HF BPE by merge rank, so each token gets score = -(rank of the
 *    first merge producing it): the best-ranked merge then has the highest
 *    score and both algorithms pick the same pair. (llama.cpp's fallback
 *    path writes -1000 for every token, which loses that order.) Tokens no
 *    merge produces rank below all merges. */
#include <stdlib.h>

#include "import/hf.h"

typedef struct {
    const char **tok;   /* NULL until filled; owned[i] says whether to free */
    char *owned;
    int32_t *type;
    float *score;
    int64_t n;
    int64_t *slot;      /* open-addressing hash of token text -> id (-1 empty) */
    size_t n_slot;
} vocab;

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

static void vocab_free(vocab *v) {
    for (int64_t i = 0; v->tok && i < v->n; i++)
        if (v->owned[i]) free((char *)v->tok[i]);
    free(v->tok);
    free(v->owned);
    free(v->type);
    free(v->score);
    free(v->slot);
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static lb_status build_hash(vocab *v) {
    v->n_slot = 16;
    while (v->n_slot < (size_t)v->n * 2) v->n_slot *= 2;
    v->slot = malloc(v->n_slot * sizeof *v->slot);
    if (!v->slot) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < v->n_slot; i++) v->slot[i] = -1;
    for (int64_t id = 0; id < v->n; id++) {
        size_t h = (size_t)hash_str(v->tok[id]) & (v->n_slot - 1);
        while (v->slot[h] >= 0) {
            if (!strcmp(v->tok[v->slot[h]], v->tok[id])) break; /* first id wins */
            h = (h + 1) & (v->n_slot - 1);
        }
        if (v->slot[h] < 0) v->slot[h] = id;
    }
    return LB_OK;
}

static int64_t lookup(const vocab *v, const char *s) {
    size_t h = (size_t)hash_str(s) & (v->n_slot - 1);
    while (v->slot[h] >= 0) {
        if (!strcmp(v->tok[v->slot[h]], s)) return v->slot[h];
        h = (h + 1) & (v->n_slot - 1);
    }
    return -1;
}

static lb_status set_token(vocab *v, int64_t id, const char *text, size_t len, const char *where) {
    if (strlen(text) != len)
        return lb_fail(LB_ERR_UNSUPPORTED, "tokenizer.json: %s token %lld contains a NUL", where, (long long)id);
    if (v->tok[id] && strcmp(v->tok[id], text) != 0)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.json: token id %lld is both \"%s\" and \"%s\"", (long long)id,
                       v->tok[id], text);
    v->tok[id] = text;
    return LB_OK;
}

static lb_status token_id(const json_value *idv, int64_t n_max, const char *text, int64_t *id) {
    if (!idv || idv->type != JSON_NUMBER || !idv->is_int || idv->i < 0 || idv->i >= n_max)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.json: token \"%.64s\" has a missing or out-of-range id "
                       "(the model's vocabulary has %lld entries)", text, (long long)n_max);
    *id = idv->i;
    return LB_OK;
}

/* Fills tokens from model.vocab and added_tokens; pads holes like llama.cpp
 * ("[PAD<id>]"). Every id must lie below n (the embedding's rows). */
static lb_status collect_tokens(vocab *v, const json_value *model_vocab, const json_value *added, int spm) {
    lb_status s = LB_OK;
    for (size_t i = 0; i < model_vocab->n && s == LB_OK; i++) {
        const json_member *m = &model_vocab->members[i];
        int64_t id = 0;
        if ((s = token_id(&m->value, v->n, m->key, &id)) == LB_OK) {
            if (v->tok[id]) s = lb_fail(LB_ERR_FORMAT, "tokenizer.json: id %lld is used by \"%s\" and \"%s\"",
                                        (long long)id, v->tok[id], m->key);
            else s = set_token(v, id, m->key, m->key_len, "vocab");
        }
    }
    for (size_t i = 0; added && i < added->n && s == LB_OK; i++) {
        const json_value *a = &added->items[i];
        const json_value *content = json_get_type(a, "content", JSON_STRING);
        if (!content) {
            s = lb_fail(LB_ERR_FORMAT, "tokenizer.json: added_tokens[%zu] has no string \"content\"", i);
            break;
        }
        int64_t id = 0;
        int special = 0;
        json_get_bool(a, "special", &special);
        if ((s = token_id(json_get(a, "id"), v->n, content->str, &id)) == LB_OK &&
            (s = set_token(v, id, content->str, content->n, "added")) == LB_OK)
            v->type[id] = special ? TT_CONTROL : TT_USER;
    }
    for (int64_t id = 0; id < v->n && s == LB_OK; id++) {
        if (v->tok[id]) continue;
        char *pad = malloc(32);
        if (!pad) return lb_fail(LB_ERR_NOMEM, "out of memory");
        snprintf(pad, 32, "[PAD%lld]", (long long)id);
        v->tok[id] = pad;
        v->owned[id] = 1;
        v->type[id] = spm ? TT_UNUSED : TT_USER;
        v->score[id] = -1000.0f;
    }
    return s;
}

/* The first object (depth-first) in v whose "type" is `type`. */
static const json_value *find_typed(const json_value *v, const char *type) {
    if (!v) return NULL;
    if (v->type == JSON_OBJECT) {
        const char *t = json_get_str(v, "type");
        if (t && !strcmp(t, type)) return v;
        for (size_t i = 0; i < v->n; i++) {
            const json_value *r = find_typed(&v->members[i].value, type);
            if (r) return r;
        }
    } else if (v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->n; i++) {
            const json_value *r = find_typed(&v->items[i], type);
            if (r) return r;
        }
    }
    return NULL;
}

static int is_byte_token(const char *s) {
    return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[5] == '>' && strchr("0123456789ABCDEFabcdef", s[3]) &&
           strchr("0123456789ABCDEFabcdef", s[4]);
}

/* Splits merge i into its two halves ("a b" or ["a", "b"]); *a and *b point
 * into buf (cap bytes). */
static lb_status merge_parts(const json_value *m, size_t i, char *buf, size_t cap, const char **a, const char **b) {
    if (m->type == JSON_STRING) {
        const char *sp = strchr(m->str, ' ');
        if (!sp || sp == m->str || !sp[1] || m->n + 1 > cap)
            return lb_fail(LB_ERR_FORMAT, "tokenizer.json: merge %zu \"%.64s\" is not \"left right\"", i, m->str);
        memcpy(buf, m->str, m->n + 1);
        buf[sp - m->str] = 0;
        *a = buf;
        *b = buf + (sp - m->str) + 1;
        return LB_OK;
    }
    if (m->type != JSON_ARRAY || m->n != 2 || m->items[0].type != JSON_STRING || m->items[1].type != JSON_STRING ||
        m->items[0].n + m->items[1].n + 2 > cap || !m->items[0].n || !m->items[1].n)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.json: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", i);
    memcpy(buf, m->items[0].str, m->items[0].n + 1);
    memcpy(buf + m->items[0].n + 1, m->items[1].str, m->items[1].n + 1);
    *a = buf;
    *b = buf + m->items[0].n + 1;
    return LB_OK;
}

static size_t merge_cap(const json_value *merges) {
    size_t cap = 16;
    for (size_t i = 0; i < merges->n; i++) {
        const json_value *m = &merges->items[i];
        size_t n = m->type == JSON_STRING                 ? m->n
                 : m->type == JSON_ARRAY && m->n == 2 ? m->items[0].n + m->items[1].n
                                                      : 0;
        cap = LB_MAX(cap, n + 2);
    }
    return cap;
}

/* SPM scores from merge ranks (see the top of the file). */
static lb_status spm_scores(vocab *v, const json_value *merges) {
    size_t cap = merges ? merge_cap(merges) : 16;
    char *buf = malloc(cap), *cat = malloc(cap);
    char *seen = calloc((size_t)v->n, 1);
    lb_status s = LB_OK;
    if (!buf || !cat || !seen) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; merges && i < merges->n && s == LB_OK; i++) {
        const char *a, *b;
        if ((s = merge_parts(&merges->items[i], i, buf, cap, &a, &b)) != LB_OK) break;
        snprintf(cat, cap, "%s%s", a, b);
        int64_t id = lookup(v, cat);
        if (id >= 0 && !seen[id]) {
            seen[id] = 1;
            v->score[id] = -(float)i;
        }
    }
    size_t n_merges = merges ? merges->n : 0;
    for (int64_t id = 0; id < v->n && s == LB_OK; id++)
        if (v->type[id] == TT_NORMAL && !seen[id]) v->score[id] = -(float)(n_merges + (size_t)id);
    free(buf);
    free(cat);
    free(seen);
    return s;
}

static lb_status write_merges(gguf_writer *w, const json_value *merges) {
    size_t n = merges ? merges->n : 0, cap = merges ? merge_cap(merges) : 16;
    char **out = calloc(n ? n : 1, sizeof *out);
    char *buf = malloc(cap);
    lb_status s = out && buf ? LB_OK : lb_fail(LB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && s == LB_OK; i++) {
        const char *a, *b;
        if ((s = merge_parts(&merges->items[i], i, buf, cap, &a, &b)) != LB_OK) break;
        out[i] = malloc(strlen(a) + strlen(b) + 2);
        if (!out[i]) s = lb_fail(LB_ERR_NOMEM, "out of memory");
        else sprintf(out[i], "%s %s", a, b);
    }
    if (s == LB_OK) s = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)out, n);
    for (size_t i = 0; i < n && out; i++) free(out[i]);
    free(out);
    free(buf);
    return s;
}

/* A special token named in tokenizer_config.json: "text" or {"content": "text"}. */
static int64_t config_token(const vocab *v, const json_value *tcfg, const char *key) {
    const json_value *t = json_get(tcfg, key);
    if (t && t->type == JSON_OBJECT) t = json_get(t, "content");
    if (!t || t->type != JSON_STRING) return -1;
    return lookup(v, t->str);
}

/* A token id from config.json ("bos_token_id": 1 or [1, 2]: the first). */
static int64_t config_id(const json_value *cfg, const char *key, int64_t n) {
    const json_value *t = json_get(cfg, key);
    if (t && t->type == JSON_ARRAY && t->n) t = &t->items[0];
    if (!t || t->type != JSON_NUMBER || !t->is_int || t->i < 0 || t->i >= n) return -1;
    return t->i;
}

static lb_status write_special(gguf_writer *w, const vocab *v, const json_value *tok_root, const json_value *tcfg,
                               const json_value *cfg, int spm) {
    static const struct { const char *name, *cfg_key, *id_key, *gguf; } sp[] = {
        {"bos", "bos_token", "bos_token_id", "tokenizer.ggml.bos_token_id"},
        {"eos", "eos_token", "eos_token_id", "tokenizer.ggml.eos_token_id"},
        {"unk", "unk_token", "unk_token_id", "tokenizer.ggml.unknown_token_id"},
        {"pad", "pad_token", "pad_token_id", "tokenizer.ggml.padding_token_id"},
    };
    lb_status s = LB_OK;
    for (size_t k = 0; k < 4 && s == LB_OK; k++) {
        int64_t id = config_token(v, tcfg, sp[k].cfg_key);
        if (id < 0) id = config_id(cfg, sp[k].id_key, v->n);
        if (id < 0 && k == 2) {
            const char *unk = json_get_str(json_get(tok_root, "model"), "unk_token");
            if (unk) id = lookup(v, unk);
        }
        if (id >= 0) s = gguf_writer_set_u32(w, sp[k].gguf, (uint32_t)id);
    }
    /* add_bos/add_eos: explicit in tokenizer_config.json, else whether the
     * post-processor template wraps a sequence in special tokens. */
    int add_bos = spm, add_eos = 0, have_eos = 0;
    const json_value *tp = find_typed(json_get(tok_root, "post_processor"), "TemplateProcessing");
    const json_value *single = json_get_type(tp, "single", JSON_ARRAY);
    if (single && single->n) {
        add_bos = json_get(&single->items[0], "SpecialToken") != NULL;
        add_eos = json_get(&single->items[single->n - 1], "SpecialToken") != NULL;
        have_eos = 1;
    }
    json_get_bool(tcfg, "add_bos_token", &add_bos);
    if (json_get_bool(tcfg, "add_eos_token", &add_eos)) have_eos = 1;
    if (s == LB_OK) s = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", add_bos);
    if (s == LB_OK && have_eos) s = gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", add_eos);
    return s;
}

/* llama.cpp names the byte-level pre-tokenizer by model family. */
static const char *bpe_pre(const json_value *tok_root, const char *arch) {
    if (!strcmp(arch, "qwen2") || !strcmp(arch, "qwen3")) return "qwen2"; /* Qwen 3 kept Qwen 2's */
    const json_value *split = find_typed(json_get(tok_root, "pre_tokenizer"), "Split");
    const char *re = json_get_str(json_get(split, "pattern"), "Regex");
    if (re && strstr(re, "\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}")) /* o200k's cased words (Phi-4-mini) */
        return strstr(re, "\\p{N}{1,3}") ? "gpt-4o" : "tekken";
    if (re && strstr(re, "\\p{N}{1,3}")) return "llama-bpe"; /* Llama 3's digit grouping */
    return "gpt2";
}

/* Whether SPM should prepend "▁" to the text (llama.cpp add_space_prefix). */
static int spm_space_prefix(const json_value *tok_root) {
    const json_value *prep = find_typed(json_get(tok_root, "normalizer"), "Prepend");
    const char *p = json_get_str(prep, "prepend");
    if (p && !strcmp(p, "\xe2\x96\x81")) return 1;
    const json_value *meta = find_typed(json_get(tok_root, "pre_tokenizer"), "Metaspace");
    if (!meta) return 0;
    const char *scheme = json_get_str(meta, "prepend_scheme");
    int add = 1;
    json_get_bool(meta, "add_prefix_space", &add);
    return add && !(scheme && !strcmp(scheme, "never"));
}

lb_status hf_write_vocab(gguf_writer *w, const char *dir, const json_value *cfg, int64_t n_vocab, const char *arch) {
    json_doc *tok_doc = NULL, *tcfg_doc = NULL;
    vocab v = {0};
    lb_status s = hf_read_json(dir, "tokenizer.json", 0, &tok_doc);
    if (s == LB_OK) s = hf_read_json(dir, "tokenizer_config.json", 1, &tcfg_doc);
    if (s != LB_OK) goto done;
    const json_value *root = json_root(tok_doc), *tcfg = tcfg_doc ? json_root(tcfg_doc) : NULL;
    const json_value *model = json_get_type(root, "model", JSON_OBJECT);
    const char *mtype = json_get_str(model, "type");
    const json_value *mvocab = json_get_type(model, "vocab", JSON_OBJECT);
    const json_value *merges = json_get(model, "merges");
    const json_value *added = json_get_type(root, "added_tokens", JSON_ARRAY);
    if (!model || !mvocab) {
        s = lb_fail(LB_ERR_FORMAT, "tokenizer.json has no \"model\" object with a \"vocab\" object");
        goto done;
    }
    if (!mtype || strcmp(mtype, "BPE") != 0) {
        s = lb_fail(LB_ERR_UNSUPPORTED, "tokenizer.json model type \"%s\" is not supported (only BPE)",
                    mtype ? mtype : "(none)");
        goto done;
    }
    if (merges && merges->type == JSON_NULL) merges = NULL;
    if (merges && merges->type != JSON_ARRAY) {
        s = lb_fail(LB_ERR_FORMAT, "tokenizer.json: model.merges is not an array");
        goto done;
    }
    int spm = 0;
    json_get_bool(model, "byte_fallback", &spm);
    if (!spm && !find_typed(json_get(root, "pre_tokenizer"), "ByteLevel")) {
        s = lb_fail(LB_ERR_UNSUPPORTED, "tokenizer.json: BPE without a ByteLevel pre-tokenizer or byte_fallback "
                    "is not supported");
        goto done;
    }
    v.n = n_vocab;
    v.tok = calloc((size_t)v.n, sizeof *v.tok);
    v.owned = calloc((size_t)v.n, 1);
    v.type = malloc((size_t)v.n * sizeof *v.type);
    v.score = calloc((size_t)v.n, sizeof *v.score);
    if (!v.tok || !v.owned || !v.type || !v.score) {
        s = lb_fail(LB_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < v.n; i++) v.type[i] = TT_NORMAL;
    if ((s = collect_tokens(&v, mvocab, added, spm)) != LB_OK || (s = build_hash(&v)) != LB_OK) goto done;
    if (spm) {
        const char *unk = json_get_str(model, "unk_token");
        int64_t unk_id = unk ? lookup(&v, unk) : -1;
        for (int64_t id = 0; id < v.n; id++)
            if (v.type[id] == TT_NORMAL && is_byte_token(v.tok[id])) v.type[id] = TT_BYTE;
        if (unk_id >= 0) v.type[unk_id] = TT_UNKNOWN;
        if ((s = spm_scores(&v, merges)) != LB_OK) goto done;
    }
#define TRY(x) do { if (s == LB_OK) s = (x); } while (0)
    TRY(gguf_writer_set_str(w, "tokenizer.ggml.model", spm ? "llama" : "gpt2"));
    if (!spm) TRY(gguf_writer_set_str(w, "tokenizer.ggml.pre", bpe_pre(root, arch)));
    TRY(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", v.tok, (uint64_t)v.n));
    if (spm) TRY(gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v.score, (uint64_t)v.n));
    TRY(gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v.type, (uint64_t)v.n));
    if (!spm) TRY(write_merges(w, merges));
    TRY(write_special(w, &v, root, tcfg, cfg, spm));
    if (spm) TRY(gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", spm_space_prefix(root)));
#undef TRY
done:
    vocab_free(&v);
    json_free(tok_doc);
    json_free(tcfg_doc);
    if (s != LB_OK) lb_fail_prefix(s, "%s", dir);
    return s;
}
