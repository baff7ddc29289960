/* Q2_K / CB2 / CB3 vec_dot with the dotprod extension (SDOT, Armv8.2+:
 * Cortex-A55/A76, Neoverse N1 and later): the template of arm_kq_impl.h,
 * one SDOT per 16 weights. Also the i8mm level's vec_dot (one activation
 * row) and its GEMM's odd rows. */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/arm_kq_decode.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* the reference's float steps, unfused (gcc: off in ISO C mode) */
#endif

#define LB_KQ_FN(name) name##_dotprod
#define LB_KQ_TARGET LB_ARM_DOTPROD
#define LB_KQ_DOT16(w, a) vdotq_s32(vdupq_n_s32(0), w, a)
#include "kernels/arm/arm_kq_impl.h"

#endif
