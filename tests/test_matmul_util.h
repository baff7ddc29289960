/* lb_matmul on one matrix for the kernel tests: Y (N x M outputs) starts as
 * NaN so an output the kernels skip shows, with scratch of the size the
 * driver asks for. The caller frees the result. */
#ifndef LB_TEST_MATMUL_UTIL_H
#define LB_TEST_MATMUL_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/fp16.h"
#include "formats/q8_256.h"
#include "formats/repack.h"
#include "formats/types.h"
#include "kernels/dispatch.h"

/* Whether this machine runs kernels of level l (0 .. LB_ISA_COUNT - 1):
 * scalar always, the x86 or the Arm family up to the detected level. With
 * LB_TEST_LEVELS=top only the detected level: scripts/test-arm.sh on its
 * fallback CPUs, which check that each level's kernels run on a CPU without
 * the levels above (every level was held to the reference on -cpu max). */
static inline int lb_test_level_available(int l) {
    const char *only = getenv("LB_TEST_LEVELS");
    if (only && !strcmp(only, "top") && (lb_isa)l != lb_cpu_detected()) return 0;
    return lb_cpu_runs((lb_isa)l);
}

/* The same with the matrix's act_bits (ABQ: the activations' bits). */
static inline float *lb_test_matmul_bits(int type, const uint8_t *packed, int64_t K, int64_t N, const float *x, int M,
                                         int nth, int act_bits) {
    lb_matrix W = {type, K, N, lb_row_size(type, K), packed, act_bits};
    float *y = malloc(sizeof(float) * N * M);
    for (int64_t i = 0; i < N * M; i++) y[i] = NAN;
    void *scratch = lb_malloc_aligned(lb_matmul_scratch_size(&W, M) + 64);
    lb_matmul(&W, x, M, y, (size_t)N, scratch, nth);
    lb_free_aligned(scratch);
    return y;
}

static inline float *lb_test_matmul(int type, const uint8_t *packed, int64_t K, int64_t N, const float *x, int M,
                                    int nth) {
    return lb_test_matmul_bits(type, packed, K, N, x, M, nth, 0);
}

/* The AMX-BF16 GEMM's reference (kernels/x86/amx_bf16_impl.h): want[m][n]
 * as a double sum over the bf16 roundings of the dequantized weights of base
 * (lb_f32_to_bf16) and of the activations (lb_pack_bf16x16_ref), and mag the
 * sum of |w a|, for the rows in whole groups of 16 (the others stay unset). */
static inline void lb_test_reference_bf16(int base, const uint8_t *plain, const float *x, int64_t K, int64_t N, int M,
                                          double *want, double *mag) {
    const size_t rs = lb_row_size(base, K);
    float *w = malloc(sizeof(float) * K), *a = malloc(sizeof(float) * K * 16);
    lb_block_bf16x16 *p = malloc(sizeof(lb_block_bf16x16) * (size_t)(K / 32));
    for (int m0 = 0; m0 + 16 <= M; m0 += 16) {
        lb_pack_bf16x16_ref(x + (size_t)m0 * K, (size_t)K, p, K);
        for (int r = 0; r < 16; r++)
            for (int64_t i = 0; i < K; i++) a[r * K + i] = lb_bf16_to_f32(p[i / 32].v[r][i % 32]);
        for (int64_t n = 0; n < N; n++) {
            lb_traits(base)->to_float(plain + n * rs, w, K);
            for (int64_t i = 0; i < K; i++) w[i] = lb_bf16_to_f32(lb_f32_to_bf16(w[i]));
            for (int r = 0; r < 16; r++) {
                double s = 0, t = 0;
                for (int64_t i = 0; i < K; i++) {
                    s += (double)w[i] * a[r * K + i];
                    t += fabs((double)w[i] * a[r * K + i]);
                }
                want[(m0 + r) * N + n] = s;
                mag[(m0 + r) * N + n] = t;
            }
        }
    }
    free(w);
    free(a);
    free(p);
}

/* The AMX int8 256-chunk GEMM's reference (formats/q8_256.h): want[m][n] as
 * a double sum over chunks of sa * sw * (the integer dot of the codes of
 * lb_quantize_q8_256x16_ref and lb_requant_q8_256_ref), mag the same over
 * |products|, for the rows in whole groups of 16. */
static inline void lb_test_reference_q8_256(int base, const uint8_t *plain, const float *x, int64_t K, int64_t N,
                                            int M, double *want, double *mag) {
    const size_t rs = lb_row_size(base, K), gs = (size_t)(K / 32) * LB_Q8_256X16_BLOCK;
    const int64_t nc = (K + 255) / 256;
    int8_t *wq = malloc((size_t)K);
    float *ws = malloc(sizeof(float) * (size_t)nc);
    uint8_t *g = malloc(gs);
    for (int m0 = 0; m0 + 16 <= M; m0 += 16) {
        lb_quantize_q8_256x16_ref(x + (size_t)m0 * K, (size_t)K, g, K);
        const float *sa = (const float *)(g + lb_q8_256x16_scales_at(K));
        for (int64_t n = 0; n < N; n++) {
            lb_requant_q8_256_ref(base, plain + n * rs, K, wq, ws);
            for (int r = 0; r < 16; r++) {
                double s = 0, t = 0;
                for (int64_t c = 0; c < nc; c++) {
                    int64_t dot = 0, adot = 0;
                    for (int64_t i = 256 * c; i < K && i < 256 * c + 256; i++) {
                        const int a = ((const int8_t *)g)[(i / 64) * 1024 + r * 64 + i % 64];
                        dot += (int64_t)a * wq[i];
                        adot += llabs((int64_t)a * wq[i]);
                    }
                    const double sc = (double)sa[c * 16 + r] * ws[c];
                    s += sc * (double)dot;
                    t += fabs(sc) * (double)adot;
                }
                want[(m0 + r) * N + n] = s;
                mag[(m0 + r) * N + n] = t;
            }
        }
    }
    free(wq);
    free(ws);
    free(g);
}

/* Whether lb_matmul of an interleaved type at the current level computes
 * output (m, n) of an N x M product in an AMX GEMM with rounded operands,
 * the AMX-BF16 GEMM or the int8 256-chunk one (lb_test_from_q8_256): rows in
 * whole groups of 16, weight rows in whole interleaved groups (the tails go
 * to the GEMV and the plain kernel, with Q8_0 / Q8_K activations). */
static inline int lb_test_from_bf16(int type, int64_t N, int M, int m, int64_t n) {
    const lb_kernel *k = lb_kernel_get(type);
    const int R = lb_type_rows(type);
    return (k->act_x4_block == sizeof(lb_block_bf16x16) || k->act_x4_block == LB_Q8_256X16_BLOCK) &&
           m < M - M % 16 && n < N - N % R;
}

/* Whether the kernel in force for type is the int8 256-chunk GEMM (its
 * outputs then go against lb_test_reference_q8_256, not the bf16 one). */
static inline int lb_test_from_q8_256(int type) {
    return lb_kernel_get(type)->act_x4_block == LB_Q8_256X16_BLOCK;
}

/* y (M rows of N, from lb_matmul of `type` at the current level) against
 * the references, outputs [n0, N) of each row: those the AMX-BF16 GEMM
 * computes (lb_test_from_bf16, when want16 is given) against want16 within
 * tol * mag16, the others against want within tol * mag (exact: equal).
 * Returns how many are off and prints the first, labelled `what`; *worst
 * (may be NULL) is raised to the largest error / bound of those within
 * their bound. */
static inline int lb_test_compare_bf16(const float *y, const double *want, const double *mag, const double *want16,
                                       const double *mag16, int type, int64_t N, int64_t n0, int M, double tol,
                                       int exact, double *worst, const char *what) {
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int64_t n = n0; n < N; n++) {
            const size_t o = (size_t)m * (size_t)N + (size_t)n;
            const int b16 = want16 && lb_test_from_bf16(type, N, M, m, n);
            const double w = (b16 ? want16 : want)[o], e = fabs((double)y[o] - w);
            const double bound = exact ? 0.0 : tol * (b16 ? mag16 : mag)[o] + 1e-30;
            if (!(e <= bound)) {
                if (!bad)
                    fprintf(stderr, "  %s: first off at m=%d n=%lld: y=%.9g want=%.9g%s\n", what, m, (long long)n,
                            y[o], w, b16 ? " (bf16)" : "");
                bad++;
            } else if (worst && bound > 0 && e / bound > *worst) {
                *worst = e / bound;
            }
        }
    return bad;
}

#endif
