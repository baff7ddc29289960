/* Pieces shared by the Arm kernels of the 16-row layouts (kernels/arm/kx_arm.h):
 * plane offsets, byte-wise weight decoders, scale extraction, activation
 * bsum digits. Plain ASIMD, always inlined, so every level (neon, dotprod,
 * i8mm) gets them; shift counts, lanes and byte indices must be constants
 * at every call site (the switches keep them immediates for clang too).
 *
 * A decoder works on any byte vector whose bytes come from the same byte
 * positions of the planes: a quarter of a DW vector (rows 4q..4q+3, one row
 * per 32-bit lane: the dotprod GEMV) or two DW vectors zipped by 32 bits
 * (two rows x 8 bytes per 64-bit half: the SMMLA GEMM), provided every plane
 * it combines is loaded and zipped alike. */
#ifndef LB_KX_ARM_DECODE_H
#define LB_KX_ARM_DECODE_H

#include "kernels/arm/arm_common.h"
#include "formats/repack_kx.h"

/* The kernels' type switches (the K types first). */
enum { KX_Q3_K, KX_Q4_K, KX_Q5_K, KX_Q6_K, KX_IQ4_XS, KX_Q4_1, KX_Q5_0, KX_Q5_1 };

/* Plane offsets inside an x-block (formats/repack_kx.c, lb_kx_x_offset). */
enum {
    KX_Q3_HM = 0, KX_Q3_QS = 512, KX_Q3_SC = 1536, KX_Q3_D = 1728,
    KX_QK_D = 0, KX_QK_DMIN = 32, KX_QK_SC = 64, KX_Q4K_QS = 256, KX_Q5K_QH = 256, KX_Q5K_QS = 768,
    /* Q6_K: its ql / qh vectors at lb_kx_q6_ql / lb_kx_q6_qh (formats/repack_kx.h) */
    KX_Q6_SC = LB_KX_Q6_SC, KX_Q6_D = LB_KX_Q6_D,
    KX_XS_D = 0, KX_XS_SH = 32, KX_XS_SL = 64, KX_XS_QS = 128,
    KX_Q41_D = 0, KX_Q41_M = 32, KX_Q41_QS = 64,
    KX_Q50_QS = 0, KX_Q50_QH = 256, KX_Q50_D = 320,
    KX_Q51_D = 0, KX_Q51_M = 32, KX_Q51_QH = 64, KX_Q51_QS = 128,
};

/* 16 bytes of DW vector `vec` of the plane at `plane`: rows 4q..4q+3. */
LB_ARM_INLINE uint8x16_t kx_ld(const uint8_t *xb, int plane, int vec, int q) {
    return vld1q_u8(xb + plane + 64 * vec + 16 * q);
}

/* One fp16 -> fp32 (FCVT). */
LB_ARM_INLINE float kx_f16(const lb_fp16 *p) {
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

/* Quarters q0 .. q0 + Q - 1 of DW vector `vec`: one LD1 of Q registers. */
LB_ARM_INLINE void kx_ldq(const uint8_t *xb, int plane, int vec, int q0, int Q, uint8x16_t v[4]) {
    const uint8_t *p = xb + plane + 64 * vec + 16 * q0;
    if (Q == 4) {
        const uint8x16x4_t t = vld1q_u8_x4(p);
        v[0] = t.val[0], v[1] = t.val[1], v[2] = t.val[2], v[3] = t.val[3];
    } else if (Q == 2) {
        const uint8x16x2_t t = vld1q_u8_x2(p);
        v[0] = t.val[0], v[1] = t.val[1];
    } else {
        v[0] = vld1q_u8(p);
    }
}

/* Four fp16 of an H16 plane (rows 4q..4q+3) as floats. */
LB_ARM_INLINE float32x4_t kx_f16x4(const uint8_t *xb, int plane, int q) {
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(xb + plane + 8 * q)));
}

/* ---- immediates through switches ---- */

/* bytes shifted left by s (s < 0: right), s in -7..7 */
LB_ARM_INLINE uint8x16_t kx_sh8(uint8x16_t v, int s) {
    switch (s) {
    case -7: return vshrq_n_u8(v, 7);
    case -6: return vshrq_n_u8(v, 6);
    case -5: return vshrq_n_u8(v, 5);
    case -4: return vshrq_n_u8(v, 4);
    case -3: return vshrq_n_u8(v, 3);
    case -2: return vshrq_n_u8(v, 2);
    case -1: return vshrq_n_u8(v, 1);
    case 0: return v;
    case 1: return vshlq_n_u8(v, 1);
    case 2: return vshlq_n_u8(v, 2);
    case 3: return vshlq_n_u8(v, 3);
    case 4: return vshlq_n_u8(v, 4);
    case 5: return vshlq_n_u8(v, 5);
    case 6: return vshlq_n_u8(v, 6);
    default: return vshlq_n_u8(v, 7);
    }
}

/* 32-bit lanes shifted left by s (s < 0: right), s in -7..4 (the P5 plane) */
LB_ARM_INLINE uint8x16_t kx_sh32(uint8x16_t v, int s) {
    const uint32x4_t u = vreinterpretq_u32_u8(v);
    switch (s) {
    case -7: return vreinterpretq_u8_u32(vshrq_n_u32(u, 7));
    case -6: return vreinterpretq_u8_u32(vshrq_n_u32(u, 6));
    case -5: return vreinterpretq_u8_u32(vshrq_n_u32(u, 5));
    case -4: return vreinterpretq_u8_u32(vshrq_n_u32(u, 4));
    case -3: return vreinterpretq_u8_u32(vshrq_n_u32(u, 3));
    case -2: return vreinterpretq_u8_u32(vshrq_n_u32(u, 2));
    case -1: return vreinterpretq_u8_u32(vshrq_n_u32(u, 1));
    case 0: return v;
    case 1: return vreinterpretq_u8_u32(vshlq_n_u32(u, 1));
    case 2: return vreinterpretq_u8_u32(vshlq_n_u32(u, 2));
    case 3: return vreinterpretq_u8_u32(vshlq_n_u32(u, 3));
    default: return vreinterpretq_u8_u32(vshlq_n_u32(u, 4));
    }
}

/* Byte e of every 32-bit lane as int32: unsigned (kx_byte_u) or signed. */
LB_ARM_INLINE int32x4_t kx_byte_u(uint8x16_t v, int e) {
    const uint32x4_t u = vreinterpretq_u32_u8(v);
    switch (e) {
    case 0: return vreinterpretq_s32_u32(vandq_u32(u, vdupq_n_u32(0xFF)));
    case 1: return vreinterpretq_s32_u32(vshrq_n_u32(vshlq_n_u32(u, 16), 24));
    case 2: return vreinterpretq_s32_u32(vshrq_n_u32(vshlq_n_u32(u, 8), 24));
    default: return vreinterpretq_s32_u32(vshrq_n_u32(u, 24));
    }
}
LB_ARM_INLINE int32x4_t kx_byte_s(int8x16_t v, int e) {
    const int32x4_t s = vreinterpretq_s32_s8(v);
    switch (e) {
    case 0: return vshrq_n_s32(vshlq_n_s32(s, 24), 24);
    case 1: return vshrq_n_s32(vshlq_n_s32(s, 16), 24);
    case 2: return vshrq_n_s32(vshlq_n_s32(s, 8), 24);
    default: return vshrq_n_s32(s, 24);
    }
}

/* 32-bit lane `lane` of a in all four lanes. */
LB_ARM_INLINE int8x16_t kx_dup32(int8x16_t a, int lane) {
    const int32x4_t v = vreinterpretq_s32_s8(a);
    switch (lane) {
    case 0: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 0));
    case 1: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 1));
    case 2: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 2));
    default: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 3));
    }
}

LB_ARM_INLINE int8x16_t kx_s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

/* ---- weights (unsigned, so no sign games; the biases go through the
 * activation sums) ---- */

/* nibbles */
LB_ARM_INLINE uint8x16_t kx_lo4(uint8x16_t v) { return vandq_u8(v, vdupq_n_u8(0x0F)); }
LB_ARM_INLINE uint8x16_t kx_hi4(uint8x16_t v) { return vshrq_n_u8(v, 4); }

/* Q5: a nibble with its fifth bit, hb holding that bit at bit 4 of each
 * byte (and only there): BSL keeps the low nibble, SRI shifts the high one
 * in under it. */
LB_ARM_INLINE uint8x16_t kx_lo5(uint8x16_t v, uint8x16_t hb) { return vbslq_u8(vdupq_n_u8(0x0F), v, hb); }
LB_ARM_INLINE uint8x16_t kx_hi5(uint8x16_t v, uint8x16_t hb) { return vsriq_n_u8(hb, v, 4); }

/* Q5_K: fifth bits of qs vector 8p + k (qh vector k): bit 2p (low nibble),
 * 2p + 1 (high), moved to bit 4. */
LB_ARM_INLINE uint8x16_t kx_q5k_hb(uint8x16_t qh, int bit) {
    return vandq_u8(kx_sh8(qh, 4 - bit), vdupq_n_u8(0x10));
}

/* Q5_0 / Q5_1: fifth bits of qs vector c, nibble h, from the P5 dword
 * (bit 8e + 2c + h -> bit 4 of byte e). For two zipped vectors c, c + 1
 * pass P zipped with P >> 2 (kx_p5_zip): the same shift then serves both. */
LB_ARM_INLINE uint8x16_t kx_p5_hb(uint8x16_t P, int c, int h) {
    return vandq_u8(kx_sh32(P, 4 - 2 * c - h), vdupq_n_u8(0x10));
}

/* Q6_K: the 6-bit quants of ql vector 16n + 8g + k with its qh vector
 * 8n + k: u[0] from the low nibbles (weights 128n + 32g + 4k + e) and qh
 * bits 2g, 2g + 1; u[1] from the high nibbles (64 weights on) and qh bits
 * 4 + 2g, 5 + 2g. */
LB_ARM_INLINE void kx_q6(uint8x16_t ql, uint8x16_t qh, int g, uint8x16_t u[2]) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30);
    if (g == 0) {
        u[0] = vbslq_u8(m4, ql, vandq_u8(vshlq_n_u8(qh, 4), m30));
        u[1] = vsriq_n_u8(vandq_u8(qh, m30), ql, 4);
    } else {
        u[0] = vbslq_u8(m4, ql, vandq_u8(vshlq_n_u8(qh, 2), m30));
        u[1] = vsriq_n_u8(vshrq_n_u8(qh, 2), ql, 4); /* bits 6, 7 -> 4, 5; 6, 7 clear */
    }
}

/* Q3_K: the 3-bit quant (0..7; weight + 4) of bit pair j of qs vector
 * 8h + k, its third bit at bit 4h + j of hmask vector k. */
LB_ARM_INLINE uint8x16_t kx_q3(uint8x16_t x, uint8x16_t hm, int h, int j) {
    const uint8x16_t lo = j == 3 ? vshrq_n_u8(x, 6) : vandq_u8(kx_sh8(x, -2 * j), vdupq_n_u8(3));
    /* BIT: the third bit from hm moved to bit 2 (lo has 0 there) */
    return vbslq_u8(vdupq_n_u8(4), kx_sh8(hm, 2 - 4 * h - j), lo);
}

/* Q3_K's six-bit scales - 32 as int8 of sub-blocks 8h .. 8h + 7: sub-block
 * 8h + 4i + e in byte e of sc[i], from the three scale vectors s0, s1, s2
 * (bytes 0-3, 4-7, 8-11 of each row; sub-block j: low nibble of byte j % 8
 * for j < 8, else its high nibble; top bits at 2 (j / 4) of byte 8 + j % 4). */
LB_ARM_INLINE void kx_q3_scales(uint8x16_t s0, uint8x16_t s1, uint8x16_t s2, int h, int8x16_t sc[2]) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30), k32 = vdupq_n_u8(32);
    if (h == 0) {
        sc[0] = kx_s8(vsubq_u8(vbslq_u8(m4, s0, vandq_u8(vshlq_n_u8(s2, 4), m30)), k32));
        sc[1] = kx_s8(vsubq_u8(vbslq_u8(m4, s1, vandq_u8(vshlq_n_u8(s2, 2), m30)), k32));
    } else {
        sc[0] = kx_s8(vsubq_u8(vsriq_n_u8(vandq_u8(s2, m30), s0, 4), k32));
        sc[1] = kx_s8(vsubq_u8(vsriq_n_u8(vandq_u8(vshrq_n_u8(s2, 2), m30), s1, 4), k32));
    }
}

/* Q4_K / Q5_K's 6-bit scales of sub-blocks 0-3 (p < 2) or 4-7 (p >= 2) in
 * bytes 0-3, from scale vectors v0, v2 (bytes 0-3, 8-11 of each row;
 * lb_get_scale_min_k4). */
LB_ARM_INLINE uint8x16_t kx_qk_sc(uint8x16_t v0, uint8x16_t v2, int p) {
    if (p < 2) return vandq_u8(v0, vdupq_n_u8(0x3F));
    return vbslq_u8(vdupq_n_u8(0x0F), v2, vandq_u8(vshrq_n_u8(v0, 2), vdupq_n_u8(0x30)));
}
/* Their 6-bit mins of sub-blocks 0-3, 4-7, from v1, v2 (bytes 4-7, 8-11). */
LB_ARM_INLINE void kx_qk_mins(uint8x16_t v1, uint8x16_t v2, uint8x16_t *mn03, uint8x16_t *mn47) {
    *mn03 = vandq_u8(v1, vdupq_n_u8(0x3F));
    *mn47 = vorrq_u8(vshrq_n_u8(v2, 4), vandq_u8(vshrq_n_u8(v1, 2), vdupq_n_u8(0x30)));
}

/* IQ4_XS's 8 scales - 32 as int8: sub-block 2e in byte e of *ev, 2e + 1 in
 * byte e of *od, from the scales_l vector sl (byte e: sub-blocks 2e, 2e + 1
 * in its nibbles) and the 16 bytes at sh whose first 8 are the quarter's
 * four scales_h (u16; bits 2ib, 2ib + 1 are the top bits of sub-block ib). */
LB_ARM_INLINE void kx_xs_scales(uint8x16_t sl, const uint8_t *sh, int8x16_t *ev, int8x16_t *od) {
    static const uint8_t spread[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
    static const int8_t shr[16] = {0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4};
    /* byte e of row r: the nibble of scales_h holding sub-blocks 2e, 2e + 1 at bits 0-3 */
    const uint8x16_t t = vshlq_u8(vqtbl1q_u8(vld1q_u8(sh), vld1q_u8(spread)), vld1q_s8(shr));
    const uint8x16_t m30 = vdupq_n_u8(0x30), k32 = vdupq_n_u8(32);
    *ev = kx_s8(vsubq_u8(vbslq_u8(vdupq_n_u8(0x0F), sl, vandq_u8(vshlq_n_u8(t, 4), m30)), k32));
    *od = kx_s8(vsubq_u8(vsriq_n_u8(vandq_u8(vshlq_n_u8(t, 2), m30), sl, 4), k32));
}

/* ---- activations: Q8_K bsums as int8 digits (64 h + l, 0 <= l < 64) so
 * that a by-lane SDOT against per-row int8 scale / min bytes gives the
 * exact bias and min terms ---- */

/* Sums of the 8 sub-blocks of 32 (|.| <= 32 * 127 < 64 * 64): lanes
 * [h0-3, h4-7, l0-3, l4-7]. */
LB_ARM_INLINE int8x16_t kx_digits32(const int16_t *bsums) {
    const int16x8_t B = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
    return vuzp1q_s8(vreinterpretq_s8_s16(vshrq_n_s16(B, 6)), vreinterpretq_s8_s16(vandq_s16(B, vdupq_n_s16(63))));
}

/* The 16 sums of 16 (|.| <= 2032): H (lanes: h0-3 .. h12-15) and L. */
LB_ARM_INLINE void kx_digits16(const int16_t *bsums, int8x16_t *H, int8x16_t *L) {
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8), m = vdupq_n_s16(63);
    *H = vuzp1q_s8(vreinterpretq_s8_s16(vshrq_n_s16(b0, 6)), vreinterpretq_s8_s16(vshrq_n_s16(b1, 6)));
    *L = vuzp1q_s8(vreinterpretq_s8_s16(vandq_s16(b0, m)), vreinterpretq_s8_s16(vandq_s16(b1, m)));
}

#endif
