/* The MX kernel with the i8mm extension (kernels/arm/mx_arm.h). SMMLA
 * (vmmlaq_s32) multiplies 2 activation rows x 8 bytes by 2 weight rows x 8
 * bytes into a 2x2 int32 tile [m0.n0, m0.n1, m1.n0, m1.n1].
 *
 * Weights: a qs vector holds 4 rows x 4 columns (lanes = rows); ZIP1 / ZIP2
 * by 32 bits pair two 4-column chunks of rows (4j, 4j + 1) and (4j + 2,
 * 4j + 3) into 8 columns: the 4-bit low and high nibbles (columns 8c ..
 * 8c + 7), the 2-bit tile's v << 1 and v >> 1, whose bits 1-2 and 5-6 are
 * twice the codes of columns 16h .. 16h + 7 and 16h + 8 .. 16h + 15.
 * Activations: each slot's block of 2 rows zipped by 64 bits; their sums
 * from SMMLA against -1 bytes, already in the tile's [m0, m0, m1, m1]
 * lanes, start the accumulators at the zero term (2-bit: -(code + 1) S,
 * then times c + z2: the GEMV's I; 4-bit: -z S). The per-row byte factors
 * go to the [n0, n1, n0, n1] lanes by a TBL.
 *
 * Tiles: 16 rows x 4 activation rows, the 16 float tiles of the tile row
 * in registers (gcc spills a few), a 2-bit tile one half at a time (its
 * activations, sums and scales in what registers those leave). The last
 * M % 4 rows go to the dotprod GEMV, which takes 2 rows per decode about
 * as fast as SMMLA takes 2 here (the zips cost what SMMLA saves). */
#include "kernels/arm/mx_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/mx_arm_impl.h"

#define MX_MM LB_ARM_INLINE LB_ARM_I8MM

enum { NP = 2 }; /* activation-row pairs per tile */

/* TBL indices taking bytes 2p, 2p + 1 to the low byte of lanes [2p, 2p + 1, 2p, 2p + 1] */
#define MX_PAIR(p) \
    {2 * (p), 255, 255, 255, 2 * (p) + 1, 255, 255, 255, 2 * (p), 255, 255, 255, 2 * (p) + 1, 255, 255, 255}
static const uint8_t mx_pair_idx[8][16] = {MX_PAIR(0), MX_PAIR(1), MX_PAIR(2), MX_PAIR(3),
                                           MX_PAIR(4), MX_PAIR(5), MX_PAIR(6), MX_PAIR(7)};
#undef MX_PAIR

LB_ARM_INLINE uint8x16_t mx_zip32(uint8x16_t a, uint8x16_t b, int hi) {
    const uint32x4_t x = vreinterpretq_u32_u8(a), y = vreinterpretq_u32_u8(b);
    return vreinterpretq_u8_u32(hi ? vzip2q_u32(x, y) : vzip1q_u32(x, y));
}
LB_ARM_INLINE int8x16_t mx_zip64(int8x16_t a, int8x16_t b, int hi) {
    const int64x2_t x = vreinterpretq_s64_s8(a), y = vreinterpretq_s64_s8(b);
    return vreinterpretq_s8_s64(hi ? vzip2q_s64(x, y) : vzip1q_s64(x, y));
}
/* lanes [2wp, 2wp + 1] of v, twice */
LB_ARM_INLINE float32x4_t mx_fpair(float32x4_t v, int wp) {
    const float64x2_t x = vreinterpretq_f64_f32(v);
    return vreinterpretq_f32_f64(wp ? vdupq_laneq_f64(x, 1) : vdupq_laneq_f64(x, 0));
}

MX_MM int32x4_t mx_mm(int32x4_t acc, int8x16_t a, uint8x16_t w) { return vmmlaq_s32(acc, a, vreinterpretq_s8_u8(w)); }

/* Values 16h .. 16h + 15 of activation rows m0, m1 zipped: z[u] = values 16h + 8u .. + 7 of m0 | of m1. */
MX_MM void mx_half_pair(const block_q8_0 *a0, const block_q8_0 *a1, int h, int8x16_t z[2]) {
    const int8x16_t r0 = vld1q_s8(a0->qs + 16 * h), r1 = vld1q_s8(a1->qs + 16 * h);
    z[0] = mx_zip64(r0, r1, 0);
    z[1] = mx_zip64(r0, r1, 1);
}

/* [d_m0, d_m0, d_m1, d_m1] */
LB_ARM_INLINE float32x4_t mx_pair_d(const block_q8_0 *a0, const block_q8_0 *a1) {
    uint16x4_t h = vld1_dup_u16(&a0->d);
    h = vld1_lane_u16(&a1->d, h, 1);
    const float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vzip1q_f32(d, d);
}

/* acc - the sums of z's values, as [m0, m0, m1, m1] */
MX_MM int32x4_t mx_pair_negsum(int32x4_t acc, const int8x16_t z[2]) {
    const uint8x16_t m1 = vdupq_n_u8(0xFF);
    return mx_mm(mx_mm(acc, z[0], m1), z[1], m1);
}

/* f[P][p] (rows 2p, 2p + 1 x activation rows 2P, 2P + 1) += 2-bit tile b . blocks a[2P], a[2P + 1];
 * idx: mx_pair_idx */
MX_MM void mm2_tile(const block_mx2 *b, const block_q8_0 *const *a, const uint8_t *idx, float32x4_t (*f)[8]) {
    mx2_scales sc;
    mx2_scales_of(b, &sc);
    const uint8x16_t zc[2] = {vaddq_u8(sc.code[0], vdupq_n_u8(1)), vaddq_u8(sc.code[1], vdupq_n_u8(1))};
    float32x4_t d[NP];
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) d[P] = mx_pair_d(a[2 * P], a[2 * P + 1]);
    const uint8x16_t m6 = vdupq_n_u8(6);
    LB_ARM_UNROLL
    for (int h = 0; h < 2; h++) {
        int8x16_t az[NP][2];
        int32x4_t ns[NP]; /* -S */
        float32x4_t k[NP];
        LB_ARM_UNROLL
        for (int P = 0; P < NP; P++) {
            mx_half_pair(a[2 * P], a[2 * P + 1], h, az[P]);
            ns[P] = mx_pair_negsum(vdupq_n_s32(0), az[P]);
            k[P] = h ? vmulq_laneq_f32(d[P], sc.s2, 1) : vmulq_laneq_f32(d[P], sc.s2, 0);
        }
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) {
            const uint8x16_t v = vld1q_u8(b->qs + 64 * h + 16 * j), v1 = vshlq_n_u8(v, 1), v2 = vshrq_n_u8(v, 1);
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++) {
                const int p = 2 * j + wp;
                const uint8x16_t x = mx_zip32(v1, v2, wp); /* rows 4j + 2wp, + 1 */
                const uint8x16_t lo = vandq_u8(x, m6), hi = vandq_u8(vshrq_n_u8(x, 4), m6); /* 2q */
                const int32x4_t cz = mx_widen(sc.cz[h], idx + 16 * p), zcp = mx_widen(zc[h], idx + 16 * p);
                LB_ARM_UNROLL
                for (int P = 0; P < NP; P++) {
                    const int32x4_t S = mx_mm(mx_mm(vmulq_s32(zcp, ns[P]), az[P][0], lo), az[P][1], hi);
                    f[P][p] = vfmaq_f32(f[P][p], vcvtq_f32_s32(vmulq_s32(S, cz)), k[P]);
                }
            }
        }
    }
}

/* the same for a 4-bit tile */
MX_MM void mm4_tile(const block_mx4 *b, const block_q8_0 *const *a, const uint8_t *idx, float32x4_t (*f)[8]) {
    const uint8x16_t z = mx4_zeros(b), m15 = vdupq_n_u8(15);
    int8x16_t az[NP][4];
    int32x4_t ns[NP];
    float32x4_t d[NP];
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++) {
        mx_half_pair(a[2 * P], a[2 * P + 1], 0, az[P]);
        mx_half_pair(a[2 * P], a[2 * P + 1], 1, az[P] + 2);
        ns[P] = mx_pair_negsum(mx_pair_negsum(vdupq_n_s32(0), az[P]), az[P] + 2);
        d[P] = mx_pair_d(a[2 * P], a[2 * P + 1]);
    }
    LB_ARM_UNROLL
    for (int j = 0; j < 4; j++) {
        const float32x4_t s = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(b->s + 4 * j)));
        int32x4_t S[NP][2]; /* [P][wp] */
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++) {
            const int32x4_t Z = mx_widen(z, idx + 16 * (2 * j + wp));
            LB_ARM_UNROLL
            for (int P = 0; P < NP; P++) S[P][wp] = vmulq_s32(Z, ns[P]);
        }
        LB_ARM_UNROLL
        for (int c = 0; c < 4; c++) {
            const uint8x16_t v = vld1q_u8(b->qs + 64 * c + 16 * j);
            const uint8x16_t lo = vandq_u8(v, m15), hi = vshrq_n_u8(v, 4);
            LB_ARM_UNROLL
            for (int wp = 0; wp < 2; wp++) {
                const uint8x16_t w = mx_zip32(lo, hi, wp); /* columns 8c .. 8c + 7 */
                LB_ARM_UNROLL
                for (int P = 0; P < NP; P++) S[P][wp] = mx_mm(S[P][wp], az[P][c], w);
            }
        }
        LB_ARM_UNROLL
        for (int wp = 0; wp < 2; wp++) {
            const float32x4_t sp = mx_fpair(s, wp);
            LB_ARM_UNROLL
            for (int P = 0; P < NP; P++)
                f[P][2 * j + wp] = vfmaq_f32(f[P][2 * j + wp], vcvtq_f32_s32(S[P][wp]), vmulq_f32(sp, d[P]));
        }
    }
}

/* Tile row t x 2 NP activation rows (A: the first, ars apart; Y: row m at Y + m ldy). */
MX_MM void mm_rows(const lb_mx_view *v, int64_t t, const uint8_t *A, size_t ars, float *Y, size_t ldy) {
    float32x4_t f[NP][8];
    const block_q8_0 *a[2 * NP];
    const uint8_t *idx = &mx_pair_idx[0][0];
    __asm__ volatile("" : "+r"(idx)); /* one base register (gcc rebuilt each address: ADRP + LDR) */
    LB_ARM_UNROLL
    for (int m = 0; m < 2 * NP; m++) a[m] = (const block_q8_0 *)(A + (size_t)m * ars);
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++)
        LB_ARM_UNROLL
        for (int p = 0; p < 8; p++) f[P][p] = vdupq_n_f32(0.0f);
    const block_mx2 *lo = v->lo + t * v->n_lo;
    for (int64_t l = 0; l < v->n_lo; l++) {
        const block_q8_0 *ab[2 * NP];
        LB_ARM_UNROLL
        for (int m = 0; m < 2 * NP; m++) ab[m] = a[m] + v->lo_group[l];
        mm2_tile(lo + l, ab, idx, f);
    }
    const block_mx4 *hi = v->hi + t * v->n_hi;
    for (int64_t l = 0; l < v->n_hi; l++) {
        const block_q8_0 *ab[2 * NP];
        LB_ARM_UNROLL
        for (int m = 0; m < 2 * NP; m++) ab[m] = a[m] + v->hi_group[l];
        mm4_tile(hi + l, ab, idx, f);
    }
    LB_ARM_UNROLL
    for (int P = 0; P < NP; P++)
        LB_ARM_UNROLL
        for (int p = 0; p < 8; p++) {
            vst1_f32(Y + (size_t)(2 * P) * ldy + 2 * p, vget_low_f32(f[P][p]));
            vst1_f32(Y + (size_t)(2 * P + 1) * ldy + 2 * p, vget_high_f32(f[P][p]));
        }
    mx_outliers(v, (int)(LB_MX_ROWS * t), 2 * NP, A, ars, Y, ldy);
}

LB_ARM_I8MM void lb_gemv_mx_q8_0_i8mm(LB_ARM_GEMM_ARGS) {
    const lb_mx_view *v = W;
    const uint8_t *a = A;
    for (int n = n0; n < n1; n += LB_MX_ROWS) {
        const int64_t t = n / LB_MX_ROWS;
        int m = 0;
        for (; m + 2 * NP <= M; m += 2 * NP)
            mm_rows(v, t, a + (size_t)m * a_row_size, a_row_size, Y + (size_t)m * ldy + n, ldy);
        if (m < M)
            lb_gemv_mx_q8_0_dotprod(K, W, w_row_size, n, n + LB_MX_ROWS, a + (size_t)m * a_row_size, a_row_size, M - m,
                                    Y + (size_t)m * ldy, ldy);
    }
}

#endif
