/* Q2_K / CB2 / CB3 vec_dot with ASIMD only (every aarch64 CPU, e.g.
 * Cortex-A53/A72): the template of arm_kq_impl.h with the 16-byte dot done
 * by SMULL + SMLAL2 (int16 lanes of two products each, |.| <= 2 * 64 * 128)
 * and SADDLP: two instructions more per 16 weights than SDOT. */
#include "kernels/arm/arm_kernels.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/arm_kq_decode.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* the reference's float steps, unfused (gcc: off in ISO C mode) */
#endif

#define LB_KQ_FN(name) name##_neon
#define LB_KQ_TARGET
#define LB_KQ_DOT16(w, a) vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(a)), w, a))
#include "kernels/arm/arm_kq_impl.h"

#endif
