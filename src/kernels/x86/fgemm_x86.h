/* Prefill GEMM of the float weight types (F32, F16, BF16) against fp32
 * activation rows on x86 (kernels/fgemm.h): the AVX2 entries run the 6 x 16
 * fp32 micro-kernel, the AVX-512 ones the 14 x 32 (kernels/sgemm.h). */
#ifndef LB_FGEMM_X86_H
#define LB_FGEMM_X86_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/x86/kernels_x86.h"

#if LB_HAVE_X86_KERNELS
#define LB_FGEMM_X86_DECLARE(w, isa)                                                                              \
    void lb_gemm_##w##_f32_##isa(int64_t K, const void *W, size_t rs, int n0, int n1, const void *A, size_t ars, \
                                 int M, float *Y, size_t ldy);
LB_FGEMM_X86_DECLARE(f32, avx2)
LB_FGEMM_X86_DECLARE(f16, avx2)
LB_FGEMM_X86_DECLARE(bf16, avx2)
LB_FGEMM_X86_DECLARE(f32, avx512)
LB_FGEMM_X86_DECLARE(f16, avx512)
LB_FGEMM_X86_DECLARE(bf16, avx512)
#undef LB_FGEMM_X86_DECLARE
/* BF16 weights with AVX512-BF16: vdpbf16ps on bf16-rounded activations */
void lb_gemm_bf16_bf16_avx512bf16(int64_t K, const void *W, size_t rs, int n0, int n1, const void *A, size_t ars,
                                  int M, float *Y, size_t ldy);

/* The dispatch entries (kernels/dispatch.c): whole_m 2, so a thread gets its
 * whole row range and up to 1024 activation rows a call; the vec_dot stays
 * the AVX2 one (decode, and the GEMM's rows below LB_FGEMM_MIN_M). */
#define LB_FGEMM_ENTRY(W, w, isa, ISA)                                                                         \
    {LB_TYPE_##W, LB_TYPE_F32, LB_ISA_##ISA, #w "_f32_" #isa, lb_f32_from_float, lb_vec_dot_##w##_avx2,        \
     lb_gemm_##w##_f32_##isa, .whole_m = 2},
#define LB_FGEMM_X86_KERNELS                                                                                   \
    LB_FGEMM_ENTRY(F32, f32, avx2, AVX2) LB_FGEMM_ENTRY(F16, f16, avx2, AVX2) LB_FGEMM_ENTRY(BF16, bf16, avx2, AVX2) \
    LB_FGEMM_ENTRY(F32, f32, avx512, AVX512) LB_FGEMM_ENTRY(F16, f16, avx512, AVX512)                          \
    LB_FGEMM_ENTRY(BF16, bf16, avx512, AVX512)                                                                  \
    {LB_TYPE_BF16, LB_TYPE_F32, LB_ISA_AVX512, "bf16_bf16_avx512bf16", lb_f32_from_float, lb_vec_dot_bf16_avx2,    \
     lb_gemm_bf16_bf16_avx512bf16, .cpu_needs = LB_CPU_AVX512BF16, .whole_m = 2},
#else
#define LB_FGEMM_X86_KERNELS
#endif

#endif
