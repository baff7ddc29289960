/* AVX-512 VNNI kernels of ABQ's code layouts with 16 rows interleaved
 * (formats/abq.h: ABQ_W{q}_C{W}X16, made at load from the row layouts).
 *
 * Decode (abq_w*_x16_gemv_*): per group of a 16-row block, one 64-byte
 * load a chunk, a mask per column it holds, and one zmm vpdpbusd per
 * column, its activation dword an embedded broadcast: the 16 rows' 4
 * products each go straight into their own lane. A column in bits W f of
 * the bytes (f > 0) is masked in place, so its products come out 2^(W f)
 * times too large in a chain of their own, and one exact arithmetic shift
 * per chain puts them right (W = 4: P + (Q >> 4); no shift per column).
 * W = 3 (ABQ_W{3,2S}_C3X16): chunk triples, 10 masks per 8 columns, chains
 * by shift (0, 3, 6, and 4 / 5 for the third bits formats/abq.h puts in C).
 * The group's exact integer I of the 16 rows then sits in the lanes, the
 * correction term sw (128 - za) - z (Sa - 128 za) by one vpmaddwd at the
 * chain's start, and d I is added to two vectors of 8 double sums by a
 * fused multiply-add (exact product: it rounds once, where the reference's
 * add does). No horizontal sum and no scalar double sum, which is what
 * held the row layout's decode (abq_codes_avx2.c) at 75-82 % of the read
 * bandwidth on Zen 4. Every output is the reference's float, bit for bit.
 *
 * Prefill (M >= 4): each block's groups, a chunk of KCH at a time, are
 * unpacked into the 16-row columns the VNNI GEMM tile reads (lb_abq_g16,
 * abq_codes_tile.h; a mask and a shift per column, where the row layout
 * needs a transpose), and lb_abq_tile16_vnni runs 4 activation rows at a
 * time over two blocks while their columns are in L1 / L2. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/thread_scratch.h"
#include "kernels/x86/abq_codes_tile.h"
#include "kernels/x86/prefetch_x86.h"

/* the one fused multiply-add below is written out, and exact */
#include "core/fp_strict.h"

#define LB_X16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE LB_X16 static inline __attribute__((always_inline))

/* Software prefetch of the decode's stream, this many bytes ahead (0: off). */
#ifndef LB_ABQ_X16_PF
#define LB_ABQ_X16_PF 0
#endif

/* acc += vpdpbusd(u, the dword at x broadcast) */
#define DPBUSD_B(acc, u, x) __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)(x)))

/* a group's 16 d (fp32, first in the group) as doubles: rows 0-7 and 8-15 */
INLINE void group_d(const uint8_t *g, __m512d *d0, __m512d *d1) {
    const __m512 d = _mm512_loadu_ps(g);
    *d0 = _mm512_cvtps_pd(_mm512_castps512_ps256(d));
    *d1 = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(d), 1)));
}

/* The 16 rows' I of group g (its d, swz, chunks) against activation bytes ca. */
INLINE __m512i group_i(int w, const uint8_t *g, const int8_t *ca, int32_t cz) {
    const uint8_t *qs = g + 128;
    __m512i P0 = _mm512_madd_epi16(_mm512_loadu_si512(g + 64), _mm512_set1_epi32(cz)), P1 = _mm512_setzero_si512();
    __m512i Q0 = _mm512_setzero_si512(), Q1 = _mm512_setzero_si512();
    if (w == 4) {
        const __m512i lo = _mm512_set1_epi8(0x0f), hi = _mm512_set1_epi8((char)0xf0);
#pragma GCC unroll 8
        for (int t = 0; t < 16; t += 2) {
            const __m512i v0 = _mm512_loadu_si512(qs + 64 * t), v1 = _mm512_loadu_si512(qs + 64 * t + 64);
            DPBUSD_B(P0, _mm512_and_si512(v0, lo), ca + 8 * t);
            DPBUSD_B(Q0, _mm512_and_si512(v0, hi), ca + 8 * t + 4);
            DPBUSD_B(P1, _mm512_and_si512(v1, lo), ca + 8 * t + 8);
            DPBUSD_B(Q1, _mm512_and_si512(v1, hi), ca + 8 * t + 12);
        }
        return _mm512_add_epi32(_mm512_add_epi32(P0, P1), _mm512_srai_epi32(_mm512_add_epi32(Q0, Q1), 4));
    }
    if (w == 3) { /* the triples (formats/abq.h): chains by the shift that puts each mask right */
        __m512i P3 = _mm512_setzero_si512(), Q3 = _mm512_setzero_si512(), P6 = _mm512_setzero_si512();
        __m512i Q6 = _mm512_setzero_si512(), H4 = _mm512_setzero_si512(), H5 = _mm512_setzero_si512();
        const __m512i m07 = _mm512_set1_epi8(0x07), m38 = _mm512_set1_epi8(0x38), mc0 = _mm512_set1_epi8((char)0xc0);
        const __m512i m40 = _mm512_set1_epi8(0x40), m80 = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const uint8_t *q = qs + 192 * t;
            const int8_t *c = ca + 32 * t;
            const __m512i A = _mm512_loadu_si512(q), B = _mm512_loadu_si512(q + 64), C = _mm512_loadu_si512(q + 128);
            DPBUSD_B(P0, _mm512_and_si512(A, m07), c);
            DPBUSD_B(P3, _mm512_and_si512(A, m38), c + 4);
            DPBUSD_B(P6, _mm512_and_si512(A, mc0), c + 8);
            DPBUSD_B(P1, _mm512_and_si512(B, m07), c + 12);
            DPBUSD_B(Q3, _mm512_and_si512(B, m38), c + 16);
            DPBUSD_B(Q6, _mm512_and_si512(B, mc0), c + 20);
            DPBUSD_B(P0, _mm512_and_si512(C, m07), c + 24);
            DPBUSD_B(P3, _mm512_and_si512(C, m38), c + 28);
            DPBUSD_B(H4, _mm512_and_si512(C, m40), c + 8);  /* column 8t+2's bit 2, times 64: >> 4 */
            DPBUSD_B(H5, _mm512_and_si512(C, m80), c + 20); /* column 8t+5's, times 128: >> 5 */
        }
        const __m512i r = _mm512_add_epi32(_mm512_add_epi32(P0, P1), _mm512_srai_epi32(_mm512_add_epi32(P3, Q3), 3));
        return _mm512_add_epi32(_mm512_add_epi32(r, _mm512_srai_epi32(_mm512_add_epi32(P6, Q6), 6)),
                                _mm512_add_epi32(_mm512_srai_epi32(H4, 4), _mm512_srai_epi32(H5, 5)));
    }
    const __m512i m0 = _mm512_set1_epi8(0x03), m1 = _mm512_set1_epi8(0x0c), m2 = _mm512_set1_epi8(0x30),
                  m3 = _mm512_set1_epi8((char)0xc0);
#pragma GCC unroll 8
    for (int t = 0; t < 8; t++) {
        const __m512i v = _mm512_loadu_si512(qs + 64 * t);
        DPBUSD_B(P0, _mm512_and_si512(v, m0), ca + 16 * t);
        DPBUSD_B(P1, _mm512_and_si512(v, m1), ca + 16 * t + 4);
        DPBUSD_B(Q0, _mm512_and_si512(v, m2), ca + 16 * t + 8);
        DPBUSD_B(Q1, _mm512_and_si512(v, m3), ca + 16 * t + 12);
    }
    return _mm512_add_epi32(_mm512_add_epi32(P0, _mm512_srai_epi32(P1, 2)),
                            _mm512_add_epi32(_mm512_srai_epi32(Q0, 4), _mm512_srai_epi32(Q1, 6)));
}

/* One 16-row block (nb groups) against one activation row: y[0..15]. */
INLINE void block_dot(int w, const uint8_t *blk, int64_t nb, const block_abq_act *a, float *y, int pf) {
    const size_t gb = LB_ABQ_X16_GROUP_BYTES(w);
    __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *g = blk + gb * (size_t)i;
        if (LB_ABQ_X16_PF) lb_prefetch_span(g + LB_ABQ_X16_PF, gb, pf);
        const __m512i I = group_i(w, g, a[i].c, lb_abq_corr_pair(a, i, 128));
        __m512d d0, d1;
        group_d(g, &d0, &d1);
        acc0 = _mm512_fmadd_pd(d0, _mm512_cvtepi32_pd(_mm512_castsi512_si256(I)), acc0);
        acc1 = _mm512_fmadd_pd(d1, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(I, 1)), acc1);
    }
    const __m512d da = _mm512_set1_pd((double)a[0].d);
    _mm256_storeu_ps(y, _mm512_cvtpd_ps(_mm512_mul_pd(acc0, da)));
    _mm256_storeu_ps(y + 8, _mm512_cvtpd_ps(_mm512_mul_pd(acc1, da)));
}

/* ---- prefill ---- */
enum { KCH = 16, NBLK = 2, MR = LB_ABQ_MR };

/* Groups [g0, g0 + kc) of a block -> the tile's 16-row columns B[0 .. kc). */
INLINE void unpack(int w, const uint8_t *blk, int64_t g0, int64_t kc, lb_abq_g16 *B) {
    const size_t gb = LB_ABQ_X16_GROUP_BYTES(w);
    for (int64_t i = 0; i < kc; i++) {
        const uint8_t *g = blk + gb * (size_t)(g0 + i), *qs = g + 128;
        lb_abq_g16 *b = &B[i];
        if (w == 3) { /* the triples: a column's third bit joins its low two from C */
            const __m512i m7 = _mm512_set1_epi8(7), m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4);
            for (int t = 0; t < 4; t++) {
                const __m512i A = _mm512_loadu_si512(qs + 192 * t), Bv = _mm512_loadu_si512(qs + 192 * t + 64);
                const __m512i C = _mm512_loadu_si512(qs + 192 * t + 128);
                int32_t(*col)[16] = b->col + 8 * t;
                _mm512_store_si512(col[0], _mm512_and_si512(A, m7));
                _mm512_store_si512(col[1], _mm512_and_si512(_mm512_srli_epi16(A, 3), m7));
                _mm512_store_si512(col[2], _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(A, 6), m3),
                                                           _mm512_and_si512(_mm512_srli_epi16(C, 4), m4)));
                _mm512_store_si512(col[3], _mm512_and_si512(Bv, m7));
                _mm512_store_si512(col[4], _mm512_and_si512(_mm512_srli_epi16(Bv, 3), m7));
                _mm512_store_si512(col[5], _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(Bv, 6), m3),
                                                           _mm512_and_si512(_mm512_srli_epi16(C, 5), m4)));
                _mm512_store_si512(col[6], _mm512_and_si512(C, m7));
                _mm512_store_si512(col[7], _mm512_and_si512(_mm512_srli_epi16(C, 3), m7));
            }
        } else {
            const int per = 8 / w;
            const __m512i mask = _mm512_set1_epi8((char)((1 << w) - 1));
            for (int t = 0; t < 4 * w; t++) {
                const __m512i v = _mm512_loadu_si512(qs + 64 * t);
                for (int f = 0; f < per; f++)
                    _mm512_store_si512(b->col[per * t + f], _mm512_and_si512(_mm512_srli_epi16(v, w * f), mask));
            }
        }
        _mm512_storeu_si512(b->swz, _mm512_loadu_si512(g + 64));
        __m512d d0, d1;
        group_d(g, &d0, &d1);
        _mm512_storeu_pd(b->d, d0), _mm512_storeu_pd(b->d + 8, d1);
    }
}

/* Blocks of rows [n0, n1) x M >= MR activation rows; scratch B (NBLK x KCH
 * columns), st (M x 16 NBLK double sums between chunks), cz (M x nb pairs). */
INLINE void gemm(int w, int64_t K, const uint8_t *W, size_t w_row_size, int n0, int n1, const uint8_t *A,
                 size_t a_row_size, int M, float *Y, size_t ldy, lb_abq_g16 *B, double *st, int32_t *cz) {
    const int64_t nb = K / LB_ABQ_G;
    double dummy_st[16];
    float dummy_y[16];
    for (int m = 0; m < M; m++)
        for (int64_t i = 0; i < nb; i++) cz[(size_t)m * nb + i] = lb_abq_corr_pair((const block_abq_act *)(A + (size_t)m * a_row_size), i, 128);
    for (int nb0 = n0; nb0 < n1; nb0 += 16 * NBLK) {
        const int nblk = LB_MIN(NBLK, (n1 - nb0) / 16);
        for (int64_t g0 = 0; g0 < nb; g0 += KCH) {
            const int64_t kc = LB_MIN((int64_t)KCH, nb - g0);
            const int last = g0 + kc == nb;
            for (int k = 0; k < nblk; k++) unpack(w, W + w_row_size * (size_t)(nb0 + 16 * k), g0, kc, B + (size_t)k * KCH);
            for (int m = 0; m < M; m += MR) {
                const block_abq_act *a[MR];
                const int8_t *ac[MR];
                const int32_t *c[MR];
                const int mr = lb_abq_tile_rows(A, a_row_size, M, m, NULL, nb, cz, a, ac, c);
                for (int k = 0; k < nblk; k++) {
                    double *s[MR];
                    float *y[MR];
                    for (int j = 0; j < MR; j++)
                        s[j] = j < mr ? st + ((size_t)(m + j) * NBLK + (size_t)k) * 16 : dummy_st,
                        y[j] = j < mr ? Y + (size_t)(m + j) * ldy + nb0 + 16 * k : dummy_y;
                    lb_abq_tile16_vnni(B + (size_t)k * KCH, g0, kc, last, a, ac, sizeof(block_abq_act), c, s, y);
                }
            }
        }
    }
}

/* The kernel table's gemv (formats/abq.h: W the whole tensor, [n0, n1)
 * whole blocks of 16 rows), any M. */
INLINE void x16(int w, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size,
                int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    const uint8_t *W = Wt, *Ab = A;
    if (M >= MR) {
        const size_t bsz = (size_t)NBLK * KCH * sizeof(lb_abq_g16), ssz = (size_t)M * 16 * NBLK * sizeof(double);
        char *s = lb_thread_scratch(bsz + ssz + (size_t)M * (size_t)nb * 4);
        if (s) {
            gemm(w, K, W, w_row_size, n0, n1, Ab, a_row_size, M, Y, ldy, (lb_abq_g16 *)s, (double *)(s + bsz),
                 (int32_t *)(s + bsz + ssz));
            return;
        }
    }
    const int pf = lb_cpu_prefetch_l2();
    for (int n = n0; n + 16 <= n1; n += 16)
        for (int m = 0; m < M; m++)
            block_dot(w, W + w_row_size * (size_t)n, nb, (const block_abq_act *)(Ab + (size_t)m * a_row_size),
                      Y + (size_t)m * ldy + n, pf);
}

#define ABQ_X16_AVX512(name, NAME, CW)                                                                       \
    LB_X16 void lb_gemv_##name##_avx512(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, \
                                         size_t a_row_size, int M, float *Y, size_t ldy) {                    \
        x16(CW, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                        \
    }
LB_ABQ_X16_LIST(ABQ_X16_AVX512)
#undef ABQ_X16_AVX512

#endif
