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
 *   CB, narrow books (formats/cb.h: every |s c| <= 127, what discovery
 *         makes for CB2): in the GEMV, t_j = sum c a fits int16 (C <= 8), so
 *         it is scaled by vpdpwssd with s_j as Q2_K's sub-group sums are. In
 *         the GEMM, whose decode is paid once per 48 rows and every
 *         activation group, the decode multiplies the signed centroid bytes
 *         by s (two vpmullw) and stores s c + 128: the super-block is then
 *         one exact int32 started at -128 * (sum of its activations), scaled
 *         in float once, with no min term: fewer operations per weight than
 *         Q2_K (pp512 on Zen 4 went from 0.92x to ~1.08x Q2_K's).
 * CB3 adds one shift and one vpternlogd for the third index bit.
 *
 * GEMV (decode, M < 4 plain Q8_K rows; kq_gemv_avx512_impl.h, one file per
 * weight kind): decode in registers, weights streamed once with prefetch.
 * GEMM (prefill, this file): 48 rows x GKC super-blocks
 * are decoded once into an L1 buffer of weight bytes (+ CB scale vectors,
 * Q2_K min pairs), then every 4-row activation group (lb_block_q8_Kx4) runs
 * over it with 12 accumulator chains (3 row vectors x 4 activation rows).
 * Integer sums are exact; results differ from the scalar reference only in
 * float rounding and summation order. */
#include "kernels/x86/kq_repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kq_repack_impl.h"

LB_VBMI void lb_quantize_q8_Kx4_avx512(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_Kx4 *y = vy;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int m = 0; m < 4; m++) {
            const __m512i bs = q8k_block(x + m * ldx + b * QK_K, y[b].qs[m], &y[b].d[m]);
            q8k_forms_x4(bs, y[b].b64[m], y[b].bsp[m]);
            y[b].b128[m] = -128 * _mm512_reduce_add_epi32(bs);
        }
}

/* ---- GEMM: decode 48 rows x GKC super-blocks once, then every row group ---- */

enum { GKC = 2, GNV = 3 };

typedef struct {
    __m512i u[GKC][GNV][64]; /* [block][16-row third][4j + t] weight bytes */
    __m512 s[GKC][GNV][16];  /* CB: d * s_j (narrow books: [0] d); Q2_K: [0] d, [1] dmin / 16 */
    __m512i mp[GKC][GNV][8]; /* Q2_K: min pairs */
} gemm_buf;

INLINE void gemm_decode(int wt, int cbits, int wide, int nar, const uint8_t *xb, const consts *c, gemm_buf *buf,
                        int b, int v) {
    __m512i p[4];
    sel_planes(wt, xb, c, p);
    const __m512 dv = fp16x16(xb + d_off(wt));
    __m512i s1q = _mm512_setzero_si512();
    for (int j = 0; j < 16; j++) {
        __m512i *u = &buf->u[b][v][4 * j];
        decode_sub(wt, wide, xb, j, p, c, u);
        if (wt == WQ2K) continue;
        if (j % 4 == 0) s1q = cb_s1_quadrant(wt, cbits, xb, j / 4, c);
        if (nar) { /* s c + 128: consts hold signed centroids */
            const __m512i s16 = cb_s16(s1q, j, c);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) u[t] = _mm512_xor_si512(cb_scaled(u[t], s16), _mm512_set1_epi8((char)0x80));
        } else {
            buf->s[b][v][j] = cb_scale(s1q, j, dv, c);
        }
    }
    if (wt == WQ2K || nar) buf->s[b][v][0] = dv; /* one float scale per super-block */
    if (wt == WQ2K) {
        buf->s[b][v][1] = _mm512_mul_ps(fp16x16(xb + Q2K_DMIN_OFF), _mm512_set1_ps(1.0f / 16.0f));
        for (int pp = 0; pp < 8; pp++) buf->mp[b][v][pp] = q2k_min_pair(xb, pp, c);
    }
}

/* Y rows [0, 4) (one activation group) x 16 NV columns: += or = the kc
 * blocks of buf. */
INLINE void gemm_tile(int wt, int nar, int NV, const gemm_buf *buf, int64_t kc, const lb_block_q8_Kx4 *ab,
                      float *Y, size_t ldy, int add) {
    __m512 acc[GNV][4];
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) acc[v][m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kc; b++) {
        const lb_block_q8_Kx4 *a = ab + b;
        if (wt == WQ2K || nar) {
            if (wt == WQ2K) {
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
                for (int m = 0; m < 4; m++) /* CB: removes the +128 of s c + 128 */
                    is[v][m] = wt == WQ2K ? _mm512_setzero_si512() : _mm512_set1_epi32(a->b128[m]);
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

INLINE void gemm(int wt, int cbits, int wide, int nar, int64_t K, const void *W, size_t wrs, int n0, int n1,
                 const void *A, size_t ars, int M, float *Y, size_t ldy) {
    consts c;
    consts_init(wt, nar, &c);
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
                    gemm_decode(wt, cbits, wide, nar, xb, &c, buf, (int)b, v);
                }
            /* M is a multiple of 4: whole activation groups */
            for (int m = 0; m < M; m += 4) {
                const lb_block_q8_Kx4 *ab = (const lb_block_q8_Kx4 *)((const char *)A + (size_t)(m / 4) * ars) + b0;
                float *y = Y + (size_t)m * ldy + n;
                if (nv == 3) gemm_tile(wt, nar, 3, buf, kc, ab, y, ldy, b0 > 0);
                else if (nv == 2) gemm_tile(wt, nar, 2, buf, kc, ab, y, ldy, b0 > 0);
                else gemm_tile(wt, nar, 1, buf, kc, ab, y, ldy, b0 > 0);
            }
        }
    }
}

/* ---- entry points: the books in force pick the instantiation (GEMVs:
 * kq_gemv_q2k_avx512.c, kq_gemv_cb_avx512.c) ---- */

LB_VBMI void lb_gemm_q2_Kx16_q8_Kx4_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1,
                                                    const void *A, size_t ars, int M, float *Y, size_t ldy) {
    gemm(WQ2K, 0, 0, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}

#define GEMM_CASE(cbits, wide, nar) gemm(wt, cbits, wide, nar, K, W, wrs, n0, n1, A, ars, M, Y, ldy)
#define CB_GEMM(w, WT, TYPE, KBITS)                                                                             \
    LB_VBMI void lb_gemm_##w##x16_q8_Kx4_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                         const void *A, size_t ars, int M, float *Y,            \
                                                         size_t ldy) {                                          \
        const int wt = WT;                                                                                       \
        LB_CB_BOOK_CASES(TYPE, KBITS, GEMM_CASE);                                                                \
    }
CB_GEMM(cb2, WCB2, LB_TYPE_CB2, 2)
CB_GEMM(cb3, WCB3, LB_TYPE_CB3, 3)
#endif
