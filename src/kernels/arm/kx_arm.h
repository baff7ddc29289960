/* Arm kernels of the 16-row layouts Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_1,
 * Q5_0, Q5_1 _16X4 (formats/repack_kx.h), aarch64 only; all take plain
 * activation rows (act_rows 0: Q8_K, Q8_0 or Q8_1 as the base type's dot).
 *   _neon     GEMV, SDOT emulated (SMLAL into int16, SADALP)   kx_neon.c
 *   _dotprod  GEMV with SDOT by lane                            kx_dotprod.c
 *   _i8mm     GEMM with SMMLA (2 weight rows x 2 activation     kx_i8mm.c
 *             rows per instruction), a last odd activation row
 *             through the dotprod GEMV
 * The GEMVs take any number of activation rows (two at a time share the
 * decoded weights), so at the neon and dotprod levels every row goes to
 * gemv; at i8mm gemv is left out and the driver (kernels/matmul.c,
 * run_plain) gives all rows to gemm. Shared decoders: kx_arm_decode.h; the
 * GEMV template: kx_arm_impl.h.
 *
 * Instructions per 16 rows x 32 weights x 1 activation row in the inner
 * loops (gcc 12 -O2, all classes: SIMD, loads, moves, address arithmetic;
 * scripts/arm-loop-insns.py). The floor is 32 SDOT (dotprod) or 16 SMMLA
 * (i8mm); the rest is mostly bit decoding (Q5 / Q3 / Q6 high bits: 2-3
 * instructions per 16 weights), then scales (MLA per sub-block and tile).
 *                    Q3_K Q4_K Q5_K Q6_K IQ4_XS Q4_1 Q5_0 Q5_1
 *   neon, 1 row        336  174  272  300   283   189  272  286
 *   dotprod, 1 row     235  107  177  195   142   127  188  192
 *   dotprod, 2 rows    159   87  126  140   106   111  138  142
 *   i8mm, 4 rows        96   61   79   89    63     -    -    -
 *   i8mm, 8 rows         -    -    -    -    54    65   73   74 */
#ifndef LB_KX_ARM_H
#define LB_KX_ARM_H

#include "kernels/arm/arm_kernels.h" /* LB_HAVE_ARM_KERNELS, LB_ARM_GEMM_ARGS */

#if LB_HAVE_ARM_KERNELS
#include "kernels/kx_kernels.h" /* LB_KX_ACT_*, LB_KX_QACT_* */

#define LB_KX_ARM_DECL(w, a)                                          \
    void lb_gemv_##w##x16_##a##_16x4_neon(LB_ARM_GEMM_ARGS);          \
    void lb_gemv_##w##x16_##a##_16x4_dotprod(LB_ARM_GEMM_ARGS);       \
    void lb_gemm_##w##x16_##a##_16x4_i8mm(LB_ARM_GEMM_ARGS);
LB_KX_ARM_DECL(q3_K, q8_K)
LB_KX_ARM_DECL(q4_K, q8_K)
LB_KX_ARM_DECL(q5_K, q8_K)
LB_KX_ARM_DECL(q6_K, q8_K)
LB_KX_ARM_DECL(iq4_xs, q8_K)
LB_KX_ARM_DECL(q4_1, q8_1)
LB_KX_ARM_DECL(q5_0, q8_0)
LB_KX_ARM_DECL(q5_1, q8_1)
#undef LB_KX_ARM_DECL

/* lb_kernel_list entries (kernels/dispatch.c; field order in kernels/dispatch.h):
 * vec_dot NULL, gemm / gemv as above, act_rows 0. */
#define LB_KX_ARM_ENTRIES(T, w, a)                                                                            \
    {T, LB_KX_ACT_##a, LB_ISA_NEON, #w "x16_" #a "_16x4_neon", LB_KX_QACT_##a, NULL, NULL,                     \
     lb_gemv_##w##x16_##a##_16x4_neon},                                                                       \
    {T, LB_KX_ACT_##a, LB_ISA_DOTPROD, #w "x16_" #a "_16x4_dotprod", LB_KX_QACT_##a, NULL, NULL,               \
     lb_gemv_##w##x16_##a##_16x4_dotprod},                                                                    \
    {T, LB_KX_ACT_##a, LB_ISA_I8MM, #w "x16_" #a "_16x4_i8mm", LB_KX_QACT_##a, NULL,                           \
     lb_gemm_##w##x16_##a##_16x4_i8mm, NULL}

#define LB_KX_ARM_KERNELS LB_KX_TYPE_LIST(LB_KX_ARM_ENTRIES)

#endif
#endif
