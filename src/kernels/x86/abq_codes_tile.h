/* The code layouts' prefill GEMM (kernels/x86/abq_codes_avx2.c) as its
 * tiles see it: the groups of 8 weight rows it decodes once per call, 16-row
 * pairs of them for the AVX-512 tile, and the tile's signature. The AVX2
 * tiles live beside the decoder, the VNNI ones in abq_codes_avx512.c. */
#ifndef LB_ABQ_CODES_TILE_H
#define LB_ABQ_CODES_TILE_H

#include <immintrin.h>
#include <stdint.h>

#include "formats/abq.h"

/* One group of 8 rows: column c = dword r holds row r's codes 4c .. 4c + 3. */
typedef struct {
    __m256i col[32]; /* column c of the group */
    __m256i swz;     /* per row: int16 pair (sw, z) */
    __m256d d[2];    /* rows 0-3, 4-7 */
} lb_abq_g8;

/* Two such groups side by side (rows 0-7, then 8-15), one zmm a column. */
typedef struct {
    _Alignas(64) int32_t col[32][16];
    int32_t swz[16];
    double d[16];
} lb_abq_g16;

/* activation rows per tile */
enum { LB_ABQ_MR = 4 };

/* MR activation rows a[0..MR-1], groups [g0, g0 + kc), against the decoded
 * groups B[0 .. kc) (lb_abq_g8 or lb_abq_g16): the double sums continue
 * from st[m] (unless g0 = 0) and go back there, or, after the last group
 * (last), times da to y[m][0 .. rows). ac[m] + i astr: the 128 activation
 * bytes of row m's group i; cz[m][i]: the int16 pair (o - za, -(Sa_i - 128
 * za)) of that group (abq_codes_avx2.c). */
typedef void lb_abq_tile_fn(const void *B, int64_t g0, int64_t kc, int last, const block_abq_act *const *a,
                            const int8_t *const *ac, size_t astr, const int32_t *const *cz, double *const *st,
                            float *const *y);
/* Group i's int16 pair (o - za, -(Sa_i - 128 za)) of a token a (tile8's cz),
 * o the activation bytes' offset: 128 (the blocks' ca - 128) or 0 (raw ca). */
static inline int32_t lb_abq_corr_pair(const block_abq_act *a, int64_t i, int o) {
    return (int32_t)((uint32_t)(uint16_t)(o - a[0].z) | (uint32_t)(uint16_t)(-(a[i].sum - 128 * a[0].z)) << 16);
}

/* The tile's activation rows m .. m + MR - 1 of A (M rows of a_row_size
 * bytes): their blocks, bytes (raw: the raw codes of nb groups a row, else
 * the blocks' own) and correction pairs (cz: nb a row). A short tile
 * repeats its last row (into dummy outputs). Returns the real rows. */
static inline int lb_abq_tile_rows(const void *A, size_t a_row_size, int M, int m, const int8_t *raw, int64_t nb,
                                   const int32_t *cz, const block_abq_act *a[LB_ABQ_MR], const int8_t *ac[LB_ABQ_MR],
                                   const int32_t *c[LB_ABQ_MR]) {
    const int mr = M - m < LB_ABQ_MR ? M - m : LB_ABQ_MR;
    for (int j = 0; j < LB_ABQ_MR; j++) {
        const int mj = m + (j < mr - 1 ? j : mr - 1);
        a[j] = (const block_abq_act *)((const uint8_t *)A + (size_t)mj * a_row_size);
        ac[j] = raw ? raw + (size_t)mj * (size_t)nb * LB_ABQ_G : a[j]->c;
        c[j] = cz + (size_t)mj * nb;
    }
    return mr;
}

/* vpdpbusd tiles of 8 rows (ymm) and 16 rows (zmm), kernels/x86/abq_codes_avx512.c */
lb_abq_tile_fn lb_abq_tile8_vnni, lb_abq_tile16_vnni;

#endif
