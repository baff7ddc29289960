// Benchmark support (bench/cuda.c is C and cannot hold a kernel): a
// read-only kernel, the yardstick for kernels that mostly read (GEMVs).
#include "cuda_common.cuh"

namespace {

// 16-byte loads, four in flight per thread, grid-strided so consecutive
// threads read consecutive 16 bytes; the XOR of everything goes to sink only
// in the (practically) impossible case that it equals a constant, which the
// compiler cannot know, so no load is dropped.
__global__ void read_kernel(const int4 *__restrict__ p, int64_t n, int *__restrict__ sink) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const int4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const int4 a = p[i];
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x5eed2200) sink[0] = acc;
}

} // namespace

extern "C" int lb_cuda_bench_read(const void *buf_dev, size_t bytes, int *sink_dev, int sm_count, void *stream) {
    if (!buf_dev || bytes % 16 || sm_count < 1) {
        lbcu_set_error("lb_cuda_bench_read: a buffer of a multiple of 16 bytes and the SM count");
        return -1;
    }
    read_kernel<<<(unsigned)(8 * sm_count), 256, 0, (cudaStream_t)stream>>>((const int4 *)buf_dev,
                                                                            (int64_t)(bytes / 16), sink_dev);
    LBCU_CHECK(cudaGetLastError());
    return 0;
}
