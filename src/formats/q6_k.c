/* Q6_K: 256 weights per block in 16 groups of 16 with signed 8-bit scales:
 * value = d*sc*(q-32), q in 0..63. Per 128 weights: ql holds the low nibbles
 * (bytes 0..31: weights 0..31 low / 64..95 high, bytes 32..63: 32..63 low /
 * 96..127 high) and qh the top 2 bits of weights l, l+32, l+64, l+96 in byte l. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q6_K_ref(const float *x, void *vy, int64_t k) {
    block_q6_K *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];

    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int ib = 0; ib < QK_K / 16; ib++) {
            const float scale = lb_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, NULL);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < 1e-15f) { /* all zero */
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }

        const float iscale = -128.0f / max_scale;
        y[i].d = lb_f32_to_fp16(1.0f / iscale);
        for (int ib = 0; ib < QK_K / 16; ib++)
            y[i].scales[ib] = (int8_t)LB_MIN(127, lb_nearest_int(iscale * scales[ib]));

        for (int j = 0; j < QK_K / 16; j++) {
            const float d = lb_fp16_to_f32(y[i].d) * (float)y[i].scales[j];
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ii++) {
                const int l = lb_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(LB_MAX(-32, LB_MIN(31, l)) + 32);
            }
        }

        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const uint8_t *Lq = (const uint8_t *)L + j + l;
                ql[l] = (uint8_t)((Lq[0] & 0xF) | ((Lq[64] & 0xF) << 4));
                ql[l + 32] = (uint8_t)((Lq[32] & 0xF) | ((Lq[96] & 0xF) << 4));
                qh[l] = (uint8_t)((Lq[0] >> 4) | ((Lq[32] >> 4) << 2) | ((Lq[64] >> 4) << 4) |
                                  ((Lq[96] >> 4) << 6));
            }
        }
    }
}

/* Weights l, l+32, l+64, l+96 (l < 32) of one 128-weight half, as q-32. */
static inline void q6_K_quads(const uint8_t *ql, const uint8_t *qh, int l, int *q) {
    q[0] = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
    q[1] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
    q[2] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
    q[3] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
}

void lb_dequantize_row_q6_K(const void *vx, float *y, int64_t k) {
    const block_q6_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = lb_fp16_to_f32(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                int q[4];
                q6_K_quads(ql, qh, l, q);
                const int is = l / 16;
                /* ggml's order: (d * sc) * q */
                for (int r = 0; r < 4; r++) y[l + 32 * r] = d * (float)sc[is + 2 * r] * (float)q[r];
            }
        }
    }
}

void lb_vec_dot_q6_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q6_K *x = vw;
    const block_q8_K *y = va;
    float sums[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t a[QK_K];
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                int q[4];
                q6_K_quads(ql, qh, l, q);
                for (int r = 0; r < 4; r++) a[j + l + 32 * r] = (int8_t)q[r];
            }
        int32_t aux32[8] = {0};
        for (int j = 0; j < QK_K / 16; j++)
            for (int l = 0; l < 16; l++)
                aux32[l % 8] += x[i].scales[j] * (y[i].qs[16 * j + l] * a[16 * j + l]);
        const float d = lb_fp16_to_f32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) sums[l] += d * (float)aux32[l];
    }
    float sumf = 0.0f;
    for (int l = 0; l < 8; l++) sumf += sums[l];
    *s = sumf;
}
