/* Grammar-constrained sampling (lowbit.h; the compiled form and the
 * matching state are described in grammar_impl.h).
 *
 * A token is allowed when its bytes, decoded as UTF-8 after whatever part of
 * a character the text so far ends in, take at least one stack through: a
 * token that ends inside a character is allowed when some stack's next
 * group could match a character starting with those bytes. End-of-generation
 * tokens are allowed once the text is a whole sentence; tokens that print
 * nothing (control tokens) never are.
 *
 * Sampling draws as usual first and only when the grammar refuses that
 * token masks every refused token and draws again (most tokens of a JSON
 * string are allowed, so the full scan over the vocabulary is the rare
 * case). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

enum { MAX_STACK = 512, MAX_STACKS = 2048 };

typedef struct { /* a set of stacks: stack i is data[off[i] + 1 ..], its length data[off[i]] */
    int *data, n, cap;
    int *off, n_st, cap_st;
    /* duplicates found by hash: entries of an earlier stamp are empty, so clearing the set is stamp++ */
    struct {
        uint32_t stamp;
        int idx;
    } *ht;
    uint32_t stamp;
} stackset;

struct lb_grammar {
    lb_grules r;
    stackset cur, tmp[2];
    uint32_t partial; /* the bits of a character the text ends inside */
    int partial_rem;  /* its continuation bytes still to come (0: none) */
    int partial_len;  /* its length in bytes */
    int overflow;     /* a stack or the set hit its bound (the text is refused past it) */
    int n_vocab;
    char *pieces;      /* every token's bytes */
    size_t *piece_off; /* n_vocab + 1 offsets */
    uint8_t *eog;      /* end-of-generation tokens */
    float *masked;     /* logits with the refused tokens at -inf */
    int w[MAX_STACK + 2];
};

enum { HT_CAP = 2 * MAX_STACKS }; /* a power of 2 */

static void ss_clear(stackset *s) {
    s->n = s->n_st = 0;
    s->stamp++;
}

static int ss_add(lb_grammar *g, stackset *s, const int *st, int len) {
    if (!s->ht && !(s->ht = calloc(HT_CAP, sizeof *s->ht))) return g->overflow = 1, -1;
    if (!s->stamp) s->stamp = 1; /* (stamp 0 is the calloc'ed table's: empty) */
    uint32_t h = 2166136261u ^ (uint32_t)len;
    for (int i = 0; i < len; i++) h = (h ^ (uint32_t)st[i]) * 16777619u;
    uint32_t i = h & (HT_CAP - 1);
    for (; s->ht[i].stamp == s->stamp; i = (i + 1) & (HT_CAP - 1)) {
        const int *o = s->data + s->off[s->ht[i].idx];
        if (o[0] == len && !memcmp(o + 1, st, (size_t)len * sizeof *st)) return 0;
    }
    if (s->n_st >= MAX_STACKS) return g->overflow = 1, 0;
    if (s->n + len + 1 > s->cap) {
        int cap = s->cap ? s->cap : 256;
        while (cap < s->n + len + 1) cap *= 2;
        int *d = realloc(s->data, (size_t)cap * sizeof *d);
        if (!d) return g->overflow = 1, -1;
        s->data = d, s->cap = cap;
    }
    if (s->n_st == s->cap_st) {
        const int cap = s->cap_st ? 2 * s->cap_st : 16;
        int *o = realloc(s->off, (size_t)cap * sizeof *o);
        if (!o) return g->overflow = 1, -1;
        s->off = o, s->cap_st = cap;
    }
    s->ht[i].stamp = s->stamp, s->ht[i].idx = s->n_st;
    s->off[s->n_st++] = s->n;
    s->data[s->n++] = len;
    memcpy(s->data + s->n, st, (size_t)len * sizeof *st);
    s->n += len;
    return 0;
}

static void ss_free(stackset *s) {
    free(s->ht);
    free(s->data);
    free(s->off);
    memset(s, 0, sizeof *s);
}

static int at_end(const lb_gel *el, int pos) { return el[pos].type == GE_END || el[pos].type == GE_ALT; }

/* Expands the references on top of the working stack w[0..len) until every
 * resulting stack has a character group on top (or is empty), into out.
 * Writes only w[len - 1 ..] and leaves w[len - 1] as it found it. */
static void advance(lb_grammar *g, stackset *out, int len) {
    if (len == 0) {
        ss_add(g, out, g->w, 0);
        return;
    }
    const lb_gel *el = g->r.el;
    const int top = g->w[len - 1];
    if (el[top].type != GE_REF) {
        ss_add(g, out, g->w, len);
        return;
    }
    int base = len - 1;
    if (!at_end(el, top + 1)) g->w[base++] = top + 1;
    if (base + 1 > MAX_STACK) {
        g->overflow = 1;
        g->w[len - 1] = top;
        return;
    }
    for (int a = g->r.rule_start[el[top].v];; a++) {
        if (at_end(el, a)) advance(g, out, base); /* an empty alternative */
        else {
            g->w[base] = a;
            advance(g, out, base + 1);
        }
        while (!at_end(el, a)) a++; /* to this alternative's end */
        if (el[a].type == GE_END) break;
    }
    g->w[len - 1] = top;
}

/* The stacks of `in` that take code point cp, advanced, into out. */
static void step(lb_grammar *g, const stackset *in, uint32_t cp, stackset *out) {
    const lb_gel *el = g->r.el;
    ss_clear(out);
    for (int i = 0; i < in->n_st; i++) {
        const int *st = in->data + in->off[i];
        const int len = st[0];
        if (len == 0 || !lb_gel_match(el, st[len], cp)) continue;
        memcpy(g->w, st + 1, (size_t)(len - 1) * sizeof *g->w);
        const int nxt = lb_gel_skip(el, st[len]);
        if (!at_end(el, nxt)) {
            g->w[len - 1] = nxt;
            advance(g, out, len);
        } else advance(g, out, len - 1);
    }
}

/* Could a character in [lo, hi] come next in some stack of s? */
static int range_possible(const lb_grammar *g, const stackset *s, uint32_t lo, uint32_t hi) {
    const lb_gel *el = g->r.el;
    for (int i = 0; i < s->n_st; i++) {
        const int *st = s->data + s->off[i];
        if (st[0] == 0) continue;
        int pos = st[st[0]];
        if (el[pos].type != GE_CHAR) return 1; /* negated classes and '.': assume so */
        do {
            const uint32_t a = el[pos].v, b = el[pos + 1].type == GE_RNG_HI ? el[pos + 1].v : a;
            if (a <= hi && b >= lo) return 1;
            pos += el[pos + 1].type == GE_RNG_HI ? 2 : 1;
        } while (el[pos].type == GE_CHAR_ALT);
    }
    return 0;
}

static int has_empty(const stackset *s) {
    for (int i = 0; i < s->n_st; i++)
        if (s->data[s->off[i]] == 0) return 1;
    return 0;
}

/* The smallest code point of each UTF-8 length (shorter forms are overlong). */
static const uint32_t utf8_min[5] = {0, 0, 0x80, 0x800, 0x10000};

static int valid_cp(uint32_t v, int len) { return v >= utf8_min[len] && v <= 0x10FFFF && (v < 0xD800 || v > 0xDFFF); }

/* Runs bytes b[0..n) from g->cur. Returns the set the text ends in (cur
 * itself when n is 0) or NULL when refused; *st: the character it ends
 * inside (value, bytes to come, length). Overlong forms, surrogates and
 * stray continuation bytes are refused, as JSON and GBNF read UTF-8. */
static const stackset *run(lb_grammar *g, const uint8_t *b, size_t n, int st[3]) {
    const stackset *s = &g->cur;
    uint32_t v = g->partial;
    int r = g->partial_rem, len = g->partial_len, flip = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t c = b[i];
        if (r > 0) {
            if ((c & 0xC0) != 0x80) return NULL;
            v = v << 6 | (c & 0x3F);
            if (--r > 0) continue;
            if (!valid_cp(v, len)) return NULL;
        } else if (c < 0x80) v = c;
        else {
            r = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 && c < 0xF0 ? 2 : c >= 0xC2 && c < 0xE0 ? 1 : -1;
            if (r < 0) return NULL;
            len = r + 1;
            v = c & (0x3F >> r);
            continue;
        }
        stackset *out = &g->tmp[flip];
        flip ^= 1;
        step(g, s, v, out);
        if (out->n_st == 0) return NULL;
        s = out;
    }
    if (r > 0) { /* the characters these bytes can still begin */
        uint32_t lo = v << (6 * r), hi = lo | ((1u << (6 * r)) - 1);
        lo = lo > utf8_min[len] ? lo : utf8_min[len];
        hi = hi < 0x10FFFF ? hi : 0x10FFFF;
        if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF) || !range_possible(g, s, lo, hi)) return NULL;
    }
    st[0] = (int)v, st[1] = r, st[2] = len;
    return s;
}

static int allows(lb_grammar *g, int32_t t) {
    if (t < 0 || t >= g->n_vocab) return 0;
    if (g->eog[t]) return g->partial_rem == 0 && has_empty(&g->cur);
    const size_t n = g->piece_off[t + 1] - g->piece_off[t];
    int st[3];
    return n > 0 && run(g, (const uint8_t *)g->pieces + g->piece_off[t], n, st) != NULL;
}

int lb_grammar_allows(lb_grammar *g, int32_t token) { return allows(g, token); }

lb_status lb_grammar_accept(lb_grammar *g, int32_t t) {
    if (!allows(g, t)) return lb_fail(LB_ERR_ARG, "grammar: token %d is not allowed here", (int)t);
    if (g->eog[t]) { /* the end: nothing may follow */
        ss_clear(&g->cur);
        return LB_OK;
    }
    int st[3];
    const stackset *s = run(g, (const uint8_t *)g->pieces + g->piece_off[t], g->piece_off[t + 1] - g->piece_off[t], st);
    if (s != &g->cur) { /* swap the result in */
        stackset old = g->cur;
        const int k = (int)(s - g->tmp);
        g->cur = g->tmp[k];
        g->tmp[k] = old;
    }
    g->partial = (uint32_t)st[0], g->partial_rem = st[1], g->partial_len = st[2];
    return LB_OK;
}

int lb_grammar_complete(lb_grammar *g) {
    if (g->partial_rem) return 0;
    for (int i = 0; i < g->cur.n_st; i++)
        if (g->cur.data[g->cur.off[i]] != 0) return has_empty(&g->cur) ? 1 : 0;
    return 2; /* only empty stacks (or none): nothing can follow */
}

lb_status lb_grammar_new(const lb_model *m, const char *gbnf, lb_grammar **out) {
    *out = NULL;
    if (!gbnf) return lb_fail(LB_ERR_ARG, "grammar: no text");
    const int V = lb_model_n_vocab(m);
    if (!lb_model_has_vocab(m) || V <= 0) return lb_fail(LB_ERR_UNSUPPORTED, "grammar: the model has no vocabulary");
    lb_grammar *g = calloc(1, sizeof *g);
    if (!g) return lb_fail(LB_ERR_NOMEM, "out of memory");
    lb_status s = lb_grules_parse(gbnf, &g->r);
    if (s) {
        free(g);
        return s;
    }
    g->n_vocab = V;
    size_t total = 0;
    g->piece_off = malloc(((size_t)V + 1) * sizeof *g->piece_off);
    g->eog = calloc((size_t)V, 1);
    g->masked = malloc((size_t)V * sizeof *g->masked);
    if (g->piece_off && g->eog && g->masked) {
        for (int t = 0; t < V; t++) {
            size_t len;
            lb_token_to_piece(m, t, &len);
            g->piece_off[t] = total;
            total += len;
            g->eog[t] = (uint8_t)(lb_token_is_eog(m, t) != 0);
        }
        g->piece_off[V] = total;
        g->pieces = malloc(total + 1);
    }
    if (!g->pieces) {
        lb_grammar_free(g);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    for (int t = 0; t < V; t++) {
        size_t len;
        const char *p = lb_token_to_piece(m, t, &len);
        memcpy(g->pieces + g->piece_off[t], p, len);
    }
    g->w[0] = -1; /* the root's alternatives, each a stack of one element */
    const lb_gel *el = g->r.el;
    for (int a = g->r.rule_start[g->r.root];; a++) {
        if (at_end(el, a)) advance(g, &g->cur, 0);
        else {
            g->w[0] = a;
            advance(g, &g->cur, 1);
        }
        while (!at_end(el, a)) a++;
        if (el[a].type == GE_END) break;
    }
    if (g->overflow) {
        lb_grammar_free(g);
        return lb_fail(LB_ERR_ARG, "grammar: too many ways to begin (more than %d stacks)", MAX_STACKS);
    }
    *out = g;
    return LB_OK;
}

void lb_grammar_free(lb_grammar *g) {
    if (!g) return;
    lb_grules_free(&g->r);
    ss_free(&g->cur);
    ss_free(&g->tmp[0]);
    ss_free(&g->tmp[1]);
    free(g->pieces);
    free(g->piece_off);
    free(g->eog);
    free(g->masked);
    free(g);
}

int32_t lb_sampler_sample_grammar(lb_sampler *s, const float *logits, lb_grammar *g) {
    const int32_t t = lb_sampler_sample(s, logits);
    if (!g || allows(g, t)) return t;
    int any = 0;
    for (int v = 0; v < g->n_vocab; v++) {
        const int ok = allows(g, v);
        g->masked[v] = ok ? logits[v] : -INFINITY;
        any |= ok;
    }
    if (!any) { /* nothing can follow: end the text */
        for (int v = 0; v < g->n_vocab; v++)
            if (g->eog[v]) return v;
        return -1;
    }
    return lb_sampler_sample(s, g->masked);
}
