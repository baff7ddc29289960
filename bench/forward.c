/* Forward-pass benchmark on a synthetic model: prompt processing (one batch
 * at position 0) and decode after a prompt of a given depth, which
 * `lowbit bench` does not offer (its tg starts at position 0).
 *
 * usage: forward [--shape S] [--type T] [-t THREADS] [-p N] [-n N] [-d DEPTH] [-r REPS]
 *   defaults: tinyllama-1.1b Q4_0, all cores, -p 512 -n 128 -d 0 -r 3.
 * With LB_PERF_CTL=FIFO, writes "enable" / "disable" to perf's control fifo
 * around the timed runs, so a profile leaves out building the model:
 *   mkfifo /tmp/ctl; LB_PERF_CTL=/tmp/ctl perf record -D -1 --control fifo:/tmp/ctl -- bench/forward ...
 * (the fifo must be opened by perf before the program writes, as here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "lowbit.h"

static FILE *perf_ctl;

static void perf_cmd(const char *cmd) {
    if (!perf_ctl) return;
    fprintf(perf_ctl, "%s\n", cmd);
    fflush(perf_ctl);
}

static void report(const char *what, const double *tps, int reps) {
    double s = 0, s2 = 0;
    for (int i = 0; i < reps; i++) s += tps[i];
    const double mean = s / reps;
    for (int i = 0; i < reps; i++) s2 += (tps[i] - mean) * (tps[i] - mean);
    printf("%-24s %8.2f ± %.2f t/s\n", what, mean, reps > 1 ? sqrt(s2 / (reps - 1)) : 0.0);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *shape = "tinyllama-1.1b", *type_name = "Q4_0";
    int threads = 0, pp = 512, tg = 128, depth = 0, reps = 3;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "%s needs a value\n", a); return 2; }
        if (!strcmp(a, "--shape")) shape = v;
        else if (!strcmp(a, "--type")) type_name = v;
        else if (!strcmp(a, "-t")) threads = atoi(v);
        else if (!strcmp(a, "-p")) pp = atoi(v);
        else if (!strcmp(a, "-n")) tg = atoi(v);
        else if (!strcmp(a, "-d")) depth = atoi(v);
        else if (!strcmp(a, "-r")) reps = atoi(v);
        else { fprintf(stderr, "unknown option %s\n", a); return 2; }
    }
    if (reps < 1 || pp < 0 || tg < 0 || depth < 0) return 2;
    const int type = lb_type_from_name(type_name);
    if (type < 0) { fprintf(stderr, "unknown type %s\n", type_name); return 2; }
    const char *ctl = getenv("LB_PERF_CTL");
    if (ctl && !(perf_ctl = fopen(ctl, "w"))) { perror(ctl); return 1; }

    lb_model_params mp = lb_model_default_params();
    mp.n_threads = threads;
    lb_model *m = NULL;
    if (lb_model_synthetic(shape, type, &mp, &m)) { fprintf(stderr, "%s\n", lb_last_error()); return 1; }
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = LB_MAX(LB_MAX(pp, depth + tg), 1);
    cp.n_batch = LB_MAX(LB_MIN(cp.n_ctx, 512), pp);
    cp.n_threads = threads;
    lb_context *ctx = NULL;
    if (lb_context_new(m, &cp, &ctx)) { fprintf(stderr, "%s\n", lb_last_error()); return 1; }
    const int V = lb_model_n_vocab(m), ntok = LB_MAX(LB_MAX(pp, depth + tg), 1);
    int32_t *toks = malloc((size_t)ntok * sizeof *toks);
    double *tps = malloc((size_t)reps * sizeof *tps);
    uint64_t r = 12345;
    for (int i = 0; i < ntok; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t)((r >> 33) % (uint64_t)V);
    }
    printf("%s %s, %d threads\n", shape, type_name, lb_context_threads(ctx));
    char what[64];
    if (pp > 0) {
        lb_eval(ctx, toks, pp, 0, NULL, 0); /* warm-up */
        perf_cmd("enable");
        for (int i = 0; i < reps; i++) {
            const double t0 = lb_time_s();
            lb_eval(ctx, toks, pp, 0, NULL, 0);
            tps[i] = pp / (lb_time_s() - t0);
        }
        perf_cmd("disable");
        snprintf(what, sizeof what, "pp%d", pp);
        report(what, tps, reps);
    }
    if (tg > 0) {
        if (depth > 0) lb_eval(ctx, toks, depth, 0, NULL, 0);
        for (int i = 0; i < LB_MIN(tg, 4); i++) lb_eval(ctx, toks + depth + i, 1, depth + i, NULL, 0); /* warm-up */
        perf_cmd("enable");
        for (int k = 0; k < reps; k++) {
            const double t0 = lb_time_s();
            for (int i = 0; i < tg; i++) lb_eval(ctx, toks + depth + i, 1, depth + i, NULL, 0);
            tps[k] = tg / (lb_time_s() - t0);
        }
        perf_cmd("disable");
        snprintf(what, sizeof what, "tg%d @ depth %d", tg, depth);
        report(what, tps, reps);
    }
    free(toks);
    free(tps);
    lb_context_free(ctx);
    lb_model_free(m);
    if (perf_ctl) fclose(perf_ctl);
    return 0;
}
