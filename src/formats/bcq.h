/* BCQ{q}_G{g}: seed 003's extended binary-coding quantization (LUT-GEMM,
 * eq. (3)) as lowbit GGUF types. Every group of g consecutive weights of a
 * row (a GGUF row is one output channel's K inputs) is
 *
 *     w = sum_{i<q} alpha_i b_i + z        b_i in {-1, +1}, alpha_i and z fp16
 *
 * with q = 1..4 bit planes and g = 128, 64 or 32: twelve types, ids
 * 1066-1077 (BCQ4_G128, BCQ4_G64, BCQ4_G32, BCQ3_G128, ... BCQ1_G32).
 *
 * Block = one group (blck = g: rows must be a multiple of g; others fall
 * back to Q8_0, lb_type_fallback):
 *
 *     lb_fp16 alpha[q];       scale of each plane
 *     lb_fp16 z;              the bias (the codebook's centre)
 *     uint8_t b[q][g/8];      plane i: bit j%8 of byte j/8 is b_i of weight j (1: +1, 0: -1)
 *
 * 2(q+1) + qg/8 bytes, so exactly q + 16(q+1)/g bits per weight (no padding):
 *
 *     type       bytes  bpw      type       bytes  bpw      type       bytes  bpw
 *     BCQ4_G128    74   4.625    BCQ4_G64     42   5.25     BCQ4_G32     26   6.5
 *     BCQ3_G128    56   3.5      BCQ3_G64     32   4.0      BCQ3_G32     20   5.0
 *     BCQ2_G128    38   2.375    BCQ2_G64     22   2.75     BCQ2_G32     14   3.5
 *     BCQ1_G128    20   1.25     BCQ1_G64     12   1.5      BCQ1_G32      8   2.0
 *
 * Code c of a weight (0 .. 2^q - 1): bit i of c is plane i's bit. Its value
 * is computed, here and everywhere, in float in this order:
 *     v = z; for i = 0 .. q-1: v += bit_i(c) ? alpha_i : -alpha_i
 *
 * Dot products run against Q8_0_LUT4 activations (id 1090, below): Q8_0's
 * blocks of 32 int8 values with one scale, plus the 16-entry sign tables
 * of every 4 activations (mu = 4) that the table-lookup kernels read. Per
 * group, with d_c, x_c the blocks of the group:
 *     y += z * sum_c (d_c * S_c)                       S_c = sum of x_c
 *     y += alpha_i * sum_c (d_c * I_ic)   for each i    I_ic = sum_j b_ij x_cj (exact integer)
 * in float, in exactly this order, in every kernel (the fast ones included:
 * they reproduce these bits, docs/bcq.md).
 *
 * The table-lookup kernels read BCQ{q}_G{g}_LUT (ids 1078-1089), the same
 * bytes with 16 rows interleaved, repacked at load (model/repack.c): groups
 * of 16 consecutive rows, then the N % 16 last rows plain. A group of rows
 * holds one x-block per g weights, 16 times the plain block's bytes:
 *
 *     lb_fp16 alpha[q][16];   alpha_i of rows 0..15
 *     lb_fp16 z[16];
 *     uint8_t b[q][g/8][16];  byte k of plane i of rows 0..15 side by side
 *
 * so one 32-byte load gives plane bytes k, k+1 of 16 rows: its low nibbles
 * index the tables of activation slices 2k (lane 0) and 2k+2 (lane 1), its
 * high nibbles those of 2k+1 and 2k+3 (a vpshufb each), and byte k alone is
 * the index of the 8-activation slice k (the mu = 8 float tables). */
#ifndef LB_BCQ_H
#define LB_BCQ_H

#include <stddef.h>

#include "formats/grid.h"
#include "formats/types.h"

/* The 12 types: X(lower-case name, LB_TYPE_ suffix, q, g), in id order. */
#define LB_BCQ_LIST(X)                                                                                      \
    X(bcq4_g128, BCQ4_G128, 4, 128) X(bcq4_g64, BCQ4_G64, 4, 64) X(bcq4_g32, BCQ4_G32, 4, 32)              \
    X(bcq3_g128, BCQ3_G128, 3, 128) X(bcq3_g64, BCQ3_G64, 3, 64) X(bcq3_g32, BCQ3_G32, 3, 32)              \
    X(bcq2_g128, BCQ2_G128, 2, 128) X(bcq2_g64, BCQ2_G64, 2, 64) X(bcq2_g32, BCQ2_G32, 2, 32)              \
    X(bcq1_g128, BCQ1_G128, 1, 128) X(bcq1_g64, BCQ1_G64, 1, 64) X(bcq1_g32, BCQ1_G32, 1, 32)

#define LB_BCQ_FIRST LB_TYPE_BCQ4_G128
#define LB_BCQ_LAST LB_TYPE_BCQ1_G32
#define LB_BCQ_LUT_FIRST LB_TYPE_BCQ4_G128_LUT
#define LB_BCQ_LUT_LAST LB_TYPE_BCQ1_G32_LUT
#define LB_BCQ_MAX_Q 4
#define LB_BCQ_ROWS 16 /* rows interleaved in the _LUT layouts */

/* Block bytes of q planes, group g; x-block bytes of the _LUT layout */
#define LB_BCQ_SIZE(q, g) (2 * ((q) + 1) + (q) * (g) / 8)
#define LB_BCQ_XSIZE(q, g) (LB_BCQ_ROWS * LB_BCQ_SIZE(q, g))

#define LB_BCQ_BLOCK(name, NAME, Q, G)                                                                       \
    typedef struct {                                                                                        \
        lb_fp16 alpha[Q];                                                                                   \
        lb_fp16 z;                                                                                          \
        uint8_t b[Q][(G) / 8];                                                                              \
    } block_##name;                                                                                         \
    typedef struct {                                                                                        \
        lb_fp16 alpha[Q][LB_BCQ_ROWS];                                                                      \
        lb_fp16 z[LB_BCQ_ROWS];                                                                             \
        uint8_t b[Q][(G) / 8][LB_BCQ_ROWS];                                                                 \
    } block_##name##_lut;
LB_BCQ_LIST(LB_BCQ_BLOCK)
#undef LB_BCQ_BLOCK

/* Sizes as the table above says; exact bits per weight q + 16(q+1)/g
 * (8 * bytes = q g + 16 (q + 1)); the x-blocks 16 times the blocks. */
static_assert(sizeof(block_bcq4_g128) == 74, "block_bcq4_g128 size");
static_assert(sizeof(block_bcq3_g128) == 56, "block_bcq3_g128 size");
static_assert(sizeof(block_bcq2_g128) == 38, "block_bcq2_g128 size");
static_assert(sizeof(block_bcq1_g128) == 20, "block_bcq1_g128 size");
static_assert(sizeof(block_bcq4_g32) == 26, "block_bcq4_g32 size");
static_assert(sizeof(block_bcq1_g32) == 8, "block_bcq1_g32 size");
#define LB_BCQ_CHECK(name, NAME, Q, G)                                                                       \
    static_assert(sizeof(block_##name) == LB_BCQ_SIZE(Q, G), "block_" #name " size");                       \
    static_assert(8 * sizeof(block_##name) == (Q) * (G) + 16 * ((Q) + 1), "block_" #name " bits per weight"); \
    static_assert(offsetof(block_##name, z) == 2 * (Q), "block_" #name " z offset");                        \
    static_assert(offsetof(block_##name, b) == 2 * ((Q) + 1), "block_" #name " planes offset");             \
    static_assert(sizeof(block_##name##_lut) == LB_BCQ_XSIZE(Q, G), "block_" #name "_lut size");            \
    static_assert(offsetof(block_##name##_lut, b) == 32 * ((Q) + 1), "block_" #name "_lut planes offset");  \
    static_assert(LB_BCQ_XSIZE(Q, G) % 32 == 0, "block_" #name "_lut keeps 32-byte alignment");
LB_BCQ_LIST(LB_BCQ_CHECK)
#undef LB_BCQ_CHECK

/* ---- the activation type Q8_0_LUT4 ----
 * 32 activations quantized as Q8_0 (d = amax / 127 in fp16, x = round(v / d)),
 * and for each of their 8 slices of 4 (mu = 4) the 16 signed sums
 *     T_s[e] = sum_{t<4} (bit t of e ? +x_{4s+t} : -x_{4s+t})     |T| <= 508
 * as int16 split into low and high bytes, in the order the AVX2 kernel loads
 * them: for half h (slices 4h .. 4h+3) at t + 128 h,
 *     [0, 32)    low bytes of T_{4h}   | low bytes of T_{4h+2}
 *     [32, 64)   high bytes of T_{4h}  | high bytes of T_{4h+2}
 *     [64, 96)   low bytes of T_{4h+1} | low bytes of T_{4h+3}
 *     [96, 128)  high bytes of T_{4h+1}| high bytes of T_{4h+3}
 * (each 32 bytes two 16-byte tables, one per 128-bit lane). */
typedef struct {
    uint8_t t[256];  /* the tables */
    int8_t qs[32];   /* the Q8_0 values */
    float d;         /* the Q8_0 scale (its fp16 value) */
    float ds;        /* d * sum(qs), in float */
    uint8_t pad[24]; /* to 320 bytes: tables 32-byte aligned in a row */
} block_q8_0_lut4;
static_assert(sizeof(block_q8_0_lut4) == 320, "block_q8_0_lut4 size");
static_assert(offsetof(block_q8_0_lut4, qs) == 256, "block_q8_0_lut4 qs offset");

/* Where the low byte of T_s[e] (s = 0..7, e = 0..15) of a block lives in t[]
 * (the high byte is 32 further). */
static inline int lb_lut4_pos(int s, int e) { return 128 * (s / 4) + 64 * (s % 2) + 16 * ((s % 4) / 2) + e; }
/* T_s[e] read back from the tables */
static inline int lb_lut4_entry(const block_q8_0_lut4 *a, int s, int e) {
    const int p = lb_lut4_pos(s, e);
    return (int16_t)(uint16_t)(a->t[p] | (a->t[p + 32] << 8));
}

/* fp32 row -> k/32 Q8_0_LUT4 blocks (Q8_0's rounding, bit for bit). */
void lb_quantize_row_q8_0_lut4_ref(const float *x, void *y, int64_t k);
/* The tables and ds of a block whose qs and d are set. */
void lb_q8_0_lut4_fill(block_q8_0_lut4 *b);
void lb_dequantize_row_q8_0_lut4(const void *x, float *y, int64_t k);

/* ---- per-type reference routines (k, n multiples of g) ----
 * lb_dequantize_row_bcq4_g128, lb_quantize_row_bcq4_g128_ref (greedy + the
 * alternating refinement, lb_bcq_iters()), lb_vec_dot_bcq4_g128_ref (against
 * Q8_0_LUT4: its qs and d), lb_vec_dot_bcq4_g128_lut4_ref (the same through
 * the tables: one row by table lookups, the same bits), and the _LUT
 * layout's scalar GEMV (kernels/dispatch.h's lb_gemm_fn: W the whole
 * tensor, [n0, n1) whole groups of 16 rows, M plain Q8_0_LUT4 rows). */
#define LB_BCQ_DECLARE(name, NAME, Q, G)                                                                     \
    void lb_dequantize_row_##name(const void *x, float *y, int64_t k);                                      \
    void lb_quantize_row_##name##_ref(const float *x, void *y, int64_t k);                                  \
    void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a);                        \
    void lb_vec_dot_##name##_lut4_ref(int64_t n, float *s, const void *w, const void *a);                   \
    void lb_gemv_##name##_lut_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, \
                                  size_t a_row_size, int M, float *Y, size_t ldy);
LB_BCQ_LIST(LB_BCQ_DECLARE)
#undef LB_BCQ_DECLARE

/* q (1..4) and g of a BCQ type or its _LUT layout; 0 for other types. */
int lb_bcq_bits(int type);
int lb_bcq_group(int type);
/* 1 for the plain BCQ types, 0 otherwise (the _LUT layouts included). */
int lb_bcq_is_plain(int type);
/* The BCQ type of q planes and group g, -1 if none. */
int lb_bcq_type(int q, int g);
/* plain type <-> its _LUT layout; -1 for other types */
int lb_bcq_lut_of(int type);
int lb_bcq_plain_of_lut(int type);
/* Traits of the BCQ types, their _LUT layouts and Q8_0_LUT4; NULL otherwise. */
const lb_type_traits *lb_bcq_traits(int type);
/* Whether (q, g) describes a BCQ format that rows of k weights can be
 * stored in: LB_OK, or LB_ERR_FORMAT with a message naming what is wrong
 * (q = 0 or above 8, q above the 4 planes the types hold, a group size
 * other than 32 / 64 / 128, or one that does not divide k). */
lb_status lb_bcq_check(int q, int g, int64_t k);

/* ---- quantizer (formats/bcq.c) ----
 * Per group of x[0..g) with importance h (imp, or 1), minimising
 * E = sum_j h_j (x_j - w_j)^2 over the stored (fp16) alpha, z and the codes,
 * from two starts, each rounded to fp16 and given its nearest codes:
 *   greedy: z = weighted mean of x, then for each plane the sign of the
 *     residual and alpha_i = weighted mean |residual|, residual -= alpha_i b_i;
 *   uniform: the uniform grid over [min, max] as BCQ (alpha_i = 2^(i-1) s,
 *     z the middle, App. C) and 4 spans shrunk around z (0.92 .. 0.68), the best;
 * then for each start `iters` times (or until nothing changes): least-squares
 * alpha, z for the codes fixed (the (q+1)-square normal equations, in
 * double), kept in fp16 only if E does not grow; then each weight's nearest
 * of the 2^q values for alpha, z fixed (E cannot grow: the old code is a
 * candidate). The start with the lower final E is written. So E never
 * increases along a start's iterations; trace (optional, iters + 1 entries)
 * gets the written start's E before and after each iteration; returns the
 * iterations it ran. NaN weights count as 0, infinities as +-65504.
 * g: a multiple of 8 up to LB_BCQ_MAX_FIT (the types' 32..128, or a whole
 * row for BCQ{q}_GC, formats/bcqc.h; blk then holds LB_BCQ_SIZE(q, g)
 * bytes); groups over 128 take scratch from the heap: -1 (and a block of
 * zeros) if that fails; 0 for a q or g out of range. */
#define LB_BCQ_MAX_FIT (1 << 20)
int lb_bcq_fit_group(int q, int g, const float *x, const float *imp, int iters, void *blk, double *trace);
/* The alternating iterations the traits' quantizer runs (default 8; 0: the two starts only). */
void lb_bcq_set_iters(int iters);
int lb_bcq_iters(void);
/* Quantizes k values (a multiple of g) of BCQ type `type` with importance
 * imp (k entries, NULL: none). Returns 0 (and writes nothing) for other types. */
int lb_bcq_quantize_row_imp(int type, const float *x, void *y, int64_t k, const float *imp);
/* Dequantized value of code c for the block's alpha and z (the order above). */
float lb_bcq_code_value(int q, const void *blk, int c);
/* All 2^q values v[c] of a grid head (q fp16 alphas, then z: a block's
 * start, or a BCQ{q}_GC row's side values), in the order above. */
void lb_bcq_values(int q, const void *head, float *v);
/* Code of weight j of a block, and storing one. */
int lb_bcq_get_code(int q, int g, const void *blk, int j);
void lb_bcq_set_code(int q, int g, void *blk, int j, int c);

/* GPTQ's hook (formats/grid.h) for a BCQ type, NULL for other types: width =
 * g; fix runs the quantizer above on the group (weighted by imp); round gives
 * a weight the nearest of its group's 2^q values and returns that value. */
const lb_grid *lb_bcq_grid(int type);

/* ---- uniform -> BCQ, exactly (LUT-GEMM App. C, eqs. (6)-(7)) ----
 * A q-bit uniform group w = s (c - zq) (c = sum 2^i c_i, c_i in {0, 1}) is
 *     w = sum_i 2^(i-1) s (2 c_i - 1) + s ((2^q - 1) / 2 - zq)
 * i.e. BCQ with alpha_i = 2^(i-1) s, b_i = 2 c_i - 1, z = s (2^q - 1 - 2 zq) / 2;
 * Q4_1's w = d c + m the same with z = m + 7.5 d. In fp16 this is exact iff
 * alpha_0 = s/2, alpha_{q-1} and z are fp16 numbers (docs/bcq.md: with s =
 * M 2^E, M odd, and the odd C = 2^q - 1 - 2 zq: E >= -23, |M C| <= 2047,
 * |z|, 2^(q-2)|s| <= 65504); then every partial sum is exact in float and
 * the BCQ values equal the uniform ones bit for bit.
 * Sources: GQ{q}_G{g'} with g' a multiple of g (the GQ types of formats/gq.h),
 * Q4_0 and Q4_1 for BCQ4_G32. */
/* Whether rows of src_type convert into BCQ type dst this way. */
int lb_bcq_uniform_fits(int src_type, int dst);
/* The closed-form condition above for the grid s (c - zq) of q bits. */
int lb_bcq_uniform_exact(lb_fp16 s, int zq, int q);
/* The BCQ grid of the uniform grid w = s c + m of q bits, eq. (7): az[i] =
 * alpha_i = 2^(i-1) s, az[q] = z = m + s (2^q - 1) / 2, each the nearest
 * fp16 (saturated). */
void lb_bcq_uniform_grid(int q, double s, double m, lb_fp16 *az);
/* Converts `rows` rows of K weights; a group whose z (or alphas) is not an
 * fp16 gets the nearest one (its values then differ from the source's by at
 * most half an ulp of z) and counts in the return value, checked against
 * the source's own dequantization: a group is exact when all its values are
 * equal, i.e. identical bits but for the sign of a zero (Q4_0's (8 - 8) d
 * is -0 for d < 0; a BCQ sum that is zero is +0). *groups (optional): the
 * groups written. -1 if the types do not fit. */
int64_t lb_bcq_from_uniform(int src_type, const void *src, int dst, void *out, int64_t K, int64_t rows,
                            int64_t *groups);

/* ---- the _LUT layouts (formats/bcq_lut.c) ---- */
void lb_repack_bcq_tensor(int lut_type, const void *plain, void *packed, int64_t K, int64_t N);
void lb_unpack_bcq_tensor(int lut_type, const void *packed, void *plain, int64_t K, int64_t N);

/* ---- the mu = 8 float tables (the paper's, activations unquantized) ----
 * For every 8 activations the 256 sums T_k[e] = sum_{t<8} (bit t of e ?
 * +x_{8k+t} : -x_{8k+t}) as floats (T_lo of the first four + T_hi of the
 * last four, each summed in order), and for every 32 their plain sum: an
 * F8 activation row of K values takes lb_bcq_f8_size(K) bytes. Dot: per
 * group y += z * (sum of its 32-sums); per plane y += alpha_i * sum_k
 * T_k[byte k of the plane] (sums in order, float). */
size_t lb_bcq_f8_size(int64_t K);
void lb_bcq_f8_prepare(const float *x, int64_t K, void *act);
/* The whole _LUT tensor W (N rows of K) against one F8 row: y[0..N). */
void lb_bcq_gemv_f8_ref(int lut_type, int64_t K, const void *W, int64_t N, const void *act, float *y);
/* One plain BCQ row against one F8 row. */
float lb_bcq_dot_f8_ref(int type, int64_t K, const void *w, const void *act);

#endif
