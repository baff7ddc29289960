/* AVX2 kernels of the BCQ types (kernels/x86/bcq_x86.h; layout and order of
 * operations in formats/bcq.h).
 *
 * mu = 4 GEMV, per 16 rows (one _LUT x-block per group) and activation row:
 * a 32-byte load of plane i holds bytes k, k+1 of the 16 rows; its low
 * nibbles index the tables of slices 2k (lane 0) and 2k+2 (lane 1), its
 * high nibbles those of 2k+1 and 2k+3. The kernel reads each table as two
 * byte vectors L = T & 31 and H = T >> 5 (split_tables, per call), so a
 * row's 4 lookups in a block are summed as bytes and joined once to int16
 * (vpmaddubsw, 1 L + 32 H): exact, |sum| <= 8 * 508. The two lanes' sums
 * (different slices, the same rows) are added, widened, converted, and
 * scaled by d, alpha_i and the z term with separate multiplies and adds in
 * the reference's order, so every output is the reference's float, bit for
 * bit. With an even q two planes go through a block at once. */
#include "kernels/x86/bcq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "core/common.h"
#include "kernels/cpu.h"
#include "kernels/x86/prefetch_x86.h"

/* the reference's float steps, unfused */
#include "core/fp_strict.h"

#define LB_BCQA __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_BCQA static inline __attribute__((always_inline))

INLINE __m256 load_h8(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* ---- Q8_0_LUT4 activations ---- */

LB_BCQA void lb_quantize_row_q8_0_lut4_avx2(const float *x, void *vy, int64_t k) {
    block_q8_0_lut4 *y = vy;
    /* entry e of a slice: bytes 2e, 2e+1 of the pair vectors get the signs of
     * bits (0, 1) and (2, 3) of e */
    int8_t s01[32], s23[32];
    for (int e = 0; e < 16; e++) {
        s01[2 * e] = (e & 1) ? 1 : -1, s01[2 * e + 1] = (e & 2) ? 1 : -1;
        s23[2 * e] = (e & 4) ? 1 : -1, s23[2 * e + 1] = (e & 8) ? 1 : -1;
    }
    const __m256i S01 = _mm256_loadu_si256((const __m256i *)s01), S23 = _mm256_loadu_si256((const __m256i *)s23);
    const __m256i ones = _mm256_set1_epi8(1);
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10,
                                           12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    for (int64_t b = 0; b < k / 32; b++) {
        block_q8_0 q;
        lb_quantize_row_q8_0_avx2(x + 32 * b, &q, 32);
        block_q8_0_lut4 *o = &y[b];
        uint16_t dh;
        memcpy(&dh, &q.d, 2);
        o->d = _cvtsh_ss(dh);
        memcpy(o->qs, q.qs, 32);
        int32_t S = 0;
        for (int j = 0; j < 32; j++) S += q.qs[j];
        o->ds = o->d * (float)S;
        __m256i Rs[8]; /* slice s: [low bytes of T_s (16) | high bytes (16)] */
        for (int s = 0; s < 8; s++) {
            int16_t p01, p23;
            memcpy(&p01, q.qs + 4 * s, 2);
            memcpy(&p23, q.qs + 4 * s + 2, 2);
            const __m256i a = _mm256_sign_epi8(_mm256_set1_epi16(p01), S01);
            const __m256i c = _mm256_sign_epi8(_mm256_set1_epi16(p23), S23);
            const __m256i T = _mm256_add_epi16(_mm256_maddubs_epi16(ones, a), _mm256_maddubs_epi16(ones, c));
            Rs[s] = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(T, split), _MM_SHUFFLE(3, 1, 2, 0));
        }
        for (int h = 0; h < 2; h++) {
            __m256i *t = (__m256i *)(o->t + 128 * h);
            const __m256i r0 = Rs[4 * h], r1 = Rs[4 * h + 1], r2 = Rs[4 * h + 2], r3 = Rs[4 * h + 3];
            _mm256_storeu_si256(t + 0, _mm256_permute2x128_si256(r0, r2, 0x20));
            _mm256_storeu_si256(t + 1, _mm256_permute2x128_si256(r0, r2, 0x31));
            _mm256_storeu_si256(t + 2, _mm256_permute2x128_si256(r1, r3, 0x20));
            _mm256_storeu_si256(t + 3, _mm256_permute2x128_si256(r1, r3, 0x31));
        }
        memset(o->pad, 0, sizeof o->pad);
    }
}

/* ---- mu = 4 GEMV ---- */

/* The kernel's tables: each Q8_0_LUT4 table T (int16, |T| <= 508) as
 * T = 32 H + L, L = T & 31 in 0..31 and H = T >> 5 in -16..15, in separate
 * byte vectors. A row's four lookups of a block then sum in bytes (L <= 124,
 * |H| <= 64), and one vpmaddubsw per 8 rows joins 32 H + L in int16: per
 * lookup two vpshufb and two byte adds, where the Q8_0_LUT4 split
 * (low byte, high byte) would need the bytes re-joined per lookup, two more
 * shuffles each, on the ports that bound this loop. Per block 8 vectors:
 * [4h + 0] L, [4h + 1] H for the low nibbles of plane bytes k, k+1
 * (h = 0, 1: bytes 0-1 and 2-3 of the block), [4h + 2], [4h + 3] for the
 * high nibbles: lane order as in Q8_0_LUT4. Built per call and activation
 * row in chunks of LUT_CHUNK blocks (a stack buffer; 16 KiB): a few
 * operations per block against 16 rows' lookups per 16 rows of the call. */
/* prefetch distance in x-blocks by where lb_cpu_prefetch_l2 puts the lines:
 * L1 (Intel; Zen 3: 1, 4 and 8 ahead the same, below) or L2 (AMD; Zen 4 at
 * --isa avx2, one thread, 5632 x 2048: BCQ4_G128 11.8-11.9 GB/s with L1 2
 * ahead, 14.1-14.7 with L2 8 ahead, BCQ2_G128 13.0-13.1 -> 15.4-15.6) */
enum { LUT_CHUNK = 64, PF_L1 = 2, PF_L2 = 8 };

INLINE void split_tables(const block_q8_0_lut4 *a, int nb, __m256i *out) {
    const __m256i m31 = _mm256_set1_epi8(31), m7 = _mm256_set1_epi8(7), mF8 = _mm256_set1_epi8((char)0xF8);
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < 4; j++) { /* the (low, high byte) pairs at t + 64 j */
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(a[b].t + 64 * j));
            const __m256i hi = _mm256_loadu_si256((const __m256i *)(a[b].t + 64 * j + 32));
            /* T >> 5 = 8 hi + (lo >> 5), per byte */
            const __m256i h = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(hi, 3), mF8),
                                              _mm256_and_si256(_mm256_srli_epi16(lo, 5), m7));
            out[8 * b + 2 * j] = _mm256_and_si256(lo, m31);
            out[8 * b + 2 * j + 1] = h;
        }
}

/* Exact int16 sums of one plane over one Q8_0 block for 16 rows, rows
 * 0-7 in the low lane, 8-15 in the high one. pl: plane bytes 4c .. 4c+3 of
 * the 16 rows (64 bytes); t: the block's 8 split tables. */
INLINE __m256i plane_block(const uint8_t *pl, const __m256i *t) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), w = _mm256_set1_epi16(32 << 8 | 1);
    __m256i ls = _mm256_setzero_si256(), hs = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(pl + 32 * h));
        const __m256i ilo = _mm256_and_si256(v, m4), ihi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        const __m256i *th = t + 4 * h;
        ls = _mm256_add_epi8(ls, _mm256_add_epi8(_mm256_shuffle_epi8(th[0], ilo), _mm256_shuffle_epi8(th[2], ihi)));
        hs = _mm256_add_epi8(hs, _mm256_add_epi8(_mm256_shuffle_epi8(th[1], ilo), _mm256_shuffle_epi8(th[3], ihi)));
    }
    /* byte j of a lane is row j: (L, H) pairs of rows 0-7 and 8-15, then 1 L + 32 H */
    const __m256i a = _mm256_maddubs_epi16(w, _mm256_unpacklo_epi8(ls, hs));
    const __m256i b = _mm256_maddubs_epi16(w, _mm256_unpackhi_epi8(ls, hs));
    /* lanes hold slices {0,1,4,5} and {2,3,6,7} of the same rows */
    return _mm256_add_epi16(_mm256_blend_epi32(a, b, 0xF0), _mm256_permute2x128_si256(a, b, 0x21));
}

/* 16 fp16 of rows 0..15 -> floats of the even rows (*e) and the odd ones (*o) */
INLINE void load_h16_eo(const uint8_t *p, __m256 *e, __m256 *o) {
    const __m256i split = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9,
                                           12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    const __m256i v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)p), split),
                                               _MM_SHUFFLE(3, 1, 2, 0));
    *e = _mm256_cvtph_ps(_mm256_castsi256_si128(v));
    *o = _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1));
}

/* ye / yo += the 16 fp16 at p (even, odd rows) times fe / fo */
INLINE void add_h16_times(const uint8_t *p, __m256 fe, __m256 fo, __m256 *ye, __m256 *yo) {
    __m256 he, ho;
    load_h16_eo(p, &he, &ho);
    *ye = _mm256_add_ps(*ye, _mm256_mul_ps(he, fe));
    *yo = _mm256_add_ps(*yo, _mm256_mul_ps(ho, fo));
}

/* pe / po += d * the int16 sums s (rows 0-7 | 8-15) of the even / odd rows:
 * the low words sign-extended, and the high ones */
INLINE void add_scaled(__m256i s, __m256 d, __m256 *pe, __m256 *po) {
    const __m256 fe = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(s, 16), 16));
    const __m256 fo = _mm256_cvtepi32_ps(_mm256_srai_epi32(s, 16));
    *pe = _mm256_add_ps(*pe, _mm256_mul_ps(d, fe));
    *po = _mm256_add_ps(*po, _mm256_mul_ps(d, fo));
}

/* One activation row's blocks [b0, b0 + nb) (whole groups) against 16 rows
 * from x-block xb on: ye / yo, the even and odd rows' sums, carried across
 * chunks in the reference's order. */
INLINE void rows16_lut4(const int Q, const int G, const uint8_t *xb, const block_q8_0_lut4 *a, const __m256i *tab,
                        int nb, __m256 *ye_io, __m256 *yo_io, int pf_l2) {
    const size_t xs = LB_BCQ_XSIZE(Q, G), ahead = (size_t)(pf_l2 ? PF_L2 : PF_L1) * xs;
    const int NC = G / 32;
    __m256 ye = *ye_io, yo = *yo_io;
    for (int c0 = 0; c0 < nb; c0 += NC, xb += xs, a += NC, tab += 8 * NC) {
        /* an x-block some groups on (from memory the loop ran at 0.85 of its
         * L3-resident rate on Zen 3; L1 2 ahead bought back 3-4 %, 1, 4 and 8
         * ahead the same) */
        lb_prefetch_span(xb + ahead, xs, pf_l2);
        float zs = 0.0f;
        for (int c = 0; c < NC; c++) zs += a[c].ds;
        const __m256 zv = _mm256_set1_ps(zs);
        add_h16_times(xb + 32 * Q, zv, zv, &ye, &yo);
        /* even q: planes two at a time, two independent chains per block in
         * flight; odd q one at a time (a lone last plane was slower than none
         * paired: BCQ3 27.8 against 29.1 Gweights/s, Zen 3) */
        const int two = Q % 2 == 0;
        for (int i = 0; i < Q; i += 1 + two) {
            const uint8_t *pl0 = xb + 32 * (Q + 1) + (size_t)i * (G / 8) * LB_BCQ_ROWS;
            const uint8_t *pl1 = pl0 + (G / 8) * LB_BCQ_ROWS;
            __m256 pe0 = _mm256_setzero_ps(), po0 = _mm256_setzero_ps();
            __m256 pe1 = _mm256_setzero_ps(), po1 = _mm256_setzero_ps();
            for (int c = 0; c < NC; c++) {
                const __m256 d = _mm256_set1_ps(a[c].d);
                add_scaled(plane_block(pl0 + 64 * c, tab + 8 * c), d, &pe0, &po0);
                if (two) add_scaled(plane_block(pl1 + 64 * c, tab + 8 * c), d, &pe1, &po1);
            }
            add_h16_times(xb + 32 * i, pe0, po0, &ye, &yo);
            if (two) add_h16_times(xb + 32 * (i + 1), pe1, po1, &ye, &yo);
        }
    }
    *ye_io = ye, *yo_io = yo;
}

INLINE void gemv_lut4(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    __m256i tab[8 * LUT_CHUNK];
    const int NB = (int)(K / 32), NC = G / 32;
    const int CH = LUT_CHUNK - LUT_CHUNK % NC, pf_l2 = lb_cpu_prefetch_l2();
    for (int m = 0; m < M; m++) {
        const block_q8_0_lut4 *am = (const block_q8_0_lut4 *)((const char *)A + (size_t)m * a_row_size);
        float *ym = Y + (size_t)m * ldy;
        for (int b0 = 0; b0 < NB; b0 += CH) {
            const int nb = NB - b0 < CH ? NB - b0 : CH;
            split_tables(am + b0, nb, tab);
            for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
                /* between chunks the 16 sums wait in y, even rows then odd */
                const uint8_t *xb = (const uint8_t *)W + (size_t)n * w_row_size + (size_t)(b0 / NC) * LB_BCQ_XSIZE(Q, G);
                float *y = ym + n;
                __m256 ye = b0 ? _mm256_loadu_ps(y) : _mm256_setzero_ps();
                __m256 yo = b0 ? _mm256_loadu_ps(y + 8) : _mm256_setzero_ps();
                rows16_lut4(Q, G, xb, am + b0, tab, nb, &ye, &yo, pf_l2);
                if (b0 + nb < NB) {
                    _mm256_storeu_ps(y, ye);
                    _mm256_storeu_ps(y + 8, yo);
                } else { /* back to row order: rows 0-3 | 8-11 and 4-7 | 12-15, then the halves */
                    const __m256 lo = _mm256_unpacklo_ps(ye, yo), hi = _mm256_unpackhi_ps(ye, yo);
                    _mm256_storeu_ps(y, _mm256_permute2f128_ps(lo, hi, 0x20));
                    _mm256_storeu_ps(y + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
                }
            }
        }
    }
}

#define BCQ_AVX2_DEFINE(name, NAME, Q, G)                                                                    \
    LB_BCQA void lb_gemv_##name##_lut4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1,     \
                                            const void *A, size_t a_row_size, int M, float *Y, size_t ldy) { \
        gemv_lut4(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                  \
    }
LB_BCQ_LIST(BCQ_AVX2_DEFINE)
#undef BCQ_AVX2_DEFINE

/* ---- mu = 8 float tables ---- */

INLINE void gemv_f8(const int Q, const int G, int64_t K, const uint8_t *W, int64_t groups, const float *T,
                    const float *sums, float *y) {
    const size_t xs = LB_BCQ_XSIZE(Q, G), row = (size_t)(K / G) * LB_BCQ_SIZE(Q, G);
    const int NC = G / 32, NK = G / 8;
    for (int64_t rg = 0; rg < groups; rg++) {
        const uint8_t *xb = W + (size_t)rg * LB_BCQ_ROWS * row;
        __m256 y0 = _mm256_setzero_ps(), y1 = _mm256_setzero_ps();
        const float *Tg = T, *sg = sums;
        for (int64_t gi = 0; gi < K / G; gi++, xb += xs, Tg += (size_t)NK * 256, sg += NC) {
            float gs = 0.0f;
            for (int c = 0; c < NC; c++) gs += sg[c];
            const __m256 zv = _mm256_set1_ps(gs);
            y0 = _mm256_add_ps(y0, _mm256_mul_ps(load_h8(xb + 32 * Q), zv));
            y1 = _mm256_add_ps(y1, _mm256_mul_ps(load_h8(xb + 32 * Q + 16), zv));
            for (int i = 0; i < Q; i++) {
                const uint8_t *pl = xb + 32 * (Q + 1) + (size_t)i * NK * LB_BCQ_ROWS;
                __m256 p0 = _mm256_setzero_ps(), p1 = _mm256_setzero_ps();
                for (int k = 0; k < NK; k++) {
                    const __m128i idx = _mm_loadu_si128((const __m128i *)(pl + LB_BCQ_ROWS * k));
                    const float *Tk = Tg + 256 * k;
                    p0 = _mm256_add_ps(p0, _mm256_i32gather_ps(Tk, _mm256_cvtepu8_epi32(idx), 4));
                    p1 = _mm256_add_ps(p1, _mm256_i32gather_ps(Tk, _mm256_cvtepu8_epi32(_mm_srli_si128(idx, 8)), 4));
                }
                y0 = _mm256_add_ps(y0, _mm256_mul_ps(load_h8(xb + 32 * i), p0));
                y1 = _mm256_add_ps(y1, _mm256_mul_ps(load_h8(xb + 32 * i + 16), p1));
            }
        }
        _mm256_storeu_ps(y + LB_BCQ_ROWS * rg, y0);
        _mm256_storeu_ps(y + LB_BCQ_ROWS * rg + 8, y1);
    }
}

LB_BCQA void lb_bcq_gemv_f8_avx2(int lut_type, int64_t K, const void *W, int64_t N, const void *act, float *y) {
    const int base = lb_bcq_plain_of_lut(lut_type);
    if (base < 0) return;
    const int q = lb_bcq_bits(lut_type), g = lb_bcq_group(lut_type);
    const float *T = act, *sums = T + (size_t)(K / 8) * 256;
    const int64_t groups = N / LB_BCQ_ROWS;
    switch (lut_type) {
#define BCQ_F8_CASE(name, NAME, Q, G)                                                                        \
    case LB_TYPE_##NAME##_LUT: gemv_f8(Q, G, K, W, groups, T, sums, y); break;
        LB_BCQ_LIST(BCQ_F8_CASE)
#undef BCQ_F8_CASE
    }
    const size_t row = (size_t)(K / g) * LB_BCQ_SIZE(q, g);
    for (int64_t n = groups * LB_BCQ_ROWS; n < N; n++)
        y[n] = lb_bcq_dot_f8_ref(base, K, (const uint8_t *)W + (size_t)n * row, act);
}
#endif
