/* MX kernels (formats/mx.h, lb_mx_view) at every level this machine has,
 * through the matmul driver (lb_matmul: its row ranges, threads and
 * activation quantizer), against the scalar reference lb_gemv_mx_q8_0_ref:
 *  - "exact" matrices (power-of-two second-order scales, fp16 scales and
 *    outliers that are small integers, activations whose Q8_0 scale is 1):
 *    every product and sum is an integer below 2^24, so any order of
 *    summation gives the same float and the kernels must match bit for bit;
 *  - random matrices (any codes, scales and outliers): within 1e-5 of the
 *    outputs' magnitude;
 *  - the reference itself against a double dot of the dequantized matrix
 *    (lb_mx_dequantize) with the dequantized activations;
 *  - no outliers: the dense result, and with outliers exactly the dense
 *    result plus each outlier's product (exact matrices);
 *  - shapes: N = 16 .. 112, K = 32 (one group) .. 2048, M = 1 .. 17, 32, 37,
 *    1 and 2 threads, every share of 4-bit groups from none to all but one;
 *  - on x86 and Arm a level above scalar has a kernel of its own; the
 *    AVX-512 levels run twice, with GFNI and without (two kernels), the AMX
 *    level with AMX-BF16 (the bf16 GEMM for rows in groups of 16, held to
 *    the bf16 reference) and without (the VNNI kernel). */
#include "core/fp16.h"
#include "formats/mx.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "test_matmul_util.h"
#include "test_util.h"

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX,
                                 LB_ISA_NEON,   LB_ISA_DOTPROD, LB_ISA_I8MM};
enum { N_LEVELS = sizeof kLevels / sizeof kLevels[0] };

static uint32_t rnd(uint64_t *s, uint32_t n) { return (uint32_t)(lb_test_rand(s) % n); }

/* A random MX matrix: n_hi random groups in 4 bits, every code random, and
 * about out_per_row outliers per row in 2-bit groups. exact: second-order
 * scales 0.5, 1 or 2, 4-bit scales 1/4 .. 4, outliers small integers. */
static void random_matrix(uint64_t *seed, int64_t N, int64_t K, int64_t n_hi, int out_per_row, int exact,
                          lb_mx_matrix *m) {
    const int64_t G = K / LB_MX_M, T = N / LB_MX_ROWS, n_lo = G - n_hi;
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
        const int64_t g = rnd(seed, (uint32_t)G);
        if (!lb_mx_is_hi(m, g)) m->map[g / 8] |= (uint8_t)(1u << (g % 8)), placed++;
    }
    int64_t nl = 0, nh = 0;
    for (int64_t g = 0; g < G; g++) m->slot[g] = lb_mx_is_hi(m, g) ? nh++ : nl++;
    static const float s2s[] = {0.5f, 1.0f, 2.0f};
    for (int64_t i = 0; i < T * n_lo; i++) {
        uint8_t *b = (uint8_t *)&m->lo[i];
        for (size_t j = 0; j < sizeof(block_mx2); j++) b[j] = (uint8_t)rnd(seed, 256);
        for (int h = 0; h < 2; h++) {
            const lb_fp16 s2 = lb_f32_to_fp16(exact ? s2s[rnd(seed, 3)] : 0.001f + 0.01f * lb_test_randf(seed) * lb_test_randf(seed));
            memcpy(m->lo[i].s2 + 2 * h, &s2, 2);
        }
    }
    for (int64_t i = 0; i < T * n_hi; i++) {
        uint8_t *b = (uint8_t *)&m->hi[i];
        for (size_t j = 0; j < sizeof(block_mx4); j++) b[j] = (uint8_t)rnd(seed, 256);
        for (int r = 0; r < 16; r++)
            m->hi[i].s[r] = lb_f32_to_fp16(exact ? (float)(1u << rnd(seed, 5)) / 4.0f : 0.01f * lb_test_randf(seed));
    }
    int64_t o = 0;
    for (int64_t r = 0; r < N; r++) {
        m->row_ptr[r] = (uint32_t)o;
        for (int64_t c = 0; c < K && out_per_row; c++) {
            if (lb_mx_is_hi(m, c / LB_MX_M) || rnd(seed, (uint32_t)(K / out_per_row)) != 0) continue;
            if (o >= N * out_per_row) break;
            m->out_col[o] = (uint16_t)c;
            m->out_val[o++] = lb_f32_to_fp16(exact ? (float)((int)rnd(seed, 33) - 16) : 0.1f * lb_test_randf(seed));
        }
    }
    m->row_ptr[N] = (uint32_t)o;
    m->n_out = o;
}

/* M rows of K activations; exact: integers in [-127, 127] with a +-127 in
 * every block of 32, so Q8_0 stores them with d = 1 */
static float *make_acts(uint64_t *seed, int64_t K, int M, int exact) {
    float *x = malloc(sizeof(float) * (size_t)(K * M));
    for (int64_t i = 0; i < K * M; i++) x[i] = exact ? (float)((int)rnd(seed, 255) - 127) : 3.0f * lb_test_randf(seed);
    for (int64_t i = 0; i < K * M && exact; i += 32) x[i + rnd(seed, 32)] = rnd(seed, 2) ? 127.0f : -127.0f;
    return x;
}

/* the reference, on the same Q8_0 rows the driver makes */
static float *reference(const lb_mx_view *v, const float *x, int M) {
    const int64_t K = v->K, N = v->N;
    const size_t arow = lb_row_size(LB_TYPE_Q8_0, K);
    uint8_t *a = malloc(arow * (size_t)M);
    for (int m = 0; m < M; m++) lb_quantize_row_q8_0_ref(x + (size_t)m * K, a + (size_t)m * arow, K);
    float *y = malloc(sizeof(float) * (size_t)(N * M));
    lb_gemv_mx_q8_0_ref(K, v, 0, 0, (int)N, a, arow, M, y, (size_t)N);
    free(a);
    return y;
}

/* the reference against a double dot of both sides dequantized */
static void check_reference(const lb_mx_matrix *m, const lb_mx_view *v, const float *x, int M, const float *y) {
    const int64_t K = m->K, N = m->N;
    float *W = malloc(sizeof(float) * (size_t)(N * K)), *xq = malloc(sizeof(float) * (size_t)K);
    block_q8_0 *a = malloc(lb_row_size(LB_TYPE_Q8_0, K));
    lb_mx_dequantize(m, W);
    int bad = 0;
    for (int mm = 0; mm < M; mm++) {
        lb_quantize_row_q8_0_ref(x + (size_t)mm * K, a, K);
        lb_dequantize_row_q8_0(a, xq, K);
        for (int64_t n = 0; n < N; n++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) s += (double)W[n * K + k] * xq[k], mag += fabs((double)W[n * K + k] * xq[k]);
            bad += fabs(s - y[(size_t)mm * N + n]) > 1e-5 * mag + 1e-6;
        }
    }
    CHECK_MSG(bad == 0, "reference %lld x %lld: %d outputs off the double dot", (long long)N, (long long)K, bad);
    (void)v;
    free(W), free(xq), free(a);
}

/* y against want (M x N); exact: bit for bit */
static int compare(const float *y, const float *want, int64_t n, int exact) {
    double mag = 0;
    for (int64_t i = 0; i < n; i++) mag = fmax(mag, fabs(want[i]));
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += exact ? !(y[i] == want[i]) : !(fabs(y[i] - want[i]) <= 1e-5 * mag + 1e-7);
    return bad;
}

/* The AMX-BF16 GEMM (kernels/x86/mx_amx_bf16.c) computes rows in whole
 * groups of 16: those are held to the bf16 reference (the view's weights
 * and the activations rounded to bf16, a double dot; within 1e-5 of the sum
 * of |w a|, exact data too: the bf16 roundings are not the Q8_0 ones), the
 * others to the reference. Returns the number off. */
static int compare_bf16(const lb_mx_view *v, const float *x, int M, const float *y, const float *want, int exact) {
    const int64_t N = v->N, K = v->K;
    float *W = malloc(sizeof(float) * (size_t)(N * K));
    double *want16 = malloc(sizeof(double) * (size_t)(N * M)), *mag16 = malloc(sizeof(double) * (size_t)(N * M));
    lb_mx_view_dequantize(v, W);
    lb_test_reference_bf16(LB_TYPE_F32, (const uint8_t *)W, x, K, N, M, want16, mag16);
    const int M16 = M - M % 16;
    int bad = compare(y + (size_t)M16 * N, want + (size_t)M16 * N, (M - M16) * N, exact);
    for (int64_t i = 0; i < (int64_t)M16 * N; i++) bad += !(fabs(y[i] - want16[i]) <= 1e-5 * mag16[i] + 1e-30);
    free(W), free(want16), free(mag16);
    return bad;
}

int main(void) {
    uint64_t seed = 0x5eed2002;
    static const int64_t Ns[] = {16, 32, 48, 112, 16, 64};
    static const int64_t Ks[] = {32, 64, 96, 320, 2048, 1536};
    static const int Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 32, 37};
    enum { NM = sizeof Ms / sizeof Ms[0] };
    int runs = 0;
    /* each level, and the AVX-512 levels again without GFNI (the kernel
     * that takes the code planes by shifts and masks) and AMX-BF16 (at the
     * AMX level: the VNNI kernel) */
    for (int pass = 0; pass < 2 * N_LEVELS; pass++) {
        const int li = pass % N_LEVELS, no_gfni = pass >= N_LEVELS;
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_disable_features(0); /* what the CPU has, not what the last pass left */
        if (no_gfni && (kLevels[li] < LB_ISA_AVX512 || kLevels[li] > LB_ISA_AMX ||
                        !(lb_cpu_extra_features() & (LB_CPU_GFNI | LB_CPU_AMXBF16))))
            continue;
        lb_cpu_disable_features(no_gfni ? LB_CPU_GFNI | LB_CPU_AMXBF16 : 0);
        lb_cpu_force_level(kLevels[li]);
        const lb_kernel *k = lb_kernel_get(LB_TYPE_MX);
        CHECK_MSG(k != NULL, "no MX kernel at %s", lb_isa_name(kLevels[li]));
        if (!k) continue;
        if (kLevels[li] != LB_ISA_SCALAR)
            CHECK_MSG(k->isa != LB_ISA_SCALAR, "only the scalar reference at %s", lb_isa_name(kLevels[li]));
        printf("level %s%s: %s\n", lb_isa_name(kLevels[li]), no_gfni ? " without GFNI / AMX-BF16" : "", k->name);
        const int bf = k->act_x4_block == sizeof(lb_block_bf16x16);
        for (int si = 0; si < 6; si++)
            for (int variant = 0; variant < 6; variant++) {
                const int64_t N = Ns[si], K = Ks[(si + variant) % 6], G = K / LB_MX_M;
                const int exact = variant % 2 == 0, outs = variant < 2 ? 0 : variant < 4 ? 2 : 9;
                const int64_t n_hi = G == 1 ? 0 : (int64_t)rnd(&seed, (uint32_t)G); /* 0 .. G - 1 */
                lb_mx_matrix m;
                random_matrix(&seed, N, K, n_hi, outs, exact, &m);
                lb_mx_view *v = NULL;
                CHECK_OK(lb_mx_view_of_matrix(&m, &v));
                if (!v) continue;
                for (int mi = (si + variant) % 3; mi < NM; mi += 3) {
                    const int M = Ms[mi], nth = 1 + (mi + variant) % 2;
                    if (kLevels[li] == LB_ISA_SCALAR && K >= 1536 && M > 4) continue; /* slow, nothing new */
                    float *x = make_acts(&seed, K, M, exact);
                    float *want = reference(v, x, M);
                    if (li == 0 && mi < 3) check_reference(&m, v, x, M, want);
                    float *y = lb_test_matmul(LB_TYPE_MX, (const uint8_t *)v, K, N, x, M, nth);
                    const int bad = bf ? compare_bf16(v, x, M, y, want, exact) : compare(y, want, N * M, exact);
                    CHECK_MSG(!bad, "%s at %s: N %lld K %lld (%lld of %lld groups 4-bit, %lld outliers) M %d, %d threads, %s: %d of %lld off",
                              k->name, lb_isa_name(kLevels[li]), (long long)N, (long long)K, (long long)n_hi,
                              (long long)G, (long long)m.n_out, M, nth, exact ? "exact" : "float", bad, (long long)(N * M));
                    if (exact && m.n_out && mi < 6) {
                        /* without its outliers: the dense part, which the outliers' products complete exactly */
                        lb_mx_view dense = *v;
                        dense.row_ptr = NULL, dense.outliers = NULL, dense.n_cap = 0;
                        float *yd = lb_test_matmul(LB_TYPE_MX, (const uint8_t *)&dense, K, N, x, M, nth);
                        int off = 0;
                        for (int mm = bf ? M - M % 16 : 0; mm < M; mm++) /* (bf16 rows: not exact) */
                            for (int64_t r = 0; r < N; r++) {
                                float s = yd[mm * N + r];
                                for (uint32_t o = m.row_ptr[r]; o < m.row_ptr[r + 1]; o++)
                                    s += lb_fp16_to_f32(m.out_val[o]) * x[mm * K + m.out_col[o]];
                                off += s != y[mm * N + r];
                            }
                        CHECK_MSG(off == 0, "%s at %s: dense + outliers != with outliers in %d outputs", k->name,
                                  lb_isa_name(kLevels[li]), off);
                        free(yd);
                    }
                    free(x), free(want), free(y);
                    runs++;
                }
                lb_free_aligned(v);
                lb_mx_free(&m);
            }
    }
    lb_cpu_disable_features(0);
    lb_cpu_force_level(lb_cpu_detected());
    printf("MX kernels: %d runs against the reference\n", runs);
    return lb_test_result("test_mx_kernels");
}
