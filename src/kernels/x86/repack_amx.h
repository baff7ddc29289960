/* AMX-INT8 GEMM for the interleaved layouts of formats/repack.h (Q4_0,
 * IQ4_NL and Q8_0 in 4x4, 4x8 and 8x8), plus its 16-row activation
 * quantizer. Names: lb_gemm_<weights>x<R>_q8_0x16_<R>x<C>_amx. The entries
 * pair the AMX GEMM (16-row activation groups, lb_block_q8_0x16) with the
 * AVX-512 VNNI GEMV for decode and for the rows past a multiple of 16. */
#ifndef LB_REPACK_AMX_H
#define LB_REPACK_AMX_H

#include <stddef.h>
#include <stdint.h>

#include "formats/q8_256.h"
#include "kernels/x86/repack_avx512.h"

#if LB_HAVE_X86_KERNELS
/* Bit-identical to lb_quantize_q8_0x16_ref. */
void lb_quantize_q8_0x16_avx512(const float *x, size_t ldx, void *y, int64_t k);

#define LB_REPACK_AMX_DECL(w, R, C)                                                                   \
    void lb_gemm_##w##x##R##_q8_0x16_##R##x##C##_amx(int64_t K, const void *W, size_t w_row_size,     \
                                                     int n0, int n1, const void *A, size_t a_row_size, \
                                                     int M, float *Y, size_t ldy);
LB_REPACK_AMX_DECL(q4_0, 4, 4)
LB_REPACK_AMX_DECL(q4_0, 4, 8)
LB_REPACK_AMX_DECL(q4_0, 8, 8)
LB_REPACK_AMX_DECL(iq4_nl, 4, 4)
LB_REPACK_AMX_DECL(iq4_nl, 4, 8)
LB_REPACK_AMX_DECL(iq4_nl, 8, 8)
LB_REPACK_AMX_DECL(q8_0, 4, 4)
LB_REPACK_AMX_DECL(q8_0, 4, 8)
LB_REPACK_AMX_DECL(q8_0, 8, 8)
LB_REPACK_AMX_DECL(mxfp4_nl, 4, 4)
LB_REPACK_AMX_DECL(mxfp4_nl, 4, 8)
LB_REPACK_AMX_DECL(mxfp4_nl, 8, 8)

/* The AMX-BF16 GEMM (repack_amx_bf16.c): bf16 activation groups
 * (lb_block_bf16x16), written by lb_pack_bf16x16_avx512 (bit-identical to
 * lb_pack_bf16x16_ref). Names: lb_gemm_<weights>x<R>_bf16x16_<R>x<C>_amxbf16. */
void lb_pack_bf16x16_avx512(const float *x, size_t ldx, void *y, int64_t k);
#define LB_REPACK_AMXBF16_DECL(w, R, C)                                                                \
    void lb_gemm_##w##x##R##_bf16x16_##R##x##C##_amxbf16(int64_t K, const void *W, size_t w_row_size, \
                                                         int n0, int n1, const void *A, size_t a_row_size, \
                                                         int M, float *Y, size_t ldy);
LB_REPACK_AMXBF16_DECL(q4_0, 4, 4)
LB_REPACK_AMXBF16_DECL(q4_0, 4, 8)
LB_REPACK_AMXBF16_DECL(q4_0, 8, 8)
LB_REPACK_AMXBF16_DECL(iq4_nl, 4, 4)
LB_REPACK_AMXBF16_DECL(iq4_nl, 4, 8)
LB_REPACK_AMXBF16_DECL(iq4_nl, 8, 8)
LB_REPACK_AMXBF16_DECL(q8_0, 4, 4)
LB_REPACK_AMXBF16_DECL(q8_0, 4, 8)
LB_REPACK_AMXBF16_DECL(q8_0, 8, 8)
LB_REPACK_AMXBF16_DECL(mxfp4_nl, 4, 4)
LB_REPACK_AMXBF16_DECL(mxfp4_nl, 4, 8)
LB_REPACK_AMXBF16_DECL(mxfp4_nl, 8, 8)

/* The int8 GEMM on 256-value chunks (repack_amx_q8_256.c, formats/q8_256.h):
 * activation groups written by lb_quantize_q8_256x16_avx512 (bit-identical
 * to lb_quantize_q8_256x16_ref for finite inputs). Names:
 * lb_gemm_<weights>x<R>_q8_256x16_<R>x<C>_amx. */
void lb_quantize_q8_256x16_avx512(const float *x, size_t ldx, void *y, int64_t k);
#define LB_REPACK_AMXQ8_DECL(w, R, C)                                                                   \
    void lb_gemm_##w##x##R##_q8_256x16_##R##x##C##_amx(int64_t K, const void *W, size_t w_row_size,     \
                                                       int n0, int n1, const void *A, size_t a_row_size, \
                                                       int M, float *Y, size_t ldy);
LB_REPACK_AMXQ8_DECL(q4_0, 4, 4)
LB_REPACK_AMXQ8_DECL(q4_0, 4, 8)
LB_REPACK_AMXQ8_DECL(q4_0, 8, 8)
LB_REPACK_AMXQ8_DECL(iq4_nl, 4, 4)
LB_REPACK_AMXQ8_DECL(iq4_nl, 4, 8)
LB_REPACK_AMXQ8_DECL(iq4_nl, 8, 8)
LB_REPACK_AMXQ8_DECL(q8_0, 4, 4)
LB_REPACK_AMXQ8_DECL(q8_0, 4, 8)
LB_REPACK_AMXQ8_DECL(q8_0, 8, 8)
LB_REPACK_AMXQ8_DECL(mxfp4_nl, 4, 4)
LB_REPACK_AMXQ8_DECL(mxfp4_nl, 4, 8)
LB_REPACK_AMXQ8_DECL(mxfp4_nl, 8, 8)

/* lb_kernel_list entries (field order: see kernels/repack_kernels.h) */
#define LB_REPACK_AMX_ENTRY(T, w, R, C)                                                                  \
    {T, LB_TYPE_Q8_0, LB_ISA_AMX, #w "x" #R "_q8_0x16_" #R "x" #C "_amx", lb_quantize_row_q8_0_avx2, NULL, \
     lb_gemm_##w##x##R##_q8_0x16_##R##x##C##_amx, lb_gemv_##w##x##R##_q8_0_##R##x##C##_avx512vnni, 16,     \
     lb_quantize_q8_0x16_avx512, sizeof(lb_block_q8_0x16), 0, 1}

/* At the AMX level with AMX-BF16 (LB_CPU_AMXBF16) these win over the int8
 * entries; whole_m 2: the GEMM blocks K itself, so the driver hands it every
 * activation row (its decode of each weight tile is shared by all of them). */
#define LB_REPACK_AMXBF16_ENTRY(T, w, R, C)                                                                        \
    {T, LB_TYPE_Q8_0, LB_ISA_AMX, #w "x" #R "_bf16x16_" #R "x" #C "_amxbf16", lb_quantize_row_q8_0_avx2, NULL,     \
     lb_gemm_##w##x##R##_bf16x16_##R##x##C##_amxbf16, lb_gemv_##w##x##R##_q8_0_##R##x##C##_avx512vnni, 16,         \
     lb_pack_bf16x16_avx512, sizeof(lb_block_bf16x16), LB_CPU_AMXBF16, 2}

/* The int8 GEMM on 256-value chunks (LB_CPU_AMXQ8): 1.4x the bf16 GEMM's
 * speed, but its requantized activations cost gemma-3-270m 1.5-1.7 % of
 * perplexity (docs/kernels.md), so it is listed after the bf16 entries and
 * wins only where AMX-BF16 is missing or turned off (LOWBIT_CPU_OFF=amx-bf16);
 * it always wins over the per-block int8 entries (which need no feature). */
#define LB_REPACK_AMXQ8_ENTRY(T, w, R, C)                                                                      \
    {T, LB_TYPE_Q8_0, LB_ISA_AMX, #w "x" #R "_q8_256x16_" #R "x" #C "_amx", lb_quantize_row_q8_0_avx2, NULL,    \
     lb_gemm_##w##x##R##_q8_256x16_##R##x##C##_amx, lb_gemv_##w##x##R##_q8_0_##R##x##C##_avx512vnni, 16,        \
     lb_quantize_q8_256x16_avx512, LB_Q8_256X16_BLOCK, LB_CPU_AMXQ8, 2}

#define LB_REPACK_AMX_KERNELS                                  \
    LB_REPACK_AMX_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4),         \
    LB_REPACK_AMX_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8),         \
    LB_REPACK_AMX_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8),         \
    LB_REPACK_AMX_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4),     \
    LB_REPACK_AMX_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8),     \
    LB_REPACK_AMX_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8),     \
    LB_REPACK_AMX_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4),         \
    LB_REPACK_AMX_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8),         \
    LB_REPACK_AMX_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8),         \
    LB_REPACK_AMX_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4), \
    LB_REPACK_AMX_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8), \
    LB_REPACK_AMX_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8), \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4),     \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8),     \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8),     \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4), \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8), \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8), \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4),     \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8),     \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8),     \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4), \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8), \
    LB_REPACK_AMXBF16_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8), \
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_Q4_0_4X4, q4_0, 4, 4),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_Q4_0_4X8, q4_0, 4, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_Q4_0_8X8, q4_0, 8, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_IQ4_NL_4X4, iq4_nl, 4, 4),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_IQ4_NL_4X8, iq4_nl, 4, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_IQ4_NL_8X8, iq4_nl, 8, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_Q8_0_4X4, q8_0, 4, 4),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_Q8_0_4X8, q8_0, 4, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_Q8_0_8X8, q8_0, 8, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_MXFP4_NL_4X4, mxfp4_nl, 4, 4),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_MXFP4_NL_4X8, mxfp4_nl, 4, 8),\
    LB_REPACK_AMXQ8_ENTRY(LB_TYPE_MXFP4_NL_8X8, mxfp4_nl, 8, 8)
#endif

#endif
