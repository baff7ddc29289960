/* GQ{b}_G{g}: GPTQ's storage format (seed 001, QIGen §2; AutoGPTQ's packing)
 * as lowbit GGUF types: group-wise uniform quantization with b = 2, 3 or 4
 * bits per weight and one scale and one zero point per g = 16, 32, 64 or 128
 * consecutive weights of a row (a GGUF row is one output channel's K inputs,
 * so groups run along the input dimension, as GPTQ's):
 *
 *     w = s * (q - z)      q in [0, 2^b - 1], z in [0, 2^b - 1], s fp16     (QIGen eq. (2))
 *
 * so a dot product with activations y splits per group into integer sums,
 * s * (sum q*y - z * sum y), as the paper's eq. (1) and (2) do.
 *
 * Block: 128 weights of one row (rows must be a multiple of 128; other rows
 * fall back to Q8_0, lb_type_fallback), holding 128/g groups:
 *
 *     uint32_t qs[4b];      codes, packed along the row in little-endian 32-bit words
 *     lb_fp16  s[128/g];    scale of each group
 *     uint8_t  z[128/g];    zero point of each group (an integer code)
 *     (zero padding up to a multiple of 4 bytes)
 *
 * Packing: the words form one little-endian bit stream in which weight j of
 * the block takes bits b*j .. b*j + b - 1. That is AutoGPTQ's layout:
 *   4-bit: 8 codes per word, weight j at bits 4*(j%8) of word j/8;
 *   2-bit: 16 codes per word, weight j at bits 2*(j%16) of word j/16;
 *   3-bit: every 32 weights fill 3 words (one 96-bit stream), weight j at bits
 *          3*(j%32) of it: weights 10 and 21 of each 32 straddle two words
 *          (bits 30-31 of word 0 + bit 0 of word 1; bit 31 of word 1 + bits
 *          0-1 of word 2).
 * (lowbit runs on little-endian hosts only, as GGUF's byte order.)
 *
 * Sizes and bits per weight (8 * bytes / 128, exact):
 *
 *     type       bytes  bpw          type       bytes  bpw          type       bytes  bpw
 *     GQ4_G128     68   4.25         GQ3_G128     52   3.25         GQ2_G128     36   2.25
 *     GQ4_G64      72   4.5          GQ3_G64      56   3.5          GQ2_G64      40   2.5
 *     GQ4_G32      76   4.75         GQ3_G32      60   3.75         GQ2_G32      44   2.75
 *     GQ4_G16      88   5.5          GQ3_G16      72   4.5          GQ2_G16      56   3.5
 *
 * Reference quantizer (lb_gq_quantize_row; the traits' from_float is the
 * asymmetric one): round to nearest with GPTQ's quantizer per group and its
 * `mse` range search: for the range [min, max] (min <= 0 <= max forced) and
 * 15 shrunk ones (factors 0.96 .. 0.40), s = (max - min) / (2^b - 1),
 * z = round(-min / s), q = clamp(round(x / s) + z, 0, 2^b - 1) (rounding
 * half to even as torch), keeping the grid with the least squared error
 * (weighted by the importance GPTQ's fix passes). Symmetric:
 * amax = max(|min|, |max|) (shrunk alike), s = 2 amax / (2^b - 1),
 * z = 2^(b-1). One difference from GPTQ, which computes codes with the fp32
 * scale and stores it as fp16 afterwards: s is rounded UP to the next fp16
 * and z and q are computed from the stored value, so a weight inside the
 * grid's span dequantizes within s/2 of its value (one outside it, clipped
 * by the search, to the span's end). An all-zero group gets s = 0 (z = 0,
 * asymmetric; 2^(b-1), symmetric) and dequantizes to zeros.
 *
 * Dot product: activations are Q8_0 (blocks of 32, fp16 d, int8 values); per
 * 32 activations and group the sum of (q - z) * a is exact in int32, then
 * scaled by s * d in float (a block of 32 spans two groups when g = 16).
 * This is the reference; the fast kernels are QIGen's generated GEMVs on
 * the GQ*_QG layouts (kernels/qigen.h, docs/qigen.md). docs/gq.md has the
 * whole story. */
#ifndef LB_GQ_H
#define LB_GQ_H

#include <stddef.h>

#include "formats/grid.h"
#include "formats/types.h"

#define QK_GQ 128 /* weights per block */

/* The 12 types: X(lower-case name, LB_TYPE_ suffix, bits, group), in id order. */
#define LB_GQ_LIST(X)                                                                              \
    X(gq4_g128, GQ4_G128, 4, 128) X(gq4_g64, GQ4_G64, 4, 64) X(gq4_g32, GQ4_G32, 4, 32)            \
    X(gq4_g16, GQ4_G16, 4, 16) X(gq3_g128, GQ3_G128, 3, 128) X(gq3_g64, GQ3_G64, 3, 64)            \
    X(gq3_g32, GQ3_G32, 3, 32) X(gq3_g16, GQ3_G16, 3, 16) X(gq2_g128, GQ2_G128, 2, 128)            \
    X(gq2_g64, GQ2_G64, 2, 64) X(gq2_g32, GQ2_G32, 2, 32) X(gq2_g16, GQ2_G16, 2, 16)

#define LB_GQ_FIRST LB_TYPE_GQ4_G128
#define LB_GQ_LAST LB_TYPE_GQ2_G16

/* Byte offsets inside a block of b bits, group g: scales, zero points, size. */
#define LB_GQ_S_OFF(b) (16 * (b))
#define LB_GQ_Z_OFF(b, g) (16 * (b) + 2 * (QK_GQ / (g)))
#define LB_GQ_SIZE(b, g) ((LB_GQ_Z_OFF(b, g) + QK_GQ / (g) + 3) / 4 * 4)

#define LB_GQ_BLOCK(name, NAME, B, G)                                                              \
    typedef struct {                                                                               \
        uint32_t qs[QK_GQ * (B) / 32];                                                             \
        lb_fp16 s[QK_GQ / (G)];                                                                    \
        uint8_t z[QK_GQ / (G)];                                                                    \
    } block_##name;
LB_GQ_LIST(LB_GQ_BLOCK)
#undef LB_GQ_BLOCK

/* Every size as the table above says, and the field offsets the generic code uses. */
static_assert(sizeof(block_gq4_g128) == 68, "block_gq4_g128 size");
static_assert(sizeof(block_gq4_g64) == 72, "block_gq4_g64 size");
static_assert(sizeof(block_gq4_g32) == 76, "block_gq4_g32 size");
static_assert(sizeof(block_gq4_g16) == 88, "block_gq4_g16 size");
static_assert(sizeof(block_gq3_g128) == 52, "block_gq3_g128 size");
static_assert(sizeof(block_gq3_g64) == 56, "block_gq3_g64 size");
static_assert(sizeof(block_gq3_g32) == 60, "block_gq3_g32 size");
static_assert(sizeof(block_gq3_g16) == 72, "block_gq3_g16 size");
static_assert(sizeof(block_gq2_g128) == 36, "block_gq2_g128 size");
static_assert(sizeof(block_gq2_g64) == 40, "block_gq2_g64 size");
static_assert(sizeof(block_gq2_g32) == 44, "block_gq2_g32 size");
static_assert(sizeof(block_gq2_g16) == 56, "block_gq2_g16 size");
#define LB_GQ_CHECK(name, NAME, B, G)                                                              \
    static_assert(sizeof(block_##name) == LB_GQ_SIZE(B, G), "block_" #name " size formula");       \
    static_assert(offsetof(block_##name, s) == LB_GQ_S_OFF(B), "block_" #name " s offset");         \
    static_assert(offsetof(block_##name, z) == LB_GQ_Z_OFF(B, G), "block_" #name " z offset");
LB_GQ_LIST(LB_GQ_CHECK)
#undef LB_GQ_CHECK

/* Per-type reference routines (k, n multiples of 128), as the traits and the
 * kernel table (kernels/dispatch.c) name them: lb_dequantize_row_gq4_g128,
 * lb_quantize_row_gq4_g128_ref (asymmetric), lb_vec_dot_gq4_g128_q8_0_ref, ... */
#define LB_GQ_DECLARE(name, NAME, B, G)                                                            \
    void lb_dequantize_row_##name(const void *x, float *y, int64_t k);                             \
    void lb_quantize_row_##name##_ref(const float *x, void *y, int64_t k);                         \
    void lb_vec_dot_##name##_q8_0_ref(int64_t n, float *s, const void *w, const void *a);
LB_GQ_LIST(LB_GQ_DECLARE)
#undef LB_GQ_DECLARE

/* Bits (2, 3, 4) and group size (16..128) of a GQ type; 0 for other types. */
int lb_gq_bits(int type);
int lb_gq_group(int type);
/* The GQ type of bits and group, -1 if none. */
int lb_gq_type(int bits, int group);

/* Traits of a GQ type, NULL for other types. */
const lb_type_traits *lb_gq_traits(int type);

/* Reference quantize k values (a multiple of 128) of a GQ type: sym = 0 the
 * asymmetric quantizer (= from_float), else the symmetric one. Does
 * nothing for other types. */
void lb_gq_quantize_row(int type, const float *x, void *y, int64_t k, int sym);

/* GPTQ's quantizer over n values x (a group; a whole row for the GC types,
 * formats/gqc.h): the grid (fp16 scale *s, zero point *z) its range search
 * picks, as described above (imp: weights of the squared error, or NULL). */
void lb_gq_fit(int bits, const float *x, int64_t n, const float *imp, int sym, lb_fp16 *s, int *z);
/* GPTQ's code of x on the grid (s, z) of `bits`: clamp(round(x / s) + z,
 * 0, 2^bits - 1), rounding half to even; s == 0: z; NaN: z. */
int lb_gq_code(float x, float s, int z, int bits);

/* Code j (0..127) of a block of `bits`, and storing one (q masked to bits). */
static inline int lb_gq_get_code(const void *blk, int bits, int j) {
    const uint32_t *qs = blk;
    const int p = bits * j, w = p >> 5, sh = p & 31;
    uint32_t v = qs[w] >> sh;
    if (sh + bits > 32) v |= qs[w + 1] << (32 - sh);
    return (int)(v & ((1u << bits) - 1));
}
static inline void lb_gq_set_code(void *blk, int bits, int j, int q) {
    uint32_t *qs = blk;
    const uint32_t m = (1u << bits) - 1, u = (uint32_t)q & m;
    const int p = bits * j, w = p >> 5, sh = p & 31;
    qs[w] = (qs[w] & ~(m << sh)) | (u << sh);
    if (sh + bits > 32) {
        const int r = 32 - sh; /* bits that fit in word w */
        qs[w + 1] = (qs[w + 1] & ~(m >> r)) | (u >> r);
    }
}

/* GPTQ's hook (formats/grid.h) for a GQ type, NULL for other types: width =
 * the group size; fix quantizes the group (asymmetric, its range search
 * weighted by imp when given);
 * round rounds onto the group's stored s and z and returns s * (q - z), the
 * value dequantization gives. col: the column within the row or within the
 * block (only col % 128 is used). */
const lb_grid *lb_gq_grid(int type);
/* The same with GPTQ's symmetric quantizer fixing each group (z = 2^(b-1)). */
const lb_grid *lb_gq_grid_sym(int type);

#endif
