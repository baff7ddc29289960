/* Interleaved ("repacked") weight layouts for the GEMV/GEMM kernels, after
 * seed 000 §4.1: the blocks of R consecutive output rows are stored together
 * so one vector load feeds R rows and the kernel never reduces across lanes.
 *
 * Layout of a tensor of N rows x K weights (K % 32 == 0):
 *   row groups g = rows [g*R, g*R + R) one after another, then the last
 *   N % R rows (if any) plain, exactly as in the base type (no toggle), at
 *   their usual offsets; kernels see whole groups only and the matmul
 *   driver sends the tail rows to the base type's kernel. Inside a group one
 *   "x-block" per block column b = 0 .. K/32-1, holding
 *     d[R]      the fp16 scales of block b of the R rows (row order),
 *     qs[R*Q]   the quant bytes of those blocks (Q = 16 for 4-bit, 32 for
 *               Q8_0): each row's Q bytes cut into chunks of C bytes, chunk j
 *               of row r at qs[(j*R + r)*C .. +C).
 *   Inside a row's Q bytes the base type's order is kept (4-bit: byte i holds
 *   weight i in its low nibble and weight i+16 in its high nibble).
 *   Q4_0 only: every byte is XORed with 0x88 (top bit of each nibble
 *   toggled), so (int8)(byte << 4) = 16*(q_lo - 8) and (int8)(byte & 0xF0) =
 *   16*(q_hi - 8): signed weights x16 with one shift or one mask; kernels
 *   fold the 1/16 into the float scale. IQ4_NL and MXFP4_NL keep their
 *   codebook indices.
 * The bytes per weight are the base type's, so a repacked type keeps blck 32
 * and type_size 18 (34 for Q8_0) per row, and GGUF sizes stay consistent.
 *
 * Type names say rows x chunk: Q4_0_4X4 = 4 rows, 4-byte chunks (dotprod),
 * Q4_0_4X8 = 4 rows, 8-byte chunks (i8mm), Q4_0_8X8 = 8 rows, 8-byte chunks. */
#ifndef LB_REPACK_H
#define LB_REPACK_H

#include "formats/kquants.h"
#include "formats/types.h"

/* x-blocks: the same bytes as R base blocks, reordered */
typedef struct {
    lb_fp16 d[4];
    uint8_t qs[64];
} lb_block_q4_0x4; /* also IQ4_NL and MXFP4_NL x4 */
static_assert(sizeof(lb_block_q4_0x4) == 4 * sizeof(block_q4_0), "lb_block_q4_0x4 size");

typedef struct {
    lb_fp16 d[8];
    uint8_t qs[128];
} lb_block_q4_0x8; /* also IQ4_NL and MXFP4_NL x8 */
static_assert(sizeof(lb_block_q4_0x8) == 8 * sizeof(block_q4_0), "lb_block_q4_0x8 size");

typedef struct {
    lb_fp16 d[4];
    int8_t qs[128];
} lb_block_q8_0x4;
static_assert(sizeof(lb_block_q8_0x4) == 4 * sizeof(block_q8_0), "lb_block_q8_0x4 size");

typedef struct {
    lb_fp16 d[8];
    int8_t qs[256];
} lb_block_q8_0x8;
static_assert(sizeof(lb_block_q8_0x8) == 8 * sizeof(block_q8_0), "lb_block_q8_0x8 size");

/* Activations for GEMM: 4 rows quantized as Q8_0 (bit-identical to
 * lb_quantize_row_q8_0_ref per row) and interleaved in chunks of C_a bytes
 * (chunk j of row m at qs[(j*4 + m)*C_a]). The scale is stored widened to
 * float (exactly the fp16 value) and 8x each row's quant sum is kept for
 * kernels that multiply unsigned 4-bit weights q = w + 8:
 * sum(w*a) = sum(q*a) - s8. Transient, never in a file: 160 bytes per
 * block of 4 x 32. */
typedef struct {
    float d[4];
    int32_t s8[4];
    int8_t qs[128];
} lb_block_q8_0x4a;
static_assert(sizeof(lb_block_q8_0x4a) == 160, "lb_block_q8_0x4a size");

/* Activations for the AVX-512 VNNI GEMM (kernels/repack_avx512.c): 4 rows
 * quantized as Q8_0 (bit-identical to lb_quantize_row_q8_0_ref per row),
 * each row's 32 bytes in order, the scale widened to float, and the bias
 * the kernels start each block's accumulator at: -8*sum (Q4_0's unsigned
 * nibbles q = w + 8) and -128*sum (IQ4_NL / Q8_0 weights + 128). 176 bytes
 * per block of 4 x 32; transient, never in a file. */
typedef struct {
    float d[4];
    int32_t b8[4];
    int32_t b128[4];
    int8_t qs[4][32];
} lb_block_q8_0x4v;
static_assert(sizeof(lb_block_q8_0x4v) == 176, "lb_block_q8_0x4v size");

/* Activations for the AMX GEMM (kernels/repack_amx.c): 16 rows quantized
 * as Q8_0 (bit-identical to lb_quantize_row_q8_0_ref per row), the 16 rows'
 * bytes of a block contiguous (an AMX tile of 16 rows x 32 bytes), scales
 * widened to float. 576 bytes per block of 16 x 32. */
typedef struct {
    int8_t qs[16][32];
    float d[16];
} lb_block_q8_0x16;
static_assert(sizeof(lb_block_q8_0x16) == 576, "lb_block_q8_0x16 size");

/* Activations for the AMX-BF16 GEMM (kernels/x86/repack_amx_bf16.c): 16 rows
 * of one 32-value block as bf16 (round to nearest even, lb_f32_to_bf16), row
 * after row: the A tile of tdpbf16ps (16 rows x 64 bytes). 1024 bytes, the
 * same 2 bytes a value as LB_ACT_X4_MAX_BLOCK allows. */
typedef struct {
    uint16_t v[16][32];
} lb_block_bf16x16;
static_assert(sizeof(lb_block_bf16x16) == 1024, "lb_block_bf16x16 size");

/* ---- 256-weight super-block formats: Q2_K_16X4, CB2_16X4, CB3_16X4 ----
 * (formats/repack_kq.c; kernels in kernels/kq_repack_avx512.c)
 * Groups of R = 16 rows; inside a group one x-block per super-block column
 * b = 0 .. K/256-1, 16 times the base block's bytes (Q2_K 1344, CB2 1248,
 * CB3 1760), laid out for AVX-512 "lanes = rows": in every 64-byte vector
 * below, dword r (bytes 4r..4r+3) belongs to row r of the group. Weight w of
 * a row is in sub-group j = w / 16.
 *   QS (all, 1024 B at 0): 16 vectors v = 0..15, one per sub-group: byte
 *      4r + i of vector v holds at bits 2t..2t+1 (t = 0..3) the 2-bit quant
 *      (Q2_K) or low index bits (CB) of weight 16v + 4t + i of row r. So
 *      (vector >> 2t) & 3 gives weights 16v + 4t .. +3 of all 16 rows, one
 *      dword each: a vpdpbusd operand against one activation dword.
 *   QH (CB3, 512 B at 1024): 8 vectors h; byte 4r + i of vector h holds at
 *      bit 4e + t the third index bit of weight 16(2h + e) + 4t + i of row r.
 *   Nibble planes NP0, NP1 (2 vectors): byte 4r + e holds, for row r,
 *      nib(e) | nib(e + 4) << 4 (NP0) and nib(8 + e) | nib(12 + e) << 4
 *      (NP1), e = 0..3: nib(j) = the 4-bit scale of sub-group j (Q2_K) or
 *      the low 4 bits of its 6-bit field (CB, formats/cb.h). The same nibble
 *      position for all rows of a vector: one vpshufb spreads a sub-group's
 *      nibble over its row's four bytes.
 *   Q2_K: NP0, NP1 at 1024, then MP0, MP1 (the 4-bit mins in the same
 *      arrangement) at 1152, d[16] (fp16, row order) at 1280, dmin[16] at 1312.
 *   CB:   NP0, NP1, then TP (byte 4r + e = top(e) | top(e + 4) << 2 |
 *      top(e + 8) << 4 | top(e + 12) << 6: the top 2 bits of the fields) at
 *      1024 (CB2) / 1536 (CB3); d[16] at 1216 (CB2) / 1728 (CB3).
 * Same bytes per weight as the base type (blck 256, type_size 84 / 78 /
 * 110), so GGUF sizes stay consistent; the last N % 16 rows are plain. */

/* Activations for their GEMM: 4 rows quantized as Q8_K (bit-identical to
 * lb_quantize_row_q8_K_ref per row), the 256 bytes of each row in order,
 * d as is, and the bsums in the forms the kernels start from:
 * b128[m] = -128 * (sum of bsums) (CB, narrow books: s c + 128 unsigned),
 * b64[m][j] = -64 * bsums[j] (CB: centroids + 64 are unsigned) and
 * bsp[m][2p], bsp[m][2p + 1] = 16 * bsums[lo], bsums[lo + 4] with
 * lo = p + 4 * (p / 4) (Q2_K's mins, as int16 pairs against MP0 / MP1).
 * 1440 bytes per block of 4 x 256; transient, never in a file. */
typedef struct {
    float d[4];
    int32_t b128[4];
    int32_t b64[4][16];
    int16_t bsp[4][16];
    int8_t qs[4][256];
} lb_block_q8_Kx4;
static_assert(sizeof(lb_block_q8_Kx4) == 1440, "lb_block_q8_Kx4 size");

/* Activations for their AMX GEMM (kernels/kq_repack_amx.c): 16 rows
 * quantized as Q8_K (bit-identical to lb_quantize_row_q8_K_ref per row),
 * row m's 256 bytes at qs[m] (an AMX tile of 16 rows x 64 bytes per 64
 * values, row stride 256), d as is, and for Q2_K's mins the bsums as bf16
 * digit pairs: bsd[m][2j] = bf16(bsums[j] >> 6), bsd[m][2j + 1] =
 * bf16(bsums[j] & 63) (both exact; 64 h + l = bsum). 5184 bytes per block
 * of 16 x 256; transient, never in a file. */
typedef struct {
    float d[16];
    uint16_t bsd[16][32];
    int8_t qs[16][256];
} lb_block_q8_Kx16;
static_assert(sizeof(lb_block_q8_Kx16) == 5184, "lb_block_q8_Kx16 size");

typedef struct {
    int type;  /* repacked type id (LB_TYPE_Q4_0_4X4 ...) */
    int base;  /* LB_TYPE_Q4_0, LB_TYPE_IQ4_NL, LB_TYPE_MXFP4_NL, LB_TYPE_Q8_0; Q2_K, CB2, CB3 (16 rows, chunk 4) */
    int rows;  /* R */
    int chunk; /* C, bytes */
} lb_repack_layout;

/* NULL if type is not a repacked type. */
const lb_repack_layout *lb_repack_layout_of(int type);
/* The repacked type for (base, R, C), -1 if none. */
int lb_repack_find(int base, int rows, int chunk);
/* Plain type behind a repacked one; any other type maps to itself. */
int lb_type_base(int type);
/* Rows interleaved per group: R for repacked types, 1 otherwise. */
int lb_type_rows(int type);
/* Traits of the repacked types (NULL for others). Their to_float decodes
 * one whole group (k = R * row length, rows written one after another);
 * from_float and vec_dot are NULL: whole tensors go through
 * lb_repack_tensor / lb_unpack_tensor. */
const lb_type_traits *lb_repack_traits(int type);

/* Whole tensors, N rows of K (K % 32 == 0): plain base-type rows <->
 * interleaved groups plus the plain tail. src and dst must not overlap. */
void lb_repack_tensor(int type, const void *plain, void *packed, int64_t K, int64_t N);
void lb_unpack_tensor(int type, const void *packed, void *plain, int64_t K, int64_t N);

/* ---- activations ---- */
/* 4 fp32 rows (x, x + ldx, ...) of k values -> k/32 lb_block_q8_0x4a. */
void lb_quantize_q8_0x4_c4_ref(const float *x, size_t ldx, void *y, int64_t k);
void lb_quantize_q8_0x4_c8_ref(const float *x, size_t ldx, void *y, int64_t k);
/* 4 fp32 rows -> k/32 lb_block_q8_0x4v. */
void lb_quantize_q8_0x4v_ref(const float *x, size_t ldx, void *y, int64_t k);
/* 16 fp32 rows -> k/32 lb_block_q8_0x16. */
void lb_quantize_q8_0x16_ref(const float *x, size_t ldx, void *y, int64_t k);
/* 16 fp32 rows -> k/32 lb_block_bf16x16. */
void lb_pack_bf16x16_ref(const float *x, size_t ldx, void *y, int64_t k);

/* ---- scalar reference kernels (lb_gemm_fn signature, kernels/dispatch.h) ----
 * W is the whole repacked tensor, w_row_size its bytes per row (the base
 * type's), [n0, n1) whole groups (multiples of R). gemv: A holds M plain
 * Q8_0 rows (a_row_size apart). gemm: A holds M/4 groups of
 * lb_block_q8_0x4a (a_row_size bytes apart), M % 4 == 0, activation chunk =
 * the weight chunk C. Y[m * ldy + n]. Results are bit-identical to the plain
 * reference dot (lb_vec_dot_*_ref) on the unpacked rows. */
/* ---- the super-block layouts (formats/repack_kq.c) ---- */
/* 1 for Q2_K, CB2, CB3: bases whose layouts are the 16-row x-blocks above. */
int lb_repack_is_kq(int base);
const lb_type_traits *lb_repack_kq_traits(int type);
void lb_repack_kq_tensor(const lb_repack_layout *L, const void *plain, void *packed, int64_t K, int64_t N);
void lb_unpack_kq_tensor(const lb_repack_layout *L, const void *packed, void *plain, int64_t K, int64_t N);
/* 4 fp32 rows -> k/256 lb_block_q8_Kx4; 16 rows -> k/256 lb_block_q8_Kx16. */
void lb_quantize_q8_Kx4_ref(const float *x, size_t ldx, void *y, int64_t k);
void lb_quantize_q8_Kx16_ref(const float *x, size_t ldx, void *y, int64_t k);
/* The bsum forms of lb_block_q8_Kx4 (b64: -64 * bsum; bsp: the
 * (16 bsum_lo, bsum_hi) int16 pairs; *b128: -128 * the sum of all) from
 * one Q8_K block's bsums. */
void lb_q8_K_bsum_forms(const int16_t *bsums, int32_t b64[16], int16_t bsp[16], int32_t *b128);
/* The bf16 digit pairs of lb_block_q8_Kx16 from one Q8_K block's bsums. */
void lb_q8_K_bsum_digits(const int16_t *bsums, uint16_t bsd[32]);
/* Scalar references (lb_gemm_fn): gemv on plain Q8_K rows, gemm on
 * lb_block_q8_Kx4 groups (M % 4 == 0); bit-identical to the plain reference
 * dot (lb_vec_dot_q2_K_q8_K_ref, lb_vec_dot_cb*_q8_K_ref) on unpacked rows. */
#define LB_REPACK_KQ_REF_DECL(w)                                                                     \
    void lb_gemv_##w##x16_q8_K_16x4_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, \
                                        const void *A, size_t a_row_size, int M, float *Y, size_t ldy); \
    void lb_gemm_##w##x16_q8_Kx4_16x4_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, \
                                          const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_REPACK_KQ_REF_DECL(q2_K)
LB_REPACK_KQ_REF_DECL(cb2)
LB_REPACK_KQ_REF_DECL(cb3)

#define LB_REPACK_REF_DECL(w, R, C)                                                                \
    void lb_gemv_##w##x##R##_q8_0_##R##x##C##_ref(int64_t K, const void *W, size_t w_row_size,     \
                                                  int n0, int n1, const void *A, size_t a_row_size, \
                                                  int M, float *Y, size_t ldy);                    \
    void lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_ref(int64_t K, const void *W, size_t w_row_size,   \
                                                    int n0, int n1, const void *A,                 \
                                                    size_t a_row_size, int M, float *Y, size_t ldy);
LB_REPACK_REF_DECL(q4_0, 4, 4)
LB_REPACK_REF_DECL(q4_0, 4, 8)
LB_REPACK_REF_DECL(q4_0, 8, 8)
LB_REPACK_REF_DECL(iq4_nl, 4, 4)
LB_REPACK_REF_DECL(iq4_nl, 4, 8)
LB_REPACK_REF_DECL(iq4_nl, 8, 8)
LB_REPACK_REF_DECL(q8_0, 4, 4)
LB_REPACK_REF_DECL(q8_0, 4, 8)
LB_REPACK_REF_DECL(q8_0, 8, 8)
LB_REPACK_REF_DECL(mxfp4_nl, 4, 4)
LB_REPACK_REF_DECL(mxfp4_nl, 4, 8)
LB_REPACK_REF_DECL(mxfp4_nl, 8, 8)

#endif
