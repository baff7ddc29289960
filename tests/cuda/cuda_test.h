/* What the CUDA tests share (test_cuda.c, test_cuda_seeds.c): a checked CUDA
 * runtime call that exits on failure, and a failure line that counts into
 * the includer's n_failed and prints at most MAX_FAIL_LINES (the includer
 * defines n_failed, fail_lines and MAX_FAIL_LINES). */
#ifndef LB_CUDA_TEST_H
#define LB_CUDA_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#define CU(call)                                                                                              \
    do {                                                                                                      \
        const cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) {                                                                              \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_),        \
                    cudaGetErrorName(e_));                                                                    \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

#define FAIL_LINE(...)                                                 \
    do {                                                               \
        n_failed++;                                                    \
        if (fail_lines++ < MAX_FAIL_LINES) {                           \
            fprintf(stderr, "FAIL ");                                  \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
        } else if (fail_lines == MAX_FAIL_LINES + 1) {                 \
            fprintf(stderr, "(more failures: lines left out)\n");      \
        }                                                              \
    } while (0)

#endif
