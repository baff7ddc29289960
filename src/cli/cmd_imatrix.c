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
           "the squared activations of each input column (llama.cpp's imatrix layout).\n\n" CLI_COMMON_HELP
           CLI_CHUNK_HELP("imatrix"));
}

/* Rows evaluated per call: every row goes through the output matrix too. */
#define SUB_BATCH 64

int cmd_imatrix(int argc, char **argv) {
    cli_common co = {0};
    cli_chunk_opts o = CLI_CHUNK_OPTS_DEFAULT;
    cli_args a = {argc, 1, argv, "imatrix", 0};
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_chunk_flag(&a, &o)) {}
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (cli_chunk_check("imatrix", &co, &o, "IMAT.gguf") || cli_common_apply(&co)) return CLI_USAGE;

    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_imatrix_collector *col = NULL;
    int32_t *toks = NULL;
    float *logits = NULL;
    lb_status s = LB_OK;
    int n_chunk, rc = cli_chunk_open("imatrix", &co, &o, &m, &toks, &n_chunk);
    if (rc) goto done;
    rc = CLI_FAIL;
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = o.n_ctx;
    cp.n_batch = SUB_BATCH;
    cp.n_threads = co.threads;
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("imatrix", s); goto done; }
    if ((s = lb_imatrix_collector_new(ctx, &col))) { cli_error("imatrix", s); goto done; }
    if (!(logits = malloc((size_t)SUB_BATCH * lb_model_n_vocab(m) * sizeof *logits))) {
        fprintf(stderr, "lowbit imatrix: out of memory\n");
        goto done;
    }
    const double t0 = lb_time_s();
    for (int c = 0; c < n_chunk; c++) {
        const int32_t *chunk = cli_chunk_tokens(m, &o, toks, c);
        lb_context_reset(ctx);
        for (int p = 0; p < o.n_ctx && s == LB_OK; p += SUB_BATCH)
            s = lb_eval(ctx, chunk + p, LB_MIN(SUB_BATCH, o.n_ctx - p), p, logits, 1);
        if (s == LB_OK && lb_cancel_requested()) s = lb_fail(LB_ERR_INTERRUPTED, "interrupted");
        if (s) { cli_error("imatrix", s); goto done; }
        cli_chunk_progress(t0, c + 1, n_chunk);
    }
    if ((s = lb_imatrix_collector_write(col, o.out, n_chunk, o.n_ctx, o.file))) { cli_error("imatrix", s); goto done; }
    printf("imatrix of %d chunks x %d tokens -> %s (%.1f s)\n", n_chunk, o.n_ctx, o.out, lb_time_s() - t0);
    rc = CLI_OK;
done:
    if (s == LB_ERR_INTERRUPTED) rc = 130;
    lb_imatrix_collector_free(col);
    lb_context_free(ctx);
    lb_model_free(m);
    free(logits);
    free(toks);
    return rc;
}
