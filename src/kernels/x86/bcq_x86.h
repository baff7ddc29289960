/* x86 kernels of the BCQ types (formats/bcq.h), all on the _LUT layouts
 * (16 rows interleaved, repacked at load); dispatch picks the highest level
 * at or below the one in force:
 *   bcq{q}_g{g}_lut_q8_0_lut4_avx2   the avx2 level, mu = 4: per 4 activations the 16 signed
 *       sums as int16 tables split in low / high bytes (Q8_0_LUT4, built once
 *       per token and call by lb_quantize_row_q8_0_lut4_avx2 and shared by
 *       all rows and planes); each plane byte's two nibbles index them with
 *       two vpshufb per table, the bytes are re-joined to int16 (vpunpck)
 *       and summed exactly over a Q8_0 block, then scaled in float in the
 *       reference's order: the result is bit-identical to it;
 *   bcq{q}_g{g}_lut_bf16x16_amxbf16   the amx level with AMX-BF16: that GEMV
 *       for decode and tail rows, a bf16 tile GEMM for rows in groups of 16
 *       (bcq_amx_bf16.c: weights the reference's floats rounded to bf16);
 *   bcq{q}_g{g}_lut_q8_0_lut4_1x16_avx512   the avx512 and amx levels: the
 *       same with 4 slices per zmm; for q >= 2 the lanes of all planes are
 *       folded into one register and their sums taken out by vpdpbusd, for
 *       q = 1 the plane is widened and summed alone; the same bits
 *       (bcq_avx512.c); from LB_BCQ_GEMM_MIN_M(q) activation rows the
 *       planes as +-1 bytes by vpdpbusd instead (bcq_gemm_avx512.c), the
 *       same bits again;
 *   bcq{q}_g{g}_lut_q8_0_lut4_1x16_avx512vbmi   the same where the CPU has
 *       VBMI (and the GEMV of the AMX-BF16 entry there): per plane and
 *       block one vpermb puts each row's four lanes in its dword, vpdpbusd
 *       sums them (every q; bcq_avx512.c), the same bits; the lookup for
 *       every M, prefill too;
 *   lb_bcq_gemv_f8_avx2              mu = 8: tables of 256 floats per 8
 *       activations (lb_bcq_f8_prepare), vgatherdps of 8 rows' entries;
 *       bit-identical to lb_bcq_gemv_f8_ref (the float path's own reference;
 *       not in the dispatch table: the test and bench call it). */
#ifndef LB_BCQ_X86_H
#define LB_BCQ_X86_H

#include "formats/bcq.h"
#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */
#include "kernels/x86/repack_amx.h"  /* lb_pack_bf16x16_avx512 */

#if LB_HAVE_X86_KERNELS
void lb_quantize_row_q8_0_lut4_avx2(const float *x, void *y, int64_t k);

#define LB_BCQ_AVX2_DECLARE(name, NAME, Q, G)                                                                \
    void lb_gemv_##name##_lut4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, \
                                    size_t a_row_size, int M, float *Y, size_t ldy);
LB_BCQ_LIST(LB_BCQ_AVX2_DECLARE)
#undef LB_BCQ_AVX2_DECLARE

#define LB_BCQ_AVX512_DECLARE(name, NAME, Q, G)                                                              \
    void lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512(int64_t K, const void *W, size_t w_row_size, int n0, int n1, \
                                                    const void *A, size_t a_row_size, int M, float *Y, size_t ldy); \
    void lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512vbmi(int64_t K, const void *W, size_t w_row_size, int n0,     \
                                                        int n1, const void *A, size_t a_row_size, int M, float *Y, \
                                                        size_t ldy);
LB_BCQ_LIST(LB_BCQ_AVX512_DECLARE)
#undef LB_BCQ_AVX512_DECLARE

/* The AMX-BF16 prefill GEMM (bcq_amx_bf16.c): bf16 activation groups, rows
 * in whole groups of 16; with the AVX-512 lookup GEMV for the rest. */
#define LB_BCQ_AMXBF16_DECLARE(name, NAME, Q, G)                                                             \
    void lb_gemm_##name##_lut_bf16x16_amxbf16(int64_t K, const void *W, size_t w_row_size, int n0, int n1,    \
                                              const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_BCQ_LIST(LB_BCQ_AMXBF16_DECLARE)
#undef LB_BCQ_AMXBF16_DECLARE

/* The AVX-512 VNNI prefill GEMM (bcq_gemm_avx512.c) of BCQ{q}_G{g}_LUT:
 * rows [n0, n1) (whole groups of 16) x M Q8_0_LUT4 rows, bit-identical to
 * the reference; -1 (nothing written) without scratch memory or for an
 * unknown (q, g). The avx512 GEMV hands it M >= LB_BCQ_GEMM_MIN_M(q) rows:
 * where it overtook the lookup GEMV on an SPR-class Xeon (bench/kernels,
 * 5632 x 2048, 2 threads, M = 4 / 8 / 16: q <= 3 between 4 and 8, q = 4
 * between 8 and 16 at g = 128; docs/bcq.md). */
int lb_bcq_gemm_vnni_avx512(int q, int g, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                            size_t a_row_size, int M, float *Y, size_t ldy);
#define LB_BCQ_GEMM_MIN_M(q) ((q) >= 4 ? 16 : 8)

/* The whole _LUT tensor W (N rows of K) against one F8 row: groups of 16
 * rows by AVX2, the N % 16 last rows by the scalar dot. */
void lb_bcq_gemv_f8_avx2(int lut_type, int64_t K, const void *W, int64_t N, const void *act, float *y);

/* lb_kernel_list entries (kernels/dispatch.c; fields: kernels/dispatch.h) */
#define LB_BCQ_AVX2_KERNEL(name, NAME, Q, G)                                                                  \
    {LB_TYPE_##NAME##_LUT, LB_TYPE_Q8_0_LUT4, LB_ISA_AVX2, #name "_lut_q8_0_lut4_avx2",                         \
     lb_quantize_row_q8_0_lut4_avx2, NULL, NULL, lb_gemv_##name##_lut4_avx2},
/* whole_m 2: from LB_BCQ_GEMM_MIN_M rows the GEMV hands them to the VNNI
 * GEMM, which blocks K itself (128 columns at a time) */
#define LB_BCQ_AVX512_KERNEL(name, NAME, Q, G)                                                                \
    {LB_TYPE_##NAME##_LUT, LB_TYPE_Q8_0_LUT4, LB_ISA_AVX512, #name "_lut_q8_0_lut4_1x16_avx512",                 \
     lb_quantize_row_q8_0_lut4_avx2, NULL, NULL, lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512, 0, NULL, 0, 0, 2},
/* the same with VBMI (vpermb): each plane's lanes summed per row by
 * vpdpbusd; the lookup for every M (no hand-off to the VNNI GEMM: slower
 * there at every M measured, bcq_avx512.c), up to 1024 rows a call */
#define LB_BCQ_AVX512VBMI_KERNEL(name, NAME, Q, G)                                                            \
    {LB_TYPE_##NAME##_LUT, LB_TYPE_Q8_0_LUT4, LB_ISA_AVX512, #name "_lut_q8_0_lut4_1x16_avx512vbmi",             \
     lb_quantize_row_q8_0_lut4_avx2, NULL, NULL, lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512vbmi, 0, NULL, 0,     \
     LB_CPU_VBMI, 2},
/* AMX-BF16 GEMM; decode by the AVX-512 GEMV (sfx: avx512vbmi where VBMI is
 * there too, the first entry that fits wins) */
#define LB_BCQ_AMXBF16_ENTRY(name, NAME, sfx, needs)                                                           \
    {LB_TYPE_##NAME##_LUT, LB_TYPE_Q8_0_LUT4, LB_ISA_AMX, #name "_lut_bf16x16_amxbf16",                         \
     lb_quantize_row_q8_0_lut4_avx2, NULL, lb_gemm_##name##_lut_bf16x16_amxbf16,                                \
     lb_gemv_##name##_lut_q8_0_lut4_1x16_##sfx, 16, lb_pack_bf16x16_avx512, sizeof(lb_block_bf16x16), needs, 2},
#define LB_BCQ_AMXBF16_KERNEL(name, NAME, Q, G)                                                               \
    LB_BCQ_AMXBF16_ENTRY(name, NAME, avx512vbmi, LB_CPU_AMXBF16 | LB_CPU_VBMI)                                   \
    LB_BCQ_AMXBF16_ENTRY(name, NAME, avx512, LB_CPU_AMXBF16)
#define LB_BCQ_X86_KERNELS                                                                                    \
    LB_BCQ_LIST(LB_BCQ_AVX2_KERNEL) LB_BCQ_LIST(LB_BCQ_AVX512_KERNEL) LB_BCQ_LIST(LB_BCQ_AVX512VBMI_KERNEL)       \
    LB_BCQ_LIST(LB_BCQ_AMXBF16_KERNEL)
#endif

#endif
