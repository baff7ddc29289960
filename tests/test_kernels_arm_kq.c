/* The Arm Q2_K / CB2 / CB3 kernels (kernels/arm_kq.h) at every Arm level
 * this CPU has (neon, dotprod, i8mm; under qemu the CPU model decides, see
 * scripts/test-arm.sh) against the scalar references (formats/q2_k.c,
 * formats/cb.c). Skipped (77) on other CPUs: nothing of this runs there.
 *
 *  dispatch: each level hands out its own kernel for the three types, the
 *            i8mm one with a GEMM; lb_cpu_force_level selects them.
 *  data:     random blocks, every byte random (CB fields: every book and
 *            scale; Q2_K: every scale and min; all indices), fp16 scales
 *            over 2^-8 .. 2^2 with both signs; Q8_K activations over the
 *            whole int8 range, -128 included, some blocks all -128 or
 *            alternating 127 / -128, bsums consistent; CB books random
 *            (ascending, in [-64, 63], both ends present) for C = 4, 8, 16;
 *            K = 256 and 2816.
 *  exact:    with unit scales (weights' d, dmin and activations' d = 1)
 *            every kernel must equal the reference bit for bit: the block
 *            integer sums are exact and x * 1 is exact, so any difference
 *            is an integer error.
 *  float:    random scales: |got - ref| <= 1e-5 * sum over blocks of
 *            |reference block term| (tests/test_cb.c's dot_mag); the
 *            kernels repeat the reference's float steps per block in block
 *            order, so they are expected bit-identical with gcc: the count
 *            is printed.
 *  vec_dot:  each level's, called directly, and at neon / dotprod the CB
 *            lane-table variants (not dispatched).
 *  GEMM:     the i8mm one called directly: 7 weight rows (odd: the dotprod
 *            tail), M = 1..17 activation rows (P = 4, 2, 1 tiles and the odd
 *            row), sub-ranges [n0, n1), Y with a row stride wider than N and
 *            sentinels outside [n0, n1) x M.
 *  matmul:   lb_matmul at every level (lb_cpu_force_level), M = 1..17, with
 *            1 and 2 threads, float activations (random, or integers that
 *            Q8_K keeps exactly with d = 1 for the unit-scale check),
 *            against the reference dot of each pair.
 * Weights and activations end right at a PROT_NONE page: a kernel reading
 * past its data crashes the test. */
#include "test_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include "formats/cb.h"
#include "formats/kquants.h"
#include "kernels/arm/arm_kernels.h"
#include "kernels/dispatch.h"

#if !LB_HAVE_ARM_KERNELS
int main(void) { SKIP("not an aarch64 build: the Arm Q2_K / CB2 / CB3 kernels are not compiled here"); }
#else

#define TOL 1e-5
static const lb_isa kArmLevels[] = {LB_ISA_NEON, LB_ISA_DOTPROD, LB_ISA_I8MM};
static int n_levels; /* Arm levels this CPU has: kArmLevels[0 .. n_levels) */
static double worst;
static long n_compared, n_identical, n_exact;

/* ---------------- memory ---------------- */

/* n bytes ending exactly at an inaccessible page. */
static void *guarded_alloc(size_t n) {
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), span = (n + ps - 1) / ps * ps;
    uint8_t *base = mmap(NULL, span + ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        fprintf(stderr, "mmap failed\n");
        exit(1);
    }
    mprotect(base + span, ps, PROT_NONE);
    return base + span - n;
}

static void guarded_free(void *p, size_t n) {
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), span = (n + ps - 1) / ps * ps;
    munmap((uint8_t *)p + n - span, span + ps);
}

/* ---------------- data ---------------- */

static const int kTypes[] = {LB_TYPE_Q2_K, LB_TYPE_CB2, LB_TYPE_CB3};

/* fp16 with a random sign and magnitude in [2^-8, 2^3) */
static lb_fp16 rand_scale(uint64_t *s) {
    const uint64_t r = lb_test_rand(s);
    return (lb_fp16)(((r & 1) << 15) | ((7 + (r >> 1) % 11) << 10) | ((r >> 8) & 0x3FF));
}

/* N rows of K weights, every byte random, then the fp16 scale(s) of every
 * block set: 1.0 when unit, else random. */
static void fill_weights(int type, uint8_t *w, int64_t K, int N, int unit, uint64_t *s) {
    const size_t bs = lb_traits(type)->type_size, nb = (size_t)(K / QK_K) * (size_t)N;
    for (size_t i = 0; i < nb * bs; i++) w[i] = (uint8_t)lb_test_rand(s);
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = w + b * bs;
        const lb_fp16 d = unit ? (lb_fp16)0x3C00 : rand_scale(s);
        memcpy(blk + bs - 2, &d, 2); /* CB: d is last; Q2_K: dmin is last */
        if (type == LB_TYPE_Q2_K) {
            const lb_fp16 dd = unit ? (lb_fp16)0x3C00 : rand_scale(s);
            memcpy(blk + bs - 4, &dd, 2);
        }
    }
}

/* M rows of K Q8_K activations: random bytes (some blocks all -128 or
 * alternating 127 / -128), consistent bsums, d = 1 when unit. */
static void fill_acts(block_q8_K *a, int64_t K, int M, int unit, uint64_t *s) {
    const int64_t nb = K / QK_K * M;
    for (int64_t b = 0; b < nb; b++) {
        const uint64_t pick = lb_test_rand(s) % 16;
        for (int i = 0; i < QK_K; i++)
            a[b].qs[i] = pick == 0 ? -128 : pick == 1 ? (int8_t)((i & 1) ? 127 : -128) : (int8_t)lb_test_rand(s);
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += a[b].qs[16 * j + i];
            a[b].bsums[j] = (int16_t)sum;
        }
        a[b].d = unit ? 1.0f : (float)((lb_test_rand(s) & 1) ? 1 : -1) * (0.001f + 0.05f * (lb_test_randf(s) + 1.0f));
    }
}

/* Random books: ascending, in [-64, 63], the first book starting at -64
 * and the last ending at 63. */
static void random_books(lb_cb_books *b, int C, int k, uint64_t *s) {
    memset(b, 0, sizeof *b);
    b->count = C, b->k = k;
    for (int c = 0; c < C; c++) {
        for (int i = 0; i < k; i++) b->v[c][i] = (int8_t)(CB_VMIN + (int)(lb_test_rand(s) % 128));
        if (c == 0) b->v[c][0] = CB_VMIN;
        if (c == C - 1) b->v[c][k - 1] = CB_VMAX;
        for (int i = 1; i < k; i++) /* insertion sort */
            for (int j = i; j > 0 && b->v[c][j] < b->v[c][j - 1]; j--) {
                const int8_t t = b->v[c][j];
                b->v[c][j] = b->v[c][j - 1], b->v[c][j - 1] = t;
            }
    }
}

/* Sum over blocks of |reference block term| (the error scale). */
static double dot_mag(int type, int64_t K, const uint8_t *w, const block_q8_K *a) {
    double mag = 0;
    const size_t bs = lb_traits(type)->type_size;
    for (int64_t ib = 0; ib < K / QK_K; ib++) {
        float blk;
        lb_traits(type)->vec_dot(QK_K, &blk, w + ib * bs, a + ib);
        mag += fabs(blk);
    }
    return mag;
}

/* One result against the reference; returns 1 if it passes. */
static int compare(float got, float ref, double mag, int unit) {
    n_compared++;
    n_identical += memcmp(&got, &ref, sizeof got) == 0;
    if (unit) {
        n_exact++;
        return memcmp(&got, &ref, sizeof got) == 0;
    }
    const double err = fabs((double)got - ref);
    if (mag > 0 && err / mag > worst) worst = err / mag;
    return err <= TOL * mag;
}

/* ---------------- dispatch ---------------- */

static void test_dispatch(void) {
    const lb_isa hw = lb_cpu_detected();
    printf("detected: %s (%s)\n", lb_isa_name(hw), lb_cpu_features_string());
    CHECK_MSG(hw >= LB_ISA_NEON, "an aarch64 CPU must report at least neon, got %s", lb_isa_name(hw));
    const char *expect = getenv("LOWBIT_EXPECT_ISA");
    if (expect && *expect)
        CHECK_MSG(strcmp(expect, lb_isa_name(hw)) == 0, "detected %s, expected %s", lb_isa_name(hw), expect);
    n_levels = 0;
    while (n_levels < 3 && kArmLevels[n_levels] <= hw) n_levels++;
    for (int t = 0; t < 3; t++) {
        for (int l = 0; l < n_levels; l++) {
            const lb_kernel *k = lb_kernel_get_at(kTypes[t], kArmLevels[l]);
            CHECK_MSG(k && k->isa == kArmLevels[l] && k->act_type == LB_TYPE_Q8_K && k->vec_dot && k->act_rows == 0 &&
                          (k->gemm != NULL) == (kArmLevels[l] == LB_ISA_I8MM),
                      "%s at %s: got %s", lb_type_name(kTypes[t]), lb_isa_name(kArmLevels[l]), k ? k->name : "none");
            lb_cpu_force_level(kArmLevels[l]);
            CHECK(lb_kernel_get(kTypes[t]) == k);
        }
        lb_cpu_force_level(hw);
        printf("  %-4s -> %s\n", lb_type_name(kTypes[t]), lb_kernel_get(kTypes[t])->name);
    }
    CHECK(lb_cpu_force_level(LB_ISA_SCALAR) == LB_ISA_SCALAR);
    CHECK(lb_kernel_get(LB_TYPE_CB2)->isa == LB_ISA_SCALAR);
    lb_cpu_force_level(hw);
}

/* ---------------- one configuration (type, books, K) ---------------- */

enum { MAXM = 17, GEMM_N = 7 };

static void test_vec_dot(int type, int64_t K, const char *what, uint64_t *s) {
    const size_t wrs = lb_row_size(type, K), ars = lb_row_size(LB_TYPE_Q8_K, K);
    uint8_t *w = guarded_alloc(wrs);
    block_q8_K *a = guarded_alloc(ars);
    int bad = 0;
    for (int rep = 0; rep < 12; rep++) {
        const int unit = rep % 3 == 0;
        fill_weights(type, w, K, 1, unit, s);
        fill_acts(a, K, 1, unit, s);
        float ref;
        lb_traits(type)->vec_dot(K, &ref, w, a);
        const double mag = dot_mag(type, K, w, a);
        for (int l = 0; l < n_levels; l++) {
            const lb_kernel *k = lb_kernel_get_at(type, kArmLevels[l]);
            /* the dispatched kernel, and at neon / dotprod the CB lane-table variant */
            lb_vec_dot_fn fns[2] = {k->vec_dot, NULL};
            if (type != LB_TYPE_Q2_K && kArmLevels[l] < LB_ISA_I8MM) {
                const int cb2 = type == LB_TYPE_CB2, neon = kArmLevels[l] == LB_ISA_NEON;
                fns[1] = cb2 ? (neon ? lb_vec_dot_cb2_q8_K_lanes_neon : lb_vec_dot_cb2_q8_K_lanes_dotprod)
                             : (neon ? lb_vec_dot_cb3_q8_K_lanes_neon : lb_vec_dot_cb3_q8_K_lanes_dotprod);
            }
            for (int v = 0; v < 2 && fns[v]; v++) {
                float got = -12345.0f;
                fns[v](K, &got, w, a);
                if (!compare(got, ref, mag, unit) && bad++ < 3)
                    fprintf(stderr, "%s%s %s K=%lld %s: got %.9g want %.9g (mag %.3g)\n", k->name, v ? " (lanes)" : "",
                            what, (long long)K, unit ? "unit" : "random", got, ref, mag);
            }
        }
    }
    CHECK_MSG(bad == 0, "%s %s K=%lld: %d vec_dot results differ", lb_type_name(type), what, (long long)K, bad);
    guarded_free(w, wrs), guarded_free(a, ars);
}

/* Reference Y[m][n] and magnitudes for M rows x N weight rows. */
static void reference(int type, int64_t K, const uint8_t *W, int N, const uint8_t *A, int M, float *Y, double *mag) {
    const size_t wrs = lb_row_size(type, K), ars = lb_row_size(LB_TYPE_Q8_K, K);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            lb_traits(type)->vec_dot(K, &Y[m * N + n], W + n * wrs, A + m * ars);
            mag[m * N + n] = dot_mag(type, K, W + n * wrs, (const block_q8_K *)(A + m * ars));
        }
}

static void test_gemm(int type, int64_t K, const char *what, uint64_t *s) {
    if (n_levels < 3) return;
    const lb_kernel *k = lb_kernel_get_at(type, LB_ISA_I8MM);
    if (!k->gemm) return;
    const size_t wrs = lb_row_size(type, K), ars = lb_row_size(LB_TYPE_Q8_K, K);
    uint8_t *W = guarded_alloc(wrs * GEMM_N), *A = guarded_alloc(ars * MAXM);
    const size_t ldy = GEMM_N + 3;
    float *Y = guarded_alloc(sizeof(float) * ldy * MAXM), ref[MAXM * GEMM_N];
    double mag[MAXM * GEMM_N];
    const int ranges[3][2] = {{0, GEMM_N}, {1, GEMM_N}, {2, 5}};
    int bad = 0;
    for (int unit = 0; unit < 2; unit++) {
        fill_weights(type, W, K, GEMM_N, unit, s);
        fill_acts((block_q8_K *)A, K, MAXM, unit, s);
        reference(type, K, W, GEMM_N, A, MAXM, ref, mag);
        for (int M = 1; M <= MAXM; M++)
            for (int r = 0; r < 3; r++) {
                const int n0 = ranges[r][0], n1 = ranges[r][1];
                for (size_t i = 0; i < ldy * MAXM; i++) Y[i] = -777.0f;
                k->gemm(K, W, wrs, n0, n1, A, ars, M, Y, ldy);
                for (int m = 0; m < MAXM; m++)
                    for (int n = 0; n < (int)ldy; n++) {
                        const float g = Y[m * ldy + n];
                        if (m >= M || n < n0 || n >= n1) {
                            if (g != -777.0f && bad++ < 3)
                                fprintf(stderr, "%s wrote outside [%d, %d) x %d: m=%d n=%d\n", k->name, n0, n1, M, m, n);
                            continue;
                        }
                        if (!compare(g, ref[m * GEMM_N + n], mag[m * GEMM_N + n], unit) && bad++ < 3)
                            fprintf(stderr, "%s %s K=%lld %s M=%d [%d,%d) m=%d n=%d: got %.9g want %.9g\n", k->name,
                                    what, (long long)K, unit ? "unit" : "random", M, n0, n1, m, n, g,
                                    ref[m * GEMM_N + n]);
                    }
            }
    }
    CHECK_MSG(bad == 0, "%s %s K=%lld: %d GEMM results wrong", lb_type_name(type), what, (long long)K, bad);
    guarded_free(W, wrs * GEMM_N), guarded_free(A, ars * MAXM), guarded_free(Y, sizeof(float) * ldy * MAXM);
}

/* lb_matmul with float activations: the driver quantizes them (Q8_K
 * reference quantizer at every Arm level) and calls the level's kernels.
 * unit: weights with unit scales and integer activations in [-127, 127],
 * each block led by -127, which Q8_K keeps as they are with d = 1. */
static int matmul_run(int type, int64_t K, int N, int unit, const char *what, uint64_t *s) {
    const size_t wrs = lb_row_size(type, K), ars = lb_row_size(LB_TYPE_Q8_K, K);
    uint8_t *W = guarded_alloc(wrs * N), *A = malloc(ars * MAXM);
    float *X = malloc(sizeof(float) * K * MAXM), *Y = malloc(sizeof(float) * N * MAXM);
    float *ref = malloc(sizeof(float) * N * MAXM);
    double *mag = malloc(sizeof(double) * N * MAXM);
    fill_weights(type, W, K, N, unit, s);
    for (int64_t i = 0; i < K * MAXM; i++)
        X[i] = unit ? (i % QK_K == 0 ? -127.0f : (float)((int)(lb_test_rand(s) % 255) - 127))
                    : lb_test_randf(s) * ((i % 97 == 5) ? 30.0f : 1.0f);
    for (int m = 0; m < MAXM; m++) lb_quantize_row_q8_K_ref(X + m * K, A + m * ars, K);
    if (unit) CHECK(((const block_q8_K *)A)->d == 1.0f);
    reference(type, K, W, N, A, MAXM, ref, mag);
    const lb_matrix mat = {type, K, N, wrs, W, 0};
    void *scratch = malloc(lb_matmul_scratch_size(&mat, MAXM) + 64);
    int bad = 0;
    for (int l = 0; l < n_levels; l++) {
        lb_cpu_force_level(kArmLevels[l]);
        CHECK(lb_kernel_get(type)->isa == kArmLevels[l]);
        for (int threads = 1; threads <= 2; threads++)
            for (int M = 1; M <= MAXM; M++) {
                for (int i = 0; i < N * MAXM; i++) Y[i] = -777.0f;
                lb_matmul(&mat, X, M, Y, (size_t)N, scratch, threads);
                for (int i = 0; i < N * MAXM; i++) {
                    if (i >= N * M) {
                        if (Y[i] != -777.0f && bad++ < 3) fprintf(stderr, "lb_matmul wrote past row %d\n", M);
                        continue;
                    }
                    if (!compare(Y[i], ref[i], mag[i], unit) && bad++ < 3)
                        fprintf(stderr, "lb_matmul %s %s %s K=%lld %s M=%d t=%d m=%d n=%d: got %.9g want %.9g\n",
                                lb_type_name(type), what, lb_isa_name(kArmLevels[l]), (long long)K,
                                unit ? "unit" : "random", M, threads, i / N, i % N, Y[i], ref[i]);
                }
            }
    }
    lb_cpu_force_level(lb_cpu_detected());
    guarded_free(W, wrs * N);
    free(A), free(X), free(Y), free(ref), free(mag), free(scratch);
    return bad;
}

static void test_matmul(int type, int64_t K, const char *what, uint64_t *s) {
    const int N = K > 256 ? 19 : 37; /* several 16-row tiles, odd */
    for (int unit = 0; unit < 2; unit++) {
        const int bad = matmul_run(type, K, N, unit, what, s);
        CHECK_MSG(bad == 0, "%s %s K=%lld %s: %d lb_matmul results wrong", lb_type_name(type), what, (long long)K,
                  unit ? "unit" : "random", bad);
    }
}

static void test_config(int type, const char *what, uint64_t *s) {
    const int64_t Ks[2] = {256, 2816};
    for (int ki = 0; ki < 2; ki++) {
        test_vec_dot(type, Ks[ki], what, s);
        test_gemm(type, Ks[ki], what, s);
        test_matmul(type, Ks[ki], what, s);
    }
}

int main(void) {
    test_dispatch();
    if (n_levels == 0) SKIP("no Arm level detected");
    uint64_t s = 0x2b7e151628aed2a6ULL;
    test_config(LB_TYPE_Q2_K, "", &s);
    for (int t = 1; t < 3; t++) {
        for (int C = 4; C <= 16; C *= 2) {
            lb_cb_books b;
            random_books(&b, C, lb_cb_k(kTypes[t]), &s);
            CHECK_OK(lb_cb_acquire(kTypes[t], &b));
            char what[16];
            snprintf(what, sizeof what, "C=%d", C);
            test_config(kTypes[t], what, &s);
            lb_cb_release(kTypes[t]);
        }
    }
    printf("%ld results compared (%ld with unit scales, exact), %ld bit-identical to the reference; "
           "worst |err| / sum|block terms| = %.3g (bound %g)\n",
           n_compared, n_exact, n_identical, worst, TOL);
    return lb_test_result("test_kernels_arm_kq");
}
#endif
