/* x86 kernels of MX (formats/mx.h: seed 002's 2/4-bit tiles with fp16
 * outliers), W an lb_mx_view, plain Q8_0 activation rows (act_rows 0: the
 * driver gives every row to gemv, any M):
 *   mx_q8_0_avx2     AVX2: decode GEMV (1-2 activation rows per pass, the
 *                    tiles decoded in registers, kernels/x86/mx_avx2.c)
 *                    and, from 4 rows, a GEMM that decodes each tile once
 *                    per call into L1 as signed codes against activations
 *                    a + 128 (kernels/x86/mx_gemm_avx2.c)
 *   mx_q8_0_avx512   AVX-512 VNNI: one zmm per half-tile of 16 rows,
 *                    vpdpbusd chains that start at the zero's term
 *                    (kernels/x86/mx_avx512.c), and from 4 rows the GEMM
 *                    of kernels/x86/mx_gemm_avx512.c; _avx512gfni takes
 *                    the code planes by vgf2p8affineqb; the AMX level uses
 *                    them for decode and row tails (int8 tiles would need
 *                    the 16-column scales applied per tdpbssd of K = 16:
 *                    a quarter of its rate)
 *   mx_bf16x16_amxbf16  AMX-BF16 prefill: tiles decoded to bf16 weights
 *                    (kernels/x86/mx_amx_bf16.c) */
#ifndef LB_MX_X86_H
#define LB_MX_X86_H

#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */
#include "kernels/x86/repack_amx.h"     /* lb_pack_bf16x16_avx512, lb_block_bf16x16 */

#if LB_HAVE_X86_KERNELS
#include <stddef.h>
#include <stdint.h>

void lb_gemv_mx_q8_0_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                          size_t a_row_size, int M, float *Y, size_t ldy);
void lb_gemv_mx_q8_0_avx512(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                            size_t a_row_size, int M, float *Y, size_t ldy);
void lb_gemv_mx_q8_0_avx512gfni(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                size_t a_row_size, int M, float *Y, size_t ldy);
/* AMX-BF16 prefill (kernels/x86/mx_amx_bf16.c): bf16 activation groups
 * (lb_block_bf16x16), each tile decoded to bf16 weights (scales, zeros and
 * outliers folded in) once per call */
void lb_gemm_mx_bf16x16_amxbf16(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                size_t a_row_size, int M, float *Y, size_t ldy);

/* lb_kernel_list entry (kernels/dispatch.c; fields: kernels/dispatch.h) */
#define LB_MX_X86_KERNELS                                                                                     \
    {LB_TYPE_MX, LB_TYPE_Q8_0, LB_ISA_AVX2, "mx_q8_0_avx2", lb_quantize_row_q8_0_avx2, NULL, NULL,            \
     lb_gemv_mx_q8_0_avx2, 0, NULL, 0, 0, 1},                                                              \
    {LB_TYPE_MX, LB_TYPE_Q8_0, LB_ISA_AVX512, "mx_q8_0_avx512", lb_quantize_row_q8_0_avx2, NULL, NULL,        \
     lb_gemv_mx_q8_0_avx512, 0, NULL, 0, 0, 1},                                                            \
    {LB_TYPE_MX, LB_TYPE_Q8_0, LB_ISA_AVX512, "mx_q8_0_avx512gfni", lb_quantize_row_q8_0_avx2, NULL, NULL,    \
     lb_gemv_mx_q8_0_avx512gfni, 0, NULL, 0, LB_CPU_GFNI, 1},                                                \
    /* at the AMX level with AMX-BF16 (and GFNI, which every such CPU has): \
     * 16-row activation groups to the bf16 GEMM, the rest (and decode) to  \
     * the VNNI kernel; whole_m 2 as the other AMX-BF16 GEMMs               \
     * (kernels/x86/amx_bf16_impl.h) */                                     \
    {LB_TYPE_MX, LB_TYPE_Q8_0, LB_ISA_AMX, "mx_bf16x16_amxbf16", lb_quantize_row_q8_0_avx2, NULL,               \
     lb_gemm_mx_bf16x16_amxbf16, lb_gemv_mx_q8_0_avx512gfni, 16, lb_pack_bf16x16_avx512,                       \
     sizeof(lb_block_bf16x16), LB_CPU_AMXBF16 | LB_CPU_GFNI, 2},
#endif

#endif
