/* Helpers shared by the chat formatters (chat_format.c, chat_format_think.c):
 * an output buffer, Python's strip() rules (Jinja's `trim` / `.strip()` are
 * Python's str.strip(): Unicode whitespace at both ends), and the
 * raise_exception() texts. */
#ifndef LB_CHAT_FORMAT_IMPL_H
#define LB_CHAT_FORMAT_IMPL_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/chat_template.h"

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static inline void put_n(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static inline void put(sbuf *b, const char *s) { put_n(b, s, strlen(s)); }

/* Python's str.isspace() for the code point at s (its byte length in *len). */
static inline int py_space_at(const unsigned char *s, size_t avail, size_t *len) {
    unsigned c = s[0];
    *len = 1;
    if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
    if (c == 0xc2 && avail >= 2 && (s[1] == 0x85 || s[1] == 0xa0)) return *len = 2, 1;
    if (c == 0xe1 && avail >= 3 && s[1] == 0x9a && s[2] == 0x80) return *len = 3, 1; /* U+1680 */
    if (c == 0xe2 && avail >= 3) {
        unsigned cp = ((c & 0x0f) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
        if ((cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f)
            return *len = 3, 1;
    }
    if (c == 0xe3 && avail >= 3 && s[1] == 0x80 && s[2] == 0x80) return *len = 3, 1; /* U+3000 */
    return 0;
}

/* [s, s + n).strip()'s bounds: *a and *e (Jinja's trim). */
static inline void trim_bounds(const char *s, size_t n, size_t *a_out, size_t *e_out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, e = n, k;
    while (a < e && py_space_at(u + a, e - a, &k)) a += k;
    /* from the end: step back over one code point at a time */
    while (e > a) {
        size_t st = e - 1;
        while (st > a && (u[st] & 0xc0) == 0x80 && e - st < 4) st--;
        if (!py_space_at(u + st, e - st, &k) || st + k != e) break;
        e = st;
    }
    *a_out = a, *e_out = e;
}

/* Appends [s, s + n).strip(); put_trim: of a whole string. */
static inline void put_trim_n(sbuf *b, const char *s, size_t n) {
    size_t a, e;
    trim_bounds(s, n, &a, &e);
    put_n(b, s + a, e - a);
}
static inline void put_trim(sbuf *b, const char *s) { put_trim_n(b, s, strlen(s)); }

static inline int is(const lb_chat_msg *m, const char *role) { return m->role && !strcmp(m->role, role); }
static inline const char *content(const lb_chat_msg *m) { return m->content ? m->content : ""; }

static inline lb_status raise(const char *msg) { return lb_fail(LB_ERR_ARG, "%s", msg); }

static const char ALTERNATE[] = "Conversation roles must alternate user/assistant/user/assistant/...";
static const char ALTERNATE_V1[] =
    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";
static const char ONLY_UA_V1[] =
    "Only user and assistant roles are supported, with the exception of an initial optional system message!";

/* {% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %} ... */
static inline int first_system(const lb_chat_msg *m, int n) { return n > 0 && is(&m[0], "system"); }


/* strftime_now(fmt) for today, into buf (32 bytes); returns buf */
static inline const char *today_as(char buf[32], const char *fmt) {
    const time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(buf, 32, fmt, &tm);
    return buf;
}

/* Python's s.lstrip('\n') / rstrip('\n') on [p, e) */
static inline const char *skip_nl(const char *p, const char *e) {
    while (p < e && *p == '\n') p++;
    return p;
}
static inline const char *back_nl(const char *p, const char *e) {
    while (e > p && e[-1] == '\n') e--;
    return e;
}
static inline const char *find_last(const char *s, const char *pat) {
    const char *last = NULL;
    for (const char *q = strstr(s, pat); q; q = strstr(q + 1, pat)) last = q;
    return last;
}

/* An assistant turn c as Qwen 3's and GLM-4.7's templates split it: the
 * answer from *ans, the reasoning [*r0, *r1) (empty without a '</think>'). */
static inline void split_think(const char *c, const char **ans, const char **r0, const char **r1) {
    const char *end = c + strlen(c), *close = strstr(c, "</think>");
    *ans = *r0 = *r1 = c;
    if (!close) return;
    /* content.split('</think>')[-1].lstrip('\n') */
    *ans = skip_nl(find_last(c, "</think>") + strlen("</think>"), end);
    /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
    *r1 = back_nl(c, close);
    const char *open = NULL;
    for (const char *q = strstr(c, "<think>"); q && q < *r1; q = strstr(q + 1, "<think>")) open = q;
    *r0 = skip_nl(open ? open + strlen("<think>") : c, *r1);
}


/* chat_format_think.c */
lb_status chat_fmt_deepseek_r1(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b);
lb_status chat_fmt_deepseek_v31(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b);
lb_status chat_fmt_glm(const lb_chat_template *t, const lb_chat_msg *m, int n, int v45, sbuf *b);
lb_status chat_fmt_mistral_small3(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b);
lb_status chat_fmt_granite(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b);
lb_status chat_fmt_command_r(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b);

#endif
