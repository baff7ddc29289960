/* ABQ's code layouts (formats/abq.h: ABQ_W{q}_C4 / _C2, made at load) with
 * SDOT: the int8 way on Arm (kernels/arm/abq_arm.h). The planes were
 * recombined into code bytes once at load, so a group of 128 weights costs 8
 * SDOT of its codes (0..15, exact as signed bytes) against the activation
 * bytes c = ca - 128 of block_abq_act, and the codes one AND or shift per 16.
 *
 * Per group, with P' = sum code c (the SDOT sum) and sw the group's code sum:
 *     I = P' + (128 - za) sw - z (sum - 128 za)
 * the integer of the reference (formats/abq.h: P - za sw - z sum + 128 z za,
 * P = P' + 128 sw), exact in int32; then acc += d * I in double, unfused, and
 * y = (float)(acc * da): every output is the reference's float, bit for bit.
 *
 * The GEMM: tiles of 4 weight rows x 4 activation rows (16 SDOT accumulators,
 * 4 code and 4 activation vectors: 24 of the 32 registers); each decoded
 * code vector feeds 4 activation rows, each activation vector 4 weight rows.
 * Per group the 16 sums reduce pairwise to one vector per activation row,
 * lanes = weight rows, where the correction and the double step run 4 rows
 * at a time. Weight rows are the outer loop, so a tile's 4 rows stay in L1
 * while the activation rows the driver hands (an L2-sized tile) pass. */
#include "kernels/arm/abq_arm.h"

#if LB_HAVE_ARM_KERNELS
#include "kernels/arm/abq_codes_arm_impl.h"

#define CODES_DOTPROD(name, NAME, Wb)                                                                         \
    LB_ARM_DOTPROD void lb_vec_dot_##name##_dotprod(int64_t n, float *s, const void *w, const void *a) {      \
        tile(Wb, 1, 1, n / LB_ABQ_G, w, 0, 0, a, 0, 0, s, 1); /* the 1 x 1 tile */                        \
    }                                                                                                        \
    LB_ARM_DOTPROD void lb_gemm_##name##_dotprod(int64_t K, const void *W, size_t w_row_size, int n0, int n1, \
                                                 const void *A, size_t a_row_size, int M, float *Y, size_t ldy) { \
        gemm_dotprod(Wb, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                \
    }
LB_ABQ_CODES_LIST(CODES_DOTPROD)
#undef CODES_DOTPROD

#endif
