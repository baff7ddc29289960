/* AMX GEMM (prefill) on the 16-row super-block layouts Q2_K_16X4, CB2_16X4,
 * CB3_16X4 (formats/repack.h) against 16-row Q8_K activation groups
 * (lb_block_q8_Kx16). Rows beyond a multiple of 16 go to the AVX-512 GEMV
 * (the entry's gemv, kernels/kq_gemv_*_avx512.c).
 *
 * One tdpbssd multiplies a 16 x 64 activation tile (16 rows, 64 values) by a
 * 64 x 16 weight tile into 16 x 16 int32 (C[a][w]: a row of C = 16 weight
 * rows, the lanes of the AVX-512 kernels). The weight tiles are the
 * AVX-512 decode stored as is: vector 4j + t (weights 16j + 4t .. +3 of 16
 * rows) is B-tile row (4j + t) % 16 in VNNI order. A super-block is 4 tiles
 * deep, and its float scaling comes once per 256 weights:
 *   Q2_K: weights sc * q (0..45, the folded scales) are valid signed bytes:
 *         4 tdpbssd give the exact int32 sum. The min term
 *         sum_j m_j * bsum_j is one tdpbf16ps of K = 32: weights
 *         (64 m_j, m_j), activations the digits (bsum_j >> 6, bsum_j & 63),
 *         all exact in bf16 and summed exactly in fp32.
 *   CB:   with narrow books (formats/cb.h; CB2 as discovered) s c is a
 *         byte: 4 tdpbssd, no min term, so CB2 runs a little faster than
 *         Q2_K. With wider books a centroid times its scale (|s c| <= 1024)
 *         is no byte, so it is split s c = 32 h + l (h in [-32, 31], l in
 *         [0, 31]) at decode: 8 tdpbssd into C_h and C_l, C = 32 C_h + C_l
 *         exact.
 * The decode (vpermb lookups, for CB vpmullw on byte pairs) is paid once
 * per 16 rows x AKC super-blocks and every 16-row activation group. Per
 * super-block the C tiles go through memory to AVX-512: per activation row
 * cvt + mul + fma (+ the min term) into 16 register accumulators that live
 * across the K chunk. Two tile sets alternate between even and odd
 * super-blocks so the tile unit and the float work overlap. (Scaling pair
 * p - 1 while the tile unit stores pair p, as repack_amx.c does, measured
 * 5-10 % slower here.) */
#include "kernels/x86/kq_repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kq_repack_impl.h"
#include "kernels/x86/amx_config.h"

#define LB_KQ_AMX                                                                                              \
    __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni,avx2," \
                          "fma,f16c")))
#define INLINE_AMX LB_KQ_AMX static inline __attribute__((always_inline))

/* Every tile 16 rows x 64 bytes (lb_amx_cfg_full). 0-3: C (two per
 * super-block, two sets), 4: activations, 5-7: weights (Q2_K: 5 sc*q, 6 min
 * digits, 7 min weights; CB: 5 h, 6 l). */

enum { AKC = 4 }; /* super-blocks decoded per pass */

typedef struct {
    __m512i w[AKC][2][64]; /* B tiles: Q2_K sc * q in [b][0]; CB h in [b][0], l in [b][1] */
    __m512i mn[AKC][16];   /* Q2_K: the min B tile, bf16 (64 m_j, m_j) per row */
    __m512 d[AKC], dmin[AKC];
} amx_buf;

/* Q2_K mins of sub-group j as a bf16 pair per row: (64 m, m), exact. */
INLINE_AMX __m512i q2k_min_bf16(const __m512i mq[4], int j, const consts *c) {
    const __m512i m = _mm512_shuffle_epi8(mq[j / 4], c->ext[j % 4]);
    const __m512i f1 = _mm512_castps_si512(_mm512_cvtepi32_ps(m));
    const __m512i f64 = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_slli_epi32(m, 6)));
    /* low word: bf16(64 m) = top half of its float; high word: bf16(m) */
    return select_bits(f1, _mm512_srli_epi32(f64, 16), _mm512_set1_epi32((int)0xFFFF0000u));
}

/* CB: signed centroid bytes c times the sub-group scale s (words (s, s) per
 * row), split into s c = 32 h + l. */
INLINE_AMX void cb_split(__m512i cv, __m512i s16, __m512i *h, __m512i *l) {
    const __m512i ce = _mm512_srai_epi16(_mm512_slli_epi16(cv, 8), 8), co = _mm512_srai_epi16(cv, 8);
    const __m512i pe = _mm512_mullo_epi16(ce, s16), po = _mm512_mullo_epi16(co, s16);
    const __mmask64 odd = 0xAAAAAAAAAAAAAAAAull;
    *h = _mm512_mask_blend_epi8(odd, _mm512_srai_epi16(pe, 5), _mm512_slli_epi16(po, 3));
    *l = _mm512_and_si512(_mm512_mask_blend_epi8(odd, pe, _mm512_slli_epi16(po, 8)), _mm512_set1_epi8(31));
}

INLINE_AMX void amx_decode(int wt, int cbits, int wide, int nar, const uint8_t *xb, const consts *c, amx_buf *buf,
                           int b) {
    __m512i p[4];
    sel_planes(wt, xb, c, p);
    buf->d[b] = fp16x16(xb + d_off(wt));
    if (wt == WQ2K) {
        for (int j = 0; j < 16; j++) decode_sub(wt, wide, xb, j, p, c, &buf->w[b][0][4 * j]);
        __m512i mq[4];
        q2k_nibble_planes(xb + Q2K_MP_OFF, mq);
        for (int j = 0; j < 16; j++) buf->mn[b][j] = q2k_min_bf16(mq, j, c);
        buf->dmin[b] = fp16x16(xb + Q2K_DMIN_OFF);
        return;
    }
    __m512i s1q = _mm512_setzero_si512();
    for (int j = 0; j < 16; j++) {
        if (j % 4 == 0) s1q = cb_s1_quadrant(wt, cbits, xb, j / 4, c);
        const __m512i s16 = cb_s16(s1q, j, c);
        __m512i u[4];
        decode_sub(wt, wide, xb, j, p, c, u);
        for (int t = 0; t < 4; t++) {
            if (nar) buf->w[b][0][4 * j + t] = cb_scaled(u[t], s16);
            else cb_split(u[t], s16, &buf->w[b][0][4 * j + t], &buf->w[b][1][4 * j + t]);
        }
    }
}

/* acc[a] += the float value of one super-block's C tiles. */
INLINE_AMX void amx_scale_add(int wt, int nar, const int32_t (*c0)[16], const int32_t (*c1)[16], __m512 dv, __m512 dmv,
                              const float *da, __m512 acc[16]) {
#pragma GCC unroll 16
    for (int a = 0; a < 16; a++) {
        const __m512i x0 = _mm512_load_si512(c0[a]);
        if (wt == WQ2K) {
            const __m512 f = _mm512_fnmadd_ps(_mm512_load_ps((const float *)c1[a]), dmv, _mm512_mul_ps(_mm512_cvtepi32_ps(x0), dv));
            acc[a] = _mm512_fmadd_ps(f, _mm512_set1_ps(da[a]), acc[a]);
        } else if (nar) {
            acc[a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(x0), _mm512_mul_ps(dv, _mm512_set1_ps(da[a])), acc[a]);
        } else {
            const __m512i x = _mm512_add_epi32(_mm512_slli_epi32(x0, 5), _mm512_load_si512(c1[a]));
            acc[a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(x), _mm512_mul_ps(dv, _mm512_set1_ps(da[a])), acc[a]);
        }
    }
}

/* One super-block's products into tiles C0, C1 (literal tile numbers). */
#define AMX_SB(wt, nar, buf, ab, b, C0, C1)                              \
    do {                                                                 \
        _tile_zero(C0);                                                  \
        if (!(nar)) _tile_zero(C1);                                      \
        for (int kq = 0; kq < 4; kq++) {                                 \
            _tile_loadd(4, (ab)[b].qs[0] + 64 * kq, 256);                \
            _tile_loadd(5, &(buf)->w[b][0][16 * kq], 64);                \
            _tile_dpbssd(C0, 4, 5);                                      \
            if ((wt) != WQ2K && !(nar)) {                                \
                _tile_loadd(6, &(buf)->w[b][1][16 * kq], 64);            \
                _tile_dpbssd(C1, 4, 6);                                  \
            }                                                            \
        }                                                                \
        if ((wt) == WQ2K) {                                              \
            _tile_loadd(6, (ab)[b].bsd, 64);                             \
            _tile_loadd(7, (buf)->mn[b], 64);                            \
            _tile_dpbf16ps(C1, 6, 7);                                    \
        }                                                                \
    } while (0)

/* Y rows [0, 16) x columns [n, n + 16) over the kc super-blocks in buf. */
INLINE_AMX void amx_tile(int wt, int nar, const amx_buf *buf, int64_t kc, const lb_block_q8_Kx16 *ab, float *y, size_t ldy,
                         int add) {
    int32_t c[4][16][16] __attribute__((aligned(64)));
    __m512 acc[16];
#pragma GCC unroll 16
    for (int a = 0; a < 16; a++) acc[a] = add ? _mm512_loadu_ps(y + (size_t)a * ldy) : _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= kc; b += 2) {
        AMX_SB(wt, nar, buf, ab, b, 0, 1);
        AMX_SB(wt, nar, buf, ab, b + 1, 2, 3);
        _tile_stored(0, c[0], 64);
        if (!nar) _tile_stored(1, c[1], 64);
        _tile_stored(2, c[2], 64);
        if (!nar) _tile_stored(3, c[3], 64);
        amx_scale_add(wt, nar, c[0], c[1], buf->d[b], buf->dmin[b], ab[b].d, acc);
        amx_scale_add(wt, nar, c[2], c[3], buf->d[b + 1], buf->dmin[b + 1], ab[b + 1].d, acc);
    }
    if (b < kc) {
        AMX_SB(wt, nar, buf, ab, b, 0, 1);
        _tile_stored(0, c[0], 64);
        if (!nar) _tile_stored(1, c[1], 64);
        amx_scale_add(wt, nar, c[0], c[1], buf->d[b], buf->dmin[b], ab[b].d, acc);
    }
#pragma GCC unroll 16
    for (int a = 0; a < 16; a++) _mm512_storeu_ps(y + (size_t)a * ldy, acc[a]);
}

/* A: M/16 groups of lb_block_q8_Kx16 (a_row_size bytes each), M % 16 == 0. */
INLINE_AMX void amx_gemm(int wt, int cbits, int wide, int nar, int64_t K, const void *W, size_t wrs, int n0, int n1,
                         const void *A, size_t ars, int M, float *Y, size_t ldy) {
    consts c;
    consts_init(wt, 1, &c);
    const int64_t nb = K / QK_K;
    const size_t xbs = xb_size(wt);
    amx_buf bufs __attribute__((aligned(64)));
    amx_buf *buf = &bufs;
    if (wt != WQ2K)
        for (int b = 0; b < AKC; b++) buf->dmin[b] = _mm512_setzero_ps();
    _tile_loadconfig(lb_amx_cfg_full());
    for (int n = n0; n < n1; n += 16) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)(n / 16) * 16 * wrs;
        for (int64_t b0 = 0; b0 < nb; b0 += AKC) {
            const int64_t kc = LB_MIN((int64_t)AKC, nb - b0);
            for (int64_t b = 0; b < kc; b++) amx_decode(wt, cbits, wide, nar, xg + (size_t)(b0 + b) * xbs, &c, buf, (int)b);
            for (int m = 0; m < M; m += 16) {
                const lb_block_q8_Kx16 *ab = (const lb_block_q8_Kx16 *)((const char *)A + (size_t)(m / 16) * ars) + b0;
                amx_tile(wt, nar, buf, kc, ab, Y + (size_t)m * ldy + n, ldy, b0 > 0);
            }
        }
    }
    _tile_release();
}

LB_KQ_AMX void lb_quantize_q8_Kx16_avx512(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_Kx16 *y = vy;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int m = 0; m < 16; m++) {
            const __m512i bs = q8k_block(x + m * ldx + b * QK_K, y[b].qs[m], &y[b].d[m]);
            q8k_forms_x16(bs, y[b].bsd[m]);
        }
}

LB_KQ_AMX void lb_gemm_q2_Kx16_q8_Kx16_16x4_amx(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                                                size_t ars, int M, float *Y, size_t ldy) {
    amx_gemm(WQ2K, 0, 0, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}

#define AMX_CASE(cbits, wide, nar) amx_gemm(wt, cbits, wide, nar, K, W, wrs, n0, n1, A, ars, M, Y, ldy)
#define CB_AMX(w, WT, TYPE, KBITS)                                                                              \
    LB_KQ_AMX void lb_gemm_##w##x16_q8_Kx16_16x4_amx(int64_t K, const void *W, size_t wrs, int n0, int n1,      \
                                                     const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        const int wt = WT;                                                                                     \
        LB_CB_BOOK_CASES(TYPE, KBITS, AMX_CASE);                                                               \
    }
CB_AMX(cb2, WCB2, LB_TYPE_CB2, 2)
CB_AMX(cb3, WCB3, LB_TYPE_CB3, 3)
#endif
