/* The matrix multiply driver: convert activations once to the kernel's input
 * format, then split the output over threads.
 *
 * Activations: with a grouped kernel (act_rows AR = 4, or 16 for AMX) the
 * first M - M % AR rows are quantized AR at a time straight into the layout
 * the GEMM tile reads (no separate pass); the tail rows, and decode (M <
 * AR), are quantized per row for the GEMV.
 *
 * Interleaved weights (formats/repack.h) with N % R != 0 keep their last
 * N % R rows plain; those go to the base type's kernel, which needs every
 * activation row in plain form, so then all rows are also quantized per row.
 *
 * Work: output rows are split into contiguous ranges aligned to the weight
 * interleave R (a thread's weight stream stays sequential, which matters for
 * decode: it is bandwidth-bound). When the matrix is short (few row groups
 * per thread) and M is large, activation rows are split instead. Inside a
 * work item, activation rows are walked in tiles that stay in L2 while the
 * kernel passes each weight group (in L1) over them. */
#include <omp.h>

#include "formats/repack.h"
#include "kernels/dispatch.h"

#define LB_TILE_N 16          /* plain rows per work item */
#define LB_ACT_TILE_BYTES (768 * 1024) /* activation bytes per pass over a weight tile */

static size_t plain_act_row(const lb_kernel *k, int64_t K) { return lb_row_size(k->act_type, K); }

static int uses_x4(const lb_kernel *k) { return k->act_rows > 1 && k->gemm && k->quantize_act_x4; }
/* rows per activation group: 1 for per-row kernels */
static int act_group(const lb_kernel *k) { return uses_x4(k) ? k->act_rows : 1; }

size_t lb_matmul_scratch_size(const lb_matrix *W, int M) {
    const lb_kernel *k = lb_kernel_get(W->type);
    if (!k || M <= 0) return 0;
    /* any level's grouped layout fits (LB_ACT_X4_MAX_BLOCK per 4 rows), plus every row
     * plain: the tail rows of an interleaved matrix may need them all */
    return (size_t)(M / 4) * (size_t)(W->K / 32) * LB_ACT_X4_MAX_BLOCK + (size_t)M * plain_act_row(k, W->K);
}

typedef struct {
    const lb_kernel *k;
    const lb_matrix *W;
    const char *a4;     /* AR-row groups for rows [0, M4) */
    size_t g_size;      /* bytes per group */
    const char *a1;     /* plain rows: row m at a1 + m * arow */
    size_t arow;
    int M, M4, AR;
    float *Y;
    size_t ldy;
} job;

/* Plain weight rows [n0, n1) x plain activation rows [m0, m1). */
static void run_plain(const lb_kernel *k, const lb_matrix *W, const job *j, int n0, int n1, int m0, int m1) {
    const char *a = j->a1 + (size_t)m0 * j->arow;
    float *y = j->Y + (size_t)m0 * j->ldy;
    if (k->gemm && !uses_x4(k)) {
        k->gemm(W->K, W->data, W->row_size, n0, n1, a, j->arow, m1 - m0, y, j->ldy);
        return;
    }
    for (int m = 0; m < m1 - m0; m++)
        for (int n = n0; n < n1; n++)
            k->vec_dot(W->K, y + (size_t)m * j->ldy + n, (const char *)W->data + (size_t)n * W->row_size,
                       a + (size_t)m * j->arow);
}

/* Output rows [n0, n1) (whole groups for interleaved weights) x activation
 * rows [m0, m1) (m0 a multiple of the activation group AR). */
static void run_rows(const job *j, int n0, int n1, int m0, int m1) {
    const lb_kernel *k = j->k;
    const lb_matrix *W = j->W;
    if (n0 >= n1 || m0 >= m1) return;
    /* rows per activation tile: about LB_ACT_TILE_BYTES of quantized input */
    const int mt = (int)LB_MAX((size_t)16, LB_ACT_TILE_BYTES / LB_MAX((size_t)1, j->arow)) & ~15;
    for (int mb = m0; mb < m1; mb += mt) {
        const int me = LB_MIN(mb + mt, m1);
        const int e4 = LB_MIN(me, j->M4);
        if (mb < e4)
            k->gemm(W->K, W->data, W->row_size, n0, n1, j->a4 + (size_t)(mb / j->AR) * j->g_size, j->g_size, e4 - mb,
                    j->Y + (size_t)mb * j->ldy, j->ldy);
        const int t0 = LB_MAX(mb, j->M4);
        if (t0 >= me) continue;
        if (k->gemv)
            k->gemv(W->K, W->data, W->row_size, n0, n1, j->a1 + (size_t)t0 * j->arow, j->arow, me - t0,
                    j->Y + (size_t)t0 * j->ldy, j->ldy);
        else
            run_plain(k, W, j, n0, n1, t0, me);
    }
}

void lb_matmul(const lb_matrix *W, const float *X, int M, float *Y, size_t ldy, void *scratch,
               int n_threads) {
    const lb_kernel *k = lb_kernel_get(W->type);
    const int64_t K = W->K, N = W->N;
    const int R = lb_type_rows(W->type);
    const int NR = (int)(N - N % R); /* rows in whole groups; the rest are plain */
    const int AR = act_group(k);
    job j = {k, W, NULL, 0, NULL, plain_act_row(k, K), M, uses_x4(k) ? M - M % AR : 0, AR, Y, ldy};
    j.g_size = (size_t)(K / 32) * k->act_x4_block;
    j.a4 = scratch;
    j.a1 = (const char *)scratch + (size_t)(j.M4 / AR) * j.g_size;
    const int plain_from = NR < N ? 0 : j.M4; /* rows that need a plain copy */
    const int64_t blck = lb_traits(k->act_type)->blck;          /* activation block: */
    const size_t bsize = lb_traits(k->act_type)->type_size;     /* values and bytes */
    /* the unit work is split in: a whole interleaved group, or a tile of rows */
    const int unit = R > 1 ? R : LB_TILE_N;
    const int n_units = (NR + unit - 1) / unit;
    if (n_threads < 1) n_threads = 1;
    /* Tiny matrices are not worth waking threads for. */
    if ((int64_t)M * N * K < 32768) n_threads = 1;
    /* Short matrix, many activation rows: split the rows of X too. */
    const int split_m = n_units < 4 * n_threads && M >= 8 * n_threads;

#pragma omp parallel num_threads(n_threads)
    {
        const int nth = omp_get_num_threads(), ith = omp_get_thread_num();
        for (int g = ith; g < j.M4 / AR; g += nth)
            k->quantize_act_x4(X + (size_t)g * AR * K, (size_t)K, (char *)scratch + (size_t)g * j.g_size, K);
        if (M - plain_from >= nth) {
            for (int m = plain_from + ith; m < M; m += nth)
                k->quantize_act(X + (size_t)m * K, (char *)j.a1 + (size_t)m * j.arow, K);
        } else {
            /* decode: fewer rows than threads, so each thread takes a slice
             * of every row's blocks (shorter wait at the barrier) */
            const int64_t nb = K / blck, b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
            for (int m = plain_from; m < M && b1 > b0; m++)
                k->quantize_act(X + (size_t)m * K + b0 * blck, (char *)j.a1 + (size_t)m * j.arow + (size_t)b0 * bsize,
                                (b1 - b0) * blck);
        }
#pragma omp barrier
        if (split_m) {
            /* every thread covers all of N for its share of row groups */
            const int g = LB_MAX(AR, 4), groups = (M + g - 1) / g;
            const int g0 = (int)((int64_t)groups * ith / nth), g1 = (int)((int64_t)groups * (ith + 1) / nth);
            run_rows(&j, 0, NR, LB_MIN(g * g0, M), LB_MIN(g * g1, M));
        } else {
            const int u0 = (int)((int64_t)n_units * ith / nth), u1 = (int)((int64_t)n_units * (ith + 1) / nth);
            const int n0 = LB_MIN(u0 * unit, NR), n1 = LB_MIN(u1 * unit, NR);
            if (R > 1) {
                run_rows(&j, n0, n1, 0, M);
            } else {
                /* plain rows: one tile at a time so it stays in cache over X */
                for (int n = n0; n < n1; n += LB_TILE_N) run_rows(&j, n, LB_MIN(n + LB_TILE_N, n1), 0, M);
            }
        }
        if (NR < N && ith == nth - 1) {
            /* the plain tail of an interleaved matrix: the base type's kernel */
            const lb_kernel *kb = lb_kernel_get(lb_type_base(W->type));
            run_plain(kb, W, &j, NR, (int)N, 0, M);
        }
    }
}
