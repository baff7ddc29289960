// Benchmark support (bench/cuda.c is C and cannot hold a kernel): a
// read-only kernel, the yardstick for kernels that mostly read (GEMVs), and
// the tensor cores' rate for b1 (seed 004's BMMA) and s8 mma.
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

// Tensor-core throughput of one mma shape: 8 warps a block, each running
// `iters` x 4 independent mma.sync (four accumulators, so the pipeline can
// overlap them); the accumulators go to sink only on an impossible value.
// kind 0: m16n8k128 b1 AND + popc (seed 004's BMMA); 1: m16n8k32 s8 (int8).
template <int KIND> __global__ void mma_rate_kernel(int iters, int *__restrict__ sink) {
    uint32_t a[4], b[2];
#pragma unroll
    for (int i = 0; i < 4; i++) a[i] = (threadIdx.x + 1u) * (0x9e3779b9u + 2654435761u * i);
    b[0] = a[0] ^ 0x5bd1e995u, b[1] = a[1] + 0x1b873593u;
    int c[4][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (KIND == 0)
                asm volatile("mma.sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.and.popc "
                             "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                             : "+r"(c[k][0]), "+r"(c[k][1]), "+r"(c[k][2]), "+r"(c[k][3])
                             : "r"(a[0]), "r"(a[1]), "r"(b[0]));
            else
                asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+r"(c[k][0]), "+r"(c[k][1]), "+r"(c[k][2]), "+r"(c[k][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    int acc = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) acc ^= c[k][0] ^ c[k][1] ^ c[k][2] ^ c[k][3];
    if (acc == 0x5eed2201) sink[0] = acc;
}

} // namespace

extern "C" int lb_cuda_bench_mma(int kind, int sm_count, int *sink_dev, double *ops_per_s) {
    if ((kind != 0 && kind != 1) || sm_count < 1 || !ops_per_s) {
        lbcu_set_error("lb_cuda_bench_mma: kind 0 (b1) or 1 (s8), the SM count, an output");
        return -1;
    }
    const int iters = 2048, blocks = 4 * sm_count;
    cudaEvent_t e0, e1;
    LBCU_CHECK(cudaEventCreate(&e0));
    LBCU_CHECK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int rep = 0; rep < 4; rep++) { // the first one warms up
        LBCU_CHECK(cudaEventRecord(e0, 0));
        if (kind == 0) mma_rate_kernel<0><<<blocks, 256>>>(iters, sink_dev);
        else mma_rate_kernel<1><<<blocks, 256>>>(iters, sink_dev);
        LBCU_CHECK(cudaGetLastError());
        LBCU_CHECK(cudaEventRecord(e1, 0));
        LBCU_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        LBCU_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0 && ms < best) best = ms;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    // ops of one mma: 2 m n k (a multiply and an add per product, bits or bytes)
    const double ops = 2.0 * 16 * 8 * (kind == 0 ? 128 : 32);
    *ops_per_s = (double)blocks * 8 * iters * 4 * ops / (best * 1e-3);
    return 0;
}

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
