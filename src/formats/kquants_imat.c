/* Q2_K and Q3_K quantization with an importance vector (an imatrix row), as
 * llama.cpp's quantize_row_q2_K_impl / quantize_row_q3_K_impl do when
 * llama-quantize is given --imatrix: every weight's error counts
 * qw[i] * sqrt(sigma2 + x[i]^2), the sub-block scales (and Q2_K's mins) are
 * searched with those weights, and the 4-/6-bit scale codes are themselves
 * fitted by a weighted search. The blocks are ordinary Q2_K / Q3_K. IQ4_XS's
 * weighted form lives with its format (formats/iq4_xs.c); the dispatcher at
 * the end routes it. */
#include <math.h>

#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/cb.h"

#include "core/fp_strict.h"

/* Non-negative x[] ~ scale * L[i] with L in 0..nmax: a weighted scan of 9
 * inverse scales around nmax / max, then coordinate descent on single L[i]
 * (ggml's make_qp_quants). Returns the scale. */
static float make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w) {
    float max = 0.0f;
    for (int i = 0; i < n; i++) max = LB_MAX(max, x[i]);
    if (!(max > 0.0f)) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)nmax / max;
    float best = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)lb_nearest_int(iscale * x[i]);
        const float diff = x[i] - (float)L[i] / iscale;
        best += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max, scale_is = 1.0f / iscale_is;
        float mse = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = LB_MIN(nmax, lb_nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * (float)l;
            mse += w[i] * diff * diff;
        }
        if (mse < best) {
            best = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = LB_MIN(nmax, lb_nearest_int(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * (float)L[i];
            float sl2 = suml2 - w[i] * (float)L[i] * (float)L[i];
            if (slx > 0.0f && sl2 > 0.0f) {
                const int nl = LB_MIN(nmax, lb_nearest_int(x[i] * sl2 / slx));
                if (nl != L[i]) {
                    slx += w[i] * x[i] * (float)nl;
                    sl2 += w[i] * (float)nl * (float)nl;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)nl;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

void lb_quantize_row_q2_K_imat(const float *x, void *vy, int64_t k, const float *qw) {
    block_q2_K *y = vy;
    uint8_t L[QK_K], Laux[16], Ls[16], Lm[16];
    float mins[16], scales[16], sw[16], weight[16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        float sumx2 = 0.0f;
        for (int j = 0; j < QK_K; j++) sumx2 += x[j] * x[j];
        const float sigma2 = sumx2 / QK_K;
        for (int j = 0; j < 16; j++) {
            sw[j] = 0.0f;
            for (int l = 0; l < 16; l++) {
                weight[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
                sw[j] += weight[l];
            }
            scales[j] = lb_make_qkx2_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, 0);
        }
        const float dm = make_qp_quants(16, 15, scales, Ls, sw);
        const float mm = make_qp_quants(16, 15, mins, Lm, sw);
        y[i].d = lb_f32_to_fp16(dm);
        y[i].dmin = lb_f32_to_fp16(mm);
        const float dq = lb_fp16_to_f32(y[i].d), mq = lb_fp16_to_f32(y[i].dmin);
        for (int j = 0; j < 16; j++) y[i].scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
        /* requantize against the scales as decoded */
        for (int j = 0; j < 16; j++) {
            const float d = dq * (float)(y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float m = mq * (float)(y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ii++) {
                const int l = lb_nearest_int((x[16 * j + ii] + m) / d);
                L[16 * j + ii] = (uint8_t)LB_MAX(0, LB_MIN(3, l));
            }
        }
        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                               (L[j + l + 96] << 6));
    }
}

void lb_quantize_row_q3_K_imat(const float *x, void *vy, int64_t k, const float *qw) {
    block_q3_K *y = vy;
    int8_t L[QK_K], Ls[16];
    float scales[16], weight[16], sw[16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        float sumx2 = 0.0f;
        for (int j = 0; j < QK_K; j++) sumx2 += x[j] * x[j];
        const float sigma2 = 2.0f * sumx2 / QK_K;
        for (int j = 0; j < 16; j++) {
            sw[j] = 0.0f;
            for (int l = 0; l < 16; l++) {
                weight[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
                sw[j] += weight[l];
            }
            scales[j] = lb_make_qx_quants(16, 4, x + 16 * j, L + 16 * j, weight);
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        const float d_block = lb_make_qx_quants(16, 32, scales, Ls, sw);
        for (int j = 0; j < 16; j++) {
            const int l = Ls[j];
            if (j < 8) y[i].scales[j] = (uint8_t)(l & 0xF);
            else y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
            y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y[i].d = lb_f32_to_fp16(d_block);
        for (int j = 0; j < 16; j++) {
            int sc = j < 8 ? y[i].scales[j] & 0xF : y[i].scales[j - 8] >> 4;
            sc = (sc | (((y[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
            const float d = lb_fp16_to_f32(y[i].d) * (float)sc;
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ii++) {
                const int l = lb_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(LB_MAX(-4, LB_MIN(3, l)) + 4);
            }
        }
        /* third bit of weight j: bit j / 32 of hmask[j % 32] */
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        for (int j = 0; j < QK_K; j++)
            if (L[j] > 3) {
                y[i].hmask[j % 32] |= (uint8_t)(1 << (j / 32));
                L[j] = (int8_t)(L[j] - 4);
            }
        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                               (L[j + l + 96] << 6));
    }
}

int lb_quantize_row_weighted(int type, const float *x, void *y, int64_t k, const float *imp) {
    switch (type) {
    case LB_TYPE_CB2:
    case LB_TYPE_CB3: lb_quantize_row_cb_imp(type, x, y, k, imp); return 1;
    case LB_TYPE_Q2_K: lb_quantize_row_q2_K_imat(x, y, k, imp); return 1;
    case LB_TYPE_Q3_K: lb_quantize_row_q3_K_imat(x, y, k, imp); return 1;
    case LB_TYPE_IQ4_XS: lb_quantize_row_iq4_xs_imat(x, y, k, imp); return 1; /* formats/iq4_xs.c */
    default: /* BCQ (formats/bcq.h), ABQ (formats/abq.h); 0 for other types */
        return lb_bcq_quantize_row_imp(type, x, y, k, imp) || lb_abq_quantize_row_imp(type, x, y, k, imp);
    }
}
