/* NEON kernels of the BCQ types (kernels/arm/bcq_arm.h; layout and order of
 * operations in formats/bcq.h). The same tables as the AVX2 kernel
 * (kernels/x86/bcq_avx2.c), read 16 bytes at a time: the low- and
 * high-byte tables of one slice are 16 bytes each, exactly one TBL register.
 *
 * mu = 4 GEMV, per 16 rows (one _LUT x-block per group) and activation row:
 * byte k of a Q8_0 block's plane bytes (16 rows side by side, one load) has
 * slice 2k's index in its low nibble and slice 2k+1's in its high nibble.
 * Per slice two TBL give the low and high bytes of the 16 rows' table
 * entries, ZIP1 / ZIP2 re-join them to int16 (rows 0-7, 8-15), and the sums
 * over a block (8 slices, |sum| <= 8 * 508) are exact in int16. They are
 * widened, converted and scaled by d, alpha_i and the z term with separate
 * multiplies and adds in the reference's order: every output is the
 * reference's float, bit for bit. */
#include "kernels/arm/bcq_arm.h"

#if LB_HAVE_ARM_KERNELS
#include <string.h>

#include "kernels/arm/arm_common.h"

/* the reference's float steps, unfused */
#include "core/fp_strict.h"

/* four fp16 at any byte address -> fp32 (exact) */
LB_ARM_INLINE float32x4_t bcq_h4(const uint8_t *p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }

/* ---- Q8_0_LUT4 activations ---- */

void lb_quantize_row_q8_0_lut4_neon(const float *x, void *vy, int64_t k) {
    block_q8_0_lut4 *y = vy;
    /* sign of activation t in entry e (bit t of e): entries 0-7 and 8-15 */
    int16_t sg[4][16];
    for (int t = 0; t < 4; t++)
        for (int e = 0; e < 16; e++) sg[t][e] = (e >> t & 1) ? 1 : -1;
    int16x8_t S0[4], S1[4];
    for (int t = 0; t < 4; t++) S0[t] = vld1q_s16(sg[t]), S1[t] = vld1q_s16(sg[t] + 8);
    for (int64_t b = 0; b < k / 32; b++) {
        block_q8_0 q;
        lb_quantize_row_q8_0_neon(x + 32 * b, &q, 32);
        block_q8_0_lut4 *o = &y[b];
        o->d = lb_fp16_to_f32(q.d);
        memcpy(o->qs, q.qs, 32);
        const int8x16_t v0 = vld1q_s8(q.qs), v1 = vld1q_s8(q.qs + 16);
        const int32_t S = vaddlvq_s8(v0) + vaddlvq_s8(v1);
        o->ds = o->d * (float)S;
        for (int s = 0; s < 8; s++) {
            const int8_t *xs = q.qs + 4 * s;
            int16x8_t T0 = vmulq_n_s16(S0[0], xs[0]), T1 = vmulq_n_s16(S1[0], xs[0]);
            for (int t = 1; t < 4; t++) T0 = vmlaq_n_s16(T0, S0[t], xs[t]), T1 = vmlaq_n_s16(T1, S1[t], xs[t]);
            const uint8x16_t u0 = vreinterpretq_u8_s16(T0), u1 = vreinterpretq_u8_s16(T1);
            const int p = lb_lut4_pos(s, 0);
            vst1q_u8(o->t + p, vuzp1q_u8(u0, u1));      /* low bytes of entries 0-15 */
            vst1q_u8(o->t + p + 32, vuzp2q_u8(u0, u1)); /* high bytes */
        }
        memset(o->pad, 0, sizeof o->pad);
    }
}

/* ---- mu = 4 GEMV ---- */

/* Exact int16 sums of one plane over one Q8_0 block for 16 rows: *r0 rows
 * 0-7, *r1 rows 8-15. pl: plane bytes 4c .. 4c+3 of the 16 rows (64 bytes). */
LB_ARM_INLINE void bcq_plane_block(const uint8_t *pl, const block_q8_0_lut4 *a, int16x8_t *r0, int16x8_t *r1) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    int16x8_t s0 = vdupq_n_s16(0), s1 = vdupq_n_s16(0);
    LB_ARM_UNROLL
    for (int k = 0; k < 4; k++) {
        const uint8x16_t v = vld1q_u8(pl + 16 * k);
        const uint8x16_t idx[2] = {vandq_u8(v, m4), vshrq_n_u8(v, 4)};
        LB_ARM_UNROLL
        for (int h = 0; h < 2; h++) {
            const uint8_t *t = a->t + lb_lut4_pos(2 * k + h, 0);
            const uint8x16_t l = vqtbl1q_u8(vld1q_u8(t), idx[h]), u = vqtbl1q_u8(vld1q_u8(t + 32), idx[h]);
            s0 = vaddq_s16(s0, vreinterpretq_s16_u8(vzip1q_u8(l, u)));
            s1 = vaddq_s16(s1, vreinterpretq_s16_u8(vzip2q_u8(l, u)));
        }
    }
    *r0 = s0, *r1 = s1;
}

LB_ARM_INLINE void bcq_gemv_lut4(const int Q, const int G, LB_ARM_GEMM_ARGS) {
    const size_t xs = LB_BCQ_XSIZE(Q, G);
    const int NC = G / 32;
    for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        for (int m = 0; m < M; m++) {
            const block_q8_0_lut4 *a = (const block_q8_0_lut4 *)((const char *)A + (size_t)m * a_row_size);
            float32x4_t y[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
            const uint8_t *xb = xg;
            for (int64_t gi = 0; gi < K / G; gi++, xb += xs, a += NC) {
                float zs = 0.0f;
                for (int c = 0; c < NC; c++) zs += a[c].ds;
                LB_ARM_UNROLL
                for (int j = 0; j < 4; j++) y[j] = vaddq_f32(y[j], vmulq_n_f32(bcq_h4(xb + 32 * Q + 8 * j), zs));
                for (int i = 0; i < Q; i++) {
                    const uint8_t *pl = xb + 32 * (Q + 1) + (size_t)i * (G / 8) * LB_BCQ_ROWS;
                    float32x4_t p[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
                    for (int c = 0; c < NC; c++) {
                        int16x8_t s0, s1;
                        bcq_plane_block(pl + 64 * c, &a[c], &s0, &s1);
                        const float d = a[c].d;
                        const int32x4_t w[4] = {vmovl_s16(vget_low_s16(s0)), vmovl_high_s16(s0),
                                                vmovl_s16(vget_low_s16(s1)), vmovl_high_s16(s1)};
                        LB_ARM_UNROLL
                        for (int j = 0; j < 4; j++) p[j] = vaddq_f32(p[j], vmulq_n_f32(vcvtq_f32_s32(w[j]), d));
                    }
                    LB_ARM_UNROLL
                    for (int j = 0; j < 4; j++) y[j] = vaddq_f32(y[j], vmulq_f32(bcq_h4(xb + 32 * i + 8 * j), p[j]));
                }
            }
            float *out = Y + (size_t)m * ldy + n;
            LB_ARM_UNROLL
            for (int j = 0; j < 4; j++) vst1q_f32(out + 4 * j, y[j]);
        }
    }
}

#define BCQ_NEON_DEFINE(name, NAME, Q, G)                                     \
    void lb_gemv_##name##_lut_q8_0_lut4_1x16_neon(LB_ARM_GEMM_ARGS) {          \
        bcq_gemv_lut4(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy); \
    }
LB_BCQ_LIST(BCQ_NEON_DEFINE)
#undef BCQ_NEON_DEFINE
#endif
