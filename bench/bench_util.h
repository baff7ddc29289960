/* What the bench programs share: a clock that can count the calling
 * thread's CPU time instead of wall time (--cpu: on a shared machine the
 * other load then does not count), and a reproducible xorshift for data. */
#ifndef LB_BENCH_UTIL_H
#define LB_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "core/common.h"

static int use_cpu_time; /* --cpu */
static inline double now(void) {
    if (!use_cpu_time) return lb_time_s();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A buffer on 2 MiB pages where the kernel grants them (every big buffer of
 * the benches, as the model's repacked weights, model/repack.c). */
static inline void *alloc_huge(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, (size_t)2 << 20, n ? n : 1)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, (n + 4095) & ~(size_t)4095, MADV_HUGEPAGE);
#endif
    return p;
}

#endif
