/* The GEMV of the 16-row layouts (formats/repack_kx.h) at one Arm level,
 * included by kx_neon.c and kx_dotprod.c, which define
 *   LB_KX_FN(name)          name with the level's suffix
 *   LB_KX_TARGET            the level's function attribute (or nothing)
 *   LB_KX_QN, LB_KX_QN_NIB  quarters x activation rows per register tile (Q4_K
 *                           and Q4_1: _NIB)
 *   kx_acc, KX_ZERO(s)      an integer accumulator of one sub-block, 4 rows
 *   KX_DOT(s, w, a, lane)   s.row += w's 4 bytes of the row . a's dword lane
 *   KX_WIDEN(s)             (emulated SDOT) move partial sums to 32 bits
 *   KX_I32(s)               the 4 rows' sums as int32x4
 *   KX_DOTL(acc, w, a, l)   acc + by-lane dot, int32 (the bias / min terms)
 *
 * A 128-bit register of a DW vector is a quarter of the group: rows
 * 4q..4q+3, one per 32-bit lane, 4 consecutive weights each; a by-lane dot
 * with the activation dword of those weights adds into each row's own lane.
 * Weights are decoded unsigned (kx_arm_decode.h); per sub-block the int32
 * sum is multiplied by the integer scale and added up exactly per block
 * (Q3_K, Q6_K's bias, Q4_K / Q5_K's mins through the bsum digits and one
 * more by-lane dot against the scale / min bytes), then scaled in float
 * once per block: results equal the reference up to float rounding.
 *
 * Tiles: Q quarters x NA activation rows (Q * NA = LB_KX_QN), two sub-blocks
 * in flight per quarter and row (2 Q NA accumulator chains), the quarters
 * of a block in passes of Q, the float sums of the group in memory between
 * blocks. gemv takes any M: rows in tiles of 2 then 1 (the decoded weights
 * serve both rows of a tile). */

#define LB_KX_KERNEL LB_ARM_INLINE LB_KX_TARGET

/* A pointer made opaque to the compiler: loads through it are not shared
 * with earlier identical ones, which GCC would otherwise keep live across
 * a whole block (activations across passes over the quarters, Q5_K's qh and
 * Q3_K's hmask across pairs): spills, not fewer loads. */
#define KX_OPAQUE(p) __asm__ volatile("" : "+r"(p))

#define KX_ZERO_ALL(s, NA, Q)                                                                        \
    LB_ARM_UNROLL for (int m_ = 0; m_ < (NA); m_++) LB_ARM_UNROLL for (int q_ = 0; q_ < (Q); q_++) \
        KX_ZERO((s)[m_][q_])

/* f[m][16] += (d * da_m) * isum[m] per quarter, f the group's float sums. */
LB_KX_KERNEL void LB_KX_FN(kx_fscale)(float *fq, float32x4_t d, float da, int32x4_t isum) {
    vst1q_f32(fq, vfmaq_f32(vld1q_f32(fq), vmulq_n_f32(d, da), vcvtq_f32_s32(isum)));
}

/* ---------------- Q4_K, Q5_K: 8 sub-blocks of 32, 6-bit scales and mins ---------------- */

LB_KX_KERNEL void LB_KX_FN(blk_qk)(int q5, int Q, int NA, const uint8_t *xb, int q0, const block_q8_K *const *a,
                                   float *f) {
    const int qs = q5 ? KX_Q5K_QS : KX_Q4K_QS;
    int32x4_t isum[4][4];
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++)
        LB_ARM_UNROLL
        for (int q = 0; q < Q; q++) isum[m][q] = vdupq_n_s32(0);
    /* pair p: vectors 8p + k hold sub-block 2p (low nibbles, weights 64p + 4k ..)
     * and 2p + 1 (high, 64p + 32 + 4k ..) */
    LB_ARM_UNROLL
    for (int p = 0; p < 4; p++) {
        const uint8_t *xh = xb; /* qh vectors: loaded again for each pair, not kept */
        KX_OPAQUE(xh);
        kx_acc slo[4][4], shi[4][4];
        KX_ZERO_ALL(slo, NA, Q);
        KX_ZERO_ALL(shi, NA, Q);
        LB_ARM_UNROLL
        for (int h = 0; h < 2; h++) {
            int8x16_t alo[4], ahi[4];
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++) {
                alo[m] = vld1q_s8(a[m]->qs + 64 * p + 16 * h);
                ahi[m] = vld1q_s8(a[m]->qs + 64 * p + 32 + 16 * h);
            }
            LB_ARM_UNROLL
            for (int kk = 0; kk < 4; kk++) {
                const int k = 4 * h + kk;
                uint8x16_t vq[4], hq[4];
                kx_ldq(xb, qs, 8 * p + k, q0, Q, vq);
                if (q5) kx_ldq(xh, KX_Q5K_QH, k, q0, Q, hq);
                LB_ARM_UNROLL
                for (int q = 0; q < Q; q++) {
                    const uint8x16_t v = vq[q];
                    uint8x16_t lo, hi;
                    if (q5) {
                        const uint8x16_t qh = hq[q];
                        lo = kx_lo5(v, kx_q5k_hb(qh, 2 * p));
                        hi = kx_hi5(v, kx_q5k_hb(qh, 2 * p + 1));
                    } else {
                        lo = kx_lo4(v);
                        hi = kx_hi4(v);
                    }
                    LB_ARM_UNROLL
                    for (int m = 0; m < NA; m++) {
                        KX_DOT(slo[m][q], kx_s8(lo), alo[m], kk);
                        KX_DOT(shi[m][q], kx_s8(hi), ahi[m], kk);
                    }
                }
            }
        }
        LB_ARM_UNROLL
        for (int q = 0; q < Q; q++) {
            const uint8x16_t sc = kx_qk_sc(kx_ld(xb, KX_QK_SC, 0, q0 + q), kx_ld(xb, KX_QK_SC, 2, q0 + q), p);
            const int32x4_t s0 = kx_byte_u(sc, 2 * p % 4), s1 = kx_byte_u(sc, (2 * p + 1) % 4);
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++)
                isum[m][q] = vmlaq_s32(vmlaq_s32(isum[m][q], KX_I32(slo[m][q]), s0), KX_I32(shi[m][q]), s1);
        }
    }
    LB_ARM_UNROLL
    for (int q = 0; q < Q; q++) {
        uint8x16_t mn03, mn47;
        kx_qk_mins(kx_ld(xb, KX_QK_SC, 1, q0 + q), kx_ld(xb, KX_QK_SC, 2, q0 + q), &mn03, &mn47);
        const float32x4_t d = kx_f16x4(xb, KX_QK_D, q0 + q), dm = kx_f16x4(xb, KX_QK_DMIN, q0 + q);
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) {
            /* sum_j m_j * bsum32_j = 64 * (mins . high digits) + (mins . low digits) */
            const int8x16_t dg = kx_digits32(a[m]->bsums);
            int32x4_t mins = KX_DOTL(KX_DOTL(vdupq_n_s32(0), kx_s8(mn03), dg, 0), kx_s8(mn47), dg, 1);
            mins = KX_DOTL(KX_DOTL(vshlq_n_s32(mins, 6), kx_s8(mn03), dg, 2), kx_s8(mn47), dg, 3);
            float *fq = f + 16 * m + 4 * (q0 + q);
            LB_KX_FN(kx_fscale)(fq, d, a[m]->d, isum[m][q]);
            vst1q_f32(fq, vfmsq_f32(vld1q_f32(fq), vmulq_n_f32(dm, a[m]->d), vcvtq_f32_s32(mins)));
        }
    }
}

/* ---------------- Q6_K, Q3_K: 16 sub-blocks of 16, signed 8- / 6-bit scales ----------------
 * Four sub-blocks in flight (weights 32 apart), u = w + 32 (Q6_K) or w + 4
 * (Q3_K); the bias term sum_j sc_j * bias * bsum_j comes from the scale
 * bytes dotted with the bsum digits. */

/* isum -= bias * sum_i (scale vector i . bsums of its 4 sub-blocks), i in [i0, i0 + n) */
LB_KX_KERNEL int32x4_t LB_KX_FN(kx_bias16)(int32x4_t isum, const int8x16_t *sc, int i0, int n, const int16_t *bsums,
                                           int bias) {
    int8x16_t H, L;
    kx_digits16(bsums, &H, &L);
    int32x4_t hs = vdupq_n_s32(0), ls = vdupq_n_s32(0);
    LB_ARM_UNROLL
    for (int i = i0; i < i0 + n; i++) {
        hs = KX_DOTL(hs, sc[i - i0], H, i);
        ls = KX_DOTL(ls, sc[i - i0], L, i);
    }
    return vmlsq_n_s32(isum, vmlaq_n_s32(ls, hs, 64), bias);
}

LB_KX_KERNEL void LB_KX_FN(blk_q6_K)(int Q, int NA, const uint8_t *xb, int q0, const block_q8_K *const *a,
                                     float *f) {
    int32x4_t isum[4][4];
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++)
        LB_ARM_UNROLL
        for (int q = 0; q < Q; q++) isum[m][q] = vdupq_n_s32(0);
    /* half n, k = 4kh + kk; group g: ql vectors 16n + 8g + k, their low
     * nibbles weights 128n + 32g + 4k .. (qh bits 2g, 2g + 1), high ones
     * + 64 (bits 4 + 2g, 5 + 2g): sub-blocks 8n + 2i + kh, i = g, g + 2 */
    LB_ARM_UNROLL
    for (int n = 0; n < 2; n++)
        LB_ARM_UNROLL
        for (int kh = 0; kh < 2; kh++)
            LB_ARM_UNROLL
            for (int g = 0; g < 2; g++) {
                const uint8_t *xh = xb; /* qh vectors: loaded again for each group, not kept */
                KX_OPAQUE(xh);
                kx_acc s[2][4][4]; /* [i = g, g + 2][m][q] */
                KX_ZERO_ALL(s[0], NA, Q);
                KX_ZERO_ALL(s[1], NA, Q);
                int8x16_t act[4][2];
                LB_ARM_UNROLL
                for (int m = 0; m < NA; m++)
                    LB_ARM_UNROLL
                    for (int ii = 0; ii < 2; ii++) act[m][ii] = vld1q_s8(a[m]->qs + 128 * n + 32 * (g + 2 * ii) + 16 * kh);
                LB_ARM_UNROLL
                for (int kk = 0; kk < 4; kk++) {
                    const int k = 4 * kh + kk;
                    LB_ARM_UNROLL
                    for (int q = 0; q < Q; q++) { /* two planes: one quarter at a time (registers) */
                        uint8x16_t u[2];
                        kx_q6(kx_ld(xb, lb_kx_q6_ql(16 * n + 8 * g + k), 0, q0 + q),
                              kx_ld(xh, lb_kx_q6_qh(8 * n + k), 0, q0 + q), g, u);
                        LB_ARM_UNROLL
                        for (int m = 0; m < NA; m++)
                            LB_ARM_UNROLL
                            for (int ii = 0; ii < 2; ii++) KX_DOT(s[ii][m][q], kx_s8(u[ii]), act[m][ii], kk);
                    }
                }
                LB_ARM_UNROLL
                for (int q = 0; q < Q; q++)
                    LB_ARM_UNROLL
                    for (int ii = 0; ii < 2; ii++) {
                        /* sub-block 8n + 2i + kh: scale vector 2n + ii, byte (2i + kh) % 4 */
                        const int i = g + 2 * ii;
                        const int32x4_t sc = kx_byte_s(kx_s8(kx_ld(xb, KX_Q6_SC, 2 * n + ii, q0 + q)), (2 * i + kh) % 4);
                        LB_ARM_UNROLL
                        for (int m = 0; m < NA; m++) isum[m][q] = vmlaq_s32(isum[m][q], KX_I32(s[ii][m][q]), sc);
                    }
            }
    LB_ARM_UNROLL
    for (int q = 0; q < Q; q++) {
        int8x16_t sv[4];
        LB_ARM_UNROLL
        for (int i = 0; i < 4; i++) sv[i] = kx_s8(kx_ld(xb, KX_Q6_SC, i, q0 + q));
        const float32x4_t d = kx_f16x4(xb, KX_Q6_D, q0 + q);
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++)
            LB_KX_FN(kx_fscale)(f + 16 * m + 4 * (q0 + q), d, a[m]->d,
                                LB_KX_FN(kx_bias16)(isum[m][q], sv, 0, 4, a[m]->bsums, 32));
    }
}

LB_KX_KERNEL void LB_KX_FN(blk_q3_K)(int Q, int NA, const uint8_t *xb, int q0, const block_q8_K *const *a,
                                     float *f) {
    int32x4_t isum[4][4];
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++)
        LB_ARM_UNROLL
        for (int q = 0; q < Q; q++) isum[m][q] = vdupq_n_s32(0);
    /* half h, k = 4kh + kk: qs vector 8h + k, bit pairs j = 2jg, 2jg + 1:
     * weights 128h + 32j + 4k ..: sub-blocks 8h + 2j + kh */
    LB_ARM_UNROLL
    for (int h = 0; h < 2; h++)
        LB_ARM_UNROLL
        for (int kh = 0; kh < 2; kh++)
            LB_ARM_UNROLL
            for (int jg = 0; jg < 2; jg++) {
                const uint8_t *xh = xb; /* qs, hmask vectors: loaded again for each pair of j, not kept */
                KX_OPAQUE(xh);
                kx_acc s[2][4][4]; /* [j - 2jg][m][q] */
                KX_ZERO_ALL(s[0], NA, Q);
                KX_ZERO_ALL(s[1], NA, Q);
                int8x16_t act[4][2];
                LB_ARM_UNROLL
                for (int m = 0; m < NA; m++)
                    LB_ARM_UNROLL
                    for (int jj = 0; jj < 2; jj++) act[m][jj] = vld1q_s8(a[m]->qs + 128 * h + 32 * (2 * jg + jj) + 16 * kh);
                LB_ARM_UNROLL
                for (int kk = 0; kk < 4; kk++) {
                    const int k = 4 * kh + kk;
                    LB_ARM_UNROLL
                    for (int q = 0; q < Q; q++) { /* two planes: one quarter at a time (registers) */
                        const uint8x16_t x = kx_ld(xh, KX_Q3_QS, 8 * h + k, q0 + q), hm = kx_ld(xh, KX_Q3_HM, k, q0 + q);
                        LB_ARM_UNROLL
                        for (int jj = 0; jj < 2; jj++) {
                            const int8x16_t u = kx_s8(kx_q3(x, hm, h, 2 * jg + jj));
                            LB_ARM_UNROLL
                            for (int m = 0; m < NA; m++) KX_DOT(s[jj][m][q], u, act[m][jj], kk);
                        }
                    }
                }
                LB_ARM_UNROLL
                for (int q = 0; q < Q; q++) {
                    int8x16_t sc[2]; /* vectors 2h, 2h + 1: sub-blocks 8h .. 8h + 7 */
                    kx_q3_scales(kx_ld(xb, KX_Q3_SC, 0, q0 + q), kx_ld(xb, KX_Q3_SC, 1, q0 + q),
                                 kx_ld(xb, KX_Q3_SC, 2, q0 + q), h, sc);
                    LB_ARM_UNROLL
                    for (int jj = 0; jj < 2; jj++) {
                        const int j = 2 * jg + jj;
                        const int32x4_t scj = kx_byte_s(sc[jg], (2 * j + kh) % 4);
                        LB_ARM_UNROLL
                        for (int m = 0; m < NA; m++) isum[m][q] = vmlaq_s32(isum[m][q], KX_I32(s[jj][m][q]), scj);
                    }
                    if (kh && jg) /* the bias of sub-blocks 8h .. 8h + 7, once */
                        LB_ARM_UNROLL
                        for (int m = 0; m < NA; m++)
                            isum[m][q] = LB_KX_FN(kx_bias16)(isum[m][q], sc, 2 * h, 2, a[m]->bsums, 4);
                }
            }
    LB_ARM_UNROLL
    for (int q = 0; q < Q; q++) {
        const float32x4_t d = kx_f16x4(xb, KX_Q3_D, q0 + q);
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) LB_KX_FN(kx_fscale)(f + 16 * m + 4 * (q0 + q), d, a[m]->d, isum[m][q]);
    }
}

/* ---------------- IQ4_XS: 8 sub-blocks of 32, codebook weights ---------------- */

LB_KX_KERNEL void LB_KX_FN(blk_iq4_xs)(int Q, int NA, const uint8_t *xb, int q0, const block_q8_K *const *a,
                                       float *f) {
    const int8x16_t kv = lb_arm_iq4nl_table();
    int32x4_t isum[4][4];
    int8x16_t ev[4], od[4];
    LB_ARM_UNROLL
    for (int q = 0; q < Q; q++) {
        kx_xs_scales(kx_ld(xb, KX_XS_SL, 0, q0 + q), xb + KX_XS_SH + 8 * (q0 + q), &ev[q], &od[q]);
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) isum[m][q] = vdupq_n_s32(0);
    }
    /* sub-block ib: vectors 4ib + kk, low nibble weight 32ib + 4kk + e, high + 16 */
    LB_ARM_UNROLL
    for (int ib = 0; ib < 8; ib++) {
        kx_acc slo[4][4], shi[4][4];
        KX_ZERO_ALL(slo, NA, Q);
        KX_ZERO_ALL(shi, NA, Q);
        int8x16_t alo[4], ahi[4];
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) {
            alo[m] = vld1q_s8(a[m]->qs + 32 * ib);
            ahi[m] = vld1q_s8(a[m]->qs + 32 * ib + 16);
        }
        LB_ARM_UNROLL
        for (int kk = 0; kk < 4; kk++) {
            uint8x16_t vq[4];
            kx_ldq(xb, KX_XS_QS, 4 * ib + kk, q0, Q, vq);
            LB_ARM_UNROLL
            for (int q = 0; q < Q; q++) {
                const uint8x16_t v = vq[q];
                const int8x16_t lo = vqtbl1q_s8(kv, kx_lo4(v)), hi = vqtbl1q_s8(kv, kx_hi4(v));
                LB_ARM_UNROLL
                for (int m = 0; m < NA; m++) {
                    KX_DOT(slo[m][q], lo, alo[m], kk);
                    KX_DOT(shi[m][q], hi, ahi[m], kk);
                }
            }
            if (kk % 2) /* emulated SDOT: int16 sums of two products per lane at most */
                LB_ARM_UNROLL
                for (int m = 0; m < NA; m++)
                    LB_ARM_UNROLL
                    for (int q = 0; q < Q; q++) {
                        KX_WIDEN(slo[m][q]);
                        KX_WIDEN(shi[m][q]);
                    }
        }
        LB_ARM_UNROLL
        for (int q = 0; q < Q; q++) {
            const int32x4_t sc = kx_byte_s(ib % 2 ? od[q] : ev[q], ib / 2);
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++)
                isum[m][q] = vmlaq_s32(isum[m][q], vaddq_s32(KX_I32(slo[m][q]), KX_I32(shi[m][q])), sc);
        }
    }
    LB_ARM_UNROLL
    for (int q = 0; q < Q; q++) {
        const float32x4_t d = kx_f16x4(xb, KX_XS_D, q0 + q);
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) LB_KX_FN(kx_fscale)(f + 16 * m + 4 * (q0 + q), d, a[m]->d, isum[m][q]);
    }
}

/* ---------------- Q4_1, Q5_0, Q5_1: blocks of 32, fp16 scales ----------------
 * qs vector c: low nibble weight 4c + e, high 16 + 4c + e. Q5_0: u = w + 16,
 * the bias 16 * sum(a) from the activation block. Q4_1 / Q5_1 add m * s. */

typedef struct {
    const int8_t *qs;
    float d, s;      /* s: Q8_1's d * sum (fp16 widened) */
    int32x4_t bias;  /* Q5_0: 16 * sum(qs) */
} kx_act32;

LB_KX_KERNEL void LB_KX_FN(blk_legacy)(int type, int Q, int NA, const uint8_t *xb, int q0, const kx_act32 *a,
                                       float *f) {
    const int qs = type == KX_Q4_1 ? KX_Q41_QS : type == KX_Q5_0 ? KX_Q50_QS : KX_Q51_QS;
    const int qh = type == KX_Q5_0 ? KX_Q50_QH : KX_Q51_QH;
    kx_acc slo[4][4], shi[4][4];
    KX_ZERO_ALL(slo, NA, Q);
    KX_ZERO_ALL(shi, NA, Q);
    int8x16_t alo[4], ahi[4];
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++) {
        alo[m] = vld1q_s8(a[m].qs);
        ahi[m] = vld1q_s8(a[m].qs + 16);
    }
    LB_ARM_UNROLL
    for (int c = 0; c < 4; c++) {
        uint8x16_t vq[4];
        kx_ldq(xb, qs, c, q0, Q, vq);
        LB_ARM_UNROLL
        for (int q = 0; q < Q; q++) {
            const uint8x16_t v = vq[q];
            uint8x16_t lo, hi;
            if (type == KX_Q4_1) {
                lo = kx_lo4(v);
                hi = kx_hi4(v);
            } else {
                const uint8x16_t P = kx_ld(xb, qh, 0, q0 + q);
                lo = kx_lo5(v, kx_p5_hb(P, c, 0));
                hi = kx_hi5(v, kx_p5_hb(P, c, 1));
            }
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++) {
                KX_DOT(slo[m][q], kx_s8(lo), alo[m], c);
                KX_DOT(shi[m][q], kx_s8(hi), ahi[m], c);
            }
        }
    }
    const int doff = type == KX_Q4_1 ? KX_Q41_D : type == KX_Q5_0 ? KX_Q50_D : KX_Q51_D;
    LB_ARM_UNROLL
    for (int q = 0; q < Q; q++) {
        const float32x4_t d = kx_f16x4(xb, doff, q0 + q);
        const float32x4_t mw = type == KX_Q5_0 ? vdupq_n_f32(0.0f) : kx_f16x4(xb, KX_Q41_M, q0 + q);
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) {
            int32x4_t isum = vaddq_s32(KX_I32(slo[m][q]), KX_I32(shi[m][q]));
            if (type == KX_Q5_0) isum = vsubq_s32(isum, a[m].bias);
            float *fq = f + 16 * m + 4 * (q0 + q);
            LB_KX_FN(kx_fscale)(fq, d, a[m].d, isum);
            if (type != KX_Q5_0) vst1q_f32(fq, vfmaq_n_f32(vld1q_f32(fq), mw, a[m].s));
        }
    }
}

/* ---------------- drivers ---------------- */

/* Quarters per pass for NA activation rows (plain nibbles need the fewest
 * registers per quarter). */
static inline int kx_quarters(int type, int NA) {
    const int qn = type == KX_Q4_K || type == KX_Q4_1 ? LB_KX_QN_NIB : LB_KX_QN;
    return qn / NA > 1 ? qn / NA : 1;
}

/* One group of 16 rows x NA activation rows (A: the first, ars apart). */
LB_KX_KERNEL void LB_KX_FN(kx_tile)(int type, int NA, int64_t nb, const uint8_t *xg, size_t xbs, const uint8_t *A,
                                    size_t ars, float *Y, size_t ldy) {
    const int Q = kx_quarters(type, NA);
    float f[4 * 16];
    LB_ARM_UNROLL
    for (int i = 0; i < 4 * NA; i++) vst1q_f32(f + 4 * i, vdupq_n_f32(0.0f));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xg + (size_t)b * xbs;
        if (type <= KX_IQ4_XS) {
            const block_q8_K *ab[4];
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++) ab[m] = (const block_q8_K *)(A + (size_t)m * ars) + b;
            for (int q0 = 0; q0 < 4; q0 += Q) {
                const block_q8_K *ap[4];
                LB_ARM_UNROLL
                for (int m = 0; m < NA; m++) {
                    ap[m] = ab[m];
                    KX_OPAQUE(ap[m]);
                }
                if (type == KX_Q4_K || type == KX_Q5_K) {
                    LB_KX_FN(blk_qk)(type == KX_Q5_K, Q, NA, xb, q0, ap, f);
                } else if (type == KX_Q6_K) {
                    LB_KX_FN(blk_q6_K)(Q, NA, xb, q0, ap, f);
                } else if (type == KX_Q3_K) {
                    LB_KX_FN(blk_q3_K)(Q, NA, xb, q0, ap, f);
                } else {
                    LB_KX_FN(blk_iq4_xs)(Q, NA, xb, q0, ap, f);
                }
            }
        } else {
            kx_act32 ab[4];
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++) {
                const uint8_t *row = A + (size_t)m * ars;
                if (type == KX_Q5_0) {
                    const block_q8_0 *blk = (const block_q8_0 *)row + b;
                    ab[m].qs = blk->qs;
                    ab[m].d = kx_f16(&blk->d);
                    ab[m].s = 0.0f;
                    const int16x8_t s16 = vpadalq_s8(vpaddlq_s8(vld1q_s8(blk->qs)), vld1q_s8(blk->qs + 16));
                    ab[m].bias = vdupq_n_s32(16 * vaddlvq_s16(s16));
                } else {
                    const block_q8_1 *blk = (const block_q8_1 *)row + b;
                    ab[m].qs = blk->qs;
                    ab[m].d = kx_f16(&blk->d);
                    ab[m].s = kx_f16(&blk->s);
                    ab[m].bias = vdupq_n_s32(0);
                }
            }
            for (int q0 = 0; q0 < 4; q0 += Q) {
                kx_act32 ap[4];
                LB_ARM_UNROLL
                for (int m = 0; m < NA; m++) {
                    ap[m] = ab[m];
                    KX_OPAQUE(ap[m].qs);
                }
                LB_KX_FN(blk_legacy)(type, Q, NA, xb, q0, ap, f);
            }
        }
    }
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++)
        LB_ARM_UNROLL
        for (int i = 0; i < 4; i++) vst1q_f32(Y + (size_t)m * ldy + 4 * i, vld1q_f32(f + 16 * m + 4 * i));
}

LB_KX_KERNEL void LB_KX_FN(kx_gemv)(int type, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                                    const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t blck = type <= KX_IQ4_XS ? QK_K : 32;
    const int64_t nb = K / blck;
    const size_t xbs = 16 * (w_row_size / (size_t)nb);
    for (int n = n0; n < n1; n += 16) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        int m = 0;
        for (; m + 2 <= M; m += 2)
            LB_KX_FN(kx_tile)(type, 2, nb, xg, xbs, (const uint8_t *)A + (size_t)m * a_row_size, a_row_size,
                              Y + (size_t)m * ldy + n, ldy);
        if (m < M)
            LB_KX_FN(kx_tile)(type, 1, nb, xg, xbs, (const uint8_t *)A + (size_t)m * a_row_size, a_row_size,
                              Y + (size_t)m * ldy + n, ldy);
    }
}

#define LB_KX_GEMV(w, a, T)                                                                           \
    LB_KX_TARGET void LB_KX_FN(lb_gemv_##w##x16_##a##_16x4)(LB_ARM_GEMM_ARGS) {                     \
        LB_KX_FN(kx_gemv)(T, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                    \
    }
LB_KX_GEMV(q3_K, q8_K, KX_Q3_K)
LB_KX_GEMV(q4_K, q8_K, KX_Q4_K)
LB_KX_GEMV(q5_K, q8_K, KX_Q5_K)
LB_KX_GEMV(q6_K, q8_K, KX_Q6_K)
LB_KX_GEMV(iq4_xs, q8_K, KX_IQ4_XS)
LB_KX_GEMV(q4_1, q8_1, KX_Q4_1)
LB_KX_GEMV(q5_0, q8_0, KX_Q5_0)
LB_KX_GEMV(q5_1, q8_1, KX_Q5_1)
#undef LB_KX_GEMV
#undef KX_ZERO_ALL
#undef KX_OPAQUE
#undef LB_KX_KERNEL
