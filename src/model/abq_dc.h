/* ABQ-LLM's distribution-correction vectors (seed 004 eq. (3)), fitted
 * without gradients: the block's ffn_down is quantized as W + gamma a b^T,
 * a rank-1 term chosen so that the quantized block's ffn_down output moves
 * toward the full-precision block's.
 *
 * With H (T x K) the inputs ffn_down sees in the quantized block and E
 * (T x N) the error of its output against the fp block's (fp output minus
 * quantized output), the term adds (H b) a^T to the output, so a and b
 * should make || E - (H b) a^T ||^2 small. Alternating least squares:
 * a = E^T u / |u|^2 for u = H b (exact), and b the ridge solution of
 * (H^T H + lambda I) b = H^T E a / |a|^2 by conjugate gradients, lambda =
 * ridge times the mean diagonal of H^T H (K is often larger than T: without
 * it b would fit the calibration tokens exactly). Starts from u = 1 (a = E's
 * mean over tokens: the output's bias); ends on an a step, so the error
 * never exceeds ||E||^2. */
#ifndef LB_ABQ_DC_H
#define LB_ABQ_DC_H

#include <stdint.h>

/* The search's default ridge: on gemma-3-270m W4A4 (docs/abq.md) 1, 10,
 * 100 and 1e4 gave mean KLD 1.51, 1.44, 1.47, 1.47 (none: 1.62); smaller
 * ridges fit the calibration tokens better and the scored text worse. */
#define LB_ABQ_DC_RIDGE 10.0

typedef struct {
    double err0;  /* ||E||^2 */
    double err1;  /* ||E - (H b) a^T||^2 after the fit (<= err0) */
    int iters;    /* alternations run */
} lb_abq_dc_fit_info;

/* a[N], b[K] out; H row-major T x K, E row-major T x N. ridge > 0. Returns 0,
 * or -1 out of memory (a and b then zero: no correction). */
int lb_abq_dc_fit(const float *H, const float *E, int64_t T, int64_t K, int64_t N, double ridge, int n_threads,
                  float *a, float *b, lb_abq_dc_fit_info *info);

#endif
