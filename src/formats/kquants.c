/* Shared K-quant scale searches and the traits of the K-quant, IQ4_NL and
 * IQ4_XS types. The searches follow ggml's make_qx_quants / make_q3_quants /
 * make_qkx2_quants operation for operation: the float evaluation order is what
 * makes a quantized block byte-identical to llama.cpp's, so every expression
 * keeps ggml's association and conversion points. */
#include <math.h>

#include "formats/kquants.h"

/* Never fuse a*b+c into an FMA: it changes the rounding, and llama.cpp's
 * reference does not fuse. Every file of these formats includes this. */
#include "core/fp_strict.h"

/* Below this a group counts as all zero (ggml's GROUP_MAX_EPS). */
#define GROUP_MAX_EPS 1e-15f

float lb_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *qw) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    /* First guess: the largest magnitude maps to -nmax. */
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = lb_nearest_int(iscale * x[i]);
        l = LB_MAX(-nmax, LB_MIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = qw ? qw[i] : x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    /* Then 18 nearby inverse scales; keep the one with the least weighted error. */
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = lb_nearest_int(iscale * x[i]);
            l = LB_MAX(-nmax, LB_MIN(nmax - 1, l));
            const float w = qw ? qw[i] : x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                const int l = lb_nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + LB_MAX(-nmax, LB_MIN(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float lb_make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = lb_nearest_int(iscale * x[i]);
        l = LB_MAX(-nmax, LB_MIN(nmax - 1, l));
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    /* Coordinate descent: move one quant at a time to its best level for the
     * least-squares scale of the others, keeping moves that lower the error. */
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                int new_l = lb_nearest_int(x[i] * sl2 / slx);
                new_l = LB_MAX(-nmax, LB_MIN(nmax - 1, new_l));
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float lb_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          int use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0.0f) min = 0.0f; /* the offset only ever subtracts */
    if (max == min) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = lb_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)LB_MAX(0, LB_MIN(nmax, l));
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    /* For each trial inverse scale, fix the quants and solve the weighted
     * least-squares problem for (scale, min) in closed form. */
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = lb_nearest_int(iscale * (x[i] - min));
            l = LB_MAX(0, LB_MIN(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0.0f;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; i++) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

void lb_pack_scale_min_k4(const uint8_t *ls, const uint8_t *lm, uint8_t *scales) {
    /* Sub-blocks 0..3 keep their 6 bits in bytes 0..7; 4..7 put their low 4
     * bits in bytes 8..11 and their top 2 bits in the spare bits 6..7 of 0..7. */
    for (int j = 0; j < 4; j++) {
        scales[j] = ls[j];
        scales[j + 4] = lm[j];
    }
    for (int j = 4; j < 8; j++) {
        scales[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
        scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
        scales[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
}

static const lb_type_traits traits_q2_K = {"Q2_K", QK_K, sizeof(block_q2_K), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_q2_K, lb_quantize_row_q2_K_ref, lb_vec_dot_q2_K_q8_K_ref};
static const lb_type_traits traits_q3_K = {"Q3_K", QK_K, sizeof(block_q3_K), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_q3_K, lb_quantize_row_q3_K_ref, lb_vec_dot_q3_K_q8_K_ref};
static const lb_type_traits traits_q4_K = {"Q4_K", QK_K, sizeof(block_q4_K), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_q4_K, lb_quantize_row_q4_K_ref, lb_vec_dot_q4_K_q8_K_ref};
static const lb_type_traits traits_q5_K = {"Q5_K", QK_K, sizeof(block_q5_K), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_q5_K, lb_quantize_row_q5_K_ref, lb_vec_dot_q5_K_q8_K_ref};
static const lb_type_traits traits_q6_K = {"Q6_K", QK_K, sizeof(block_q6_K), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_q6_K, lb_quantize_row_q6_K_ref, lb_vec_dot_q6_K_q8_K_ref};
static const lb_type_traits traits_q8_K = {"Q8_K", QK_K, sizeof(block_q8_K), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_q8_K, lb_quantize_row_q8_K_ref, lb_vec_dot_q8_K_q8_K_ref};
static const lb_type_traits traits_iq4_nl = {"IQ4_NL", QK4_NL, sizeof(block_iq4_nl), 1,
    LB_TYPE_Q8_0, lb_dequantize_row_iq4_nl, lb_quantize_row_iq4_nl_ref,
    lb_vec_dot_iq4_nl_q8_0_ref};
static const lb_type_traits traits_iq4_xs = {"IQ4_XS", QK_K, sizeof(block_iq4_xs), 1,
    LB_TYPE_Q8_K, lb_dequantize_row_iq4_xs, lb_quantize_row_iq4_xs_ref,
    lb_vec_dot_iq4_xs_q8_K_ref};

const lb_type_traits *lb_kquant_traits(int type) {
    switch (type) {
    case LB_TYPE_Q2_K: return &traits_q2_K;
    case LB_TYPE_Q3_K: return &traits_q3_K;
    case LB_TYPE_Q4_K: return &traits_q4_K;
    case LB_TYPE_Q5_K: return &traits_q5_K;
    case LB_TYPE_Q6_K: return &traits_q6_K;
    case LB_TYPE_Q8_K: return &traits_q8_K;
    case LB_TYPE_IQ4_NL: return &traits_iq4_nl;
    case LB_TYPE_IQ4_XS: return &traits_iq4_xs;
    default: return NULL;
    }
}
