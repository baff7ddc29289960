/* AVX-512 VNNI + VBMI decode GEMV for Q2_K_16X4 against plain Q8_K rows
 * (kq_gemv_avx512_impl.h; the scheme is in kq_repack_avx512.c). Its own
 * translation unit: see kq_gemv_avx512_impl.h. */
#include "kernels/x86/kq_repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kq_gemv_avx512_impl.h"

GEMV_TABLE_NG4_PAIRS(q2k, WQ2K, 0, 0, 0)

LB_VBMI void lb_gemv_q2_Kx16_q8_K_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                                                  size_t ars, int M, float *Y, size_t ldy) {
    gemv(WQ2K, 4, &q2k, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}
#endif
