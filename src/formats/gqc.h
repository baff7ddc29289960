/* GQ{b}_GC: GPTQ's whole-column groups (seed 001, QIGen eq. (1); AutoGPTQ
 * group_size -1) as lowbit GGUF types: b = 2, 3 or 4 bits per weight and ONE
 * scale s and ONE integer zero point z per output channel, over its whole
 * row of K inputs:
 *
 *     w[n][k] = s[n] * (q[n][k] - z[n])       q, z in [0, 2^b - 1], s fp16
 *
 * so a row's dot product with activations y is s * (sum q*y - z * sum y),
 * eq. (1).
 *
 * Codes: blocks of 128 weights of one row (rows must be a multiple of 128;
 * other rows fall back to Q8_0 as GQ's do), packed exactly as the GQ types
 * pack them (formats/gq.h: 32-bit little-endian words along the row,
 * AutoGPTQ's bit order, 3-bit as 32 values in 3 words), and nothing else:
 *
 *     uint32_t qs[4b];      16 b bytes per 128 weights: exactly b bits per weight
 *
 *     type     id    block bytes   bits/weight (codes)   with the side tensor
 *     GQ4_GC   1063      64            4                    4 + 32 / K
 *     GQ3_GC   1064      48            3                    3 + 32 / K
 *     GQ2_GC   1065      32            2                    2 + 32 / K
 *
 * ---- in a GGUF file ----
 * A GGUF tensor's size follows from its type and shape, so the per-row
 * scales and zeros live in a side tensor beside the matrix NAME (as MX's
 * pieces do, formats/mx.h):
 *
 *     NAME         GQ{b}_GC [K, N]   the codes, one GGUF row per output channel
 *     NAME.gq_sz   F16      [2N]     1-D: row n's scale s (fp16) at element
 *                                    2n, its zero point z (an integer
 *                                    0 .. 2^b - 1, exact in fp16) at 2n + 1
 *
 * (1-D, so no tool takes the pairs for a matrix with rows of 2.)
 *
 * 4 bytes per row: 32 bits per K weights, so a matrix stores b + 32 / K bits
 * per weight (4.0156 for 4 bits at K = 2048). The loader (model_load.c)
 * finds NAME.gq_sz by name and refuses the matrix when it is missing, not
 * F16 [2N], or holds a non-finite scale or a zero point that is not an
 * integer in range.
 *
 * The traits (lb_gqc_traits) give the block geometry only: to_float,
 * from_float and vec_dot are NULL, since a row cannot be read without its
 * scale and zero; the reference functions below take them as arguments.
 * At run time a GC matrix is an lb_gc_view (formats/gc.h: codes and side
 * tensor in place, zero copy); the load expands it into the GQ{b}_G128
 * layout (s and z replicated into every 128-block) where the QIGen kernels
 * run (model/repack.c), else it runs on the scalar reference GEMV
 * (lb_gemv_gqc_q8_0_ref). docs/gq.md has the whole story. */
#ifndef LB_GQC_H
#define LB_GQC_H

#include <stddef.h>

#include "formats/gq.h"

/* The 3 types: X(lower-case name, LB_TYPE_ suffix, bits), in id order. */
#define LB_GQC_LIST(X) X(gq4_gc, GQ4_GC, 4) X(gq3_gc, GQ3_GC, 3) X(gq2_gc, GQ2_GC, 2)

#define LB_GQC_FIRST LB_TYPE_GQ4_GC
#define LB_GQC_LAST LB_TYPE_GQ2_GC

/* Bytes of the codes of 128 weights at b bits. */
#define LB_GQC_SIZE(b) (16 * (b))

#define LB_GQC_BLOCK(name, NAME, B)                                                                \
    typedef struct {                                                                               \
        uint32_t qs[QK_GQ * (B) / 32];                                                             \
    } block_##name;
LB_GQC_LIST(LB_GQC_BLOCK)
#undef LB_GQC_BLOCK

static_assert(sizeof(block_gq4_gc) == 64, "block_gq4_gc size");
static_assert(sizeof(block_gq3_gc) == 48, "block_gq3_gc size");
static_assert(sizeof(block_gq2_gc) == 32, "block_gq2_gc size");
#define LB_GQC_CHECK(name, NAME, B)                                                                \
    static_assert(sizeof(block_##name) == LB_GQC_SIZE(B), "block_" #name " size formula");          \
    static_assert(LB_GQC_SIZE(B) == LB_GQ_S_OFF(B), "block_" #name ": the codes of a GQ block");
LB_GQC_LIST(LB_GQC_CHECK)
#undef LB_GQC_CHECK

/* The side tensor's name suffix and its element type. */
#define LB_GQC_SFX ".gq_sz"
#define LB_GQC_SIDE_TYPE LB_TYPE_F16

/* Bits (2, 3, 4) of a GC type, 0 for other types. */
int lb_gqc_bits(int type);
/* The GC type of bits, -1 if none. */
int lb_gqc_type(int bits);
/* GQ{b}_G128, the group type a GC matrix of the same bits expands into
 * (the same code words per block, s and z in every block); -1 for other types. */
int lb_gqc_g128(int type);
/* Traits of a GC type (geometry only, see above), NULL for other types. */
const lb_type_traits *lb_gqc_traits(int type);
/* ---- reference, one row of k weights (k a multiple of 128) ----
 * A row's grid is its fp16 scale s and integer zero point z. */

/* Quantizes x with GPTQ's quantizer over the whole row (lb_gq_fit: the
 * `mse` range search, asymmetric, or symmetric with z = 2^(b-1) when sym;
 * imp weights the search's squared error, may be NULL) into codes, and
 * returns the row's grid in *s, *z. Nothing for other types. */
void lb_gqc_quantize_row(int type, const float *x, void *codes, int64_t k, int sym, const float *imp, lb_fp16 *s,
                         int *z);
/* y = s * (q - z). */
void lb_gqc_dequantize_row(int type, const void *codes, float *y, int64_t k, lb_fp16 s, int z);
/* Dot with k Q8_0 activations a: per 32 activations the sum of (q - z) * a
 * exact in int32, then (s * d) * sum added in float, in the order
 * GQ{b}_G128's reference dot takes (bit for bit the same on the expanded row). */
void lb_gqc_vec_dot_q8_0(int type, int64_t k, float *out, const void *codes, const void *a, lb_fp16 s, int z);
/* GPTQ's rounding of x at column col onto the row's grid (s, z): stores
 * the code, returns s * (q - z) as lb_gqc_dequantize_row computes it. */
float lb_gqc_round(int type, void *codes, int64_t col, float x, lb_fp16 s, int z);
/* The row as GQ{b}_G128 blocks (lb_row_size(lb_gqc_g128(type), k) bytes):
 * each block's code words copied, its scale s, its zero z. */
void lb_gqc_to_g128(int type, const void *codes, lb_fp16 s, int z, void *dst, int64_t k);

/* The side tensor's pair of row n: sz[2n] = s, sz[2n + 1] = z as fp16. */
static inline lb_fp16 lb_gqc_zero_fp16(int z) { return lb_f32_to_fp16((float)z); }

#endif
