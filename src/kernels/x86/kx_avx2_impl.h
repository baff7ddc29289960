/* Shared by the AVX2 / AVX-VNNI GEMV (kx_avx2_gemv.c) and GEMM
 * (kx_avx2_gemm.c) on the 16-row layouts of formats/repack_kx.h: the decode
 * of an x-block, 8 rows at a time (one ymm = half a 64-byte DW vector, one
 * row per 32-bit lane), so a dot instruction against an activation dword
 * broadcast to every lane adds into each row's own lane: no horizontal sums.
 *
 * A "column" c of a block is weights 4c .. 4c + 3 of the 8 rows (activation
 * bytes 4c .. 4c + 3). Its bytes u are unsigned, the value the reference
 * multiplies being w = u - bias, and the bias comes off exactly:
 *  - AVX-VNNI (vpdpbusd, u <= 255): a sub-block's int32 chain starts at
 *    -bias * its activation sum. The GEMM's decode (kx_col) takes Q3_K and
 *    Q6_K to w + 64, so the chain starts at lb_block_q8_Kx4's b64 = -64 *
 *    bsum (a broadcast load, no work), Q5_0 to w + 128 (lb_block_q8_0x4v's
 *    b128); the GEMV keeps Q3_K 0..7, Q6_K 0..63 and forms -4 / -32 * bsum
 *    from the row's bsums. IQ4_XS: codebook + 128, -128 * the 32-sum. Q4_K,
 *    Q5_K, Q4_1, Q5_1 are unsigned with mins: no bias. The integer
 *    sub-block scale is one vpmulld per chain.
 *  - AVX2 (vpmaddubsw, int16 pair sums): u with the smallest bias (Q3_K
 *    0..7, Q6_K 0..63), so the pair sums of several columns add in int16
 *    without saturation (kx_cols16), and one vpmaddwd against the scale
 *    held in both int16 halves of a lane folds the scale in exactly; the
 *    bias comes off once per super-block as -bias * sum_j sc_j * bsum_j
 *    (vpmaddwd of int16 scale pairs by activation bsum pairs). IQ4_XS uses
 *    the sign trick instead (|a| x sign(w, a), pairs <= 2 * 127 * 128).
 * Included only by x86 kernel files (LB_KX2 functions). */
#ifndef LB_KX_AVX2_IMPL_H
#define LB_KX_AVX2_IMPL_H

#include <immintrin.h>
#include <string.h>

#include "formats/kquants.h"
#include "formats/legacy.h"
#include "formats/repack.h"
#include "formats/repack_kx.h"

#define LB_KX2 __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_KX2 static inline __attribute__((always_inline))

/* weight kinds: super-blocks of 256, then the legacy blocks of 32 */
enum { KQ3, KQ4, KQ5, KQ6, KIQ4, KL41, KL50, KL51 };

/* ---- geometry (formats/repack_kx.c's plane table; test_kx_repack checks
 * the layout, lb_kx_x_offset names the offsets used here) ---- */

INLINE int kx_legacy(int kt) { return kt >= KL41; }
INLINE int kx_blck(int kt) { return kx_legacy(kt) ? 32 : QK_K; }
INLINE size_t kx_xbs(int kt) {
    static const size_t b[8] = {16 * 110, 16 * 144, 16 * 176, 16 * 210, 16 * 136, 16 * 20, 16 * 22, 16 * 24};
    return b[kt];
}
/* weights per sub-block (one integer scale; legacy: the block) */
INLINE int kx_sb(int kt) { return kt == KQ3 || kt == KQ6 ? 16 : 32; }
INLINE int kx_nsub(int kt) { return kx_blck(kt) / kx_sb(kt); }
INLINE int kx_has_min(int kt) { return kt == KQ4 || kt == KQ5 || kt == KL41 || kt == KL51; }
/* AVX2 (no VNNI): bias of u (w = u - bias) taken off per super-block */
INLINE int kx_bias16(int kt) { return kt == KQ3 ? 4 : kt == KQ6 ? 32 : kt == KL50 ? 16 : 0; }
/* AVX2: columns whose vpmaddubsw pair sums add in int16 (|a| <= 128):
 * 2 * 128 * umax * n <= 32767 */
INLINE int kx_cols16(int kt) {
    switch (kt) {
    case KQ4: case KL41: return 8; /* 15 */
    case KQ5: case KL50: case KL51: case KQ3: return 4; /* 31, 7 (Q3_K: its 4-column sub-block) */
    case KQ6: return 2; /* 63 */
    default: return 1; /* IQ4_XS, sign trick: 127 */
    }
}
/* the fp16 scale of each row (16 in row order) */
INLINE int kx_d_off(int kt) {
    switch (kt) {
    case KQ3: return 1728;
    case KQ6: return LB_KX_Q6_D;
    case KL50: return 320;
    default: return 0;
    }
}
enum { KX_DMIN_OFF = 32 }; /* Q4_K, Q5_K dmin; Q4_1, Q5_1 m */

INLINE __m256i ld8(const uint8_t *xb, int off, int h) { return _mm256_loadu_si256((const __m256i *)(xb + off + 32 * h)); }
/* The same, as a value the compiler must keep (in a register or spilled):
 * without this it folds the load into every use (a vpand with a memory
 * operand per nibble), and loads, at two per cycle, bound the GEMV. */
INLINE __m256i ld8r(const uint8_t *xb, int off, int h) {
    __m256i v = ld8(xb, off, h);
    __asm__("" : "+x"(v));
    return v;
}
INLINE __m256 fp16x8(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
INLINE __m256i b8(int v) { return _mm256_set1_epi8((char)v); }
INLINE __m256i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
/* v shifted left by s bits (right by -s) per 16-bit lane: with |s| <= 4 and
 * the mask applied after, each byte's bits stay its own */
INLINE __m256i shl16(__m256i v, int s) {
    return s > 0 ? _mm256_slli_epi16(v, s) : s < 0 ? _mm256_srli_epi16(v, -s) : v;
}
INLINE __m256i nib(__m256i v, int hi) {
    return _mm256_and_si256(hi ? _mm256_srli_epi16(v, 4) : v, b8(0x0F));
}

/* acc += u8 x s8, four products per int32 lane: VEX vpdpbusd (AVX-VNNI)
 * through asm, so the functions around it need no extra target. Register
 * operands only: given "xm", clang stores every broadcast to the stack and
 * reads it back as the memory operand (GEMM 390 -> 225 GOPS). */
INLINE __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    return acc;
}

/* AVX2: chain += the int16 pair sums of u . a (first: a new chain). The
 * asm pins the running sum: otherwise GCC computes a sub-block's products
 * first, spills them all, and adds them up after. */
INLINE __m256i madd16(__m256i ch, __m256i u, __m256i a, int first) {
    __m256i r = _mm256_maddubs_epi16(u, a);
    if (!first) r = _mm256_add_epi16(ch, r);
    __asm__("" : "+x"(r));
    return r;
}

/* IQ4_NL's codebook (lb_kvalues_iq4nl) in both 128-bit lanes; +128 for VNNI */
INLINE __m256i kx_book(int vnni) {
    const __m256i book = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)lb_kvalues_iq4nl));
    return vnni ? _mm256_xor_si256(book, b8(0x80)) : book;
}

/* ---- weights: column c of half h (rows 8h .. 8h + 7) of x-block xb, as
 * the GEMM decodes it once into its buffer (the GEMV decodes in storage
 * order, kx_avx2_gemv.c) ----
 * AVX-VNNI: the biased unsigned bytes above; AVX2: u (IQ4_XS: the signed
 * codebook value). book: kx_book(vnni), IQ4_XS only. */
INLINE __m256i kx_col(int kt, int vnni, const uint8_t *xb, int h, int c, __m256i book) {
    switch (kt) {
    case KQ4:
    case KQ5: {
        /* pair p = c / 16: low nibbles of qs vectors 8p + t are weights 64p + 4t,
         * the high ones 64p + 32 + 4t */
        const int p = c / 16, hi = (c % 16) / 8, t = c % 8;
        __m256i u = nib(ld8(xb, (kt == KQ4 ? 256 : 768) + 64 * (8 * p + t), h), hi);
        if (kt == KQ5) /* fifth bit: bit 2p + hi of qh vector t */
            u = _mm256_or_si256(u, _mm256_and_si256(shl16(ld8(xb, 256 + 64 * t, h), 4 - (2 * p + hi)), b8(0x10)));
        return u;
    }
    case KQ6: {
        /* weights 128n + 32q + 4t: ql vector 16n + 8(q & 1) + t, nibble q >> 1;
         * qh vector 8n + t, bits 2q .. 2q + 1 */
        const int n = c / 32, q = (c % 32) / 8, t = c % 8;
        const __m256i lo = nib(ld8(xb, lb_kx_q6_ql(16 * n + 8 * (q & 1) + t), h), q >> 1);
        const __m256i hb = _mm256_and_si256(shl16(ld8(xb, lb_kx_q6_qh(8 * n + t), h), 4 - 2 * q), b8(0x30));
        const __m256i u = _mm256_or_si256(lo, hb);
        return vnni ? _mm256_add_epi8(u, b8(32)) : u;
    }
    case KQ3: {
        /* weights 128hh + 32q + 4t: bits 2q of qs vector 8hh + t, the third bit
         * = bit 4hh + q of hmask vector t */
        const int hh = c / 32, q = (c % 32) / 8, t = c % 8;
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(ld8(xb, 512 + 64 * (8 * hh + t), h), 2 * q), b8(3));
        const int bit = 4 * hh + q;
        const __m256i hm = ld8(xb, 64 * t, h);
        const __m256i hb = _mm256_and_si256(bit <= 2 ? _mm256_slli_epi16(hm, 2 - bit) : _mm256_srli_epi16(hm, bit - 2),
                                            b8(4));
        const __m256i u = _mm256_or_si256(lo, hb);
        return vnni ? _mm256_add_epi8(u, b8(60)) : u;
    }
    case KIQ4: {
        /* sub-block ib = c / 8: low nibbles of qs vectors 4ib + t are weights
         * 32ib + 4t, the high ones 32ib + 16 + 4t */
        const int ib = c / 8, hi = (c % 8) / 4, t = c % 4;
        return _mm256_shuffle_epi8(book, nib(ld8(xb, 128 + 64 * (4 * ib + t), h), hi));
    }
    default: {
        /* legacy: low nibbles of qs vector t are weights 4t, the high ones 16 + 4t;
         * Q5: the fifth bit of byte e at bit 8e + 2t + hi of the P5 dword */
        const int hi = c / 4, t = c % 4;
        const int qs = kt == KL41 ? 64 : kt == KL50 ? 0 : 128;
        __m256i u = nib(ld8(xb, qs + 64 * t, h), hi);
        if (kt != KL41) {
            const __m256i p5 = ld8(xb, kt == KL50 ? 256 : 64, h);
            u = _mm256_or_si256(u, _mm256_and_si256(shl16(p5, 4 - (2 * t + hi)), b8(0x10)));
            if (kt == KL50 && vnni) u = _mm256_add_epi8(u, b8(112)); /* w + 128 */
        }
        return u;
    }
    }
}

/* ---- integer sub-block scales of half h: sc[j] per row lane, as int32
 * (VNNI: vpmulld) or as int16 in both halves of the lane (AVX2: vpmaddwd
 * of pair sums) ---- */

/* byte e of every dword, zero- (sgn 0) or sign-extended, into the dword or
 * (w16) into both of its int16 */
INLINE __m256i byte_to_lane(__m256i v, int e, int sgn, int w16) {
    const char z = (char)0x80, E = (char)e;
    __m128i pat;
    if (!sgn) pat = w16 ? _mm_setr_epi8(E, z, E, z, E + 4, z, E + 4, z, E + 8, z, E + 8, z, E + 12, z, E + 12, z)
                        : _mm_setr_epi8(E, z, z, z, E + 4, z, z, z, E + 8, z, z, z, E + 12, z, z, z);
    else pat = w16 ? _mm_setr_epi8(z, E, z, E, z, E + 4, z, E + 4, z, E + 8, z, E + 8, z, E + 12, z, E + 12)
                   : _mm_setr_epi8(z, z, z, E, z, z, z, E + 4, z, z, z, E + 8, z, z, z, E + 12);
    const __m256i r = _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(pat));
    if (!sgn) return r;
    return w16 ? _mm256_srai_epi16(r, 8) : _mm256_srai_epi32(r, 24);
}

/* Q3_K / Q6_K: the 16 scales as int8, 4 per dword (q = 0..3: bytes e = scale 4q + e) */
INLINE void kx_sq(int kt, const uint8_t *xb, int h, __m256i sq[4]) {
    if (kt == KQ6) {
        for (int q = 0; q < 4; q++) sq[q] = ld8(xb, LB_KX_Q6_SC + 64 * q, h);
        return;
    }
    /* Q3_K: low nibble of byte j % 8 (j < 8) or its high nibble, top 2 bits
     * at 2 (j / 4) of byte 8 + j % 4; scale = raw - 32 */
    const __m256i v0 = ld8(xb, 1536, h), v1 = ld8(xb, 1600, h), v2 = ld8(xb, 1664, h);
    const __m256i low[4] = {v0, v1, _mm256_srli_epi16(v0, 4), _mm256_srli_epi16(v1, 4)};
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        const __m256i raw = _mm256_or_si256(_mm256_and_si256(low[q], b8(0x0F)),
                                            _mm256_and_si256(shl16(v2, 4 - 2 * q), b8(0x30)));
        sq[q] = _mm256_sub_epi8(raw, b8(32));
    }
}

/* Q4_K / Q5_K: the 6-bit scales (s03: bytes = sc 0..3, s47: sc 4..7) and mins
 * (m03, m47) from the 12 scale bytes (lb_get_scale_min_k4) */
INLINE void kx_k4(const uint8_t *xb, int h, __m256i *s03, __m256i *s47, __m256i *m03, __m256i *m47) {
    const __m256i v0 = ld8(xb, 64, h), v1 = ld8(xb, 128, h), v2 = ld8(xb, 192, h);
    const __m256i m6 = b8(0x3F), m4 = b8(0x0F), t2 = b8(0x30);
    *s03 = _mm256_and_si256(v0, m6);
    *m03 = _mm256_and_si256(v1, m6);
    *s47 = _mm256_or_si256(_mm256_and_si256(v2, m4), _mm256_and_si256(_mm256_srli_epi16(v0, 2), t2));
    *m47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v2, 4), m4), _mm256_and_si256(_mm256_srli_epi16(v1, 2), t2));
}

/* IQ4_XS: sc_ib = ((scales_l nibble ib) | ((scales_h >> 2ib) & 3) << 4) - 32 as int32 */
INLINE __m256i kx_iq4_sc(const uint8_t *xb, int h, int ib) {
    const __m256i sl = ld8(xb, 64, h);
    const __m256i sh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(xb + 32 + 16 * h)));
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi32(sl, 4 * ib), _mm256_set1_epi32(15));
    const int s = 4 - 2 * ib;
    const __m256i hs = s > 0 ? _mm256_slli_epi32(sh, s) : s < 0 ? _mm256_srli_epi32(sh, -s) : sh;
    const __m256i hi = _mm256_and_si256(hs, _mm256_set1_epi32(0x30));
    return _mm256_sub_epi32(_mm256_or_si256(lo, hi), _mm256_set1_epi32(32));
}

/* All NS scales of half h (w16: AVX2 form). */
INLINE void kx_scales(int kt, int w16, const uint8_t *xb, int h, __m256i sc[16]) {
    if (kt == KQ4 || kt == KQ5) {
        __m256i s03, s47, m03, m47;
        kx_k4(xb, h, &s03, &s47, &m03, &m47);
#pragma GCC unroll 4
        for (int e = 0; e < 4; e++) sc[e] = byte_to_lane(s03, e, 0, w16), sc[4 + e] = byte_to_lane(s47, e, 0, w16);
    } else if (kt == KQ3 || kt == KQ6) {
        __m256i sq[4];
        kx_sq(kt, xb, h, sq);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
#pragma GCC unroll 4
            for (int e = 0; e < 4; e++) sc[4 * q + e] = byte_to_lane(sq[q], e, 1, w16);
    } else if (kt == KIQ4) {
        const __m256i rep16 = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13));
#pragma GCC unroll 8
        for (int ib = 0; ib < 8; ib++) {
            const __m256i s = kx_iq4_sc(xb, h, ib);
            sc[ib] = w16 ? _mm256_shuffle_epi8(s, rep16) : s;
        }
    }
}

/* Q4_K / Q5_K mins of half h as int16 pairs (m0, m2), (m1, m3), (m4, m6),
 * (m5, m7), against the activation pairs of kx_act_mins. */
INLINE void kx_min_pairs(const uint8_t *xb, int h, __m256i mp[4]) {
    __m256i s03, s47, m03, m47;
    kx_k4(xb, h, &s03, &s47, &m03, &m47);
    const __m256i lo = _mm256_set1_epi32(0x00FF00FF);
    mp[0] = _mm256_and_si256(m03, lo);
    mp[1] = _mm256_and_si256(_mm256_srli_epi32(m03, 8), lo);
    mp[2] = _mm256_and_si256(m47, lo);
    mp[3] = _mm256_and_si256(_mm256_srli_epi32(m47, 8), lo);
}

/* The activation pairs of the mins: dwords (s0, s2), (s1, s3), (s4, s6),
 * (s5, s7) of the 32-weight sums s_i, from s32 = [s0 s1 s2 s3 | s4 s5 s6 s7]
 * (int32 lanes); out[0, 1, 4, 5] hold them. */
INLINE void kx_act_mins(__m256i s32, int32_t out[8]) {
    const __m256i hi = _mm256_shuffle_epi32(s32, 0x4E); /* [s2 s3 s0 s1 | s6 s7 s4 s5] */
    _mm256_storeu_si256((__m256i *)out, _mm256_blend_epi16(s32, _mm256_slli_epi32(hi, 16), 0xAA));
}

/* sum_i mp[i] . pairs i (int16 dot products into int32 lanes) */
INLINE __m256i kx_mins_dot(const __m256i mp[4], const int32_t pairs[8]) {
    const __m256i a = _mm256_add_epi32(_mm256_madd_epi16(mp[0], _mm256_set1_epi32(pairs[0])),
                                       _mm256_madd_epi16(mp[1], _mm256_set1_epi32(pairs[1])));
    const __m256i b = _mm256_add_epi32(_mm256_madd_epi16(mp[2], _mm256_set1_epi32(pairs[4])),
                                       _mm256_madd_epi16(mp[3], _mm256_set1_epi32(pairs[5])));
    return _mm256_add_epi32(a, b);
}

#endif
