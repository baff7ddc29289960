/* lowbit chat: a conversation in the terminal (llama-cli's conversation
 * mode). Each line on stdin is a user turn; the whole conversation is
 * formatted by the model's chat template every turn, and only the tokens
 * past what the KV cache already holds are evaluated, so a turn costs its
 * own tokens, not the conversation's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/common.h"
#include "model/chat_template.h"

static void help(void) {
    printf("usage: lowbit chat -m MODEL [options]\n\n"
           "Talks with an instruction-tuned model: every line read from stdin is a user turn, the\n"
           "reply streams to stdout. /reset starts the conversation over, /think on|off|default sets\n"
           "the template's thinking switch, /exit (or end of input) ends it; Ctrl-C stops it. The\n"
           "turns are formatted by the model's chat template.\n"
           "A reasoning model's thinking (gpt-oss's analysis, a <think> block) goes to stderr, its\n"
           "answer to stdout; only the answer stays in the conversation.\n\n"
           CLI_COMMON_HELP CLI_DEVICE_HELP CLI_CACHE_HELP
           "      --system TEXT    system message (default: none, or the template's own)\n"
           "      --chat-template NAME   format turns as this family instead of the model's template:\n"
           "                       llama2, llama3, llama3.1, mistral, mistral-v1, mistral-v3,\n"
           "                       mistral-v3-tekken, mistral-v7, chatml, gemma, gemma3, phi3, gpt-oss,\n"
           "                       deepseek-r1, deepseek-v3.1, glm4.5, glm4.7, command-r, mistral-small3,\n"
           "                       granite\n"
           "      --chat-template-file FILE  a Jinja chat template to use instead of the model's\n"
           "                       (recognised as the model's would be: one of the families above)\n"
           CLI_REASONING_HELP
           "  -n, --n-predict N    most tokens per reply (default -1: until the end of the turn)\n"
           "  -c, --ctx-size N     context length (default: the model's, capped at 4096)\n"
           "  -b, --batch-size N   prompt tokens per forward pass (default 512)\n"
           CLI_SAMPLER_HELP CLI_GRAMMAR_HELP
           "                       (in chat, every reply follows it)\n");
}

typedef struct {
    lb_chat_msg *m;
    int n, cap;
} conversation;

static int add_msg(conversation *c, const char *role, const char *text, size_t len) {
    if (c->n == c->cap) {
        const int cap = c->cap ? 2 * c->cap : 16;
        lb_chat_msg *m = realloc(c->m, (size_t)cap * sizeof *m);
        if (!m) return -1;
        c->m = m, c->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t) return -1;
    memcpy(t, text, len);
    t[len] = 0;
    c->m[c->n++] = (lb_chat_msg){.role = role, .content = t};
    return 0;
}

static void drop_from(conversation *c, int n) {
    while (c->n > n) free((char *)c->m[--c->n].content);
}

/* the reply: its reasoning to stderr, its answer to stdout and the history */
typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} reply_buf;

static void show(void *ud, int reasoning, const char *p, size_t n) {
    reply_buf *r = ud;
    fwrite(p, 1, n, reasoning ? stderr : stdout);
    if (reasoning) return;
    fflush(stdout);
    if (r->n + n + 1 > r->cap) {
        const size_t cap = 2 * (r->n + n + 1);
        char *q = realloc(r->p, cap);
        if (!q) { r->oom = 1; return; }
        r->p = q, r->cap = cap;
    }
    memcpy(r->p + r->n, p, n);
    r->n += n;
}

int cmd_chat(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "chat", 0};
    cli_cache kv = {LB_TYPE_F32, LB_TYPE_F32, 0};
    const char *system = NULL, *tmpl_name = NULL, *tmpl_file = NULL, *device = NULL;
    cli_reasoning rs = CLI_REASONING_INIT;
    int n_predict = -1, n_ctx = 0, n_batch = 512, seed_set = 0;
    lb_sampler_params sp = lb_sampler_default_params();
    cli_grammar gr = {0};
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_device_flag(&a, &device)) {}
        else if (cli_cache_flag(&a, &kv)) {}
        else if (cli_flag(&a, "--system", NULL)) system = cli_value(&a);
        else if (cli_flag(&a, "--chat-template", NULL)) tmpl_name = cli_value(&a);
        else if (cli_flag(&a, "--chat-template-file", NULL)) tmpl_file = cli_value(&a);
        else if (cli_reasoning_flag(&a, &rs)) {}
        else if (cli_flag(&a, "-n", "--n-predict")) n_predict = cli_int(&a, -1, 1 << 24);
        else if (cli_flag(&a, "-c", "--ctx-size")) n_ctx = cli_int(&a, 1, 1 << 22);
        else if (cli_flag(&a, "-b", "--batch-size")) n_batch = cli_int(&a, 1, 1 << 16);
        else if (cli_sampler_flag(&a, &sp, &seed_set)) {}
        else if (cli_grammar_flag(&a, &gr)) {}
        else cli_unknown(&a);
    }
    int rc = CLI_USAGE;
    if (a.bad) goto usage;
    if (!co.model) { fprintf(stderr, "lowbit chat: -m MODEL is required (see --help)\n"); goto usage; }
    if (cli_common_apply(&co)) goto usage;
    const int dev = cli_device_apply("chat", device);
    if (dev < 0) { rc = CLI_FAIL; goto usage; }
    if (!seed_set) sp.seed = (uint64_t)(lb_time_s() * 1e9);

    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_sampler *smp = NULL;
    lb_grammar *grammar = NULL;
    int32_t *cache = NULL, *ids = NULL;
    float *logits = NULL;
    char *line = NULL;
    size_t line_cap = 0;
    reply_buf reply = {0};
    conversation conv = {0};
    rc = CLI_FAIL;
    lb_chat_template tmpl;
    lb_status s = cli_load_model(&co, &m);
    if (s) { cli_error("chat", s); goto done; }
    if (!lb_model_has_vocab(m)) { fprintf(stderr, "lowbit chat: %s has no vocabulary\n", co.model); goto done; }
    if ((s = cli_chat_template("chat", m, tmpl_name, tmpl_file, &tmpl))) {
        if (tmpl_file) fprintf(stderr, "lowbit chat: --chat-template-file %s: %s\n", tmpl_file, lb_last_error());
        else if (tmpl_name) fprintf(stderr, "lowbit chat: --chat-template: %s\n", lb_last_error());
        else fprintf(stderr, "lowbit chat: %s (name a family with --chat-template)\n", lb_last_error());
        rc = tmpl_name || tmpl_file ? CLI_USAGE : CLI_FAIL;
        goto done;
    }
    cli_reasoning_apply("chat", &rs, &tmpl);
    if (gr.gbnf && tmpl.family == LB_CHAT_GPT_OSS) {
        fprintf(stderr, "lowbit chat: a grammar cannot hold gpt-oss's harmony channels\n");
        goto done;
    }
    if (gr.gbnf && tmpl.thinking_switch) { /* the grammar holds the whole reply: no reasoning before it */
        if (rs.thinking == 1) {
            fprintf(stderr, "lowbit chat: a grammar holds the whole reply, reasoning included: drop the thinking switch\n");
            goto done;
        }
        lb_chat_set_thinking(&tmpl, 0);
    }
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = n_ctx ? n_ctx : LB_CTX_DEFAULT(lb_model_n_ctx_train(m));
    cp.n_batch = n_batch;
    cp.n_threads = co.threads;
    cp.device = dev;
    cli_cache_apply(&kv, &cp);
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("chat", s); goto done; }
    const int n_ctx_eff = lb_context_n_ctx(ctx), V = lb_model_n_vocab(m);
    if ((s = lb_sampler_new(&sp, V, &smp))) { cli_error("chat", s); goto done; }
    logits = malloc((size_t)V * sizeof *logits);
    cache = malloc((size_t)n_ctx_eff * sizeof *cache);
    if (!logits || !cache) goto done;
    if (system && add_msg(&conv, "system", system, strlen(system))) goto done;
    if (system) { /* a template that refuses a system message (Gemma 1/2) says so once, not every turn */
        const lb_chat_msg probe[2] = {{.role = "system", .content = system}, {.role = "user", .content = "hi"}};
        char *text = NULL;
        if (lb_chat_apply(&tmpl, probe, 2, NULL, &text, NULL)) {
            fprintf(stderr, "lowbit chat: --system: %s\n", lb_last_error());
            goto done;
        }
        free(text);
    }
    const int n_fixed = conv.n, tty = isatty(STDIN_FILENO);
    fprintf(stderr, "lowbit chat: %s, template %s, context %d; /reset, /think on|off, /exit\n", lb_model_desc(m),
            lb_chat_family_name(tmpl.family), n_ctx_eff);

    int n_cached = 0; /* tokens whose keys and values the cache holds, in order */
    ssize_t got;
    while (!lb_cancel_requested()) {
        if (tty) fputs("> ", stdout), fflush(stdout);
        if ((got = getline(&line, &line_cap, stdin)) < 0) break;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if (!got) continue;
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) break;
        if (!strncmp(line, "/think", 6) && (!line[6] || line[6] == ' ')) { /* the switch, from the next turn */
            const char *v = line[6] ? line + 7 : "";
            const int on = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : !strcmp(v, "default") ? -1 : -2;
            if (gr.gbnf && tmpl.thinking_switch) {
                fprintf(stderr, "(thinking stays off: the grammar holds the whole reply)\n");
            } else if (on == -2) {
                fprintf(stderr, "(/think on, /think off or /think default; thinking is %s)\n",
                        tmpl.thinking < 0 ? "the template's default" : tmpl.thinking ? "on" : "off");
            } else {
                lb_chat_set_thinking(&tmpl, on);
                fprintf(stderr, "(thinking %s%s)\n", on < 0 ? "as the template says" : on ? "on" : "off",
                        tmpl.thinking_switch ? "" : ": this template has no switch, nothing changes");
            }
            continue;
        }
        if (!strcmp(line, "/reset")) {
            drop_from(&conv, n_fixed);
            fprintf(stderr, "(conversation reset)\n");
            continue;
        }
        const int before = conv.n;
        if (add_msg(&conv, "user", line, (size_t)got)) goto done;
        char *text = NULL;
        int n_ids = 0;
        if ((s = lb_chat_apply(&tmpl, conv.m, conv.n, NULL, &text, NULL)) || (s = lb_chat_tokenize(m, text, &ids, &n_ids))) {
            free(text);
            fprintf(stderr, "lowbit chat: %s\n", lb_last_error());
            drop_from(&conv, before);
            continue;
        }
        free(text);
        if (n_ids >= n_ctx_eff - 1) {
            fprintf(stderr, "lowbit chat: the conversation (%d tokens) no longer fits the context of %d: /reset, "
                            "or a larger -c\n", n_ids, n_ctx_eff);
            drop_from(&conv, before);
            free(ids), ids = NULL;
            continue;
        }
        /* evaluate only past the prefix the cache already holds (at least
         * the last token: its logits start the reply) */
        int keep = 0;
        while (keep < n_cached && keep < n_ids - 1 && cache[keep] == ids[keep]) keep++;
        for (int i = keep; i < n_ids; i++) lb_sampler_accept(smp, ids[i]); /* the tokens new to the sampler */
        const int from = lb_seq_reusable(ctx, 0, keep); /* 0 where a sliding-window ring has moved on past it */
        if ((s = lb_eval(ctx, ids + from, n_ids - from, from, logits, 0))) { cli_error("chat", s); goto done; }
        memcpy(cache, ids, (size_t)n_ids * sizeof *cache);
        n_cached = n_ids;
        free(ids), ids = NULL;

        reply.n = 0;
        const int limit = n_predict < 0 ? n_ctx_eff - n_cached : LB_MIN(n_predict, n_ctx_eff - n_cached);
        /* gpt-oss: its reasoning (the analysis channel) apart from its answer (the final channel) */
        const int harmony = tmpl.family == LB_CHAT_GPT_OSS;
        lb_harmony hs;
        lb_harmony_init(&hs);
        /* a <think> block (Qwen 3, DeepSeek-R1, GLM): the same, unless --reasoning-format none */
        const int split = !harmony && rs.format && !gr.gbnf; /* with a grammar the reply is all answer */
        lb_think_split ts;
        lb_think_init(&ts, lb_chat_prompt_opens_think(&tmpl));
        lb_grammar_free(grammar), grammar = NULL; /* every reply from the grammar's start */
        if ((s = cli_grammar_new(&gr, m, &grammar))) { cli_error("chat", s); goto done; }
        for (int n_gen = 0; n_gen < limit && !lb_cancel_requested(); n_gen++) {
            const int32_t next = lb_sampler_sample_grammar(smp, logits, grammar);
            if (next < 0) break; /* the grammar is complete and the model has no end token */
            if (grammar && (s = lb_grammar_accept(grammar, next))) { cli_error("chat", s); goto done; }
            lb_sampler_accept(smp, next);
            if (lb_token_is_eog(m, next)) break;
            size_t len;
            lb_harmony_kind kind = LB_HARMONY_ANSWER;
            const char *piece = harmony ? lb_harmony_piece(&hs, m, next, &len, &kind)
                                : split ? lb_think_piece(m, next, &len)
                                        : lb_token_to_piece(m, next, &len);
            if (kind == LB_HARMONY_REASONING) show(&reply, 1, piece, len);
            if (kind != LB_HARMONY_ANSWER) len = 0;
            if (split) lb_think_feed(&ts, piece, len, show, &reply);
            else show(&reply, 0, piece, len);
            if (reply.oom) goto done;
            if (n_gen + 1 == limit) break;
            if ((s = lb_eval(ctx, &next, 1, n_cached, logits, 0))) { cli_error("chat", s); goto done; }
            cache[n_cached++] = next;
        }
        if (split) lb_think_finish(&ts, show, &reply);
        fputc('\n', stdout);
        fflush(stdout);
        if (reply.oom || add_msg(&conv, "assistant", reply.p ? reply.p : "", reply.n)) goto done;
    }
    rc = lb_cancel_requested() ? 130 : CLI_OK;
done:
    drop_from(&conv, 0);
    free(conv.m);
    free(line);
    free(reply.p);
    free(ids);
    free(cache);
    free(logits);
    lb_sampler_free(smp);
    lb_grammar_free(grammar);
    lb_context_free(ctx);
    lb_model_free(m);
usage:
    cli_grammar_free(&gr);
    return rc;
}
