/* The fp32 GEMM family's driver (kernels/sgemm.h), in the usual packed-panel
 * form:
 *  - C is cut into units (rows x columns) that OpenMP threads take one at a
 *    time; a unit runs K in blocks of kc <= 256.
 *  - Per K block, the unit's columns of op(B) are packed into nr-wide panels
 *    (kc x unit width, sized to half the L2, so they stay there), then for
 *    each mr-row strip of the unit the strip of op(A) is packed (mr x kc,
 *    stays in L1) and the micro-kernel runs it against every B panel.
 *    Packing reads each operand in its stored order, so transposes cost
 *    nothing in the micro-kernel; edge panels are zero-padded.
 *  - Edge tiles (and the syrk's diagonal tiles) are computed into a small
 *    buffer and merged, masked to j >= i for the syrk.
 * Dispatch: the micro-kernel is that of lb_cpu_level() at each call (AVX-512
 * for AMX, NEON for dotprod / i8mm, the scalar reference otherwise).
 * Memory: one heap buffer for the packed B blocks per call; if it cannot be
 * allocated, every thread packs into a small fixed stack buffer instead
 * (smaller blocks, slower, same result), so the driver cannot fail. */
#include "kernels/sgemm.h"

#include <omp.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#define KC_MAX 256        /* K block: the mr x kc strip of A stays in L1 */
#define KC_SMALL 128      /* stack fallback: K block and ... */
#define NB_SMALL 128      /* ... B block width (64 KiB of stack) */
#define UNIT_ROWS_MAX 1024 /* rows of a unit: each B block serves all of them */

/* ---- the scalar reference micro-kernel: 4 x 8 ---- */

enum { REF_MR = 4, REF_NR = 8 };

static void ukr_ref_4x8(int64_t kc, const float *a, const float *b, float *c, size_t ldc, float alpha,
                        float beta) {
    float acc[REF_MR][REF_NR] = {{0}};
    for (int64_t k = 0; k < kc; k++, a += REF_MR, b += REF_NR)
        for (int i = 0; i < REF_MR; i++)
            for (int j = 0; j < REF_NR; j++) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < REF_MR; i++) {
        float *ci = c + (size_t)i * ldc;
        for (int j = 0; j < REF_NR; j++)
            ci[j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * ci[j];
    }
}

/* ---- dispatch ---- */

static const lb_sgemm_kernel k_ref = {REF_MR, REF_NR, ukr_ref_4x8, "scalar_4x8"};
#if LB_SGEMM_X86
static const lb_sgemm_kernel k_avx2 = {6, 16, lb_sgemm_ukr_avx2_6x16, "avx2_6x16"};
static const lb_sgemm_kernel k_avx512 = {14, 32, lb_sgemm_ukr_avx512_14x32, "avx512_14x32"};
#endif
#if LB_SGEMM_ARM
static const lb_sgemm_kernel k_neon = {8, 12, lb_sgemm_ukr_neon_8x12, "neon_8x12"};
#endif

const lb_sgemm_kernel *lb_sgemm_kernel_at(lb_isa level) {
#if LB_SGEMM_X86
    if (level == LB_ISA_AVX2) return &k_avx2;
    if (level == LB_ISA_AVX512 || level == LB_ISA_AMX) return &k_avx512;
#endif
#if LB_SGEMM_ARM
    if (lb_isa_is_arm(level)) return &k_neon;
#endif
    (void)level;
    return &k_ref;
}

static int force_stack;
void lb_sgemm_force_stack_buffers(int on) { force_stack = on != 0; }

/* ---- packing ---- */

/* A matrix as stored: op(X)[r][c] = t ? p[c * ld + r] : p[r * ld + c]. */
typedef struct {
    const float *p;
    size_t ld;
    int t;
} operand;

/* op(A)[i0 + i][p0 + k] -> ap[k * mr + i] for i < rows; rows..mr are zero. */
static void pack_a(const operand *A, int mr, int64_t i0, int rows, int64_t p0, int64_t kb, float *ap) {
    if (A->t) { /* stored K x M: each k gives mr consecutive values */
        for (int64_t k = 0; k < kb; k++) {
            memcpy(ap + k * mr, A->p + (size_t)(p0 + k) * A->ld + i0, (size_t)rows * sizeof(float));
            for (int i = rows; i < mr; i++) ap[k * mr + i] = 0.0f;
        }
        return;
    }
    /* stored M x K: mr row streams read in step, the packed strip written in order */
    const float *src[LB_SGEMM_MR_MAX];
    for (int i = 0; i < mr; i++) src[i] = A->p + (size_t)(i0 + (i < rows ? i : 0)) * A->ld + p0;
    for (int64_t k = 0; k < kb; k++, ap += mr) {
        for (int i = 0; i < rows; i++) ap[i] = src[i][k];
        for (int i = rows; i < mr; i++) ap[i] = 0.0f;
    }
}

/* Asks for the lines pack_a will read for columns [p0 + k0, p0 + k1) of
 * the strip at row i0: run_strip spreads the next strip's lines over the
 * current strip's tiles, so the packer's loads (A comes from L3 or memory,
 * read once per unit and K block) arrive while the micro-kernel runs instead
 * of stalling the packer, without flooding the miss buffers at once. */
static void prefetch_a(const operand *A, int64_t i0, int rows, int64_t p0, int64_t k0, int64_t k1) {
    if (A->t) {
        for (int64_t k = k0; k < k1; k++) {
            const float *src = A->p + (size_t)(p0 + k) * A->ld + i0;
            __builtin_prefetch(src);
            __builtin_prefetch(src + rows - 1);
        }
        return;
    }
    if (k0 >= k1) return;
    for (int i = 0; i < rows; i++) {
        const float *src = A->p + (size_t)(i0 + i) * A->ld + p0;
        for (int64_t k = k0; k < k1; k += 16) __builtin_prefetch(src + k);
        __builtin_prefetch(src + k1 - 1);
    }
}

/* op(B)[p0 + k][j0 + j] for j < j1 - j0 -> nr-column panels, panel q at
 * bp + q * kb * nr holding element (k, jj) at k * nr + jj; columns past j1
 * are zero. */
static void pack_b(const operand *B, int nr, int64_t p0, int64_t kb, int64_t j0, int64_t j1, float *bp) {
    if (!B->t) { /* stored K x N: each row k feeds every panel */
        for (int64_t k = 0; k < kb; k++) {
            const float *src = B->p + (size_t)(p0 + k) * B->ld;
            for (int64_t j = j0; j < j1; j += nr) {
                const int w = j1 - j < nr ? (int)(j1 - j) : nr;
                float *dst = bp + (j - j0) * kb + k * nr;
                memcpy(dst, src + j, (size_t)w * sizeof(float));
                for (int jj = w; jj < nr; jj++) dst[jj] = 0.0f;
            }
        }
        return;
    }
    for (int64_t j = j0; j < j1; j += nr) { /* stored N x K: nr row streams read in step */
        const int w = j1 - j < nr ? (int)(j1 - j) : nr;
        const float *src[LB_SGEMM_NR_MAX];
        for (int jj = 0; jj < w; jj++) src[jj] = B->p + (size_t)(j + jj) * B->ld + p0;
        float *dst = bp + (j - j0) * kb;
        for (int64_t k = 0; k < kb; k++, dst += nr) {
            for (int jj = 0; jj < w; jj++) dst[jj] = src[jj][k];
            for (int jj = w; jj < nr; jj++) dst[jj] = 0.0f;
        }
    }
}

/* ---- one call's plan ---- */

typedef struct {
    operand a, b;
    int64_t M, N, K;
    float alpha, beta;
    float *C;
    size_t ldc;
    int upper; /* syrk: only C[i][j] with j >= i, nothing below the diagonal */
    const lb_sgemm_kernel *kr;
    int64_t mu, nu;           /* unit rows and columns */
    int64_t units_m, units_n; /* the unit grid */
} job;

/* Balanced block of at most cap: ceil(n / ceil(n / cap)), rounded up to a multiple of unit. */
static int64_t balanced(int64_t n, int64_t cap, int64_t unit) {
    const int64_t parts = (n + cap - 1) / cap;
    const int64_t b = (n + parts - 1) / parts;
    return (b + unit - 1) / unit * unit;
}

/* An edge or diagonal tile computed into t (stride nr): merged into C, and
 * for the syrk only where column jr + j >= row ir + i (skew = ir - jr). */
static void merge_tile(const job *g, const float *t, int nr, int rows, int cols, float *c, float beta,
                       int masked, int64_t skew) {
    for (int i = 0; i < rows; i++) {
        int64_t from = masked ? skew + i : 0;
        if (from < 0) from = 0;
        float *ci = c + (size_t)i * g->ldc;
        for (int64_t j = from; j < cols; j++) {
            const float v = g->alpha * t[i * nr + j];
            ci[j] = beta == 0.0f ? v : v + beta * ci[j];
        }
    }
}

/* One mr-row strip of a unit against the packed B block of columns [jc, jn);
 * next_rows > 0: the next strip (at row ir + mr) is fetched meanwhile. */
static void run_strip(const job *g, const float *ap, const float *bp, int64_t p0, int64_t kb, int64_t ir, int rows,
                      int next_rows, int64_t jc, int64_t jn, float beta) {
    const lb_sgemm_kernel *kr = g->kr;
    alignas(64) float t[LB_SGEMM_MR_MAX * LB_SGEMM_NR_MAX];
    const int64_t tiles = (jn - jc + kr->nr - 1) / kr->nr;
    for (int64_t jr = jc, n = 0; jr < jn; jr += kr->nr, n++) {
        if (next_rows > 0) prefetch_a(&g->a, ir + kr->mr, next_rows, p0, kb * n / tiles, kb * (n + 1) / tiles);
        const int cols = jn - jr < kr->nr ? (int)(jn - jr) : kr->nr;
        if (g->upper && jr + cols - 1 < ir) continue; /* wholly below the diagonal */
        const int diag = g->upper && jr < ir + rows - 1;
        const float *panel = bp + (jr - jc) * kb;
        float *c = g->C + (size_t)ir * g->ldc + jr;
        if (rows == kr->mr && cols == kr->nr && !diag) {
            kr->fn(kb, ap, panel, c, g->ldc, g->alpha, beta);
        } else {
            kr->fn(kb, ap, panel, t, (size_t)kr->nr, 1.0f, 0.0f);
            merge_tile(g, t, kr->nr, rows, cols, c, beta, diag, ir - jr);
        }
    }
}

/* C[i0:i1, j0:j1] with B blocks of at most kc_cap x nb packed into bp. */
static void run_unit(const job *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1, float *bp, int64_t kc_cap,
                     int64_t nb) {
    const lb_sgemm_kernel *kr = g->kr;
    alignas(64) float ap[LB_SGEMM_MR_MAX * KC_MAX];
    const int64_t kc = balanced(g->K, kc_cap, 1);
    for (int64_t jc = j0; jc < j1; jc += nb) {
        const int64_t jn = j1 - jc < nb ? j1 : jc + nb;
        const int64_t i_end = g->upper && jn < i1 ? jn : i1; /* syrk: rows past jn see only j < i */
        if (i0 >= i_end) continue;
        for (int64_t p0 = 0; p0 < g->K; p0 += kc) {
            const int64_t kb = g->K - p0 < kc ? g->K - p0 : kc;
            const float beta = p0 == 0 ? g->beta : 1.0f; /* later K blocks accumulate */
            pack_b(&g->b, kr->nr, p0, kb, jc, jn, bp);
            for (int64_t ir = i0; ir < i_end; ir += kr->mr) {
                const int rows = i1 - ir < kr->mr ? (int)(i1 - ir) : kr->mr;
                const int64_t left = (ir + kr->mr < i_end) ? i1 - ir - kr->mr : 0; /* rows of the next strip */
                pack_a(&g->a, kr->mr, ir, rows, p0, kb, ap);
                run_strip(g, ap, bp, p0, kb, ir, rows, left < kr->mr ? (int)left : kr->mr, jc, jn, beta);
            }
        }
    }
}

/* The fallback when the heap buffer is missing: B blocks of KC_SMALL x
 * NB_SMALL on this thread's stack. Kept out of run_unit so the fast path's
 * frame stays small. */
__attribute__((noinline)) static void run_unit_small(const job *g, int64_t i0, int64_t i1, int64_t j0,
                                                     int64_t j1) {
    alignas(64) float bp[KC_SMALL * NB_SMALL];
    run_unit(g, i0, i1, j0, j1, bp, KC_SMALL, NB_SMALL / g->kr->nr * g->kr->nr);
}

static void run_unit_index(const job *g, int64_t u, float *bp, int64_t kc_cap) {
    const int64_t ui = u / g->units_n, uj = u % g->units_n;
    const int64_t i0 = ui * g->mu, j0 = uj * g->nu;
    const int64_t i1 = i0 + g->mu < g->M ? i0 + g->mu : g->M;
    const int64_t j1 = j0 + g->nu < g->N ? j0 + g->nu : g->N;
    if (g->upper && j1 <= i0) return; /* wholly below the diagonal */
    if (bp)
        run_unit(g, i0, i1, j0, j1, bp, kc_cap, g->nu);
    else
        run_unit_small(g, i0, i1, j0, j1);
}

/* Units holding part of the computed region (for the syrk: of the upper triangle). */
static int64_t active_units(const job *g) {
    if (!g->upper) return g->units_m * g->units_n;
    int64_t n = 0;
    for (int64_t ui = 0; ui < g->units_m; ui++)
        for (int64_t uj = 0; uj < g->units_n; uj++) n += (uj + 1) * g->nu > ui * g->mu;
    return n;
}

/* Unit sizes: B blocks of half the L2, rows up to UNIT_ROWS_MAX; then halved
 * until every thread has a few units to take (dynamic scheduling evens out
 * the syrk's triangle and the edges). */
static void plan_units(job *g, int64_t kc, int n_threads) {
    const lb_sgemm_kernel *kr = g->kr;
    int64_t nb_cache = (int64_t)(lb_cpu_l2_bytes() / 2 / ((size_t)kc * sizeof(float)));
    if (nb_cache < kr->nr) nb_cache = kr->nr;
    g->mu = balanced(g->M, UNIT_ROWS_MAX, kr->mr);
    g->nu = balanced(g->N, nb_cache, kr->nr);
    for (;;) {
        g->units_m = (g->M + g->mu - 1) / g->mu;
        g->units_n = (g->N + g->nu - 1) / g->nu;
        if (n_threads == 1 || active_units(g) >= 4 * n_threads) break;
        if (g->mu >= g->nu && g->mu > 4 * kr->mr)
            g->mu = balanced(g->M, g->mu / 2, kr->mr);
        else if (g->nu > 2 * kr->nr)
            g->nu = balanced(g->N, g->nu / 2, kr->nr);
        else if (g->mu > kr->mr)
            g->mu = balanced(g->M, g->mu / 2, kr->mr);
        else
            break;
    }
}

/* C = beta * C (over the upper triangle for the syrk): K == 0 or alpha == 0. */
static void scale_c(const job *g) {
    for (int64_t i = 0; i < g->M; i++) {
        float *ci = g->C + (size_t)i * g->ldc;
        for (int64_t j = g->upper ? i : 0; j < g->N; j++) ci[j] = g->beta == 0.0f ? 0.0f : g->beta * ci[j];
    }
}

static void run_job(job *g, int n_threads) {
    if (g->M <= 0 || g->N <= 0) return;
    if (g->K <= 0 || g->alpha == 0.0f) {
        scale_c(g);
        return;
    }
    g->kr = lb_sgemm_kernel_at(lb_cpu_level());
    int nt = n_threads > 0 ? n_threads : omp_get_num_procs();
    /* below a few MFLOP, waking threads costs more than it saves */
    if ((double)g->M * (double)g->N * (double)g->K < (double)(1 << 21)) nt = 1;
    const int64_t kc = balanced(g->K, KC_MAX, 1);
    plan_units(g, kc, nt);
    const int64_t n_units = g->units_m * g->units_n, active = active_units(g);
    if (nt > active) nt = (int)active;

    /* one packed B block per thread, 64-byte aligned (aligned_alloc wants a multiple of it) */
    const size_t per = ((size_t)kc * (size_t)g->nu * sizeof(float) + 63) / 64 * 64;
    float *heap = force_stack ? NULL : aligned_alloc(64, per * (size_t)nt);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *bp = heap ? (float *)((char *)heap + per * (size_t)omp_get_thread_num()) : NULL;
#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < n_units; u++) run_unit_index(g, u, bp, kc);
    }
    free(heap);
}

void lb_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, size_t lda,
              const float *B, size_t ldb, float beta, float *C, size_t ldc, int n_threads) {
    job g = {.a = {A, lda, ta != 0}, .b = {B, ldb, tb != 0}, .M = M, .N = N, .K = K, .alpha = alpha,
             .beta = beta, .C = C, .ldc = ldc};
    run_job(&g, n_threads);
}

void lb_ssyrk_upper_tn(int64_t n, int64_t K, float alpha, const float *A, size_t lda, float beta, float *C,
                       size_t ldc, int n_threads) {
    /* op(A) = A^T (n x K), op(B) = A (K x n): both read A in its stored order */
    job g = {.a = {A, lda, 1}, .b = {A, lda, 0}, .M = n, .N = n, .K = K, .alpha = alpha, .beta = beta,
             .C = C, .ldc = ldc, .upper = 1};
    run_job(&g, n_threads);
}
