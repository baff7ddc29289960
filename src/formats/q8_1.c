/* Q8_1: the activation format for Q4_1 and Q5_1 dot products. Q8_0's
 * symmetric int8 block plus s = d * sum(q), precomputed so the weights' min
 * term costs one multiply per block. Also the traits of the legacy types. */
#include <math.h>

#include "formats/legacy.h"

/* no FMA contraction: the reference must round like ggml's (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q8_1_ref(const float *x, void *vy, int64_t k) {
    block_q8_1 *y = vy;
    for (int64_t b = 0; b < k / QK8_1; b++) {
        const float *xb = x + b * QK8_1;
        float amax = 0.0f;
        for (int j = 0; j < QK8_1; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lb_f32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            y[b].qs[j] = (int8_t)roundf(xb[j] * id);
            sum += y[b].qs[j];
        }
        y[b].s = lb_f32_to_fp16((float)sum * d);
    }
}

void lb_dequantize_row_q8_1(const void *vx, float *y, int64_t k) {
    const block_q8_1 *x = vx;
    for (int64_t b = 0; b < k / QK8_1; b++) {
        const float d = lb_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK8_1; j++) y[b * QK8_1 + j] = x[b].qs[j] * d;
    }
}

/* Q8_1 has no dot of its own (ggml has none either): it is only ever the
 * activation side. */
static const lb_type_traits traits_q4_1 = {"Q4_1", QK4_1, sizeof(block_q4_1), 1, LB_TYPE_Q8_1,
    lb_dequantize_row_q4_1, lb_quantize_row_q4_1_ref, lb_vec_dot_q4_1_q8_1_ref};
static const lb_type_traits traits_q5_0 = {"Q5_0", QK5_0, sizeof(block_q5_0), 1, LB_TYPE_Q8_0,
    lb_dequantize_row_q5_0, lb_quantize_row_q5_0_ref, lb_vec_dot_q5_0_q8_0_ref};
static const lb_type_traits traits_q5_1 = {"Q5_1", QK5_1, sizeof(block_q5_1), 1, LB_TYPE_Q8_1,
    lb_dequantize_row_q5_1, lb_quantize_row_q5_1_ref, lb_vec_dot_q5_1_q8_1_ref};
static const lb_type_traits traits_q8_1 = {"Q8_1", QK8_1, sizeof(block_q8_1), 1, LB_TYPE_Q8_1,
    lb_dequantize_row_q8_1, lb_quantize_row_q8_1_ref, NULL};

const lb_type_traits *lb_legacy_traits(int type) {
    switch (type) {
    case LB_TYPE_Q4_1: return &traits_q4_1;
    case LB_TYPE_Q5_0: return &traits_q5_0;
    case LB_TYPE_Q5_1: return &traits_q5_1;
    case LB_TYPE_Q8_1: return &traits_q8_1;
    default: return NULL;
    }
}
