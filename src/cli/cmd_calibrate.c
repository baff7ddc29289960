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
           CLI_CHUNK_HELP("calibration file"));
}

int cmd_calibrate(int argc, char **argv) {
    cli_common co = {0};
    cli_chunk_opts o = CLI_CHUNK_OPTS_DEFAULT;
    cli_args a = {argc, 1, argv, "calibrate", 0};
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_chunk_flag(&a, &o)) {}
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (cli_chunk_check("calibrate", &co, &o, "CALIB.gguf") || cli_common_apply(&co)) return CLI_USAGE;

    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_calib_collector *col = NULL;
    int32_t *toks = NULL;
    lb_status s = LB_OK;
    int n_chunk, rc = cli_chunk_open("calibrate", &co, &o, &m, &toks, &n_chunk);
    if (rc) goto done;
    rc = CLI_FAIL;
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = o.n_ctx;
    cp.n_batch = o.n_ctx; /* one observed multiply per chunk and input: one GEMM each */
    cp.n_threads = co.threads;
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("calibrate", s); goto done; }
    uint64_t bytes = 0;
    if ((s = lb_calib_collector_new(ctx, &col, &bytes))) { cli_error("calibrate", s); goto done; }
    fprintf(stderr, "calibrate: %.2f GiB of accumulators\n", (double)bytes / (1u << 30));
    const double t0 = lb_time_s();
    for (int c = 0; c < n_chunk; c++) {
        lb_context_reset(ctx);
        s = lb_eval(ctx, cli_chunk_tokens(m, &o, toks, c), o.n_ctx, 0, NULL, 0);
        if (s == LB_OK && lb_cancel_requested()) s = lb_fail(LB_ERR_INTERRUPTED, "interrupted");
        if (s) { cli_error("calibrate", s); goto done; }
        cli_chunk_progress(t0, c + 1, n_chunk);
    }
    if ((s = lb_calib_collector_write(col, o.out, n_chunk, o.n_ctx, o.file, cli_progress, NULL))) {
        cli_error("calibrate", s);
        goto done;
    }
    printf("calibration of %d chunks x %d tokens -> %s (%.1f s)\n", n_chunk, o.n_ctx, o.out, lb_time_s() - t0);
    rc = CLI_OK;
done:
    if (s == LB_ERR_INTERRUPTED) rc = 130;
    lb_calib_collector_free(col);
    lb_context_free(ctx);
    lb_model_free(m);
    free(toks);
    return rc;
}
