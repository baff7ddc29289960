/* Arm kernels for the 256-weight 2/3-bit formats Q2_K, CB2 and CB3 against
 * Q8_K activations (aarch64 only; included by kernels/arm_kernels.h).
 *
 *   _neon     vec_dot, SDOT emulated by SMULL/SMLAL2 + SADDLP  arm_kq_neon.c
 *   _dotprod  vec_dot with SDOT                                arm_kq_dotprod.c
 *   _i8mm     GEMM with SMMLA (2 weight rows x 2..8 activation  arm_kq_i8mm.c
 *             rows per tile; one row and odd tails: _dotprod)
 * Shared decoders: kernels/arm_kq_decode.h; the vec_dot template:
 * kernels/arm_kq_impl.h. Design and instruction counts: docs/codebooks.md.
 *
 * CB2 / CB3 read the books in force (formats/cb.h, lb_cb_current) once per
 * call and keep them in registers: each 16-weight sub-group's book index is
 * combined with its 2- or 3-bit element indices into one table index, and
 * one TBL (vqtbl1q/2q/4q_s8; CB3 with 16 books: vqtbl4q + vqtbx4q) turns 16
 * indices into signed int8 centroids (seed 000 §6.5).
 *
 * Every block's integer sum is exact; the float steps per block are the
 * scalar reference's (formats/q2_k.c, formats/cb.c), in block order, so
 * with gcc (no FMA contraction in ISO C mode) results are bit-identical to
 * the reference; the tests allow 1e-5 of the sum of |block terms|. */
#ifndef LB_ARM_KQ_H
#define LB_ARM_KQ_H
#include <stddef.h>
#include <stdint.h>

#define LB_ARM_KQ_DECL(sfx)                                                                      \
    void lb_vec_dot_q2_K_q8_K_##sfx(int64_t n, float *s, const void *w, const void *a);           \
    void lb_vec_dot_cb2_q8_K_##sfx(int64_t n, float *s, const void *w, const void *a);            \
    void lb_vec_dot_cb3_q8_K_##sfx(int64_t n, float *s, const void *w, const void *a);
LB_ARM_KQ_DECL(neon)
LB_ARM_KQ_DECL(dotprod)
/* The CB vec_dot with lane tables (lb_cb_set.slane: each sub-group's book
 * loaded as one vector, a one-register TBL) instead of the combined index:
 * not dispatched; for tests and comparison (docs/codebooks.md). */
#define LB_ARM_KQ_LANES_DECL(sfx)                                                                   \
    void lb_vec_dot_cb2_q8_K_lanes_##sfx(int64_t n, float *s, const void *w, const void *a);        \
    void lb_vec_dot_cb3_q8_K_lanes_##sfx(int64_t n, float *s, const void *w, const void *a);
LB_ARM_KQ_LANES_DECL(neon)
LB_ARM_KQ_LANES_DECL(dotprod)

/* lb_gemm_fn on plain rows (lb_kernel.act_rows = 0): Y[m * ldy + n] =
 * dot(W row n, A row m), A = M plain Q8_K rows a_row_size apart. */
#define LB_ARM_KQ_GEMM_DECL(w)                                                                       \
    void lb_gemm_##w##_q8_K_i8mm(int64_t K, const void *W, size_t w_row_size, int n0, int n1,         \
                                 const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_ARM_KQ_GEMM_DECL(q2_K)
LB_ARM_KQ_GEMM_DECL(cb2)
LB_ARM_KQ_GEMM_DECL(cb3)

/* lb_kernel_list entries (kernels/dispatch.c): activations through the
 * scalar Q8_K quantizer (bit-identical to what the other levels use). */
#define LB_ARM_KQ_ENTRY(T, w, isa, sfx, gemm)                                                        \
    {T, LB_TYPE_Q8_K, isa, #w "_q8_K_" #sfx, lb_quantize_row_q8_K_ref, lb_vec_dot_##w##_q8_K_##sfx, gemm}
#define LB_ARM_KQ_LEVELS(T, w)                                                                       \
    LB_ARM_KQ_ENTRY(T, w, LB_ISA_NEON, neon, NULL),                                                  \
    LB_ARM_KQ_ENTRY(T, w, LB_ISA_DOTPROD, dotprod, NULL),                                            \
    {T, LB_TYPE_Q8_K, LB_ISA_I8MM, #w "_q8_K_i8mm", lb_quantize_row_q8_K_ref,                        \
     lb_vec_dot_##w##_q8_K_dotprod, lb_gemm_##w##_q8_K_i8mm}
#define LB_ARM_KQ_KERNELS                     \
    LB_ARM_KQ_LEVELS(LB_TYPE_Q2_K, q2_K),     \
    LB_ARM_KQ_LEVELS(LB_TYPE_CB2, cb2),       \
    LB_ARM_KQ_LEVELS(LB_TYPE_CB3, cb3)

#endif
