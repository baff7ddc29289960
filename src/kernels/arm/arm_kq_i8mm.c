/* GEMM of plain Q2_K / CB2 / CB3 rows with plain Q8_K activation rows using
 * the i8mm extension (SMMLA, vmmlaq_s32: a 2x8 by 8x2 int8 product into a
 * 2x2 int32 tile): each weight block is decoded once for up to 8
 * activation rows.
 *
 * Tile: weight rows n, n+1 x activation rows m .. m + 2P - 1 (P = 4, 2 or
 * 1 row pairs). Per sub-group j (16 weights) the two rows' decoded weights
 * w_n, w_n1 (arm_kq_decode.h) are zipped into [w_n 0-7 | w_n1 0-7] and
 * [w_n 8-15 | w_n1 8-15], each activation row pair likewise, and two SMMLA
 * give the pair's 2x2 sums [m.n, m.n1, m1.n, m1.n1] over the 16 weights.
 *   Q2_K: q * scale <= 45 fits int8, so the weights carry their sub-group
 *         scale (MUL by the DUP'ed scale) and SMMLA accumulates the whole
 *         block in one tile; the min term is 4 SMULL/SMLAL per row pair
 *         with the activations' bsums, gathered into tile order by ADDP.
 *   CB:   centroid * scale does not fit int8: the sub-group's tile starts
 *         at zero and an MLA adds it times [s_n, s_n1, s_n, s_n1] (one TBL
 *         of the two rows' scale bytes).
 * Per block the float steps are the reference's for each of the four
 * outputs (unfused, block order), so outputs are bit-identical to the
 * scalar vec_dot with gcc. One activation row (M = 1, or the last of an odd
 * M) and the last of an odd number of weight rows go through the dotprod
 * vec_dot (i8mm implies dotprod in kernels/cpu.c's levels). */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/arm_kq_decode.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* TBL masks: from {scales of row n, scales of row n1} the int32 lanes
 * [s_n[j], s_n1[j], s_n[j], s_n1[j]] (index 0xFF reads as 0). */
static const uint8_t scale_mask[16][16] __attribute__((aligned(16))) = {
#define LB_KQ_SM(j) {j, 255, 255, 255, 16 + j, 255, 255, 255, j, 255, 255, 255, 16 + j, 255, 255, 255}
    LB_KQ_SM(0), LB_KQ_SM(1), LB_KQ_SM(2),  LB_KQ_SM(3),  LB_KQ_SM(4),  LB_KQ_SM(5),  LB_KQ_SM(6),  LB_KQ_SM(7),
    LB_KQ_SM(8), LB_KQ_SM(9), LB_KQ_SM(10), LB_KQ_SM(11), LB_KQ_SM(12), LB_KQ_SM(13), LB_KQ_SM(14), LB_KQ_SM(15),
#undef LB_KQ_SM
};

LB_ARM_INLINE int8x16_t zip_lo(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
LB_ARM_INLINE int8x16_t zip_hi(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

/* Weight rows w0, w1 (nb blocks each) x activation rows A, A + ars, ...
 * (2P rows) -> Y[r * ldy + 0..1]. kind, cbits, P constant. */
LB_ARM_INLINE LB_ARM_I8MM void kq_tile(int kind, int cbits, int P, int64_t nb, const uint8_t *w0, const uint8_t *w1,
                                       const uint8_t *A, size_t ars, float *Y, size_t ldy, const lb_kq_books *T) {
    const int entries = kind == LB_KQ_Q2_K ? 0 : lb_kq_entries(kind, 1 << cbits);
    const size_t bs = kind == LB_KQ_Q2_K ? sizeof(block_q2_K) : kind == LB_KQ_CB2 ? sizeof(block_cb2)
                                                                                   : sizeof(block_cb3);
    float32x4_t facc[4];
    LB_ARM_UNROLL
    for (int p = 0; p < P; p++) facc[p] = vdupq_n_f32(0.0f);
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *x0 = w0 + (size_t)ib * bs, *x1 = w1 + (size_t)ib * bs;
        lb_kq_block b0, b1;
        lb_kq_block_load(kind, cbits, 0, x0, &b0);
        lb_kq_block_load(kind, cbits, 0, x1, &b1);
        const block_q8_K *a[8];
        LB_ARM_UNROLL
        for (int r = 0; r < 2 * P; r++) a[r] = (const block_q8_K *)(A + (size_t)r * ars) + ib;
        int32x4_t iacc[4];
        LB_ARM_UNROLL
        for (int p = 0; p < P; p++) iacc[p] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int c = 0; c < 2; c++)
            LB_ARM_UNROLL
            for (int t = 0; t < 4; t++)
                LB_ARM_UNROLL
                for (int h = 0; h < 2; h++) {
                    const int j = 8 * c + 2 * t + h;
                    int8x16_t v0 = lb_kq_weights(kind, entries, T, &b0, c, t, h);
                    int8x16_t v1 = lb_kq_weights(kind, entries, T, &b1, c, t, h);
                    int32x4_t scv = vdupq_n_s32(0);
                    if (kind == LB_KQ_Q2_K) {
                        v0 = vmulq_s8(v0, vreinterpretq_s8_u8(lb_kq_dup(b0.sc, j)));
                        v1 = vmulq_s8(v1, vreinterpretq_s8_u8(lb_kq_dup(b1.sc, j)));
                    } else {
                        scv = vreinterpretq_s32_u8(vqtbl2q_u8((uint8x16x2_t){{b0.sc, b1.sc}}, vld1q_u8(scale_mask[j])));
                    }
                    const int8x16_t W0 = zip_lo(v0, v1), W1 = zip_hi(v0, v1);
                    LB_ARM_UNROLL
                    for (int p = 0; p < P; p++) {
                        const int8x16_t r0 = vld1q_s8(a[2 * p]->qs + 16 * j), r1 = vld1q_s8(a[2 * p + 1]->qs + 16 * j);
                        const int8x16_t A0 = zip_lo(r0, r1), A1 = zip_hi(r0, r1);
                        if (kind == LB_KQ_Q2_K) {
                            iacc[p] = vmmlaq_s32(vmmlaq_s32(iacc[p], A0, W0), A1, W1);
                        } else {
                            const int32x4_t tile = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), A0, W0), A1, W1);
                            iacc[p] = vmlaq_s32(iacc[p], tile, scv);
                        }
                    }
                }
        /* per output (lane): the reference's float steps for this block */
        float32x4_t dw, dm = vdupq_n_f32(0.0f);
        if (kind == LB_KQ_Q2_K) {
            const float d0 = lb_kq_f16(&((const block_q2_K *)x0)->d), d1 = lb_kq_f16(&((const block_q2_K *)x1)->d);
            const float m0 = lb_kq_f16(&((const block_q2_K *)x0)->dmin);
            const float m1 = lb_kq_f16(&((const block_q2_K *)x1)->dmin);
            dw = (float32x4_t){d0, d1, d0, d1};
            dm = (float32x4_t){m0, m1, m0, m1};
        } else {
            const float d0 = lb_kq_f16(x0 + bs - 2), d1 = lb_kq_f16(x1 + bs - 2);
            dw = (float32x4_t){d0, d1, d0, d1};
        }
        LB_ARM_UNROLL
        for (int p = 0; p < P; p++) {
            const float32x4_t da = (float32x4_t){a[2 * p]->d, a[2 * p]->d, a[2 * p + 1]->d, a[2 * p + 1]->d};
            if (kind == LB_KQ_Q2_K) {
                /* min sums in tile order [m.n, m.n1, m1.n, m1.n1] */
                const int32x4_t mnm = lb_kq_mins_dot(b0.mn, a[2 * p]->bsums);
                const int32x4_t mn1m = lb_kq_mins_dot(b1.mn, a[2 * p]->bsums);
                const int32x4_t mnm1 = lb_kq_mins_dot(b0.mn, a[2 * p + 1]->bsums);
                const int32x4_t mn1m1 = lb_kq_mins_dot(b1.mn, a[2 * p + 1]->bsums);
                const int32x4_t summs = vpaddq_s32(vpaddq_s32(mnm, mn1m), vpaddq_s32(mnm1, mn1m1));
                const float32x4_t dall = vmulq_f32(da, dw), dmin = vmulq_f32(da, dm);
                facc[p] = vaddq_f32(facc[p], vsubq_f32(vmulq_f32(dall, vcvtq_f32_s32(iacc[p])),
                                                       vmulq_f32(dmin, vcvtq_f32_s32(summs))));
            } else {
                facc[p] = vaddq_f32(facc[p], vmulq_f32(vmulq_f32(dw, da), vcvtq_f32_s32(iacc[p])));
            }
        }
    }
    LB_ARM_UNROLL
    for (int p = 0; p < P; p++) {
        vst1_f32(Y + (size_t)(2 * p) * ldy, vget_low_f32(facc[p]));
        vst1_f32(Y + (size_t)(2 * p + 1) * ldy, vget_high_f32(facc[p]));
    }
}

LB_ARM_INLINE LB_ARM_I8MM void kq_gemm(int kind, int cbits, int64_t K, const void *W, size_t wrs, int n0, int n1,
                                       const void *A, size_t ars, int M, float *Y, size_t ldy, lb_vec_dot_fn dot) {
    const int64_t nb = K / QK_K;
    lb_kq_books T;
    if (kind != LB_KQ_Q2_K)
        lb_kq_load_books(lb_cb_current(kind == LB_KQ_CB2 ? LB_TYPE_CB2 : LB_TYPE_CB3), lb_kq_entries(kind, 1 << cbits),
                         &T);
    const int Me = M & ~1, ne = n0 + ((n1 - n0) & ~1);
    const uint8_t *a8 = A;
    for (int n = n0; n < ne; n += 2) {
        const uint8_t *w0 = (const uint8_t *)W + (size_t)n * wrs, *w1 = w0 + wrs;
        int m = 0;
        for (; m + 8 <= Me; m += 8)
            kq_tile(kind, cbits, 4, nb, w0, w1, a8 + (size_t)m * ars, ars, Y + (size_t)m * ldy + n, ldy, &T);
        if (Me - m >= 4) {
            kq_tile(kind, cbits, 2, nb, w0, w1, a8 + (size_t)m * ars, ars, Y + (size_t)m * ldy + n, ldy, &T);
            m += 4;
        }
        if (Me - m >= 2) kq_tile(kind, cbits, 1, nb, w0, w1, a8 + (size_t)m * ars, ars, Y + (size_t)m * ldy + n, ldy, &T);
    }
    /* the odd weight row, the odd activation row */
    for (int m = 0; ne < n1 && m < Me; m++)
        dot(K, Y + (size_t)m * ldy + ne, (const uint8_t *)W + (size_t)ne * wrs, a8 + (size_t)m * ars);
    for (int n = n0; Me < M && n < n1; n++)
        dot(K, Y + (size_t)Me * ldy + n, (const uint8_t *)W + (size_t)n * wrs, a8 + (size_t)Me * ars);
}

#define LB_KQ_ARGS                                                                                \
    int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size, \
        int M, float *Y, size_t ldy
#define LB_KQ_PASS K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy

LB_ARM_I8MM void lb_gemm_q2_K_q8_K_i8mm(LB_KQ_ARGS) {
    kq_gemm(LB_KQ_Q2_K, 0, LB_KQ_PASS, lb_vec_dot_q2_K_q8_K_dotprod);
}

#define LB_KQ_CB_GEMM(w, kind, type)                                                                 \
    LB_ARM_I8MM void lb_gemm_##w##_q8_K_i8mm(LB_KQ_ARGS) {                                           \
        switch (lb_cb_current(type)->books.count) {                                                  \
        case 4: kq_gemm(kind, 2, LB_KQ_PASS, lb_vec_dot_##w##_q8_K_dotprod); break;                  \
        case 8: kq_gemm(kind, 3, LB_KQ_PASS, lb_vec_dot_##w##_q8_K_dotprod); break;                  \
        default: kq_gemm(kind, 4, LB_KQ_PASS, lb_vec_dot_##w##_q8_K_dotprod); break;                 \
        }                                                                                            \
    }
LB_KQ_CB_GEMM(cb2, LB_KQ_CB2, LB_TYPE_CB2)
LB_KQ_CB_GEMM(cb3, LB_KQ_CB3, LB_TYPE_CB3)

#endif
