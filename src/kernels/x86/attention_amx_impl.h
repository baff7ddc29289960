/* AMX-BF16 tile products of the prefill attention (kernels/attention.h),
 * included by kernels/x86/attention_x86.c for its third instantiation of
 * attention_x86_tmpl.h: the template keeps the online softmax, the masks
 * and the final normalization; these replace its two FMA passes, S = Q K^T
 * and O += P V, for units of 16 query rows or more.
 *
 * Precision: every f32 operand x is split into x_hi = bf16(x) and x_lo =
 * bf16(x - x_hi) (both round to nearest even), and a product is
 * a_hi b_hi + a_hi b_lo + a_lo b_hi ("bf16x3"): what is left out, a_lo b_lo
 * and the rounding of x_lo, is about 2^-16 of |a b|, against 2^-24 for one
 * f32 product, with the sums in fp32 on the tile unit. The scores take
 * a_lo b_lo too (bf16x4, about 2^-17): exp turns a score's absolute error
 * into a relative one of the output, and with scores in the hundreds
 * (tests/test_attention.c's scale x 40) x3 was just outside the bound.
 * tests/test_attention.c holds this level to the same bound as the others
 * (1e-4 of the head's largest output against a double reference), but not
 * to their bits.
 *
 * Tiles: 0, 1 C (16 x 16 fp32); 2, 3 A hi / lo (16 rows x 32 bf16); 4-7 B
 * hi / lo of two column tiles (16 pair rows x 16 columns). Scratch (x, tile
 * order, 64-byte aligned, lb_attn_amx_floats in kernels/attention_impl.h):
 * the unit's Q tiles, a K block's tiles, a V block's tiles, the unit's P
 * tiles (every row tile's, written by the softmax). */
#ifndef LB_ATTENTION_AMX_IMPL_H
#define LB_ATTENTION_AMX_IMPL_H

#include <immintrin.h>

#include "core/common.h"
#include "kernels/attention_impl.h"
#include "kernels/x86/amx_config.h"
#include "kernels/x86/amx_tiles_impl.h" /* bf16_pair_row */

#define ATTR_AMX                                                                                                   \
    __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#define AMX_INLINE ATTR_AMX __attribute__((always_inline)) static inline

enum { AMX_TILE_U16 = 512 }; /* bf16 per 1 KiB tile */

/* x as bf16 (round to nearest even), back in f32 */
AMX_INLINE __m512 amx_bf16_round(__m512 x) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x)), 16));
}

/* A tile row: 32 values x0 (0-15), x1 (16-31) as bf16 in order, hi and lo */
AMX_INLINE void amx_a_row(__m512 x0, __m512 x1, uint16_t *hi, uint16_t *lo) {
    const __m512 h0 = amx_bf16_round(x0), h1 = amx_bf16_round(x1);
    _mm512_store_si512(hi, (__m512i)_mm512_cvtne2ps_pbh(h1, h0));
    _mm512_store_si512(lo, (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0)));
}

/* B tile pair row (bf16_pair_row) of f0, f1: hi and lo */
AMX_INLINE void amx_b_row(__m512 f0, __m512 f1, uint16_t *hi, uint16_t *lo) {
    const __m512 h0 = amx_bf16_round(f0), h1 = amx_bf16_round(f1);
    _mm512_store_si512(hi, bf16_pair_row(h0, h1));
    _mm512_store_si512(lo, bf16_pair_row(_mm512_sub_ps(f0, h0), _mm512_sub_ps(f1, h1)));
}

/* C tiles 0, 1 += A (2 hi, 3 lo) times B (4 / 5 hi / lo, 6 / 7 hi / lo),
 * the small terms first: with lo_lo also a_lo b_lo (bf16x4) */
AMX_INLINE void amx_x3(int lo_lo) {
    if (lo_lo) {
        _tile_dpbf16ps(0, 3, 5);
        _tile_dpbf16ps(1, 3, 7);
    }
    _tile_dpbf16ps(0, 3, 4);
    _tile_dpbf16ps(0, 2, 5);
    _tile_dpbf16ps(0, 2, 4);
    _tile_dpbf16ps(1, 3, 6);
    _tile_dpbf16ps(1, 2, 7);
    _tile_dpbf16ps(1, 2, 6);
}

/* B tiles hi / lo of two column tiles (2 KiB each pair) at b: tiles 4-7 */
AMX_INLINE void amx_load_b(const uint16_t *b0, const uint16_t *b1) {
    _tile_loadd(4, b0, 64);
    _tile_loadd(5, b0 + AMX_TILE_U16, 64);
    _tile_loadd(6, b1, 64);
    _tile_loadd(7, b1 + AMX_TILE_U16, 64);
}

typedef struct {
    uint16_t *q, *k, *v, *p;
} amx_bufs;

static inline amx_bufs amx_bufs_of(float *x, int ms, int hd, int hdp) {
    const size_t nc = (size_t)lb_attn_amx_chunks(hd);
    amx_bufs b;
    b.q = (uint16_t *)x;
    b.k = b.q + (size_t)ms * nc * 64;
    b.v = b.k + nc * 2 * 2 * AMX_TILE_U16;
    b.p = b.v + (size_t)hdp / 16 * 2 * AMX_TILE_U16;
    return b;
}

/* The unit's queries (qs: ms rows of hd floats, rows past M zero) as A tiles:
 * row tile rt, chunk c at q + (rt nc + c) 2 tiles, hi then lo */
AMX_INLINE void amx_q_tiles(const float *qs, int ms, int hd, uint16_t *q) {
    const int nc = lb_attn_amx_chunks(hd);
    for (int r = 0; r < ms; r++)
        for (int c = 0; c < nc; c++) {
            const int d = 32 * c, n0 = LB_MIN(16, hd - d), n1 = LB_MIN(16, hd - d - 16);
            const float *x = qs + (size_t)r * hd + d;
            const __m512 x0 = _mm512_maskz_loadu_ps((__mmask16)((1u << n0) - 1), x);
            const __m512 x1 = n1 > 0 ? _mm512_maskz_loadu_ps((__mmask16)((1u << n1) - 1), x + 16) : _mm512_setzero_ps();
            uint16_t *t = q + ((size_t)(r / 16) * nc + c) * 2 * AMX_TILE_U16 + 32 * (r % 16);
            amx_a_row(x0, x1, t, t + AMX_TILE_U16);
        }
}

/* S (ms rows, KB = 32 scores each, row stride 32) = Q K^T for the K block kt,
 * f32 [hd][32]: chunk c's two key tiles at k + (2 c + j) 2 tiles */
AMX_INLINE void amx_qk(const uint16_t *q, int ms, int hd, const float *kt, uint16_t *k, float *s) {
    const int nc = lb_attn_amx_chunks(hd);
    for (int c = 0; c < nc; c++)
        for (int kk = 0; kk < 16; kk++) {
            const int d0 = 32 * c + 2 * kk;
            for (int j = 0; j < 2; j++) {
                const __m512 f0 = d0 < hd ? _mm512_loadu_ps(kt + (size_t)d0 * LB_ATTN_KB + 16 * j) : _mm512_setzero_ps();
                const __m512 f1 =
                    d0 + 1 < hd ? _mm512_loadu_ps(kt + (size_t)(d0 + 1) * LB_ATTN_KB + 16 * j) : _mm512_setzero_ps();
                uint16_t *t = k + (size_t)(2 * c + j) * 2 * AMX_TILE_U16 + 32 * kk;
                amx_b_row(f0, f1, t, t + AMX_TILE_U16);
            }
        }
    for (int rt = 0; rt < ms / 16; rt++) {
        _tile_zero(0);
        _tile_zero(1);
        for (int c = 0; c < nc; c++) {
            const uint16_t *a = q + ((size_t)rt * nc + c) * 2 * AMX_TILE_U16;
            _tile_loadd(2, a, 64);
            _tile_loadd(3, a + AMX_TILE_U16, 64);
            amx_load_b(k + (size_t)(2 * c) * 2 * AMX_TILE_U16, k + (size_t)(2 * c + 1) * 2 * AMX_TILE_U16);
            amx_x3(1);
        }
        _tile_stored(0, s + (size_t)rt * 16 * LB_ATTN_KB, LB_ATTN_KB * 4);
        _tile_stored(1, s + (size_t)rt * 16 * LB_ATTN_KB + 16, LB_ATTN_KB * 4);
    }
}

/* Row r of the P tiles (row tile r / 16, hi then lo): the block's 32
 * probabilities x0 (keys 0-15), x1 (16-31), written by the softmax */
AMX_INLINE void amx_p_row(const amx_bufs *b, int r, __m512 x0, __m512 x1) {
    uint16_t *t = b->p + (size_t)(r / 16) * 2 * AMX_TILE_U16 + 32 * (r % 16);
    amx_a_row(x0, x1, t, t + AMX_TILE_U16);
}

/* The V block's B tiles, dimension tile dt at v + dt 2 tiles: V the rows
 * of its keys [jlo, jhi) (v, hdp floats each, key jlo first), the other
 * keys' values taken as 0 (their P are 0) */
AMX_INLINE void amx_v_tiles(int hdp, const float *v, int jlo, int jhi, const amx_bufs *b) {
    for (int dt = 0; dt < hdp / 16; dt++)
        for (int kk = 0; kk < 16; kk++) {
            const int j0 = 2 * kk, j1 = j0 + 1;
            const __m512 f0 = j0 >= jlo && j0 < jhi ? _mm512_loadu_ps(v + (size_t)(j0 - jlo) * hdp + 16 * dt) : _mm512_setzero_ps();
            const __m512 f1 = j1 >= jlo && j1 < jhi ? _mm512_loadu_ps(v + (size_t)(j1 - jlo) * hdp + 16 * dt) : _mm512_setzero_ps();
            uint16_t *t = b->v + (size_t)dt * 2 * AMX_TILE_U16 + 32 * kk;
            amx_b_row(f0, f1, t, t + AMX_TILE_U16);
        }
}

/* Rows 16 rt .. 16 rt + 15 of O (hdp floats each) += P V, P the row
 * tile's probabilities (amx_p_row), V the block's tiles (amx_v_tiles).
 * Called as soon as the softmax has written the row tile, so the tile unit
 * runs it while the vector units go on with the next rows. */
AMX_INLINE void amx_pv_tile(int rt, int hdp, const amx_bufs *b, float *o) {
    _tile_loadd(2, b->p + (size_t)rt * 2 * AMX_TILE_U16, 64);
    _tile_loadd(3, b->p + (size_t)rt * 2 * AMX_TILE_U16 + AMX_TILE_U16, 64);
    for (int dt = 0; dt < hdp / 16; dt += 2) {
        float *c = o + (size_t)rt * 16 * hdp + 16 * dt;
        _tile_loadd(0, c, hdp * 4);
        _tile_loadd(1, c + 16, hdp * 4);
        amx_load_b(b->v + (size_t)dt * 2 * AMX_TILE_U16, b->v + (size_t)(dt + 1) * 2 * AMX_TILE_U16);
        amx_x3(0);
        _tile_stored(0, c, hdp * 4);
        _tile_stored(1, c + 16, hdp * 4);
    }
}

#endif
