/* IQ4_NL: 32 weights per block, one fp16 scale, 4-bit indices into a fixed
 * non-uniform codebook that is denser near zero (weights are roughly
 * Gaussian): value = d * kvalues[index]. Low nibbles hold weights 0..15. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

const int8_t lb_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

/* Index of the codebook value nearest to x; a tie goes to the larger value.
 * Comparing 2x with the sum of two neighbours keeps the midpoint exact. */
int lb_iq4nl_best_index(float x) {
    const float x2 = x + x;
    int idx = 0;
    for (int step = 8; step > 0; step >>= 1) {
        const int j = idx + step;
        if (x2 >= (float)(lb_kvalues_iq4nl[j - 1] + lb_kvalues_iq4nl[j])) idx = j;
    }
    return idx;
}

/* The per-block search of ggml's quantize_row_iq4_nl_impl (ntry 7), which
 * IQ4_NL and IQ4_XS both run on every 32 weights: a first scale mapping the
 * largest magnitude to -127, then 15 inverse scales around it, keeping the
 * weighted least-squares best. */
float lb_iq4nl_block_scale(const float *xb, const float *weight) {
    const int ntry = 7;
    const int8_t *values = lb_kvalues_iq4nl;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < 1e-15f) return 0.0f; /* ggml's GROUP_MAX_EPS */
    float d = -max / (float)values[0];
    float id = 1.0f / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; j++) {
        const float q = values[lb_iq4nl_best_index(id * xb[j])];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
    }
    /* ggml divides unguarded; sumq2 is 0 only when every weight is (an
     * imatrix can say so), where its NaN scale and this 0 encode alike. */
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; itry++) {
        id = (float)(itry + values[0]) / max;
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float q = values[lb_iq4nl_best_index(id * xb[j])];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* One block, as ggml's quantize_iq4_nl with no importance matrix: weights x^2. */
static void quantize_block_iq4_nl(const float *xb, block_iq4_nl *y) {
    float weight[QK4_NL];
    uint8_t L[QK4_NL];
    for (int j = 0; j < QK4_NL; j++) weight[j] = xb[j] * xb[j];
    const float scale = lb_iq4nl_block_scale(xb, weight);
    y->d = lb_f32_to_fp16(scale);
    /* Final indices against the unrounded scale, as ggml. */
    const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
    for (int j = 0; j < QK4_NL; j++) L[j] = (uint8_t)lb_iq4nl_best_index(id * xb[j]);
    for (int j = 0; j < QK4_NL / 2; j++) y->qs[j] = (uint8_t)(L[j] | (L[j + QK4_NL / 2] << 4));
}

void lb_quantize_row_iq4_nl_ref(const float *x, void *vy, int64_t k) {
    block_iq4_nl *y = vy;
    for (int64_t b = 0; b < k / QK4_NL; b++) quantize_block_iq4_nl(x + b * QK4_NL, &y[b]);
}

/* Blocks of an fp16 scale and 32 4-bit indices into a 16-entry table kv:
 * IQ4_NL's (lb_kvalues_iq4nl) and MXFP4_NL's (formats/mxfp4.h) */
void lb_dequantize_row_nl(const int8_t *kv, const void *vx, float *y, int64_t k) {
    const block_iq4_nl *x = vx;
    for (int64_t b = 0; b < k / QK4_NL; b++, y += QK4_NL) {
        const float d = lb_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            y[j] = d * (float)kv[x[b].qs[j] & 0xF];
            y[j + QK4_NL / 2] = d * (float)kv[x[b].qs[j] >> 4];
        }
    }
}

void lb_vec_dot_nl_q8_0_ref(const int8_t *kv, int64_t n, float *s, const void *vw, const void *va) {
    const block_iq4_nl *x = vw;
    const block_q8_0 *y = va;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / QK4_NL; b++) {
        const float d = lb_fp16_to_f32(y[b].d) * lb_fp16_to_f32(x[b].d);
        int sumi1 = 0, sumi2 = 0;
        for (int j = 0; j < QK4_NL / 2; j++) {
            sumi1 += y[b].qs[j] * kv[x[b].qs[j] & 0xF];
            sumi2 += y[b].qs[j + QK4_NL / 2] * kv[x[b].qs[j] >> 4];
        }
        sumf += d * (float)(sumi1 + sumi2);
    }
    *s = sumf;
}

void lb_dequantize_row_iq4_nl(const void *x, float *y, int64_t k) { lb_dequantize_row_nl(lb_kvalues_iq4nl, x, y, k); }

void lb_vec_dot_iq4_nl_q8_0_ref(int64_t n, float *s, const void *w, const void *a) {
    lb_vec_dot_nl_q8_0_ref(lb_kvalues_iq4nl, n, s, w, a);
}
