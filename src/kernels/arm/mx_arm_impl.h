/* The MX kernels at the Arm levels (kernels/arm/mx_arm.h). First the pieces
 * every level shares (tile scales and zeros, activation sums, outliers),
 * then, where the including file defines MX_FN, the GEMV template of
 * mx_neon.c and mx_dotprod.c:
 *   MX_FN(name)           name with the level's suffix
 *   MX_TARGET             the level's function attribute (or nothing)
 *   MX_NA                 activation rows sharing the decoded weights (1, 2)
 *   mx_acc, MX_ZERO(s)    an integer accumulator of 4 rows
 *   MX_START(s, v)        the same, starting at the int32x4 v
 *   MX_DOT(s, w, a, l)    s.row += w's 4 bytes of the row . a's dword lane l
 *   MX_I32(s)             the 4 rows' sums as int32x4
 *
 * A 16-byte vector of a tile's qs holds 4 rows x 4 bytes (lanes = rows), so
 * a by-lane dot with the activation dword of those 4 columns adds into each
 * row's own lane. Per 2-bit half (rows 4j..4j+3 of half h), with D the dot
 * of the codes q with the 16 activations and S their sum, the reference's
 * exact integer is 2D - (z1 code + 1) S, times 0.5 s2 (c + z2): here
 *   I = D * 2(c + z2) - S * (z1 code + 1)(c + z2)     (int32, exact)
 * then y += I * (0.5 s2 d) in float; both byte factors (<= 60, 120) come
 * out of the tile once for all the activation rows of a pass and reach the
 * 4 rows' lanes by a TBL. 4-bit: the accumulator starts at -z S, then adds
 * D; y += I * (s d). The float steps differ from the reference's order,
 * within rounding (exact on integer-valued data). */
#ifndef LB_MX_ARM_IMPL_H
#define LB_MX_ARM_IMPL_H

#include <stddef.h>
#include <string.h>

#include "kernels/arm/arm_common.h"
#include "formats/mx.h"

/* TBL indices taking bytes 4j .. 4j + 3 to the low byte of 32-bit lanes
 * (0xFF: out of range, 0): a row's byte factor under its dot lane. */
static const uint8_t mx_widen_idx[4][16] = {
    {0, 255, 255, 255, 1, 255, 255, 255, 2, 255, 255, 255, 3, 255, 255, 255},
    {4, 255, 255, 255, 5, 255, 255, 255, 6, 255, 255, 255, 7, 255, 255, 255},
    {8, 255, 255, 255, 9, 255, 255, 255, 10, 255, 255, 255, 11, 255, 255, 255},
    {12, 255, 255, 255, 13, 255, 255, 255, 14, 255, 255, 255, 15, 255, 255, 255},
};

LB_ARM_INLINE int32x4_t mx_widen(uint8x16_t v, const uint8_t *idx) {
    return vreinterpretq_s32_u8(vqtbl1q_u8(v, vld1q_u8(idx)));
}

LB_ARM_INLINE float mx_f16(uint16_t u) {
    __fp16 h;
    memcpy(&h, &u, 2);
    return (float)h;
}

/* The scale and zero codes of a 2-bit tile, rows 0..15 of half h in byte r:
 * cz[h] = c + z2 (<= 30), code[h] = the z1 code (z1 = (code + 1) / 2);
 * s2 = 0.5 [s2_0, s2_1, s2_0, s2_1]. */
typedef struct {
    uint8x16_t cz[2], code[2];
    float32x4_t s2;
} mx2_scales;

LB_ARM_INLINE void mx2_scales_of(const block_mx2 *b, mx2_scales *s) {
    const uint8x16_t m3 = vdupq_n_u8(3);
    const uint8x16_t s1 = vld1q_u8(b->s1);
    const uint8x16_t ev = vandq_u8(s1, vdupq_n_u8(15)), od = vshrq_n_u8(s1, 4); /* rows 2i, 2i + 1 */
    /* z1 bytes (then 8 bytes of s1, unused): codes of i = 16h + r at byte i / 4, bits 2 (i % 4) */
    const uint8x16_t z = vld1q_u8((const uint8_t *)b + offsetof(block_mx2, z1));
    const uint16x8_t p = vreinterpretq_u16_u8(vzip1q_u8(z, vshrq_n_u8(z, 2)));
    const uint16x8_t q = vreinterpretq_u16_u8(vzip1q_u8(vshrq_n_u8(z, 4), vshrq_n_u8(z, 6)));
    s->code[0] = vandq_u8(vreinterpretq_u8_u16(vzip1q_u16(p, q)), m3);
    s->code[1] = vandq_u8(vreinterpretq_u8_u16(vzip2q_u16(p, q)), m3);
    s->cz[0] = vaddq_u8(vzip1q_u8(ev, od), vdupq_n_u8(b->z2 & 15));
    s->cz[1] = vaddq_u8(vzip2q_u8(ev, od), vdupq_n_u8(b->z2 >> 4));
    uint32_t s2;
    memcpy(&s2, b->s2, 4);
    s->s2 = vmulq_n_f32(vcvt_f32_f16(vreinterpret_f16_u32(vdup_n_u32(s2))), 0.5f);
}

/* The zero of 4-bit rows 0..15 in byte r. */
LB_ARM_INLINE uint8x16_t mx4_zeros(const block_mx4 *b) {
    /* the tile's last 16 bytes: the last 4 scales, then the 8 zero bytes */
    const uint8x16_t z = vld1q_u8((const uint8_t *)b + sizeof(block_mx4) - 16);
    return vzip2q_u8(vandq_u8(z, vdupq_n_u8(15)), vshrq_n_u8(z, 4));
}

/* [8-sums of a0: values 0-7, 8-15, of a1: 0-7, 8-15] */
LB_ARM_INLINE int32x4_t mx_sums8(int8x16_t a0, int8x16_t a1) {
    return vpaddlq_s16(vpaddq_s16(vpaddlq_s8(a0), vpaddlq_s8(a1)));
}

/* Y[m * ldy + r] += each outlier of tile-row rows n .. n + 15 times the
 * activation at its column (d * q), m < NA: the reference's order. */
LB_ARM_INLINE void mx_outliers(const lb_mx_view *v, int n, int NA, const uint8_t *A, size_t ars, float *Y,
                               size_t ldy) {
    if (!v->row_ptr) return;
    for (int r = 0; r < LB_MX_ROWS; r++)
        for (uint32_t o = v->row_ptr[n + r]; o < v->row_ptr[n + r + 1]; o++) {
            const uint32_t w = v->outliers[o], c = w & 0xffffu;
            const float val = mx_f16((uint16_t)(w >> 16));
            for (int m = 0; m < NA; m++) {
                const block_q8_0 *b = (const block_q8_0 *)(A + (size_t)m * ars) + c / 32;
                Y[(size_t)m * ldy + (size_t)r] += val * (mx_f16(b->d) * (float)b->qs[c % 32]);
            }
        }
}

#endif /* LB_MX_ARM_IMPL_H */

#ifdef MX_FN

#define MX_KERNEL LB_ARM_INLINE MX_TARGET

/* immediates for the by-lane operations, for clang */
LB_ARM_INLINE int32x4_t MX_FN(mx_mls_lane)(int32x4_t acc, int32x4_t b, int32x4_t v, int lane) {
    return lane ? vmlsq_laneq_s32(acc, b, v, 1) : vmlsq_laneq_s32(acc, b, v, 0);
}
LB_ARM_INLINE float32x4_t MX_FN(mx_fma_lane)(float32x4_t acc, float32x4_t b, float32x4_t v, int lane) {
    return lane ? vfmaq_laneq_f32(acc, b, v, 1) : vfmaq_laneq_f32(acc, b, v, 0);
}

/* y[m][j] (rows 4j .. 4j + 3, activation row m) += 2-bit tile b . block a[m] */
MX_KERNEL void MX_FN(mx2_tile)(int NA, const block_mx2 *b, const block_q8_0 *const *a, float32x4_t (*y)[4]) {
    mx2_scales sc;
    mx2_scales_of(b, &sc);
    uint8x16_t a2[2], bz[2]; /* 2 (c + z2), (code + 1)(c + z2): <= 60, 120 */
    LB_ARM_UNROLL
    for (int h = 0; h < 2; h++) {
        a2[h] = vaddq_u8(sc.cz[h], sc.cz[h]);
        bz[h] = vmlaq_u8(sc.cz[h], sc.cz[h], sc.code[h]);
    }
    int8x16_t x[MX_NA][2];
    int32x4_t sums[MX_NA]; /* [S_0, S_1, S_0, S_1] */
    float32x4_t k[MX_NA];  /* [0.5 s2_0 d, 0.5 s2_1 d] x 2 */
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++) {
        x[m][0] = vld1q_s8(a[m]->qs);
        x[m][1] = vld1q_s8(a[m]->qs + 16);
        const int32x4_t s8 = mx_sums8(x[m][0], x[m][1]);
        sums[m] = vpaddq_s32(s8, s8);
        k[m] = vmulq_n_f32(sc.s2, mx_f16(a[m]->d));
    }
    const uint8x16_t m3 = vdupq_n_u8(3);
    LB_ARM_UNROLL
    for (int h = 0; h < 2; h++)
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) {
            /* columns 16h + 4t + i of rows 4j + r: byte 4r + i, bits 2t */
            const uint8x16_t v = vld1q_u8(b->qs + 64 * h + 16 * j);
            const int8x16_t w[4] = {vreinterpretq_s8_u8(vandq_u8(v, m3)),
                                    vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(v, 2), m3)),
                                    vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(v, 4), m3)),
                                    vreinterpretq_s8_u8(vshrq_n_u8(v, 6))};
            const int32x4_t A2 = mx_widen(a2[h], mx_widen_idx[j]), B = mx_widen(bz[h], mx_widen_idx[j]);
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++) {
                mx_acc s;
                MX_ZERO(s);
                LB_ARM_UNROLL
                for (int t = 0; t < 4; t++) MX_DOT(s, w[t], x[m][h], t);
                const int32x4_t I = MX_FN(mx_mls_lane)(vmulq_s32(MX_I32(s), A2), B, sums[m], h);
                y[m][j] = MX_FN(mx_fma_lane)(y[m][j], vcvtq_f32_s32(I), k[m], h);
            }
        }
}

/* the same for a 4-bit tile */
MX_KERNEL void MX_FN(mx4_tile)(int NA, const block_mx4 *b, const block_q8_0 *const *a, float32x4_t (*y)[4]) {
    const uint8x16_t z = mx4_zeros(b), m15 = vdupq_n_u8(15);
    int8x16_t x[MX_NA][2];
    int32x4_t sums[MX_NA]; /* [-S, -S, -S, -S] */
    float d[MX_NA];
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++) {
        x[m][0] = vld1q_s8(a[m]->qs);
        x[m][1] = vld1q_s8(a[m]->qs + 16);
        const int32x4_t s8 = mx_sums8(x[m][0], x[m][1]), s2 = vpaddq_s32(s8, s8);
        sums[m] = vnegq_s32(vpaddq_s32(s2, s2));
        d[m] = mx_f16(a[m]->d);
    }
    LB_ARM_UNROLL
    for (int j = 0; j < 4; j++) {
        const float32x4_t s = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(b->s + 4 * j)));
        const int32x4_t Z = mx_widen(z, mx_widen_idx[j]);
        mx_acc acc[MX_NA];
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) MX_START(acc[m], vmulq_s32(Z, sums[m])); /* the zero term -z S */
        LB_ARM_UNROLL
        for (int c = 0; c < 4; c++) {
            /* columns 8c + i (low nibble), 8c + 4 + i (high) of rows 4j + r: byte 4r + i */
            const uint8x16_t v = vld1q_u8(b->qs + 64 * c + 16 * j);
            const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, m15)), hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
            LB_ARM_UNROLL
            for (int m = 0; m < NA; m++) {
                MX_DOT(acc[m], lo, x[m][c / 2], 2 * (c % 2));
                MX_DOT(acc[m], hi, x[m][c / 2], 2 * (c % 2) + 1);
            }
        }
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) y[m][j] = vfmaq_f32(y[m][j], vcvtq_f32_s32(MX_I32(acc[m])), vmulq_n_f32(s, d[m]));
    }
}

/* Tile row t x NA activation rows (A: the first, ars apart; Y: row m at Y + m ldy). */
MX_KERNEL void MX_FN(mx_rows)(int NA, const lb_mx_view *v, int64_t t, const uint8_t *A, size_t ars, float *Y,
                              size_t ldy) {
    float32x4_t y[MX_NA][4];
    const block_q8_0 *a[MX_NA];
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++) {
        a[m] = (const block_q8_0 *)(A + (size_t)m * ars);
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) y[m][j] = vdupq_n_f32(0.0f);
    }
    const block_mx2 *lo = v->lo + t * v->n_lo;
    for (int64_t l = 0; l < v->n_lo; l++) {
        const block_q8_0 *ab[MX_NA];
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) ab[m] = a[m] + v->lo_group[l];
        MX_FN(mx2_tile)(NA, lo + l, ab, y);
    }
    const block_mx4 *hi = v->hi + t * v->n_hi;
    for (int64_t l = 0; l < v->n_hi; l++) {
        const block_q8_0 *ab[MX_NA];
        LB_ARM_UNROLL
        for (int m = 0; m < NA; m++) ab[m] = a[m] + v->hi_group[l];
        MX_FN(mx4_tile)(NA, hi + l, ab, y);
    }
    LB_ARM_UNROLL
    for (int m = 0; m < NA; m++)
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) vst1q_f32(Y + (size_t)m * ldy + 4 * j, y[m][j]);
    mx_outliers(v, (int)(LB_MX_ROWS * t), NA, A, ars, Y, ldy);
}

MX_TARGET void MX_FN(lb_gemv_mx_q8_0)(LB_ARM_GEMM_ARGS) {
    (void)K, (void)w_row_size;
    const lb_mx_view *v = W;
    const uint8_t *a = A;
    for (int n = n0; n < n1; n += LB_MX_ROWS) {
        const int64_t t = n / LB_MX_ROWS;
        int m = 0;
        for (; m + MX_NA <= M; m += MX_NA)
            MX_FN(mx_rows)(MX_NA, v, t, a + (size_t)m * a_row_size, a_row_size, Y + (size_t)m * ldy + n, ldy);
        for (; m < M; m++)
            MX_FN(mx_rows)(1, v, t, a + (size_t)m * a_row_size, a_row_size, Y + (size_t)m * ldy + n, ldy);
    }
}

#undef MX_KERNEL
#endif /* MX_FN */
