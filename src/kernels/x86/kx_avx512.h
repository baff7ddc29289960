/* AVX-512 VNNI GEMV / GEMM for the 16-row layouts of formats/repack_kx.h
 * (Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS: kx_gemv_avx512.c, kx_gemm_avx512.c;
 * Q4_1, Q5_0, Q5_1: kx_legacy_avx512.c) and their lb_kernel_list entries
 * for dispatch.c. They need AVX-512 F/BW/VL + VNNI only (the level's
 * definition), so they also serve the AMX level. */
#ifndef LB_KX_AVX512_H
#define LB_KX_AVX512_H

#include <stddef.h>
#include <stdint.h>

#include "formats/repack_kx.h"
#include "kernels/cpu.h"
#include "kernels/x86/kernels_x86.h"
#include "kernels/x86/kquants_x86.h"
#include "kernels/x86/repack_amx.h"
#include "kernels/x86/repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#define LB_KX_AVX512_DECL(w, a)                                                                                   \
    void lb_gemv_##w##x16_##a##_16x4_avx512vnni(int64_t K, const void *W, size_t w_row_size, int n0, int n1,      \
                                                const void *A, size_t a_row_size, int M, float *Y, size_t ldy);   \
    void lb_gemm_##w##x16_##a##x4_16x4_avx512vnni(int64_t K, const void *W, size_t w_row_size, int n0, int n1,    \
                                                  const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_KX_AVX512_DECL(q3_K, q8_K)
LB_KX_AVX512_DECL(q4_K, q8_K)
LB_KX_AVX512_DECL(q5_K, q8_K)
LB_KX_AVX512_DECL(q6_K, q8_K)
LB_KX_AVX512_DECL(iq4_xs, q8_K)
LB_KX_AVX512_DECL(q4_1, q8_1)
LB_KX_AVX512_DECL(q5_0, q8_0)
LB_KX_AVX512_DECL(q5_1, q8_1)
/* == lb_quantize_q8_1x4_ref */
void lb_quantize_q8_1x4_avx512(const float *x, size_t ldx, void *y, int64_t k);

/* Field order: kernels/repack_kernels.h, then cpu_needs, whole_m (the GEMM
 * decodes each weight tile once per call: give it every activation row
 * that fits the L2). */
#define LB_KX_AVX512_ENTRY(T, w, a, QA, QX4, X4B)                                                             \
    {T, LB_KX_ACT_##a, LB_ISA_AVX512, #w "x16_" #a "_16x4_avx512vnni", QA, NULL,                              \
     lb_gemm_##w##x16_##a##x4_16x4_avx512vnni, lb_gemv_##w##x16_##a##_16x4_avx512vnni, 4, QX4, X4B, 0, 1}
#define LB_KX_AVX512_K(T, w) \
    LB_KX_AVX512_ENTRY(T, w, q8_K, lb_quantize_row_q8_K_avx2, lb_quantize_q8_Kx4_avx2, sizeof(lb_block_q8_Kx4) / 8)

/* AMX-BF16 GEMM (kx_amx_bf16.c) for every 16-row type, with bf16
 * activation groups (lb_pack_bf16x16_avx512) and the VNNI GEMV; wins at the
 * amx level where the CPU has AMX-BF16 (LB_CPU_AMXBF16). */
#define LB_KX_AMXBF16_DECL(w)                                                                                  \
    void lb_gemm_##w##x16_bf16x16_16x4_amxbf16(int64_t K, const void *W, size_t w_row_size, int n0, int n1,    \
                                               const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_KX_AMXBF16_DECL(q3_K)
LB_KX_AMXBF16_DECL(q4_K)
LB_KX_AMXBF16_DECL(q5_K)
LB_KX_AMXBF16_DECL(q6_K)
LB_KX_AMXBF16_DECL(iq4_xs)
LB_KX_AMXBF16_DECL(q4_1)
LB_KX_AMXBF16_DECL(q5_0)
LB_KX_AMXBF16_DECL(q5_1)
/* a: the GEMV's activations (plain rows, and those past a multiple of 16), QA their quantizer */
#define LB_KX_AMXBF16_ENTRY_A(T, w, a, QA)                                                                   \
    {T, LB_KX_ACT_##a, LB_ISA_AMX, #w "x16_bf16x16_16x4_amxbf16", QA, NULL,                                 \
     lb_gemm_##w##x16_bf16x16_16x4_amxbf16, lb_gemv_##w##x16_##a##_16x4_avx512vnni, 16, lb_pack_bf16x16_avx512, \
     sizeof(lb_block_bf16x16), LB_CPU_AMXBF16, 2}
#define LB_KX_AMXBF16_ENTRY(T, w) LB_KX_AMXBF16_ENTRY_A(T, w, q8_K, lb_quantize_row_q8_K_avx2)

#define LB_KX_AVX512_KERNELS                              \
    LB_KX_AVX512_K(LB_TYPE_Q3_K_16X4, q3_K),              \
    LB_KX_AVX512_K(LB_TYPE_Q4_K_16X4, q4_K),              \
    LB_KX_AVX512_K(LB_TYPE_Q5_K_16X4, q5_K),              \
    LB_KX_AVX512_K(LB_TYPE_Q6_K_16X4, q6_K),              \
    LB_KX_AVX512_K(LB_TYPE_IQ4_XS_16X4, iq4_xs),          \
    LB_KX_AVX512_ENTRY(LB_TYPE_Q4_1_16X4, q4_1, q8_1, lb_quantize_row_q8_1_ref, lb_quantize_q8_1x4_avx512, \
                       sizeof(lb_block_q8_1x4)),                                                         \
    LB_KX_AVX512_ENTRY(LB_TYPE_Q5_0_16X4, q5_0, q8_0, lb_quantize_row_q8_0_avx2, lb_quantize_q8_0x4v_avx512, \
                       sizeof(lb_block_q8_0x4v)),                                                        \
    LB_KX_AVX512_ENTRY(LB_TYPE_Q5_1_16X4, q5_1, q8_1, lb_quantize_row_q8_1_ref, lb_quantize_q8_1x4_avx512, \
                       sizeof(lb_block_q8_1x4)),                                                         \
    LB_KX_AMXBF16_ENTRY(LB_TYPE_Q3_K_16X4, q3_K),                                                       \
    LB_KX_AMXBF16_ENTRY(LB_TYPE_Q4_K_16X4, q4_K),                                                       \
    LB_KX_AMXBF16_ENTRY(LB_TYPE_Q5_K_16X4, q5_K),                                                       \
    LB_KX_AMXBF16_ENTRY(LB_TYPE_Q6_K_16X4, q6_K),                                                       \
    LB_KX_AMXBF16_ENTRY(LB_TYPE_IQ4_XS_16X4, iq4_xs),                                                   \
    LB_KX_AMXBF16_ENTRY_A(LB_TYPE_Q4_1_16X4, q4_1, q8_1, lb_quantize_row_q8_1_ref),                      \
    LB_KX_AMXBF16_ENTRY_A(LB_TYPE_Q5_0_16X4, q5_0, q8_0, lb_quantize_row_q8_0_avx2),                     \
    LB_KX_AMXBF16_ENTRY_A(LB_TYPE_Q5_1_16X4, q5_1, q8_1, lb_quantize_row_q8_1_ref)
#endif

#endif
