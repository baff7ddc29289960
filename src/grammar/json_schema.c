/* JSON grammars (lowbit.h): any JSON value, a JSON object, and the values a
 * JSON Schema allows (the subset in docs/grammar.md). Every schema becomes
 * rules over the shared primitives below; keywords that would constrain the
 * value in ways not written here are refused by name, so a schema is never
 * silently loosened. Objects' properties come out in the schema's order:
 * the required ones always, each optional one possibly, in its place after
 * the required ones. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "grammar/gbuf.h"
#include "grammar/json_int_range.h"
#include "grammar/json_pattern.h"
#include "grammar/json_schema.h"
#include "import/json.h"

/* Whitespace sits inside objects and arrays only (around their punctuation),
 * never after a value, so a whole value ends the text: nothing may follow
 * it but end-of-generation. */
#define JSON_PRIMITIVES                                                                                                \
    "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n"                                   \
    "object ::= \"{\" ws ( member ( ws \",\" ws member )* ws )? \"}\"\n"                                               \
    "member ::= string ws \":\" ws value\n"                                                                            \
    "array ::= \"[\" ws ( value ( ws \",\" ws value )* ws )? \"]\"\n"                                                  \
    "string ::= \"\\\"\" char* \"\\\"\"\n"                                                                             \
    "char ::= [^\"\\\\\\x00-\\x1F\\x7F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"                        \
    "number ::= integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"                                           \
    "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"                                                               \
    "boolean ::= \"true\" | \"false\"\n"                                                                               \
    "null ::= \"null\"\n"                                                                                              \
    "ws ::= ( \" \" | \"\\n\" [ \\t]{0,20} )?\n"

const char *lb_grammar_json(int object_only) {
    return object_only ? "root ::= object\n" JSON_PRIMITIVES : "root ::= value\n" JSON_PRIMITIVES;
}

typedef struct {
    lb_gbuf rules;
    const json_value *root;
    int next_id, depth;
    const char *ref_names[64]; /* $refs given rules so far, and their ids */
    int ref_ids[64], n_refs;
    lb_status err;
} ctx;

enum { MAX_SCHEMA_DEPTH = 64 };

static lb_status refuse(ctx *c, lb_status s, const char *fmt, const char *arg) {
    if (!c->err) c->err = lb_fail(s, fmt, arg);
    return c->err;
}

/* A GBNF literal of the JSON text of string s[0..n): "\"...\"" */
static void json_string_literal(lb_gbuf *b, const char *s, size_t n) {
    lb_gbuf_printf(b, "\"\\\"");
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)s[i];
        if (ch == '"') lb_gbuf_printf(b, "\\\\\\\""); /* JSON \" inside a GBNF literal */
        else if (ch == '\\') lb_gbuf_printf(b, "\\\\\\\\");
        else if (ch < 0x20) lb_gbuf_printf(b, "\\\\u%04x", ch);
        else lb_gbuf_printf(b, "%c", ch);
    }
    lb_gbuf_printf(b, "\\\"\"");
}

/* A literal of a JSON value's compact text (enum and const). */
static void json_value_literal(ctx *c, lb_gbuf *b, const json_value *v) {
    switch (v->type) {
    case JSON_NULL:
        lb_gbuf_printf(b, "\"null\"");
        break;
    case JSON_BOOL:
        lb_gbuf_printf(b, v->boolean ? "\"true\"" : "\"false\"");
        break;
    case JSON_NUMBER:
        if (v->is_int) lb_gbuf_printf(b, "\"%lld\"", (long long)v->i);
        else {
            char num[32];
            for (int prec = 15; prec <= 17; prec++) { /* the shortest text that reads back as the value */
                snprintf(num, sizeof num, "%.*g", prec, v->number);
                if (strtod(num, NULL) == v->number) break;
            }
            lb_gbuf_printf(b, "\"%s\"", num);
        }
        break;
    case JSON_STRING:
        json_string_literal(b, v->str, v->n);
        break;
    case JSON_ARRAY:
        lb_gbuf_printf(b, "\"[\" ");
        for (size_t i = 0; i < v->n; i++) {
            if (i) lb_gbuf_printf(b, " \",\" ");
            json_value_literal(c, b, &v->items[i]);
        }
        lb_gbuf_printf(b, " \"]\"");
        break;
    case JSON_OBJECT:
        lb_gbuf_printf(b, "\"{\" ");
        for (size_t i = 0; i < v->n; i++) {
            if (i) lb_gbuf_printf(b, " \",\" ");
            json_string_literal(b, v->members[i].key, v->members[i].key_len);
            lb_gbuf_printf(b, " \":\" ");
            json_value_literal(c, b, &v->members[i].value);
        }
        lb_gbuf_printf(b, " \"}\"");
        break;
    }
}

static int gen(ctx *c, const json_value *s);

static int is_one_of(const char *k, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(k, *list)) return 1;
    return 0;
}

/* Keywords that only annotate (or that the rules below read). */
static const char *const known[] = {"type",
                                    "properties",
                                    "required",
                                    "additionalProperties",
                                    "items",
                                    "minItems",
                                    "maxItems",
                                    "enum",
                                    "const",
                                    "anyOf",
                                    "oneOf",
                                    "allOf",
                                    "$ref",
                                    "$defs",
                                    "definitions",
                                    "minLength",
                                    "maxLength",
                                    "title",
                                    "description",
                                    "$schema",
                                    "$id",
                                    "$comment",
                                    "default",
                                    "examples",
                                    "format",
                                    "readOnly",
                                    "writeOnly",
                                    "deprecated",
                                    "strict",
                                    "name",
                                    "pattern",
                                    "minimum",
                                    "maximum",
                                    "exclusiveMinimum",
                                    "exclusiveMaximum",
                                    NULL};

static const json_value *resolve(ctx *c, const char *ref) {
    const char *defs = !strncmp(ref, "#/$defs/", 8)          ? "$defs"
                       : !strncmp(ref, "#/definitions/", 14) ? "definitions"
                                                             : NULL;
    if (!defs)
        return refuse(c, LB_ERR_UNSUPPORTED, "json schema: $ref \"%s\" (only #/$defs/NAME and #/definitions/NAME)",
                      ref),
               NULL;
    const json_value *d = json_get_type(c->root, defs, JSON_OBJECT);
    const json_value *v = d ? json_get(d, strchr(ref + 2, '/') + 1) : NULL;
    if (!v) refuse(c, LB_ERR_ARG, "json schema: $ref \"%s\" names no definition", ref);
    return v;
}

/* The body of a rule for schema s of one JSON type (t). */
static void gen_type(ctx *c, lb_gbuf *b, const json_value *s, const char *t) {
    if (!strcmp(t, "string")) {
        int64_t lo = 0, hi = -1;
        json_get_int(s, "minLength", &lo);
        json_get_int(s, "maxLength", &hi);
        if (lo < 0 || lo > 1000 || hi > 1000 || (hi >= 0 && hi < lo)) {
            refuse(c, LB_ERR_UNSUPPORTED, "json schema: string lengths beyond 0..1000 (or max below min)%s", "");
            return;
        }
        const char *pattern = json_get_str(s, "pattern");
        if (pattern) { /* the pattern alone: with lengths too, refused (a grammar of both is not written here) */
            if (json_get(s, "minLength") || json_get(s, "maxLength")) {
                refuse(c, LB_ERR_UNSUPPORTED, "json schema: a pattern with minLength / maxLength%s", "");
                return;
            }
            char *expr = NULL;
            if (lb_json_pattern_gbnf(pattern, &expr)) {
                if (!c->err) c->err = LB_ERR_UNSUPPORTED;
                return;
            }
            lb_gbuf_printf(b, "\"\\\"\" %s \"\\\"\"", expr);
            free(expr);
            return;
        }
        if (lo == 0 && hi < 0) lb_gbuf_printf(b, "string");
        else if (hi < 0) lb_gbuf_printf(b, "\"\\\"\" char{%lld,} \"\\\"\"", (long long)lo);
        else lb_gbuf_printf(b, "\"\\\"\" char{%lld,%lld} \"\\\"\"", (long long)lo, (long long)hi);
    } else if (!strcmp(t, "number") || !strcmp(t, "boolean") || !strcmp(t, "null")) lb_gbuf_printf(b, "%s", t);
    else if (!strcmp(t, "integer")) {
        double v, lod = 0, hid = 0;
        int have_lo = 0, have_hi = 0;
        if (json_get_num(s, "minimum", &v)) have_lo = 1, lod = ceil(v);
        if (json_get_num(s, "exclusiveMinimum", &v) && (!have_lo || floor(v) + 1 > lod)) have_lo = 1, lod = floor(v) + 1;
        if (json_get_num(s, "maximum", &v)) have_hi = 1, hid = floor(v);
        if (json_get_num(s, "exclusiveMaximum", &v) && (!have_hi || ceil(v) - 1 < hid)) have_hi = 1, hid = ceil(v) - 1;
        if (!have_lo && !have_hi) {
            lb_gbuf_printf(b, "integer");
            return;
        }
        char *expr = NULL;
        if (lb_json_int_range_gbnf(have_lo, lod, have_hi, hid, &expr)) {
            if (!c->err) c->err = LB_ERR_UNSUPPORTED;
            return;
        }
        lb_gbuf_printf(b, "%s", expr);
        free(expr);
    } else if (!strcmp(t, "array")) {
        const json_value *items = json_get(s, "items");
        int64_t lo = 0, hi = -1;
        json_get_int(s, "minItems", &lo);
        json_get_int(s, "maxItems", &hi);
        if (lo < 0 || lo > 100 || hi > 100 || (hi >= 0 && hi < lo)) {
            refuse(c, LB_ERR_UNSUPPORTED, "json schema: array sizes beyond 0..100 (or max below min)%s", "");
            return;
        }
        const int item = items ? gen(c, items) : -1;
        char iname[32];
        if (item >= 0) snprintf(iname, sizeof iname, "s%d", item);
        else snprintf(iname, sizeof iname, "value");
        if (hi == 0) {
            lb_gbuf_printf(b, "\"[\" ws \"]\"");
            return;
        }
        lb_gbuf_printf(b, "\"[\" ws %s%s ( ws \",\" ws %s )", lo == 0 ? "( " : "", iname, iname);
        const long long rmin = lo > 0 ? lo - 1 : 0;
        if (hi < 0) lb_gbuf_printf(b, "{%lld,}", rmin);
        else lb_gbuf_printf(b, "{%lld,%lld}", rmin, (long long)hi - 1);
        lb_gbuf_printf(b, " ws%s \"]\"", lo == 0 ? " )?" : "");
    } else if (!strcmp(t, "object")) {
        const json_value *props = json_get_type(s, "properties", JSON_OBJECT);
        const json_value *req = json_get_type(s, "required", JSON_ARRAY);
        const json_value *extra = json_get(s, "additionalProperties");
        if (!props || props->n == 0) {
            if (extra && extra->type == JSON_OBJECT) { /* a map of strings to one schema */
                const int v = gen(c, extra);
                lb_gbuf_printf(
                    b, "\"{\" ws ( string ws \":\" ws s%d ( ws \",\" ws string ws \":\" ws s%d )* ws )? \"}\"", v, v);
            } else if (extra && extra->type == JSON_BOOL && !extra->boolean) lb_gbuf_printf(b, "\"{\" ws \"}\"");
            else lb_gbuf_printf(b, "object");
            return;
        }
        int kv[64], is_req[64], n = (int)props->n;
        if (n > 64) {
            refuse(c, LB_ERR_UNSUPPORTED, "json schema: more than 64 properties in one object%s", "");
            return;
        }
        for (int i = 0; i < n; i++) {
            is_req[i] = 0;
            for (size_t j = 0; req && j < req->n; j++)
                if (req->items[j].type == JSON_STRING && !strcmp(req->items[j].str, props->members[i].key))
                    is_req[i] = 1;
            const int v = gen(c, &props->members[i].value);
            kv[i] = c->next_id++;
            lb_gbuf_printf(&c->rules, "s%d ::= ", kv[i]);
            json_string_literal(&c->rules, props->members[i].key, props->members[i].key_len);
            lb_gbuf_printf(&c->rules, " ws \":\" ws s%d\n", v);
        }
        for (size_t j = 0; req && j < req->n; j++) { /* a required name must be a property */
            int found = 0;
            for (int i = 0; i < n; i++)
                found |= req->items[j].type == JSON_STRING && !strcmp(req->items[j].str, props->members[i].key);
            if (!found) {
                refuse(c, LB_ERR_UNSUPPORTED, "json schema: required \"%s\" is not among the properties",
                       req->items[j].type == JSON_STRING ? req->items[j].str : "?");
                return;
            }
        }
        /* tails[i]: the optional properties from i on, each with its comma (-1: none) */
        int tails[65], tail = -1;
        tails[n] = -1;
        for (int i = n - 1; i >= 0; i--) {
            if (!is_req[i]) {
                const int t2 = c->next_id++;
                lb_gbuf_printf(&c->rules, "s%d ::= ( ws \",\" ws s%d )?", t2, kv[i]);
                if (tail >= 0) lb_gbuf_printf(&c->rules, " s%d", tail);
                lb_gbuf_printf(&c->rules, "\n");
                tail = t2;
            }
            tails[i] = tail;
        }
        lb_gbuf_printf(b, "\"{\" ws ");
        int first = 1;
        for (int i = 0; i < n; i++)
            if (is_req[i]) lb_gbuf_printf(b, first ? "s%d" : " ws \",\" ws s%d", kv[i]), first = 0;
        if (!first) {
            if (tail >= 0) lb_gbuf_printf(b, " s%d", tail);
        } else { /* none required: any one first, then the optional ones after it (tails[i + 1]) */
            lb_gbuf_printf(b, "( ");
            for (int i = 0; i < n; i++) {
                lb_gbuf_printf(b, "%ss%d", i ? " | " : "", kv[i]);
                if (tails[i + 1] >= 0) lb_gbuf_printf(b, " s%d", tails[i + 1]);
            }
            lb_gbuf_printf(b, " )?");
        }
        lb_gbuf_printf(b, " ws \"}\"");
    } else refuse(c, LB_ERR_UNSUPPORTED, "json schema: type \"%s\"", t);
}

/* A rule for schema s; returns its id (rule "s<id>"). */
static int gen(ctx *c, const json_value *s) {
    const int id = c->next_id++;
    if (c->err) return id;
    if (++c->depth > MAX_SCHEMA_DEPTH) {
        refuse(c, LB_ERR_UNSUPPORTED, "json schema: nested deeper than 64%s", "");
        return id;
    }
    lb_gbuf b = {0};
    if (s->type == JSON_BOOL) { /* true: anything; false: nothing can match */
        if (!s->boolean) refuse(c, LB_ERR_UNSUPPORTED, "json schema: a schema of false%s", "");
        lb_gbuf_printf(&b, "value");
    } else if (s->type != JSON_OBJECT)
        refuse(c, LB_ERR_ARG, "json schema: a schema must be an object or a boolean%s", "");
    else {
        for (size_t i = 0; i < s->n; i++)
            if (!is_one_of(s->members[i].key, known))
                refuse(c, LB_ERR_UNSUPPORTED, "json schema: keyword \"%s\" is not supported", s->members[i].key);
        const json_value *v;
        const char *ref = json_get_str(s, "$ref");
        const char *ty = json_get_str(s, "type");
        static const char *const bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
        for (int k = 0; k < 4; k++) {
            const json_value *bv = json_get(s, bounds[k]);
            if (bv && (!ty || strcmp(ty, "integer")))
                refuse(c, LB_ERR_UNSUPPORTED,
                       "json schema: \"%s\" other than an integer's (numbers' bounds are not "
                       "written)",
                       bounds[k]);
            else if (bv && (bv->type != JSON_NUMBER || bv->number != bv->number))
                refuse(c, LB_ERR_ARG, "json schema: \"%s\" must be a number", bounds[k]);
        }
        if (json_get(s, "pattern") && (!ty || strcmp(ty, "string") || !json_get_str(s, "pattern")))
            refuse(c, LB_ERR_UNSUPPORTED,
                   "json schema: \"pattern\" other than a string's (type \"string\" beside it)%s", "");
        if (ref) {
            int known_ref = -1;
            for (int i = 0; i < c->n_refs; i++)
                if (!strcmp(c->ref_names[i], ref)) known_ref = c->ref_ids[i];
            if (known_ref >= 0) lb_gbuf_printf(&b, "s%d", known_ref);
            else if (c->n_refs == 64) refuse(c, LB_ERR_UNSUPPORTED, "json schema: more than 64 $refs%s", "");
            else {
                const json_value *d = resolve(c, ref);
                c->ref_names[c->n_refs] = ref, c->ref_ids[c->n_refs++] = id; /* recursion comes back here */
                if (d) {
                    c->depth--;
                    free(b.s);
                    const int inner = gen(c, d);
                    lb_gbuf_printf(&c->rules, "s%d ::= s%d\n", id, inner);
                    return id;
                }
            }
        } else if ((v = json_get(s, "const"))) json_value_literal(c, &b, v);
        else if ((v = json_get_type(s, "enum", JSON_ARRAY))) {
            if (v->n == 0) refuse(c, LB_ERR_UNSUPPORTED, "json schema: an empty enum%s", "");
            lb_gbuf_printf(&b, "( ");
            for (size_t i = 0; i < v->n; i++) {
                if (i) lb_gbuf_printf(&b, " | ");
                json_value_literal(c, &b, &v->items[i]);
            }
            lb_gbuf_printf(&b, " )");
        } else if ((v = json_get_type(s, "anyOf", JSON_ARRAY)) || (v = json_get_type(s, "oneOf", JSON_ARRAY)) ||
                   ((v = json_get_type(s, "allOf", JSON_ARRAY)) && v->n == 1)) {
            for (size_t i = 0; i < v->n; i++) lb_gbuf_printf(&b, "%ss%d", i ? " | " : "", gen(c, &v->items[i]));
            if (v->n == 0) refuse(c, LB_ERR_UNSUPPORTED, "json schema: an empty anyOf / oneOf%s", "");
        } else if (json_get(s, "allOf"))
            refuse(c, LB_ERR_UNSUPPORTED, "json schema: allOf of more than one schema%s", "");
        else if ((v = json_get(s, "type"))) {
            if (v->type == JSON_STRING) gen_type(c, &b, s, v->str);
            else if (v->type == JSON_ARRAY && v->n > 0)
                for (size_t i = 0; i < v->n; i++) {
                    if (i) lb_gbuf_printf(&b, " | ");
                    if (v->items[i].type != JSON_STRING)
                        refuse(c, LB_ERR_ARG, "json schema: a type that is not a string%s", "");
                    else gen_type(c, &b, s, v->items[i].str);
                }
            else refuse(c, LB_ERR_ARG, "json schema: \"type\" must be a string or a list of strings%s", "");
        } else if (json_get(s, "properties")) gen_type(c, &b, s, "object");
        else if (json_get(s, "items")) gen_type(c, &b, s, "array");
        else lb_gbuf_printf(&b, "value");
    }
    if (b.oom) c->rules.oom = 1;
    lb_gbuf_printf(&c->rules, "s%d ::= %s\n", id, b.s ? b.s : "value");
    free(b.s);
    c->depth--;
    return id;
}

/* A schema's rules into c->rules; the top rule's id, or -1 with c->err. */
static int schema_rules(ctx *c, const char *schema, size_t len) {
    json_doc *doc = NULL;
    lb_status s = json_parse(schema, len, &doc);
    if (s) {
        c->err = lb_fail_prefix(s, "json schema");
        return -1;
    }
    c->root = json_root(doc);
    c->n_refs = c->depth = 0;
    const int top = gen(c, c->root);
    json_free(doc);
    if (!c->err && c->rules.oom) c->err = lb_fail(LB_ERR_NOMEM, "out of memory");
    return c->err ? -1 : top;
}

static lb_status finish(ctx *c, char **gbnf) {
    lb_gbuf_printf(&c->rules, "%s", JSON_PRIMITIVES);
    if (!c->err && c->rules.oom) c->err = lb_fail(LB_ERR_NOMEM, "out of memory");
    if (c->err) {
        free(c->rules.s);
        return c->err;
    }
    *gbnf = c->rules.s;
    return LB_OK;
}

lb_status lb_json_schema_to_grammar(const char *schema, size_t len, char **gbnf) {
    *gbnf = NULL;
    ctx c = {0};
    const int top = schema_rules(&c, schema, len);
    if (top >= 0) lb_gbuf_printf(&c.rules, "root ::= s%d\n", top);
    return finish(&c, gbnf);
}

static int utf8_ok(const unsigned char *s) {
    while (*s) {
        const int n = *s < 0x80                  ? 0
                      : *s >= 0xC2 && *s < 0xE0  ? 1
                      : *s >= 0xE0 && *s < 0xF0  ? 2
                      : *s >= 0xF0 && *s <= 0xF4 ? 3
                                                 : -1;
        if (n < 0) return 0;
        uint32_t v = *s++ & (0x7F >> n);
        for (int i = 0; i < n; i++, s++) {
            if ((*s & 0xC0) != 0x80) return 0;
            v = v << 6 | (*s & 0x3F);
        }
        if ((n == 2 && v < 0x800) || (n == 3 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF))
            return 0;
    }
    return 1;
}

lb_status lb_json_tool_calls_grammar(int n, const char *const *names, const char *const *schemas,
                                     const lb_tool_call_format *f, char **gbnf) {
    const char *args_key = f->args_key;
    *gbnf = NULL;
    if (n <= 0) return lb_fail(LB_ERR_ARG, "tool calls: no tools");
    for (const char *k = args_key; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || *k == '_')) return lb_fail(LB_ERR_ARG, "tool calls: a bad arguments key");
    ctx c = {0};
    lb_gbuf alts = {0};
    for (int i = 0; i < n && !c.err; i++) {
        if (!utf8_ok((const unsigned char *)names[i])) {
            c.err = lb_fail(LB_ERR_ARG, "tool calls: a tool name is not valid UTF-8");
            break;
        }
        const int top = schema_rules(&c, schemas[i], strlen(schemas[i]));
        if (top < 0) {
            c.err = lb_fail_prefix(c.err, "tool '%s'", names[i]);
            break;
        }
        lb_gbuf_printf(&alts, "%s( \"{\\\"name\\\": \" ", i ? " | " : "");
        json_string_literal(&alts, names[i], strlen(names[i]));
        lb_gbuf_printf(&alts, " \", \\\"%s\\\": \" s%d \"}\" )", args_key, top);
    }
    /* the wrappers as literals: their bytes, with quotes, backslashes and controls escaped */
    lb_gbuf w[5] = {{0}, {0}, {0}, {0}, {0}};
    const char *wr[5] = {f->call_open, f->call_close, f->sep, f->list_open, f->list_close};
    for (int k = 0; k < 5 && !c.err; k++)
        if (!utf8_ok((const unsigned char *)wr[k]))
            c.err = lb_fail(LB_ERR_ARG, "tool calls: a wrapper is not valid UTF-8");
    for (int k = 0; k < 5; k++) {
        lb_gbuf_printf(&w[k], "\"");
        for (const unsigned char *q = (const unsigned char *)wr[k]; *q; q++) {
            if (*q == '"' || *q == '\\') lb_gbuf_printf(&w[k], "\\%c", *q);
            else if (*q < 0x20) lb_gbuf_printf(&w[k], "\\x%02X", *q);
            else lb_gbuf_printf(&w[k], "%c", *q);
        }
        lb_gbuf_printf(&w[k], "\"");
    }
    for (int k = 0; k < 5; k++) alts.oom |= w[k].oom;
    if (alts.oom) c.rules.oom = 1;
    if (!c.err && alts.s) { /* ("" literals match the empty text) */
        lb_gbuf_printf(&c.rules, "call ::= %s ( %s ) %s\n", w[0].s, alts.s, w[1].s);
        if (f->many) lb_gbuf_printf(&c.rules, "root ::= %s call ( %s call )* %s\n", w[3].s, w[2].s, w[4].s);
        else lb_gbuf_printf(&c.rules, "root ::= %s call %s\n", w[3].s, w[4].s);
    }
    free(alts.s);
    for (int k = 0; k < 5; k++) free(w[k].s);
    return finish(&c, gbnf);
}
