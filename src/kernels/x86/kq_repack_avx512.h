/* AVX-512 VNNI + VBMI GEMV / GEMM and AMX GEMM for the 16-row layouts of
 * the 256-weight super-block formats (Q2_K_16X4, CB2_16X4, CB3_16X4;
 * formats/repack.h) against Q8_K activations, plus the GEMMs' 4- and 16-row
 * activation quantizers, and the lb_kernel_list entries (with the scalar
 * references) for dispatch.c. */
#ifndef LB_KQ_REPACK_AVX512_H
#define LB_KQ_REPACK_AVX512_H

#include <stddef.h>
#include <stdint.h>

#include "formats/repack.h"
#include "kernels/cpu.h"
#include "kernels/x86/kernels_x86.h"
#include "kernels/x86/kquants_x86.h"

/* Scalar references (formats/repack_kq.c): any repacked file runs at any level. */
#define LB_KQ_REPACK_REF_ENTRY(T, w)                                                                     \
    {T, LB_TYPE_Q8_K, LB_ISA_SCALAR, #w "x16_q8_K_16x4_ref", lb_quantize_row_q8_K_ref, NULL,            \
     lb_gemm_##w##x16_q8_Kx4_16x4_ref, lb_gemv_##w##x16_q8_K_16x4_ref, 4, lb_quantize_q8_Kx4_ref,        \
     sizeof(lb_block_q8_Kx4) / 8}

#define LB_KQ_REPACK_REF_KERNELS                        \
    LB_KQ_REPACK_REF_ENTRY(LB_TYPE_Q2_K_16X4, q2_K),    \
    LB_KQ_REPACK_REF_ENTRY(LB_TYPE_CB2_16X4, cb2),      \
    LB_KQ_REPACK_REF_ENTRY(LB_TYPE_CB3_16X4, cb3)

#if LB_HAVE_X86_KERNELS
/* Bit-identical to lb_quantize_q8_Kx4_ref. */
void lb_quantize_q8_Kx4_avx512(const float *x, size_t ldx, void *y, int64_t k);

#define LB_KQ_REPACK_AVX512_DECL(w)                                                                         \
    void lb_gemv_##w##x16_q8_K_16x4_avx512vbmi(int64_t K, const void *W, size_t w_row_size, int n0, int n1, \
                                               const void *A, size_t a_row_size, int M, float *Y,           \
                                               size_t ldy);                                                 \
    void lb_gemm_##w##x16_q8_Kx4_16x4_avx512vbmi(int64_t K, const void *W, size_t w_row_size, int n0,       \
                                                 int n1, const void *A, size_t a_row_size, int M, float *Y, \
                                                 size_t ldy);
LB_KQ_REPACK_AVX512_DECL(q2_K)
LB_KQ_REPACK_AVX512_DECL(cb2)
LB_KQ_REPACK_AVX512_DECL(cb3)

/* Entries at LB_ISA_AVX512 that also need AVX-512 VBMI (vpermb) and GFNI:
 * the dispatcher skips them on CPUs without (lb_kernel.cpu_needs), and the
 * loader then keeps the plain layout with its AVX2 kernels. Field order:
 * kernels/repack_kernels.h, then cpu_needs, whole_m. */
#define LB_KQ_REPACK_AVX512_ENTRY(T, w)                                                                      \
    {T, LB_TYPE_Q8_K, LB_ISA_AVX512, #w "x16_q8_K_16x4_avx512vbmi", lb_quantize_row_q8_K_avx2, NULL,         \
     lb_gemm_##w##x16_q8_Kx4_16x4_avx512vbmi, lb_gemv_##w##x16_q8_K_16x4_avx512vbmi, 4,                      \
     lb_quantize_q8_Kx4_avx512, sizeof(lb_block_q8_Kx4) / 8, LB_CPU_VBMI | LB_CPU_GFNI, 1}

/* AMX (kernels/kq_repack_amx.c): the GEMM on 16-row groups, gemv the
 * AVX-512 one. Q2_K's min term needs AMX-BF16 too. */
void lb_quantize_q8_Kx16_avx512(const float *x, size_t ldx, void *y, int64_t k); /* == lb_quantize_q8_Kx16_ref */
#define LB_KQ_REPACK_AMX_DECL(w)                                                                                \
    void lb_gemm_##w##x16_q8_Kx16_16x4_amx(int64_t K, const void *W, size_t w_row_size, int n0, int n1,         \
                                           const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_KQ_REPACK_AMX_DECL(q2_K)
LB_KQ_REPACK_AMX_DECL(cb2)
LB_KQ_REPACK_AMX_DECL(cb3)
#define LB_KQ_REPACK_AMX_ENTRY(T, w, NEEDS)                                                                   \
    {T, LB_TYPE_Q8_K, LB_ISA_AMX, #w "x16_q8_Kx16_16x4_amx", lb_quantize_row_q8_K_avx2, NULL,                  \
     lb_gemm_##w##x16_q8_Kx16_16x4_amx, lb_gemv_##w##x16_q8_K_16x4_avx512vbmi, 16, lb_quantize_q8_Kx16_avx512, \
     sizeof(lb_block_q8_Kx16) / 8, NEEDS, 1}

#define LB_KQ_REPACK_AVX512_KERNELS                      \
    LB_KQ_REPACK_AVX512_ENTRY(LB_TYPE_Q2_K_16X4, q2_K),  \
    LB_KQ_REPACK_AVX512_ENTRY(LB_TYPE_CB2_16X4, cb2),    \
    LB_KQ_REPACK_AVX512_ENTRY(LB_TYPE_CB3_16X4, cb3),    \
    LB_KQ_REPACK_AMX_ENTRY(LB_TYPE_Q2_K_16X4, q2_K, LB_CPU_VBMI | LB_CPU_GFNI | LB_CPU_AMXBF16), \
    LB_KQ_REPACK_AMX_ENTRY(LB_TYPE_CB2_16X4, cb2, LB_CPU_VBMI | LB_CPU_GFNI), \
    LB_KQ_REPACK_AMX_ENTRY(LB_TYPE_CB3_16X4, cb3, LB_CPU_VBMI | LB_CPU_GFNI)
#endif

#endif
