// Activation quantization, the Q4_0 / Q8_0 / Q4_K GEMVs and the fp16
// dequantization of the prefill path (MX is in cuda_mx.cu).
//
// GEMV: one warp per output row, its lanes along K with 16-byte loads of the
// codes, dp4a against the int8 activations, float partial sums per lane
// reduced by shuffles at the end. M (1..8) is a template parameter so the
// accumulators stay in registers. Every lane's loop has the same bound for
// the whole warp or no shuffle inside, and tails (K not a multiple of a
// warp's step, N not of a block's rows) are masked, never read.
#include "cuda_common.cuh"

namespace {

constexpr int kRowsPerBlock = 8; // warps per block, one row each
constexpr int kThreads = 32 * kRowsPerBlock;

// ---- activations ----

// Q8_0 as lb_quantize_row_q8_0_ref: one warp per block of 32, lane j holds
// x[j]. amax by fmaxf (order-free), d = amax / 127 and id = 1 / d correctly
// rounded (__fdiv_rn: no fast-math whatever the flags), q = roundf(x id)
// (half away from zero, as C's roundf), d stored through the CPU's fp16
// rounding. Also the sums of each 16 codes.
__global__ void __launch_bounds__(kThreads) quant_q8_0_kernel(const float *__restrict__ X, int64_t nblk,
                                                              int8_t *__restrict__ qs, uint16_t *__restrict__ d0,
                                                              int16_t *__restrict__ s16) {
    const int64_t b = (int64_t)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (b >= nblk) return; // whole warps
    const float x = X[b * 32 + lane];
    float amax = fabsf(x);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    const int q = (int)roundf(__fmul_rn(x, id));
    qs[b * 32 + lane] = (int8_t)q;
    int s = q;
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o); // within each half-warp
    if ((lane & 15) == 0) s16[b * 2 + lane / 16] = (int16_t)s;
    if (lane == 0) d0[b] = lbcu_f32_to_fp16(d);
}

// Q8_K as lb_quantize_row_q8_K_ref: one warp per 256, lane l holds elements
// l + 32 i. The CPU takes the FIRST element of largest magnitude as max (its
// sign decides the codes' sign), so the warp reduces (|x|, index) to the
// largest |x| and among equals the smallest index. iscale = -127 / max,
// q = min(127, nearest(iscale x)) (ties to even: __float2int_rn), d = 1 / iscale.
__global__ void __launch_bounds__(kThreads) quant_q8_k_kernel(const float *__restrict__ X, int64_t nblk,
                                                              int8_t *__restrict__ qs, float *__restrict__ dk,
                                                              int16_t *__restrict__ s16) {
    const int64_t b = (int64_t)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (b >= nblk) return; // whole warps
    const float *x = X + b * 256;
    float v[8], amax = 0.0f, maxv = 0.0f;
    int idx = 256;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        v[i] = x[lane + 32 * i];
        const float a = fabsf(v[i]);
        if (a > amax) amax = a, maxv = v[i], idx = lane + 32 * i; // first in this lane (indices increase with i)
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float oa = __shfl_xor_sync(0xffffffffu, amax, o);
        const float ov = __shfl_xor_sync(0xffffffffu, maxv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (oa > amax || (oa == amax && oi < idx)) amax = oa, maxv = ov, idx = oi;
    }
    int8_t *q = qs + b * 256;
    if (amax == 0.0f) { // uniform across the warp: all lanes hold the same result
#pragma unroll
        for (int i = 0; i < 8; i++) q[lane + 32 * i] = 0;
        if (lane < 16) s16[b * 16 + lane] = 0;
        if (lane == 0) dk[b] = 0.0f;
        return;
    }
    const float iscale = __fdiv_rn(-127.0f, maxv);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int qi = min(127, __float2int_rn(__fmul_rn(iscale, v[i])));
        q[lane + 32 * i] = (int8_t)qi;
        int s = qi; // element lane + 32 i is in group of 16 number 2 i + lane / 16
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if ((lane & 15) == 0) s16[b * 16 + 2 * i + lane / 16] = (int16_t)s;
    }
    if (lane == 0) dk[b] = __fdiv_rn(1.0f, iscale);
}

__global__ void to_half_kernel(const float *__restrict__ X, int64_t n, __half *__restrict__ Y) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        Y[i] = __float2half_rn(X[i]);
}

// ---- GEMV ----

// Q8_0: codes N x K, scales N x K/32. A lane takes 16 codes (half a block)
// at e = 16 lane + 512 i, two steps in flight per loop trip.
template <int M>
__device__ __forceinline__ void dot_q8_0(int4 w, float dw, int64_t e, int64_t K, const int8_t *__restrict__ Aq,
                                         const uint16_t *__restrict__ Ad, float (&acc)[M]) {
#pragma unroll
    for (int m = 0; m < M; m++) {
        const int4 a = lbcu_ld16(Aq + m * K + e);
        const float da = lbcu_h2f(Ad[m * (K / 32) + e / 32]);
        int s = __dp4a(w.x, a.x, 0);
        s = __dp4a(w.y, a.y, s);
        s = __dp4a(w.z, a.z, s);
        s = __dp4a(w.w, a.w, s);
        acc[m] += (float)s * (dw * da); // the reference's (float)isum * (dw * da), per half block
    }
}

template <int M>
__global__ void __launch_bounds__(kThreads)
    gemv_q8_0_kernel(const int8_t *__restrict__ Wq, const uint16_t *__restrict__ Wd, int64_t N, int64_t K,
                     const int8_t *__restrict__ Aq, const uint16_t *__restrict__ Ad, float *__restrict__ Y, int64_t ldy) {
    const int64_t n = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (n >= N) return; // whole warps
    const int8_t *w = Wq + n * K;
    const uint16_t *wd = Wd + n * (K / 32);
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; m++) acc[m] = 0.0f;
    for (int64_t e0 = 0; e0 < K; e0 += 1024) {
        const int64_t ea = e0 + 16 * lane, eb = ea + 512;
        int4 wa = make_int4(0, 0, 0, 0), wb = make_int4(0, 0, 0, 0);
        float da = 0.0f, db = 0.0f;
        if (ea < K) wa = lbcu_ld16(w + ea), da = lbcu_h2f(wd[ea / 32]);
        if (eb < K) wb = lbcu_ld16(w + eb), db = lbcu_h2f(wd[eb / 32]);
        if (ea < K) dot_q8_0<M>(wa, da, ea, K, Aq, Ad, acc);
        if (eb < K) dot_q8_0<M>(wb, db, eb, K, Aq, Ad, acc);
    }
#pragma unroll
    for (int m = 0; m < M; m++) acc[m] = lbcu_warp_sum(acc[m]);
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < M; m++) Y[m * ldy + n] = acc[m];
    }
}

// Q4_0: nibbles N x K/2 (16 bytes a block), scales N x K/32. A lane takes one
// block (16 bytes) at b = lane + 32 i: word k's low nibbles are weights
// 4k..4k+3, its high nibbles 16+4k.., so each is a dp4a operand as it
// stands; the -8 comes off as 8 times the block's activation sum.
template <int M>
__device__ __forceinline__ void dot_q4_0(int4 w, float dw, int64_t b, int64_t K, const int8_t *__restrict__ Aq,
                                         const uint16_t *__restrict__ Ad, const int16_t *__restrict__ As,
                                         float (&acc)[M]) {
    const uint32_t m4 = 0x0f0f0f0fu;
    const int l0 = (int)((uint32_t)w.x & m4), l1 = (int)((uint32_t)w.y & m4), l2 = (int)((uint32_t)w.z & m4),
              l3 = (int)((uint32_t)w.w & m4);
    const int h0 = (int)(((uint32_t)w.x >> 4) & m4), h1 = (int)(((uint32_t)w.y >> 4) & m4),
              h2 = (int)(((uint32_t)w.z >> 4) & m4), h3 = (int)(((uint32_t)w.w >> 4) & m4);
#pragma unroll
    for (int m = 0; m < M; m++) {
        const int8_t *a = Aq + m * K + 32 * b;
        const int4 a0 = lbcu_ld16(a), a1 = lbcu_ld16(a + 16);
        const float da = lbcu_h2f(Ad[m * (K / 32) + b]);
        const int sa = (int)As[m * (K / 16) + 2 * b] + (int)As[m * (K / 16) + 2 * b + 1];
        int s = __dp4a(l0, a0.x, 0);
        s = __dp4a(l1, a0.y, s);
        s = __dp4a(l2, a0.z, s);
        s = __dp4a(l3, a0.w, s);
        s = __dp4a(h0, a1.x, s);
        s = __dp4a(h1, a1.y, s);
        s = __dp4a(h2, a1.z, s);
        s = __dp4a(h3, a1.w, s);
        s -= 8 * sa;
        acc[m] += (float)s * (dw * da);
    }
}

template <int M>
__global__ void __launch_bounds__(kThreads)
    gemv_q4_0_kernel(const uint8_t *__restrict__ Wq, const uint16_t *__restrict__ Wd, int64_t N, int64_t K,
                     const int8_t *__restrict__ Aq, const uint16_t *__restrict__ Ad, const int16_t *__restrict__ As,
                     float *__restrict__ Y, int64_t ldy) {
    const int64_t n = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (n >= N) return;
    const int64_t nb = K / 32;
    const uint8_t *w = Wq + n * (K / 2);
    const uint16_t *wd = Wd + n * nb;
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; m++) acc[m] = 0.0f;
    for (int64_t b0 = 0; b0 < nb; b0 += 64) {
        const int64_t ba = b0 + lane, bb = ba + 32;
        int4 wa = make_int4(0, 0, 0, 0), wb = make_int4(0, 0, 0, 0);
        float da = 0.0f, db = 0.0f;
        if (ba < nb) wa = lbcu_ld16(w + 16 * ba), da = lbcu_h2f(wd[ba]);
        if (bb < nb) wb = lbcu_ld16(w + 16 * bb), db = lbcu_h2f(wd[bb]);
        if (ba < nb) dot_q4_0<M>(wa, da, ba, K, Aq, Ad, As, acc);
        if (bb < nb) dot_q4_0<M>(wb, db, bb, K, Aq, Ad, As, acc);
    }
#pragma unroll
    for (int m = 0; m < M; m++) acc[m] = lbcu_warp_sum(acc[m]);
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < M; m++) Y[m * ldy + n] = acc[m];
    }
}

// Q4_K scale and min of sub-block j (0..7) from the 12 scale bytes, held as
// three words (lb_get_scale_min_k4 of formats/kquants.h); selecting words by
// comparisons keeps them in registers.
__device__ __forceinline__ uint32_t q4k_byte(uint32_t w0, uint32_t w1, uint32_t w2, int i) {
    const uint32_t w = i < 4 ? w0 : i < 8 ? w1 : w2;
    return (w >> (8 * (i & 3))) & 0xffu;
}
__device__ __forceinline__ void q4k_scale_min(uint32_t w0, uint32_t w1, uint32_t w2, int j, int &sc, int &mn) {
    if (j < 4) {
        sc = (int)(q4k_byte(w0, w1, w2, j) & 63u);
        mn = (int)(q4k_byte(w0, w1, w2, j + 4) & 63u);
    } else {
        sc = (int)((q4k_byte(w0, w1, w2, j + 4) & 0xfu) | ((q4k_byte(w0, w1, w2, j - 4) >> 6) << 4));
        mn = (int)((q4k_byte(w0, w1, w2, j + 4) >> 4) | ((q4k_byte(w0, w1, w2, j) >> 6) << 4));
    }
}

// Q4_K: the GGUF blocks (d, dmin, 12 scale bytes, 128 code bytes). Eight
// lanes per block, lane c taking code bytes 16c..16c+15: with j = c/2 and
// h = c%2 their low nibbles are weights 64j + 16h + 0..15 (sub-block 2j),
// their high nibbles 64j + 32 + 16h + 0..15 (sub-block 2j + 1); each lane
// also reads the 16-byte header (one sector for the 8). Per activation row
// as lb_dot_k4_groups: d yd sum(sc q a) - dmin yd sum(m bsum).
template <int M>
__device__ __forceinline__ void dot_q4_k(int4 hd, int4 qv, int64_t b, int j, int h, int64_t K,
                                         const int8_t *__restrict__ Aq, const float *__restrict__ Ak,
                                         const int16_t *__restrict__ As, float (&acc)[M]) {
    const float d = lbcu_h2f((uint32_t)hd.x & 0xffffu), dmin = lbcu_h2f((uint32_t)hd.x >> 16);
    int sc0, m0, sc1, m1;
    q4k_scale_min((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, 2 * j, sc0, m0);
    q4k_scale_min((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, 2 * j + 1, sc1, m1);
    const uint32_t m4 = 0x0f0f0f0fu;
    const int l0 = (int)((uint32_t)qv.x & m4), l1 = (int)((uint32_t)qv.y & m4), l2 = (int)((uint32_t)qv.z & m4),
              l3 = (int)((uint32_t)qv.w & m4);
    const int h0 = (int)(((uint32_t)qv.x >> 4) & m4), h1 = (int)(((uint32_t)qv.y >> 4) & m4),
              h2 = (int)(((uint32_t)qv.z >> 4) & m4), h3 = (int)(((uint32_t)qv.w >> 4) & m4);
#pragma unroll
    for (int m = 0; m < M; m++) {
        const int8_t *a = Aq + m * K + 256 * b + 64 * j + 16 * h;
        const int4 alo = lbcu_ld16(a), ahi = lbcu_ld16(a + 32);
        const int16_t *bs = As + m * (K / 16) + 16 * b + 4 * j + h; // sums of 16: [0] sub-block 2j, [2] 2j + 1
        int il = __dp4a(l0, alo.x, 0);
        il = __dp4a(l1, alo.y, il);
        il = __dp4a(l2, alo.z, il);
        il = __dp4a(l3, alo.w, il);
        int ih = __dp4a(h0, ahi.x, 0);
        ih = __dp4a(h1, ahi.y, ih);
        ih = __dp4a(h2, ahi.z, ih);
        ih = __dp4a(h3, ahi.w, ih);
        const int dot = sc0 * il + sc1 * ih;
        const int mins = m0 * (int)bs[0] + m1 * (int)bs[2];
        const float yd = Ak[m * (K / 256) + b];
        acc[m] += (d * yd) * (float)dot - (dmin * yd) * (float)mins;
    }
}

// blocks b = lane/8 + 4 i, two in flight per loop trip
template <int M>
__global__ void __launch_bounds__(kThreads)
    gemv_q4_k_kernel(const uint8_t *__restrict__ Wq, int64_t N, int64_t K, const int8_t *__restrict__ Aq,
                     const float *__restrict__ Ak, const int16_t *__restrict__ As, float *__restrict__ Y, int64_t ldy) {
    const int64_t n = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (n >= N) return;
    const int64_t nb = K / 256;
    const uint8_t *row = Wq + n * nb * LBCU_Q4_K_BYTES;
    const int c = lane & 7, j = c >> 1, h = c & 1;
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; m++) acc[m] = 0.0f;
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const int64_t ba = b0 + lane / 8, bb = ba + 4;
        int4 ha = make_int4(0, 0, 0, 0), qa = ha, hb = ha, qb = ha;
        if (ba < nb) ha = lbcu_ld16(row + ba * LBCU_Q4_K_BYTES), qa = lbcu_ld16(row + ba * LBCU_Q4_K_BYTES + 16 + 16 * c);
        if (bb < nb) hb = lbcu_ld16(row + bb * LBCU_Q4_K_BYTES), qb = lbcu_ld16(row + bb * LBCU_Q4_K_BYTES + 16 + 16 * c);
        if (ba < nb) dot_q4_k<M>(ha, qa, ba, j, h, K, Aq, Ak, As, acc);
        if (bb < nb) dot_q4_k<M>(hb, qb, bb, j, h, K, Aq, Ak, As, acc);
    }
#pragma unroll
    for (int m = 0; m < M; m++) acc[m] = lbcu_warp_sum(acc[m]);
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < M; m++) Y[m * ldy + n] = acc[m];
    }
}

template <int M>
cudaError_t launch_gemv(const lb_cuda_matrix *W, const lbcu_act &a, int m0, float *Y, int64_t ldy, cudaStream_t s) {
    const int64_t K = W->K;
    const dim3 grid((unsigned)((W->N + kRowsPerBlock - 1) / kRowsPerBlock));
    const int8_t *aq = a.qs + (int64_t)m0 * K;
    const int16_t *as = a.s16 + (int64_t)m0 * (K / 16);
    switch (W->type) {
    case LBCU_Q8_0:
        gemv_q8_0_kernel<M><<<grid, kThreads, 0, s>>>((const int8_t *)W->q, (const uint16_t *)W->d, W->N, K, aq,
                                                      a.d0 + (int64_t)m0 * (K / 32), Y, ldy);
        break;
    case LBCU_Q4_0:
        gemv_q4_0_kernel<M><<<grid, kThreads, 0, s>>>((const uint8_t *)W->q, (const uint16_t *)W->d, W->N, K, aq,
                                                      a.d0 + (int64_t)m0 * (K / 32), as, Y, ldy);
        break;
    case LBCU_Q4_K:
        gemv_q4_k_kernel<M><<<grid, kThreads, 0, s>>>((const uint8_t *)W->q, W->N, K, aq,
                                                      a.dk + (int64_t)m0 * (K / 256), as, Y, ldy);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

// ---- fp16 weights for the prefill path: the CPU's to_float, then rounded ----
// (__fmul_rn / __fsub_rn: no contraction into an fma, so the float before
// rounding is the CPU's)

__global__ void dequant_q8_0_kernel(const int8_t *__restrict__ q, const uint16_t *__restrict__ d, int64_t nblk,
                                    __half *__restrict__ out) {
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblk) return;
    const float s = lbcu_h2f(d[b]);
#pragma unroll 8
    for (int i = 0; i < 32; i++) out[b * 32 + i] = __float2half_rn(__fmul_rn((float)q[b * 32 + i], s));
}

__global__ void dequant_q4_0_kernel(const uint8_t *__restrict__ q, const uint16_t *__restrict__ d, int64_t nblk,
                                    __half *__restrict__ out) {
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblk) return;
    const float s = lbcu_h2f(d[b]);
#pragma unroll 4
    for (int i = 0; i < 16; i++) {
        const int v = q[b * 16 + i];
        out[b * 32 + i] = __float2half_rn(__fmul_rn((float)((v & 15) - 8), s));
        out[b * 32 + 16 + i] = __float2half_rn(__fmul_rn((float)((v >> 4) - 8), s));
    }
}

// one thread per sub-block of 32 (lb_dequantize_row_q4_K: d sc q - dmin m)
__global__ void dequant_q4_k_kernel(const uint8_t *__restrict__ q, int64_t nsub, __half *__restrict__ out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nsub) return;
    const uint8_t *blk = q + (i / 8) * LBCU_Q4_K_BYTES;
    const int sb = (int)(i % 8);
    const int4 hd = lbcu_ld16(blk);
    int sc, mn;
    q4k_scale_min((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, sb, sc, mn);
    const float d1 = __fmul_rn(lbcu_h2f((uint32_t)hd.x & 0xffffu), (float)sc);
    const float m1 = __fmul_rn(lbcu_h2f((uint32_t)hd.x >> 16), (float)mn);
    const uint8_t *qb = blk + 16 + 32 * (sb / 2);
    const int shift = 4 * (sb % 2);
#pragma unroll 8
    for (int l = 0; l < 32; l++)
        out[i * 32 + l] = __float2half_rn(__fsub_rn(__fmul_rn(d1, (float)((qb[l] >> shift) & 15)), m1));
}

unsigned grid_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

} // namespace

cudaError_t lbcu_quantize_q8_0(const float *X, int M, int64_t K, const lbcu_act &a, cudaStream_t s) {
    const int64_t nblk = (int64_t)M * (K / 32);
    quant_q8_0_kernel<<<grid_for(nblk, kThreads / 32), kThreads, 0, s>>>(X, nblk, a.qs, a.d0, a.s16);
    return cudaGetLastError();
}

cudaError_t lbcu_quantize_q8_k(const float *X, int M, int64_t K, const lbcu_act &a, cudaStream_t s) {
    const int64_t nblk = (int64_t)M * (K / 256);
    quant_q8_k_kernel<<<grid_for(nblk, kThreads / 32), kThreads, 0, s>>>(X, nblk, a.qs, a.dk, a.s16);
    return cudaGetLastError();
}

cudaError_t lbcu_to_half(const float *X, int64_t n, __half *y, cudaStream_t s) {
    const int64_t blocks = n / 256 + 1;
    to_half_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, s>>>(X, n, y);
    return cudaGetLastError();
}

cudaError_t lbcu_gemv(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                      cudaStream_t s) {
    if (W->type == LBCU_MX) return lbcu_gemv_mx(W, a, m0, mc, Y, ldy, s);
    Y += (int64_t)m0 * ldy;
    switch (mc) {
    case 1: return launch_gemv<1>(W, a, m0, Y, ldy, s);
    case 2: return launch_gemv<2>(W, a, m0, Y, ldy, s);
    case 3: return launch_gemv<3>(W, a, m0, Y, ldy, s);
    case 4: return launch_gemv<4>(W, a, m0, Y, ldy, s);
    case 5: return launch_gemv<5>(W, a, m0, Y, ldy, s);
    case 6: return launch_gemv<6>(W, a, m0, Y, ldy, s);
    case 7: return launch_gemv<7>(W, a, m0, Y, ldy, s);
    case 8: return launch_gemv<8>(W, a, m0, Y, ldy, s);
    default: return cudaErrorInvalidValue;
    }
}

cudaError_t lbcu_dequant_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s) {
    const int64_t nblk = W->N * (W->K / 32);
    switch (W->type) {
    case LBCU_Q8_0:
        dequant_q8_0_kernel<<<grid_for(nblk, 256), 256, 0, s>>>((const int8_t *)W->q, (const uint16_t *)W->d, nblk, w16);
        break;
    case LBCU_Q4_0:
        dequant_q4_0_kernel<<<grid_for(nblk, 256), 256, 0, s>>>((const uint8_t *)W->q, (const uint16_t *)W->d, nblk, w16);
        break;
    case LBCU_Q4_K:
        dequant_q4_k_kernel<<<grid_for(nblk, 256), 256, 0, s>>>((const uint8_t *)W->q, nblk, w16);
        break;
    case LBCU_MX:
        return lbcu_dequant_mx_fp16(W, w16, s);
    default:
        if (lbcu_is_bcq(W->type)) return lbcu_dequant_bcq_fp16(W, w16, s);
        if (lbcu_is_abq(W->type)) return lbcu_dequant_abq_fp16(W, w16, s);
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
