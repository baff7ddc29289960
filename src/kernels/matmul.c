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
 * decode: it is bandwidth-bound). In decode every range is a two-ended
 * queue: its owner claims shrinking chunks from the front, and a thread done
 * with its own takes small chunks from the back of another's. One core's
 * memory is sometimes slower for a while (or the VM deschedules it), and the
 * other then helps instead of waiting at the barrier; before, only the last
 * eighth of a range could be taken, and on the Zen 4 VM in its fast memory
 * mode libgomp's spinning was 8-10 % of the decode kernels' time (4-6 %
 * with the queues). Decode also skips the barrier after the activations'
 * conversion: each thread converts the 1-4 rows itself, into its own part of
 * the scratch. When the matrix is short (few row groups
 * per thread) and M is large, activation rows are split instead. Inside a
 * work item, activation rows are walked in tiles that stay in L2 while the
 * kernel passes each weight group (in L1) over them. */
#include <omp.h>
#include <stdatomic.h>

#include "formats/repack.h"
#include "kernels/dispatch.h"

#define LB_TILE_N 16          /* plain rows per work item */
#define LB_ACT_TILE_BYTES (768 * 1024) /* activation bytes per pass over a weight tile */
/* Decode (M <= LB_STEAL_MAX_M): a thread claims 1/STEAL_DIV of what is left
 * of its range (whole multiples of STEAL_CHUNK units) at a time, and takes STEAL_CHUNK
 * units at a time from the back of another's (matmul_same). 4 units, not 2:
 * the Q2_K GEMV runs 4 groups of 16 rows per pass (2 left it at half its
 * streams for a stolen chunk; tinyllama-1.1b Q2_K decode 1-4 % faster). */
#define LB_STEAL_MAX_M 4
#ifndef LB_STEAL_CHUNK
#define LB_STEAL_CHUNK 4
#endif
enum { STEAL_DIV = 8, STEAL_CHUNK = LB_STEAL_CHUNK, MAX_STEAL_THREADS = 64 };
/* Decode with at most this many threads: each thread quantizes the few
 * activation rows itself into its own part of the scratch, so no thread
 * waits at a barrier for the others' slices (matmul_same). */
enum { PRIV_MAX_THREADS = 16 };

static size_t plain_act_row(const lb_kernel *k, int64_t K) { return lb_row_size(k->act_type, K); }

static int uses_x4(const lb_kernel *k) { return k->act_rows > 1 && k->gemm && k->quantize_act_x4; }
/* rows per activation group: 1 for per-row kernels */
static int act_group(const lb_kernel *k) { return uses_x4(k) ? k->act_rows : 1; }

size_t lb_matmul_scratch_size(const lb_matrix *W, int M) {
    const lb_kernel *k = lb_kernel_for(W);
    if (!k || M <= 0) return 0;
    /* any level's grouped layout fits (LB_ACT_X4_MAX_BLOCK per 4 rows), plus every row
     * plain: the tail rows of an interleaved matrix may need them all */
    const size_t shared = (size_t)(M / 4) * (size_t)(W->K / 32) * LB_ACT_X4_MAX_BLOCK + (size_t)M * plain_act_row(k, W->K);
    /* decode: room for every thread's own copy of the rows (matmul_same) */
    const size_t own = (size_t)PRIV_MAX_THREADS * (size_t)LB_MIN(M, LB_STEAL_MAX_M) * plain_act_row(k, W->K);
    return LB_MAX(shared, own);
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
    /* Activation rows per tile, whole multiples of 16, the tiles of one size:
     * about LB_ACT_TILE_BYTES of quantized input, or for a kernel that blocks
     * K itself (whole_m: it decodes each weight tile once per call) as many
     * as fit 3/4 of the L2, usually all. Those activations are re-read for
     * every 16 weight rows and must stay in L2: measured on a 2 MiB L2, tiles
     * of 1.5 MiB against all 512 rows at K = 5632 doubled the Q2_K_16X4 GEMM. */
    const size_t all = (size_t)(m1 - m0) * LB_MAX((size_t)1, j->arow);
    /* whole_m 2 keeps per row a K chunk of activations: the AMX-BF16 GEMM
     * with a column block of partial sums (1.5 KiB; 1024 rows fill 3/4 of
     * a 2 MiB L2 whatever K is), ABQ's AVX2 code GEMM 16 groups of codes
     * (2-4 KiB, streamed once per 32 weight rows) */
    const size_t budget = k->whole_m == 2   ? (size_t)1024 * LB_MAX((size_t)1, j->arow)
                          : k->whole_m ? lb_cpu_l2_bytes() / 4 * 3
                                       : LB_ACT_TILE_BYTES;
    const int tiles = (int)((all + budget - 1) / budget);
    const int mt = tiles <= 1 ? m1 - m0 : ((m1 - m0 + tiles - 1) / tiles + 15) & ~15;
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

/* Work units of one matrix: whole interleaved groups, or tiles of plain rows. */
static int unit_rows(const lb_matrix *W) {
    const int R = lb_type_rows(W->type);
    return R > 1 ? R : LB_TILE_N;
}
static int rows_in_groups(const lb_matrix *W) { return (int)(W->N - W->N % lb_type_rows(W->type)); }

/* Thread t's contiguous range of units starts here (and ends where t + 1's
 * starts). */
static int range_start(int n_units, int t, int nth) { return (int)((int64_t)n_units * t / nth); }

/* A decode range as a two-ended queue of units: its owner takes chunks from
 * the front (its weight stream stays sequential), a thread whose own range
 * is done takes STEAL_CHUNK units from the back. Front and back share one
 * word, so both ends are claimed by compare-and-swap; one slot per cache
 * line. */
typedef struct {
    _Alignas(64) _Atomic uint64_t fb; /* front << 32 | back */
} unit_queue;

static void queue_init(unit_queue *q, int u0, int u1) {
    atomic_init(&q->fb, (uint64_t)(uint32_t)u0 << 32 | (uint32_t)u1);
}

/* Claims units at the front (or back) of q into [*u0, *u1): n, or with div
 * > 0 a 1/div of what is left when that is more (the owner's claims shrink
 * as its range runs out, so the last one leaves little to wait for), in
 * whole multiples of n: a kernel's widest tile (the GQ GEMV's 4 groups of
 * 16 rows, Q2_K's 4 groups) covers a claim with no narrow remainder; 0 when
 * q is empty. */
static int queue_take(unit_queue *q, int n, int div, int back, int *u0, int *u1) {
    uint64_t v = atomic_load_explicit(&q->fb, memory_order_relaxed);
    for (;;) {
        const int f = (int)(v >> 32), b = (int)(uint32_t)v;
        if (f >= b) return 0;
        const int m = LB_MIN(div > 0 ? LB_MAX(n, (b - f) / div / n * n) : n, b - f);
        const uint64_t nv = back ? (uint64_t)(uint32_t)f << 32 | (uint32_t)(b - m)
                                 : (uint64_t)(uint32_t)(f + m) << 32 | (uint32_t)b;
        if (atomic_compare_exchange_weak_explicit(&q->fb, &v, nv, memory_order_relaxed, memory_order_relaxed)) {
            *u0 = back ? b - m : f;
            *u1 = back ? b : f + m;
            return 1;
        }
    }
}

/* Activation row x (K floats) into dst in the kernel's plain input format,
 * at the matrix's activation bits where the kernel takes them (ABQ). */
static void quantize_row(const lb_kernel *k, const lb_matrix *W, const float *x, char *dst, int64_t K) {
    if (k->quantize_act_bits && W->act_bits) k->quantize_act_bits(x, dst, K, W->act_bits);
    else k->quantize_act(x, dst, K);
}

/* Whether several matrices can share one activation conversion. */
static int same_kernel(const lb_matrix *const *W, int nw) {
    for (int i = 1; i < nw; i++)
        if (W[i]->type != W[0]->type || W[i]->K != W[0]->K || W[i]->act_bits != W[0]->act_bits) return 0;
    return 1;
}

/* Units [u0, u1) of the concatenation of the matrices' units. */
static void run_units(const job *jobs, const lb_matrix *const *W, int nw, int u0, int u1) {
    int base = 0;
    for (int i = 0; i < nw && base < u1; i++) {
        const int unit = unit_rows(W[i]), NR = rows_in_groups(W[i]);
        const int n_units = (NR + unit - 1) / unit;
        const int a = LB_MAX(u0 - base, 0), b = LB_MIN(u1 - base, n_units);
        base += n_units;
        if (a >= b) continue;
        const int n0 = LB_MIN(a * unit, NR), n1 = LB_MIN(b * unit, NR);
        /* whole_m kernels of plain rows (ABQ's AMX GEMM) take the range at
         * once: they pack the activations once per call */
        if (unit != LB_TILE_N || lb_type_rows(W[i]->type) > 1 || jobs[i].k->whole_m) {
            run_rows(&jobs[i], n0, n1, 0, jobs[i].M);
        } else {
            /* plain rows: one tile at a time so it stays in cache over X */
            for (int n = n0; n < n1; n += LB_TILE_N) run_rows(&jobs[i], n, LB_MIN(n + LB_TILE_N, n1), 0, jobs[i].M);
        }
    }
}

/* Thread ith's own copy of the activation rows (M x K, plain; one set per
 * matrix when Xs is given) in its part of the scratch, and its jobs reading
 * them (mine). */
static const job *convert_own(const lb_kernel *k, const job *jobs, int nw, const float *X, const float *const *Xs,
                              int M, void *scratch, int ith, job *mine) {
    const lb_matrix *W0 = jobs[0].W;
    const int64_t K = W0->K;
    const size_t arow = jobs[0].arow;
    const int nx = Xs ? nw : 1;
    char *a1t = (char *)scratch + (size_t)ith * (size_t)nx * (size_t)M * arow;
    for (int i = 0; i < nx; i++)
        for (int m = 0; m < M; m++)
            quantize_row(k, W0, (Xs ? Xs[i] : X) + (size_t)m * K, a1t + ((size_t)i * M + m) * arow, K);
    for (int i = 0; i < nw; i++) mine[i] = jobs[i], mine[i].a1 = a1t + (size_t)(Xs ? i : 0) * M * arow;
    return mine;
}

/* Y[i] (M x N_i, row stride ldy[i]) = X (M x K) times W[i] transposed, for
 * matrices of one type and K: one activation conversion, one parallel
 * region, the threads splitting the rows of all of them (decode runs ~160
 * matmuls per token; fewer, larger regions waste less at the barriers).
 * Xs (else NULL): each matrix its own X, only where every thread converts
 * the rows itself (decode, matmul_own_ok; a MoE token's experts). */
enum { MAX_W = 32 };
static void matmul_same(const lb_matrix *const *W, int nw, const float *X, const float *const *Xs, int M,
                        float *const *Y, const size_t *ldy, void *scratch, int n_threads) {
    const lb_kernel *k = lb_kernel_for(W[0]);
    const int64_t K = W[0]->K;
    const int AR = act_group(k);
    const int M4 = uses_x4(k) ? M - M % AR : 0;
    const size_t g_size = (size_t)(K / 32) * k->act_x4_block, arow = plain_act_row(k, K);
    const char *a4 = scratch, *a1 = (const char *)scratch + (size_t)(M4 / AR) * g_size;
    job jobs[MAX_W];
    int plain_from = M4; /* rows that need a plain copy */
    int n_units = 0;
    int64_t work = 0;
    for (int i = 0; i < nw; i++) {
        jobs[i] = (job){k, W[i], a4, g_size, a1, arow, M, M4, AR, Y[i], ldy[i]};
        if (rows_in_groups(W[i]) < W[i]->N) plain_from = 0;
        n_units += (rows_in_groups(W[i]) + unit_rows(W[i]) - 1) / unit_rows(W[i]);
        work += (int64_t)M * W[i]->N * K;
    }
    const int64_t blck = lb_traits(k->act_type)->blck;      /* activation block: */
    const size_t bsize = lb_traits(k->act_type)->type_size; /* values and bytes */
    if (n_threads < 1) n_threads = 1;
    /* Tiny matrices are not worth waking threads for. */
    if (work < 32768) n_threads = 1;
    /* One short matrix, many activation rows: split the rows of X too. */
    const int split_m = nw == 1 && n_units < 4 * n_threads && M >= 8 * n_threads;

    /* decode: two-ended queues of units (below) */
    const int steal = M <= LB_STEAL_MAX_M && !split_m;
    unit_queue queue[MAX_STEAL_THREADS];
    /* decode with plain activation rows: every thread its own copy (own) */
    const int own = steal && M4 == 0 && n_threads <= PRIV_MAX_THREADS;
    if (own)
        for (int t = 0; t < n_threads; t++)
            queue_init(&queue[t], range_start(n_units, t, n_threads), range_start(n_units, t + 1, n_threads));

#pragma omp parallel num_threads(n_threads)
    {
        const int nth = omp_get_num_threads(), ith = omp_get_thread_num();
        job mine[MAX_W];
        const job *jb = jobs;
        if (own && nth == n_threads) {
            /* every thread alike (no barrier to skip for some only):
             * quantize the rows here, into this thread's part of the
             * scratch: a few microseconds of redundant work, against a
             * barrier at which the first thread waits for the last to wake */
            jb = convert_own(k, jobs, nw, X, Xs, M, scratch, ith, mine);
        } else if (Xs) { /* fewer threads than asked: the same, then the barrier the queues need */
            if (steal && nth <= MAX_STEAL_THREADS)
                queue_init(&queue[ith], range_start(n_units, ith, nth), range_start(n_units, ith + 1, nth));
            jb = convert_own(k, jobs, nw, X, Xs, M, scratch, ith, mine);
#pragma omp barrier
        } else {
            if (steal && nth <= MAX_STEAL_THREADS) /* read after the barrier */
                queue_init(&queue[ith], range_start(n_units, ith, nth), range_start(n_units, ith + 1, nth));
            for (int g = ith; g < M4 / AR; g += nth)
                k->quantize_act_x4(X + (size_t)g * AR * K, (size_t)K, (char *)scratch + (size_t)g * g_size, K);
            if (M - plain_from >= nth || k->act_whole_row || k->quantize_act_bits) {
                for (int m = plain_from + ith; m < M; m += nth)
                    quantize_row(k, W[0], X + (size_t)m * K, (char *)a1 + (size_t)m * arow, K);
            } else {
                /* fewer rows than threads, so each thread takes a slice of
                 * every row's blocks (shorter wait at the barrier) */
                const int64_t nb = K / blck, b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
                for (int m = plain_from; m < M && b1 > b0; m++)
                    k->quantize_act(X + (size_t)m * K + b0 * blck, (char *)a1 + (size_t)m * arow + (size_t)b0 * bsize,
                                    (b1 - b0) * blck);
            }
#pragma omp barrier
        }
        if (split_m) {
            /* every thread covers all of N for its share of row groups */
            const int g = LB_MAX(AR, 4), groups = (M + g - 1) / g;
            const int g0 = (int)((int64_t)groups * ith / nth), g1 = (int)((int64_t)groups * (ith + 1) / nth);
            run_rows(&jb[0], 0, rows_in_groups(W[0]), LB_MIN(g * g0, M), LB_MIN(g * g1, M));
        } else if (!steal || nth > MAX_STEAL_THREADS) {
            /* one contiguous range per thread: each weight stream stays long
             * (chunks handed out dynamically measured slower for decode: the
             * prefetcher restarts at every chunk) */
            run_units(jb, W, nw, range_start(n_units, ith, nth), range_start(n_units, ith + 1, nth));
        } else {
            /* decode: the same ranges as two-ended queues (queue_take):
             * a thread whose memory was slower this time (or that was
             * descheduled) is helped instead of waited for at the barrier */
            for (int u0, u1; queue_take(&queue[ith], STEAL_CHUNK, STEAL_DIV, 0, &u0, &u1);)
                run_units(jb, W, nw, u0, u1);
            for (int r = 1; r < nth; r++)
                for (int u0, u1; queue_take(&queue[(ith + r) % nth], STEAL_CHUNK, 0, 1, &u0, &u1);)
                    run_units(jb, W, nw, u0, u1);
        }
        for (int i = 0; i < nw; i++) {
            const int NR = rows_in_groups(W[i]);
            if (NR < W[i]->N && ith == (nth - 1 - i % nth)) {
                /* the plain tail of an interleaved matrix: the base type's kernel */
                const lb_kernel *kb = lb_kernel_get(lb_type_base(W[i]->type));
                run_plain(kb, W[i], &jb[i], NR, (int)W[i]->N, 0, M);
            }
        }
    }
}

void lb_matmul(const lb_matrix *W, const float *X, int M, float *Y, size_t ldy, void *scratch, int n_threads) {
    const lb_matrix *ws[1] = {W};
    float *ys[1] = {Y};
    matmul_same(ws, 1, X, NULL, M, ys, &ldy, scratch, n_threads);
}

void lb_matmul_multi(const lb_matrix *const *W, int nw, const float *X, int M, float *const *Y, const size_t *ldy,
                     void *scratch, int n_threads) {
    if (nw <= MAX_W && same_kernel(W, nw)) {
        matmul_same(W, nw, X, NULL, M, Y, ldy, scratch, n_threads);
        return;
    }
    for (int i = 0; i < nw; i++) lb_matmul(W[i], X, M, Y[i], ldy[i], scratch, n_threads);
}

size_t lb_matmul_rows_scratch_size(const lb_matrix *W, int nw) {
    const lb_kernel *k = lb_kernel_for(W);
    return k ? (size_t)PRIV_MAX_THREADS * (size_t)nw * plain_act_row(k, W->K) : 0;
}

void lb_matmul_rows(const lb_matrix *const *W, int nw, const float *const *X, float *const *Y, void *scratch,
                    int n_threads) {
    size_t ldy[MAX_W];
    if (n_threads < 1) n_threads = 1;
    /* one X per matrix: matmul_same converts them per thread (M = 1 is
     * always its decode path), for at most PRIV_MAX_THREADS threads */
    if (nw > MAX_W || n_threads > PRIV_MAX_THREADS || !same_kernel(W, nw)) {
        for (int i = 0; i < nw; i++) lb_matmul(W[i], X[i], 1, Y[i], (size_t)W[i]->N, scratch, n_threads);
        return;
    }
    for (int i = 0; i < nw; i++) ldy[i] = (size_t)W[i]->N;
    matmul_same(W, nw, NULL, X, 1, Y, ldy, scratch, n_threads);
}
