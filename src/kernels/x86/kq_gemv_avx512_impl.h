/* The decode GEMV on the 16-row super-block layouts (Q2_K_16X4, CB2_16X4,
 * CB3_16X4) against M < 4 plain Q8_K rows, shared by its two translation
 * units: kq_gemv_q2k_avx512.c and kq_gemv_cb_avx512.c (the scheme is in
 * kq_repack_avx512.c). One file per weight kind keeps each compile short:
 * clang with ASan + UBSan spends minutes on these unrolled instantiations.
 *
 * Decode happens in registers; the weights are streamed once, with
 * prefetch, 2 or 4 16-row groups interleaved; for one Q2_K activation row,
 * two groups share each activation broadcast. Included only by x86 kernel
 * files compiled with LB_VBMI. */
#ifndef LB_KQ_GEMV_AVX512_IMPL_H
#define LB_KQ_GEMV_AVX512_IMPL_H

#include "kernels/x86/kq_repack_impl.h"
#include "kernels/x86/prefetch_x86.h"

/* Prefetch distance of the GEMV weight stream, in bytes, by where the
 * prefetches put the lines (lb_cpu_prefetch_l2). L1 (Intel): 2-2.5
 * super-blocks of 16 rows; 2048-3072 measured ~4 % faster than 1024 and 4096
 * slower; CB2's GEMV, with more work per byte, ran 3-8 % faster at 3072 than
 * at 2048 in decode, Q2_K the same. L2 (AMD Zen 4): 4096; 3-12 KiB all
 * within noise in bench/kernels; in decode 4096 against 8192: CB2 +9 %, Q2_K
 * even; against 6144: Q2_K +16-27 %. Each group's x-block is asked for a
 * quarter per quadrant of the work, not in one burst: on the Xeon (L1, 3072,
 * 5632 x 2048, 2 threads) Q2_K 25.6 -> 27.3-27.5 GB/s, CB2 23.7 -> 25.5-25.8,
 * CB3 23.7 -> 26.7-27.3 (1.07-1.15x); not measured on AMD. */
#ifndef LB_KQ_GEMV_PREFETCH_L1
#define LB_KQ_GEMV_PREFETCH_L1 3072
#endif
#ifndef LB_KQ_GEMV_PREFETCH_L2
#define LB_KQ_GEMV_PREFETCH_L2 4096
#endif

enum { GEMV_KC = 64 }; /* super-blocks per pass: their bias terms live on the stack */
/* 16-row groups per pass (weight streams; one stream per thread reads a
 * third slower than two, bench/overlap): Q2_K 4, as 2 pairs that share the
 * activation broadcasts (gemv_sb), CB 2 (measured best) */
enum { GEMV_NG_MAX = 4 };
/* Sub-group quadrants unrolled: 1 (rolled) measured as fast as 4 in
 * bench/kernels from memory and in decode, with a quarter of the code
 * (clang's ASan + UBSan build spent minutes on the unrolled form). */
#ifndef GEMV_JQ_UNROLL
#define GEMV_JQ_UNROLL 1
#endif
#define GEMV_PRAGMA_(s) _Pragma(#s)
#define GEMV_PRAGMA(s) GEMV_PRAGMA_(s)
#ifndef GEMV_PAIRS
#define GEMV_PAIRS 1 /* 0: every Q2_K group broadcasts for itself (for A/B runs) */
#endif

typedef struct {
    const int8_t *qs[4];      /* row m's activations of the pass's first block (stride sizeof(block_q8_K)) */
    float d[4][GEMV_KC];
    int32_t pre[4][GEMV_KC][16]; /* CB: -64 * bsum_j; Q2_K: 8 dwords of (16 bsum_lo, bsum_hi) */
} gemv_acts;

/* One super-block (activation block b) of each of G 16-row groups (x-blocks
 * xb[g]): acc[g][m] += its contribution for the MR activation rows. The G
 * groups share every activation broadcast: the broadcasts are most of the
 * GEMV's loads (64 per super-block against 21 weight lines), and fewer
 * loads per weight byte let the core run further ahead to the next memory
 * misses (Q2_K, 4 groups as 2 pairs against 2 single groups: 3-13 % faster
 * from memory in bench/kernels, 2048x5632 on 2 threads; bench/overlap shows
 * the ceiling). */
INLINE void gemv_sb(int wt, int cbits, int wide, int nar, int MR, int G, const uint8_t *const *xb, int64_t b,
                    const gemv_acts *A, const consts *c, __m512 (*acc)[4], const uint8_t *const *pf) {
    /* the prefetch of each group's x-block ahead (pf) a quarter per
     * quadrant: spread over the work, not in one burst (kquant-mixes.md) */
    if (wt == WQ2K) {
        /* no lookup: 2-bit quants (GFNI bit extraction) times activations,
         * a sub-group's int16 sum times its scale by vpdpwssd */
        __m512i ms[2][4], is[2][4];
#pragma GCC unroll 2
        for (int g = 0; g < G; g++)
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) ms[g][m] = is[g][m] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int pp = 0; pp < 8; pp++)
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const __m512i av = _mm512_set1_epi32(A->pre[m][b][pp]);
#pragma GCC unroll 2
                for (int g = 0; g < G; g++) ms[g][m] = _mm512_dpwssd_epi32(ms[g][m], q2k_min_pair(xb[g], pp, c), av);
            }
        /* 4 quadrants of 4 sub-groups (GEMV_JQ_UNROLL) */
GEMV_PRAGMA(GCC unroll GEMV_JQ_UNROLL)
        for (int jq = 0; jq < 4; jq++) {
            __m512i sc[2]; /* the quadrant's 4-bit scales as bytes */
#pragma GCC unroll 2
            for (int g = 0; g < G; g++) {
                lb_prefetch_quarter(pf[g], xb_size(wt), jq, c->pf_l2);
                sc[g] = q2k_nibble_plane(xb[g] + np_off(WQ2K), jq);
            }
#pragma GCC unroll 4
            for (int jj = 0; jj < 4; jj++) {
                const int j = 4 * jq + jj;
                __m512i w[2][4];
#pragma GCC unroll 2
                for (int g = 0; g < G; g++) {
                    const __m512i q = loadv(xb[g] + 64 * j);
#pragma GCC unroll 4
                    for (int t = 0; t < 4; t++) w[g][t] = q2_bits(q, t);
                }
#pragma GCC unroll 4
                for (int m = 0; m < MR; m++) {
                    const int8_t *a = A->qs[m] + b * sizeof(block_q8_K) + 16 * j;
                    __m512i tj[2];
#pragma GCC unroll 4
                    for (int t = 0; t < 4; t++) {
                        const __m512i av = bcast32(a + 4 * t);
#pragma GCC unroll 2
                        for (int g = 0; g < G; g++)
                            tj[g] = _mm512_dpbusd_epi32(t ? tj[g] : _mm512_setzero_si512(), w[g][t], av);
                    }
                    /* |tj| <= 16 * 3 * 128: its low word is the sum, the high word meets 0 */
#pragma GCC unroll 2
                    for (int g = 0; g < G; g++)
                        is[g][m] = _mm512_dpwssd_epi32(is[g][m], tj[g], _mm512_shuffle_epi8(sc[g], c->ext[jj]));
                }
            }
        }
#pragma GCC unroll 2
        for (int g = 0; g < G; g++) {
            const __m512 dv = fp16x16(xb[g] + d_off(wt));
            const __m512 dmv = _mm512_mul_ps(fp16x16(xb[g] + Q2K_DMIN_OFF), _mm512_set1_ps(1.0f / 16.0f));
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const __m512 f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms[g][m]), dmv, _mm512_mul_ps(_mm512_cvtepi32_ps(is[g][m]), dv));
                acc[g][m] = _mm512_fmadd_ps(f, _mm512_set1_ps(A->d[m][b]), acc[g][m]);
            }
        }
        return;
    }
    /* CB: per sub-group j, t_j = sum of centroid x activation from 4
     * vpdpbusd started at -64 bsum_j (removes the table's +64). Narrow
     * books (|c| <= 15): t_j fits int16, so its scale goes in by vpdpwssd as
     * Q2_K's does, the whole super-block sums in one exact int32 (is) and
     * is scaled in float once. Wide books: f += t_j * s_j in float (s_j
     * exact). d and the activation scale once per block. */
    __m512i is[2][4];
    __m512 f[2][4];
#pragma GCC unroll 2
    for (int g = 0; g < G; g++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            is[g][m] = _mm512_setzero_si512();
            f[g][m] = _mm512_setzero_ps();
        }
    /* 4 quadrants of 4 sub-groups (GEMV_JQ_UNROLL) */
GEMV_PRAGMA(GCC unroll GEMV_JQ_UNROLL)
    for (int jq = 0; jq < 4; jq++) {
        __m512i sp[2], sq[2]; /* selector plane; scales (narrow: s, else s - 1, for cb_sf) */
#pragma GCC unroll 2
        for (int g = 0; g < G; g++) {
            lb_prefetch_quarter(pf[g], xb_size(wt), jq, c->pf_l2);
            sp[g] = sel_plane(wt, xb[g], jq, c);
            sq[g] = cb_s1_quadrant(wt, cbits, xb[g], jq, c);
            if (nar) sq[g] = _mm512_add_epi8(sq[g], _mm512_set1_epi8(1));
        }
#pragma GCC unroll 4
        for (int jj = 0; jj < 4; jj++) {
            const int j = 4 * jq + jj;
            __m512i u[2][4];
#pragma GCC unroll 2
            for (int g = 0; g < G; g++) decode_sub_q(wt, wide, xb[g], j, sp[g], c, u[g]);
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const int8_t *a = A->qs[m] + b * sizeof(block_q8_K) + 16 * j;
                const __m512i t0 = _mm512_set1_epi32(A->pre[m][b][j]);
                __m512i t[2];
#pragma GCC unroll 4
                for (int tt = 0; tt < 4; tt++) {
                    const __m512i av = bcast32(a + 4 * tt);
#pragma GCC unroll 2
                    for (int g = 0; g < G; g++) t[g] = _mm512_dpbusd_epi32(tt ? t[g] : t0, u[g][tt], av);
                }
#pragma GCC unroll 2
                for (int g = 0; g < G; g++) {
                    if (nar) /* words (s_j, 0) */
                        is[g][m] = _mm512_dpwssd_epi32(is[g][m], t[g], _mm512_shuffle_epi8(sq[g], c->ext[jj]));
                    else
                        f[g][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t[g]), cb_sf(sq[g], jj, c), f[g][m]);
                }
            }
        }
    }
#pragma GCC unroll 2
    for (int g = 0; g < G; g++) {
        const __m512 dv = fp16x16(xb[g] + d_off(wt));
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            const __m512 s = nar ? _mm512_cvtepi32_ps(is[g][m]) : f[g][m];
            acc[g][m] = _mm512_fmadd_ps(s, _mm512_mul_ps(dv, _mm512_set1_ps(A->d[m][b])), acc[g][m]);
        }
    }
}

/* Y[m][n .. n + 16 NG) (=, or += with add) for NG consecutive 16-row groups
 * over kb blocks, their super-blocks interleaved (NG weight streams), G of
 * them at a time sharing the activation broadcasts. */
INLINE void gemv_groups(int wt, int cbits, int wide, int nar, int MR, int NG, int G, const uint8_t *xg, size_t gstride,
                        int64_t kb, ptrdiff_t jump, const gemv_acts *A, const consts *c, float *y, size_t ldy, int add) {
    const size_t xbs = xb_size(wt);
    __m512 acc[GEMV_NG_MAX][4];
#pragma GCC unroll 4
    for (int g = 0; g < NG; g++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) acc[g][m] = _mm512_setzero_ps();
    const int pf_l2 = c->pf_l2;
    const int64_t dist = pf_l2 ? LB_KQ_GEMV_PREFETCH_L2 : LB_KQ_GEMV_PREFETCH_L1;
    for (int64_t b = 0; b < kb; b++)
#pragma GCC unroll 4 /* the accumulators stay in registers */
        for (int g = 0; g < NG; g += G) {
            const uint8_t *xb[2], *pfp[2];
            /* near a stream's end, on into the stream the next call reads
             * (rows of K = 2048 are only 8 super-blocks long) */
            const ptrdiff_t pf = dist + ((b + 1) * (int64_t)xbs + dist > kb * (int64_t)xbs ? jump : 0);
#pragma GCC unroll 2
            for (int h = 0; h < G; h++) {
                xb[h] = xg + (g + h) * gstride + (size_t)b * xbs;
                pfp[h] = xb[h] + pf;
            }
            gemv_sb(wt, cbits, wide, nar, MR, G, xb, b, A, c, &acc[g], pfp);
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

/* Every (activation rows MR, groups NG, pairing G) case of a kind is its own
 * function, not one always-inlined body: one function holding all of them
 * took clang's ASan + UBSan build over 7 minutes for Q2_K alone. */
typedef void (*gemv_groups_fn)(const uint8_t *xg, size_t gstride, int64_t kb, ptrdiff_t jump, const gemv_acts *A,
                               const consts *c, float *y, size_t ldy, int add);
typedef struct {
    gemv_groups_fn run[4][GEMV_NG_MAX]; /* [MR - 1][ng - 1] */
    gemv_groups_fn pair[2];             /* MR = 1, ng = 2 and 4, groups in pairs (Q2_K) */
} gemv_fns;

#define GEMV_FN(name, WT, CB, WIDE, NAR, MR, NG, G)                                                            \
    static LB_VBMI __attribute__((noinline)) void name(const uint8_t *xg, size_t gstride, int64_t kb,          \
                                                       ptrdiff_t jump, const gemv_acts *A, const consts *c,    \
                                                       float *y, size_t ldy, int add) {                        \
        gemv_groups(WT, CB, WIDE, NAR, MR, NG, G, xg, gstride, kb, jump, A, c, y, ldy, add);                 \
    }
/* The cases of one activation row count MR, for up to 2 or 4 groups. */
#define GEMV_FNS_NG2(p, WT, CB, WIDE, NAR, MR)                                                                 \
    GEMV_FN(p##_##MR##_1, WT, CB, WIDE, NAR, MR, 1, 1) GEMV_FN(p##_##MR##_2, WT, CB, WIDE, NAR, MR, 2, 1)
#define GEMV_FNS_NG4(p, WT, CB, WIDE, NAR, MR)                                                                 \
    GEMV_FNS_NG2(p, WT, CB, WIDE, NAR, MR)                                                                     \
    GEMV_FN(p##_##MR##_3, WT, CB, WIDE, NAR, MR, 3, 1) GEMV_FN(p##_##MR##_4, WT, CB, WIDE, NAR, MR, 4, 1)
/* A kind's table `p` of 2-group cases (CB: single groups only) */
#define GEMV_TABLE_NG2(p, WT, CB, WIDE, NAR)                                                                   \
    GEMV_FNS_NG2(p, WT, CB, WIDE, NAR, 1) GEMV_FNS_NG2(p, WT, CB, WIDE, NAR, 2)                              \
    GEMV_FNS_NG2(p, WT, CB, WIDE, NAR, 3) GEMV_FNS_NG2(p, WT, CB, WIDE, NAR, 4)                              \
    static const gemv_fns p = {{{p##_1_1, p##_1_2}, {p##_2_1, p##_2_2}, {p##_3_1, p##_3_2}, {p##_4_1, p##_4_2}}, \
                               {NULL, NULL}};
/* ... and of 4-group cases with pairs for one activation row (Q2_K) */
#define GEMV_TABLE_NG4_PAIRS(p, WT, CB, WIDE, NAR)                                                             \
    GEMV_FNS_NG4(p, WT, CB, WIDE, NAR, 1) GEMV_FNS_NG4(p, WT, CB, WIDE, NAR, 2)                              \
    GEMV_FNS_NG4(p, WT, CB, WIDE, NAR, 3) GEMV_FNS_NG4(p, WT, CB, WIDE, NAR, 4)                              \
    GEMV_FN(p##_pair2, WT, CB, WIDE, NAR, 1, 2, 2) GEMV_FN(p##_pair4, WT, CB, WIDE, NAR, 1, 4, 2)             \
    static const gemv_fns p = {{{p##_1_1, p##_1_2, p##_1_3, p##_1_4},                                        \
                                {p##_2_1, p##_2_2, p##_2_3, p##_2_4},                                        \
                                {p##_3_1, p##_3_2, p##_3_3, p##_3_4},                                        \
                                {p##_4_1, p##_4_2, p##_4_3, p##_4_4}},                                       \
                               {p##_pair2, p##_pair4}};

/* Y[m][n0, n1) (M rows) for weights of kind wt, NG groups per pass, with
 * the instantiations in fns. */
INLINE void gemv(int wt, int NG, const gemv_fns *fns, int64_t K, const void *W, size_t wrs, int n0, int n1,
                 const void *A, size_t ars, int M, float *Y, size_t ldy) {
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
                    int32_t b128;
                    lb_q8_K_bsum_forms(row[b].bsums, b64, bsp, &b128);
                    if (wt == WQ2K) memcpy(acts.pre[m][b], bsp, sizeof bsp);
                    else memcpy(acts.pre[m][b], b64, sizeof b64);
                }
            }
            const size_t gstride = 16 * wrs;
            /* the next call (next 16 * NG rows) reads the same blocks of the next groups */
            const ptrdiff_t jump = (ptrdiff_t)(NG * gstride) - (ptrdiff_t)(kb * xbs);
            for (int n = n0; n < n1; n += 16 * NG) {
                const uint8_t *xg = (const uint8_t *)W + (size_t)(n / 16) * gstride + (size_t)b0 * xbs;
                float *y = Y + (size_t)m0 * ldy + n;
                const int ng = LB_MIN(NG, (n1 - n) / 16), add = b0 > 0; /* 1 .. NG */
                /* Q2_K decode: pairs of groups share the broadcasts (one
                 * activation row: more rows amortize them already, and would
                 * spill). CB pairs measured 3 % slower: their lookup decode
                 * keeps twice the planes and tables live. */
                const gemv_groups_fn f =
                    GEMV_PAIRS && mr == 1 && ng % 2 == 0 && fns->pair[ng / 4] ? fns->pair[ng / 4] : fns->run[mr - 1][ng - 1];
                f(xg, gstride, kb, jump, &acts, &c, y, ldy, add);
            }
        }
    }
}

#endif
