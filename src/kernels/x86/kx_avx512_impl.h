/* Shared by the AVX-512 VNNI GEMV (kx_gemv_avx512.c) and GEMM
 * (kx_gemm_avx512.c) on the 16-row layouts of formats/repack_kx.h: the
 * decode of an x-block into unsigned weight bytes and integer sub-block
 * scales, 16 rows at a time (one row per 32-bit lane), so vpdpbusd against
 * a broadcast activation dword adds into each row's own lane.
 *
 * Every type decodes to u, an unsigned byte per weight, with w = u - bias
 * the value its reference multiplies (Q3_K: bias 4, Q6_K 32, IQ4_XS 128 for
 * its codebook, Q5_0 16; Q4_K, Q5_K, Q4_1, Q5_1: 0, their offsets are the
 * mins): the integer accumulator of a sub-block starts at -bias * (its
 * activation sum), which removes the bias exactly. Included only by x86
 * kernel files compiled with LB_KX512. */
#ifndef LB_KX_AVX512_IMPL_H
#define LB_KX_AVX512_IMPL_H

#include <immintrin.h>
#include <string.h>

#include "formats/kquants.h"
#include "formats/repack_kx.h"

#define LB_KX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE LB_KX512 static inline __attribute__((always_inline))

enum { KQ3, KQ4, KQ5, KQ6, KIQ4 }; /* the super-block kinds */
enum { KL41, KL50, KL51 };         /* the legacy 32-weight kinds */

/* ---- geometry (formats/repack_kx.c's plane table; test_kx_repack checks
 * the offsets used here through lb_kx_x_offset) ---- */

INLINE size_t kx_xbs(int kt) {
    static const size_t b[5] = {16 * 110, 16 * 144, 16 * 176, 16 * 210, 16 * 136};
    return b[kt];
}
/* weights per sub-block (one scale) and sub-blocks per super-block */
INLINE int kx_sb(int kt) { return kt == KQ3 || kt == KQ6 ? 16 : 32; }
INLINE int kx_nsub(int kt) { return QK_K / kx_sb(kt); }
INLINE int kx_bias(int kt) { return kt == KQ3 ? 4 : kt == KQ6 ? 32 : kt == KIQ4 ? 128 : 0; }
INLINE int kx_has_min(int kt) { return kt == KQ4 || kt == KQ5; }
/* the fp16 super-scale(s) */
INLINE int kx_d_off(int kt) { return kt == KQ3 ? 1728 : kt == KQ6 ? LB_KX_Q6_D : 0; }
enum { KX_DMIN_OFF = 32 }; /* Q4_K, Q5_K */

INLINE __m512i ld(const uint8_t *p) { return _mm512_loadu_si512(p); }
INLINE __m512 fp16x16(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
INLINE __m512i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
INLINE __m512i b8(int v) { return _mm512_set1_epi8((char)v); }
/* (a & m) | b, b already masked */
INLINE __m512i or_masked(__m512i a, __m512i m, __m512i b) { return _mm512_ternarylogic_epi32(a, m, b, 0xEA); }
/* a | (b & m) */
INLINE __m512i or_and(__m512i a, __m512i b, __m512i m) { return _mm512_ternarylogic_epi32(a, b, m, 0xF8); }
/* v shifted left by s bits (right by -s), per 32-bit lane; s a constant */
INLINE __m512i shl(__m512i v, int s) {
    return s > 0 ? _mm512_slli_epi32(v, (unsigned)s) : s < 0 ? _mm512_srli_epi32(v, (unsigned)-s) : v;
}

/* Byte e of every dword, zero-extended to the dword. */
INLINE __m512i byte_of(__m512i v, int e) {
    static const uint8_t pat[4][16] __attribute__((aligned(16))) = {
        {0, 128, 128, 128, 4, 128, 128, 128, 8, 128, 128, 128, 12, 128, 128, 128},
        {1, 128, 128, 128, 5, 128, 128, 128, 9, 128, 128, 128, 13, 128, 128, 128},
        {2, 128, 128, 128, 6, 128, 128, 128, 10, 128, 128, 128, 14, 128, 128, 128},
        {3, 128, 128, 128, 7, 128, 128, 128, 11, 128, 128, 128, 15, 128, 128, 128},
    };
    return _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)pat[e])));
}

/* ---- weights: vector k (0..15) of 64-weight group g = u of weights
 * 64g + 4k .. + 3 of the 16 rows. Loads that two k share (a nibble byte's
 * low and high halves) are the same expression: after inlining the
 * compiler loads once. ---- */

INLINE __m512i dec_vec(int kt, const uint8_t *xb, int g, int k) {
    const __m512i m4 = b8(0x0F);
    const int t = k % 8, hi = k / 8;
    if (kt == KQ4 || kt == KQ5) {
        /* pair g: qs vector 8g + t, low nibbles sub-block 2g, high 2g + 1 */
        const __m512i v = ld(xb + (kt == KQ4 ? 256 : 768) + 64 * (8 * g + t));
        __m512i w = _mm512_and_si512(hi ? _mm512_srli_epi16(v, 4) : v, m4);
        /* Q5_K's fifth bit: bit 2g + hi of qh vector t's byte -> bit 4 */
        if (kt == KQ5) w = or_and(w, shl(ld(xb + 256 + 64 * t), 4 - 2 * g - hi), b8(0x10));
        return w;
    }
    if (kt == KQ6) {
        /* weights 128n + 64s + 32 hi + 4t: ql vector 16n + 8 hi + t (its low
         * nibbles for s = 0, high for 1), 2 bits at 4s + 2 hi of qh vector 8n + t */
        const int n = g / 2, s = g % 2;
        const __m512i q = ld(xb + lb_kx_q6_ql(16 * n + 8 * hi + t)), h = ld(xb + lb_kx_q6_qh(8 * n + t));
        return or_masked(s ? _mm512_srli_epi16(q, 4) : q, m4, _mm512_and_si512(shl(h, 4 - 4 * s - 2 * hi), b8(0x30)));
    }
    if (kt == KQ3) {
        /* weights 128h + 32j + 4t, j = 2 (g % 2) + hi: bits 2j of qs vector
         * 8h + t, third bit = bit 4h + j of hmask vector t */
        const int h = g / 2, j = 2 * (g % 2) + hi;
        const __m512i q = ld(xb + 512 + 64 * (8 * h + t)), hm = ld(xb + 64 * t);
        return or_masked(_mm512_srli_epi32(q, (unsigned)(2 * j)), b8(0x03), _mm512_and_si512(shl(hm, 2 - 4 * h - j), b8(0x04)));
    }
    /* IQ4_XS: sub-block ib = 2g + hi; qs vector 4 ib + t % 4, low nibbles for
     * t < 4 (weights 32 ib + 4t), high for t >= 4 (32 ib + 16 + 4 (t - 4));
     * codebook + 128 by vpshufb */
    const __m512i book = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lb_kvalues_iq4nl)), b8(0x80));
    const __m512i v = ld(xb + 128 + 64 * (4 * (2 * g + hi) + t % 4));
    return _mm512_shuffle_epi8(book, _mm512_and_si512(t >= 4 ? _mm512_srli_epi16(v, 4) : v, m4));
}

INLINE void dec64(int kt, const uint8_t *xb, int g, __m512i w[16]) {
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) w[k] = dec_vec(kt, xb, g, k);
}

/* ---- sub-block scales: kx_sload reads a super-block's scale planes into
 * at most 4 vectors, kx_sc gives the signed integer scale of sub-block j per
 * row from them (on demand: all 16 at once would not fit the registers),
 * kx_mp the mins of Q4_K / Q5_K as int16 pairs mp[i] = (m_a, m_b) for the
 * pairs (0, 2), (1, 3), (4, 6), (5, 7). ---- */

typedef struct {
    __m512i v[4];
} kx_sstate;

INLINE void kx_sload(int kt, const uint8_t *xb, kx_sstate *S) {
    if (kt == KQ4 || kt == KQ5) {
        /* 12 bytes = 3 dwords per row (lb_get_scale_min_k4): sc 0-3, sc 4-7, m 0-3, m 4-7 as bytes */
        const __m512i v0 = ld(xb + 64), v1 = ld(xb + 128), v2 = ld(xb + 192);
        S->v[0] = _mm512_and_si512(v0, b8(0x3F));
        S->v[1] = or_masked(v2, b8(0x0F), _mm512_and_si512(_mm512_srli_epi32(v0, 2), b8(0x30)));
        S->v[2] = _mm512_and_si512(v1, b8(0x3F));
        S->v[3] = or_masked(_mm512_srli_epi32(v2, 4), b8(0x0F), _mm512_and_si512(_mm512_srli_epi32(v1, 2), b8(0x30)));
    } else if (kt == KQ6) {
        /* 16 int8 per row, 4 dwords */
        for (int q = 0; q < 4; q++) S->v[q] = ld(xb + LB_KX_Q6_SC + 64 * q);
    } else if (kt == KQ3) {
        /* raw 6-bit j: low nibble of byte j % 8 (j < 8) or its high nibble,
         * top 2 bits at 2 (j / 4) of byte 8 + j % 4: v[q] = raw of j = 4q + e as bytes */
        const __m512i v0 = ld(xb + 1536), v1 = ld(xb + 1600), v2 = ld(xb + 1664);
        const __m512i low[4] = {v0, v1, _mm512_srli_epi32(v0, 4), _mm512_srli_epi32(v1, 4)};
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
            S->v[q] = or_masked(low[q], b8(0x0F), _mm512_and_si512(shl(v2, 4 - 2 * q), b8(0x30)));
    } else {
        /* IQ4_XS: scales_l (4 bytes) and scales_h (widened to the dword) */
        S->v[0] = ld(xb + 64);
        S->v[1] = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(xb + 32)));
    }
}

INLINE __m512i kx_sc(int kt, const kx_sstate *S, int j) {
    if (kt == KQ4 || kt == KQ5) return byte_of(S->v[j / 4], j % 4);
    if (kt == KQ6) return _mm512_srai_epi32(_mm512_slli_epi32(S->v[j / 4], (unsigned)(24 - 8 * (j % 4))), 24);
    if (kt == KQ3) return _mm512_sub_epi32(byte_of(S->v[j / 4], j % 4), _mm512_set1_epi32(32));
    /* IQ4_XS: ls = (scales_l nibble j) | ((scales_h >> 2j) & 3) << 4, scale ls - 32 */
    const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(S->v[0], (unsigned)(4 * j)), _mm512_set1_epi32(15));
    const __m512i hi = _mm512_and_si512(shl(S->v[1], 4 - 2 * j), _mm512_set1_epi32(0x30));
    return _mm512_sub_epi32(_mm512_or_si512(lo, hi), _mm512_set1_epi32(32));
}

INLINE void kx_mp(const kx_sstate *S, __m512i mp[4]) {
    const __m512i lo = _mm512_set1_epi32(0x00FF00FF);
    mp[0] = _mm512_and_si512(S->v[2], lo);
    mp[1] = _mm512_and_si512(_mm512_srli_epi32(S->v[2], 8), lo);
    mp[2] = _mm512_and_si512(S->v[3], lo);
    mp[3] = _mm512_and_si512(_mm512_srli_epi32(S->v[3], 8), lo);
}

/* The activation-side integers of one Q8_K block (16 bsums) that the
 * kernels start from: bias[j] = -bias * (activation sum of sub-block j)
 * (the chain start), and for the mins the pairs of 32-sums (int16) that
 * match kx_scales' mp: (s0, s2), (s1, s3), (s4, s6), (s5, s7). */
INLINE void kx_act_pre(int kt, const int16_t *bsums, int32_t pre[16]) {
    const __m512i b16 = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)bsums));
    if (kx_sb(kt) == 16) {
        _mm512_storeu_si512(pre, _mm512_mullo_epi32(b16, _mm512_set1_epi32(-kx_bias(kt))));
        return;
    }
    int32_t s[16], s32[8];
    _mm512_storeu_si512(s, b16);
    for (int j = 0; j < 8; j++) s32[j] = s[2 * j] + s[2 * j + 1];
    if (kt == KIQ4) {
        for (int j = 0; j < 8; j++) pre[j] = -128 * s32[j];
        return;
    }
    static const int pa[4] = {0, 1, 4, 5};
    for (int i = 0; i < 4; i++)
        pre[i] = (int32_t)(((uint32_t)(uint16_t)s32[pa[i]]) | ((uint32_t)(uint16_t)s32[pa[i] + 2] << 16));
}

/* ---- the legacy 32-weight kinds (kx_legacy_avx512.c, kx_amx_bf16.c): one
 * x-block is one block of 32 weights of 16 rows ---- */

/* x-block bytes, plane offsets (formats/repack_kx.c) */
INLINE size_t lg_xbs(int kt) { return kt == KL41 ? 320 : kt == KL50 ? 352 : 384; }
INLINE int lg_qs(int kt) { return kt == KL41 ? 64 : kt == KL50 ? 0 : 128; }
INLINE int lg_p5(int kt) { return kt == KL50 ? 256 : 64; }
INLINE int lg_d(int kt) { return kt == KL50 ? 320 : 0; }
INLINE int lg_has_m(int kt) { return kt != KL50; }
enum { LG_M_OFF = 32 };

/* Weights 4k .. 4k + 3 of the 16 rows (k = 0..7), unsigned. */
INLINE __m512i lg_vec(int kt, const uint8_t *xb, int k) {
    const int c = k % 4, hi = k / 4;
    const __m512i v = ld(xb + lg_qs(kt) + 64 * c);
    __m512i w = _mm512_and_si512(hi ? _mm512_srli_epi16(v, 4) : v, b8(0x0F));
    /* fifth bit of weight 4c + e + 16 hi: bit 8e + 2c + hi of the P5 dword -> bit 4 of byte e */
    if (kt != KL41) w = or_and(w, shl(ld(xb + lg_p5(kt)), 4 - 2 * c - hi), b8(0x10));
    return w;
}

#endif
