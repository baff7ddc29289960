/* AVX2 and AVX2 + AVX-VNNI GEMV / GEMM for the 16-row layouts of
 * formats/repack_kx.h (Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_1, Q5_0, Q5_1):
 * kx_avx2_gemv.c, kx_avx2_gemm.c (shared decode: kx_avx2_impl.h), their
 * activation quantizers (kx_avx2_act.c) and lb_kernel_list entries for
 * dispatch.c: LB_KX_AVX2_KERNELS at the AVX2 level, LB_KX_AVXVNNI_KERNELS
 * the same with VEX vpdpbusd (chosen where the CPU has AVX-VNNI). */
#ifndef LB_KX_AVX2_H
#define LB_KX_AVX2_H

#include <stddef.h>
#include <stdint.h>

#include "formats/repack_kx.h"
#include "kernels/cpu.h"
#include "kernels/kx_kernels.h"
#include "kernels/x86/kernels_x86.h"
#include "kernels/x86/kquants_x86.h"

#if LB_HAVE_X86_KERNELS
/* Bit-identical to lb_quantize_row_q8_1_ref, lb_quantize_q8_1x4_ref and
 * lb_quantize_q8_0x4v_ref. */
void lb_quantize_row_q8_1_avx2(const float *x, void *y, int64_t k);
void lb_quantize_q8_1x4_avx2(const float *x, size_t ldx, void *y, int64_t k);
void lb_quantize_q8_0x4v_avx2(const float *x, size_t ldx, void *y, int64_t k);

#define LB_KX_AVX2_DECL_ISA(w, a, ISA)                                                                        \
    void lb_gemv_##w##x16_##a##_16x4_##ISA(int64_t K, const void *W, size_t w_row_size, int n0, int n1,        \
                                           const void *A, size_t a_row_size, int M, float *Y, size_t ldy);     \
    void lb_gemm_##w##x16_##a##x4_16x4_##ISA(int64_t K, const void *W, size_t w_row_size, int n0, int n1,      \
                                             const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
#define LB_KX_AVX2_DECL(w, a) LB_KX_AVX2_DECL_ISA(w, a, avx2) LB_KX_AVX2_DECL_ISA(w, a, avxvnni)
LB_KX_AVX2_DECL(q3_K, q8_K)
LB_KX_AVX2_DECL(q4_K, q8_K)
LB_KX_AVX2_DECL(q5_K, q8_K)
LB_KX_AVX2_DECL(q6_K, q8_K)
LB_KX_AVX2_DECL(iq4_xs, q8_K)
LB_KX_AVX2_DECL(q4_1, q8_1)
LB_KX_AVX2_DECL(q5_0, q8_0)
LB_KX_AVX2_DECL(q5_1, q8_1)

/* The activation quantizers per activation type: plain rows (GEMV), then
 * 4-row groups and their bytes per 4 x 32 values (GEMM). */
#define LB_KX_AVX2_QA_q8_K lb_quantize_row_q8_K_avx2
#define LB_KX_AVX2_QA_q8_0 lb_quantize_row_q8_0_avx2
#define LB_KX_AVX2_QA_q8_1 lb_quantize_row_q8_1_avx2
#define LB_KX_AVX2_X4_q8_K lb_quantize_q8_Kx4_avx2, sizeof(lb_block_q8_Kx4) / 8
#define LB_KX_AVX2_X4_q8_0 lb_quantize_q8_0x4v_avx2, sizeof(lb_block_q8_0x4v)
#define LB_KX_AVX2_X4_q8_1 lb_quantize_q8_1x4_avx2, sizeof(lb_block_q8_1x4)

/* Field order: kernels/repack_kernels.h, then cpu_needs and whole_m (the
 * GEMM decodes each weight tile once per call: give it every activation
 * row that fits the L2). */
#define LB_KX_AVX2_ENTRY_ISA(T, w, a, ISA, NEEDS)                                                         \
    {T, LB_KX_ACT_##a, LB_ISA_AVX2, #w "x16_" #a "_16x4_" #ISA, LB_KX_AVX2_QA_##a, NULL,             \
     lb_gemm_##w##x16_##a##x4_16x4_##ISA, lb_gemv_##w##x16_##a##_16x4_##ISA, 4, LB_KX_AVX2_X4_##a, NEEDS, 1}
#define LB_KX_AVX2_ENTRY(T, w, a) LB_KX_AVX2_ENTRY_ISA(T, w, a, avx2, 0)
#define LB_KX_AVXVNNI_ENTRY(T, w, a) LB_KX_AVX2_ENTRY_ISA(T, w, a, avxvnni, LB_CPU_AVXVNNI)

#define LB_KX_AVX2_KERNELS LB_KX_TYPE_LIST(LB_KX_AVX2_ENTRY)
#define LB_KX_AVXVNNI_KERNELS LB_KX_TYPE_LIST(LB_KX_AVXVNNI_ENTRY)
#endif

#endif
