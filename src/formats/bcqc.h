/* BCQ{q}_GC: seed 003's extended BCQ (formats/bcq.h) with whole-row groups
 * (the "g = ... and whole row"): one set of q alphas and one z per
 * output channel, over its whole row of K inputs:
 *
 *     w[n][k] = sum_{i<q} alpha_i[n] b_i[n][k] + z[n]      b in {-1, +1}
 *
 * Codes: blocks of 128 weights of one row (rows must be a multiple of 128;
 * other rows fall back to Q8_0 as BCQ's do), each BCQ{q}_G128's planes
 * without its alphas and z:
 *
 *     uint8_t b[q][16];   plane i: bit j%8 of byte j/8 is b_i of weight j (1: +1)
 *
 *     type      id    block bytes   bits/weight (codes)   with the side tensor
 *     BCQ4_GC   1091      64            4                    4 + 80 / K
 *     BCQ3_GC   1092      48            3                    3 + 64 / K
 *     BCQ2_GC   1093      32            2                    2 + 48 / K
 *     BCQ1_GC   1094      16            1                    1 + 32 / K
 *
 * In a GGUF file the grids are the side tensor NAME.bcq_az, F16 [(q+1) N]:
 * row n's alpha_0 .. alpha_{q-1} at (q+1) n .., its z at (q+1) n + q
 * (formats/gc.h). So BCQ4_GC stores 4.04 bits per weight at K = 2048,
 * against BCQ4_G128's 4.625.
 *
 * A row's values, dot products and everything else are those of the row
 * expanded into BCQ{q}_G128 blocks (its alphas and z in every block): the
 * same bits, and at run time the load does exactly that, then repacks to
 * the table-lookup layout (model/repack.c). The quantizer is BCQ's (greedy
 * start and uniform start, the alternating refinement, lb_bcq_iters())
 * over the whole row as one group. A GQ{q}_GC row converts exactly
 * (LUT-GEMM App. C) where its grid's BCQ form is fp16 (lb_bcqc_from_gqc).
 * docs/bcq.md, "Whole-row groups". */
#ifndef LB_BCQC_H
#define LB_BCQC_H

#include <stddef.h>

#include "formats/bcq.h"

/* The 4 types: X(lower-case name, LB_TYPE_ suffix, q), in id order. */
#define LB_BCQC_LIST(X) X(bcq4_gc, BCQ4_GC, 4) X(bcq3_gc, BCQ3_GC, 3) X(bcq2_gc, BCQ2_GC, 2) X(bcq1_gc, BCQ1_GC, 1)

#define LB_BCQC_FIRST LB_TYPE_BCQ4_GC
#define LB_BCQC_LAST LB_TYPE_BCQ1_GC
#define QK_BCQC 128 /* weights per code block */

/* Bytes of the codes of 128 weights of q planes. */
#define LB_BCQC_SIZE(q) (16 * (q))

#define LB_BCQC_BLOCK(name, NAME, Q)                                                               \
    typedef struct {                                                                               \
        uint8_t b[Q][QK_BCQC / 8];                                                                 \
    } block_##name;
LB_BCQC_LIST(LB_BCQC_BLOCK)
#undef LB_BCQC_BLOCK

static_assert(sizeof(block_bcq4_gc) == 64, "block_bcq4_gc size");
static_assert(sizeof(block_bcq1_gc) == 16, "block_bcq1_gc size");
#define LB_BCQC_CHECK(name, NAME, Q)                                                               \
    static_assert(sizeof(block_##name) == LB_BCQC_SIZE(Q), "block_" #name " size formula");         \
    static_assert(8 * sizeof(block_##name) == (Q) * QK_BCQC, "block_" #name ": q bits per weight"); \
    static_assert(LB_BCQ_SIZE(Q, QK_BCQC) == LB_BCQC_SIZE(Q) + 2 * ((Q) + 1),                     \
                  "block_" #name ": a G128 block's planes");
LB_BCQC_LIST(LB_BCQC_CHECK)
#undef LB_BCQC_CHECK

#define LB_BCQC_SFX ".bcq_az"

/* q (1..4) of a BCQ GC type, 0 for other types. */
int lb_bcqc_bits(int type);
/* The GC type of q planes, -1 if none. */
int lb_bcqc_type(int q);
/* BCQ{q}_G128, the type a GC row expands into; -1 for other types. */
int lb_bcqc_g128(int type);
/* Traits (block geometry only: to_float, from_float and vec_dot are NULL,
 * a row cannot be read without its grid); NULL for other types. */
const lb_type_traits *lb_bcqc_traits(int type);

/* ---- reference, one row of k weights (k a multiple of 128); az: its q
 * alphas and z (fp16) ---- */

/* The whole row as one BCQ group (lb_bcq_fit_group, importance imp or
 * NULL): codes and az. 0, or -1 if the fit's scratch could not be had
 * (the row is then all zeros). */
int lb_bcqc_quantize_row(int type, const float *x, void *codes, int64_t k, const float *imp, lb_fp16 *az);
/* The row as BCQ{q}_G128 blocks: az and each block's planes. */
void lb_bcqc_to_g128(int type, const void *codes, const lb_fp16 *az, void *dst, int64_t k);
void lb_bcqc_dequantize_row(int type, const void *codes, float *y, int64_t k, const lb_fp16 *az);
/* The nearest of the row's 2^q values to x (a tie to the smaller value),
 * stored as the code of column col; returns that value. */
float lb_bcqc_round(int type, void *codes, int64_t col, float x, const lb_fp16 *az);
/* LB_OK if every alpha and z is finite, else LB_ERR_FORMAT naming row n. */
lb_status lb_bcqc_check_az(int type, const lb_fp16 *az, int64_t n);

/* GQ{q}_GC -> BCQ{q}_GC (LUT-GEMM App. C, as lb_bcq_from_uniform): the
 * codes keep their bits (bit i of a uniform code is plane i), az gets
 * alpha_i = 2^(i-1) s, z = s (2^q - 1 - 2 zq) / 2. Returns 1 when these are
 * fp16 numbers (lb_bcq_uniform_exact: every value then equals the GQ
 * row's bit for bit), 0 when z (or an alpha) took the nearest fp16. */
int lb_bcqc_from_gqc(int q, const void *gq_codes, lb_fp16 s, int zq, void *codes, lb_fp16 *az, int64_t k);

#endif
