// Seed 003 (LUT-GEMM) on the GPU: BCQ{q}_G{g} rows (formats/bcq.h) times
// fp32 activations by table lookup instead of dequantization, Fig. 2 of the
// paper on our layout (docs/cuda.md):
//
//  - a thread block owns a t_h x t_w tile: t_h = 256 rows (one per thread)
//    by t_w = 256 activations, i.e. l = 32 lookup tables of mu = 8 in shared
//    memory, built once per token and read by all 256 rows;
//  - table k holds T_k[e] = sum_{t<8} (bit t of e ? +x : -x)[8k + t] for all
//    256 values e, so one byte of a bit plane (8 weights of one row) is one
//    lookup: a group's plane i contributes alpha_i * sum of its bytes'
//    entries, its bias z * (sum of the group's activations);
//  - the K-tiles of a row land in different blocks, which add their partial
//    sums into Y (zeroed first) with atomicAdd, as the paper does.
//
// Float sums in another order than the CPU's: the test holds the result to
// a bound on the rounding of those sums (tests/cuda/test_cuda_seeds.c).
#include "cuda_common.cuh"

namespace {

constexpr int kRows = 256;           // t_h: threads of a block, one row each
constexpr int kMaxM = 8;             // tokens of one launch (LB_CUDA_GEMV_MAX_M)
// t_w: activations of a K-tile, 256 (l = 32 tables of mu = 8) or 128 (16
// tables: twice the blocks, so more of them share an SM); always 128 at
// q = 4, whose 32 q bytes of planes per row would not stay in registers.
int g_tile_w = LBCU_BCQ_TW;

// One row's planes in a K-tile are t_w q / 8 contiguous bytes ([group][plane][g/8]
// over t_w weights): t_w q / 128 16-byte loads, issued before the tables are built so
// the weights' DRAM latency hides behind that work. A partial last tile
// loads only its tw q / 8 bytes.
template <int Q, int G, int kTW>
__global__ void __launch_bounds__(kRows, kTW == LBCU_BCQ_TW ? 2 : 3)
    bcq_lut_gemv_kernel(const uint8_t *__restrict__ planes, int64_t pstride, const uint16_t *__restrict__ heads,
                        const float *__restrict__ X, int M, int64_t N, int64_t K, float *__restrict__ Y, int64_t ldy,
                        float *__restrict__ part, unsigned *__restrict__ count) {
    constexpr int GB = G / 8;          // bytes (= tables) of a group's plane
    constexpr int NG = kTW / G;        // groups of a full tile
    constexpr int NW = kTW * Q / 32;   // 32-bit words of a row's planes in a full tile
    __shared__ float lut[kTW / 8][256];
    __shared__ float sub[kTW / 8][2][16]; // the 4-activation halves of each table
    __shared__ float gsum[NG];
    __shared__ __align__(16) float xs[kMaxM][kTW]; // the tile's activations of every token
    __shared__ bool last;
    const int64_t k0 = (int64_t)blockIdx.y * kTW;
    const int tw = (int)(K - k0 < kTW ? K - k0 : kTW); // a multiple of G, as K is
    const int nt = tw / 8, ng = tw / G;
    const int64_t n = (int64_t)blockIdx.x * kRows + threadIdx.x;
    const bool active = n < N;

    uint32_t w[NW];
    const uint16_t *hp = heads + ((active ? n : 0) * (K / G) + k0 / G) * (Q + 1);
    {
        const uint4 *p4 = (const uint4 *)(planes + (active ? n : 0) * pstride + k0 * Q / 8);
        const int nw = active ? tw * Q / 32 : 0;
#pragma unroll
        for (int i = 0; i < NW / 4; i++) {
            const uint4 v = 4 * i < nw ? p4[i] : make_uint4(0, 0, 0, 0);
            w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
        }
    }

    for (int i = threadIdx.x; i < M * tw / 4; i += kRows) {
        const int m = i / (tw / 4), j = 4 * (i % (tw / 4));
        *(float4 *)&xs[m][j] = *(const float4 *)(X + (int64_t)m * K + k0 + j);
    }
    __syncthreads();

    for (int m = 0; m < M; m++) {
        const float *x = xs[m];
        // the 16 signed sums of every 4 activations, then of 8 as two of them
        for (int i = threadIdx.x; i < nt * 32; i += kRows) {
            const int t = i >> 5, hh = (i >> 4) & 1, e = i & 15;
            const float4 xs = *(const float4 *)(x + 8 * t + 4 * hh);
            float v = (e & 1) ? xs.x : -xs.x;
            v += (e & 2) ? xs.y : -xs.y;
            v += (e & 4) ? xs.z : -xs.z;
            v += (e & 8) ? xs.w : -xs.w;
            sub[t][hh][e] = v;
        }
        __syncthreads();
        for (int i = threadIdx.x; i < nt * 256; i += kRows) {
            const int t = i >> 8, e = i & 255;
            lut[t][e] = sub[t][0][e & 15] + sub[t][1][e >> 4];
        }
        if (threadIdx.x < ng) { // a group's activation sum: its entries of all +
            float s = 0.0f;
            for (int t = threadIdx.x * GB; t < (threadIdx.x + 1) * GB; t++) s += sub[t][0][15] + sub[t][1][15];
            gsum[threadIdx.x] = s;
        }
        __syncthreads();
        if (active) {
            float y = 0.0f;
#pragma unroll
            for (int gi = 0; gi < NG; gi++) {
                if (gi < ng) {
                    const uint16_t *h = hp + gi * (Q + 1);
                    float yg = lbcu_h2f(h[Q]) * gsum[gi];
#pragma unroll
                    for (int i = 0; i < Q; i++) {
                        float acc = 0.0f;
#pragma unroll
                        for (int b = 0; b < GB; b++) {
                            const int off = gi * Q * GB + i * GB + b; // byte of the row's tile
                            acc += lut[gi * GB + b][(w[off >> 2] >> (8 * (off & 3))) & 255u];
                        }
                        yg += lbcu_h2f(h[i]) * acc;
                    }
                    y += yg;
                }
            }
            part[((int64_t)blockIdx.y * M + m) * N + n] = y;
        }
        __syncthreads(); // the next token's tables overwrite these
    }
    // The K-tiles of these rows meet here: the last of their blocks to finish
    // (a counter per row block, reset by that block) adds the partial sums in
    // tile order, so the result does not depend on the blocks' order.
    __threadfence();
    if (threadIdx.x == 0) last = atomicAdd(&count[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    if (active)
        for (int m = 0; m < M; m++) {
            float y = 0.0f;
            for (unsigned t = 0; t < gridDim.y; t++) y += __ldcg(part + ((int64_t)t * M + m) * N + n);
            Y[(int64_t)m * ldy + n] = y;
        }
    if (threadIdx.x == 0) count[blockIdx.x] = 0;
}

// fp16 weights for the prefill path: the CPU's dequantization (v = z, then
// +-alpha_i plane by plane, in float), rounded once. One thread per 8 weights.
template <int Q, int G>
__global__ void bcq_dequant_kernel(const uint8_t *__restrict__ planes, int64_t pstride,
                                   const uint16_t *__restrict__ heads, int64_t N, int64_t K, __half *__restrict__ w16) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; // (row, byte of K/8)
    if (i >= N * (K / 8)) return;
    const int64_t n = i / (K / 8), kb = i % (K / 8), gi = kb / (G / 8), b = kb % (G / 8);
    const uint16_t *h = heads + (n * (K / G) + gi) * (Q + 1);
    const uint8_t *p = planes + n * pstride + gi * (Q * G / 8) + b;
    for (int j = 0; j < 8; j++) {
        float v = lbcu_h2f(h[Q]);
        for (int q = 0; q < Q; q++) {
            const float a = lbcu_h2f(h[q]);
            v += ((p[q * (G / 8)] >> j) & 1) ? a : -a;
        }
        w16[n * K + kb * 8 + j] = __float2half_rn(v);
    }
}

// Calls F<Q, G>::run(args...) for the matrix's q and g.
template <template <int, int> class F, typename... A> cudaError_t by_shape(int q, int g, A... args) {
#define LBCU_BCQ_CASE(QQ)                                                                                    \
    case QQ:                                                                                                 \
        return g == 128 ? F<QQ, 128>::run(args...) : g == 64 ? F<QQ, 64>::run(args...) : F<QQ, 32>::run(args...);
    switch (q) {
        LBCU_BCQ_CASE(1)
        LBCU_BCQ_CASE(2)
        LBCU_BCQ_CASE(3)
        LBCU_BCQ_CASE(4)
    default: return cudaErrorInvalidValue;
    }
#undef LBCU_BCQ_CASE
}

template <int Q, int G> struct launch_gemv {
    static cudaError_t run(const lb_cuda_matrix *W, const float *X, int mc, float *Y, int64_t ldy, float *part,
                           unsigned *count, cudaStream_t s) {
        const int tw = Q >= 4 ? LBCU_BCQ_TW / 2 : g_tile_w;
        const dim3 grid((unsigned)((W->N + kRows - 1) / kRows), (unsigned)((W->K + tw - 1) / tw));
        if (tw == LBCU_BCQ_TW)
            bcq_lut_gemv_kernel<Q, G, (Q >= 4 ? LBCU_BCQ_TW / 2 : LBCU_BCQ_TW)><<<grid, kRows, 0, s>>>(
                (const uint8_t *)W->q, W->pstride, (const uint16_t *)W->d, X, mc, W->N, W->K, Y, ldy, part, count);
        else
            bcq_lut_gemv_kernel<Q, G, LBCU_BCQ_TW / 2><<<grid, kRows, 0, s>>>(
                (const uint8_t *)W->q, W->pstride, (const uint16_t *)W->d, X, mc, W->N, W->K, Y, ldy, part, count);
        return cudaGetLastError();
    }
};

template <int Q, int G> struct launch_dequant {
    static cudaError_t run(const lb_cuda_matrix *W, __half *w16, cudaStream_t s) {
        const int64_t n = W->N * (W->K / 8);
        bcq_dequant_kernel<Q, G><<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
            (const uint8_t *)W->q, W->pstride, (const uint16_t *)W->d, W->N, W->K, w16);
        return cudaGetLastError();
    }
};

// The K-tiles' partial sums and the row blocks' counters (zero between
// launches: the last block of a row block resets its own), grown as needed.
// One host thread at a time, as the rest of the backend.
struct {
    float *part = nullptr;
    size_t part_cap = 0;
    unsigned *count = nullptr;
    size_t count_cap = 0;
} g_scratch;

cudaError_t grow(size_t part_n, size_t count_n) {
    if (part_n > g_scratch.part_cap || count_n > g_scratch.count_cap) {
        cudaError_t e = cudaDeviceSynchronize(); // launches in flight may use the old ones
        if (e != cudaSuccess) return e;
        lbcu_bump_epoch();
        cudaFree(g_scratch.part), cudaFree(g_scratch.count);
        g_scratch.part = nullptr, g_scratch.count = nullptr, g_scratch.part_cap = g_scratch.count_cap = 0;
        if ((e = cudaMalloc(&g_scratch.part, part_n * sizeof(float))) != cudaSuccess) return e;
        if ((e = cudaMalloc(&g_scratch.count, count_n * sizeof(unsigned))) != cudaSuccess) return e;
        if ((e = cudaMemset(g_scratch.count, 0, count_n * sizeof(unsigned))) != cudaSuccess) return e;
        g_scratch.part_cap = part_n, g_scratch.count_cap = count_n;
    }
    return cudaSuccess;
}

} // namespace

int lb_cuda_bcq_tile(int tw) {
    const int old = g_tile_w;
    if (tw == LBCU_BCQ_TW || tw == LBCU_BCQ_TW / 2) g_tile_w = tw;
    return old;
}

void lbcu_bcq_release(void) {
    if (g_scratch.part || g_scratch.count) (void)cudaDeviceSynchronize();
    cudaFree(g_scratch.part), cudaFree(g_scratch.count);
    g_scratch.part = nullptr, g_scratch.count = nullptr, g_scratch.part_cap = g_scratch.count_cap = 0;
}

cudaError_t lbcu_gemv_bcq(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                          cudaStream_t s) {
    if (a.kind != LBCU_ACT_F32 || mc < 1 || mc > kMaxM) return cudaErrorInvalidValue;
    const size_t tiles = (size_t)((W->K + LBCU_BCQ_TW / 2 - 1) / (LBCU_BCQ_TW / 2)); // the most, at t_w = 128
    const size_t row_blocks = (size_t)((W->N + kRows - 1) / kRows);
    const cudaError_t e = grow(tiles * kMaxM * (size_t)W->N, row_blocks);
    if (e != cudaSuccess) return e;
    return by_shape<launch_gemv>(W->bits, W->group, W, a.xf + (int64_t)m0 * W->K, mc, Y + (int64_t)m0 * ldy, ldy,
                                 g_scratch.part, g_scratch.count, s);
}

cudaError_t lbcu_dequant_bcq_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s) {
    return by_shape<launch_dequant>(W->bits, W->group, W, w16, s);
}
