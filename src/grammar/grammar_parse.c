/* GBNF text -> rules (grammar_impl.h). Recursive descent over the text; a
 * rule ends at a newline except after `::=` or `|` and inside parentheses,
 * as llama.cpp reads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

enum { MAX_ELEMENTS = 1 << 20, MAX_RULES = 1 << 18, MAX_REPEAT = 1000, MAX_DEPTH = 200 };

typedef struct {
    const char *text, *p;
    lb_grules *g;
    lb_status err;
    int depth;
    int *ht, ht_cap; /* rule names -> index + 1 (0: empty), open addressing, ht_cap a power of 2 */
} parser;

typedef struct { /* a growing sequence of elements (one alternative) */
    lb_gel *e;
    int n, cap;
} seq;

static lb_status perr(parser *ps, const char *at, const char *fmt, const char *arg) {
    if (ps->err) return ps->err;
    int line = 1, col = 1;
    for (const char *c = ps->text; c < at && *c; c++) {
        if (*c == '\n') line++, col = 1;
        else col++;
    }
    char msg[160];
    snprintf(msg, sizeof msg, fmt, arg);
    return ps->err = lb_fail(LB_ERR_ARG, "grammar: line %d, column %d: %s", line, col, msg);
}

static int push(parser *ps, seq *s, int type, uint32_t v) {
    if (ps->err) return -1;
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 16;
        lb_gel *e = realloc(s->e, (size_t)cap * sizeof *e);
        if (!e) return ps->err = lb_fail(LB_ERR_NOMEM, "out of memory"), -1;
        s->e = e, s->cap = cap;
    }
    s->e[s->n++] = (lb_gel){(uint32_t)type, v};
    return 0;
}

static uint32_t name_hash(const char *s, size_t n) { /* FNV-1a */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* The slot of name in the table: its rule's, or the empty one it would take. */
static int *slot(parser *ps, const char *name, size_t len) {
    const lb_grules *g = ps->g;
    for (uint32_t i = name_hash(name, len) & (uint32_t)(ps->ht_cap - 1);; i = (i + 1) & (uint32_t)(ps->ht_cap - 1)) {
        const int r = ps->ht[i] - 1;
        if (r < 0 || (strlen(g->names[r]) == len && !memcmp(g->names[r], name, len))) return &ps->ht[i];
    }
}

/* The index of the rule of that name, added (not yet defined) if new. */
static int rule_id(parser *ps, const char *name, size_t len) {
    lb_grules *g = ps->g;
    if (2 * (g->n_rules + 1) > ps->ht_cap) { /* grow the table: rehash every name */
        const int cap = ps->ht_cap ? 2 * ps->ht_cap : 64;
        int *ht = calloc((size_t)cap, sizeof *ht);
        if (!ht) return ps->err = lb_fail(LB_ERR_NOMEM, "out of memory"), -1;
        free(ps->ht);
        ps->ht = ht, ps->ht_cap = cap;
        for (int r = 0; r < g->n_rules; r++) *slot(ps, g->names[r], strlen(g->names[r])) = r + 1;
    }
    int *sl = slot(ps, name, len);
    if (*sl) return *sl - 1;
    if (g->n_rules >= MAX_RULES)
        return ps->err = lb_fail(LB_ERR_ARG, "grammar: more than %d rules (repetitions make rules too)", MAX_RULES), -1;
    if (g->n_rules == g->cap_rules) {
        const int cap = g->cap_rules ? 2 * g->cap_rules : 16;
        char **nm = realloc(g->names, (size_t)cap * sizeof *nm);
        if (nm) g->names = nm;
        int *rs = nm ? realloc(g->rule_start, (size_t)cap * sizeof *rs) : NULL;
        if (rs) g->rule_start = rs;
        if (!nm || !rs) return ps->err = lb_fail(LB_ERR_NOMEM, "out of memory"), -1;
        g->cap_rules = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return ps->err = lb_fail(LB_ERR_NOMEM, "out of memory"), -1;
    memcpy(copy, name, len);
    copy[len] = 0;
    g->names[g->n_rules] = copy;
    g->rule_start[g->n_rules] = -1;
    *sl = g->n_rules + 1;
    return g->n_rules++;
}

/* A rule of its own for a group or a repetition: "parent#N" ('#' is in no
 * name a grammar can write, so it never meets one). */
static int aux_rule(parser *ps, int parent) {
    char name[96];
    snprintf(name, sizeof name, "%.60s#%d", ps->g->names[parent], ps->g->n_rules);
    return rule_id(ps, name, strlen(name));
}

/* Appends alternatives (each an array of elements) as rule r's body. */
static void define(parser *ps, int r, const seq *body) {
    lb_grules *g = ps->g;
    if (ps->err) return;
    if (g->n_el + body->n + 1 > MAX_ELEMENTS) {
        ps->err = lb_fail(LB_ERR_ARG, "grammar: more than %d elements (a repetition too large?)", MAX_ELEMENTS);
        return;
    }
    if (g->n_el + body->n + 1 > g->cap_el) {
        int cap = g->cap_el ? g->cap_el : 256;
        while (cap < g->n_el + body->n + 1) cap *= 2;
        lb_gel *e = realloc(g->el, (size_t)cap * sizeof *e);
        if (!e) {
            ps->err = lb_fail(LB_ERR_NOMEM, "out of memory");
            return;
        }
        g->el = e, g->cap_el = cap;
    }
    g->rule_start[r] = g->n_el;
    if (body->n) memcpy(g->el + g->n_el, body->e, (size_t)body->n * sizeof *body->e);
    g->n_el += body->n;
    g->el[g->n_el++] = (lb_gel){GE_END, 0};
}

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static const char *skip_space(const char *p, int newline_ok) {
    for (;;) {
        if (*p == ' ' || *p == '\t' || (newline_ok && (*p == '\n' || *p == '\r'))) p++;
        else if (*p == '#') {
            while (*p && *p != '\n') p++;
        } else return p;
    }
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or class at ps->p (UTF-8, or an escape). */
static uint32_t read_char(parser *ps) {
    const unsigned char *p = (const unsigned char *)ps->p;
    if (*p == '\\') {
        const char e = (char)p[1];
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (digits) {
            uint32_t v = 0;
            for (int i = 0; i < digits; i++) {
                const int h = hex_value((char)p[2 + i]);
                if (h < 0) return perr(ps, ps->p, "bad \\%s escape", e == 'x' ? "x" : "u"), 0;
                v = v * 16 + (uint32_t)h;
            }
            if (v > 0x10FFFF) return perr(ps, ps->p, "code point past U+10FFFF%s", ""), 0;
            ps->p += 2 + digits;
            return v;
        }
        const char *map = "n\nr\rt\t\\\\\"\"''[[]]--^^//";
        for (const char *m = map; *m; m += 2)
            if (*m == e) {
                ps->p += 2;
                return (uint32_t)(unsigned char)m[1];
            }
        return perr(ps, ps->p, "unknown escape \\%.1s", ps->p + 1), 0;
    }
    if (*p < 0x80) {
        ps->p++;
        return *p;
    }
    const int n = *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : *p >= 0xC0 ? 2 : 0;
    if (!n || *p > 0xF4) return perr(ps, ps->p, "invalid UTF-8%s", ""), 0;
    uint32_t v = *p & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return perr(ps, ps->p, "invalid UTF-8%s", ""), 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    ps->p += n;
    return v;
}

static void parse_alternates(parser *ps, int rule, seq *out);

/* {m}, {m,}, {m,n} after a symbol: the bounds (max -1: none). */
static int parse_braces(parser *ps, int *min, int *max) {
    const char *at = ps->p;
    char *end;
    ps->p = skip_space(ps->p + 1, 1);
    long a = strtol(ps->p, &end, 10), b;
    if (end == ps->p || a < 0 || a > MAX_REPEAT) return perr(ps, at, "expected a count up to 1000 after {%s", ""), -1;
    ps->p = skip_space(end, 1);
    b = a;
    if (*ps->p == ',') {
        ps->p = skip_space(ps->p + 1, 1);
        b = -1;
        if (*ps->p != '}') {
            b = strtol(ps->p, &end, 10);
            if (end == ps->p || b < a || b > MAX_REPEAT)
                return perr(ps, at, "expected an upper count (at least the lower, at most 1000)%s", ""), -1;
            ps->p = skip_space(end, 1);
        }
    }
    if (*ps->p != '}') return perr(ps, at, "expected } to close the count%s", ""), -1;
    ps->p++;
    *min = (int)a, *max = (int)b;
    return 0;
}

/* Replaces the symbol out[from..] by itself repeated min..max times. */
static void repeat(parser *ps, int rule, seq *out, int from, int min, int max) {
    seq sym = {0};
    for (int i = from; i < out->n; i++) push(ps, &sym, (int)out->e[i].type, out->e[i].v);
    out->n = from;
    for (int k = 0; k < min; k++)
        for (int i = 0; i < sym.n; i++) push(ps, out, (int)sym.e[i].type, sym.e[i].v);
    if (max < 0) { /* R ::= sym R | ε */
        const int r = aux_rule(ps, rule);
        seq body = {0};
        for (int i = 0; i < sym.n; i++) push(ps, &body, (int)sym.e[i].type, sym.e[i].v);
        push(ps, &body, GE_REF, (uint32_t)r);
        push(ps, &body, GE_ALT, 0);
        if (r >= 0) define(ps, r, &body);
        free(body.e);
        push(ps, out, GE_REF, (uint32_t)r);
    } else if (max > min) { /* R_k ::= sym R_{k+1} | ε, innermost first */
        int next = -1;
        for (int k = max - min; k > 0 && !ps->err; k--) {
            const int r = aux_rule(ps, rule);
            seq body = {0};
            for (int i = 0; i < sym.n; i++) push(ps, &body, (int)sym.e[i].type, sym.e[i].v);
            if (next >= 0) push(ps, &body, GE_REF, (uint32_t)next);
            push(ps, &body, GE_ALT, 0);
            if (r >= 0) define(ps, r, &body);
            free(body.e);
            next = r;
        }
        if (next >= 0) push(ps, out, GE_REF, (uint32_t)next);
    }
    free(sym.e);
}

static void parse_sequence(parser *ps, int rule, seq *out, int nested) {
    int last = -1; /* where the last symbol began in out */
    while (!ps->err) {
        const char *at = ps->p;
        const char c = *ps->p;
        if (c == '"') {
            ps->p++;
            last = out->n;
            while (*ps->p != '"' && !ps->err) {
                if (!*ps->p || *ps->p == '\n') {
                    perr(ps, at, "unterminated literal%s", "");
                    break;
                }
                push(ps, out, GE_CHAR, read_char(ps));
            }
            if (!ps->err) ps->p++;
        } else if (c == '[') {
            ps->p++;
            last = out->n;
            int first = GE_CHAR;
            if (*ps->p == '^') ps->p++, first = GE_NOT;
            int n = 0;
            while (*ps->p != ']' && !ps->err) {
                if (!*ps->p) {
                    perr(ps, at, "unterminated character class%s", "");
                    break;
                }
                const uint32_t lo = read_char(ps);
                push(ps, out, n++ ? GE_CHAR_ALT : first, lo);
                if (ps->p[0] == '-' && ps->p[1] && ps->p[1] != ']') {
                    ps->p++;
                    const char *r = ps->p;
                    const uint32_t hi = read_char(ps);
                    if (!ps->err && hi < lo) perr(ps, r, "range end below its start%s", "");
                    push(ps, out, GE_RNG_HI, hi);
                }
            }
            if (!ps->err && n == 0) perr(ps, at, "empty character class%s", "");
            if (!ps->err) ps->p++;
        } else if (c == '.') {
            ps->p++;
            last = out->n;
            push(ps, out, GE_ANY, 0);
        } else if (is_name_char(c)) {
            const char *s = ps->p;
            while (is_name_char(*ps->p)) ps->p++;
            if (!strncmp(skip_space(ps->p, 0), "::=", 3)) break; /* the next rule, on this line: caller errs */
            last = out->n;
            const int r = rule_id(ps, s, (size_t)(ps->p - s));
            push(ps, out, GE_REF, (uint32_t)r);
        } else if (c == '(') {
            if (++ps->depth > MAX_DEPTH) {
                perr(ps, at, "groups nested too deep%s", "");
                break;
            }
            ps->p = skip_space(ps->p + 1, 1);
            const int r = aux_rule(ps, rule);
            seq body = {0};
            parse_alternates(ps, rule, &body);
            if (!ps->err && *ps->p != ')') perr(ps, at, "expected ) to close this group%s", "");
            if (!ps->err) ps->p++;
            if (r >= 0) define(ps, r, &body);
            free(body.e);
            ps->depth--;
            last = out->n;
            push(ps, out, GE_REF, (uint32_t)r);
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (last < 0) {
                perr(ps, at, "'%.1s' follows no symbol", at);
                break;
            }
            int min = c == '+', max = c == '?' ? 1 : -1;
            if (c == '{') {
                if (parse_braces(ps, &min, &max)) break;
            } else ps->p++;
            repeat(ps, rule, out, last, min, max);
            last = -1;
        } else break;
        ps->p = skip_space(ps->p, nested);
    }
}

static void parse_alternates(parser *ps, int rule, seq *out) {
    parse_sequence(ps, rule, out, ps->depth > 0);
    while (!ps->err && *ps->p == '|') {
        push(ps, out, GE_ALT, 0);
        ps->p = skip_space(ps->p + 1, 1);
        parse_sequence(ps, rule, out, ps->depth > 0);
    }
}

/* ---- checks after parsing ---- */

static int rule_nullable(const lb_grules *g, const char *nullable, int r) {
    for (int i = g->rule_start[r];; i++) { /* alternative by alternative */
        int ok = 1;
        for (; g->el[i].type != GE_ALT && g->el[i].type != GE_END; i++)
            if (g->el[i].type != GE_REF || !nullable[g->el[i].v]) ok = 0;
        if (ok) return 1;
        if (g->el[i].type == GE_END) return 0;
    }
}

/* Left recursion: a rule that can reach itself before any character. */
static int left_recursive(const lb_grules *g, const char *nullable, int r, char *state) {
    if (state[r] == 1) return 1;
    if (state[r] == 2) return 0;
    state[r] = 1;
    for (int i = g->rule_start[r]; g->el[i].type != GE_END; i++) {
        int at_start = 1;
        for (; g->el[i].type != GE_ALT && g->el[i].type != GE_END; i++) {
            if (!at_start) continue;
            if (g->el[i].type == GE_REF) {
                if (left_recursive(g, nullable, (int)g->el[i].v, state)) return 1;
                at_start = nullable[g->el[i].v];
            } else if (g->el[i].type != GE_RNG_HI && g->el[i].type != GE_CHAR_ALT) at_start = 0;
        }
        if (g->el[i].type == GE_END) break;
    }
    state[r] = 2;
    return 0;
}

static lb_status check(lb_grules *g) {
    for (int r = 0; r < g->n_rules; r++)
        if (g->rule_start[r] < 0) return lb_fail(LB_ERR_ARG, "grammar: rule '%s' is used but not defined", g->names[r]);
    g->root = -1;
    for (int r = 0; r < g->n_rules; r++)
        if (!strcmp(g->names[r], "root")) g->root = r;
    if (g->root < 0) return lb_fail(LB_ERR_ARG, "grammar: no rule named 'root'");
    char *nullable = calloc((size_t)g->n_rules, 2);
    if (!nullable) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int changed = 1; changed;) {
        changed = 0;
        for (int r = 0; r < g->n_rules; r++)
            if (!nullable[r] && rule_nullable(g, nullable, r)) nullable[r] = 1, changed = 1;
    }
    char *state = nullable + g->n_rules;
    lb_status s = LB_OK;
    for (int r = 0; r < g->n_rules && !s; r++)
        if (left_recursive(g, nullable, r, state))
            s = lb_fail(LB_ERR_ARG,
                        "grammar: rule '%s' is left-recursive (it can reach itself before any character, as a "
                        "repetition of something that can be empty does)",
                        g->names[r]);
    free(nullable);
    return s;
}

lb_status lb_grules_parse(const char *text, lb_grules *out) {
    memset(out, 0, sizeof *out);
    parser ps = {text, text, out, LB_OK, 0, NULL, 0};
    ps.p = skip_space(ps.p, 1);
    while (*ps.p && !ps.err) {
        const char *name = ps.p;
        while (is_name_char(*ps.p)) ps.p++;
        if (ps.p == name) {
            perr(&ps, name, "expected a rule name%s", "");
            break;
        }
        const size_t len = (size_t)(ps.p - name);
        ps.p = skip_space(ps.p, 0);
        if (strncmp(ps.p, "::=", 3)) {
            perr(&ps, ps.p, "expected ::= after the rule name%s", "");
            break;
        }
        ps.p = skip_space(ps.p + 3, 1);
        const int r = rule_id(&ps, name, len);
        if (r < 0) break;
        if (out->rule_start[r] >= 0) {
            perr(&ps, name, "rule '%s' defined twice", out->names[r]);
            break;
        }
        seq body = {0};
        parse_alternates(&ps, r, &body);
        if (!ps.err && *ps.p && *ps.p != '\n' && *ps.p != '\r') perr(&ps, ps.p, "unexpected '%.1s'", ps.p);
        define(&ps, r, &body);
        free(body.e);
        ps.p = skip_space(ps.p, 1);
    }
    lb_status s = ps.err ? ps.err : check(out);
    free(ps.ht);
    if (s) lb_grules_free(out);
    return s;
}

void lb_grules_free(lb_grules *g) {
    for (int i = 0; i < g->n_rules; i++) free(g->names[i]);
    free(g->names);
    free(g->rule_start);
    free(g->el);
    memset(g, 0, sizeof *g);
}

int lb_gel_match(const lb_gel *el, int pos, uint32_t cp) {
    if (el[pos].type == GE_ANY) return 1;
    const int positive = el[pos].type == GE_CHAR;
    int found = 0;
    do {
        if (el[pos + 1].type == GE_RNG_HI) {
            found |= el[pos].v <= cp && cp <= el[pos + 1].v;
            pos += 2;
        } else {
            found |= el[pos].v == cp;
            pos++;
        }
    } while (el[pos].type == GE_CHAR_ALT);
    return found == positive;
}

int lb_gel_skip(const lb_gel *el, int pos) {
    if (el[pos].type == GE_ANY) return pos + 1;
    do pos += el[pos + 1].type == GE_RNG_HI ? 2 : 1;
    while (el[pos].type == GE_CHAR_ALT);
    return pos;
}
