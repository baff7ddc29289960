/* Int8 in chunks of 256 along K: the operands of the AMX int8 prefill GEMM
 * on the interleaved Q4_0 / IQ4_NL / MXFP4_NL / Q8_0 layouts
 * (kernels/x86/repack_amx_q8_256.c, docs/kernels.md "AMX int8, 256-value
 * chunks").
 *
 * Why: those formats change scale every 32 weights, so an exact int8 GEMM
 * must scale each 32-value block's int32 tile on the vector units, which
 * caps it at a third of the tile unit's rate. Here both operands are
 * requantized to int8 with one scale per row (activations) or column
 * (weights) and chunk of 256, so tdpbssd accumulates 4 full-width steps
 * (K = 64 each) before one scaling: the approach ik_llama.cpp takes with
 * Q8_K_R8 for its prefill, in tiles. It is not bit-exact against the
 * formats' dot: the requantization adds at most half an int8 step of the
 * chunk's largest block (a fraction of a 4-bit step; for Q8_0 weights about
 * Q8_0's own rounding again). The kernels are bit-identical to these
 * references in the codes and scales; the sums are in fp32.
 *
 * Activations, 16 rows of k values (k % 32 == 0), nb = k / 32 blocks:
 *   bytes [0, 1024 * ceil(nb / 2)): step s (values 64s .. 64s + 63), 16 rows
 *   of 64 int8 (the A tile), zeros past k; then ceil(nb / 8) chunks of 16
 *   floats, the rows' scales. Row m, chunk c (values 256c .. 256c + 255, or
 *   to k): amax = max |x|, scale amax / 127, codes RNE(x * (127 / amax))
 *   (0 when amax is 0).
 * Weights, row n of a plain Q4_0 / IQ4_NL / MXFP4_NL / Q8_0 row, chunk c:
 *   D = max |d| of its blocks, s = D * qmax / 127 (qmax: 8, 127, 12, 127:
 *   the largest |q| of the type); per block r = d / s (0 when s is 0), the
 *   fixed-point factor B = RNE(r * 2^(15 - sh)) (sh 4 for 4-bit codes, 1
 *   for 8-bit: |B| < 2^15), and each code w = (q * 2^sh * B + 2^14) >> 15,
 *   which is vpmulhrsw's rounding: |w| <= 127 (-128 only for a Q8_0 -128).
 * Y[m][n] = sum over chunks of (sa[m][c] * sw[n][c]) * (the chunk's integer
 * dot), each term added in fp32 in chunk order. */
#ifndef LB_Q8_256_H
#define LB_Q8_256_H

#include <stddef.h>
#include <stdint.h>

/* Bytes a 16-row group takes per 32 values, at most (a lone half step and
 * its chunk's scales at K = 32): lb_kernel.act_x4_block. */
#define LB_Q8_256X16_BLOCK 1088

/* Offset of the scales in a group of k values. */
static inline size_t lb_q8_256x16_scales_at(int64_t k) { return (size_t)((k / 32 + 1) / 2) * 1024; }

/* 16 fp32 rows (x, x + ldx, ...) of k values -> one group as above. */
void lb_quantize_q8_256x16_ref(const float *x, size_t ldx, void *y, int64_t k);

/* The requantization of base (LB_TYPE_Q4_0, IQ4_NL, MXFP4_NL or Q8_0): its
 * largest |q| and shift. */
int lb_q8_256_qmax(int base);
int lb_q8_256_shift(int base);

/* One plain row of base (k values) -> k int8 codes and ceil(k / 256) scales. */
void lb_requant_q8_256_ref(int base, const void *row, int64_t k, int8_t *q, float *s);

#endif
