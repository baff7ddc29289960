/* libFuzzer target for lowbit serve's request parser (src/serve/request.c,
 * over cJSON) and what a parsed chat request reaches next, the chat
 * template formatters (src/model/chat_format*.c): any body must either be
 * refused with a well-formed 4xx error or give parameters in range, and
 * every family must format the messages or refuse them with a message.
 * Input: the first byte picks the endpoint (bits 0-1: completions, chat,
 * /tokenize, /detokenize) and a template family, the rest is the HTTP body. The same bytes are also run through
 * template detection (as a template text), the reasoning split and the
 * tool-call parser (as a reply) and the UTF-8 helpers. A request's grammar
 * (its GBNF, or the one its JSON Schema or forced tool call became) goes
 * through the GBNF parser, and the body itself does too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"
#include "model/chat_template.h"
#include "serve/serve.h"

#define REQUIRE(cond)                                                   \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "invariant failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                    \
        }                                                               \
    } while (0)

static int valid_utf8(const char *s, size_t n) {
    char *c = srv_utf8_clean(s, n, NULL);
    int same = c && strlen(c) == n && !memcmp(c, s, n);
    free(c);
    return same;
}

static void count(void *ud, int reasoning, const char *p, size_t n) {
    REQUIRE(p && n > 0);
    ((size_t *)ud)[reasoning != 0] += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const srv_kind kind = (srv_kind)(data[0] & 3); /* completions, chat, /tokenize, /detokenize */
    const int family = (data[0] >> 2) % LB_CHAT_COUNT;
    const size_t len = size - 1;
    /* an exact-size copy, so any read past the body trips ASan */
    char *body = malloc(len ? len : 1);
    if (!body) return 0;
    memcpy(body, data + 1, len);

    srv_params p;
    srv_error e;
    if (srv_parse_request(body, len, kind, &p, &e) == 0) {
        REQUIRE(e.status == 0);
        REQUIRE(p.temperature >= 0 && p.temperature <= 2 && p.top_p >= 0 && p.top_p <= 1);
        REQUIRE(p.presence_penalty >= -2 && p.presence_penalty <= 2);
        REQUIRE(p.frequency_penalty >= -2 && p.frequency_penalty <= 2);
        REQUIRE(p.max_tokens == -1 || p.max_tokens >= 1);
        REQUIRE(p.n_stop >= 0 && p.n_stop <= SRV_MAX_STOP);
        REQUIRE(p.top_logprobs >= 0 && p.top_logprobs <= SRV_MAX_TOP_LOGPROBS && (p.logprobs || !p.top_logprobs));
        REQUIRE(p.thinking >= -1 && p.thinking <= 1 && p.reasoning_format >= -1 && p.reasoning_format <= 1);
        for (int i = 0; i < p.n_stop; i++) REQUIRE(p.stop[i] && p.stop[i][0]);
        srv_error ge;
        memset(&ge, 0, sizeof ge);
        if (srv_tool_grammar(&p, data[0] >> 7, &ge)) REQUIRE(ge.status == 400 && ge.message[0]); /* either style */
        if (p.grammar) { /* what the schemas and forced tools become always parses; a client's GBNF parses or
                          * is refused with a message */
            REQUIRE(p.grammar_param);
            lb_grules r;
            const lb_status gs = lb_grules_parse(p.grammar, &r);
            if (strcmp(p.grammar_param, "grammar")) {
                if (gs) fprintf(stderr, "generated grammar refused: %s\n%s\n", lb_last_error(), p.grammar);
                REQUIRE(gs == LB_OK);
            } else REQUIRE(gs == LB_OK || (gs == LB_ERR_ARG && strstr(lb_last_error(), "grammar: ")) || gs == LB_ERR_NOMEM);
            if (gs == LB_OK) {
                REQUIRE(r.root >= 0 && r.root < r.n_rules);
                lb_grules_free(&r);
            }
        }
        if (kind == SRV_CHAT) {
            REQUIRE(p.n_msgs >= 1 && p.msgs);
            lb_chat_template t;
            REQUIRE(lb_chat_template_named(lb_chat_template_names()[family], "<s>", "</s>", &t) == LB_OK);
            if (p.thinking >= 0) REQUIRE(lb_chat_set_thinking(&t, p.thinking) == LB_OK);
            for (int i = 0; i < p.n_tools; i++) REQUIRE(p.tools[i] && p.tools[i][0] == '{');
            t.tools = (const char *const *)p.tools;
            t.n_tools = p.n_tools;
            char *out = NULL;
            size_t n = 0;
            lb_status s = lb_chat_apply(&t, p.msgs, p.n_msgs, "01 Jan 2025", &out, &n);
            REQUIRE(s == LB_OK ? out && strlen(out) == n : out == NULL && s == LB_ERR_ARG);
            free(out);
        } else if (kind == SRV_COMPLETION) {
            REQUIRE(p.prompt_is_ids ? p.n_prompt_ids >= 1 : p.prompt != NULL);
        } else if (kind == SRV_TOKENIZE) {
            REQUIRE(p.prompt != NULL);
        } else {
            REQUIRE(p.prompt_is_ids && p.n_prompt_ids >= 0 && (p.prompt_ids || !p.n_prompt_ids));
        }
    } else {
        REQUIRE(e.status >= 400 && e.status < 600 && e.message[0] && e.type[0]);
        char *j = srv_error_json(&e);
        REQUIRE(j && valid_utf8(j, strlen(j)));
        free(j);
    }
    srv_params_free(&p);

    /* the body as a template text, and as GBNF */
    char *text = malloc(len + 1);
    if (text) {
        memcpy(text, body, len);
        text[len] = 0;
        lb_grules gr;
        if (lb_grules_parse(text, &gr) == LB_OK) lb_grules_free(&gr);
        lb_chat_template t;
        if (lb_chat_template_detect(text, "<s>", "</s>", &t) == LB_OK) {
            lb_chat_msg m[3] = {{.role = "system", .content = "s"}, {.role = "user", .content = "u"},
                                 {.role = "assistant", .content = " a "}};
            char *out = NULL;
            if (lb_chat_apply(&t, m, 3, NULL, &out, NULL) == LB_OK) REQUIRE(out && strstr(out, "u"));
            free(out);
        }
        free(text);
    }

    /* the body as a reply: split into reasoning and answer in pieces of the first byte's size, every
     * byte out at most once */
    {
        lb_think_split ts;
        size_t got[2] = {0, 0};
        lb_think_init(&ts, data[0] & 2);
        const size_t piece = 1 + data[0] % 7;
        for (size_t i = 0; i < len; i += piece) lb_think_feed(&ts, body + i, LB_MIN(piece, len - i), count, got);
        lb_think_finish(&ts, count, got);
        REQUIRE(got[0] + got[1] <= len);
    }

    /* the body as a reply with tool calls: calls cut out, the rest no longer than it was */
    {
        char *t = malloc(len + 1);
        if (t) {
            memcpy(t, body, len);
            t[len] = 0;
            size_t tl = strlen(t); /* up to a NUL, as replies are */
            const size_t before = tl;
            char **names, **args;
            int n;
            char *offered[2] = {"f", "get_weather"};
            srv_parse_tool_calls(t, &tl, offered, 2, &names, &args, &n);
            REQUIRE(n >= 0 && tl <= before && strlen(t) == tl);
            for (int k = 0; k < n; k++) {
                REQUIRE(names[k][0] && args[k][0] == '{');
                free(names[k]), free(args[k]);
            }
            free(names), free(args), free(t);
        }
    }

    /* UTF-8: the cleaned text is valid, and complete() cuts at most 3 bytes */
    size_t n;
    char *c = srv_utf8_clean(body, len, &n);
    if (c) {
        REQUIRE(valid_utf8(c, n));
        free(c);
    }
    size_t k = srv_utf8_complete(body, len);
    REQUIRE(k <= len && len - k <= 3);
    free(body);
    return 0;
}
