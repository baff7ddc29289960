/* Building a tokenizer from GGUF metadata (tokenizer.ggml.*). Everything in
 * the file is untrusted: types, lengths and ids are checked and a problem is
 * reported as LB_ERR_FORMAT naming the key. The defaults follow llama.cpp's
 * llama_vocab::impl::load so that both read the same file the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode.h"

/* Token types in tokenizer.ggml.token_type (llama.cpp's llama_token_type). */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

/* Token texts that end generation, as llama.cpp recognises them by name; the
 * first one present is the EOT token unless the file names one. gpt-oss's
 * <|return|> and <|call|> are here; with them <|end|> is not (load_specials).
 * llama.cpp lists a few more that need model-specific exceptions (gemma4,
 * solar-open); those are left out. */
static const char *const k_eot_names[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<end_of_utterance>",
    /* DeepSeek's "<｜end▁of▁sentence｜>", in octal escapes */
    "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>",
};
static const char *const k_eom_name = "<|eom_id|>";

/* tokenizer.ggml.pre values whose regex is llama-3's; the first group also
 * sets ignore_merges and add_bos as llama.cpp does. */
static const char *const k_pre_llama3[] = {
    "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
    "jina-v5-nano",
};
static const char *const k_pre_llama3_plain[] = {"dbrx", "smaug-bpe"};
static const char *const k_pre_gpt4o[] = {"gpt-4o", "llama4", "kanana2"};
/* every digit a word, then GPT-2's regex (llama.cpp's STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL,
 * EXAONE, MINERVA group) */
static const char *const k_pre_digits_gpt2[] = {"smollm", "starcoder", "refact", "command-r", "cohere2_moe",
                                                "codeshell", "exaone", "minerva-7b"};
static const char *const k_pre_gpt2[] = {
    "gpt2", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
    "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling",
    "exaone4",
};

#define IN_LIST(s, list) in_list((s), (list), sizeof(list) / sizeof((list)[0]))
static int in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0) return 1;
    return 0;
}

static lb_status read_bool(const gguf_file *g, const char *key, int *v) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return LB_OK;
    if (!gguf_get_bool(g, key, v))
        return lb_fail(LB_ERR_FORMAT, "%s should be a bool but is %s", key, gguf_vtype_name(kv->type));
    return LB_OK;
}

/* A special token id: absent keeps the default; -1 / 0xFFFFFFFF ("none")
 * also keeps it, as llama.cpp does; any other id outside the vocabulary is
 * an error. */
static lb_status read_special(const gguf_file *g, const char *key, int32_t n_vocab, int32_t *id) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    int64_t v;
    if (!kv) return LB_OK;
    if (!gguf_get_i64(g, key, &v))
        return lb_fail(LB_ERR_FORMAT, "%s should be an integer but is %s", key, gguf_vtype_name(kv->type));
    if (v == -1 || v == (int64_t)UINT32_MAX) return LB_OK;
    if (v < 0 || v >= n_vocab)
        return lb_fail(LB_ERR_FORMAT, "%s = %lld is out of range (the vocabulary has %d tokens)", key,
                       (long long)v, (int)n_vocab);
    *id = (int32_t)v;
    return LB_OK;
}

/* An optional per-token array: NULL if absent, error if too short. */
static lb_status optional_array(const gguf_file *g, const char *key, gguf_vtype t1, gguf_vtype t2,
                                uint64_t n_tokens, const gguf_kv **out) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    *out = NULL;
    if (!kv) return LB_OK;
    if (kv->type != GGUF_TYPE_ARRAY || (kv->arr_type != t1 && kv->arr_type != t2))
        return lb_fail(LB_ERR_FORMAT, "%s should be an array of %s", key, gguf_vtype_name(t1));
    if (kv->arr_n < n_tokens)
        return lb_fail(LB_ERR_FORMAT, "%s has %llu entries for %llu tokens", key,
                       (unsigned long long)kv->arr_n, (unsigned long long)n_tokens);
    if (kv->arr_n > n_tokens) /* llama.cpp ignores the excess too */
        lb_log(1, "warning: %s has %llu entries for %llu tokens; ignoring the rest\n", key,
               (unsigned long long)kv->arr_n, (unsigned long long)n_tokens);
    *out = kv;
    return LB_OK;
}

static uint8_t attr_of_type(int32_t type) {
    switch (type) {
    case TT_NORMAL: return LB_ATTR_NORMAL;
    case TT_UNKNOWN: return LB_ATTR_UNKNOWN;
    case TT_CONTROL: return LB_ATTR_CONTROL;
    case TT_USER_DEFINED: return LB_ATTR_USER_DEFINED;
    case TT_UNUSED: return LB_ATTR_UNUSED;
    case TT_BYTE: return LB_ATTR_BYTE;
    default: return 0; /* undefined */
    }
}

/* Copies the token texts, scores and types, and indexes texts by hash. */
static lb_status load_vocab(lb_tokenizer *t, const gguf_file *g) {
    const gguf_kv *tokens = gguf_find_kv(g, "tokenizer.ggml.tokens");
    if (!tokens) return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.tokens is missing");
    if (tokens->type != GGUF_TYPE_ARRAY || tokens->arr_type != GGUF_TYPE_STRING)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.tokens is not an array of strings");
    if (tokens->arr_n == 0) return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.tokens is empty");
    if (tokens->arr_n >= (uint64_t)INT32_MAX / 2)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries",
                       (unsigned long long)tokens->arr_n);
    int32_t n = (int32_t)tokens->arr_n;
    t->n_vocab = n;

    const gguf_kv *scores, *types;
    lb_status s = optional_array(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, GGUF_TYPE_INT32,
                                 (uint64_t)n, &scores);
    if (!s) s = optional_array(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, GGUF_TYPE_INT32,
                               (uint64_t)n, &types);
    if (s) return s;

    /* llama.cpp renames empty tokens "[EMPTY_<id>]" (so lookups stay unique) */
    uint64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        uint64_t len = tokens->strs[i].len;
        if (len > UINT32_MAX / 2)
            return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.tokens[%d] is %llu bytes long", (int)i,
                           (unsigned long long)len);
        total += (len ? len : 20) + 1;
    }
    t->text = malloc((size_t)total);
    t->text_off = malloc((size_t)n * sizeof *t->text_off);
    t->text_len = malloc((size_t)n * sizeof *t->text_len);
    t->scores = malloc((size_t)n * sizeof *t->scores);
    t->attr = malloc((size_t)n);
    t->eog = calloc((size_t)n, 1);
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap *= 2;
    t->by_text.slots = malloc(cap * sizeof *t->by_text.slots);
    t->by_text.mask = cap - 1;
    if (!t->text || !t->text_off || !t->text_len || !t->scores || !t->attr || !t->eog ||
        !t->by_text.slots)
        return lb_fail(LB_ERR_NOMEM, "out of memory loading a vocabulary of %d tokens", (int)n);
    memset(t->by_text.slots, 0xFF, cap * sizeof *t->by_text.slots);

    size_t off = 0;
    for (int32_t i = 0; i < n; i++) {
        const gguf_str *str = &tokens->strs[i];
        size_t len = (size_t)str->len;
        if (len) {
            memcpy(t->text + off, str->ptr, len);
        } else {
            lb_log(1, "warning: empty token at index %d\n", (int)i);
            len = (size_t)snprintf(t->text + off, 21, "[EMPTY_%d]", (int)i);
        }
        t->text[off + len] = '\0';
        t->text_off[i] = off;
        t->text_len[i] = (uint32_t)len;
        off += len + 1;

        const char *txt = lb_tok_text(t, i);
        uint64_t h = lb_tok_hash(txt, len);
        size_t slot = h & t->by_text.mask;
        for (;; slot = (slot + 1) & t->by_text.mask) {
            lb_strslot sl = t->by_text.slots[slot];
            int32_t other = sl.id;
            if (other < 0) break;
            if (sl.tag == (uint32_t)(h >> 32) && t->text_len[other] == len &&
                memcmp(lb_tok_text(t, other), txt, len) == 0)
                return lb_fail(LB_ERR_FORMAT, "duplicate token in vocabulary: \"%.*s\" has ids %d and %d",
                               (int)LB_MIN(len, 64), txt, (int)other, (int)i);
        }
        t->by_text.slots[slot] = (lb_strslot){i, (uint32_t)(h >> 32)};

        float score = 0.0f;
        if (scores && scores->arr_type == GGUF_TYPE_FLOAT32) {
            memcpy(&score, (const char *)scores->data + 4 * (size_t)i, 4);
        } else if (scores) {
            int32_t iscore;
            memcpy(&iscore, (const char *)scores->data + 4 * (size_t)i, 4);
            score = (float)iscore;
        }
        t->scores[i] = score;
        int32_t type = TT_NORMAL;
        if (types) memcpy(&type, (const char *)types->data + 4 * (size_t)i, 4);
        t->attr[i] = attr_of_type(type);
    }
    return LB_OK;
}

static lb_status load_specials(lb_tokenizer *t, const gguf_file *g) {
    int32_t n = t->n_vocab;
    /* defaults that fall outside this vocabulary are dropped, as in llama.cpp */
    if (t->bos >= n) t->bos = -1;
    if (t->eos >= n) t->eos = -1;
    if (t->unk >= n) t->unk = -1;
    lb_status s = read_special(g, "tokenizer.ggml.bos_token_id", n, &t->bos);
    if (!s) s = read_special(g, "tokenizer.ggml.eos_token_id", n, &t->eos);
    if (!s) s = read_special(g, "tokenizer.ggml.unknown_token_id", n, &t->unk);
    if (!s) s = read_special(g, "tokenizer.ggml.eot_token_id", n, &t->eot);
    if (!s) s = read_special(g, "tokenizer.ggml.eom_token_id", n, &t->eom);
    if (!s) s = read_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos);
    if (!s) s = read_bool(g, "tokenizer.ggml.add_eos_token", &t->add_eos);
    if (s) return s;
    if (t->add_bos && t->bos < 0)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.add_bos_token is true but there is no BOS token");
    if (t->add_eos && t->eos < 0)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.add_eos_token is true but there is no EOS token");

    /* end-of-generation tokens found by name become control tokens */
    for (size_t i = 0; i < sizeof k_eot_names / sizeof k_eot_names[0]; i++) {
        int32_t id = lb_tok_lookup(t, k_eot_names[i], strlen(k_eot_names[i]));
        if (id < 0) continue;
        if (t->eot < 0) t->eot = id;
        t->eog[id] = 1;
        t->attr[id] |= LB_ATTR_CONTROL;
    }
    int32_t eom = lb_tok_lookup(t, k_eom_name, strlen(k_eom_name));
    if (eom >= 0) {
        if (t->eom < 0) t->eom = eom;
        t->eog[eom] = 1;
        t->attr[eom] |= LB_ATTR_CONTROL;
    }
    if (t->eos >= 0) t->eog[t->eos] = 1;
    if (t->eot >= 0) t->eog[t->eot] = 1;
    if (t->eom >= 0) t->eog[t->eom] = 1;
    /* o200k_harmony (gpt-oss): <|end|> closes a message inside a turn, which
     * <|return|> or <|call|> end; llama.cpp then drops <|end|> from the end
     * tokens and makes it a user-defined token (printed as text) */
    const int32_t end = lb_tok_lookup(t, "<|end|>", 7), ret = lb_tok_lookup(t, "<|return|>", 10),
                  call = lb_tok_lookup(t, "<|call|>", 8);
    if (end >= 0 && ret >= 0 && call >= 0 && t->eog[end] && t->eog[ret] && t->eog[call]) {
        t->eog[end] = 0;
        t->attr[end] = LB_ATTR_USER_DEFINED;
    }
    return LB_OK;
}

/* Which byte pairs can sit on either side of a symbol boundary inside a
 * token (symbols cut by lead-byte length, exactly as spm.c cuts the text). */
static void load_spm_joinable(lb_tokenizer *t) {
    memset(t->spm_joinable, 0, sizeof t->spm_joinable);
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const unsigned char *s = (const unsigned char *)lb_tok_text(t, id);
        size_t len = t->text_len[id];
        for (size_t off = 0; off < len;) {
            size_t n = LB_MIN(lb_utf8_len(s[off]), len - off);
            off += n;
            if (off < len) {
                unsigned pair = (unsigned)s[off - 1] << 8 | s[off];
                t->spm_joinable[pair >> 3] |= (uint8_t)(1u << (pair & 7));
            }
        }
    }
}

static void load_byte_tokens(lb_tokenizer *t) {
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char name[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
        char one = (char)b;
        int32_t raw = lb_tok_lookup(t, &one, 1);
        int32_t id = lb_tok_lookup(t, name, 6);
        t->byte_token[b] = id >= 0 ? id : raw; /* SPM: <0xXX>, else the byte itself */
        t->raw_byte_token[b] = raw;
        char u8[4];
        size_t k = lb_utf8_encode(lb_gpt2_byte_to_cpt((unsigned char)b), u8);
        t->byte_char_token[b] = lb_tok_lookup(t, u8, k);
    }
}

/* llama.cpp splits user-defined tokens out of the text even when special
 * tokens are not parsed (control and unknown ones are skipped then). They are
 * tried longest first; equal lengths by id (llama.cpp's std::sort leaves
 * that order unspecified). */
typedef struct {
    int32_t len, id;
} len_id;

static int cmp_user(const void *a, const void *b) {
    const len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Does token attribute a belong to the matcher (special: parse_special)? */
static int matched(uint8_t a, int special) {
    if (special) return (a & (LB_ATTR_USER_DEFINED | LB_ATTR_CONTROL | LB_ATTR_UNKNOWN)) != 0;
    return (a & LB_ATTR_USER_DEFINED) && !(a & (LB_ATTR_CONTROL | LB_ATTR_UNKNOWN));
}

static lb_status load_matcher(lb_tokenizer *t, lb_tok_matcher *mt, int special) {
    int32_t n = t->n_vocab, n_tok = 0;
    size_t n_bytes = 0;
    for (int32_t i = 0; i < n; i++)
        if (matched(t->attr[i], special) && t->text_len[i] > 0) {
            n_tok++;
            n_bytes += t->text_len[i];
        }
    mt->n = n_tok;
    if (n_tok == 0) return LB_OK;
    if (n_bytes >= (size_t)INT32_MAX) /* trie nodes are numbered in int32 */
        return lb_fail(LB_ERR_UNSUPPORTED, "%s tokens total %zu bytes", special ? "special" : "user-defined", n_bytes);

    len_id *ids = malloc((size_t)n_tok * sizeof *ids);
    mt->rank = malloc((size_t)n * sizeof *mt->rank);
    mt->node_tok = malloc((n_bytes + 1) * sizeof *mt->node_tok);
    mt->by_rank = malloc((size_t)n_tok * sizeof *mt->by_rank);
    lb_status s = LB_OK;
    if (!ids || !mt->rank || !mt->node_tok || !mt->by_rank) {
        s = lb_fail(LB_ERR_NOMEM, "out of memory indexing %d %s tokens", (int)n_tok, special ? "special" : "user-defined");
        goto done;
    }
    s = lb_u64map_init(&mt->trie, n_bytes);
    if (s) goto done;

    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        mt->rank[i] = -1;
        if (matched(t->attr[i], special) && t->text_len[i] > 0) ids[k++] = (len_id){(int32_t)t->text_len[i], i};
    }
    qsort(ids, (size_t)n_tok, sizeof *ids, cmp_user);

    int32_t n_nodes = 1;
    mt->node_tok[0] = -1;
    for (int32_t r = 0; r < n_tok; r++) {
        int32_t id = ids[r].id, node = 0;
        mt->rank[id] = r;
        mt->by_rank[r] = id;
        const unsigned char *txt = (const unsigned char *)lb_tok_text(t, id);
        for (uint32_t j = 0; j < t->text_len[id]; j++) {
            uint64_t key = (uint64_t)node << 8 | txt[j];
            int32_t child, unused;
            if (!lb_u64map_get(&mt->trie, key, &child, &unused)) {
                child = n_nodes++;
                mt->node_tok[child] = -1;
                lb_u64map_put(&mt->trie, key, child, 0);
            }
            node = child;
        }
        mt->node_tok[node] = id;
    }
done:
    free(ids);
    return s;
}

static lb_status load_user_tokens(lb_tokenizer *t) {
    lb_status s = load_matcher(t, &t->user, 0);
    if (!s) s = load_matcher(t, &t->special, 1);
    return s;
}

/* The bytes a token stands for (llama.cpp's token_to_piece with special=false). */
static size_t make_piece(const lb_tokenizer *t, int32_t id, char *out) {
    uint8_t a = t->attr[id];
    const char *txt = lb_tok_text(t, id);
    size_t len = t->text_len[id], o = 0;
    if (a & (LB_ATTR_UNKNOWN | LB_ATTR_CONTROL)) return 0;
    if (a & LB_ATTR_USER_DEFINED) {
        memcpy(out, txt, len);
        return len;
    }
    if (a & LB_ATTR_NORMAL) {
        if (t->model == LB_TOK_SPM) { /* U+2581 -> ' ' */
            for (size_t i = 0; i < len;) {
                if (i + 3 <= len && memcmp(txt + i, "\xE2\x96\x81", 3) == 0) {
                    out[o++] = ' ';
                    i += 3;
                } else {
                    out[o++] = txt[i++];
                }
            }
            return o;
        }
        /* GPT-2 alphabet -> bytes; a character outside it (not in real
         * vocabularies) is kept as it is */
        for (size_t i = 0; i < len;) {
            size_t adv;
            uint32_t cp = lb_utf8_decode((const unsigned char *)txt + i, len - i, &adv);
            int b = lb_gpt2_cpt_to_byte(cp);
            if (b >= 0) {
                out[o++] = (char)b;
            } else {
                memcpy(out + o, txt + i, adv);
                o += adv;
            }
            i += adv;
        }
        return o;
    }
    if (a & LB_ATTR_BYTE) { /* "<0xAB>" */
        if (len < 5 || memcmp(txt, "<0x", 3) != 0) return 0;
        unsigned v = 0;
        for (size_t i = 3; i < 5; i++) {
            char c = txt[i];
            int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
            if (d < 0) return 0;
            v = v * 16 + (unsigned)d;
        }
        out[0] = (char)v;
        return 1;
    }
    return 0; /* unused / undefined tokens produce no text */
}

static lb_status load_pieces(lb_tokenizer *t) {
    int32_t n = t->n_vocab;
    size_t total = t->text_off[n - 1] + t->text_len[n - 1] + 1; /* pieces are never longer */
    t->piece = malloc(total);
    t->piece_off = malloc((size_t)n * sizeof *t->piece_off);
    t->piece_len = malloc((size_t)n * sizeof *t->piece_len);
    if (!t->piece || !t->piece_off || !t->piece_len)
        return lb_fail(LB_ERR_NOMEM, "out of memory for token pieces");
    size_t off = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len = make_piece(t, i, t->piece + off);
        t->piece_off[i] = off;
        t->piece_len[i] = (uint32_t)len;
        off += len;
    }
    return LB_OK;
}

static void choose_pre(lb_tokenizer *t, const gguf_file *g) {
    const char *pre = gguf_get_str(g, "tokenizer.ggml.pre");
    t->pre = LB_PRE_GPT2;
    if (pre && IN_LIST(pre, k_pre_llama3)) {
        t->pre = LB_PRE_LLAMA3;
        t->ignore_merges = 1;
        t->add_bos = 1;
    } else if (pre && IN_LIST(pre, k_pre_llama3_plain)) {
        t->pre = LB_PRE_LLAMA3;
    } else if (pre && (!strcmp(pre, "glm4") || !strcmp(pre, "chatglm-bpe"))) {
        t->pre = LB_PRE_LLAMA3; /* GLM-4: Llama 3's regex, and no BOS unless the file names one (llama.cpp) */
        t->bos = -1;
    } else if (pre && (!strcmp(pre, "qwen2") || !strcmp(pre, "deepseek-r1-qwen"))) {
        t->pre = LB_PRE_QWEN2;
    } else if (pre && IN_LIST(pre, k_pre_gpt4o)) {
        t->pre = LB_PRE_GPT4O;
    } else if (pre && IN_LIST(pre, k_pre_digits_gpt2)) {
        t->pre = LB_PRE_SMOLLM; /* SmolLM / SmolLM2, EXAONE 3, Command R, StarCoder's */
    } else if (pre && !strcmp(pre, "deepseek-v3")) {
        t->pre = LB_PRE_DEEPSEEK3; /* DeepSeek-V3 / R1 and its kin */
    } else if (pre && !strcmp(pre, "deepseek-llm")) {
        t->pre = LB_PRE_DEEPSEEK_LLM; /* DeepSeek LLM, DeepSeek-V2 (Lite) */
    } else if (pre && !strcmp(pre, "tekken")) {
        t->pre = LB_PRE_TEKKEN;
        t->ignore_merges = 1;
        t->add_bos = 1;
    } else if (!pre || !IN_LIST(pre, k_pre_gpt2)) {
        lb_log(1, "tokenizer: pre-tokenizer '%s' not supported; using the gpt2 regex (ids may differ from llama.cpp)\n",
               pre ? pre : "(missing)");
    }
}

static lb_status load_all(lb_tokenizer *t, const gguf_file *g) {
    const gguf_kv *model_kv = gguf_find_kv(g, "tokenizer.ggml.model");
    const char *model = gguf_get_str(g, "tokenizer.ggml.model");
    if (!model_kv) return lb_fail(LB_ERR_FORMAT, "no tokenizer: tokenizer.ggml.model is missing");
    if (!model) return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.model is not a string");
    if (strcmp(model, "llama") == 0) {
        t->model = LB_TOK_SPM;
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_bos = 1;
        t->add_space_prefix = 1;
    } else if (strcmp(model, "gpt2") == 0) {
        t->model = LB_TOK_BPE;
        t->bos = 11, t->eos = 11, t->unk = -1; /* llama.cpp's (odd) BPE defaults */
        choose_pre(t, g);
    } else {
        return lb_fail(LB_ERR_UNSUPPORTED, "tokenizer model '%s' is not supported (only llama and gpt2)", model);
    }
    t->eot = t->eom = -1;

    lb_status s = load_vocab(t, g);
    if (!s) s = read_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
    if (!s) s = load_specials(t, g);
    if (s) return s;
    load_byte_tokens(t);
    if (t->model == LB_TOK_SPM) load_spm_joinable(t);
    if (t->model == LB_TOK_BPE) {
        t->add_space_prefix = 0; /* a BPE vocabulary never gets the SPM dummy space */
        s = lb_bpe_load_merges(t, g);
        if (s) return s;
    }
    s = load_user_tokens(t);
    if (!s) s = load_pieces(t);
    return s;
}

lb_status lb_tokenizer_load(const gguf_file *g, lb_tokenizer **out) {
    if (!out) return lb_fail(LB_ERR_ARG, "lb_tokenizer_load: out is NULL");
    *out = NULL;
    if (!g) return lb_fail(LB_ERR_ARG, "lb_tokenizer_load: no GGUF file");
    double t0 = lb_time_s();
    lb_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return lb_fail(LB_ERR_NOMEM, "out of memory for a tokenizer");
    lb_status s = load_all(t, g);
    if (s) {
        lb_tokenizer_free(t);
        return lb_fail_prefix(s, "loading the tokenizer");
    }
    lb_log(2, "tokenizer: %s, %d tokens, %d user-defined, loaded in %.1f ms\n",
           t->model == LB_TOK_SPM ? "SPM" : "BPE", (int)t->n_vocab, (int)t->user.n,
           (lb_time_s() - t0) * 1e3);
    *out = t;
    return LB_OK;
}
