/* lowbit bench: prompt processing (ppN: N tokens in one batch) and text
 * generation (tgN: N tokens one at a time) speed, as llama-bench reports them:
 * mean +/- standard deviation over repetitions, after one warm-up. Like
 * llama-bench, every pass ends in the output head: pp computes the logits of
 * its last token, tg those of every token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/common.h"
#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/membw.h"
#include "kernels/peak.h"
#include "formats/repack.h"
#include "model/model.h"
#include "model/repack.h"
#ifdef LOWBIT_HAVE_CUDA
#include "model/forward_cuda.h"
#endif

static void help(void) {
    /* CLI_COMMON_HELP less its -t line: bench's -t takes a list (below) */
    printf("usage: lowbit bench (-m MODEL | --synthetic SHAPE [--type TYPE]) [options]\n\n"
           "Tokens/s of prompt processing (ppN: one batch of N) and generation (tgN: N\n"
           "tokens one at a time) as llama-bench measures them: pp ends in the logits of\n"
           "its last token, tg computes every token's.\n\n");
    for (const char *p = CLI_COMMON_HELP, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl) break;
        if (strncmp(p, "  -t,", 5)) fwrite(p, 1, (size_t)(nl - p + 1), stdout);
    }
    printf(CLI_DEVICE_HELP);
    printf("  -ctk, --cache-type-k T[,T]  KV cache keys: f32 (default), f16, q8_0 or q4_0; a list runs\n"
           "                       every test with each (as llama-bench: every -ctk with every -ctv)\n"
           "  -ctv, --cache-type-v T[,T]  KV cache values: f32 (default), f16, q8_0 or q4_0\n"
           "      --swa-full         sliding-window layers keep every position (default: a ring of\n"
           "                         the window plus a batch)\n");
    printf("      --synthetic SHAPE  random-weight model built in memory, no download needed\n"
           "      --type TYPE        weight type of the synthetic model (default Q4_0); an\n"
           "                         interleaved type (Q4_0_8X8 ...) means its base type repacked\n"
           "      --repack MODE      auto|off|4x4|4x8|8x8: layout Q4_0/IQ4_NL/Q8_0 weights are\n"
           "                         repacked to at load (default auto; also LOWBIT_REPACK;\n"
           "                         Q2_K/CB2/CB3 have one layout, 16X4, used unless off)\n"
           "  -p, --n-prompt N[,N]   prompt tokens per pp test (default 512; 0 = skip)\n"
           "  -n, --n-gen N[,N]      generated tokens per tg test (default 128; 0 = skip)\n"
           "  -d, --n-depth N[,N]    tokens already in the KV cache when each test starts\n"
           "                         (default 0; filled untimed, as llama-bench -d: \"tg128 @ d4096\")\n"
           "  -t, --threads N[,N]    thread counts to test (default: all cores)\n"
           "  -r, --repetitions N    repetitions per test (default 5)\n"
           "  -o, --output FORMAT    md (default: a table), csv, json or jsonl, with llama-bench's\n"
           "                         field names (model_type, n_prompt, n_gen, n_depth, avg_ts,\n"
           "                         stddev_ts, samples_ts, ...); the rooflines stay on stderr\n"
           "      --no-roofline      do not measure the memory read bandwidth (1 GiB, ~2 s) that\n"
           "                         tg results are compared with (and 256 MiB before and after\n"
           "                         each tg repetition, for VMs whose bandwidth changes by the\n"
           "                         second), nor the int8 peak (~0.1 s) that pp results are\n"
           "                         compared with\n\n"
           "environment: LOWBIT_PREFETCH=l1|l2 puts decode's weight prefetches in L1 or L2\n"
           "(default: L2 on AMD CPUs, L1 elsewhere); LOWBIT_GEMV_GROUPS=1|2 sets how many\n"
           "16-row groups the AVX-512 K-quant decode GEMV streams side by side (default: 1 on\n"
           "AMD CPUs, 2 elsewhere)\n\n"
           "synthetic shapes:");
    for (const char *const *s = lb_synthetic_shapes(); *s; s++) printf(" %s", *s);
    printf("\n");
}

/* -ctk/-ctv's list, "f16,q8_0" -> {LB_TYPE_F16, LB_TYPE_Q8_0}, into
 * out[LB_KV_TYPES]: the count, or 0 with a->bad set after printing why */
static int cache_list_flag(cli_args *a, int *out) {
    const char *flag = a->argv[a->i], *v = cli_value(a);
    for (int n = 0; v; v++) {
        const size_t len = strcspn(v, ",");
        char name[16];
        if (n == LB_KV_TYPES) {
            fprintf(stderr, "lowbit bench: %s: at most %d cache types\n", flag, LB_KV_TYPES);
            break;
        }
        snprintf(name, sizeof name, "%.*s", (int)len, v);
        if ((out[n++] = cli_cache_type("bench", flag, len < sizeof name ? name : v)) < 0) break;
        v += len;
        if (!*v) return n;
    }
    a->bad = 1;
    return 0;
}

/* "512,1024" -> {512, 1024}; returns the count, 0 on a bad list */
static int parse_list(const char *v, int *out, int cap, int lo, int hi) {
    int n = 0;
    while (v && *v && n < cap) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || x < lo || x > hi || (*end && *end != ',')) return 0;
        out[n++] = (int)x;
        v = *end ? end + 1 : end;
    }
    return n;
}

static void stats(const double *v, int n, double *mean, double *sd) {
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0.0;
}

/* Per token, over every matrix product (the embedding table is only read a
 * row from, attention is left out): weight bytes a decoded token streams
 * (macs = 0: the bandwidth roofline of tg), or weight multiply-adds (macs =
 * 1: the int8 roofline of pp). The output head counts with head_share: 1 for
 * tg, 1/n for ppN (logits of its last token only). A tied head is counted
 * here, once, as output: the embedding table is m->output's data then. */
static double per_token(const lb_model *m, int macs, double head_share) {
    const lb_matrix *out = &m->output;
    double v = head_share * (macs ? (double)out->K * (double)out->N : (double)lb_matrix_bytes(out));
    for (int il = 0; il < m->hp.n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down, &l->router,
                                 &l->wq_a, &l->wq_b, &l->wkv_a};
        for (int i = 0; i < 11; i++)
            if (ws[i]->data) v += macs ? (double)ws[i]->K * (double)ws[i]->N : (double)lb_matrix_bytes(ws[i]);
        for (int h = 0; l->wk_b && h < m->hp.n_head; h++) { /* deepseek2: each head's absorbed K and V */
            const lb_matrix *kv[2] = {&l->wk_b[h], &l->wv_b[h]};
            for (int i = 0; i < 2; i++) v += macs ? (double)kv[i]->K * (double)kv[i]->N : (double)lb_matrix_bytes(kv[i]);
        }
        /* MoE: a token runs n_expert_used of the experts, so the average of
         * their matrices times that many (experts of one type and shape) */
        for (int e = 0; l->exp_gate && e < m->hp.n_expert; e++) {
            const lb_matrix *xs[] = {&l->exp_gate[e], &l->exp_up[e], &l->exp_down[e]};
            for (int i = 0; i < 3; i++)
                v += (double)m->hp.n_expert_used / m->hp.n_expert *
                     (macs ? (double)xs[i]->K * (double)xs[i]->N : (double)lb_matrix_bytes(xs[i]));
        }
    }
    return v;
}

/* Whether the layers' matrices run int8 kernels (float weights run float
 * ones: the int8 peak is no roofline for them). */
static int int8_weights(const lb_model *m) {
    if (m->hp.n_layer < 1) return 0;
    const lb_layer *l = &m->layers[m->hp.n_layer - 1]; /* deepseek2's first layers are dense */
    const int t = l->exp_up ? l->exp_up[0].type : l->w_up.type;
    return t != LB_TYPE_F32 && t != LB_TYPE_F16 && t != LB_TYPE_BF16;
}

/* tokens/s of one run: pp = one batch, tg = n single-token passes, each
 * with the logits into `logits` (n_vocab floats) as llama-bench has them:
 * without, the pass would skip the output head, a large share of a small
 * model (170 of gemma-3-270m's 235 MiB) */
static lb_status run_test(lb_context *ctx, const int32_t *toks, int n, int pos0, int is_pp, float *logits,
                          double *tps) {
    double t0 = lb_time_s();
    lb_status s;
    if (is_pp) {
        s = lb_eval(ctx, toks, n, pos0, logits, 0);
    } else {
        s = LB_OK;
        for (int i = 0; i < n && s == LB_OK; i++) s = lb_eval(ctx, toks + i, 1, pos0 + i, logits, 0);
    }
    double dt = lb_time_s() - t0;
    *tps = n / (dt > 0 ? dt : 1e-9);
    return s;
}

/* Bytes of KV cache one token reads at position pos: every layer's keys
 * and values up to pos (a sliding-window layer's last `window`), in the
 * layout and element types of kernels/attention.h. */
static double kv_bytes_at(const lb_model *m, int ctk, int ctv, double pos) {
    const lb_hparams *hp = &m->hp;
    const int kt = lb_attn_kv_type(ctk), vt = lb_attn_kv_type(ctv);
    const double row = hp->n_head_kv * ((double)lb_attn_k_block_bytes(hp->head_dim, kt) / LB_ATTN_KB +
                                        (double)lb_attn_v_row_bytes(hp->head_dim, vt));
    double v = 0;
    for (int il = 0; il < hp->n_layer; il++)
        v += row * (m->layers[il].is_local && hp->sliding_window > 0 && pos > hp->sliding_window ? hp->sliding_window
                                                                                                  : pos);
    return v;
}

/* Each tg repetition beside the read bandwidth measured right before and
 * right after it (lb_read_bandwidth_beside, kernels/membw.h); a repetition
 * whose two readings are not steady ran while the mode changed, and is
 * shown but left out of the median. */
static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "  tg128 beside each repetition: ..." on stderr; share[] is scratch */
static void print_beside(int n, const double *runs, const double *before, const double *after, int reps, double wb,
                         double *share) {
    int n_steady = 0;
    fprintf(stderr, "  tg%d beside each repetition, %% of the read bandwidth measured just before and after it (GB/s):",
            n);
    for (int i = 0; i < reps; i++) {
        const double lo = before[i], hi = after[i];
        const double pct = 100.0 * runs[i] * wb / 1e9 / (0.5 * (before[i] + after[i]));
        const int steady = lb_read_bandwidth_steady(lo, hi);
        fprintf(stderr, "%s %.0f%% (%.1f, %.1f%s)", i ? "," : "", pct, before[i], after[i], steady ? "" : ": changed");
        if (steady) share[n_steady++] = pct;
    }
    if (n_steady) {
        qsort(share, (size_t)n_steady, sizeof *share, cmp_double);
        const double med = n_steady % 2 ? share[n_steady / 2] : 0.5 * (share[n_steady / 2 - 1] + share[n_steady / 2]);
        fprintf(stderr, "; median of the %d steady: %.0f%%\n", n_steady, med);
    } else {
        fprintf(stderr, "; none steady\n");
    }
}

/* -o: llama-bench's output formats, with its field names for what lowbit
 * measures the same way (tokens/s per repetition; ns per test run) */
enum { FMT_MD, FMT_CSV, FMT_JSON, FMT_JSONL };
typedef struct {
    const char *file, *desc;
    uint64_t size, n_params;
    const char *isa;
    int threads, type_k, type_v, n_prompt, n_gen, n_depth;
    double mean, sd;        /* tokens/s */
    const double *samples;  /* tokens/s of each repetition */
    int n_samples;
} bench_row;

/* s as a JSON string (quotes, backslashes and control bytes escaped) */
static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

/* s as a CSV field: quoted, quotes doubled */
static void csv_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_row(int fmt, const bench_row *r, int index) {
    char when[32];
    const time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const int tokens = r->n_prompt + r->n_gen;
    const double avg_ns = r->mean > 0 ? tokens / r->mean * 1e9 : 0, sd_ns = r->mean > 0 ? avg_ns * r->sd / r->mean : 0;
    const char *tk = lb_attn_kv_type_name(lb_attn_kv_type(r->type_k));
    const char *tv = lb_attn_kv_type_name(lb_attn_kv_type(r->type_v));
    if (fmt == FMT_CSV) {
        csv_str(r->file), putchar(','), csv_str(r->desc);
        printf(",%llu,%llu,", (unsigned long long)r->size, (unsigned long long)r->n_params);
        csv_str(r->isa);
        printf(",%d,%s,%s,%d,%d,%d,%s,%.0f,%.0f,%.6f,%.6f\n", r->threads, tk, tv, r->n_prompt, r->n_gen, r->n_depth,
               when, avg_ns, sd_ns, r->mean, r->sd);
        return;
    }
    if (fmt == FMT_JSON) printf(index ? ",\n  " : "  ");
    printf("{\"model_filename\": "), json_str(r->file);
    printf(", \"model_type\": "), json_str(r->desc);
    printf(", \"model_size\": %llu, \"model_n_params\": %llu, \"isa\": ", (unsigned long long)r->size,
           (unsigned long long)r->n_params);
    json_str(r->isa);
    printf(", \"n_threads\": %d, \"type_k\": \"%s\", \"type_v\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, "
           "\"n_depth\": %d, \"test_time\": \"%s\", \"avg_ns\": %.0f, \"stddev_ns\": %.0f, \"avg_ts\": %.6f, "
           "\"stddev_ts\": %.6f, \"samples_ts\": [",
           r->threads, tk, tv, r->n_prompt, r->n_gen, r->n_depth, when, avg_ns, sd_ns, r->mean, r->sd);
    for (int i = 0; i < r->n_samples; i++) printf("%s%.6f", i ? ", " : "", r->samples[i]);
    printf("]}%s", fmt == FMT_JSONL ? "\n" : "");
}

int cmd_bench(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "bench", 0};
    int ctks[LB_KV_TYPES] = {LB_TYPE_F32}, ctvs[LB_KV_TYPES] = {LB_TYPE_F32}, n_ctk = 1, n_ctv = 1, swa_full = 0;
    const char *synthetic = NULL, *type_name = "Q4_0", *device = NULL;
    int pp[8] = {512}, tg[8] = {128}, th[8] = {0}, dp[8] = {0}, n_pp = 1, n_tg = 1, n_th = 0, n_dp = 1, reps = 5,
        roofline = 1, fmt = FMT_MD;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_flag(&a, "-t", "--threads")) {
            if (!(n_th = parse_list(cli_value(&a), th, 8, 1, 1024))) { fprintf(stderr, "lowbit bench: bad thread list\n"); a.bad = 1; }
        }
        else if (cli_common_flag(&a, &co)) {}
        else if (cli_device_flag(&a, &device)) {}
        else if (cli_flag(&a, "-ctk", "--cache-type-k")) n_ctk = cache_list_flag(&a, ctks);
        else if (cli_flag(&a, "-ctv", "--cache-type-v")) n_ctv = cache_list_flag(&a, ctvs);
        else if (cli_flag(&a, "--swa-full", NULL)) swa_full = 1;
        else if (cli_flag(&a, "--synthetic", NULL)) synthetic = cli_value(&a);
        else if (cli_flag(&a, "--type", NULL)) type_name = cli_value(&a);
        else if (cli_flag(&a, "--repack", NULL)) {
            const char *v = cli_value(&a);
            if (v && !lb_repack_set_mode(v)) { fprintf(stderr, "lowbit bench: --repack takes auto|off|4x4|4x8|8x8\n"); a.bad = 1; }
        }
        else if (cli_flag(&a, "-p", "--n-prompt")) {
            if (!(n_pp = parse_list(cli_value(&a), pp, 8, 0, 1 << 16))) { fprintf(stderr, "lowbit bench: bad -p list\n"); a.bad = 1; }
        } else if (cli_flag(&a, "-n", "--n-gen")) {
            if (!(n_tg = parse_list(cli_value(&a), tg, 8, 0, 1 << 16))) { fprintf(stderr, "lowbit bench: bad -n list\n"); a.bad = 1; }
        } else if (cli_flag(&a, "-d", "--n-depth")) {
            if (!(n_dp = parse_list(cli_value(&a), dp, 8, 0, 1 << 20))) { fprintf(stderr, "lowbit bench: bad -d list\n"); a.bad = 1; }
        } else if (cli_flag(&a, "-o", "--output")) {
            const char *v = cli_value(&a);
            if (v && (fmt = !strcmp(v, "md") ? FMT_MD : !strcmp(v, "csv") ? FMT_CSV : !strcmp(v, "json") ? FMT_JSON
                                                       : !strcmp(v, "jsonl") ? FMT_JSONL : -1) < 0) {
                fprintf(stderr, "lowbit bench: -o %s: expected md, csv, json or jsonl\n", v);
                a.bad = 1;
            }
        } else if (cli_flag(&a, "-r", "--repetitions")) reps = cli_int(&a, 1, 1000);
        else if (cli_flag(&a, "--no-roofline", NULL)) roofline = 0;
        else cli_unknown(&a);
    }
    if (a.bad || !type_name) return CLI_USAGE;
    if (!co.model == !synthetic) { fprintf(stderr, "lowbit bench: give exactly one of -m MODEL or --synthetic SHAPE (see --help)\n"); return CLI_USAGE; }
    if (cli_common_apply(&co)) return CLI_USAGE;
    const int dev = cli_device_apply("bench", device);
    if (dev < 0) return CLI_FAIL;
    int type = lb_type_from_name(type_name);
    if (synthetic && type < 0) { fprintf(stderr, "lowbit bench: unknown type '%s'\n", type_name); return CLI_USAGE; }
    const lb_repack_layout *rl = synthetic ? lb_repack_layout_of(type) : NULL;
    if (rl && dev != LB_DEVICE_CPU) {
        fprintf(stderr, "lowbit bench: --type %s is a CPU layout; the GPU takes %s\n", type_name, lb_type_name(rl->base));
        return CLI_USAGE;
    }
    if (rl) {
        /* built as the base type, then repacked at load like a file would be */
        char mode[8];
        snprintf(mode, sizeof mode, "%dx%d", rl->rows, rl->chunk);
        lb_repack_set_mode(mode);
        type = rl->base;
    }
    if (n_th == 0) { th[0] = co.threads; n_th = 1; }

    lb_model *m = NULL;
    lb_status s;
    double t0 = lb_time_s();
    if (synthetic) {
        lb_model_params mp = lb_model_default_params();
        mp.n_threads = co.threads;
        mp.act_bits = co.act_bits;
        fprintf(stderr, "building synthetic %s (%s)...\n", synthetic, type_name);
        s = lb_model_synthetic(synthetic, type, &mp, &m);
    } else {
        s = cli_load_model(&co, &m);
    }
    if (s) { cli_error("bench", s); return CLI_FAIL; }
    fprintf(stderr, "model ready in %.1f s: %s\n%s", lb_time_s() - t0, lb_model_desc(m), lb_model_kernel_summary(m));
    if (rl && !strstr(lb_model_kernel_summary(m), lb_type_name(rl->type)))
        fprintf(stderr, "warning: no %s kernel above scalar at level %s: weights stay %s\n", lb_type_name(rl->type),
                lb_isa_name(lb_cpu_level()), lb_type_name(rl->base));

    int max_tok = 1;
    for (int i = 0; i < n_pp; i++) max_tok = LB_MAX(max_tok, pp[i]);
    for (int i = 0; i < n_tg; i++) max_tok = LB_MAX(max_tok, tg[i]);
    for (int i = 0; i < n_dp; i++) max_tok = LB_MAX(max_tok, dp[i]);
    int32_t *toks = malloc((size_t)max_tok * sizeof *toks);
    double *runs = malloc((size_t)reps * 4 * sizeof *runs); /* then before, after, scratch (print_beside) */
    float *logits = malloc((size_t)lb_model_n_vocab(m) * sizeof *logits);
    if (!toks || !runs || !logits) {
        fprintf(stderr, "lowbit bench: out of memory\n");
        free(toks); free(runs); free(logits); lb_model_free(m);
        return CLI_FAIL;
    }
    double *before = runs + reps, *after = before + reps;
    uint8_t *probe_buf = NULL; /* allocated at the first tg test on the CPU */
    uint64_t r = 12345;
    for (int i = 0; i < max_tok; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t)((r >> 33) % (uint64_t)lb_model_n_vocab(m));
    }

    /* size and params as llama-bench prints them: every tensor of the file
     * (lb_model_size_bytes counts as llama_model_size does), MiB below 1 GiB,
     * parameters in M below 1e9 */
    char size[32], params[32];
    const double bytes = (double)lb_model_size_bytes(m), np = (double)lb_model_n_params(m);
    if (bytes < 1073741824.0) snprintf(size, sizeof size, "%.2f MiB", bytes / 1048576.0);
    else snprintf(size, sizeof size, "%.2f GiB", bytes / 1073741824.0);
    if (np < 1e9) snprintf(params, sizeof params, "%.2f M", np / 1e6);
    else snprintf(params, sizeof params, "%.2f B", np / 1e9);
    const char *model_file = synthetic ? synthetic : co.model;
    /* as llama-bench: the cache types get columns once they are not the default */
    const int kv_cols = n_ctk > 1 || n_ctv > 1 || ctks[0] != LB_TYPE_F32 || ctvs[0] != LB_TYPE_F32;
    if (fmt == FMT_MD) {
        printf("| model | size | params | isa | threads |%s test | t/s |\n", kv_cols ? " type_k | type_v |" : "");
        printf("| --- | ---: | ---: | --- | ---: |%s --- | ---: |\n", kv_cols ? " --- | --- |" : "");
    } else if (fmt == FMT_CSV) {
        printf("model_filename,model_type,model_size,model_n_params,isa,n_threads,type_k,type_v,n_prompt,n_gen,"
               "n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts\n");
    } else if (fmt == FMT_JSON) {
        printf("[\n");
    }
    int n_rows = 0;
    int rc = CLI_OK, bw_threads = 0, pk_threads = 0, described = 0;
    double bw = 0; /* read bandwidth at bw_threads threads */
    double pk = 0; /* int8 peak GOPS at pk_threads threads */
    /* llama-bench's order: each cache type pair (every -ctk with every -ctv),
     * within it each thread count, then each depth, pp tests, tg tests */
    for (int ct = 0; ct < n_ctk * n_ctv * n_th && rc == CLI_OK; ct++) {
        const int ti = ct % n_th, ctk = ctks[ct / n_th / n_ctv], ctv = ctvs[ct / n_th % n_ctv];
        char kv[40] = "";
        if (kv_cols)
            snprintf(kv, sizeof kv, " %s | %s |", lb_attn_kv_type_name(lb_attn_kv_type(ctk)),
                     lb_attn_kv_type_name(lb_attn_kv_type(ctv)));
        for (int di = 0; di < n_dp && rc == CLI_OK; di++) {
            const int depth = dp[di];
            char at[32] = "";
            if (depth > 0) snprintf(at, sizeof at, " @ d%d", depth);
            for (int kind = 0; kind < 2 && rc == CLI_OK; kind++) {
                const int *ns = kind == 0 ? pp : tg, nn = kind == 0 ? n_pp : n_tg;
                for (int k = 0; k < nn && rc == CLI_OK; k++) {
                    const int n = ns[k];
                    if (n == 0) continue;
                    lb_context *ctx = NULL;
                    lb_context_params cp = lb_context_default_params();
                    cp.n_ctx = depth + n;
                    /* tg at a depth: a batch of n at least, so that a sliding-window
                     * layer's ring (the window plus a batch) keeps what each
                     * repetition, starting over at the depth, sees */
                    cp.n_batch = kind == 0 || depth > 0 ? LB_MAX(n, LB_MIN(depth, 512)) : 1;
                    cp.n_threads = th[ti];
                    cp.device = dev;
                    cp.type_k = ctk, cp.type_v = ctv, cp.swa_full = swa_full;
                    if ((s = lb_context_new(m, &cp, &ctx))) { cli_error("bench", s); rc = CLI_FAIL; break; }
                    if (dev != LB_DEVICE_CPU && !described) {
                        described = 1;
    #ifdef LOWBIT_HAVE_CUDA
                        fprintf(stderr, "device: %s\n", lb_cuda_backend_describe(m));
    #endif
                    }
                    /* the depth, once: a test's tokens overwrite positions depth.. only */
                    for (int p0 = 0; p0 < depth && rc == CLI_OK; p0 += ctx->n_batch) {
                        if (p0 == 0) fprintf(stderr, "  filling %d positions of the KV cache...\n", depth);
                        if (lb_cancel_requested()) rc = 130;
                        else if ((s = lb_eval(ctx, toks, LB_MIN(ctx->n_batch, depth - p0), p0, NULL, 0))) {
                            cli_error("bench", s);
                            rc = CLI_FAIL;
                        }
                    }
                    if (rc != CLI_OK) { lb_context_free(ctx); break; }
                    double warm;
                    run_test(ctx, toks, kind == 0 ? n : LB_MIN(n, 4), depth, kind == 0, logits, &warm);
                    const int beside = roofline && kind == 1 && dev == LB_DEVICE_CPU;
                    if (beside && !probe_buf && (probe_buf = lb_malloc_huge(LB_BW_BESIDE_BYTES)))
                        memset(probe_buf, 1, LB_BW_BESIDE_BYTES);
                    for (int i = 0; i < reps && rc == CLI_OK; i++) {
                        if (beside) before[i] = lb_read_bandwidth_beside(probe_buf, lb_context_threads(ctx), NULL);
                        if (lb_cancel_requested()) rc = 130;
                        else if ((s = run_test(ctx, toks, n, depth, kind == 0, logits, &runs[i]))) { cli_error("bench", s); rc = CLI_FAIL; }
                        if (beside) after[i] = lb_read_bandwidth_beside(probe_buf, lb_context_threads(ctx), NULL);
                    }
                    if (rc == CLI_OK) {
                        double mean, sd;
                        stats(runs, reps, &mean, &sd);
                        const char *isa = dev != LB_DEVICE_CPU ? "cuda" : lb_isa_name(lb_cpu_level());
                        if (fmt == FMT_MD) {
                            printf("| %s | %s | %s | %s | %d |%s %s%d%s | %.2f ± %.2f |\n", lb_model_desc(m), size,
                                   params, isa, lb_context_threads(ctx), kv, kind == 0 ? "pp" : "tg", n, at, mean, sd);
                        } else {
                            const bench_row row = {model_file, lb_model_desc(m), lb_model_size_bytes(m),
                                                   (uint64_t)lb_model_n_params(m), isa, lb_context_threads(ctx),
                                                   ctk, ctv, kind == 0 ? n : 0, kind == 0 ? 0 : n, depth, mean, sd,
                                                   runs, reps};
                            print_row(fmt, &row, n_rows++);
                        }
                        fflush(stdout);
                        if (kind == 0) {
                            const double ops = 2.0 * per_token(m, 1, 1.0 / n), gops = ops * mean / 1e9;
                            const int i8 = int8_weights(m);
                            fprintf(stderr, "  pp%d: %.2f G weight multiply-adds per token: %.0f %sGOPS", n, ops / 2e9, gops,
                                    i8 ? "int8 " : "");
                            /* the roofline: the int8 dot rate measured now, on as many threads */
                            if (roofline && i8 && dev == LB_DEVICE_CPU && pk_threads != lb_context_threads(ctx)) {
                                pk_threads = lb_context_threads(ctx);
                                pk = lb_int8_peak_gops(pk_threads, 5);
                            }
                            if (pk > 0 && i8)
                                fprintf(stderr, ", %.0f%% of the %.0f GOPS %s peak measured on %d threads (roofline %.0f t/s)",
                                        100.0 * gops / pk, pk, lb_int8_peak_what(), lb_context_threads(ctx), pk * 1e9 / ops);
                            fprintf(stderr, "\n");
                        }
                        if (kind == 1) {
                            /* with a depth, the KV cache a token reads joins the weights
                             * (at depth 0 it is a small share: left out, as before) */
                            const double kvb = depth > 0 ? kv_bytes_at(m, ctk, ctv, depth + (n + 1) / 2.0) : 0;
                            const double wb = per_token(m, 0, 1.0) + kvb, gbs = wb * mean / 1e9;
                            if (depth > 0)
                                fprintf(stderr, "  tg%d%s reads %.1f MiB of weights and %.1f MiB of KV cache per token: %.1f GB/s",
                                        n, at, (wb - kvb) / 1048576.0, kvb / 1048576.0, gbs);
                            else
                                fprintf(stderr, "  tg%d reads %.1f MiB of weights per token: %.1f GB/s", n, wb / 1048576.0, gbs);
                            /* the roofline: read bandwidth measured now, on as many threads
                             * (once per thread count: tg sizes share it) */
                            if (roofline && dev == LB_DEVICE_CPU && bw_threads != lb_context_threads(ctx)) {
                                bw_threads = lb_context_threads(ctx);
                                bw = lb_read_bandwidth((size_t)1 << 30, bw_threads, 10);
                            }
    #ifdef LOWBIT_HAVE_CUDA
                            /* on the GPU: its read bandwidth (a read-only kernel over 1 GiB) */
                            if (roofline && dev != LB_DEVICE_CPU && bw == 0) bw = lb_cuda_backend_read_gbs();
                            if (bw > 0 && dev != LB_DEVICE_CPU)
                                fprintf(stderr, ", %.0f%% of the GPU's %.0f GB/s read bandwidth (roofline %.1f t/s)",
                                        100.0 * gbs / bw, bw, bw * 1e9 / wb);
    #endif
                            if (bw > 0 && dev == LB_DEVICE_CPU)
                                fprintf(stderr, ", %.0f%% of the %.1f GB/s read bandwidth measured on %d threads (roofline %.1f t/s)",
                                        100.0 * gbs / bw, bw, lb_context_threads(ctx), bw * 1e9 / wb);
                            fprintf(stderr, "\n");
                            if (beside && probe_buf) print_beside(n, runs, before, after, reps, wb, after + reps);
                        }
                    }
                    lb_context_free(ctx);
                }
            }
        }
    }
    if (fmt == FMT_JSON) printf("%s]\n", n_rows ? "\n" : "");
    free(toks);
    free(runs);
    free(logits);
    lb_free_aligned(probe_buf);
    lb_model_free(m);
    return rc;
}
