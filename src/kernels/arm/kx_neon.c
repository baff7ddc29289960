/* The GEMV of the 16-row layouts with ASIMD only (kernels/arm/kx_arm.h;
 * Cortex-A53/A72 ...): kx_arm_impl.h with the by-lane SDOT emulated. The
 * activation dword is broadcast (DUP, shared by the quarters), SMLAL /
 * SMLAL2 add the products of rows 0-1 / 2-3 into int16 lanes (one lane per
 * row and byte position), and the int16 sums widen once per sub-block (two
 * SADDLP and an ADDP), or every two products for IQ4_XS, whose |w a| reaches
 * 127 * 127 (KX_WIDEN: SADALP into 32-bit sums). The other types stay below
 * 2^15 over a whole sub-block: 8 products of u <= 31 (Q5_K, Q4_1, Q5_x),
 * 4 of u <= 63 (Q6_K, 4 * 63 * 127 = 32004). Tiles: 2 quarters x 1 row or
 * 1 x 2 (the int16 sums take twice the registers); Q4_K and Q4_1, with the
 * cheapest decode, 4 x 1 or 2 x 2 (the DUP then serves 4 quarters). */
#include "kernels/arm/kx_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/kx_arm_decode.h"

typedef struct {
    int16x8_t l, h;   /* rows 0-1, 2-3: one lane per row and byte of the dword */
    int32x4_t wl, wh; /* widened sums, lanes [r0 r0 r1 r1], [r2 r2 r3 r3] */
} kx_acc;

LB_ARM_INLINE void kx_dot_neon(kx_acc *s, int8x16_t w, int8x16_t a, int lane) {
    const int8x16_t ad = kx_dup32(a, lane);
    s->l = vmlal_s8(s->l, vget_low_s8(w), vget_low_s8(ad));
    s->h = vmlal_high_s8(s->h, w, ad);
}

LB_ARM_INLINE int32x4_t kx_dotl_neon(int32x4_t acc, int8x16_t w, int8x16_t a, int lane) {
    const int8x16_t ad = kx_dup32(a, lane);
    const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(ad)), hi = vmull_high_s8(w, ad);
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
}

#define KX_ZERO(s) ((s).l = (s).h = vdupq_n_s16(0), (s).wl = (s).wh = vdupq_n_s32(0))
#define KX_DOT(s, w, a, lane) kx_dot_neon(&(s), (w), (a), (lane))
#define KX_WIDEN(s) \
    ((s).wl = vpadalq_s16((s).wl, (s).l), (s).wh = vpadalq_s16((s).wh, (s).h), (s).l = (s).h = vdupq_n_s16(0))
#define KX_I32(s) vpaddq_s32(vaddq_s32((s).wl, vpaddlq_s16((s).l)), vaddq_s32((s).wh, vpaddlq_s16((s).h)))
#define KX_DOTL(acc, w, a, lane) kx_dotl_neon((acc), (w), (a), (lane))

#define LB_KX_FN(name) name##_neon
#define LB_KX_TARGET
#define LB_KX_QN 2
#define LB_KX_QN_NIB 4
#include "kernels/arm/kx_arm_impl.h"

#endif
