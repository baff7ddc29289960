/* Q8_K: the activation format of K-quant dot products: 256 int8 values with
 * a float scale and the sum of every 16 values (bsums), which lets a weight
 * format with per-group mins subtract them with 16 multiplies per block. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q8_K_ref(const float *x, void *vy, int64_t k) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* -127 (not -128) so every value fits a symmetric int8 range, as ggml. */
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) y[i].qs[j] = (int8_t)LB_MIN(127, lb_nearest_int(iscale * x[j]));
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int ii = 0; ii < 16; ii++) sum += y[i].qs[16 * j + ii];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

void lb_dequantize_row_q8_K(const void *vx, float *y, int64_t k) {
    const block_q8_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++)
        for (int j = 0; j < QK_K; j++) *y++ = x[i].d * (float)x[i].qs[j];
}

void lb_vec_dot_q8_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q8_K *x = vw, *y = va;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK_K; j++) isum += x[i].qs[j] * y[i].qs[j];
        sumf += (float)isum * (x[i].d * y[i].d);
    }
    *s = sumf;
}
