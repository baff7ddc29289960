/* AVX2 GEMV / GEMM for the interleaved layouts of formats/repack.h (Q4_0,
 * IQ4_NL and Q8_0 in 4x4, 4x8 and 8x8), plus the fused 4-row activation
 * quantizer. Names follow KleidiAI: lb_{gemv,gemm}_<weights>x<R>_<acts>_<R>x<C>_<isa>.
 * All take the lb_gemm_fn arguments (kernels/dispatch.h); gemm's activations
 * are lb_block_q8_0x4a groups in 8-byte chunks (lb_quantize_q8_0x4_c8_avx2),
 * for every layout. */
#ifndef LB_Q4_0_REPACK_X86_H
#define LB_Q4_0_REPACK_X86_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu.h"
#include "kernels/x86/kernels_x86.h"

#if LB_HAVE_X86_KERNELS
/* Bit-identical to lb_quantize_q8_0x4_c8_ref. */
void lb_quantize_q8_0x4_c8_avx2(const float *x, size_t ldx, void *y, int64_t k);

#define LB_REPACK_X86_DECL_ISA(w, R, C, ISA)                                                           \
    void lb_gemv_##w##x##R##_q8_0_##R##x##C##_##ISA(int64_t K, const void *W, size_t w_row_size,       \
                                                    int n0, int n1, const void *A, size_t a_row_size,  \
                                                    int M, float *Y, size_t ldy);                      \
    void lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_##ISA(int64_t K, const void *W, size_t w_row_size,     \
                                                      int n0, int n1, const void *A,                   \
                                                      size_t a_row_size, int M, float *Y, size_t ldy);
#define LB_REPACK_X86_DECL(w, R, C) LB_REPACK_X86_DECL_ISA(w, R, C, avx2) LB_REPACK_X86_DECL_ISA(w, R, C, avxvnni)
LB_REPACK_X86_DECL(q4_0, 4, 4)
LB_REPACK_X86_DECL(q4_0, 4, 8)
LB_REPACK_X86_DECL(q4_0, 8, 8)
LB_REPACK_X86_DECL(iq4_nl, 4, 4)
LB_REPACK_X86_DECL(iq4_nl, 4, 8)
LB_REPACK_X86_DECL(iq4_nl, 8, 8)
LB_REPACK_X86_DECL(q8_0, 4, 4)
LB_REPACK_X86_DECL(q8_0, 4, 8)
LB_REPACK_X86_DECL(q8_0, 8, 8)
LB_REPACK_X86_DECL(mxfp4_nl, 4, 4)
LB_REPACK_X86_DECL(mxfp4_nl, 4, 8)
LB_REPACK_X86_DECL(mxfp4_nl, 8, 8)
/* Q8_0 weights whose quants lie in [-16, 15] (QIGen's GQ tiles converted to
 * Q8_0_4X4, d = s, quants q - z: kernels/qigen.c): the pack rewrites rows
 * [0, rows) (a multiple of 8) of such a Q8_0_4X4 tile into the 8x8 layout
 * with every quant stored + 16; the GEMM on that gives the Q8_0 GEMM's
 * results bit for bit, in about half its multiplies (see the .c). */
void lb_pack_q8_0x4_u5x8_avx2(const void *src, size_t row_size, int rows, int64_t K, void *dst);
void lb_gemm_q8_0u5x8_q8_0x4_8x8_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                      size_t a_row_size, int M, float *Y, size_t ldy);

/* lb_kernel_list entries (field order: see kernels/repack_kernels.h) */
#define LB_REPACK_X86_ENTRY_ISA(T, w, R, C, ISA, NEEDS)                                                    \
    {T, LB_TYPE_Q8_0, LB_ISA_AVX2, #w "x" #R "_q8_0_" #R "x" #C "_" #ISA, lb_quantize_row_q8_0_avx2, NULL,    \
     lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_##ISA, lb_gemv_##w##x##R##_q8_0_##R##x##C##_##ISA, 4,              \
     lb_quantize_q8_0x4_c8_avx2, sizeof(lb_block_q8_0x4a), NEEDS}
#define LB_REPACK_X86_ENTRY(T, w, R, C) LB_REPACK_X86_ENTRY_ISA(T, w, R, C, avx2, 0)
#define LB_REPACK_AVXVNNI_ENTRY(T, w, R, C) LB_REPACK_X86_ENTRY_ISA(T, w, R, C, avxvnni, LB_CPU_AVXVNNI)

#define LB_REPACK_X86_KERNELS                                        \
    LB_REPACK_X86_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4),               \
    LB_REPACK_X86_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8),               \
    LB_REPACK_X86_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8),               \
    LB_REPACK_X86_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4),           \
    LB_REPACK_X86_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8),           \
    LB_REPACK_X86_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8),           \
    LB_REPACK_X86_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4),               \
    LB_REPACK_X86_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8),               \
    LB_REPACK_X86_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8),               \
    LB_REPACK_X86_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4),       \
    LB_REPACK_X86_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8),       \
    LB_REPACK_X86_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8)
#define LB_REPACK_AVXVNNI_KERNELS                                    \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4),           \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8),           \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8),           \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4),       \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8),       \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8),       \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4),           \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8),           \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8),           \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4),   \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8),   \
    LB_REPACK_AVXVNNI_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8)
#endif

#endif
