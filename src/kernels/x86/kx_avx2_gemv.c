/* AVX2 and AVX2 + AVX-VNNI decode GEMV on the 16-row layouts of
 * formats/repack_kx.h (Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS against plain Q8_K
 * rows; Q4_1, Q5_1 against Q8_1; Q5_0 against Q8_0), 1 or 2 activation rows
 * per pass.
 *
 * Bandwidth bound: the weights are streamed once, one 16-row group after the
 * other, so a thread's range is one sequential stream (groups are contiguous
 * in memory), with software prefetch a few KiB ahead (into L2 on AMD, L1
 * elsewhere: lb_cpu_prefetch_l2). Each x-block is decoded in registers in
 * the order its bytes are stored, each weight vector loaded once: a set of
 * sub-blocks whose columns come from the same vectors (Q4_K: the low and
 * high nibbles of a pair; Q6_K: the nibbles of one ql vector with their qh
 * bits) keeps one chain per sub-block, 8-row half and row, and with one row
 * the VNNI chains split by column parity: about 8 in flight, as vpdpbusd's
 * latency (4 cycles, two per cycle on Zen 5) wants. Per sub-block:
 *   int32 (vpdpbusd chain, or int16 vpmaddubsw sums), times its integer
 *   scale (vpmulld, or folded into vpmaddwd), summed into one exact int32
 *   per super-block and row, then one float step
 *   d * d_a * sumi (- dmin * d_a * sum_j m_j bsum_j for the mins).
 * The legacy types scale each 32-weight block in float (d_w d_a isum + m s).
 * On Zen 5 two vector loads per cycle bound this code as much as the ALU:
 * hence loads pinned to registers (ld8r), act broadcasts shared by the two
 * halves, and the activation-side sums formed once per block (Q8_K bsums)
 * or per call (Q8_0 / Q8_1 blocks). */
#include "kernels/x86/kx_avx2.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/cpu.h"
#include "kernels/x86/kx_avx2_impl.h"
#include "kernels/x86/prefetch_x86.h"

/* Software prefetch distance in bytes, into L1 / into L2 (bench/kernels). */
#ifndef LB_KX2_GEMV_PF_L1
#define LB_KX2_GEMV_PF_L1 3072
#endif
#ifndef LB_KX2_GEMV_PF_L2
#define LB_KX2_GEMV_PF_L2 6144
#endif

typedef struct {
    const uint8_t *end; /* end of the thread's weights: no prefetch past it */
    ptrdiff_t dist;
    int l2;
} pf_t;

INLINE void prefetch_block(const pf_t *pf, const uint8_t *xb, size_t xbs) {
    const uint8_t *p = xb + pf->dist;
    if (p < pf->end) lb_prefetch_span(p, LB_MIN(xbs, (size_t)(pf->end - p)), pf->l2);
}

/* Share i of n of a super-block's prefetch, asked for where its compute
 * runs: a burst of a whole 2304-byte Q4_K x-block per x-block left the GEMV
 * at ~74 % of the read bandwidth on Zen 3, spread out it streams like a
 * plain sequential read (docs/kquant-mixes.md; the read-loop measurement
 * in docs/qigen.md, "Prefetch"). */
INLINE void prefetch_share(const pf_t *pf, const uint8_t *xb, size_t xbs, int i, int n) {
    const size_t share = (xbs / n + 63) & ~(size_t)63;
    prefetch_block(pf, xb + i * share, share);
}

INLINE int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* AVX2 bias term of Q3_K / Q6_K: int16 scale pairs (sc_2i, sc_2i+1) of half h,
 * against the bsum dwords (bsums[2i], bsums[2i+1]) of the plain Q8_K row */
INLINE void scale_pairs(int kt, const uint8_t *xb, int h, __m256i sp[8]) {
    __m256i sq[4];
    kx_sq(kt, xb, h, sq);
    const char z = (char)0x80;
    const __m256i p01 = _mm256_broadcastsi128_si256(_mm_setr_epi8(z, 0, z, 1, z, 4, z, 5, z, 8, z, 9, z, 12, z, 13));
    const __m256i p23 = _mm256_broadcastsi128_si256(_mm_setr_epi8(z, 2, z, 3, z, 6, z, 7, z, 10, z, 11, z, 14, z, 15));
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        sp[2 * q] = _mm256_srai_epi16(_mm256_shuffle_epi8(sq[q], p01), 8);
        sp[2 * q + 1] = _mm256_srai_epi16(_mm256_shuffle_epi8(sq[q], p23), 8);
    }
}

/* ---- super-block kinds ---- */

/* chain += u . a: VNNI int32 lanes; AVX2 the int16 pair sums (first: a new chain) */
INLINE __m256i dot4(int vnni, __m256i ch, __m256i u, __m256i a, int first) {
    return vnni ? dpbusd(ch, u, a) : madd16(ch, u, a, first);
}

/* acc += chain x its sub-block scale: VNNI int32 chain (shifted down by sh:
 * the x16 high nibbles), AVX2 int16 pair sums against the int16 scale */
INLINE __m256i close_sb(int vnni, __m256i acc, __m256i ch, __m256i sc, int sh) {
    if (!vnni) return _mm256_add_epi32(acc, _mm256_madd_epi16(ch, sc));
    return _mm256_add_epi32(acc, _mm256_mullo_epi32(sh ? _mm256_srai_epi32(ch, sh) : ch, sc));
}

/* One super-block xb of a group against MR rows (block b of each): facc[h][m] +=.
 * The columns come in the order their bytes are stored, each weight vector
 * loaded once; a set of sub-blocks whose columns share those vectors keeps
 * one chain per (sub-block, half, row). */
INLINE void gemv_sb(int kt, int vnni, int MR, const uint8_t *xb, const block_q8_K *const *a, const pf_t *pf,
                    __m256 facc[2][2]) {
    const int G = kx_cols16(kt), bias16 = kx_bias16(kt);
    const size_t xbs = kx_xbs(kt);
    const __m256i m4 = b8(0x0F);

    /* activation side: VNNI chain starts -bias * bsum (u unbiased here) and min pairs */
    int32_t init[2][16] __attribute__((aligned(32)));
    int32_t mpair[2][8] __attribute__((aligned(32)));
#pragma GCC unroll 2
    for (int m = 0; m < MR; m++) {
        const __m256i bs = _mm256_loadu_si256((const __m256i *)a[m]->bsums);
        if (vnni && kt == KIQ4) {
            _mm256_store_si256((__m256i *)init[m], _mm256_madd_epi16(bs, _mm256_set1_epi16(-128)));
        } else if (vnni && bias16) {
            /* in int32: 32 * |bsum| reaches 65024 */
            const __m256i k = _mm256_set1_epi32(-bias16);
            _mm256_store_si256((__m256i *)init[m], _mm256_mullo_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(bs)), k));
            _mm256_store_si256((__m256i *)init[m] + 1, _mm256_mullo_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(bs, 1)), k));
        }
        if (kx_has_min(kt)) kx_act_mins(_mm256_madd_epi16(bs, _mm256_set1_epi16(1)), mpair[m]);
    }

    __m256i sc[2][16];
    kx_scales(kt, !vnni, xb, 0, sc[0]);
    kx_scales(kt, !vnni, xb, 1, sc[1]);
    /* the scales and chain starts stay in memory, read where used: escaped,
     * so the barriers below keep GCC from hoisting their loads (and spilling) */
    __asm__ volatile("" : : "r"(sc), "r"(init), "r"(mpair) : "memory");

    __m256i acc[2][2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
        for (int m = 0; m < MR; m++) acc[h][m] = _mm256_setzero_si256();

    /* VNNI: two chains per sub-block (even and odd columns) when MR = 1, so
     * about 8 vpdpbusd chains are in flight (latency 4, two per cycle) */
    const int NP = vnni && MR == 1 ? 2 : 1;
    const __m256i z = _mm256_setzero_si256();

    if (kt == KQ4 || kt == KQ5) {
        /* pair p: qs vector 8p + t holds column t of sub-block 2p (low nibbles)
         * and of 2p + 1 (high); VNNI Q4_K takes the high nibble in place (x16) */
        const int hi16 = vnni && kt == KQ4;
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) {
            prefetch_share(pf, xb, xbs, p, 4);
            /* reload per set: values kept across sets would only be spilled */
            __asm__ volatile("" ::: "memory");
            __m256i ch[2][2][2][2]; /* [parity][low / high][half][row] */
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) {
                const int par = t % NP;
                /* both halves' columns share the activation broadcasts; Q5_K one
                 * half at a time (its bits would spill) */
                const int HS = kt == KQ5 ? 1 : 2;
#pragma GCC unroll 2
                for (int h0 = 0; h0 < 2; h0 += HS) {
                    __m256i lo[2], hi[2];
#pragma GCC unroll 2
                    for (int h = h0; h < h0 + HS; h++) {
                        const __m256i v = ld8r(xb, (kt == KQ4 ? 256 : 768) + 64 * (8 * p + t), h);
                        lo[h] = _mm256_and_si256(v, m4);
                        hi[h] = hi16 ? _mm256_and_si256(v, b8(0xF0)) : nib(v, 1);
                        if (kt == KQ5) { /* fifth bits 2p, 2p + 1 of qh vector t */
                            const __m256i q = ld8r(xb, 256 + 64 * t, h);
                            lo[h] = _mm256_or_si256(lo[h], _mm256_and_si256(shl16(q, 4 - 2 * p), b8(0x10)));
                            hi[h] = _mm256_or_si256(hi[h], _mm256_and_si256(shl16(q, 3 - 2 * p), b8(0x10)));
                        }
                    }
#pragma GCC unroll 2
                    for (int m = 0; m < MR; m++) {
                        const __m256i al = bcast32(a[m]->qs + 64 * p + 4 * t), ah = bcast32(a[m]->qs + 64 * p + 32 + 4 * t);
#pragma GCC unroll 2
                        for (int h = h0; h < h0 + HS; h++) {
                            if (vnni) {
                                ch[par][0][h][m] = dpbusd(t < NP ? z : ch[par][0][h][m], lo[h], al);
                                ch[par][1][h][m] = dpbusd(t < NP ? z : ch[par][1][h][m], hi[h], ah);
                            } else {
                                ch[0][0][h][m] = dot4(0, ch[0][0][h][m], lo[h], al, t % G == 0);
                                ch[0][1][h][m] = dot4(0, ch[0][1][h][m], hi[h], ah, t % G == 0);
                                if (t % G == G - 1) {
                                    acc[h][m] = close_sb(0, acc[h][m], ch[0][0][h][m], sc[h][2 * p], 0);
                                    acc[h][m] = close_sb(0, acc[h][m], ch[0][1][h][m], sc[h][2 * p + 1], 0);
                                }
                            }
                        }
                    }
                }
            }
            if (vnni)
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                    for (int m = 0; m < MR; m++)
#pragma GCC unroll 2
                        for (int s = 0; s < 2; s++) {
                            const __m256i c = NP == 2 ? _mm256_add_epi32(ch[0][s][h][m], ch[1][s][h][m]) : ch[0][s][h][m];
                            acc[h][m] = close_sb(1, acc[h][m], c, sc[h][2 * p + s], s && hi16 ? 4 : 0);
                        }
        }
    } else if (kt == KIQ4) {
        /* sub-blocks 2k, 2k + 1 (ib): qs vectors 4ib + t, low nibbles column t,
         * high t + 4 */
        const __m256i book = kx_book(vnni);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            prefetch_share(pf, xb, xbs, k, 4);
            __asm__ volatile("" ::: "memory");
            __m256i ch[2][2][2][2]; /* [low / high][sub-block][half][row] */
#pragma GCC unroll 2
            for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                    for (int m = 0; m < MR; m++) ch[0][i][h][m] = vnni ? _mm256_set1_epi32(init[m][2 * k + i]) : z;
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++)
#pragma GCC unroll 2
                for (int i = 0; i < 2; i++) {
                    const int ib = 2 * k + i;
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++) {
                        const __m256i v = ld8r(xb, 128 + 64 * (4 * ib + t), h);
                        const __m256i lo = _mm256_shuffle_epi8(book, _mm256_and_si256(v, m4));
                        const __m256i hi = _mm256_shuffle_epi8(book, nib(v, 1));
#pragma GCC unroll 2
                        for (int m = 0; m < MR; m++) {
                            const __m256i al = bcast32(a[m]->qs + 32 * ib + 4 * t), ah = bcast32(a[m]->qs + 32 * ib + 16 + 4 * t);
                            if (vnni) {
                                ch[0][i][h][m] = dpbusd(ch[0][i][h][m], lo, al);
                                ch[1][i][h][m] = dpbusd(t ? ch[1][i][h][m] : z, hi, ah);
                            } else {
                                /* |a| x sign(w, a): pairs <= 2 * 127 * 128, each to int32 at once */
                                const __m256i pl = _mm256_maddubs_epi16(_mm256_sign_epi8(al, al), _mm256_sign_epi8(lo, al));
                                const __m256i ph = _mm256_maddubs_epi16(_mm256_sign_epi8(ah, ah), _mm256_sign_epi8(hi, ah));
                                acc[h][m] = _mm256_add_epi32(acc[h][m], _mm256_add_epi32(_mm256_madd_epi16(pl, sc[h][ib]),
                                                                                         _mm256_madd_epi16(ph, sc[h][ib])));
                            }
                        }
                    }
                }
            if (vnni)
#pragma GCC unroll 2
                for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                        for (int m = 0; m < MR; m++)
                            acc[h][m] = close_sb(1, acc[h][m], _mm256_add_epi32(ch[0][i][h][m], ch[1][i][h][m]), sc[h][2 * k + i], 0);
        }
    } else {
        /* Q6_K / Q3_K: column t of sub-block 8n + 2q + tq (t in 4tq .. 4tq + 3)
         * is weights 128n + 32q + 4t. A set (n, tq, s) takes q = s and s + 2:
         * for Q6_K the low and high nibbles of ql vector 16n + 8s + t, with bits
         * 2s and 4 + 2s of qh vector 8n + t; for Q3_K bits 2q of qs vector
         * 8n + t, the third bits 4n + q of hmask vector t. Both halves share
         * the activation broadcasts: 2 x 2 x 2 parities = 8 chains. */
#pragma GCC unroll 2
        for (int n = 0; n < 2; n++)
#pragma GCC unroll 2
            for (int tq = 0; tq < 2; tq++)
#pragma GCC unroll 2
                for (int sq = 0; sq < 2; sq++) {
                    prefetch_share(pf, xb, xbs, 4 * n + 2 * tq + sq, 8);
                    __asm__ volatile("" ::: "memory");
                    __m256i ch[2][2][2][2]; /* [parity][q = sq, sq + 2][half][row] */
                    const int j0 = 8 * n + 2 * sq + tq, j1 = j0 + 4;
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                        for (int m = 0; m < MR; m++) {
                            ch[0][0][h][m] = vnni ? _mm256_set1_epi32(init[m][j0]) : z;
                            ch[0][1][h][m] = vnni ? _mm256_set1_epi32(init[m][j1]) : z;
                        }
#pragma GCC unroll 4
                    for (int cc = 0; cc < 4; cc++) {
                        /* a column's loads after the last one's products: GCC would
                         * hoist them all and spill */
                        __asm__ volatile("" ::: "memory");
                        const int t = 4 * tq + cc, par = cc % NP;
                        __m256i u[2][2]; /* [q = sq, sq + 2][half] */
#pragma GCC unroll 2
                        for (int h = 0; h < 2; h++) {
                            if (kt == KQ6) {
                                const __m256i V = ld8r(xb, lb_kx_q6_ql(16 * n + 8 * sq + t), h);
                                const __m256i H = ld8r(xb, lb_kx_q6_qh(8 * n + t), h), m2 = b8(0x30);
                                u[0][h] = _mm256_or_si256(_mm256_and_si256(V, m4), _mm256_and_si256(shl16(H, 4 - 2 * sq), m2));
                                u[1][h] = _mm256_or_si256(nib(V, 1), _mm256_and_si256(shl16(H, -2 * sq), m2));
                            } else {
                                const __m256i Q = ld8r(xb, 512 + 64 * (8 * n + t), h), M = ld8r(xb, 64 * t, h);
#pragma GCC unroll 2
                                for (int i = 0; i < 2; i++) {
                                    const int q = sq + 2 * i, bit = 4 * n + q;
                                    const __m256i lo = _mm256_and_si256(q ? _mm256_srli_epi16(Q, 2 * q) : Q, b8(3));
                                    const __m256i hb = bit <= 2 ? _mm256_slli_epi16(M, 2 - bit) : _mm256_srli_epi16(M, bit - 2);
                                    u[i][h] = _mm256_or_si256(lo, _mm256_and_si256(hb, b8(4)));
                                }
                            }
                        }
#pragma GCC unroll 2
                        for (int m = 0; m < MR; m++)
#pragma GCC unroll 2
                            for (int i = 0; i < 2; i++) {
                                const __m256i av = bcast32(a[m]->qs + 128 * n + 32 * (sq + 2 * i) + 4 * t);
#pragma GCC unroll 2
                                for (int h = 0; h < 2; h++) {
                                    if (vnni) {
                                        ch[par][i][h][m] = dpbusd(par && cc < NP ? z : ch[par][i][h][m], u[i][h], av);
                                    } else {
                                        ch[0][i][h][m] = madd16(ch[0][i][h][m], u[i][h], av, cc % G == 0);
                                        if (cc % G == G - 1)
                                            acc[h][m] = close_sb(0, acc[h][m], ch[0][i][h][m], sc[h][i ? j1 : j0], 0);
                                    }
                                }
                            }
                    }
                    if (vnni)
#pragma GCC unroll 2
                        for (int i = 0; i < 2; i++)
#pragma GCC unroll 2
                            for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                                for (int m = 0; m < MR; m++) {
                                    const __m256i c = NP == 2 ? _mm256_add_epi32(ch[0][i][h][m], ch[1][i][h][m]) : ch[0][i][h][m];
                                    acc[h][m] = close_sb(1, acc[h][m], c, sc[h][i ? j1 : j0], 0);
                                }
                }
    }

#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256 d = fp16x8(xb + kx_d_off(kt) + 16 * h);
        __m256i sp[8], mp[4];
        if (!vnni && bias16) scale_pairs(kt, xb, h, sp);
        if (kx_has_min(kt)) kx_min_pairs(xb, h, mp);
#pragma GCC unroll 2
        for (int m = 0; m < MR; m++) {
            __m256i s = acc[h][m];
            if (!vnni && bias16) {
                /* - bias * sum_j sc_j bsum_j */
                __m256i t = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++) t = _mm256_add_epi32(t, _mm256_madd_epi16(sp[i], bcast32(a[m]->bsums + 2 * i)));
                s = _mm256_sub_epi32(s, _mm256_slli_epi32(t, bias16 == 32 ? 5 : 2));
            }
            __m256 f = _mm256_mul_ps(d, _mm256_cvtepi32_ps(s));
            if (kx_has_min(kt))
                f = _mm256_fnmadd_ps(fp16x8(xb + KX_DMIN_OFF + 16 * h), _mm256_cvtepi32_ps(kx_mins_dot(mp, mpair[m])), f);
            facc[h][m] = _mm256_fmadd_ps(f, _mm256_set1_ps(a[m]->d), facc[h][m]);
        }
    }
}

/* ---- legacy kinds: one 32-weight block ---- */

/* The activation side of the legacy kinds for LKC blocks of MR rows, formed
 * once per call (not per group): the scale, Q8_1's s, and Q5_0's bias
 * -16 * sum(a) (AVX2, added) or -128 * sum(a) (VNNI chain start, the weights
 * decoded to w + 128). */
enum { LKC = 256 };
typedef struct {
    float d[2][LKC], s[2][LKC];
    int32_t bias[2][LKC];
    const int8_t *qs[2]; /* block b0's bytes; blocks sizeof(act block) apart */
} lacts;

INLINE void legacy_acts(int kt, int vnni, int MR, const void *const *rows, int64_t b0, int64_t kb, lacts *L) {
    for (int m = 0; m < MR; m++) {
        if (kt == KL50) {
            const block_q8_0 *a = (const block_q8_0 *)rows[m] + b0;
            L->qs[m] = a->qs;
            for (int64_t b = 0; b < kb; b++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)a[b].qs);
                const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(b8(1), v), _mm256_set1_epi16(1));
                L->d[m][b] = _cvtsh_ss(a[b].d);
                L->bias[m][b] = hsum_epi32(s4) * (vnni ? -128 : -16);
            }
        } else {
            const block_q8_1 *a = (const block_q8_1 *)rows[m] + b0;
            L->qs[m] = a->qs;
            for (int64_t b = 0; b < kb; b++) L->d[m][b] = _cvtsh_ss(a[b].d), L->s[m][b] = _cvtsh_ss(a[b].s);
        }
    }
}

INLINE void gemv_block(int kt, int vnni, int MR, const uint8_t *xb, const lacts *L, int64_t b, __m256 facc[2][2]) {
    const int G = kx_cols16(kt);
    const int hi16 = vnni && kt == KL41; /* VNNI Q4_1: high nibbles in place (x16) */
    const int qoff = kt == KL41 ? 64 : kt == KL50 ? 0 : 128, p5off = kt == KL50 ? 256 : 64;
    const __m256i m4 = b8(0x0F), ones16 = _mm256_set1_epi16(1);
    const size_t abs = kt == KL50 ? sizeof(block_q8_0) : sizeof(block_q8_1);
    __m256i bias[2];
    const int8_t *qs[2];
#pragma GCC unroll 2
    for (int m = 0; m < MR; m++) {
        qs[m] = L->qs[m] + (size_t)b * abs;
        bias[m] = kt == KL50 ? _mm256_set1_epi32(L->bias[m][b]) : _mm256_setzero_si256();
    }
    /* [low / high nibbles][half][row]: two chains of 4 (VNNI), or the int16 sums */
    __m256i ch[2][2][2], is[2][2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
        for (int m = 0; m < MR; m++) is[h][m] = kt == KL50 && !vnni ? bias[m] : _mm256_setzero_si256();
    __m256i p5[2];
    if (kt != KL41) p5[0] = ld8r(xb, p5off, 0), p5[1] = ld8r(xb, p5off, 1);
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        /* qs vector t: low nibbles weights 4t, high 16 + 4t; Q5 fifth bits at
         * 8e + 2t (low) and 8e + 2t + 1 (high) of the P5 dword */
        __m256i lo[2], hi[2];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256i v = ld8r(xb, qoff + 64 * t, h);
            lo[h] = _mm256_and_si256(v, m4);
            hi[h] = hi16 ? _mm256_and_si256(v, b8(0xF0)) : nib(v, 1);
            if (kt != KL41) {
                lo[h] = _mm256_or_si256(lo[h], _mm256_and_si256(shl16(p5[h], 4 - 2 * t), b8(0x10)));
                hi[h] = _mm256_or_si256(hi[h], _mm256_and_si256(shl16(p5[h], 3 - 2 * t), b8(0x10)));
                if (kt == KL50 && vnni) lo[h] = _mm256_add_epi8(lo[h], b8(112)), hi[h] = _mm256_add_epi8(hi[h], b8(112));
            }
        }
#pragma GCC unroll 2
        for (int m = 0; m < MR; m++) {
            const __m256i al = bcast32(qs[m] + 4 * t), ah = bcast32(qs[m] + 16 + 4 * t);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                if (vnni) {
                    ch[0][h][m] = dpbusd(t ? ch[0][h][m] : bias[m], lo[h], al);
                    ch[1][h][m] = dpbusd(t ? ch[1][h][m] : _mm256_setzero_si256(), hi[h], ah);
                } else {
                    /* two columns per t; G to an int16 chain */
                    ch[0][h][m] = madd16(ch[0][h][m], lo[h], al, (2 * t) % G == 0);
                    ch[0][h][m] = madd16(ch[0][h][m], hi[h], ah, 0);
                    if ((2 * t + 2) % G == 0) is[h][m] = _mm256_add_epi32(is[h][m], _mm256_madd_epi16(ch[0][h][m], ones16));
                }
            }
        }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256 dw = fp16x8(xb + kx_d_off(kt) + 16 * h);
#pragma GCC unroll 2
        for (int m = 0; m < MR; m++) {
            const __m256i s = vnni ? _mm256_add_epi32(ch[0][h][m], hi16 ? _mm256_srai_epi32(ch[1][h][m], 4) : ch[1][h][m])
                                   : is[h][m];
            facc[h][m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(L->d[m][b])), facc[h][m]);
            if (kx_has_min(kt))
                facc[h][m] = _mm256_fmadd_ps(fp16x8(xb + KX_DMIN_OFF + 16 * h), _mm256_set1_ps(L->s[m][b]), facc[h][m]);
        }
    }
}

/* ---- driver: groups of [n0, n1), MR rows at a time ---- */

INLINE void gemv_rows(int kt, int vnni, int MR, int64_t K, const uint8_t *W, size_t wrs, int n0, int n1,
                      const void *const *rows, float *const *y) {
    const int64_t nb = K / kx_blck(kt);
    const size_t xbs = kx_xbs(kt), gsize = 16 * wrs;
    const int l2 = lb_cpu_prefetch_l2();
    const pf_t pf = {W + (size_t)(n1 / 16) * gsize, l2 ? LB_KX2_GEMV_PF_L2 : LB_KX2_GEMV_PF_L1, l2};
    /* legacy: LKC blocks per pass (one pass up to K = 8192: the stream stays sequential) */
    const int64_t kc = kx_legacy(kt) ? LKC : nb;
    lacts L;
    for (int64_t b0 = 0; b0 < nb; b0 += kc) {
        const int64_t kb = LB_MIN(kc, nb - b0);
        if (kx_legacy(kt)) legacy_acts(kt, vnni, MR, rows, b0, kb, &L);
        for (int n = n0; n < n1; n += 16) {
            const uint8_t *g = W + (size_t)(n / 16) * gsize + (size_t)b0 * xbs;
            __m256 facc[2][2];
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                for (int m = 0; m < MR; m++) facc[h][m] = _mm256_setzero_ps();
            for (int64_t b = 0; b < kb; b++) {
                const uint8_t *xb = g + (size_t)b * xbs;
                if (kx_legacy(kt)) {
                    prefetch_block(&pf, xb, xbs); /* 320-384 bytes: one burst is fine */
                    gemv_block(kt, vnni, MR, xb, &L, b, facc);
                } else {
                    const block_q8_K *a[2];
#pragma GCC unroll 2
                    for (int m = 0; m < MR; m++) a[m] = (const block_q8_K *)rows[m] + b;
                    gemv_sb(kt, vnni, MR, xb, a, &pf, facc);
                }
            }
#pragma GCC unroll 2
            for (int m = 0; m < MR; m++)
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    float *p = y[m] + n + 8 * h;
                    _mm256_storeu_ps(p, b0 ? _mm256_add_ps(facc[h][m], _mm256_loadu_ps(p)) : facc[h][m]);
                }
        }
    }
}

INLINE void gemv(int kt, int vnni, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars,
                 int M, float *Y, size_t ldy) {
    for (int m0 = 0; m0 < M; m0 += 2) {
        const int mr = LB_MIN(2, M - m0);
        const void *rows[2] = {(const char *)A + (size_t)m0 * ars, (const char *)A + (size_t)(m0 + mr - 1) * ars};
        float *const y[2] = {Y + (size_t)m0 * ldy, Y + (size_t)(m0 + mr - 1) * ldy};
        if (mr == 2) gemv_rows(kt, vnni, 2, K, W, wrs, n0, n1, rows, y);
        else gemv_rows(kt, vnni, 1, K, W, wrs, n0, n1, rows, y);
    }
}

#define KX2_GEMV_ISA(w, a, KT, ISA, VNNI)                                                                   \
    LB_KX2 void lb_gemv_##w##x16_##a##_16x4_##ISA(int64_t K, const void *W, size_t wrs, int n0, int n1,     \
                                                  const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        gemv(KT, VNNI, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                              \
    }
#define KX2_GEMV(w, a, KT) KX2_GEMV_ISA(w, a, KT, avx2, 0) KX2_GEMV_ISA(w, a, KT, avxvnni, 1)
KX2_GEMV(q3_K, q8_K, KQ3)
KX2_GEMV(q4_K, q8_K, KQ4)
KX2_GEMV(q5_K, q8_K, KQ5)
KX2_GEMV(q6_K, q8_K, KQ6)
KX2_GEMV(iq4_xs, q8_K, KIQ4)
KX2_GEMV(q4_1, q8_1, KL41)
KX2_GEMV(q5_0, q8_0, KL50)
KX2_GEMV(q5_1, q8_1, KL51)
#endif
