/* lowbit perplexity: llama.cpp's method, so the numbers compare directly.
 * The whole file is tokenized (with BOS), cut into non-overlapping chunks of
 * n_ctx tokens; each chunk's first token becomes BOS, and only the second half
 * of each chunk is scored (every scored token sees at least n_ctx/2 of context).
 *
 * KL divergence: --kl-divergence-base FILE saves, for every scored position,
 * the full log-probability vector (uint16, linearly quantized per position
 * between its min and max, as llama.cpp does); --kl-divergence compares the
 * current model against it, or against a llama-perplexity base file (its
 * own layout, recognised by its magic), so lowbit's distributions can be
 * held to llama.cpp's or ik_llama.cpp's on the same model. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"
#include "kernels/vecops.h"

/* scored rows whose log-softmax (a pass over the vocabulary each: most of the
 * time for a large vocabulary) runs on the threads at once */
enum { LP_ROWS = 16 };

static void help(void) {
    printf("usage: lowbit perplexity -m MODEL -f TEXT [options]\n\n"
           CLI_COMMON_HELP CLI_DEVICE_HELP CLI_CACHE_HELP
           "  -f, --file FILE            text to score\n"
           "  -c, --ctx-size N           tokens per chunk (default 512)\n"
           "  -b, --batch-size N         tokens per forward pass (default: = ctx size)\n"
           "      --chunks N             score only the first N chunks (default: all)\n"
           "      --kl-divergence-base F save the log-probabilities to F (base model)\n"
           "      --kl-divergence        compare with --kl-divergence-base F (lowbit's, or llama-perplexity's):\n"
           "                             KLD, top-1 agreement, PPL ratio\n");
}

#define KLD_MAGIC "LBKLD001"

typedef struct {
    int32_t n_ctx, n_vocab, n_chunk, n_scored; /* n_scored positions per chunk */
} kld_header;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cmd_perplexity(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "perplexity", 0};
    cli_cache kv = {LB_TYPE_F32, LB_TYPE_F32, 0};
    const char *file = NULL, *kld_file = NULL, *device = NULL;
    int n_ctx = 512, n_batch = 0, max_chunks = 0, kld_compare = 0;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_device_flag(&a, &device)) {}
        else if (cli_cache_flag(&a, &kv)) {}
        else if (cli_flag(&a, "-f", "--file")) file = cli_value(&a);
        else if (cli_flag(&a, "-c", "--ctx-size")) n_ctx = cli_int(&a, 8, 1 << 20);
        else if (cli_flag(&a, "-b", "--batch-size")) n_batch = cli_int(&a, 1, 1 << 20);
        else if (cli_flag(&a, "--chunks", NULL)) max_chunks = cli_int(&a, 1, 1 << 30);
        else if (cli_flag(&a, "--kl-divergence-base", NULL)) kld_file = cli_value(&a);
        else if (cli_flag(&a, "--kl-divergence", NULL)) kld_compare = 1;
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (!co.model) { fprintf(stderr, "lowbit perplexity: -m MODEL is required (see --help)\n"); return CLI_USAGE; }
    if (kld_compare && !kld_file) { fprintf(stderr, "lowbit perplexity: --kl-divergence needs --kl-divergence-base FILE\n"); return CLI_USAGE; }
    if (!file && !kld_compare) { fprintf(stderr, "lowbit perplexity: -f TEXT is required (see --help)\n"); return CLI_USAGE; }
    if (cli_common_apply(&co)) return CLI_USAGE;
    const int dev = cli_device_apply("perplexity", device);
    if (dev < 0) return CLI_FAIL;

    int rc = CLI_FAIL;
    lb_model *m = NULL;
    lb_context *ctx = NULL;
    int32_t *toks = NULL;
    float *logits = NULL, *lp = NULL, *lp_base = NULL;
    uint16_t *qbuf = NULL;
    double *kld_vals = NULL;
    FILE *kf = NULL;
    lb_outfile out = {0};
    lb_status s;
    kld_header kh = {0, 0, 0, 0};
    int llama_fmt = 0; /* the base file is llama-perplexity's */

    if ((s = cli_load_model(&co, &m))) { cli_error("perplexity", s); goto done; }
    if (!lb_model_has_vocab(m)) { fprintf(stderr, "lowbit perplexity: %s has no vocabulary\n", co.model); goto done; }
    const int V = lb_model_n_vocab(m);
    int n_tok = 0;

    if (kld_compare) {
        /* the token stream comes from the base file, so both runs score the same tokens */
        kf = fopen(kld_file, "rb");
        char magic[8];
        if (kf && fread(magic, 1, 8, kf) == 8 && !memcmp(magic, "_logits_", 8)) {
            /* llama-perplexity's --kl-divergence-base file: n_ctx (u32), n_vocab, n_chunk, the tokens, then
             * per scored position its scale and min (floats) and n_vocab log-probabilities (u16, padded) */
            uint32_t nc = 0;
            llama_fmt = fread(&nc, 4, 1, kf) == 1 && fread(&kh.n_vocab, 4, 1, kf) == 1 && fread(&kh.n_chunk, 4, 1, kf) == 1;
            kh.n_ctx = nc > (1u << 24) ? 0 : (int32_t)nc;
            kh.n_scored = kh.n_ctx - 1 - kh.n_ctx / 2;
        }
        if (!kf || (!llama_fmt && (memcmp(magic, KLD_MAGIC, 8) || fread(&kh, sizeof kh, 1, kf) != 1))) {
            fprintf(stderr, "lowbit perplexity: %s is not a KL-divergence base file (lowbit's or llama-perplexity's)\n",
                    kld_file);
            goto done;
        }
        if (kh.n_vocab != V || kh.n_ctx < 8 || kh.n_chunk < 1 || kh.n_chunk > (1 << 24) / kh.n_ctx ||
            kh.n_scored != kh.n_ctx - 1 - kh.n_ctx / 2) {
            fprintf(stderr, "lowbit perplexity: %s was made with a vocabulary of %d (this model has %d) or is damaged\n",
                    kld_file, kh.n_vocab, V);
            goto done;
        }
        n_ctx = kh.n_ctx;
        n_tok = kh.n_ctx * kh.n_chunk;
        toks = malloc((size_t)n_tok * sizeof *toks);
        if (!toks || fread(toks, sizeof *toks, (size_t)n_tok, kf) != (size_t)n_tok) {
            fprintf(stderr, "lowbit perplexity: %s is truncated\n", kld_file);
            goto done;
        }
        for (int i = 0; i < n_tok; i++)
            if (toks[i] < 0 || toks[i] >= V) { fprintf(stderr, "lowbit perplexity: %s is damaged (token id %d)\n", kld_file, toks[i]); goto done; }
    } else {
        double t0 = lb_time_s();
        if ((s = cli_tokenize_file(m, file, &toks, &n_tok))) { cli_error("perplexity", s); goto done; }
        fprintf(stderr, "tokenized %s: %d tokens in %.2f s\n", file, n_tok, lb_time_s() - t0);
    }

    int n_chunk = n_tok / n_ctx;
    if (max_chunks > 0 && max_chunks < n_chunk) n_chunk = max_chunks;
    if (n_chunk < 1) {
        fprintf(stderr, "lowbit perplexity: %d tokens are fewer than one chunk of %d (use a smaller -c)\n", n_tok, n_ctx);
        goto done;
    }
    const int first = n_ctx / 2, n_scored = n_ctx - 1 - first;
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch ? n_batch : n_ctx;
    cp.n_threads = co.threads;
    cp.device = dev;
    cli_cache_apply(&kv, &cp);
    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("perplexity", s); goto done; }
    logits = malloc((size_t)n_ctx * V * sizeof *logits);
    lp = malloc((size_t)LP_ROWS * V * sizeof *lp); /* LP_ROWS rows' log-probabilities, computed in parallel */
    lp_base = malloc((size_t)V * sizeof *lp_base);
    qbuf = malloc((size_t)V * sizeof *qbuf);
    if (!logits || !lp || !lp_base || !qbuf) { fprintf(stderr, "lowbit perplexity: out of memory\n"); goto done; }
    if (kld_compare) {
        kld_vals = malloc((size_t)n_chunk * n_scored * sizeof *kld_vals);
        if (!kld_vals) goto done;
    } else if (kld_file) {
        if ((s = lb_outfile_open(&out, kld_file))) { cli_error("perplexity", s); goto done; }
        kld_header h = {n_ctx, V, n_chunk, n_scored};
        fwrite(KLD_MAGIC, 1, 8, out.f);
        fwrite(&h, sizeof h, 1, out.f);
        fwrite(toks, sizeof *toks, (size_t)n_chunk * n_ctx, out.f);
    }

    const int bos = lb_add_bos_default(m) ? lb_token_bos(m) : -1;
    const int n_par = co.threads > 0 ? co.threads : omp_get_max_threads();
    fprintf(stderr, "perplexity: %d chunks of %d tokens, scoring the last %d of each\n", n_chunk, n_ctx, n_scored);
    double nll = 0.0, nll2 = 0.0, nll_base = 0.0, kld_sum = 0.0, kld_sum2 = 0.0;
    long count = 0, same_top = 0;
    double t_start = lb_time_s();
    for (int c = 0; c < n_chunk; c++) {
        if (lb_cancel_requested()) { fprintf(stderr, "\ninterrupted\n"); rc = 130; goto done; }
        int32_t *chunk = toks + (size_t)c * n_ctx;
        int32_t saved = chunk[0];
        if (bos >= 0) chunk[0] = bos; /* base files store the raw stream: same replacement */
        s = lb_eval(ctx, chunk, n_ctx, 0, logits, 1);
        chunk[0] = saved;
        if (s) { cli_error("perplexity", s); goto done; }
        for (int j = first; j < n_ctx - 1; j++) {
            const int target = chunk[j + 1], r = (j - first) % LP_ROWS;
            if (r == 0) { /* the next rows' log-softmaxes side by side, each row computed as alone (same bits) */
                const int nr = LB_MIN(LP_ROWS, n_ctx - 1 - j);
#pragma omp parallel for num_threads(n_par) schedule(static, 1)
                for (int k = 0; k < nr; k++) lb_log_softmax(logits + (size_t)(j + k) * V, V, lp + (size_t)k * V);
            }
            const float *lpr = lp + (size_t)r * V;
            const double l = -(double)lpr[target];
            nll += l;
            nll2 += l * l;
            count++;
            if (kld_file && !kld_compare) {
                float mn = lpr[0], mx = lpr[0];
                for (int i = 1; i < V; i++) { mn = lpr[i] < mn ? lpr[i] : mn; mx = lpr[i] > mx ? lpr[i] : mx; }
                if (mn < mx - 60.0f) mn = mx - 60.0f; /* probabilities below e^-60 don't matter */
                const float scale = (mx - mn) / 65535.0f;
                for (int i = 0; i < V; i++) {
                    float v = (lpr[i] - mn) / (scale > 0 ? scale : 1.0f);
                    qbuf[i] = (uint16_t)(v < 0 ? 0 : v > 65535.0f ? 65535 : lrintf(v));
                }
                fwrite(&mn, sizeof mn, 1, out.f);
                fwrite(&scale, sizeof scale, 1, out.f);
                fwrite(qbuf, sizeof *qbuf, (size_t)V, out.f);
            } else if (kld_compare) {
                float mn, scale;
                int bad;
                if (llama_fmt) { /* scale first, then the min; the values padded to an even count */
                    uint16_t pad;
                    bad = fread(&scale, sizeof scale, 1, kf) != 1 || fread(&mn, sizeof mn, 1, kf) != 1 ||
                          fread(qbuf, sizeof *qbuf, (size_t)V, kf) != (size_t)V || (V % 2 && fread(&pad, 2, 1, kf) != 1);
                } else {
                    bad = fread(&mn, sizeof mn, 1, kf) != 1 || fread(&scale, sizeof scale, 1, kf) != 1 ||
                          fread(qbuf, sizeof *qbuf, (size_t)V, kf) != (size_t)V;
                }
                if (bad) {
                    fprintf(stderr, "\nlowbit perplexity: %s is truncated\n", kld_file);
                    goto done;
                }
                /* rebuild the base distribution and renormalise it after quantization */
                double z = 0.0;
                for (int i = 0; i < V; i++) { lp_base[i] = mn + scale * qbuf[i]; z += exp(lp_base[i]); }
                const float lz = (float)log(z);
                double kl = 0.0;
                int top_b = 0, top_q = 0;
                for (int i = 0; i < V; i++) {
                    lp_base[i] -= lz;
                    const double p = exp(lp_base[i]);
                    kl += p * ((double)lp_base[i] - lpr[i]);
                    if (lp_base[i] > lp_base[top_b]) top_b = i;
                    if (lpr[i] > lpr[top_q]) top_q = i;
                }
                if (kl < 0) kl = 0;
                kld_vals[count - 1] = kl;
                kld_sum += kl;
                kld_sum2 += kl * kl;
                same_top += top_b == top_q;
                nll_base += -(double)lp_base[target];
            }
        }
        if (c == 0) {
            double per = lb_time_s() - t_start;
            fprintf(stderr, "%.2f s per chunk, about %.1f minutes for all\n", per, per * n_chunk / 60.0);
        }
        printf("[%d]%.4f,", c + 1, exp(nll / count));
        fflush(stdout);
    }
    printf("\n");
    {
        const double mean = nll / count;
        double var = nll2 / count - mean * mean;
        const double ppl = exp(mean);
        const double err = var > 0 && count > 1 ? ppl * sqrt(var / (count - 1)) : 0.0;
        printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err);
        if (kld_compare) {
            const double ppl_base = exp(nll_base / count);
            const double km = kld_sum / count;
            double kvar = kld_sum2 / count - km * km;
            qsort(kld_vals, (size_t)count, sizeof *kld_vals, cmp_double);
            long i99 = (long)(0.99 * (count - 1));
            printf("PPL(base) = %.4f, PPL ratio PPL(Q)/PPL(base) = %.4f\n", ppl_base, ppl / ppl_base);
            printf("Mean KLD = %.6f +/- %.6f\n", km, kvar > 0 && count > 1 ? sqrt(kvar / (count - 1)) : 0.0);
            printf("99th percentile KLD = %.6f\n", kld_vals[i99]);
            printf("Top-1 agreement = %.3f%%\n", 100.0 * same_top / count);
        }
    }
    if (kld_file && !kld_compare) {
        if ((s = lb_outfile_commit(&out))) { cli_error("perplexity", s); goto done; }
        fprintf(stderr, "saved base log-probabilities to %s\n", kld_file);
    }
    rc = CLI_OK;
done:
    if (out.f) lb_outfile_abort(&out);
    if (kf) fclose(kf);
    free(toks);
    free(logits);
    free(lp);
    free(lp_base);
    free(qbuf);
    free(kld_vals);
    lb_context_free(ctx);
    lb_model_free(m);
    return rc;
}
