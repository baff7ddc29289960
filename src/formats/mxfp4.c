/* MXFP4: blocks, reference quantizer, dequantizer and dot product (ggml's,
 * operation for operation: llama-quantize's MXFP4 tensors come out byte for
 * byte), and the conversion the kernels run it through (formats/mxfp4.h). */
#include <math.h>
#include <string.h>

#include "formats/kquants.h"
#include "formats/mxfp4.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

const int8_t lb_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float lb_e8m0_to_f32_half(uint8_t e) {
    const uint32_t bits = e >= 2 ? (uint32_t)(e - 1) << 23 : 0x00200000u << e;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int best_index(float x, float d) {
    int best = 0;
    float err = fabsf((float)lb_kvalues_mxfp4[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float e = fabsf((float)lb_kvalues_mxfp4[i] * d - x);
        if (e < err) best = i, err = e;
    }
    return best;
}

void lb_quantize_row_mxfp4_ref(const float *x, void *vy, int64_t k) {
    block_mxfp4 *y = vy;
    for (int64_t b = 0; b < k / QK_MXFP4; b++, x += QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++) amax = fmaxf(amax, fabsf(x[j]));
        memset(&y[b], 0, sizeof y[b]);
        if (!(amax > 0.0f)) continue;
        /* ggml casts the float to uint8_t; clamped here, where that would overflow */
        const float ef = floorf(log2f(amax)) - 2.0f + 127.0f;
        const uint8_t e = (uint8_t)(ef < 0.0f ? 0.0f : ef > 255.0f ? 255.0f : ef);
        const float d = lb_e8m0_to_f32_half(e);
        y[b].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            y[b].qs[j] = (uint8_t)(best_index(x[j], d) | best_index(x[j + QK_MXFP4 / 2], d) << 4);
    }
}

void lb_dequantize_row_mxfp4(const void *vx, float *y, int64_t k) {
    const block_mxfp4 *x = vx;
    for (int64_t b = 0; b < k / QK_MXFP4; b++, y += QK_MXFP4) {
        const float d = lb_e8m0_to_f32_half(x[b].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[j] = d * (float)lb_kvalues_mxfp4[x[b].qs[j] & 0xF];
            y[j + QK_MXFP4 / 2] = d * (float)lb_kvalues_mxfp4[x[b].qs[j] >> 4];
        }
    }
}

void lb_vec_dot_mxfp4_q8_0_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_mxfp4 *x = vw;
    const block_q8_0 *y = va;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / QK_MXFP4; b++) {
        const float d = lb_e8m0_to_f32_half(x[b].e) * lb_fp16_to_f32(y[b].d);
        int sumi = 0;
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            sumi += y[b].qs[j] * lb_kvalues_mxfp4[x[b].qs[j] & 0xF] +
                    y[b].qs[j + QK_MXFP4 / 2] * lb_kvalues_mxfp4[x[b].qs[j] >> 4];
        sumf += d * (float)sumi;
    }
    *s = sumf;
}

int64_t lb_mxfp4_to_nl(const void *src, void *dst, int64_t nb) {
    const block_mxfp4 *x = src;
    block_mxfp4_nl *y = dst;
    int64_t inexact = 0;
    for (int64_t b = 0; b < nb; b++) {
        if (x[b].e > 143) return -1;
        int any = 0;
        for (int j = 0; j < QK_MXFP4 / 2; j++) any |= (x[b].qs[j] & 0x77) != 0; /* codes 0 and 8 are zeros */
        memcpy(y[b].qs, x[b].qs, sizeof y[b].qs);
        y[b].d = lb_f32_to_fp16(lb_e8m0_to_f32_half(x[b].e));
        inexact += any && x[b].e < 104;
    }
    return inexact;
}

void lb_dequantize_row_mxfp4_nl(const void *x, float *y, int64_t k) { lb_dequantize_row_nl(lb_kvalues_mxfp4, x, y, k); }

/* A reference quantizer for the kernel tests (random rows through from_float): MXFP4's,
 * then the conversion (values whose scale fp16 cannot hold come out rounded) */
static void quantize_row_mxfp4_nl_ref(const float *x, void *vy, int64_t k) {
    block_mxfp4_nl *y = vy;
    for (int64_t b = 0; b < k / QK_MXFP4; b++) {
        block_mxfp4 t;
        lb_quantize_row_mxfp4_ref(x + b * QK_MXFP4, &t, QK_MXFP4);
        if (t.e > 143) t.e = 143; /* only for |x| >= 2^18: outside fp16 either way */
        lb_mxfp4_to_nl(&t, &y[b], 1);
    }
}

/* IQ4_NL's reference with this table, so IQ4_NL's kernels with it reproduce it */
void lb_vec_dot_mxfp4_nl_q8_0_ref(int64_t n, float *s, const void *w, const void *a) {
    lb_vec_dot_nl_q8_0_ref(lb_kvalues_mxfp4, n, s, w, a);
}

static const lb_type_traits traits_mxfp4 = {"MXFP4", QK_MXFP4, sizeof(block_mxfp4), 1, LB_TYPE_Q8_0,
                                            lb_dequantize_row_mxfp4, lb_quantize_row_mxfp4_ref,
                                            lb_vec_dot_mxfp4_q8_0_ref};
static const lb_type_traits traits_mxfp4_nl = {"MXFP4_NL", QK_MXFP4, sizeof(block_mxfp4_nl), 1, LB_TYPE_Q8_0,
                                               lb_dequantize_row_mxfp4_nl, quantize_row_mxfp4_nl_ref,
                                               lb_vec_dot_mxfp4_nl_q8_0_ref};

const lb_type_traits *lb_mxfp4_traits(int type) { return type == LB_TYPE_MXFP4_NL ? &traits_mxfp4_nl : &traits_mxfp4; }
