// What the .cu files share: error checks, fp16 bit conversions bit-exact
// with core/fp16.h, the activation workspace and the kernel launchers.
#ifndef LB_CUDA_COMMON_CUH
#define LB_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "lb_cuda.h"
#include "lb_cuda_internal.h"

// Every CUDA call is checked; a failure records file, line, the call and
// CUDA's message, and the enclosing function returns -1.
#define LBCU_CHECK(call)                                                                                   \
    do {                                                                                                   \
        const cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                           \
            lbcu_set_error("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, cudaGetErrorString(e_),        \
                           cudaGetErrorName(e_));                                                          \
            return -1;                                                                                     \
        }                                                                                                  \
    } while (0)

// fp16 bits -> float: exact, as lb_fp16_to_f32 (subnormals included).
__device__ __forceinline__ float lbcu_h2f(uint32_t bits) { return __half2float(__ushort_as_half((unsigned short)bits)); }

// float -> fp16 bits: lb_f32_to_fp16 of core/fp16.h line for line (round to
// nearest even, NaN kept, overflow to inf), so an activation scale stored on
// the GPU is the CPU's to the bit whatever the intrinsics do at the edges.
__device__ __forceinline__ uint16_t lbcu_f32_to_fp16(float f) {
    const uint32_t x = __float_as_uint(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        if (ax < 0x33000000u) return (uint16_t)sign;
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e; // 14 .. 24
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = (ax >> 13) - (112u << 10);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

__device__ __forceinline__ float lbcu_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ int4 lbcu_ld16(const void *p) { return *(const int4 *)p; }

// Activations as the kernels read them (the workspace of the last prepare).
// GEMV: int8 codes qs (M rows of K), per 32 the Q8_0 scale as fp16 bits (d0)
// or per 256 the Q8_K float scale (dk), and per 16 codes their sum (s16:
// Q4_0's -8 offset, MX's zeros, Q4_K's mins). FP16: xh, M rows of K.
struct lbcu_act {
    int kind; // 0 (nothing prepared), LBCU_Q8_0, LBCU_Q8_K, LBCU_F16, LBCU_ACT_F32 or LBCU_ABQ_ACT
    int M;
    int64_t K;
    int8_t *qs;
    uint16_t *d0;
    float *dk;
    int16_t *s16;
    __half *xh;
    const float *xf;   // ACT_F32: M rows of K (a copy in the workspace)
    int p;             // ABQ_ACT: the bits
    uint32_t *planes;  // ABQ_ACT: M x K/128 groups x 8 planes x 4 words (planes p..7 zero)
    int32_t *sums;     // ABQ_ACT: M x K/128 code sums
    float *ad;         // ABQ_ACT: M scales da
    int32_t *az;       // ABQ_ACT: M zero points za
};

// Called whenever a shared scratch buffer is freed or moved (the activation
// workspace, BCQ's partial sums, attention's splits): lb_cuda_scratch_epoch
// changes, so a CUDA graph that captured the old pointers is not replayed.
void lbcu_bump_epoch(void);

// Launchers (cuda_kernels.cu, cuda_mx.cu): each returns the launch's error.
cudaError_t lbcu_quantize_q8_0(const float *X, int M, int64_t K, const lbcu_act &a, cudaStream_t s);
cudaError_t lbcu_quantize_q8_k(const float *X, int M, int64_t K, const lbcu_act &a, cudaStream_t s);
cudaError_t lbcu_to_half(const float *X, int64_t n, __half *y, cudaStream_t s);
// GEMV of activation rows [m0, m0 + mc) (mc 1..8) into Y + m0 ldy.
cudaError_t lbcu_gemv(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy, cudaStream_t s);
cudaError_t lbcu_gemv_mx(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                         cudaStream_t s);
// Seed 003 (cuda_bcq.cu): the LUT-GEMV of BCQ rows on fp32 activations.
cudaError_t lbcu_gemv_bcq(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                          cudaStream_t s);
cudaError_t lbcu_dequant_bcq_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s);
void lbcu_bcq_release(void); // its scratch (partial sums, counters)
// Seed 004 (cuda_abq.cu): activations to p bit planes, the BMMA GEMV (in
// passes of 8 up to mc = 16) or GEMM (mc > 16) of rows [m0, m0 + mc).
cudaError_t lbcu_quantize_abq(const float *X, int M, int64_t K, int p, const lbcu_act &a, cudaStream_t s);
cudaError_t lbcu_gemv_abq(const lb_cuda_matrix *W, const lbcu_act &a, int m0, int mc, float *Y, int64_t ldy,
                          cudaStream_t s);
cudaError_t lbcu_dequant_abq_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s);
// The weights as fp16 (N x K) for the prefill path.
cudaError_t lbcu_dequant_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s);
cudaError_t lbcu_dequant_mx_fp16(const lb_cuda_matrix *W, __half *w16, cudaStream_t s);

#endif
