/* Q4_K: 256 weights per block in 8 groups of 32, each with a 6-bit scale and
 * a 6-bit min: value = d*sc*q - dmin*m, q in 0..15. Each 32-byte chunk of qs
 * holds two groups: group 2c in the low nibbles, group 2c+1 in the high. */
#include <math.h>

#include "formats/kquants.h"

/* no FMA contraction: bit-exactness with ggml (see kquants.c) */
#include "core/fp_strict.h"

/* Shared by Q4_K and Q5_K (same scales, nmax 15 or 31, different search
 * ranges): per-group scale/min search, 6-bit quantization of them, and the
 * final quants L[256] against the decoded scales. */
void lb_quantize_k4_groups(const float *x, int nmax, float rmin, int nstep, lb_fp16 *d_out,
                           lb_fp16 *dmin_out, uint8_t *scales_out, uint8_t *L) {
    uint8_t Laux[32], ls[8], lm[8];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; j++) {
        /* Weight each value by the group's RMS plus its own magnitude. */
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = lb_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j],
                                        Laux, rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }

    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < QK_K / 32; j++) {
        ls[j] = (uint8_t)LB_MIN(63, (uint8_t)lb_nearest_int(inv_scale * scales[j]));
        lm[j] = (uint8_t)LB_MIN(63, (uint8_t)lb_nearest_int(inv_min * mins[j]));
    }
    lb_pack_scale_min_k4(ls, lm, scales_out);
    *d_out = lb_f32_to_fp16(max_scale / 63.0f);
    *dmin_out = lb_f32_to_fp16(max_min / 63.0f);

    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, m;
        lb_get_scale_min_k4(j, scales_out, &sc, &m);
        const float d = lb_fp16_to_f32(*d_out) * (float)sc;
        if (d == 0.0f) continue;
        const float dm = lb_fp16_to_f32(*dmin_out) * (float)m;
        for (int ii = 0; ii < 32; ii++) {
            const int l = lb_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)LB_MAX(0, LB_MIN(nmax, l));
        }
    }
}

void lb_quantize_row_q4_K_ref(const float *x, void *vy, int64_t k) {
    block_q4_K *y = vy;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        lb_quantize_k4_groups(x, 15, -1.0f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void lb_dequantize_row_q4_K(const void *vx, float *y, int64_t k) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = lb_fp16_to_f32(x[i].d);
        const float min = lb_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int is = 0; is < 8; is += 2, q += 32) {
            uint8_t sc, m;
            lb_get_scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            lb_get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

/* The dot product of 256 unsigned quants a[] (0..31) in 8 groups of 32 with
 * Q8_K activations, as ggml's generic Q4_K/Q5_K kernels compute it: 8 integer
 * lanes, scaled into 8 float lanes; the mins come off through bsums. */
void lb_dot_k4_groups(const int8_t *a, const uint8_t *packed_scales, float d, float dmin,
                      const block_q8_K *y, float *sums, float *sumf) {
    uint8_t scales[8], mins[8];
    for (int j = 0; j < 8; j++) lb_get_scale_min_k4(j, packed_scales, &scales[j], &mins[j]);
    int sumi = 0;
    for (int j = 0; j < QK_K / 16; j++) sumi += y->bsums[j] * mins[j / 2];
    int32_t aux32[8] = {0};
    for (int j = 0; j < QK_K / 32; j++)
        for (int l = 0; l < 32; l++)
            aux32[l % 8] += scales[j] * (y->qs[32 * j + l] * a[32 * j + l]);
    const float dd = d * y->d;
    for (int l = 0; l < 8; l++) sums[l] += dd * (float)aux32[l];
    *sumf -= dmin * y->d * (float)sumi;
}

void lb_vec_dot_q4_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_K *x = vw;
    const block_q8_K *y = va;
    float sums[8] = {0}, sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t a[QK_K];
        const uint8_t *q4 = x[i].qs;
        for (int j = 0; j < QK_K; j += 64, q4 += 32)
            for (int l = 0; l < 32; l++) {
                a[j + l] = (int8_t)(q4[l] & 0xF);
                a[j + l + 32] = (int8_t)(q4[l] >> 4);
            }
        lb_dot_k4_groups(a, x[i].scales, lb_fp16_to_f32(x[i].d), lb_fp16_to_f32(x[i].dmin), &y[i],
                         sums, &sumf);
    }
    for (int l = 0; l < 8; l++) sumf += sums[l];
    *s = sumf;
}
