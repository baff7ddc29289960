/* The CUDA kernels of seeds 003 and 004 (src/kernels/cuda/cuda_bcq.cu,
 * cuda_abq.cu) against the CPU reference. Exits 77 ("no CUDA device:
 * skipped") without a device.
 *
 * BCQ{q}_G{g}, all twelve types (LUT-GEMM on fp32 activations): against a
 * double dot of the CPU's dequantized weights (the traits' to_float) with
 * the fp32 activations. The kernel's sums are float sums in another order:
 * per output |gpu - ref| <= (48 + K/256) * 2^-24 * A, where A = sum over the
 * groups of (|z| + sum_i |alpha_i|) * sum |x| bounds every intermediate
 * (table entries, per-plane sums, the tiles' atomic adds), whose rounding
 * depth stays below 48 + K/256 additions. A lost byte of a plane (8
 * weights) or a wrong table is ~1e-3 of A, far outside.
 * Both K-tiles of the LUT-GEMV (lb_cuda_bcq_tile 256 and 128).
 * The FP16 path (forced, M = 3 and 16; AUTO takes it above M = 8) against
 * the same reference with test_cuda.c's fp16 bound
 *     8 * 2^-11 * sqrt(sum (w x)^2) + 2^-20 * sum |w x| + 1e-6.
 *
 * ABQ_W1..W8 and W2S (binary tensor cores): activations quantized on the
 * GPU to p = 8, 4, 2, 1 bits equal lb_abq_quantize_act's blocks byte for
 * byte (planes, codes, sums, scale, zero); the product (AUTO: the BMMA
 * GEMV, in passes of 8 up to M = 16, the BMMA GEMM above) equals lb_abq_row_dot, the CPU's
 * float, bit for bit. The weights' group scales lie within 2^4 of each
 * other, so every partial sum of scaled group dots is exact in double and
 * the order of the GPU's sums cannot show (docs/cuda.md).
 *
 * Shapes: K 256, 384 (a partial 256-wide LUT tile), 2816, 4096; N 16, 20
 * (a partial warp of rows), 260 (a partial block), 4096; M 1, 2, 3, 5, 8,
 * 16, and 40 for ABQ. LOWBIT_CUDA_TEST_QUICK=1: K <= 2816 and N <= 260. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/abq.h"
#include "formats/bcq.h"
#include "kernels/cuda/lb_cuda.h"
#include "cuda/cuda_device.h"
#include "kernels/dispatch.h"
#include "cuda_test.h"
#include "test_util.h"

enum { MAX_M = 40, MAX_K = 4096, MAX_N = 4096, MAX_FAIL_LINES = 40 };
static const int kMs[] = {1, 2, 3, 5, 8, 16, 40}; /* 40: ABQ only (its GEMM: a full and a partial tile of 32) */
enum { NM = sizeof kMs / sizeof kMs[0] };
static int quick;
static uint64_t seed = 0x5eed0034ull;
static float randf(void) { return lb_test_randf(&seed); } /* [-1, 1) */
static uint32_t rnd(uint32_t n) { return (uint32_t)(lb_test_rand(&seed) % n); }

static int n_cases, n_failed, fail_lines, n_act_rows, n_act_bad, n_abq_out;
static double worst_bcq_ratio, worst_fp16_ratio;

static float *x_host, *y_host, *w_deq, *x_dev, *y_dev;

/* MAX_M rows of K activations, skewed so that za is not the middle code */
static void upload_x(int64_t K) {
    for (int64_t i = 0; i < MAX_M * K; i++) x_host[i] = randf() + (i % 7 == 0 ? 0.5f : 0.0f);
    CU(cudaMemcpy(x_dev, x_host, sizeof(float) * MAX_M * (size_t)K, cudaMemcpyHostToDevice));
}

/* Y (M x N) into y_host through path; 0, or -1 after a FAIL line */
static int gpu_matmul(lb_cuda_matrix *D, int M, lb_cuda_path path, const char *what) {
    if (lb_cuda_matmul_path(D, x_dev, M, y_dev, path, NULL)) {
        FAIL_LINE("%s M %d path %d: %s", what, M, (int)path, lb_cuda_last_error());
        return -1;
    }
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(y_host, y_dev, sizeof(float) * (size_t)M * (size_t)lb_cuda_matrix_rows(D), cudaMemcpyDeviceToHost));
    return 0;
}

/* Outputs against the double dot of the dequantized weights (w_deq) with
 * x_host: the LUT bound (abs_w[n] = per-row bound factor, see the header)
 * or, fp16 != 0, the FP16 path's. */
static void check_float(const char *what, int M, int64_t N, int64_t K, const double *absbound, int fp16) {
    int bad = 0;
    double worst = 0.0;
#pragma omp parallel for reduction(+ : bad) reduction(max : worst)
    for (int64_t i = 0; i < (int64_t)M * N; i++) {
        const int64_t m = i / N, n = i % N;
        const float *w = w_deq + n * K, *x = x_host + m * K;
        double ref = 0.0, sq = 0.0, ab = 0.0;
        for (int64_t k = 0; k < K; k++) {
            const double p = (double)w[k] * (double)x[k];
            ref += p, sq += p * p, ab += fabs(p);
        }
        const double tol = fp16 ? 8.0 * ldexp(1.0, -11) * sqrt(sq) + ldexp(1.0, -20) * ab + 1e-6
                                : (48.0 + (double)K / 256.0) * ldexp(1.0, -24) * absbound[i] + 1e-30;
        const double err = fabs((double)y_host[i] - ref), r = err / tol;
        if (!(r <= 1.0)) bad++;
        if (r > worst || r != r) worst = r != r ? INFINITY : r;
    }
    if (fp16) worst_fp16_ratio = worst > worst_fp16_ratio ? worst : worst_fp16_ratio;
    else worst_bcq_ratio = worst > worst_bcq_ratio ? worst : worst_bcq_ratio;
    n_cases++;
    if (bad) FAIL_LINE("%s M %d: %d of %lld outputs beyond the bound (worst %.3g of it)", what, M, bad,
                       (long long)M * N, worst);
}

/* ---- seed 003: BCQ ---- */

static void bcq_case(int type, int64_t N, int64_t K) {
    const int q = lb_bcq_bits(type), g = lb_bcq_group(type);
    const size_t rs = lb_row_size(type, K), bs = LB_BCQ_SIZE(q, g);
    uint8_t *rows = malloc(rs * (size_t)N);
    double *absbound = malloc(sizeof(double) * MAX_M * (size_t)N);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < K / g; i++) {
            uint8_t *b = rows + (size_t)n * rs + (size_t)i * bs;
            lb_fp16 h[LB_BCQ_MAX_Q + 1];
            for (int a = 0; a < q; a++) h[a] = lb_f32_to_fp16((0.02f + 0.03f * (randf() + 1.0f)) / (float)(1 << a));
            h[q] = lb_f32_to_fp16(0.05f * randf());
            memcpy(b, h, 2 * ((size_t)q + 1));
            for (size_t j = 2 * ((size_t)q + 1); j < bs; j++) b[j] = (uint8_t)rnd(256);
        }
    const lb_type_traits *tr = lb_traits(type);
    for (int64_t n = 0; n < N; n++) tr->to_float(rows + (size_t)n * rs, w_deq + n * K, K);
    /* the LUT bound's factor per (m, n) */
#pragma omp parallel for collapse(2)
    for (int m = 0; m < MAX_M; m++)
        for (int64_t n = 0; n < N; n++) {
            double A = 0.0;
            for (int64_t i = 0; i < K / g; i++) {
                const lb_fp16 *h = (const lb_fp16 *)(rows + (size_t)n * rs + (size_t)i * bs);
                double f = fabs(lb_fp16_to_f32(h[q])), sx = 0.0;
                for (int a = 0; a < q; a++) f += fabs(lb_fp16_to_f32(h[a]));
                for (int64_t j = 0; j < g; j++) sx += fabs(x_host[m * K + i * g + j]);
                A += f * sx;
            }
            absbound[m * N + n] = A;
        }
    const lb_matrix W = {type, K, N, rs, rows, 0};
    lb_cuda_matrix *D = lb_cuda_matrix_upload(&W);
    char what[96];
    snprintf(what, sizeof what, "%s %lld x %lld", lb_type_name(type), (long long)N, (long long)K);
    if (!D) {
        FAIL_LINE("%s: upload: %s", what, lb_cuda_last_error());
    } else {
        for (int tile = 256; tile >= 128; tile /= 2) { /* the LUT-GEMV's K-tile, both widths */
            lb_cuda_bcq_tile(tile);
            for (int mi = 0; mi < NM; mi++) {
                const int M = kMs[mi];
                if ((M > 8 && tile == 128) || M > 16) continue;
                if (gpu_matmul(D, M, LB_CUDA_AUTO, what) == 0) check_float(what, M, N, K, absbound, M > 8);
                if (M <= 8 || N > 260) continue;
                if (gpu_matmul(D, M, LB_CUDA_GEMV, what) == 0) check_float(what, M, N, K, absbound, 0);
            }
        }
        lb_cuda_bcq_tile(256);
        if (gpu_matmul(D, 3, LB_CUDA_FP16, what) == 0) check_float(what, 3, N, K, absbound, 1);
        lb_cuda_matrix_free(D);
    }
    free(rows);
    free(absbound);
}

/* ---- seed 004: ABQ ---- */

static void abq_act_case(int64_t K, int p) {
    const size_t nb = (size_t)K / LB_ABQ_G;
    block_abq_act *cpu = malloc(sizeof *cpu * nb * MAX_M), *gpu = malloc(sizeof *gpu * nb * MAX_M);
    for (int m = 0; m < MAX_M; m++) lb_abq_quantize_act(x_host + m * K, cpu + m * nb, K, p);
    if (lb_cuda_abq_act_to_host(x_dev, MAX_M, K, p, gpu)) {
        FAIL_LINE("ABQ activations K %lld p %d: %s", (long long)K, p, lb_cuda_last_error());
    } else {
        for (int m = 0; m < MAX_M; m++) {
            n_act_rows++;
            if (memcmp(cpu + m * nb, gpu + m * nb, sizeof *cpu * nb)) {
                n_act_bad++;
                FAIL_LINE("ABQ activations K %lld p %d row %d differ from lb_abq_quantize_act's (d %g / %g, z %d / %d)",
                          (long long)K, p, m, cpu[m * nb].d, gpu[m * nb].d, cpu[m * nb].z, gpu[m * nb].z);
            }
        }
    }
    n_cases++;
    free(cpu);
    free(gpu);
}

static void abq_case(int type, int p, int64_t N, int64_t K) {
    const int q = lb_abq_bits(type), bal = lb_abq_is_balanced(type);
    const int cmax = bal ? 4 : (1 << q) - 1;
    const size_t rs = lb_row_size(type, K), bs = lb_traits(type)->type_size, nb = (size_t)K / LB_ABQ_G;
    uint8_t *rows = calloc((size_t)N, rs);
    for (int64_t n = 0; n < N; n++)
        for (size_t i = 0; i < nb; i++) {
            uint8_t *b = rows + (size_t)n * rs + i * bs;
            /* scales within 2^4 of each other (the bit-exact condition), any sign */
            const lb_fp16 d = lb_f32_to_fp16((randf() < 0 ? -1.0f : 1.0f) * ldexpf(1.0f + 0.5f * randf(), -8 - (int)rnd(4)));
            memcpy(b, &d, 2);
            uint8_t *planes = b + (bal ? 2 : 4);
            if (!bal) {
                const int16_t z = (int16_t)rnd((uint32_t)cmax + 1);
                memcpy(b + 2, &z, 2);
            }
            for (int j = 0; j < LB_ABQ_G; j++) {
                const int c = (int)rnd((uint32_t)cmax + 1);
                for (int s = 0; s < q; s++) planes[s * 16 + j / 8] |= (uint8_t)(((c >> s) & 1) << (j % 8));
            }
        }
    block_abq_act *act = malloc(sizeof *act * nb * MAX_M);
    for (int m = 0; m < MAX_M; m++) lb_abq_quantize_act(x_host + m * K, act + m * nb, K, p);
    const lb_matrix W = {type, K, N, rs, rows, p};
    lb_cuda_matrix *D = lb_cuda_matrix_upload(&W);
    char what[96];
    snprintf(what, sizeof what, "%s A%d %lld x %lld", lb_type_name(type), p, (long long)N, (long long)K);
    if (!D) {
        FAIL_LINE("%s: upload: %s", what, lb_cuda_last_error());
    } else {
        float *ref = malloc(sizeof(float) * MAX_M * (size_t)N);
#pragma omp parallel for
        for (int64_t i = 0; i < MAX_M * N; i++)
            ref[i] = lb_abq_row_dot(type, K, rows + (size_t)(i % N) * rs, act + (size_t)(i / N) * nb);
        for (int mi = 0; mi < NM; mi++) {
            const int M = kMs[mi];
            if (gpu_matmul(D, M, LB_CUDA_AUTO, what)) continue;
            int bad = 0, first = -1;
            for (int64_t i = 0; i < (int64_t)M * N; i++)
                if (memcmp(&y_host[i], &ref[i], 4)) bad++, first = first < 0 ? (int)i : first;
            n_cases++, n_abq_out += (int)(M * N);
            if (bad)
                FAIL_LINE("%s M %d: %d of %lld outputs differ from lb_abq_row_dot's (first [%d]: %.9g, cpu %.9g)", what,
                          M, bad, (long long)M * N, first, y_host[first], ref[first]);
        }
        /* the FP16 path (weights only in fp16, activations unquantized): the float bound */
        if (N <= 260) {
            for (int64_t n = 0; n < N; n++) lb_traits(type)->to_float(rows + (size_t)n * rs, w_deq + n * K, K);
            if (gpu_matmul(D, 3, LB_CUDA_FP16, what) == 0) check_float(what, 3, N, K, NULL, 1);
        }
        free(ref);
        lb_cuda_matrix_free(D);
    }
    free(rows);
    free(act);
}

int main(void) {
    lb_cuda_device_info info;
    const int dev_rc = lb_test_cuda_device(&info);
    if (dev_rc) return dev_rc;
    printf("device: %s, sm_%d%d; CPU reference on %d threads\n", info.name, info.major, info.minor,
           omp_get_max_threads());
    quick = getenv("LOWBIT_CUDA_TEST_QUICK") && atoi(getenv("LOWBIT_CUDA_TEST_QUICK")) > 0;
    x_host = malloc(sizeof(float) * MAX_M * MAX_K);
    y_host = malloc(sizeof(float) * MAX_M * MAX_N);
    w_deq = malloc(sizeof(float) * (size_t)MAX_N * MAX_K);
    CU(cudaMalloc((void **)&x_dev, sizeof(float) * MAX_M * MAX_K));
    CU(cudaMalloc((void **)&y_dev, sizeof(float) * MAX_M * MAX_N));

    static const int64_t Ks[] = {256, 384, 2816, 4096}, Ns[] = {16, 20, 260, 4096};
    for (int ki = 0; ki < 4; ki++) {
        const int64_t K = Ks[ki];
        if (quick && K > 2816) continue;
        upload_x(K);
        for (int ni = 0; ni < 4; ni++) {
            const int64_t N = Ns[ni];
            if ((quick && N > 260) || (N == 4096 && K != 4096) || (K == 4096 && N < 260)) continue;
            for (int t = LB_BCQ_FIRST; t <= LB_BCQ_LAST; t++) {
                if (K % lb_bcq_group(t) || (N == 4096 && lb_bcq_group(t) != 128)) continue;
                bcq_case(t, N, K);
            }
            for (int t = LB_TYPE_ABQ_W1; t <= LB_TYPE_ABQ_W2S; t++) {
                if (K % LB_ABQ_G) continue;
                static const int ps[] = {8, 4, 2, 1};
                for (int pi = 0; pi < 4; pi++) {
                    /* the CPU reference's popcounts are slow: at N = 4096 W2, W4 and W2S at 8 and 4 bits */
                    if (N == 4096 && (ps[pi] < 4 || (t != LB_TYPE_ABQ_W2 && t != LB_TYPE_ABQ_W4 && t != LB_TYPE_ABQ_W2S)))
                        continue;
                    abq_case(t, ps[pi], N, K);
                }
            }
        }
        if (K % LB_ABQ_G == 0)
            for (int p = 1; p <= 8; p++) abq_act_case(K, p);
    }
    /* a CPU-side layout the GPU does not take: a clear refusal */
    {
        uint8_t row[68 * 2] = {0};
        const lb_matrix bad = {LB_TYPE_ABQ_W4_C4, 256, 1, sizeof row, row, 8};
        CHECK_MSG(lb_cuda_matrix_upload(&bad) == NULL, "ABQ_W4_C4 (a load-time layout) uploaded");
    }
    CU(cudaFree(x_dev));
    CU(cudaFree(y_dev));
    lb_cuda_release();
    printf("test_cuda_seeds: %d cases, %d failed; ABQ activations bit-identical in %d of %d rows; ABQ outputs "
           "compared bit for bit: %d; worst BCQ LUT error %.3g of its bound, worst FP16 error %.3g of its bound\n",
           n_cases, n_failed, n_act_rows - n_act_bad, n_act_rows, n_abq_out, worst_bcq_ratio, worst_fp16_ratio);
    CHECK_MSG(n_failed == 0, "%d failed cases (lines above)", n_failed);
    free(x_host), free(y_host), free(w_deq);
    return lb_test_result("test_cuda_seeds");
}
