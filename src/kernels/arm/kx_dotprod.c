/* The GEMV of the 16-row layouts with the dotprod extension (kernels/arm/
 * kx_arm.h): kx_arm_impl.h with SDOT by lane, one instruction per 4 rows x
 * 4 weights; tiles of 4 quarters x 1 activation row or 2 x 2. Also the
 * i8mm level's GEMV (a last odd activation row). */
#include "kernels/arm/kx_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/kx_arm_decode.h"

LB_ARM_INLINE LB_ARM_DOTPROD int32x4_t kx_sdot_lane(int32x4_t acc, int8x16_t w, int8x16_t a, int lane) {
    switch (lane) {
    case 0: return vdotq_laneq_s32(acc, w, a, 0);
    case 1: return vdotq_laneq_s32(acc, w, a, 1);
    case 2: return vdotq_laneq_s32(acc, w, a, 2);
    default: return vdotq_laneq_s32(acc, w, a, 3);
    }
}

typedef int32x4_t kx_acc;
#define KX_ZERO(s) ((s) = vdupq_n_s32(0))
#define KX_DOT(s, w, a, lane) ((s) = kx_sdot_lane((s), (w), (a), (lane)))
#define KX_WIDEN(s) ((void)0)
#define KX_I32(s) (s)
#define KX_DOTL(acc, w, a, lane) kx_sdot_lane((acc), (w), (a), (lane))

#define LB_KX_FN(name) name##_dotprod
#define LB_KX_TARGET LB_ARM_DOTPROD
#define LB_KX_QN 4
#define LB_KX_QN_NIB 4
#include "kernels/arm/kx_arm_impl.h"

#endif
