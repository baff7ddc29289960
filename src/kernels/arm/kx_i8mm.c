/* GEMM of the 16-row layouts with the i8mm extension (kernels/arm/kx_arm.h).
 * SMMLA (vmmlaq_s32) multiplies 2 activation rows x 8 bytes by 2 weight
 * rows x 8 bytes into a 2x2 int32 tile [m0.n0, m0.n1, m1.n0, m1.n1].
 *
 * Weights: a quarter of DW vectors c and c + 1 (c even) holds 4 bytes of
 * each of rows 4q..4q+3; ZIP1 / ZIP2 by 32 bits give rows (4q, 4q+1) and
 * (4q+2, 4q+3) x 8 consecutive weights (the byte positions of vectors c,
 * c + 1 are consecutive weights in every type), decoded like the GEMV's
 * (kx_arm_decode.h: every plane that is combined is zipped alike; Q5_0 /
 * Q5_1's P5 dword zipped with itself shifted by 2 bits). Activations: plain
 * rows, each block's 8, 4 or 2 rows zipped by 64 bits once into a stack
 * buffer that the 4 quarters read.
 *
 * Tile: one quarter (2 weight-row pairs) x NP activation-row pairs, the
 * quarters in turn: per sub-block 2 NP int32 accumulators (IQ4_XS, whose
 * two nibbles are one sub-block, and the blocks of 32: NP = 4) or 4 NP (the
 * other K types, two sub-blocks in flight: NP = 2), then MLA by the sub-
 * block scales ([s_n0, s_n1, s_n0, s_n1]: the quarter's scale lanes
 * duplicated by 64 bits). Min and bias terms: SMMLA too, of the activation
 * bsum digits (kx_digits*, zipped) by the per-row min / scale bytes
 * (zipped). Float sums of the group per block in memory. Activation rows
 * in tiles of 8 / 4, then 2; a last odd row goes to the dotprod GEMV. */
#include "kernels/arm/kx_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/kx_arm_decode.h"
#include "kernels/dispatch.h"

#define KX_MM LB_ARM_INLINE LB_ARM_I8MM

LB_ARM_INLINE uint8x16_t kx_zip1(uint8x16_t a, uint8x16_t b) {
    return vreinterpretq_u8_u32(vzip1q_u32(vreinterpretq_u32_u8(a), vreinterpretq_u32_u8(b)));
}
LB_ARM_INLINE uint8x16_t kx_zip2(uint8x16_t a, uint8x16_t b) {
    return vreinterpretq_u8_u32(vzip2q_u32(vreinterpretq_u32_u8(a), vreinterpretq_u32_u8(b)));
}
LB_ARM_INLINE int8x16_t kx_zip64(int8x16_t a, int8x16_t b, int hi) {
    const int64x2_t x = vreinterpretq_s64_s8(a), y = vreinterpretq_s64_s8(b);
    return vreinterpretq_s8_s64(hi ? vzip2q_s64(x, y) : vzip1q_s64(x, y));
}
/* Weight-row pair wp of a quarter's lanes: [l(2wp), l(2wp+1)] twice. */
LB_ARM_INLINE int32x4_t kx_pair(int32x4_t v, int wp) {
    const int64x2_t x = vreinterpretq_s64_s32(v);
    return vreinterpretq_s32_s64(wp ? vdupq_laneq_s64(x, 1) : vdupq_laneq_s64(x, 0));
}
LB_ARM_INLINE float32x4_t kx_fpair(float32x4_t v, int wp) {
    const float64x2_t x = vreinterpretq_f64_f32(v);
    return vreinterpretq_f32_f64(wp ? vdupq_laneq_f64(x, 1) : vdupq_laneq_f64(x, 0));
}

KX_MM int32x4_t kx_mm(int32x4_t acc, int8x16_t a, uint8x16_t w) { return vmmlaq_s32(acc, a, kx_s8(w)); }

/* One activation-row pair of a block. */
typedef struct {
    float32x4_t da;   /* [d_m0, d_m0, d_m1, d_m1] */
    float32x4_t s;    /* Q8_1: [s_m0, s_m0, s_m1, s_m1] */
    int32x4_t bias;   /* Q5_0: 16 * sum(q) in the same pattern */
    int8x16_t hz[2], lz[2]; /* bsum digits (kx_digits*) of m0 | m1: Q4_K/Q5_K [0]; Q3_K/Q6_K sub-blocks 0-7, 8-15 */
} kx_mmact;

/* f (the tile's 4 floats at fp) += (dw * da) * isum */
KX_MM void kx_fadd(float *fp, float32x4_t dw, float32x4_t da, int32x4_t isum) {
    vst1q_f32(fp, vfmaq_f32(vld1q_f32(fp), vmulq_f32(dw, da), vcvtq_f32_s32(isum)));
}

/* Float sums: f[32 q + 8 P + 4 wp + lane]. Activations of pair P, values
 * 8g .. 8g + 7: az + 512 P + 16 g (K types; 64 P for the blocks of 32). */

/* ---------------- Q4_K, Q5_K ---------------- */

KX_MM void mm_qk(int q5, int NP, const uint8_t *xb, int q, const int8_t *az, const kx_mmact *ac, float *f) {
    const int qs = q5 ? KX_Q5K_QS : KX_Q4K_QS;
    int32x4_t isum[4][2];
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) isum[P][0] = isum[P][1] = vdupq_n_s32(0);
    LB_ARM_UNROLL
    for (int p = 0; p < 4; p++) {
        int32x4_t S[2][4][2]; /* [low / high nibbles: sub-block 2p, 2p + 1][P][wp] */
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) S[0][P][0] = S[0][P][1] = S[1][P][0] = S[1][P][1] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int kk = 0; kk < 4; kk++) {
            const int k = 2 * kk, c = 8 * p + k;
            const uint8x16_t r0 = kx_ld(xb, qs, c, q), r1 = kx_ld(xb, qs, c + 1, q);
            const uint8x16_t z[2] = {kx_zip1(r0, r1), kx_zip2(r0, r1)};
            uint8x16_t hz[2] = {z[0], z[1]};
            if (q5) {
                const uint8x16_t h0 = kx_ld(xb, KX_Q5K_QH, k, q), h1 = kx_ld(xb, KX_Q5K_QH, k + 1, q);
                hz[0] = kx_zip1(h0, h1);
                hz[1] = kx_zip2(h0, h1);
            }
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++) {
                const uint8x16_t lo = q5 ? kx_lo5(z[wp], kx_q5k_hb(hz[wp], 2 * p)) : kx_lo4(z[wp]);
                const uint8x16_t hi = q5 ? kx_hi5(z[wp], kx_q5k_hb(hz[wp], 2 * p + 1)) : kx_hi4(z[wp]);
                LB_ARM_UNROLL
                for (int P = 0; P < NP; P++) {
                    /* weights 64p + 4k .. + 7 (low), 64p + 32 + 4k .. (high) */
                    S[0][P][wp] = kx_mm(S[0][P][wp], vld1q_s8(az + 512 * P + 16 * (8 * p + kk)), lo);
                    S[1][P][wp] = kx_mm(S[1][P][wp], vld1q_s8(az + 512 * P + 16 * (8 * p + 4 + kk)), hi);
                }
            }
        }
        const uint8x16_t sc = kx_qk_sc(kx_ld(xb, KX_QK_SC, 0, q), kx_ld(xb, KX_QK_SC, 2, q), p);
        const int32x4_t s0 = kx_byte_u(sc, 2 * p % 4), s1 = kx_byte_u(sc, (2 * p + 1) % 4);
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++) {
            const int32x4_t s0p = kx_pair(s0, wp), s1p = kx_pair(s1, wp);
            LB_ARM_UNROLL
            for (int P = 0; P < NP; P++)
                isum[P][wp] = vmlaq_s32(vmlaq_s32(isum[P][wp], S[0][P][wp], s0p), S[1][P][wp], s1p);
        }
    }
    uint8x16_t mn03, mn47;
    kx_qk_mins(kx_ld(xb, KX_QK_SC, 1, q), kx_ld(xb, KX_QK_SC, 2, q), &mn03, &mn47);
    const uint8x16_t mz[2] = {kx_zip1(mn03, mn47), kx_zip2(mn03, mn47)}; /* rows x mins 0-7 */
    const float32x4_t d = kx_f16x4(xb, KX_QK_D, q), dm = kx_f16x4(xb, KX_QK_DMIN, q);
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++)
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) {
            /* sum_j m_j * bsum32_j: 64 * (high digits . mins) + (low digits . mins) */
            const int32x4_t mh = kx_mm(vdupq_n_s32(0), ac[P].hz[0], mz[wp]);
            const int32x4_t mins = kx_mm(vshlq_n_s32(mh, 6), ac[P].lz[0], mz[wp]);
            float *fp = f + 32 * q + 8 * P + 4 * wp;
            kx_fadd(fp, kx_fpair(d, wp), ac[P].da, isum[P][wp]);
            vst1q_f32(fp, vfmsq_f32(vld1q_f32(fp), vmulq_f32(kx_fpair(dm, wp), ac[P].da), vcvtq_f32_s32(mins)));
        }
}

/* ---------------- Q6_K, Q3_K: sub-blocks of 16 ---------------- */

/* isum -= bias * (scale bytes . bsum16), the 16 scales of the quarter as
 * int8 vectors sv[0..3] (sub-blocks 4i .. 4i + 3). */
KX_MM void mm_bias16(int NP, const int8x16_t sv[4], const kx_mmact *ac, int bias, int32x4_t isum[4][2]) {
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++) {
        const uint8x16_t u[4] = {vreinterpretq_u8_s8(sv[0]), vreinterpretq_u8_s8(sv[1]), vreinterpretq_u8_s8(sv[2]),
                                 vreinterpretq_u8_s8(sv[3])};
        /* rows 2wp, 2wp + 1 x scales 0-7, 8-15 */
        const uint8x16_t z0 = wp ? kx_zip2(u[0], u[1]) : kx_zip1(u[0], u[1]);
        const uint8x16_t z1 = wp ? kx_zip2(u[2], u[3]) : kx_zip1(u[2], u[3]);
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) {
            int32x4_t t = kx_mm(kx_mm(vdupq_n_s32(0), ac[P].hz[0], z0), ac[P].hz[1], z1);
            t = kx_mm(kx_mm(vshlq_n_s32(t, 6), ac[P].lz[0], z0), ac[P].lz[1], z1);
            isum[P][wp] = vmlsq_n_s32(isum[P][wp], t, bias);
        }
    }
}

KX_MM void mm_q6_K(int NP, const uint8_t *xb, int q, const int8_t *az, const kx_mmact *ac, float *f) {
    int32x4_t isum[4][2];
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) isum[P][0] = isum[P][1] = vdupq_n_s32(0);
    /* half n, k = 4kh + 2kk (+1); group g: ql vectors 16n + 8g + k, giving
     * sub-blocks i = g (low nibbles) and g + 2 (high) of 8n + 2i + kh */
    LB_ARM_UNROLL
    for (int n = 0; n < 2; n++)
        LB_ARM_UNROLL
        for (int kh = 0; kh < 2; kh++)
            LB_ARM_UNROLL
            for (int g = 0; g < 2; g++) {
                int32x4_t S[2][4][2]; /* [i = g, g + 2][P][wp] */
                LB_ARM_UNROLL
                for (int P = 0; P < NP; P++) S[0][P][0] = S[0][P][1] = S[1][P][0] = S[1][P][1] = vdupq_n_s32(0);
                LB_ARM_UNROLL
                for (int kk = 0; kk < 2; kk++) {
                    const int k = 4 * kh + 2 * kk;
                    const int v = 16 * n + 8 * g + k, u = 8 * n + k;
                    const uint8x16_t l0 = kx_ld(xb, lb_kx_q6_ql(v), 0, q), l1 = kx_ld(xb, lb_kx_q6_ql(v + 1), 0, q);
                    const uint8x16_t h0 = kx_ld(xb, lb_kx_q6_qh(u), 0, q), h1 = kx_ld(xb, lb_kx_q6_qh(u + 1), 0, q);
                    LB_ARM_UNROLL
                    for (int wp = 0; wp < 2; wp++) {
                        const uint8x16_t zl = wp ? kx_zip2(l0, l1) : kx_zip1(l0, l1);
                        const uint8x16_t zh = wp ? kx_zip2(h0, h1) : kx_zip1(h0, h1);
                        uint8x16_t u[2];
                        kx_q6(zl, zh, g, u);
                        LB_ARM_UNROLL
                        for (int ii = 0; ii < 2; ii++) {
                            const int i = g + 2 * ii; /* weights 128n + 32i + 16kh + 8kk */
                            LB_ARM_UNROLL
                            for (int P = 0; P < NP; P++)
                                S[ii][P][wp] = kx_mm(S[ii][P][wp], vld1q_s8(az + 512 * P + 16 * (16 * n + 4 * i + 2 * kh + kk)),
                                                     u[ii]);
                        }
                    }
                }
                LB_ARM_UNROLL
                for (int ii = 0; ii < 2; ii++) {
                    const int i = g + 2 * ii; /* sub-block 8n + 2i + kh: scale vector 2n + i / 2, byte (2i + kh) % 4 */
                    const int32x4_t sc = kx_byte_s(kx_s8(kx_ld(xb, KX_Q6_SC, 2 * n + i / 2, q)), (2 * i + kh) % 4);
                    LB_ARM_UNROLL
                    for (int wp = 0; wp < 2; wp++) {
                        const int32x4_t sp = kx_pair(sc, wp);
                        LB_ARM_UNROLL
                        for (int P = 0; P < NP; P++) isum[P][wp] = vmlaq_s32(isum[P][wp], S[ii][P][wp], sp);
                    }
                }
            }
    int8x16_t sv[4];
    LB_ARM_UNROLL
    for (int i = 0; i < 4; i++) sv[i] = kx_s8(kx_ld(xb, KX_Q6_SC, i, q));
    mm_bias16(NP, sv, ac, 32, isum);
    const float32x4_t d = kx_f16x4(xb, KX_Q6_D, q);
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++)
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) kx_fadd(f + 32 * q + 8 * P + 4 * wp, kx_fpair(d, wp), ac[P].da, isum[P][wp]);
}

KX_MM void mm_q3_K(int NP, const uint8_t *xb, int q, const int8_t *az, const kx_mmact *ac, float *f) {
    int32x4_t isum[4][2];
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) isum[P][0] = isum[P][1] = vdupq_n_s32(0);
    const uint8x16_t s0 = kx_ld(xb, KX_Q3_SC, 0, q), s1 = kx_ld(xb, KX_Q3_SC, 1, q), s2 = kx_ld(xb, KX_Q3_SC, 2, q);
    /* half h, k = 4kh + 2kk (+1), bit pairs j = 2jg, 2jg + 1: sub-blocks 8h + 2j + kh */
    LB_ARM_UNROLL
    for (int h = 0; h < 2; h++)
        LB_ARM_UNROLL
        for (int kh = 0; kh < 2; kh++)
            LB_ARM_UNROLL
            for (int jg = 0; jg < 2; jg++) {
                int32x4_t S[2][4][2]; /* [j - 2jg][P][wp] */
                LB_ARM_UNROLL
                for (int P = 0; P < NP; P++) S[0][P][0] = S[0][P][1] = S[1][P][0] = S[1][P][1] = vdupq_n_s32(0);
                LB_ARM_UNROLL
                for (int kk = 0; kk < 2; kk++) {
                    const int k = 4 * kh + 2 * kk;
                    const uint8x16_t x0 = kx_ld(xb, KX_Q3_QS, 8 * h + k, q), x1 = kx_ld(xb, KX_Q3_QS, 8 * h + k + 1, q);
                    const uint8x16_t m0 = kx_ld(xb, KX_Q3_HM, k, q), m1 = kx_ld(xb, KX_Q3_HM, k + 1, q);
                    LB_ARM_UNROLL
                    for (int wp = 0; wp < 2; wp++) {
                        const uint8x16_t zx = wp ? kx_zip2(x0, x1) : kx_zip1(x0, x1);
                        const uint8x16_t zm = wp ? kx_zip2(m0, m1) : kx_zip1(m0, m1);
                        LB_ARM_UNROLL
                        for (int jj = 0; jj < 2; jj++) {
                            const int j = 2 * jg + jj; /* weights 128h + 32j + 16kh + 8kk */
                            const uint8x16_t u = kx_q3(zx, zm, h, j);
                            LB_ARM_UNROLL
                            for (int P = 0; P < NP; P++)
                                S[jj][P][wp] =
                                    kx_mm(S[jj][P][wp], vld1q_s8(az + 512 * P + 16 * (16 * h + 4 * j + 2 * kh + kk)), u);
                        }
                    }
                }
                int8x16_t sc[2];
                kx_q3_scales(s0, s1, s2, h, sc);
                LB_ARM_UNROLL
                for (int jj = 0; jj < 2; jj++) {
                    const int j = 2 * jg + jj;
                    const int32x4_t scj = kx_byte_s(sc[j / 2], (2 * j + kh) % 4);
                    LB_ARM_UNROLL
                    for (int wp = 0; wp < 2; wp++) {
                        const int32x4_t sp = kx_pair(scj, wp);
                        LB_ARM_UNROLL
                        for (int P = 0; P < NP; P++) isum[P][wp] = vmlaq_s32(isum[P][wp], S[jj][P][wp], sp);
                    }
                }
            }
    int8x16_t sv[4];
    kx_q3_scales(s0, s1, s2, 0, sv);
    kx_q3_scales(s0, s1, s2, 1, sv + 2);
    mm_bias16(NP, sv, ac, 4, isum);
    const float32x4_t d = kx_f16x4(xb, KX_Q3_D, q);
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++)
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) kx_fadd(f + 32 * q + 8 * P + 4 * wp, kx_fpair(d, wp), ac[P].da, isum[P][wp]);
}

/* ---------------- IQ4_XS ---------------- */

KX_MM void mm_iq4_xs(int NP, const uint8_t *xb, int q, const int8_t *az, const kx_mmact *ac, float *f) {
    const int8x16_t kv = lb_arm_iq4nl_table();
    int8x16_t ev, od;
    kx_xs_scales(kx_ld(xb, KX_XS_SL, 0, q), xb + KX_XS_SH + 8 * q, &ev, &od);
    int32x4_t isum[4][2];
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) isum[P][0] = isum[P][1] = vdupq_n_s32(0);
    LB_ARM_UNROLL
    for (int ib = 0; ib < 8; ib++) {
        int32x4_t S[4][2]; /* [P][wp]: both nibbles are sub-block ib */
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) S[P][0] = S[P][1] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int kk = 0; kk < 2; kk++) {
            const uint8x16_t r0 = kx_ld(xb, KX_XS_QS, 4 * ib + 2 * kk, q), r1 = kx_ld(xb, KX_XS_QS, 4 * ib + 2 * kk + 1, q);
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++) {
                const uint8x16_t z = wp ? kx_zip2(r0, r1) : kx_zip1(r0, r1);
                const uint8x16_t lo = vreinterpretq_u8_s8(vqtbl1q_s8(kv, kx_lo4(z)));
                const uint8x16_t hi = vreinterpretq_u8_s8(vqtbl1q_s8(kv, kx_hi4(z)));
                LB_ARM_UNROLL
                for (int P = 0; P < NP; P++) { /* weights 32ib + 8kk .., 32ib + 16 + 8kk .. */
                    S[P][wp] = kx_mm(S[P][wp], vld1q_s8(az + 512 * P + 16 * (4 * ib + kk)), lo);
                    S[P][wp] = kx_mm(S[P][wp], vld1q_s8(az + 512 * P + 16 * (4 * ib + 2 + kk)), hi);
                }
            }
        }
        const int32x4_t sc = kx_byte_s(ib % 2 ? od : ev, ib / 2);
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++) {
            const int32x4_t sp = kx_pair(sc, wp);
            LB_ARM_UNROLL
            for (int P = 0; P < NP; P++) isum[P][wp] = vmlaq_s32(isum[P][wp], S[P][wp], sp);
        }
    }
    const float32x4_t d = kx_f16x4(xb, KX_XS_D, q);
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++)
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) kx_fadd(f + 32 * q + 8 * P + 4 * wp, kx_fpair(d, wp), ac[P].da, isum[P][wp]);
}

/* ---------------- Q4_1, Q5_0, Q5_1 ---------------- */

KX_MM void mm_legacy(int type, int NP, const uint8_t *xb, int q, const int8_t *az, const kx_mmact *ac, float *f) {
    const int qs = type == KX_Q4_1 ? KX_Q41_QS : type == KX_Q5_0 ? KX_Q50_QS : KX_Q51_QS;
    const int qh = type == KX_Q5_0 ? KX_Q50_QH : KX_Q51_QH;
    uint8x16_t pz[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
    if (type != KX_Q4_1) { /* P5 of rows (4q, 4q+1), (4q+2, 4q+3) for vectors c, c + 1 */
        const uint8x16_t p = kx_ld(xb, qh, 0, q), p2 = kx_sh32(p, -2);
        pz[0] = kx_zip1(p, p2);
        pz[1] = kx_zip2(p, p2);
    }
    int32x4_t S[4][2]; /* [P][wp]: both nibbles are the block's */
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) S[P][0] = S[P][1] = vdupq_n_s32(0);
    LB_ARM_UNROLL
    for (int cp = 0; cp < 2; cp++) {
        const int c = 2 * cp;
        const uint8x16_t r0 = kx_ld(xb, qs, c, q), r1 = kx_ld(xb, qs, c + 1, q);
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++) {
            const uint8x16_t z = wp ? kx_zip2(r0, r1) : kx_zip1(r0, r1);
            const uint8x16_t lo = type == KX_Q4_1 ? kx_lo4(z) : kx_lo5(z, kx_p5_hb(pz[wp], c, 0));
            const uint8x16_t hi = type == KX_Q4_1 ? kx_hi4(z) : kx_hi5(z, kx_p5_hb(pz[wp], c, 1));
            LB_ARM_UNROLL
            for (int P = 0; P < NP; P++) { /* weights 4c .. 4c + 7, 16 + 4c .. */
                S[P][wp] = kx_mm(S[P][wp], vld1q_s8(az + 64 * P + 16 * cp), lo);
                S[P][wp] = kx_mm(S[P][wp], vld1q_s8(az + 64 * P + 16 * (2 + cp)), hi);
            }
        }
    }
    const int doff = type == KX_Q4_1 ? KX_Q41_D : type == KX_Q5_0 ? KX_Q50_D : KX_Q51_D;
    const float32x4_t d = kx_f16x4(xb, doff, q);
    const float32x4_t mw = type == KX_Q5_0 ? vdupq_n_f32(0.0f) : kx_f16x4(xb, KX_Q41_M, q);
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++)
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) {
            int32x4_t isum = S[P][wp];
            if (type == KX_Q5_0) isum = vsubq_s32(isum, ac[P].bias);
            float *fp = f + 32 * q + 8 * P + 4 * wp;
            kx_fadd(fp, kx_fpair(d, wp), ac[P].da, isum);
            if (type != KX_Q5_0) vst1q_f32(fp, vfmaq_f32(vld1q_f32(fp), kx_fpair(mw, wp), ac[P].s));
        }
}

/* ---------------- drivers ---------------- */

LB_ARM_INLINE float32x4_t kx_dpair(float d0, float d1) { return (float32x4_t){d0, d0, d1, d1}; }

/* 16 rows x 2 NP activation rows (A: the first, ars apart). */
KX_MM void mm_group(int type, int NP, int64_t nb, const uint8_t *xg, size_t xbs, const uint8_t *A, size_t ars, float *Y,
                    size_t ldy) {
    float f[128];
    int8_t az[4 * 512] __attribute__((aligned(16)));
    LB_ARM_UNROLL
    for (int i = 0; i < 32; i++) vst1q_f32(f + 4 * i, vdupq_n_f32(0.0f));
    const int kt = type <= KX_IQ4_XS;
    const int nv = kt ? QK_K : 32, az_stride = 2 * nv;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xg + (size_t)b * xbs;
        kx_mmact ac[4];
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) {
            const int8_t *qs[2];
            if (kt) {
                const block_q8_K *a0 = (const block_q8_K *)(A + (size_t)(2 * P) * ars) + b;
                const block_q8_K *a1 = (const block_q8_K *)(A + (size_t)(2 * P + 1) * ars) + b;
                qs[0] = a0->qs;
                qs[1] = a1->qs;
                ac[P].da = kx_dpair(a0->d, a1->d);
                ac[P].s = vdupq_n_f32(0.0f);
                ac[P].bias = vdupq_n_s32(0);
                if (type == KX_Q4_K || type == KX_Q5_K) {
                    const int8x16_t g0 = kx_digits32(a0->bsums), g1 = kx_digits32(a1->bsums);
                    ac[P].hz[0] = ac[P].hz[1] = kx_zip64(g0, g1, 0);
                    ac[P].lz[0] = ac[P].lz[1] = kx_zip64(g0, g1, 1);
                } else if (type == KX_Q3_K || type == KX_Q6_K) {
                    int8x16_t H0, L0, H1, L1;
                    kx_digits16(a0->bsums, &H0, &L0);
                    kx_digits16(a1->bsums, &H1, &L1);
                    ac[P].hz[0] = kx_zip64(H0, H1, 0);
                    ac[P].hz[1] = kx_zip64(H0, H1, 1);
                    ac[P].lz[0] = kx_zip64(L0, L1, 0);
                    ac[P].lz[1] = kx_zip64(L0, L1, 1);
                } else {
                    ac[P].hz[0] = ac[P].hz[1] = ac[P].lz[0] = ac[P].lz[1] = vdupq_n_s8(0);
                }
            } else {
                ac[P].hz[0] = ac[P].hz[1] = ac[P].lz[0] = ac[P].lz[1] = vdupq_n_s8(0);
                if (type == KX_Q5_0) {
                    const block_q8_0 *a0 = (const block_q8_0 *)(A + (size_t)(2 * P) * ars) + b;
                    const block_q8_0 *a1 = (const block_q8_0 *)(A + (size_t)(2 * P + 1) * ars) + b;
                    qs[0] = a0->qs;
                    qs[1] = a1->qs;
                    ac[P].da = kx_dpair(kx_f16(&a0->d), kx_f16(&a1->d));
                    ac[P].s = vdupq_n_f32(0.0f);
                    const int32_t s0 = vaddlvq_s16(vpadalq_s8(vpaddlq_s8(vld1q_s8(a0->qs)), vld1q_s8(a0->qs + 16)));
                    const int32_t s1 = vaddlvq_s16(vpadalq_s8(vpaddlq_s8(vld1q_s8(a1->qs)), vld1q_s8(a1->qs + 16)));
                    ac[P].bias = (int32x4_t){16 * s0, 16 * s0, 16 * s1, 16 * s1};
                } else {
                    const block_q8_1 *a0 = (const block_q8_1 *)(A + (size_t)(2 * P) * ars) + b;
                    const block_q8_1 *a1 = (const block_q8_1 *)(A + (size_t)(2 * P + 1) * ars) + b;
                    qs[0] = a0->qs;
                    qs[1] = a1->qs;
                    ac[P].da = kx_dpair(kx_f16(&a0->d), kx_f16(&a1->d));
                    ac[P].s = kx_dpair(kx_f16(&a0->s), kx_f16(&a1->s));
                    ac[P].bias = vdupq_n_s32(0);
                }
            }
            /* rows 2P, 2P + 1 zipped by 8 values */
            for (int g = 0; g < nv / 16; g++) {
                const int8x16_t r0 = vld1q_s8(qs[0] + 16 * g), r1 = vld1q_s8(qs[1] + 16 * g);
                vst1q_s8(az + az_stride * P + 32 * g, kx_zip64(r0, r1, 0));
                vst1q_s8(az + az_stride * P + 32 * g + 16, kx_zip64(r0, r1, 1));
            }
        }
        _Pragma("GCC unroll 1") /* one quarter's code, 4 passes */
        for (int q = 0; q < 4; q++) {
            switch (type) {
            case KX_Q3_K: mm_q3_K(NP, xb, q, az, ac, f); break;
            case KX_Q4_K: mm_qk(0, NP, xb, q, az, ac, f); break;
            case KX_Q5_K: mm_qk(1, NP, xb, q, az, ac, f); break;
            case KX_Q6_K: mm_q6_K(NP, xb, q, az, ac, f); break;
            case KX_IQ4_XS: mm_iq4_xs(NP, xb, q, az, ac, f); break;
            default: mm_legacy(type, NP, xb, q, az, ac, f); break;
            }
        }
    }
    LB_ARM_UNROLL
    for (int q = 0; q < 4; q++)
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++)
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++) {
                const float32x4_t v = vld1q_f32(f + 32 * q + 8 * P + 4 * wp);
                vst1_f32(Y + (size_t)(2 * P) * ldy + 4 * q + 2 * wp, vget_low_f32(v));
                vst1_f32(Y + (size_t)(2 * P + 1) * ldy + 4 * q + 2 * wp, vget_high_f32(v));
            }
}

KX_MM void kx_gemm(int type, lb_gemm_fn gemv, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                   const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / (type <= KX_IQ4_XS ? QK_K : 32);
    const size_t xbs = 16 * (w_row_size / (size_t)nb);
    const uint8_t *a8 = A;
    for (int n = n0; n < n1; n += 16) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        int m = 0;
        /* 8 activation rows where a sub-block needs one accumulator per tile */
        for (; (type == KX_IQ4_XS || type >= KX_Q4_1) && m + 8 <= M; m += 8)
            mm_group(type, 4, nb, xg, xbs, a8 + (size_t)m * a_row_size, a_row_size, Y + (size_t)m * ldy + n, ldy);
        for (; m + 4 <= M; m += 4)
            mm_group(type, 2, nb, xg, xbs, a8 + (size_t)m * a_row_size, a_row_size, Y + (size_t)m * ldy + n, ldy);
        if (m + 2 <= M) {
            mm_group(type, 1, nb, xg, xbs, a8 + (size_t)m * a_row_size, a_row_size, Y + (size_t)m * ldy + n, ldy);
            m += 2;
        }
        if (m < M) gemv(K, W, w_row_size, n, n + 16, a8 + (size_t)m * a_row_size, a_row_size, 1, Y + (size_t)m * ldy, ldy);
    }
}

#define LB_KX_GEMM(w, a, T)                                                                               \
    LB_ARM_I8MM void lb_gemm_##w##x16_##a##_16x4_i8mm(LB_ARM_GEMM_ARGS) {                                \
        kx_gemm(T, lb_gemv_##w##x16_##a##_16x4_dotprod, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy); \
    }
LB_KX_GEMM(q3_K, q8_K, KX_Q3_K)
LB_KX_GEMM(q4_K, q8_K, KX_Q4_K)
LB_KX_GEMM(q5_K, q8_K, KX_Q5_K)
LB_KX_GEMM(q6_K, q8_K, KX_Q6_K)
LB_KX_GEMM(iq4_xs, q8_K, KX_IQ4_XS)
LB_KX_GEMM(q4_1, q8_1, KX_Q4_1)
LB_KX_GEMM(q5_0, q8_0, KX_Q5_0)
LB_KX_GEMM(q5_1, q8_1, KX_Q5_1)

#endif
