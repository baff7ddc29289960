/* Memory read bandwidth: the decode roofline. Decode streams every weight
 * once per token, so tokens/s can be at most read bandwidth / weight bytes;
 * `lowbit bench` and bench/kernels report how close they come. */
#ifndef LB_MEMBW_H
#define LB_MEMBW_H

#include <stddef.h>
#include <stdint.h>

/* GB/s (1e9 bytes) reading `bytes` bytes of a fresh buffer with wide loads
 * on n_threads threads (each its own contiguous slice), best of reps runs
 * (software prefetch none, 1 or 2 KiB ahead into L1, 2 or 4 KiB into L2,
 * in turn: kernels/cpu.h on the two forms). 0 if the buffer
 * cannot be allocated. Reads 1 GiB to measure DRAM, not the caches. */
double lb_read_bandwidth(size_t bytes, int n_threads, int reps);

/* The same over an existing buffer (bench/kernels times it with its own clock). */
double lb_read_bandwidth_of(const uint8_t *buf, size_t bytes, int n_threads, int reps, double (*clock)(void));

#endif
