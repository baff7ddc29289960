/* Q3_K: 256 weights per block in 16 groups of 16 with signed 6-bit scales
 * (value = d*(sc-32)*(q-4)); the low 2 bits of q are packed like Q2_K, the
 * third bit lives in hmask (bit b of hmask[m] belongs to weight 32*b + m).
 * The 16 scales take 12 bytes: low nibbles in bytes 0..7 (groups 0..7 in the
 * low halves, 8..15 in the high halves), top 2 bits in bytes 8..11. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

/* The 16 scales of a block, unpacked to their stored 6-bit values. */
static void q3_K_unpack_scales(const uint8_t *packed, int *sc) {
    for (int j = 0; j < 16; j++) {
        const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
        sc[j] = low | (((packed[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
    }
}

void lb_quantize_row_q3_K_ref(const float *x, void *vy, int64_t k) {
    block_q3_K *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];

    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < QK_K / 16; j++) {
            scales[j] = lb_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }

        memset(y[i].scales, 0, sizeof y[i].scales);
        if (max_scale != 0.0f) {
            /* Signed scales: the largest magnitude maps to -32. */
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < QK_K / 16; j++) {
                int8_t l = (int8_t)lb_nearest_int(iscale * scales[j]);
                l = (int8_t)(LB_MAX(-32, LB_MIN(31, l)) + 32);
                if (j < 8) y[i].scales[j] = (uint8_t)(l & 0xF);
                else y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                l = (int8_t)(l >> 4);
                y[i].scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
            }
            y[i].d = lb_f32_to_fp16(1.0f / iscale);
        } else {
            y[i].d = lb_f32_to_fp16(0.0f);
        }

        /* Requantize against the decoded scales. */
        int sc[16];
        q3_K_unpack_scales(y[i].scales, sc);
        for (int j = 0; j < QK_K / 16; j++) {
            const float d = lb_fp16_to_f32(y[i].d) * (float)(int8_t)(sc[j] - 32);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ii++) {
                const int l = lb_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(LB_MAX(-4, LB_MIN(3, l)) + 4);
            }
        }

        memset(y[i].hmask, 0, sizeof y[i].hmask);
        int m = 0;
        uint8_t hm = 1;
        for (int j = 0; j < QK_K; j++) {
            if (L[j] > 3) {
                y[i].hmask[m] |= hm;
                L[j] -= 4;
            }
            if (++m == QK_K / 8) {
                m = 0;
                hm = (uint8_t)(hm << 1);
            }
        }
        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
                                               (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
}

void lb_dequantize_row_q3_K(const void *vx, float *y, int64_t k) {
    const block_q3_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d_all = lb_fp16_to_f32(x[i].d);
        int sc[16];
        q3_K_unpack_scales(x[i].scales, sc);
        const uint8_t *q = x[i].qs, *hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int n = 0; n < QK_K; n += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1)) {
                for (int half = 0; half < 2; half++) {
                    const float dl = d_all * (float)(sc[is++] - 32);
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        const int qv = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
                        *y++ = dl * (float)qv;
                    }
                }
            }
        }
    }
}

void lb_vec_dot_q3_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q3_K *x = vw;
    const block_q8_K *y = va;
    /* ggml accumulates in 8 float lanes and adds them at the end; keeping that
     * order makes this reproduce ggml's generic result exactly. */
    float sums[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t a[QK_K];
        const uint8_t *q3 = x[i].qs, *hm = x[i].hmask;
        int8_t *pa = a;
        uint8_t m = 1;
        for (int j = 0; j < QK_K; j += 128, q3 += 32)
            for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1), pa += 32)
                for (int l = 0; l < 32; l++)
                    pa[l] = (int8_t)(((q3[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        int sc[16];
        q3_K_unpack_scales(x[i].scales, sc);
        int32_t aux32[8] = {0};
        for (int j = 0; j < QK_K / 16; j++)
            for (int l = 0; l < 16; l++)
                aux32[l % 8] += (sc[j] - 32) * (y[i].qs[16 * j + l] * a[16 * j + l]);
        const float d = lb_fp16_to_f32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) sums[l] += d * (float)aux32[l];
    }
    float sumf = 0.0f;
    for (int l = 0; l < 8; l++) sumf += sums[l];
    *s = sumf;
}
