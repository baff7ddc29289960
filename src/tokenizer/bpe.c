/* GPT-2 byte-level BPE as llama.cpp's llm_tokenizer_bpe runs it: the text is
 * cut into words by the pre-tokenizer regex, each word's UTF-8 bytes are
 * spelled in GPT-2's byte alphabet, and within a word the adjacent pair with
 * the lowest merge rank is merged repeatedly (ties: leftmost first). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode.h"

lb_status lb_bpe_load_merges(lb_tokenizer *t, const gguf_file *g) {
    const gguf_kv *kv = gguf_find_kv(g, "tokenizer.ggml.merges");
    if (!kv) return lb_fail(LB_ERR_FORMAT, "gpt2 tokenizer without tokenizer.ggml.merges");
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.merges is not an array of strings");
    if (kv->arr_n > (uint64_t)INT32_MAX)
        return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.merges has too many entries");
    lb_status s = lb_u64map_init(&t->merges, (size_t)kv->arr_n);
    if (s) return s;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        const char *m = kv->strs[i].ptr;
        size_t n = (size_t)kv->strs[i].len;
        /* "first second", split at the first space after position 0 as
         * llama.cpp does (a token may itself be a lone space) */
        const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL;
        if (!sp)
            return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.merges[%llu] has no space separating two tokens",
                           (unsigned long long)i);
        size_t n1 = (size_t)(sp - m), n2 = n - n1 - 1;
        int32_t a = lb_tok_lookup(t, m, n1), b = lb_tok_lookup(t, sp + 1, n2);
        if (a < 0 || b < 0)
            return lb_fail(LB_ERR_FORMAT, "tokenizer.ggml.merges[%llu] (\"%.*s\") names a token that is not in the vocabulary",
                           (unsigned long long)i, (int)LB_MIN(n, 64), m);
        /* the merged text need not be a token; llama.cpp still merges it */
        char stack[256];
        char *joined = n1 + n2 <= sizeof stack ? stack : malloc(n1 + n2);
        if (!joined) return lb_fail(LB_ERR_NOMEM, "out of memory reading merges");
        memcpy(joined, m, n1);
        memcpy(joined + n1, sp + 1, n2);
        int32_t merged = lb_tok_lookup(t, joined, n1 + n2);
        if (joined != stack) free(joined);
        /* the first occurrence of a pair keeps its rank (std::map::emplace) */
        lb_u64map_put(&t->merges, (uint64_t)a << 32 | (uint32_t)b, (int32_t)i, merged);
    }
    return LB_OK;
}

typedef struct {
    int32_t prev, next;
    int32_t off, n; /* bytes of the word's byte-level spelling; n = 0 once merged away */
    int32_t id;     /* token of the symbol's text, -1 if it is not one */
} bpe_sym;

typedef struct {
    const lb_tokenizer *t;
    char *word;       /* byte-level spelling of the current word */
    size_t word_cap;
    bpe_sym *sym;
    size_t sym_cap;
    lb_merge_heap heap;
} bpe_state;

static lb_status try_add_pair(bpe_state *st, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return LB_OK;
    const bpe_sym *l = &st->sym[left], *r = &st->sym[right];
    int32_t rank, merged;
    if (l->id < 0 || r->id < 0) return LB_OK;
    if (!lb_u64map_get(&st->t->merges, (uint64_t)l->id << 32 | (uint32_t)r->id, &rank, &merged))
        return LB_OK;
    lb_merge_cand c = {UINT32_MAX - (uint32_t)rank, left, right, l->n + r->n};
    return lb_heap_push(&st->heap, c);
}

static lb_status reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return LB_OK;
    size_t cap2 = LB_MAX(need, *cap * 2);
    void *q = realloc(*p, cap2 * elem);
    if (!q) return lb_fail(LB_ERR_NOMEM, "out of memory for a word of %zu bytes", need);
    *p = q;
    *cap = cap2;
    return LB_OK;
}

/* Tokenizes the code points cpt[0..n) of one pre-token word. */
static lb_status encode_word(bpe_state *st, const uint32_t *cpt, size_t n, lb_ivec *out) {
    const lb_tokenizer *t = st->t;
    if (n > (size_t)INT32_MAX / 8) /* symbol offsets are int32 */
        return lb_fail(LB_ERR_ARG, "a single pre-token of %zu characters is too long", n);
    lb_status s = reserve((void **)&st->word, &st->word_cap, n * 8, 1);
    if (!s) s = reserve((void **)&st->sym, &st->sym_cap, n * 4, sizeof *st->sym);
    if (s) return s;

    /* each UTF-8 byte becomes one symbol, spelled as its GPT-2 character */
    size_t len = 0;
    int32_t n_sym = 0;
    for (size_t i = 0; i < n; i++) {
        char u8[4];
        size_t k = lb_utf8_encode(cpt[i], u8);
        for (size_t j = 0; j < k; j++) {
            unsigned char b = (unsigned char)u8[j];
            size_t m = lb_utf8_encode(lb_gpt2_byte_to_cpt(b), st->word + len);
            st->sym[n_sym] = (bpe_sym){n_sym - 1, n_sym + 1, (int32_t)len, (int32_t)m,
                                       t->byte_char_token[b]};
            n_sym++;
            len += m;
        }
    }
    if (n_sym == 0) return LB_OK;
    st->sym[n_sym - 1].next = -1;

    if (t->ignore_merges) {
        int32_t id = lb_tok_lookup(t, st->word, len);
        if (id >= 0) return lb_ivec_push(out, id);
    }

    st->heap.n = 0;
    for (int32_t i = 1; i < n_sym && !s; i++) s = try_add_pair(st, i - 1, i);
    while (!s && st->heap.n > 0) {
        lb_merge_cand c = lb_heap_pop(&st->heap);
        bpe_sym *l = &st->sym[c.left], *r = &st->sym[c.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != c.size) continue; /* stale */
        int32_t rank, merged;
        lb_u64map_get(&t->merges, (uint64_t)l->id << 32 | (uint32_t)r->id, &rank, &merged);
        l->n += r->n;
        l->id = merged;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) st->sym[r->next].prev = c.left;
        s = try_add_pair(st, l->prev, c.left);
        if (!s) s = try_add_pair(st, c.left, l->next);
    }

    for (int32_t i = 0; i != -1 && !s; i = st->sym[i].next) {
        const bpe_sym *y = &st->sym[i];
        if (y->id >= 0) {
            s = lb_ivec_push(out, y->id);
            continue;
        }
        /* not a token: llama.cpp tries each byte of the spelling as a
         * one-byte token and drops those that are not */
        for (int32_t j = 0; j < y->n && !s; j++) {
            int32_t id = t->raw_byte_token[(unsigned char)st->word[y->off + j]];
            if (id >= 0) s = lb_ivec_push(out, id);
        }
    }
    return s;
}

lb_status lb_bpe_encode(const lb_tokenizer *t, const char *text, size_t len, lb_ivec *out) {
    uint32_t *cpt = malloc((len ? len : 1) * sizeof *cpt);
    uint8_t *cls = malloc(len ? len : 1);
    lb_ivec ends = {0};
    bpe_state st = {t, NULL, 0, NULL, 0, {0}};
    lb_status s = LB_OK;
    if (!cpt || !cls) {
        s = lb_fail(LB_ERR_NOMEM, "out of memory decoding %zu bytes of text", len);
        goto done;
    }
    size_t n = 0;
    for (size_t off = 0; off < len; n++) {
        size_t adv;
        cpt[n] = lb_utf8_decode((const unsigned char *)text + off, len - off, &adv);
        cls[n] = (uint8_t)lb_uclass(cpt[n]);
        off += adv;
    }
    s = lb_pretokenize(t->pre, cpt, cls, n, &ends);
    size_t start = 0;
    for (size_t w = 0; w < ends.n && !s; w++) {
        size_t end = (size_t)ends.v[w];
        s = encode_word(&st, cpt + start, end - start, out);
        start = end;
    }
done:
    free(cpt);
    free(cls);
    free(ends.v);
    free(st.word);
    free(st.sym);
    free(st.heap.v);
    return s;
}
