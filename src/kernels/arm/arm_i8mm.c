/* GEMM of the 8-byte-chunk interleaved layouts (Q4_0 / IQ4_NL / Q8_0, 4x8 and
 * 8x8) with the i8mm extension (Armv8.6, optional from 8.2: Neoverse V1/V2/N2,
 * Cortex-A510/A710/X2 and later). SMMLA (vmmlaq_s32) multiplies a 2x8 int8
 * matrix (two activation rows, 8 values each) by an 8x2 one (two weight rows)
 * into a 2x2 int32 tile: twice the multiplies of SDOT per instruction, and
 * both interleaved operands load straight from memory: 16 bytes of the
 * activations (lb_block_q8_0x4a, chunk 8) hold rows m, m+1 and 16 bytes of
 * the weights rows n, n+1, each 8 values of the same chunk.
 *
 * Register tile: 4 activation rows x 8 weight rows = 2 x 4 SMMLA tiles: 8
 * int32 and 8 fp32 accumulators, 8 activation vectors reused across the 8
 * rows, weights decoded on the fly (about 24 of the 32 vector registers). */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/arm_common.h"

/* NP weight-row pairs (2: 4 rows, 4: 8 rows) from row groups of R rows: R = 8
 * is one group, R = 4 one or two groups gstride bytes apart. */
LB_ARM_INLINE LB_ARM_I8MM void mmla_tile(int kind, int R, int NP, int64_t nb, const uint8_t *xg, size_t gstride,
                                         const lb_block_q8_0x4a *ab, float *Y, size_t ldy) {
    const size_t xbs = (size_t)R * (kind == LB_ARM_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
    const int8x16_t cb = lb_arm_table(kind);
    float32x4_t sum01[4], sum23[4]; /* lanes: [m0 n0, m0 n1, m1 n0, m1 n1] of pair P */
    LB_ARM_UNROLL
    for (int P = 0; P < 4; P++) sum01[P] = sum23[P] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        int32x4_t i01[4], i23[4];
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) i01[P] = i23[P] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int j = 0; j < 2; j++) {
            /* activation chunks j and j + 2 (values 8j.. and 16 on) of rows 0,1 and 2,3 */
            const int8_t *aq = ab[b].qs + 32 * j;
            const int8x16_t a01 = vld1q_s8(aq), a23 = vld1q_s8(aq + 16);
            const int8x16_t a01h = vld1q_s8(aq + 64), a23h = vld1q_s8(aq + 80);
            LB_ARM_UNROLL
            for (int P = 0; P < NP; P++) {
                const int g = (2 * P) / R, pp = P - g * (R / 2);
                const uint8_t *qs = xg + (size_t)g * gstride + (size_t)b * xbs + 2 * R;
                int8x16_t w1, w2; /* weights meeting activation chunks j and j + 2 */
                lb_arm_weights(kind, qs, 8 * j * R + 16 * pp, R, cb, &w1, &w2);
                i01[P] = vmmlaq_s32(i01[P], a01, w1);
                i01[P] = vmmlaq_s32(i01[P], a01h, w2);
                i23[P] = vmmlaq_s32(i23[P], a23, w1);
                i23[P] = vmmlaq_s32(i23[P], a23h, w2);
            }
        }
        const float32x4_t da = lb_arm_act_scale(kind, vld1q_f32(ab[b].d));
        const float32x4_t da01 = vzip1q_f32(da, da), da23 = vzip2q_f32(da, da); /* [m0 m0 m1 m1] */
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) {
            const int g = (2 * P) / R, pp = P - g * (R / 2);
            const lb_fp16 *d = (const lb_fp16 *)(xg + (size_t)g * gstride + (size_t)b * xbs) + 2 * pp;
            /* the pair's two fp16 scales, loaded as one 32-bit value twice: [n0 n1 n0 n1] */
            uint32_t d2;
            memcpy(&d2, d, 4);
            const float32x4_t dwp = vcvt_f32_f16(vreinterpret_f16_u32(vdup_n_u32(d2)));
            sum01[P] = lb_arm_acc(sum01[P], i01[P], vmulq_f32(dwp, da01));
            sum23[P] = lb_arm_acc(sum23[P], i23[P], vmulq_f32(dwp, da23));
        }
    }
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) {
        vst1_f32(Y + 0 * ldy + 2 * P, vget_low_f32(sum01[P]));
        vst1_f32(Y + 1 * ldy + 2 * P, vget_high_f32(sum01[P]));
        vst1_f32(Y + 2 * ldy + 2 * P, vget_low_f32(sum23[P]));
        vst1_f32(Y + 3 * ldy + 2 * P, vget_high_f32(sum23[P]));
    }
}

LB_ARM_INLINE LB_ARM_I8MM void gemm_mmla(int kind, int R, int64_t K, const void *W, size_t w_row_size, int n0,
                                         int n1, const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    const size_t gstride = (size_t)R * w_row_size;
    for (int m = 0; m + 4 <= M; m += 4) {
        const lb_block_q8_0x4a *ab = (const lb_block_q8_0x4a *)((const char *)A + (size_t)(m / 4) * a_row_size);
        float *y = Y + (size_t)m * ldy;
        int n = n0;
        for (; n + 8 <= n1; n += 8)
            mmla_tile(kind, R, 4, nb, (const uint8_t *)W + (size_t)n * w_row_size, gstride, ab, y + n, ldy);
        if (n < n1) /* R = 4: one group left */
            mmla_tile(kind, R, 2, nb, (const uint8_t *)W + (size_t)n * w_row_size, gstride, ab, y + n, ldy);
    }
}

#define LB_ARM_ARGS                                                                              \
    int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size, \
        int M, float *Y, size_t ldy
#define LB_ARM_PASS K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy
#define LB_ARM_MMLA(w, KIND)                                                                             \
    LB_ARM_I8MM void lb_gemm_##w##x4_q8_0x4_4x8_i8mm(LB_ARM_ARGS) { gemm_mmla(KIND, 4, LB_ARM_PASS); } \
    LB_ARM_I8MM void lb_gemm_##w##x8_q8_0x4_8x8_i8mm(LB_ARM_ARGS) { gemm_mmla(KIND, 8, LB_ARM_PASS); }
LB_ARM_MMLA(q4_0, LB_ARM_Q4_0)
LB_ARM_MMLA(iq4_nl, LB_ARM_IQ4_NL)
LB_ARM_MMLA(mxfp4_nl, LB_ARM_MXFP4_NL)
LB_ARM_MMLA(q8_0, LB_ARM_Q8_0)

#endif
