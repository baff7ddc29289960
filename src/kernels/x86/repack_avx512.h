/* AVX-512 VNNI GEMV / GEMM for the interleaved layouts of formats/repack.h
 * (Q4_0, IQ4_NL and Q8_0 in 4x4, 4x8 and 8x8), plus the GEMM's 4-row
 * activation quantizer. Names follow KleidiAI:
 * lb_{gemv,gemm}_<weights>x<R>_<acts>_<R>x<C>_avx512vnni. All take the
 * lb_gemm_fn arguments (kernels/dispatch.h); gemv's activations are plain
 * Q8_0 rows, gemm's are lb_block_q8_0x4v groups. */
#ifndef LB_REPACK_AVX512_H
#define LB_REPACK_AVX512_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/x86/kernels_x86.h"

#if LB_HAVE_X86_KERNELS
/* Bit-identical to lb_quantize_q8_0x4v_ref. */
void lb_quantize_q8_0x4v_avx512(const float *x, size_t ldx, void *y, int64_t k);

#define LB_REPACK_AVX512_DECL(w, R, C)                                                                   \
    void lb_gemv_##w##x##R##_q8_0_##R##x##C##_avx512vnni(int64_t K, const void *W, size_t w_row_size,    \
                                                         int n0, int n1, const void *A,                  \
                                                         size_t a_row_size, int M, float *Y, size_t ldy); \
    void lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_avx512vnni(int64_t K, const void *W, size_t w_row_size,  \
                                                           int n0, int n1, const void *A,                \
                                                           size_t a_row_size, int M, float *Y, size_t ldy);
LB_REPACK_AVX512_DECL(q4_0, 4, 4)
LB_REPACK_AVX512_DECL(q4_0, 4, 8)
LB_REPACK_AVX512_DECL(q4_0, 8, 8)
LB_REPACK_AVX512_DECL(iq4_nl, 4, 4)
LB_REPACK_AVX512_DECL(iq4_nl, 4, 8)
LB_REPACK_AVX512_DECL(iq4_nl, 8, 8)
LB_REPACK_AVX512_DECL(q8_0, 4, 4)
LB_REPACK_AVX512_DECL(q8_0, 4, 8)
LB_REPACK_AVX512_DECL(q8_0, 8, 8)
LB_REPACK_AVX512_DECL(mxfp4_nl, 4, 4)
LB_REPACK_AVX512_DECL(mxfp4_nl, 4, 8)
LB_REPACK_AVX512_DECL(mxfp4_nl, 8, 8)

/* lb_kernel_list entries (field order: see kernels/repack_kernels.h) */
#define LB_REPACK_AVX512_ENTRY(T, w, R, C)                                                                 \
    {T, LB_TYPE_Q8_0, LB_ISA_AVX512, #w "x" #R "_q8_0_" #R "x" #C "_avx512vnni", lb_quantize_row_q8_0_avx2, \
     NULL, lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_avx512vnni,                                              \
     lb_gemv_##w##x##R##_q8_0_##R##x##C##_avx512vnni, 4, lb_quantize_q8_0x4v_avx512,                       \
     sizeof(lb_block_q8_0x4v), 0, 1}

#define LB_REPACK_AVX512_KERNELS                                  \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4),         \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8),         \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8),         \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4),     \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8),     \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8),     \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4),         \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8),         \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8),         \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4), \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8), \
    LB_REPACK_AVX512_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8)
#endif

#endif
