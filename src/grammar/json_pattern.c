/* JSON Schema "pattern" (an ECMA-262 regular expression) -> a GBNF
 * expression for a JSON string's text between its quotes (json_pattern.h).
 *
 * Read: literals, escapes (\d \w \s \D \W \S, \n \r \t \f \v \0, \xHH,
 * \uHHHH, escaped punctuation), classes [...] with ranges and negation, '.',
 * groups ( ) and (?: ), alternation |, quantifiers * + ? {m} {m,} {m,n}
 * (a lazy '?' after one changes nothing here), '^' at the start and '$' at
 * the end. A pattern matches anywhere in the string unless anchored, so an
 * unanchored end gets any text on that side. Refused by name: lookarounds,
 * backreferences, named groups, \b \B, \p{...}, anchors elsewhere.
 *
 * The grammar writes JSON text, so characters that JSON must escape (the
 * quote, the backslash, controls) are written escaped where the pattern
 * names them, and left out where a class or '.' would merely allow them: a
 * string the grammar writes always matches the pattern, though not every
 * string that matches can be written (e.g. [^a] never writes a quote). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gbuf.h"
#include "grammar/json_pattern.h"

enum { MAX_PATTERN_DEPTH = 64, MAX_PATTERN_REPEAT = 1000 };

typedef struct {
    const char *p, *end;
    const char *err; /* set on the first problem */
    int depth;
} rx;

/* A JSON string character as GBNF class members: the text of one code point
 * that needs no escape (JSON's), for use inside [...] */
static void class_cp(lb_gbuf *b, unsigned cp) {
    if (cp == '\\' || cp == ']' || cp == '[' || cp == '^' || cp == '-' || cp == '"')
        lb_gbuf_printf(b, "\\%c", (char)cp);
    else if (cp < 0x20 || cp == 0x7F) lb_gbuf_printf(b, "\\x%02X", cp);
    else if (cp < 0x80) lb_gbuf_printf(b, "%c", (char)cp);
    else lb_gbuf_printf(b, "\\U%08X", cp);
}

/* One character the pattern names, as JSON text: a GBNF literal. */
static void literal_cp(lb_gbuf *b, unsigned cp) {
    static const char *const esc[] = {['"'] = "\\\\\\\"", ['\\'] = "\\\\\\\\", ['\n'] = "\\\\n", ['\r'] = "\\\\r",
                                      ['\t'] = "\\\\t",   ['\b'] = "\\\\b",    ['\f'] = "\\\\f"};
    if (cp < sizeof esc / sizeof *esc && esc[cp]) lb_gbuf_printf(b, "\"%s\"", esc[cp]);
    else if (cp < 0x20) lb_gbuf_printf(b, "\"\\\\u%04x\"", cp);
    else if (cp < 0x80) lb_gbuf_printf(b, "\"%s%c\"", cp == '"' || cp == '\\' ? "\\" : "", (char)cp);
    else lb_gbuf_printf(b, "\"\\U%08X\"", cp);
}

/* The characters a JSON string holds unescaped: what '.' and negated classes
 * may write. */
#define JSON_PLAIN_EXCLUDE "\"\\\\\\x00-\\x1F\\x7F"

static unsigned hexn(rx *r, int n) {
    unsigned v = 0;
    for (int i = 0; i < n; i++) {
        const char c = r->p < r->end ? *r->p : 0;
        const int h = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (h < 0) {
            r->err = "a bad \\x or \\u escape";
            return 0;
        }
        v = v * 16 + (unsigned)h;
        r->p++;
    }
    return v;
}

static unsigned utf8_cp(rx *r) {
    const unsigned char *u = (const unsigned char *)r->p;
    const int n = *u < 0x80 ? 1 : *u >= 0xF0 ? 4 : *u >= 0xE0 ? 3 : 2;
    if (r->p + n > r->end) {
        r->err = "invalid UTF-8";
        return 0;
    }
    unsigned v = n == 1 ? *u : *u & (0x3F >> (n - 1));
    for (int i = 1; i < n; i++) v = v << 6 | (u[i] & 0x3F);
    r->p += n;
    return v;
}

/* \d \w \s and their negations (*neg) as class members: where a class
 * allows them (complement 0) only what JSON writes plainly (\s: the space),
 * where they are left out (complement 1: a negated class) all of them */
static int class_escape(char e, lb_gbuf *b, int *neg, int complement) {
    const char lower = (char)(e | 0x20);
    *neg = e >= 'A' && e <= 'Z';
    if (lower == 'd') lb_gbuf_printf(b, "0-9");
    else if (lower == 'w') lb_gbuf_printf(b, "a-zA-Z0-9_");
    else if (lower == 's') lb_gbuf_printf(b, complement ? " \\t\\n\\r\\x0B\\x0C" : " ");
    else return 0;
    return 1;
}

/* An escape after '\' that stands for one character; -1 when it is not one. */
static long escape_cp(rx *r, char e) {
    switch (e) {
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    case 'f':
        return '\f';
    case 'v':
        return 0x0B;
    case '0':
        return 0;
    case 'x':
        return (long)hexn(r, 2);
    case 'u':
        return (long)hexn(r, 4);
    default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9')) return -1;
        return (unsigned char)e; /* escaped punctuation stands for itself */
    }
}

static int alternation(rx *r, lb_gbuf *b);

/* [...]: positive classes keep what JSON writes plainly; negated ones also
 * leave out what it must escape. */
static void char_class(rx *r, lb_gbuf *b) {
    r->p++; /* '[' */
    const int negated = r->p < r->end && *r->p == '^';
    if (negated) r->p++;
    lb_gbuf members = {0}, negmembers = {0};
    int first = 1;
    while (!r->err && r->p < r->end && (*r->p != ']' || first)) {
        first = 0;
        unsigned lo;
        if (*r->p == '\\') {
            if (++r->p >= r->end) {
                r->err = "a pattern ending in '\\'";
                break;
            }
            const char e = *r->p++;
            int neg;
            lb_gbuf tmp = {0};
            if (class_escape(e, &tmp, &neg, negated)) {
                if (neg) r->err = "\\D, \\W or \\S inside a class";
                else lb_gbuf_printf(negated ? &negmembers : &members, "%s", tmp.s ? tmp.s : "");
                free(tmp.s);
                continue;
            }
            free(tmp.s);
            const long v = escape_cp(r, e);
            if (v < 0) {
                r->err = "an escape that is not one character, inside a class";
                break;
            }
            lo = (unsigned)v;
        } else lo = utf8_cp(r);
        unsigned hi = lo;
        if (r->p + 1 < r->end && *r->p == '-' && r->p[1] != ']') {
            r->p++;
            if (*r->p == '\\') {
                r->p++;
                const long v = r->p < r->end ? escape_cp(r, *r->p++) : -1;
                if (v < 0) {
                    r->err = "a bad range end";
                    break;
                }
                hi = (unsigned)v;
            } else hi = utf8_cp(r);
            if (hi < lo) {
                r->err = "a range whose end is below its start";
                break;
            }
        }
        /* what JSON writes plainly: cut the quote, backslash and controls out of a positive range */
        for (unsigned a = lo; a <= hi && !r->err;) {
            unsigned e = hi;
            if (!negated) {
                if (a < 0x20) {
                    a = 0x20;
                    continue;
                }
                if (a == '"' || a == '\\' || a == 0x7F) {
                    a++;
                    continue;
                }
                if (a < '"' && e >= '"') e = '"' - 1;
                else if (a < '\\' && e >= '\\') e = '\\' - 1;
                else if (a < 0x7F && e >= 0x7F) e = 0x7E;
            }
            lb_gbuf *m = negated ? &negmembers : &members;
            class_cp(m, a);
            if (e > a) lb_gbuf_printf(m, "-"), class_cp(m, e);
            if (e == hi) break;
            a = e + 1;
        }
    }
    if (!r->err && (r->p >= r->end || *r->p != ']')) r->err = "an unterminated character class";
    if (!r->err) r->p++;
    if (!r->err && negated) lb_gbuf_printf(b, "[^%s" JSON_PLAIN_EXCLUDE "]", negmembers.s ? negmembers.s : "");
    else if (!r->err && members.s) lb_gbuf_printf(b, "[%s]", members.s);
    else if (!r->err) r->err = "a class that JSON text cannot write unescaped (only quotes, backslashes or controls)";
    if (members.oom || negmembers.oom) b->oom = 1;
    free(members.s);
    free(negmembers.s);
}

/* One atom: its GBNF text into b; 1 when it can match the empty string. */
static int atom(rx *r, lb_gbuf *b) {
    const char c = *r->p;
    int nullable = 0;
    if (c == '(') {
        r->p++;
        if (r->p < r->end && *r->p == '?') {
            if (r->p + 1 < r->end && r->p[1] == ':') r->p += 2;
            else {
                r->err = "lookarounds and named groups ((?=, (?!, (?<...)";
                return 0;
            }
        }
        if (++r->depth > MAX_PATTERN_DEPTH) {
            r->err = "groups nested deeper than 64";
            return 0;
        }
        lb_gbuf_printf(b, "( ");
        nullable = alternation(r, b);
        lb_gbuf_printf(b, " )");
        r->depth--;
        if (!r->err && (r->p >= r->end || *r->p != ')')) r->err = "an unclosed group";
        if (!r->err) r->p++;
    } else if (c == '[') char_class(r, b);
    else if (c == '.') {
        r->p++;
        lb_gbuf_printf(b, "[^\\n" JSON_PLAIN_EXCLUDE "]");
    } else if (c == '\\') {
        if (++r->p >= r->end) {
            r->err = "a pattern ending in '\\'";
            return 0;
        }
        const char e = *r->p++;
        int neg;
        lb_gbuf tmp = {0};
        if (class_escape(e, &tmp, &neg, e >= 'A' && e <= 'Z'))
            lb_gbuf_printf(b, neg ? "[^%s" JSON_PLAIN_EXCLUDE "]" : "[%s]", tmp.s ? tmp.s : "");
        else if (e == 'b' || e == 'B') r->err = "word boundaries (\\b, \\B)";
        else if (e == 'p' || e == 'P') r->err = "Unicode property escapes (\\p{...})";
        else if (e == 'k' || (e >= '1' && e <= '9')) r->err = "backreferences";
        else {
            const long v = escape_cp(r, e);
            if (v < 0) r->err = "an unknown escape";
            else literal_cp(b, (unsigned)v);
        }
        free(tmp.s);
    } else if (c == '^' || c == '$') r->err = "'^' or '$' other than at the pattern's ends";
    else if (c == '*' || c == '+' || c == '?') r->err = "a quantifier that follows nothing";
    else literal_cp(b, utf8_cp(r));
    return nullable;
}

/* Digits at *p (no sign, no space), at most 9 of them: the number, or -1. */
static long digits(const char **p) {
    long v = 0;
    int n = 0;
    while (**p >= '0' && **p <= '9' && n < 9) v = v * 10 + (*(*p)++ - '0'), n++;
    return n && !(**p >= '0' && **p <= '9') ? v : -1;
}

/* {m}, {m,}, {m,n} at r->p: 1 and the bounds; 0 when '{' is not one (a literal then). */
static int braces(rx *r, long *lo_out, long *hi_out) {
    const char *p = r->p + 1;
    long lo = digits(&p), hi = lo;
    if (lo < 0) return 0;
    if (*p == ',') {
        p++;
        hi = -1;
        if (*p != '}' && (hi = digits(&p)) < 0) return 0;
    }
    if (*p != '}') return 0;
    if (lo > MAX_PATTERN_REPEAT || hi > MAX_PATTERN_REPEAT || (hi >= 0 && hi < lo)) {
        r->err = "a count above 1000 (or an upper count below the lower)";
        return 0;
    }
    r->p = p + 1;
    *lo_out = lo, *hi_out = hi;
    return 1;
}

/* 1 when the sequence can match the empty string */
static int sequence(rx *r, lb_gbuf *b) {
    int any = 0, nullable = 1;
    while (!r->err && r->p < r->end && *r->p != '|' && *r->p != ')') {
        if (*r->p == '$' && r->p + 1 == r->end) break; /* the end anchor */
        lb_gbuf a = {0};
        const int empty_ok = atom(r, &a);
        if (r->err) {
            free(a.s);
            break;
        }
        long lo = 1, hi = 1;
        if (r->p < r->end) {
            const char q = *r->p;
            if (q == '*') lo = 0, hi = -1, r->p++;
            else if (q == '+') lo = 1, hi = -1, r->p++;
            else if (q == '?') lo = 0, hi = 1, r->p++;
            else if (q == '{' && !braces(r, &lo, &hi) && r->err) {
                free(a.s);
                break;
            }
            if (r->p < r->end && *r->p == '?' && !(lo == 1 && hi == 1)) r->p++; /* lazy: the same strings */
        }
        if (empty_ok && hi == -1) { /* (a*)* would expand to a rule that reaches itself before any character */
            r->err = "an unbounded repetition of something that can match the empty string";
            free(a.s);
            break;
        }
        lb_gbuf_printf(b, "%s( %s )", any ? " " : "", a.s ? a.s : "\"\"");
        if (lo == 0 && hi == -1) lb_gbuf_printf(b, "*");
        else if (lo == 1 && hi == -1) lb_gbuf_printf(b, "+");
        else if (lo == 0 && hi == 1) lb_gbuf_printf(b, "?");
        else if (hi == -1) lb_gbuf_printf(b, "{%ld,}", lo);
        else if (!(lo == 1 && hi == 1)) lb_gbuf_printf(b, "{%ld,%ld}", lo, hi);
        if (a.oom) b->oom = 1;
        free(a.s);
        nullable &= empty_ok || lo == 0;
        any = 1;
    }
    if (!any) lb_gbuf_printf(b, "\"\"");
    return nullable;
}

static int alternation(rx *r, lb_gbuf *b) {
    int nullable = sequence(r, b);
    while (!r->err && r->p < r->end && *r->p == '|') {
        r->p++;
        lb_gbuf_printf(b, " | ");
        nullable |= sequence(r, b);
    }
    return nullable;
}

lb_status lb_json_pattern_gbnf(const char *pattern, char **expr) {
    *expr = NULL;
    const size_t n = strlen(pattern);
    rx r = {pattern, pattern + n, NULL, 0};
    const int head = n > 0 && pattern[0] == '^';
    if (head) r.p++;
    lb_gbuf b = {0};
    lb_gbuf_printf(&b, "%s( ", head ? "" : "[^" JSON_PLAIN_EXCLUDE "]* ");
    alternation(&r, &b);
    int tail = 0;
    if (!r.err && r.p < r.end && *r.p == '$' && r.p + 1 == r.end) tail = 1, r.p++;
    if (!r.err && r.p < r.end) r.err = *r.p == ')' ? "an unmatched ')'" : "'$' other than at the pattern's end";
    lb_gbuf_printf(&b, " )%s", tail ? "" : " [^" JSON_PLAIN_EXCLUDE "]*");
    if (r.err) {
        free(b.s);
        return lb_fail(LB_ERR_UNSUPPORTED, "json schema: pattern \"%.80s\": %s (at offset %d) is not supported",
                       pattern, r.err, (int)(r.p - pattern));
    }
    if (b.oom) {
        free(b.s);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    *expr = b.s;
    return LB_OK;
}
