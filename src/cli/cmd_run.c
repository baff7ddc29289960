/* lowbit run: prompt in, streamed text out, timings at the end. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"

static void help(void) {
    printf("usage: lowbit run -m MODEL -p PROMPT [options]\n\n"
           "Generates text, streaming it to stdout; timings go to stderr at the end.\n\n"
           CLI_COMMON_HELP CLI_DEVICE_HELP CLI_CACHE_HELP
           "  -p, --prompt TEXT    prompt (default: empty, BOS only)\n"
           "  -f, --file FILE      read the prompt from a file\n"
           "  -n, --n-predict N    tokens to generate (default 128; -1 = until end of text or context)\n"
           "  -c, --ctx-size N     context length (default: the model's, capped at 4096)\n"
           "  -b, --batch-size N   prompt tokens per forward pass (default 512)\n"
           CLI_SAMPLER_HELP CLI_GRAMMAR_HELP
           "      --no-bos         do not prepend BOS\n"
           "      --ids            also print the generated token ids at the end\n");
}

int cmd_run(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "run", 0};
    cli_cache kv = {LB_TYPE_F32, LB_TYPE_F32, 0};
    const char *prompt = "", *prompt_file = NULL, *device = NULL;
    int n_predict = 128, n_ctx = 0, n_batch = 512, no_bos = 0, print_ids = 0, seed_set = 0;
    lb_sampler_params sp = lb_sampler_default_params();
    cli_grammar gr = {0};
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_device_flag(&a, &device)) {}
        else if (cli_cache_flag(&a, &kv)) {}
        else if (cli_flag(&a, "-p", "--prompt")) prompt = cli_value(&a);
        else if (cli_flag(&a, "-f", "--file")) prompt_file = cli_value(&a);
        else if (cli_flag(&a, "-n", "--n-predict")) n_predict = cli_int(&a, -1, 1 << 24);
        else if (cli_flag(&a, "-c", "--ctx-size")) n_ctx = cli_int(&a, 1, 1 << 22);
        else if (cli_flag(&a, "-b", "--batch-size")) n_batch = cli_int(&a, 1, 1 << 16);
        else if (cli_sampler_flag(&a, &sp, &seed_set)) {}
        else if (cli_grammar_flag(&a, &gr)) {}
        else if (cli_flag(&a, "--no-bos", NULL)) no_bos = 1;
        else if (cli_flag(&a, "--ids", NULL)) print_ids = 1;
        else cli_unknown(&a);
    }
    int rc = CLI_USAGE;
    if (a.bad) goto usage;
    if (!co.model) { fprintf(stderr, "lowbit run: -m MODEL is required (see --help)\n"); goto usage; }
    if (!prompt || cli_common_apply(&co)) goto usage;
    const int dev = cli_device_apply("run", device);
    if (dev < 0) { rc = CLI_FAIL; goto usage; }
    if (!seed_set) sp.seed = (uint64_t)(lb_time_s() * 1e9);

    char *file_text = NULL;
    if (prompt_file) {
        /* lb_read_file names the file and the reason (missing, a directory, ...) */
        size_t len;
        lb_status rs = lb_read_file(prompt_file, &file_text, &len);
        if (rs) { cli_error("run", rs); rc = CLI_FAIL; goto usage; }
        if (strlen(file_text) != len) {
            fprintf(stderr, "lowbit run: %s contains a NUL byte: not a text file\n", prompt_file);
            free(file_text);
            rc = CLI_FAIL;
            goto usage;
        }
        prompt = file_text;
    }

    double t0 = lb_time_s();
    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_sampler *smp = NULL;
    lb_grammar *grammar = NULL;
    int32_t *toks = NULL;
    rc = CLI_FAIL;
    lb_status s = cli_load_model(&co, &m);
    if (s) { cli_error("run", s); goto done; }
    if (!lb_model_has_vocab(m)) { fprintf(stderr, "lowbit run: %s has no vocabulary\n", co.model); goto done; }
    double t_load = lb_time_s() - t0;

    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = n_ctx ? n_ctx : LB_CTX_DEFAULT(lb_model_n_ctx_train(m));
    cp.n_batch = n_batch;
    cp.n_threads = co.threads;
    cp.device = dev;
    cli_cache_apply(&kv, &cp);
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("run", s); goto done; }
    if (co.verbose) fprintf(stderr, "%s\n", lb_context_kv_desc(ctx));
    const int n_ctx_eff = lb_context_n_ctx(ctx), V = lb_model_n_vocab(m);

    int n_prompt = 0, add_bos = !no_bos && lb_add_bos_default(m);
    size_t plen = strlen(prompt);
    toks = malloc(((size_t)n_ctx_eff + 1) * sizeof *toks);
    if (!toks) goto done;
    if ((s = lb_tokenize(m, prompt, plen, add_bos, toks, n_ctx_eff, &n_prompt))) { cli_error("run", s); goto done; }
    if (n_prompt == 0) toks[n_prompt++] = lb_token_bos(m) >= 0 ? lb_token_bos(m) : 0;
    if (n_prompt >= n_ctx_eff) {
        fprintf(stderr, "lowbit run: the prompt has %d tokens but the context holds %d (use -c)\n", n_prompt, n_ctx_eff);
        goto done;
    }
    if ((s = lb_sampler_new(&sp, V, &smp))) { cli_error("run", s); goto done; }
    if ((s = cli_grammar_new(&gr, m, &grammar))) { cli_error("run", s); goto done; }
    float *logits = malloc((size_t)V * sizeof *logits);
    if (!logits) goto done;

    for (int i = 0; i < n_prompt; i++) {
        lb_sampler_accept(smp, toks[i]);
        size_t len;
        const char *piece = lb_token_to_piece(m, toks[i], &len);
        /* the dummy-prefix space of the first piece is not part of the prompt */
        if (i == add_bos && len > 0 && piece[0] == ' ' && prompt[0] != ' ') { piece++; len--; }
        fwrite(piece, 1, len, stdout);
    }
    fflush(stdout);

    double t1 = lb_time_s();
    if ((s = lb_eval(ctx, toks, n_prompt, 0, logits, 0))) { cli_error("run", s); free(logits); goto done; }
    double t_prompt = lb_time_s() - t1;

    int n_gen = 0, pos = n_prompt;
    const int limit = n_predict < 0 ? n_ctx_eff - n_prompt : LB_MIN(n_predict, n_ctx_eff - n_prompt);
    double t2 = lb_time_s();
    while (n_gen < limit && !lb_cancel_requested()) {
        int32_t next = lb_sampler_sample_grammar(smp, logits, grammar);
        if (next < 0) break; /* the grammar allows nothing more and the model has no end token */
        if (grammar && (s = lb_grammar_accept(grammar, next))) { cli_error("run", s); free(logits); goto done; }
        lb_sampler_accept(smp, next);
        toks[pos] = next;
        n_gen++;
        if (lb_token_is_eog(m, next)) break;
        size_t len;
        const char *piece = lb_token_to_piece(m, next, &len);
        fwrite(piece, 1, len, stdout);
        fflush(stdout);
        if (n_gen == limit) break;
        if ((s = lb_eval(ctx, &next, 1, pos, logits, 0))) { cli_error("run", s); free(logits); goto done; }
        pos++;
    }
    double t_gen = lb_time_s() - t2;
    printf("\n");
    free(logits);
    if (print_ids) {
        printf("ids:");
        for (int i = 0; i < n_prompt + n_gen; i++) printf(" %d", toks[i]);
        printf("\n");
    }
    fprintf(stderr, "\nload time: %.2f s\n", t_load);
    fprintf(stderr, "prompt: %d tokens in %.3f s, %.2f tokens/s\n", n_prompt, t_prompt, n_prompt / (t_prompt > 0 ? t_prompt : 1e-9));
    /* the first sampled token needs no forward pass: count passes, not tokens */
    int passes = n_gen > 0 ? n_gen - 1 : 0;
    fprintf(stderr, "generation: %d tokens in %.3f s, %.2f tokens/s\n", n_gen, t_gen, passes / (t_gen > 0 ? t_gen : 1e-9));
    rc = lb_cancel_requested() ? 130 : CLI_OK;
done:
    free(toks);
    free(file_text);
    lb_sampler_free(smp);
    lb_grammar_free(grammar);
    lb_context_free(ctx);
    lb_model_free(m);
usage:
    cli_grammar_free(&gr);
    return rc;
}
