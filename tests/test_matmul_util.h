/* lb_matmul on one matrix for the kernel tests: Y (N x M outputs) starts as
 * NaN so an output the kernels skip shows, with scratch of the size the
 * driver asks for. The caller frees the result. */
#ifndef LB_TEST_MATMUL_UTIL_H
#define LB_TEST_MATMUL_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/common.h"
#include "formats/types.h"
#include "kernels/dispatch.h"

/* Whether this machine runs kernels of level l (0 .. LB_ISA_COUNT - 1):
 * scalar always, the x86 or the Arm family up to the detected level. */
static inline int lb_test_level_available(int l) {
    const lb_isa hw = lb_cpu_detected(), level = (lb_isa)l;
    if (level == LB_ISA_SCALAR) return 1;
    if (lb_isa_is_x86(hw)) return lb_isa_is_x86(level) && level <= hw;
    return lb_isa_is_arm(level) && level <= hw;
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

#endif
