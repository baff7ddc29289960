/* MX: seed 002's intra-matrix 2/4-bit mixed precision (2/4/16), the tiles
 * and their reference arithmetic. docs/mixed.md has the design; this file is
 * its first layer: the blocks, reference quantize / dequantize / dot, the
 * sensitivity of eq. (9) and the bits per weight of eq. (10). The matrix
 * container (a group map and CSR outliers beside the tiles), the loader and
 * the kernels are built on it.
 *
 * A matrix W (N output rows x K inputs, a GGUF row per output) is cut into
 * input-channel groups of LB_MX_M = 32 columns across all rows; the most
 * sensitive groups (eq. (9)) are stored in 4 bits, the rest in 2 bits. Both
 * kinds of group are stored in tiles of 16 rows x 32 columns, so a kernel
 * walking 16 rows reads each group's tile in one pass:
 *
 * block_mx2 (2-bit tile, 157 bytes, 2.453125 bpw, exactly eq. (10) for
 * g1 = 16, g2 = 16, Ns = 4): per row r and half h (columns 16h..16h+15), a
 * first-order group of g1 = 16 weights,
 *
 *     w = s1[h][r] * (q - z1[h][r])          q in 0..3, z1 in {0.5, 1, 1.5, 2}
 *
 * (z1 is a 2-bit code for a half-step zero: 1.5 gives the symmetric grid
 * {-1.5, -0.5, 0.5, 1.5} s1 that integer zeros cannot, 1 and 2 keep 0
 * exact for skewed groups; on Gemma 3 270M with GPTQ this took the KLD
 * from 0.639 with integer zeros to 0.540),
 *
 * and the 16 first-order scales of a half (one per row: g2 = 16 along the
 * output dimension) quantized to 4 bits against a second-order scale and
 * zero shared by the tile half,
 *
 *     s1[h][r] = s2[h] * (c[h][r] + z2[h])   c, z2 in 0..15, s2 fp16
 *
 * (scales are positive, so the 4-bit zero is an offset up from 0: the codes
 * cover [z2 s2, (z2 + 15) s2], a narrow band when a tile's scales are alike).
 *   qs[128]  q of (r, c) at byte 64h + 4r + i, bits 2t, for c = 16h + 4t + i
 *            (h the half, t, i = 0..3): "lanes = rows", each 64 bytes one
 *            half, dword r of it row r's 16 codes, so (v >> 2t) & 3 gives
 *            columns 16h + 4t .. +3 of all 16 rows as one dword per row,
 *            a vpdpbusd / sdot operand against 4 activation bytes
 *   z1[8]    z1 code of (h, r), i = 16h + r: byte i/4, bits 2(i%4); z1 = (code + 1) / 2
 *   s1[16]   c of (h, r), i = 16h + r: byte i/2, low nibble for even i
 *   s2[4]    the two fp16 s2 (little-endian bytes, no alignment)
 *   z2       z2 of half 0 in the low nibble, half 1 in the high one
 * Bits: 128*8 + 8*8 + 16*8 + 4*8 + 8 = 1256 per 512 weights = 2 + 6/16 + 20/256.
 *
 * block_mx4 (4-bit tile, 296 bytes, 4.625 bpw): plain group-wise 4-bit, one
 * group of 32 per row,
 *
 *     w = s[r] * (q - z[r])                  q, z in 0..15, s fp16
 *   qs[256]  q of (r, c) at byte 64v + 4r + i, low nibble for c = 8v + i,
 *            high nibble for c = 8v + 4 + i (v, i = 0..3): lanes = rows as
 *            in the 2-bit tile, each 64 bytes eight columns of all 16 rows
 *   s[16]    fp16 per row
 *   z[8]     z of row r: byte r/2, low nibble for even r
 *
 * Dot products: activations are Q8_0 (one block of 32 per tile width); per
 * row and first-order group the sum of (q - z) * a is exact in int32, then
 * scaled by the group's float scale times the block's d. */
#ifndef LB_MX_H
#define LB_MX_H

#include <stddef.h>
#include <stdint.h>

#include "formats/types.h"

#define LB_MX_ROWS 16 /* rows of a tile (g2: second-order group along the outputs) */
#define LB_MX_M 32    /* columns of a tile: one input-channel group */
#define LB_MX_G1 16   /* first-order group of the 2-bit tile */

typedef struct {
    uint8_t qs[LB_MX_ROWS * LB_MX_M / 4];
    uint8_t z1[2 * LB_MX_ROWS / 4];
    uint8_t s1[2 * LB_MX_ROWS / 2];
    uint8_t s2[4];
    uint8_t z2;
} block_mx2;
static_assert(sizeof(block_mx2) == 157, "block_mx2 size");

typedef struct {
    uint8_t qs[LB_MX_ROWS * LB_MX_M / 2];
    lb_fp16 s[LB_MX_ROWS];
    uint8_t z[LB_MX_ROWS / 2];
} block_mx4;
static_assert(sizeof(block_mx4) == 296, "block_mx4 size");

/* Traits of LB_TYPE_MX2 / MX4 (whole tiles: blck 512, to_float writes each
 * tile's 16 x 32 weights row after row, from_float quantizes tiles by
 * rounding) and of LB_TYPE_MX (a name only: blck 1, size 0, so no file can
 * hold it); NULL for other types. */
const lb_type_traits *lb_mx_traits(int type);

/* Where the code of (row r, column c) of a tile lives: byte, and shift. */
static inline int lb_mx2_qs_byte(int r, int c) { return 64 * (c / 16) + 4 * r + c % 4; }
static inline int lb_mx2_qs_shift(int c) { return 2 * ((c % 16) / 4); }
static inline int lb_mx4_qs_byte(int r, int c) { return 64 * (c / 8) + 4 * r + c % 4; }
static inline int lb_mx4_qs_shift(int c) { return 4 * ((c % 8) / 4); }
static inline int lb_mx2_q(const block_mx2 *b, int r, int c) {
    return (b->qs[lb_mx2_qs_byte(r, c)] >> lb_mx2_qs_shift(c)) & 3;
}
static inline int lb_mx4_q(const block_mx4 *b, int r, int c) {
    return (b->qs[lb_mx4_qs_byte(r, c)] >> lb_mx4_qs_shift(c)) & 15;
}
static inline void lb_mx2_set_q(block_mx2 *b, int r, int c, int q) {
    uint8_t *p = &b->qs[lb_mx2_qs_byte(r, c)];
    *p = (uint8_t)((*p & ~(3 << lb_mx2_qs_shift(c))) | (q << lb_mx2_qs_shift(c)));
}
static inline void lb_mx4_set_q(block_mx4 *b, int r, int c, int q) {
    uint8_t *p = &b->qs[lb_mx4_qs_byte(r, c)];
    *p = (uint8_t)((*p & ~(15 << lb_mx4_qs_shift(c))) | (q << lb_mx4_qs_shift(c)));
}

/* Quantizes the tile W[r * ldw + c] (r < 16, c < 32) by rounding, as the
 * comment above says: first-order min/max groups (0 kept in range, as
 * GPTQ's quantizer), then (mx2) the scales to 4 bits, then the codes again
 * against the scales as stored. imp (32 per-column weights, or NULL) makes
 * the second-order fit weight each row's scale error by its group's
 * importance-weighted energy. */
void lb_mx2_quantize_tile(const float *W, size_t ldw, const float *imp, block_mx2 *b);
void lb_mx4_quantize_tile(const float *W, size_t ldw, block_mx4 *b);
/* The ablation "without second-order scales" (bench/mx_sim only): the
 * 2-bit tile's codes and zeros fitted to first-order scales kept in fp16,
 * s1[16h + r], instead of 4-bit codes against s2 and z2 (left 0). Not a
 * tile a file or kernel takes: 16 bits more per 16 weights. */
void lb_mx2_quantize_tile_fp16(const float *W, size_t ldw, const float *imp, block_mx2 *b, lb_fp16 s1[32]);

/* Y[r * ldy + c] = the tile's weights. */
void lb_mx2_dequantize_tile(const block_mx2 *b, float *Y, size_t ldy);
void lb_mx4_dequantize_tile(const block_mx4 *b, float *Y, size_t ldy);

/* The float scale and zero of first-order group (h, r) of a 2-bit tile. */
float lb_mx2_scale(const block_mx2 *b, int h, int r);
float lb_mx2_zero(const block_mx2 *b, int h, int r);

/* y[r] += the dot of row r of the tile with the 32 activations of a (r < 16). */
void lb_mx2_dot_tile_ref(const block_mx2 *b, const block_q8_0 *a, float *y);
void lb_mx4_dot_tile_ref(const block_mx4 *b, const block_q8_0 *a, float *y);

/* Eq. (9): S[i] = sum over the M columns of group i and all N rows of
 * W[j][Mi+m]^2 / hinv_diag[Mi+m]^2, for the K / M groups (K % M == 0);
 * hinv_diag: the diagonal of H^-1 (GPTQ's, after damping). W row-major N x K. */
void lb_mx_sensitivity(const float *W, int64_t N, int64_t K, int M, const float *hinv_diag, double *S);

/* Eq. (10), the paper's average bits per weight: alpha the fraction of
 * weights in 2-bit groups, first- and second-order groups g1, g2, Ns bits
 * per first-order scale (and second-order zero). It counts the 4-bit
 * groups at 4 bits flat; lb_mx_bits counts what a matrix stores. */
double lb_mx_bpw_eq10(double alpha, int g1, int g2, int Ns);

/* Bits a matrix of N x K stores with n_hi of its K / 32 groups in 4 bits
 * and n_out outlier words, as a file holds it (docs/mixed.md): the tiles,
 * the group map (one byte per group), and with outliers their words (a
 * 16-bit column and an fp16 value each) and a 32-bit row pointer per row
 * plus one. N % 16 == 0, K % 32 == 0. */
uint64_t lb_mx_bits(int64_t N, int64_t K, int64_t n_hi, int64_t n_out);

/* ---- one matrix (formats/mx_quant.c) ---- */

/* N x K (N % 16 == 0, K % 32 == 0) in memory: the group map, the tiles of
 * each kind by 16-row tile and group in input order, and the outliers in
 * CSR. An outlier's position holds the 2-bit code of its group's zero
 * (which dequantizes to 0), so dense part + outlier = the fp16 weight. */
typedef struct {
    int64_t N, K, n_hi, n_out;
    uint8_t *map;      /* K/32 bits, 1 = the group is in 4 bits */
    block_mx2 *lo;     /* (N/16) x (K/32 - n_hi) */
    block_mx4 *hi;     /* (N/16) x n_hi */
    uint32_t *row_ptr; /* N + 1 */
    uint16_t *out_col; /* n_out */
    lb_fp16 *out_val;  /* n_out */
    int64_t *slot;     /* K/32: a group's index among the 4-bit or among the 2-bit groups */
    lb_fp16 *s1;       /* with fp16_scales only: 32 fp16 first-order scales per 2-bit tile, else NULL */
} lb_mx_matrix;

typedef struct {
    float hi_frac;      /* fraction of the K/32 groups in 4 bits (rounded to nearest; one group
                         * at least stays in 2 bits) */
    float outlier_frac; /* at most this fraction of all weights kept as fp16 outliers (in 2-bit groups) */
    int n_threads;      /* tile rows quantized in parallel; <= 0: all cores */
    int fp16_scales;    /* the ablation: first-order scales in fp16 (lb_mx2_quantize_tile_fp16) */
    /* how groups are ranked for 4 bits: 0 by eq. (9) with hinv_diag; 1 by
     * the importance-weighted squared error each group's 2-bit tiles make
     * (sum over its weights of imp (w - Q2(w))^2: what 4 bits would win back),
     * the better proxy when no Hessian is known */
    int rank_by_error;
} lb_mx_params;

lb_mx_params lb_mx_default_params(void); /* 0.25, 0.002, all cores, 4-bit second-order scales, eq. (9) */

static inline int lb_mx_is_hi(const lb_mx_matrix *m, int64_t g) { return (m->map[g / 8] >> (g % 8)) & 1; }

/* Quantizes W (row-major N x K) by rounding: groups ranked by eq. (9) with
 * hinv_diag (the diagonal of H^-1; NULL: 1 for every column, i.e. by w^2),
 * the top hi_frac in 4 bits; the 2-bit tiles quantized, the weights whose
 * removal cuts the (imp-weighted, imp may be NULL) error most kept as
 * outliers, and the tiles holding them quantized again without them. */
lb_status lb_mx_quantize(const float *W, int64_t N, int64_t K, const float *hinv_diag, const float *imp,
                         const lb_mx_params *p, lb_mx_matrix *out);
/* Rounds x onto the grid already fitted at (row, col), stores its code in
 * the tile (at an outlier, the fp16 residual x minus the dense value) and
 * returns the value it dequantizes to: GPTQ's rounding step on MX
 * (model/mx_gptq.c). Distinct rows touch distinct bytes. */
float lb_mx_round_at(lb_mx_matrix *m, int64_t row, int64_t col, float x);
/* W[r * K + c] = the matrix's weights. */
void lb_mx_dequantize(const lb_mx_matrix *m, float *W);
void lb_mx_free(lb_mx_matrix *m);

/* The map as one byte per group (0: 2 bits, 1: 4 bits; K/32 bytes) and the
 * outliers as 32-bit words (column | fp16 value << 16; n_out), as a file
 * stores them (docs/mixed.md). */
void lb_mx_map_bytes(const lb_mx_matrix *m, uint8_t *dst);
void lb_mx_outlier_words(const lb_mx_matrix *m, uint32_t *dst);

/* ---- in a GGUF file (docs/mixed.md) ----
 * An MX matrix NAME (e.g. blk.0.attn_q.weight, N rows of K) is stored as
 *   NAME           MX2 [512 * n_lo, N / 16]  the 2-bit tiles, one GGUF row per
 *                                            16-row tile row, slots in input order
 *   NAME.hi        MX4 [512 * n_hi, N / 16]  the 4-bit tiles (absent if n_hi = 0)
 *   NAME.map       I8  [K / 32]              per group: 0 = 2 bits, 1 = 4 bits
 *   NAME.out_rows  I32 [N + 1]               outlier row pointers (CSR) } absent
 *   NAME.outliers  I32 [cap]                 column | fp16 value << 16 } without
 * so every tensor's size follows from its type and shape as in any GGUF;
 * cap >= out_rows[N] (the budget the quantizer was given; unused words 0).
 * At least one group is in 2 bits, so NAME always exists. */
#define LB_MX_SFX_HI ".hi"
#define LB_MX_SFX_MAP ".map"
#define LB_MX_SFX_ROWS ".out_rows"
#define LB_MX_SFX_OUT ".outliers"
/* Which MX side piece a tensor name ends in: 0 none, or 1 (.hi), 2 (.map),
 * 3 (.out_rows), 4 (.outliers). */
int lb_mx_side_piece(const char *name, size_t len);

/* ---- one matrix as the kernels read it (formats/mx_view.c) ----
 * The pieces of an MX matrix, seen in place (a file's mapped tensors, or an
 * lb_mx_matrix): per 16-row tile row t, its 2-bit tiles at lo + t * n_lo
 * and its 4-bit tiles at hi + t * n_hi, each kind in input order, the
 * activation block (group) of every slot, and the outliers in CSR. A kernel
 * walks a tile row's 2-bit slots, then its 4-bit slots, then its rows'
 * outliers: three forward streams, no second sparse pass. The weight
 * pointer an MX lb_matrix carries (kernels/dispatch.h) is an lb_mx_view. */
typedef struct {
    int64_t N, K, n_lo, n_hi;
    const block_mx2 *lo;
    const block_mx4 *hi;
    const uint16_t *lo_group; /* n_lo: group (Q8_0 block of the activations) of each 2-bit slot */
    const uint16_t *hi_group; /* n_hi */
    const uint32_t *row_ptr;  /* N + 1; NULL: no outliers */
    const uint32_t *outliers; /* row_ptr[N] words: column | fp16 value << 16, sorted by row, then column */
    int64_t n_cap;            /* outlier words stored (>= row_ptr[N]) */
    uint64_t bytes;           /* bytes the matrix stores: tiles, map, row pointers, outlier words */
} lb_mx_view;

/* The pieces as a file holds them; lb_mx_view_make checks every one. */
typedef struct {
    int64_t N, K;
    const uint8_t *map;         /* K/32 bytes, each 0 (2 bits) or 1 (4 bits) */
    const void *lo, *hi;        /* hi may be NULL when no group is in 4 bits */
    uint64_t lo_bytes, hi_bytes;
    const uint32_t *row_ptr;    /* NULL (no outliers) or n_row_ptr = N + 1 entries */
    int64_t n_row_ptr;
    const uint32_t *outliers;   /* n_cap words */
    int64_t n_cap;
} lb_mx_parts;

/* Checks the pieces (shapes, sizes, map values, at least one 2-bit group,
 * row pointers from 0, non-decreasing, within n_cap; every outlier's column
 * inside the row, in a 2-bit group, increasing along its row, its value
 * finite) and builds a view of them in one new allocation (free with
 * lb_free_aligned); the pieces must outlive it. LB_ERR_FORMAT says which
 * check failed. */
lb_status lb_mx_view_make(const lb_mx_parts *p, lb_mx_view **out);
/* A view of a matrix in memory (tests, synthetic models): its map and
 * outliers converted into the same allocation; m must outlive it. */
lb_status lb_mx_view_of_matrix(const lb_mx_matrix *m, lb_mx_view **out);
/* Random pieces of an N x K matrix (whole tiles, K <= 65536) for
 * benchmarks and synthetic models: p's share of groups in 4 bits, evenly
 * spread, and of weights as outliers in 2-bit groups; every code random
 * (quantizing Gaussian rows takes minutes for a 1B shape, and no kernel's
 * speed depends on the values), scales giving weights of about std 0.02.
 * buf (lb_mx_random_size bytes) holds all of it; parts points into it. */
size_t lb_mx_random_size(int64_t N, int64_t K, const lb_mx_params *p);
void lb_mx_random_pieces(int64_t N, int64_t K, const lb_mx_params *p, uint64_t seed, void *buf, lb_mx_parts *parts);

/* W[r * K + c] = the view's weights (tiles plus outliers), as
 * lb_mx_dequantize gives them for the matrix the pieces came from. */
void lb_mx_view_dequantize(const lb_mx_view *v, float *W);

/* Bits eq. (10) gives the view's matrix (alpha = its 2-bit share), counting
 * its outliers at 32 bits each as the paper does. */
double lb_mx_view_bpw_eq10(const lb_mx_view *v);

/* The scalar reference (lb_gemm_fn, kernels/dispatch.h): W an lb_mx_view,
 * rows [n0, n1) whole tile rows, A M plain Q8_0 rows a_row_size apart,
 * Y[m * ldy + n]. Per tile row: the 2-bit slots in order, then the 4-bit
 * ones, each as lb_mx{2,4}_dot_tile_ref, then each row's outliers in order,
 * value times the dequantized activation (d * q). w_row_size is unused. */
void lb_gemv_mx_q8_0_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                         size_t a_row_size, int M, float *Y, size_t ldy);

#endif
