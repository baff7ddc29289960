/* lowbit serve: options, the model, the chat template, the engine and the
 * HTTP daemon; then wait for Ctrl-C / SIGTERM and shut down in order: stop
 * accepting, end every queued and running request (an error to each
 * waiting client), close the connections, free everything. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/common.h"
#include "model/model.h"
#include "serve/serve.h"
#include "tokenizer/tokenizer.h"

static void help(void) {
    printf("usage: lowbit serve -m MODEL [options]\n\n"
           "An OpenAI-compatible HTTP server with continuous batching (docs/serve.md):\n"
           "POST /v1/chat/completions, POST /v1/completions (stream or not), GET /v1/models,\n"
           "GET /health, and a chat page at GET /.\n\n" CLI_COMMON_HELP CLI_DEVICE_HELP CLI_CACHE_HELP
           "      --host ADDR      address to listen on (default 127.0.0.1)\n"
           "      --port N         port (default 8080; 0 = any free port, printed at startup)\n"
           "  -np, --parallel N    slots: sequences decoded together in one batch (default 4)\n"
           "  -c, --ctx-size N     context of each slot, in tokens (default: the model's, at most 4096)\n"
           "  -b, --batch-size N   tokens per forward pass at most (default 512)\n"
           "      --prefill-chunk N  prompt tokens per step while other slots decode (default 128)\n"
           "      --queue N        requests that may wait for a slot; beyond them: HTTP 503 (default 64)\n"
           "      --no-cache-prompt  evaluate every prompt in full (default: a request goes to the slot whose\n"
           "                       cache holds the longest prefix of its prompt and skips that prefix;\n"
           "                       a request's \"cache_prompt\": false does the same for it alone)\n"
           "      --api-key KEY    require 'Authorization: Bearer KEY' on /v1/* (also LOWBIT_API_KEY)\n"
           "      --chat-template NAME  use this family instead of the model's template:\n"
           "                       llama2, llama3, llama3.1, mistral, mistral-v1, mistral-v3,\n"
           "                       mistral-v3-tekken, mistral-v7, chatml, gemma, gemma3, phi3, gpt-oss,\n"
           "                       deepseek-r1, deepseek-v3.1, glm4.5, glm4.7, command-r, mistral-small3,\n"
           "                       granite\n"
           "      --chat-template-file FILE  a Jinja chat template to use instead of the model's\n"
           "                       (recognised as the model's would be: one of the families above)\n"
           CLI_REASONING_HELP
           "                       (for requests that do not say: \"chat_template_kwargs\": {\"enable_thinking\",\n"
           "                       \"thinking\", \"reasoning_effort\"}, \"reasoning_effort\", \"reasoning_format\")\n"
           "      --alias NAME     the model's id in /v1/models (default: the file's name)\n"
           "      --max-body N     largest request body in bytes (default 8388608)\n"
           "      --max-connections N  simultaneous connections (default 256)\n");
}

int srv_main(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "serve", 0};
    cli_cache kv = {LB_TYPE_F32, LB_TYPE_F32, 0};
    const char *host = "127.0.0.1", *api_key = getenv("LOWBIT_API_KEY"), *tmpl_name = NULL, *tmpl_file = NULL, *alias = NULL,
               *device = NULL;
    cli_reasoning rs = CLI_REASONING_INIT;
    int port = 8080, n_slots = 4, n_ctx = 0, n_batch = 512, chunk = 128, queue = 64, max_conn = 256, no_cache = 0;
    long long max_body = 8 << 20;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) {
            help();
            return CLI_OK;
        } else if (cli_common_flag(&a, &co) || cli_device_flag(&a, &device) || cli_cache_flag(&a, &kv)) {
        } else if (cli_flag(&a, "--host", NULL)) host = cli_value(&a);
        else if (cli_flag(&a, "--port", NULL)) port = cli_int(&a, 0, 65535);
        else if (cli_flag(&a, "-np", "--parallel")) n_slots = cli_int(&a, 1, 256);
        else if (cli_flag(&a, "-c", "--ctx-size")) n_ctx = cli_int(&a, 8, 1 << 20);
        else if (cli_flag(&a, "-b", "--batch-size")) n_batch = cli_int(&a, 1, 1 << 16);
        else if (cli_flag(&a, "--prefill-chunk", NULL)) chunk = cli_int(&a, 1, 1 << 16);
        else if (cli_flag(&a, "--queue", NULL)) queue = cli_int(&a, 0, 1 << 16);
        else if (cli_flag(&a, "--no-cache-prompt", NULL)) no_cache = 1;
        else if (cli_flag(&a, "--api-key", NULL)) api_key = cli_value(&a);
        else if (cli_flag(&a, "--chat-template", NULL)) tmpl_name = cli_value(&a);
        else if (cli_flag(&a, "--chat-template-file", NULL)) tmpl_file = cli_value(&a);
        else if (cli_reasoning_flag(&a, &rs)) {}
        else if (cli_flag(&a, "--alias", NULL)) alias = cli_value(&a);
        else if (cli_flag(&a, "--max-body", NULL)) max_body = cli_int(&a, 1024, 1 << 30);
        else if (cli_flag(&a, "--max-connections", NULL)) max_conn = cli_int(&a, 1, 1 << 16);
        else cli_unknown(&a);
    }
    if (a.bad || !host) return CLI_USAGE;
    if (!co.model) {
        fprintf(stderr, "lowbit serve: -m MODEL is required (see --help)\n");
        return CLI_USAGE;
    }
    if (api_key && !api_key[0]) api_key = NULL;
    if (cli_common_apply(&co)) return CLI_USAGE;
    const int dev = cli_device_apply("serve", device);
    if (dev < 0) return CLI_FAIL;

    lb_model *m = NULL;
    srv_engine *e = NULL;
    srv_http *h = NULL;
    int rc = CLI_FAIL;
    lb_status s = cli_load_model(&co, &m);
    if (s) {
        cli_error("serve", s);
        return CLI_FAIL;
    }
    if (!lb_model_has_vocab(m)) {
        fprintf(stderr, "lowbit serve: %s has no vocabulary\n", co.model);
        goto done;
    }

    /* the chat template: named, else the model's, else none (chat requests get a 400) */
    lb_chat_template tmpl;
    const lb_chat_template *tp = NULL;
    const char *tmpl_error = NULL;
    {
        lb_status ts = cli_chat_template("serve", m, tmpl_name, tmpl_file, &tmpl);
        if (ts == LB_OK) {
            tp = &tmpl;
            cli_reasoning_apply("serve", &rs, &tmpl);
        } else if (tmpl_name || tmpl_file) {
            if (tmpl_file) fprintf(stderr, "lowbit serve: --chat-template-file %s: %s\n", tmpl_file, lb_last_error());
            else fprintf(stderr, "lowbit serve: --chat-template: %s\n", lb_last_error());
            rc = CLI_USAGE;
            goto done;
        } else if (m->gguf && gguf_get_str(m->gguf, "tokenizer.chat_template")) {
            fprintf(stderr, "lowbit serve: %s\n", lb_last_error());
            goto done;
        } else {
            tmpl_error = "the model has no tokenizer.chat_template";
            fprintf(stderr,
                    "lowbit serve: warning: %s: /v1/chat/completions answers 400 unless --chat-template NAME is "
                    "given\n",
                    tmpl_error);
        }
    }

    srv_engine_opts eo = {0};
    eo.n_slots = n_slots;
    eo.n_ctx = n_ctx ? n_ctx : LB_CTX_DEFAULT(lb_model_n_ctx_train(m));
    eo.n_batch = n_batch;
    eo.n_threads = co.threads;
    eo.device = dev;
    eo.type_k = kv.type_k, eo.type_v = kv.type_v, eo.swa_full = kv.swa_full;
    eo.queue_max = queue;
    eo.prefill_chunk = chunk;
    eo.no_cache_prompt = no_cache;
    const char *delay = getenv("LOWBIT_SERVE_TEST_DELAY_MS");
    eo.step_delay_ms = delay ? atoi(delay) : 0;
    if (!(e = srv_engine_new(m, &eo))) {
        cli_error("serve", LB_ERR_NOMEM);
        goto done;
    }
    if (srv_engine_start(e)) {
        fprintf(stderr, "lowbit serve: cannot start the engine thread\n");
        goto done;
    }

    const char *base = strrchr(co.model, '/');
    srv_http_opts ho = {0};
    ho.host = host;
    ho.port = port;
    ho.api_key = api_key;
    ho.max_body = (size_t)max_body;
    ho.max_connections = max_conn;
    ho.model_id = alias ? alias : base ? base + 1 : co.model;
    ho.model_path = co.model;
    ho.model = m;
    ho.engine = e;
    ho.tmpl = tp;
    ho.reasoning_format = rs.format;
    ho.tmpl_error = tmpl_error;
    ho.verbose = co.verbose;
    signal(SIGPIPE, SIG_IGN);
    int bound = 0;
    if (!(h = srv_http_start(&ho, &bound))) goto done;
    fprintf(stderr, "lowbit serve: %s, %d slots x %d tokens, %d threads, chat template: %s%s\n", lb_model_desc(m),
            n_slots, srv_engine_n_ctx(e), srv_engine_threads(e),
            tp ? lb_chat_family_name(tp->family) : "none", api_key ? ", API key required" : "");
    fprintf(stderr, "lowbit serve: %s\n", srv_engine_kv_desc(e));
    fprintf(stderr, "lowbit serve: listening on http://%s%s%s:%d\n", strchr(host, ':') ? "[" : "", host,
            strchr(host, ':') ? "]" : "", bound);
    fflush(stderr);

    while (!lb_cancel_requested()) usleep(50 * 1000);
    fprintf(stderr, "lowbit serve: shutting down\n");
    srv_http_quiesce(h);
    srv_engine_stop(e);      /* every waiting client gets its answer or an error now */
    srv_http_drain(h, 5000); /* ... and has it sent */
    srv_http_stop(h);
    h = NULL;
    rc = CLI_OK;
done:
    srv_http_stop(h);
    srv_engine_free(e);
    lb_model_free(m);
    return rc;
}
