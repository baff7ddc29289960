/* The 16-row interleaved layouts of the formats llama.cpp's K-quant mixes
 * carry besides Q2_K: Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (256-weight
 * super-blocks) and the legacy Q4_1, Q5_0, Q5_1 (32-weight blocks). Type
 * names say rows x chunk: Q4_K_16X4 = 16 rows, 4-byte chunks.
 *
 * Layout of a tensor of N rows x K weights (K a multiple of the block):
 * groups of 16 consecutive rows, then the last N % 16 rows plain. Inside a
 * group one x-block per block column b, 16 times the plain block's bytes
 * (so bytes per weight, GGUF sizes and bits per weight are the base type's).
 * An x-block holds every field of the 16 rows' plain blocks as a "plane":
 *   DW plane (a field of 4n bytes): n 64-byte vectors; vector c holds bytes
 *      [4c, 4c + 4) of the field of row r at bytes 4r .. 4r + 3 ("dword r =
 *      row r"). A SIMD register loaded from it has one row per 32-bit lane,
 *      so a dot-product instruction against an activation dword broadcast to
 *      every lane adds into each row's own lane: no horizontal sums. AVX2
 *      reads half a vector (rows 0-7, 8-15), NEON a quarter (4 rows).
 *   H16 plane (a 2-byte field: d, dmin, m, IQ4_XS's scales_h): the 16 rows'
 *      values in row order, 32 bytes (widened to a float vector by one
 *      vcvtph2ps).
 *   P5 plane (Q5_0 / Q5_1's qh, 64 bytes): one dword per row like DW, its
 *      bits permuted so that one shift and one mask give the fifth bits of a
 *      quant vector: bit 8e + 2c + h holds the fifth bit of weight
 *      4c + e + 16h (c = 0..3 the qs vector, e = 0..3 its byte, h = 0 low,
 *      1 high nibble): (P >> (2c + h)) & 0x01010101 puts them at bit 0 of
 *      the four bytes.
 * Planes follow in the order of the plane table (formats/repack_kx.c),
 * which is the plain block's field order but for Q5_0, whose qs come first
 * so that they start 64-byte aligned, and Q6_K, whose planes come in the
 * order its kernels read them (LB_KX_Q6_* below). The quants keep their plain meaning per
 * byte (Q4_K byte i of pair p: low nibble weight 64p + i, high 64p + 32 + i;
 * Q6_K, Q3_K, Q5_K, IQ4_XS likewise), so a kernel decodes a DW vector
 * exactly as the plain kernel decodes 4 bytes, 16 rows at once. */
#ifndef LB_REPACK_KX_H
#define LB_REPACK_KX_H

#include "formats/legacy.h"
#include "formats/repack.h"

enum { LB_KX_ROWS = 16 };

/* 1 for the bases whose layouts are the ones above. */
int lb_repack_is_kx(int base);
const lb_type_traits *lb_repack_kx_traits(int type);
void lb_repack_kx_tensor(const lb_repack_layout *L, const void *plain, void *packed, int64_t K, int64_t N);
void lb_unpack_kx_tensor(const lb_repack_layout *L, const void *packed, void *plain, int64_t K, int64_t N);

/* Offset in base's x-block of row 0's copy of byte `plain_byte` of the
 * plain block (the other rows' follow at the plane's row stride), -1 if
 * none. Kernels hard-code the offsets; tests/test_kx_repack.c checks them
 * through this. */
int lb_kx_x_offset(int base, int plain_byte);

/* Q6_K_16X4's planes in the order its kernels read them: the 16 int8
 * scales, then per half n (weights 128n ..) its 16 ql vectors and 8 qh
 * vectors, then the 16 fp16 d. One pass through an x-block thus walks its
 * 3360 bytes forward, which the hardware prefetcher follows (the plain
 * field order, ql 0-31 then qh 0-15, made the GEMV jump back 1 KiB twice
 * per super-block; AMD Zen 4, one thread, decode GEMV without software
 * prefetch: 7.6-8.1 against 16.4-16.8 GB/s). A file written with the
 * former order (LB_TYPE_Q6_K_16X4_V1) is converted at load. */
enum { LB_KX_Q6_SC = 0, LB_KX_Q6_QL = 256, LB_KX_Q6_QH = 1280, LB_KX_Q6_HALF = 1536, LB_KX_Q6_D = 3328 };
/* ql vector v = 0..31 (plain bytes 4v .. 4v + 3), qh vector u = 0..15 */
static inline int lb_kx_q6_ql(int v) { return LB_KX_Q6_QL + LB_KX_Q6_HALF * (v / 16) + 64 * (v % 16); }
static inline int lb_kx_q6_qh(int u) { return LB_KX_Q6_QH + LB_KX_Q6_HALF * (u / 8) + 64 * (u % 8); }

/* Activations of the Q4_1 / Q5_1 GEMM: 4 rows quantized as Q8_1
 * (lb_quantize_row_q8_1_ref per row), the fp16 d and s widened to float,
 * each row's 32 bytes in order. 160 bytes per block of 4 x 32; transient. */
typedef struct {
    float d[4];
    float s[4];
    int8_t qs[4][32];
} lb_block_q8_1x4;
static_assert(sizeof(lb_block_q8_1x4) == 160, "lb_block_q8_1x4 size");
void lb_quantize_q8_1x4_ref(const float *x, size_t ldx, void *y, int64_t k);

/* Scalar reference kernels (lb_gemm_fn), bit-identical to the base type's
 * plain reference dot on the unpacked rows: gemv on plain act_type rows
 * (Q8_K for the super-block types, Q8_0 for Q5_0, Q8_1 for Q4_1 / Q5_1);
 * gemm on 4-row groups (lb_block_q8_Kx4, lb_block_q8_0x4v, lb_block_q8_1x4),
 * M % 4 == 0. */
#define LB_REPACK_KX_REF_DECL(w, a)                                                                     \
    void lb_gemv_##w##x16_##a##_16x4_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1,      \
                                         const void *A, size_t a_row_size, int M, float *Y, size_t ldy);   \
    void lb_gemm_##w##x16_##a##x4_16x4_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1,    \
                                           const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
LB_REPACK_KX_REF_DECL(q3_K, q8_K)
LB_REPACK_KX_REF_DECL(q4_K, q8_K)
LB_REPACK_KX_REF_DECL(q5_K, q8_K)
LB_REPACK_KX_REF_DECL(q6_K, q8_K)
LB_REPACK_KX_REF_DECL(iq4_xs, q8_K)
LB_REPACK_KX_REF_DECL(q4_1, q8_1)
LB_REPACK_KX_REF_DECL(q5_0, q8_0)
LB_REPACK_KX_REF_DECL(q5_1, q8_1)

#endif
