/* lowbit imatrix -m MODEL -f TEXT -o IMAT.gguf: the mean squared activation
 * of every input column of every weight matrix over calibration text, for
 * `lowbit quantize --imatrix` (model/imatrix.h; llama.cpp's GGUF format). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"
#include "model/imatrix.h"

static void help(void) {
    printf("usage: lowbit imatrix -m MODEL -f TEXT -o IMAT.gguf [options]\n\n"
           "Runs the text through the model in chunks and sums, for every weight matrix,\n"
           "the squared activations of each input column.\n\n" CLI_COMMON_HELP
           "  -f, --file FILE      calibration text\n"
           "  -o, --output FILE    imatrix to write (GGUF, llama.cpp's layout)\n"
           "  -c, --ctx-size N     tokens per chunk (default 512)\n"
           "      --chunks N       stop after N chunks (default: all the text)\n");
}

/* Rows evaluated per call: every row goes through the output matrix too. */
#define SUB_BATCH 64

int cmd_imatrix(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "imatrix", 0};
    const char *file = NULL, *out = NULL;
    int n_ctx = 512, max_chunks = 0;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_flag(&a, "-f", "--file")) file = cli_value(&a);
        else if (cli_flag(&a, "-o", "--output")) out = cli_value(&a);
        else if (cli_flag(&a, "-c", "--ctx-size")) n_ctx = cli_int(&a, 8, 1 << 20);
        else if (cli_flag(&a, "--chunks", NULL)) max_chunks = cli_int(&a, 1, 1 << 30);
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (!co.model || !file || !out) {
        fprintf(stderr, "lowbit imatrix: -m MODEL, -f TEXT and -o IMAT.gguf are required (see --help)\n");
        return CLI_USAGE;
    }
    if (cli_common_apply(&co)) return CLI_USAGE;

    int rc = CLI_FAIL;
    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_imatrix_collector *col = NULL;
    int32_t *toks = NULL;
    float *logits = NULL;
    lb_status s;
    if ((s = cli_load_model(&co, &m))) { cli_error("imatrix", s); goto done; }
    if (!lb_model_has_vocab(m)) { fprintf(stderr, "lowbit imatrix: %s has no vocabulary\n", co.model); goto done; }
    int n_tok = 0;
    if ((s = cli_tokenize_file(m, file, &toks, &n_tok))) { cli_error("imatrix", s); goto done; }
    int n_chunk = n_tok / n_ctx;
    if (max_chunks > 0 && max_chunks < n_chunk) n_chunk = max_chunks;
    if (n_chunk < 1) {
        fprintf(stderr, "lowbit imatrix: %d tokens are fewer than one chunk of %d (use a smaller -c)\n", n_tok, n_ctx);
        goto done;
    }
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = SUB_BATCH;
    cp.n_threads = co.threads;
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("imatrix", s); goto done; }
    if ((s = lb_imatrix_collector_new(ctx, &col))) { cli_error("imatrix", s); goto done; }
    if (!(logits = malloc((size_t)SUB_BATCH * lb_model_n_vocab(m) * sizeof *logits))) goto done;
    fprintf(stderr, "imatrix: %d chunks of %d tokens from %s\n", n_chunk, n_ctx, file);
    const int bos = lb_token_bos(m);
    const double t0 = lb_time_s();
    for (int c = 0; c < n_chunk; c++) {
        int32_t *chunk = toks + (size_t)c * n_ctx;
        /* every chunk starts like a fresh text, as llama-imatrix does */
        if (bos >= 0 && lb_add_bos_default(m)) chunk[0] = bos;
        lb_context_reset(ctx);
        for (int p = 0; p < n_ctx && s == LB_OK; p += SUB_BATCH)
            s = lb_eval(ctx, chunk + p, LB_MIN(SUB_BATCH, n_ctx - p), p, logits, 1);
        if (s == LB_OK && lb_cancel_requested()) s = lb_fail(LB_ERR_INTERRUPTED, "interrupted");
        if (s) { cli_error("imatrix", s); goto done; }
        const double el = lb_time_s() - t0;
        char what[96];
        snprintf(what, sizeof what, "chunks, %.1f s, about %.0f s left", el, el / (c + 1) * (n_chunk - c - 1));
        cli_progress(NULL, what, c + 1, n_chunk);
    }
    if ((s = lb_imatrix_collector_write(col, out, n_chunk, n_ctx, file))) { cli_error("imatrix", s); goto done; }
    printf("imatrix of %d chunks x %d tokens -> %s\n", n_chunk, n_ctx, out);
    rc = CLI_OK;
done:
    lb_imatrix_collector_free(col);
    lb_context_free(ctx);
    lb_model_free(m);
    free(logits);
    free(toks);
    return rc;
}
