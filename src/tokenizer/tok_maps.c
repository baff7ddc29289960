/* Small containers for the tokenizers: a growable id array and two
 * open-addressing hash tables (text -> id, 64-bit key -> value pair). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

lb_status lb_ivec_push(lb_ivec *a, int32_t x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory growing a token list to %zu", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return LB_OK;
}

/* FNV-1a: token texts are short, so a simple byte loop is fast enough. */
uint64_t lb_tok_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

int32_t lb_tok_lookup(const lb_tokenizer *t, const char *s, size_t n) {
    const lb_strmap *m = &t->by_text;
    uint64_t h = lb_tok_hash(s, n);
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        lb_strslot sl = m->slots[i];
        if (sl.id < 0) return -1;
        if (sl.tag == (uint32_t)(h >> 32) && t->text_len[sl.id] == n &&
            memcmp(lb_tok_text(t, sl.id), s, n) == 0)
            return sl.id;
    }
}

/* splitmix64's finalizer spreads packed id pairs over the table. */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

lb_status lb_u64map_init(lb_u64map *m, size_t max_entries) {
    size_t cap = 16;
    while (cap < max_entries * 2) cap *= 2; /* load factor <= 1/2 */
    memset(m, 0, sizeof *m);
    m->keys = malloc(cap * sizeof *m->keys);
    m->a = malloc(cap * sizeof *m->a);
    m->b = malloc(cap * sizeof *m->b);
    if (!m->keys || !m->a || !m->b) {
        lb_u64map_free(m);
        return lb_fail(LB_ERR_NOMEM, "out of memory for a hash table of %zu entries", max_entries);
    }
    memset(m->keys, 0xFF, cap * sizeof *m->keys); /* all LB_U64MAP_EMPTY */
    m->mask = cap - 1;
    return LB_OK;
}

void lb_u64map_free(lb_u64map *m) {
    free(m->keys);
    free(m->a);
    free(m->b);
    memset(m, 0, sizeof *m);
}

int lb_u64map_put(lb_u64map *m, uint64_t key, int32_t a, int32_t b) {
    for (size_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) return 0;
        if (m->keys[i] == LB_U64MAP_EMPTY) {
            m->keys[i] = key;
            m->a[i] = a;
            m->b[i] = b;
            m->n++;
            return 1;
        }
    }
}

int lb_u64map_get(const lb_u64map *m, uint64_t key, int32_t *a, int32_t *b) {
    if (!m->keys) return 0;
    for (size_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) {
            *a = m->a[i];
            *b = m->b[i];
            return 1;
        }
        if (m->keys[i] == LB_U64MAP_EMPTY) return 0;
    }
}

static int cand_better(const lb_merge_cand *a, const lb_merge_cand *b) {
    return a->key > b->key || (a->key == b->key && a->left < b->left);
}

/* A 4-ary heap: a node's four children share one 64-byte cache line, which
 * halves the depth and the cache misses of a binary heap on long texts. */
lb_status lb_heap_push(lb_merge_heap *h, lb_merge_cand c) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        lb_merge_cand *v = realloc(h->v, cap * sizeof *v);
        if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory growing the merge queue to %zu", cap);
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (!cand_better(&c, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = c;
    return LB_OK;
}

lb_merge_cand lb_heap_pop(lb_merge_heap *h) {
    lb_merge_cand top = h->v[0];
    lb_merge_cand last = h->v[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t first = 4 * i + 1, best = first;
        if (first >= n) break;
        size_t end = LB_MIN(first + 4, n);
        for (size_t c = first + 1; c < end; c++)
            if (cand_better(&h->v[c], &h->v[best])) best = c;
        if (!cand_better(&h->v[best], &last)) break;
        h->v[i] = h->v[best];
        i = best;
    }
    if (n > 0) h->v[i] = last;
    return top;
}
