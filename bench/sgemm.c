/* fp32 GEMM benchmark (kernels/sgemm.h): GFLOPS of lb_sgemm (NN, NT, TN)
 * and lb_ssyrk_upper_tn at the quantizers' shapes, at 1 thread and at all
 * cores, for the kernel level in force (LOWBIT_ISA lowers it):
 *   syrk  n = 8960, K = 512       Hessian accumulation H += X^T X (512 rows)
 *   gemm  1536 x 1536, K = 512    a mid-size product, three transposes
 *   gemm  8960 x 8960, K = 128    GPTQ's lazy rank-128 update (alpha -1, beta 1)
 *   gemm  256 x 256, K = 256      next to a naive triple loop, same run
 * The syrk counts its useful flops, n (n + 1) K: the upper triangle.
 * Printed above the table: the CPU, a theoretical fp32 peak estimated as
 * cores x FMA lanes per cycle x 2 x GHz (GHz from /proc/cpuinfo, nominal,
 * not the boost clock), and the measured peak of independent FMAs from
 * registers at the same level, as the yardstick the GEMM rates compare to.
 * Each figure is the best of repeated runs of at least 0.3 s together.
 * --cpu: one thread only, timed as the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other jobs, wall time
 * says little, CPU time more (cache and memory sharing still show).
 * usage: sgemm [-q] [--cpu]   (-q: skip the 8960-wide shapes) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/common.h"
#include "kernels/sgemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static float *random_floats(size_t n) {
    float *x = malloc(n * sizeof(float));
    if (!x) {
        fprintf(stderr, "out of memory (%zu floats)\n", n);
        exit(1);
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)((s >> 40) * (1.0 / 8388608.0)) - 1.0f;
    }
    return x;
}

#include "bench_util.h"

/* ---- the machine ---- */

/* "model name" (x86) or "CPU part" (Arm) and "cpu MHz" from /proc/cpuinfo */
static void cpu_info(char *name, size_t n, double *ghz) {
    snprintf(name, n, "unknown CPU");
    *ghz = 0.0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    int have_name = 0;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        if (!have_name && (!strncmp(line, "model name", 10) || !strncmp(line, "CPU part", 8))) {
            snprintf(name, n, "%s", colon + 2);
            name[strcspn(name, "\n")] = 0;
            have_name = 1;
        } else if (*ghz == 0.0 && !strncmp(line, "cpu MHz", 7)) {
            *ghz = atof(colon + 1) / 1000.0;
        }
    }
    fclose(f);
}

/* fp32 FMA lanes a core retires per cycle at a level: two FMA pipes of the
 * vector width. Zen 4 runs a 512-bit FMA on both of its 256-bit pipes, so
 * AVX-512 gives 16 there as AVX2 does (Intel server cores with two 512-bit
 * units: 32); NEON: two or four 128-bit pipes, 8 assumed. */
static int fma_lanes(lb_isa level) {
    if (level == LB_ISA_AVX2) return 16;
    if (level == LB_ISA_AVX512 || level == LB_ISA_AMX) return 16;
    if (lb_isa_is_arm(level)) return 8;
    return 2;
}

#if defined(__x86_64__)
/* 24 independent FMA chains from registers: the vector unit's own rate */
__attribute__((target("avx512f"))) static double fma_loop_avx512(long iters) {
    __m512 acc[24];
    for (int i = 0; i < 24; i++) acc[i] = _mm512_set1_ps((float)i);
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (long n = 0; n < iters; n++)
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    float s = 0.0f, out[16];
    for (int i = 0; i < 24; i++) {
        _mm512_storeu_ps(out, acc[i]);
        s += out[0];
    }
    return (double)s;
}
__attribute__((target("avx2,fma"))) static double fma_loop_avx2(long iters) {
    __m256 acc[12];
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)i);
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (long n = 0; n < iters; n++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    float s = 0.0f, out[8];
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(out, acc[i]);
        s += out[0];
    }
    return (double)s;
}
#endif

/* Measured fp32 GFLOPS of register-only FMAs on nth threads (0: no SIMD loop here). */
static double measured_peak(lb_isa level, int nth) {
#if defined(__x86_64__)
    if (level != LB_ISA_AVX2 && level != LB_ISA_AVX512 && level != LB_ISA_AMX) return 0.0;
    const int wide = level != LB_ISA_AVX2;
    const long iters = 20000000;
    const double flops_per_iter = wide ? 24.0 * 16 * 2 : 12.0 * 8 * 2;
    double best = 0.0, sink = 0.0;
    for (int rep = 0; rep < 3; rep++) {
        const double t0 = now();
#pragma omp parallel num_threads(nth) reduction(+ : sink)
        sink += wide ? fma_loop_avx512(iters) : fma_loop_avx2(iters);
        const double g = flops_per_iter * (double)iters * nth / (now() - t0) * 1e-9;
        if (g > best) best = g;
    }
    if (sink == 12345.0) printf(" "); /* keeps the loops */
    return best;
#else
    (void)level;
    (void)nth;
    return 0.0;
#endif
}

/* ---- timing ---- */

typedef struct {
    const char *name;
    int syrk, ta, tb;
    int64_t M, N, K;
    float alpha, beta;
} bench_case;

static void run_once(const bench_case *b, const float *A, const float *B, float *C, int nth) {
    if (b->syrk) {
        lb_ssyrk_upper_tn(b->N, b->K, b->alpha, A, (size_t)b->N, b->beta, C, (size_t)b->N, nth);
    } else {
        lb_sgemm(b->ta, b->tb, b->M, b->N, b->K, b->alpha, A, (size_t)(b->ta ? b->M : b->K), B,
                 (size_t)(b->tb ? b->K : b->N), b->beta, C, (size_t)b->N, nth);
    }
}

static double flops(const bench_case *b) {
    return b->syrk ? (double)b->N * (double)(b->N + 1) * (double)b->K : 2.0 * (double)b->M * b->N * b->K;
}

/* best GFLOPS over runs totalling >= 0.3 s (at least 2, after one warm-up) */
static double time_case(const bench_case *b, const float *A, const float *B, float *C, int nth) {
    run_once(b, A, B, C, nth);
    double best = 1e30, total = 0.0;
    for (int rep = 0; rep < 2 || total < 0.3; rep++) {
        const double t0 = now();
        run_once(b, A, B, C, nth);
        const double dt = now() - t0;
        total += dt;
        if (dt < best) best = dt;
    }
    return flops(b) / best * 1e-9;
}

/* C = A B, i-j-k dot products: what a plain loop gets */
static void naive_gemm(int64_t M, int64_t N, int64_t K, const float *A, const float *B, float *C) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float s = 0.0f;
            for (int64_t k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
            C[i * N + j] = s;
        }
}

static double time_naive(int64_t n) {
    float *A = random_floats((size_t)(n * n)), *B = random_floats((size_t)(n * n)), *C = random_floats((size_t)(n * n));
    double best = 1e30, total = 0.0;
    for (int rep = 0; rep < 2 || total < 0.3; rep++) {
        const double t0 = now();
        naive_gemm(n, n, n, A, B, C);
        const double dt = now() - t0;
        total += dt;
        if (dt < best) best = dt;
    }
    free(A);
    free(B);
    free(C);
    return 2.0 * (double)n * n * n / best * 1e-9;
}

int main(int argc, char **argv) {
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--cpu")) {
            use_cpu_time = 1;
        } else {
            fprintf(stderr, "usage: %s [-q] [--cpu]\n", argv[0]);
            return 2;
        }
    }
    const lb_isa level = lb_cpu_level();
    const int cores = omp_get_num_procs();
    const int nt_max = use_cpu_time ? 1 : cores; /* thread CPU time measures one thread */
    char name[256];
    double ghz;
    cpu_info(name, sizeof name, &ghz);
    const int lanes = fma_lanes(level);
    printf("CPU: %s, %d cores, %.2f GHz (/proc/cpuinfo)\n", name, cores, ghz);
    printf("level %s, kernel %s\n", lb_isa_name(level), lb_sgemm_kernel_at(level)->name);
    if (ghz > 0.0)
        printf("theoretical fp32 peak (estimate): %d cores x %d FMA lanes/cycle x 2 x %.2f GHz = %.0f GFLOPS "
               "(%.0f per core)\n", cores, lanes, ghz, cores * lanes * 2.0 * ghz, lanes * 2.0 * ghz);
    const double p1 = measured_peak(level, 1), pn = nt_max > 1 ? measured_peak(level, nt_max) : 0.0;
    if (p1 > 0.0) printf("measured register-only FMA peak: %.0f GFLOPS at 1 thread", p1);
    if (pn > 0.0) printf(", %.0f at %d", pn, nt_max);
    if (p1 > 0.0) printf("%s\n", use_cpu_time ? " (CPU time)" : "");

    const bench_case cases[] = {
        {"syrk  n=8960 K=512 (H += X^T X)", 1, 1, 0, 8960, 8960, 512, 1.0f, 1.0f},
        {"gemm NN 1536x1536 K=512", 0, 0, 0, 1536, 1536, 512, 1.0f, 0.0f},
        {"gemm NT 1536x1536 K=512", 0, 0, 1, 1536, 1536, 512, 1.0f, 0.0f},
        {"gemm TN 1536x1536 K=512", 0, 1, 0, 1536, 1536, 512, 1.0f, 0.0f},
        {"gemm NN 8960x8960 K=128 (rank-128 update)", 0, 0, 0, 8960, 8960, 128, -1.0f, 1.0f},
        {"gemm NN 256x256 K=256", 0, 0, 0, 256, 256, 256, 1.0f, 0.0f},
    };
    const int threads[2] = {1, nt_max};
    printf("%-44s %12s %12s\n", "shape", "1 thread", nt_max > 1 ? "all cores" : "");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bench_case *b = &cases[i];
        if (quick && b->N > 2048) continue;
        const size_t rows = (size_t)(b->syrk ? b->N : b->M);
        float *A = random_floats(rows * (size_t)b->K), *B = random_floats((size_t)b->K * (size_t)b->N);
        float *C = random_floats(rows * (size_t)b->N);
        printf("%-44s", b->name);
        for (int t = 0; t < (nt_max > 1 ? 2 : 1); t++) {
            printf(" %7.1f GF/s", time_case(b, A, B, C, threads[t]));
            fflush(stdout);
        }
        printf("\n");
        free(A);
        free(B);
        free(C);
    }
    printf("%-44s %7.1f GF/s   (naive triple loop, 1 thread)\n", "naive    256x256 K=256", time_naive(256));
    return 0;
}
