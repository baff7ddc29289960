/* Arm micro-kernel of the fp32 GEMM family (kernels/sgemm.h): an 8 x 12 tile
 * of C in 24 q-register accumulators. Each k step loads 12 floats of the B
 * panel (3 vectors) and 8 of the A panel (2 vectors), and multiplies each B
 * vector by one lane of A (vfmaq_laneq_f32), so no broadcasts are needed:
 * 24 FMAs per 5 loads, 29 of the 32 vector registers. ASIMD only, so it runs
 * on every aarch64 CPU (the dotprod and i8mm levels use it too). */
#include "kernels/sgemm.h"

#if LB_SGEMM_ARM
#include <arm_neon.h>

/* The three FMAs of row i: B vectors times lane `lane` of A vector av. The
 * lane must be a literal constant, hence a macro rather than a loop. */
#define ROW(i, av, lane)                                     \
    do {                                                     \
        acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, av, lane); \
        acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, av, lane); \
        acc[i][2] = vfmaq_laneq_f32(acc[i][2], b2, av, lane); \
    } while (0)

void lb_sgemm_ukr_neon_8x12(int64_t kc, const float *a, const float *b, float *c, size_t ldc, float alpha,
                            float beta) {
    float32x4_t acc[8][3];
    for (int i = 0; i < 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < kc; k++, a += 8, b += 12) {
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        ROW(0, a0, 0);
        ROW(1, a0, 1);
        ROW(2, a0, 2);
        ROW(3, a0, 3);
        ROW(4, a1, 0);
        ROW(5, a1, 1);
        ROW(6, a1, 2);
        ROW(7, a1, 3);
    }
    for (int i = 0; i < 8; i++) {
        float *ci = c + (size_t)i * ldc;
        for (int j = 0; j < 3; j++) {
            float32x4_t r = vmulq_n_f32(acc[i][j], alpha);
            if (beta != 0.0f) r = vfmaq_n_f32(r, vld1q_f32(ci + 4 * j), beta); /* beta == 0: C may be NaN */
            vst1q_f32(ci + 4 * j, r);
        }
    }
}

#endif
