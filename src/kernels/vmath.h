/* The float computations of the forward pass's element-wise ops and
 * attention that every ISA level performs identically, so the scalar, AVX2
 * and AVX-512 levels give bit-identical results. This matters beyond
 * neatness: activations are quantized to int8 before each matmul, and a
 * 1-ulp difference occasionally flips a rounding there, which moves logits
 * by far more than the end-to-end tests (test_repack_model) allow.
 *  - exp: Cephes' expf polynomial (degree 6 on [-ln2/2, ln2/2]), with the
 *    vector code's fused steps written as fmaf; within ~1.5 ulp of expf.
 *    Inputs below -87.3 give exactly 0 (also -inf, NaN); above 88, exp(88).
 *  - sums: 16 lanes, lane i takes elements i, i + 16, i + 32, ... in order;
 *    then the lanes are added as (i, i+8), (i, i+4), (i, i+2), (i, i+1).
 *  - silu(x) = x / (1 + exp(-x)); gelu_tanh(x) = 0.5 x (1 + tanh(u)) computed
 *    as x / (1 + exp(-2u)), which has no cancellation for x << 0 (within
 *    1e-6 relative, or 1e-8 absolute where the output is tiny).
 * kernels/vmath_x86.h has the 8- and 16-lane versions of exp. */
#ifndef LB_VMATH_H
#define LB_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* unfused, as written (gcc: off in ISO C mode) */
#endif

#define LB_EXP_LO -87.33654475f /* ln(2^-126) */
#define LB_EXP_HI 88.0f
#define LB_EXP_LOG2E 1.44269504088896341f
#define LB_EXP_C1 0.693359375f  /* ln 2 = C1 + C2 */
#define LB_EXP_C2 -2.12194440e-4f
#define LB_EXP_P0 1.9875691500E-4f
#define LB_EXP_P1 1.3981999507E-3f
#define LB_EXP_P2 8.3334519073E-3f
#define LB_EXP_P3 4.1665795894E-2f
#define LB_EXP_P4 1.6666665459E-1f
#define LB_EXP_P5 5.0000001201E-1f

static inline float lb_exp_canon(float x) {
    if (!(x >= LB_EXP_LO)) return 0.0f;
    x = x < LB_EXP_HI ? x : LB_EXP_HI;
    const float n = rintf(x * LB_EXP_LOG2E);
    float r = fmaf(-n, LB_EXP_C1, x);
    r = fmaf(-n, LB_EXP_C2, r);
    float p = LB_EXP_P0;
    p = fmaf(p, r, LB_EXP_P1);
    p = fmaf(p, r, LB_EXP_P2);
    p = fmaf(p, r, LB_EXP_P3);
    p = fmaf(p, r, LB_EXP_P4);
    p = fmaf(p, r, LB_EXP_P5);
    p = fmaf(p, r * r, r + 1.0f);
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; /* 2^n, n in [-126, 127] */
    float e;
    memcpy(&e, &bits, sizeof e);
    return p * e;
}

#define LB_GELU_A 0.044715f
#define LB_GELU_M2C (-2.0f * 0.7978845608028654f) /* -2 sqrt(2/pi) */

static inline float lb_silu_canon(float x) { return x / (1.0f + lb_exp_canon(-x)); }

static inline float lb_gelu_canon(float x) {
    return x / (1.0f + lb_exp_canon((x * LB_GELU_M2C) * fmaf(x * x, LB_GELU_A, 1.0f)));
}

/* cap * tanh(x / cap) as cap * (1 - 2 / (1 + exp(x * (2 / cap)))), two_cap
 * = 2 / cap: the attention kernels' logit soft-capping (Gemma 2), the same
 * operations in every kernel so every level gives the same bits */
static inline float lb_softcap_canon(float x, float two_cap, float cap) {
    return cap * (1.0f - 2.0f / (1.0f + lb_exp_canon(x * two_cap)));
}

static inline float lb_hsum16(const float *l) {
    float a[8];
    for (int i = 0; i < 8; i++) a[i] = l[i] + l[i + 8];
    for (int i = 0; i < 4; i++) a[i] = a[i] + a[i + 4];
    for (int i = 0; i < 2; i++) a[i] = a[i] + a[i + 2];
    return a[0] + a[1];
}

#endif
