/* Public tokenizer API: encoding (user-defined tokens split out first, then
 * SPM or BPE on the text between them), pieces, decoding, accessors. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

void lb_tokenizer_free(lb_tokenizer *t) {
    if (!t) return;
    free(t->text);
    free(t->text_off);
    free(t->text_len);
    free(t->scores);
    free(t->attr);
    free(t->eog);
    free(t->by_text.slots);
    free(t->piece);
    free(t->piece_off);
    free(t->piece_len);
    lb_u64map_free(&t->merges);
    lb_tok_matcher *ms[2] = {&t->user, &t->special};
    for (int i = 0; i < 2; i++) {
        free(ms[i]->rank);
        free(ms[i]->by_rank);
        lb_u64map_free(&ms[i]->trie);
        free(ms[i]->node_tok);
    }
    free(t);
}

int lb_tokenizer_n_vocab(const lb_tokenizer *t) { return t ? t->n_vocab : 0; }
int lb_tokenizer_bos(const lb_tokenizer *t) { return t ? t->bos : -1; }
int lb_tokenizer_eos(const lb_tokenizer *t) { return t ? t->eos : -1; }
int lb_tokenizer_add_bos(const lb_tokenizer *t) { return t ? t->add_bos : 0; }

int lb_tokenizer_is_eog(const lb_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_vocab && t->eog[id];
}

const char *lb_tokenizer_piece(const lb_tokenizer *t, int32_t id, size_t *len) {
    if (!t || id < 0 || id >= t->n_vocab) {
        if (len) *len = 0;
        return "";
    }
    if (len) *len = t->piece_len[id];
    return t->piece + t->piece_off[id];
}

const char *lb_tokenizer_token_text(const lb_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_vocab) return "";
    return lb_tok_text(t, id);
}

/* ---- user-defined tokens ----
 * llama.cpp takes each user token in turn (longest first) and cuts every
 * non-overlapping occurrence, left to right, out of the text that is still
 * unclaimed. Equivalently: find all occurrences with the trie, visit them in
 * (token order, position) order and claim those whose bytes are all free. */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sets tok_at[pos] to the user token claimed at pos, -1 elsewhere. */
static lb_status find_user_tokens(const lb_tokenizer *t, const lb_tok_matcher *mt, const char *text, size_t len,
                                  int32_t *tok_at) {
    uint64_t *cand = NULL; /* rank << 32 | position */
    size_t n_cand = 0, cap = 0;
    for (size_t pos = 0; pos < len; pos++) {
        tok_at[pos] = -1;
        int32_t node = 0, unused;
        for (size_t j = pos; j < len; j++) {
            uint64_t key = (uint64_t)node << 8 | (unsigned char)text[j];
            if (!lb_u64map_get(&mt->trie, key, &node, &unused)) break;
            int32_t id = mt->node_tok[node];
            if (id < 0) continue;
            if (n_cand == cap) {
                cap = cap ? cap * 2 : 64;
                uint64_t *c = realloc(cand, cap * sizeof *c);
                if (!c) {
                    free(cand);
                    return lb_fail(LB_ERR_NOMEM, "out of memory matching user-defined tokens");
                }
                cand = c;
            }
            cand[n_cand++] = (uint64_t)mt->rank[id] << 32 | pos;
        }
    }
    if (n_cand == 0) return LB_OK;
    qsort(cand, n_cand, sizeof *cand, cmp_u64);

    uint8_t *taken = calloc(len, 1);
    if (!taken) {
        free(cand);
        return lb_fail(LB_ERR_NOMEM, "out of memory matching user-defined tokens");
    }
    for (size_t i = 0; i < n_cand; i++) {
        size_t pos = (size_t)(uint32_t)cand[i];
        int32_t id = mt->by_rank[cand[i] >> 32];
        size_t n = t->text_len[id], j;
        for (j = 0; j < n && !taken[pos + j]; j++) {}
        if (j < n) continue; /* overlaps a token claimed earlier */
        memset(taken + pos, 1, n);
        tok_at[pos] = id;
    }
    free(taken);
    free(cand);
    return LB_OK;
}

typedef struct {
    const lb_tokenizer *t;
    lb_ivec *out;
    int prev_special; /* SPM: the next text run gets the dummy-prefix space */
    const lb_tok_matcher *mt; /* the tokens cut out of the text first */
} encoder;

static lb_status encode_text(encoder *e, const char *text, size_t len) {
    if (len == 0) return LB_OK;
    if (e->t->model == LB_TOK_BPE) return lb_bpe_encode(e->t, text, len, e->out);
    int prefix = e->t->add_space_prefix && e->prev_special;
    e->prev_special = 0;
    return lb_spm_encode(e->t, text, len, prefix, e->out);
}

static lb_status encode_fragments(encoder *e, const char *text, size_t len) {
    if (e->mt->n == 0) return encode_text(e, text, len);
    int32_t *tok_at = malloc(len * sizeof *tok_at);
    if (!tok_at) return lb_fail(LB_ERR_NOMEM, "out of memory for %zu bytes of text", len);
    lb_status s = find_user_tokens(e->t, e->mt, text, len, tok_at);
    size_t start = 0;
    for (size_t pos = 0; pos < len && !s;) {
        int32_t id = tok_at[pos];
        if (id < 0) {
            pos++;
            continue;
        }
        s = encode_text(e, text + start, pos - start);
        if (!s) s = lb_ivec_push(e->out, id);
        e->prev_special = 1; /* llama.cpp: text after a token gets the prefix too */
        pos += e->t->text_len[id];
        start = pos;
    }
    if (!s) s = encode_text(e, text + start, len - start);
    free(tok_at);
    return s;
}

lb_status lb_tokenizer_encode(const lb_tokenizer *t, const char *text, size_t len, int add_bos,
                              int32_t **ids, int *n_ids) {
    return lb_tokenizer_encode_special(t, text, len, add_bos, 0, ids, n_ids);
}

lb_status lb_tokenizer_encode_special(const lb_tokenizer *t, const char *text, size_t len, int add_bos,
                                      int parse_special, int32_t **ids, int *n_ids) {
    if (!ids || !n_ids) return lb_fail(LB_ERR_ARG, "lb_tokenizer_encode: NULL output");
    *ids = NULL;
    *n_ids = 0;
    if (!t || (!text && len)) return lb_fail(LB_ERR_ARG, "lb_tokenizer_encode: NULL argument");
    if (len > LB_TOK_MAX_INPUT)
        return lb_fail(LB_ERR_ARG, "text of %zu bytes is too long to tokenize at once", len);

    lb_ivec out = {0};
    encoder e = {t, &out, 1, parse_special ? &t->special : &t->user};
    lb_status s = LB_OK;
    /* add_bos plays llama_tokenize's add_special: BOS/EOS only as configured */
    if (add_bos && t->add_bos) s = lb_ivec_push(&out, t->bos);
    if (!s && len) s = encode_fragments(&e, text, len);
    if (!s && add_bos && t->add_eos) s = lb_ivec_push(&out, t->eos);
    if (!s && !out.v) { /* hand back a freeable pointer even when empty */
        s = lb_ivec_push(&out, 0);
        out.n = 0;
    }
    if (s) {
        free(out.v);
        return s;
    }
    *ids = out.v;
    *n_ids = (int)out.n;
    return LB_OK;
}

lb_status lb_tokenizer_decode(const lb_tokenizer *t, const int32_t *ids, int n, char **out,
                              size_t *len) {
    if (!out || !len) return lb_fail(LB_ERR_ARG, "lb_tokenizer_decode: NULL output");
    *out = NULL;
    *len = 0;
    if (!t || n < 0 || (!ids && n > 0)) return lb_fail(LB_ERR_ARG, "lb_tokenizer_decode: bad argument");
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return lb_fail(LB_ERR_ARG, "token id %d at position %d is outside the vocabulary (%d)",
                           (int)ids[i], i, (int)t->n_vocab);
        total += t->piece_len[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf) return lb_fail(LB_ERR_NOMEM, "out of memory decoding %d tokens", n);

    /* SPM encoding put a space in front of the text, and after every
     * user-defined token; the first text piece after either loses one. */
    int strip_pending = t->model == LB_TOK_SPM && t->add_space_prefix;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t plen;
        const char *p = lb_tokenizer_piece(t, ids[i], &plen);
        int user = (t->attr[ids[i]] & LB_ATTR_USER_DEFINED) != 0;
        if (plen && !user && strip_pending) {
            if (p[0] == ' ') p++, plen--;
            strip_pending = 0;
        }
        memcpy(buf + o, p, plen);
        o += plen;
        if (user && t->model == LB_TOK_SPM && t->add_space_prefix) strip_pending = 1;
    }
    buf[o] = '\0';
    *out = buf;
    *len = o;
    return LB_OK;
}
