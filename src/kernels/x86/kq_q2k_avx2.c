/* AVX2 GEMV / GEMM for Q2_K_16X4 against plain Q8_K rows (kq_q2k_avx2.h).
 *
 * Half h of a 16-row group is 8 rows, one per 32-bit lane of a ymm: each
 * 64-byte vector of the layout (formats/repack.h) is read 32 bytes at a
 * time. Per super-block and sub-group j (16 weights), QS vector j shifted by
 * 2t and masked gives the 2-bit quants of weights 16j + 4t .. 16j + 4t + 3
 * of the 8 rows, one dword each; vpmaddubsw against the activation dword
 * broadcast to every lane (q <= 3, |a| <= 128: a pair sum is at most 768,
 * the four of a sub-group 3072, so int16 is exact), and one vpmaddwd by the
 * row's 4-bit scale (in both int16 halves of its dword) adds sc_j * sum in
 * int32. The min term: int16 pairs (m_lo, 16 m_lo+4) of the 8 rows (one
 * vpshufb and a mask of MP0 / MP1) against (16 bsum_lo, bsum_lo+4) give
 * 16 sum_j m_j bsum_j, shifted down exactly. Then per super-block the
 * reference's float step, y += (d_a d) isum - (d_a dmin) summs, unfused, so
 * every output is lb_vec_dot_q2_K_q8_K_ref's bit for bit.
 * GEMV (plain Q8_K rows, any M, the pairs formed from bsums): up to 4
 * activation rows share each weight vector decoded in registers, one half
 * at a time. GEMM (4-row lb_block_q8_Kx4 groups, whose bsp field holds the
 * pairs already): a 16-row group's super-blocks are decoded once, KC at a
 * time, into an L1 buffer that every activation group then reads, two rows
 * at a time with both halves' 8 weight vectors of a sub-group in
 * registers, so one activation broadcast feeds 16 rows (the decode in
 * registers per 4-row pass, one half at a time, ran at 265-280 GOPS on 2
 * Zen 3 cores at 2048x5632, M = 256; this at 298-308). */
#include "kernels/x86/kq_q2k_avx2.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

#include "core/common.h"
#include "formats/kquants.h"
#include "formats/repack.h"
#include "kernels/cpu.h"
#include "kernels/x86/prefetch_x86.h"

/* the reference's float step, unfused */
#include "core/fp_strict.h"

#define LB_Q2KA __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_Q2KA static inline __attribute__((always_inline))

/* x-block geometry (formats/repack.h, Q2_K_16X4) */
enum { XBS = 1344, NP_OFF = 1024, MP_OFF = 1152, D_OFF = 1280, DMIN_OFF = 1312, MR = 4 };
/* software prefetch distance of the GEMV, bytes (0: off) */
#ifndef PF_BYTES
#define PF_BYTES 3072
#endif

/* the 32 bytes of half h (rows 8h .. 8h + 7) of the vector at off */
INLINE __m256i ld(const uint8_t *xb, int off, int h) { return _mm256_loadu_si256((const __m256i *)(xb + off + 32 * h)); }

/* the dword at p in every lane: one vbroadcastss from memory (no trip
 * through a general register) */
INLINE __m256i bcast32(const void *p) { return _mm256_castps_si256(_mm256_broadcast_ss((const float *)p)); }

/* byte e of every dword into the low byte of both of its words */
INLINE __m256i spread(__m256i v, int e) {
    const char z = (char)0x80, E = (char)e;
    return _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(_mm_setr_epi8(E, z, E, z, E + 4, z, E + 4, z, E + 8, z,
                                                                             E + 8, z, E + 12, z, E + 12, z)));
}

/* scale j of the 8 rows, as int16 in both words of each row's dword (NP0:
 * byte e = sc_e | sc_e+4 << 4, NP1 the same for 8 + e, 12 + e) */
INLINE __m256i scale16(const uint8_t *xb, int h, int j) {
    __m256i b = spread(ld(xb, NP_OFF + 64 * (j / 8), h), j % 4);
    if ((j / 4) % 2) b = _mm256_srli_epi16(b, 4);
    return _mm256_and_si256(b, _mm256_set1_epi16(15));
}

/* min pair p = 0..7 of the 8 rows: (m_lo, 16 m_lo+4), lo = p + 4 (p / 4) */
INLINE __m256i min_pair(const uint8_t *xb, int h, int p) {
    return _mm256_and_si256(spread(ld(xb, MP_OFF + 64 * (p / 4), h), p % 4), _mm256_set1_epi32(0x00F0000F));
}

/* The 2-bit quants of QS vector X (one half), shifted by 2t and masked:
 * plane t holds weights 16j + 4t .. 16j + 4t + 3 of the 8 rows. */
INLINE void planes(__m256i X, __m256i w[4]) {
    const __m256i m3 = _mm256_set1_epi8(3);
    w[0] = _mm256_and_si256(X, m3);
    w[1] = _mm256_and_si256(_mm256_srli_epi16(X, 2), m3);
    w[2] = _mm256_and_si256(_mm256_srli_epi16(X, 4), m3);
    w[3] = _mm256_and_si256(_mm256_srli_epi16(X, 6), m3);
}

/* the 8 fp16 at off of half h (d, dmin) */
INLINE __m256 half_f16(const uint8_t *xb, int off, int h) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(xb + off + 16 * h)));
}

/* The reference's float step of one super-block, unfused: (d_a d) isum -
 * (d_a dmin) (summ / 16), summ holding 16x the mins' sum. */
INLINE __m256 sb_step(float d_a, __m256 d, __m256 dm, __m256i isum, __m256i summ) {
    const __m256 da = _mm256_set1_ps(d_a);
    const __m256 dall = _mm256_mul_ps(da, d), dmin = _mm256_mul_ps(da, dm);
    return _mm256_sub_ps(_mm256_mul_ps(dall, _mm256_cvtepi32_ps(isum)),
                         _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srai_epi32(summ, 4))));
}

/* The GEMV's activation rows of one pass: MRT plain Q8_K rows, their min
 * pairs formed once a call in bsp[m] (the 16 int16 of lb_block_q8_Kx4's bsp
 * per super-block). */
typedef struct {
    const block_q8_K *row[MR];
    const int16_t *bsp[MR];
} acts;

/* the min pairs of a plain Q8_K row, as the 4-row groups hold them */
static void form_pairs(const block_q8_K *a, int64_t nb, int16_t *bsp) {
    int32_t b64[16], b128;
    for (int64_t b = 0; b < nb; b++) lb_q8_K_bsum_forms(a[b].bsums, b64, bsp + 16 * b, &b128);
}

/* acc[m] = the dots of rows 8h .. 8h + 7 of the group at g with activation
 * rows 0 .. MRT - 1 of A, over nb super-blocks */
INLINE void half_rows(const int MRT, const uint8_t *g, int h, int64_t nb, const acts *A, __m256 *acc) {
#pragma GCC unroll 4
    for (int m = 0; m < MRT; m++) acc[m] = _mm256_setzero_ps();
    const int l2 = lb_cpu_prefetch_l2();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = g + (size_t)b * XBS;
        __m256i isum[MR], summ[MR];
#pragma GCC unroll 4
        for (int m = 0; m < MRT; m++) isum[m] = summ[m] = _mm256_setzero_si256();
#pragma GCC unroll 16 /* whole: j picks constant shuffle patterns and shifts */
        for (int j = 0; j < 16; j++) {
            /* the first half streams the group from memory (the second finds it
             * in cache): its share of the lines PF_BYTES ahead, per step */
            if (PF_BYTES && h == 0) lb_prefetch_span(xb + PF_BYTES + XBS / 16 * j, XBS / 16, l2);
            const __m256i sc = scale16(xb, h, j);
            __m256i w[4];
            planes(ld(xb, 64 * j, h), w);
#pragma GCC unroll 4
            for (int m = 0; m < MRT; m++) {
                const int8_t *q = A->row[m][b].qs + 16 * j;
                __m256i s = _mm256_maddubs_epi16(w[0], bcast32(q));
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[1], bcast32(q + 4)));
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[2], bcast32(q + 8)));
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[3], bcast32(q + 12)));
                isum[m] = _mm256_add_epi32(isum[m], _mm256_madd_epi16(s, sc));
            }
        }
#pragma GCC unroll 8
        for (int p = 0; p < 8; p++) {
            const __m256i mp = min_pair(xb, h, p);
#pragma GCC unroll 4
            for (int m = 0; m < MRT; m++)
                summ[m] = _mm256_add_epi32(summ[m], _mm256_madd_epi16(mp, bcast32(&A->bsp[m][16 * b + 2 * p])));
        }
        const __m256 d = half_f16(xb, D_OFF, h), dm = half_f16(xb, DMIN_OFF, h);
#pragma GCC unroll 4
        for (int m = 0; m < MRT; m++) acc[m] = _mm256_add_ps(acc[m], sb_step(A->row[m][b].d, d, dm, isum[m], summ[m]));
    }
}

/* the min pairs of the GEMV's rows: 16 int16 per super-block and row,
 * formed once per call (thread-local, grown as K needs) */
static _Thread_local int16_t *pair_buf;
static _Thread_local int64_t pair_cap;

LB_Q2KA void lb_gemv_q2_Kx16_q8_K_16x4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                            size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / QK_K;
    if (MR * 16 * nb > pair_cap) {
        free(pair_buf);
        pair_cap = 0;
        if (!(pair_buf = malloc(sizeof *pair_buf * MR * 16 * (size_t)nb))) {
            for (int m = 0; m < M; m++) /* out of memory: no numbers rather than wrong ones */
                for (int n = n0; n < n1; n++) Y[(size_t)m * ldy + n] = NAN;
            return;
        }
        pair_cap = MR * 16 * nb;
    }
    for (int m0 = 0; m0 < M; m0 += MR) {
        const int mr = LB_MIN(MR, M - m0);
        acts a = {{NULL}, {NULL}};
        for (int m = 0; m < mr; m++) {
            a.row[m] = (const block_q8_K *)((const char *)A + (size_t)(m0 + m) * a_row_size);
            a.bsp[m] = pair_buf + 16 * nb * m;
            form_pairs(a.row[m], nb, pair_buf + 16 * nb * m);
        }
        for (int n = n0; n < n1; n += 16) {
            const uint8_t *g = (const uint8_t *)W + (size_t)(n / 16) * 16 * w_row_size;
            for (int h = 0; h < 2; h++) {
                __m256 acc[MR];
                switch (mr) { /* a constant row count each: the accumulators stay in registers */
                case 1: half_rows(1, g, h, nb, &a, acc); break;
                case 2: half_rows(2, g, h, nb, &a, acc); break;
                case 3: half_rows(3, g, h, nb, &a, acc); break;
                default: half_rows(4, g, h, nb, &a, acc); break;
                }
                for (int m = 0; m < mr; m++) _mm256_storeu_ps(Y + (size_t)(m0 + m) * ldy + n + 8 * h, acc[m]);
            }
        }
    }
}

/* ---- GEMM: a 16-row group's super-blocks decoded once, for every activation group ---- */

enum { KC = 2 }; /* super-blocks per decoded tile: ~11 KiB, in L1 */

typedef struct {
    __m256i w[KC][16][4][2]; /* [super-block][sub-group j][plane t][half]: quants of weights 16j + 4t .. + 3 */
    __m256i sc[KC][16][2];   /* scale16 */
    __m256i mp[KC][8][2];    /* min_pair */
    __m256 d[KC][2], dm[KC][2];
} q2buf;

INLINE void decode_sb(const uint8_t *xb, q2buf *B, int k) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            __m256i w[4];
            planes(ld(xb, 64 * j, h), w);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) B->w[k][j][t][h] = w[t];
            B->sc[k][j][h] = scale16(xb, h, j);
        }
#pragma GCC unroll 8
        for (int p = 0; p < 8; p++) B->mp[k][p][h] = min_pair(xb, h, p);
        B->d[k][h] = half_f16(xb, D_OFF, h);
        B->dm[k][h] = half_f16(xb, DMIN_OFF, h);
    }
}

/* acc[h][m] += decoded super-block k against activation rows m0, m0 + 1 of
 * group block a: both halves take each activation broadcast (8 weight
 * vectors of a sub-group in registers, read from the buffer once per
 * row pair). The float step is half_rows' (sb_step), so the bits are the same. */
INLINE void pair_sb(const q2buf *B, int k, const lb_block_q8_Kx4 *a, int m0, __m256 acc[2][MR]) {
    __m256i isum[2][2], summ[2][2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++) isum[h][m] = summ[h][m] = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int j = 0; j < 16; j++) {
        __asm__ volatile("" ::: "memory"); /* a sub-group's loads after the last one's products: no spills */
        __m256i w[4][2];
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) w[t][0] = B->w[k][j][t][0], w[t][1] = B->w[k][j][t][1];
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++) {
            const int8_t *q = a->qs[m0 + m] + 16 * j;
            __m256i s[2];
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) {
                const __m256i av = bcast32(q + 4 * t);
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    const __m256i p = _mm256_maddubs_epi16(w[t][h], av);
                    s[h] = t ? _mm256_add_epi16(s[h], p) : p;
                }
            }
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                isum[h][m] = _mm256_add_epi32(isum[h][m], _mm256_madd_epi16(s[h], B->sc[k][j][h]));
                /* the running sum in a register at every sub-group: without this GCC
                 * keeps every product on the stack and adds them up after the loop */
                __asm__("" : "+x"(isum[h][m]));
            }
        }
    }
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++)
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++) {
            const __m256i ap = bcast32(&a->bsp[m0 + m][2 * p]);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) summ[h][m] = _mm256_add_epi32(summ[h][m], _mm256_madd_epi16(B->mp[k][p][h], ap));
        }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++)
            acc[h][m0 + m] = _mm256_add_ps(acc[h][m0 + m], sb_step(a->d[m0 + m], B->d[k][h], B->dm[k][h], isum[h][m], summ[h][m]));
}

/* M / 4 groups of lb_block_q8_Kx4 (a_row_size bytes each) */
LB_Q2KA void lb_gemm_q2_Kx16_q8_Kx4_16x4_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                                              const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / QK_K;
    q2buf B __attribute__((aligned(64)));
    for (int n = n0; n < n1; n += 16) {
        const uint8_t *g = (const uint8_t *)W + (size_t)(n / 16) * 16 * w_row_size;
        for (int64_t b0 = 0; b0 < nb; b0 += KC) {
            const int kc = (int)LB_MIN((int64_t)KC, nb - b0);
            for (int k = 0; k < kc; k++) decode_sb(g + (size_t)(b0 + k) * XBS, &B, k);
            for (int m0 = 0; m0 + MR <= M; m0 += MR) {
                const lb_block_q8_Kx4 *x4 = (const lb_block_q8_Kx4 *)((const char *)A + (size_t)(m0 / MR) * a_row_size) + b0;
                float *y = Y + (size_t)m0 * ldy + n;
                __m256 acc[2][MR];
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
                    for (int m = 0; m < MR; m++) acc[h][m] = b0 ? _mm256_loadu_ps(y + (size_t)m * ldy + 8 * h) : _mm256_setzero_ps();
                for (int k = 0; k < kc; k++) {
                    pair_sb(&B, k, x4 + k, 0, acc);
                    pair_sb(&B, k, x4 + k, 2, acc);
                }
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
                    for (int m = 0; m < MR; m++) _mm256_storeu_ps(y + (size_t)m * ldy + 8 * h, acc[h][m]);
            }
        }
    }
}

#endif
