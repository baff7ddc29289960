/* Q4_1: blocks of 32 4-bit weights with an fp16 scale and an fp16 minimum,
 * value = d * q + m (5 bits per weight). The block's range [min, max] is
 * split into 15 equal steps, as ggml's quantize_row_q4_1_ref does. */
#include <float.h>
#include <math.h>

#include "formats/legacy.h"

/* no FMA contraction: the reference must round like ggml's (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q4_1_ref(const float *x, void *vy, int64_t k) {
    block_q4_1 *y = vy;
    for (int64_t b = 0; b < k / QK4_1; b++) {
        const float *xb = x + b * QK4_1;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK4_1; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lb_f32_to_fp16(d);
        y[b].m = lb_f32_to_fp16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const float x0 = (xb[j] - min) * id, x1 = (xb[j + QK4_1 / 2] - min) * id;
            /* truncation after +0.5 rounds: both are >= 0 */
            const uint8_t q0 = (uint8_t)LB_MIN(15, (int8_t)(x0 + 0.5f));
            const uint8_t q1 = (uint8_t)LB_MIN(15, (int8_t)(x1 + 0.5f));
            y[b].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void lb_dequantize_row_q4_1(const void *vx, float *y, int64_t k) {
    const block_q4_1 *x = vx;
    for (int64_t b = 0; b < k / QK4_1; b++) {
        const float d = lb_fp16_to_f32(x[b].d), m = lb_fp16_to_f32(x[b].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            y[b * QK4_1 + j] = (x[b].qs[j] & 0x0F) * d + m;
            y[b * QK4_1 + j + QK4_1 / 2] = (x[b].qs[j] >> 4) * d + m;
        }
    }
}

void lb_vec_dot_q4_1_q8_1_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_1 *w = vw;
    const block_q8_1 *a = va;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK4_1; b++) {
        int32_t isum = 0;
        for (int j = 0; j < QK4_1 / 2; j++) {
            isum += (w[b].qs[j] & 0x0F) * a[b].qs[j];
            isum += (w[b].qs[j] >> 4) * a[b].qs[j + QK4_1 / 2];
        }
        /* sum_j (d q_j + m) a_j = d * da * isum + m * (da * sum_j qa_j) */
        sum += (lb_fp16_to_f32(w[b].d) * lb_fp16_to_f32(a[b].d)) * (float)isum +
               lb_fp16_to_f32(w[b].m) * lb_fp16_to_f32(a[b].s);
    }
    *s = sum;
}
