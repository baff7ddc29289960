/* QIGen benchmark (docs/qigen.md): every generated Micro-GEMV candidate of
 * the GQ types, both variants, at every x86 / Arm ISA this CPU runs, against
 * the hand-written interleaved kernels at the same shape (Q4_0_8X8 and the
 * 16-row Q4_K_16X4; Q4_0_4X4 on Arm), as GB/s of weight bytes and % of the
 * read bandwidth (kernels/membw.h) measured in the same run, at 1 and 2
 * threads. So the model's choice (eq. (4)'s register-maximal default) can
 * be judged against the measured best, which is what `lowbit tune` keeps.
 *
 * Noise: other jobs on a 2-core machine move single figures by 10-30 %, so
 * every candidate is measured in each of R rounds (round robin: a slow
 * spell hits all of them alike) and the best round counts. Weights stream
 * from memory: copies of the matrix, 1 GiB together, used in turn (as
 * bench/kernels does).
 *
 * --cpu: one thread, every time (bandwidth included) taken as the thread's
 * CPU time: on a machine shared with other jobs wall time is meaningless.
 *
 * --hot: one copy, so a small shape (--shape 256x2048) runs from the L2:
 * the kernels' compute rate without memory stalls.
 *
 * --gemm adds prefill (M activation rows, GOPS = 2 M N K / s): the
 * dispatched GEMM (weight tiles converted to Q8_0_4X4 and that layout's
 * GEMM; at the amx level with AMX-BF16, the bf16 GEMM of qg_amx_bf16.c),
 * the Mini-GEMV path for all M rows (the g = 16 route), and Q4_0_8X8's GEMM.
 *
 * --only 2x2,4x1: only these (m_u x t_u) candidates.
 * --pf 0,2048,4096: each candidate at these software prefetch distances
 * (lb_qg_prefetch_bytes), side by side in the same rounds.
 *
 * usage: qigen [--shape NxK] [--types GQ4_G128,...|all] [-r ROUNDS] [-s SECONDS]
 *              [--threads 1,2] [--gemm] [-m M] [--isa avx2,avx512] [--no-f32] [--hot] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "formats/repack.h"
#include "formats/repack_qg.h"
#include "kernels/dispatch.h"
#include "kernels/membw.h"
#include "kernels/qigen.h"

#include "bench_util.h"


/* Random bytes with sane fp16 scales (speed does not depend on values). */
static void fill_plain(int type, uint8_t *w, size_t bytes) {
    for (size_t i = 0; i < bytes; i += 8) {
        const uint64_t r = next_rand();
        memcpy(w + i, &r, LB_MIN((size_t)8, bytes - i));
    }
    const lb_type_traits *t = lb_traits(type);
    const int bits = lb_gq_bits(type), group = lb_gq_group(type);
    for (size_t b = 0; b < bytes / t->type_size; b++) {
        uint8_t *blk = w + b * t->type_size;
        if (bits) {
            for (int gi = 0; gi < QK_GQ / group; gi++) {
                const lb_fp16 d = lb_f32_to_fp16(0.001f * (float)(1 + next_rand() % 16));
                memcpy(blk + LB_GQ_S_OFF(bits) + 2 * gi, &d, 2);
            }
        } else {
            /* Q4_0: d first; Q4_K: d and dmin first */
            const lb_fp16 d = lb_f32_to_fp16(0.001f * (float)(1 + next_rand() % 16));
            memcpy(blk, &d, 2);
            if (type == LB_TYPE_Q4_K) memcpy(blk + 2, &d, 2);
        }
    }
}

/* A matrix in n copies (1 GiB together), each in the layout `type`. */
typedef struct {
    int type;
    int64_t K, N;
    int n;
    uint8_t **copy;
} copies;

static int make_copies(copies *c, int type, int64_t K, int64_t N, int hot) {
    const int base = lb_type_base(type);
    const size_t bytes = lb_row_size(type, K) * (size_t)N;
    c->type = type, c->K = K, c->N = N;
    c->n = hot ? 1 : (int)LB_MAX((size_t)2, ((size_t)1 << 30) / bytes + 1);
    c->copy = calloc((size_t)c->n, sizeof *c->copy);
    uint8_t *plain = malloc(bytes);
    if (!c->copy || !plain) return 0;
    fill_plain(base, plain, bytes);
    for (int i = 0; i < c->n; i++) {
        if (!(c->copy[i] = alloc_huge(bytes))) return 0;
        if (i) memcpy(c->copy[i], c->copy[0], bytes);
        else if (type == base) memcpy(c->copy[0], plain, bytes);
        else lb_repack_tensor(type, plain, c->copy[0], K, N);
    }
    free(plain);
    return 1;
}

static void free_copies(copies *c) {
    for (int i = 0; i < c->n; i++) free(c->copy[i]);
    free(c->copy);
}

/* One pass over the copies: seconds per product. ci < 0: lb_matmul (the
 * dispatched kernel), else lb_qg_matmul of set s, candidate ci. */
static double pass(const copies *c, const lb_qg_set *s, int ci, const float *x, int M, float *y, void *scratch, int nth) {
    const double t0 = now();
    for (int i = 0; i < c->n; i++) {
        if (ci < 0) {
            lb_matrix W = {c->type, c->K, c->N, lb_row_size(c->type, c->K), c->copy[i], 0};
            lb_matmul(&W, x, M, y, (size_t)c->N, scratch, nth);
        } else {
            lb_qg_matmul(s, ci, c->copy[i], c->K, c->N, x, M, y, nth);
        }
    }
    return (now() - t0) / c->n;
}

typedef struct {
    const char *label;
    const copies *c;
    const lb_qg_set *s;
    int ci; /* -1: lb_matmul */
    long pf; /* prefetch distance for this job (-1: the default) */
    double best[3]; /* s per product, by threads */
} job;

static int parse_threads(const char *v, int *th) {
    int n = 0;
    for (const char *p = v; *p && n < 2;) {
        th[n++] = atoi(p);
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

int main(int argc, char **argv) {
    rng = 0x243f6a8885a308d3ull; /* this program's own data stream, as it always had */
    int64_t N = 2048, K = 5632;
    int rounds = 3, gemm = 0, M = 256, no_f32 = 0, th[2] = {1, 2}, n_th = 2, hot = 0;
    double budget = 0.25;
    const char *types = "GQ4_G128", *isas = "avx2,avx512,neon,dotprod", *only = NULL;
    long pfs[8] = {-1};
    int n_pf = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            long long n, k;
            if (sscanf(argv[++i], "%lldx%lld", &n, &k) != 2 || n <= 0 || n % 16 || k <= 0 || k % 256) {
                fprintf(stderr, "qigen: --shape NxK with N a multiple of 16, K of 256\n");
                return 2;
            }
            N = n, K = k;
        } else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isas = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) M = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) n_th = parse_threads(argv[++i], th);
        else if (!strcmp(argv[i], "--gemm")) gemm = 1;
        else if (!strcmp(argv[i], "--no-f32")) no_f32 = 1;
        else if (!strcmp(argv[i], "--hot")) hot = 1;
        else if (!strcmp(argv[i], "--cpu")) use_cpu_time = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--pf") && i + 1 < argc) {
            n_pf = 0;
            for (char *p = argv[++i]; *p && n_pf < 8;) {
                pfs[n_pf++] = strtol(p, &p, 10);
                if (*p == ',') p++;
                else break;
            }
        }
        else {
            fprintf(stderr, "usage: qigen [--shape NxK] [--types GQ4_G128,...|all] [-r ROUNDS] [-s SECONDS] "
                            "[--threads 1,2] [--gemm] [-m M] [--isa avx2,avx512,neon,dotprod] [--no-f32] [--hot] [--only MUxTU,...] [--pf BYTES,...] [--cpu]\n");
            return 2;
        }
    }
    if (rounds < 1 || budget <= 0 || M < 1 || n_th < 1) return 2;
    if (use_cpu_time) th[0] = 1, n_th = 1; /* the calling thread's CPU time: one thread only */

    printf("cpu: %s, level %s; shape %lldx%lld (N x K); best of %d rounds\n", lb_cpu_features_string(),
           lb_isa_name(lb_cpu_level()), (long long)N, (long long)K, rounds);
    double rbw[3] = {0};
    for (int t = 0; t < n_th; t++) {
        if (use_cpu_time) {
            uint8_t *b = alloc_huge((size_t)1 << 30);
            if (!b) return 1;
            memset(b, 1, (size_t)1 << 30);
            rbw[t] = lb_read_bandwidth_of(b, (size_t)1 << 30, 1, 12, now);
            free(b);
        } else {
            rbw[t] = lb_read_bandwidth((size_t)1 << 30, th[t], 12);
        }
    }
    printf("read bandwidth: ");
    for (int t = 0; t < n_th; t++) printf("%.1f GB/s (%d thread%s)%s", rbw[t], th[t], th[t] > 1 ? "s" : "", t + 1 < n_th ? ", " : "\n");
    printf("tune file: %s\n\n", *lb_qg_tune_path() ? lb_qg_tune_path() : "(off)");

    float *x = malloc(sizeof(float) * (size_t)K * (size_t)M), *y = malloc(sizeof(float) * (size_t)N * (size_t)M);
    for (size_t i = 0; i < (size_t)K * M; i++) x[i] = (float)(next_rand() % 2001) / 1000.0f - 1.0f;

    /* hand-written baselines */
#if defined(__aarch64__)
    const int hand[2] = {LB_TYPE_Q4_0_4X4, LB_TYPE_Q4_K_16X4};
#else
    const int hand[2] = {LB_TYPE_Q4_0_8X8, LB_TYPE_Q4_K_16X4};
#endif
    job jobs[512];
    int nj = 0;
    copies hc[2];
    for (int h = 0; h < 2; h++) {
        if (!make_copies(&hc[h], hand[h], K, N, hot)) return 1;
        jobs[nj++] = (job){lb_type_name(hand[h]), &hc[h], NULL, -1, -1, {1e30, 1e30, 1e30}};
    }
    copies gc[12];
    int ng = 0;
    char wrapped[512];
    snprintf(wrapped, sizeof wrapped, ",%s,", types);
    for (int i = 0; i < 12; i++) {
        const int type = LB_GQ_FIRST + i;
        char key[32];
        snprintf(key, sizeof key, ",%s,", lb_type_name(type));
        if (strcmp(types, "all") && !strstr(wrapped, key)) continue;
        if (!make_copies(&gc[ng], lb_qg_type_of(type), K, N, hot)) return 1;
        /* the dispatched path (driver + the candidate in force) */
        jobs[nj++] = (job){"lb_matmul", &gc[ng], NULL, -1, -1, {1e30, 1e30, 1e30}};
        for (int qisa = 0; qisa < LB_QG_N_ISA; qisa++) {
            if (!strstr(isas, lb_qg_isa_name(qisa))) continue;
            if (!lb_cpu_runs(lb_qg_level_of_isa(qisa))) continue;
            for (int v = 0; v < LB_QG_N_VAR; v++) {
                const lb_qg_set *s = lb_qg_find(qisa, type, v);
                if (!s || (no_f32 && v == LB_QG_F32)) continue;
                for (int c = 0; c < s->n_cand && nj < 512; c++) {
                    char key2[32], list[256];
                    snprintf(key2, sizeof key2, ",%dx%d,", s->cand[c].mu, s->cand[c].tu);
                    snprintf(list, sizeof list, ",%s,", only ? only : "");
                    if (only && !strstr(list, key2)) continue;
                    for (int p = 0; p < n_pf && nj < 512; p++) jobs[nj++] = (job){"qg", &gc[ng], s, c, pfs[p], {1e30, 1e30, 1e30}};
                }
            }
        }
        ng++;
    }
    size_t scratch_size = 0;
    for (int h = 0; h < 2; h++) {
        lb_matrix W = {hand[h], K, N, lb_row_size(hand[h], K), NULL, 0};
        scratch_size = LB_MAX(scratch_size, lb_matmul_scratch_size(&W, M));
    }
    for (int i = 0; i < ng; i++) {
        lb_matrix W = {gc[i].type, K, N, lb_row_size(gc[i].type, K), NULL, 0};
        scratch_size = LB_MAX(scratch_size, lb_matmul_scratch_size(&W, M));
    }
    void *scratch = lb_malloc_aligned(scratch_size + 4096);

    /* rounds: every job once per round, each for about `budget` seconds */
    const lb_isa top = lb_cpu_level();
    for (int r = 0; r < rounds; r++) {
        fprintf(stderr, "round %d/%d: %d kernels x %d thread counts\n", r + 1, rounds, nj, n_th);
        for (int j = 0; j < nj; j++) {
            job *jb = &jobs[j];
            if (jb->s) lb_cpu_force_level(jb->s->isa == LB_QG_AVX2 ? LB_ISA_AVX2 : top);
            if (jb->s) lb_qg_matmul(jb->s, jb->ci, jb->c->copy[0], K, N, x, 1, y, 1); /* the runtime's first use sets the default */
            size_t pf_default[LB_QG_N_ISA];
            memcpy(pf_default, lb_qg_prefetch_bytes, sizeof pf_default);
            if (jb->pf >= 0)
                for (int i = 0; i < LB_QG_N_ISA; i++) lb_qg_prefetch_bytes[i] = (size_t)jb->pf;
            for (int t = 0; t < n_th; t++) {
                const double t0 = now();
                int n = 0;
                do {
                    const double dt = pass(jb->c, jb->s, jb->ci, x, 1, y, scratch, th[t]);
                    if (dt < jb->best[t]) jb->best[t] = dt;
                    n++;
                } while (n < 2 || now() - t0 < budget);
            }
            memcpy(lb_qg_prefetch_bytes, pf_default, sizeof pf_default);
            lb_cpu_force_level(top);
        }
    }

    printf("| type | isa | variant | m_u | t_u | m_b | t_b | eq. (4) regs | note |");
    for (int t = 0; t < n_th; t++) printf(" GEMV GB/s t%d | %%read |", th[t]);
    printf("\n|---|---|---|---|---|---|---|---|---|");
    for (int t = 0; t < n_th; t++) printf("---|---|");
    printf("\n");
    for (int j = 0; j < nj; j++) {
        const job *jb = &jobs[j];
        const double bytes = (double)lb_row_size(jb->c->type, K) * (double)N;
        if (jb->s) {
            const lb_qg_cand *c = &jb->s->cand[jb->ci];
            char note[64] = "";
            if (jb->pf >= 0) snprintf(note, sizeof note, "pf %ld ", jb->pf);
            if (jb->ci == jb->s->def) strcat(note, "model default");
            if (jb->s->variant == lb_qg_dispatch_variant(jb->s->isa) && jb->ci == lb_qg_choice(jb->s) && jb->ci != jb->s->def)
                strcat(note, "tuned");
            printf("| %s | %s | %s | %d | %d | %d | %d | %d | %s |", lb_type_name(lb_type_base(jb->c->type)),
                   lb_qg_isa_name(jb->s->isa), lb_qg_variant_name(jb->s->variant), c->mu, c->tu, c->mb, c->tb,
                   c->mu + c->mu * c->tu + c->tu, note);
        } else {
            printf("| %s | %s | - | - | - | - | - | - | %s |", lb_type_name(jb->c->type), lb_isa_name(top),
                   lb_kernel_get(jb->c->type)->name);
        }
        for (int t = 0; t < n_th; t++) {
            const double gbs = bytes / jb->best[t] / 1e9;
            printf(" %.1f | %.0f%% |", gbs, 100.0 * gbs / rbw[t]);
        }
        printf("\n");
    }

    if (gemm && ng > 0) {
        /* prefill from one copy (compute-bound): the dispatched GEMM, the
         * Mini-GEMV route for all M rows (what g = 16 runs), Q4_0_8X8's GEMM */
        const int nth = th[n_th - 1];
        printf("\nprefill, M = %d, %d thread%s (GOPS = 2 M N K / s, best of %d):\n\n", M, nth, nth > 1 ? "s" : "", rounds);
        printf("| weights | path | GOPS |\n|---|---|---|\n");
        const double ops = 2.0 * M * (double)N * (double)K;
        for (int i = -1; i < ng; i++) {
            const copies *c = i < 0 ? &hc[0] : &gc[i];
            const lb_qg_set *s = i < 0 ? NULL : lb_qg_find(lb_qg_isa_of_level(top), c->type, lb_qg_dispatch_variant(lb_qg_isa_of_level(top)));
            for (int path = 0; path < (s ? 2 : 1); path++) {
                double best = 1e30;
                for (int r = 0; r < rounds; r++) {
                    const double t0 = now();
                    if (path == 0) {
                        lb_matrix W = {c->type, K, N, lb_row_size(c->type, K), c->copy[0], 0};
                        lb_matmul(&W, x, M, y, (size_t)N, scratch, nth);
                    } else {
                        lb_qg_matmul(s, lb_qg_choice(s), c->copy[0], K, N, x, M, y, nth);
                    }
                    best = LB_MIN(best, now() - t0);
                }
                printf("| %s | %s | %.1f |\n", lb_type_name(c->type),
                       path ? "Mini-GEMV blocks, every row (the g = 16 route)" : lb_kernel_get(c->type)->name, ops / best / 1e9);
            }
        }
    }
    free(x);
    free(y);
    lb_free_aligned(scratch);
    for (int h = 0; h < 2; h++) free_copies(&hc[h]);
    for (int i = 0; i < ng; i++) free_copies(&gc[i]);
    return 0;
}
