/* Kernel micro-benchmark: GEMV (decode, one activation row) and GEMM
 * (prefill, M rows) through lb_matmul, the path the model takes (activation
 * quantization and the thread split included), for the plain and the
 * interleaved Q4_0 / IQ4_NL / Q8_0 layouts, at 1 and 2 threads.
 *
 * Printed next to each other, measured by this program in the same run:
 *  - read bandwidth: a read-only AVX2 kernel (sixteen 32-byte loads per
 *    iteration into four xor chains, every thread on its own slice of a
 *    1 GiB buffer on huge pages, best of 12 runs over software prefetch
 *    distances 0..2 KiB), and STREAM triad (a = b + s*c, 24 bytes per
 *    element);
 *  - GEMV: GB/s of weight bytes read, and that as % of the read bandwidth at
 *    the same thread count, read (256 MiB) right before and right after the
 *    GEMV's own measurement: on a VM whose bandwidth switches between two
 *    speeds for seconds at a time (35 and 60 GB/s on a 2-core Zen 4 VM),
 *    the figure at the top can belong to the other one; a '*' marks a GEMV
 *    whose two readings are not steady (kernels/membw.h; with --hot: against
 *    the figure at the top, the GEMV runs from cache). The weights are copies of the matrix, 1 GiB
 *    together (32x the last-level cache, whose adaptive replacement keeps
 *    a share of smaller cyclic working sets), used in turn, so every
 *    product streams its weights from memory as in a real model;
 *  - GEMM: int8 GOPS = 2*M*N*K / time, and the int8 peak of the vector
 *    unit (kernels/peak.h) at 1 and 2 threads above the table;
 *  - ratio: each interleaved layout against the plain kernel of its base
 *    type (same shape, threads, run).
 *
 * Also the 256-weight super-block formats Q2_K, CB2, CB3 (the built-in
 * C = 8 books) and their 16-row layouts Q2_K_16X4, CB2_16X4, CB3_16X4.
 *
 * And BCQ{4,3,2}_G128 (formats/bcq.h) with their 16-row _LUT layouts, the
 * mu = 4 table-lookup GEMV, whose work is q table lookups per 4 weights, so
 * the last column, weights per second at one thread (with --hot: from
 * cache, the compute rate), compares it with the int8 GEMVs of Q4_0 / Q8_0
 * per weight; on x86 each _LUT row is followed by the mu = 8 float-table
 * path (lb_bcq_f8_prepare + lb_bcq_gemv_f8_avx2, one thread, table
 * building included). The GEMM column is the prefill side: the table-lookup
 * GEMV once per activation row.
 *
 * --cpu: one thread only, every time (bandwidth included) taken as the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a machine shared with
 * other jobs wall time is meaningless, CPU time much less so (it still
 * varies by 10-20 %, so compare types within one run).
 *
 * --hot: the GEMV reuses one copy of the matrix, so a small shape (say
 * --shape 256x2048) runs from L2: the kernel's compute rate without memory
 * stalls, to compare with the streaming figure.
 *
 * --mx-outliers F: MX matrices with that share of fp16 outliers (default
 * 0.002, the quantizer's), to measure what the outliers cost.
 *
 * --act-bits P: the ABQ types' activation bits (1..8, default 8; 16: fp32 activations).
 *
 * usage: kernels [-m M] [-s SECONDS] [--shape NxK] [--types LIST] [--no-gemm] [--cpu] [--hot]
 *                [--mx-outliers F] [--act-bits P]
 *   default M = 256, 0.3 s per measurement, the six issue shapes, all types. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/mx.h"
#include "formats/repack.h"
#include "kernels/dispatch.h"
#include "kernels/membw.h"
#include "kernels/peak.h"
#include "kernels/x86/bcq_x86.h"

#include "bench_util.h"

/* ---- memory bandwidth ---- */

#define BW_BYTES ((size_t)1 << 30)

/* Huge pages where the kernel allows (THP "madvise" mode, alloc_huge in
 * bench_util.h): measured 5-15% more streaming bandwidth here. */
/* Read bandwidth: the library's kernel (kernels/membw.h), on this program's clock. */
static double read_bw(const uint8_t *buf, size_t n, int nth, int reps) { return lb_read_bandwidth_of(buf, n, nth, reps, now); }

static double triad_bw(float *a, const float *b, const float *c, size_t n, int nth, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
#pragma omp parallel for num_threads(nth) schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
        const double dt = now() - t0;
        if (dt < best) best = dt;
    }
    return 3.0 * sizeof(float) * (double)n / best / 1e9;
}

/* ---- matrices ---- */

typedef struct {
    int type;
    const char *label;
} bench_type;

static const bench_type all_types[] = {
    {LB_TYPE_Q4_0, "Q4_0"},         {LB_TYPE_Q4_0_4X4, "Q4_0_4X4"},     {LB_TYPE_Q4_0_4X8, "Q4_0_4X8"},
    {LB_TYPE_Q4_0_8X8, "Q4_0_8X8"}, {LB_TYPE_IQ4_NL, "IQ4_NL"},         {LB_TYPE_IQ4_NL_4X4, "IQ4_NL_4X4"},
    {LB_TYPE_IQ4_NL_4X8, "IQ4_NL_4X8"}, {LB_TYPE_IQ4_NL_8X8, "IQ4_NL_8X8"}, {LB_TYPE_Q8_0, "Q8_0"},
    {LB_TYPE_Q8_0_4X4, "Q8_0_4X4"}, {LB_TYPE_Q8_0_4X8, "Q8_0_4X8"},     {LB_TYPE_Q8_0_8X8, "Q8_0_8X8"},
    {LB_TYPE_Q2_K, "Q2_K"},         {LB_TYPE_Q2_K_16X4, "Q2_K_16X4"},   {LB_TYPE_CB2, "CB2"},
    {LB_TYPE_CB2_16X4, "CB2_16X4"}, {LB_TYPE_CB3, "CB3"},               {LB_TYPE_CB3_16X4, "CB3_16X4"},
    /* the other formats of K-quant mixes and their 16-row layouts (formats/repack_kx.h) */
    {LB_TYPE_Q3_K, "Q3_K"},         {LB_TYPE_Q3_K_16X4, "Q3_K_16X4"},   {LB_TYPE_Q4_K, "Q4_K"},
    {LB_TYPE_Q4_K_16X4, "Q4_K_16X4"}, {LB_TYPE_Q5_K, "Q5_K"},           {LB_TYPE_Q5_K_16X4, "Q5_K_16X4"},
    {LB_TYPE_Q6_K, "Q6_K"},         {LB_TYPE_Q6_K_16X4, "Q6_K_16X4"},   {LB_TYPE_IQ4_XS, "IQ4_XS"},
    {LB_TYPE_IQ4_XS_16X4, "IQ4_XS_16X4"}, {LB_TYPE_Q4_1, "Q4_1"},       {LB_TYPE_Q4_1_16X4, "Q4_1_16X4"},
    {LB_TYPE_Q5_0, "Q5_0"},         {LB_TYPE_Q5_0_16X4, "Q5_0_16X4"},   {LB_TYPE_Q5_1, "Q5_1"},
    {LB_TYPE_Q5_1_16X4, "Q5_1_16X4"},
    /* seed 002's 2/4/16 mixed precision (formats/mx.h): 25 % of groups in 4 bits, 0.2 % outliers */
    {LB_TYPE_MX, "MX"},
    /* seed 004's bit planes (formats/abq.h), activations at --act-bits P (default 8) */
    {LB_TYPE_ABQ_W8, "ABQ_W8"}, {LB_TYPE_ABQ_W4, "ABQ_W4"}, {LB_TYPE_ABQ_W3, "ABQ_W3"}, {LB_TYPE_ABQ_W2, "ABQ_W2"},
    {LB_TYPE_ABQ_W2S, "ABQ_W2S"}, {LB_TYPE_ABQ_W4_C4, "ABQ_W4_C4"}, {LB_TYPE_ABQ_W3_C4, "ABQ_W3_C4"},
    {LB_TYPE_ABQ_W2_C2, "ABQ_W2_C2"}, {LB_TYPE_ABQ_W2S_C4, "ABQ_W2S_C4"}, {LB_TYPE_ABQ_W4_C4X16, "ABQ_W4_C4X16"},
    {LB_TYPE_ABQ_W3_C4X16, "ABQ_W3_C4X16"}, {LB_TYPE_ABQ_W2_C2X16, "ABQ_W2_C2X16"},
    {LB_TYPE_ABQ_W2S_C4X16, "ABQ_W2S_C4X16"}, {LB_TYPE_ABQ_W2S_C3X16, "ABQ_W2S_C3X16"},
    {LB_TYPE_ABQ_W3_C3X16, "ABQ_W3_C3X16"},
    /* seed 003's binary-coding quantization and its table-lookup layouts (formats/bcq.h) */
    {LB_TYPE_BCQ4_G128, "BCQ4_G128"}, {LB_TYPE_BCQ4_G128_LUT, "BCQ4_G128_LUT"}, {LB_TYPE_BCQ3_G128, "BCQ3_G128"},
    {LB_TYPE_BCQ3_G128_LUT, "BCQ3_G128_LUT"}, {LB_TYPE_BCQ2_G128, "BCQ2_G128"}, {LB_TYPE_BCQ2_G128_LUT, "BCQ2_G128_LUT"},
    {LB_TYPE_BCQ1_G128_LUT, "BCQ1_G128_LUT"}, {LB_TYPE_BCQ4_G64_LUT, "BCQ4_G64_LUT"},
    {LB_TYPE_BCQ4_G32_LUT, "BCQ4_G32_LUT"}, {LB_TYPE_BCQ2_G32_LUT, "BCQ2_G32_LUT"},
};
enum { N_ALL = sizeof all_types / sizeof all_types[0] };

/* Random quants with small sane scales; speed does not depend on values. */
static void fill_plain(int base, uint8_t *w, size_t bytes) {
    const size_t bs = lb_traits(base)->type_size;
    for (size_t i = 0; i < bytes; i += 8) {
        const uint64_t r = next_rand();
        memcpy(w + i, &r, LB_MIN((size_t)8, bytes - i));
    }
    /* where the fp16 scales are: first (Q4_0, IQ4_NL, Q8_0, Q5_0, IQ4_XS), last (CB, Q3_K, Q6_K), d and
     * dmin first (Q4_K, Q5_K, Q4_1, Q5_1: d and m) or last (Q2_K) */
    const int last = base == LB_TYPE_Q2_K || base == LB_TYPE_CB2 || base == LB_TYPE_CB3 || base == LB_TYPE_Q3_K ||
                     base == LB_TYPE_Q6_K;
    const int two = base == LB_TYPE_Q2_K || base == LB_TYPE_Q4_K || base == LB_TYPE_Q5_K || base == LB_TYPE_Q4_1 ||
                    base == LB_TYPE_Q5_1;
    const size_t doff = !last ? 0 : two ? bs - 4 : bs - 2;
    /* fp16 scales at doff: 2 (d, m), q + 1 for BCQ (alphas, z: no NaN or subnormal from random bits), else 1 */
    const int n_scales = two ? 2 : lb_bcq_bits(base) ? lb_bcq_bits(base) + 1 : 1;
    for (size_t b = 0; b < bytes / bs; b++) {
        const lb_fp16 d = lb_f32_to_fp16(0.001f * (float)(1 + next_rand() % 16));
        for (int i = 0; i < n_scales; i++) memcpy(w + b * bs + doff + 2 * i, &d, 2);
    }
}

typedef struct {
    double gemv_gbs[3], gemm_gops[3]; /* by thread count 1, 2 */
} result;

/* GEMV: each copy once per pass; best pass. */
static double bench_gemv(lb_matrix *copies, int n_copies, const float *x, float *y, void *scratch, int nth,
                         double budget) {
    double best = 1e30;
    const double start = now();
    int passes = 0;
    do {
        const double t0 = now();
        for (int c = 0; c < n_copies; c++) lb_matmul(&copies[c], x, 1, y, (size_t)copies[c].N, scratch, nth);
        const double dt = (now() - t0) / n_copies;
        if (dt < best) best = dt;
        passes++;
    } while (passes < 3 || now() - start < budget);
    return (double)lb_matrix_bytes(&copies[0]) / best / 1e9;
}

static double bench_gemm(const lb_matrix *W, const float *x, int M, float *y, void *scratch, int nth, double budget) {
    double best = 1e30;
    const double start = now();
    int reps = 0;
    do {
        const double t0 = now();
        lb_matmul(W, x, M, y, (size_t)W->N, scratch, nth);
        const double dt = now() - t0;
        if (dt < best) best = dt;
        reps++;
    } while (reps < 2 || now() - start < budget);
    return 2.0 * M * (double)W->N * (double)W->K / best / 1e9;
}

#if LB_HAVE_X86_KERNELS
/* The mu = 8 float-table GEMV of a BCQ _LUT matrix, one thread: the tables
 * (lb_bcq_f8_prepare) and the lookups, each copy once per pass; GB/s of
 * weights as bench_gemv. */
static double bench_gemv_f8(const lb_matrix *copies, int n_copies, const float *x, float *y, double budget) {
    void *act = lb_malloc_aligned(lb_bcq_f8_size(copies[0].K));
    double best = 1e30;
    const double start = now();
    int passes = 0;
    do {
        const double t0 = now();
        for (int c = 0; c < n_copies; c++) {
            lb_bcq_f8_prepare(x, copies[c].K, act);
            lb_bcq_gemv_f8_avx2(copies[c].type, copies[c].K, copies[c].data, copies[c].N, act, y);
        }
        const double dt = (now() - t0) / n_copies;
        if (dt < best) best = dt;
        passes++;
    } while (passes < 3 || now() - start < budget);
    lb_free_aligned(act);
    return (double)lb_matrix_bytes(&copies[0]) / best / 1e9;
}
#endif

int main(int argc, char **argv) {
    int M = 256, do_gemm = 1, hot = 0;
    double budget = 0.3, mx_outliers = -1;
    int act_bits = 8;
    int shapes[8][2] = {{2048, 2048}, {5632, 2048}, {2048, 5632}, {4096, 4096}, {11008, 4096}, {14336, 4096}};
    int n_shapes = 6;
    int use[N_ALL];
    for (int i = 0; i < N_ALL; i++) use[i] = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) M = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-gemm")) do_gemm = 0;
        else if (!strcmp(argv[i], "--cpu")) use_cpu_time = 1;
        else if (!strcmp(argv[i], "--hot")) hot = 1;
        else if (!strcmp(argv[i], "--mx-outliers") && i + 1 < argc) mx_outliers = atof(argv[++i]);
        else if (!strcmp(argv[i], "--act-bits") && i + 1 < argc) act_bits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            const char *a = argv[++i];
            char end;
            if (sscanf(a, "%dx%d%c", &shapes[0][0], &shapes[0][1], &end) != 2 || shapes[0][0] <= 0 ||
                shapes[0][1] <= 0 || shapes[0][1] % 256) {
                fprintf(stderr, "kernels: --shape %s: want NxK with N > 0 and K a positive multiple of 256\n", a);
                return 2;
            }
            n_shapes = 1;
        } else if (!strcmp(argv[i], "--types") && i + 1 < argc) {
            const char *list = argv[++i];
            for (int t = 0; t < N_ALL; t++) {
                char key[32];
                snprintf(key, sizeof key, ",%s,", all_types[t].label);
                char wrapped[512];
                snprintf(wrapped, sizeof wrapped, ",%s,", list);
                use[t] = strstr(wrapped, key) != NULL;
            }
        } else {
            fprintf(stderr, "usage: kernels [-m M] [-s SECONDS] [--shape NxK] [--types Q4_0,Q4_0_8X8,...] [--no-gemm] [--cpu] [--hot] [--act-bits P]\n");
            return 2;
        }
    }
    if (M < 1 || budget <= 0) return 2;

    printf("cpu: %s, level %s; M = %d for GEMM\n", lb_cpu_features_string(), lb_isa_name(lb_cpu_level()), M);
    /* bandwidth first, before the matrices take memory */
    double rbw[3] = {0}, tbw[3] = {0};
    {
        uint8_t *buf = alloc_huge(BW_BYTES);
        if (!buf) return 1;
        memset(buf, 1, BW_BYTES);
        const size_t n = BW_BYTES / 3 / sizeof(float) / 64 * 64;
        float *a = (float *)buf, *b = a + n, *c = b + n;
        for (int t = 1; t <= (use_cpu_time ? 1 : 2); t++) {
            rbw[t] = read_bw(buf, BW_BYTES, t, 15);
            tbw[t] = triad_bw(a, b, c, n, t, 5);
        }
        free(buf);
    }
    printf("memory: read %.1f GB/s (1 thread), %.1f GB/s (2 threads); triad %.1f / %.1f GB/s\n", rbw[1], rbw[2],
           tbw[1], tbw[2]);
    uint8_t *beside = hot ? NULL : alloc_huge(LB_BW_BESIDE_BYTES);
    if (beside) {
        memset(beside, 1, LB_BW_BESIDE_BYTES);
        printf("GEMV %%read: of the read bandwidth measured just before and after it (* when the two differ by a tenth)\n");
    }
    /* the GEMM roofline (wall time: not meaningful with --cpu) */
    double peak[3] = {0, 0, 0};
    if (!use_cpu_time && *lb_int8_peak_what()) {
        peak[1] = lb_int8_peak_gops(1, 5), peak[2] = lb_int8_peak_gops(2, 5);
        printf("int8 peak (%s): %.0f GOPS (1 thread), %.0f GOPS (2 threads); GEMM cells: GOPS (share of it)\n",
               lb_int8_peak_what(), peak[1], peak[2]);
    }
    printf("\n");
    printf("| shape NxK | type | kernel | GEMV GB/s t1 | %%read | GEMV GB/s t2 | %%read | GEMM GOPS t1 | GEMM GOPS t2 | vs plain (GEMV, GEMM: t2; t1 with --cpu) | GEMV Gweights/s t1 |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");

    for (int si = 0; si < n_shapes; si++) {
        const int N = shapes[si][0], K = shapes[si][1];
        float *x = malloc(sizeof(float) * (size_t)K * M), *y = malloc(sizeof(float) * (size_t)N * M);
        for (size_t i = 0; i < (size_t)K * M; i++) x[i] = (float)(next_rand() % 2001) / 1000.0f - 1.0f;
        result plain_res[N_ALL];
        memset(plain_res, 0, sizeof plain_res);
        for (int t = 0; t < N_ALL; t++) {
            if (!use[t]) continue;
            const int type = all_types[t].type, base = lb_type_base(type);
            lb_mx_params mxp = lb_mx_default_params();
            if (mx_outliers >= 0) mxp.outlier_frac = (float)mx_outliers;
            const size_t row_size = lb_row_size(type, K);
            const size_t bytes = type == LB_TYPE_MX ? lb_mx_random_size(N, K, &mxp) : row_size * (size_t)N;
            /* copies: 1 GiB together */
            const int n_copies = hot ? 1 : (int)LB_MAX((size_t)2, ((size_t)1 << 30) / bytes + 1);
            lb_matrix *copies = calloc((size_t)n_copies, sizeof *copies);
            void **mx_views = calloc((size_t)n_copies, sizeof *mx_views), **mx_bufs = calloc((size_t)n_copies, sizeof *mx_bufs);
            /* ABQ's X16 layouts: random planes made into the row layout (base), then interleaved
             * (the 3-bit ones hold fewer bytes than their row layout) */
            const int abq_planes = lb_abq_codes_of_x16(type) >= 0 ? lb_type_base(base) : -1;
            uint8_t *plain = lb_malloc_aligned(abq_planes >= 0 ? LB_MAX(bytes, lb_row_size(base, K) * (size_t)N) : bytes);
            if (abq_planes >= 0) {
                uint8_t *p = lb_malloc_aligned((size_t)lb_row_size(abq_planes, K) * (size_t)N);
                fill_plain(abq_planes, p, (size_t)lb_row_size(abq_planes, K) * (size_t)N);
                lb_repack_tensor(base, p, plain, K, N);
                lb_free_aligned(p);
            } else if (type != LB_TYPE_MX) {
                fill_plain(base, plain, bytes);
            }
            for (int c = 0; c < n_copies; c++) {
                uint8_t *d = alloc_huge(bytes);
                if (type == LB_TYPE_MX) {
                    /* the weight pointer is a view of the pieces in d (freed after d below) */
                    lb_mx_parts parts;
                    lb_mx_view *v = NULL;
                    lb_mx_random_pieces(N, K, &mxp, (uint64_t)c + 1, d, &parts);
                    if (lb_mx_view_make(&parts, &v)) return 1;
                    mx_views[c] = v, mx_bufs[c] = d;
                    copies[c] = (lb_matrix){type, K, N, 0, v, 0};
                    continue;
                }
                if (c) memcpy(d, copies[0].data, bytes);
                else if (type == base) memcpy(d, plain, bytes);
                else lb_repack_tensor(type, plain, d, K, N);
                copies[c] = (lb_matrix){type, K, N, row_size, d, lb_abq_bits(base) || abq_planes >= 0 ? act_bits : 0};
            }
            void *scratch = lb_malloc_aligned(lb_matmul_scratch_size(&copies[0], M));
            result r;
            memset(&r, 0, sizeof r);
            char pct[3][16] = {"-", "-", "-"};
            for (int nth = 1; nth <= (use_cpu_time ? 1 : 2); nth++) {
                const double b0 = beside ? lb_read_bandwidth_beside(beside, nth, now) : rbw[nth];
                r.gemv_gbs[nth] = bench_gemv(copies, n_copies, x, y, scratch, nth, budget);
                const double b1 = beside ? lb_read_bandwidth_beside(beside, nth, now) : rbw[nth];
                snprintf(pct[nth], sizeof pct[nth], "%.0f%%%s", 200.0 * r.gemv_gbs[nth] / (b0 + b1),
                         lb_read_bandwidth_steady(b0, b1) ? "" : "*");
                if (do_gemm) r.gemm_gops[nth] = bench_gemm(&copies[0], x, M, y, scratch, nth, budget);
            }
            int pi = 0;
            while (pi < N_ALL && all_types[pi].type != base) pi++;
            if (type == base) plain_res[pi] = r;
            char ratio[64] = "-";
            const int rt = use_cpu_time ? 1 : 2; /* the ratio's thread count */
            if (type != base && plain_res[pi].gemv_gbs[rt] > 0)
                snprintf(ratio, sizeof ratio, "%.2fx, %.2fx", r.gemv_gbs[rt] / plain_res[pi].gemv_gbs[rt],
                         do_gemm ? r.gemm_gops[rt] / plain_res[pi].gemm_gops[rt] : 0.0);
            const double weights_per_byte = (double)N * K / (double)lb_matrix_bytes(&copies[0]);
            char gemm[3][48];
            for (int nth = 1; nth <= 2; nth++) {
                const int n = snprintf(gemm[nth], sizeof gemm[nth], "%.1f", r.gemm_gops[nth]);
                if (peak[nth] > 0 && r.gemm_gops[nth] > 0)
                    snprintf(gemm[nth] + n, sizeof gemm[nth] - (size_t)n, " (%.0f%%)", 100.0 * r.gemm_gops[nth] / peak[nth]);
            }
            printf("| %dx%d | %s | %s | %.1f | %s | %.1f | %s | %s | %s | %s | %.2f |\n", N, K, all_types[t].label,
                   lb_kernel_for(&copies[0])->name, r.gemv_gbs[1], pct[1], r.gemv_gbs[2], pct[2], gemm[1], gemm[2],
                   ratio, r.gemv_gbs[1] * weights_per_byte);
#if LB_HAVE_X86_KERNELS
            if (lb_bcq_plain_of_lut(type) >= 0 && lb_isa_is_x86(lb_cpu_level())) {
                const double f8 = bench_gemv_f8(copies, n_copies, x, y, budget);
                printf("| %dx%d | %s mu=8 | bcq_f8_avx2 (float tables) | %.1f | %.0f%% | - | - | - | - | %.2fx mu=4, t1 | %.2f |\n",
                       N, K, all_types[t].label, f8, 100.0 * f8 / rbw[1], f8 / r.gemv_gbs[1], f8 * weights_per_byte);
            }
#endif
            fflush(stdout);
            for (int c = 0; c < n_copies; c++) {
                if (mx_views[c]) free(mx_bufs[c]), lb_free_aligned(mx_views[c]);
                else free((void *)copies[c].data);
            }
            free(copies), free(mx_views), free(mx_bufs);
            lb_free_aligned(plain);
            lb_free_aligned(scratch);
        }
        free(x);
        free(y);
    }
    free(beside);
    return 0;
}
