/* lowbit calibrate -m MODEL -f TEXT -o CALIB.gguf: the Hessian H = 2 XᵀX / n
 * of every distinct linear-layer input over calibration text, for
 * `lowbit quantize --gptq` (model/calib.h documents the file). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"
#include "model/calib.h"

static void help(void) {
    printf("usage: lowbit calibrate -m MODEL -f TEXT -o CALIB.gguf [options]\n\n"
           "Runs the text through the model in chunks and accumulates, per layer, the\n"
           "Hessian H = 2 X^T X / n of each distinct matrix input (Q/K/V share one,\n"
           "gate/up share one, attn_output, ffn_down), for lowbit quantize --gptq.\n"
           "The file also holds the per-column squared sums, so it serves --imatrix too.\n\n" CLI_COMMON_HELP
           "  -f, --file FILE      calibration text (keep it apart from the text you score)\n"
           "  -o, --output FILE    calibration file to write (GGUF)\n"
           "  -c, --ctx-size N     tokens per chunk (default 512)\n"
           "      --chunks N       use N chunks (default: all the text)\n"
           "      --skip-chunks N  start after the first N chunks of the text (e.g. past the ones\n"
           "                       lowbit perplexity scores)\n");
}

int cmd_calibrate(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "calibrate", 0};
    const char *file = NULL, *out = NULL;
    int n_ctx = 512, max_chunks = 0, skip = 0;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_flag(&a, "-f", "--file")) file = cli_value(&a);
        else if (cli_flag(&a, "-o", "--output")) out = cli_value(&a);
        else if (cli_flag(&a, "-c", "--ctx-size")) n_ctx = cli_int(&a, 8, 1 << 20);
        else if (cli_flag(&a, "--chunks", NULL)) max_chunks = cli_int(&a, 1, 1 << 30);
        else if (cli_flag(&a, "--skip-chunks", NULL)) skip = cli_int(&a, 0, 1 << 30);
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (!co.model || !file || !out) {
        fprintf(stderr, "lowbit calibrate: -m MODEL, -f TEXT and -o CALIB.gguf are required (see --help)\n");
        return CLI_USAGE;
    }
    if (cli_common_apply(&co)) return CLI_USAGE;

    int rc = CLI_FAIL;
    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_calib_collector *col = NULL;
    int32_t *toks = NULL;
    lb_status s;
    if ((s = cli_load_model(&co, &m))) { cli_error("calibrate", s); goto done; }
    if (!lb_model_has_vocab(m)) { fprintf(stderr, "lowbit calibrate: %s has no vocabulary\n", co.model); goto done; }
    int n_tok = 0;
    if ((s = cli_tokenize_file(m, file, &toks, &n_tok))) { cli_error("calibrate", s); goto done; }
    int n_chunk = n_tok / n_ctx - skip;
    if (max_chunks > 0 && max_chunks < n_chunk) n_chunk = max_chunks;
    if (n_chunk < 1) {
        fprintf(stderr, "lowbit calibrate: %d tokens leave no chunk of %d after skipping %d (use a smaller -c, "
                "fewer --skip-chunks or more text)\n", n_tok, n_ctx, skip);
        goto done;
    }
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx; /* one observed multiply per chunk and input: one GEMM each */
    cp.n_threads = co.threads;
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("calibrate", s); goto done; }
    uint64_t bytes = 0;
    if ((s = lb_calib_collector_new(ctx, &col, &bytes))) { cli_error("calibrate", s); goto done; }
    fprintf(stderr, "calibrate: %d chunks of %d tokens from %s (chunks %d..%d), %.2f GiB of accumulators\n", n_chunk,
            n_ctx, file, skip, skip + n_chunk - 1, (double)bytes / (1u << 30));
    const int bos = lb_token_bos(m);
    const double t0 = lb_time_s();
    for (int c = 0; c < n_chunk; c++) {
        int32_t *chunk = toks + (size_t)(c + skip) * n_ctx;
        if (bos >= 0 && lb_add_bos_default(m)) chunk[0] = bos; /* every chunk starts like a fresh text */
        lb_context_reset(ctx);
        s = lb_eval(ctx, chunk, n_ctx, 0, NULL, 0);
        if (s == LB_OK && lb_cancel_requested()) s = lb_fail(LB_ERR_INTERRUPTED, "interrupted");
        if (s) { cli_error("calibrate", s); goto done; }
        const double el = lb_time_s() - t0;
        char what[96];
        snprintf(what, sizeof what, "chunks, %.1f s, about %.0f s left", el, el / (c + 1) * (n_chunk - c - 1));
        cli_progress(NULL, what, c + 1, n_chunk);
    }
    if ((s = lb_calib_collector_write(col, out, n_chunk, n_ctx, file, cli_progress, NULL))) {
        cli_error("calibrate", s);
        goto done;
    }
    printf("calibration of %d chunks x %d tokens -> %s (%.1f s)\n", n_chunk, n_ctx, out, lb_time_s() - t0);
    rc = CLI_OK;
done:
    if (s == LB_ERR_INTERRUPTED) rc = 130;
    lb_calib_collector_free(col);
    lb_context_free(ctx);
    lb_model_free(m);
    free(toks);
    return rc;
}
