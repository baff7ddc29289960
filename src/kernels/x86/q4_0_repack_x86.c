/* AVX2 (+FMA, F16C) GEMV / GEMM on the interleaved layouts of
 * formats/repack.h, for Q4_0, IQ4_NL (MXFP4_NL) and Q8_0 weights against Q8_0
 * activations.
 *
 * Unit of work: 8 output rows, as two "quads" of 4 rows (the two halves of
 * an 8x8 group, or two consecutive 4-row groups). One 32-byte load gives a
 * quad's 4 rows x 8 weight bytes: in 8-byte chunks (4x8, 8x8) each 64-bit
 * lane is one row, in 4-byte chunks (4x4) each 128-bit lane holds 4 rows x 4
 * bytes. Activations are broadcast to match (vpbroadcastq, plus a vpshufb
 * for 4x4), so every lane multiplies its own row and no horizontal sum is
 * needed inside the block loop: the two quads are merged once per block by
 * one hadd (or a 128-bit lane swap for 4x4), giving 8 rows in one vector.
 *
 * Products without AVX-VNNI: vpmaddubsw multiplies unsigned x signed bytes
 * into int16 pairs.
 *  - Q4_0: the nibbles are used unsigned (q = w + 8, 0..15), undoing the
 *    layout's 0x88 toggle with one xor per 32 bytes. |q * a| <= 15 * 127, so
 *    the four products of a block add up in int16 without saturation, and
 *    one vpmaddwd per quad finishes the block; the +8 bias is removed with
 *    the activation block sums: sum(w*a) = sum(q*a) - 8 * sum(a). That is
 *    about half the multiplies of the signed-times-16 decode (whose pair sums
 *    reach 2*128*127 and must be widened after every vpmaddubsw); the
 *    toggled layout stays the portable format (Arm's sdot uses it directly).
 *  - Q8_0 quants known to lie in [-16, 15] (QIGen's GQ tiles, quants
 *    q - z: kernels/qigen.c) take the same road, stored biased as
 *    u = w + 16 (0..31) in the 8x8 layout by lb_pack_q8_0x4_u5x8_avx2:
 *    sum(w*a) = sum(u*a) - 16 * sum(a). A vpmaddubsw pair sum is then at
 *    most 2 * 31 * 127 = 7874 and the four of a block 31496, so the int16
 *    stage is exact; each quad is widened before the two are added (two
 *    quads' worth would not fit).
 *  - IQ4_NL: vpshufb looks the 16-entry codebook up in a register (MXFP4_NL:
 *    the same with MXFP4's table, formats/mxfp4.h); IQ4_NL
 *    and Q8_0 multiply with the sign trick (|w| x sign(a, w)), widening each
 *    product to int32.
 * Float scaling: one FMA per block and row of activations.
 * With AVX-VNNI (Alder Lake and later without AVX-512) the same kernels use
 * VEX vpdpbusd for the products (the *_avxvnni entries, chosen when the CPU
 * has it): four products straight into int32, no int16 stage. */
#include "kernels/x86/q4_0_repack_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "formats/repack.h"
#include "kernels/cpu.h"
#include "kernels/x86/prefetch_x86.h"
#include "kernels/x86/q8_block_avx2.h"

#define LB_AVX2 __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_AVX2 static inline __attribute__((always_inline))

/* weight kind (WU5: Q8_0 quants in [-16, 15], stored + 16; WMX: MXFP4's table in IQ4_NL's place) */
enum { WQ4, WIQ4, WQ8, WU5, WMX };
#define NL(wt) ((wt) == WIQ4 || (wt) == WMX) /* a 16-entry codebook of signed bytes */

/* Software prefetch distance of the decode GEMV, in blocks (0: off). The
 * hardware prefetcher alone leaves the GEMV at ~80% of the read bandwidth;
 * 8 blocks ahead (~1 KiB per stream) measured best (bench/kernels). */
#ifndef LB_GEMV_PREFETCH
#define LB_GEMV_PREFETCH 8
#endif
enum { L44, L48, L88 };   /* layout */

/* ---- activations: 4 rows quantized and interleaved in one pass ---- */

INLINE int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* One Q8_0 block of 32 floats, as lb_quantize_row_q8_0_ref: quants in
 * order, the scale (fp16-rounded, widened) and 8x the quant sum. */
INLINE __m256i quantize_block(const float *x, float *d_out, int32_t *s_out) {
    float d;
    int32_t sum;
    const __m256i q = lb_q8_block32_avx2(x, &d, &sum);
    *d_out = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    *s_out = 8 * sum;
    return q;
}

LB_AVX2 void lb_quantize_q8_0x4_c8_avx2(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_0x4a *y = vy;
    for (int64_t b = 0; b < k / 32; b++) {
        __m256i q[4];
        for (int m = 0; m < 4; m++) q[m] = quantize_block(x + m * ldx + b * 32, &y[b].d[m], &y[b].s8[m]);
        /* 4x4 transpose of 64-bit chunks: chunk j of row m -> qs[(4j + m) * 8] */
        const __m256i t0 = _mm256_unpacklo_epi64(q[0], q[1]), t1 = _mm256_unpackhi_epi64(q[0], q[1]);
        const __m256i t2 = _mm256_unpacklo_epi64(q[2], q[3]), t3 = _mm256_unpackhi_epi64(q[2], q[3]);
        __m256i *out = (__m256i *)y[b].qs;
        _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(t0, t2, 0x20));
        _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(t1, t3, 0x20));
        _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(t0, t2, 0x31));
        _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(t1, t3, 0x31));
    }
}

/* ---- where things are ---- */

/* Activation rows of one call: chunk c (8 bytes, weights 8c..8c+7) of block
 * b of row m at qs + b*bstride + m*rstride + c*cstride; scale and sum alike. */
typedef struct {
    const int8_t *qs;
    size_t bstride, rstride, cstride;
    const float *d; /* scales */
    const int32_t *s; /* 8 x the block's quant sum (Q4_0's bias correction) */
    size_t sb, sr;  /* d and s: elements per block, per row */
    size_t gq, gd;  /* rows 4..7: the next 4-row group, gq bytes (qs) / gd elements (d, s) on */
} act_src;

/* Weights of one unit (8 rows): the group(s) and block geometry. */
typedef struct {
    const uint8_t *ga, *gb; /* x-blocks of quad a and quad b (the same group for 8x8) */
    size_t xbs;             /* bytes per x-block */
} w_src;

INLINE size_t xblock_bytes(int wt, int lay) {
    const size_t bs = wt == WQ8 || wt == WU5 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    return (lay == L88 ? 8 : 4) * bs;
}

/* 32 bytes = 4 rows x weight bytes [8v, 8v+8) of quad q, block b. */
INLINE __m256i load_wvec(int lay, const w_src *w, int64_t b, int q, int v) {
    if (lay == L88) return _mm256_loadu_si256((const __m256i *)(w->ga + b * w->xbs + 16 + 64 * v + 32 * q));
    const uint8_t *g = q ? w->gb : w->ga;
    return _mm256_loadu_si256((const __m256i *)(g + b * w->xbs + 8 + 32 * v));
}

/* fp16 scales of the 8 rows, in the lane order the combine step leaves:
 * [a0 a1 b0 b1 | a2 a3 b2 b3] for 8-byte chunks, [a0..a3 | b0..b3] for 4x4. */
INLINE __m256 load_scales(int lay, const w_src *w, int64_t b) {
    __m128i h;
    if (lay == L88) {
        h = _mm_loadu_si128((const __m128i *)(w->ga + b * w->xbs));
    } else {
        h = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(w->ga + b * w->xbs)),
                               _mm_loadl_epi64((const __m128i *)(w->gb + b * w->xbs)));
    }
    const __m256 d = _mm256_cvtph_ps(h);
    if (lay == L44) return d;
    return _mm256_permutevar8x32_ps(d, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
}

/* Activation chunk c of row m, block b, broadcast to match a weight vector. */
INLINE __m256i load_act(int lay, const act_src *a, int64_t b, int m, int c) {
    int64_t chunk;
    memcpy(&chunk, a->qs + b * a->bstride + (m >> 2) * a->gq + (m & 3) * a->rstride + c * a->cstride, 8);
    const __m256i v = _mm256_set1_epi64x(chunk);
    if (lay != L44) return v;
    /* 4-byte chunks: bytes 0-3 to every dword of lane 0, 4-7 of lane 1 */
    const __m256i pat = _mm256_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7,
                                         4, 5, 6, 7, 4, 5, 6, 7);
    return _mm256_shuffle_epi8(v, pat);
}

/* Weight vector for activation chunk c (weights 8c..8c+7) of quad q:
 * Q4_0 unsigned nibbles 0..15, IQ4_NL / MXFP4 codebook values, Q8_0 quants. */
INLINE __m256i weight_vec(int wt, int lay, const w_src *w, int64_t b, int q, int c) {
    if (wt == WQ8 || wt == WU5) return load_wvec(lay, w, b, q, c);
    const __m256i raw = load_wvec(lay, w, b, q, c & 1);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i x = wt == WQ4 ? _mm256_xor_si256(raw, _mm256_set1_epi8((char)0x88)) : raw;
    x = _mm256_and_si256(c < 2 ? x : _mm256_srli_epi16(x, 4), m4);
    if (wt == WQ4) return x;
    /* lb_kvalues_iq4nl or lb_kvalues_mxfp4, in both 128-bit lanes (checked by the tests) */
    const __m256i book = wt == WMX ? _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                                      0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
                                   : _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69,
                                                      89, 113, -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38,
                                                      53, 69, 89, 113);
    return _mm256_shuffle_epi8(book, x);
}

/* ---- the 8-row x MR-row tile ---- */

/* acc[m] (8 rows, combine order) = the dot products over blocks [0, nb).
 * Per block the 8 weight vectors are decoded once and stay in registers
 * while each activation row passes over them (the small loops must unroll
 * completely so nothing round-trips through the stack). */
/* acc += u8 x s8 products, four per int32 lane: VEX vpdpbusd (AVX-VNNI)
 * through asm, so the AVX2 functions around it need no extra target. */
INLINE __m256i dpbusd_vex(__m256i acc, __m256i u, __m256i s) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    return acc;
}

INLINE void tile(int wt, int lay, int mr, int vnni, const w_src *w, const act_src *a, int64_t nb, __m256 *acc) {
    const __m256i ones16 = _mm256_set1_epi16(1);
#pragma GCC unroll 8
    for (int m = 0; m < mr; m++) acc[m] = _mm256_setzero_ps();
    const int pf_l2 = lb_cpu_prefetch_l2();
    for (int64_t b = 0; b < nb; b++) {
        if (LB_GEMV_PREFETCH && mr == 1) {
            /* decode streams each weight byte once: ask for it early */
            lb_prefetch_span((const char *)w->ga + (b + LB_GEMV_PREFETCH) * w->xbs, w->xbs, pf_l2);
            if (lay != L88) lb_prefetch_span((const char *)w->gb + (b + LB_GEMV_PREFETCH) * w->xbs, w->xbs, pf_l2);
        }
        __m256i wv[2][4];
#pragma GCC unroll 2
        for (int q = 0; q < 2; q++)
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) wv[q][c] = weight_vec(wt, lay, w, b, q, c);
        const __m256 dw = load_scales(lay, w, b);
#pragma GCC unroll 8
        for (int m = 0; m < mr; m++) {
            __m256i p[2]; /* per quad: int16 (Q4_0) or int32 partial sums */
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                const __m256i av = load_act(lay, a, b, m, c);
                if (vnni) {
                    /* AVX-VNNI: the same operands, four products straight into int32 */
                    __m256i u0, s0, u1, s1;
                    if (wt == WQ4 || wt == WU5) {
                        u0 = wv[0][c], s0 = av, u1 = wv[1][c], s1 = av;
                    } else if (NL(wt)) {
                        u0 = u1 = _mm256_sign_epi8(av, av);
                        s0 = _mm256_sign_epi8(wv[0][c], av), s1 = _mm256_sign_epi8(wv[1][c], av);
                    } else {
                        u0 = _mm256_sign_epi8(wv[0][c], wv[0][c]), s0 = _mm256_sign_epi8(av, wv[0][c]);
                        u1 = _mm256_sign_epi8(wv[1][c], wv[1][c]), s1 = _mm256_sign_epi8(av, wv[1][c]);
                    }
                    p[0] = dpbusd_vex(c ? p[0] : _mm256_setzero_si256(), u0, s0);
                    p[1] = dpbusd_vex(c ? p[1] : _mm256_setzero_si256(), u1, s1);
                } else if (wt == WQ4 || wt == WU5) {
                    /* unsigned nibbles (or u = w + 16) x signed activations: no saturation */
                    const __m256i t0 = _mm256_maddubs_epi16(wv[0][c], av);
                    const __m256i t1 = _mm256_maddubs_epi16(wv[1][c], av);
                    p[0] = c ? _mm256_add_epi16(p[0], t0) : t0;
                    p[1] = c ? _mm256_add_epi16(p[1], t1) : t1;
                } else {
                    __m256i t0, t1;
                    if (NL(wt)) {
                        /* |a| x sign(w, a): |a| is shared by both quads (codebook >= -127) */
                        const __m256i aa = _mm256_sign_epi8(av, av);
                        t0 = _mm256_maddubs_epi16(aa, _mm256_sign_epi8(wv[0][c], av));
                        t1 = _mm256_maddubs_epi16(aa, _mm256_sign_epi8(wv[1][c], av));
                    } else {
                        /* |w| x sign(a, w): exact for a weight of -128 too */
                        t0 = _mm256_maddubs_epi16(_mm256_sign_epi8(wv[0][c], wv[0][c]), _mm256_sign_epi8(av, wv[0][c]));
                        t1 = _mm256_maddubs_epi16(_mm256_sign_epi8(wv[1][c], wv[1][c]), _mm256_sign_epi8(av, wv[1][c]));
                    }
                    t0 = _mm256_madd_epi16(t0, ones16);
                    t1 = _mm256_madd_epi16(t1, ones16);
                    p[0] = c ? _mm256_add_epi32(p[0], t0) : t0;
                    p[1] = c ? _mm256_add_epi32(p[1], t1) : t1;
                }
            }
            /* p: int16 pair sums (Q4_0 and WU5 without VNNI) or int32 */
            __m256i i;
            if (wt == WQ4 && !vnni) {
                /* two quads' int16 sums (<= 15240 each) still fit: add, then widen */
                const __m256i s16 = lay == L44 ? _mm256_add_epi16(_mm256_permute2x128_si256(p[0], p[1], 0x20),
                                                                  _mm256_permute2x128_si256(p[0], p[1], 0x31))
                                               : _mm256_hadd_epi16(p[0], p[1]);
                i = _mm256_madd_epi16(s16, ones16);
            } else {
                if (wt == WU5 && !vnni) { /* up to 31496 per quad: widen each first */
                    p[0] = _mm256_madd_epi16(p[0], ones16);
                    p[1] = _mm256_madd_epi16(p[1], ones16);
                }
                i = lay == L44 ? _mm256_add_epi32(_mm256_permute2x128_si256(p[0], p[1], 0x20),
                                                  _mm256_permute2x128_si256(p[0], p[1], 0x31))
                               : _mm256_hadd_epi32(p[0], p[1]);
            }
            if (wt == WQ4 || wt == WU5) { /* the bias: 8 (Q4_0) or 16 (WU5) x the block's quant sum */
                const int32_t s8 = a->s[b * a->sb + (m >> 2) * a->gd + (m & 3) * a->sr];
                i = _mm256_sub_epi32(i, _mm256_set1_epi32(wt == WU5 ? 2 * s8 : s8));
            }
            const __m256 da = _mm256_broadcast_ss(a->d + b * a->sb + (m >> 2) * a->gd + (m & 3) * a->sr);
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(dw, da), acc[m]);
        }
    }
}

/* Rows [n, n + 8) of y (only [n, n + 4) if half): store or add. */
INLINE void put_rows(int lay, float *y, __m256 v, int half, int add) {
    if (lay != L44) v = _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
    if (half) {
        __m128 h = _mm256_castps256_ps128(v);
        if (add) h = _mm_add_ps(h, _mm_loadu_ps(y));
        _mm_storeu_ps(y, h);
    } else {
        if (add) v = _mm256_add_ps(v, _mm256_loadu_ps(y));
        _mm256_storeu_ps(y, v);
    }
}

/* The unit starting at row n; 4-row layouts may end on a lone group. */
INLINE w_src unit_at(int wt, int lay, const void *W, size_t w_row_size, int n, int n1, int *half) {
    const int R = lay == L88 ? 8 : 4;
    const size_t gsz = (size_t)R * w_row_size;
    w_src w;
    w.ga = (const uint8_t *)W + (size_t)(n / R) * gsz;
    w.xbs = xblock_bytes(wt, lay);
    *half = lay != L88 && n + 8 > n1;
    w.gb = lay == L88 || *half ? w.ga : w.ga + gsz;
    return w;
}

/* ---- GEMM: 4-row activation groups (lb_block_q8_0x4a, 8-byte chunks) ---- */

INLINE void gemm(int wt, int lay, int vnni, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                 size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    for (int n = n0; n < n1; n += 8) {
        int half;
        const w_src w = unit_at(wt, lay, W, w_row_size, n, n1, &half);
        /* 8 activation rows (two groups) per pass: the weight decode is
         * shared by more rows */
        for (int m = 0; m + 4 <= M;) {
            const lb_block_q8_0x4a *ab = (const lb_block_q8_0x4a *)((const char *)A + (size_t)(m / 4) * a_row_size);
            const act_src a = {ab->qs, sizeof *ab, 8, 32, ab->d, ab->s8, sizeof *ab / 4, 1, a_row_size, a_row_size / 4};
            __m256 acc[8];
            if (m + 8 <= M) {
                tile(wt, lay, 8, vnni, &w, &a, nb, acc);
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++) put_rows(lay, Y + (size_t)(m + i) * ldy + n, acc[i], half, 0);
                m += 8;
            } else {
                tile(wt, lay, 4, vnni, &w, &a, nb, acc);
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) put_rows(lay, Y + (size_t)(m + i) * ldy + n, acc[i], half, 0);
                m += 4;
            }
        }
    }
}

/* ---- GEMV: plain Q8_0 rows, up to 4 at a time ---- */

INLINE void tile_put(int wt, int lay, int mr, int vnni, const w_src *w, const act_src *a, int64_t nb, float *y, size_t ldy,
                     int half, int add) {
    __m256 acc[4];
    tile(wt, lay, mr, vnni, w, a, nb, acc);
#pragma GCC unroll 4
    for (int m = 0; m < mr; m++) put_rows(lay, y + (size_t)m * ldy, acc[m], half, add);
}

enum { KC = 256 }; /* blocks per pass: the scales and sums of a pass live on the stack */

INLINE void gemv(int wt, int lay, int vnni, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                 size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    float da[4][KC];
    int32_t s8[4][KC];
    for (int m0 = 0; m0 < M; m0 += 4) {
        const int mr = LB_MIN(4, M - m0);
        for (int64_t b0 = 0; b0 < nb; b0 += KC) {
            const int64_t kb = LB_MIN((int64_t)KC, nb - b0);
            const block_q8_0 *rows[4];
            for (int m = 0; m < mr; m++) {
                rows[m] = (const block_q8_0 *)((const char *)A + (size_t)(m0 + m) * a_row_size) + b0;
                for (int64_t b = 0; b < kb; b++) {
                    da[m][b] = _cvtsh_ss(rows[m][b].d);
                    if (wt != WQ4) continue;
                    const __m256i q = _mm256_loadu_si256((const __m256i *)rows[m][b].qs);
                    const __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
                    s8[m][b] = 8 * hsum_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
                }
            }
            const act_src a = {rows[0]->qs, sizeof(block_q8_0), mr > 1 ? (size_t)((const char *)rows[1] - (const char *)rows[0]) : 0,
                               8, da[0], s8[0], 1, KC, 0, 0};
            for (int n = n0; n < n1; n += 8) {
                int half;
                w_src w = unit_at(wt, lay, W, w_row_size, n, n1, &half);
                w.ga += (size_t)b0 * w.xbs;
                w.gb += (size_t)b0 * w.xbs;
                float *y = Y + (size_t)m0 * ldy + n;
                switch (mr) { /* a constant row count each, so acc[] stays in registers */
                case 1: tile_put(wt, lay, 1, vnni, &w, &a, kb, y, ldy, half, b0 > 0); break;
                case 2: tile_put(wt, lay, 2, vnni, &w, &a, kb, y, ldy, half, b0 > 0); break;
                case 3: tile_put(wt, lay, 3, vnni, &w, &a, kb, y, ldy, half, b0 > 0); break;
                default: tile_put(wt, lay, 4, vnni, &w, &a, kb, y, ldy, half, b0 > 0); break;
                }
            }
        }
    }
}

#define KERNELS_ISA(w, R, C, WT, LAY, ISA, VNNI)                                                            \
    LB_AVX2 void lb_gemv_##w##x##R##_q8_0_##R##x##C##_##ISA(int64_t K, const void *W, size_t wrs, int n0,   \
                                                            int n1, const void *A, size_t ars, int M,       \
                                                            float *Y, size_t ldy) {                         \
        gemv(WT, LAY, VNNI, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                          \
    }                                                                                                       \
    LB_AVX2 void lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_##ISA(int64_t K, const void *W, size_t wrs, int n0, \
                                                              int n1, const void *A, size_t ars, int M,     \
                                                              float *Y, size_t ldy) {                       \
        gemm(WT, LAY, VNNI, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                          \
    }
#define KERNELS(w, R, C, WT, LAY)                   \
    KERNELS_ISA(w, R, C, WT, LAY, avx2, 0)          \
    KERNELS_ISA(w, R, C, WT, LAY, avxvnni, 1)
KERNELS(q4_0, 4, 4, WQ4, L44)
KERNELS(q4_0, 4, 8, WQ4, L48)
KERNELS(q4_0, 8, 8, WQ4, L88)
KERNELS(iq4_nl, 4, 4, WIQ4, L44)
KERNELS(iq4_nl, 4, 8, WIQ4, L48)
KERNELS(iq4_nl, 8, 8, WIQ4, L88)
KERNELS(q8_0, 4, 4, WQ8, L44)
KERNELS(q8_0, 4, 8, WQ8, L48)
KERNELS(q8_0, 8, 8, WQ8, L88)
KERNELS(mxfp4_nl, 4, 4, WMX, L44)
KERNELS(mxfp4_nl, 4, 8, WMX, L48)
KERNELS(mxfp4_nl, 8, 8, WMX, L88)

/* Q8_0_4X4 rows (quants in [-16, 15]) to the 8x8 layout with u = w + 16:
 * per 8 rows and block, the two 4-row x-blocks' scales side by side, then
 * for each 8-weight chunk the quads' 32-byte vectors with one 64-bit lane
 * per row (4x4 has 4 bytes of 4 rows per 128-bit lane: a qword permute and
 * a dword shuffle regroup them). */
LB_AVX2 void lb_pack_q8_0x4_u5x8_avx2(const void *src, size_t row_size, int rows, int64_t K, void *dst) {
    const size_t xs4 = 4 * sizeof(block_q8_0), xs8 = 8 * sizeof(block_q8_0);
    const __m256i bias = _mm256_set1_epi8(16);
    for (int g = 0; g < rows / 8; g++)
        for (int64_t b = 0; b < K / 32; b++) {
            const uint8_t *qa = (const uint8_t *)src + (size_t)(2 * g) * 4 * row_size + (size_t)b * xs4;
            const uint8_t *qb = qa + 4 * row_size;
            uint8_t *o = (uint8_t *)dst + (size_t)g * 8 * row_size + (size_t)b * xs8;
            memcpy(o, qa, 8);
            memcpy(o + 8, qb, 8);
            for (int v = 0; v < 4; v++)
                for (int q = 0; q < 2; q++) {
                    const __m256i x = _mm256_loadu_si256((const __m256i *)((q ? qb : qa) + 8 + 32 * v));
                    const __m256i r = _mm256_shuffle_epi32(_mm256_permute4x64_epi64(x, 0xD8), 0xD8);
                    _mm256_storeu_si256((__m256i *)(o + 16 + 64 * v + 32 * q), _mm256_add_epi8(r, bias));
                }
        }
}

LB_AVX2 void lb_gemm_q8_0u5x8_q8_0x4_8x8_avx2(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                                              size_t ars, int M, float *Y, size_t ldy) {
    gemm(WU5, L88, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}
#endif
