/* The CUDA kernels (src/kernels/cuda, lb_cuda.h) against the CPU: every
 * result is compared with lowbit's own lb_matmul at the scalar level
 * (lb_cpu_force_level(LB_ISA_SCALAR)), the reference every CPU kernel is
 * tested against. Exits 77 ("no CUDA device: skipped") without a device.
 *
 *  - activations: the GPU's Q8_0 / Q8_K rows are lb_quantize_row_q8_0_ref's
 *    / lb_quantize_row_q8_K_ref's byte for byte (scales, codes, Q8_K's sums);
 *  - GEMV path (int8 activations, dp4a; M > 8 in passes of 8):
 *      "exact" matrices (power-of-two scales, small integer codes and
 *      outliers, activations that are integers with a +-127 in every block
 *      of 32, so their Q8_0 / Q8_K scale is +-1): every product and partial
 *      sum is a multiple of 1/4 below 2^22 (bounds at each generator), so
 *      any summation order gives the same float: bit for bit;
 *      random matrices: |gpu - cpu| <= 1e-4 * max |cpu| over the case;
 *  - FP16 path (weights dequantized to fp16, activations rounded to fp16,
 *    cuBLAS with fp32 accumulation) against a double dot of the CPU's
 *    dequantized weights with the fp32 activations: per output
 *    |gpu - ref| <= 8 * 2^-11 * sqrt(sum (w x)^2) + 2^-20 * sum |w x| + 1e-6
 *    (fp16 rounding of w and x, relative 2^-11 each, is a random walk of
 *    sigma <= 0.82 * 2^-11 * that norm: the bound is ~10 sigma, and a lost
 *    or doubled block of 32 is ~100 sigma);
 *  - AUTO (lb_cuda_matmul): the GEMV criteria for M <= 8, FP16's above;
 *  - MX's GEMV in both variants (second-order scales staged in shared
 *    memory, the default, and in registers: lb_cuda_mx_smem_scales);
 *  - types Q4_0, Q8_0, Q4_K (random bytes, sane scales), MX (exact tiles of
 *    our own, lb_mx_random_pieces + lb_mx_view_make, and lb_mx_quantize of
 *    Gaussian weights, all with outliers); K 256, 2048, 2816 (not a power of
 *    two: every kernel's K tail), 4096; N 16, 48, 4096 and for the
 *    row-per-warp kernels 20 (a partial block of rows); M 1, 2, 3, 8, 16, 64.
 * LOWBIT_CUDA_TEST_QUICK=1: K 256 and 2816, N 16, 20 and 48, M up to 16
 * only (seconds instead of a minute of CPU reference).
 * One line per failing case (capped), a summary at the end. */
#include <cuda_runtime_api.h>
#include <omp.h>

#include "core/fp16.h"
#include "formats/kquants.h"
#include "formats/mx.h"
#include "kernels/cpu.h"
#include "kernels/cuda/lb_cuda.h"
#include "cuda/cuda_device.h"
#include "kernels/dispatch.h"
#include "cuda_test.h"
#include "test_util.h"

enum { MAX_M = 64, MAX_FAIL_LINES = 60 };
static const int kMs[] = {1, 2, 3, 8, 16, 64};
static const int64_t kKs[] = {256, 2048, 2816, 4096};
static const int64_t kNs[] = {16, 20, 48, 4096};
enum { NM = sizeof kMs / sizeof kMs[0], NK = sizeof kKs / sizeof kKs[0], NN = sizeof kNs / sizeof kNs[0] };
static int quick; /* LOWBIT_CUDA_TEST_QUICK */
static int skip_shape(int64_t N, int64_t K) { return quick && (N > 48 || (K != 256 && K != 2816)); }

static uint64_t seed = 0xc0dac0da2202ull;
static uint32_t rnd(uint32_t n) { return (uint32_t)(lb_test_rand(&seed) % n); }
static float randf(void) { return lb_test_randf(&seed); } /* [-1, 1) */

/* ---- counters for the summary ---- */
static int n_cases, n_failed, fail_lines, n_act, n_act_bad, n_fp16_exact, n_fp16_exact_bitwise;
static double worst_gemv_rel, worst_fp16_ratio;

/* ---- one weight matrix on the host ---- */
typedef struct {
    const char *name; /* for messages: "Q4_0 exact" ... */
    lb_matrix W;      /* what lb_matmul and lb_cuda_matrix_upload take */
    int exact;        /* integer-valued: bit-exact GEMV */
    int act_type;     /* LB_TYPE_Q8_0 or LB_TYPE_Q8_K */
    float *Wf;        /* the CPU's dequantized weights, N x K */
    void *mem;        /* rows, or the MX pieces' buffer */
    lb_mx_view *view;
    lb_mx_matrix mx;  /* when the view is of a matrix */
} host_matrix;

static void free_host_matrix(host_matrix *h) {
    free(h->Wf);
    free(h->mem);
    if (h->view) lb_free_aligned(h->view);
    lb_mx_free(&h->mx);
    memset(h, 0, sizeof *h);
}

/* 2^-2, 2^-1 or 1 */
static float pow2_scale(void) { return (float)(1u << rnd(3)) / 4.0f; }

/* Q8_0 / Q4_0 / Q4_K: random codes; exact: |q| <= 15 (Q8_0), power-of-two
 * scales <= 1 (Q4_K: d, dmin in {1/4, 1/2}, 6-bit scales and mins <= 7) so
 * |w| <= 15 (Q8_0), 8 (Q4_0), 56 (Q4_K, d sc q and dmin m apart): against
 * activations summing to <= 189 in magnitude per 32, the sums stay below
 * 56 * 189 * 128 = 1.4e6 < 2^22 at K = 4096. */
static void make_legacy(host_matrix *h, int type, int64_t N, int64_t K, int exact) {
    const size_t rs = lb_row_size(type, K);
    uint8_t *rows = malloc(rs * (size_t)N);
    for (size_t i = 0; i < rs * (size_t)N; i++) rows[i] = (uint8_t)rnd(256);
    for (int64_t n = 0; n < N; n++) {
        uint8_t *row = rows + (size_t)n * rs;
        if (type == LB_TYPE_Q8_0) {
            block_q8_0 *b = (block_q8_0 *)row;
            for (int64_t j = 0; j < K / 32; j++) {
                b[j].d = lb_f32_to_fp16(exact ? pow2_scale() : (rnd(2) ? 1.0f : -1.0f) * (0.0005f + 0.01f * fabsf(randf())));
                if (exact)
                    for (int i = 0; i < 32; i++) b[j].qs[i] = (int8_t)((int)rnd(31) - 15);
            }
        } else if (type == LB_TYPE_Q4_0) {
            block_q4_0 *b = (block_q4_0 *)row;
            for (int64_t j = 0; j < K / 32; j++)
                b[j].d = lb_f32_to_fp16(exact ? pow2_scale() : (rnd(2) ? 1.0f : -1.0f) * (0.001f + 0.02f * fabsf(randf())));
        } else {
            block_q4_K *b = (block_q4_K *)row;
            for (int64_t j = 0; j < K / 256; j++) {
                if (exact) {
                    uint8_t ls[8], lm[8];
                    for (int i = 0; i < 8; i++) ls[i] = (uint8_t)rnd(8), lm[i] = (uint8_t)rnd(8);
                    lb_pack_scale_min_k4(ls, lm, b[j].scales);
                    b[j].d = lb_f32_to_fp16(rnd(2) ? 0.25f : 0.5f);
                    b[j].dmin = lb_f32_to_fp16(rnd(2) ? 0.25f : 0.5f);
                } else {
                    b[j].d = lb_f32_to_fp16(0.0002f + 0.002f * fabsf(randf()));
                    b[j].dmin = lb_f32_to_fp16(0.0002f + 0.002f * fabsf(randf()));
                }
            }
        }
    }
    h->W = (lb_matrix){type, K, N, rs, rows, 0};
    h->mem = rows;
    h->exact = exact;
    h->act_type = type == LB_TYPE_Q4_K ? LB_TYPE_Q8_K : LB_TYPE_Q8_0;
    h->Wf = malloc(sizeof(float) * (size_t)(N * K));
    for (int64_t n = 0; n < N; n++) lb_traits(type)->to_float(rows + (size_t)n * rs, h->Wf + (size_t)n * (size_t)K, K);
}

/* MX, exact: a quarter of the groups in 4 bits, every code random, s2 in
 * {1/2, 1} (|w| <= 30 * 2.5 = 75 in 2-bit tiles), 4-bit scales in {1/4, 1/2,
 * 1}, outliers integers in [-16, 16]: 75 * 189 * 128 = 1.8e6 < 2^22, in
 * multiples of 1/4. As tests/test_mx_kernels.c's random_matrix. */
static void make_mx_exact(host_matrix *h, int64_t N, int64_t K) {
    lb_mx_matrix *m = &h->mx;
    const int64_t G = K / LB_MX_M, T = N / LB_MX_ROWS, n_hi = G / 4, n_lo = G - n_hi;
    const int out_per_row = 4;
    memset(m, 0, sizeof *m);
    m->N = N, m->K = K, m->n_hi = n_hi;
    m->map = calloc((size_t)(G + 7) / 8, 1);
    m->slot = malloc((size_t)G * sizeof *m->slot);
    m->lo = malloc((size_t)(T * n_lo) * sizeof *m->lo);
    m->hi = malloc((size_t)(T * n_hi + 1) * sizeof *m->hi);
    m->row_ptr = calloc((size_t)N + 1, sizeof *m->row_ptr);
    m->out_col = malloc((size_t)(N * out_per_row + 1) * sizeof *m->out_col);
    m->out_val = malloc((size_t)(N * out_per_row + 1) * sizeof *m->out_val);
    for (int64_t placed = 0; placed < n_hi;) {
        const int64_t g = rnd((uint32_t)G);
        if (!lb_mx_is_hi(m, g)) m->map[g / 8] |= (uint8_t)(1u << (g % 8)), placed++;
    }
    int64_t nl = 0, nh = 0;
    for (int64_t g = 0; g < G; g++) m->slot[g] = lb_mx_is_hi(m, g) ? nh++ : nl++;
    for (int64_t i = 0; i < T * n_lo; i++) {
        uint8_t *b = (uint8_t *)&m->lo[i];
        for (size_t j = 0; j < sizeof(block_mx2); j++) b[j] = (uint8_t)rnd(256);
        for (int hh = 0; hh < 2; hh++) {
            const lb_fp16 s2 = lb_f32_to_fp16(rnd(2) ? 0.5f : 1.0f);
            memcpy(m->lo[i].s2 + 2 * hh, &s2, 2);
        }
    }
    for (int64_t i = 0; i < T * n_hi; i++) {
        uint8_t *b = (uint8_t *)&m->hi[i];
        for (size_t j = 0; j < sizeof(block_mx4); j++) b[j] = (uint8_t)rnd(256);
        for (int r = 0; r < 16; r++) m->hi[i].s[r] = lb_f32_to_fp16(pow2_scale());
    }
    int64_t o = 0;
    for (int64_t r = 0; r < N; r++) {
        m->row_ptr[r] = (uint32_t)o;
        for (int64_t c = 0; c < K; c++) {
            if (lb_mx_is_hi(m, c / LB_MX_M) || rnd((uint32_t)(K / out_per_row)) != 0) continue;
            if (o >= N * out_per_row) break;
            m->out_col[o] = (uint16_t)c;
            m->out_val[o++] = lb_f32_to_fp16((float)((int)rnd(33) - 16));
        }
    }
    m->row_ptr[N] = (uint32_t)o;
    m->n_out = o;
}

/* MX kinds: 0 exact (above), 1 lb_mx_random_pieces, 2 lb_mx_quantize of Gaussian weights */
static int make_mx(host_matrix *h, int kind, int64_t N, int64_t K) {
    lb_mx_params p = lb_mx_default_params();
    if (kind == 0) {
        make_mx_exact(h, N, K);
        CHECK_OK(lb_mx_view_of_matrix(&h->mx, &h->view));
    } else if (kind == 1) {
        h->mem = malloc(lb_mx_random_size(N, K, &p));
        lb_mx_parts parts;
        lb_mx_random_pieces(N, K, &p, lb_test_rand(&seed), h->mem, &parts);
        CHECK_OK(lb_mx_view_make(&parts, &h->view));
    } else {
        float *W = malloc(sizeof(float) * (size_t)(N * K));
        for (int64_t i = 0; i < N * K; i++) W[i] = 0.01f * (randf() + randf() + randf() + randf());
        for (int64_t i = 0; i < N * K; i += 997) W[i] *= 8.0f; /* a few large weights: outliers to keep */
        CHECK_OK(lb_mx_quantize(W, N, K, NULL, NULL, &p, &h->mx));
        free(W);
        if (h->mx.lo) CHECK_OK(lb_mx_view_of_matrix(&h->mx, &h->view));
    }
    if (!h->view) return -1;
    h->W = (lb_matrix){LB_TYPE_MX, K, N, 0, h->view, 0};
    h->exact = kind == 0;
    h->act_type = LB_TYPE_Q8_0;
    h->Wf = malloc(sizeof(float) * (size_t)(N * K));
    lb_mx_view_dequantize(h->view, h->Wf);
    return 0;
}

/* M rows of K activations. exact: integers in [-2, 2] with one +-127 in
 * every block of 32 (Q8_0's d and Q8_K's |d| are then 1, and a block's
 * |values| sum to <= 189). Otherwise 3 * uniform, with in row 0 a first
 * block of 256 zeros (d = 0 paths) and, at K >= 512, two values of equal
 * magnitude and opposite sign as the largest of the second 256 (Q8_K takes
 * the first one's sign). */
static void make_acts(float *x, int64_t K, int M, int exact) {
    for (int64_t i = 0; i < K * M; i++) x[i] = exact ? (float)((int)rnd(5) - 2) : 3.0f * randf();
    if (exact) {
        for (int64_t i = 0; i < K * M; i += 32) x[i + rnd(32)] = rnd(2) ? 127.0f : -127.0f;
        return;
    }
    for (int i = 0; i < 256; i++) x[i] = 0.0f;
    if (K >= 512) x[256 + 5] = -3.5f, x[256 + 9] = 3.5f;
}

/* ---- checks ---- */

/* The GPU's activation rows against the CPU quantizer, byte for byte. */
static void check_acts(int act_type, const float *x, const float *x_dev, int M, int64_t K) {
    const size_t rs = lb_row_size(act_type, K);
    uint8_t *gpu = malloc(rs * (size_t)M), *cpu = malloc(rs * (size_t)M);
    n_act++;
    if (lb_cuda_quantize_to_host(act_type, x_dev, M, K, gpu)) {
        n_act_bad++;
        FAIL_LINE("activations %s M %d K %lld: %s", lb_type_name(act_type), M, (long long)K, lb_cuda_last_error());
    } else {
        for (int m = 0; m < M; m++) {
            if (act_type == LB_TYPE_Q8_0) lb_quantize_row_q8_0_ref(x + (size_t)m * K, cpu + (size_t)m * rs, K);
            else lb_quantize_row_q8_K_ref(x + (size_t)m * K, cpu + (size_t)m * rs, K);
        }
        for (size_t i = 0; i < rs * (size_t)M; i++)
            if (gpu[i] != cpu[i]) {
                n_act_bad++;
                FAIL_LINE("activations %s M %d K %lld: first differing byte %zu (row %zu, byte %zu of the row): gpu "
                          "0x%02x cpu 0x%02x", lb_type_name(act_type), M, (long long)K, i, i / rs, i % rs, gpu[i], cpu[i]);
                break;
            }
    }
    free(gpu), free(cpu);
}

typedef struct {
    double *y, *norm2, *abs1; /* M x N */
} f64_ref;

/* double dot of the dequantized weights with the fp32 activations */
static f64_ref ref_f64(const host_matrix *h, const float *x, int M) {
    const int64_t N = h->W.N, K = h->W.K;
    f64_ref r = {malloc(sizeof(double) * (size_t)(M * N)), malloc(sizeof(double) * (size_t)(M * N)),
                 malloc(sizeof(double) * (size_t)(M * N))};
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M * N; i++) {
        const float *w = h->Wf + (size_t)(i % N) * (size_t)K, *a = x + (size_t)(i / N) * (size_t)K;
        double s = 0, q = 0, ab = 0;
        for (int64_t k = 0; k < K; k++) {
            const double p = (double)w[k] * (double)a[k];
            s += p, q += p * p, ab += fabs(p);
        }
        r.y[i] = s, r.norm2[i] = sqrt(q), r.abs1[i] = ab;
    }
    return r;
}

static void free_f64(f64_ref *r) { free(r->y), free(r->norm2), free(r->abs1); }

/* GEMV criteria: bit for bit (exact) or within 1e-4 of max |cpu| */
static void check_gemv(const char *what, const host_matrix *h, int M, const float *y, const float *want) {
    const int64_t N = h->W.N, n = N * M;
    double mag = 0;
    for (int64_t i = 0; i < n; i++) mag = fmax(mag, fabs(want[i]));
    const double tol = 1e-4 * mag + 1e-30;
    int64_t bad = 0, worst = -1;
    double worst_d = -1;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)y[i] - (double)want[i]);
        const int off = h->exact ? !(y[i] == want[i]) : !(d <= tol); /* NaN counts as off */
        bad += off;
        if (off && (worst < 0 || (isnan(d) ? INFINITY : d) > worst_d)) worst_d = isnan(d) ? INFINITY : d, worst = i;
        if (!h->exact && !isnan(d) && mag > 0) worst_gemv_rel = fmax(worst_gemv_rel, d / mag);
    }
    n_cases++;
    if (bad)
        FAIL_LINE("%s %s N %lld K %lld M %d: %lld of %lld outputs off (%s); e.g. m %lld n %lld: gpu %.9g cpu %.9g "
                  "(|diff| %.3g = %.3g of max |cpu| %.6g)",
                  h->name, what, (long long)N, (long long)h->W.K, M, (long long)bad, (long long)n,
                  h->exact ? "bit-exact wanted" : "tolerance 1e-4 of max |cpu|", (long long)(worst / N),
                  (long long)(worst % N), y[worst], want[worst], worst_d, mag > 0 ? worst_d / mag : 0.0, mag);
}

/* FP16 criteria (the header): per output against the double reference */
static void check_fp16(const char *what, const host_matrix *h, int M, const float *y, const f64_ref *r,
                       const float *want_q) {
    const int64_t N = h->W.N, n = N * M;
    const double u = 1.0 / 2048.0;
    int64_t bad = 0, worst = -1, bitwise = 0;
    double worst_ratio = -1;
    for (int64_t i = 0; i < n; i++) {
        const double tol = 8.0 * u * r->norm2[i] + r->abs1[i] / 1048576.0 + 1e-6;
        const double d = fabs((double)y[i] - r->y[i]);
        const double ratio = isnan(d) ? INFINITY : d / tol;
        bad += !(d <= tol);
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
        bitwise += want_q && y[i] == want_q[i];
    }
    worst_fp16_ratio = fmax(worst_fp16_ratio, worst_ratio);
    if (h->exact && want_q) n_fp16_exact++, n_fp16_exact_bitwise += bitwise == n;
    n_cases++;
    if (bad)
        FAIL_LINE("%s %s N %lld K %lld M %d: %lld of %lld outputs off (fp16 tolerance); worst m %lld n %lld: gpu %.9g "
                  "ref %.9g, |diff| %.3g = %.3g x its tolerance",
                  h->name, what, (long long)N, (long long)h->W.K, M, (long long)bad, (long long)n,
                  (long long)(worst / N), (long long)(worst % N), y[worst], r->y[worst],
                  fabs((double)y[worst] - r->y[worst]), worst_ratio);
}

/* lb_matmul at the scalar level (forced once in main) */
static float *cpu_matmul(const host_matrix *h, const float *x, int M) {
    const int64_t N = h->W.N;
    float *y = malloc(sizeof(float) * (size_t)(N * M));
    for (int64_t i = 0; i < N * M; i++) y[i] = NAN;
    void *scratch = lb_malloc_aligned(lb_matmul_scratch_size(&h->W, M) + 64);
    lb_matmul(&h->W, x, M, y, (size_t)N, scratch, omp_get_max_threads());
    lb_free_aligned(scratch);
    return y;
}

/* one GPU matmul into y (host); 0, or -1 after reporting the failure */
static int gpu_matmul(const host_matrix *h, lb_cuda_matrix *D, const float *x_dev, int M, lb_cuda_path path,
                      float *y_dev, float *y) {
    const int64_t N = h->W.N;
    CU(cudaMemset(y_dev, 0xff, sizeof(float) * (size_t)(N * M))); /* NaN: an output never written shows */
    const int rc = path == LB_CUDA_AUTO ? lb_cuda_matmul(D, x_dev, M, y_dev, NULL)
                                        : lb_cuda_matmul_path(D, x_dev, M, y_dev, path, NULL);
    const cudaError_t e = cudaDeviceSynchronize();
    if (rc || e != cudaSuccess) {
        n_cases++;
        FAIL_LINE("%s path %d N %lld K %lld M %d: %s", h->name, (int)path, (long long)N, (long long)h->W.K, M,
                  rc ? lb_cuda_last_error() : cudaGetErrorString(e));
        if (e != cudaSuccess) exit(1); /* the context is gone: nothing after this would mean anything */
        return -1;
    }
    CU(cudaMemcpy(y, y_dev, sizeof(float) * (size_t)(N * M), cudaMemcpyDeviceToHost));
    return 0;
}

static void run_matrix(host_matrix *h, float *x_dev, float *y_dev) {
    const int64_t N = h->W.N, K = h->W.K;
    lb_cuda_matrix *D = lb_cuda_matrix_upload(&h->W);
    if (!D) {
        n_cases++;
        FAIL_LINE("%s N %lld K %lld: upload: %s", h->name, (long long)N, (long long)K, lb_cuda_last_error());
        return;
    }
    CHECK(lb_cuda_matrix_bytes(D) == lb_matrix_bytes(&h->W));
    float *x = malloc(sizeof(float) * (size_t)(MAX_M * K)), *y = malloc(sizeof(float) * (size_t)(MAX_M * N));
    const int fails_before = n_failed;
    for (int mi = 0; mi < NM; mi++) {
        const int M = kMs[mi];
        if (quick && M > 16) continue;
        make_acts(x, K, M, h->exact);
        CU(cudaMemcpy(x_dev, x, sizeof(float) * (size_t)(M * K), cudaMemcpyHostToDevice));
        check_acts(h->act_type, x, x_dev, M, K);
        float *want = cpu_matmul(h, x, M);
        f64_ref r = ref_f64(h, x, M);
        if (!gpu_matmul(h, D, x_dev, M, LB_CUDA_GEMV, y_dev, y)) check_gemv("GEMV", h, M, y, want);
        if (h->W.type == LB_TYPE_MX) { /* the other variant of the MX GEMV: scales in registers */
            lb_cuda_mx_smem_scales(0);
            if (!gpu_matmul(h, D, x_dev, M, LB_CUDA_GEMV, y_dev, y)) check_gemv("GEMV (MX scales in registers)", h, M, y, want);
            lb_cuda_mx_smem_scales(1);
        }
        if (!gpu_matmul(h, D, x_dev, M, LB_CUDA_FP16, y_dev, y)) check_fp16("FP16", h, M, y, &r, h->exact ? want : NULL);
        if (!gpu_matmul(h, D, x_dev, M, LB_CUDA_AUTO, y_dev, y)) {
            if (M <= LB_CUDA_GEMV_MAX_M) check_gemv("AUTO", h, M, y, want);
            else check_fp16("AUTO", h, M, y, &r, NULL);
        }
        free(want);
        free_f64(&r);
    }
    printf("%-12s N %5lld K %5lld: %s\n", h->name, (long long)N, (long long)K,
           n_failed == fails_before ? "ok" : "FAILED");
    fflush(stdout);
    free(x), free(y);
    lb_cuda_matrix_free(D);
}

int main(void) {
    lb_cuda_device_info info;
    const int dev_rc = lb_test_cuda_device(&info);
    if (dev_rc) return dev_rc;
    printf("device: %s, sm_%d%d, %d SMs, %.1f GiB, driver %d, runtime %d; CPU reference at scalar, %d threads\n",
           info.name, info.major, info.minor, info.sm_count, (double)info.total_mem / (1u << 30), info.driver_version,
           info.runtime_version, omp_get_max_threads());
    lb_cpu_force_level(LB_ISA_SCALAR);
    quick = getenv("LOWBIT_CUDA_TEST_QUICK") && atoi(getenv("LOWBIT_CUDA_TEST_QUICK")) > 0;

    float *x_dev = NULL, *y_dev = NULL;
    CU(cudaMalloc((void **)&x_dev, sizeof(float) * MAX_M * 4096));
    CU(cudaMalloc((void **)&y_dev, sizeof(float) * MAX_M * 4096));

    /* argument checks: a type without a kernel, run without prepare */
    {
        uint8_t row[18 * 8] = {0};
        const lb_matrix bad = {LB_TYPE_Q4_1, 256, 1, lb_row_size(LB_TYPE_Q4_1, 256), row, 0};
        CHECK_MSG(lb_cuda_matrix_upload(&bad) == NULL, "Q4_1 has no CUDA kernel but uploaded");
    }

    static const int legacy[] = {LB_TYPE_Q4_0, LB_TYPE_Q8_0, LB_TYPE_Q4_K};
    for (int ti = 0; ti < 3; ti++)
        for (int exact = 1; exact >= 0; exact--)
            for (int ki = 0; ki < NK; ki++)
                for (int ni = 0; ni < NN; ni++) {
                    if (skip_shape(kNs[ni], kKs[ki])) continue;
                    host_matrix h = {0};
                    make_legacy(&h, legacy[ti], kNs[ni], kKs[ki], exact);
                    char name[32];
                    snprintf(name, sizeof name, "%s %s", lb_type_name(legacy[ti]), exact ? "exact" : "random");
                    h.name = name;
                    run_matrix(&h, x_dev, y_dev);
                    free_host_matrix(&h);
                }
    static const char *mx_names[] = {"MX exact", "MX random", "MX quant"};
    for (int kind = 0; kind < 3; kind++)
        for (int ki = 0; ki < NK; ki++)
            for (int ni = 0; ni < NN; ni++) {
                const int64_t N = kNs[ni], K = kKs[ki];
                if (N % 16 || skip_shape(N, K)) continue;
                /* quantizing Gaussian weights is the slow part: two shapes of K 2048, one of 2816 */
                if (kind == 2 && !((K == 2048 && (N == 48 || N == 4096)) || (K == 2816 && N == 16))) continue;
                host_matrix h = {0};
                h.name = mx_names[kind];
                if (make_mx(&h, kind, N, K) == 0) run_matrix(&h, x_dev, y_dev);
                free_host_matrix(&h);
            }

    /* run_prepared refuses activations prepared for another format */
    {
        host_matrix h = {0};
        make_legacy(&h, LB_TYPE_Q4_K, 16, 256, 0);
        lb_cuda_matrix *D = lb_cuda_matrix_upload(&h.W);
        CHECK(D != NULL);
        if (D) {
            CHECK(lb_cuda_prepare(D, x_dev, 1, LB_CUDA_FP16, NULL) == 0);
            CHECK_MSG(lb_cuda_run_prepared(D, 1, y_dev, LB_CUDA_GEMV, NULL) != 0,
                      "GEMV ran on activations prepared for FP16");
            lb_cuda_matrix_free(D);
        }
        free_host_matrix(&h);
    }

    CU(cudaFree(x_dev));
    CU(cudaFree(y_dev));
    lb_cuda_release();
    lb_cpu_force_level(lb_cpu_detected());
    printf("test_cuda: %d cases, %d failed; activations bit-identical in %d of %d; FP16 path bit-exact on %d of %d "
           "exact cases (not required); worst random GEMV error %.3g of max |cpu| (tolerance 1e-4); worst FP16 error "
           "%.3g of its tolerance\n",
           n_cases, n_failed, n_act - n_act_bad, n_act, n_fp16_exact_bitwise, n_fp16_exact, worst_gemv_rel,
           worst_fp16_ratio);
    CHECK_MSG(n_failed == 0, "%d failed cases (lines above)", n_failed);
    return lb_test_result("test_cuda");
}
