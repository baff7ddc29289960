/* Shared pieces of the Arm kernels (arm_*.c, aarch64 only): per-function
 * target attributes, the weight decoders and small NEON helpers.
 *
 * Each ISA level is compiled from the same source into its own functions:
 * the baseline is plain ASIMD (every aarch64 CPU); dotprod (SDOT) and i8mm
 * (SMMLA) functions carry a target attribute, so the library runs on any
 * aarch64 CPU and kernels/cpu.c picks the level at run time. */
#ifndef LB_ARM_COMMON_H
#define LB_ARM_COMMON_H

#if defined(__aarch64__)

#include "kernels/arm/arm_target.h" /* arm_neon.h, LB_ARM_DOTPROD, LB_ARM_I8MM */

/* gcc's first instruction scheduling pass hoists the weight loads of a whole
 * unrolled register tile and then spills accumulators to the stack (gcc 12:
 * 6 of the 8 fp32 accumulators of the i8mm tile, every block); without it
 * the dotprod and i8mm kernels allocate with no spills, as clang does. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif

#include "formats/kquants.h"
#include "formats/mxfp4.h"
#include "formats/repack.h"

#define LB_ARM_INLINE static inline __attribute__((always_inline))
/* Small fixed loops over registers must unroll completely, or arrays of
 * vectors end up on the stack (gcc keeps rolled loops at -O2). */
#define LB_ARM_UNROLL _Pragma("GCC unroll 16")

/* Weight formats the int8 kernels share code for. */
enum { LB_ARM_Q4_0, LB_ARM_IQ4_NL, LB_ARM_Q8_0, LB_ARM_MXFP4_NL /* IQ4_NL's blocks, MXFP4's table */ };

/* Four fp16 scales -> fp32 (exact). */
LB_ARM_INLINE float32x4_t lb_arm_fp16x4(const lb_fp16 *p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* The IQ4_NL codebook, one register: vqtbl1q_s8 decodes 16 indices at once. */
LB_ARM_INLINE int8x16_t lb_arm_iq4nl_table(void) { return vld1q_s8(lb_kvalues_iq4nl); }
/* The codebook of a kind that has one (IQ4_NL, MXFP4_NL); unused by the others. */
LB_ARM_INLINE int8x16_t lb_arm_table(int kind) {
    return vld1q_s8(kind == LB_ARM_MXFP4_NL ? lb_kvalues_mxfp4 : lb_kvalues_iq4nl);
}

/* 16 bytes of an x-block's qs at `off` -> the two int8 weight vectors they
 * hold: `first` multiplies activation values 0..15 of the block, `second`
 * values 16..31 (same lanes, 16 weights later).
 *   Q4_0 (top nibble bits toggled at repack): low nibble << 4 and
 *        high nibble & 0xF0 give 16 * (q - 8), the 1/16 goes into the scale;
 *   IQ4_NL, MXFP4_NL: both nibbles through the codebook;
 *   Q8_0: the bytes themselves; the second half of a row lies 16*R bytes on. */
LB_ARM_INLINE void lb_arm_weights(int kind, const uint8_t *qs, int off, int rows, int8x16_t codebook,
                                  int8x16_t *first, int8x16_t *second) {
    if (kind == LB_ARM_Q8_0) {
        *first = vld1q_s8((const int8_t *)qs + off);
        *second = vld1q_s8((const int8_t *)qs + off + 16 * rows);
        return;
    }
    const uint8x16_t raw = vld1q_u8(qs + off);
    if (kind == LB_ARM_Q4_0) {
        *first = vreinterpretq_s8_u8(vshlq_n_u8(raw, 4));
        *second = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0xF0)));
    } else {
        *first = vqtbl1q_s8(codebook, vandq_u8(raw, vdupq_n_u8(0x0F)));
        *second = vqtbl1q_s8(codebook, vshrq_n_u8(raw, 4));
    }
}

/* The activation scale as the kernels use it: Q4_0 weights come out x16, so
 * its 1/16 is folded in here, once per block. (da / 16) * dw rounds exactly
 * like the reference's (dw * da) / 16: scaling by a power of two commutes
 * with rounding while nothing is subnormal, and a product of two fp16
 * magnitudes is above 2^-48. */
LB_ARM_INLINE float32x4_t lb_arm_act_scale(int kind, float32x4_t da) {
    return kind == LB_ARM_Q4_0 ? vmulq_n_f32(da, 0.0625f) : da;
}

/* sum += isum * scale, unfused like the scalar references (which keep the
 * blocks in the same order), so per-output results match them bit for bit. */
LB_ARM_INLINE float32x4_t lb_arm_acc(float32x4_t sum, int32x4_t isum, float32x4_t scale) {
    return vaddq_f32(sum, vmulq_f32(vcvtq_f32_s32(isum), scale));
}

/* 8 bytes loaded into both halves of a vector. */
LB_ARM_INLINE int8x16_t lb_arm_dup8(const int8_t *p) {
    const int8x8_t v = vld1_s8(p);
    return vcombine_s8(v, v);
}

/* SDOT without the dotprod extension: lane i of the result adds the
 * products of bytes 4i..4i+3 of w and a. Exact for all int8 inputs
 * (|products| <= 2^14 fit int16, pairs are widened before they add up). */
LB_ARM_INLINE int32x4_t lb_arm_sdot_neon(int32x4_t acc, int8x16_t w, int8x16_t a) {
    const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(a));
    const int16x8_t hi = vmull_high_s8(w, a);
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
}

#endif /* __aarch64__ */
#endif
