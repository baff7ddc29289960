/* Arm (aarch64) kernels, registered in kernels/dispatch.c at three levels:
 *   _neon     ASIMD only (every aarch64 CPU)            arm_neon.c
 *   _dotprod  + SDOT (vdotq_s32 / vdotq_laneq_s32)      arm_dotprod.c
 *   _i8mm     + SMMLA (vmmlaq_s32)                      arm_i8mm.c
 * Plain-row vec_dot matches the scalar reference up to float summation
 * order; the activation quantizers are bit-identical to their references;
 * the interleaved GEMV/GEMM (formats/repack.h) are bit-identical to the
 * reference GEMV/GEMM (same per-block order and unfused float steps).
 * GEMV/GEMM arguments follow lb_gemm_fn (kernels/dispatch.h). */
#ifndef LB_ARM_KERNELS_H
#define LB_ARM_KERNELS_H
#include <stddef.h>
#include <stdint.h>

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define LB_HAVE_ARM_KERNELS 1
#include "formats/repack.h"
#include "kernels/arm/arm_kq.h" /* Q2_K / CB2 / CB3: LB_ARM_KQ_KERNELS */

/* ASIMD: float rows, Q8_0 activation quantizers */
void lb_vec_dot_f32_neon(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_f16_neon(int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_bf16_neon(int64_t n, float *s, const void *w, const void *a);
void lb_quantize_row_q8_0_neon(const float *x, void *y, int64_t k);
void lb_quantize_q8_0x4_c4_neon(const float *x, size_t ldx, void *y, int64_t k);
void lb_quantize_q8_0x4_c8_neon(const float *x, size_t ldx, void *y, int64_t k);
/* Rows [0, rows) (a multiple of 4) of a Q8_0_4X4 tile rewritten as Q8_0_4X8
 * (formats/repack.h): the same scales and bytes, each row's 4-byte chunks 2j
 * and 2j + 1 becoming its 8-byte chunk j. QIGen's i8mm prefill (kernels/qigen.c)
 * packs its converted tiles so for the SMMLA GEMM. */
void lb_pack_q8_0x4_c4_to_c8_neon(const void *src, size_t row_size, int rows, int64_t K, void *dst);

#define LB_ARM_GEMM_ARGS                                                                         \
    int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size, \
        int M, float *Y, size_t ldy
/* int8 kernels at the neon and dotprod levels */
#define LB_ARM_INT8_DECL(sfx)                                                            \
    void lb_vec_dot_q4_0_q8_0_##sfx(int64_t n, float *s, const void *w, const void *a);   \
    void lb_vec_dot_iq4_nl_q8_0_##sfx(int64_t n, float *s, const void *w, const void *a); \
    void lb_vec_dot_mxfp4_nl_q8_0_##sfx(int64_t n, float *s, const void *w, const void *a); \
    void lb_vec_dot_q8_0_q8_0_##sfx(int64_t n, float *s, const void *w, const void *a);   \
    LB_ARM_REPACKED_DECL(q4_0, sfx)                                                       \
    LB_ARM_REPACKED_DECL(iq4_nl, sfx)                                                     \
    LB_ARM_REPACKED_DECL(mxfp4_nl, sfx)                                                   \
    LB_ARM_REPACKED_DECL(q8_0, sfx)
#define LB_ARM_REPACKED_DECL(w, sfx)                                \
    void lb_gemv_##w##x4_q8_0_4x4_##sfx(LB_ARM_GEMM_ARGS);         \
    void lb_gemv_##w##x4_q8_0_4x8_##sfx(LB_ARM_GEMM_ARGS);         \
    void lb_gemv_##w##x8_q8_0_8x8_##sfx(LB_ARM_GEMM_ARGS);         \
    void lb_gemm_##w##x4_q8_0x4_4x4_##sfx(LB_ARM_GEMM_ARGS);       \
    void lb_gemm_##w##x4_q8_0x4_4x8_##sfx(LB_ARM_GEMM_ARGS);       \
    void lb_gemm_##w##x8_q8_0x4_8x8_##sfx(LB_ARM_GEMM_ARGS);
LB_ARM_INT8_DECL(neon)
LB_ARM_INT8_DECL(dotprod)
void lb_gemm_f32_f32_neon(LB_ARM_GEMM_ARGS);
void lb_gemm_f16_f32_neon(LB_ARM_GEMM_ARGS);
void lb_gemm_bf16_f32_neon(LB_ARM_GEMM_ARGS);

/* i8mm: GEMM of the 8-byte-chunk layouts (GEMV stays on dotprod) */
#define LB_ARM_MMLA_DECL(w)                                     \
    void lb_gemm_##w##x4_q8_0x4_4x8_i8mm(LB_ARM_GEMM_ARGS);    \
    void lb_gemm_##w##x8_q8_0x4_8x8_i8mm(LB_ARM_GEMM_ARGS);
LB_ARM_MMLA_DECL(q4_0)
LB_ARM_MMLA_DECL(iq4_nl)
LB_ARM_MMLA_DECL(mxfp4_nl)
LB_ARM_MMLA_DECL(q8_0)

/* ---- lb_kernel_list entries (kernels/dispatch.c; field order as in
 * kernels/repack_kernels.h). Arm levels: NEON < DOTPROD < I8MM. ---- */
#define LB_ARM_PLAIN_ENTRY(T, A, isa, w, sfx, quant)                                                   \
    {T, A, isa, #w "_" #sfx, quant, lb_vec_dot_##w##_##sfx, NULL}
/* interleaved types: GEMV on plain Q8_0 rows, GEMM on 4-row groups whose chunk
 * is the weight chunk C (quantizer c4 or c8) */
#define LB_ARM_REPACK_ENTRY(T, isa, w, R, C, gemm_sfx, gemv_sfx)                                        \
    {T, LB_TYPE_Q8_0, isa, #w "x" #R "_q8_0_" #R "x" #C "_" #gemm_sfx, lb_quantize_row_q8_0_neon, NULL, \
     lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_##gemm_sfx, lb_gemv_##w##x##R##_q8_0_##R##x##C##_##gemv_sfx, \
     4, lb_quantize_q8_0x4_c##C##_neon, sizeof(lb_block_q8_0x4a)}
#define LB_ARM_REPACK_LEVELS(T4x4, T4x8, T8x8, w)                                          \
    LB_ARM_REPACK_ENTRY(T4x4, LB_ISA_NEON, w, 4, 4, neon, neon),                           \
    LB_ARM_REPACK_ENTRY(T4x8, LB_ISA_NEON, w, 4, 8, neon, neon),                           \
    LB_ARM_REPACK_ENTRY(T8x8, LB_ISA_NEON, w, 8, 8, neon, neon),                           \
    LB_ARM_REPACK_ENTRY(T4x4, LB_ISA_DOTPROD, w, 4, 4, dotprod, dotprod),                  \
    LB_ARM_REPACK_ENTRY(T4x8, LB_ISA_DOTPROD, w, 4, 8, dotprod, dotprod),                  \
    LB_ARM_REPACK_ENTRY(T8x8, LB_ISA_DOTPROD, w, 8, 8, dotprod, dotprod),                  \
    LB_ARM_REPACK_ENTRY(T4x8, LB_ISA_I8MM, w, 4, 8, i8mm, dotprod),                        \
    LB_ARM_REPACK_ENTRY(T8x8, LB_ISA_I8MM, w, 8, 8, i8mm, dotprod)

/* float rows: the NEON dot, and prefill on the packed fp32 GEMM (fgemm_neon.c, kernels/fgemm.h) */
#define LB_ARM_FLOAT_ENTRY(T, w)                                                                        \
    {T, LB_TYPE_F32, LB_ISA_NEON, #w "_f32_neon", lb_f32_from_float, lb_vec_dot_##w##_neon,             \
     lb_gemm_##w##_f32_neon, .whole_m = 2}
#define LB_ARM_KERNELS                                                                                  \
    LB_ARM_FLOAT_ENTRY(LB_TYPE_F32, f32), LB_ARM_FLOAT_ENTRY(LB_TYPE_F16, f16),                         \
    LB_ARM_FLOAT_ENTRY(LB_TYPE_BF16, bf16),                                                             \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_Q8_0, LB_TYPE_Q8_0, LB_ISA_NEON, q8_0_q8_0, neon, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_Q4_0, LB_TYPE_Q8_0, LB_ISA_NEON, q4_0_q8_0, neon, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_IQ4_NL, LB_TYPE_Q8_0, LB_ISA_NEON, iq4_nl_q8_0, neon, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_MXFP4_NL, LB_TYPE_Q8_0, LB_ISA_NEON, mxfp4_nl_q8_0, neon, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_Q8_0, LB_TYPE_Q8_0, LB_ISA_DOTPROD, q8_0_q8_0, dotprod, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_Q4_0, LB_TYPE_Q8_0, LB_ISA_DOTPROD, q4_0_q8_0, dotprod, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_IQ4_NL, LB_TYPE_Q8_0, LB_ISA_DOTPROD, iq4_nl_q8_0, dotprod, lb_quantize_row_q8_0_neon), \
    LB_ARM_PLAIN_ENTRY(LB_TYPE_MXFP4_NL, LB_TYPE_Q8_0, LB_ISA_DOTPROD, mxfp4_nl_q8_0, dotprod, lb_quantize_row_q8_0_neon), \
    LB_ARM_REPACK_LEVELS(LB_TYPE_Q4_0_4X4, LB_TYPE_Q4_0_4X8, LB_TYPE_Q4_0_8X8, q4_0),                  \
    LB_ARM_REPACK_LEVELS(LB_TYPE_IQ4_NL_4X4, LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL_8X8, iq4_nl),          \
    LB_ARM_REPACK_LEVELS(LB_TYPE_MXFP4_NL_4X4, LB_TYPE_MXFP4_NL_4X8, LB_TYPE_MXFP4_NL_8X8, mxfp4_nl),  \
    LB_ARM_REPACK_LEVELS(LB_TYPE_Q8_0_4X4, LB_TYPE_Q8_0_4X8, LB_TYPE_Q8_0_8X8, q8_0)

#else
#define LB_HAVE_ARM_KERNELS 0
#endif
#endif
