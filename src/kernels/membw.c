/* Memory read bandwidth (kernels/membw.h): 512 bytes per iteration in four
 * independent xor chains, so the loads, not a dependency, set the pace. */
#include "kernels/membw.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include "kernels/x86/prefetch_x86.h"
/* pf bytes ahead into L1 (prefetcht0), or with l2 into L2 (prefetcht1: on
 * AMD Zen 4 the faster of the two, kernels/cpu.h) */
__attribute__((target("avx2"))) static uint64_t read_slice(const uint8_t *p, size_t n, size_t pf, int l2) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 512 <= n; i += 512) {
        const __m256i *v = (const __m256i *)(p + i);
        if (pf) lb_prefetch_span(p + i + pf, 512, l2);
        for (int k = 0; k < 16; k += 4) {
            a0 = _mm256_xor_si256(a0, _mm256_load_si256(v + k));
            a1 = _mm256_xor_si256(a1, _mm256_load_si256(v + k + 1));
            a2 = _mm256_xor_si256(a2, _mm256_load_si256(v + k + 2));
            a3 = _mm256_xor_si256(a3, _mm256_load_si256(v + k + 3));
        }
    }
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    return (uint64_t)_mm256_extract_epi64(x, 0) ^ (uint64_t)_mm256_extract_epi64(x, 3);
}
#else
/* portable: 8 independent 64-bit xor chains (the compiler vectorizes them) */
static uint64_t read_slice(const uint8_t *p, size_t n, size_t pf, int l2) {
    (void)l2;
    uint64_t a[8] = {0};
    for (size_t i = 0; i + 512 <= n; i += 512) {
        if (pf) __builtin_prefetch(p + i + pf);
        for (int k = 0; k < 64; k++) a[k & 7] ^= ((const uint64_t *)(p + i))[k];
    }
    return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}
#endif

static volatile uint64_t lb_membw_sink;

double lb_read_bandwidth_of(const uint8_t *buf, size_t n, int nth, int reps, double (*clock)(void)) {
    if (!clock) clock = lb_time_s;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        /* none; 1 or 2 KiB ahead into L1; 2 or 4 KiB ahead into L2 */
        static const size_t pfs[5] = {0, 1024, 2048, 2048, 4096};
        const size_t pf = pfs[r % 5];
        const int l2 = r % 5 >= 3;
        uint64_t acc = 0;
        const double t0 = clock();
#pragma omp parallel num_threads(nth) reduction(^ : acc)
        {
            const int ith = omp_get_thread_num(), nt = omp_get_num_threads();
            const size_t per = n / (size_t)nt / 512 * 512;
            acc ^= read_slice(buf + per * (size_t)ith, per, pf, l2);
        }
        const double dt = clock() - t0;
        lb_membw_sink = acc;
        if (dt < best) best = dt;
    }
    return (double)n / best / 1e9;
}

double lb_read_bandwidth_beside(const uint8_t *buf, int n_threads, double (*clock)(void)) {
    return buf ? lb_read_bandwidth_of(buf, LB_BW_BESIDE_BYTES, n_threads < 1 ? 1 : n_threads, 5, clock) : 0.0;
}

double lb_read_bandwidth(size_t bytes, int n_threads, int reps) {
    uint8_t *buf = lb_malloc_huge(bytes);
    if (!buf) return 0.0;
    /* on huge pages, as the weights are (lb_malloc_huge) */
    memset(buf, 1, bytes);
    const double gbs = lb_read_bandwidth_of(buf, bytes, n_threads < 1 ? 1 : n_threads, reps, NULL);
    lb_free_aligned(buf);
    return gbs;
}
