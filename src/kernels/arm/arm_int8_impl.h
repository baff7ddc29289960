/* The int8 dot-product kernels of one Arm ISA level: plain Q4_0 / IQ4_NL /
 * Q8_0 vec_dot and the GEMV / GEMM of their interleaved layouts
 * (formats/repack.h). Included once per level by arm_neon.c (SDOT
 * emulated with widening multiplies) and arm_dotprod.c (SDOT), which define
 *   LB_ARM_FN(name)            name with the level's suffix
 *   LB_ARM_TARGET              the level's function attribute (or nothing)
 *   LB_ARM_SDOT(acc, w, a)     acc.i += sum of w[4i..4i+3] * a[4i..4i+3]
 *   LB_ARM_SDOT_LANE(acc, w, a, l)  same with a's 32-bit lane l in every lane
 *   LB_ARM_C4_GROUPS           weight groups per 4x4-layout GEMM tile (1 or 2:
 *                              emulated SDOT needs the registers of the second)
 * The i8mm GEMMs (SMMLA) live in arm_i8mm.c.
 *
 * Every kernel accumulates each output's blocks in order with an unfused
 * multiply-add of (float)isum and the scale formed as the scalar reference
 * forms it; interleaved kernels therefore reproduce the reference GEMV/GEMM
 * bit for bit. Plain vec_dot sums four blocks per vector lane (no reduction
 * per block) and differs from the reference by float summation order only. */

#define LB_ARM_KERNEL LB_ARM_INLINE LB_ARM_TARGET

/* ---------------- plain rows: one weight row . one Q8_0 row ---------------- */

/* The 32 weights of a plain block as two int8 vectors (values 0..15, 16..31).
 * Q4_0 nibbles get the repack's top-bit toggle first, so they decode the same
 * way (x16, the scale takes the 1/16). */
LB_ARM_KERNEL void LB_ARM_FN(plain_weights)(int kind, const uint8_t *blk, int8x16_t cb, int8x16_t *w1,
                                            int8x16_t *w2) {
    if (kind != LB_ARM_Q4_0) {
        lb_arm_weights(kind, blk + 2, 0, 1, cb, w1, w2);
        return;
    }
    const uint8x16_t raw = veorq_u8(vld1q_u8(blk + 2), vdupq_n_u8(0x88));
    *w1 = vreinterpretq_s8_u8(vshlq_n_u8(raw, 4));
    *w2 = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0xF0)));
}

LB_ARM_KERNEL float LB_ARM_FN(vec_dot_plain)(int kind, int64_t n, const void *vw, const void *va) {
    const size_t bs = kind == LB_ARM_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const uint8_t *w = vw;
    const block_q8_0 *a = va;
    const int8x16_t cb = lb_arm_table(kind);
    const int64_t nb = n / 32;
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t b = 0;
    /* four blocks per step: one lane of the integer sums per block */
    for (; b + 4 <= nb; b += 4) {
        int32x4_t p[4];
        lb_fp16 dw[4], da[4];
        LB_ARM_UNROLL
        for (int i = 0; i < 4; i++) {
            const uint8_t *blk = w + (size_t)(b + i) * bs;
            int8x16_t w1, w2;
            LB_ARM_FN(plain_weights)(kind, blk, cb, &w1, &w2);
            p[i] = LB_ARM_SDOT(vdupq_n_s32(0), w1, vld1q_s8(a[b + i].qs));
            p[i] = LB_ARM_SDOT(p[i], w2, vld1q_s8(a[b + i].qs + 16));
            memcpy(&dw[i], blk, 2);
            da[i] = a[b + i].d;
        }
        const int32x4_t isum = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
        acc = lb_arm_acc(acc, isum, vmulq_f32(lb_arm_fp16x4(dw), lb_arm_act_scale(kind, lb_arm_fp16x4(da))));
    }
    float sum = vaddvq_f32(acc);
    for (; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * bs;
        int8x16_t w1, w2;
        LB_ARM_FN(plain_weights)(kind, blk, cb, &w1, &w2);
        int32x4_t p = LB_ARM_SDOT(vdupq_n_s32(0), w1, vld1q_s8(a[b].qs));
        p = LB_ARM_SDOT(p, w2, vld1q_s8(a[b].qs + 16));
        lb_fp16 dw;
        memcpy(&dw, blk, 2);
        float d = lb_fp16_to_f32(dw) * lb_fp16_to_f32(a[b].d);
        if (kind == LB_ARM_Q4_0) d *= 0.0625f;
        sum += (float)vaddvq_s32(p) * d;
    }
    return sum;
}

/* ------------- interleaved weights (R rows per group) . plain Q8_0 rows -------------
 * A: M plain Q8_0 rows, a_row_size apart; [n0, n1) whole groups. */

/* Chunks of 4 bytes (R = 4): 16 bytes of qs hold chunk j of the 4 rows, and
 * SDOT by lane multiplies each row's 4 weights with the activation's 4 values
 * of that chunk: lane r accumulates row r, nothing to reduce afterwards. */
LB_ARM_KERNEL void LB_ARM_FN(gemv_c4)(int kind, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    const size_t xbs = 4 * (kind == LB_ARM_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
    const int8x16_t cb = lb_arm_table(kind);
    for (int m = 0; m < M; m++) {
        const block_q8_0 *a = (const block_q8_0 *)((const char *)A + (size_t)m * a_row_size);
        for (int n = n0; n < n1; n += 4) {
            const uint8_t *x = (const uint8_t *)W + (size_t)n * w_row_size;
            float32x4_t sum = vdupq_n_f32(0.0f);
            for (int64_t b = 0; b < nb; b++, x += xbs) {
                const int8x16_t alo = vld1q_s8(a[b].qs), ahi = vld1q_s8(a[b].qs + 16);
                const uint8_t *qs = x + 8;
                int32x4_t i0 = vdupq_n_s32(0), i1 = vdupq_n_s32(0);
                int8x16_t w1, w2;
#define LB_GEMV_C4_STEP(j)                                      \
    lb_arm_weights(kind, qs, 16 * (j), 4, cb, &w1, &w2);        \
    i0 = LB_ARM_SDOT_LANE(i0, w1, alo, j);                      \
    i1 = LB_ARM_SDOT_LANE(i1, w2, ahi, j);
                LB_GEMV_C4_STEP(0) LB_GEMV_C4_STEP(1) LB_GEMV_C4_STEP(2) LB_GEMV_C4_STEP(3)
#undef LB_GEMV_C4_STEP
                const float32x4_t dw = lb_arm_fp16x4((const lb_fp16 *)x);
                const float32x4_t da = vcvt_f32_f16(vreinterpret_f16_u16(vld1_dup_u16(&a[b].d)));
                sum = lb_arm_acc(sum, vaddq_s32(i0, i1), vmulq_f32(dw, lb_arm_act_scale(kind, da)));
            }
            vst1q_f32(Y + (size_t)m * ldy + n, sum);
        }
    }
}

/* Chunks of 8 bytes (R = 4 or 8): 16 bytes of qs hold chunk j of rows r and
 * r+1; SDOT against the activation chunk in both halves leaves
 * [r: 4 + 4 products, r+1: 4 + 4] and one pairwise add per block gives
 * four rows' sums. */
LB_ARM_KERNEL int32x4_t LB_ARM_FN(gemv_c8_rows4)(int kind, int R, const uint8_t *qs, int p0, int8x16_t cb,
                                                 const int8x16_t a1[2], const int8x16_t a2[2]) {
    int32x4_t acc0 = vdupq_n_s32(0), acc1 = vdupq_n_s32(0); /* row pairs p0, p0 + 1 */
    int8x16_t w1, w2;
    LB_ARM_UNROLL
    for (int j = 0; j < 2; j++) {
        lb_arm_weights(kind, qs, 8 * j * R + 16 * p0, R, cb, &w1, &w2);
        acc0 = LB_ARM_SDOT(acc0, w1, a1[j]);
        acc0 = LB_ARM_SDOT(acc0, w2, a2[j]);
        lb_arm_weights(kind, qs, 8 * j * R + 16 * (p0 + 1), R, cb, &w1, &w2);
        acc1 = LB_ARM_SDOT(acc1, w1, a1[j]);
        acc1 = LB_ARM_SDOT(acc1, w2, a2[j]);
    }
    return vpaddq_s32(acc0, acc1);
}

LB_ARM_KERNEL void LB_ARM_FN(gemv_c8)(int kind, int R, int64_t K, const void *W, size_t w_row_size, int n0,
                                      int n1, const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    const size_t xbs = (size_t)R * (kind == LB_ARM_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
    const int8x16_t cb = lb_arm_table(kind);
    for (int m = 0; m < M; m++) {
        const block_q8_0 *a = (const block_q8_0 *)((const char *)A + (size_t)m * a_row_size);
        for (int n = n0; n < n1; n += R) {
            const uint8_t *x = (const uint8_t *)W + (size_t)n * w_row_size;
            float32x4_t sum0 = vdupq_n_f32(0.0f), sum1 = vdupq_n_f32(0.0f); /* rows 0..3, 4..7 */
            for (int64_t b = 0; b < nb; b++, x += xbs) {
                /* activation chunks j (values 8j..8j+7) and j + 2, in both halves */
                const int8x16_t a1[2] = {lb_arm_dup8(a[b].qs), lb_arm_dup8(a[b].qs + 8)};
                const int8x16_t a2[2] = {lb_arm_dup8(a[b].qs + 16), lb_arm_dup8(a[b].qs + 24)};
                const float32x4_t da =
                    lb_arm_act_scale(kind, vcvt_f32_f16(vreinterpret_f16_u16(vld1_dup_u16(&a[b].d))));
                const int32x4_t i0 = LB_ARM_FN(gemv_c8_rows4)(kind, R, x + 2 * R, 0, cb, a1, a2);
                sum0 = lb_arm_acc(sum0, i0, vmulq_f32(lb_arm_fp16x4((const lb_fp16 *)x), da));
                if (R == 8) {
                    const int32x4_t i1 = LB_ARM_FN(gemv_c8_rows4)(kind, R, x + 2 * R, 2, cb, a1, a2);
                    sum1 = lb_arm_acc(sum1, i1, vmulq_f32(lb_arm_fp16x4((const lb_fp16 *)x + 4), da));
                }
            }
            vst1q_f32(Y + (size_t)m * ldy + n, sum0);
            if (R == 8) vst1q_f32(Y + (size_t)m * ldy + n + 4, sum1);
        }
    }
}

/* --------- interleaved weights . 4 interleaved activation rows (lb_block_q8_0x4a) ---------
 * A: M/4 groups, a_row_size apart, activation chunk = weight chunk. */

/* Chunks of 4: a 4 x (4G) register tile, G = 1 or 2 weight groups. The 16
 * activation bytes of chunk c hold rows 0..3 (lane m = row m), so SDOT by
 * lane m against a weight vector gives row m's sums for the group's 4 rows.
 * Registers: 4G int32 + 4G fp32 accumulators, 2 activation and 2 weight
 * vectors at a time. */
LB_ARM_KERNEL void LB_ARM_FN(gemm_c4_tile)(int kind, int G, int64_t nb, const uint8_t *xg, size_t gstride,
                                           const lb_block_q8_0x4a *ab, float *Y, size_t ldy) {
    const size_t xbs = 4 * (kind == LB_ARM_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
    const int8x16_t cb = lb_arm_table(kind);
    float32x4_t sum[2][4];
    LB_ARM_UNROLL
    for (int g = 0; g < G; g++)
        LB_ARM_UNROLL
        for (int m = 0; m < 4; m++) sum[g][m] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *x[2] = {xg + (size_t)b * xbs, xg + (G > 1 ? gstride : 0) + (size_t)b * xbs};
        int32x4_t acc[2][4];
        LB_ARM_UNROLL
        for (int g = 0; g < G; g++)
            LB_ARM_UNROLL
            for (int m = 0; m < 4; m++) acc[g][m] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) {
            /* activation chunks j (values 4j..4j+3) and j + 4 (16 values on) */
            const int8x16_t a1 = vld1q_s8(ab[b].qs + 16 * j), a2 = vld1q_s8(ab[b].qs + 16 * (j + 4));
            LB_ARM_UNROLL
            for (int g = 0; g < G; g++) {
                int8x16_t w1, w2;
                lb_arm_weights(kind, x[g] + 8, 16 * j, 4, cb, &w1, &w2);
                acc[g][0] = LB_ARM_SDOT_LANE(acc[g][0], w1, a1, 0);
                acc[g][1] = LB_ARM_SDOT_LANE(acc[g][1], w1, a1, 1);
                acc[g][2] = LB_ARM_SDOT_LANE(acc[g][2], w1, a1, 2);
                acc[g][3] = LB_ARM_SDOT_LANE(acc[g][3], w1, a1, 3);
                acc[g][0] = LB_ARM_SDOT_LANE(acc[g][0], w2, a2, 0);
                acc[g][1] = LB_ARM_SDOT_LANE(acc[g][1], w2, a2, 1);
                acc[g][2] = LB_ARM_SDOT_LANE(acc[g][2], w2, a2, 2);
                acc[g][3] = LB_ARM_SDOT_LANE(acc[g][3], w2, a2, 3);
            }
        }
        const float32x4_t da = lb_arm_act_scale(kind, vld1q_f32(ab[b].d));
        LB_ARM_UNROLL
        for (int g = 0; g < G; g++) {
            const float32x4_t dw = lb_arm_fp16x4((const lb_fp16 *)x[g]);
            sum[g][0] = lb_arm_acc(sum[g][0], acc[g][0], vmulq_laneq_f32(dw, da, 0));
            sum[g][1] = lb_arm_acc(sum[g][1], acc[g][1], vmulq_laneq_f32(dw, da, 1));
            sum[g][2] = lb_arm_acc(sum[g][2], acc[g][2], vmulq_laneq_f32(dw, da, 2));
            sum[g][3] = lb_arm_acc(sum[g][3], acc[g][3], vmulq_laneq_f32(dw, da, 3));
        }
    }
    LB_ARM_UNROLL
    for (int g = 0; g < G; g++)
        LB_ARM_UNROLL
        for (int m = 0; m < 4; m++) vst1q_f32(Y + (size_t)m * ldy + 4 * g, sum[g][m]);
}

LB_ARM_KERNEL void LB_ARM_FN(gemm_c4)(int kind, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    for (int m = 0; m + 4 <= M; m += 4) {
        const lb_block_q8_0x4a *ab = (const lb_block_q8_0x4a *)((const char *)A + (size_t)(m / 4) * a_row_size);
        float *y = Y + (size_t)m * ldy;
        int n = n0;
        for (; LB_ARM_C4_GROUPS == 2 && n + 8 <= n1; n += 8)
            LB_ARM_FN(gemm_c4_tile)(kind, 2, nb, (const uint8_t *)W + (size_t)n * w_row_size, 4 * w_row_size, ab,
                                    y + n, ldy);
        for (; n < n1; n += 4)
            LB_ARM_FN(gemm_c4_tile)(kind, 1, nb, (const uint8_t *)W + (size_t)n * w_row_size, 4 * w_row_size, ab,
                                    y + n, ldy);
    }
}

/* Chunks of 8 without SMMLA (CPUs lacking i8mm): a 4 x 4 tile, weight rows
 * 2*p0 .. 2*p0+3 of a group of R, each activation row's chunk duplicated
 * into both halves as in gemv_c8. Registers: 8 int32 + 4 fp32 accumulators,
 * 8 duplicated activation chunks, 2 weight vectors. */
LB_ARM_KERNEL void LB_ARM_FN(gemm_c8_tile)(int kind, int R, int p0, int64_t nb, const uint8_t *xg,
                                           const lb_block_q8_0x4a *ab, float *Y, size_t ldy) {
    const size_t xbs = (size_t)R * (kind == LB_ARM_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
    const int8x16_t cb = lb_arm_table(kind);
    float32x4_t sum[4];
    LB_ARM_UNROLL
    for (int m = 0; m < 4; m++) sum[m] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *x = xg + (size_t)b * xbs, *qs = x + 2 * R;
        const int8_t *aq = ab[b].qs;
        int32x4_t acc[4][2];
        LB_ARM_UNROLL
        for (int m = 0; m < 4; m++) acc[m][0] = acc[m][1] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int j = 0; j < 2; j++) {
            int8x16_t a1[4], a2[4]; /* row m's chunks j and j + 2, in both halves */
            LB_ARM_UNROLL
            for (int m = 0; m < 4; m++) {
                a1[m] = lb_arm_dup8(aq + (j * 4 + m) * 8);
                a2[m] = lb_arm_dup8(aq + ((j + 2) * 4 + m) * 8);
            }
            LB_ARM_UNROLL
            for (int p = 0; p < 2; p++) {
                int8x16_t w1, w2;
                lb_arm_weights(kind, qs, 8 * j * R + 16 * (p0 + p), R, cb, &w1, &w2);
                LB_ARM_UNROLL
                for (int m = 0; m < 4; m++) {
                    acc[m][p] = LB_ARM_SDOT(acc[m][p], w1, a1[m]);
                    acc[m][p] = LB_ARM_SDOT(acc[m][p], w2, a2[m]);
                }
            }
        }
        const float32x4_t da = lb_arm_act_scale(kind, vld1q_f32(ab[b].d));
        const float32x4_t dw = lb_arm_fp16x4((const lb_fp16 *)x + 2 * p0);
        sum[0] = lb_arm_acc(sum[0], vpaddq_s32(acc[0][0], acc[0][1]), vmulq_laneq_f32(dw, da, 0));
        sum[1] = lb_arm_acc(sum[1], vpaddq_s32(acc[1][0], acc[1][1]), vmulq_laneq_f32(dw, da, 1));
        sum[2] = lb_arm_acc(sum[2], vpaddq_s32(acc[2][0], acc[2][1]), vmulq_laneq_f32(dw, da, 2));
        sum[3] = lb_arm_acc(sum[3], vpaddq_s32(acc[3][0], acc[3][1]), vmulq_laneq_f32(dw, da, 3));
    }
    LB_ARM_UNROLL
    for (int m = 0; m < 4; m++) vst1q_f32(Y + (size_t)m * ldy, sum[m]);
}

LB_ARM_KERNEL void LB_ARM_FN(gemm_c8)(int kind, int R, int64_t K, const void *W, size_t w_row_size, int n0,
                                      int n1, const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    for (int m = 0; m + 4 <= M; m += 4) {
        const lb_block_q8_0x4a *ab = (const lb_block_q8_0x4a *)((const char *)A + (size_t)(m / 4) * a_row_size);
        float *y = Y + (size_t)m * ldy;
        for (int n = n0; n < n1; n += R)
            for (int p0 = 0; p0 < R / 2; p0 += 2) /* R = 8: two passes of 4 rows */
                LB_ARM_FN(gemm_c8_tile)(kind, R, p0, nb, (const uint8_t *)W + (size_t)n * w_row_size, ab,
                                        y + n + 2 * p0, ldy);
    }
}

/* ---------------- entry points ---------------- */

#define LB_ARM_PLAIN(w, KIND)                                                                     \
    LB_ARM_TARGET void LB_ARM_FN(lb_vec_dot_##w##_q8_0)(int64_t n, float *s, const void *vw,     \
                                                        const void *va) {                        \
        *s = LB_ARM_FN(vec_dot_plain)(KIND, n, vw, va);                                          \
    }
LB_ARM_PLAIN(q4_0, LB_ARM_Q4_0)
LB_ARM_PLAIN(iq4_nl, LB_ARM_IQ4_NL)
LB_ARM_PLAIN(mxfp4_nl, LB_ARM_MXFP4_NL)
LB_ARM_PLAIN(q8_0, LB_ARM_Q8_0)
#undef LB_ARM_PLAIN

#define LB_ARM_ARGS                                                                              \
    int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size, \
        int M, float *Y, size_t ldy
#define LB_ARM_PASS K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy
#define LB_ARM_REPACKED(w, KIND)                                                                          \
    LB_ARM_TARGET void LB_ARM_FN(lb_gemv_##w##x4_q8_0_4x4)(LB_ARM_ARGS) {                               \
        LB_ARM_FN(gemv_c4)(KIND, LB_ARM_PASS);                                                           \
    }                                                                                                    \
    LB_ARM_TARGET void LB_ARM_FN(lb_gemv_##w##x4_q8_0_4x8)(LB_ARM_ARGS) {                               \
        LB_ARM_FN(gemv_c8)(KIND, 4, LB_ARM_PASS);                                                        \
    }                                                                                                    \
    LB_ARM_TARGET void LB_ARM_FN(lb_gemv_##w##x8_q8_0_8x8)(LB_ARM_ARGS) {                               \
        LB_ARM_FN(gemv_c8)(KIND, 8, LB_ARM_PASS);                                                        \
    }                                                                                                    \
    LB_ARM_TARGET void LB_ARM_FN(lb_gemm_##w##x4_q8_0x4_4x4)(LB_ARM_ARGS) {                             \
        LB_ARM_FN(gemm_c4)(KIND, LB_ARM_PASS);                                                           \
    }                                                                                                    \
    LB_ARM_TARGET void LB_ARM_FN(lb_gemm_##w##x4_q8_0x4_4x8)(LB_ARM_ARGS) {                             \
        LB_ARM_FN(gemm_c8)(KIND, 4, LB_ARM_PASS);                                                        \
    }                                                                                                    \
    LB_ARM_TARGET void LB_ARM_FN(lb_gemm_##w##x8_q8_0x4_8x8)(LB_ARM_ARGS) {                             \
        LB_ARM_FN(gemm_c8)(KIND, 8, LB_ARM_PASS);                                                        \
    }
LB_ARM_REPACKED(q4_0, LB_ARM_Q4_0)
LB_ARM_REPACKED(iq4_nl, LB_ARM_IQ4_NL)
LB_ARM_REPACKED(mxfp4_nl, LB_ARM_MXFP4_NL)
LB_ARM_REPACKED(q8_0, LB_ARM_Q8_0)
#undef LB_ARM_REPACKED
#undef LB_ARM_ARGS
#undef LB_ARM_PASS
#undef LB_ARM_KERNEL
