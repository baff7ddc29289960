/* Software prefetch of a span of streamed weights, into L2 (prefetcht1) or
 * L1 (prefetcht0): the choice is lb_cpu_prefetch_l2 (kernels/cpu.h). x86
 * kernel files only. */
#ifndef LB_PREFETCH_X86_H
#define LB_PREFETCH_X86_H

#include <immintrin.h>
#include <stddef.h>

/* Every 64-byte line of [p, p + n); the hint must be an immediate, hence two loops. */
static inline __attribute__((always_inline)) void lb_prefetch_span(const void *p, size_t n, int l2) {
    const char *c = (const char *)p;
    if (l2)
        for (size_t o = 0; o < n; o += 64) _mm_prefetch(c + o, _MM_HINT_T1);
    else
        for (size_t o = 0; o < n; o += 64) _mm_prefetch(c + o, _MM_HINT_T0);
}

/* Part k (0..3) of [p, p + n) in quarters of whole lines (the last one the
 * rest): a span asked for over four steps of the work that reads the span
 * before it, as the hardware would stream it, instead of in one burst. */
static inline __attribute__((always_inline)) void lb_prefetch_quarter(const void *p, size_t n, int k, int l2) {
    const size_t q = (n / 4 + 63) & ~(size_t)63, off = k * q < n ? k * q : n;
    lb_prefetch_span((const char *)p + off, k < 3 && q < n - off ? q : n - off, l2);
}

#endif
