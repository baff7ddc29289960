/* Continuous batching without the server: decode tokens/s of S sequences
 * stepping together through lb_eval_multi (one forward pass per step, each
 * sequence at its own depth in its own KV cache region), against one
 * sequence through lb_eval. What `lowbit serve` does per step, minus HTTP
 * and sampling: the aggregate rate for S sequences over the rate for one is
 * the most batching can give the server (docs/serve.md).
 *
 * usage: batch [-m MODEL.gguf | --shape S --type T] [-t THREADS] [-np LIST] [-n STEPS] [-d DEPTH] [-c CTX] [-r REPS]
 *   defaults: the synthetic tinyllama-1.1b Q4_0, all cores, -np 1,2,4,8 -n 64 -d 128 -r 3.
 *   -m: a GGUF file instead (e.g. the peers' synth-1.1b-Q4_0.gguf, which bench/serve.sh serves:
 *   its head is Q6_K, the synthetic model's Q4_0); -c: the context per sequence (default DEPTH + STEPS + 1;
 *   bench/serve.sh's servers run 1024, which costs attention a little: use -c 1024 to compare). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "lowbit.h"

static void report(const char *what, const double *tps, int reps, double base) {
    double s = 0, s2 = 0;
    for (int i = 0; i < reps; i++) s += tps[i];
    const double mean = s / reps;
    for (int i = 0; i < reps; i++) s2 += (tps[i] - mean) * (tps[i] - mean);
    printf("%-34s %9.2f ± %6.2f t/s", what, mean, reps > 1 ? sqrt(s2 / (reps - 1)) : 0.0);
    if (base > 0) printf("   x%.2f", mean / base);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *shape = "tinyllama-1.1b", *type_name = "Q4_0", *list = "1,2,4,8", *file = NULL;
    int threads = 0, steps = 64, depth = 128, reps = 3, ctx = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "%s needs a value\n", a); return 2; }
        if (!strcmp(a, "--shape")) shape = v;
        else if (!strcmp(a, "--type")) type_name = v;
        else if (!strcmp(a, "-t")) threads = atoi(v);
        else if (!strcmp(a, "-np")) list = v;
        else if (!strcmp(a, "-m")) file = v;
        else if (!strcmp(a, "-n")) steps = atoi(v);
        else if (!strcmp(a, "-d")) depth = atoi(v);
        else if (!strcmp(a, "-c")) ctx = atoi(v);
        else if (!strcmp(a, "-r")) reps = atoi(v);
        else { fprintf(stderr, "unknown option %s\n", a); return 2; }
    }
    if (reps < 1 || reps > 64 || steps < 1 || depth < 1) return 2;
    if (ctx > 0 && ctx < depth + steps + 1) {
        fprintf(stderr, "-c %d is shorter than DEPTH + STEPS + 1 = %d\n", ctx, depth + steps + 1);
        return 2;
    }
    const int type = lb_type_from_name(type_name);
    if (type < 0) { fprintf(stderr, "unknown type %s\n", type_name); return 2; }
    lb_model_params mp = lb_model_default_params();
    mp.n_threads = threads;
    lb_model *m = NULL;
    if (file ? lb_model_load(file, &mp, &m) : lb_model_synthetic(shape, type, &mp, &m)) {
        fprintf(stderr, "%s\n", lb_last_error());
        return 1;
    }
    const int V = lb_model_n_vocab(m), n_ctx = ctx > 0 ? ctx : depth + steps + 1;
    if (file) printf("%s, %d steps after %d tokens of prompt per sequence\n", file, steps, depth);
    else printf("%s %s, %d steps after %d tokens of prompt per sequence\n", shape, type_name, steps, depth);
    int32_t *prompt = malloc((size_t)depth * sizeof *prompt);
    for (int i = 0; i < depth; i++) prompt[i] = (int32_t)((i * 7919u + 13) % (unsigned)V);

    /* one sequence through lb_eval */
    double tps[64], base = 0;
    {
        lb_context_params cp = lb_context_default_params();
        cp.n_ctx = n_ctx;
        cp.n_threads = threads;
        lb_context *c = NULL;
        if (lb_context_new(m, &cp, &c)) { fprintf(stderr, "%s\n", lb_last_error()); return 1; }
        float *lg = malloc((size_t)V * sizeof *lg);
        for (int r = 0; r < reps; r++) {
            lb_eval(c, prompt, depth, 0, lg, 0);
            const double t0 = lb_time_s();
            for (int s = 0; s < steps; s++) {
                int32_t t = (int32_t)((s * 31u + 7) % (unsigned)V);
                lb_eval(c, &t, 1, depth + s, lg, 0);
            }
            tps[r] = steps / (lb_time_s() - t0);
        }
        double s = 0;
        for (int r = 0; r < reps; r++) s += tps[r];
        base = s / reps;
        report("1 sequence, lb_eval", tps, reps, 0);
        free(lg);
        lb_context_free(c);
    }

    /* S sequences through lb_eval_multi; the prompts at staggered depths */
    for (const char *p = list; *p;) {
        const int S = atoi(p);
        while (*p && *p != ',') p++;
        if (*p == ',') p++;
        if (S < 1) continue;
        lb_context_params cp = lb_context_default_params();
        cp.n_ctx = n_ctx;
        cp.n_threads = threads;
        cp.n_seq = S;
        cp.n_batch = LB_MAX(S, 512);
        lb_context *c = NULL;
        if (lb_context_new(m, &cp, &c)) { fprintf(stderr, "%s\n", lb_last_error()); return 1; }
        float *lg = malloc((size_t)S * V * sizeof *lg);
        lb_seq_batch *b = malloc((size_t)S * sizeof *b);
        int32_t *tok = malloc((size_t)S * sizeof *tok);
        int *pos = malloc((size_t)S * sizeof *pos);
        for (int r = 0; r < reps; r++) {
            for (int q = 0; q < S; q++) { /* prompts: depth - q tokens, so the sequences are not in step */
                pos[q] = LB_MAX(1, depth - q);
                lb_seq_batch one = {q, 0, pos[q], prompt, 1};
                lb_eval_multi(c, &one, 1, lg);
            }
            const double t0 = lb_time_s();
            for (int s = 0; s < steps; s++) {
                for (int q = 0; q < S; q++) {
                    tok[q] = (int32_t)((s * 31u + 7 * q + 7) % (unsigned)V);
                    b[q] = (lb_seq_batch){q, pos[q] + s, 1, &tok[q], 1};
                }
                if (lb_eval_multi(c, b, S, lg)) { fprintf(stderr, "%s\n", lb_last_error()); return 1; }
            }
            tps[r] = (double)S * steps / (lb_time_s() - t0);
        }
        char what[64];
        snprintf(what, sizeof what, "%d sequences, lb_eval_multi", S);
        report(what, tps, reps, base);
        free(lg);
        free(b);
        free(tok);
        free(pos);
        lb_context_free(c);
    }
    free(prompt);
    lb_model_free(m);
    return 0;
}
