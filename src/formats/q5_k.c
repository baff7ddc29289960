/* Q5_K: Q4_K's layout (8 groups of 32, 6-bit scales and mins) with a fifth
 * bit per weight: bit 2c of qh[l] extends weight l of group 2c, bit 2c+1 weight
 * l of group 2c+1. value = d*sc*q - dmin*m, q in 0..31. */
#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

void lb_quantize_row_q5_K_ref(const float *x, void *vy, int64_t k) {
    block_q5_K *y = vy;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        lb_quantize_k4_groups(x, 31, -0.5f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *qh = y[i].qh, *ql = y[i].qs;
        memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < QK_K; n += 64, ql += 32) {
            for (int j = 0; j < 32; j++) {
                int l1 = L[n + j], l2 = L[n + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}

void lb_dequantize_row_q5_K(const void *vx, float *y, int64_t k) {
    const block_q5_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = lb_fp16_to_f32(x[i].d);
        const float min = lb_fp16_to_f32(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32) {
            uint8_t sc, m;
            lb_get_scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            lb_get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            u1 = (uint8_t)(u1 << 2);
            u2 = (uint8_t)(u2 << 2);
        }
    }
}

void lb_vec_dot_q5_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_K *x = vw;
    const block_q8_K *y = va;
    float sums[8] = {0}, sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t a[QK_K];
        const uint8_t *q4 = x[i].qs, *hm = x[i].qh;
        uint8_t m = 1;
        for (int j = 0; j < QK_K; j += 64, q4 += 32, m = (uint8_t)(m << 2))
            for (int l = 0; l < 32; l++) {
                a[j + l] = (int8_t)((q4[l] & 0xF) + (hm[l] & m ? 16 : 0));
                a[j + l + 32] = (int8_t)((q4[l] >> 4) + (hm[l] & (m << 1) ? 16 : 0));
            }
        lb_dot_k4_groups(a, x[i].scales, lb_fp16_to_f32(x[i].d), lb_fp16_to_f32(x[i].dmin), &y[i],
                         sums, &sumf);
    }
    for (int l = 0; l < 8; l++) sumf += sums[l];
    *s = sumf;
}
