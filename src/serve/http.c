/* HTTP with libmicrohttpd, one thread per connection: a handler may block
 * (waiting for a whole answer, or inside the server-sent-events reader for
 * the next tokens) without holding up other clients. While it waits it
 * looks at the client's socket every 100 ms: a client that has gone away
 * cancels its request, which frees the slot at the engine's next step.
 *
 * Routes: GET / (chat page), GET /health, GET /v1/models[/ID],
 * POST /v1/completions, POST /v1/chat/completions (also without /v1).
 * The API key (if set) guards every /v1/ route; bodies above max_body get 413 as soon
 * as their Content-Length (or their bytes) pass it. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/common.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "serve/serve.h"
#include "tokenizer/tokenizer.h"

struct srv_http {
    srv_http_opts o;
    struct MHD_Daemon *d;
    long created;
    atomic_int in_flight; /* completion requests queued and not yet answered to the end */
};

typedef enum {
    R_NONE, R_PAGE, R_HEALTH, R_MODELS, R_MODEL, R_PROPS, R_METRICS, R_COMPLETIONS, R_CHAT, R_TOKENIZE, R_DETOKENIZE,
    R_NOT_FOUND, R_BAD_METHOD
} route;

typedef struct {
    route rt;
    char *body;
    size_t len, cap;
    int rejected; /* a response was queued early (401, 413) */
    int too_big;  /* the body passed the limit while it came in */
    size_t dropped;
    int counted;  /* in h->in_flight until the request completes */
    double t0;
} conn_state;

/* ---- small helpers ---- */

static enum MHD_Result send_body(struct MHD_Connection *c, int status, const char *type, const char *body,
                                 size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, cJSON *root) {
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!s) return MHD_NO;
    enum MHD_Result ok = send_body(c, status, "application/json", s, strlen(s));
    free(s);
    return ok;
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, const srv_error *e, const char *method,
                                  const char *url) {
    char *s = srv_error_json(e);
    if (!s) return MHD_NO;
    if (h->o.verbose || e->status >= 500)
        fprintf(stderr, "lowbit serve: %s %s -> %d %s\n", method, url, e->status, e->message);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_COPY);
    free(s);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (e->status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (e->status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (e->status == 405) MHD_add_response_header(r, "Allow", "GET, POST");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)e->status, r);
    MHD_destroy_response(r);
    return ok;
}

/* The client closed its end (or the socket broke). */
static int client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd p = {ci->connect_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
    if (p.revents & POLLIN) {
        char b;
        ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    return 0;
}

static void make_id(char *out, size_t cap, const char *prefix) {
    static atomic_uint_fast64_t counter;
    uint64_t x = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (atomic_fetch_add(&counter, 1) + 1) * 0xD1B54A32D192ED03ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    snprintf(out, cap, "%s%016llx", prefix, (unsigned long long)x);
}

/* Constant-time comparison of the Authorization header with "Bearer KEY". */
static int key_ok(srv_http *h, struct MHD_Connection *c) {
    if (!h->o.api_key) return 1;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7) != 0) return 0;
    const char *got = auth + 7, *want = h->o.api_key;
    size_t gl = strlen(got), wl = strlen(want);
    unsigned diff = gl != wl;
    for (size_t i = 0; i < wl; i++) diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? got[i] : 0);
    return diff == 0;
}

static route route_of(const char *method, const char *url) {
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strncmp(url, "/v1/", 4)) url += 3; /* "/v1/models" -> "/models" */
    route r = R_NOT_FOUND;
    int want_get = 1;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) r = R_PAGE;
    else if (!strcmp(url, "/health")) r = R_HEALTH;
    else if (!strcmp(url, "/models")) r = R_MODELS;
    else if (!strncmp(url, "/models/", 8)) r = R_MODEL;
    else if (!strcmp(url, "/props")) r = R_PROPS; /* llama-server's */
    else if (!strcmp(url, "/metrics")) r = R_METRICS;
    else if (!strcmp(url, "/completions")) r = R_COMPLETIONS, want_get = 0;
    else if (!strcmp(url, "/chat/completions")) r = R_CHAT, want_get = 0;
    else if (!strcmp(url, "/tokenize")) r = R_TOKENIZE, want_get = 0; /* llama-server's */
    else if (!strcmp(url, "/detokenize")) r = R_DETOKENIZE, want_get = 0;
    else return R_NOT_FOUND;
    if (want_get ? !get : !post) return R_BAD_METHOD;
    return r;
}

/* ---- GET routes ---- */

static cJSON *model_object(srv_http *h) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", h->o.model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)h->created);
    cJSON_AddStringToObject(m, "owned_by", "lowbit");
    return m;
}

/* llama-server's /props: what its web UI and tools read (the context, the
 * slots, the model, the chat template's text, BOS/EOS), and lowbit's own:
 * the template family it formats and the reasoning defaults */
static enum MHD_Result props(srv_http *h, struct MHD_Connection *c) {
    const lb_model *m = h->o.model;
    cJSON *o = cJSON_CreateObject(), *g = cJSON_AddObjectToObject(o, "default_generation_settings");
    cJSON_AddNumberToObject(g, "n_ctx", srv_engine_n_ctx(h->o.engine));
    cJSON *p = cJSON_AddObjectToObject(g, "params");
    cJSON_AddNumberToObject(p, "temperature", 1.0); /* OpenAI's defaults, as requests get them */
    cJSON_AddNumberToObject(p, "top_p", 1.0);
    cJSON_AddNumberToObject(p, "min_p", 0.0);
    cJSON_AddNumberToObject(p, "top_k", 0);
    cJSON_AddNumberToObject(p, "repeat_penalty", 1.0);
    srv_stats st;
    srv_engine_stats(h->o.engine, &st);
    cJSON_AddNumberToObject(o, "total_slots", st.idle + st.busy);
    cJSON_AddStringToObject(o, "model_path", h->o.model_path ? h->o.model_path : "");
    cJSON_AddStringToObject(o, "model_alias", h->o.model_id);
    const char *tmpl = m->gguf ? gguf_get_str(m->gguf, "tokenizer.chat_template") : NULL;
    cJSON_AddStringToObject(o, "chat_template", tmpl ? tmpl : "");
    if (h->o.tmpl) cJSON_AddStringToObject(o, "chat_template_family", lb_chat_family_name(h->o.tmpl->family));
    else cJSON_AddNullToObject(o, "chat_template_family");
    cJSON_AddBoolToObject(o, "thinking_switch", h->o.tmpl && h->o.tmpl->thinking_switch);
    cJSON_AddStringToObject(o, "reasoning_format", h->o.reasoning_format ? "deepseek" : "none");
    const int bos = lb_token_bos(m), eos = lb_token_eos(m);
    cJSON_AddStringToObject(o, "bos_token", bos >= 0 ? lb_tokenizer_token_text(m->tok, bos) : "");
    cJSON_AddStringToObject(o, "eos_token", eos >= 0 ? lb_tokenizer_token_text(m->tok, eos) : "");
    cJSON_AddStringToObject(o, "build_info", "lowbit");
    return send_json(c, 200, o);
}

/* Prometheus text metrics under llama-server's names (llamacpp:...), and
 * lowbit's prompt cache counters */
static enum MHD_Result metrics(srv_http *h, struct MHD_Connection *c) {
    srv_stats st;
    srv_engine_stats(h->o.engine, &st);
    const struct { const char *name, *type, *help; double v; } ms[] = {
        {"llamacpp:prompt_tokens_total", "counter", "Prompt tokens evaluated.", (double)st.prompt_tokens},
        {"llamacpp:tokens_predicted_total", "counter", "Tokens generated.", (double)st.generated_tokens},
        {"llamacpp:n_decode_total", "counter", "Forward passes (engine steps).", (double)st.steps},
        {"llamacpp:requests_processing", "gauge", "Requests in a slot.", (double)st.busy},
        {"llamacpp:requests_deferred", "gauge", "Requests waiting for a slot.", (double)st.queued},
        {"lowbit:prompt_tokens_cached_total", "counter", "Prompt tokens taken from a slot's cache.",
         (double)st.cached_tokens},
        {"lowbit:prompt_tokens_shared_total", "counter", "Of those, copied from another slot's cache.",
         (double)st.shared_tokens},
        {"lowbit:max_batch_sequences", "gauge", "The most sequences one forward pass has held.",
         (double)st.max_batch_seqs},
    };
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        char line[512];
        const int n = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.0f\n", ms[i].name, ms[i].help,
                               ms[i].name, ms[i].type, ms[i].name, ms[i].v);
        if (n > 0) srv_buf_append(&text, &len, &cap, line, (size_t)LB_MIN(n, (int)sizeof line - 1));
    }
    enum MHD_Result ok = send_body(c, 200, "text/plain; version=0.0.4", text ? text : "", len);
    free(text);
    return ok;
}

static enum MHD_Result get_route(srv_http *h, struct MHD_Connection *c, route rt, const char *url) {
    if (rt == R_PAGE) {
        struct MHD_Response *r =
            MHD_create_response_from_buffer(lb_serve_page_len, (void *)lb_serve_page, MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'");
        enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ok;
    }
    if (rt == R_HEALTH) {
        srv_stats st;
        srv_engine_stats(h->o.engine, &st);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "ok");
        cJSON_AddNumberToObject(o, "slots_idle", st.idle);
        cJSON_AddNumberToObject(o, "slots_processing", st.busy);
        cJSON_AddNumberToObject(o, "requests_queued", st.queued);
        cJSON_AddNumberToObject(o, "steps", (double)st.steps);
        cJSON_AddNumberToObject(o, "max_batch_sequences", st.max_batch_seqs);
        cJSON_AddNumberToObject(o, "prompt_tokens", (double)st.prompt_tokens);
        cJSON_AddNumberToObject(o, "prompt_tokens_cached", (double)st.cached_tokens);
        cJSON_AddNumberToObject(o, "prompt_tokens_shared", (double)st.shared_tokens);
        cJSON_AddNumberToObject(o, "generated_tokens", (double)st.generated_tokens);
        return send_json(c, 200, o);
    }
    if (rt == R_PROPS) return props(h, c);
    if (rt == R_METRICS) return metrics(h, c);
    if (rt == R_MODELS) {
        cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
        cJSON_AddStringToObject(o, "object", "list");
        cJSON_AddItemToArray(data, model_object(h));
        return send_json(c, 200, o);
    }
    /* R_MODEL */
    const char *id = strrchr(url, '/') + 1;
    if (strcmp(id, h->o.model_id) != 0) {
        srv_error e;
        srv_error_set(&e, 404, "invalid_request_error", "model_not_found", "model",
                      "The model '%.200s' does not exist (this server has '%s').", id, h->o.model_id);
        return send_error(h, c, &e, "GET", url);
    }
    return send_json(c, 200, model_object(h));
}

/* ---- completions ---- */

/* Tokens of a prompt: chat templates and raw prompts alike may write special
 * tokens' texts (llama-server parses them too); BOS as the model adds it,
 * unless the text begins with the BOS text (templates that write it). */
static int tokenize(srv_http *h, const char *text, int32_t **ids, int *n, srv_error *err) {
    if (lb_chat_tokenize(h->o.model, text, ids, n)) {
        srv_error_set(err, 400, "invalid_request_error", "invalid_value", "prompt", "cannot tokenize the prompt: %s",
                      lb_last_error());
        return -1;
    }
    return 0;
}

/* The prompt of a fill-in-the-middle request: BOS (where the model adds
 * one), then the model's prefix marker, the text before the gap, its suffix
 * marker, the text after it and its middle marker; both texts tokenized as
 * plain text. */
static int fim_prompt(srv_http *h, const char *pre, const char *suf, int32_t **ids, int *n, srv_error *err) {
    int32_t fim[3];
    if (lb_token_fim(h->o.model, fim)) {
        srv_error_set(err, 400, "invalid_request_error", "unsupported_parameter", "suffix",
                      "'suffix' (fill in the middle) needs a model with fill-in-the-middle tokens: %s", lb_last_error());
        return -1;
    }
    const size_t a = strlen(pre), b = strlen(suf);
    int32_t *t = malloc((a + b + 8) * sizeof *t);
    int k = 0, got = 0;
    if (!t) {
        srv_error_set(err, 500, "server_error", "out_of_memory", NULL, "out of memory");
        return -1;
    }
    if (lb_add_bos_default(h->o.model) && lb_token_bos(h->o.model) >= 0) t[k++] = lb_token_bos(h->o.model);
    t[k++] = fim[0];
    lb_status s = lb_tokenize(h->o.model, pre, a, 0, t + k, (int)(a + 1), &got);
    if (!s && got > (int)(a + 1)) s = lb_fail(LB_ERR_ARG, "more tokens than bytes");
    k += s ? 0 : got;
    t[k++] = fim[1];
    if (!s) s = lb_tokenize(h->o.model, suf, b, 0, t + k, (int)(b + 1), &got);
    if (!s && got > (int)(b + 1)) s = lb_fail(LB_ERR_ARG, "more tokens than bytes");
    k += s ? 0 : got;
    t[k++] = fim[2];
    if (s) {
        free(t);
        srv_error_set(err, 400, "invalid_request_error", "invalid_value", "prompt", "cannot tokenize the prompt: %s",
                      lb_last_error());
        return -1;
    }
    *ids = t, *n = k;
    return 0;
}

typedef struct {
    srv_http *h;
    struct MHD_Connection *conn;
    srv_req *r;
    srv_kind kind;
    char id[48];
    long created;
    int include_usage, n_prompt;
    char *out; /* SSE bytes not sent yet */
    size_t out_len, out_off, out_cap;
    size_t have;
    int started, finished;
    int logprobs; /* the request asked for them */
    int tools;         /* chat with "tools": a reply's <tool_call> blocks become tool_calls */
    char **tool_names; /* the tools' names (fenced JSON calls must name one) */
    int n_tool_names;
    char *held;        /* text held back: a possible start of "<tool_call>", or all of it from there on */
    size_t held_len, held_cap;
    int in_call;       /* a "<tool_call>" came (or the reply opened with '{'): the rest waits for the end */
    int sent_text;     /* content other than whitespace went out */
    int32_t *echo_ids; /* completions' "echo": the prompt, sent first (with logprobs: once they are in) */
    int n_echo_ids;
    size_t echo_len;   /* the echoed text's length: the reply's offsets come after it */
    double t0;
} stream_state;

static void out_add(stream_state *st, const char *s, size_t n) {
    if (st->out_off == st->out_len) st->out_off = st->out_len = 0;
    if (st->out_len + n > st->out_cap) {
        size_t cap = st->out_cap ? st->out_cap : 1024;
        while (cap < st->out_len + n) cap *= 2;
        char *o = realloc(st->out, cap);
        if (!o) return;
        st->out = o;
        st->out_cap = cap;
    }
    memcpy(st->out + st->out_len, s, n);
    st->out_len += n;
}

static void out_event(stream_state *st, cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return;
    out_add(st, "data: ", 6);
    out_add(st, s, strlen(s));
    out_add(st, "\n\n", 2);
    free(s);
}

static cJSON *usage_object(const srv_take *tk) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", tk->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", tk->n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", tk->n_prompt + tk->n_gen);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details"); /* OpenAI's: the prompt's cached part */
    cJSON_AddNumberToObject(d, "cached_tokens", tk->n_cached);
    return u;
}

/* The envelope of a response or chunk; its choices array in *choices. */
static cJSON *envelope(srv_http *h, srv_kind kind, int chunk, const char *id, long created, cJSON **choices) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", kind == SRV_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                          : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)created);
    cJSON_AddStringToObject(o, "model", h->o.model_id);
    cJSON_AddNullToObject(o, "system_fingerprint");
    *choices = cJSON_AddArrayToObject(o, "choices");
    return o;
}

/* a token's text for JSON: invalid UTF-8 (a piece of a character) replaced;
 * malloc'ed, NULL out of memory */
static char *token_text(srv_http *h, int32_t t) {
    size_t len, n;
    const char *piece = lb_token_to_piece(h->o.model, t, &len);
    return srv_utf8_clean(piece, len, &n);
}

/* "token", "logprob" and "bytes" (the raw bytes) of a token */
static void add_token(srv_http *h, cJSON *o, int32_t t, float logprob) {
    char *text = token_text(h, t);
    cJSON_AddStringToObject(o, "token", text ? text : "");
    free(text);
    cJSON_AddNumberToObject(o, "logprob", logprob);
    size_t len;
    const char *piece = lb_token_to_piece(h->o.model, t, &len);
    cJSON *b = cJSON_AddArrayToObject(o, "bytes");
    for (size_t i = 0; i < len; i++) cJSON_AddItemToArray(b, cJSON_CreateNumber((unsigned char)piece[i]));
}

/* Appends n entries to a completions "logprobs" object, their offsets + shift. */
static void completion_entries(srv_http *h, cJSON *o, const srv_logprob *lp, int n, size_t shift) {
    cJSON *tok = cJSON_GetObjectItem(o, "tokens"), *tlp = cJSON_GetObjectItem(o, "token_logprobs");
    cJSON *top = cJSON_GetObjectItem(o, "top_logprobs"), *off = cJSON_GetObjectItem(o, "text_offset");
    for (int i = 0; i < n; i++) {
        char *text = token_text(h, lp[i].token);
        cJSON_AddItemToArray(tok, cJSON_CreateString(text ? text : ""));
        free(text);
        cJSON_AddItemToArray(tlp, cJSON_CreateNumber(lp[i].logprob));
        cJSON *alt = cJSON_CreateObject();
        for (int j = 0; j < lp[i].n_top; j++) {
            char *name = token_text(h, lp[i].top[j]);
            if (name && !cJSON_GetObjectItemCaseSensitive(alt, name)) /* two tokens of one text: the likelier */
                cJSON_AddNumberToObject(alt, name, lp[i].top_logprob[j]);
            free(name);
        }
        cJSON_AddItemToArray(top, alt);
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(lp[i].offset + shift)));
    }
}

/* "echo": the prompt's text, decoded from its tokens as the tokenizer does
 * (an SPM vocabulary's added leading space dropped; malloc'ed, *len bytes,
 * invalid UTF-8 replaced), and with plp (the entries of tokens 1..n-1, or
 * NULL) a completions "logprobs" object that begins with them: the first
 * token's log probability and alternatives are null, as in OpenAI's API.
 * Each token's offset is where its piece (or the piece less the dropped
 * space) stands in the text. */
static char *echo_text(srv_http *h, const int32_t *ids, int n, size_t *len, srv_logprob *plp, int n_plp,
                       cJSON **lp_out) {
    char *raw = NULL, *text;
    size_t raw_len = 0;
    if (lb_tokenizer_decode(h->o.model->tok, ids, n, &raw, &raw_len)) raw = NULL, raw_len = 0;
    size_t *off = malloc((size_t)LB_MAX(n, 1) * sizeof *off), pos = 0;
    for (int i = 0; off && i < n; i++) {
        size_t pl;
        const char *piece = lb_token_to_piece(h->o.model, ids[i], &pl);
        off[i] = pos;
        if (pos + pl <= raw_len && !memcmp(raw + pos, piece, pl)) pos += pl;
        else if (pl && piece[0] == ' ' && pos + pl - 1 <= raw_len && !memcmp(raw + pos, piece + 1, pl - 1)) pos += pl - 1;
    }
    text = srv_utf8_clean(raw ? raw : "", raw_len, len);
    free(raw);
    if (lp_out && off) {
        cJSON *o = *lp_out = cJSON_CreateObject();
        cJSON *tok = cJSON_AddArrayToObject(o, "tokens"), *tlp = cJSON_AddArrayToObject(o, "token_logprobs");
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs"), *to = cJSON_AddArrayToObject(o, "text_offset");
        if (n > 0) {
            char *t0 = token_text(h, ids[0]);
            cJSON_AddItemToArray(tok, cJSON_CreateString(t0 ? t0 : ""));
            free(t0);
            cJSON_AddItemToArray(tlp, cJSON_CreateNull());
            cJSON_AddItemToArray(top, cJSON_CreateNull());
            cJSON_AddItemToArray(to, cJSON_CreateNumber(0));
        }
        for (int i = 0; i < n_plp && i + 1 < n; i++) plp[i].offset = off[i + 1];
        completion_entries(h, o, plp, LB_MIN(n_plp, LB_MAX(n - 1, 0)), 0);
    }
    free(off);
    return text;
}

/* A choice's "logprobs" for n tokens: chat's {"content": [{token, logprob,
 * bytes, top_logprobs: [...]}]}, or the completions API's {tokens,
 * token_logprobs, top_logprobs: [{token: logprob}], text_offset}. */
static cJSON *logprobs_json(srv_http *h, srv_kind kind, const srv_logprob *lp, int n) {
    cJSON *o = cJSON_CreateObject();
    if (kind == SRV_CHAT) {
        cJSON *c = cJSON_AddArrayToObject(o, "content");
        for (int i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            add_token(h, e, lp[i].token, lp[i].logprob);
            cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (int j = 0; j < lp[i].n_top; j++) {
                cJSON *a = cJSON_CreateObject();
                add_token(h, a, lp[i].top[j], lp[i].top_logprob[j]);
                cJSON_AddItemToArray(top, a);
            }
            cJSON_AddItemToArray(c, e);
        }
        cJSON_AddNullToObject(o, "refusal");
        return o;
    }
    cJSON_AddArrayToObject(o, "tokens");
    cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON_AddArrayToObject(o, "text_offset");
    completion_entries(h, o, lp, n, 0);
    return o;
}

/* One streamed choice: text (may be NULL) and finish (NULL while running);
 * a chat delta's field is "content", or "reasoning_content" for gpt-oss's
 * reasoning (as llama.cpp's server sends it); lp: its tokens' log
 * probabilities (n_lp of them, when the request asked). */
static void chunk_event_lp(stream_state *st, const char *field, const char *text, const char *finish, int role,
                           const srv_logprob *lp, int n_lp) {
    cJSON *choices, *o = envelope(st->h, st->kind, 1, st->id, st->created, &choices);
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    if (st->kind == SRV_CHAT) {
        cJSON *d = cJSON_AddObjectToObject(ch, "delta");
        if (role) cJSON_AddStringToObject(d, "role", "assistant");
        if (text) cJSON_AddStringToObject(d, field, text);
    } else {
        cJSON_AddStringToObject(ch, "text", text ? text : "");
    }
    if (lp && n_lp) cJSON_AddItemToObject(ch, "logprobs", logprobs_json(st->h, st->kind, lp, n_lp));
    else cJSON_AddNullToObject(ch, "logprobs");
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    out_event(st, o);
}
static void chunk_event_as(stream_state *st, const char *field, const char *text, const char *finish, int role) {
    chunk_event_lp(st, field, text, finish, role, NULL, 0);
}
static void chunk_event(stream_state *st, const char *text, const char *finish, int role) {
    chunk_event_as(st, "content", text, finish, role);
}

static void log_done(srv_http *h, const char *what, int status, int n_prompt, int n_gen, double t0) {
    fprintf(stderr, "lowbit serve: %s %d: prompt %d + %d generated tokens in %.2f s\n", what, status, n_prompt, n_gen,
            lb_time_s() - t0);
    (void)h;
}

/* completions' "echo" when streaming: the prompt's text in one event first,
 * with its tokens' logprobs when asked (plp: tokens 1..n-1) */
static void echo_event(stream_state *st, srv_logprob *plp, int n_plp) {
    cJSON *elp = NULL;
    char *et = echo_text(st->h, st->echo_ids, st->n_echo_ids, &st->echo_len, plp, n_plp, st->logprobs ? &elp : NULL);
    if (!et) st->echo_len = 0;
    cJSON *choices, *o = envelope(st->h, st->kind, 1, st->id, st->created, &choices);
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    cJSON_AddStringToObject(ch, "text", et ? et : "");
    cJSON_AddItemToObject(ch, "logprobs", elp ? elp : cJSON_CreateNull());
    cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    out_event(st, o);
    free(et);
    free(st->echo_ids);
    st->echo_ids = NULL;
}

/* a tool call's id: "call_" and 24 letters and digits; for Mistral's
 * templates, which take only 9-character ids back, 9 letters and digits */
static void call_id(char out[32], int nine) {
    static _Atomic unsigned long long counter;
    unsigned long long x = (unsigned long long)time(NULL) * 0x9E3779B97F4A7C15ull + ++counter * 0xBF58476D1CE4E5B9ull;
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const int pre = nine ? 0 : 5, len = nine ? 9 : 24;
    memcpy(out, "call_", (size_t)pre);
    for (int i = 0; i < len; i++) {
        x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
        out[pre + i] = al[x % 62];
    }
    out[pre + len] = 0;
}

static int nine_char_ids(const srv_http *h) {
    return h->o.tmpl && (h->o.tmpl->family == LB_CHAT_MISTRAL_V3 || h->o.tmpl->family == LB_CHAT_MISTRAL_V3_TEKKEN);
}

/* OpenAI's tool_calls array: [{(index), id, type, function: {name, arguments}}] */
static cJSON *tool_calls_json(char **names, char **args, int n, int with_index, int nine) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *c = cJSON_CreateObject(), *f;
        char id[32];
        call_id(id, nine);
        if (with_index) cJSON_AddNumberToObject(c, "index", i);
        cJSON_AddStringToObject(c, "id", id);
        cJSON_AddStringToObject(c, "type", "function");
        f = cJSON_AddObjectToObject(c, "function");
        cJSON_AddStringToObject(f, "name", names[i]);
        cJSON_AddStringToObject(f, "arguments", args[i]);
        cJSON_AddItemToArray(a, c);
    }
    return a;
}

static void free_calls(char **names, char **args, int n) {
    for (int i = 0; i < n; i++) free(names[i]), free(args[i]);
    free(names);
    free(args);
}

/* A streamed chat's content, with tools offered: text goes out unless it may
 * begin "<tool_call>" or a fenced block (held until it cannot), and from one
 * on everything waits for the end (tool_calls_end); so does a reply that
 * opens with '{' or '[' (it may be one call's JSON alone, Llama 3.1's way,
 * or Mistral's list of calls) */
static void content_event(stream_state *st, const char *text, const srv_logprob *lp, int n_lp) {
    if (!st->tools) {
        chunk_event_lp(st, "content", text, NULL, 0, lp, n_lp);
        return;
    }
    static const char *const opens[2] = {"<tool_call>", "```"}; /* a call, or a fenced block that may be one */
    srv_buf_append(&st->held, &st->held_len, &st->held_cap, text, strlen(text));
    size_t send = 0;
    if (!st->in_call && !st->sent_text && st->held) { /* a reply that opens with '{' may be one call's JSON */
        size_t a = 0;
        while (a < st->held_len && strchr(" \n\r\t", st->held[a])) a++;
        if (a == st->held_len) { /* only whitespace so far: wait */
            if (n_lp) chunk_event_lp(st, "content", "", NULL, 0, lp, n_lp);
            return;
        }
        if (st->held[a] == '{' || st->held[a] == '[') st->in_call = 1;
    }
    if (!st->in_call && st->held) {
        const char *o = NULL;
        for (int k = 0; k < 2; k++) {
            const char *ok = strstr(st->held, opens[k]);
            if (ok && (!o || ok < o)) o = ok;
        }
        if (o) {
            send = (size_t)(o - st->held);
            st->in_call = 1;
        } else { /* all but the longest tail that begins one */
            size_t keep = 0;
            for (int j = 0; j < 2; j++)
                for (size_t k = LB_MIN(strlen(opens[j]) - 1, st->held_len); k > keep; k--)
                    if (!memcmp(st->held + st->held_len - k, opens[j], k)) keep = k;
            send = st->held_len - keep;
        }
    }
    char *out = malloc(send + 1);
    if (out) {
        memcpy(out, st->held, send);
        out[send] = 0;
        memmove(st->held, st->held + send, st->held_len - send + 1);
        st->held_len -= send;
    }
    if (out && *out) st->sent_text = 1;
    if ((out && *out) || n_lp) chunk_event_lp(st, "content", out ? out : "", NULL, 0, lp, n_lp);
    free(out);
}

/* the end of a streamed chat with tools: the held text's calls as one
 * tool_calls delta (what is left of the text as content before it);
 * returns the finish reason */
static const char *tool_calls_end(stream_state *st, const char *finish) {
    if (!st->tools || !st->held_len) return finish;
    char **names, **args;
    int n;
    srv_parse_tool_calls(st->held, &st->held_len, st->tool_names, st->n_tool_names, &names, &args, &n);
    if (st->held_len) chunk_event(st, st->held, NULL, 0);
    st->held_len = 0;
    if (!n) return finish;
    cJSON *choices, *o = envelope(st->h, st->kind, 1, st->id, st->created, &choices);
    cJSON *ch = cJSON_CreateObject(), *d = cJSON_AddObjectToObject(ch, "delta");
    cJSON_AddNumberToObject(ch, "index", 0);
    cJSON_AddItemToObject(d, "tool_calls", tool_calls_json(names, args, n, 1, nine_char_ids(st->h)));
    cJSON_AddNullToObject(ch, "logprobs");
    cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    out_event(st, o);
    free_calls(names, args, n);
    return "tool_calls";
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_state *st = cls;
    while (st->out_off == st->out_len) {
        if (st->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!st->started) {
            st->started = 1;
            if (st->kind == SRV_CHAT) chunk_event(st, "", NULL, 1);
            if (st->echo_ids && !st->logprobs) echo_event(st, NULL, 0);
            continue;
        }
        srv_take tk;
        const size_t base = st->have; /* where this take's text begins in the reply */
        srv_req_take(st->h->o.engine, st->r, &st->have, 100, &tk);
        if (st->echo_ids && (tk.prompt_lp || tk.done)) echo_event(st, tk.prompt_lp, tk.n_prompt_lp);
        free(tk.prompt_lp);
        for (int i = 0; i < tk.n_lp; i++) tk.lp[i].offset += st->echo_len;
        if (tk.reasoning_len) chunk_event_as(st, "reasoning_content", tk.reasoning, NULL, 0);
        free(tk.reasoning);
        size_t from = 0;
        int lp0 = 0; /* the entries not sent yet: each goes with the event holding its first byte */
        for (int i = 0; i <= tk.n_cuts && from < tk.delta_len; i++) { /* an event per step's text */
            const size_t to = i < tk.n_cuts && tk.cuts[i] <= tk.delta_len ? tk.cuts[i] : tk.delta_len;
            if (to <= from) continue;
            int lp1 = lp0;
            while (lp1 < tk.n_lp && (tk.lp[lp1].offset < st->echo_len + base + to || to == tk.delta_len)) lp1++;
            const char keep = tk.delta[to];
            tk.delta[to] = 0;
            content_event(st, tk.delta + from, tk.lp ? tk.lp + lp0 : NULL, lp1 - lp0);
            tk.delta[to] = keep;
            from = to, lp0 = lp1;
        }
        if (lp0 < tk.n_lp) chunk_event_lp(st, "content", "", NULL, 0, tk.lp + lp0, tk.n_lp - lp0);
        free(tk.delta);
        free(tk.cuts);
        free(tk.lp);
        if (tk.done) {
            if (tk.err.status) {
                char *e = srv_error_json(&tk.err);
                if (e) {
                    out_add(st, "data: ", 6);
                    out_add(st, e, strlen(e));
                    out_add(st, "\n\n", 2);
                }
                free(e);
            } else {
                chunk_event(st, st->kind == SRV_CHAT ? NULL : "", tool_calls_end(st, tk.finish), 0);
                if (st->include_usage) {
                    cJSON *choices, *o = envelope(st->h, st->kind, 1, st->id, st->created, &choices);
                    cJSON_AddItemToObject(o, "usage", usage_object(&tk));
                    out_event(st, o);
                }
            }
            out_add(st, "data: [DONE]\n\n", 14);
            st->finished = 1;
            log_done(st->h, st->kind == SRV_CHAT ? "chat (stream)" : "completion (stream)",
                     tk.err.status ? tk.err.status : 200, tk.n_prompt, tk.n_gen, st->t0);
            continue;
        }
        if (!tk.delta_len && !tk.reasoning_len && client_gone(st->conn)) {
            srv_req_cancel(st->h->o.engine, st->r);
            if (st->h->o.verbose) fprintf(stderr, "lowbit serve: stream client disconnected\n");
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = LB_MIN(max, st->out_len - st->out_off);
    memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_state *st = cls;
    srv_req_cancel(st->h->o.engine, st->r); /* no-op when it finished */
    srv_req_release(st->h->o.engine, st->r);
    free(st->echo_ids);
    free(st->held);
    for (int i = 0; i < st->n_tool_names; i++) free(st->tool_names[i]);
    free(st->tool_names);
    free(st->out);
    free(st);
}

static enum MHD_Result completion(srv_http *h, struct MHD_Connection *c, srv_kind kind, conn_state *cs,
                                  const char *method, const char *url) {
    srv_params p;
    srv_error err;
    int32_t *ids = NULL;
    int n_ids = 0;
    char *text = NULL;
    srv_req *r = NULL;
    enum MHD_Result ok = MHD_NO;
    if (srv_parse_request(cs->body, cs->len, kind, &p, &err)) goto fail;
    if (p.model && strcmp(p.model, h->o.model_id) && strcmp(p.model, h->o.model_path)) {
        srv_error_set(&err, 404, "invalid_request_error", "model_not_found", "model",
                      "The model '%.200s' does not exist (this server has '%s').", p.model, h->o.model_id);
        goto fail;
    }
    if (kind == SRV_CHAT) {
        if (!h->o.tmpl) {
            srv_error_set(&err, 400, "invalid_request_error", "no_chat_template", "messages",
                          "This server has no chat template (%s): start it with --chat-template NAME, or use "
                          "/v1/completions.",
                          h->o.tmpl_error ? h->o.tmpl_error : "none");
            goto fail;
        }
        lb_chat_template t = *h->o.tmpl; /* the request's reasoning settings, else the server's */
        if (p.reasoning_effort[0]) lb_chat_set_reasoning_effort(&t, p.reasoning_effort);
        if (p.thinking >= 0) lb_chat_set_thinking(&t, p.thinking);
        const int style = t.family == LB_CHAT_LLAMA31                                              ? SRV_TOOLS_LLAMA
                          : t.family == LB_CHAT_MISTRAL_V3 || t.family == LB_CHAT_MISTRAL_V3_TEKKEN ? SRV_TOOLS_MISTRAL
                                                                                                    : SRV_TOOLS_HERMES;
        if (t.tool_calls && srv_tool_grammar(&p, style, &err)) goto fail;
        /* a grammar holds the whole reply: no reasoning before it (thinking off where the template has the
         * switch, and the reply is the content, not split) and no harmony channels */
        if (p.grammar && t.family == LB_CHAT_GPT_OSS) {
            srv_error_set(&err, 400, "invalid_request_error", "unsupported_parameter", p.grammar_param,
                          "'%s' is not supported with gpt-oss's harmony format (its channels are not text a grammar "
                          "can hold).", p.grammar_param);
            goto fail;
        }
        if (p.grammar && t.thinking_switch) {
            if (p.thinking == 1) {
                srv_error_set(&err, 400, "invalid_request_error", "unsupported_parameter", p.grammar_param,
                              "'%s' holds the whole reply, reasoning included: ask with thinking off "
                              "(chat_template_kwargs enable_thinking false) or leave it to the server.",
                              p.grammar_param);
                goto fail;
            }
            lb_chat_set_thinking(&t, 0);
        }
        int tool_msgs = 0;
        for (int i = 0; i < p.n_msgs; i++) tool_msgs += p.msgs[i].n_calls > 0 || !strcmp(p.msgs[i].role, "tool");
        if ((p.n_tools || tool_msgs) && !t.tool_calls) {
            srv_error_set(&err, 400, "invalid_request_error", "unsupported_parameter", p.n_tools ? "tools" : "messages",
                          "This model's chat template (%s) does not take tools: lowbit formats tools, tool calls and "
                          "tool results for Qwen 2.5 / Qwen 3, Llama 3.1 / 3.2 and Mistral v3 (Nemo, Large 2407) "
                          "templates.",
                          lb_chat_family_name(t.family));
            goto fail;
        }
        t.tools = (const char *const *)p.tools;
        t.n_tools = p.n_tools;
        if (lb_chat_apply(&t, p.msgs, p.n_msgs, NULL, &text, NULL)) {
            srv_error_set(&err, 400, "invalid_request_error", "invalid_value", "messages",
                          "The chat template refused the conversation: %s", lb_last_error());
            goto fail;
        }
        if (tokenize(h, text, &ids, &n_ids, &err)) goto fail;
        p.harmony = h->o.tmpl->family == LB_CHAT_GPT_OSS;
        if (!p.harmony && !p.grammar && (p.reasoning_format >= 0 ? p.reasoning_format : h->o.reasoning_format))
            p.think = 1 + lb_chat_prompt_opens_think(&t);
    } else if (p.prompt_is_ids) {
        if (p.suffix) {
            srv_error_set(&err, 400, "invalid_request_error", "unsupported_parameter", "suffix",
                          "'suffix' (fill in the middle) needs a text prompt, not token ids.");
            goto fail;
        }
        const int V = lb_model_n_vocab(h->o.model);
        for (int i = 0; i < p.n_prompt_ids; i++)
            if (p.prompt_ids[i] >= V) {
                srv_error_set(&err, 400, "invalid_request_error", "invalid_value", "prompt",
                              "Invalid 'prompt': token id %d is outside the vocabulary (0..%d).", p.prompt_ids[i],
                              V - 1);
                goto fail;
            }
        ids = p.prompt_ids;
        n_ids = p.n_prompt_ids;
        p.prompt_ids = NULL;
    } else if (p.suffix) { /* fill in the middle: [BOS] <PRE> prompt <SUF> suffix <MID>, as llama-server's infill */
        if (fim_prompt(h, p.prompt, p.suffix, &ids, &n_ids, &err)) goto fail;
    } else if (tokenize(h, p.prompt, &ids, &n_ids, &err)) {
        goto fail;
    }
    if (n_ids == 0) {
        srv_error_set(&err, 400, "invalid_request_error", "invalid_value", kind == SRV_CHAT ? "messages" : "prompt",
                      "The prompt is empty (and this model adds no BOS token).");
        goto fail;
    }
    const int n_ctx = srv_engine_n_ctx(h->o.engine);
    if (n_ids >= n_ctx) {
        srv_error_set(&err, 400, "invalid_request_error", "context_length_exceeded",
                      kind == SRV_CHAT ? "messages" : "prompt",
                      "This model's maximum context length is %d tokens, but your prompt has %d tokens (at least "
                      "one more is needed to generate).",
                      n_ctx, n_ids);
        goto fail;
    }
    uint64_t seed = p.has_seed ? p.seed : (uint64_t)(lb_time_s() * 1e9) ^ (uint64_t)(uintptr_t)cs;
    lb_grammar *grammar = NULL;
    if (p.grammar && lb_grammar_new(h->o.model, p.grammar, &grammar)) {
        srv_error_set(&err, 400, "invalid_request_error", "invalid_value", p.grammar_param, "Invalid '%s': %s",
                      p.grammar_param, lb_last_error());
        goto fail;
    }
    if (!(r = srv_req_new(ids, n_ids, &p, seed))) {
        lb_grammar_free(grammar);
        srv_error_set(&err, 500, "server_error", "out_of_memory", NULL, "out of memory");
        goto fail;
    }
    srv_req_set_grammar(r, grammar);
    if (srv_engine_submit(h->o.engine, r, &err)) goto fail;
    atomic_fetch_add(&h->in_flight, 1);
    cs->counted = 1;

    char id[48];
    make_id(id, sizeof id, kind == SRV_CHAT ? "chatcmpl-" : "cmpl-");
    const long created = (long)time(NULL);
    if (p.stream) {
        stream_state *st = calloc(1, sizeof *st);
        struct MHD_Response *resp =
            st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, st, stream_free) : NULL;
        if (!resp) {
            free(st);
            srv_req_cancel(h->o.engine, r);
            goto done;
        }
        st->h = h;
        st->conn = c;
        st->r = r;
        r = NULL; /* the stream owns the reference now */
        st->kind = kind;
        snprintf(st->id, sizeof st->id, "%s", id);
        st->created = created;
        st->include_usage = p.include_usage;
        st->logprobs = p.logprobs;
        st->tools = p.n_tools > 0;
        if (st->tools) { /* the params go when this request is answered: the stream keeps the names */
            st->tool_names = p.tool_names, st->n_tool_names = p.n_tools;
            p.tool_names = NULL;
            for (int i = 0; i < p.n_tools; i++) free(p.tools[i]);
            free(p.tools);
            p.tools = NULL, p.n_tools = 0;
        }
        if (p.echo && (st->echo_ids = malloc((size_t)LB_MAX(n_ids, 1) * sizeof *ids))) {
            memcpy(st->echo_ids, ids, (size_t)n_ids * sizeof *ids);
            st->n_echo_ids = n_ids;
        }
        st->n_prompt = n_ids;
        st->t0 = cs->t0;
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        goto done;
    }
    /* the whole answer, watching the client meanwhile */
    char *answer = NULL, *thought = NULL;
    size_t answer_len = 0, answer_cap = 0, have = 0, thought_len = 0, thought_cap = 0;
    srv_logprob *lps = NULL, *plp = NULL;
    int n_lps = 0, n_plp = 0;
    srv_take tk;
    double checked = lb_time_s();
    for (;;) {
        srv_req_take(h->o.engine, r, &have, 100, &tk);
        if (tk.delta_len) srv_buf_append(&answer, &answer_len, &answer_cap, tk.delta, tk.delta_len);
        if (tk.reasoning_len) srv_buf_append(&thought, &thought_len, &thought_cap, tk.reasoning, tk.reasoning_len);
        if (tk.n_lp) {
            srv_logprob *a = realloc(lps, (size_t)(n_lps + tk.n_lp) * sizeof *a);
            if (a) {
                memcpy(a + n_lps, tk.lp, (size_t)tk.n_lp * sizeof *a);
                lps = a, n_lps += tk.n_lp;
            }
        }
        free(tk.lp);
        if (tk.prompt_lp && !plp) plp = tk.prompt_lp, n_plp = tk.n_prompt_lp;
        else free(tk.prompt_lp);
        free(tk.reasoning);
        free(tk.delta);
        free(tk.cuts);
        if (tk.done) break;
        if (lb_time_s() - checked < 0.1) continue;
        checked = lb_time_s();
        if (client_gone(c)) {
            srv_req_cancel(h->o.engine, r);
            if (h->o.verbose) fprintf(stderr, "lowbit serve: client disconnected\n");
            free(answer);
            free(thought);
            free(lps);
            free(plp);
            goto done; /* MHD_NO: drop the connection */
        }
    }
    if (tk.err.status) {
        free(answer);
        free(thought);
        free(lps);
        free(plp);
        err = tk.err;
        goto fail;
    }
    cJSON *choices, *o = envelope(h, kind, 0, id, created, &choices);
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    const char *finish = tk.finish ? tk.finish : "stop";
    if (kind == SRV_CHAT) {
        cJSON *m = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        char **names = NULL, **args = NULL;
        int n_calls = 0;
        if (p.n_tools && answer)
            srv_parse_tool_calls(answer, &answer_len, p.tool_names, p.n_tools, &names, &args, &n_calls);
        if (n_calls && !answer_len) cJSON_AddNullToObject(m, "content"); /* OpenAI's, when the reply is calls */
        else cJSON_AddStringToObject(m, "content", answer ? answer : "");
        if (thought) cJSON_AddStringToObject(m, "reasoning_content", thought);
        if (n_calls) {
            cJSON_AddItemToObject(m, "tool_calls", tool_calls_json(names, args, n_calls, 0, nine_char_ids(h)));
            finish = "tool_calls";
        }
        free_calls(names, args, n_calls);
    } else if (!p.echo) {
        cJSON_AddStringToObject(ch, "text", answer ? answer : "");
    } else { /* the prompt, then the reply; their entries in one list */
        size_t elen = 0, flen = 0, fcap = 0;
        cJSON *elp = NULL;
        char *et = echo_text(h, ids, n_ids, &elen, plp, n_plp, p.logprobs ? &elp : NULL), *full = NULL;
        if (!et) elen = 0;
        srv_buf_append(&full, &flen, &fcap, et ? et : "", elen);
        srv_buf_append(&full, &flen, &fcap, answer ? answer : "", answer_len);
        cJSON_AddStringToObject(ch, "text", full ? full : "");
        if (elp) completion_entries(h, elp, lps, n_lps, elen);
        cJSON_AddItemToObject(ch, "logprobs", elp ? elp : cJSON_CreateNull());
        free(et);
        free(full);
    }
    if (!p.echo || kind == SRV_CHAT) {
        if (p.logprobs) cJSON_AddItemToObject(ch, "logprobs", logprobs_json(h, kind, lps, n_lps));
        else cJSON_AddNullToObject(ch, "logprobs");
    }
    free(lps);
    free(plp);
    cJSON_AddStringToObject(ch, "finish_reason", finish);
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddItemToObject(o, "usage", usage_object(&tk));
    free(answer);
    free(thought);
    log_done(h, kind == SRV_CHAT ? "chat" : "completion", 200, tk.n_prompt, tk.n_gen, cs->t0);
    ok = send_json(c, 200, o);
    goto done;
fail:
    ok = send_error(h, c, &err, method, url);
done:
    if (r) srv_req_release(h->o.engine, r);
    free(ids);
    free(text);
    srv_params_free(&p);
    return ok;
}

/* llama-server's /tokenize ({"tokens": [ids]}, or with "with_pieces" [{"id",
 * "piece"}], a piece that is not whole UTF-8 as its bytes) and /detokenize
 * ({"content"}): the model's tokenizer, control-token texts parsed as those
 * tokens, as prompts are */
static enum MHD_Result tokenize_route(srv_http *h, struct MHD_Connection *c, srv_kind kind, conn_state *cs,
                                      const char *method, const char *url) {
    srv_params p;
    srv_error err;
    enum MHD_Result ok;
    if (srv_parse_request(cs->body, cs->len, kind, &p, &err)) goto fail;
    const lb_tokenizer *tok = h->o.model->tok;
    cJSON *o = cJSON_CreateObject();
    if (kind == SRV_TOKENIZE) {
        int32_t *ids = NULL;
        int n = 0;
        if (lb_tokenizer_encode_special(tok, p.prompt, strlen(p.prompt), p.add_special && lb_add_bos_default(h->o.model),
                                        1, &ids, &n)) {
            cJSON_Delete(o);
            srv_error_set(&err, 400, "invalid_request_error", "invalid_value", "content", "cannot tokenize: %s",
                          lb_last_error());
            goto fail;
        }
        cJSON *a = cJSON_AddArrayToObject(o, "tokens");
        for (int i = 0; i < n; i++) {
            if (!p.with_pieces) {
                cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
                continue;
            }
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "id", ids[i]);
            size_t len;
            const char *piece = lb_token_to_piece(h->o.model, ids[i], &len);
            char *clean = srv_utf8_clean(piece, len, NULL);
            if (clean && strlen(clean) == len && !memcmp(clean, piece, len)) {
                cJSON_AddStringToObject(e, "piece", clean);
            } else {
                cJSON *b = cJSON_AddArrayToObject(e, "piece");
                for (size_t k = 0; k < len; k++) cJSON_AddItemToArray(b, cJSON_CreateNumber((unsigned char)piece[k]));
            }
            free(clean);
            cJSON_AddItemToArray(a, e);
        }
        free(ids);
    } else {
        char *text = NULL;
        size_t len = 0;
        if (lb_tokenizer_decode(tok, p.prompt_ids, p.n_prompt_ids, &text, &len)) {
            cJSON_Delete(o);
            srv_error_set(&err, 400, "invalid_request_error", "invalid_value", "tokens", "%s", lb_last_error());
            goto fail;
        }
        char *clean = srv_utf8_clean(text, len, NULL);
        cJSON_AddStringToObject(o, "content", clean ? clean : "");
        free(clean);
        free(text);
    }
    srv_params_free(&p);
    return send_json(c, 200, o);
fail:
    srv_params_free(&p);
    ok = send_error(h, c, &err, method, url);
    return ok;
}

/* ---- the handler ---- */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    srv_http *h = cls;
    conn_state *cs = *con_cls;
    srv_error err;
    if (!cs) { /* headers are in: route, key, size */
        if (!(cs = calloc(1, sizeof *cs))) return MHD_NO;
        *con_cls = cs;
        cs->t0 = lb_time_s();
        cs->rt = route_of(method, url);
        if (cs->rt == R_NOT_FOUND) {
            srv_error_set(&err, 404, "invalid_request_error", "not_found", NULL, "No route for %.16s %.200s.", method,
                          url);
        } else if (cs->rt == R_BAD_METHOD) {
            srv_error_set(&err, 405, "invalid_request_error", "method_not_allowed", NULL,
                          "%.16s is not allowed on %.200s.", method, url);
        } else if (cs->rt != R_PAGE && cs->rt != R_HEALTH && !key_ok(h, c)) {
            srv_error_set(&err, 401, "authentication_error", "invalid_api_key", NULL,
                          "Missing or incorrect API key: send the header 'Authorization: Bearer KEY'.");
        } else {
            const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
            if (cl && strtoull(cl, NULL, 10) > h->o.max_body) {
                srv_error_set(&err, 413, "invalid_request_error", "request_too_large", NULL,
                              "The request body is larger than the limit of %zu bytes.", h->o.max_body);
            } else {
                return MHD_YES;
            }
        }
        cs->rejected = 1;
        return send_error(h, c, &err, method, url);
    }
    if (*upload_size) {
        /* a body without a length (chunked) that passes the limit: the rest
         * is read and dropped, the 413 goes out at the end (libmicrohttpd
         * takes no response in mid-upload); far past it, the connection is cut */
        if (cs->too_big) {
            cs->dropped += *upload_size;
            *upload_size = 0;
            return cs->dropped > 16 * h->o.max_body ? MHD_NO : MHD_YES;
        }
        if (!cs->rejected) {
            if (cs->len + *upload_size > h->o.max_body) {
                cs->too_big = 1;
                cs->dropped = *upload_size;
                *upload_size = 0;
                return MHD_YES;
            }
            if (cs->len + *upload_size + 1 > cs->cap) {
                size_t cap = cs->cap ? cs->cap : 4096;
                while (cap < cs->len + *upload_size + 1) cap *= 2;
                char *b = realloc(cs->body, cap);
                if (!b) return MHD_NO;
                cs->body = b;
                cs->cap = cap;
            }
            memcpy(cs->body + cs->len, upload, *upload_size);
            cs->len += *upload_size;
            cs->body[cs->len] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (cs->rejected) return MHD_YES;
    if (cs->too_big) {
        srv_error_set(&err, 413, "invalid_request_error", "request_too_large", NULL,
                      "The request body is larger than the limit of %zu bytes.", h->o.max_body);
        return send_error(h, c, &err, method, url);
    }
    switch (cs->rt) {
    case R_COMPLETIONS: return completion(h, c, SRV_COMPLETION, cs, method, url);
    case R_CHAT: return completion(h, c, SRV_CHAT, cs, method, url);
    case R_TOKENIZE: return tokenize_route(h, c, SRV_TOKENIZE, cs, method, url);
    case R_DETOKENIZE: return tokenize_route(h, c, SRV_DETOKENIZE, cs, method, url);
    default: return get_route(h, c, cs->rt, url);
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)c, (void)toe;
    srv_http *h = cls;
    conn_state *cs = *con_cls;
    if (!cs) return;
    if (cs->counted) atomic_fetch_sub(&h->in_flight, 1);
    free(cs->body);
    free(cs);
    *con_cls = NULL;
}

srv_http *srv_http_start(const srv_http_opts *o, int *bound_port) {
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->o = *o;
    h->created = (long)time(NULL);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    int rc = getaddrinfo(o->host, port, &hints, &ai);
    if (rc || !ai) {
        fprintf(stderr, "lowbit serve: --host %s: %s\n", o->host, gai_strerror(rc));
        free(h);
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)600, MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        fprintf(stderr, "lowbit serve: cannot listen on %s:%d (%s)\n", o->host, o->port,
                errno ? strerror(errno) : "libmicrohttpd refused");
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *bound_port = di ? di->port : o->port;
    return h;
}

void srv_http_quiesce(srv_http *h) {
    MHD_socket s = MHD_quiesce_daemon(h->d);
    if (s != MHD_INVALID_SOCKET) close(s);
}

void srv_http_drain(srv_http *h, int timeout_ms) {
    for (int waited = 0; atomic_load(&h->in_flight) > 0 && waited < timeout_ms; waited += 10) usleep(10 * 1000);
}

void srv_http_stop(srv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
