/* AVX2 kernels of ABQ's code layouts (formats/abq.h: ABQ_W{q}_C4 / _C2,
 * made at load from the plane types). Per group of 128 weights, one or two
 * 32-byte loads and masks give the codes in the order of the activations'
 * bytes ca - 128; four vpmaddubsw (|pair| <= 2 * 15 * 128, four of them
 * summed <= 15360: int16 holds it) and one vpmaddwd give 8 int32 partial
 * sums. Four groups at a time: their sums reduced together (vphaddd), their
 * exact integer dots in one SSE vector,
 *     I = P' + sw (128 - za) - z (Sa - 128 za)      P' = sum c (ca - 128)
 * (the reference's P - za sw - zw Sa + 128 zw za, the same integers), their
 * d I products in one AVX vector of doubles, then added to the row's sum one
 * by one in group order: every output is the reference's float, bit for bit.
 *
 * The gemm (prefill, M >= GEMM8_MIN_M) takes 8 weight rows at a time,
 * their codes transposed into column vectors once per call and chunk of
 * groups (gemm8, below);
 * the rows past a multiple of 8, and M < GEMM8_MIN_M, go row by row: each
 * group's codes decoded once for every activation row, four activation rows
 * at a time, their sums reduced together, their double accumulations in the
 * lanes of one AVX vector (a lane per row, groups in order). */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/x86/abq_codes_tile.h"
#include "kernels/x86/prefetch_x86.h"
#include "kernels/thread_scratch.h"

/* the reference's double multiply, then add: never fused */
#include "core/fp_strict.h"

#define LB_ABQC __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_ABQC static inline __attribute__((always_inline))
#define LD(p) _mm256_loadu_si256((const __m256i *)(p))
/* Software prefetch of the decode GEMV's codes, this many bytes ahead (0:
 * off). The hardware prefetcher alone left ABQ_W4_C4 at 64 % of the read
 * bandwidth (1 thread, Zen 3); 512 / 1024 / 2048 / 4096 bytes ahead gave
 * 70 / 76 / 83 / 79 % (bench/kernels --cpu --shape 2048x2048 --no-gemm). */
#ifndef PF_BYTES
#define PF_BYTES 2048
#endif

/* 8 int32 partial sums of sum_j c_j (ca_j - 128); vnni (a constant; only
 * on CPUs with AVX-512 VNNI): four vpdpbusd in two chains instead of four
 * vpmaddubsw, three vpaddw and a vpmaddwd (in asm: this file's functions are
 * compiled for AVX2) */
INLINE __m256i sums4(__m256i c0, __m256i c1, __m256i c2, __m256i c3, const int8_t *ca, int vnni) {
    if (vnni) {
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        __asm__("vpdpbusd %1, %2, %0" : "+x"(s0) : "m"(*(const __m256i *)ca), "x"(c0));
        __asm__("vpdpbusd %1, %2, %0" : "+x"(s1) : "m"(*(const __m256i *)(ca + 32)), "x"(c1));
        __asm__("vpdpbusd %1, %2, %0" : "+x"(s0) : "m"(*(const __m256i *)(ca + 64)), "x"(c2));
        __asm__("vpdpbusd %1, %2, %0" : "+x"(s1) : "m"(*(const __m256i *)(ca + 96)), "x"(c3));
        return _mm256_add_epi32(s0, s1);
    }
    const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(c0, LD(ca)), _mm256_maddubs_epi16(c1, LD(ca + 32)));
    const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(c2, LD(ca + 64)), _mm256_maddubs_epi16(c3, LD(ca + 96)));
    return _mm256_madd_epi16(_mm256_add_epi16(s01, s23), _mm256_set1_epi16(1));
}

/* decode and sums of one group, in registers */
INLINE __m256i group_dot(const uint8_t *qs, int w, const int8_t *ca, int vnni) {
    __m256i c[4];
    lb_abq_group_codes(qs, w, c);
    return sums4(c[0], c[1], c[2], c[3], ca, vnni);
}

/* the totals of 4 vectors of 8 int32, in order */
INLINE __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i abcd = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

/* Sa - 128 za of groups i .. i + 3 */
INLINE __m128i act_sa4(const block_abq_act *a, int64_t i) {
    return _mm_sub_epi32(_mm_setr_epi32(a[i].sum, a[i + 1].sum, a[i + 2].sum, a[i + 3].sum),
                         _mm_set1_epi32(128 * a[0].z));
}

/* One row against one activation row. sa2 (may be NULL): Sa - 128 za of
 * every group, formed once for all the rows of a call. */
INLINE float row_dot(int w, int64_t n, const uint8_t *row, const block_abq_act *a, const int32_t *sa2, int vnni) {
    const int64_t nb = n / LB_ABQ_G;
    const int qb = 16 * w;
    const lb_abq_code_row p = lb_abq_code_row_of(row, nb);
    const __m128i c1 = _mm_set1_epi32(128 - a[0].z);
    double acc = 0.0;
    int64_t i = 0;
    const int pf = lb_cpu_prefetch_l2();
    for (; i + 4 <= nb; i += 4) {
        const uint8_t *q = p.qs + (size_t)qb * (size_t)i;
        if (PF_BYTES) lb_prefetch_span(q + PF_BYTES, (size_t)(4 * qb), pf);
        const __m128i P = hsum4(group_dot(q, w, a[i].c, vnni), group_dot(q + qb, w, a[i + 1].c, vnni),
                                group_dot(q + 2 * qb, w, a[i + 2].c, vnni), group_dot(q + 3 * qb, w, a[i + 3].c, vnni));
        const __m128i sw = _mm_cvtepi16_epi32(_mm_loadl_epi64((const __m128i *)(p.sw + i)));
        const __m128i z = _mm_cvtepi16_epi32(_mm_loadl_epi64((const __m128i *)(p.z + i)));
        const __m128i sa = sa2 ? _mm_loadu_si128((const __m128i *)(sa2 + i)) : act_sa4(a, i);
        const __m128i I = _mm_sub_epi32(_mm_add_epi32(P, _mm_mullo_epi32(sw, c1)), _mm_mullo_epi32(z, sa));
        const __m256d prod = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(p.d + i)), _mm256_cvtepi32_pd(I));
        const __m128d lo = _mm256_castpd256_pd128(prod), hi = _mm256_extractf128_pd(prod, 1);
        acc += _mm_cvtsd_f64(lo);
        acc += _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo));
        acc += _mm_cvtsd_f64(hi);
        acc += _mm_cvtsd_f64(_mm_unpackhi_pd(hi, hi));
    }
    for (; i < nb; i++) {
        const __m256i zero = _mm256_setzero_si256();
        const int32_t P =
            _mm_cvtsi128_si32(hsum4(group_dot(p.qs + (size_t)qb * (size_t)i, w, a[i].c, vnni), zero, zero, zero));
        const int32_t sw = p.sw[i], z = p.z[i], sa = a[i].sum - 128 * a[0].z;
        acc += (double)p.d[i] * (double)(P + sw * (128 - a[0].z) - z * sa);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* Rows [n0, n1) x M activation rows, passes of up to GEMM_ROWS rows (see the top). */
#define GEMM_ROWS 64
INLINE void gemm(int w, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size,
                 int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    const int qb = 16 * w;
    __m256d acc4[GEMM_ROWS / 4];
    __m128i c1[GEMM_ROWS / 4], c2[GEMM_ROWS / 4];
    double acc[GEMM_ROWS];
    for (int m0 = 0; m0 < M; m0 += GEMM_ROWS) {
        const int mr = LB_MIN(GEMM_ROWS, M - m0), m4 = mr & ~3;
        const block_abq_act *a0 = (const block_abq_act *)((const uint8_t *)A + (size_t)m0 * a_row_size);
#define ACT(m, i) ((const block_abq_act *)((const uint8_t *)a0 + (size_t)(m) * a_row_size) + (i))
        for (int m = 0; m < m4; m += 4) { /* per token: 128 - za and 128 za */
            const __m128i za = _mm_setr_epi32(ACT(m, 0)->z, ACT(m + 1, 0)->z, ACT(m + 2, 0)->z, ACT(m + 3, 0)->z);
            c1[m / 4] = _mm_sub_epi32(_mm_set1_epi32(128), za), c2[m / 4] = _mm_slli_epi32(za, 7);
        }
        for (int n = n0; n < n1; n++) {
            const lb_abq_code_row p = lb_abq_code_row_of((const uint8_t *)W + (size_t)n * w_row_size, nb);
            for (int m = 0; m < m4; m += 4) acc4[m / 4] = _mm256_setzero_pd();
            for (int m = m4; m < mr; m++) acc[m] = 0.0;
            for (int64_t i = 0; i < nb; i++) {
                const int32_t sw1 = p.sw[i], z1 = p.z[i];
                const __m128i sw = _mm_set1_epi32(sw1), zw = _mm_set1_epi32(z1);
                const __m256d d = _mm256_set1_pd((double)p.d[i]);
                __m256i c[4];
                lb_abq_group_codes(p.qs + (size_t)qb * (size_t)i, w, c);
                for (int m = 0; m < m4; m += 4) {
                    const __m128i P = hsum4(sums4(c[0], c[1], c[2], c[3], ACT(m, i)->c, 0),
                                            sums4(c[0], c[1], c[2], c[3], ACT(m + 1, i)->c, 0),
                                            sums4(c[0], c[1], c[2], c[3], ACT(m + 2, i)->c, 0),
                                            sums4(c[0], c[1], c[2], c[3], ACT(m + 3, i)->c, 0));
                    const __m128i sa = _mm_setr_epi32(ACT(m, i)->sum, ACT(m + 1, i)->sum, ACT(m + 2, i)->sum,
                                                      ACT(m + 3, i)->sum);
                    const __m128i I = _mm_sub_epi32(_mm_add_epi32(P, _mm_mullo_epi32(sw, c1[m / 4])),
                                                    _mm_mullo_epi32(zw, _mm_sub_epi32(sa, c2[m / 4])));
                    acc4[m / 4] = _mm256_add_pd(acc4[m / 4], _mm256_mul_pd(d, _mm256_cvtepi32_pd(I)));
                }
                for (int m = m4; m < mr; m++) {
                    const __m256i zero = _mm256_setzero_si256();
                    const block_abq_act *a = ACT(m, i);
                    const int32_t P = _mm_cvtsi128_si32(hsum4(sums4(c[0], c[1], c[2], c[3], a->c, 0), zero, zero, zero));
                    acc[m] += (double)p.d[i] * (double)(P + sw1 * (128 - a->z) - z1 * (a->sum - 128 * a->z));
                }
            }
            for (int m = 0; m < m4; m += 4) _mm256_storeu_pd(acc + m, acc4[m / 4]);
            for (int m = 0; m < mr; m++) Y[(size_t)(m0 + m) * ldy + n] = nb ? (float)(acc[m] * (double)ACT(m, 0)->d) : 0.0f;
        }
#undef ACT
    }
}

/* ---- prefill, 8 weight rows at a time ----
 * The per-row gemm above reduces every (row, group, activation row) with
 * horizontal adds. Here 8 rows' codes are transposed once per call into
 * column vectors (dword r of column c = row r's codes 4c .. 4c + 3), so one
 * vpmaddubsw against an activation dword broadcast gives the 8 rows' pair
 * sums side by side: CPC columns add in int16 (cpc_of: 8 for W4, up to
 * 32), vpmaddwd widens them, and the group's exact integer I and its d I
 * in double are formed for the 8 rows in two vectors. Same integers, same
 * double sums in group order: the reference's float, bit for bit. Rows go
 * in chunks of KCH groups, the sums carried between chunks in doubles. */
typedef lb_abq_g8 g8; /* kernels/x86/abq_codes_tile.h */

/* codes k*32 .. k*32 + 31 of a group (lb_abq_group_codes' c[k]) */
INLINE __m256i codes_k(const uint8_t *qs, int w, int k) {
    if (w == 4) {
        const __m256i x = LD(qs + 32 * (k / 2));
        return _mm256_and_si256(k % 2 ? _mm256_srli_epi16(x, 4) : x, _mm256_set1_epi8(0x0f));
    }
    return _mm256_and_si256(_mm256_srli_epi16(LD(qs), 2 * k), _mm256_set1_epi8(0x03));
}

/* Groups [g0, g0 + kc) of rows row[0..7] (code layout rows of nb groups) -> B[0 .. kc). */
INLINE void decode8(int w, const uint8_t *const row[8], int64_t nb, int64_t g0, int64_t kc, g8 *B) {
    const int qb = 16 * w;
    lb_abq_code_row p[8];
    for (int r = 0; r < 8; r++) p[r] = lb_abq_code_row_of(row[r], nb);
    for (int64_t i = g0; i < g0 + kc; i++) {
        g8 *b = &B[i - g0];
        for (int k = 0; k < 4; k++) {
            __m256i v[8], t[8], u[8];
            for (int r = 0; r < 8; r++) v[r] = codes_k(p[r].qs + (size_t)qb * (size_t)i, w, k);
            for (int r = 0; r < 8; r += 2)
                t[r] = _mm256_unpacklo_epi32(v[r], v[r + 1]), t[r + 1] = _mm256_unpackhi_epi32(v[r], v[r + 1]);
            for (int h = 0; h < 8; h += 4) {
                u[h] = _mm256_unpacklo_epi64(t[h], t[h + 2]), u[h + 1] = _mm256_unpackhi_epi64(t[h], t[h + 2]);
                u[h + 2] = _mm256_unpacklo_epi64(t[h + 1], t[h + 3]), u[h + 3] = _mm256_unpackhi_epi64(t[h + 1], t[h + 3]);
            }
            for (int c = 0; c < 4; c++) {
                b->col[8 * k + c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
                b->col[8 * k + 4 + c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
            }
        }
        int32_t swz[8];
        for (int r = 0; r < 8; r++) swz[r] = (int32_t)((uint32_t)(uint16_t)p[r].sw[i] | (uint32_t)(uint16_t)p[r].z[i] << 16);
        b->swz = _mm256_loadu_si256((const __m256i *)swz);
        b->d[0] = _mm256_setr_pd(p[0].d[i], p[1].d[i], p[2].d[i], p[3].d[i]);
        b->d[1] = _mm256_setr_pd(p[4].d[i], p[5].d[i], p[6].d[i], p[7].d[i]);
    }
}

enum { MR = LB_ABQ_MR }; /* activation rows per tile */

/* MR activation rows a[0..MR-1], groups [g0, g0 + kc), against the 8 decoded
 * rows B[0 .. kc): the double sums continue from st[m] (unless g0 = 0) and
 * go back there, or, after the last group (last), times da to y[m][0..7].
 * ac[m] + i astr: the 128 activation bytes of row m's group i, either the
 * blocks' own ca - 128 or the raw ca (gemm8). cz[m][i]: the int16 pair
 * (o - za, -(Sa_i - 128 za)) of that group, o the bytes' offset (128 or 0),
 * so one vpmaddwd with the rows' (sw, z) gives sw (o - za) - z (Sa - 128 za)
 * exactly (|sw| <= 1920, |Sa - 128 za| <= 32640). */
INLINE void tile8(int CPC, const g8 *B, int64_t g0, int64_t kc, int last, const block_abq_act *const *a,
                  const int8_t *const *ac, size_t astr, const int32_t *const *cz, double *const *st, float *const *y) {
    __m256d acc[MR][2];
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
        acc[m][0] = g0 ? _mm256_loadu_pd(st[m]) : _mm256_setzero_pd(),
        acc[m][1] = g0 ? _mm256_loadu_pd(st[m] + 4) : _mm256_setzero_pd();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = g0; i < g0 + kc; i++) {
        const g8 *b = &B[i - g0];
        __m256i P[MR];
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) /* the corrections first: the chain's start */
            P[m] = _mm256_madd_epi16(b->swz, _mm256_castps_si256(_mm256_broadcast_ss((const float *)&cz[m][i])));
#pragma GCC unroll 4
        for (int cb = 0; cb < 32 / CPC; cb++) {
            __m256i ch[MR] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 32
            for (int c = 0; c < CPC; c++) {
                const __m256i wv = b->col[CPC * cb + c];
#pragma GCC unroll 4
                for (int m = 0; m < MR; m++) {
                    /* a broadcast from memory: a load, no shuffle (set1 of an int went through a
                     * general register and vpbroadcastd ymm, xmm: 1.5x the GEMM's time) */
                    const __m256i av = _mm256_castps_si256(
                        _mm256_broadcast_ss((const float *)(ac[m] + (size_t)i * astr + 4 * (CPC * cb + c))));
                    /* the add in asm keeps the chain a chain: GCC's reassociation made
                     * a tree of the columns' sums, spilling every product to the stack
                     * (0.5x); an empty asm on the sum instead cost a register move per
                     * product */
                    __asm__("vpaddw %1, %0, %0" : "+x"(ch[m]) : "x"(_mm256_maddubs_epi16(wv, av)));
                }
            }
#pragma GCC unroll 4
            for (int m = 0; m < MR; m++) P[m] = _mm256_add_epi32(P[m], _mm256_madd_epi16(ch[m], ones));
        }
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            /* d I is exact in double: the multiply-add rounds once, as the reference's add */
            acc[m][0] = _mm256_add_pd(acc[m][0], _mm256_mul_pd(b->d[0], _mm256_cvtepi32_pd(_mm256_castsi256_si128(P[m]))));
            acc[m][1] = _mm256_add_pd(acc[m][1], _mm256_mul_pd(b->d[1], _mm256_cvtepi32_pd(_mm256_extracti128_si256(P[m], 1))));
        }
    }
    if (!last) {
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) _mm256_storeu_pd(st[m], acc[m][0]), _mm256_storeu_pd(st[m] + 4, acc[m][1]);
        return;
    }
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++) {
        const __m256d da = _mm256_set1_pd((double)a[m][0].d);
        const __m128 lo = _mm256_cvtpd_ps(_mm256_mul_pd(acc[m][0], da)), hi = _mm256_cvtpd_ps(_mm256_mul_pd(acc[m][1], da));
        _mm_storeu_ps(y[m], lo), _mm_storeu_ps(y[m] + 4, hi);
    }
}

/* Groups per decoded chunk: 8 rows x 16 groups of g8 are 17.5 KiB, which
 * stay in a 32 KiB L1 beside 4 activation rows' codes; a whole ffn_down
 * row (44 groups) is 48 KiB. And blocks of 8 rows decoded together, each
 * 4-row activation tile run over all of them while it is in L1: per weight
 * row, a quarter of the activation traffic from L2 and beyond. The two took
 * 2048 x 5632, M = 512, from 0.8x to 0.85-0.9x the GEMM's rate at
 * 2048 x 2048 (one thread, Zen 3; best of three: 120 -> 130 GOPS), when the
 * driver still passed 16 rows (2 blocks) a call; now it passes the thread's
 * whole range (whole_m 2, kernels/x86/abq_x86.h). */
enum { KCH = 16, NBLK = 4 };

/* Activation bytes and chain length. A pair of products is at most
 * 2 cmax amax in size (cmax the type's largest code; W2S's 4 is checked at
 * load), so CPC columns stay within int16 while 2 cmax amax CPC <= 32767
 * (32768 below zero). The blocks' bytes ca - 128 reach -128: W4 (cmax 15)
 * 8 columns, W3 16, W2S, W2 and W1 32. At p <= 7 bits the raw codes ca fit
 * a signed byte, amax = 2^p - 1, and they take longer chains: at p = 4 a
 * pair is at most 450 and W4 runs 32 columns, one vpmaddwd per group and
 * activation row instead of four (fewer activation bits, fewer
 * instructions). */
static inline int cpc_for(int cmax, int amax, int raw) {
    const int lim = raw ? 32767 / (2 * cmax * amax) : 32768 / (2 * cmax * 128);
    return lim >= 32 ? 32 : lim >= 16 ? 16 : 8;
}

/* the largest code of a code layout: 2^q - 1 of its plane type, 4 for W2S */
static inline int cmax_of(int type) {
    const int plain = lb_abq_plain_of_codes(type);
    return lb_abq_is_balanced(plain) ? 4 : (1 << lb_abq_bits(plain)) - 1;
}

/* The tile at its three chain lengths, 4 activation rows each: one copy of
 * each for every type (a tile does not depend on the type), noinline.
 * Inlined per type, row count and chain length, the file took clang's ASan
 * build over 6 minutes. */
#define TILE8_FN(CPC)                                                                                       \
    LB_ABQC __attribute__((noinline)) static void tile8_c##CPC(                                             \
        const void *B, int64_t g0, int64_t kc, int last, const block_abq_act *const *a, const int8_t *const *ac, \
        size_t astr, const int32_t *const *cz, double *const *st, float *const *y) {                        \
        tile8(CPC, B, g0, kc, last, a, ac, astr, cz, st, y);                                             \
    }
TILE8_FN(8) TILE8_FN(16) TILE8_FN(32)
#undef TILE8_FN

/* two decoded 8-row groups as one 16-row group (abq_codes_tile.h) */
INLINE void pair16(const g8 *lo, const g8 *hi, lb_abq_g16 *o) {
    for (int c = 0; c < 32; c++)
        _mm256_store_si256((__m256i *)&o->col[c][0], lo->col[c]), _mm256_store_si256((__m256i *)&o->col[c][8], hi->col[c]);
    _mm256_storeu_si256((__m256i *)&o->swz[0], lo->swz), _mm256_storeu_si256((__m256i *)&o->swz[8], hi->swz);
    _mm256_storeu_pd(&o->d[0], lo->d[0]), _mm256_storeu_pd(&o->d[4], lo->d[1]);
    _mm256_storeu_pd(&o->d[8], hi->d[0]), _mm256_storeu_pd(&o->d[12], hi->d[1]);
}

/* Rows [n0, n8) (a multiple of 8 of them) x M activation rows, code layout
 * of w bits (2 or 4) and largest code cmax. Scratch: B for KCH groups of
 * NBLK blocks of 8 rows; with vnni, B16 for the NBLK / 2 pairs of them as
 * 16-row groups (the AVX-512 tile; an odd last block takes the 8-row VNNI
 * tile); cz for M x nb correction pairs; st for M x 8 NBLK doubles, the
 * sums between chunks; raw (NULL with vnni) for M x K raw activation codes,
 * used when every row's p <= 7. A tail of M % 4 rows runs as a
 * tile of 4 whose extra rows repeat its last row into a dummy sum and
 * output. */
LB_ABQC __attribute__((noinline)) static void gemm8(int w, int cmax, int vnni, int64_t K, const void *W,
                                                     size_t w_row_size, int n0, int n8, const void *A,
                                                     size_t a_row_size, int M, float *Y, size_t ldy, g8 *B,
                                                     lb_abq_g16 *B16, int32_t *cz, double *st, int8_t *raw) {
    const int64_t nb = K / LB_ABQ_G;
    int pmax = 0;
    for (int m = 0; m < M; m++) pmax = LB_MAX(pmax, ((const block_abq_act *)((const uint8_t *)A + (size_t)m * a_row_size))->p);
    if (pmax > 7) raw = NULL;
    const int off = raw ? 0 : 128, CPC = cpc_for(cmax, LB_MAX(1, (1 << pmax) - 1), raw != NULL);
    lb_abq_tile_fn *const tile = vnni ? lb_abq_tile8_vnni : CPC == 32 ? tile8_c32 : CPC == 16 ? tile8_c16 : tile8_c8;
    const size_t astr = raw ? LB_ABQ_G : sizeof(block_abq_act);
    double dummy_st[16] = {0};
    float dummy_y[16];
    for (int m = 0; m < M; m++) {
        const block_abq_act *a = (const block_abq_act *)((const uint8_t *)A + (size_t)m * a_row_size);
        for (int64_t i = 0; i < nb; i++) {
            cz[(size_t)m * nb + i] = lb_abq_corr_pair(a, i, off);
            if (raw) { /* ca - 128 -> ca: the sign bit flipped */
                int8_t *r = raw + ((size_t)m * (size_t)nb + (size_t)i) * LB_ABQ_G;
                for (int j = 0; j < LB_ABQ_G; j += 32)
                    _mm256_storeu_si256((__m256i *)(r + j), _mm256_xor_si256(LD(a[i].c + j), _mm256_set1_epi8(-128)));
            }
        }
    }
    for (int nb0 = n0; nb0 < n8; nb0 += 8 * NBLK) {
        const int nblk = LB_MIN(NBLK, (n8 - nb0) / 8);
        for (int64_t g0 = 0; g0 < nb; g0 += KCH) {
            const int64_t kc = LB_MIN((int64_t)KCH, nb - g0);
            const int last = g0 + kc == nb;
            for (int k = 0; k < nblk; k++) {
                const uint8_t *rows[8];
                for (int r = 0; r < 8; r++) rows[r] = (const uint8_t *)W + (size_t)(nb0 + 8 * k + r) * w_row_size;
                if (w == 4) decode8(4, rows, nb, g0, kc, B + (size_t)k * KCH);
                else decode8(2, rows, nb, g0, kc, B + (size_t)k * KCH);
            }
            /* vnni: pairs of blocks side by side for the 16-row tile */
            const int npair = vnni ? nblk / 2 : 0;
            for (int q = 0; q < npair; q++)
                for (int64_t i = 0; i < kc; i++)
                    pair16(&B[(size_t)(2 * q) * KCH + i], &B[(size_t)(2 * q + 1) * KCH + i], &B16[(size_t)q * KCH + i]);
            for (int m = 0; m < M; m += MR) {
                const block_abq_act *a[MR];
                const int8_t *ac[MR];
                const int32_t *c[MR];
                const int mr = lb_abq_tile_rows(A, a_row_size, M, m, raw, nb, cz, a, ac, c);
                for (int k = 0; k < nblk; k += k < 2 * npair ? 2 : 1) {
                    double *s[MR];
                    float *y[MR];
                    for (int j = 0; j < MR; j++)
                        s[j] = j < mr ? st + ((size_t)(m + j) * NBLK + (size_t)k) * 8 : dummy_st,
                        y[j] = j < mr ? Y + (size_t)(m + j) * ldy + nb0 + 8 * k : dummy_y;
                    if (k < 2 * npair) lb_abq_tile16_vnni(B16 + (size_t)(k / 2) * KCH, g0, kc, last, a, ac, astr, c, s, y);
                    else tile(B + (size_t)k * KCH, g0, kc, last, a, ac, astr, c, s, y);
                }
            }
        }
    }
}

/* activation rows from which the 8-row gemm pays its transposes */
enum { GEMM8_MIN_M = 8 };

/* decode: Sa - 128 za formed once for all the rows (stack room for K up
 * to 128 Ki; longer rows form it per row) */
enum { SA2_MAX = 1024 };

/* decode: rows [n0, n1) against one activation row */
INLINE void gemv(int w, int vnni, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A,
                 float *Y) {
    const block_abq_act *a = A;
    const int64_t nb = K / LB_ABQ_G;
    int32_t sa2[SA2_MAX];
    for (int64_t i = 0; i < nb && nb <= SA2_MAX; i++) sa2[i] = a[i].sum - 128 * a[0].z;
    for (int n = n0; n < n1; n++)
        Y[n] = row_dot(w, K, (const uint8_t *)Wt + (size_t)n * w_row_size, a, nb <= SA2_MAX ? sa2 : NULL, vnni);
}

/* The same with each group's sums by four ymm vpdpbusd (the avx512 and amx
 * levels): Zen 4, one thread, from L2 47.5-49.8 against 43.3-44.3 Gweights/s
 * (ABQ_W4_C4) and 49.4-49.6 against 45.4 (ABQ_W2_C2); TinyLlama tg128 on 2
 * threads 1.09x (W4A8) and 1.14x (W2*A8), three rounds (docs/abq.md). */
__attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni,avx2,fma,f16c"))) void
lb_abq_codes_gemv_vnni(int w, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, float *Y) {
    if (w == 4) gemv(4, 1, K, Wt, w_row_size, n0, n1, A, Y);
    else gemv(2, 1, K, Wt, w_row_size, n0, n1, A, Y);
}

/* M > 1 activation rows: whole blocks of 8 weight rows by gemm8 (from
 * GEMM8_MIN_M rows), the rest row by row */
INLINE void gemm_rows(int w, int cmax, int vnni, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1,
                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int n8 = n0 + (M >= GEMM8_MIN_M ? (n1 - n0) / 8 * 8 : 0);
    const size_t bsz = (size_t)NBLK * KCH * sizeof(g8) + (vnni ? (size_t)NBLK / 2 * KCH * sizeof(lb_abq_g16) : 0);
    const size_t ssz = (size_t)M * 8 * NBLK * sizeof(double);
    const size_t csz = (size_t)M * (size_t)(K / LB_ABQ_G) * 4;
    /* the raw codes lengthen vpmaddubsw's int16 chains; vpdpbusd has none */
    const size_t rsz = vnni ? 0 : (size_t)M * (size_t)K;
    g8 *B = n8 > n0 ? lb_thread_scratch(bsz + ssz + csz + rsz) : NULL;
    if (B)
        gemm8(w, cmax, vnni, K, Wt, w_row_size, n0, n8, A, a_row_size, M, Y, ldy, B,
              (lb_abq_g16 *)(B + (size_t)NBLK * KCH), (int32_t *)((char *)B + bsz + ssz), (double *)((char *)B + bsz),
              rsz ? (int8_t *)((char *)B + bsz + ssz + csz) : NULL);
    gemm(w, K, Wt, w_row_size, B ? n8 : n0, n1, A, a_row_size, M, Y, ldy);
}

LB_ABQC void lb_abq_codes_gemm(int w, int type, int vnni, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1,
                               const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    if (w == 4) gemm_rows(4, cmax_of(type), vnni, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
    else gemm_rows(2, cmax_of(type), vnni, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
}

#define ABQ_CODES_AVX2(name, NAME, W)                                                                        \
    LB_ABQC void lb_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *a) {              \
        *s = row_dot(W, n, w, a, NULL, 0);                                                                  \
    }                                                                                                       \
    LB_ABQC void lb_gemm_##name##_avx2(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1,         \
                                        const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {     \
        if (M > 1) {                                                                                         \
            lb_abq_codes_gemm(W, LB_TYPE_##NAME, 0, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);   \
            return;                                                                                          \
        }                                                                                                    \
        gemv(W, 0, K, Wt, w_row_size, n0, n1, A, Y);                                                         \
    }
LB_ABQ_CODES_LIST(ABQ_CODES_AVX2)
#undef ABQ_CODES_AVX2

#endif
