/* The MX GEMV with ASIMD only (kernels/arm/mx_arm.h; Cortex-A53/A72 ...):
 * mx_arm_impl.h with the by-lane SDOT emulated as in kx_neon.c. The
 * activation dword is broadcast (DUP, shared by the 4 row quarters), SMLAL /
 * SMLAL2 add the products of rows 0-1 / 2-3 into int16 lanes (one per row
 * and byte position), and the sums widen once per 4 rows: ADDP of the two
 * (int16, a row's byte positions in pairs), SADALP onto the int32 start.
 * int16 holds them: a 2-bit half adds 4 products of q <= 3 per lane, a
 * 4-bit row quarter 8 of q <= 15, 2 * 8 * 15 * 127 = 30480 after ADDP.
 * Two activation rows per decoded tile: a row alone takes 22 % more
 * instructions in 2-bit tiles, 5 % in 4-bit ones (where the second row's
 * broadcast activations spill a few registers). */
#include "kernels/arm/mx_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/mx_arm_impl.h"

typedef struct {
    int16x8_t l, h; /* rows 0-1, 2-3: one lane per row and byte of the dword */
    int32x4_t v;    /* the start */
    int from_v;     /* a constant once inlined: 0 spares adding a zero start */
} mx_acc;

LB_ARM_INLINE int8x16_t mx_dup32(int8x16_t a, int lane) {
    const int32x4_t v = vreinterpretq_s32_s8(a);
    switch (lane) {
    case 0: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 0));
    case 1: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 1));
    case 2: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 2));
    default: return vreinterpretq_s8_s32(vdupq_laneq_s32(v, 3));
    }
}

LB_ARM_INLINE void mx_dot_neon(mx_acc *s, int8x16_t w, int8x16_t a, int lane) {
    const int8x16_t ad = mx_dup32(a, lane);
    s->l = vmlal_s8(s->l, vget_low_s8(w), vget_low_s8(ad));
    s->h = vmlal_high_s8(s->h, w, ad);
}

#define MX_START(s, v0) ((s).l = (s).h = vdupq_n_s16(0), (s).v = (v0), (s).from_v = 1)
#define MX_ZERO(s) ((s).l = (s).h = vdupq_n_s16(0), (s).v = vdupq_n_s32(0), (s).from_v = 0)
#define MX_DOT(s, w, a, lane) mx_dot_neon(&(s), (w), (a), (lane))
#define MX_I32(s) \
    ((s).from_v ? vpadalq_s16((s).v, vpaddq_s16((s).l, (s).h)) : vpaddlq_s16(vpaddq_s16((s).l, (s).h)))

#define MX_FN(name) name##_neon
#define MX_TARGET
#define MX_NA 2
#include "kernels/arm/mx_arm_impl.h"

#endif
