/* AVX-512 VNNI decode GEMV on the 16-row layouts of Q3_K, Q4_K, Q5_K, Q6_K
 * and IQ4_XS (formats/repack_kx.h) against 1 or 2 plain Q8_K rows at a
 * time.
 *
 * One or two 16-row groups are streamed side by side (lb_cpu_gemv_groups:
 * one on AMD, where fewer weight streams per thread read faster, two
 * elsewhere, as measured on Intel; docs/kquant-mixes.md), with software
 * prefetch. Per super-block and group: the weights are decoded in
 * registers 64 at a time
 * (kx_avx512_impl.h); each sub-block's products go into two int32 chains
 * (started at -bias * the activation sum), summed and multiplied by the
 * sub-block's integer scale into one exact int32 per super-block, as the
 * reference forms it: sumi = sum_j sc_j * isum_j, then one float step
 * d * d_a * sumi (- dmin * d_a * sum_j m_j bsum_j, the mins by vpdpwssd). */
#include "kernels/cpu.h"
#include "kernels/x86/kx_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kx_avx512_impl.h"
#include "kernels/x86/prefetch_x86.h"

/* Prefetch distance in bytes (lb_cpu_prefetch_l2: into L2 on AMD, L1 elsewhere). L1: measured on the
 * Xeon (SPR-class), 1 thread, 5632 x 2048, spread form: 12288 -> 3072 took Q4_K / Q6_K / IQ4_XS from
 * 69 / 59 / 63 % of the read bandwidth to 83 / 71 / 78 % (1024..2560 and 4096 no better). */
#ifndef LB_KX_GEMV_PREFETCH_L1
#define LB_KX_GEMV_PREFETCH_L1 3072
#endif
#ifndef LB_KX_GEMV_PREFETCH_L2
#define LB_KX_GEMV_PREFETCH_L2 6144
#endif

/* Kinds (bit kt) whose GEMV issues no software prefetch where it would go
 * to L2 (AMD): Q4_K's x-block is read strictly forward, the hardware
 * prefetcher keeps up and the prefetches only cost. Zen 4, bench/kernels
 * --no-gemm 5632x2048, three rounds alternated, GB/s one / two threads
 * (slow memory mode): Q4_K 31.0-32.7 / 37.3-37.6 without, 25.5-26.9 /
 * 35.4-36.3 with; IQ4_XS the same both ways (26.9-27.8); Q3_K 16.8-17.0
 * without against 24.2-24.4, Q5_K 10.9-11.6 against 27.4-28.2 (their
 * high-bit planes are read beside the codes, not after them), Q6_K
 * 17.5-18.1 against 23.8-24.8. */
#ifndef LB_KX_GEMV_PF_OFF_L2
#define LB_KX_GEMV_PF_OFF_L2 (1 << KQ4)
#endif

enum { GEMV_KC = 64 }; /* super-blocks per pass: their activation integers live on the stack */

typedef struct {
    const int8_t *qs[2]; /* row m's activations of the pass's first block (stride sizeof(block_q8_K)) */
    float d[2][GEMV_KC];
    int32_t pre[2][GEMV_KC][16]; /* kx_act_pre */
} gemv_acts;

/* 64-weight group g of one super-block: sumi[m] += its sub-blocks' integer
 * products times their scales. Each weight vector is decoded right before
 * its VNNI (all 64 at once, or all 16 scales, would not fit the 32
 * registers: gcc spilled). The group feeds 4 chains per activation row:
 * its 2 sub-blocks of 32 with 2 chains each, or its 4 sub-blocks of 16
 * with one each. */
INLINE void gemv_group(int kt, int MR, const uint8_t *xb, int64_t b, const gemv_acts *A, const kx_sstate *S, int g,
                       __m512i sumi[2], const uint8_t *pf, int pf_l2) {
    const int SB = kx_sb(kt), bias = kx_bias(kt), NJ = 64 / SB, NC = 4 / NJ; /* sub-blocks, chains each */
    /* the prefetch of one x-block (pf) a quarter per 64-weight group: spread
     * over the work, not in one burst (AVX2: docs/kquant-mixes.md) */
    if (pf) lb_prefetch_quarter(pf, kx_xbs(kt), g, pf_l2);
    __m512i s[2][4];
#pragma GCC unroll 2
    for (int m = 0; m < MR; m++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            s[m][c] = bias && c % NC == 0 ? _mm512_set1_epi32(A->pre[m][b][g * NJ + c / NC]) : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int t = 0; t < SB / 4; t++)
#pragma GCC unroll 4
        for (int jj = 0; jj < NJ; jj++) {
            const __m512i w = dec_vec(kt, xb, g, jj * (SB / 4) + t);
            const int c = jj * NC + t % NC;
#pragma GCC unroll 2
            for (int m = 0; m < MR; m++)
                s[m][c] = _mm512_dpbusd_epi32(s[m][c], w, bcast32(A->qs[m] + (size_t)b * sizeof(block_q8_K) + 64 * g + SB * jj + 4 * t));
        }
#pragma GCC unroll 4
    for (int jj = 0; jj < NJ; jj++) {
        const __m512i sc = kx_sc(kt, S, g * NJ + jj);
#pragma GCC unroll 2
        for (int m = 0; m < MR; m++) {
            const __m512i t = NC == 2 ? _mm512_add_epi32(s[m][jj * 2], s[m][jj * 2 + 1]) : s[m][jj];
            sumi[m] = _mm512_add_epi32(sumi[m], _mm512_mullo_epi32(t, sc));
        }
    }
}

/* One super-block b of one group (x-block xb) against MR activation rows:
 * acc[m] += its contribution: the exact int32 sum over its four 64-weight
 * groups, then one float step. */
INLINE void gemv_sb(int kt, int MR, const uint8_t *xb, int64_t b, const gemv_acts *A, __m512 acc[2],
                    const uint8_t *pf, int pf_l2) {
    kx_sstate S;
    kx_sload(kt, xb, &S);
    __m512i sumi[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    /* the four groups unrolled, so that g is a constant (Q6_K and Q3_K
     * address by g / 2 and g % 2: a run-time g cost a branch and address
     * arithmetic per weight vector); the barriers keep gcc from hoisting
     * the groups' loads into one another (it spilled without them) */
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        gemv_group(kt, MR, xb, b, A, &S, g, sumi, pf, pf_l2);
        __asm__ volatile("" ::: "memory");
    }
    const __m512 d = fp16x16(xb + kx_d_off(kt));
    __m512i mp[4];
    if (kx_has_min(kt)) kx_mp(&S, mp);
#pragma GCC unroll 2
    for (int m = 0; m < MR; m++) {
        __m512 t = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sumi[m]));
        if (kx_has_min(kt)) {
            __m512i ms = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) ms = _mm512_dpwssd_epi32(ms, mp[i], _mm512_set1_epi32(A->pre[m][b][i]));
            t = _mm512_fnmadd_ps(fp16x16(xb + KX_DMIN_OFF), _mm512_cvtepi32_ps(ms), t);
        }
        acc[m] = _mm512_fmadd_ps(t, _mm512_set1_ps(A->d[m][b]), acc[m]);
    }
}

/* The groups at g0[0] and g0[1] (the same pointer twice: one group),
 * super-blocks [b0, b0 + kb). */
INLINE void gemv_tile(int kt, int MR, const uint8_t *const g0[2], int64_t kb, ptrdiff_t jump, const gemv_acts *A,
                      __m512 acc[2][2]) {
    const size_t xbs = kx_xbs(kt);
    const int pf_l2 = lb_cpu_prefetch_l2(), two = g0[1] != g0[0];
    const ptrdiff_t dist = pf_l2 ? LB_KX_GEMV_PREFETCH_L2 : LB_KX_GEMV_PREFETCH_L1;
    const int pf_on = !(pf_l2 && (LB_KX_GEMV_PF_OFF_L2 >> kt & 1));
    for (int gi = 0; gi < 2; gi++)
        for (int m = 0; m < MR; m++) acc[gi][m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        /* prefetch ahead; near the end of this pass on into the blocks the next step reads */
        const ptrdiff_t ahead = (ptrdiff_t)(b * xbs) + dist, end = (ptrdiff_t)(kb * xbs);
        const ptrdiff_t pf = ahead < end ? ahead : ahead + jump;
        gemv_sb(kt, MR, g0[0] + (size_t)b * xbs, b, A, acc[0], pf_on ? g0[0] + pf : NULL, pf_l2);
        if (two) gemv_sb(kt, MR, g0[1] + (size_t)b * xbs, b, A, acc[1], pf_on ? g0[1] + pf : NULL, pf_l2);
    }
}

INLINE void gemv(int kt, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *Av, size_t ars, int M,
                 float *Y, size_t ldy) {
    const int64_t nb = K / QK_K;
    const size_t xbs = kx_xbs(kt), gstride = 16 * wrs;
    const int ng = lb_cpu_gemv_groups();
    gemv_acts A;
    for (int m0 = 0; m0 < M; m0 += 2) {
        const int mr = LB_MIN(2, M - m0);
        for (int64_t b0 = 0; b0 < nb; b0 += GEMV_KC) {
            const int64_t kb = LB_MIN((int64_t)GEMV_KC, nb - b0);
            for (int m = 0; m < mr; m++) {
                const block_q8_K *row = (const block_q8_K *)((const char *)Av + (size_t)(m0 + m) * ars) + b0;
                A.qs[m] = row->qs;
                for (int64_t b = 0; b < kb; b++) {
                    A.d[m][b] = row[b].d;
                    kx_act_pre(kt, row[b].bsums, A.pre[m][b]);
                }
            }
            /* past this pass's blocks a stream's prefetch moves on to the
             * same blocks of the next step (16 rows on per group) */
            const ptrdiff_t jump = (ptrdiff_t)(ng * gstride) - (ptrdiff_t)(kb * xbs);
            for (int n = n0; n < n1; n += 16 * ng) {
                const uint8_t *g0 = (const uint8_t *)W + (size_t)(n / 16) * gstride + (size_t)b0 * xbs;
                const uint8_t *g[2] = {g0, ng == 2 && n + 16 < n1 ? g0 + gstride : g0};
                __m512 acc[2][2];
                if (mr == 2) gemv_tile(kt, 2, g, kb, jump, &A, acc);
                else gemv_tile(kt, 1, g, kb, jump, &A, acc);
                for (int gi = 0; gi < ng && n + 16 * gi < n1; gi++)
                    for (int m = 0; m < mr; m++) {
                        float *p = Y + (size_t)(m0 + m) * ldy + n + 16 * gi;
                        __m512 o = acc[gi][m];
                        if (b0 > 0) o = _mm512_add_ps(o, _mm512_loadu_ps(p));
                        _mm512_storeu_ps(p, o);
                    }
            }
        }
    }
}

#define KX_GEMV(w, KT)                                                                                        \
    LB_KX512 void lb_gemv_##w##x16_q8_K_16x4_avx512vnni(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                        const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        gemv(KT, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                                       \
    }
KX_GEMV(q3_K, KQ3)
KX_GEMV(q4_K, KQ4)
KX_GEMV(q5_K, KQ5)
KX_GEMV(q6_K, KQ6)
KX_GEMV(iq4_xs, KIQ4)
#endif
