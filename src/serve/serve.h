/* lowbit serve: an OpenAI-compatible HTTP server (docs/serve.md).
 *
 *   request.c  the JSON request bodies -> srv_params, validated (fuzzed:
 *              fuzz/fuzz_serve_request.c); OpenAI-style error bodies
 *   engine.c   continuous batching: slots, the bounded queue, one thread
 *              that runs lb_eval_multi over every active slot per step
 *   http.c     libmicrohttpd handlers: routing, API key, bodies, responses,
 *              server-sent events, client disconnects
 *   serve.c    `lowbit serve`: options, startup, signals, shutdown */
#ifndef LB_SERVE_H
#define LB_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lowbit.h"
#include "model/chat_template.h"

enum { SRV_MAX_STOP = 4 };

/* the POST routes: /v1/completions, /v1/chat/completions, and llama-server's
 * /tokenize ({"content", "add_special", "with_pieces"}) and /detokenize
 * ({"tokens"}) */
typedef enum { SRV_COMPLETION, SRV_CHAT, SRV_TOKENIZE, SRV_DETOKENIZE } srv_kind;

/* An error as OpenAI reports it: {"error": {"message", "type", "param", "code"}}. */
typedef struct {
    int status;        /* HTTP status; 0: no error */
    char type[32];     /* invalid_request_error, authentication_error, server_error, ... */
    char code[48];     /* "" -> null */
    char param[48];    /* "" -> null */
    char message[512];
} srv_error;

void srv_error_set(srv_error *e, int status, const char *type, const char *code, const char *param,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The JSON body of an error (malloc'ed; NULL on OOM). */
char *srv_error_json(const srv_error *e);

/* A request body, parsed and checked for types and ranges (request.c). */
typedef struct {
    srv_kind kind;
    int stream, include_usage;
    char *model;               /* NULL when absent */
    /* completions: text, or token ids (/tokenize: its "content"; /detokenize: its "tokens") */
    char *prompt;
    int32_t *prompt_ids;
    int n_prompt_ids, prompt_is_ids;
    /* chat */
    lb_chat_msg *msgs;         /* role and content owned here */
    int n_msgs;
    /* sampling (OpenAI's defaults unless given) */
    float temperature, top_p, min_p, presence_penalty, frequency_penalty, repeat_penalty;
    int top_k;
    int max_tokens;            /* -1: until end of text or context */
    int has_seed;
    uint64_t seed;
    char *stop[SRV_MAX_STOP];
    int n_stop;
    int cache_prompt;          /* llama-server's field: reuse the slot's cached prefix (default 1) */
    char reasoning_effort[8];  /* chat: "reasoning_effort" (or chat_template_kwargs'): low, medium, high; "": the
                                * server's (model/chat_template.h) */
    int harmony;               /* set by the server, not the client: a gpt-oss chat reply, of which only the
                                * final channel is the content (model/chat_template.h, lb_harmony) */
    int thinking;              /* chat_template_kwargs' "enable_thinking" (or "thinking"): 0, 1; -1: the server's */
    int reasoning_format;      /* "reasoning_format": 0 none, 1 deepseek or auto; -1: the server's */
    int logprobs;              /* chat "logprobs": true, or completions "logprobs": N given */
    int top_logprobs;          /* alternatives a token (0..SRV_MAX_TOP_LOGPROBS) */
    int add_special, with_pieces; /* /tokenize: BOS as the model adds it; each token's text beside its id */
    char **tools;              /* chat "tools": each tool as JSON text, written as the templates' tojson writes
                                * it (Python's json.dumps); n_tools of them ("tool_choice": "none": none) */
    char **tool_names;         /* and each one's function name */
    int n_tools;
    int echo;                  /* completions: the prompt comes back before the reply (with "logprobs", its
                                * tokens' too); "max_tokens" may then be 0 */
    int think;                 /* set by the server: the reply's <think> block goes to reasoning_content (1; 2
                                * when the prompt opened it; lb_think_split), 0 the reply as it is */
    char *grammar;             /* GBNF the reply must follow (NULL: none): llama-server's "grammar" and
                                * "json_schema", OpenAI's "response_format" json_object / json_schema */
    const char *grammar_param; /* the field it came from, for errors */
    int tool_forced;           /* "tool_choice": -1 not forced, -2 "required", else the named tool's index; its
                                * grammar is made by srv_tool_grammar once the template is known */
    char **tool_schemas;       /* each tool's "parameters" as JSON text (kept when forced; n_tool_schemas, which
                                * the server's taking the tools over (n_tools 0) leaves as it is) */
    int n_tool_schemas;
    char *suffix;              /* completions: the text after the gap to fill (the prompt is before it); NULL: none */
} srv_params;

/* cJSON value v as Python's json.dumps(v, ensure_ascii=False) writes it (the
 * templates' tojson): ", " and ": " separators, keys in their order,
 * integral numbers as integers; appended to *buf (srv_buf_append's). -1 out
 * of memory. */
struct cJSON;
int srv_json_py(const struct cJSON *v, char **buf, size_t *len, size_t *cap);

/* A reply's tool calls: each <tool_call>{"name": ..., "arguments": {...}}
 * </tool_call> block whose JSON reads as a call (Qwen 2.5 / 3's Hermes style),
 * each fenced ```json block holding such an object whose name is one of the
 * tools offered (tool_names, n_tools: what small models write instead), and,
 * with no block, a text that is one such object alone (Llama 3.1's way;
 * "parameters" read as "arguments"), is cut out of text (in place; *text_len
 * updated, leading and trailing whitespace of what is left trimmed) and its
 * name and arguments
 * (compact JSON) returned in *names / *args (malloc'ed arrays of malloc'ed
 * strings, *n of them). Blocks that do not read as calls stay in the text. */
int srv_parse_tool_calls(char *text, size_t *text_len, char *const *tool_names, int n_tools, char ***names,
                         char ***args, int *n);

/* A forced tool_choice's grammar into p->grammar, in the template's style:
 * Qwen's <tool_call> blocks (one or more for "required"), Llama 3.1 / 3.2's
 * lone {"name", "parameters"} object (one call), Mistral v3's JSON list of
 * {"name", "arguments"} objects (one or more; its [TOOL_CALLS] token is not
 * text a grammar can hold, and replies are read without it). 0, or -1 with
 * *err (a tool's schema refused). Nothing to do when not forced. */
enum { SRV_TOOLS_HERMES, SRV_TOOLS_LLAMA, SRV_TOOLS_MISTRAL };
int srv_tool_grammar(srv_params *p, int style, srv_error *err);

/* 0 and *p filled, or -1 with *err set (400s). p is always safe to free. */
int srv_parse_request(const char *body, size_t len, srv_kind kind, srv_params *p, srv_error *err);
void srv_params_free(srv_params *p);

/* Replaces invalid UTF-8 (and NUL bytes) in s[0..n) by U+FFFD: a malloc'ed,
 * NUL-terminated copy, its length in *out_len. */
char *srv_utf8_clean(const char *s, size_t n, size_t *out_len);
/* Bytes of s[0..n) that end on a complete UTF-8 sequence (an incomplete tail,
 * which more bytes may complete, is left out). */
size_t srv_utf8_complete(const char *s, size_t n);

/* ---- engine ---- */

typedef struct srv_engine srv_engine;
typedef struct srv_req srv_req;

typedef struct {
    int n_slots, n_ctx, n_batch, n_threads, queue_max, prefill_chunk;
    int step_delay_ms; /* tests: sleep this long after every step (LOWBIT_SERVE_TEST_DELAY_MS) */
    int no_cache_prompt; /* --no-cache-prompt: every prompt is evaluated in full */
    int device;          /* --device: LB_DEVICE_CPU or LB_DEVICE_CUDA */
    int type_k, type_v;  /* -ctk, -ctv: the KV cache's element types (LB_TYPE_F32, _F16, _Q8_0, _Q4_0) */
    int swa_full;        /* --swa-full: sliding-window layers keep every position (prefixes reusable further back) */
} srv_engine_opts;

srv_engine *srv_engine_new(lb_model *m, const srv_engine_opts *o); /* NULL + lb_last_error() */
int srv_engine_start(srv_engine *e); /* the engine thread; -1 if it cannot start */
/* Fails queued and running requests (503, shutting down), stops the thread. */
void srv_engine_stop(srv_engine *e);
void srv_engine_free(srv_engine *e);
int srv_engine_n_ctx(const srv_engine *e);
int srv_engine_threads(const srv_engine *e);
const char *srv_engine_kv_desc(const srv_engine *e);
typedef struct {
    int idle, busy, queued;     /* slots, and requests waiting for one */
    long long steps;            /* forward passes */
    int max_batch_seqs;         /* most sequences one pass has held */
    long long prompt_tokens, generated_tokens;
    long long cached_tokens;    /* prompt tokens taken from a slot's cache instead of evaluated */
    long long shared_tokens;    /* of those, copied from another slot's cache first */
} srv_stats;
void srv_engine_stats(srv_engine *e, srv_stats *st);

/* A request for the engine: its prompt tokens and sampling settings. The
 * caller holds one reference; srv_req_release drops it. */
srv_req *srv_req_new(const int32_t *prompt, int n_prompt, const srv_params *p, uint64_t seed);
/* The request's grammar (owned by it from here on; the engine thread alone uses it). */
void srv_req_set_grammar(srv_req *r, lb_grammar *g);
/* Queues r (the engine takes a reference); -1 with a 503 in *err when the
 * queue is full or the server is stopping. */
int srv_engine_submit(srv_engine *e, srv_req *r, srv_error *err);
/* The client is gone: the slot (or queue place) is freed at the next step. */
void srv_req_cancel(srv_engine *e, srv_req *r);
void srv_req_release(srv_engine *e, srv_req *r);

/* Appends n bytes to a growable buffer (*len bytes in *cap, a NUL kept
 * after them); -1 out of memory, the buffer as it was. */
int srv_buf_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n);

/* One generated token's log probability (natural log, of the model's
 * distribution before sampling) and its most likely alternatives. */
enum { SRV_MAX_TOP_LOGPROBS = 20 };
typedef struct {
    int32_t token;
    float logprob;
    int n_top;
    int32_t top[SRV_MAX_TOP_LOGPROBS];
    float top_logprob[SRV_MAX_TOP_LOGPROBS];
    size_t offset; /* its first byte in the reply's text */
} srv_logprob;

/* What a waiter takes out of a request. */
typedef struct {
    char *delta;          /* new text since the last take (malloc'ed, may be NULL) */
    size_t delta_len;
    char *reasoning;      /* gpt-oss: new reasoning text since the last take (malloc'ed, may be NULL) */
    size_t reasoning_len;
    size_t *cuts;         /* where the steps that produced it end in delta (malloc'ed): */
    int n_cuts;           /* a stream sends one event per step, i.e. per token */
    srv_logprob *lp;      /* the tokens of delta, with "logprobs" (malloc'ed, may be NULL) */
    int n_lp;
    srv_logprob *prompt_lp; /* "echo" with "logprobs": the prompt's tokens 1..n-1, once it is evaluated */
    int n_prompt_lp;      /* (malloc'ed; handed out by one take) */
    int done;             /* finished (or failed) */
    const char *finish;   /* "stop" or "length" once done without an error */
    int n_prompt, n_gen;
    int n_cached;         /* prompt tokens reused from the slot's cache */
    srv_error err;        /* err.status != 0: failed */
} srv_take;

/* Waits up to timeout_ms for text beyond *have or for the end; *have
 * advances over the text handed out. Returns 1 if anything changed. */
int srv_req_take(srv_engine *e, srv_req *r, size_t *have, int timeout_ms, srv_take *out);

/* ---- HTTP ---- */

typedef struct {
    const char *host;
    int port;
    const char *api_key;      /* NULL: no key needed */
    size_t max_body;
    int max_connections;
    const char *model_id;     /* the name /v1/models lists */
    const char *model_path;
    lb_model *model;
    srv_engine *engine;
    const lb_chat_template *tmpl; /* NULL: chat requests get an error */
    const char *tmpl_error;       /* why there is no template */
    int reasoning_format;         /* chat replies' <think> block as reasoning_content: 1, or 0 (none) */
    int verbose;
} srv_http_opts;

typedef struct srv_http srv_http;
srv_http *srv_http_start(const srv_http_opts *o, int *bound_port); /* NULL + message on stderr */
void srv_http_quiesce(srv_http *h);  /* stop accepting connections */
/* Waits (at most timeout_ms) until every answered request has been sent out:
 * after srv_engine_stop, the last events and errors reach their clients. */
void srv_http_drain(srv_http *h, int timeout_ms);
void srv_http_stop(srv_http *h);     /* close connections, join their threads */

/* The chat page (serve_page.c, generated from src/serve/chat.html). */
extern const unsigned char lb_serve_page[];
extern const size_t lb_serve_page_len;

int srv_main(int argc, char **argv);

#endif
