/* Request bodies of /v1/completions and /v1/chat/completions (cJSON), checked
 * field by field as OpenAI documents them: a wrong type, a value out of range
 * or a missing field is a 400 naming the field (`param`). Unknown fields are
 * ignored (as llama-server does); null is "not given". No model or engine
 * state is touched, so the fuzzer (fuzz/fuzz_serve_request.c) runs this alone. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"
#include "serve/serve.h"

void srv_error_set(srv_error *e, int status, const char *type, const char *code, const char *param,
                   const char *fmt, ...) {
    e->status = status;
    snprintf(e->type, sizeof e->type, "%s", type ? type : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

char *srv_error_json(const srv_error *e) {
    cJSON *root = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(root, "error");
    size_t n;
    char *msg = srv_utf8_clean(e->message, strlen(e->message), &n);
    if (!o || !msg) {
        free(msg);
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_AddStringToObject(o, "message", msg);
    cJSON_AddStringToObject(o, "type", e->type);
    if (e->param[0]) cJSON_AddStringToObject(o, "param", e->param);
    else cJSON_AddNullToObject(o, "param");
    if (e->code[0]) cJSON_AddStringToObject(o, "code", e->code);
    else cJSON_AddNullToObject(o, "code");
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(msg);
    return s;
}

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 sequence at s (avail bytes), 0 if invalid, -1 if
 * it is a valid start that needs more bytes than avail. */
static int utf8_seq(const unsigned char *s, size_t avail) {
    unsigned c = s[0];
    int n;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
    else return 0;
    unsigned cp = c & (0x3fu >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((size_t)i >= avail) return -1;
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
        /* reject overlong / surrogate / > U+10FFFF prefixes as soon as they show */
        if (i == 1 && n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0;
        if (i == 1 && n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0;
    }
    return cp >= min ? n : 0;
}

size_t srv_utf8_complete(const char *s, size_t n) {
    /* only the last 3 bytes can start an unfinished sequence */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        const unsigned char *p = (const unsigned char *)s + n - back;
        if ((*p & 0xc0) == 0x80) continue;
        return utf8_seq(p, back) < 0 ? n - back : n;
    }
    return n;
}

char *srv_utf8_clean(const char *s, size_t n, size_t *out_len) {
    char *o = malloc(n * 3 + 1), *w = o; /* each bad byte becomes 3 */
    if (!o) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int k = u[i] ? utf8_seq(u + i, n - i) : 0; /* NUL too: a C string cannot carry it */
        if (k > 0) {
            memcpy(w, u + i, (size_t)k);
            w += k;
            i += (size_t)k;
        } else {
            memcpy(w, "\xef\xbf\xbd", 3);
            w += 3;
            i++;
        }
    }
    *w = 0;
    if (out_len) *out_len = (size_t)(w - o);
    return o;
}

/* ---- fields ---- */

static const char *type_name(const cJSON *v) {
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsNull(v)) return "null";
    return "something else";
}

static int bad_type(srv_error *err, const char *field, const char *want, const cJSON *v) {
    srv_error_set(err, 400, "invalid_request_error", "invalid_type", field,
                  "Invalid type for '%s': expected %s, but got %s instead.", field, want, type_name(v));
    return -1;
}

static int bad_value(srv_error *err, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_value(srv_error *err, const char *field, const char *fmt, ...) {
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    srv_error_set(err, 400, "invalid_request_error", "invalid_value", field, "Invalid '%s': %s", field, why);
    return -1;
}

/* A field that is present and not null, else NULL. */
static const cJSON *field(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int get_bool(const cJSON *o, const char *name, int *out, srv_error *err) {
    const cJSON *v = field(o, name);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return bad_type(err, name, "a boolean", v);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_float(const cJSON *o, const char *name, double lo, double hi, float *out, srv_error *err) {
    const cJSON *v = field(o, name);
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) return bad_type(err, name, "a number", v);
    double x = v->valuedouble;
    if (!isfinite(x) || x < lo || x > hi)
        return bad_value(err, name, "expected a value in [%g, %g], but got %g instead.", lo, hi, x);
    *out = (float)x;
    return 0;
}

/* gpt-oss's reasoning effort: "reasoning_effort" (OpenAI's chat field), or
 * llama-server's "chat_template_kwargs": {"reasoning_effort": ...}; the
 * top-level one wins. low, medium or high. */
static int get_effort(const cJSON *root, srv_params *p, srv_error *err) {
    const cJSON *v = field(root, "reasoning_effort");
    const char *name = "reasoning_effort";
    const cJSON *kw = field(root, "chat_template_kwargs");
    if (kw && !cJSON_IsObject(kw)) return bad_type(err, "chat_template_kwargs", "an object", kw);
    if (!v && kw) v = field(kw, "reasoning_effort"), name = "chat_template_kwargs.reasoning_effort";
    if (!v) return 0;
    if (!cJSON_IsString(v)) return bad_type(err, name, "a string", v);
    const char *e = v->valuestring;
    if (!lb_chat_reasoning_effort_known(e))
        return bad_value(err, name, "expected 'low', 'medium' or 'high', but got '%.40s' instead.", e);
    snprintf(p->reasoning_effort, sizeof p->reasoning_effort, "%s", e);
    return 0;
}

/* The thinking switch, chat_template_kwargs' "enable_thinking" (DeepSeek-V3.1's
 * template also reads "thinking"; llama-server passes either to the
 * template), and llama-server's "reasoning_format": none, or deepseek / auto
 * (the <think> block in reasoning_content). */
static int get_thinking(const cJSON *root, srv_params *p, srv_error *err) {
    const cJSON *kw = field(root, "chat_template_kwargs"), *v;
    static const char *const keys[2] = {"enable_thinking", "thinking"};
    for (int i = 0; kw && i < 2; i++)
        if ((v = field(kw, keys[i]))) {
            char name[64];
            snprintf(name, sizeof name, "chat_template_kwargs.%s", keys[i]);
            if (!cJSON_IsBool(v)) return bad_type(err, name, "a boolean", v);
            p->thinking = cJSON_IsTrue(v);
        }
    if (!(v = field(root, "reasoning_format"))) return 0;
    if (!cJSON_IsString(v)) return bad_type(err, "reasoning_format", "a string", v);
    const char *f = v->valuestring;
    if (strcmp(f, "none") && strcmp(f, "deepseek") && strcmp(f, "auto"))
        return bad_value(err, "reasoning_format", "expected 'none', 'deepseek' or 'auto', but got '%.40s' instead.", f);
    p->reasoning_format = strcmp(f, "none") != 0;
    return 0;
}

static int get_int(const cJSON *o, const char *name, double lo, double hi, double *out, srv_error *err);

/* Log probabilities (OpenAI's): chat "logprobs": true with "top_logprobs" 0..20
 * alternatives a token; completions "logprobs": N (0..20) alternatives. */
static int get_logprobs(const cJSON *root, srv_kind kind, srv_params *p, srv_error *err) {
    const cJSON *v = field(root, "logprobs");
    double x;
    int r;
    if (kind == SRV_COMPLETION) {
        if (v && cJSON_IsNull(v)) return 0;
        if ((r = get_int(root, "logprobs", 0, SRV_MAX_TOP_LOGPROBS, &x, err)) < 0) return -1;
        if (r) p->logprobs = 1, p->top_logprobs = (int)x;
        return 0;
    }
    if (v && !cJSON_IsNull(v) && get_bool(root, "logprobs", &p->logprobs, err)) return -1;
    if ((r = get_int(root, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, &x, err)) < 0) return -1;
    if (r && !p->logprobs)
        return bad_value(err, "top_logprobs", "'logprobs' must be true when 'top_logprobs' is given.");
    if (r) p->top_logprobs = (int)x;
    return 0;
}

/* An integer (a JSON number with no fraction) in [lo, hi]. */
static int get_int(const cJSON *o, const char *name, double lo, double hi, double *out, srv_error *err) {
    const cJSON *v = field(o, name);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || !isfinite(v->valuedouble))
        return bad_type(err, name, "an integer", v);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return bad_value(err, name, "expected an integer in [%.0f, %.0f], but got %.0f instead.", lo, hi,
                         v->valuedouble);
    *out = v->valuedouble;
    return 1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static int oom(srv_error *err) {
    srv_error_set(err, 500, "server_error", "out_of_memory", NULL, "out of memory parsing the request");
    return -1;
}

/* stop: a string or an array of up to 4 strings; empty strings are dropped. */
static int get_stop(const cJSON *o, srv_params *p, srv_error *err) {
    const cJSON *v = field(o, "stop");
    if (!v) return 0;
    if (cJSON_IsString(v)) {
        if (!v->valuestring[0]) return 0;
        if (!(p->stop[0] = dup_str(v->valuestring))) return oom(err);
        p->n_stop = 1;
        return 0;
    }
    if (!cJSON_IsArray(v)) return bad_type(err, "stop", "a string or an array of strings", v);
    if (cJSON_GetArraySize(v) > SRV_MAX_STOP)
        return bad_value(err, "stop", "at most %d stop sequences, but got %d.", SRV_MAX_STOP, cJSON_GetArraySize(v));
    const cJSON *s;
    cJSON_ArrayForEach(s, v) {
        if (!cJSON_IsString(s)) return bad_type(err, "stop", "an array of strings", s);
        if (!s->valuestring[0]) continue;
        if (!(p->stop[p->n_stop] = dup_str(s->valuestring))) return oom(err);
        p->n_stop++;
    }
    return 0;
}

/* A message's content: a string, null (as "") or an array of text parts. */
static int get_content(const cJSON *m, int idx, char **out, srv_error *err) {
    char param[48];
    snprintf(param, sizeof param, "messages[%d].content", idx);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!c || cJSON_IsNull(c)) {
        *out = dup_str("");
        return *out ? 0 : oom(err);
    }
    if (cJSON_IsString(c)) {
        *out = dup_str(c->valuestring);
        return *out ? 0 : oom(err);
    }
    if (!cJSON_IsArray(c)) return bad_type(err, param, "a string or an array of content parts", c);
    /* the parts' texts, joined by "\n" (llama-server's way) */
    size_t total = 1;
    const cJSON *part;
    cJSON_ArrayForEach(part, c) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsObject(part)) return bad_type(err, param, "an array of content parts (objects)", part);
        if (!cJSON_IsString(type))
            return bad_value(err, param, "every content part needs a string 'type'.");
        if (strcmp(type->valuestring, "text") != 0) {
            srv_error_set(err, 400, "invalid_request_error", "unsupported_value", param,
                          "content parts of type '%.64s' are not supported (text only).", type->valuestring);
            return -1;
        }
        if (!cJSON_IsString(text)) return bad_type(err, param, "a string 'text' in every text part", text);
        total += strlen(text->valuestring) + 1;
    }
    char *s = malloc(total), *w = s;
    if (!s) return oom(err);
    cJSON_ArrayForEach(part, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        if (w != s) *w++ = '\n';
        size_t n = strlen(t);
        memcpy(w, t, n);
        w += n;
    }
    *w = 0;
    *out = s;
    return 0;
}

static int get_tool_calls(const cJSON *calls, int idx, lb_chat_msg *msg, srv_error *err);

static int get_messages(const cJSON *root, srv_params *p, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!v || cJSON_IsNull(v)) {
        srv_error_set(err, 400, "invalid_request_error", "missing_required_parameter", "messages",
                      "Missing required parameter: 'messages'.");
        return -1;
    }
    if (!cJSON_IsArray(v)) return bad_type(err, "messages", "an array", v);
    const int n = cJSON_GetArraySize(v);
    if (n == 0) return bad_value(err, "messages", "expected an array with at least one message.");
    if (!(p->msgs = calloc((size_t)n, sizeof *p->msgs))) return oom(err);
    const cJSON *m;
    int i = 0;
    cJSON_ArrayForEach(m, v) {
        char param[48];
        snprintf(param, sizeof param, "messages[%d]", i);
        if (!cJSON_IsObject(m)) return bad_type(err, param, "an object", m);
        snprintf(param, sizeof param, "messages[%d].role", i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!role || cJSON_IsNull(role)) {
            srv_error_set(err, 400, "invalid_request_error", "missing_required_parameter", param,
                          "Missing required parameter: '%s'.", param);
            return -1;
        }
        if (!cJSON_IsString(role)) return bad_type(err, param, "a string", role);
        const char *r = role->valuestring;
        if (!strcmp(r, "developer")) r = "system"; /* OpenAI's newer name for it */
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool")) {
            srv_error_set(err, 400, "invalid_request_error", "unsupported_value", param,
                          "Invalid value for '%s': '%.64s' (supported: system, developer, user, assistant, tool).",
                          param, role->valuestring);
            return -1;
        }
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (calls && !cJSON_IsNull(calls) && !(cJSON_IsArray(calls) && cJSON_GetArraySize(calls) == 0)) {
            snprintf(param, sizeof param, "messages[%d].tool_calls", i);
            if (!cJSON_IsArray(calls)) return bad_type(err, param, "an array", calls);
            if (strcmp(r, "assistant")) return bad_value(err, param, "only assistant messages make tool calls.");
            p->n_msgs = i + 1; /* freed with the rest, whatever happens below */
            if (get_tool_calls(calls, i, &p->msgs[i], err)) return -1;
        }
        const cJSON *tcid = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");
        if (tcid && !cJSON_IsNull(tcid)) { /* a tool result's: which call it answers */
            snprintf(param, sizeof param, "messages[%d].tool_call_id", i);
            if (!cJSON_IsString(tcid)) return bad_type(err, param, "a string", tcid);
            p->n_msgs = i + 1;
            if (!(p->msgs[i].tool_call_id = dup_str(tcid->valuestring))) return oom(err);
        }
        char *content = NULL;
        if (get_content(m, i, &content, err)) return -1;
        char *rd = dup_str(r);
        if (!rd) {
            free(content);
            return oom(err);
        }
        p->msgs[i].role = rd;
        p->msgs[i].content = content;
        p->n_msgs = ++i;
    }
    return 0;
}

static int get_prompt(const cJSON *root, srv_params *p, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (!v || cJSON_IsNull(v)) {
        srv_error_set(err, 400, "invalid_request_error", "missing_required_parameter", "prompt",
                      "Missing required parameter: 'prompt'.");
        return -1;
    }
    if (cJSON_IsString(v)) {
        p->prompt = dup_str(v->valuestring);
        return p->prompt ? 0 : oom(err);
    }
    if (!cJSON_IsArray(v)) return bad_type(err, "prompt", "a string or an array of token ids", v);
    const int n = cJSON_GetArraySize(v);
    if (n == 0) return bad_value(err, "prompt", "expected a non-empty string or array.");
    const cJSON *first = cJSON_GetArrayItem(v, 0);
    if (cJSON_IsArray(first)) { /* [[ids]]: a batch of one token-id prompt (what lm-evaluation-harness sends) */
        if (n > 1) {
            srv_error_set(err, 400, "invalid_request_error", "unsupported_value", "prompt",
                          "several prompts in one request are not supported: send one request per prompt.");
            return -1;
        }
        v = first;
        if (cJSON_GetArraySize(v) == 0) return bad_value(err, "prompt", "expected a non-empty string or array.");
    } else if (cJSON_IsString(first)) {
        if (n > 1) {
            srv_error_set(err, 400, "invalid_request_error", "unsupported_value", "prompt",
                          "several prompts in one request are not supported: send one request per prompt.");
            return -1;
        }
        p->prompt = dup_str(first->valuestring);
        return p->prompt ? 0 : oom(err);
    }
    if (!(p->prompt_ids = malloc((size_t)cJSON_GetArraySize(v) * sizeof *p->prompt_ids))) return oom(err);
    const cJSON *t;
    cJSON_ArrayForEach(t, v) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble > INT32_MAX)
            return bad_type(err, "prompt", "a string or an array of token ids (non-negative integers)", t);
        p->prompt_ids[p->n_prompt_ids++] = (int32_t)t->valuedouble;
    }
    p->prompt_is_ids = 1;
    return 0;
}

int srv_buf_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n + 1) c *= 2;
        char *b = realloc(*buf, c);
        if (!b) return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

static int py_str(const char *q, char **buf, size_t *len, size_t *cap) {
    if (srv_buf_append(buf, len, cap, "\"", 1)) return -1;
    for (const unsigned char *c = (const unsigned char *)q; *c; c++) {
        char e[8];
        const char *w = e;
        size_t n = 2;
        switch (*c) {
        case '"': w = "\\\""; break;
        case '\\': w = "\\\\"; break;
        case '\n': w = "\\n"; break;
        case '\r': w = "\\r"; break;
        case '\t': w = "\\t"; break;
        case '\b': w = "\\b"; break;
        case '\f': w = "\\f"; break;
        default:
            if (*c < 0x20) n = (size_t)snprintf(e, sizeof e, "\\u%04x", *c);
            else e[0] = (char)*c, n = 1;
        }
        if (srv_buf_append(buf, len, cap, w, n)) return -1;
    }
    return srv_buf_append(buf, len, cap, "\"", 1);
}

int srv_json_py(const cJSON *v, char **buf, size_t *len, size_t *cap) {
    char num[40];
    if (cJSON_IsString(v)) return py_str(v->valuestring, buf, len, cap);
    if (cJSON_IsTrue(v)) return srv_buf_append(buf, len, cap, "true", 4);
    if (cJSON_IsFalse(v)) return srv_buf_append(buf, len, cap, "false", 5);
    if (cJSON_IsNumber(v)) {
        const double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 9007199254740992.0) snprintf(num, sizeof num, "%.0f", x);
        else
            for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back (Python's repr) */
                snprintf(num, sizeof num, "%.*g", prec, x);
                if (strtod(num, NULL) == x) break;
            }
        return srv_buf_append(buf, len, cap, num, strlen(num));
    }
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        const int obj = cJSON_IsObject(v);
        if (srv_buf_append(buf, len, cap, obj ? "{" : "[", 1)) return -1;
        const cJSON *e;
        int first = 1;
        cJSON_ArrayForEach(e, v) {
            if (!first && srv_buf_append(buf, len, cap, ", ", 2)) return -1;
            first = 0;
            if (obj && (py_str(e->string ? e->string : "", buf, len, cap) || srv_buf_append(buf, len, cap, ": ", 2)))
                return -1;
            if (srv_json_py(e, buf, len, cap)) return -1;
        }
        return srv_buf_append(buf, len, cap, obj ? "}" : "]", 1);
    }
    return srv_buf_append(buf, len, cap, "null", 4);
}

/* one call's JSON (an object with a string "name" and an object or no
 * "arguments") at [p, p + n): its name and compact arguments, or 0 */
static int read_call(const char *p, size_t n, char *const *tool_names, int n_tools, char **name, char **args) {
    cJSON *j = cJSON_ParseWithLength(p, n);
    const cJSON *nm = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "name") : NULL;
    const cJSON *a = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "arguments") : NULL;
    if (!a && cJSON_IsObject(j)) a = cJSON_GetObjectItemCaseSensitive(j, "parameters"); /* Llama 3.1's name */
    int ok = cJSON_IsString(nm) && nm->valuestring[0] && (!a || cJSON_IsObject(a));
    if (ok && tool_names) { /* a fenced block: only a tool that was offered */
        ok = 0;
        for (int i = 0; i < n_tools && !ok; i++) ok = !strcmp(tool_names[i], nm->valuestring);
    }
    *name = ok ? strdup(nm->valuestring) : NULL;
    *args = ok ? (a ? cJSON_PrintUnformatted(a) : strdup("{}")) : NULL;
    cJSON_Delete(j);
    if (ok && (!*name || !*args)) free(*name), free(*args), ok = 0;
    return ok;
}

/* A JSON list of calls (Mistral v3's [TOOL_CALLS] list), each one as
 * read_call reads it with a tool offered; all of them, or none. */
static int read_call_list(const char *p, size_t n, char *const *tool_names, int n_tools, char ***names, char ***args,
                          int *count) {
    cJSON *j = cJSON_ParseWithLength(p, n);
    const int k = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : 0;
    char **nn = k ? calloc((size_t)k, sizeof *nn) : NULL, **aa = k ? calloc((size_t)k, sizeof *aa) : NULL;
    int ok = nn && aa, i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, j) {
        char *txt = ok ? cJSON_PrintUnformatted(c) : NULL;
        ok = txt && cJSON_IsObject(c) && read_call(txt, strlen(txt), tool_names, n_tools, &nn[i], &aa[i]);
        free(txt);
        if (!ok) break;
        i++;
    }
    cJSON_Delete(j);
    if (!ok) {
        for (int q = 0; q < i; q++) free(nn[q]), free(aa[q]);
        free(nn), free(aa);
        return 0;
    }
    *names = nn, *args = aa, *count = k;
    return 1;
}

int srv_parse_tool_calls(char *text, size_t *text_len, char *const *tool_names, int n_tools, char ***names,
                         char ***args, int *n) {
    static const struct { const char *open, *close; int fenced; } tags[] = {
        {"<tool_call>", "</tool_call>", 0}, {"```json", "```", 1}, {"```\n{", "```", 1}};
    *names = *args = NULL;
    *n = 0;
    size_t w = 0, r = 0, len = *text_len;
    while (r < len) {
        /* the earliest block of any kind from r */
        const char *o = NULL, *c = NULL;
        int kind = -1;
        for (int k = 0; k < 3; k++) {
            const char *ok = strstr(text + r, tags[k].open);
            if (!ok || (o && ok >= o)) continue;
            const char *ck = strstr(ok + strlen(tags[k].open), tags[k].close);
            if (ck) o = ok, c = ck, kind = k;
        }
        if (!o) break;
        const size_t jo = (size_t)(o - text) + strlen(tags[kind].open) - (kind == 2), jc = (size_t)(c - text);
        const size_t end = jc + strlen(tags[kind].close);
        char *nm = NULL, *as = NULL;
        char **nn = NULL, **na = NULL;
        if (read_call(text + jo, jc - jo, tags[kind].fenced ? tool_names : NULL, n_tools, &nm, &as)) {
            nn = realloc(*names, (size_t)(*n + 1) * sizeof *nn);
            if (nn) *names = nn;
            na = nn ? realloc(*args, (size_t)(*n + 1) * sizeof *na) : NULL;
            if (na) *args = na;
        }
        if (!na) { /* not a call (or out of memory): the block stays in the text */
            free(nm), free(as);
            const size_t keep = end - r;
            memmove(text + w, text + r, keep);
            w += keep, r += keep;
            continue;
        }
        (*names)[*n] = nm, (*args)[(*n)++] = as;
        const size_t before = (size_t)(o - text) - r; /* the text before the block stays */
        memmove(text + w, text + r, before);
        w += before;
        r = end;
    }
    memmove(text + w, text + r, len - r);
    w += len - r;
    if (*n == 0 && n_tools > 0) { /* no block: a reply that is one call's JSON object alone (Llama 3.1's way) */
        size_t a = 0, e = w;
        while (a < e && (text[a] == ' ' || text[a] == '\n' || text[a] == '\r' || text[a] == '\t')) a++;
        while (e > a && (text[e - 1] == ' ' || text[e - 1] == '\n' || text[e - 1] == '\r' || text[e - 1] == '\t')) e--;
        if (e - a > 12 && !memcmp(text + a, "[TOOL_CALLS]", 12)) /* Mistral's marker, where it is text */
            for (a += 12; a < e && (text[a] == ' ' || text[a] == '\n'); a++) {}
        char *nm = NULL, *as = NULL;
        if (e > a && text[a] == '[' && text[e - 1] == ']' && read_call_list(text + a, e - a, tool_names, n_tools, names,
                                                                            args, n))
            w = 0; /* Mistral v3's list of calls */
        else if (e > a && text[a] == '{' && text[e - 1] == '}' && read_call(text + a, e - a, tool_names, n_tools, &nm, &as)) {
            *names = malloc(sizeof **names);
            *args = *names ? malloc(sizeof **args) : NULL;
            if (*args) {
                (*names)[0] = nm, (*args)[0] = as;
                *n = 1;
                w = 0;
            } else {
                free(*names), *names = NULL;
                free(nm), free(as);
            }
        }
    }
    size_t a0 = 0; /* what is left, trimmed */
    while (a0 < w && (text[a0] == ' ' || text[a0] == '\n' || text[a0] == '\r' || text[a0] == '\t')) a0++;
    while (w > a0 && (text[w - 1] == ' ' || text[w - 1] == '\n' || text[w - 1] == '\r' || text[w - 1] == '\t')) w--;
    if (*n) {
        memmove(text, text + a0, w - a0);
        w -= a0;
    } else {
        w = len; /* no call: the text as it was */
    }
    text[w] = 0;
    *text_len = w;
    return 0;
}

/* "tools": [{"type": "function", "function": {"name", ...}}], each kept as
 * the templates' tojson writes it; "tool_choice": "auto" (the default),
 * "none" (no tools offered), "required" (one call or more) or {"type":
 * "function", "function": {"name": NAME}} (one call of that tool): the forced
 * choices become a grammar of the template's calls (Qwen 2.5 / 3's
 * <tool_call> blocks, the only tool format served), each call's arguments
 * as its "parameters" schema allows. */
static int get_tools(const cJSON *root, srv_params *p, srv_error *err) {
    const cJSON *v = field(root, "tools"), *choice = field(root, "tool_choice");
    const char *forced = NULL; /* "": any tool (required); else the tool's name */
    if (choice) {
        const cJSON *fn = cJSON_IsObject(choice) ? cJSON_GetObjectItemCaseSensitive(choice, "function") : NULL;
        const cJSON *nm = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (cJSON_IsString(choice)) {
            if (!strcmp(choice->valuestring, "none")) return 0;
            if (!strcmp(choice->valuestring, "required")) forced = "";
            else if (strcmp(choice->valuestring, "auto"))
                return bad_value(err, "tool_choice", "expected 'auto', 'none', 'required' or {\"type\": \"function\", "
                                                     "\"function\": {\"name\": ...}}, not '%s'.", choice->valuestring);
        } else if (cJSON_IsString(nm) && nm->valuestring[0]) forced = nm->valuestring;
        else if (cJSON_IsObject(choice))
            return bad_value(err, "tool_choice", "expected {\"type\": \"function\", \"function\": {\"name\": ...}}.");
        else return bad_type(err, "tool_choice", "a string or an object", choice);
    }
    if (!v || cJSON_IsNull(v)) v = NULL;
    else if (!cJSON_IsArray(v)) return bad_type(err, "tools", "an array", v);
    const int n = v ? cJSON_GetArraySize(v) : 0;
    if (n == 0) {
        if (forced) return bad_value(err, "tool_choice", "a tool call is required but no 'tools' are given.");
        return 0;
    }
    if (!(p->tools = calloc((size_t)n, sizeof *p->tools)) || !(p->tool_names = calloc((size_t)n, sizeof *p->tool_names)))
        return oom(err);
    char **schemas = calloc((size_t)n, sizeof *schemas);
    if (!schemas) return oom(err);
    const cJSON *t;
    int i = 0, rc = 0, found = 0;
    cJSON_ArrayForEach(t, v) {
        char param[48];
        snprintf(param, sizeof param, "tools[%d]", i);
        const cJSON *type = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "type") : NULL;
        const cJSON *fn = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function") : NULL;
        const cJSON *name = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsString(name) ||
            !name->valuestring[0]) {
            rc = bad_value(err, param, "expected {\"type\": \"function\", \"function\": {\"name\": ...}}.");
            break;
        }
        char *js = NULL, *nm = NULL;
        size_t len = 0, cap = 0;
        if (srv_json_py(t, &js, &len, &cap) || !(nm = dup_str(name->valuestring))) {
            free(js);
            rc = oom(err);
            break;
        }
        p->tools[i] = js, p->tool_names[i] = nm;
        p->n_tools = ++i;
        const cJSON *params = field(fn, "parameters");
        schemas[i - 1] = params ? cJSON_PrintUnformatted(params) : dup_str("{\"type\": \"object\"}");
        if (!schemas[i - 1]) {
            rc = oom(err);
            break;
        }
        found |= forced && (!forced[0] || !strcmp(forced, nm));
    }
    if (!rc && forced && !found)
        rc = bad_value(err, "tool_choice", "no tool named '%s' among the 'tools'.", forced);
    if (!rc && forced) { /* the grammar comes when the template is known (srv_tool_grammar) */
        p->tool_forced = -2;
        for (int k = 0; forced[0] && k < n; k++)
            if (!strcmp(p->tool_names[k], forced)) p->tool_forced = k;
        p->tool_schemas = schemas, p->n_tool_schemas = n;
        p->grammar_param = "tool_choice";
        return 0;
    }
    for (int k = 0; k < n; k++) free(schemas[k]);
    free(schemas);
    return rc;
}

int srv_tool_grammar(srv_params *p, int style, srv_error *err) {
    if (p->tool_forced == -1 || p->grammar) return 0;
    const int one = p->tool_forced >= 0;
    const char *const *names = (const char *const *)p->tool_names + (one ? p->tool_forced : 0);
    const char *const *sch = (const char *const *)p->tool_schemas + (one ? p->tool_forced : 0);
    static const lb_tool_call_format formats[3] = {
        {"arguments", "<tool_call>\n", "\n</tool_call>", "\n", "", "", 1}, /* Qwen 2.5 / 3 */
        {"parameters", "", "", "", "", "", 0},                             /* Llama 3.1 / 3.2: one call a message */
        {"arguments", "", "", ", ", "[", "]", 1},                           /* Mistral v3 */
    };
    lb_tool_call_format f = formats[style >= 0 && style < 3 ? style : 0];
    f.many = f.many && !one;
    if (lb_json_tool_calls_grammar(one ? 1 : p->n_tools, names, sch, &f, &p->grammar))
        return bad_value(err, "tools", "%s", lb_last_error());
    return 0;
}

/* an assistant message's "tool_calls": [{"type": "function", "function":
 * {"name", "arguments": JSON text}}], the arguments parsed and written as
 * the templates' tojson writes them (text that is no JSON object: as a JSON
 * string) */
static int get_tool_calls(const cJSON *calls, int idx, lb_chat_msg *msg, srv_error *err) {
    const int n = cJSON_GetArraySize(calls);
    lb_chat_tool_call *tc = calloc((size_t)n, sizeof *tc);
    if (!tc) return oom(err);
    msg->calls = tc;
    const cJSON *c;
    cJSON_ArrayForEach(c, calls) {
        char param[64];
        snprintf(param, sizeof param, "messages[%d].tool_calls[%d]", idx, msg->n_calls);
        const cJSON *fn = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "function") : NULL;
        const cJSON *name = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        const cJSON *a = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
        if (!cJSON_IsString(name) || (a && !cJSON_IsString(a) && !cJSON_IsObject(a)))
            return bad_value(err, param, "expected {\"function\": {\"name\": ..., \"arguments\": \"{...}\"}}.");
        char *buf = NULL;
        size_t len = 0, cap = 0;
        cJSON *parsed = cJSON_IsString(a) ? cJSON_Parse(a->valuestring) : NULL;
        const cJSON *src = cJSON_IsObject(parsed) ? parsed : a;
        const int bad = src ? srv_json_py(src, &buf, &len, &cap) : srv_buf_append(&buf, &len, &cap, "{}", 2);
        cJSON_Delete(parsed);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (id && !cJSON_IsNull(id) && !cJSON_IsString(id)) {
            free(buf);
            return bad_value(err, param, "'id' must be a string.");
        }
        tc[msg->n_calls].name = dup_str(name->valuestring);
        tc[msg->n_calls].id = cJSON_IsString(id) ? dup_str(id->valuestring) : NULL;
        tc[msg->n_calls++].arguments = buf;
        if (bad || !tc[msg->n_calls - 1].name || (cJSON_IsString(id) && !tc[msg->n_calls - 1].id)) return oom(err);
    }
    return 0;
}

/* llama-server's /tokenize and /detokenize bodies */
static int tokenize_fields(const cJSON *root, srv_kind kind, srv_params *p, srv_error *err) {
    const cJSON *v = field(root, kind == SRV_TOKENIZE ? "content" : "tokens");
    if (!v) {
        srv_error_set(err, 400, "invalid_request_error", "missing_required_parameter",
                      kind == SRV_TOKENIZE ? "content" : "tokens", "Missing required parameter: '%s'.",
                      kind == SRV_TOKENIZE ? "content" : "tokens");
        return -1;
    }
    if (kind == SRV_TOKENIZE) {
        if (!cJSON_IsString(v)) return bad_type(err, "content", "a string", v);
        if (!(p->prompt = dup_str(v->valuestring))) return oom(err);
        if (get_bool(root, "add_special", &p->add_special, err)) return -1;
        return get_bool(root, "with_pieces", &p->with_pieces, err);
    }
    if (!cJSON_IsArray(v)) return bad_type(err, "tokens", "an array of token ids", v);
    if (!(p->prompt_ids = malloc((size_t)LB_MAX(cJSON_GetArraySize(v), 1) * sizeof *p->prompt_ids))) return oom(err);
    const cJSON *t;
    cJSON_ArrayForEach(t, v) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble > INT32_MAX)
            return bad_type(err, "tokens", "an array of token ids (non-negative integers)", t);
        p->prompt_ids[p->n_prompt_ids++] = (int32_t)t->valuedouble;
    }
    p->prompt_is_ids = 1;
    return 0;
}

/* The grammar a reply must follow: llama-server's "grammar" (GBNF) and
 * "json_schema" (a schema object), OpenAI's "response_format": {"type":
 * "json_object"} (any JSON object; llama-server's "schema" beside it
 * narrows it), {"type": "json_schema", "json_schema": {"schema": ...}} or
 * "text" (none). One of them at most. A schema becomes GBNF here (its errors
 * are 400s); GBNF is checked when the server builds it for the model. */
static int get_grammar(const cJSON *root, srv_params *p, srv_error *err) {
    const cJSON *g = field(root, "grammar"), *js = field(root, "json_schema"), *rf = field(root, "response_format");
    const cJSON *schema = NULL;
    const char *from = NULL;
    int n = 0, object_only = 0;
    if (g) {
        if (!cJSON_IsString(g)) return bad_type(err, "grammar", "a string", g);
        if (g->valuestring[0]) n++, from = "grammar";
    }
    if (js) {
        if (!cJSON_IsObject(js) && !cJSON_IsBool(js)) return bad_type(err, "json_schema", "an object", js);
        n++, from = "json_schema", schema = js;
    }
    if (rf) {
        if (!cJSON_IsObject(rf)) return bad_type(err, "response_format", "an object", rf);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(rf, "type");
        if (!cJSON_IsString(t)) return bad_value(err, "response_format", "'type' must be 'text', 'json_object' or 'json_schema'.");
        if (!strcmp(t->valuestring, "json_object")) {
            n++, from = "response_format", object_only = 1;
            schema = field(rf, "schema");
        } else if (!strcmp(t->valuestring, "json_schema")) {
            const cJSON *o = field(rf, "json_schema");
            schema = o && cJSON_IsObject(o) ? field(o, "schema") : NULL;
            if (!schema) return bad_value(err, "response_format", "'json_schema' needs a 'json_schema' object with a 'schema'.");
            n++, from = "response_format";
        } else if (strcmp(t->valuestring, "text"))
            return bad_value(err, "response_format", "'type' must be 'text', 'json_object' or 'json_schema', not '%s'.",
                             t->valuestring);
    }
    if (n > 1 || (n == 1 && p->tool_forced != -1))
        return bad_value(err, from, "give one of 'grammar', 'json_schema', 'response_format' (json_object or "
                                    "json_schema) and a forced 'tool_choice'.");
    if (n == 0) return 0;
    p->grammar_param = from;
    if (g && !schema && !object_only) {
        if (!(p->grammar = strdup(g->valuestring))) return bad_value(err, "grammar", "out of memory");
        return 0;
    }
    if (!schema) {
        if (!(p->grammar = strdup(lb_grammar_json(object_only)))) return bad_value(err, from, "out of memory");
        return 0;
    }
    char *text = cJSON_PrintUnformatted(schema);
    if (!text) return bad_value(err, from, "out of memory");
    const lb_status st = lb_json_schema_to_grammar(text, strlen(text), &p->grammar);
    free(text);
    if (st) return bad_value(err, from, "%s", lb_last_error());
    return 0;
}

static int parse_fields(const cJSON *root, srv_kind kind, srv_params *p, srv_error *err) {
    if (!cJSON_IsObject(root)) {
        srv_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                      "The request body must be a JSON object, but it is %s.", type_name(root));
        return -1;
    }
    if (kind == SRV_TOKENIZE || kind == SRV_DETOKENIZE) return tokenize_fields(root, kind, p, err);
    const cJSON *v = field(root, "model");
    if (v) {
        if (!cJSON_IsString(v)) return bad_type(err, "model", "a string", v);
        if (!(p->model = dup_str(v->valuestring))) return oom(err);
    }
    if (kind == SRV_CHAT ? get_messages(root, p, err) : get_prompt(root, p, err)) return -1;
    if (kind == SRV_CHAT && (get_effort(root, p, err) || get_thinking(root, p, err) || get_tools(root, p, err)))
        return -1;
    if (get_bool(root, "stream", &p->stream, err)) return -1;
    if (get_bool(root, "cache_prompt", &p->cache_prompt, err)) return -1; /* llama-server's */
    if ((v = field(root, "stream_options"))) {
        if (!cJSON_IsObject(v)) return bad_type(err, "stream_options", "an object", v);
        if (get_bool(v, "include_usage", &p->include_usage, err)) return -1;
    }
    if (get_float(root, "temperature", 0, 2, &p->temperature, err)) return -1;
    if (get_float(root, "top_p", 0, 1, &p->top_p, err)) return -1;
    if (get_float(root, "min_p", 0, 1, &p->min_p, err)) return -1;
    if (get_float(root, "presence_penalty", -2, 2, &p->presence_penalty, err)) return -1;
    if (get_float(root, "frequency_penalty", -2, 2, &p->frequency_penalty, err)) return -1;
    if (get_float(root, "repeat_penalty", 0.01, 100, &p->repeat_penalty, err)) return -1; /* llama.cpp's */
    double x;
    int r;
    if ((r = get_int(root, "top_k", 0, INT_MAX, &x, err)) < 0) return -1;
    if (r) p->top_k = (int)x;
    /* max_tokens (completions; legacy in chat) or max_completion_tokens (chat) */
    const char *mt[2] = {"max_tokens", "max_completion_tokens"};
    for (int i = 0; i < (kind == SRV_CHAT ? 2 : 1); i++) {
        const cJSON *f = field(root, mt[i]);
        if (f && (!cJSON_IsNumber(f) || f->valuedouble != floor(f->valuedouble) || !isfinite(f->valuedouble)))
            return bad_type(err, mt[i], "an integer", f);
        const int echo = kind == SRV_COMPLETION && cJSON_IsTrue(field(root, "echo")); /* the prompt alone: 0 */
        if (f && f->valuedouble < !echo)
            return bad_value(err, mt[i], "expected a value >= %d, but got %.0f instead.", !echo, f->valuedouble);
        if (f) p->max_tokens = f->valuedouble > INT_MAX ? INT_MAX : (int)f->valuedouble;
    }
    /* any int64 or uint64 (the upper bound: the largest double below 2^64) */
    if ((r = get_int(root, "seed", -9223372036854775808.0, 18446744073709549568.0, &x, err)) < 0) return -1;
    if (r) {
        p->has_seed = 1;
        p->seed = x < 0 ? (uint64_t)(int64_t)x : (uint64_t)x;
    }
    if (get_stop(root, p, err)) return -1;
    if (get_logprobs(root, kind, p, err)) return -1;
    if (get_grammar(root, p, err)) return -1;
    if (kind == SRV_COMPLETION && get_bool(root, "echo", &p->echo, err)) return -1;
    if ((r = get_int(root, "n", 1, 1, &x, err)) < 0) {
        if (!strcmp(err->code, "invalid_value"))
            snprintf(err->message, sizeof err->message, "Invalid 'n': only n = 1 is supported.");
        return -1;
    }
    /* features that would change the answer's meaning: refused, not ignored */
    static const char *const unsupported[] = {"tools", "functions", "suffix", "echo", "best_of"};
    /* chat's tools are read above */
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        v = field(root, unsupported[i]);
        if (!v || (cJSON_IsBool(v) && !cJSON_IsTrue(v)) || (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0))
            continue;
        if (!strcmp(unsupported[i], "best_of") && cJSON_IsNumber(v) && v->valuedouble == 1) continue;
        if (!strcmp(unsupported[i], "suffix") && cJSON_IsString(v) && !v->valuestring[0]) continue;
        if (!strcmp(unsupported[i], "suffix") && kind == SRV_COMPLETION) { /* fill in the middle */
            if (!cJSON_IsString(v)) return bad_type(err, "suffix", "a string", v);
            if (p->echo) return bad_value(err, "suffix", "'echo' and 'suffix' cannot go together.");
            if (!(p->suffix = dup_str(v->valuestring))) return oom(err);
            continue;
        }
        if (!strcmp(unsupported[i], "echo") && kind == SRV_COMPLETION) continue; /* read above */
        if (!strcmp(unsupported[i], "tools") && kind == SRV_CHAT) continue;
        srv_error_set(err, 400, "invalid_request_error", "unsupported_parameter", unsupported[i],
                      "'%s' is not supported by lowbit serve.", unsupported[i]);
        return -1;
    }
    return 0;
}

int srv_parse_request(const char *body, size_t len, srv_kind kind, srv_params *p, srv_error *err) {
    memset(p, 0, sizeof *p);
    memset(err, 0, sizeof *err);
    p->kind = kind;
    p->temperature = 1.0f; /* OpenAI's defaults */
    p->top_p = 1.0f;
    p->repeat_penalty = 1.0f;
    p->max_tokens = kind == SRV_COMPLETION ? 16 : -1;
    p->cache_prompt = 1;
    p->thinking = p->reasoning_format = -1;
    p->tool_forced = -1;
    const char *end = NULL;
    if (!body) body = "", len = 0;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (root && end) /* only whitespace may follow the value */
        for (const char *q = end; q < body + len; q++)
            if (*q != ' ' && *q != '\t' && *q != '\r' && *q != '\n') {
                cJSON_Delete(root);
                root = NULL;
                break;
            }
    if (!root) {
        srv_error_set(err, 400, "invalid_request_error", "invalid_json", NULL,
                      "We could not parse the JSON body of your request: it is not valid JSON (or not one value).");
        return -1;
    }
    int rc = parse_fields(root, kind, p, err);
    cJSON_Delete(root);
    return rc;
}

void srv_params_free(srv_params *p) {
    if (!p) return;
    free(p->model);
    free(p->prompt);
    free(p->prompt_ids);
    for (int i = 0; i < p->n_msgs; i++) {
        free((char *)p->msgs[i].role);
        free((char *)p->msgs[i].content);
        for (int k = 0; k < p->msgs[i].n_calls; k++) {
            free((char *)p->msgs[i].calls[k].name);
            free((char *)p->msgs[i].calls[k].arguments);
            free((char *)p->msgs[i].calls[k].id);
        }
        free((char *)p->msgs[i].tool_call_id);
        free((void *)p->msgs[i].calls);
    }
    free(p->msgs);
    for (int i = 0; i < p->n_tools; i++) free(p->tools[i]), free(p->tool_names[i]);
    free(p->tools);
    free(p->tool_names);
    for (int i = 0; i < p->n_stop; i++) free(p->stop[i]);
    free(p->grammar);
    free(p->suffix);
    for (int i = 0; p->tool_schemas && i < p->n_tool_schemas; i++) free(p->tool_schemas[i]);
    free(p->tool_schemas);
    memset(p, 0, sizeof *p);
}
