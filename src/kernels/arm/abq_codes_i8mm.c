/* ABQ's code layouts with SMMLA: the i8mm level's GEMM (kernels/arm/abq_arm.h;
 * the arithmetic of abq_codes_dotprod.c, bit for bit the reference).
 *
 * SMMLA multiplies a 2 x 8 matrix of bytes by an 8 x 2 one into a 2 x 2
 * int32 tile: with two weight rows' codes in its first operand (8 codes of
 * each, side by side: ZIP1 / ZIP2 of the rows' 64-bit halves) and two
 * activation rows' bytes in the second, one instruction adds 8 weights of 4
 * (weight row, activation row) pairs, the lanes [r0 m0, r0 m1, r1 m0, r1 m1].
 * A tile is 2 x 2 such pairs of rows (4 weight rows x 4 activation rows, 4
 * accumulators): per 16 codes of a group 4 decodes, 4 + 4 ZIPs, 4 activation
 * loads and 8 SMMLA, where the SDOT tile takes 16 SDOT. The correction of
 * each lane takes its row's sw, z and d and its activation row's terms in
 * the lanes' order (ZIP of the 4 rows' heads with themselves, the activation
 * terms' halves doubled). Rows past the tile's (N or M not a multiple of 4)
 * repeat a row and are not stored; a single activation row (decode, and the
 * last of an odd M) goes to the SDOT tile, where SMMLA would waste half. */
#include "kernels/arm/abq_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/thread_scratch.h"
#include "kernels/arm/abq_codes_arm_impl.h"

/* The raw bytes of two rows' codes zipped before the decode (ZIP commutes
 * with the byte-wise AND and shift): lo = 8 codes of row a then 8 of row b
 * (weights 16k .. 16k + 7), hi = the next 8 of each; one zip of a raw vector
 * serves the 2 (W = 4) or 4 (W = 2) chunks it holds. */
LB_ARM_INLINE void chunk_pair(int w, const uint8_t *qa, const uint8_t *qb, int k, int8x16_t *lo, int8x16_t *hi) {
    const int off = w == 4 ? 32 * (k / 4) + 16 * (k % 2) : 16 * (k % 2);
    const int64x2_t va = vreinterpretq_s64_u8(vld1q_u8(qa + off)), vb = vreinterpretq_s64_u8(vld1q_u8(qb + off));
    const uint8x16_t zl = vreinterpretq_u8_s64(vzip1q_s64(va, vb)), zh = vreinterpretq_u8_s64(vzip2q_s64(va, vb));
    uint8x16_t l, h;
    if (w == 4) {
        const uint8x16_t m15 = vdupq_n_u8(15);
        l = k % 4 < 2 ? vandq_u8(zl, m15) : vshrq_n_u8(zl, 4);
        h = k % 4 < 2 ? vandq_u8(zh, m15) : vshrq_n_u8(zh, 4);
    } else {
        const uint8x16_t m3 = vdupq_n_u8(3);
        switch (k / 2) {
        case 0: l = vandq_u8(zl, m3), h = vandq_u8(zh, m3); break;
        case 1: l = vandq_u8(vshrq_n_u8(zl, 2), m3), h = vandq_u8(vshrq_n_u8(zh, 2), m3); break;
        case 2: l = vandq_u8(vshrq_n_u8(zl, 4), m3), h = vandq_u8(vshrq_n_u8(zh, 4), m3); break;
        default: l = vshrq_n_u8(zl, 6), h = vshrq_n_u8(zh, 6); break;
        }
    }
    *lo = vreinterpretq_s8_u8(l), *hi = vreinterpretq_s8_u8(h);
}

/* Activation rows 2j, 2j + 1 of a call's M (a multiple of 2) zipped once:
 * per pair, group and 16-byte chunk k, 8 bytes of each row (lo), then the
 * next 8 of each (hi): 32 bytes, the SMMLA tile's second operands. */
static LB_ARM_I8MM void zip_acts(const uint8_t *A, size_t ars, int M, int64_t nb, int8_t *Z) {
    for (int j = 0; j + 1 < M; j += 2) {
        const block_abq_act *a0 = (const block_abq_act *)(A + (size_t)j * ars);
        const block_abq_act *a1 = (const block_abq_act *)(A + (size_t)(j + 1) * ars);
        for (int64_t i = 0; i < nb; i++)
            for (int k = 0; k < 8; k++) {
                const int64x2_t x0 = vreinterpretq_s64_s8(vld1q_s8(a0[i].c + 16 * k));
                const int64x2_t x1 = vreinterpretq_s64_s8(vld1q_s8(a1[i].c + 16 * k));
                int8_t *z = Z + ((size_t)(j / 2) * (size_t)nb + (size_t)i) * 256 + 32 * k;
                vst1q_s8(z, vreinterpretq_s8_s64(vzip1q_s64(x0, x1)));
                vst1q_s8(z + 16, vreinterpretq_s8_s64(vzip2q_s64(x0, x1)));
            }
    }
}

/* weight rows n .. n + rw - 1 (rw <= 4) x activation rows m .. m + ra - 1
 * (ra 2 or 4, m even; Z: the call's zipped activations), the heads and the
 * double steps of 2 x 2 SMMLA tiles */
LB_ARM_INLINE LB_ARM_I8MM void tile_mmla(int w, int64_t nb, const uint8_t *W, size_t wrs, int n, int rw,
                                         const uint8_t *A, size_t ars, const int8_t *Z, int m, int ra, float *Y,
                                         size_t ldy) {
    row_parts rp[4];
    const block_abq_act *act[4];
    const int8_t *zp[2];
    for (int r = 0; r < 4; r++) rp[r] = parts_of(W + (size_t)(n + (r < rw ? r : 0)) * wrs, nb);
    for (int j = 0; j < 4; j++) act[j] = (const block_abq_act *)(A + (size_t)(m + (j < ra ? j : 0)) * ars);
    for (int ap = 0; ap < 2; ap++) zp[ap] = Z + (size_t)((m + (2 * ap < ra ? 2 * ap : 0)) / 2) * (size_t)nb * 256;
    /* acc[wp][ap][h]: weight row 2 wp + h, activation rows 2 ap, 2 ap + 1 */
    float64x2_t acc[2][2][2];
    LB_ARM_UNROLL
    for (int wp = 0; wp < 2; wp++)
        LB_ARM_UNROLL
        for (int ap = 0; ap < 2; ap++) acc[wp][ap][0] = acc[wp][ap][1] = vdupq_n_f64(0.0);
    for (int64_t i = 0; i < nb; i++) {
        int32x4_t s[2][2];
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++) s[wp][0] = s[wp][1] = vdupq_n_s32(0);
        const size_t qo = (size_t)(16 * w) * (size_t)i;
        LB_ARM_UNROLL
        for (int k = 0; k < 8; k++) {
            int8x16_t wl[2], wh[2], al[2], ah[2];
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++)
                chunk_pair(w, rp[2 * wp].qs + qo, rp[2 * wp + 1].qs + qo, k, &wl[wp], &wh[wp]);
            LB_ARM_UNROLL
            for (int ap = 0; ap < 2; ap++) {
                const int8_t *z = zp[ap] + (size_t)i * 256 + 32 * k;
                al[ap] = vld1q_s8(z), ah[ap] = vld1q_s8(z + 16);
            }
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++)
                LB_ARM_UNROLL
                for (int ap = 0; ap < 2; ap++)
                    s[wp][ap] = vmmlaq_s32(vmmlaq_s32(s[wp][ap], wl[wp], al[ap]), wh[wp], ah[ap]);
        }
        /* the heads in the lanes' order */
        const heads4 h = heads_of(rp, i);
        int32_t t1[4], t2[4];
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) {
            const block_abq_act *b = &act[j][i];
            t1[j] = 128 - b->z, t2[j] = b->sum - 128 * b->z;
        }
        const int32x4_t T1 = vld1q_s32(t1), T2 = vld1q_s32(t2);
        const int32x4_t swl[2] = {vzip1q_s32(h.sw, h.sw), vzip2q_s32(h.sw, h.sw)};
        const int32x4_t zl[2] = {vzip1q_s32(h.z, h.z), vzip2q_s32(h.z, h.z)};
        const int32x4_t t1l[2] = {vcombine_s32(vget_low_s32(T1), vget_low_s32(T1)),
                                  vcombine_s32(vget_high_s32(T1), vget_high_s32(T1))};
        const int32x4_t t2l[2] = {vcombine_s32(vget_low_s32(T2), vget_low_s32(T2)),
                                  vcombine_s32(vget_high_s32(T2), vget_high_s32(T2))};
        const float64x2_t dr[4] = {vdupq_laneq_f64(h.d01, 0), vdupq_laneq_f64(h.d01, 1), vdupq_laneq_f64(h.d23, 0),
                                   vdupq_laneq_f64(h.d23, 1)};
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++)
            LB_ARM_UNROLL
            for (int ap = 0; ap < 2; ap++) {
                const int32x4_t I = vmlsq_s32(vmlaq_s32(s[wp][ap], swl[wp], t1l[ap]), zl[wp], t2l[ap]);
                acc[wp][ap][0] = vaddq_f64(acc[wp][ap][0],
                                           vmulq_f64(dr[2 * wp], vcvtq_f64_s64(vmovl_s32(vget_low_s32(I)))));
                acc[wp][ap][1] = vaddq_f64(acc[wp][ap][1],
                                           vmulq_f64(dr[2 * wp + 1], vcvtq_f64_s64(vmovl_high_s32(I))));
            }
    }
    for (int wp = 0; wp < 2; wp++)
        for (int ap = 0; ap < 2; ap++) {
            const float64x2_t da = {(double)act[2 * ap][0].d, (double)act[2 * ap + 1][0].d};
            for (int h = 0; h < 2; h++) {
                double y[2];
                vst1q_f64(y, vmulq_f64(acc[wp][ap][h], da));
                const int r = 2 * wp + h;
                for (int e = 0; e < 2; e++)
                    if (r < rw && 2 * ap + e < ra)
                        Y[(size_t)(m + 2 * ap + e) * ldy + (size_t)(n + r)] = nb ? (float)y[e] : 0.0f;
            }
        }
}

LB_ARM_INLINE LB_ARM_I8MM void gemm_i8mm(int w, int64_t K, const void *Wv, size_t wrs, int n0, int n1,
                                         const void *Av, size_t ars, int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    const int m2 = M - M % 2; /* rows the SMMLA tiles take, in pairs */
    int8_t *Z = m2 ? lb_thread_scratch((size_t)m2 * (size_t)nb * LB_ABQ_G) : NULL;
    if (!Z) { /* one row, or no scratch: the SDOT tiles */
        gemm_dotprod(w, K, Wv, wrs, n0, n1, Av, ars, M, Y, ldy);
        return;
    }
    zip_acts(Av, ars, m2, nb, Z);
    for (int n = n0; n < n1; n += 4) {
        const int rw = n1 - n < 4 ? n1 - n : 4;
        for (int m = 0; m < m2; m += 4)
            tile_mmla(w, nb, Wv, wrs, n, rw, Av, ars, Z, m, m2 - m < 4 ? 2 : 4, Y, ldy);
    }
    if (m2 < M) /* the last row of an odd M: the SDOT tiles */
        gemm_dotprod(w, K, Wv, wrs, n0, n1, (const uint8_t *)Av + (size_t)m2 * ars, ars, 1, Y + (size_t)m2 * ldy, ldy);
}

#define CODES_I8MM(name, NAME, Wb)                                                                            \
    LB_ARM_I8MM void lb_gemm_##name##_i8mm(int64_t K, const void *W, size_t w_row_size, int n0, int n1,        \
                                           const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {     \
        gemm_i8mm(Wb, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                   \
    }
LB_ABQ_CODES_LIST(CODES_I8MM)
#undef CODES_I8MM

#endif
