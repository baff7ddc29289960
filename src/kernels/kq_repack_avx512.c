/* AVX-512 VNNI + VBMI GEMV / GEMM on the 16-row layouts of the 256-weight
 * super-block formats Q2_K_16X4, CB2_16X4, CB3_16X4 (formats/repack.h)
 * against Q8_K activations.
 *
 * Lanes = rows: every vector holds one dword per row of a 16-row group, so
 * vpdpbusd against an activation dword broadcast adds 4 products into each
 * row's own lane and nothing is ever summed across lanes.
 *
 * Decode (per 4 weights x 16 rows, one vector): the 2-bit indices come out
 * of the QS plane with one shift; a sub-group's selector (Q2_K: its 4-bit
 * scale; CB: the book bits of its field) is spread over its row's dword by
 * one vpshufb from a pre-shifted nibble plane; one vpternlogd puts the two
 * together into a combined table index (the paper's §6.5) and one vpermb
 * (VBMI: 64-byte table; vpermi2b for CB3 with 16 books, 128 entries) looks
 * up unsigned weight bytes:
 *   Q2_K: table[q | sc << 2] = sc * q (0..45): the sub-group scale is folded
 *         into the bytes, so a whole super-block sums in one exact int32 and
 *         is scaled in float once per 256 weights. The min term
 *         -dmin * sum_j m_j * bsum_j is 8 vpdpwssd per super-block: mins
 *         (m_e, 16 m_e+4) as int16 pairs straight from a nibble byte (one
 *         vpshufb + one and) against activation pairs (16 bsum, bsum); the
 *         factor 16 goes into the float scale (exact).
 *   CB:   table[q | cb << kbits] = centroid + 64 (0..127; replicated over
 *         the index bits above the book, which hold scale bits). A centroid
 *         times the sub-group scale (up to 16 x 64) does not fit a byte, so
 *         each sub-group's 4 vpdpbusd form their own int32 (started at
 *         -64 * bsum_j, which removes the +64 exactly) and are scaled in
 *         float: fma(cvt(t_j), d * s_j, acc). That is 2 float ops per 16
 *         weights where Q2_K has ~0.3: the price of codebooks with integer
 *         scales on VNNI (measured in docs/codebooks.md).
 *   CB, narrow books (formats/cb.h, C <= 8: |c| <= 15, what discovery
 *         makes for CB2): t_j = sum c a fits int16, so it is scaled by
 *         vpdpwssd with s_j as Q2_K's sub-group sums are, and the super-block
 *         is one exact int32, scaled in float once.
 * CB3 adds one shift and one vpternlogd for the third index bit.
 *
 * GEMV (decode, M < 4 plain Q8_K rows): decode in registers, weights
 * streamed once with prefetch. GEMM (prefill): 48 rows x GKC super-blocks
 * are decoded once into an L1 buffer of weight bytes (+ CB scale vectors,
 * Q2_K min pairs), then every 4-row activation group (lb_block_q8_Kx4) runs
 * over it with 12 accumulator chains (3 row vectors x 4 activation rows).
 * Integer sums are exact; results differ from the scalar reference only in
 * float rounding and summation order. */
#include "kernels/kq_repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/kq_repack_impl.h"

/* Prefetch distance of the GEMV weight stream, in bytes (2-2.5 super-blocks
 * of 16 rows; 2048-3072 measured ~4 % faster than 1024 and 4096 slower;
 * CB2's GEMV, with more work per byte, ran 3-8 % faster at 3072 than at
 * 2048 in decode, Q2_K the same). */
#ifndef LB_KQ_GEMV_PREFETCH
#define LB_KQ_GEMV_PREFETCH 3072
#endif
#ifndef LB_KQ_PF_HINT
#define LB_KQ_PF_HINT _MM_HINT_T0
#endif

LB_VBMI void lb_quantize_q8_Kx4_avx512(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_Kx4 *y = vy;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int m = 0; m < 4; m++) {
            const __m512i bs = q8k_block(x + m * ldx + b * QK_K, y[b].qs[m], &y[b].d[m]);
            q8k_forms_x4(bs, y[b].b64[m], y[b].bsp[m]);
        }
}

/* ---- GEMV: M plain Q8_K rows, up to 4 per pass ---- */

enum { GEMV_KC = 64 }; /* super-blocks per pass: their bias terms live on the stack */
#ifndef GEMV_NG
#define GEMV_NG 2 /* 16-row groups per pass (weight streams) */
#endif

typedef struct {
    const int8_t *qs[4];      /* row m's activations of the pass's first block (stride sizeof(block_q8_K)) */
    float d[4][GEMV_KC];
    int32_t pre[4][GEMV_KC][16]; /* CB: -64 * bsum_j; Q2_K: 8 dwords of (16 bsum_lo, bsum_hi) */
} gemv_acts;

/* CB: sub-group j's sum of centroid x activation for activation row m, 16
 * rows: 4 vpdpbusd from -64 bsum_j, which removes the +64 of the table. */
INLINE __m512i cb_sub_sum(const gemv_acts *A, int m, int64_t b, int j, const __m512i u[4]) {
    __m512i t = _mm512_set1_epi32(A->pre[m][b][j]);
    const int8_t *a = A->qs[m] + b * sizeof(block_q8_K) + 16 * j;
#pragma GCC unroll 4
    for (int tt = 0; tt < 4; tt++) t = _mm512_dpbusd_epi32(t, u[tt], bcast32(a + 4 * tt));
    return t;
}

/* One super-block (x-block xb, activation block b) of one 16-row group:
 * acc[m] += its contribution for the MR activation rows. */
INLINE void gemv_sb(int wt, int cbits, int wide, int nar, int MR, const uint8_t *xb, int64_t b, const gemv_acts *A,
                    const consts *c, __m512 acc[4]) {
    __m512i p[4];
    sel_planes(wt, xb, p);
    const __m512 dv = fp16x16(xb + d_off(wt));
    if (wt == WQ2K) {
        /* no lookup: 2-bit quants (GFNI bit extraction) times activations,
         * a sub-group's int16 sum times its scale by vpdpwssd */
        __m512i ms[4], is[4][2];
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) ms[m] = is[m][0] = is[m][1] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int pp = 0; pp < 8; pp++) {
            const __m512i w = q2k_min_pair(xb, pp, c);
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) ms[m] = _mm512_dpwssd_epi32(ms[m], w, _mm512_set1_epi32(A->pre[m][b][pp]));
        }
        __m512i sc[4];
        q2k_nibble_planes(xb + np_off(WQ2K), sc);
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            const __m512i scj = _mm512_shuffle_epi8(sc[j / 4], c->ext[j % 4]);
            const __m512i q = loadv(xb + 64 * j);
            __m512i w[4];
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) w[t] = q2_bits(q, t);
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const int8_t *a = A->qs[m] + b * sizeof(block_q8_K) + 16 * j;
                __m512i tj = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast32(a));
#pragma GCC unroll 3
                for (int t = 1; t < 4; t++) tj = _mm512_dpbusd_epi32(tj, w[t], bcast32(a + 4 * t));
                /* |tj| <= 16 * 3 * 128: its low word is the sum, the high word meets 0 */
                is[m][j % 2] = _mm512_dpwssd_epi32(is[m][j % 2], tj, scj);
            }
        }
        const __m512 dmv = _mm512_mul_ps(fp16x16(xb + Q2K_DMIN_OFF), _mm512_set1_ps(1.0f / 16.0f));
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            const __m512i s = _mm512_add_epi32(is[m][0], is[m][1]);
            const __m512 f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms[m]), dmv, _mm512_mul_ps(_mm512_cvtepi32_ps(s), dv));
            acc[m] = _mm512_fmadd_ps(f, _mm512_set1_ps(A->d[m][b]), acc[m]);
        }
    } else if (nar) {
        /* narrow books (|c| <= 15): t_j = sum c a fits int16, so its scale
         * goes in by vpdpwssd as Q2_K's does, the whole super-block sums in
         * one exact int32 and is scaled in float once */
        __m512i is[4][2], sq = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) is[m][0] = is[m][1] = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            if (j % 4 == 0) sq = _mm512_add_epi8(cb_s1_quadrant(wt, cbits, xb, j / 4, 1), _mm512_set1_epi8(1));
            __m512i u[4];
            decode_sub(wt, wide, xb, j, p, c, u);
            const __m512i scj = _mm512_shuffle_epi8(sq, c->ext[j % 4]); /* words (s_j, 0) */
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                is[m][j % 2] = _mm512_dpwssd_epi32(is[m][j % 2], cb_sub_sum(A, m, b, j, u), scj);
            }
        }
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++)
            acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(is[m][0], is[m][1])),
                                     _mm512_mul_ps(dv, _mm512_set1_ps(A->d[m][b])), acc[m]);
    } else {
        /* per sub-group: t_j, then f += t_j * s_j in
         * float (s_j exact); d and the activation scale once per block */
        __m512 f[4];
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) f[m] = _mm512_setzero_ps();
        __m512i s1q = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            if (j % 4 == 0) s1q = cb_s1_quadrant(wt, cbits, xb, j / 4, 0);
            __m512i u[4];
            decode_sub(wt, wide, xb, j, p, c, u);
            const __m512 sf = cb_sf(s1q, j, c);
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                f[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(cb_sub_sum(A, m, b, j, u)), sf, f[m]);
            }
        }
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) acc[m] = _mm512_fmadd_ps(f[m], _mm512_mul_ps(dv, _mm512_set1_ps(A->d[m][b])), acc[m]);
    }
}

/* Y[m][n .. n + 16 NG) (=, or += with add) for NG consecutive 16-row groups
 * over kb blocks, their super-blocks interleaved (NG weight streams). */
INLINE void gemv_groups(int wt, int cbits, int wide, int nar, int MR, int NG, const uint8_t *xg, size_t gstride, int64_t kb,
                        ptrdiff_t jump, const gemv_acts *A, const consts *c, float *y, size_t ldy, int add) {
    const size_t xbs = xb_size(wt);
    __m512 acc[4][4];
    for (int g = 0; g < NG; g++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) acc[g][m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; b++)
        for (int g = 0; g < NG; g++) {
            const uint8_t *xb = xg + g * gstride + (size_t)b * xbs;
            /* near a stream's end, on into the stream the next call reads
             * (rows of K = 2048 are only 8 super-blocks long) */
            const ptrdiff_t pf = LB_KQ_GEMV_PREFETCH + ((b + 1) * (int64_t)xbs + LB_KQ_GEMV_PREFETCH > kb * (int64_t)xbs ? jump : 0);
            for (size_t o = 0; o < xbs; o += 64) _mm_prefetch((const char *)xb + pf + o, LB_KQ_PF_HINT);
            gemv_sb(wt, cbits, wide, nar, MR, xb, b, A, c, acc[g]);
        }
    for (int g = 0; g < NG; g++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            float *o = y + (size_t)m * ldy + 16 * g;
            __m512 v = acc[g][m];
            if (add) v = _mm512_add_ps(v, _mm512_loadu_ps(o));
            _mm512_storeu_ps(o, v);
        }
}

INLINE void gemv(int wt, int cbits, int wide, int nar, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                 size_t ars, int M, float *Y, size_t ldy) {
    consts c;
    consts_init(wt, 0, &c);
    const int64_t nb = K / QK_K;
    const size_t xbs = xb_size(wt);
    gemv_acts acts __attribute__((aligned(64)));
    for (int m0 = 0; m0 < M; m0 += 4) {
        const int mr = LB_MIN(4, M - m0);
        for (int64_t b0 = 0; b0 < nb; b0 += GEMV_KC) {
            const int64_t kb = LB_MIN((int64_t)GEMV_KC, nb - b0);
            for (int m = 0; m < mr; m++) {
                const block_q8_K *row = (const block_q8_K *)((const char *)A + (size_t)(m0 + m) * ars) + b0;
                acts.qs[m] = row->qs;
                for (int64_t b = 0; b < kb; b++) {
                    acts.d[m][b] = row[b].d;
                    int32_t b64[16];
                    int16_t bsp[16];
                    lb_q8_K_bsum_forms(row[b].bsums, b64, bsp);
                    if (wt == WQ2K) memcpy(acts.pre[m][b], bsp, sizeof bsp);
                    else memcpy(acts.pre[m][b], b64, sizeof b64);
                }
            }
            const size_t gstride = 16 * wrs;
            /* the next call (next 16 * GEMV_NG rows) reads the same blocks of the next groups */
            const ptrdiff_t jump = (ptrdiff_t)(GEMV_NG * gstride) - (ptrdiff_t)(kb * xbs);
            for (int n = n0; n < n1; n += 16 * GEMV_NG) {
                const uint8_t *xg = (const uint8_t *)W + (size_t)(n / 16) * gstride + (size_t)b0 * xbs;
                float *y = Y + (size_t)m0 * ldy + n;
                const int ng = LB_MIN(GEMV_NG, (n1 - n) / 16), add = b0 > 0; /* 1 .. GEMV_NG */
#define GEMV_CASE(MR)                                                                              \
    (ng == 4   ? gemv_groups(wt, cbits, wide, nar, MR, 4, xg, gstride, kb, jump, &acts, &c, y, ldy, add)       \
     : ng == 3 ? gemv_groups(wt, cbits, wide, nar, MR, 3, xg, gstride, kb, jump, &acts, &c, y, ldy, add)       \
     : ng == 2 ? gemv_groups(wt, cbits, wide, nar, MR, 2, xg, gstride, kb, jump, &acts, &c, y, ldy, add)       \
               : gemv_groups(wt, cbits, wide, nar, MR, 1, xg, gstride, kb, jump, &acts, &c, y, ldy, add))
                switch (mr) {
                case 1: GEMV_CASE(1); break;
                case 2: GEMV_CASE(2); break;
                case 3: GEMV_CASE(3); break;
                default: GEMV_CASE(4); break;
                }
#undef GEMV_CASE
            }
        }
    }
}

/* ---- GEMM: decode 48 rows x GKC super-blocks once, then every row group ---- */

enum { GKC = 2, GNV = 3 };

typedef struct {
    __m512i u[GKC][GNV][64]; /* [block][16-row third][4j + t] weight bytes */
    __m512 s[GKC][GNV][16];  /* CB: d * s_j; Q2_K: [0] d, [1] dmin / 16 */
    __m512i mp[GKC][GNV][8]; /* Q2_K: min pairs */
} gemm_buf;

INLINE void gemm_decode(int wt, int cbits, int wide, const uint8_t *xb, const consts *c, gemm_buf *buf, int b,
                        int v) {
    __m512i p[4];
    sel_planes(wt, xb, p);
    const __m512 dv = fp16x16(xb + d_off(wt));
    __m512i s1q = _mm512_setzero_si512();
    for (int j = 0; j < 16; j++) {
        decode_sub(wt, wide, xb, j, p, c, &buf->u[b][v][4 * j]);
        if (wt != WQ2K) {
            if (j % 4 == 0) s1q = cb_s1_quadrant(wt, cbits, xb, j / 4, 1);
            buf->s[b][v][j] = cb_scale(s1q, j, dv, c);
        }
    }
    if (wt == WQ2K) {
        buf->s[b][v][0] = dv;
        buf->s[b][v][1] = _mm512_mul_ps(fp16x16(xb + Q2K_DMIN_OFF), _mm512_set1_ps(1.0f / 16.0f));
        for (int pp = 0; pp < 8; pp++) buf->mp[b][v][pp] = q2k_min_pair(xb, pp, c);
    }
}

/* Y rows [0, 4) (one activation group) x 16 NV columns: += or = the kc
 * blocks of buf. */
INLINE void gemm_tile(int wt, int NV, const gemm_buf *buf, int64_t kc, const lb_block_q8_Kx4 *ab, float *Y,
                      size_t ldy, int add) {
    __m512 acc[GNV][4];
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) acc[v][m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kc; b++) {
        const lb_block_q8_Kx4 *a = ab + b;
        if (wt == WQ2K) {
            {
                __m512i ms[GNV][4];
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) ms[v][m] = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int pp = 0; pp < 8; pp++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) {
                        const __m512i av = bcast32(&a->bsp[m][2 * pp]);
#pragma GCC unroll 3
                        for (int v = 0; v < NV; v++) ms[v][m] = _mm512_dpwssd_epi32(ms[v][m], buf->mp[b][v][pp], av);
                    }
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++)
                        acc[v][m] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms[v][m]),
                                                     _mm512_mul_ps(buf->s[b][v][1], _mm512_set1_ps(a->d[m])), acc[v][m]);
            }
            __m512i is[GNV][4];
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) is[v][m] = _mm512_setzero_si512();
            for (int j = 0; j < 16; j++)
#pragma GCC unroll 4
                for (int t = 0; t < 4; t++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) {
                        const __m512i av = bcast32(a->qs[m] + 16 * j + 4 * t);
#pragma GCC unroll 3
                        for (int v = 0; v < NV; v++) is[v][m] = _mm512_dpbusd_epi32(is[v][m], buf->u[b][v][4 * j + t], av);
                    }
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++)
                    acc[v][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[v][m]),
                                                _mm512_mul_ps(buf->s[b][v][0], _mm512_set1_ps(a->d[m])), acc[v][m]);
        } else {
            __m512 f[GNV][4];
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) f[v][m] = _mm512_setzero_ps();
            for (int j = 0; j < 16; j++) {
                __m512i t[GNV][4];
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) t[v][m] = _mm512_set1_epi32(a->b64[m][j]);
#pragma GCC unroll 4
                for (int tt = 0; tt < 4; tt++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) {
                        const __m512i av = bcast32(a->qs[m] + 16 * j + 4 * tt);
#pragma GCC unroll 3
                        for (int v = 0; v < NV; v++) t[v][m] = _mm512_dpbusd_epi32(t[v][m], buf->u[b][v][4 * j + tt], av);
                    }
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) f[v][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t[v][m]), buf->s[b][v][j], f[v][m]);
            }
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) acc[v][m] = _mm512_fmadd_ps(f[v][m], _mm512_set1_ps(a->d[m]), acc[v][m]);
        }
    }
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            float *p = Y + (size_t)m * ldy + 16 * v;
            __m512 o = acc[v][m];
            if (add) o = _mm512_add_ps(o, _mm512_loadu_ps(p));
            _mm512_storeu_ps(p, o);
        }
}

INLINE void gemm(int wt, int cbits, int wide, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                 size_t ars, int M, float *Y, size_t ldy) {
    consts c;
    consts_init(wt, 0, &c);
    const int64_t nb = K / QK_K;
    const size_t xbs = xb_size(wt);
    gemm_buf bufs __attribute__((aligned(64)));
    gemm_buf *buf = &bufs;
    for (int n = n0; n < n1; n += 16 * GNV) {
        const int nv = LB_MIN(GNV, (n1 - n) / 16);
        for (int64_t b0 = 0; b0 < nb; b0 += GKC) {
            const int64_t kc = LB_MIN((int64_t)GKC, nb - b0);
            for (int64_t b = 0; b < kc; b++)
                for (int v = 0; v < nv; v++) {
                    const uint8_t *xb = (const uint8_t *)W + (size_t)((n + 16 * v) / 16) * 16 * wrs + (size_t)(b0 + b) * xbs;
                    gemm_decode(wt, cbits, wide, xb, &c, buf, (int)b, v);
                }
            /* M is a multiple of 4: whole activation groups */
            for (int m = 0; m < M; m += 4) {
                const lb_block_q8_Kx4 *ab = (const lb_block_q8_Kx4 *)((const char *)A + (size_t)(m / 4) * ars) + b0;
                float *y = Y + (size_t)m * ldy + n;
                if (nv == 3) gemm_tile(wt, 3, buf, kc, ab, y, ldy, b0 > 0);
                else if (nv == 2) gemm_tile(wt, 2, buf, kc, ab, y, ldy, b0 > 0);
                else gemm_tile(wt, 1, buf, kc, ab, y, ldy, b0 > 0);
            }
        }
    }
}

/* ---- entry points: the books in force pick the instantiation ---- */

LB_VBMI void lb_gemv_q2_Kx16_q8_K_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                                                  size_t ars, int M, float *Y, size_t ldy) {
    gemv(WQ2K, 0, 0, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}
LB_VBMI void lb_gemm_q2_Kx16_q8_Kx4_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1,
                                                    const void *A, size_t ars, int M, float *Y, size_t ldy) {
    gemm(WQ2K, 0, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}

#define CB_ENTRIES(w, WT, TYPE, KBITS)                                                                          \
    LB_VBMI void lb_gemv_##w##x16_q8_K_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1,   \
                                                       const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        const lb_cb_set *set = lb_cb_current(TYPE);                                                              \
        switch (set->cbits | set->narrow << 3) {                                                                 \
        case 2: gemv(WT, 2, 0, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                                  \
        case 3: gemv(WT, 3, 0, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                                  \
        case 8 | 2: gemv(WT, 2, 0, 1, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                              \
        case 8 | 3: gemv(WT, 3, 0, 1, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                              \
        default: gemv(WT, 4, KBITS + 4 > 6, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                     \
        }                                                                                                        \
    }                                                                                                            \
    LB_VBMI void lb_gemm_##w##x16_q8_Kx4_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                         const void *A, size_t ars, int M, float *Y,            \
                                                         size_t ldy) {                                          \
        switch (lb_cb_current(TYPE)->cbits) {                                                                    \
        case 2: gemm(WT, 2, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                                     \
        case 3: gemm(WT, 3, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                                     \
        default: gemm(WT, 4, KBITS + 4 > 6, K, W, wrs, n0, n1, A, ars, M, Y, ldy); break;                        \
        }                                                                                                        \
    }
CB_ENTRIES(cb2, WCB2, LB_TYPE_CB2, 2)
CB_ENTRIES(cb3, WCB3, LB_TYPE_CB3, 3)
#endif
