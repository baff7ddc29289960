/* The float-weight prefill GEMM (kernels/fgemm.h) through lb_matmul, for
 * F32, F16 and BF16 weights at every level this machine has (x86: AVX2
 * 6 x 16, AVX-512 14 x 32; Arm: NEON 8 x 12 under qemu), against a
 * double-precision sum over the weights' exact floats:
 *  - random data: within 1e-5 of sum |w x| (float sums in blocks of 256,
 *    not the reference's order);
 *  - small integers (every product and partial sum exact in float): bit for
 *    bit;
 *  - BF16 at AVX-512 with AVX512-BF16 (vdpbf16ps): against the sum over the
 *    activations rounded to bf16, and once more with the feature disabled
 *    (the fp32 GEMM);
 *  - shapes: M = 1 .. 17, 33 (the vec_dot below 4 rows, edge strips of the
 *    6- and 14-row micro-kernels), N = 1, 31, 33, 70 (edge panels of 16 and
 *    32), K = 1, 7, 255, 256, 300, 600 (K blocks of 256 and their tails);
 *    one and two threads. */
#include "core/fp16.h"
#include "test_matmul_util.h"
#include "test_util.h"

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX,
                                 LB_ISA_NEON,   LB_ISA_DOTPROD, LB_ISA_I8MM};

/* K x N weights of type t (rows of K), their floats in w */
static uint8_t *make_weights(int t, int64_t K, int64_t N, uint64_t *seed, int exact, float *w) {
    const size_t rs = lb_row_size(t, K);
    uint8_t *p = malloc(rs * (size_t)N);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            const float v = exact ? (float)((int)(lb_test_rand(seed) % 15) - 7) : lb_test_randf(seed);
            float *f32 = (float *)(p + (size_t)n * rs);
            uint16_t *h = (uint16_t *)(p + (size_t)n * rs);
            if (t == LB_TYPE_F32) f32[k] = v, w[n * K + k] = v;
            else if (t == LB_TYPE_F16) h[k] = lb_f32_to_fp16(v), w[n * K + k] = lb_fp16_to_f32(h[k]);
            else h[k] = lb_f32_to_bf16(v), w[n * K + k] = lb_bf16_to_f32(h[k]);
        }
    return p;
}

static void run(int t, int64_t K, int64_t N, int exact, uint64_t *seed) {
    enum { MMAX = 33 };
    float *w = malloc(sizeof(float) * (size_t)(K * N)), *x = malloc(sizeof(float) * (size_t)(K * MMAX));
    uint8_t *p = make_weights(t, K, N, seed, exact, w);
    for (int64_t i = 0; i < K * MMAX; i++)
        x[i] = exact ? (float)((int)(lb_test_rand(seed) % 9) - 4) : lb_test_randf(seed);
    /* want[0]: over the activations as given; want[1]: rounded to bf16 (the
     * AVX512-BF16 GEMM's operands) */
    double *want[2], *mag[2];
    for (int b = 0; b < 2; b++) {
        want[b] = malloc(sizeof(double) * (size_t)(N * MMAX)), mag[b] = malloc(sizeof(double) * (size_t)(N * MMAX));
        for (int m = 0; m < MMAX; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0, a = 0;
                for (int64_t k = 0; k < K; k++) {
                    const float xv = b ? lb_bf16_to_f32(lb_f32_to_bf16(x[m * K + k])) : x[m * K + k];
                    s += (double)w[n * K + k] * xv;
                    a += fabs((double)w[n * K + k] * xv);
                }
                want[b][m * N + n] = s, mag[b][m * N + n] = a;
            }
    }
    for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        /* with the CPU's extra features, and without AVX512-BF16 (the fp32 GEMM for BF16 at AVX-512) */
        lb_cpu_disable_features(0);
        const unsigned has = lb_cpu_extra_features() & LB_CPU_AVX512BF16;
        for (int off = 0; off < 2; off++) {
            if (off && !has) continue;
            lb_cpu_disable_features(off ? LB_CPU_AVX512BF16 : 0);
            const lb_kernel *kern = lb_kernel_get(t);
            for (int M = 1; M <= MMAX; M++) {
                if (M > 17 && M != MMAX) continue;
                const int b16 = (kern->cpu_needs & LB_CPU_AVX512BF16) && M >= 4;
                for (int nth = 1; nth <= 2; nth++) {
                    if (nth == 2 && M % 4 != 1) continue;
                    float *y = lb_test_matmul(t, p, K, N, x, M, nth);
                    int bad = 0;
                    for (int64_t i = 0; i < N * M; i++) {
                        const double tol = exact ? 0.0 : 1e-5 * mag[b16][i] + 1e-30;
                        if (!(fabs((double)y[i] - want[b16][i]) <= tol)) bad++;
                    }
                    CHECK_MSG(!bad, "%s (%s) at %s, %s: K=%lld N=%lld M=%d threads=%d: %d of %lld outputs off",
                              lb_type_name(t), kern->name, lb_isa_name(kLevels[li]), exact ? "exact" : "random",
                              (long long)K, (long long)N, M, nth, bad, (long long)(N * M));
                    free(y);
                }
            }
        }
        lb_cpu_disable_features(0);
    }
    lb_cpu_force_level(lb_cpu_detected());
    free(w);
    free(x);
    free(p);
    for (int b = 0; b < 2; b++) free(want[b]), free(mag[b]);
}

int main(void) {
    static const int types[] = {LB_TYPE_F32, LB_TYPE_F16, LB_TYPE_BF16};
    static const int64_t Ks[] = {1, 7, 255, 256, 300, 600}, Ns[] = {1, 31, 33, 70};
    uint64_t seed = 42;
    for (int ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
                if (Ks[ki] * Ns[ni] > 600 * 33 && ni != 3) continue; /* time: the large K with N = 70 only */
                run(types[ti], Ks[ki], Ns[ni], 0, &seed);
                run(types[ti], Ks[ki], Ns[ni], 1, &seed);
            }
    /* the kernel names: the GEMM entries where the level has them */
    const lb_kernel *k = lb_kernel_get(LB_TYPE_F16);
    CHECK(k != NULL);
    if (lb_cpu_level() != LB_ISA_SCALAR) CHECK(k->gemm != NULL && k->whole_m == 2); /* x86 AVX2 and up, Arm */
    return lb_test_result("test_fgemm");
}
