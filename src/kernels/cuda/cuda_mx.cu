// MX (seed 002, formats/mx.h): the 2/4/16-bit GEMV in one kernel, and the
// fp16 dequantization of the prefill path.
//
// Seed 002's Algorithm 1 on our tiles. One thread block per tile row (16
// output rows); its threads walk the row's 2-bit tiles, then its 4-bit
// tiles, in units of 16 code bytes:
//   2-bit: unit = 4 rows x 16 columns (one first-order group half h of 4 rows)
//   4-bit: unit = 4 rows x 8 columns
// With 256 threads a thread's units always cover the same 4 rows (4 (tid%4)
// .. +3), in both kinds of tile: its accumulators are those rows' sums.
//  - outer loop (Alg. 1 lines 5-9): the unit's group and the scale part of
//    its tile;
//  - inner loop (lines 10-16): the codes of the NEXT unit are requested
//    first, then the second-order dequantization of the first-order scales,
//    s1 = s2 (c + z2), and half-step zeros z1 is done while they load
//    (Fig. 8, 1-2). Two variants (lb_cuda_mx_smem_scales):
//      kSmem (the default, the paper's): per chunk of 256 units (32 tiles)
//        thread (tile i = tid % 32, entries 4 (tid / 32) ..) computes 4 of
//        the chunk's 32 x 32 scales and zeros into shared memory, a warp
//        reading 32 consecutive tiles' scale parts; barrier; each thread
//        reads the four it needs;
//      registers: the thread holding a code chunk is the only one that
//        needs those four scales (lanes = rows), so it computes them itself
//        from the tile's 32-byte scale part, with no barrier;
//  - packed loop (17-22): dp4a of the codes against the int8 activations,
//    sum (2q - 2 z1) a in integers, exact, then scaled;
//  - parallel reduction (25): shuffles across the warp's lanes of the same
//    rows, then across the warps through shared memory; the thread that owns
//    (activation row, output row) adds that row's fp16 outliers from the CSR
//    (exclusive 2-bit outliers, section 4: no separate SpMV) and writes it.
// The float arithmetic is lb_gemv_mx_q8_0_ref's per first-order group (only
// the order of the sums differs), so with integer-valued inputs the results
// are the reference's to the bit.
#include "cuda_common.cuh"

namespace {

constexpr int kMxThreads = 256;
constexpr int kMxWarps = kMxThreads / 32;

// sum over the 16 columns of the unit's row: codes (v >> 2t) & 3 are
// columns 16h + 4t + 0..3, against activation word t
__device__ __forceinline__ int dot_mx2(uint32_t v, int4 a) {
    const uint32_t m2 = 0x03030303u;
    int s = __dp4a((int)(v & m2), a.x, 0);
    s = __dp4a((int)((v >> 2) & m2), a.y, s);
    s = __dp4a((int)((v >> 4) & m2), a.z, s);
    return __dp4a((int)((v >> 6) & m2), a.w, s);
}

// low nibbles: columns 8v + 0..3 (activation word a.x), high: 8v + 4..7 (a.y)
__device__ __forceinline__ int dot_mx4(uint32_t v, int2 a) {
    const uint32_t m4 = 0x0f0f0f0fu;
    const int s = __dp4a((int)(v & m4), a.x, 0);
    return __dp4a((int)((v >> 4) & m4), a.y, s);
}

__device__ __forceinline__ uint32_t word_of(int4 v, int j) { return (uint32_t)(j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w); }

template <int M, bool kSmem>
__global__ void __launch_bounds__(kMxThreads)
    gemv_mx_kernel(const uint8_t *__restrict__ lo_qs, const uint8_t *__restrict__ lo_meta,
                   const uint8_t *__restrict__ hi_qs, const uint8_t *__restrict__ hi_meta,
                   const uint16_t *__restrict__ lo_group, const uint16_t *__restrict__ hi_group,
                   const uint32_t *__restrict__ row_ptr, const uint32_t *__restrict__ outliers, int64_t n_out,
                   int64_t K, int64_t n_lo, int64_t n_hi, const int8_t *__restrict__ Aq,
                   const uint16_t *__restrict__ Ad, const int16_t *__restrict__ As, float *__restrict__ Y,
                   int64_t ldy) {
    __shared__ float red[kMxWarps][M][LBCU_MX_ROWS];
    // kSmem: a chunk's 32 tiles x 32 first-order groups (16 h + r); rows of 33
    // so a warp's reads (4 tiles x 8 entry quads) hit 32 distinct banks
    constexpr int kChunkTiles = kMxThreads / 8;
    __shared__ float s_hs[kSmem ? kChunkTiles : 1][33];
    __shared__ int s_zx[kSmem ? kChunkTiles : 1][33];
    const int64_t t = blockIdx.x; // tile row: output rows 16 t .. 16 t + 15
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rq = tid & 3; // this thread's rows: 4 rq .. 4 rq + 3
    const int64_t nb = K / 32, ns = K / 16;
    float acc[M][4];
#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[m][j] = 0.0f;

    // ---- 2-bit tiles: unit u = 8 slot + k, half h = k / 4, rows 4 (k % 4) .. (k % 4 = rq) ----
    {
        const int64_t U = 8 * n_lo;
        const uint8_t *qs = lo_qs + t * n_lo * LBCU_MX2_QS;
        const uint8_t *meta0 = lo_meta + t * n_lo * LBCU_MX2_META;
        int4 next = make_int4(0, 0, 0, 0);
        if (tid < U) next = lbcu_ld16(qs + 16 * (int64_t)tid);
        // the same trip count for every thread: kSmem has barriers inside
        for (int64_t base = 0; base < U; base += kMxThreads) {
            const int64_t u = base + tid;
            const int4 cw = next;
            if (u + kMxThreads < U) next = lbcu_ld16(qs + 16 * (u + kMxThreads)); // in flight during the work below
            const int k = (int)(u & 7), h = k >> 2;
            float hs[4];
            int zx[4]; // twice the half-step zero: code + 1
            if constexpr (kSmem) {
                // second order for the chunk's tiles base/8 .. base/8 + 31: thread (i, e) takes
                // tile i's entries 4e .. 4e + 3 (entry 16 h + r: half h = e / 4, rows 4 (e % 4) ..)
                const int i = tid % kChunkTiles, e = tid / kChunkTiles;
                const int64_t l = base / 8 + i;
                if (l < n_lo) {
                    const uint8_t *meta = meta0 + l * LBCU_MX2_META;
                    const uint32_t c4 = *(const uint16_t *)(meta + 2 * e);
                    const uint32_t z4 = meta[16 + e];
                    const float s2 = lbcu_h2f(*(const uint16_t *)(meta + 24 + 2 * (e >> 2)));
                    const int z2 = (meta[28] >> (4 * (e >> 2))) & 15;
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        s_hs[i][4 * e + j] = 0.5f * (s2 * (float)((int)((c4 >> (4 * j)) & 15u) + z2));
                        s_zx[i][4 * e + j] = (int)((z4 >> (2 * j)) & 3u) + 1;
                    }
                }
                __syncthreads();
                const int lt = tid >> 3; // this unit's tile in the chunk; its entries are 4 k + j
#pragma unroll
                for (int j = 0; j < 4; j++) hs[j] = s_hs[lt][4 * k + j], zx[j] = s_zx[lt][4 * k + j];
                __syncthreads(); // read before the next chunk's writes
                if (u >= U) continue;
            } else {
                if (u >= U) break;
                // second order: entries i = 16 h + r of rows r = 4 rq + j are i = 4 k + j
                const uint8_t *meta = meta0 + (u >> 3) * LBCU_MX2_META;
                const uint32_t c4 = *(const uint16_t *)(meta + 2 * k); // scale codes, nibble j
                const uint32_t z4 = meta[16 + k];                      // zero codes, bits 2 j
                const float s2 = lbcu_h2f(*(const uint16_t *)(meta + 24 + 2 * h));
                const int z2 = (meta[28] >> (4 * h)) & 15;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    hs[j] = 0.5f * (s2 * (float)((int)((c4 >> (4 * j)) & 15u) + z2)); // 0.5 lb_mx2_scale
                    zx[j] = (int)((z4 >> (2 * j)) & 3u) + 1;
                }
            }
            const int64_t l = u >> 3;
            const int64_t g = lo_group[l];
#pragma unroll
            for (int m = 0; m < M; m++) {
                const int4 a = lbcu_ld16(Aq + m * K + 32 * g + 16 * h);
                const float d = lbcu_h2f(Ad[m * nb + g]);
                const int S = As[m * ns + 2 * g + h];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int sum = 2 * dot_mx2(word_of(cw, j), a) - zx[j] * S; // sum of (2q - 2 z1) a
                    acc[m][j] += d * (hs[j] * (float)sum);
                }
            }
        }
    }

    // ---- 4-bit tiles: unit u = 16 slot + k, columns 8 v .. (v = k / 4), rows 4 (k % 4) .. (k % 4 = rq) ----
    if (n_hi > 0) {
        const int64_t U = 16 * n_hi;
        const uint8_t *qs = hi_qs + t * n_hi * LBCU_MX4_QS;
        const uint8_t *meta0 = hi_meta + t * n_hi * LBCU_MX4_META;
        int4 next = make_int4(0, 0, 0, 0);
        if (tid < U) next = lbcu_ld16(qs + 16 * (int64_t)tid);
        for (int64_t u = tid; u < U; u += kMxThreads) {
            const int4 cw = next;
            if (u + kMxThreads < U) next = lbcu_ld16(qs + 16 * (u + kMxThreads));
            const int64_t sl = u >> 4;
            const int v = (int)((u & 15) >> 2);
            const uint8_t *meta = meta0 + sl * LBCU_MX4_META;
            const int2 sv = *(const int2 *)(meta + 8 * rq);              // fp16 s of rows 4 rq .. + 3
            const uint32_t z4 = *(const uint16_t *)(meta + 32 + 2 * rq); // their zeros, nibble j
            float s[4];
            int z[4];
            s[0] = lbcu_h2f((uint32_t)sv.x & 0xffffu), s[1] = lbcu_h2f((uint32_t)sv.x >> 16);
            s[2] = lbcu_h2f((uint32_t)sv.y & 0xffffu), s[3] = lbcu_h2f((uint32_t)sv.y >> 16);
#pragma unroll
            for (int j = 0; j < 4; j++) z[j] = (int)((z4 >> (4 * j)) & 15u);
            const int64_t g = hi_group[sl];
#pragma unroll
            for (int m = 0; m < M; m++) {
                const int2 a = *(const int2 *)(Aq + m * K + 32 * g + 8 * v);
                const float d = lbcu_h2f(Ad[m * nb + g]);
                const int S = __dp4a(0x01010101, a.x, __dp4a(0x01010101, a.y, 0)); // sum of the 8 activations
#pragma unroll
                for (int j = 0; j < 4; j++) acc[m][j] += (d * s[j]) * (float)(dot_mx4(word_of(cw, j), a) - z[j] * S);
            }
        }
    }

    // ---- reduction: lanes of the same rows (lane % 4), then the warps ----
#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float v = acc[m][j];
            v += __shfl_xor_sync(0xffffffffu, v, 4);
            v += __shfl_xor_sync(0xffffffffu, v, 8);
            v += __shfl_xor_sync(0xffffffffu, v, 16);
            if (lane < 4) red[warp][m][4 * lane + j] = v;
        }
    __syncthreads();
    if (tid < LBCU_MX_ROWS * M) {
        const int m = tid / LBCU_MX_ROWS, r = tid % LBCU_MX_ROWS;
        float y = 0.0f;
#pragma unroll
        for (int w = 0; w < kMxWarps; w++) y += red[w][m][r];
        const int64_t n = LBCU_MX_ROWS * t + r;
        if (row_ptr) {
            // this row's outliers, in order: value x dequantized activation, as the reference
            const uint32_t o1 = (int64_t)row_ptr[n + 1] < n_out ? row_ptr[n + 1] : (uint32_t)n_out;
            for (uint32_t o = row_ptr[n]; o < o1; o++) {
                const uint32_t wd = outliers[o], c = wd & 0xffffu;
                if (c >= K) continue; // checked on the host; never read past the row
                y += lbcu_h2f(wd >> 16) * (lbcu_h2f(Ad[m * nb + c / 32]) * (float)Aq[m * K + c]);
            }
        }
        Y[m * ldy + n] = y;
    }
}

int g_mx_smem = 0; // lb_cuda_mx_smem_scales: registers, measured faster on an H200 (docs/cuda.md)

template <int M, bool kSmem>
cudaError_t launch_mx(const lb_cuda_matrix *W, const lbcu_act &a, int m0, float *Y, int64_t ldy, cudaStream_t s) {
    const int64_t K = W->K;
    gemv_mx_kernel<M, kSmem><<<(unsigned)(W->N / LBCU_MX_ROWS), kMxThreads, 0, s>>>(
        (const uint8_t *)W->lo_qs, (const uint8_t *)W->lo_meta, (const uint8_t *)W->hi_qs, (const uint8_t *)W->hi_meta,
        W->lo_group, W->hi_group, W->row_ptr, W->outliers, W->n_cap, K, W->n_lo, W->n_hi, a.qs + (int64_t)m0 * K,
        a.d0 + (int64_t)m0 * (K / 32), a.s16 + (int64_t)m0 * (K / 16), Y + (int64_t)m0 * ldy, ldy);
    return cudaGetLastError();
}

// One thread per (output row, slot): the 32 weights of the row in that
// tile as lb_mx_view_dequantize (fp32, then its outliers added in fp32),
// rounded to fp16 once.
__global__ void dequant_mx_kernel(const uint8_t *__restrict__ lo_qs, const uint8_t *__restrict__ lo_meta,
                                  const uint8_t *__restrict__ hi_qs, const uint8_t *__restrict__ hi_meta,
                                  const uint16_t *__restrict__ lo_group, const uint16_t *__restrict__ hi_group,
                                  const uint32_t *__restrict__ row_ptr, const uint32_t *__restrict__ outliers,
                                  int64_t n_out, int64_t N, int64_t K, int64_t n_lo, int64_t n_hi,
                                  __half *__restrict__ out) {
    const int64_t S = n_lo + n_hi;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * S) return;
    const int64_t n = i / S, sl = i % S, t = n / LBCU_MX_ROWS;
    const int r = (int)(n % LBCU_MX_ROWS);
    float v[32];
    int64_t g;
    if (sl < n_lo) {
        const uint8_t *qs = lo_qs + (t * n_lo + sl) * LBCU_MX2_QS, *meta = lo_meta + (t * n_lo + sl) * LBCU_MX2_META;
        g = lo_group[sl];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int e = 16 * h + r;
            const int c = (meta[e / 2] >> (4 * (e % 2))) & 15, zc = (meta[16 + e / 4] >> (2 * (e % 4))) & 3;
            const float s2 = lbcu_h2f(*(const uint16_t *)(meta + 24 + 2 * h));
            const float s1 = __fmul_rn(s2, (float)(c + ((meta[28] >> (4 * h)) & 15)));
            const float z1 = 0.5f * (float)(zc + 1);
#pragma unroll
            for (int cc = 0; cc < 16; cc++) { // lb_mx2_qs_byte / lb_mx2_qs_shift of column 16 h + cc
                const int q = (qs[64 * h + 4 * r + cc % 4] >> (2 * (cc / 4))) & 3;
                v[16 * h + cc] = __fmul_rn(s1, __fsub_rn((float)q, z1));
            }
        }
        if (row_ptr) {
            // the outliers of row n in columns [32 g, 32 g + 32): lower bound, then at most 32 in order
            uint32_t lo = row_ptr[n], hi = (int64_t)row_ptr[n + 1] < n_out ? row_ptr[n + 1] : (uint32_t)n_out;
            const uint32_t c0 = (uint32_t)(32 * g);
            while (lo < hi) {
                const uint32_t mid = lo + (hi - lo) / 2;
                if ((outliers[mid] & 0xffffu) < c0) lo = mid + 1;
                else hi = mid;
            }
            const uint32_t end = (int64_t)row_ptr[n + 1] < n_out ? row_ptr[n + 1] : (uint32_t)n_out;
            for (uint32_t o = lo; o < end && o < lo + 32; o++) {
                const uint32_t c = (outliers[o] & 0xffffu) - c0;
                if (c >= 32) break;
                const float val = lbcu_h2f(outliers[o] >> 16);
#pragma unroll
                for (int cc = 0; cc < 32; cc++) // compile-time indices keep v in registers
                    if (cc == (int)c) v[cc] += val;
            }
        }
    } else {
        const int64_t s4 = sl - n_lo;
        const uint8_t *qs = hi_qs + (t * n_hi + s4) * LBCU_MX4_QS, *meta = hi_meta + (t * n_hi + s4) * LBCU_MX4_META;
        g = hi_group[s4];
        const float s = lbcu_h2f(*(const uint16_t *)(meta + 2 * r));
        const int z = (meta[32 + r / 2] >> (4 * (r % 2))) & 15;
#pragma unroll
        for (int cc = 0; cc < 32; cc++) { // lb_mx4_qs_byte / lb_mx4_qs_shift
            const int q = (qs[64 * (cc / 8) + 4 * r + cc % 4] >> (4 * ((cc % 8) / 4))) & 15;
            v[cc] = __fmul_rn(s, (float)(q - z));
        }
    }
    __half *o = out + n * K + 32 * g;
#pragma unroll
    for (int cc = 0; cc < 32; cc++) o[cc] = __float2half_rn(v[cc]);
}

} // namespace

template <bool kSmem>
cudaError_t gemv_mx_variant(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                            cudaStream_t s) {
    switch (mc) {
    case 1: return launch_mx<1, kSmem>(W, a, m0, Y, ldy, s);
    case 2: return launch_mx<2, kSmem>(W, a, m0, Y, ldy, s);
    case 3: return launch_mx<3, kSmem>(W, a, m0, Y, ldy, s);
    case 4: return launch_mx<4, kSmem>(W, a, m0, Y, ldy, s);
    case 5: return launch_mx<5, kSmem>(W, a, m0, Y, ldy, s);
    case 6: return launch_mx<6, kSmem>(W, a, m0, Y, ldy, s);
    case 7: return launch_mx<7, kSmem>(W, a, m0, Y, ldy, s);
    case 8: return launch_mx<8, kSmem>(W, a, m0, Y, ldy, s);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" int lb_cuda_mx_smem_scales(int on) {
    const int was = g_mx_smem;
    if (on >= 0) g_mx_smem = on != 0;
    return was;
}

cudaError_t lbcu_gemv_mx(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                         cudaStream_t s) {
    return g_mx_smem ? gemv_mx_variant<true>(W, a, m0, mc, Y, ldy, s) : gemv_mx_variant<false>(W, a, m0, mc, Y, ldy, s);
}

cudaError_t lbcu_dequant_mx_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s) {
    const int64_t n = W->N * (W->n_lo + W->n_hi);
    dequant_mx_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
        (const uint8_t *)W->lo_qs, (const uint8_t *)W->lo_meta, (const uint8_t *)W->hi_qs, (const uint8_t *)W->hi_meta,
        W->lo_group, W->hi_group, W->row_ptr, W->outliers, W->n_cap, W->N, W->K, W->n_lo, W->n_hi, w16);
    return cudaGetLastError();
}
