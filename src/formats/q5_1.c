/* Q5_1: blocks of 32 5-bit weights with an fp16 scale and minimum,
 * value = d * q + m (6 bits per weight): Q4_1's range split into 31 steps,
 * with Q5_0's fifth-bit packing. */
#include <float.h>
#include <math.h>

#include "formats/legacy.h"

/* no FMA contraction: the reference must round like ggml's (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q5_1_ref(const float *x, void *vy, int64_t k) {
    block_q5_1 *y = vy;
    for (int64_t b = 0; b < k / QK5_1; b++) {
        const float *xb = x + b * QK5_1;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK5_1; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lb_f32_to_fp16(d);
        y[b].m = lb_f32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const float x0 = (xb[j] - min) * id, x1 = (xb[j + QK5_1 / 2] - min) * id;
            /* ggml clamps nothing here: (max - min) * id rounds to at most 31 */
            const uint8_t q0 = (uint8_t)(x0 + 0.5f), q1 = (uint8_t)(x1 + 0.5f);
            y[b].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= (uint32_t)((q0 & 0x10) >> 4) << j;
            qh |= (uint32_t)((q1 & 0x10) >> 4) << (j + QK5_1 / 2);
        }
        for (int i = 0; i < 4; i++) y[b].qh[i] = (uint8_t)(qh >> (8 * i));
    }
}

void lb_dequantize_row_q5_1(const void *vx, float *y, int64_t k) {
    const block_q5_1 *x = vx;
    for (int64_t b = 0; b < k / QK5_1; b++) {
        const float d = lb_fp16_to_f32(x[b].d), m = lb_fp16_to_f32(x[b].m);
        const uint32_t qh = lb_q5_high_bits(x[b].qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int q0 = (x[b].qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
            const int q1 = (x[b].qs[j] >> 4) | (int)((qh >> (j + QK5_1 / 2)) & 1) << 4;
            y[b * QK5_1 + j] = q0 * d + m;
            y[b * QK5_1 + j + QK5_1 / 2] = q1 * d + m;
        }
    }
}

void lb_vec_dot_q5_1_q8_1_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_1 *w = vw;
    const block_q8_1 *a = va;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK5_1; b++) {
        const uint32_t qh = lb_q5_high_bits(w[b].qh);
        int32_t isum = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int q0 = (w[b].qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
            const int q1 = (w[b].qs[j] >> 4) | (int)((qh >> (j + QK5_1 / 2)) & 1) << 4;
            isum += q0 * a[b].qs[j] + q1 * a[b].qs[j + QK5_1 / 2];
        }
        sum += (lb_fp16_to_f32(w[b].d) * lb_fp16_to_f32(a[b].d)) * (float)isum +
               lb_fp16_to_f32(w[b].m) * lb_fp16_to_f32(a[b].s);
    }
    *s = sum;
}
