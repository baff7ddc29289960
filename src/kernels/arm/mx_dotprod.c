/* The MX GEMV with the dotprod extension (kernels/arm/mx_arm.h):
 * mx_arm_impl.h with SDOT by lane, one instruction per 4 rows x 4 weights;
 * two activation rows share each decoded tile. Also the i8mm level's GEMV
 * for the last M % 4 activation rows. */
#include "kernels/arm/mx_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/mx_arm_impl.h"

LB_ARM_INLINE LB_ARM_DOTPROD int32x4_t mx_sdot_lane(int32x4_t acc, int8x16_t w, int8x16_t a, int lane) {
    switch (lane) {
    case 0: return vdotq_laneq_s32(acc, w, a, 0);
    case 1: return vdotq_laneq_s32(acc, w, a, 1);
    case 2: return vdotq_laneq_s32(acc, w, a, 2);
    default: return vdotq_laneq_s32(acc, w, a, 3);
    }
}

typedef int32x4_t mx_acc;
#define MX_ZERO(s) ((s) = vdupq_n_s32(0))
#define MX_START(s, v) ((s) = (v))
#define MX_DOT(s, w, a, lane) ((s) = mx_sdot_lane((s), (w), (a), (lane)))
#define MX_I32(s) (s)

#define MX_FN(name) name##_dotprod
#define MX_TARGET LB_ARM_DOTPROD
#define MX_NA 2
#include "kernels/arm/mx_arm_impl.h"

#endif
