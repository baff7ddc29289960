/* AVX2 GEMV / GEMM for Q2_K_16X4 (formats/repack.h: 16 rows, dword r of
 * every 64-byte vector = row r) against plain Q8_K rows, and its
 * lb_kernel_list entry for dispatch.c. The AVX-512 kernels of the layout
 * need VBMI (kq_repack_avx512.h); this one is for every x86 CPU below. */
#ifndef LB_KQ_Q2K_AVX2_H
#define LB_KQ_Q2K_AVX2_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/x86/kernels_x86.h"
#include "formats/repack.h"
#include "kernels/x86/kquants_x86.h"

#if LB_HAVE_X86_KERNELS
/* Y[m][n] for rows [n0, n1) (whole 16-row groups) and M plain Q8_K rows;
 * bit-identical to lb_vec_dot_q2_K_q8_K_ref on each unpacked row. */
void lb_gemv_q2_Kx16_q8_K_16x4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                    size_t a_row_size, int M, float *Y, size_t ldy);
/* The same on M / 4 groups of lb_block_q8_Kx4 (formats/repack.h). */
void lb_gemm_q2_Kx16_q8_Kx4_16x4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                      size_t a_row_size, int M, float *Y, size_t ldy);

/* Field order: kernels/repack_kernels.h (then cpu_needs, whole_m). */
#define LB_KQ_Q2K_AVX2_KERNELS                                                                                 \
    {LB_TYPE_Q2_K_16X4, LB_TYPE_Q8_K, LB_ISA_AVX2, "q2_Kx16_q8_K_16x4_avx2", lb_quantize_row_q8_K_avx2, NULL,  \
     lb_gemm_q2_Kx16_q8_Kx4_16x4_avx2, lb_gemv_q2_Kx16_q8_K_16x4_avx2, 4, lb_quantize_q8_Kx4_avx2,              \
     sizeof(lb_block_q8_Kx4) / 8, 0, 0},
#endif

#endif
