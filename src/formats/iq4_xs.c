/* IQ4_XS: IQ4_NL's non-uniform codebook in super-blocks of 256. Each block of
 * 32 gets its own scale, stored as a signed 6-bit multiple of one fp16
 * super-scale, so the per-block cost drops from 16 bits (IQ4_NL) to 6:
 * 4.25 bits per weight. The quantizer is ggml's quantize_row_iq4_nl_impl
 * with super-block 256: IQ4_NL's search per block, then the block scales
 * rounded to the super-scale's grid and every index chosen again. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

#define NB_XS (QK_K / 32) /* blocks of 32 per super-block */

/* The 6-bit scale of block ib, 0..63 (the scale is this - 32). */
static int xs_scale(const block_iq4_xs *b, int ib) {
    return ((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((b->scales_h >> 2 * ib) & 3) << 4);
}

/* One super-block. weight == NULL: llama-quantize without an imatrix (each
 * weight counts x^2); else ggml's imatrix weighting qw * sqrt(sigma2 + x^2),
 * sigma2 twice the mean square of the super-block. */
static void quantize_block_iq4_xs(const float *x, const float *qw, block_iq4_xs *y) {
    float scales[NB_XS], weight[32];
    uint8_t L[QK_K];
    float sigma2 = 0.0f;
    if (qw) {
        for (int j = 0; j < QK_K; j++) sigma2 += x[j] * x[j];
        sigma2 *= 2.0f / QK_K;
    }
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int ib = 0; ib < NB_XS; ib++) {
        const float *xb = x + 32 * ib;
        for (int j = 0; j < 32; j++)
            weight[j] = qw ? qw[32 * ib + j] * sqrtf(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
        scales[ib] = lb_iq4nl_block_scale(xb, weight);
        if (fabsf(scales[ib]) > amax_scale) {
            amax_scale = fabsf(scales[ib]);
            max_scale = scales[ib];
        }
    }
    /* The largest block scale becomes -32 steps of the super-scale (the
     * 6-bit range is -32..31). An all-zero super-block gives d = -0, which
     * ggml stores as fp16 0x8000: kept for byte-identity. */
    const float d = -max_scale / 32.0f;
    y->d = lb_f32_to_fp16(d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y->scales_h = 0;
    for (int ib = 0; ib < NB_XS; ib++) {
        int l = lb_nearest_int(id * scales[ib]);
        l = LB_MAX(-32, LB_MIN(31, l));
        /* Indices again against the block's scale as stored (but the float
         * super-scale, not its fp16 rounding, as ggml). */
        const float dl = d * (float)l;
        const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
        for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)lb_iq4nl_best_index(idl * x[32 * ib + j]);
        l += 32;
        if (ib % 2 == 0) y->scales_l[ib / 2] = (uint8_t)(l & 0xF);
        else y->scales_l[ib / 2] |= (uint8_t)((l & 0xF) << 4);
        y->scales_h |= (uint16_t)((l >> 4) << 2 * ib);
    }
    for (int ib = 0; ib < NB_XS; ib++)
        for (int j = 0; j < 16; j++)
            y->qs[16 * ib + j] = (uint8_t)(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4));
}

void lb_quantize_row_iq4_xs_ref(const float *x, void *vy, int64_t k) {
    block_iq4_xs *y = vy;
    for (int64_t i = 0; i < k / QK_K; i++) quantize_block_iq4_xs(x + i * QK_K, NULL, &y[i]);
}

void lb_quantize_row_iq4_xs_imat(const float *x, void *vy, int64_t k, const float *imp) {
    block_iq4_xs *y = vy;
    for (int64_t i = 0; i < k / QK_K; i++) quantize_block_iq4_xs(x + i * QK_K, imp + i * QK_K, &y[i]);
}

void lb_dequantize_row_iq4_xs(const void *vx, float *y, int64_t k) {
    const block_iq4_xs *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = lb_fp16_to_f32(x[i].d);
        for (int ib = 0; ib < NB_XS; ib++, y += 32) {
            const float dl = d * (float)(xs_scale(&x[i], ib) - 32);
            const uint8_t *qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                y[j] = dl * (float)lb_kvalues_iq4nl[qs[j] & 0xF];
                y[j + 16] = dl * (float)lb_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

/* ggml's scalar ggml_vec_dot_iq4_xs_q8_K: integer sums per block of 32,
 * scaled by (d_w * d_a) * (ls - 32) and added one block at a time. */
void lb_vec_dot_iq4_xs_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_iq4_xs *x = vw;
    const block_q8_K *y = va;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d4d8 = lb_fp16_to_f32(x[i].d) * y[i].d;
        for (int ib = 0; ib < NB_XS; ib++) {
            const uint8_t *qs = x[i].qs + 16 * ib;
            const int8_t *q8 = y[i].qs + 32 * ib;
            int sumi1 = 0, sumi2 = 0;
            for (int j = 0; j < 16; j++) {
                sumi1 += q8[j] * lb_kvalues_iq4nl[qs[j] & 0xF];
                sumi2 += q8[j + 16] * lb_kvalues_iq4nl[qs[j] >> 4];
            }
            const float dl = d4d8 * (float)(xs_scale(&x[i], ib) - 32);
            sumf += dl * (float)(sumi1 + sumi2);
        }
    }
    *s = sumf;
}
