/* The pieces of ABQ's code-layout kernels on Arm (kernels/arm/abq_arm.h):
 * the code decode, a row's parts and heads, and the SDOT tile and GEMM of
 * abq_codes_dotprod.c (its vec_dot is the 1 x 1 tile), which the i8mm GEMM
 * (abq_codes_i8mm.c) also runs for its single activation rows. Arithmetic:
 * abq_codes_dotprod.c's comment. */
#ifndef LB_ABQ_CODES_ARM_IMPL_H
#define LB_ABQ_CODES_ARM_IMPL_H

#include <string.h>

#include "formats/abq.h"
#include "kernels/arm/arm_common.h"
/* the reference's double multiply, then add: never fused */
#include "core/fp_strict.h"

/* codes of weights 16k .. 16k + 15 of a group's qs (code width w; the byte
 * and shift of formats/abq_codes.c's place()) */
LB_ARM_INLINE int8x16_t chunk_codes(int w, const uint8_t *qs, int k) {
    if (w == 4) {
        const uint8x16_t v = vld1q_u8(qs + 32 * (k / 4) + 16 * (k % 2));
        return vreinterpretq_s8_u8(k % 4 < 2 ? vandq_u8(v, vdupq_n_u8(15)) : vshrq_n_u8(v, 4));
    }
    const uint8x16_t v = vld1q_u8(qs + 16 * (k % 2)), m3 = vdupq_n_u8(3);
    switch (k / 2) {
    case 0: return vreinterpretq_s8_u8(vandq_u8(v, m3));
    case 1: return vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(v, 2), m3));
    case 2: return vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(v, 4), m3));
    default: return vreinterpretq_s8_u8(vshrq_n_u8(v, 6));
    }
}

/* A code layout row's parts (formats/abq.h): d[nb] float, sw[nb] and z[nb]
 * int16, then the groups' codes */
typedef struct {
    const uint8_t *d, *sw, *z, *qs;
} row_parts;

LB_ARM_INLINE row_parts parts_of(const void *row, int64_t nb) {
    const uint8_t *r = row;
    return (row_parts){r, r + 4 * nb, r + 6 * nb, r + 8 * nb};
}

LB_ARM_INLINE int get_i16(const uint8_t *v, int64_t i) {
    int16_t x;
    memcpy(&x, v + 2 * i, 2);
    return x;
}

/* The 4 rows' heads of group i, lanes = rows: sw, z, and d as doubles
 * (rows 0-1, 2-3; exact) */
typedef struct {
    int32x4_t sw, z;
    float64x2_t d01, d23;
} heads4;

LB_ARM_INLINE heads4 heads_of(const row_parts rp[4], int64_t i) {
    int32_t sw[4], z[4];
    float d[4];
    LB_ARM_UNROLL
    for (int r = 0; r < 4; r++) {
        sw[r] = get_i16(rp[r].sw, i), z[r] = get_i16(rp[r].z, i);
        memcpy(&d[r], rp[r].d + 4 * i, 4);
    }
    const float32x4_t df = vld1q_f32(d);
    return (heads4){vld1q_s32(sw), vld1q_s32(z), vcvt_f64_f32(vget_low_f32(df)), vcvt_high_f64_f32(df)};
}

/* RW weight rows n .. n + RW - 1 (RW <= 4) x RA activation rows m .. m + RA - 1
 * (RA <= 4); RW and RA are constants where this is inlined */
LB_ARM_INLINE LB_ARM_DOTPROD void tile(int w, int RW, int RA, int64_t nb, const uint8_t *W, size_t wrs, int n,
                                       const uint8_t *A, size_t ars, int m, float *Y, size_t ldy) {
    row_parts rp[4];
    const block_abq_act *act[4];
    for (int r = 0; r < 4; r++) rp[r] = parts_of(W + (size_t)(n + (r < RW ? r : 0)) * wrs, nb);
    for (int j = 0; j < 4; j++) act[j] = (const block_abq_act *)(A + (size_t)(m + (j < RA ? j : 0)) * ars);
    float64x2_t acc[4][2]; /* per activation row: weight rows 0-1, 2-3 */
    LB_ARM_UNROLL
    for (int j = 0; j < 4; j++) acc[j][0] = acc[j][1] = vdupq_n_f64(0.0);
    for (int64_t i = 0; i < nb; i++) {
        int32x4_t s[4][4];
        LB_ARM_UNROLL
        for (int r = 0; r < 4; r++)
            LB_ARM_UNROLL
            for (int j = 0; j < 4; j++) s[r][j] = vdupq_n_s32(0);
        LB_ARM_UNROLL
        for (int k = 0; k < 8; k++) {
            int8x16_t cw[4], ca[4];
            LB_ARM_UNROLL
            for (int r = 0; r < RW; r++) cw[r] = chunk_codes(w, rp[r].qs + (size_t)(16 * w) * (size_t)i, k);
            LB_ARM_UNROLL
            for (int j = 0; j < RA; j++) ca[j] = vld1q_s8(act[j][i].c + 16 * k);
            LB_ARM_UNROLL
            for (int r = 0; r < RW; r++)
                LB_ARM_UNROLL
                for (int j = 0; j < RA; j++) s[r][j] = vdotq_s32(s[r][j], cw[r], ca[j]);
        }
        const heads4 h = heads_of(rp, i); /* rows past RW: row 0's */
        LB_ARM_UNROLL
        for (int j = 0; j < RA; j++) {
            const block_abq_act *b = &act[j][i];
            const int32x4_t P = vpaddq_s32(vpaddq_s32(s[0][j], s[1][j]), vpaddq_s32(s[2][j], s[3][j]));
            const int32x4_t I = vmlsq_n_s32(vmlaq_n_s32(P, h.sw, 128 - b->z), h.z, b->sum - 128 * b->z);
            acc[j][0] = vaddq_f64(acc[j][0], vmulq_f64(h.d01, vcvtq_f64_s64(vmovl_s32(vget_low_s32(I)))));
            acc[j][1] = vaddq_f64(acc[j][1], vmulq_f64(h.d23, vcvtq_f64_s64(vmovl_high_s32(I))));
        }
    }
    LB_ARM_UNROLL
    for (int j = 0; j < RA; j++) {
        const float64x2_t da = vdupq_n_f64((double)act[j][0].d);
        double y[4];
        vst1q_f64(y, vmulq_f64(acc[j][0], da));
        vst1q_f64(y + 2, vmulq_f64(acc[j][1], da));
        for (int r = 0; r < RW; r++) Y[(size_t)(m + j) * ldy + (size_t)(n + r)] = nb ? (float)y[r] : 0.0f;
    }
}

/* the 16 tile shapes, each with its constants inlined */
#define TILE_RA(w, RW)                                                                                       \
    switch (ra) {                                                                                            \
    case 1: tile(w, RW, 1, nb, W, wrs, n, A, ars, m, Y, ldy); break;                                         \
    case 2: tile(w, RW, 2, nb, W, wrs, n, A, ars, m, Y, ldy); break;                                         \
    case 3: tile(w, RW, 3, nb, W, wrs, n, A, ars, m, Y, ldy); break;                                         \
    default: tile(w, RW, 4, nb, W, wrs, n, A, ars, m, Y, ldy); break;                                        \
    }

LB_ARM_INLINE LB_ARM_DOTPROD void gemm_dotprod(int w, int64_t K, const void *Wv, size_t wrs, int n0, int n1,
                                               const void *Av, size_t ars, int M, float *Y, size_t ldy) {
    const uint8_t *W = Wv, *A = Av;
    const int64_t nb = K / LB_ABQ_G;
    for (int n = n0; n < n1; n += 4) {
        const int rw = n1 - n < 4 ? n1 - n : 4;
        for (int m = 0; m < M; m += 4) {
            const int ra = M - m < 4 ? M - m : 4;
            switch (rw) {
            case 1: TILE_RA(w, 1) break;
            case 2: TILE_RA(w, 2) break;
            case 3: TILE_RA(w, 3) break;
            default: TILE_RA(w, 4) break;
            }
        }
    }
}
#undef TILE_RA

#endif
