/* Strict recursive-descent JSON parser. Recursion is bounded by
 * JSON_MAX_DEPTH, so hostile nesting cannot exhaust the stack. Parsed values
 * are copied into an arena so the whole document is freed at once. */
#include "import/json.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>

/* ---- arena ---- */
typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[]; /* aligned payload */
} arena_chunk;

struct json_doc {
    arena_chunk *chunks;
    json_value root;
};

static void *arena_alloc(json_doc *d, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_chunk *c = d->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = LB_MAX(n, (size_t)1 << 16);
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = d->chunks;
        d->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

/* ---- parser state ---- */
typedef struct {
    const unsigned char *s;
    size_t len, pos;
    json_doc *doc;
    lb_status err;    /* set by the first failure */
} parser;

static lb_status fail_at(parser *p, size_t pos, const char *what) {
    if (p->err != LB_OK) return p->err;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        if (p->s[i] == '\n') line++, col = 1;
        else col++;
    }
    p->err = lb_fail(LB_ERR_FORMAT, "JSON line %zu, column %zu: %s", line, col, what);
    return p->err;
}

static lb_status fail_nomem(parser *p) {
    if (p->err == LB_OK) p->err = lb_fail(LB_ERR_NOMEM, "out of memory parsing JSON");
    return p->err;
}

static void skip_ws(parser *p) {
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static int peek(parser *p) { return p->pos < p->len ? p->s[p->pos] : -1; }

/* Length of the valid UTF-8 sequence at s (max n bytes), 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_seq_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t k;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) k = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) k = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) k = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return k;
}

static size_t utf8_put(char *o, uint32_t cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int hex4(const unsigned char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

/* Parses a string at p->pos (the opening quote). Decoded text never exceeds
 * the raw length, so one arena block of raw length + 1 always suffices. */
static lb_status parse_string(parser *p, const char **out, size_t *out_len) {
    size_t start = ++p->pos; /* after the quote */
    size_t end = start;
    while (end < p->len && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
    if (end >= p->len) return fail_at(p, start - 1, "unterminated string");
    char *o = arena_alloc(p->doc, end - start + 1);
    if (!o) return fail_nomem(p);
    size_t n = 0, i = start;
    while (i < end) {
        unsigned char c = p->s[i];
        if (c < 0x20) return fail_at(p, i, "control character in string (must be escaped)");
        if (c != '\\') {
            size_t k = utf8_seq_len(p->s + i, end - i);
            if (!k) return fail_at(p, i, "invalid UTF-8 in string");
            memcpy(o + n, p->s + i, k);
            n += k, i += k;
            continue;
        }
        unsigned char e = p->s[i + 1];
        i += 2;
        switch (e) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (end - i < 4 || !hex4(p->s + i, &cp)) return fail_at(p, i - 2, "bad \\u escape");
            i += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff) return fail_at(p, i - 6, "lone low surrogate in \\u escape");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                if (end - i < 6 || p->s[i] != '\\' || p->s[i + 1] != 'u' || !hex4(p->s + i + 2, &lo) ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return fail_at(p, i - 6, "high surrogate not followed by a low surrogate");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            }
            n += utf8_put(o + n, cp);
            break;
        }
        default: return fail_at(p, i - 2, "invalid escape in string");
        }
    }
    o[n] = 0;
    p->pos = end + 1;
    *out = o;
    *out_len = n;
    return LB_OK;
}

static lb_status parse_number(parser *p, json_value *v) {
    size_t start = p->pos, i = start;
    const unsigned char *s = p->s;
    int integral = 1;
    if (i < p->len && s[i] == '-') i++;
    if (i < p->len && s[i] == '0') i++;
    else if (i < p->len && s[i] >= '1' && s[i] <= '9') while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    else return fail_at(p, start, "invalid number");
    if (i < p->len && s[i] == '.') {
        integral = 0;
        i++;
        if (i >= p->len || s[i] < '0' || s[i] > '9')
            return fail_at(p, start, "invalid number: digit expected after '.'");
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        integral = 0;
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= p->len || s[i] < '0' || s[i] > '9')
            return fail_at(p, start, "invalid number: digit expected in exponent");
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    size_t n = i - start;
    if (n > 400) return fail_at(p, start, "number literal too long");
    char buf[416];
    memcpy(buf, s + start, n);
    buf[n] = 0;
    /* strtod honours the C locale's decimal point; JSON always uses '.' */
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1])
        for (size_t k = 0; k < n; k++)
            if (buf[k] == '.') buf[k] = dp[0];
    v->type = JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (integral) {
        /* exact int64 when it fits (offsets in safetensors need all 64 bits) */
        int neg = buf[0] == '-';
        uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        int fits = 1;
        for (size_t k = neg; k < n; k++) {
            uint64_t d = (uint64_t)(buf[k] - '0');
            if (acc > (lim - d) / 10) { fits = 0; break; }
            acc = acc * 10 + d;
        }
        if (fits) {
            v->is_int = 1;
            v->i = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
        }
    }
    p->pos = i;
    return LB_OK;
}

static int literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return 0;
    p->pos += n;
    return 1;
}

/* Growable scratch array used while an array/object is being parsed. */
typedef struct {
    void *data;
    size_t n, cap, elem;
} vec;

static int vec_push(vec *v, const void *x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        void *nd = realloc(v->data, cap * v->elem);
        if (!nd) return 0;
        v->data = nd;
        v->cap = cap;
    }
    memcpy((char *)v->data + v->n * v->elem, x, v->elem);
    v->n++;
    return 1;
}

static lb_status parse_value(parser *p, json_value *v, int depth);

static lb_status parse_array(parser *p, json_value *v, int depth) {
    size_t open = p->pos++;
    vec items = {NULL, 0, 0, sizeof(json_value)};
    skip_ws(p);
    if (peek(p) == ']') p->pos++;
    else {
        for (;;) {
            json_value item;
            if (parse_value(p, &item, depth + 1) != LB_OK) goto fail;
            if (!vec_push(&items, &item)) { fail_nomem(p); goto fail; }
            skip_ws(p);
            int c = peek(p);
            if (c == ',') { p->pos++; continue; }
            if (c == ']') { p->pos++; break; }
            fail_at(p, c < 0 ? open : p->pos, c < 0 ? "unterminated array" : "expected ',' or ']' in array");
            goto fail;
        }
    }
    v->type = JSON_ARRAY;
    v->n = items.n;
    if (items.n) {
        v->items = arena_alloc(p->doc, items.n * sizeof(json_value));
        if (!v->items) { fail_nomem(p); goto fail; }
        memcpy(v->items, items.data, items.n * sizeof(json_value));
    }
    free(items.data);
    return LB_OK;
fail:
    free(items.data);
    return p->err;
}

static int member_cmp(const void *a, const void *b) {
    const json_member *x = *(const json_member *const *)a, *y = *(const json_member *const *)b;
    size_t n = LB_MIN(x->key_len, y->key_len);
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Duplicate keys make "which value wins" ambiguous between parsers, which is
 * exactly what a hostile safetensors header would exploit: reject them. */
static lb_status check_duplicates(parser *p, json_value *v, size_t open) {
    if (v->n < 2) return LB_OK;
    const json_member **sorted = malloc(v->n * sizeof *sorted);
    if (!sorted) return fail_nomem(p);
    for (size_t i = 0; i < v->n; i++) sorted[i] = &v->members[i];
    qsort(sorted, v->n, sizeof *sorted, member_cmp);
    for (size_t i = 1; i < v->n; i++) {
        if (member_cmp(&sorted[i - 1], &sorted[i]) == 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "duplicate key \"%.100s\" in object", sorted[i]->key);
            free(sorted);
            return fail_at(p, open, msg);
        }
    }
    free(sorted);
    return LB_OK;
}

static lb_status parse_object(parser *p, json_value *v, int depth) {
    size_t open = p->pos++;
    vec members = {NULL, 0, 0, sizeof(json_member)};
    skip_ws(p);
    if (peek(p) == '}') p->pos++;
    else {
        for (;;) {
            json_member m;
            skip_ws(p);
            if (peek(p) != '"') {
                fail_at(p, p->pos, peek(p) < 0 ? "unterminated object" : "expected a string key in object");
                goto fail;
            }
            if (parse_string(p, &m.key, &m.key_len) != LB_OK) goto fail;
            skip_ws(p);
            if (peek(p) != ':') { fail_at(p, p->pos, "expected ':' after object key"); goto fail; }
            p->pos++;
            if (parse_value(p, &m.value, depth + 1) != LB_OK) goto fail;
            if (!vec_push(&members, &m)) { fail_nomem(p); goto fail; }
            skip_ws(p);
            int c = peek(p);
            if (c == ',') { p->pos++; continue; }
            if (c == '}') { p->pos++; break; }
            fail_at(p, c < 0 ? open : p->pos, c < 0 ? "unterminated object" : "expected ',' or '}' in object");
            goto fail;
        }
    }
    v->type = JSON_OBJECT;
    v->n = members.n;
    if (members.n) {
        v->members = arena_alloc(p->doc, members.n * sizeof(json_member));
        if (!v->members) { fail_nomem(p); goto fail; }
        memcpy(v->members, members.data, members.n * sizeof(json_member));
    }
    free(members.data);
    return check_duplicates(p, v, open);
fail:
    free(members.data);
    return p->err;
}

static lb_status parse_value(parser *p, json_value *v, int depth) {
    memset(v, 0, sizeof *v);
    skip_ws(p);
    int c = peek(p);
    if ((c == '{' || c == '[') && depth >= JSON_MAX_DEPTH)
        return fail_at(p, p->pos, "nesting deeper than 128 levels");
    switch (c) {
    case '{': return parse_object(p, v, depth);
    case '[': return parse_array(p, v, depth);
    case '"':
        v->type = JSON_STRING;
        return parse_string(p, &v->str, &v->n);
    case 't':
        if (!literal(p, "true")) break;
        v->type = JSON_BOOL;
        v->boolean = 1;
        return LB_OK;
    case 'f':
        if (!literal(p, "false")) break;
        v->type = JSON_BOOL;
        return LB_OK;
    case 'n':
        if (!literal(p, "null")) break;
        v->type = JSON_NULL;
        return LB_OK;
    case -1: return fail_at(p, p->pos, "unexpected end of input, value expected");
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
    }
    return fail_at(p, p->pos, "unexpected character, value expected");
}

lb_status json_parse(const char *text, size_t len, json_doc **out) {
    *out = NULL;
    json_doc *d = calloc(1, sizeof *d);
    if (!d) return lb_fail(LB_ERR_NOMEM, "out of memory parsing JSON");
    parser p = {(const unsigned char *)text, len, 0, d, LB_OK};
    if (parse_value(&p, &d->root, 0) == LB_OK) {
        skip_ws(&p);
        if (p.pos != p.len) fail_at(&p, p.pos, "unexpected data after the JSON value");
    }
    if (p.err != LB_OK) {
        json_free(d);
        return p.err;
    }
    *out = d;
    return LB_OK;
}

void json_free(json_doc *d) {
    if (!d) return;
    arena_chunk *c = d->chunks;
    while (c) {
        arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(d);
}

const json_value *json_root(const json_doc *d) { return &d->root; }

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->n; i++)
        if (obj->members[i].key_len == n && memcmp(obj->members[i].key, key, n) == 0)
            return &obj->members[i].value;
    return NULL;
}

const json_value *json_get_type(const json_value *obj, const char *key, json_type t) {
    const json_value *v = json_get(obj, key);
    return v && v->type == t ? v : NULL;
}

const char *json_get_str(const json_value *obj, const char *key) {
    const json_value *v = json_get_type(obj, key, JSON_STRING);
    return v ? v->str : NULL;
}

int json_get_int(const json_value *obj, const char *key, int64_t *out) {
    const json_value *v = json_get_type(obj, key, JSON_NUMBER);
    if (!v || !v->is_int) return 0;
    *out = v->i;
    return 1;
}

int json_get_num(const json_value *obj, const char *key, double *out) {
    const json_value *v = json_get_type(obj, key, JSON_NUMBER);
    if (!v) return 0;
    *out = v->number;
    return 1;
}

int json_get_bool(const json_value *obj, const char *key, int *out) {
    const json_value *v = json_get_type(obj, key, JSON_BOOL);
    if (!v) return 0;
    *out = v->boolean;
    return 1;
}

const char *json_type_name(json_type t) {
    static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)t < 6 ? names[t] : "?";
}
