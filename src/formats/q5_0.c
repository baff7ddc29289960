/* Q5_0: blocks of 32 5-bit weights with one fp16 scale, value = d * (q - 16)
 * (5.5 bits per weight). Like Q4_0 the weight of largest magnitude maps
 * exactly to -16; the low 4 bits of q are packed as nibbles, the fifth bits
 * in a 32-bit word. */
#include <math.h>

#include "formats/legacy.h"

/* no FMA contraction: the reference must round like ggml's (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q5_0_ref(const float *x, void *vy, int64_t k) {
    block_q5_0 *y = vy;
    for (int64_t b = 0; b < k / QK5_0; b++) {
        const float *xb = x + b * QK5_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK5_0; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lb_f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const float x0 = xb[j] * id, x1 = xb[j + QK5_0 / 2] * id;
            const uint8_t q0 = (uint8_t)LB_MIN(31, (int8_t)(x0 + 16.5f));
            const uint8_t q1 = (uint8_t)LB_MIN(31, (int8_t)(x1 + 16.5f));
            y[b].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + QK5_0 / 2);
        }
        for (int i = 0; i < 4; i++) y[b].qh[i] = (uint8_t)(qh >> (8 * i));
    }
}

void lb_dequantize_row_q5_0(const void *vx, float *y, int64_t k) {
    const block_q5_0 *x = vx;
    for (int64_t b = 0; b < k / QK5_0; b++) {
        const float d = lb_fp16_to_f32(x[b].d);
        const uint32_t qh = lb_q5_high_bits(x[b].qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int q0 = (x[b].qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
            const int q1 = (x[b].qs[j] >> 4) | (int)((qh >> (j + QK5_0 / 2)) & 1) << 4;
            y[b * QK5_0 + j] = (q0 - 16) * d;
            y[b * QK5_0 + j + QK5_0 / 2] = (q1 - 16) * d;
        }
    }
}

void lb_vec_dot_q5_0_q8_0_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_0 *w = vw;
    const block_q8_0 *a = va;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK5_0; b++) {
        const uint32_t qh = lb_q5_high_bits(w[b].qh);
        int32_t isum = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int q0 = (w[b].qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
            const int q1 = (w[b].qs[j] >> 4) | (int)((qh >> (j + QK5_0 / 2)) & 1) << 4;
            isum += (q0 - 16) * a[b].qs[j] + (q1 - 16) * a[b].qs[j + QK5_0 / 2];
        }
        sum += (lb_fp16_to_f32(w[b].d) * lb_fp16_to_f32(a[b].d)) * (float)isum;
    }
    *s = sum;
}
