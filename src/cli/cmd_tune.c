/* lowbit tune: QIGen's empirical search (seed 001, Algorithm 4 step 2). For
 * every GQ type, time the GEMV of each generated Micro-GEMV candidate
 * (m_u, t_u) at the current kernel level on a representative shape, with
 * the weights streaming from memory as in decode, and keep the fastest per
 * type in the tune file the runtime reads (kernels/qigen.h). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/common.h"
#include "formats/repack.h"
#include "formats/repack_qg.h"
#include "kernels/cpu.h"
#include "kernels/qigen.h"

static void help(void) {
    printf("usage: lowbit tune [options]\n\n"
           "Times every generated QIGen Micro-GEMV candidate (m_u, t_u) of each GQ type at the\n"
           "kernel level in force (GEMV, one activation row, weights streaming from memory) and\n"
           "writes the fastest per type to the tune file, which the runtime then uses instead of\n"
           "the model's default (the candidate using the most vector registers). docs/qigen.md.\n\n"
           "  -t, --threads N      threads (default: all cores)\n"
           "      --isa LEVEL      tune a lower kernel level: avx2|avx512|neon|dotprod|i8mm\n"
           "                       (also LOWBIT_ISA=...)\n"
           "  -o, --output FILE    tune file (default: $LOWBIT_TUNE_FILE, else\n"
           "                       ~/.cache/lowbit/qigen-tune.txt); entries of other levels\n"
           "                       or types already in it are kept\n"
           "      --types LIST     GQ types to tune, comma-separated (default: all 12)\n"
           "      --shape NxK      rows x columns of the matrix timed (default 2048x5632,\n"
           "                       TinyLlama's FFN down projection)\n"
           "  -r, --rounds N       rounds; each times every candidate once, the best counts\n"
           "                       (default 3: a slow spell of the machine hits all alike)\n"
           "  -s, --seconds S      time per candidate per round (default 0.1)\n"
           "      --all-variants   also time the fp32 variant (reported and recorded; the\n"
           "                       kernel table dispatches the int8 one)\n"
           "  -v, --verbose        more logging\n"
           "  -h, --help           this help\n");
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random codes and zeros, small sane scales: speed does not depend on values. */
static void fill_gq(int type, uint8_t *w, size_t bytes) {
    const int bits = lb_gq_bits(type), group = lb_gq_group(type);
    const size_t bs = LB_GQ_SIZE(bits, group);
    for (size_t i = 0; i < bytes; i += 8) {
        const uint64_t r = next_rand();
        memcpy(w + i, &r, LB_MIN((size_t)8, bytes - i));
    }
    for (size_t b = 0; b < bytes / bs; b++)
        for (int gi = 0; gi < QK_GQ / group; gi++) {
            const lb_fp16 d = lb_f32_to_fp16(0.001f * (float)(1 + next_rand() % 16));
            memcpy(w + b * bs + LB_GQ_S_OFF(bits) + 2 * gi, &d, 2);
        }
}

/* seconds per product over the copies (weights streaming from memory) */
static double pass_time(const lb_qg_set *s, int ci, uint8_t *const *copies, int n, int64_t K, int64_t N,
                        const float *x, float *y, int nth) {
    const double t0 = lb_time_s();
    for (int i = 0; i < n; i++) lb_qg_matmul(s, ci, copies[i], K, N, x, 1, y, nth);
    return (lb_time_s() - t0) / n;
}

int cmd_tune(int argc, char **argv) {
    cli_common co = {0};
    cli_args a = {argc, 1, argv, "tune", 0};
    const char *out = NULL, *types = NULL;
    long long N = 2048, K = 5632;
    int rounds = 3, all_variants = 0;
    double budget = 0.1;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) {
            help();
            return CLI_OK;
        } else if (cli_flag(&a, "-m", "--model")) {
            fprintf(stderr, "lowbit tune: takes no model (it times synthetic matrices)\n");
            a.bad = 1;
        } else if (cli_common_flag(&a, &co)) {
        } else if (cli_flag(&a, "-o", "--output")) out = cli_value(&a);
        else if (cli_flag(&a, "--types", NULL)) types = cli_value(&a);
        else if (cli_flag(&a, "--shape", NULL)) {
            const char *v = cli_value(&a);
            char end;
            if (v && (sscanf(v, "%lldx%lld%c", &N, &K, &end) != 2 || N < 16 || N % 16 || K < 128 || K % 128 || N * K > (1LL << 30))) {
                fprintf(stderr, "lowbit tune: --shape NxK: N a multiple of 16, K of 128, N*K at most 2^30\n");
                a.bad = 1;
            }
        } else if (cli_flag(&a, "-r", "--rounds")) rounds = cli_int(&a, 1, 100);
        else if (cli_flag(&a, "-s", "--seconds")) budget = cli_float(&a, 0.001, 60);
        else if (cli_flag(&a, "--all-variants", NULL)) all_variants = 1;
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (cli_common_apply(&co)) return CLI_USAGE;
    const int nth = co.threads > 0 ? co.threads : omp_get_max_threads();
    int want[12], n_types = 0;
    for (int i = 0; i < 12; i++) {
        want[i] = !types;
        n_types += want[i];
    }
    if (types) {
        char *list = strdup(types);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            const int t = lb_type_from_name(tok);
            if (!lb_gq_bits(t)) {
                fprintf(stderr, "lowbit tune: --types: '%s' is not a GQ type (GQ4_G128 ... GQ2_G16)\n", tok);
                free(list);
                return CLI_USAGE;
            }
            if (!want[t - LB_GQ_FIRST]) n_types++;
            want[t - LB_GQ_FIRST] = 1;
        }
        free(list);
    }

    const lb_isa level = lb_cpu_level();
    const int qisa = lb_qg_isa_of_level(level);
    if (qisa < 0 || !lb_qg_find(qisa, LB_TYPE_GQ4_G128, LB_QG_I8)) {
        fprintf(stderr, "lowbit tune: no generated QIGen kernels at level %s (nothing to tune)\n", lb_isa_name(level));
        return CLI_FAIL;
    }
    const char *path = out ? out : lb_qg_tune_path();
    if (!path || !*path) {
        fprintf(stderr, "lowbit tune: no tune file path (LOWBIT_TUNE_FILE=off and no -o)\n");
        return CLI_USAGE;
    }
    /* a file that cannot be written should fail now, not after the timings
     * (rewriting it with no new entries keeps the ones it has) */
    if (lb_qg_write_tune(path, NULL, 0, "rewritten by lowbit tune at its start") != 0) {
        cli_error("tune", LB_ERR_IO);
        return CLI_FAIL;
    }
    /* up to 512 MiB of copies (at most 128: a small --shape needs no more),
     * about twice this machine's last-level cache share: every product
     * streams its weights from memory, as decode does */
    size_t arena = (size_t)512 << 20;
    if ((size_t)128 * lb_row_size(LB_TYPE_GQ4_G16, K) * (size_t)N < arena) arena = 128 * lb_row_size(LB_TYPE_GQ4_G16, K) * (size_t)N;
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, (size_t)2 << 20, arena)) {
        fprintf(stderr, "lowbit tune: out of memory (512 MiB)\n");
        return CLI_FAIL;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(buf, arena, MADV_HUGEPAGE);
#endif
    float *x = malloc(sizeof(float) * (size_t)K), *y = malloc(sizeof(float) * (size_t)N);
    uint8_t *plain = malloc(lb_row_size(LB_TYPE_GQ4_G16, K) * (size_t)N);
    if (!x || !y || !plain) {
        fprintf(stderr, "lowbit tune: out of memory\n");
        free(buf), free(x), free(y), free(plain);
        return CLI_FAIL;
    }
    for (long long i = 0; i < K; i++) x[i] = (float)(next_rand() % 2001) / 1000.0f - 1.0f;

    fprintf(stderr, "lowbit tune: %s level %s (generated for %s: eta %d, L1 %d KiB), %d thread%s, %lldx%lld, %d round%s\n",
            lb_cpu_features_string(), lb_isa_name(level), lb_qg_isa_name(qisa), lb_qg_find(qisa, LB_GQ_FIRST, 0)->eta,
            lb_qg_find(qisa, LB_GQ_FIRST, 0)->l1_kib, nth, nth > 1 ? "s" : "", N, K, rounds, rounds > 1 ? "s" : "");
    lb_qg_tune_entry entries[24];
    int n_entries = 0, done = 0;
    printf("| type | variant | candidates (m_u,t_u): GB/s | best | model default | best / default |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int ti = 0; ti < 12; ti++) {
        if (!want[ti]) continue;
        const int type = LB_GQ_FIRST + ti;
        const size_t bytes = lb_row_size(type, K) * (size_t)N;
        const int n_copies = (int)LB_MIN((size_t)128, LB_MAX((size_t)1, arena / bytes));
        uint8_t **copies = malloc(sizeof *copies * (size_t)n_copies);
        fill_gq(type, plain, bytes);
        for (int c = 0; c < n_copies; c++) {
            copies[c] = buf + (size_t)c * bytes;
            if (c) memcpy(copies[c], copies[0], bytes);
            else lb_repack_tensor(lb_qg_type_of(type), plain, copies[0], K, N);
        }
        done++;
        for (int v = 0; v < LB_QG_N_VAR; v++) {
            if (!all_variants && v != lb_qg_dispatch_variant(qisa)) continue;
            const lb_qg_set *s = lb_qg_find(qisa, type, v);
            double best[64] = {0};
            for (int c = 0; c < s->n_cand; c++) best[c] = 1e30;
            for (int r = 0; r < rounds; r++) {
                for (int c = 0; c < s->n_cand; c++) {
                    if (isatty(2))
                        fprintf(stderr, "\r[%2d/%2d] %-8s %-3s round %d/%d: (m_u, t_u) = (%d, %d)   ", done, n_types,
                                lb_type_name(type), lb_qg_variant_name(v), r + 1, rounds, s->cand[c].mu, s->cand[c].tu);
                    const double t0 = lb_time_s();
                    int n = 0;
                    do {
                        const double dt = pass_time(s, c, copies, n_copies, K, N, x, y, nth);
                        if (dt < best[c]) best[c] = dt;
                        n++;
                    } while (n < 2 || lb_time_s() - t0 < budget);
                }
            }
            int bi = 0;
            for (int c = 1; c < s->n_cand; c++)
                if (best[c] < best[bi]) bi = c;
            const double gbs = (double)bytes / best[bi] / 1e9, gdef = (double)bytes / best[s->def] / 1e9;
            fprintf(stderr, "%s[%2d/%2d] %-8s %-3s best (%d, %d) %.1f GB/s, model default (%d, %d) %.1f GB/s%20s\n",
                    isatty(2) ? "\r" : "", done, n_types, lb_type_name(type), lb_qg_variant_name(v), s->cand[bi].mu, s->cand[bi].tu, gbs,
                    s->cand[s->def].mu, s->cand[s->def].tu, gdef, "");
            printf("| %s | %s |", lb_type_name(type), lb_qg_variant_name(v));
            for (int c = 0; c < s->n_cand; c++)
                printf(" (%d,%d): %.1f", s->cand[c].mu, s->cand[c].tu, (double)bytes / best[c] / 1e9);
            printf(" | (%d,%d) %.1f | (%d,%d) %.1f | %.2fx |\n", s->cand[bi].mu, s->cand[bi].tu, gbs, s->cand[s->def].mu,
                   s->cand[s->def].tu, gdef, gbs / gdef);
            fflush(stdout);
            entries[n_entries++] = (lb_qg_tune_entry){qisa, type, v, s->cand[bi].mu, s->cand[bi].tu, gbs};
        }
        free(copies);
    }
    free(buf);
    free(x);
    free(y);
    free(plain);

    char comment[512];
    const time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&now));
    snprintf(comment, sizeof comment, "%s; cpu %s; level %s; %d thread%s; shape %lldx%lld; %d round%s", when,
             lb_cpu_features_string(), lb_isa_name(level), nth, nth > 1 ? "s" : "", N, K, rounds, rounds > 1 ? "s" : "");
    if (lb_qg_write_tune(path, entries, n_entries, comment) != 0) {
        cli_error("tune", LB_ERR_IO);
        return CLI_FAIL;
    }
    fprintf(stderr, "wrote %d entr%s to %s\n", n_entries, n_entries == 1 ? "y" : "ies", path);
    return CLI_OK;
}
