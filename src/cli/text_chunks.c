/* Calibration text in chunks, shared by `lowbit imatrix` and `lowbit
 * calibrate`: the same flags (-f, -o, -c, --chunks, --skip-chunks), the same
 * checks and messages, and the same per-chunk progress line. */
#include <stdlib.h>

#include "cli/cli.h"
#include "core/common.h"

int cli_chunk_flag(cli_args *a, cli_chunk_opts *o) {
    if (cli_flag(a, "-f", "--file")) o->file = cli_value(a);
    else if (cli_flag(a, "-o", "--output")) o->out = cli_value(a);
    else if (cli_flag(a, "-c", "--ctx-size")) o->n_ctx = cli_int(a, 8, 1 << 20);
    else if (cli_flag(a, "--chunks", NULL)) o->max_chunks = cli_int(a, 1, 1 << 30);
    else if (cli_flag(a, "--skip-chunks", NULL)) o->skip = cli_int(a, 0, 1 << 30);
    else return 0;
    return 1;
}

int cli_chunk_check(const char *cmd, const cli_common *co, const cli_chunk_opts *o, const char *out_name) {
    if (co->model && o->file && o->out) return CLI_OK;
    fprintf(stderr, "lowbit %s: -m MODEL, -f TEXT and -o %s are required (see --help)\n", cmd, out_name);
    return CLI_USAGE;
}

int cli_chunk_open(const char *cmd, const cli_common *co, const cli_chunk_opts *o, lb_model **m, int32_t **toks,
                   int *n_chunk) {
    *m = NULL, *toks = NULL, *n_chunk = 0;
    lb_status s;
    if ((s = cli_load_model(co, m))) { cli_error(cmd, s); return CLI_FAIL; }
    if (!lb_model_has_vocab(*m)) {
        fprintf(stderr, "lowbit %s: %s has no vocabulary\n", cmd, co->model);
        return CLI_FAIL;
    }
    int n_tok = 0;
    if ((s = cli_tokenize_file(*m, o->file, toks, &n_tok))) { cli_error(cmd, s); return CLI_FAIL; }
    int n = n_tok / o->n_ctx - o->skip;
    if (o->max_chunks > 0 && o->max_chunks < n) n = o->max_chunks;
    if (n < 1) {
        fprintf(stderr, "lowbit %s: %d tokens leave no chunk of %d after skipping %d (use a smaller -c, "
                "fewer --skip-chunks or more text)\n", cmd, n_tok, o->n_ctx, o->skip);
        return CLI_FAIL;
    }
    *n_chunk = n;
    fprintf(stderr, "%s: %d chunks of %d tokens from %s (chunks %d..%d)\n", cmd, n, o->n_ctx, o->file, o->skip,
            o->skip + n - 1);
    return CLI_OK;
}

int32_t *cli_chunk_tokens(lb_model *m, const cli_chunk_opts *o, int32_t *toks, int c) {
    int32_t *chunk = toks + (size_t)(c + o->skip) * o->n_ctx;
    /* every chunk starts like a fresh text, as llama-imatrix does */
    const int bos = lb_token_bos(m);
    if (bos >= 0 && lb_add_bos_default(m)) chunk[0] = bos;
    return chunk;
}

void cli_chunk_progress(double t0, int done, int total) {
    const double el = lb_time_s() - t0;
    char what[96];
    snprintf(what, sizeof what, "chunks, %.1f s, about %.0f s left", el, el / done * (total - done));
    cli_progress(NULL, what, done, total);
}
