/* ABQ_W{q} and ABQ_W2S: seed 004's (ABQ-LLM) bit-plane weights, with
 * activations quantized per token to p bits and split into p bit planes, so
 * that a matmul is a sum of 1-bit products (eqs. (6)-(7), App. B):
 *
 *     sum_j cw_j ca_j = sum_{s<q} sum_{t<p} 2^(s+t) popcount(Wplane_s AND Aplane_t)
 *
 * Weights: per group of 128 consecutive weights of a row (a GGUF row is one
 * output channel's K inputs), asymmetric uniform codes
 *
 *     w = d (c - z)       c in 0 .. 2^q - 1, z an integer in the same range, d fp16
 *
 * The paper quantizes weights per channel; a group of 128 keeps the fixed
 * block size every lowbit type has (rows of any K that 128 divides), costs
 * 0.25 bit per weight for d and z, and is the finer (better) grid. Rows that
 * 128 does not divide fall back to Q8_0 (lb_type_fallback).
 *
 *     ABQ_W{q}  (q = 1..8, ids 1101-1108):  lb_fp16 d; int16_t z; uint8_t b[q][16]
 *               16 q + 4 bytes, exactly q + 0.25 bits per weight
 *     ABQ_W2S   (id 1109, bit balance, sec. 3.3): the symmetric 2-bit grid
 *               {-2, -1, 0, 1, 2}: w = d (c - 2), c in 0..4 in 3 planes
 *               (offset binary, z = 2 implied): lb_fp16 d; uint8_t b[3][16]
 *               50 bytes, exactly 3.125 bits per weight. A code 5..7 is
 *               malformed (lb_abq_check_blocks).
 *
 * Plane s of a group: bit j % 8 of byte j / 8 is bit s of weight j's code.
 *
 * Activations, ABQ_ACT (id 1100, never a weight type): one token's row of K
 * values (K a multiple of 128) quantized asymmetrically over [min(x, 0),
 * max(x, 0)] to p bits (p = 1..8, a property of each matrix: lb_matrix.act_bits):
 *     da = (hi - lo) / (2^p - 1), za = round(-lo / da), ca = clamp(round(x / da) + za)
 * in blocks of 128 that each repeat the token's da, za and p, and hold the
 * block's p planes (planes p..7 zero), its codes again as bytes ca - 128
 * (for the kernels that recombine weight planes into bytes instead of
 * counting bits) and the sum of its codes.
 *
 * Dot of a weight row and an activation row, in every kernel:
 *     I_g = sum_j (cw_j - zw)(ca_j - za)      exact int32 per group g:
 *         = P - za Sw - zw Sa + 128 zw za      P the plane popcount sum above,
 *                                              Sw, Sa the groups' code sums
 *     y   = (float)(da * sum_g (double) dw_g * I_g)   groups in order, in double
 * dw_g * I_g (11 x 24 bits) is exact in double, so the result does not
 * depend on whether a compiler fuses the multiply-add: every kernel gives
 * the reference's float, bit for bit, but the AMX GEMM of the code layouts
 * (kernels/x86/abq_amx.c), which sums d I in float, within a stated bound
 * (tests/test_abq.c). */
#ifndef LB_ABQ_H
#define LB_ABQ_H

#include <stddef.h>

#include "formats/types.h"

#define LB_ABQ_G 128       /* weights per group (block) */
#define LB_ABQ_PLANE 16    /* bytes per plane of a group */
#define LB_ABQ_MAX_BITS 8

/* The weight types: X(lower-case name, LB_TYPE_ suffix, q), in id order. */
#define LB_ABQ_LIST(X)                                                                                       \
    X(abq_w1, ABQ_W1, 1) X(abq_w2, ABQ_W2, 2) X(abq_w3, ABQ_W3, 3) X(abq_w4, ABQ_W4, 4)                     \
    X(abq_w5, ABQ_W5, 5) X(abq_w6, ABQ_W6, 6) X(abq_w7, ABQ_W7, 7) X(abq_w8, ABQ_W8, 8)                     \
    X(abq_w2s, ABQ_W2S, 3)

#define LB_ABQ_SIZE(q) (4 + LB_ABQ_PLANE * (q))
#define LB_ABQ_W2S_SIZE (2 + 3 * LB_ABQ_PLANE)

#define LB_ABQ_BLOCK(name, NAME, Q)                                                                          \
    typedef struct {                                                                                        \
        lb_fp16 d;                                                                                          \
        int16_t z;                                                                                          \
        uint8_t b[Q][LB_ABQ_PLANE];                                                                         \
    } block_##name;
LB_ABQ_BLOCK(abq_w1, ABQ_W1, 1) LB_ABQ_BLOCK(abq_w2, ABQ_W2, 2) LB_ABQ_BLOCK(abq_w3, ABQ_W3, 3)
LB_ABQ_BLOCK(abq_w4, ABQ_W4, 4) LB_ABQ_BLOCK(abq_w5, ABQ_W5, 5) LB_ABQ_BLOCK(abq_w6, ABQ_W6, 6)
LB_ABQ_BLOCK(abq_w7, ABQ_W7, 7) LB_ABQ_BLOCK(abq_w8, ABQ_W8, 8)
#undef LB_ABQ_BLOCK
typedef struct {
    lb_fp16 d;
    uint8_t b[3][LB_ABQ_PLANE];
} block_abq_w2s;

static_assert(sizeof(block_abq_w1) == 20, "block_abq_w1 size");
static_assert(sizeof(block_abq_w4) == 68, "block_abq_w4 size");
static_assert(sizeof(block_abq_w8) == 132, "block_abq_w8 size");
static_assert(8 * sizeof(block_abq_w2) == 2 * LB_ABQ_G + 32, "block_abq_w2: 2.25 bits per weight");
static_assert(8 * sizeof(block_abq_w3) == 3 * LB_ABQ_G + 32, "block_abq_w3: 3.25 bits per weight");
static_assert(8 * sizeof(block_abq_w5) == 5 * LB_ABQ_G + 32, "block_abq_w5: 5.25 bits per weight");
static_assert(8 * sizeof(block_abq_w6) == 6 * LB_ABQ_G + 32, "block_abq_w6: 6.25 bits per weight");
static_assert(8 * sizeof(block_abq_w7) == 7 * LB_ABQ_G + 32, "block_abq_w7: 7.25 bits per weight");
static_assert(offsetof(block_abq_w4, b) == 4, "block_abq_w planes offset");
static_assert(sizeof(block_abq_w2s) == LB_ABQ_W2S_SIZE, "block_abq_w2s size");
static_assert(8 * sizeof(block_abq_w2s) == 3 * LB_ABQ_G + 16, "block_abq_w2s: 3.125 bits per weight");

typedef struct {
    uint8_t b[LB_ABQ_MAX_BITS][LB_ABQ_PLANE]; /* planes 0..p-1; p..7 zero */
    int8_t c[LB_ABQ_G];                       /* the same codes as bytes, ca - 128 (the int8 kernels) */
    float d;                                  /* the token's scale da */
    int32_t sum;                              /* sum of this block's 128 codes */
    int16_t z;                                /* the token's zero point za */
    uint8_t p;                                /* the token's bits */
    uint8_t pad[5];                           /* to 272: blocks of a row stay 16-byte aligned */
} block_abq_act;
static_assert(sizeof(block_abq_act) == 272, "block_abq_act size");
static_assert(offsetof(block_abq_act, c) == 128 && offsetof(block_abq_act, d) == 256, "block_abq_act offsets");

/* ---- the activation bits (a run-time choice, docs/abq.md) ----
 * The bits ABQ_ACT rows are quantized to: 1..8, default 8, held by each
 * weight matrix (lb_matrix.act_bits, kernels/dispatch.h), so two models
 * (or two layers) in one process may differ. A file stores its default,
 * lowbit.abq.act_bits, and may keep ffn_down's inputs at other bits,
 * lowbit.abq.act_bits_ffn_down; the model load sets every matrix's, and
 * lb_model_params.act_bits overrides both. */

/* 16 activation bits (LB_ABQ_ACT_F32): no activation quantization at all,
 * the paper's WqA16 (its fp16 activations; lowbit keeps fp32, one rounding
 * less): the weights' floats d (c - z) dotted with the fp32 activations by
 * the kernels of lb_kernel_for (kernels/dispatch.h), which take F32 rows.
 * The reference, every type (planes and code layouts):
 *     y = (float) sum_j (double) w_j * x_j      w_j = d (c_j - z), exact in float
 * the fast kernels sum in float, so they match it within a tolerance
 * (tests/test_abq.c), not bit for bit. The quality yardstick of the
 * issue's "W4A8 within 3 % of W4A16", and a weight-only 4-bit mode. */
#define LB_ABQ_ACT_F32 16
/* 1..8 or LB_ABQ_ACT_F32 */
static inline int lb_abq_act_bits_ok(int p) { return (p >= 1 && p <= LB_ABQ_MAX_BITS) || p == LB_ABQ_ACT_F32; }

/* fp32 row of k values (k a multiple of 128, the whole token) -> ABQ_ACT
 * blocks at 8 bits (the traits' from_float); the same at p bits. */
void lb_quantize_row_abq_act_ref(const float *x, void *y, int64_t k);
void lb_abq_quantize_act(const float *x, void *y, int64_t k, int p);
void lb_dequantize_row_abq_act(const void *x, float *y, int64_t k);
/* A token's quantization: p (out of range: 8), cmax = 2^p - 1, its step
 * d = (hi - lo) / cmax, the inverse id (0 when d is 0) and the zero point z,
 * from the row's range: [lo, hi] (which holds 0) as a SIMD quantizer found
 * it over x[0, j0), widened over x[j0, k) here. The floats of the
 * reference, which the SIMD quantizers share. */
typedef struct {
    float d, id;
    int z, p, cmax;
} lb_abq_act_scale;
lb_abq_act_scale lb_abq_act_scale_of(const float *x, int64_t j0, int64_t k, float lo, float hi, int p);

/* ---- weights ---- */
/* q (planes: 1..8, 3 for W2S) of an ABQ weight type; 0 for other types. */
int lb_abq_bits(int type);
/* 1 for ABQ_W2S (its implied z = 2, codes 0..4) */
int lb_abq_is_balanced(int type);
/* ABQ_W{q} for q = 1..8, -1 otherwise */
int lb_abq_type(int q);
/* Traits of the weight types and of ABQ_ACT; NULL otherwise. */
const lb_type_traits *lb_abq_traits(int type);

/* One block's parts: its d, z (2 for W2S) and plane s (16 bytes). */
float lb_abq_block_d(int type, const void *blk);
int lb_abq_block_z(int type, const void *blk);
const uint8_t *lb_abq_block_plane(int type, const void *blk, int s);
/* Code of weight j (0..127) of a block. */
int lb_abq_get_code(int type, const void *blk, int j);

/* Reference routines of each type (k, n multiples of 128). The quantizer:
 * RTN with a clipping search (lb_abq_quantize_group). */
#define LB_ABQ_DECLARE(name, NAME, Q)                                                                        \
    void lb_dequantize_row_##name(const void *x, float *y, int64_t k);                                      \
    void lb_quantize_row_##name##_ref(const float *x, void *y, int64_t k);                                  \
    void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a);
LB_ABQ_LIST(LB_ABQ_DECLARE)
#undef LB_ABQ_DECLARE

/* The A16 reference dot of each plane type and code layout: weight row w
 * (n weights) against the fp32 row a (formats above, LB_ABQ_ACT_F32). */
#define LB_ABQ_F32_DECLARE(name, NAME, Q) void lb_vec_dot_##name##_f32_ref(int64_t n, float *s, const void *w, const void *a);
LB_ABQ_LIST(LB_ABQ_F32_DECLARE)
/* the same for any of them by type */
float lb_abq_row_dot_f32(int type, int64_t n, const void *w, const float *x);

/* The integer group dot I_g above, plainly: sum_j (cw_j - zw)(ca_j - za)
 * from the codes (the tests' second reference) and from the planes. */
int32_t lb_abq_group_dot_codes(int type, const void *wblk, const block_abq_act *a);
int32_t lb_abq_group_dot_planes(int type, const void *wblk, const block_abq_act *a);
/* Row dot from the group dots: the float every kernel returns. */
float lb_abq_row_dot(int type, int64_t n, const void *w, const void *a);

/* Quantizes one group of 128 weights x (importance imp, NULL: 1) into blk:
 * asymmetric RTN over [clip * min(x, 0), clip * max(x, 0)] (W2S: symmetric,
 * d = clip * max|x| / 2) for clip in 1.0, 0.95, ... 0.55, keeping the clip
 * of least sum imp_j (x_j - w_j)^2 (with d as stored, in fp16). Returns
 * that error. NaN weights count as 0, infinities as +-65504. */
double lb_abq_quantize_group(int type, const float *x, const float *imp, void *blk);
/* k values (a multiple of 128) with importance imp (NULL: none). Returns 0
 * (and writes nothing) for other types. */
int lb_abq_quantize_row_imp(int type, const float *x, void *y, int64_t k, const float *imp);
/* The same with the clipping search capped at clip_max (0.55..1: the clips
 * clip_max, clip_max - 0.05, ... above 0.5), the per-layer clip of the block
 * search (model/abq_search.h); clip_max 1 is lb_abq_quantize_row_imp. */
double lb_abq_quantize_group_clip(int type, const float *x, const float *imp, float clip_max, void *blk);
int lb_abq_quantize_row_clip(int type, const float *x, void *y, int64_t k, const float *imp, float clip_max);

/* Whether rows * K weights of an ABQ type are well formed: every d finite,
 * z within 0 .. 2^q - 1, W2S codes within 0..4. LB_OK, or LB_ERR_FORMAT with
 * a message naming the row, group and what is wrong. Other types: LB_OK. */
lb_status lb_abq_check_blocks(int type, const void *data, int64_t K, int64_t rows);

/* ---- the code layouts (formats/abq_codes.c), made at load ----
 * A plane layout costs a decode kernel q recombination steps per 32 weights
 * before it can use an int8 multiply (kernels/x86/abq_avx2.c); made once at
 * load, the codes cost one mask (and shift) per 32 weights. So where an int8
 * kernel runs (model/repack.c), ABQ_W{q} becomes, row by row:
 *
 *   ABQ_W3_C4, ABQ_W4_C4, ABQ_W2S_C4: codes of W = 4 bits (0..15; 0..4 W2S)
 *   ABQ_W1_C2, ABQ_W2_C2:             codes of W = 2 bits (0..3)
 *
 * a row of K weights, nb = K / 128 groups, is its groups' heads side by side,
 * then their codes (so four groups' heads are one load each):
 *
 *     float   d[nb]           the fp16 scales widened (no conversion per token)
 *     int16_t sw[nb]          each group's code sum (<= 128 * 15)
 *     int16_t z[nb]           zero points (2 for W2S)
 *     uint8_t qs[nb][16 W]    group i's codes: W = 4, byte i of half h (h = 0,
 *                             1) holds weight 64h + i in its low nibble, weight
 *                             64h + 32 + i in its high one; W = 2, byte i holds
 *                             weights i, 32 + i, 64 + i, 96 + i in bits 0-1,
 *                             2-3, 4-5, 6-7
 *
 * 8 + 16 W bytes per group (72, 40): 4.5 bits per weight for q = 3, 4 and W2S
 * (3.25, 4.25, 3.125 in the file), 2.5 for q = 1, 2 (1.25, 2.25). A 32-byte
 * load and a mask give 32 code bytes in the order of the activations' c[].
 * The group dot is the same integer (formats/abq.h), the row dot the same
 * float, bit for bit. Never in a file: the loader refuses these ids. The
 * traits' to_float and vec_dot take one whole row (k, n = K). */
#define LB_ABQ_CODES_GROUP_BYTES(W) (8 + 16 * (W))
static_assert(LB_ABQ_CODES_GROUP_BYTES(4) == 72 && LB_ABQ_CODES_GROUP_BYTES(2) == 40, "ABQ code group bytes");

/* The 5 layouts: X(lower-case name, LB_TYPE_ suffix, code bits W), in id order. */
#define LB_ABQ_CODES_LIST(X)                                                                                 \
    X(abq_w1_c2, ABQ_W1_C2, 2) X(abq_w2_c2, ABQ_W2_C2, 2) X(abq_w3_c4, ABQ_W3_C4, 4)                        \
    X(abq_w4_c4, ABQ_W4_C4, 4) X(abq_w2s_c4, ABQ_W2S_C4, 4)

/* The reference dot of each (the traits' vec_dot): the plane types' floats. */
#define LB_ABQ_CODES_DECLARE(name, NAME, W) void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a);
LB_ABQ_CODES_LIST(LB_ABQ_CODES_DECLARE)
#undef LB_ABQ_CODES_DECLARE

LB_ABQ_CODES_LIST(LB_ABQ_F32_DECLARE)
#undef LB_ABQ_F32_DECLARE
/* A group's d, z and 128 codes (bytes) of a code layout row of nb groups. */
void lb_abq_codes_group(int type, const void *row, int64_t nb, int64_t i, float *d, int *z, uint8_t c[LB_ABQ_G]);

/* The code layout of an ABQ weight type (q <= 4 or W2S), -1 for others. */
int lb_abq_codes_of(int type);
/* The plane type of a code layout, -1 for others. */
int lb_abq_plain_of_codes(int type);
/* Bits per code of a code layout: 2 (_C2) or 4 (_C4); 0 for other types. */
int lb_abq_code_bits(int type);
/* Traits of a code layout (to_float, the reference vec_dot), NULL otherwise. */
const lb_type_traits *lb_abq_codes_traits(int type);
/* N rows of K (a multiple of 128) weights of plane type `plain` into its
 * code layout (lb_row_size(lb_abq_codes_of(plain), K) bytes per row), and back. */
void lb_abq_to_codes(int plain, const void *src, void *dst, int64_t K, int64_t N);
void lb_abq_from_codes(int plain, const void *src, void *dst, int64_t K, int64_t N);
/* Code j (0..127) of a group's qs (W bits per code). */
int lb_abq_codes_get(int w, const uint8_t *qs, int j);
/* The 128 codes of a group's qs, in weight order. */
void lb_abq_codes_unpack(int w, const uint8_t *qs, uint8_t c[LB_ABQ_G]);
/* 128 codes in weight order into a group's qs (all its 16 W bytes written): the inverse of unpack. */
void lb_abq_codes_pack(int w, const uint8_t c[LB_ABQ_G], uint8_t *qs);

/* ---- the code layouts 16 rows interleaved (formats/abq_x16.c), made at load ----
 * Decode by the row layout above reduces every group of every row to one
 * integer across a vector and adds its d I to the row's double sum alone.
 * With 16 rows side by side, one zmm vpdpbusd multiplies 4 codes of each
 * of the 16 rows by one broadcast activation dword, the group's I of the
 * 16 rows lands in the 16 lanes, and their d I in two vectors of doubles:
 * no reduction, no scalar sum (kernels/x86/abq_x16_avx512.c). So where that
 * kernel runs (model/repack.c), ABQ_W{q}_C{W} becomes ABQ_W{q}_C{W}X16:
 * rows in blocks of 16, each block its groups in order, a group
 *
 *     float   d[16]           row r's d
 *     int32_t swz[16]         row r's (uint16) sw | z << 16, the pair a
 *                             vpmaddwd meets with the token's (128 - za, -(Sa - 128 za))
 *     uint8_t qs[4 W][64]     chunk t, byte 4 r + b: W-bit fields f = 0 .. 8/W - 1
 *                             (bits W f ..), each the code of row r, weight
 *                             4 c + b, column c = (8 / W) t + f
 *
 * 128 + 256 W bytes (1152, 640): 16 rows' worth of the row layout's bytes,
 * so the rows keep the row layout's size, and the last N mod 16 rows of a
 * matrix stay in the row layout (lb_type_base: the driver gives them to
 * its kernel). A chunk is one 64-byte load; a mask (W = 4: 0x0f, 0xf0)
 * gives column c's codes of the 16 rows, times 2^(W f), in the activations'
 * order. The group dot is the same integer, the row dot the same float,
 * bit for bit.
 *
 * ABQ_W3_C3X16, ABQ_W2S_C3X16: the codes of W3 (0..7) and W2S (0..4) in
 * 3-bit fields, W = 3, 896 bytes a group (3.5 bits a weight against C4X16's
 * 4.5): the same d and swz, then 4 triples of chunks A, B, C (192 t + 0,
 * 64, 128), triple t holding columns c = 8 t + k, k = 0..7, each byte 4 r +
 * b a field of row r's code of weight 4 c + b:
 *     A: k = 0 in bits 0-2, k = 1 in bits 3-5, k = 2's low two bits in 6-7
 *     B: k = 3, k = 4, k = 5's low two bits, the same places
 *     C: k = 6 in bits 0-2, k = 7 in 3-5, k = 2's bit 2 in bit 6, k = 5's in 7
 * Each mask leaves a column in place (times 1, 8 or 64; the third bits times
 * 64 and 128): 10 masks per 8 columns where 4-bit chunks take 8, at 0.78x
 * the bytes (as fast from L2: docs/abq.md). Rows have a size of their own
 * (56 bytes a group), so there are no tail rows: the load takes this layout
 * only for matrices of N a multiple of 16 (C4X16 for the others). */
#define LB_ABQ_X16_GROUP_BYTES(W) (128 + 256 * (W))
static_assert(LB_ABQ_X16_GROUP_BYTES(4) == 16 * LB_ABQ_CODES_GROUP_BYTES(4) &&
                  LB_ABQ_X16_GROUP_BYTES(2) == 16 * LB_ABQ_CODES_GROUP_BYTES(2),
              "ABQ X16 group: 16 rows of the row layout");
static_assert(LB_ABQ_X16_GROUP_BYTES(3) == 896 && 8 * LB_ABQ_X16_GROUP_BYTES(3) == 16 * (3 * LB_ABQ_G + 64),
              "ABQ C3X16 group: 3.5 bits a weight");

/* X(lower-case name, LB_TYPE_ suffix, chunk field bits W), in id order */
#define LB_ABQ_X16_LIST(X)                                                                                   \
    X(abq_w1_c2x16, ABQ_W1_C2X16, 2) X(abq_w2_c2x16, ABQ_W2_C2X16, 2) X(abq_w3_c4x16, ABQ_W3_C4X16, 4)       \
    X(abq_w4_c4x16, ABQ_W4_C4X16, 4) X(abq_w2s_c4x16, ABQ_W2S_C4X16, 4) X(abq_w3_c3x16, ABQ_W3_C3X16, 3)     \
    X(abq_w2s_c3x16, ABQ_W2S_C3X16, 3)

/* The X16 layout of a row layout (the same field bits), -1 for others; its
 * 3-bit layout (W3_C4, W2S_C4), -1 for others; an X16 layout's row layout. */
int lb_abq_x16_of(int codes_type);
int lb_abq_x16_3_of(int codes_type);
int lb_abq_codes_of_x16(int type);
/* Field bits of an X16 layout's chunks: 2, 3 or 4; 0 for other types. */
int lb_abq_x16_bits(int type);
/* Traits of an X16 layout (no vec_dot: whole blocks of rows), NULL otherwise. */
const lb_type_traits *lb_abq_x16_traits(int type);
/* N rows of K weights in the row layout of X16 layout xt -> xt (the last N
 * mod 16 rows copied; for the 3-bit layouts N must be a multiple of 16, or
 * nothing is written), and back. */
void lb_abq_codes_to_x16(int xt, const void *src, void *dst, int64_t K, int64_t N);
void lb_abq_x16_to_codes(int xt, const void *src, void *dst, int64_t K, int64_t N);
/* The same from xt's plane type (ABQ_W{q}) in one pass, a block at a time
 * (the load's way). Returns 0 when out of memory or when N does not fit
 * (nothing usable in dst). */
int lb_abq_planes_to_x16(int xt, const void *src, void *dst, int64_t K, int64_t N);
/* Row r (0..15) of the 16-row block blk (nb groups, layout xt) into the row layout. */
void lb_abq_x16_row(int xt, const void *blk, int64_t nb, int r, void *row);
/* The reference (the kernel table's scalar gemv): Y[m ldy + n] for the
 * whole blocks of rows [n0, n1) and M ABQ_ACT rows, each the row layout's
 * reference float. */
void lb_abq_x16_gemv_ref(int type, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                         size_t a_row_size, int M, float *Y, size_t ldy);
#define LB_ABQ_X16_DECLARE(name, NAME, CW)                                                                    \
    void lb_gemv_##name##_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,    \
                              size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_X16_LIST(LB_ABQ_X16_DECLARE)
#undef LB_ABQ_X16_DECLARE

#endif
