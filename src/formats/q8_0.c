/* Q8_0: blocks of 32 int8 weights with one fp16 scale (8.5 bits per weight).
 * Also the activation format for Q8_0 and Q4_0 dot products. */
#include <math.h>

#include "formats/types.h"

void lb_quantize_row_q8_0_ref(const float *x, void *vy, int64_t k) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        const float *xb = x + b * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lb_f32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) y[b].qs[j] = (int8_t)roundf(xb[j] * id);
    }
}

void lb_dequantize_row_q8_0(const void *vx, float *y, int64_t k) {
    const block_q8_0 *x = vx;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        const float d = lb_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK8_0; j++) y[b * QK8_0 + j] = x[b].qs[j] * d;
    }
}

void lb_vec_dot_q8_0_q8_0_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q8_0 *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK8_0; b++) {
        int32_t isum = 0;
        for (int j = 0; j < QK8_0; j++) isum += (int32_t)w[b].qs[j] * a[b].qs[j];
        sum += (float)isum * (lb_fp16_to_f32(w[b].d) * lb_fp16_to_f32(a[b].d));
    }
    *s = sum;
}
