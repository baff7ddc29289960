/* The int8 kernels of arm_int8_impl.h with the dotprod extension (SDOT,
 * Armv8.2+: Cortex-A76/A55, Neoverse N1 and later): one instruction adds four
 * int8 products into each 32-bit lane; the by-lane form broadcasts four
 * activation bytes to every lane (vdotq_laneq_s32), which is what lets the
 * 4x4 interleaved layout accumulate four output rows per register. */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/arm_common.h"

#define LB_ARM_FN(name) name##_dotprod
#define LB_ARM_TARGET LB_ARM_DOTPROD
#define LB_ARM_SDOT(acc, w, a) vdotq_s32(acc, w, a)
#define LB_ARM_SDOT_LANE(acc, w, a, l) vdotq_laneq_s32(acc, w, a, l)
#define LB_ARM_C4_GROUPS 2
#include "kernels/arm/arm_int8_impl.h"

#endif
