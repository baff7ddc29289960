/* The CUDA tests' start: device 0's properties, or why there is none. */
#ifndef LB_TEST_CUDA_DEVICE_H
#define LB_TEST_CUDA_DEVICE_H

#include <stdio.h>

#include "kernels/cuda/lb_cuda.h"

/* 0 with *info filled; 77 (ctest's skip) after printing "no CUDA device:
 * skipped" where there is none; 1 if the query fails. */
static inline int lb_test_cuda_device(lb_cuda_device_info *info) {
    if (lb_cuda_device_count() < 1) {
        printf("no CUDA device: skipped (%s)\n", lb_cuda_last_error());
        return 77;
    }
    if (lb_cuda_device_info_get(0, info)) {
        fprintf(stderr, "device query: %s\n", lb_cuda_last_error());
        return 1;
    }
    return 0;
}

#endif
