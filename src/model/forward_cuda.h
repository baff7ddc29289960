/* The whole forward pass on the GPU (model/forward_cuda.c): built only with
 * -DLOWBIT_CUDA=ON, into the lowbit_cuda_model library, so the CPU library
 * never depends on CUDA. */
#ifndef LB_MODEL_FORWARD_CUDA_H
#define LB_MODEL_FORWARD_CUDA_H

#include "model/model.h"

/* Makes the CUDA backend the one contexts of LB_DEVICE_CUDA use
 * (lb_device_register). Call once, before making contexts. */
void lb_cuda_backend_register(void);

/* One line about the GPU and what the model's upload did (types that took
 * the F16 / F32 fallback), for `bench`; "" before the first CUDA context. */
const char *lb_cuda_backend_describe(const lb_model *m);

/* The GPU's read bandwidth in GB/s (lb_cuda_bench_read over 1 GiB, best of
 * 5), the roofline of decode; 0 on failure. */
double lb_cuda_backend_read_gbs(void);

#endif
