/* AVX2 and AVX2 + AVX-VNNI prefill GEMM on the 16-row layouts of
 * formats/repack_kx.h, against 4-row activation groups: lb_block_q8_Kx4
 * (Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS), lb_block_q8_0x4v (Q5_0),
 * lb_block_q8_1x4 (Q4_1, Q5_1).
 *
 * The weights of one 16-row group x KC blocks are decoded once
 * (kx_avx2_impl.h's kx_col) into an L1 buffer: the column bytes, the integer
 * sub-block scales in the form the product step wants, the float super-block
 * scales and the mins. Then every activation group runs over the buffer: 2
 * halves x 4 rows = 8 chains per sub-block (vpdpbusd, or int16 vpmaddubsw
 * sums), each column two weight loads for 8 products; VNNI broadcasts the
 * activation dwords from one 16-byte load per 4 columns and row with
 * vpshufd, which runs beside vpdpbusd (two vector loads per cycle on Zen 5
 * would otherwise bound it). A sub-block closes with its integer scale
 * (vpmulld, or the vpmaddwd of the pair sums), a super-block with one float
 * step per chain, as the GEMV (kx_avx2_gemv.c). The activation sums a kind
 * needs come from the group's bias forms: b64 = -64 * bsum is the chain
 * start of Q3_K / Q6_K (decoded to w + 64), 2 (b64 + b64') of IQ4_XS
 * (w + 128), bsp the int16 pairs of the AVX2 bias term, b128 / 2 b8 Q5_0's.
 * Measured on one Zen 5 core (bench/kernels' shapes, kernel alone): about
 * 400 GOPS with AVX-VNNI (70 % of the ymm vpdpbusd peak; vpmulld takes the
 * rest for Q6_K), 290-375 without (IQ4_XS's sign trick: 190). */
#include "kernels/x86/kx_avx2.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kx_avx2_impl.h"

enum { KC = 2, KCL = 16 }; /* super-blocks / legacy blocks per decoded tile */

typedef struct {
    __m256i u[KC][64][2];  /* [super-block][column][half] */
    __m256i sc[KC][16][2]; /* sub-block scales (int32, or int16 pairs for AVX2) */
    __m256i xp[KC][8][2];  /* Q4_K, Q5_K: min pairs (4); AVX2 Q3_K, Q6_K: bias scale pairs (8) */
    __m256 d[KC][2], dmin[KC][2];
} kbuf;

typedef struct {
    __m256i u[KCL][8][2];
    __m256 d[KCL][2], m[KCL][2];
} lbuf;

/* AVX2 bias term of Q3_K / Q6_K against lb_block_q8_Kx4.bsp (dword p =
 * (16 bsum_lo, bsum_lo+4), lo = p + 4 (p / 4)): int16 pairs (sc_lo,
 * 16 sc_lo+4), so the dot is 16 sum_j sc_j bsum_j. */
INLINE void bsp_pairs(int kt, const uint8_t *xb, int h, __m256i sp[8]) {
    __m256i sq[4];
    kx_sq(kt, xb, h, sq);
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++) {
        const __m256i lo = byte_to_lane(sq[p < 4 ? 0 : 2], p % 4, 1, 1);
        const __m256i hi = byte_to_lane(sq[p < 4 ? 1 : 3], p % 4, 1, 1);
        /* lo in the low int16, 16 * hi in the high one */
        sp[p] = _mm256_blend_epi16(lo, _mm256_slli_epi16(hi, 4), 0xAA);
    }
}

INLINE void decode_sb(int kt, int vnni, const uint8_t *xb, kbuf *B, int b) {
    const __m256i book = kt == KIQ4 ? kx_book(vnni) : _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        for (int c = 0; c < 64; c++) B->u[b][c][h] = kx_col(kt, vnni, xb, h, c, book);
        __m256i sc[16];
        kx_scales(kt, !vnni, xb, h, sc);
        for (int j = 0; j < kx_nsub(kt); j++) B->sc[b][j][h] = sc[j];
        B->d[b][h] = fp16x8(xb + kx_d_off(kt) + 16 * h);
        if (kx_has_min(kt)) {
            __m256i mp[4];
            kx_min_pairs(xb, h, mp);
            for (int i = 0; i < 4; i++) B->xp[b][i][h] = mp[i];
            B->dmin[b][h] = fp16x8(xb + KX_DMIN_OFF + 16 * h);
        } else if (!vnni && kx_bias16(kt)) {
            __m256i sp[8];
            bsp_pairs(kt, xb, h, sp);
            for (int i = 0; i < 8; i++) B->xp[b][i][h] = sp[i];
        }
    }
}

/* The activation-side integers of the group's rows in block a: VNNI chain
 * starts of IQ4_XS (init[m][ib]) and the min pairs (kx_act_mins). */
INLINE void act_pre(int kt, int vnni, const lb_block_q8_Kx4 *a, int32_t init[4][8], int32_t mpair[4][8]) {
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        if (!(kt == KIQ4 && vnni) && !kx_has_min(kt)) continue;
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)a->b64[m]);
        const __m256i v1 = _mm256_loadu_si256((const __m256i *)a->b64[m] + 1);
        /* hadd: pair sums [0 1 4 5 | 2 3 6 7] -> in order: -64 * the 32-sums */
        const __m256i s = _mm256_permute4x64_epi64(_mm256_hadd_epi32(v0, v1), 0xD8);
        if (kt == KIQ4) _mm256_storeu_si256((__m256i *)init[m], _mm256_slli_epi32(s, 1)); /* -128 bsum32 */
        else kx_act_mins(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_srai_epi32(s, 6)), mpair[m]);
    }
}

/* Activation dword 4c .. 4c + 3 of row q, broadcast: VNNI from the 16 bytes
 * of its 4-column run (one load, vpshufd, which runs beside the vpdpbusd),
 * AVX2 a broadcast load (the vpmaddubsw + vpaddw keep the ALU busier). */
INLINE __m256i act_col(int vnni, const __m256i *run, const int8_t *q, int c) {
    if (!vnni) return bcast32(q + 4 * c);
    switch (c % 4) {
    case 0: return _mm256_shuffle_epi32(*run, 0x00);
    case 1: return _mm256_shuffle_epi32(*run, 0x55);
    case 2: return _mm256_shuffle_epi32(*run, 0xAA);
    default: return _mm256_shuffle_epi32(*run, 0xFF);
    }
}

INLINE __m256i act_run(const int8_t *q, int c) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(q + 4 * c)));
}

/* Rows m0 .. m0 + MR - 1 of one activation group x the 16 rows of B, kc
 * super-blocks: out[h][m] = their dot products (8 rows of half h each).
 * VNNI: all 4 rows, 2 halves x 4 rows = 8 vpdpbusd chains per sub-block,
 * enough to cover its latency (4 cycles, two per cycle); per column two
 * weight loads and one vpshufd per row serve 8 products; the exact int32
 * super-block sums go through L1 (one add per chain and sub-block). AVX2:
 * 2 rows per pass, so the int16 chains and the int32 sums stay in registers
 * (vpmaddubsw products are independent, no latency to cover). */
INLINE void tile_sb(int kt, int vnni, int MR, const kbuf *B, int kc, const lb_block_q8_Kx4 *ab, int m0,
                    __m256 out[2][4]) {
    const int SB = kx_sb(kt), NS = kx_nsub(kt), G = kx_cols16(kt), bias16 = kx_bias16(kt);
    const int b64_init = vnni && (kt == KQ3 || kt == KQ6);
    __m256 facc[2][4];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) facc[h][m] = _mm256_setzero_ps();
    for (int b = 0; b < kc; b++) {
        const lb_block_q8_Kx4 *a = ab + b;
        int32_t init[4][8] __attribute__((aligned(32)));
        int32_t mpair[4][8] __attribute__((aligned(32)));
        act_pre(kt, vnni, a, init, mpair);
        __m256i acc[2][4];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) acc[h][m] = _mm256_setzero_si256();
        for (int j = 0; j < NS; j++) {
            __asm__ volatile("" ::: "memory"); /* acc stays in memory across sub-blocks */
            __m256i ch[2][4];
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const __m256i st = b64_init ? _mm256_set1_epi32(a->b64[m0 + m][j])
                                   : kt == KIQ4 && vnni ? _mm256_set1_epi32(init[m0 + m][j])
                                                        : _mm256_setzero_si256();
                ch[0][m] = st, ch[1][m] = st;
            }
            __m256i run[4];
#pragma GCC unroll 16
            for (int cc = 0; cc < SB / 4; cc++) {
                const int c = j * (SB / 4) + cc;
                const __m256i u0 = B->u[b][c][0], u1 = B->u[b][c][1];
#pragma GCC unroll 4
                for (int m = 0; m < MR; m++) {
                    if (vnni && c % 4 == 0) run[m] = act_run(a->qs[m0 + m], c);
                    const __m256i av = act_col(vnni, &run[m], a->qs[m0 + m], c);
                    if (vnni) {
                        ch[0][m] = dpbusd(ch[0][m], u0, av);
                        ch[1][m] = dpbusd(ch[1][m], u1, av);
                    } else if (kt == KIQ4) {
                        /* |a| x sign(w, a): pairs <= 2 * 127 * 128, each to int32 at once */
                        const __m256i aa = _mm256_sign_epi8(av, av);
                        acc[0][m] = _mm256_add_epi32(acc[0][m], _mm256_madd_epi16(_mm256_maddubs_epi16(aa, _mm256_sign_epi8(u0, av)), B->sc[b][j][0]));
                        acc[1][m] = _mm256_add_epi32(acc[1][m], _mm256_madd_epi16(_mm256_maddubs_epi16(aa, _mm256_sign_epi8(u1, av)), B->sc[b][j][1]));
                    } else {
                        ch[0][m] = madd16(ch[0][m], u0, av, cc % G == 0);
                        ch[1][m] = madd16(ch[1][m], u1, av, cc % G == 0);
                        if (cc % G == G - 1) {
                            acc[0][m] = _mm256_add_epi32(acc[0][m], _mm256_madd_epi16(ch[0][m], B->sc[b][j][0]));
                            acc[1][m] = _mm256_add_epi32(acc[1][m], _mm256_madd_epi16(ch[1][m], B->sc[b][j][1]));
                        }
                    }
                }
            }
            if (vnni)
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
                    for (int m = 0; m < MR; m++)
                        acc[h][m] = _mm256_add_epi32(acc[h][m], _mm256_mullo_epi32(ch[h][m], B->sc[b][j][h]));
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                __m256i s = acc[h][m];
                if (!vnni && bias16) {
                    /* - bias * sum_j sc_j bsum_j; the pairs give 16x the sum */
                    __m256i t = _mm256_setzero_si256();
#pragma GCC unroll 8
                    for (int p = 0; p < 8; p++)
                        t = _mm256_add_epi32(t, _mm256_madd_epi16(B->xp[b][p][h], bcast32(&a->bsp[m0 + m][2 * p])));
                    s = _mm256_sub_epi32(s, bias16 == 32 ? _mm256_slli_epi32(t, 1) : _mm256_srai_epi32(t, 2));
                }
                __m256 f = _mm256_mul_ps(B->d[b][h], _mm256_cvtepi32_ps(s));
                if (kx_has_min(kt)) {
                    __m256i mp[4];
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) mp[i] = B->xp[b][i][h];
                    f = _mm256_fnmadd_ps(B->dmin[b][h], _mm256_cvtepi32_ps(kx_mins_dot(mp, mpair[m0 + m])), f);
                }
                facc[h][m] = _mm256_fmadd_ps(f, _mm256_set1_ps(a->d[m0 + m]), facc[h][m]);
            }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) out[h][m] = facc[h][m];
}

/* ---- legacy: 32-weight blocks, one float scale each ---- */

INLINE void decode_blk(int kt, int vnni, const uint8_t *xb, lbuf *B, int b) {
    const __m256i none = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) B->u[b][c][h] = kx_col(kt, vnni, xb, h, c, none);
        B->d[b][h] = fp16x8(xb + kx_d_off(kt) + 16 * h);
        if (kx_has_min(kt)) B->m[b][h] = fp16x8(xb + KX_DMIN_OFF + 16 * h);
    }
}

/* Activation block of the group: scales, Q8_1 s, Q5_0's bias start. */
INLINE void lact_of(int kt, int vnni, const void *blk, int m0, __m256 d[4], __m256 s[4], __m256i st[4]) {
#pragma GCC unroll 4
    for (int m = 0; m < 4 - m0; m++) {
        if (kt == KL50) {
            const lb_block_q8_0x4v *a = blk;
            d[m] = _mm256_set1_ps(a->d[m0 + m]);
            s[m] = _mm256_setzero_ps();
            st[m] = _mm256_set1_epi32(vnni ? a->b128[m0 + m] : 2 * a->b8[m0 + m]);
        } else {
            const lb_block_q8_1x4 *a = blk;
            d[m] = _mm256_set1_ps(a->d[m0 + m]);
            s[m] = _mm256_set1_ps(a->s[m0 + m]);
            st[m] = _mm256_setzero_si256();
        }
    }
}

INLINE const int8_t *lact_qs(int kt, const void *blk, int m) {
    return kt == KL50 ? ((const lb_block_q8_0x4v *)blk)->qs[m] : ((const lb_block_q8_1x4 *)blk)->qs[m];
}

INLINE void tile_blk(int kt, int vnni, int MR, const lbuf *B, int kc, const void *ab, size_t abs, int m0,
                     __m256 out[2][4]) {
    const int G = kx_cols16(kt);
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 facc[2][4];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) facc[h][m] = _mm256_setzero_ps();
    for (int b = 0; b < kc; b++) {
        __asm__ volatile("" ::: "memory");
        const void *a = (const char *)ab + (size_t)b * abs;
        __m256 da[4], sa[4];
        __m256i st[4];
        lact_of(kt, vnni, a, m0, da, sa, st);
        __m256i ch[2][4], is[2][4], run[4];
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            ch[0][m] = ch[1][m] = vnni ? st[m] : _mm256_setzero_si256();
            is[0][m] = is[1][m] = vnni ? _mm256_setzero_si256() : st[m];
        }
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) {
            const __m256i u0 = B->u[b][c][0], u1 = B->u[b][c][1];
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const int8_t *q = lact_qs(kt, a, m0 + m);
                if (vnni && c % 4 == 0) run[m] = act_run(q, c);
                const __m256i av = act_col(vnni, &run[m], q, c);
                if (vnni) {
                    ch[0][m] = dpbusd(ch[0][m], u0, av);
                    ch[1][m] = dpbusd(ch[1][m], u1, av);
                } else {
                    ch[0][m] = madd16(ch[0][m], u0, av, c % G == 0);
                    ch[1][m] = madd16(ch[1][m], u1, av, c % G == 0);
                    if (c % G == G - 1) {
                        is[0][m] = _mm256_add_epi32(is[0][m], _mm256_madd_epi16(ch[0][m], ones16));
                        is[1][m] = _mm256_add_epi32(is[1][m], _mm256_madd_epi16(ch[1][m], ones16));
                    }
                }
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) {
                const __m256i s = vnni ? ch[h][m] : is[h][m];
                facc[h][m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(B->d[b][h], da[m]), facc[h][m]);
                if (kx_has_min(kt)) facc[h][m] = _mm256_fmadd_ps(B->m[b][h], sa[m], facc[h][m]);
            }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) out[h][m] = facc[h][m];
}

/* ---- driver ---- */

INLINE void put(int MR, float *y, size_t ldy, __m256 out[2][4], int add) {
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            float *p = y + (size_t)m * ldy + 8 * h;
            _mm256_storeu_ps(p, add ? _mm256_add_ps(out[h][m], _mm256_loadu_ps(p)) : out[h][m]);
        }
}

INLINE void gemm(int kt, int vnni, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars,
                 int M, float *Y, size_t ldy) {
    const int64_t nb = K / kx_blck(kt);
    const size_t xbs = kx_xbs(kt);
    const int leg = kx_legacy(kt), kcmax = leg ? KCL : KC;
    const size_t abs = kt == KL50 ? sizeof(lb_block_q8_0x4v) : leg ? sizeof(lb_block_q8_1x4) : sizeof(lb_block_q8_Kx4);
    union {
        kbuf k;
        lbuf l;
    } buf __attribute__((aligned(32)));
    for (int n = n0; n < n1; n += 16) {
        const uint8_t *g = (const uint8_t *)W + (size_t)(n / 16) * 16 * wrs;
        for (int64_t b0 = 0; b0 < nb; b0 += kcmax) {
            const int kc = (int)LB_MIN((int64_t)kcmax, nb - b0);
            for (int b = 0; b < kc; b++) {
                if (leg) decode_blk(kt, vnni, g + (size_t)(b0 + b) * xbs, &buf.l, b);
                else decode_sb(kt, vnni, g + (size_t)(b0 + b) * xbs, &buf.k, b);
            }
            /* M is a multiple of 4: whole activation groups (MR = 2 measured
             * slower for AVX2 too: 353 against 375 GOPS, Q4_K on Zen 5) */
            const int MR = 4;
            for (int m = 0; m < M; m += MR) {
                const void *ab = (const char *)A + (size_t)(m / 4) * ars + (size_t)b0 * abs;
                __m256 out[2][4];
                if (leg) tile_blk(kt, vnni, MR, &buf.l, kc, ab, abs, m % 4, out);
                else tile_sb(kt, vnni, MR, &buf.k, kc, ab, m % 4, out);
                put(MR, Y + (size_t)m * ldy + n, ldy, out, b0 > 0);
            }
        }
    }
}

#define KX2_GEMM_ISA(w, a, KT, ISA, VNNI)                                                                     \
    LB_KX2 void lb_gemm_##w##x16_##a##x4_16x4_##ISA(int64_t K, const void *W, size_t wrs, int n0, int n1,     \
                                                    const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        gemm(KT, VNNI, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                                \
    }
#define KX2_GEMM(w, a, KT) KX2_GEMM_ISA(w, a, KT, avx2, 0) KX2_GEMM_ISA(w, a, KT, avxvnni, 1)
KX2_GEMM(q3_K, q8_K, KQ3)
KX2_GEMM(q4_K, q8_K, KQ4)
KX2_GEMM(q5_K, q8_K, KQ5)
KX2_GEMM(q6_K, q8_K, KQ6)
KX2_GEMM(iq4_xs, q8_K, KIQ4)
KX2_GEMM(q4_1, q8_1, KL41)
KX2_GEMM(q5_0, q8_0, KL50)
KX2_GEMM(q5_1, q8_1, KL51)
#endif
