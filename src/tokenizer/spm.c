/* SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm runs it: spaces
 * become U+2581, the text is cut into UTF-8 characters, and the adjacent pair
 * whose concatenation is the highest-scoring vocabulary token is merged
 * repeatedly (ties: leftmost first). Symbols left that are not tokens are
 * emitted as <0xXX> byte tokens.
 *
 * llama.cpp runs one priority queue over the whole text. Here the text is
 * first cut where no token can span the cut (see spm_joinable); merges on
 * either side of such a cut never interact, so running the same loop on each
 * piece gives identical ids, with queues that stay small and in cache. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode.h"

typedef struct {
    int32_t prev, next; /* neighbours in the linked list of live symbols */
    int32_t off, n;     /* bytes of the escaped text; n = 0 once merged away */
} spm_sym;

typedef struct {
    const lb_tokenizer *t;
    const char *buf;
    spm_sym *sym;
    lb_merge_heap heap;
} spm_state;

static lb_status try_add_pair(spm_state *st, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return LB_OK;
    const spm_sym *l = &st->sym[left], *r = &st->sym[right];
    int32_t size = l->n + r->n;
    int32_t id = lb_tok_lookup(st->t, st->buf + l->off, (size_t)size);
    if (id < 0) return LB_OK;
    lb_merge_cand c = {lb_score_key(st->t->scores[id]), left, right, size};
    return lb_heap_push(&st->heap, c);
}

/* llama.cpp's resegment(): a symbol that is a token is emitted as such, any
 * other as one byte token per byte. (Its rev_merge lookup can never succeed:
 * every recorded merge text is a token, and it is only consulted for texts
 * that are not, so it is left out here.) */
static lb_status emit_symbol(const lb_tokenizer *t, const char *text, size_t n, lb_ivec *out) {
    int32_t id = lb_tok_lookup(t, text, n);
    if (id >= 0) return lb_ivec_push(out, id);
    for (size_t i = 0; i < n; i++) {
        int32_t b = t->byte_token[(unsigned char)text[i]];
        if (b < 0) b = t->unk; /* vocab without byte tokens: llama.cpp would throw */
        if (b < 0) continue;
        lb_status s = lb_ivec_push(out, b);
        if (s) return s;
    }
    return LB_OK;
}

/* " " -> "\xE2\x96\x81" (U+2581), with one more in front for the dummy prefix. */
static char *escape_spaces(const char *text, size_t len, int add_prefix, size_t *out_len) {
    size_t n_space = (size_t)add_prefix;
    for (size_t i = 0; i < len; i++) n_space += text[i] == ' ';
    char *buf = malloc(len + (size_t)add_prefix + 2 * n_space + 1);
    if (!buf) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len + (size_t)add_prefix; i++) {
        char c = add_prefix ? (i == 0 ? ' ' : text[i - 1]) : text[i];
        if (c == ' ') {
            memcpy(buf + o, "\xE2\x96\x81", 3);
            o += 3;
        } else {
            buf[o++] = c;
        }
    }
    buf[o] = '\0';
    *out_len = o;
    return buf;
}

/* Runs llama.cpp's merge loop on symbols [first, end) and emits them. */
static lb_status merge_segment(spm_state *st, int32_t first, int32_t end, lb_ivec *out) {
    st->sym[first].prev = -1;
    st->sym[end - 1].next = -1;
    lb_status s = LB_OK;
    for (int32_t i = first + 1; i < end && !s; i++) s = try_add_pair(st, i - 1, i);

    while (!s && st->heap.n > 0) {
        lb_merge_cand c = lb_heap_pop(&st->heap);
        spm_sym *l = &st->sym[c.left], *r = &st->sym[c.right];
        /* stale: one side has been merged since this pair was queued */
        if (l->n == 0 || r->n == 0 || l->n + r->n != c.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) st->sym[r->next].prev = c.left;
        s = try_add_pair(st, l->prev, c.left);
        if (!s) s = try_add_pair(st, c.left, l->next);
    }
    st->heap.n = 0;

    /* the first symbol is never merged away: only right-hand symbols are */
    for (int32_t i = first; i != -1 && !s; i = st->sym[i].next)
        s = emit_symbol(st->t, st->buf + st->sym[i].off, (size_t)st->sym[i].n, out);
    return s;
}

lb_status lb_spm_encode(const lb_tokenizer *t, const char *text, size_t len, int add_prefix,
                        lb_ivec *out) {
    size_t n_buf = 0;
    char *buf = escape_spaces(text, len, add_prefix, &n_buf);
    if (!buf) return lb_fail(LB_ERR_NOMEM, "out of memory escaping %zu bytes of text", len);
    if (n_buf == 0) {
        free(buf);
        return LB_OK;
    }

    spm_state st = {t, buf, NULL, {0}};
    st.sym = malloc(n_buf * sizeof *st.sym);
    lb_status s = LB_OK;
    if (!st.sym) {
        s = lb_fail(LB_ERR_NOMEM, "out of memory for %zu symbols", n_buf);
        goto done;
    }

    /* one symbol per UTF-8 character (by its lead byte; not validated) */
    int32_t n_sym = 0;
    for (size_t off = 0; off < n_buf;) {
        size_t n = LB_MIN(lb_utf8_len((unsigned char)buf[off]), n_buf - off);
        st.sym[n_sym] = (spm_sym){n_sym - 1, n_sym + 1, (int32_t)off, (int32_t)n};
        n_sym++;
        off += n;
    }

    /* merge each run of possibly-joinable symbols on its own */
    int32_t seg = 0;
    for (int32_t i = 1; i <= n_sym && !s; i++) {
        if (i < n_sym) {
            unsigned pair = (unsigned)(unsigned char)buf[st.sym[i].off - 1] << 8 |
                            (unsigned char)buf[st.sym[i].off];
            if (t->spm_joinable[pair >> 3] & (1u << (pair & 7))) continue;
        }
        s = merge_segment(&st, seg, i, out);
        seg = i;
    }

done:
    free(st.heap.v);
    free(st.sym);
    free(buf);
    return s;
}
