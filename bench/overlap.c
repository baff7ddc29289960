/* How much of the memory read bandwidth a decode kernel can use, as a
 * function of its compute per byte.
 *
 * A GEMV in decode reads every weight once and does some vector work per
 * byte. If memory and computation overlapped perfectly it would run at the
 * read bandwidth whenever its compute alone is faster than memory; on the
 * machines we measure they overlap only partly, so the real ceiling of a
 * kernel depends on how much work it does per byte.
 *
 * This program measures that ceiling with a synthetic kernel: super-blocks
 * of 1344 bytes (a Q2_K_16X4 super-block) read from S interleaved streams,
 * as the 2-bit GEMVs interleave GEMV_NG 16-row groups, prefetched 3072 bytes
 * ahead as they are, with W int8 dot instructions (vpdpbusd, 8 independent
 * chains) per 64-byte line:
 *   L1    the loop over 24 KiB that stay in L1: the compute alone, 1 thread;
 *   L2    the same over 512 KiB (in L2): what a "hot" kernel benchmark sees;
 *   cold  the loop over a buffer far larger than the caches, each thread a
 *         slice, as a fraction of the read bandwidth of the same buffer
 *         measured in the same process (lb_read_bandwidth_of: the roofline
 *         `lowbit bench` reports).
 * To place a real kernel, compare its hot GB/s (bench/kernels --hot, a shape
 * that fits L2) with the L2 column: its cold GB/s (bench/kernels, no --hot)
 * should come near the cold figure of the row with the same L2 speed.
 *
 * usage: overlap [-t THREADS] [--mb MIB]     (x86-64 with AVX-512 VNNI) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/cpu.h"
#include "kernels/membw.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <omp.h>

enum { SB = 1344, PF = 3072, MAX_S = 4 };

#define OVERLAP_KERNEL(W)                                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) static int32_t stream_w##W(              \
        const uint8_t *p, size_t n, int S) {                                                                   \
        __m512i acc[8];                                                                                        \
        for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_si512();                                           \
        const __m512i y = _mm512_set1_epi32(0x01020304);                                                       \
        const size_t per = n / (size_t)S / SB * SB;                                                            \
        for (size_t off = 0; off < per; off += SB)                                                             \
            for (int s = 0; s < S; s++) {                                                                      \
                const uint8_t *b = p + (size_t)s * per + off;                                                  \
                for (int o = 0; o < SB; o += 64) _mm_prefetch((const char *)b + PF + o, _MM_HINT_T0);          \
                for (int v = 0; v < SB / 64; v++) {                                                            \
                    const __m512i q = _mm512_loadu_si512(b + 64 * v);                                          \
                    if ((W) == 0) acc[v & 7] = _mm512_xor_si512(acc[v & 7], q);                                \
                    _Pragma("GCC unroll 16") for (int w = 0; w < (W); w++) acc[w & 7] =                        \
                        _mm512_dpbusd_epi32(acc[w & 7], q, y);                                                 \
                }                                                                                              \
            }                                                                                                  \
        __m512i t = acc[0];                                                                                    \
        for (int i = 1; i < 8; i++) t = _mm512_add_epi32(t, acc[i]);                                           \
        return _mm512_reduce_add_epi32(t);                                                                     \
    }
OVERLAP_KERNEL(0)
OVERLAP_KERNEL(2)
OVERLAP_KERNEL(4)
OVERLAP_KERNEL(6)
OVERLAP_KERNEL(8)
OVERLAP_KERNEL(12)
OVERLAP_KERNEL(16)

typedef int32_t (*stream_fn)(const uint8_t *, size_t, int);
static const struct {
    int w;
    stream_fn f;
} kKernels[] = {{0, stream_w0}, {2, stream_w2}, {4, stream_w4}, {6, stream_w6}, {8, stream_w8}, {12, stream_w12}, {16, stream_w16}};

static volatile int32_t sink;

/* GB/s of fn over [buf, buf + n) split in nth slices, best of reps */
static double cold_gbs(stream_fn fn, const uint8_t *buf, size_t n, int nth, int S, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        int32_t acc = 0;
        const double t0 = lb_time_s();
#pragma omp parallel num_threads(nth) reduction(+ : acc)
        {
            const size_t per = n / (size_t)omp_get_num_threads() / 4096 * 4096;
            acc += fn(buf + per * (size_t)omp_get_thread_num(), per - PF - SB, S);
        }
        const double dt = lb_time_s() - t0;
        sink = acc;
        if (dt < best) best = dt;
    }
    return (double)n / best / 1e9;
}

/* GB/s of fn over the first n bytes again and again (from cache), 1 thread */
static double hot_gbs(stream_fn fn, const uint8_t *buf, size_t n) {
    const int iters = (int)((64u << 20) / n);
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        int32_t acc = 0;
        const double t0 = lb_time_s();
        for (int it = 0; it < iters; it++) acc += fn(buf, n, 2);
        const double dt = lb_time_s() - t0;
        sink = acc;
        if (dt < best) best = dt;
    }
    return (double)iters * (double)n / best / 1e9;
}

int main(int argc, char **argv) {
    int nth = 2;
    long mib = 1024;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mb") && i + 1 < argc) mib = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: overlap [-t THREADS] [--mb MIB]\n");
            return !(!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"));
        }
    }
    if (nth < 1 || nth > 1024 || mib < 64 || mib > (1L << 20)) {
        fprintf(stderr, "overlap: -t must be 1..1024 and --mb 64..1048576\n");
        return 2;
    }
    if (lb_cpu_detected() < LB_ISA_AVX512) {
        printf("overlap: needs AVX-512 VNNI, which this CPU lacks; nothing measured\n");
        return 0;
    }
    const size_t n = (size_t)mib << 20;
    uint8_t *buf = lb_malloc_aligned(n);
    if (!buf) {
        fprintf(stderr, "overlap: cannot allocate %ld MiB\n", mib);
        return 1;
    }
    memset(buf, 1, n);
    const double read = lb_read_bandwidth_of(buf, n, nth, 6, NULL);
    printf("read bandwidth: %.1f GB/s on %d thread(s), %ld MiB buffer\n\n", read, nth, mib);
    printf("| vpdpbusd per 64 B | L1 GB/s (1 thread) | L2 GB/s (1 thread) | cold GB/s, 1 stream | 2 streams | 4 streams | best / read |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < sizeof kKernels / sizeof kKernels[0]; k++) {
        const double l1 = hot_gbs(kKernels[k].f, buf, 24 * 1024), l2 = hot_gbs(kKernels[k].f, buf, 512 * 1024);
        double cold[3], best = 0;
        for (int si = 0; si < 3; si++) {
            cold[si] = cold_gbs(kKernels[k].f, buf, n, nth, 1 << si, 3);
            if (cold[si] > best) best = cold[si];
        }
        printf("| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f %% |\n", kKernels[k].w, l1, l2, cold[0], cold[1], cold[2],
               100.0 * best / read);
        fflush(stdout);
    }
    lb_free_aligned(buf);
    return 0;
}
#else
int main(void) {
    printf("overlap: x86-64 only (AVX-512 VNNI); nothing measured\n");
    return 0;
}
#endif
