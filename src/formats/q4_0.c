/* Q4_0: blocks of 32 4-bit weights, value = (q - 8) * d, one fp16 scale
 * (4.5 bits per weight). The scale is chosen so the weight of largest
 * magnitude maps exactly to -8, as ggml does. */
#include <math.h>

#include "formats/types.h"

void lb_quantize_row_q4_0_ref(const float *x, void *vy, int64_t k) {
    block_q4_0 *y = vy;
    for (int64_t b = 0; b < k / QK4_0; b++) {
        const float *xb = x + b * QK4_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK4_0; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lb_f32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const float x0 = xb[j] * id, x1 = xb[j + QK4_0 / 2] * id;
            const uint8_t q0 = (uint8_t)LB_MIN(15, (int8_t)(x0 + 8.5f));
            const uint8_t q1 = (uint8_t)LB_MIN(15, (int8_t)(x1 + 8.5f));
            y[b].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void lb_dequantize_row_q4_0(const void *vx, float *y, int64_t k) {
    const block_q4_0 *x = vx;
    for (int64_t b = 0; b < k / QK4_0; b++) {
        const float d = lb_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[b * QK4_0 + j] = ((x[b].qs[j] & 0x0F) - 8) * d;
            y[b * QK4_0 + j + QK4_0 / 2] = ((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

void lb_vec_dot_q4_0_q8_0_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_0 *w = vw;
    const block_q8_0 *a = va;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK4_0; b++) {
        int32_t isum = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            isum += ((w[b].qs[j] & 0x0F) - 8) * a[b].qs[j];
            isum += ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + QK4_0 / 2];
        }
        sum += (float)isum * (lb_fp16_to_f32(w[b].d) * lb_fp16_to_f32(a[b].d));
    }
    *s = sum;
}
