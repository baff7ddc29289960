/* lb_sgemm and lb_ssyrk_upper_tn (kernels/sgemm.h) at every ISA level this
 * CPU has, against a double-accumulated reference: the four transposes,
 * alpha / beta cases (beta 0 over a NaN-filled C), odd shapes that fill no
 * tile, padded leading dimensions (the padding holds NaN, so reading it
 * shows), 1 and 2 threads, tiny cache blocks and the stack-buffer fallback.
 * The syrk must leave everything below the diagonal untouched. */
#include "kernels/sgemm.h"
#include "test_util.h"

#define SENTINEL 12345.0f

/* One product's operands as stored, and its reference. */
typedef struct {
    int ta, tb;
    int64_t M, N, K;
    size_t lda, ldb;
    float *A, *B; /* B == A for the syrk */
    double *P, *S; /* op(A) op(B) and sum_k |a| |b|, M x N */
} problem;

static float op_at(const float *X, size_t ld, int t, int64_t r, int64_t c) {
    return t ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* rows x cols stored with row stride cols + pad; the padding is NaN */
static float *random_matrix(int64_t rows, int64_t cols, size_t pad, uint64_t *rng) {
    const size_t ld = (size_t)cols + pad, n = (size_t)rows * ld;
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = i % ld < (size_t)cols ? lb_test_randf(rng) : NAN;
    return x;
}

static void reference(problem *p) {
    p->P = malloc((size_t)(p->M * p->N) * sizeof(double));
    p->S = malloc((size_t)(p->M * p->N) * sizeof(double));
    for (int64_t i = 0; i < p->M; i++)
        for (int64_t j = 0; j < p->N; j++) {
            double s = 0.0, a = 0.0;
            for (int64_t k = 0; k < p->K; k++) {
                const double x = op_at(p->A, p->lda, p->ta, i, k), y = op_at(p->B, p->ldb, p->tb, k, j);
                s += x * y;
                a += fabs(x * y);
            }
            p->P[i * p->N + j] = s;
            p->S[i * p->N + j] = a;
        }
}

static problem make_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, size_t pad, uint64_t *rng) {
    problem p = {ta, tb, M, N, K, (size_t)(ta ? M : K) + pad, (size_t)(tb ? K : N) + pad, NULL, NULL, NULL, NULL};
    p.A = random_matrix(ta ? K : M, ta ? M : K, pad, rng);
    p.B = random_matrix(tb ? N : K, tb ? K : N, pad, rng);
    reference(&p);
    return p;
}

static problem make_syrk(int64_t n, int64_t K, size_t pad, uint64_t *rng) {
    problem p = {1, 0, n, n, K, (size_t)n + pad, (size_t)n + pad, NULL, NULL, NULL, NULL};
    p.A = p.B = random_matrix(K, n, pad, rng);
    reference(&p);
    return p;
}

static void free_problem(problem *p) {
    if (p->B != p->A) free(p->B);
    free(p->A);
    free(p->P);
    free(p->S);
}

/* C before the call: random (or NaN) where computed, SENTINEL elsewhere
 * (padding; for the syrk also below the diagonal). */
static float *make_c(const problem *p, size_t ldc, int nan_fill, int syrk, uint64_t *rng) {
    float *c = malloc((size_t)p->M * ldc * sizeof(float));
    for (int64_t i = 0; i < p->M; i++)
        for (size_t j = 0; j < ldc; j++) {
            const int computed = (int64_t)j < p->N && (!syrk || (int64_t)j >= i);
            c[(size_t)i * ldc + j] = !computed ? SENTINEL : nan_fill ? NAN : lb_test_randf(rng);
        }
    return c;
}

/* Worst |C - ref| / bound over the computed entries (NaN counts as a
 * failure), and whether every other entry still holds the sentinel. */
static double verify(const problem *p, const float *c0, const float *c, size_t ldc, float alpha, float beta,
                     int syrk, int *untouched) {
    const double tol = 1e-5 * sqrt((double)p->K);
    double worst = 0.0;
    *untouched = 1;
    for (int64_t i = 0; i < p->M; i++)
        for (size_t j = 0; j < ldc; j++) {
            const size_t at = (size_t)i * ldc + j;
            if ((int64_t)j >= p->N || (syrk && (int64_t)j < i)) {
                *untouched &= memcmp(&c[at], &c0[at], sizeof(float)) == 0;
                continue;
            }
            const double old = beta == 0.0f ? 0.0 : (double)beta * c0[at];
            const double want = (double)alpha * p->P[i * p->N + j] + old;
            const double bound = tol * (fabs(alpha) * p->S[i * p->N + j] + fabs(old)) + 1e-30;
            const double r = fabs((double)c[at] - want) / bound;
            if (!(r <= worst)) worst = isnan(r) ? INFINITY : r;
        }
    return worst;
}

typedef struct {
    float alpha, beta;
    int nan_fill;
} scaling;

static const scaling cases[] = {
    {1.0f, 0.0f, 1},    /* overwrite: C is NaN and must not be read */
    {1.0f, 1.0f, 0},    /* accumulate (the Hessian) */
    {-1.0f, 1.0f, 0},   /* subtract (GPTQ's updates) */
    {0.5f, -0.25f, 0},  /* general */
};

static void run_case(const problem *p, int syrk, const scaling *s, size_t ldc_pad, int nth, const char *what,
                     uint64_t *rng) {
    const size_t ldc = (size_t)p->N + ldc_pad;
    float *c = make_c(p, ldc, s->nan_fill, syrk, rng);
    float *c0 = malloc((size_t)p->M * ldc * sizeof(float));
    memcpy(c0, c, (size_t)p->M * ldc * sizeof(float));
    if (syrk)
        lb_ssyrk_upper_tn(p->N, p->K, s->alpha, p->A, p->lda, s->beta, c, ldc, nth);
    else
        lb_sgemm(p->ta, p->tb, p->M, p->N, p->K, s->alpha, p->A, p->lda, p->B, p->ldb, s->beta, c, ldc, nth);
    int untouched;
    const double worst = verify(p, c0, c, ldc, s->alpha, s->beta, syrk, &untouched);
    CHECK_MSG(worst <= 1.0 && untouched, "%s %s ta=%d tb=%d M=%lld N=%lld K=%lld alpha=%g beta=%g ldc+%zu t=%d: "
              "error %.3g of the bound%s", lb_isa_name(lb_cpu_level()), what, p->ta, p->tb, (long long)p->M,
              (long long)p->N, (long long)p->K, s->alpha, s->beta, ldc_pad, nth, worst,
              untouched ? "" : ", wrote outside the computed entries");
    free(c);
    free(c0);
}

/* Every scaling case at 1 and 2 threads; for some problems also with tiny
 * cache blocks (many units, many B blocks per unit) and the stack buffers. */
static void run_problem(const problem *p, int syrk, int variants, uint64_t *rng) {
    const char *what = syrk ? "syrk" : "gemm";
    for (int ci = 0; ci < 4; ci++)
        for (int nth = 1; nth <= 2; nth++) run_case(p, syrk, &cases[ci], (size_t)(ci % 2) * 3, nth, what, rng);
    if (!variants) return;
    lb_cpu_set_l2_bytes(16 << 10);
    run_case(p, syrk, &cases[3], 1, 2, syrk ? "syrk small-L2" : "gemm small-L2", rng);
    lb_cpu_set_l2_bytes(0);
    lb_sgemm_force_stack_buffers(1);
    run_case(p, syrk, &cases[1], 0, 2, syrk ? "syrk stack" : "gemm stack", rng);
    lb_sgemm_force_stack_buffers(0);
}

typedef struct {
    int64_t M, N, K;
} shape;

/* Mixed sizes: 1, tile multiples and their neighbours, odd primes, and K past
 * one K block (256). */
static const shape gemm_shapes[] = {
    {1, 1, 1},     {2, 3, 5},     {7, 13, 17},  {31, 33, 64},  {65, 127, 3},  {300, 17, 65},
    {13, 300, 33}, {64, 64, 64},  {127, 65, 300}, {5, 7, 300}, {33, 31, 127}, {17, 2, 13},
    {300, 300, 31}, {3, 65, 7},   {64, 5, 127}, {1, 300, 300}, {300, 1, 13},  {300, 300, 300},
};
static const int64_t syrk_n[] = {1, 2, 3, 5, 7, 13, 17, 31, 33, 64, 65, 127, 300};
static const int64_t syrk_k[] = {1, 300, 17, 64, 2, 127, 33, 5, 300, 65, 13, 31, 300};

/* K == 0 and alpha == 0: C = beta * C, and beta == 0 clears even NaN. */
static void check_degenerate(void) {
    float c[6] = {NAN, NAN, NAN, NAN, NAN, NAN}, a[6] = {1, 2, 3, 4, 5, 6};
    lb_sgemm(0, 0, 2, 3, 0, 1.0f, a, 1, a, 3, 0.0f, c, 3, 1);
    for (int i = 0; i < 6; i++) CHECK(c[i] == 0.0f);
    for (int i = 0; i < 6; i++) c[i] = (float)i;
    lb_sgemm(0, 1, 2, 3, 2, 0.0f, a, 2, a, 2, 2.0f, c, 3, 2);
    for (int i = 0; i < 6; i++) CHECK(c[i] == 2.0f * (float)i);
    float s[4] = {1.0f, 2.0f, SENTINEL, 3.0f};
    lb_ssyrk_upper_tn(2, 0, 1.0f, a, 2, 0.5f, s, 2, 1);
    CHECK(s[0] == 0.5f && s[1] == 1.0f && s[2] == SENTINEL && s[3] == 1.5f);
}

/* The problem at every level the CPU has (the reference is computed once).
 * A level whose kernel a lower level already ran (Arm dotprod and i8mm run
 * the NEON kernel) takes only the problems with variants: its dispatch is
 * checked without repeating the same arithmetic (qemu runs are slow). */
static int level_failures[LB_ISA_COUNT];

static int kernel_seen_below(int level) {
    const lb_sgemm_kernel *k = lb_sgemm_kernel_at((lb_isa)level);
    for (int l = 0; l < level; l++)
        if (lb_cpu_force_level((lb_isa)l) == (lb_isa)l && lb_sgemm_kernel_at((lb_isa)l) == k) return 1;
    return 0;
}

static void run_levels(const problem *p, int syrk, int variants, uint64_t *rng) {
    for (int l = 0; l < LB_ISA_COUNT; l++) {
        if (!variants && kernel_seen_below(l)) continue;
        if (lb_cpu_force_level((lb_isa)l) != (lb_isa)l) continue;
        const int before = lb_test_failures;
        run_problem(p, syrk, variants, rng);
        level_failures[l] += lb_test_failures - before;
    }
}

int main(void) {
    const lb_isa saved = lb_cpu_level();
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (size_t si = 0; si < sizeof gemm_shapes / sizeof gemm_shapes[0]; si++) {
        const shape *s = &gemm_shapes[si];
        for (int t = 0; t < 4; t++) {
            problem p = make_gemm(t >> 1, t & 1, s->M, s->N, s->K, (si + (size_t)t) % 2 ? 5 : 0, &rng);
            run_levels(&p, 0, (si + (size_t)t) % 3 == 0, &rng);
            free_problem(&p);
        }
    }
    for (size_t si = 0; si < sizeof syrk_n / sizeof syrk_n[0]; si++) {
        problem p = make_syrk(syrk_n[si], syrk_k[si], si % 2 ? 3 : 0, &rng);
        run_levels(&p, 1, si % 2 == 0, &rng);
        free_problem(&p);
    }
    const lb_sgemm_kernel *ref = lb_sgemm_kernel_at(LB_ISA_SCALAR);
    for (int l = 0; l < LB_ISA_COUNT; l++) {
        if (lb_cpu_force_level((lb_isa)l) != (lb_isa)l) continue;
        check_degenerate();
        const lb_sgemm_kernel *k = lb_sgemm_kernel_at((lb_isa)l);
        /* every SIMD level has a kernel of its own, not the reference */
        CHECK_MSG(l == LB_ISA_SCALAR || k != ref, "level %s", lb_isa_name((lb_isa)l));
        printf("level %s (kernel %s): %s\n", lb_isa_name((lb_isa)l), k->name, level_failures[l] ? "FAILED" : "ok");
    }
    lb_cpu_force_level(saved);
    return lb_test_result("test_sgemm");
}
