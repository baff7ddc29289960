/* GPTQ (model/gptq.h), its linear algebra (kernels/linalg.h) and the types'
 * grids (formats/grid.h):
 *   - every grid's round() returns exactly what the type's to_float gives
 *     for the code it stored, and a dequantized value rounds to itself;
 *   - the Cholesky-of-inverse factor equals a slow double reference on a tiny
 *     case and satisfies Uᵀ U H = I across blocks;
 *   - on a synthetic layer with correlated inputs, GPTQ's output error
 *     |(W - Q) Xᵀ| is below round-to-nearest's for every type, with and
 *     without act-order, and the bytes it writes dequantize to the weights
 *     it returns;
 *   - the same for GQ{b}_GC (one static group per row, model/gqc_gptq.h),
 *     asymmetric and symmetric, with and without act-order: the grid stays
 *     the one fixed from the original row, the codes and grids written
 *     dequantize to the weights GPTQ returns;
 *   - dead input columns (H_ii = 0) give finite output;
 *   - the scale refit (GQ types, asymmetric and symmetric, and Q4_0, Q5_0,
 *     Q8_0, IQ4_NL, with and without act-order) keeps every code, writes bytes that dequantize to the
 *     weights returned, and never raises the output error, in one chunk of
 *     rows or several; summed over the types it lowers it. */
#include <math.h>

#include "formats/cb.h"
#include "formats/gq.h"
#include "formats/gc.h"
#include "formats/grid.h"
#include "formats/kquants.h"
#include "formats/legacy.h"
#include "kernels/linalg.h"
#include "model/gptq.h"
#include "model/gptq_refit.h"
#include "model/gqc_gptq.h"
#include "model/mx_gptq.h"
#include "test_util.h"

static const int grid_types[] = {LB_TYPE_Q8_0, LB_TYPE_Q4_0, LB_TYPE_Q4_1, LB_TYPE_Q5_0, LB_TYPE_Q5_1,
                                 LB_TYPE_IQ4_NL, LB_TYPE_Q2_K, LB_TYPE_Q3_K, LB_TYPE_Q4_K, LB_TYPE_Q5_K,
                                 LB_TYPE_Q6_K, LB_TYPE_IQ4_XS, LB_TYPE_CB2, LB_TYPE_CB3, LB_TYPE_GQ4_G128,
                                 LB_TYPE_GQ4_G32, LB_TYPE_GQ3_G128, LB_TYPE_GQ3_G16, LB_TYPE_GQ2_G64,
                                 LB_TYPE_GQ2_G16};
#define N_GRID_TYPES (int)(sizeof grid_types / sizeof grid_types[0])

static void test_grids(void) {
    uint64_t seed = 7;
    const int64_t K = 512;
    float x[512], got[512], deq[512];
    unsigned char blk[4096];
    for (int ti = 0; ti < N_GRID_TYPES; ti++) {
        const int type = grid_types[ti];
        const lb_grid *g = lb_grid_get(type);
        const lb_type_traits *t = lb_traits(type);
        CHECK_MSG(g && t, "type %d has no grid", type);
        if (!g || !t) continue;
        CHECK(t->blck % g->width == 0 && (size_t)t->type_size <= sizeof blk);
        int bad_exact = 0, bad_idem = 0;
        for (int64_t b0 = 0; b0 < K; b0 += t->blck) {
            for (int j = 0; j < t->blck; j++) x[b0 + j] = lb_test_randf(&seed) * (j % 7 == 0 ? 3.0f : 1.0f);
            memset(blk, 0, sizeof blk);
            for (int c = 0; c < t->blck; c++) {
                if (c % g->width == 0) g->fix(blk, c, x + b0 + c, NULL);
                /* not the value the parameters were fixed from: GPTQ's corrected weights */
                got[b0 + c] = g->round(blk, c, x[b0 + c] + 0.05f * lb_test_randf(&seed));
            }
            t->to_float(blk, deq + b0, t->blck);
            for (int c = 0; c < t->blck; c++) {
                if (got[b0 + c] != deq[b0 + c]) bad_exact++;
                /* a grid value rounds to itself */
                if (g->round(blk, c, deq[b0 + c]) != deq[b0 + c]) bad_idem++;
            }
        }
        CHECK_MSG(bad_exact == 0, "%s: %d of %lld rounded values differ from to_float", t->name, bad_exact, (long long)K);
        CHECK_MSG(bad_idem == 0, "%s: %d grid values do not round to themselves", t->name, bad_idem);
    }
}

/* Double Gauss-Jordan inverse, then the upper Cholesky of it. */
static void slow_chol_inverse_upper(const float *H, int n, double *U) {
    double *A = calloc((size_t)n * 2 * n, sizeof *A), *I = calloc((size_t)n * n, sizeof *I);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) A[i * 2 * n + j] = H[i * n + j];
        A[i * 2 * n + n + i] = 1.0;
    }
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * 2 * n + c]) > fabs(A[p * 2 * n + c])) p = r;
        for (int j = 0; j < 2 * n; j++) {
            double t = A[c * 2 * n + j];
            A[c * 2 * n + j] = A[p * 2 * n + j];
            A[p * 2 * n + j] = t;
        }
        const double d = A[c * 2 * n + c];
        for (int j = 0; j < 2 * n; j++) A[c * 2 * n + j] /= d;
        for (int r = 0; r < n; r++) {
            if (r == c) continue;
            const double f = A[r * 2 * n + c];
            for (int j = 0; j < 2 * n; j++) A[r * 2 * n + j] -= f * A[c * 2 * n + j];
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) I[i * n + j] = A[i * 2 * n + n + j];
    memset(U, 0, (size_t)n * n * sizeof *U);
    for (int i = 0; i < n; i++) {
        double s = I[i * n + i];
        for (int k = 0; k < i; k++) s -= U[k * n + i] * U[k * n + i];
        U[i * n + i] = sqrt(s);
        for (int j = i + 1; j < n; j++) {
            double t = I[i * n + j];
            for (int k = 0; k < i; k++) t -= U[k * n + i] * U[k * n + j];
            U[i * n + j] = t / U[i * n + i];
        }
    }
    free(A);
    free(I);
}

/* H = 2 XᵀX / n + small ridge for n rows of correlated inputs. */
static void make_hessian(int K, int n, uint64_t *seed, float *X, float *H) {
    for (int r = 0; r < n; r++) {
        float common = lb_test_randf(seed);
        for (int k = 0; k < K; k++) {
            const float scale = 0.2f + 2.0f * (float)((k * 37) % K) / (float)K;
            X[r * K + k] = scale * (0.7f * lb_test_randf(seed) + 0.6f * common * (k % 3 ? 1.0f : -1.0f));
        }
    }
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            double s = 0.0;
            for (int r = 0; r < n; r++) s += (double)X[r * K + i] * X[r * K + j];
            H[i * K + j] = (float)(2.0 * s / n);
        }
}

static void test_linalg(void) {
    uint64_t seed = 11;
    /* tiny: against the slow reference */
    {
        const int K = 37, n = 80;
        float *X = malloc(sizeof(float) * n * K), *H = malloc(sizeof(float) * K * K);
        double *U = malloc(sizeof(double) * K * K);
        make_hessian(K, n, &seed, X, H);
        for (int i = 0; i < K; i++) H[i * K + i] += 0.01f;
        slow_chol_inverse_upper(H, K, U);
        CHECK_OK(lb_chol_inverse_upper(H, K, K, 1));
        double maxd = 0.0, maxu = 0.0;
        for (int i = 0; i < K * K; i++) {
            maxd = fmax(maxd, fabs(H[i] - U[i]));
            maxu = fmax(maxu, fabs(U[i]));
        }
        CHECK_MSG(maxd <= 1e-4 * maxu, "tiny Cholesky of the inverse: max diff %g of %g", maxd, maxu);
        free(X), free(H), free(U);
    }
    /* across blocks of 128: Uᵀ U H = I */
    {
        const int K = 300, n = 400;
        float *X = malloc(sizeof(float) * n * K), *H = malloc(sizeof(float) * K * K),
              *H0 = malloc(sizeof(float) * K * K);
        make_hessian(K, n, &seed, X, H);
        for (int i = 0; i < K; i++) H[i * K + i] += 0.05f;
        memcpy(H0, H, sizeof(float) * K * K);
        CHECK_OK(lb_chol_inverse_upper(H, K, K, 2));
        double maxe = 0.0;
        int lower_nonzero = 0;
        for (int i = 0; i < K; i++)
            for (int j = 0; j < i; j++) lower_nonzero += H[i * K + j] != 0.0f;
        for (int i = 0; i < K; i += 7)
            for (int j = 0; j < K; j++) {
                /* (Uᵀ U H)[i][j] = sum_k U[k][i] (U H)[k][j] */
                double s = 0.0;
                for (int k = 0; k <= i; k++) {
                    double uh = 0.0;
                    for (int l = k; l < K; l++) uh += (double)H[k * K + l] * H0[l * K + j];
                    s += (double)H[k * K + i] * uh;
                }
                maxe = fmax(maxe, fabs(s - (i == j)));
            }
        CHECK_MSG(maxe < 2e-3, "U^T U H - I: max %g", maxe);
        CHECK(lower_nonzero == 0);
        /* not positive definite: a clear error, no crash */
        for (int i = 0; i < K * K; i++) H[i] = 0.0f;
        H[0] = -1.0f;
        CHECK(lb_chol_inverse_upper(H, K, K, 1) == LB_ERR_ARG);
        free(X), free(H), free(H0);
    }
    /* past the triangular inverse's 2048-column chunks (K = 2200: 18 blocks):
     * H = D R D with R[i][j] = 0.9^|i-j| (positive definite), checked as
     * U H Uᵀ = I on a few columns j (U H Uᵀ = I iff Uᵀ U = H⁻¹) */
    {
        const int K = 2200;
        float *H = malloc(sizeof(float) * K * K), *H0 = malloc(sizeof(float) * K * K);
        double *v = malloc(sizeof(double) * K);
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                const double di = 0.5 + (i * 37 % 101) / 50.0, dj = 0.5 + (j * 37 % 101) / 50.0;
                H[i * K + j] = (float)(di * dj * pow(0.9, abs(i - j)));
            }
        memcpy(H0, H, sizeof(float) * K * K);
        CHECK_OK(lb_chol_inverse_upper(H, K, K, 2));
        static const int cols[] = {0, 1000, 2047, 2048, 2100, 2199};
        double maxe = 0.0;
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            const int j = cols[c];
            for (int l = 0; l < K; l++) { /* v = H u_jᵀ, u_j = row j of U (zero left of j) */
                double t = 0.0;
                for (int k = j; k < K; k++) t += (double)H0[l * K + k] * H[j * K + k];
                v[l] = t;
            }
            for (int i = 0; i < K; i++) {
                double t = 0.0;
                for (int l = i; l < K; l++) t += (double)H[i * K + l] * v[l];
                maxe = fmax(maxe, fabs(t - (i == j)));
            }
        }
        CHECK_MSG(maxe < 2e-3, "K = %d: U H U^T - I: max %g", K, maxe);
        free(H), free(H0), free(v);
    }
}

/* sum over rows of |(W - Q) xᵀ|² over the calibration rows */
static double output_error(const float *W, const float *Q, const float *X, int N, int K, int n) {
    double e = 0.0;
    for (int r = 0; r < N; r++)
        for (int t = 0; t < n; t++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) s += ((double)W[r * K + k] - Q[r * K + k]) * X[t * K + k];
            e += s * s;
        }
    return e;
}

static void test_gptq_beats_rtn(void) {
    const int K = 512, N = 24, n = 600;
    uint64_t seed = 3;
    float *X = malloc(sizeof(float) * n * K), *H0 = malloc(sizeof(float) * K * K), *H = malloc(sizeof(float) * K * K);
    float *W = malloc(sizeof(float) * N * K), *Wq = malloc(sizeof(float) * N * K), *R = malloc(sizeof(float) * N * K);
    float *D = malloc(sizeof(float) * N * K);
    unsigned char *buf = malloc((size_t)N * K * 2);
    make_hessian(K, n, &seed, X, H0);
    /* dead columns: inputs that never fire */
    for (int t = 0; t < n; t++) X[t * K + 5] = X[t * K + 300] = 0.0f;
    for (int i = 0; i < K; i++) H0[5 * K + i] = H0[i * K + 5] = H0[300 * K + i] = H0[i * K + 300] = 0.0f;
    for (int i = 0; i < N * K; i++) W[i] = lb_test_randf(&seed) * (i % 11 == 0 ? 2.5f : 1.0f);
    for (int ti = 0; ti < N_GRID_TYPES; ti++) {
        const int type = grid_types[ti];
        const lb_type_traits *t = lb_traits(type);
        const size_t rs = lb_row_size(type, K);
        for (int r = 0; r < N; r++) {
            t->from_float(W + (size_t)r * K, buf + r * rs, K);
            t->to_float(buf + r * rs, R + (size_t)r * K, K);
        }
        const double e_rtn = output_error(W, R, X, N, K, n);
        for (int act = 0; act <= 1; act++) {
            memcpy(Wq, W, sizeof(float) * N * K);
            memcpy(H, H0, sizeof(float) * K * K);
            lb_gptq_params p = lb_gptq_default_params();
            p.act_order = act;
            p.n_threads = 2;
            double loss = -1.0;
            memset(buf, 0, (size_t)N * rs);
            CHECK_OK(lb_gptq_quantize(type, Wq, N, K, H, &p, buf, &loss));
            int finite = 1, same = 1;
            for (int r = 0; r < N; r++) t->to_float(buf + r * rs, D + (size_t)r * K, K);
            for (int i = 0; i < N * K; i++) {
                finite &= isfinite(Wq[i]) != 0;
                /* dead columns are quantized from 0: compare the live ones */
                same &= D[i] == Wq[i];
            }
            const double e = output_error(W, Wq, X, N, K, n);
            CHECK_MSG(finite && same, "%s act-order %d: returned weights are not the file's", t->name, act);
            CHECK_MSG(e < e_rtn && loss >= 0.0, "%s act-order %d: GPTQ output error %.4g, RTN %.4g", t->name, act, e,
                      e_rtn);
            if (getenv("LB_TEST_VERBOSE"))
                printf("%-9s act %d: output error GPTQ %.4g RTN %.4g (%.2fx)\n", t->name, act, e, e_rtn, e_rtn / e);
        }
    }
    /* GQ's symmetric groups: GPTQ against symmetric rounding */
    for (int type = LB_GQ_FIRST; type <= LB_GQ_LAST; type += 3) {
        const size_t rs = lb_row_size(type, K);
        for (int r = 0; r < N; r++) {
            lb_gq_quantize_row(type, W + (size_t)r * K, buf + r * rs, K, 1);
            lb_traits(type)->to_float(buf + r * rs, R + (size_t)r * K, K);
        }
        memcpy(Wq, W, sizeof(float) * N * K);
        memcpy(H, H0, sizeof(float) * K * K);
        lb_gptq_params p = lb_gptq_default_params();
        p.sym = 1;
        CHECK_OK(lb_gptq_quantize(type, Wq, N, K, H, &p, buf, NULL));
        int zsym = 1;
        for (int r = 0; r < N; r++)
            for (int b = 0; b < K / QK_GQ; b++) {
                const unsigned char *blk = buf + r * rs + (size_t)b * lb_traits(type)->type_size;
                const int bits = lb_gq_bits(type), ng = QK_GQ / lb_gq_group(type);
                for (int gi = 0; gi < ng; gi++) zsym &= blk[LB_GQ_Z_OFF(bits, lb_gq_group(type)) + gi] == 1 << (bits - 1);
            }
        const double e = output_error(W, Wq, X, N, K, n), e_rtn = output_error(W, R, X, N, K, n);
        CHECK_MSG(zsym, "%s: symmetric GPTQ wrote a zero point other than 2^(b-1)", lb_type_name(type));
        CHECK_MSG(e < e_rtn, "%s symmetric: GPTQ %.4g, RTN %.4g", lb_type_name(type), e, e_rtn);
    }
    /* GQ{b}_GC and BCQ{q}_GC: one static group per row, fixed before the
     * first column (GQ also symmetric, every zero 2^(b-1)) */
    static const int gc_types[] = {LB_TYPE_GQ4_GC,  LB_TYPE_GQ3_GC,  LB_TYPE_GQ2_GC,  LB_TYPE_BCQ4_GC,
                                   LB_TYPE_BCQ3_GC, LB_TYPE_BCQ2_GC, LB_TYPE_BCQ1_GC};
    for (size_t ti = 0; ti < sizeof gc_types / sizeof gc_types[0]; ti++) {
        const int type = gc_types[ti], sn = lb_gc_side_n(type), gq = lb_gqc_bits(type);
        const size_t rs = lb_row_size(type, K);
        lb_fp16 *sz = malloc(sizeof(lb_fp16) * sn * N), *sz0 = malloc(sizeof(lb_fp16) * sn * N);
        for (int sym = 0; sym <= (gq ? 1 : 0); sym++) {
            lb_gc_quantize_matrix(type, W, N, K, sym, NULL, buf, sz0, 2);
            for (int r = 0; r < N; r++) lb_gc_dequantize_row(type, buf + r * rs, R + (size_t)r * K, K, sz0 + sn * r);
            const double e_rtn = output_error(W, R, X, N, K, n);
            for (int act = 0; act <= 1; act++) {
                memcpy(Wq, W, sizeof(float) * N * K);
                memcpy(H, H0, sizeof(float) * K * K);
                /* the grid GPTQ fixes: the row quantizer's, weighted by diag H (dead columns 0) */
                float imp[512];
                for (int i = 0; i < K; i++) imp[i] = H0[i * K + i] > 0.0f ? H0[i * K + i] : 0.0f;
                lb_gc_quantize_matrix(type, W, N, K, sym, imp, buf, sz0, 2);
                lb_gptq_params p = lb_gptq_default_params();
                p.act_order = act, p.sym = sym, p.n_threads = 2;
                double loss = -1.0;
                CHECK_OK(lb_gc_gptq(type, Wq, N, K, H, &p, buf, sz, &loss));
                int same = 1, finite = 1, zsym = 1;
                const int grid = !memcmp(sz, sz0, sizeof(lb_fp16) * sn * N);
                for (int r = 0; r < N; r++) {
                    zsym &= !sym || (int)lb_fp16_to_f32(sz[2 * r + 1]) == 1 << (gq - 1);
                    lb_gc_dequantize_row(type, buf + r * rs, D + (size_t)r * K, K, sz + sn * r);
                }
                for (int i = 0; i < N * K; i++) same &= D[i] == Wq[i], finite &= isfinite(Wq[i]) != 0;
                const double e = output_error(W, Wq, X, N, K, n);
                CHECK_MSG(grid && zsym, "%s sym %d act-order %d: the grids are not the row quantizer's", lb_type_name(type),
                          sym, act);
                CHECK_MSG(same && finite, "%s sym %d act-order %d: returned weights are not the file's", lb_type_name(type),
                          sym, act);
                CHECK_MSG(e < e_rtn && loss >= 0.0, "%s sym %d act-order %d: GPTQ output error %.4g, RTN %.4g",
                          lb_type_name(type), sym, act, e, e_rtn);
                if (getenv("LB_TEST_VERBOSE"))
                    printf("%-9s sym %d act %d: output error GPTQ %.4g RTN %.4g (%.2fx)\n", lb_type_name(type), sym, act,
                           e, e_rtn, e_rtn / e);
            }
        }
        free(sz), free(sz0);
    }
    CHECK(lb_gc_gptq(LB_TYPE_GQ4_G128, Wq, N, K, H, NULL, buf, NULL, NULL) == LB_ERR_ARG);
    CHECK(lb_gc_gptq(LB_TYPE_GQ4_GC, Wq, N, 100, H, NULL, buf, NULL, NULL) == LB_ERR_SHAPE);
    /* MX (seed 002) on its fixed grids: 16 rows, 25 % of the groups in 4
     * bits, 0.5 % outliers, with and without act-order */
    {
        lb_mx_matrix m;
        lb_mx_params mp = lb_mx_default_params();
        mp.outlier_frac = 0.005f;
        CHECK_OK(lb_mx_quantize(W, 16, K, NULL, NULL, &mp, &m));
        lb_mx_dequantize(&m, R);
        lb_mx_free(&m);
        const double e_rtn = output_error(W, R, X, 16, K, n);
        for (int act = 0; act <= 1; act++) {
            memcpy(H, H0, sizeof(float) * K * K);
            lb_gptq_params p = lb_gptq_default_params();
            p.act_order = act;
            p.n_threads = 2;
            double loss = -1.0;
            CHECK_OK(lb_mx_quantize_gptq(W, 16, K, H, NULL, NULL, &mp, &p, &m, &loss));
            lb_mx_dequantize(&m, D);
            int finite = 1;
            for (int i = 0; i < 16 * K; i++) finite &= isfinite(D[i]) != 0;
            const double e = output_error(W, D, X, 16, K, n);
            CHECK_MSG(finite && m.n_out > 0 && e < e_rtn && loss >= 0.0,
                      "MX act-order %d: GPTQ output error %.4g, rounding %.4g (%lld outliers)", act, e, e_rtn,
                      (long long)m.n_out);
            if (getenv("LB_TEST_VERBOSE"))
                printf("MX        act %d: output error GPTQ %.4g RTN %.4g (%.2fx)\n", act, e, e_rtn, e_rtn / e);
            lb_mx_free(&m);
        }
    }
    /* a type without a grid: a clear error */
    memcpy(H, H0, sizeof(float) * K * K);
    CHECK(lb_gptq_quantize(LB_TYPE_F16, Wq, N, K, H, NULL, buf, NULL) == LB_ERR_UNSUPPORTED);
    CHECK(lb_gptq_quantize(LB_TYPE_Q4_K, Wq, N, 100, H, NULL, buf, NULL) == LB_ERR_SHAPE);
    free(X), free(H0), free(H), free(W), free(Wq), free(R), free(D), free(buf);
}

/* quantize's default dampening: 0.1 from 3 bits per weight up, 0.01 below (docs/gptq.md) */
static void test_gptq_refit(void) {
    const int K = 512, N = 24, n = 600;
    uint64_t seed = 11;
    float *X = malloc(sizeof(float) * n * K), *H0 = malloc(sizeof(float) * K * K), *H = malloc(sizeof(float) * K * K);
    float *W = malloc(sizeof(float) * N * K), *Wa = malloc(sizeof(float) * N * K), *Wb = malloc(sizeof(float) * N * K);
    float *D = malloc(sizeof(float) * N * K), *C = malloc(sizeof(float) * 128), *Cb = malloc(sizeof(float) * 128);
    unsigned char *ba = malloc((size_t)N * K * 2), *bb = malloc((size_t)N * K * 2); /* Q8_0: 34 bytes / 32 */
    make_hessian(K, n, &seed, X, H0);
    for (int t = 0; t < n; t++) X[t * K + 7] = 0.0f; /* a dead column */
    for (int i = 0; i < K; i++) H0[7 * K + i] = H0[i * K + 7] = 0.0f;
    for (int i = 0; i < N * K; i++) W[i] = lb_test_randf(&seed) * (i % 13 == 0 ? 3.0f : 1.0f);
    double sum0 = 0.0, sum1 = 0.0;
    static const int plain[] = {LB_TYPE_Q4_0, LB_TYPE_Q5_0, LB_TYPE_Q8_0, LB_TYPE_IQ4_NL};
    const int n_gq = LB_GQ_LAST - LB_GQ_FIRST + 1;
    for (int ti = 0; ti < n_gq + 4; ti++)
        for (int v = 0; v < 4; v++) {
            /* every third case in chunks of 5 rows (24 = 4 x 5 + 4) */
            lb_gptq_refit_force_chunk_rows((ti * 4 + v) % 3 == 0 ? 5 : 0);
            const int gq = ti < n_gq, type = gq ? LB_GQ_FIRST + ti : plain[ti - n_gq];
            if (!gq && (v & 1)) continue; /* llama.cpp's types: one convention */
            const lb_grid *g = v & 1 ? lb_grid_get_sym(type) : lb_grid_get(type);
            CHECK_MSG(g && g->codes && g->set_scale, "%s: no refit hooks", lb_type_name(type));
            if (!g || !g->codes) continue;
            const lb_type_traits *t = lb_traits(type);
            const size_t rs = lb_row_size(type, K);
            lb_gptq_params p = lb_gptq_default_params();
            p.sym = v & 1, p.act_order = v >> 1, p.n_threads = 2;
            memcpy(Wa, W, sizeof(float) * N * K), memcpy(H, H0, sizeof(float) * K * K);
            CHECK_OK(lb_gptq_quantize(type, Wa, N, K, H, &p, ba, NULL));
            p.refit = 1;
            memcpy(Wb, W, sizeof(float) * N * K), memcpy(H, H0, sizeof(float) * K * K);
            CHECK_OK(lb_gptq_quantize(type, Wb, N, K, H, &p, bb, NULL));
            int same_codes = 1, same = 1;
            for (int r = 0; r < N; r++) {
                t->to_float(bb + r * rs, D + (size_t)r * K, K);
                for (int c = 0; c < K; c += g->width) {
                    const size_t off = r * rs + (size_t)(c / t->blck) * t->type_size;
                    g->codes(ba + off, c % t->blck, C), g->codes(bb + off, c % t->blck, Cb);
                    same_codes &= memcmp(C, Cb, sizeof(float) * (size_t)g->width) == 0;
                }
            }
            for (int i = 0; i < N * K; i++) same &= D[i] == Wb[i];
            const double e0 = output_error(W, Wa, X, N, K, n), e1 = output_error(W, Wb, X, N, K, n);
            sum0 += e0, sum1 += e1;
            CHECK_MSG(same_codes, "%s sym %d act %d: the refit changed codes", t->name, v & 1, v >> 1);
            CHECK_MSG(same, "%s sym %d act %d: refit weights are not the file's", t->name, v & 1, v >> 1);
            CHECK_MSG(e1 <= e0 * (1.0 + 1e-5), "%s sym %d act %d: refit error %.6g > %.6g", t->name, v & 1, v >> 1, e1,
                      e0);
            if (getenv("LB_TEST_VERBOSE"))
                printf("%-9s sym %d act %d: output error %.5g -> %.5g (refit)\n", t->name, v & 1, v >> 1, e0, e1);
        }
    lb_gptq_refit_force_chunk_rows(0);
    CHECK_MSG(sum1 < 0.995 * sum0, "the refit lowered the summed output error only %.5g -> %.5g", sum0, sum1);
    /* a type without the refit's hooks: GPTQ as without it */
    lb_gptq_params p = lb_gptq_default_params();
    p.refit = 1;
    memcpy(Wa, W, sizeof(float) * N * K), memcpy(H, H0, sizeof(float) * K * K);
    unsigned char *bk = malloc(lb_row_size(LB_TYPE_Q4_K, K) * N);
    CHECK_OK(lb_gptq_quantize(LB_TYPE_Q4_K, Wa, N, K, H, &p, bk, NULL));
    free(bk), free(X), free(H0), free(H), free(W), free(Wa), free(Wb), free(D), free(C), free(Cb), free(ba), free(bb);
}

static void test_default_damp(void) {
    const int hi[] = {LB_TYPE_GQ4_G128, LB_TYPE_Q4_0, LB_TYPE_Q4_K, LB_TYPE_Q3_K, LB_TYPE_IQ4_XS, LB_TYPE_Q8_0};
    const int lo[] = {LB_TYPE_Q2_K, LB_TYPE_CB2, LB_TYPE_GQ2_G32, LB_TYPE_MX};
    for (size_t i = 0; i < sizeof hi / sizeof *hi; i++)
        CHECK_MSG(lb_gptq_default_damp(hi[i]) == 0.1f, "%s: damp %g", lb_type_name(hi[i]), lb_gptq_default_damp(hi[i]));
    for (size_t i = 0; i < sizeof lo / sizeof *lo; i++)
        CHECK_MSG(lb_gptq_default_damp(lo[i]) == 0.01f, "%s: damp %g", lb_type_name(lo[i]), lb_gptq_default_damp(lo[i]));
}

int main(void) {
    test_default_damp();
    test_grids();
    test_linalg();
    test_gptq_beats_rtn();
    test_gptq_refit();
    return lb_test_result("test_gptq");
}
