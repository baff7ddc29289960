/* Arm kernels that need only ASIMD (every aarch64 CPU): float dot products,
 * the Q8_0 activation quantizers, and the int8 kernels of arm_int8_impl.h
 * with SDOT emulated by widening multiplies (for CPUs without dotprod,
 * e.g. Cortex-A53/A72). */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include <string.h>

#include "kernels/arm/arm_common.h"

/* ---------------- Q8_0_4X4 -> Q8_0_4X8 (kernels/arm/arm_kernels.h) ---------------- */

void lb_pack_q8_0x4_c4_to_c8_neon(const void *src, size_t row_size, int rows, int64_t K, void *dst) {
    const size_t xs = sizeof(lb_block_q8_0x4);
    for (int g = 0; g < rows / 4; g++)
        for (int64_t b = 0; b < K / 32; b++) {
            const uint8_t *s = (const uint8_t *)src + (size_t)g * 4 * row_size + (size_t)b * xs;
            uint8_t *o = (uint8_t *)dst + (size_t)g * 4 * row_size + (size_t)b * xs;
            memcpy(o, s, 8); /* the 4 rows' fp16 d */
            /* 32 bytes = chunks 2j, 2j + 1 of rows 0..3 (4 bytes each) -> chunk j of rows 0..3 (8 bytes each) */
            for (int j = 0; j < 4; j++) {
                const uint32x4_t c0 = vreinterpretq_u32_u8(vld1q_u8(s + 8 + 32 * j));
                const uint32x4_t c1 = vreinterpretq_u32_u8(vld1q_u8(s + 24 + 32 * j));
                vst1q_u8(o + 8 + 32 * j, vreinterpretq_u8_u32(vzip1q_u32(c0, c1)));
                vst1q_u8(o + 24 + 32 * j, vreinterpretq_u8_u32(vzip2q_u32(c0, c1)));
            }
        }
}

/* ---------------- float rows (activations stay fp32) ---------------- */

void lb_vec_dot_f32_neon(int64_t n, float *s, const void *vw, const void *va) {
    const float *w = vw, *a = va;
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        LB_ARM_UNROLL
        for (int j = 0; j < 4; j++) acc[j] = vfmaq_f32(acc[j], vld1q_f32(w + i + 4 * j), vld1q_f32(a + i + 4 * j));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; i++) sum += w[i] * a[i];
    *s = sum;
}

void lb_vec_dot_f16_neon(int64_t n, float *s, const void *vw, const void *va) {
    const lb_fp16 *w = vw;
    const float *a = va;
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const float16x8_t h0 = vreinterpretq_f16_u16(vld1q_u16(w + i));
        const float16x8_t h1 = vreinterpretq_f16_u16(vld1q_u16(w + i + 8));
        acc[0] = vfmaq_f32(acc[0], vcvt_f32_f16(vget_low_f16(h0)), vld1q_f32(a + i));
        acc[1] = vfmaq_f32(acc[1], vcvt_high_f32_f16(h0), vld1q_f32(a + i + 4));
        acc[2] = vfmaq_f32(acc[2], vcvt_f32_f16(vget_low_f16(h1)), vld1q_f32(a + i + 8));
        acc[3] = vfmaq_f32(acc[3], vcvt_high_f32_f16(h1), vld1q_f32(a + i + 12));
    }
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; i++) sum += lb_fp16_to_f32(w[i]) * a[i];
    *s = sum;
}

void lb_vec_dot_bf16_neon(int64_t n, float *s, const void *vw, const void *va) {
    const lb_bf16 *w = vw;
    const float *a = va;
    float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) { /* bf16 -> fp32 is a 16-bit left shift */
        const uint16x8_t x = vld1q_u16(w + i);
        acc[0] = vfmaq_f32(acc[0], vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(x), 16)), vld1q_f32(a + i));
        acc[1] = vfmaq_f32(acc[1], vreinterpretq_f32_u32(vshll_high_n_u16(x, 16)), vld1q_f32(a + i + 4));
    }
    float sum = vaddvq_f32(vaddq_f32(acc[0], acc[1]));
    for (; i < n; i++) sum += lb_bf16_to_f32(w[i]) * a[i];
    *s = sum;
}

/* ---------------- Q8_0 activation quantizers ---------------- */

/* One block of 32, bit-identical to lb_quantize_row_q8_0_ref: the same amax
 * (max is exact; maxnm ignores NaN like fmaxf), the same scalar d and 1/d,
 * and FCVTAS rounds to nearest with ties away from zero, as roundf does. */
static inline lb_fp16 quantize_block_q8_0(const float *x, int8x16_t *q0, int8x16_t *q1) {
    float32x4_t v[8];
    LB_ARM_UNROLL
    for (int i = 0; i < 8; i++) v[i] = vld1q_f32(x + 4 * i);
    float32x4_t mx = vabsq_f32(v[0]);
    for (int i = 1; i < 8; i++) mx = vmaxnmq_f32(mx, vabsq_f32(v[i]));
    const float amax = vmaxnmvq_f32(mx);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int16x8_t h[4];
    LB_ARM_UNROLL
    for (int i = 0; i < 4; i++)
        h[i] = vcombine_s16(vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[2 * i], id))),
                            vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[2 * i + 1], id))));
    *q0 = vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1]));
    *q1 = vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3]));
    return lb_f32_to_fp16(d);
}

void lb_quantize_row_q8_0_neon(const float *x, void *vy, int64_t k) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        int8x16_t q0, q1;
        y[b].d = quantize_block_q8_0(x + b * QK8_0, &q0, &q1);
        vst1q_s8(y[b].qs, q0);
        vst1q_s8(y[b].qs + 16, q1);
    }
}

/* Four rows at once into lb_block_q8_0x4a (formats/repack.h), bit-identical to
 * lb_quantize_q8_0x4_c{4,8}_ref: each row quantized as above, then the rows'
 * chunks interleaved in registers (a 4x4 transpose of 32-bit chunks, or a
 * zip of 64-bit chunks). */
static inline void quantize_x4(const float *x, size_t ldx, void *vy, int64_t k, int chunk) {
    lb_block_q8_0x4a *y = vy;
    for (int64_t b = 0; b < k / 32; b++) {
        int8x16_t q[4][2];
        LB_ARM_UNROLL
        for (int m = 0; m < 4; m++) {
            const lb_fp16 d = quantize_block_q8_0(x + (size_t)m * ldx + b * 32, &q[m][0], &q[m][1]);
            y[b].d[m] = lb_fp16_to_f32(d);
            y[b].s8[m] = 8 * (vaddlvq_s8(q[m][0]) + vaddlvq_s8(q[m][1]));
        }
        int8_t *out = y[b].qs;
        LB_ARM_UNROLL
        for (int h = 0; h < 2; h++) { /* values 0..15, then 16..31 */
            if (chunk == 4) {
                const int32x4_t r0 = vreinterpretq_s32_s8(q[0][h]), r1 = vreinterpretq_s32_s8(q[1][h]);
                const int32x4_t r2 = vreinterpretq_s32_s8(q[2][h]), r3 = vreinterpretq_s32_s8(q[3][h]);
                const int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(r0, r1));
                const int64x2_t t1 = vreinterpretq_s64_s32(vtrn2q_s32(r0, r1));
                const int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(r2, r3));
                const int64x2_t t3 = vreinterpretq_s64_s32(vtrn2q_s32(r2, r3));
                vst1q_s8(out + 64 * h + 0, vreinterpretq_s8_s64(vtrn1q_s64(t0, t2)));
                vst1q_s8(out + 64 * h + 16, vreinterpretq_s8_s64(vtrn1q_s64(t1, t3)));
                vst1q_s8(out + 64 * h + 32, vreinterpretq_s8_s64(vtrn2q_s64(t0, t2)));
                vst1q_s8(out + 64 * h + 48, vreinterpretq_s8_s64(vtrn2q_s64(t1, t3)));
            } else {
                const int64x2_t r0 = vreinterpretq_s64_s8(q[0][h]), r1 = vreinterpretq_s64_s8(q[1][h]);
                const int64x2_t r2 = vreinterpretq_s64_s8(q[2][h]), r3 = vreinterpretq_s64_s8(q[3][h]);
                vst1q_s8(out + 64 * h + 0, vreinterpretq_s8_s64(vzip1q_s64(r0, r1)));
                vst1q_s8(out + 64 * h + 16, vreinterpretq_s8_s64(vzip1q_s64(r2, r3)));
                vst1q_s8(out + 64 * h + 32, vreinterpretq_s8_s64(vzip2q_s64(r0, r1)));
                vst1q_s8(out + 64 * h + 48, vreinterpretq_s8_s64(vzip2q_s64(r2, r3)));
            }
        }
    }
}

void lb_quantize_q8_0x4_c4_neon(const float *x, size_t ldx, void *y, int64_t k) { quantize_x4(x, ldx, y, k, 4); }
void lb_quantize_q8_0x4_c8_neon(const float *x, size_t ldx, void *y, int64_t k) { quantize_x4(x, ldx, y, k, 8); }

/* ---------------- int8 kernels, SDOT emulated ---------------- */

#define LB_ARM_FN(name) name##_neon
#define LB_ARM_TARGET
#define LB_ARM_SDOT(acc, w, a) lb_arm_sdot_neon(acc, w, a)
#define LB_ARM_SDOT_LANE(acc, w, a, l) \
    lb_arm_sdot_neon(acc, w, vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), l)))
#define LB_ARM_C4_GROUPS 1
#include "kernels/arm/arm_int8_impl.h"

#endif
