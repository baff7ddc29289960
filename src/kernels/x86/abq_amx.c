/* AMX-INT8 GEMM (prefill) of ABQ's code layouts (formats/abq.h: ABQ_W{q}_C4
 * / _C2, made at load). Integer group dots exact, their scaled sum in float:
 * within a float rounding bound of the reference (tests/test_abq.c), not bit
 * for bit like the other ABQ kernels.
 *
 * y = da sum_g dw_g I_g for a weight row n and an activation row m, with the
 * exact integer group dot
 *     I_g = sum_j (cw_j - zw)(ca_j - za) = T_g + (o - za)(sw_g - 128 zw),
 *     T_g = sum_j (cw_j - zw)(ca_j - o):
 * the activation bytes are packed as ca - o, o = za where that fits a signed
 * byte (p <= 7: I_g = T_g), else o = 128 (the blocks' own bytes, p = 8: the
 * correction c1 S, c1 = o - za, S = sw - 128 zw, added to T_g on the tile
 * unit: one more tdpbssd per C tile, K = 32, of a resident tile whose row
 * holds c1 as two halves of 16 bytes (c1a + c1b = c1, both in [-64, 64]) by
 * a tile whose column holds S as 16 bytes twice (|S| <= 1920: 15 bytes
 * round(S / 16), one the rest), exact in int32); cw - zw fits a byte too.
 * T_g of 16 x 16 outputs is two tdpbssd (K = 64 each), and |I_g| <= 128 *
 * 15 * 255 < 2^24, exact in float. The activation scale da is the token's,
 * so it leaves the sum. What is left per group is one float fused
 * multiply-add per output, dw_g times the int32 tile: where the reference
 * sums d I in double in group order, this sums in float (a few 2^-24 of
 * sum_g |dw_g I_g| per group, bounded in the test). The correction added in
 * float after the sum instead (one number per column times one per row)
 * cancelled large terms at p = 8 (errors of 1e-5 of rms y); in int32 by one
 * vpdpwssd per output row in the sums it was exact but made them 25 %
 * dearer (W4A8 pp512 0.8x of this).
 *
 * Blocking (the driver hands this whole_m kernel its thread's whole range of
 * weight rows and up to 1024 activation rows):
 *   the activation bytes are packed once per call into A tiles (1 KiB each,
 *   half a group of 16 rows), a K chunk of KC groups of every 16 rows
 *   contiguous;
 *   columns in blocks of CB, and per block, per K chunk, per pair of
 *   16-column weight tiles: the pair's KC groups decoded into B tiles (codes
 *   minus zero point, transposed by dwords into the VNNI layout) beside the
 *   groups' scales, then every 16-row activation tile passes over them: per
 *   group two C tiles (1 x 2: each A tile loaded once for both columns
 *   tiles) stored into a ring, whose sums into the tile's partial sums are
 *   taken after the next activation tile's products are issued, so the
 *   vector work overlaps the tile unit's;
 *   the partial sums of the block (M x CB floats) and the chunk's A tiles (M
 *   KC 128 bytes) stay in L2 while the block's pairs pass, the pair's chunk
 *   of B tiles (KC x 4 KiB) in L1. The next pair's weight rows are
 *   prefetched into L2 a few rows per activation tile.
 *
 * Measured (Intel Xeon SPR-class VM, bench/kernels -m 512, 2 threads; docs/
 * abq.md "Float sums on AMX"): at p = 4, 2316-2546 GOPS at 5632 x 2048 and
 * 2048 x 5632, the AMX-BF16 Q4_0 GEMM's rate, against 1466-1719 for the
 * double sums bit-identical to the reference it replaces; at p = 8 (the
 * correction on the tile unit) 2208-2335. The per-group tile stores and
 * sums still take more time than the products (products alone: 2.5x as
 * fast); KC = 2 and CB = 256 were the best of KC 1..8 and CB 128..1024;
 * 2 x 2 output tiles per group were no faster than 1 x 2. Rows past a
 * multiple of 16, and decode (M < 16), go to the AVX-512 level's kernel
 * (abq_codes_avx512.c: its VNNI GEMM and decode). */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "kernels/x86/amx_config.h"
#include "kernels/x86/prefetch_x86.h"
#include "kernels/thread_scratch.h"

#define LB_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE LB_AMX static inline __attribute__((always_inline))

/* Groups per K chunk, columns per block (a multiple of 32) */
enum { KC = 2, CB = 256 };

/* Tiles 0, 1: C (16 x 16 int32, column tiles a and b); 4, 7: A (16 rows x
 * 64 bytes, weights 0..63 and 64..127 of a group); 5, 6: B (column tiles a,
 * b, reloaded per K half); 2, 3: the p = 8 correction's A (16 rows x 32
 * bytes, c1) and B (K = 32: 8 rows x 64 bytes, S). */
static const lb_amx_config abq_cfg __attribute__((aligned(64))) = {
    .palette_id = 1,
    .colsb = {64, 64, 32, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 8, 16, 16, 16, 16},
};

/* One group of 16 weight rows, decoded. */
typedef struct {
    int8_t b[2][16][64]; /* B tiles of weights 0..63 and 64..127 */
    float d[16];         /* the rows' scales (0 past the matrix) */
} wgroup;
static_assert(sizeof(wgroup) == 2112 && sizeof(wgroup) % 64 == 0, "ABQ AMX weight group");
/* Beside it (a wgroup of 2176 bytes measured 5 % slower end to end): the
 * rows' S = sw - 128 z (|S| <= 1920) as 16 bytes summing to S, twice: the B
 * tile (K = 32) of the activation offset's correction c1 S (tile 3). */
typedef struct {
    int8_t b[8][64];
} wcorr;

/* 16 rows of 16 dwords transposed: out[kk] dword n = r[n] dword kk. */
INLINE void transpose16(__m512i r[16]) {
    __m512i a[16], b[16];
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* b[4i + c]: lane L = column 4L + c of rows 4i..4i+3 */
        b[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i s0 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x88), s1 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xDD);
        const __m512i s2 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x88);
        const __m512i s3 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xDD);
        r[c] = _mm512_shuffle_i32x4(s0, s2, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(s0, s2, 0xDD);
        r[4 + c] = _mm512_shuffle_i32x4(s1, s3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(s1, s3, 0xDD);
    }
}

/* Weights 0..63 (h[0]) and 64..127 (h[1]) of a group as bytes c - z, in order. */
INLINE void group_bytes(int w, const uint8_t *qs, int z, __m512i h[2]) {
    const __m256i zv = _mm256_set1_epi8((char)z);
    __m256i c[4];
    lb_abq_group_codes(qs, w, c);
    for (int i = 0; i < 2; i++)
        h[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_sub_epi8(c[2 * i], zv)), _mm256_sub_epi8(c[2 * i + 1], zv),
                                  1);
}

/* Rows [n0, n1) (n1 - n0 <= 16), groups [g0, g0 + kc), into wg[0..kc)
 * (rows past n1: zeros). */
INLINE void decode_rows(int w, const uint8_t *W, size_t w_row_size, int n0, int n1, int64_t nb, int64_t g0, int64_t kc,
                        wgroup *wg, wcorr *wc) { /* wc: NULL where no activation row needs the correction */
    lb_abq_code_row p[16];
    for (int r = 0; r < n1 - n0; r++) p[r] = lb_abq_code_row_of(W + (size_t)(n0 + r) * w_row_size, nb);
    const int qb = 16 * w;
    for (int64_t j = 0; j < kc; j++) {
        const int64_t g = g0 + j;
        __m512i h[2][16];
        int32_t S[16] __attribute__((aligned(64)));
        for (int r = 0; r < 16; r++) {
            if (r < n1 - n0) {
                __m512i t[2];
                group_bytes(w, p[r].qs + (size_t)qb * (size_t)g, p[r].z[g], t);
                h[0][r] = t[0], h[1][r] = t[1];
                wg[j].d[r] = p[r].d[g];
                S[r] = p[r].sw[g] - 128 * p[r].z[g];
            } else {
                h[0][r] = h[1][r] = _mm512_setzero_si512();
                wg[j].d[r] = 0.0f;
                S[r] = 0;
            }
        }
        for (int i = 0; i < 2; i++) {
            transpose16(h[i]);
            for (int kk = 0; kk < 16; kk++) _mm512_store_si512(wg[j].b[i][kk], h[i][kk]);
        }
        /* S (|S| <= 1920) as 16 bytes: q = round(S / 16) 15 times (|q| <= 120)
         * and q + e, e = S - 16 q (|e| <= 8, so |q + e| <= 127 where |S| <= 1920):
         * K slots 4kk .. 4kk + 3 of column r are dword r of tile row kk */
        if (!wc) continue;
        const __m512i Sv = _mm512_load_si512(S), q = _mm512_srai_epi32(_mm512_add_epi32(Sv, _mm512_set1_epi32(8)), 4);
        const __m512i q8 = _mm512_and_si512(q, _mm512_set1_epi32(0xFF));
        const __m512i last = _mm512_sub_epi32(Sv, _mm512_mullo_epi32(q, _mm512_set1_epi32(15)));
        const __m512i qqqq = _mm512_mullo_epi32(q8, _mm512_set1_epi32(0x01010101));
        const __m512i qqql = _mm512_or_si512(_mm512_mullo_epi32(q8, _mm512_set1_epi32(0x010101)),
                                             _mm512_slli_epi32(last, 24));
        for (int kk = 0; kk < 8; kk++) _mm512_store_si512(wc[j].b[kk], kk % 4 == 3 ? qqql : qqqq);
    }
}

/* Software prefetch into L2 of rows [n0, n1)'s groups [g0, g0 + kc): their
 * codes and heads (the decode otherwise waits on memory). */
INLINE void prefetch_rows(int w, const uint8_t *W, size_t w_row_size, int n0, int n1, int64_t nb, int64_t g0,
                          int64_t kc) {
    for (int n = n0; n < n1; n++) {
        const lb_abq_code_row p = lb_abq_code_row_of(W + (size_t)n * w_row_size, nb);
        _mm_prefetch((const char *)(p.d + g0), _MM_HINT_T1);
        _mm_prefetch((const char *)(p.sw + g0), _MM_HINT_T1);
        _mm_prefetch((const char *)(p.z + g0), _MM_HINT_T1);
        lb_prefetch_span(p.qs + (size_t)(16 * w) * (size_t)g0, (size_t)(16 * w * kc), 1);
    }
}

/* A group's two C tiles (columns 0-15 and 16-31) as stored */
typedef int32_t cslot[2][16][16];

/* Activation bytes packed per K chunk: within chunk c (groups c KC ..), the
 * 16-row tile s, its group j, half h (weights 64h .. 64h + 63), row r at
 * chunk base + ((s kc + j) ACT_GROUP + h ACT_GROUP / 2 + 64 r), the chunk
 * base c KC (M / 16) ACT_GROUP: the A tiles an activation tile needs for a
 * chunk are contiguous, and so is the chunk. */
enum { ACT_GROUP = 16 * LB_ABQ_G };

/* Group j's products of activation tile at and column tiles wa, wb into C
 * tiles 0, 1, with corr the correction c1 S (tile 2, the activation tile's
 * c1 halves, loaded by the caller, by tile 3, wca / wcb), stored into slot
 * s. */
INLINE void group_dot(const uint8_t *at, const wgroup *wa, const wgroup *wb, int corr, const wcorr *wca,
                      const wcorr *wcb, cslot *s) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_loadd(4, at, 64);
    _tile_loadd(5, wa->b[0], 64);
    _tile_dpbssd(0, 4, 5);
    _tile_loadd(6, wb->b[0], 64);
    _tile_dpbssd(1, 4, 6);
    _tile_loadd(7, at + ACT_GROUP / 2, 64);
    _tile_loadd(5, wa->b[1], 64);
    _tile_dpbssd(0, 7, 5);
    _tile_loadd(6, wb->b[1], 64);
    _tile_dpbssd(1, 7, 6);
    if (corr) {
        _tile_loadd(3, wca->b, 64);
        _tile_dpbssd(0, 2, 3);
        _tile_loadd(3, wcb->b, 64);
        _tile_dpbssd(1, 2, 3);
    }
    _tile_stored(0, (*s)[0], 64);
    _tile_stored(1, (*s)[1], 64);
}

/* One activation tile's sums over a chunk of kc groups (slots cs[0..kc),
 * weights wa[0..kc), wb[0..kc)): the 32 partial sum rows acc (columns 0-15,
 * then 16-31) continue unless first and go back there, or when last, da
 * times them to Y. Each row's sum stays in a register over the chunk. */
INLINE void chunk_sums(const cslot *cs, int64_t kc, const wgroup *wa, const wgroup *wb, int first, int last,
                       __m512 *acc, const float *da, float *Y, size_t ldy, __mmask16 ma, __mmask16 mb) {
    for (int h = 0; h < 2; h++) {
        const wgroup *wh = h ? wb : wa;
        __m512 s[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++) s[r] = first ? _mm512_setzero_ps() : acc[16 * h + r];
        for (int64_t j = 0; j < kc; j++) {
            const __m512 d = _mm512_load_ps(wh[j].d);
#pragma GCC unroll 16
            for (int r = 0; r < 16; r++)
                s[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_load_si512(cs[j][h][r])), s[r]);
        }
        if (!last) {
#pragma GCC unroll 16
            for (int r = 0; r < 16; r++) acc[16 * h + r] = s[r];
            continue;
        }
        const __mmask16 mk = h ? mb : ma;
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            _mm512_mask_storeu_ps(Y + (size_t)r * ldy + 16 * h, mk, _mm512_mul_ps(s[r], _mm512_set1_ps(da[r])));
    }
}

/* The call's first M16 activation rows (a multiple of 16) packed as bytes ca
 * - o, with da; ac (per 16 rows: the A tile of the correction, row r = 16
 * bytes c1a, 16 bytes c1b, c1a + c1b = c1 = o - za, each in [-64, 64]) and
 * off (per 16 rows: some c1 is not 0). */
INLINE void pack_act(const uint8_t *A, size_t a_row_size, int M16, int64_t nb, uint8_t *ap, int8_t (*ac)[16][32],
                     uint8_t *off, float *da) {
    const size_t nrt = (size_t)M16 / 16;
    for (int m = 0; m < M16; m++) {
        const block_abq_act *a = (const block_abq_act *)(A + (size_t)m * a_row_size);
        const int o = a->p <= 7 ? a->z : 128, c1 = o - a->z, c1a = c1 / 2;
        const __m512i shift = _mm512_set1_epi8((char)(128 - o)); /* ca - o = (ca - 128) + (128 - o), in a byte */
        if (m % 16 == 0) off[m / 16] = 0;
        off[m / 16] |= c1 != 0;
        memset(ac[m / 16][m % 16], c1a, 16);
        memset(ac[m / 16][m % 16] + 16, c1 - c1a, 16);
        da[m] = a->d;
        for (int64_t g = 0; g < nb; g++) {
            const int64_t c0 = g - g % KC, kc = LB_MIN(KC, nb - c0);
            uint8_t *dst = ap + ((size_t)c0 * nrt + (size_t)(m / 16) * (size_t)kc + (size_t)(g - c0)) * ACT_GROUP +
                           64 * (size_t)(m % 16);
            const __m512i lo = _mm512_loadu_si512(a[g].c), hi = _mm512_loadu_si512(a[g].c + 64);
            _mm512_store_si512(dst, _mm512_add_epi8(lo, shift));
            _mm512_store_si512(dst + ACT_GROUP / 2, _mm512_add_epi8(hi, shift));
        }
    }
}

/* The whole call: 16-row activation tiles on AMX. Returns the first row left
 * to the caller (0 when the scratch cannot be had). */
INLINE int gemm(int w, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size,
                int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    const int M16 = M & ~15;
    if (M16 == 0 || nb == 0) return 0;
    const int nrt = M16 / 16; /* activation tiles */
    const size_t act_bytes = (size_t)M16 * (size_t)nb * LB_ABQ_G, w_bytes = 2 * KC * (sizeof(wgroup) + sizeof(wcorr));
    const size_t acc_bytes = (size_t)nrt * (CB / 32) * 32 * sizeof(__m512), ring_bytes = 2 * KC * sizeof(cslot);
    const size_t corr_bytes = (size_t)nrt * 16 * 32;
    uint8_t *buf = lb_thread_scratch(act_bytes + w_bytes + acc_bytes + ring_bytes + corr_bytes +
                                     (size_t)M16 * sizeof(float) + (size_t)nrt);
    if (!buf) return 0;
    uint8_t *ap = buf;
    wgroup *wa = (wgroup *)(buf + act_bytes), *wb = wa + KC;
    wcorr *ca = (wcorr *)(wb + KC), *cb = ca + KC;
    __m512 *accs = (__m512 *)(buf + act_bytes + w_bytes);
    cslot *ring = (cslot *)(buf + act_bytes + w_bytes + acc_bytes);
    int8_t(*acorr)[16][32] = (int8_t(*)[16][32])(buf + act_bytes + w_bytes + acc_bytes + ring_bytes);
    float *da = (float *)(buf + act_bytes + w_bytes + acc_bytes + ring_bytes + corr_bytes);
    uint8_t *off = (uint8_t *)(da + M16);
    pack_act(A, a_row_size, M16, nb, ap, acorr, off, da);
    int any_off = 0;
    for (int t = 0; t < nrt; t++) any_off |= off[t];
    _tile_loadconfig(&abq_cfg);
    for (int b0 = n0; b0 < n1; b0 += CB) {
        const int b1 = LB_MIN(b0 + CB, n1);
        for (int64_t g0 = 0; g0 < nb; g0 += KC) {
            const int64_t kc = LB_MIN(KC, nb - g0);
            const uint8_t *ac = ap + (size_t)g0 * (size_t)nrt * ACT_GROUP; /* the chunk's A tiles */
            for (int nt = b0, pi = 0; nt < b1; nt += 32, pi++) {
                const int ne = LB_MIN(nt + 32, b1), nh = LB_MIN(nt + 16, ne);
                const __mmask16 ma = nh - nt >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nh - nt)) - 1);
                const __mmask16 mb = ne - nh >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (ne - nh)) - 1);
                /* a lone last column tile runs beside zero weights (d = 0) */
                decode_rows(w, W, w_row_size, nt, nh, nb, g0, kc, wa, any_off ? ca : NULL);
                decode_rows(w, W, w_row_size, nh, ne, nb, g0, kc, wb, any_off ? cb : NULL);
                /* the next pair's rows of the chunk (or the next chunk's
                 * first pair, or the next block's), a few per activation tile */
                const int pn = ne < b1 ? ne : g0 + KC < nb ? b0 : b1;
                const int64_t pg = ne < b1 ? g0 : g0 + KC < nb ? g0 + KC : 0;
                const int pe = LB_MIN(pn + 32, n1), rpt = (pe - pn + nrt - 1) / nrt;
                __m512 *acc = accs + (size_t)pi * (size_t)nrt * 32;
                /* per activation tile t: its kc groups' products into ring
                 * half t % 2, then the sums of tile t - 1 from the other half */
                for (int t = 0; t <= nrt; t++) {
                    if (t < nrt) {
                        const int r0 = pn + t * rpt;
                        if (r0 < pe)
                            prefetch_rows(w, W, w_row_size, r0, LB_MIN(r0 + rpt, pe), nb, pg, LB_MIN(KC, nb - pg));
                        const uint8_t *at = ac + (size_t)t * (size_t)kc * ACT_GROUP;
                        cslot *rs = &ring[(t % 2) * KC];
                        if (off[t]) { /* two copies: the correction's branch out of the group loop */
                            _tile_loadd(2, acorr[t], 32);
                            for (int64_t j = 0; j < kc; j++)
                                group_dot(at + (size_t)j * ACT_GROUP, &wa[j], &wb[j], 1, &ca[j], &cb[j], &rs[j]);
                        } else {
                            for (int64_t j = 0; j < kc; j++)
                                group_dot(at + (size_t)j * ACT_GROUP, &wa[j], &wb[j], 0, NULL, NULL, &rs[j]);
                        }
                    }
                    if (t > 0) {
                        const int m = 16 * (t - 1);
                        chunk_sums(&ring[((t - 1) % 2) * KC], kc, wa, wb, g0 == 0, g0 + kc == nb,
                                   acc + (size_t)(t - 1) * 32, da + m, Y + (size_t)m * ldy + nt, ldy, ma, mb);
                    }
                }
            }
        }
    }
    _tile_release();
    return M16;
}

#define ABQ_CODES_AMX(name, NAME, W)                                                                             \
    LB_AMX void lb_gemm_##name##_amx(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, \
                                     size_t a_row_size, int M, float *Y, size_t ldy) {                            \
        const int done = gemm(W, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                            \
        if (done < M)                                                                                            \
            lb_gemm_##name##_avx512(K, Wt, w_row_size, n0, n1, (const uint8_t *)A + (size_t)done * a_row_size,    \
                                  a_row_size, M - done, Y + (size_t)done * ldy, ldy);                             \
    }
LB_ABQ_CODES_LIST(ABQ_CODES_AMX)
#undef ABQ_CODES_AMX

#endif
