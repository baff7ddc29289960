/* The ABQ dot's two AVX2 ways and the AVX-512 VPOPCNTDQ one (where the CPU
 * has it; kernels/x86/abq_x86.h) against the int8
 * kernels of Q8_0 and Q4_0, one thread, weights hot in L2 (a 64 x 4096
 * matrix, 128-1072 KiB), activations quantized once: the kernels' compute
 * rate alone. Printed per (q, p): weights per ns of the popcount way, of the
 * int8 way, which one vec_dot takes, and the faster way's rate relative to
 * Q8_0's and Q4_0's measured beside it. Timings on a shared machine vary;
 * read the ratios within one run.
 *
 * usage: abq [-s SECONDS per measurement, default 0.05] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/abq.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "kernels/x86/abq_x86.h"

#include "bench_util.h"

enum { N = 64, K = 4096 };

#if LB_HAVE_X86_KERNELS
/* best of repeated passes over the N rows: weights per ns */
static double rate(int way, const lb_kernel *k, int type, const uint8_t *W, const void *A, double budget) {
    const size_t row = lb_row_size(type, K);
    double best = 1e30;
    volatile float sink = 0;
    const double start = now();
    do {
        const double t0 = now();
        for (int n = 0; n < N; n++) {
            float s;
            if (k) k->vec_dot(K, &s, W + n * row, A);
            else if (way == 2) s = lb_abq_dot_avx512(type, 0, K, W + n * row, A);
            else s = lb_abq_dot_avx2(type, way, K, W + n * row, A);
            sink += s;
        }
        const double dt = now() - t0;
        if (dt < best) best = dt;
    } while (now() - start < budget);
    (void)sink;
    return (double)N * K / best / 1e9;
}

#endif

int main(int argc, char **argv) {
    double budget = 0.05;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-s") && i + 1 < argc) budget = atof(argv[++i]);
#if LB_HAVE_X86_KERNELS
    if (lb_cpu_level() < LB_ISA_AVX2 || !lb_isa_is_x86(lb_cpu_level())) {
        printf("abq: no AVX2 here\n");
        return 0;
    }
    float *w = malloc(sizeof(float) * N * K), *x = malloc(sizeof(float) * K);
    for (int i = 0; i < N * K; i++) w[i] = (float)((int)(next_rand() % 2001) - 1000) / 1000.0f;
    for (int i = 0; i < K; i++) x[i] = (float)((int)(next_rand() % 2001) - 1000) / 1000.0f;
    uint8_t *W = malloc(2 * (size_t)N * K), *A = malloc(lb_row_size(LB_TYPE_ABQ_ACT, K));
    uint8_t *Aq = malloc(lb_row_size(LB_TYPE_Q8_0, K));
    double ref[2];
    const int refs[2] = {LB_TYPE_Q8_0, LB_TYPE_Q4_0};
    for (int r = 0; r < 2; r++) {
        const lb_kernel *k = lb_kernel_get(refs[r]);
        lb_traits(refs[r])->from_float(w, W, (int64_t)N * K);
        k->quantize_act(x, Aq, K);
        ref[r] = rate(0, k, refs[r], W, Aq, budget);
    }
    printf("cpu level %s; Q8_0 %.2f, Q4_0 %.2f weights/ns (%s, %s)\n\n", lb_isa_name(lb_cpu_level()), ref[0], ref[1],
           lb_kernel_get(LB_TYPE_Q8_0)->name, lb_kernel_get(LB_TYPE_Q4_0)->name);
    const int has512 = lb_cpu_level() >= LB_ISA_AVX512 && (lb_cpu_extra_features() & LB_CPU_VPOPCNTDQ);
    printf("| type | p | popcount w/ns | int8 w/ns | AVX-512 popcount w/ns | vec_dot takes | best / Q8_0 | best / Q4_0 |\n"
           "|---|---|---|---|---|---|---|---|\n");
    const int types[] = {LB_TYPE_ABQ_W2, LB_TYPE_ABQ_W2S, LB_TYPE_ABQ_W3, LB_TYPE_ABQ_W4, LB_TYPE_ABQ_W6, LB_TYPE_ABQ_W8};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int t = types[ti];
        lb_traits(t)->from_float(w, W, (int64_t)N * K);
        for (int p = 2; p <= 8; p += 2) {
            lb_abq_quantize_act(x, A, K, p);
            const double r0 = rate(0, NULL, t, W, A, budget), r1 = rate(1, NULL, t, W, A, budget);
            const double r2 = has512 ? rate(2, NULL, t, W, A, budget) : 0.0;
            const double best = r0 > r1 ? (r0 > r2 ? r0 : r2) : (r1 > r2 ? r1 : r2);
            const char *takes = has512                                    ? "AVX-512 popcount"
                                : lb_abq_avx2_int8_wins(lb_abq_bits(t), p) ? "int8"
                                                                           : "popcount";
            printf("| %s | %d | %.2f | %.2f | %.2f | %s | %.2f | %.2f |\n", lb_type_name(t), p, r0, r1, r2, takes,
                   best / ref[0], best / ref[1]);
        }
    }
    free(w), free(x), free(W), free(A), free(Aq);
#else
    (void)budget;
    printf("abq: an x86 build only\n");
#endif
    return 0;
}
