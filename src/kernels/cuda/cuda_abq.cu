// Seed 004 (ABQ-LLM) on the GPU: ABQ_W{q} / ABQ_W2S weights (formats/abq.h)
// times p-bit activations as a sum of 1-bit products on the binary tensor
// cores, mma.sync m16n8k128 b1 with AND + popc (docs/cuda.md):
//
//   sum_j cw_j ca_j = sum_{s<q} sum_{t<p} 2^(s+t) popc(Wplane_s AND Aplane_t)
//
// One mma covers one group of 128 weights (k = 128 bits). Its 16 A rows are
// the 8 bit planes of two tokens (planes p..7 are zero): the bit planes fill
// the M dimension, so a single token's GEMV is not padded to 8 rows (the
// paper's GEMV elimination). Its 8 B columns are (output row, weight plane)
// pairs: 4 rows x 2 planes (q <= 2), 2 rows x 4 planes (q <= 4 and W2S) or
// 1 row x 8 planes. Each lane weights its four popcounts by 2^(s+t); the
// zero points' terms of I_g = P - za Sw - zw Sa + 128 zw za are added by one
// lane per row (zw, Sa) and, for za Sw, from the popcounts of the B
// fragments.
//
// Exact sums in integers: a group's fp16 scale is m 2^e (m an 11-bit
// integer); with E the row's smallest e (lb_cuda_internal.h: row_e), every
// dw_g I_g is the integer (m_g 2^(e_g - E)) I_g times 2^E, so each lane sums
// them in int64 and the warps' sums meet exactly. The result, 2^E times that
// integer converted to double once, equals the CPU's double sum of dw_g I_g
// wherever that sum is exact (below 2^53 in units of the row's smallest
// scale): then the float is the CPU's, bit for bit (test_cuda_seeds checks
// it). A row whose scales span more than 2^20 gets E raised to keep the
// integers in 31 bits (its smallest scales then lose low bits).
//
// Layouts (lb_cuda_internal.h), made so that a lane's 16-byte load holds its
// fragment word for four consecutive groups: weights per (row, 4 groups,
// plane) 16 words, word tig of group 4 j + u at 4 tig + u; activations the
// same per (token, 4 groups, plane); groups padded to a multiple of 4 with
// zeros (zero scale, zero planes: no contribution).
#include "cuda_common.cuh"

namespace {

// ---- activations: lb_abq_quantize_act on the GPU, bit for bit ----
// One block per token: the range [min(x, 0), max(x, 0)] (NaN ignored, as the
// CPU's comparisons do), then per group of 128 a warp: each lane one code of
// a 32-wide slice, the slice's plane words by __ballot_sync (bit L = lane L =
// weight 32 w + L, the CPU's bit j % 8 of byte j / 8 read little-endian).
__global__ void __launch_bounds__(1024) abq_quantize_kernel(const float *__restrict__ X, int64_t K, int p,
                                                            uint32_t *__restrict__ planes, int32_t *__restrict__ sums,
                                                            float *__restrict__ ad, int32_t *__restrict__ az) {
    __shared__ float s_lo[32], s_hi[32];
    const int m = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const float *x = X + (int64_t)m * K;
    float lo = 0.0f, hi = 0.0f;
    for (int64_t j = 4 * threadIdx.x; j < K; j += 4 * blockDim.x) { // K is a multiple of 128
        const float4 v4 = *(const float4 *)(x + j);
        const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if (v[i] < lo) lo = v[i];
            if (v[i] > hi) hi = v[i];
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float l2 = __shfl_xor_sync(0xffffffffu, lo, o), h2 = __shfl_xor_sync(0xffffffffu, hi, o);
        if (l2 < lo) lo = l2;
        if (h2 > hi) hi = h2;
    }
    if (lane == 0) s_lo[warp] = lo, s_hi[warp] = hi;
    __syncthreads();
    lo = 0.0f, hi = 0.0f;
    for (int w = 0; w < nwarps; w++) {
        if (s_lo[w] < lo) lo = s_lo[w];
        if (s_hi[w] > hi) hi = s_hi[w];
    }
    const int cmax = (1 << p) - 1;
    const float d = __fdiv_rn(__fsub_rn(hi, lo), (float)cmax);
    const float id = d > 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    const int z = d > 0.0f ? min(max(__float2int_rn(__fmul_rn(-lo, id)), 0), cmax) : 0;
    if (threadIdx.x == 0) ad[m] = d, az[m] = z;
    const int64_t G = K / LBCU_ABQ_G, G4 = LBCU_ABQ_CHUNKS(K);
    for (int64_t g = warp; g < 4 * G4; g += nwarps) { // the padding groups too: zeros
        float v[4];
#pragma unroll
        for (int w = 0; w < 4; w++) v[w] = g < G ? x[g * LBCU_ABQ_G + 32 * w + lane] : 0.0f;
        uint32_t *pl = planes + ((m * G4 + g / 4) * 8) * 16 + g % 4;
        int sum = 0;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            const float u = __fmul_rn(v[w], id);
            int c = u >= (float)cmax ? cmax : u > -(float)cmax ? min(max(__float2int_rn(u) + z, 0), cmax) : 0;
            if (g >= G) c = 0;
            sum += c;
#pragma unroll
            for (int t = 0; t < 8; t++) {
                const uint32_t word = __ballot_sync(0xffffffffu, (c >> t) & 1);
                if (lane == t) pl[t * 16 + 4 * w] = word;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0) sums[m * 4 * G4 + g] = sum;
    }
}

__device__ __forceinline__ void bmma_and_popc(int c[4], uint32_t a0, uint32_t a1, uint32_t b) {
    asm volatile("mma.sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.and.popc "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a0), "r"(a1), "r"(b));
}

__device__ __forceinline__ uint32_t word_of(const uint4 &v, int u) { return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w; }
__device__ __forceinline__ int word_of(const int4 &v, int u) { return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w; }

// The scale d (fp16 bits, the low half of a head word) as the integer
// m 2^(e - E); 0 for d = 0.
__device__ __forceinline__ int scale_int(uint32_t head, int E) {
    const int e = (int)(head >> 10) & 31, mant = (int)(head & 1023u);
    const int m = e ? mant | 1024 : mant, sh = (e ? e : 1) - 25 - E;
    const int v = sh >= 0 ? m << sh : m >> -sh;
    return (head & 0x8000u) ? -v : v;
}

__device__ __forceinline__ long long shfl_xor_ll(long long v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }

// One block: NR = 8 / QW output rows and, per warp, NT pairs of tokens.
// Fragments of m16n8k128 b1 (lane = 4 gid + tig): A a0 = row gid, a1 = row
// gid + 8, each the 32 bits k = 32 tig .. 32 tig + 31; B the column gid, the
// same bits; C c0, c1 = row gid, columns 2 tig, 2 tig + 1; c2, c3 row gid + 8.
//
// SPLITK (the GEMV, M <= 2 NT): the block's 4 warps split K by 4-group
// chunks, warp w taking chunks w, w + 4, ..., and their sums meet in shared
// memory. Otherwise (the GEMM, any M): grid.y tiles the tokens, each warp
// takes 2 NT tokens of the block's 4 x 2 NT and all of K, reading the same
// weights as its neighbours (from L1).
constexpr int kWarps = 4;
template <int QW, int NT, bool SPLITK>
__global__ void __launch_bounds__(32 * kWarps) abq_bmma_kernel(
    const uint4 *__restrict__ wplanes, const uint4 *__restrict__ heads, const int32_t *__restrict__ row_e, int q,
    const uint4 *__restrict__ aplanes, const int4 *__restrict__ asums, const float *__restrict__ ad,
    const int32_t *__restrict__ az, int M, int64_t N, int64_t G4, float *__restrict__ Y, int64_t ldy) {
    constexpr int NR = 8 / QW, NA = 2 * NT;
    __shared__ long long red[SPLITK ? kWarps : 1][NR][NA + 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gid = lane >> 2, tig = lane & 3;
    const int64_t n0 = (int64_t)blockIdx.x * NR;
    // this warp's tokens: [tb, tb + M) of the launch's
    const int tb = SPLITK ? 0 : ((int)blockIdx.y * kWarps + warp) * NA;
    if (!SPLITK) {
        M = min(NA, M - tb);
        if (M <= 0) return; // whole warps; no barrier in this mode
        aplanes += (int64_t)tb * G4 * 32, asums += (int64_t)tb * G4, ad += tb, az += tb, Y += (int64_t)tb * ldy;
    }
    // this lane's B column: row n0 + nb, plane sb
    const int nb = gid / QW, sb = gid % QW;
    const bool rb = n0 + nb < N, bvalid = rb && sb < q;
    const int64_t rowb = n0 + (rb ? nb : 0);
    const uint4 *bp = wplanes + (rowb * G4 * q + (sb < q ? sb : 0)) * 4 + tig;
    const uint4 *hb = heads + rowb * G4;
    const int Eb = row_e[rowb];
    // its C columns: row n0 + nc, planes sc and sc + 1
    const int nc = 2 * tig / QW, sc = 2 * tig % QW;
    const bool rc = n0 + nc < N, corr = gid == 0 && sc == 0 && rc;
    const int64_t rowc = n0 + (rc ? nc : 0);
    const uint4 *hc = heads + rowc * G4;
    const int Ec = row_e[rowc];
    int za[NA];
#pragma unroll
    for (int i = 0; i < NA; i++) za[i] = i < M ? az[i] : 0;
    long long acc[NA], wacc = 0;
#pragma unroll
    for (int i = 0; i < NA; i++) acc[i] = 0;

    for (int64_t j = SPLITK ? warp : 0; j < G4; j += SPLITK ? kWarps : 1) {
        const uint4 zero4 = make_uint4(0, 0, 0, 0);
        const uint4 b4 = bvalid ? bp[j * q * 4] : zero4;
        const uint4 hc4 = rc ? hc[j] : zero4, hb4 = rb ? hb[j] : zero4;
        uint4 a4[NA];
        int4 s4[NA];
#pragma unroll
        for (int i = 0; i < NA; i++) {
            a4[i] = i < M ? aplanes[((i * G4 + j) * 8 + gid) * 4 + tig] : zero4;
            s4[i] = corr && i < M ? asums[i * G4 + j] : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const uint32_t b = word_of(b4, u), hcw = word_of(hc4, u);
            const int sgc = scale_int(hcw, Ec), zwc = (int)(int16_t)(hcw >> 16);
            wacc += (long long)scale_int(word_of(hb4, u), Eb) * (__popc(b) << sb); // za Sw, za applied at the end
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int m0 = 2 * t, m1 = 2 * t + 1;
                int c[4] = {0, 0, 0, 0};
                bmma_and_popc(c, word_of(a4[m0], u), word_of(a4[m1], u), b);
                int p0 = (c[0] << (sc + gid)) + (c[1] << (sc + 1 + gid));
                int p1 = (c[2] << (sc + gid)) + (c[3] << (sc + 1 + gid));
                if (corr) {
                    p0 += -zwc * word_of(s4[m0], u) + LBCU_ABQ_G * zwc * za[m0];
                    p1 += -zwc * word_of(s4[m1], u) + LBCU_ABQ_G * zwc * za[m1];
                }
                acc[m0] += (long long)sgc * p0;
                acc[m1] += (long long)sgc * p1;
            }
        }
    }
    // a lane's acc[] belong to row nc: summed over the lanes of the same nc
    // (other gid; for QW >= 4 other low bits of tig), then written by one of
    // them; its wacc to row nb = lane / (4 QW): summed over lane's low bits
#pragma unroll
    for (int m = 0; m < NA; m++) {
        if (m >= M) break;
        long long a = acc[m];
        a += shfl_xor_ll(a, 4);
        a += shfl_xor_ll(a, 8);
        a += shfl_xor_ll(a, 16);
        if (QW >= 4) a += shfl_xor_ll(a, 1);
        if (QW >= 8) a += shfl_xor_ll(a, 2);
        acc[m] = a;
        if (SPLITK && gid == 0 && sc == 0) red[warp][nc][m] = a;
    }
    long long wr = wacc;
#pragma unroll
    for (int o = 1; o < 4 * QW; o <<= 1) wr += shfl_xor_ll(wr, o);
    if (!SPLITK) { // this warp has every sum of its tokens: row nc's writer finishes them
        const long long w = __shfl_sync(0xffffffffu, wr, (nc * 4 * QW) & 31);
        if (gid == 0 && sc == 0 && rc)
#pragma unroll
            for (int m = 0; m < NA; m++) {
                if (m >= M) break;
                const long long T = acc[m] - (long long)za[m] * w; // sum_g (dw_g I_g) / 2^E, exactly
                Y[(int64_t)m * ldy + n0 + nc] = (float)(ldexp((double)T, Ec) * (double)ad[m]);
            }
        return;
    }
    if (lane % (4 * QW) == 0) red[warp][lane / (4 * QW)][NA] = wr;
    __syncthreads();
    if (threadIdx.x < NR * M) {
        const int r = threadIdx.x / M, m = threadIdx.x % M;
        long long a = 0, w = 0;
        for (int k = 0; k < kWarps; k++) a += red[k][r][m], w += red[k][r][NA];
        if (n0 + r < N) {
            const long long T = a - (long long)az[m] * w; // sum_g (dw_g I_g) / 2^E, exactly
            Y[(int64_t)m * ldy + n0 + r] = (float)(ldexp((double)T, row_e[n0 + r]) * (double)ad[m]);
        }
    }
}

template <int QW>
cudaError_t launch_qw(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                      cudaStream_t s) {
    constexpr int NR = 8 / QW;
    const int64_t G4 = LBCU_ABQ_CHUNKS(W->K);
    const unsigned rows = (unsigned)((W->N + NR - 1) / NR);
    const uint4 *ap = (const uint4 *)(a.planes + (int64_t)m0 * G4 * 4 * 32);
    const int4 *as = (const int4 *)(a.sums + (int64_t)m0 * G4 * 4);
    const uint4 *wp = (const uint4 *)W->q, *hd = (const uint4 *)W->d;
#define LBCU_ABQ_LAUNCH(NT, SPLITK, GRID)                                                                     \
    abq_bmma_kernel<QW, NT, SPLITK><<<GRID, 32 * kWarps, 0, s>>>(wp, hd, W->row_e, W->bits, ap, as, a.ad + m0, \
                                                                a.az + m0, mc, W->N, G4, Y, ldy)
    if (mc > 8) { // the GEMM: 4 warps x 8 tokens a block (lbcu_gemv_abq: above 16 rows)
        LBCU_ABQ_LAUNCH(4, false, dim3(rows, (unsigned)((mc + 8 * kWarps - 1) / (8 * kWarps))));
        return cudaGetLastError();
    }
    switch ((mc + 1) / 2) {
    case 1: LBCU_ABQ_LAUNCH(1, true, rows); break;
    case 2: LBCU_ABQ_LAUNCH(2, true, rows); break;
    case 3: LBCU_ABQ_LAUNCH(3, true, rows); break;
    case 4: LBCU_ABQ_LAUNCH(4, true, rows); break;
    default: return cudaErrorInvalidValue;
    }
#undef LBCU_ABQ_LAUNCH
    return cudaGetLastError();
}

// fp16 weights for the prefill path: d (c - z) in float as the CPU, rounded once.
__global__ void abq_dequant_kernel(const uint32_t *__restrict__ wplanes, const uint32_t *__restrict__ heads, int q,
                                   int64_t N, int64_t K, __half *__restrict__ w16) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * K) return;
    const int64_t n = i / K, k = i % K, G4 = LBCU_ABQ_CHUNKS(K), g = k / LBCU_ABQ_G;
    const int j = (int)(k % LBCU_ABQ_G);
    const uint32_t *pl = wplanes + ((n * G4 + g / 4) * q) * 16 + g % 4;
    int c = 0;
    for (int s = 0; s < q; s++) c |= (int)((pl[s * 16 + 4 * (j / 32)] >> (j % 32)) & 1u) << s;
    const uint32_t h = heads[n * G4 * 4 + g];
    w16[i] = __float2half_rn(__fmul_rn(lbcu_h2f(h & 0xffffu), (float)(c - (int)(int16_t)(h >> 16))));
}

} // namespace

cudaError_t lbcu_quantize_abq(const float *X, int M, int64_t K, int p, const lbcu_act &a, cudaStream_t s) {
    if (p < 1 || p > 8 || K % LBCU_ABQ_G) return cudaErrorInvalidValue;
    const int threads = K >= 4096 ? 1024 : K >= 1024 ? 256 : 128;
    abq_quantize_kernel<<<M, threads, 0, s>>>(X, K, p, a.planes, a.sums, a.ad, a.az);
    return cudaGetLastError();
}

cudaError_t lbcu_gemv_abq(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                          cudaStream_t s) {
    if (a.kind != LBCU_ABQ_ACT || mc < 1) return cudaErrorInvalidValue;
    // up to 16 rows the GEMV in passes of 8 (measured faster there), the GEMM above
    for (int p0 = 0; p0 < mc; p0 += mc > 16 ? mc : 8) {
        const int pc = mc > 16 ? mc : mc - p0 < 8 ? mc - p0 : 8;
        float *Yp = Y + (int64_t)(m0 + p0) * ldy;
        const cudaError_t e = W->bits <= 2   ? launch_qw<2>(W, a, m0 + p0, pc, Yp, ldy, s)
                              : W->bits <= 4 ? launch_qw<4>(W, a, m0 + p0, pc, Yp, ldy, s)
                                             : launch_qw<8>(W, a, m0 + p0, pc, Yp, ldy, s);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cudaError_t lbcu_dequant_abq_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s) {
    const int64_t n = W->N * W->K;
    abq_dequant_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const uint32_t *)W->q, (const uint32_t *)W->d,
                                                                  W->bits, W->N, W->K, w16);
    return cudaGetLastError();
}
