/* Shared by the AVX-512 (kq_repack_avx512.c, kq_gemv_*_avx512.c) and AMX
 * (kq_repack_amx.c) kernels on the 16-row super-block layouts of
 * formats/repack.h: geometry, byte patterns, lookup tables and the decode
 * of an x-block into weight bytes (see kq_repack_avx512.c for the scheme).
 * Included only by x86 kernel files compiled with these target attributes. */
#ifndef LB_KQ_REPACK_IMPL_H
#define LB_KQ_REPACK_IMPL_H

#include <immintrin.h>
#include <string.h>

#include "formats/cb.h"
#include "formats/kquants.h"
#include "formats/repack.h"
#include "kernels/cpu.h"

#define LB_VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni,avx2,fma,f16c")))
#define INLINE LB_VBMI static inline __attribute__((always_inline))

enum { WQ2K, WCB2, WCB3 }; /* weight kind */

/* ---- geometry (formats/repack.h) ---- */

INLINE size_t xb_size(int wt) { return wt == WQ2K ? 1344 : wt == WCB2 ? 1248 : 1760; }
INLINE int np_off(int wt) { return wt == WQ2K ? 1024 : wt == WCB2 ? 1024 : 1536; } /* NP0, NP1 (+ TP for CB) */
INLINE int d_off(int wt) { return wt == WQ2K ? 1280 : wt == WCB2 ? 1216 : 1728; }
enum { QH_OFF = 1024, Q2K_MP_OFF = 1152, Q2K_DMIN_OFF = 1312 };
INLINE int kbits_of(int wt) { return wt == WCB3 ? 3 : 2; }

/* 16-byte patterns, broadcast to every 128-bit lane (vpshufb works per lane;
 * dword r of a lane is row 4 * lane + r). */
static const uint8_t k_spread[4][16] __attribute__((aligned(16))) = {
    /* byte e of each dword -> all four bytes of it */
    {0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12},
    {1, 1, 1, 1, 5, 5, 5, 5, 9, 9, 9, 9, 13, 13, 13, 13},
    {2, 2, 2, 2, 6, 6, 6, 6, 10, 10, 10, 10, 14, 14, 14, 14},
    {3, 3, 3, 3, 7, 7, 7, 7, 11, 11, 11, 11, 15, 15, 15, 15},
};
static const uint8_t k_ext[4][16] __attribute__((aligned(16))) = {
    /* byte e of each dword -> its low byte, the rest zero */
    {0, 128, 128, 128, 4, 128, 128, 128, 8, 128, 128, 128, 12, 128, 128, 128},
    {1, 128, 128, 128, 5, 128, 128, 128, 9, 128, 128, 128, 13, 128, 128, 128},
    {2, 128, 128, 128, 6, 128, 128, 128, 10, 128, 128, 128, 14, 128, 128, 128},
    {3, 128, 128, 128, 7, 128, 128, 128, 11, 128, 128, 128, 15, 128, 128, 128},
};
static const uint8_t k_pair[4][16] __attribute__((aligned(16))) = {
    /* byte e of each dword -> both of its words (then masked to (lo, 16 * hi) nibbles) */
    {0, 128, 0, 128, 4, 128, 4, 128, 8, 128, 8, 128, 12, 128, 12, 128},
    {1, 128, 1, 128, 5, 128, 5, 128, 9, 128, 9, 128, 13, 128, 13, 128},
    {2, 128, 2, 128, 6, 128, 6, 128, 10, 128, 10, 128, 14, 128, 14, 128},
    {3, 128, 3, 128, 7, 128, 7, 128, 11, 128, 11, 128, 15, 128, 15, 128},
};
/* Q2_K: entry q | sc << 2 = sc * q */
static const uint8_t k_q2tab[64] __attribute__((aligned(64))) = {
    0, 0, 0,  0,  0, 1,  2,  3,  0, 2,  4,  6,  0, 3,  6,  9,  0, 4,  8,  12, 0, 5,  10, 15,
    0, 6, 12, 18, 0, 7,  14, 21, 0, 8,  16, 24, 0, 9,  18, 27, 0, 10, 20, 30, 0, 11, 22, 33,
    0, 12, 24, 36, 0, 13, 26, 39, 0, 14, 28, 42, 0, 15, 30, 45};

INLINE __m512i lanes16(const uint8_t *p) { return _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)p)); }
INLINE __m512i loadv(const uint8_t *p) { return _mm512_loadu_si512(p); }
/* A load the compiler must keep in a register. gcc otherwise reloads the
 * weight bytes for each vpternlogd that overwrites them, and half of CB2's
 * and CB3's x-blocks (1248 and 1760 bytes) straddle cache lines, so every
 * reload is a split load: CB2's GEMV from L2 ran 15 % slower (bench/kernels
 * --hot, as fast as clang's code with this). */
INLINE __m512i loadv_kept(const uint8_t *p) {
    __m512i v = loadv(p);
    __asm__("" : "+v"(v));
    return v;
}
/* (a & c) | (b & ~c) */
INLINE __m512i select_bits(__m512i a, __m512i b, __m512i c) { return _mm512_ternarylogic_epi32(a, b, c, 0xE4); }

/* Per-call constants: the lookup tables and the byte patterns. */
typedef struct {
    __m512i T0, T1;    /* table (T1: entries 64..127, CB3 with 16 books) */
    __m512i Tq[3];     /* CB2: T0 with the weight's index at bits 0-1, 2-3, 4-5 (decode_sub_q) */
    __m512i selm[2];   /* CB2: GF(2) matrices, low or high nibble -> selector byte (sel_plane) */
    __m512i s1m[6];    /* CB: GF(2) matrices of s - 1: nibble bits (low, high), TP bits (quadrant 0-3) */
    __m512 stab;       /* CB: float scales by index, (k & (smax - 1)) + 1 */
    __m512i spread[4], ext[4], pair[4];
    int pf_l2;         /* GEMV: prefetch weights to L2, not L1 (lb_cpu_prefetch_l2) */
} consts;

/* The vgf2p8affineqb matrix whose output bit k is the parity of the input
 * bits set in rows[k] (row k is byte 7 - k of the qword). */
static inline uint64_t gf2_matrix(const uint8_t rows[8]) {
    uint64_t a = 0;
    for (int k = 0; k < 8; k++) a |= (uint64_t)rows[k] << (8 * (7 - k));
    return a;
}
INLINE __m512i gf2_affine(__m512i x, __m512i m) { return _mm512_gf2p8affine_epi64_epi8(x, m, 0); }

/* CB2's selector scheme. A lookup index is 2 index bits and a sub-group's
 * nibble n = a | b << 2 (book and scale bits, T0 = entry idx | n << 2). The
 * selector byte S = a | b << 2 | (a ^ b) << 4 holds n three times over: any
 * two of its 2-bit fields give n back. So the weight's index may stay where
 * it sits in its byte (bits 2t, 2t + 1) and S fills the other fields: one
 * vpternlogd per index, no shift for t = 0..2, and the tables Tq[t] are T0
 * permuted to read n from the two fields that are left (one shift serves
 * t = 3, moved to bits 4-5). Tq[t][i] = T0[p_t(i)], where p_t, a GF(2)-linear
 * map of i's bits (cb2_perm_rows[t]), reads idx and n out of i. */
static const uint8_t cb2_perm_rows[3][8] = {
    {0x01, 0x02, 0x14, 0x28, 0x04, 0x08, 0, 0}, /* i = idx | b << 2 | (a ^ b) << 4 */
    {0x04, 0x08, 0x01, 0x02, 0x11, 0x22, 0, 0}, /* i = a | idx << 2 | (a ^ b) << 4 */
    {0x10, 0x20, 0x01, 0x02, 0x04, 0x08, 0, 0}, /* i = a | b << 2 | idx << 4 */
};
static const uint8_t k_iota64[64] __attribute__((aligned(64))) = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
    44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

/* CB tables: entry i = book[(i >> kbits) & (C - 1)][i & (k - 1)] + offset,
 * for every i < 128 (the index bits above the book are scale bits: replicate). */
static void cb_table(const lb_cb_set *set, int kbits, int offset, uint8_t T[128]) {
    const int k = set->books.k, mask = set->books.count - 1;
    for (int i = 0; i < 128; i++) T[i] = (uint8_t)(set->books.v[(i >> kbits) & mask][i & (k - 1)] + offset);
}

/* The GEMMs' (AVX-512, AMX) instantiation for the books in force for CB
 * type TYPE (KBITS index bits): CASE(cbits, wide, nar) with constants;
 * wide: 16 books of 8 centroids, the 128-entry table; nar: narrow books
 * (formats/cb.h), whose scales the decode folds into the weight bytes. */
#define LB_CB_BOOK_CASES(TYPE, KBITS, CASE)                  \
    do {                                                     \
        const lb_cb_set *set_ = lb_cb_current(TYPE);         \
        switch (set_->cbits | set_->narrow << 3) {           \
        case 2: CASE(2, 0, 0); break;                        \
        case 3: CASE(3, 0, 0); break;                        \
        case 4: CASE(4, (KBITS) + 4 > 6, 0); break;          \
        case 8 | 2: CASE(2, 0, 1); break;                    \
        case 8 | 3: CASE(3, 0, 1); break;                    \
        default: CASE(4, (KBITS) + 4 > 6, 1); break;         \
        }                                                    \
    } while (0)

/* sgn: CB tables of the signed centroids (AMX) instead of centroid + 64. */
INLINE void consts_init(int wt, int sgn, consts *c) {
    c->pf_l2 = lb_cpu_prefetch_l2();
    if (wt == WQ2K) {
        c->T0 = c->T1 = _mm512_load_si512(k_q2tab);
        c->stab = _mm512_setzero_ps();
    } else {
        uint8_t T[128] __attribute__((aligned(64)));
        const lb_cb_set *set = lb_cb_current(wt == WCB2 ? LB_TYPE_CB2 : LB_TYPE_CB3);
        cb_table(set, kbits_of(wt), sgn ? 0 : 64, T);
        float st[16] __attribute__((aligned(64)));
        for (int k = 0; k < 16; k++) st[k] = (float)((k & (set->smax - 1)) + 1);
        c->stab = _mm512_load_ps(st);
        c->T0 = _mm512_load_si512(T);
        c->T1 = _mm512_load_si512(T + 64);
        if (wt == WCB2) {
            const __m512i iota = _mm512_load_si512(k_iota64);
            for (int t = 0; t < 3; t++)
                c->Tq[t] = _mm512_permutexvar_epi8(gf2_affine(iota, _mm512_set1_epi64((long long)gf2_matrix(cb2_perm_rows[t]))), c->T0);
        }
        /* S of the low (h = 0) or high nibble; s - 1 = (n >> cbits) | top2 << (4 - cbits) */
        const int cbits = set->cbits, low = 4 - cbits;
        for (int h = 0; h < 2; h++) {
            const int o = 4 * h;
            const uint8_t sel[8] = {1 << o, 2 << o, 4 << o, 8 << o, 5 << o, 10 << o, 0, 0};
            uint8_t np[8] = {0};
            for (int k = 0; k < low; k++) np[k] = (uint8_t)(1 << (o + cbits + k));
            if (wt == WCB2) c->selm[h] = _mm512_set1_epi64((long long)gf2_matrix(sel));
            c->s1m[h] = _mm512_set1_epi64((long long)gf2_matrix(np));
        }
        for (int q = 0; q < 4; q++) {
            uint8_t tp[8] = {0};
            tp[low] = (uint8_t)(1 << (2 * q));
            tp[low + 1] = (uint8_t)(2 << (2 * q));
            c->s1m[2 + q] = _mm512_set1_epi64((long long)gf2_matrix(tp));
        }
    }
    for (int e = 0; e < 4; e++) {
        c->spread[e] = lanes16(k_spread[e]);
        c->ext[e] = lanes16(k_ext[e]);
        c->pair[e] = lanes16(k_pair[e]);
    }
}

INLINE __m512i lut(int wide, __m512i idx, const consts *c) {
    return wide ? _mm512_permutex2var_epi8(c->T0, idx, c->T1) : _mm512_permutexvar_epi8(idx, c->T0);
}

/* v's 16-bit lanes shifted left by s, or right by -s when s < 0 (s may
 * vary at run time: the GEMV keeps its quadrant loop rolled) */
INLINE __m512i shl16(__m512i v, int s) {
    return _mm512_sll_epi16(_mm512_srl_epi16(v, _mm_cvtsi32_si128(s < 0 ? -s : 0)), _mm_cvtsi32_si128(s > 0 ? s : 0));
}

/* The selector planes of the quadrants: p[0] of NP0's low nibbles
 * (sub-groups 0-3), p[1] of its high ones (4-7), p[2], p[3] the same of NP1
 * (8-15). CB2: the selector bytes S (consts). CB3: the nibble shifted to
 * bit 3; bits pulled in from neighbours land below bit 3 (masked off) or
 * above the table index bits (ignored or replicated). sel_plane: the one of
 * quadrant q (q may vary at run time). */
INLINE __m512i sel_plane(int wt, const uint8_t *xb, int q, const consts *c) {
    const __m512i np = loadv(xb + np_off(wt) + 64 * (q / 2));
    if (wt == WCB2) return gf2_affine(np, c->selm[q % 2]);
    const int kb = kbits_of(wt);
    return shl16(np, q % 2 ? kb - 4 : kb);
}
INLINE void sel_planes(int wt, const uint8_t *xb, const consts *c, __m512i p[4]) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) p[q] = sel_plane(wt, xb, q, c);
}

/* Unsigned weight bytes of sub-group j, u[t] = weights 16j + 4t .. +3 of the
 * 16 rows; pj = sel_plane of j's quadrant. */
INLINE void decode_sub_q(int wt, int wide, const uint8_t *xb, int j, __m512i pj, const consts *c, __m512i u[4]) {
    const __m512i sel = _mm512_shuffle_epi8(pj, c->spread[j % 4]);
    const __m512i q = loadv_kept(xb + 64 * j);
    if (wt == WCB2) { /* the selector scheme at consts */
        const __m512i m45 = _mm512_set1_epi8(0x30);
        u[0] = _mm512_permutexvar_epi8(select_bits(q, sel, _mm512_set1_epi8(0x03)), c->Tq[0]);
        u[1] = _mm512_permutexvar_epi8(select_bits(q, sel, _mm512_set1_epi8(0x0C)), c->Tq[1]);
        u[2] = _mm512_permutexvar_epi8(select_bits(q, sel, m45), c->Tq[2]);
        u[3] = _mm512_permutexvar_epi8(select_bits(_mm512_srli_epi16(q, 2), sel, m45), c->Tq[2]);
        return;
    }
    const __m512i m3 = _mm512_set1_epi8(3);
    __m512i h = _mm512_setzero_si512();
    if (wt == WCB3) h = loadv_kept(xb + QH_OFF + 64 * (j / 2));
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const __m512i qs = t ? _mm512_srli_epi16(q, 2 * t) : q;
        __m512i idx;
        if (wt != WCB3) {
            idx = select_bits(qs, sel, m3);
        } else {
            /* third bit (bit 4e + t of the QH byte) to bit 2 */
            const int sh = 4 * (j % 2) + t - 2;
            const __m512i hs = sh > 0 ? _mm512_srli_epi16(h, sh) : sh < 0 ? _mm512_slli_epi16(h, -sh) : h;
            idx = select_bits(select_bits(qs, hs, m3), sel, _mm512_set1_epi8(7));
        }
        u[t] = lut(wide, idx, c);
    }
}
INLINE void decode_sub(int wt, int wide, const uint8_t *xb, int j, const __m512i p[4], const consts *c,
                       __m512i u[4]) {
    decode_sub_q(wt, wide, xb, j, p[j / 4], c, u);
}

/* CB: the scales s - 1 of sub-groups 4i .. 4i + 3 as bytes (byte e of dword
 * r = s - 1 of sub-group 4i + e of row r): s - 1 = field >> cbits, from the
 * nibble's top 4 - cbits bits and the field's top 2 bits (TP plane), each
 * moved into place by one GF(2) affine map (consts; i may vary at run time). */
INLINE __m512i cb_s1_quadrant(int wt, int cbits, const uint8_t *xb, int i, const consts *c) {
    const uint8_t *np = xb + np_off(wt);
    const __m512i t = gf2_affine(loadv(np + 128), c->s1m[2 + i]);
    if (cbits == 4) return t;
    return _mm512_or_si512(t, gf2_affine(loadv(np + 64 * (i / 2)), c->s1m[i % 2]));
}

/* The scales s of sub-group j of the 16 rows as floats, from the quadrant:
 * byte j % 4 of each dword to its low bits, then a vpermps into the table
 * (k & (smax - 1)) + 1, which ignores the bytes above. */
INLINE __m512 cb_sf(__m512i s1q, int j, const consts *c) {
    const __m512i x = j % 4 ? _mm512_srli_epi32(s1q, 8 * (j % 4)) : s1q;
    return _mm512_permutexvar_ps(x, c->stab);
}

/* d * s_j of the 16 rows (exact: fma(s - 1, d, d) = d * s, representable). */
INLINE __m512 cb_scale(__m512i s1q, int j, __m512 dv, const consts *c) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_shuffle_epi8(s1q, c->ext[j % 4])), dv, dv);
}

/* The scales s of sub-group j of the 16 rows as words (s, s) per row: byte
 * j % 4 of each dword of the quadrant, + 1. */
INLINE __m512i cb_s16(__m512i s1q, int j, const consts *c) {
    return _mm512_add_epi16(_mm512_shuffle_epi8(s1q, c->pair[j % 4]), _mm512_set1_epi16(1));
}

/* CB, narrow books: the bytes s c of signed centroid bytes cv (they fit
 * int8). The low byte of a word product depends only on the operands' low
 * bytes, so one vpmullw gives the even bytes and one on the odd bytes (as
 * word highs) the odd ones. */
INLINE __m512i cb_scaled(__m512i cv, __m512i s16) {
    const __m512i pe = _mm512_mullo_epi16(cv, s16);
    const __m512i po = _mm512_mullo_epi16(_mm512_and_si512(cv, _mm512_set1_epi16((short)0xFF00)), s16);
    return _mm512_mask_blend_epi8(0xAAAAAAAAAAAAAAAAull, pe, po);
}

INLINE __m512 fp16x16(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }

/* Q2_K mins pair vector p (0..7): int16 (m_lo, 16 m_hi) per row. */
INLINE __m512i q2k_min_pair(const uint8_t *xb, int p, const consts *c) {
    const __m512i mp = loadv(xb + Q2K_MP_OFF + 64 * (p / 4));
    return _mm512_and_si512(_mm512_shuffle_epi8(mp, c->pair[p % 4]), _mm512_set1_epi32(0x00F0000F));
}

/* A Q2_K nibble plane pair (scales at np_off, mins at Q2K_MP_OFF) as bytes
 * 0..15: out[i] holds sub-groups 4i .. 4i + 3 (byte e of dword r = the
 * nibble of sub-group 4i + e of row r); q2k_nibble_plane: out[i] alone (i may
 * vary at run time). */
INLINE __m512i q2k_nibble_plane(const uint8_t *np, int i) {
    return _mm512_and_si512(shl16(loadv(np + 64 * (i / 2)), -4 * (i % 2)), _mm512_set1_epi8(0x0F));
}
INLINE void q2k_nibble_planes(const uint8_t *np, __m512i out[4]) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) out[i] = q2k_nibble_plane(np, i);
}

/* Bits 2t, 2t + 1 of every byte, as 0..3 (one GF(2) affine map each). */
INLINE __m512i q2_bits(__m512i q, int t) {
    if (t == 0) return _mm512_and_si512(q, _mm512_set1_epi8(3));
    /* output bit i of a byte = parity(matrix byte 7 - i & input byte); the
     * matrix as gf2_matrix would build it, written out: through gf2_matrix
     * gcc does not fold it to a constant and the GEMV gained a vpbroadcastq
     * per use (twice the affine + broadcast instructions) */
    const uint64_t A = ((uint64_t)(1u << (2 * t)) << 56) | ((uint64_t)(1u << (2 * t + 1)) << 48);
    return _mm512_gf2p8affine_epi64_epi8(q, _mm512_set1_epi64((long long)A), 0);
}

INLINE __m512i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* ---- activations: one Q8_K block as lb_quantize_row_q8_K_ref ---- */

/* qs (256 bytes), *d and the 16 bsums as int32 lanes; bit-identical to the
 * reference (max_ps skips NaNs as its `ax > amax` does; cvtps rounds half to
 * even as lb_nearest_int). */
INLINE __m512i q8k_block(const float *x, int8_t *qs, float *d) {
    __m512 vmax = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int v = 0; v < 16; v++) vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * v)), vmax);
    const float amax = _mm512_reduce_max_ps(vmax);
    if (amax == 0.0f) {
        memset(qs, 0, QK_K);
        *d = 0.0f;
        return _mm512_setzero_si512();
    }
    /* the sign of the FIRST element of largest magnitude */
    float max = amax;
    for (int v = 0; v < 16; v++) {
        const __mmask16 k = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * v)), _mm512_set1_ps(amax), _CMP_EQ_OQ);
        if (k) {
            max = x[16 * v + __builtin_ctz((unsigned)k)];
            break;
        }
    }
    const float iscale = -127.0f / max;
    const __m512 vis = _mm512_set1_ps(iscale);
#pragma GCC unroll 16
    for (int v = 0; v < 16; v++) {
        const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vis, _mm512_loadu_ps(x + 16 * v))),
                                           _mm512_set1_epi32(127));
        _mm_storeu_si128((__m128i *)(qs + 16 * v), _mm512_cvtepi32_epi8(q));
    }
    *d = 1.0f / iscale;
    /* group sums: sad of (q + 128) per 8 bytes, the two halves of each
     * 128-bit lane added, then the lanes' low dwords gathered */
    __m512i s[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(qs + 64 * i), _mm512_set1_epi8((char)0x80));
        const __m512i t = _mm512_sad_epu8(u, _mm512_setzero_si512());
        s[i] = _mm512_add_epi64(t, _mm512_shuffle_epi32(t, (_MM_PERM_ENUM)0x4E));
    }
    const __m512i lo = _mm512_permutex2var_epi32(s[0], _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0), s[1]);
    const __m512i hi = _mm512_permutex2var_epi32(s[2], _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0), s[3]);
    const __m512i all = _mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1);
    return _mm512_sub_epi32(all, _mm512_set1_epi32(16 * 128));
}

/* lb_block_q8_Kx4's bsum forms from the bsums lanes. */
INLINE void q8k_forms_x4(__m512i bs, int32_t *b64, int16_t *bsp) {
    _mm512_storeu_si512(b64, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(bs, 6)));
    const __m256i a16 = _mm512_cvtepi32_epi16(_mm512_slli_epi32(bs, 4)), b16 = _mm512_cvtepi32_epi16(bs);
    /* word 2p = 16 bsum[lo], 2p + 1 = bsum[lo + 4], lo = p + 4 (p / 4) */
    const __m256i idx = _mm256_setr_epi16(0, 20, 1, 21, 2, 22, 3, 23, 8, 28, 9, 29, 10, 30, 11, 31);
    _mm256_storeu_si256((__m256i *)bsp, _mm256_permutex2var_epi16(a16, idx, b16));
}

/* lb_block_q8_Kx16's bf16 digit pairs (bsum >> 6, bsum & 63) from the lanes. */
INLINE void q8k_forms_x16(__m512i bs, uint16_t *bsd) {
    const __m512i h = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_srai_epi32(bs, 6)));
    const __m512i l = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_and_si512(bs, _mm512_set1_epi32(63))));
    _mm512_storeu_si512(bsd, select_bits(l, _mm512_srli_epi32(h, 16), _mm512_set1_epi32((int)0xFFFF0000u)));
}

#endif
