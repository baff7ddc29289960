/* Q2_K: 256 weights per block in 16 groups of 16; each group has a 4-bit
 * scale and a 4-bit min (both multiplied by fp16 super-scales), weights are
 * 2-bit: value = d*sc*q - dmin*m. Quants of group pairs are interleaved: byte
 * l of each 32-byte chunk holds weights l, l+32, l+64, l+96 of 128. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q2_K_ref(const float *x, void *vy, int64_t k) {
    block_q2_K *y = vy;
    const float q4scale = 15.0f;
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];

    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        /* Best (scale, min) per group, weighting each weight by its magnitude
         * and minimising absolute (not squared) error. */
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < QK_K / 16; j++) {
            for (int l = 0; l < 16; l++) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = lb_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j],
                                            Laux, -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }

        /* Quantize the scales and mins to 4 bits against their maxima. */
        if (max_scale > 0.0f) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; j++)
                y[i].scales[j] = (uint8_t)lb_nearest_int(iscale * scales[j]);
            y[i].d = lb_f32_to_fp16(max_scale / q4scale);
        } else {
            for (int j = 0; j < QK_K / 16; j++) y[i].scales[j] = 0;
            y[i].d = lb_f32_to_fp16(0.0f);
        }
        if (max_min > 0.0f) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; j++)
                y[i].scales[j] |= (uint8_t)(lb_nearest_int(iscale * mins[j]) << 4);
            y[i].dmin = lb_f32_to_fp16(max_min / q4scale);
        } else {
            y[i].dmin = lb_f32_to_fp16(0.0f);
        }

        /* Requantize against the scales as they will be decoded. */
        for (int j = 0; j < QK_K / 16; j++) {
            const float d = lb_fp16_to_f32(y[i].d) * (float)(y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = lb_fp16_to_f32(y[i].dmin) * (float)(y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ii++) {
                const int l = lb_nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t)LB_MAX(0, LB_MIN(3, l));
            }
        }

        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
                                               (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
}

void lb_dequantize_row_q2_K(const void *vx, float *y, int64_t k) {
    const block_q2_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = lb_fp16_to_f32(x[i].d);
        const float min = lb_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int n = 0; n < QK_K; n += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (float)(sc & 0xF), ml = min * (float)(sc >> 4);
                    const uint8_t *qh = q + 16 * half;
                    for (int l = 0; l < 16; l++) *y++ = dl * (float)((qh[l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

void lb_vec_dot_q2_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q2_K *x = vw;
    const block_q8_K *y = va;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q2 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        const uint8_t *sc = x[i].scales;
        /* The min term only needs the activation sums of each group. */
        int summs = 0;
        for (int j = 0; j < 16; j++) summs += y[i].bsums[j] * (sc[j] >> 4);
        const float dall = y[i].d * lb_fp16_to_f32(x[i].d);
        const float dmin = y[i].d * lb_fp16_to_f32(x[i].dmin);
        int isum = 0, is = 0;
        for (int c = 0; c < QK_K / 128; c++, q2 += 32) {
            for (int shift = 0; shift < 8; shift += 2, q8 += 32) {
                for (int half = 0; half < 2; half++) {
                    const int d = sc[is++] & 0xF;
                    int isuml = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        isuml += q8[l] * ((q2[l] >> shift) & 3);
                    isum += d * isuml;
                }
            }
        }
        sumf += dall * (float)isum - dmin * (float)summs;
    }
    *s = sumf;
}
