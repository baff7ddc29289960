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

/* The bandwidth beside one measurement, read right before and right after
 * it: on some VMs it switches between two speeds for seconds at a time (35
 * and 60 GB/s on a 2-core Zen 4 VM), so one figure per run can belong to
 * the other speed. A buffer of LB_BW_BESIDE_BYTES (filled by the caller),
 * best of the 5 prefetch variants (~40 ms at 35 GB/s; 64 and 128 MiB read
 * up to a third faster at times, partly from a 32 MiB L3). Two readings
 * within a tenth of each other are steady: the mode held. */
#define LB_BW_BESIDE_BYTES ((size_t)256 << 20)
double lb_read_bandwidth_beside(const uint8_t *buf, int n_threads, double (*clock)(void));
static inline int lb_read_bandwidth_steady(double a, double b) {
    return (a < b ? a : b) >= 0.9 * (a < b ? b : a);
}

#endif
