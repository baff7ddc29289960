/* AVX-512 VNNI GEMM (prefill) on the 16-row layouts of Q3_K, Q4_K, Q5_K,
 * Q6_K and IQ4_XS (formats/repack_kx.h) against 4-row Q8_K activation
 * groups (lb_block_q8_Kx4), and their 4-row activation quantizer.
 *
 * 48 rows x GKC super-blocks are decoded once (kx_avx512_impl.h) into an
 * L1 buffer of unsigned weight bytes, float sub-block scales d * sc_j and
 * the mins, then every 4-row activation group runs over it: 3 row vectors
 * x 4 activation rows = 12 vpdpbusd chains, one per (16 rows, activation
 * row), restarted per sub-block at -bias * its activation sum; a
 * sub-block's int32 is exact and scaled in float (cvt + fma), the mins
 * (Q4_K, Q5_K) are 4 vpdpwssd per super-block. Per 32 weights x 16 rows x
 * 4 activation rows: 32 VNNI and 8 float ops (sub-blocks of 32) or 16 float
 * ops (Q6_K: sub-blocks of 16; Q3_K's scales are folded into its weight
 * bytes, q3_fold, so it takes 2 per 256 weights). The decode is paid once
 * per 48 rows and call, not per activation group (as kq_repack_avx512.c's
 * GEMM). */
#include "kernels/x86/kx_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kx_avx512_impl.h"

enum { GKC = 2, GNV = 3 };

typedef struct {
    __m512i u[GKC][GNV][64]; /* [super-block][16-row third][4-weight column] weight bytes */
    __m512 s[GKC][GNV][16];  /* d * sc_j */
    __m512 dmin[GKC][GNV];   /* Q4_K, Q5_K */
    __m512i mp[GKC][GNV][4]; /* their min pairs */
} gemm_buf;

/* Q3_K folded: w = q * sc_j + 127 as one unsigned byte. q in [-4, 3] and
 * sc_j in [-32, 31] give q sc_j in [-124, 128], so w in [3, 255]: every
 * weight carries its sub-block scale and the whole super-block is one exact
 * int32 chain started at -127 * (its activation sum), scaled in float once
 * (the reference's sumi = sum_j sc_j isum_j, formed in another order). Per
 * 16 rows x 256 weights x 4 activation rows that drops 16 cvt + 16 fma + 16
 * chain starts beside 256 VNNI; the decode's two vpmullw per vector are
 * paid once per 48 rows and call. u: bytes q + 4, sc: the lane's scale. */
INLINE __m512i q3_fold(__m512i u, __m512i sc) {
    const __m512i lo16 = _mm512_set1_epi32(0x0000FFFF), bytes = _mm512_set1_epi16(0x00FF);
    const __m512i s16 = _mm512_or_si512(_mm512_and_si512(sc, lo16), _mm512_slli_epi32(sc, 16));
    /* u sc + 127 - 4 sc = (u - 4) sc + 127, per 16-bit half of the bytes */
    const __m512i c16 = _mm512_sub_epi16(_mm512_set1_epi16(127), _mm512_slli_epi16(s16, 2));
    const __m512i even = _mm512_add_epi16(_mm512_mullo_epi16(_mm512_and_si512(u, bytes), s16), c16);
    const __m512i odd = _mm512_add_epi16(_mm512_mullo_epi16(_mm512_srli_epi16(u, 8), s16), c16);
    return _mm512_or_si512(even, _mm512_slli_epi16(odd, 8));
}

INLINE void gemm_decode(int kt, const uint8_t *xb, gemm_buf *buf, int b, int v) {
    for (int g = 0; g < 4; g++) dec64(kt, xb, g, &buf->u[b][v][16 * g]);
    kx_sstate S;
    kx_sload(kt, xb, &S);
    const __m512 d = fp16x16(xb + kx_d_off(kt));
    if (kt == KQ3) {
        /* vector t holds weights 4t..4t+3: sub-block t / 4 */
        for (int j = 0; j < 16; j++) {
            const __m512i sc = kx_sc(kt, &S, j);
            for (int t = 4 * j; t < 4 * j + 4; t++) buf->u[b][v][t] = q3_fold(buf->u[b][v][t], sc);
        }
        buf->s[b][v][0] = d;
        return;
    }
    for (int j = 0; j < kx_nsub(kt); j++) buf->s[b][v][j] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(kx_sc(kt, &S, j)));
    if (kx_has_min(kt)) {
        kx_mp(&S, buf->mp[b][v]);
        buf->dmin[b][v] = fp16x16(xb + KX_DMIN_OFF);
    }
}

/* acc (one activation group x 16 NV columns) += the kc super-blocks of
 * buf, Q3_K folded: one chain per super-block (q3_fold) */
INLINE void tile_folded(int NV, const gemm_buf *buf, int64_t kc, const lb_block_q8_Kx4 *ab, __m512 acc[GNV][4]) {
    for (int64_t b = 0; b < kc; b++) {
        /* folded Q3_K: one chain per super-block (q3_fold) */
        const lb_block_q8_Kx4 *a = ab + b;
        __m512i s[GNV][4];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            const __m512i start = _mm512_set1_epi32(a->b128[m] / 128 * 127);
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++) s[v][m] = start;
        }
#pragma GCC unroll 4
        for (int t = 0; t < 64; t++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                const __m512i av = bcast32(a->qs[m] + 4 * t);
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++) s[v][m] = _mm512_dpbusd_epi32(s[v][m], buf->u[b][v][t], av);
            }
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++)
                acc[v][m] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s[v][m]), buf->s[b][v][0]),
                                            _mm512_set1_ps(a->d[m]), acc[v][m]);
    }
}

/* The same for the other kinds: one chain per sub-block, scaled in float */
INLINE void tile_sub(int kt, int NV, const gemm_buf *buf, int64_t kc, const lb_block_q8_Kx4 *ab, __m512 acc[GNV][4]) {
    const int SB = kx_sb(kt), NS = kx_nsub(kt), bias = kx_bias(kt);
    for (int64_t b = 0; b < kc; b++) {
        const lb_block_q8_Kx4 *a = ab + b;
        /* the activation sums this block starts from (kx_act_pre), per row */
        int32_t pre[4][16];
        for (int m = 0; m < 4; m++) {
            int16_t bs[16];
            for (int j = 0; j < 16; j++) bs[j] = (int16_t)(a->b64[m][j] / -64);
            kx_act_pre(kt, bs, pre[m]);
        }
        __m512 f[GNV][4];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) f[v][m] = _mm512_setzero_ps();
        for (int j = 0; j < NS; j++) {
            __m512i s[GNV][4];
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) s[v][m] = bias ? _mm512_set1_epi32(pre[m][j]) : _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int t = 0; t < SB / 4; t++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) {
                    const __m512i av = bcast32(a->qs[m] + SB * j + 4 * t);
#pragma GCC unroll 3
                    for (int v = 0; v < NV; v++)
                        s[v][m] = _mm512_dpbusd_epi32(s[v][m], buf->u[b][v][(SB / 4) * j + t], av);
                }
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) f[v][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[v][m]), buf->s[b][v][j], f[v][m]);
        }
        if (kx_has_min(kt)) {
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
                for (int m = 0; m < 4; m++) {
                    __m512i ms = _mm512_setzero_si512();
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) ms = _mm512_dpwssd_epi32(ms, buf->mp[b][v][i], _mm512_set1_epi32(pre[m][i]));
                    f[v][m] = _mm512_fnmadd_ps(buf->dmin[b][v], _mm512_cvtepi32_ps(ms), f[v][m]);
                }
        }
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) acc[v][m] = _mm512_fmadd_ps(f[v][m], _mm512_set1_ps(a->d[m]), acc[v][m]);
    }
}

/* Y rows [0, 4) (one activation group) x 16 NV columns: += or = the kc
 * super-blocks of buf. */
INLINE void gemm_tile(int kt, int NV, const gemm_buf *buf, int64_t kc, const lb_block_q8_Kx4 *ab, float *Y,
                      size_t ldy, int add) {
    __m512 acc[GNV][4];
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) acc[v][m] = _mm512_setzero_ps();
    if (kt == KQ3) tile_folded(NV, buf, kc, ab, acc);
    else tile_sub(kt, NV, buf, kc, ab, acc);
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

INLINE void gemm(int kt, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars, int M,
                 float *Y, size_t ldy) {
    const int64_t nb = K / QK_K;
    const size_t xbs = kx_xbs(kt);
    gemm_buf bufs __attribute__((aligned(64)));
    gemm_buf *buf = &bufs;
    for (int n = n0; n < n1; n += 16 * GNV) {
        const int nv = LB_MIN(GNV, (n1 - n) / 16);
        for (int64_t b0 = 0; b0 < nb; b0 += GKC) {
            const int64_t kc = LB_MIN((int64_t)GKC, nb - b0);
            for (int64_t b = 0; b < kc; b++)
                for (int v = 0; v < nv; v++)
                    gemm_decode(kt, (const uint8_t *)W + (size_t)((n + 16 * v) / 16) * 16 * wrs + (size_t)(b0 + b) * xbs,
                                buf, (int)b, v);
            /* M is a multiple of 4: whole activation groups */
            for (int m = 0; m < M; m += 4) {
                const lb_block_q8_Kx4 *ab = (const lb_block_q8_Kx4 *)((const char *)A + (size_t)(m / 4) * ars) + b0;
                float *y = Y + (size_t)m * ldy + n;
                if (nv == 3) gemm_tile(kt, 3, buf, kc, ab, y, ldy, b0 > 0);
                else if (nv == 2) gemm_tile(kt, 2, buf, kc, ab, y, ldy, b0 > 0);
                else gemm_tile(kt, 1, buf, kc, ab, y, ldy, b0 > 0);
            }
        }
    }
}

#define KX_GEMM(w, KT)                                                                                          \
    LB_KX512 void lb_gemm_##w##x16_q8_Kx4_16x4_avx512vnni(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                          const void *A, size_t ars, int M, float *Y,           \
                                                          size_t ldy) {                                         \
        gemm(KT, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                                         \
    }
KX_GEMM(q3_K, KQ3)
KX_GEMM(q4_K, KQ4)
KX_GEMM(q5_K, KQ5)
KX_GEMM(q6_K, KQ6)
KX_GEMM(iq4_xs, KIQ4)
#endif
