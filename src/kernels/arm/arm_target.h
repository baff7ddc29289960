/* The Arm levels' per-function target attributes and the arm_neon.h that
 * declares their intrinsics (aarch64 only): shared by the hand-written Arm
 * kernels (arm_common.h) and the QIGen kernels generated for dotprod
 * (tools/qigen/qigen.c). */
#ifndef LB_ARM_TARGET_H
#define LB_ARM_TARGET_H

#if defined(__aarch64__)

/* clang 14's arm_neon.h declares the SDOT / SMMLA intrinsics only when the
 * whole translation unit targets them; these macros expose the declarations
 * while the instructions themselves stay confined to functions carrying the
 * matching target attribute (clang checks that per function). gcc declares
 * every intrinsic unconditionally. */
#if defined(__clang__) && !defined(__ARM_FEATURE_DOTPROD)
#define __ARM_FEATURE_DOTPROD 1
#endif
#if defined(__clang__) && !defined(__ARM_FEATURE_MATMUL_INT8)
#define __ARM_FEATURE_MATMUL_INT8 1
#endif
#include <arm_neon.h>

/* gcc and clang spell the feature strings differently */
#if defined(__clang__)
#define LB_ARM_DOTPROD __attribute__((target("dotprod")))
#define LB_ARM_I8MM __attribute__((target("dotprod,i8mm")))
#else
#define LB_ARM_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define LB_ARM_I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#endif

#endif /* __aarch64__ */
#endif
