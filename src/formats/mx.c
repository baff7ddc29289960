/* MX tiles: reference quantize / dequantize / dot, eq. (9) and (10)
 * (formats/mx.h has the layouts). */
#include "formats/mx.h"

#include <math.h>
#include <string.h>

#include "core/fp16.h"

/* round(v) clamped to [lo, hi]; NaN gives lo */
static int code_of(float v, int lo, int hi) {
    if (!(v > (float)lo)) return lo;
    if (v >= (float)hi) return hi;
    return (int)lrintf(v);
}

static float finite_or_0(float x) { return isfinite(x) ? x : 0.0f; }

static float s2_of(const block_mx2 *b, int h) {
    lb_fp16 v;
    memcpy(&v, b->s2 + 2 * h, sizeof v);
    return lb_fp16_to_f32(v);
}

/* twice the 2-bit tile's first-order zero for each code: z in {0.5, 1, 1.5, 2} */
static const int kZ2[4] = {1, 2, 3, 4};

static int mx2_z1(const block_mx2 *b, int h, int r) {
    const int i = 16 * h + r;
    return (b->z1[i / 4] >> (2 * (i % 4))) & 3;
}
static int mx2_c(const block_mx2 *b, int h, int r) {
    const int i = 16 * h + r;
    return (b->s1[i / 2] >> (4 * (i % 2))) & 15;
}

float lb_mx2_zero(const block_mx2 *b, int h, int r) { return 0.5f * (float)kZ2[mx2_z1(b, h, r)]; }

float lb_mx2_scale(const block_mx2 *b, int h, int r) {
    return s2_of(b, h) * (float)(mx2_c(b, h, r) + ((b->z2 >> (4 * h)) & 15));
}

/* round(v) clamped to 0..3 without a branch: the data decide such branches
 * at random. (int) truncates toward 0, so v + 0.5 < 0 gives 0 or below
 * either way; |v| stays far below 2^31 (w / s with s from the group's range). */
static inline int code2(float v) {
    int q = (int)(v + 0.5f);
    q = q < 0 ? 0 : q;
    return q > 3 ? 3 : q;
}

/* The best 2-bit zero (0..3) and codes of 16 weights for the scale s, by
 * the importance-weighted squared error; returns that error. The inner loop
 * of every 2-bit quantization (about 600 calls per tile half), so: float,
 * the four zeros in four accumulators in one pass, rounding half up (ties
 * have no weight), no branches. 1.15 ms a 2-bit tile in double with lrintf
 * and branches, 0.50 ms like this (AMD EPYC Zen 3, one core). */
static double fit_group2(const float *w, const float *imp, float s, int *z_out, int q[16]) {
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    float e0 = 0.0f, e1 = 0.0f, e2 = 0.0f, e3 = 0.0f;
    for (int c = 0; c < 16; c++) {
        const float x = w[c] * inv, wi = imp ? imp[c] : 1.0f;
        const float d0 = w[c] - s * ((float)code2(x + 0.5f) - 0.5f), d1 = w[c] - s * ((float)code2(x + 1.0f) - 1.0f);
        const float d2 = w[c] - s * ((float)code2(x + 1.5f) - 1.5f), d3 = w[c] - s * ((float)code2(x + 2.0f) - 2.0f);
        e0 += wi * d0 * d0, e1 += wi * d1 * d1, e2 += wi * d2 * d2, e3 += wi * d3 * d3;
    }
    const float e[4] = {e0, e1, e2, e3};
    int zb = 0;
    for (int z = 1; z < 4; z++) zb = e[z] < e[zb] ? z : zb;
    *z_out = zb;
    const float zf = 0.5f * (float)kZ2[zb];
    for (int c = 0; c < 16; c++) q[c] = code2(w[c] * inv + zf);
    return (double)e[zb];
}

/* s1_fp16 NULL: the tile as stored (4-bit scale codes); else the ablation's fp16 first-order scales */
static void quantize_tile2(const float *W, size_t ldw, const float *imp, block_mx2 *b, lb_fp16 *s1_fp16) {
    memset(b, 0, sizeof *b);
    for (int h = 0; h < 2; h++) {
        float w[16][16], ideal[16], smax = 0.0f;
        const float *ih = imp ? imp + 16 * h : NULL;
        for (int r = 0; r < 16; r++) {
            float mn = 0.0f, mx = 0.0f; /* 0 kept in range, as GPTQ's quantizer */
            for (int c = 0; c < 16; c++) {
                w[r][c] = finite_or_0(W[(size_t)r * ldw + 16 * h + c]);
                mn = fminf(mn, w[r][c]);
                mx = fmaxf(mx, w[r][c]);
            }
            /* the scale whose grid fits the group best: min/max's (mx - mn) / 3
             * and 20 shrunk ones (at 2 bits clipping the extremes usually wins) */
            const float s0 = (mx - mn) / 3.0f;
            double best_e = INFINITY;
            ideal[r] = s0;
            for (int k = 0; k <= 20 && s0 > 0.0f; k++) {
                const float sc = s0 * (1.0f - 0.025f * (float)k);
                int z, q[16];
                const double e = fit_group2(w[r], ih, sc, &z, q);
                if (e < best_e) best_e = e, ideal[r] = sc;
            }
            smax = fmaxf(smax, ideal[r]);
        }
        if (!(smax > 0.0f) || !isfinite(smax)) { /* all zero (or overflow): zeros */
            for (int r = 0; r < 16 && s1_fp16; r++) s1_fp16[16 * h + r] = 0;
            continue;
        }
        if (s1_fp16) {
            for (int r = 0; r < 16; r++) {
                const lb_fp16 sh = lb_f32_to_fp16(ideal[r]);
                const int i = 16 * h + r;
                int z1, q[16];
                s1_fp16[i] = sh;
                fit_group2(w[r], ih, lb_fp16_to_f32(sh), &z1, q);
                b->z1[i / 4] |= (uint8_t)(z1 << (2 * (i % 4)));
                for (int k = 0; k < 16; k++) b->qs[lb_mx2_qs_byte(r, 16 * h + k)] |= (uint8_t)(q[k] << lb_mx2_qs_shift(16 * h + k));
            }
            continue;
        }
        /* second order: the top scale lands on code 15 + z2; every z2 is
         * tried against the tile's weighted reconstruction error */
        double best = INFINITY;
        lb_fp16 best_s2 = 0;
        int best_z2 = 0;
        for (int z2 = 0; z2 < 16; z2++) {
            const lb_fp16 s2h = lb_f32_to_fp16(smax / (float)(15 + z2));
            const float s2 = lb_fp16_to_f32(s2h);
            if (!(s2 > 0.0f)) continue;
            double e = 0.0;
            for (int r = 0; r < 16 && e < best; r++) {
                const int c = code_of(ideal[r] / s2 - (float)z2, 0, 15);
                int z1, q[16];
                e += fit_group2(w[r], ih, s2 * (float)(c + z2), &z1, q);
            }
            if (e < best) best = e, best_s2 = s2h, best_z2 = z2;
        }
        memcpy(b->s2 + 2 * h, &best_s2, sizeof best_s2);
        b->z2 |= (uint8_t)(best_z2 << (4 * h));
        const float s2 = lb_fp16_to_f32(best_s2);
        for (int r = 0; r < 16; r++) {
            const int c = s2 > 0.0f ? code_of(ideal[r] / s2 - (float)best_z2, 0, 15) : 0;
            const int i = 16 * h + r;
            b->s1[i / 2] |= (uint8_t)(c << (4 * (i % 2)));
            int z1, q[16];
            fit_group2(w[r], ih, s2 * (float)(c + best_z2), &z1, q);
            b->z1[i / 4] |= (uint8_t)(z1 << (2 * (i % 4)));
            for (int k = 0; k < 16; k++) {
                const int col = 16 * h + k;
                b->qs[lb_mx2_qs_byte(r, col)] |= (uint8_t)(q[k] << lb_mx2_qs_shift(col));
            }
        }
    }
}

void lb_mx2_quantize_tile(const float *W, size_t ldw, const float *imp, block_mx2 *b) {
    quantize_tile2(W, ldw, imp, b, NULL);
}

void lb_mx2_quantize_tile_fp16(const float *W, size_t ldw, const float *imp, block_mx2 *b, lb_fp16 s1[32]) {
    quantize_tile2(W, ldw, imp, b, s1);
}

void lb_mx4_quantize_tile(const float *W, size_t ldw, block_mx4 *b) {
    memset(b, 0, sizeof *b);
    for (int r = 0; r < 16; r++) {
        float w[32], mn = 0.0f, mx = 0.0f;
        for (int c = 0; c < 32; c++) {
            w[c] = finite_or_0(W[(size_t)r * ldw + c]);
            mn = fminf(mn, w[c]);
            mx = fmaxf(mx, w[c]);
        }
        float s = (mx - mn) / 15.0f;
        lb_fp16 sh = lb_f32_to_fp16(s);
        if (lb_fp16_to_f32(sh) < s && sh < 0x7bff) sh++; /* round up: the grid still spans [mn, mx] */
        s = lb_fp16_to_f32(sh);
        if (!(s > 0.0f) || !isfinite(s)) continue; /* all zero: s = 0, z = 0 */
        b->s[r] = sh;
        const int z = code_of(-mn / s, 0, 15);
        b->z[r / 2] |= (uint8_t)(z << (4 * (r % 2)));
        for (int c = 0; c < 32; c++)
            b->qs[lb_mx4_qs_byte(r, c)] |= (uint8_t)(code_of(w[c] / s + (float)z, 0, 15) << lb_mx4_qs_shift(c));
    }
}

void lb_mx2_dequantize_tile(const block_mx2 *b, float *Y, size_t ldy) {
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 32; c++) {
            const int h = c / 16;
            Y[(size_t)r * ldy + c] = lb_mx2_scale(b, h, r) * ((float)lb_mx2_q(b, r, c) - 0.5f * (float)kZ2[mx2_z1(b, h, r)]);
        }
}

void lb_mx4_dequantize_tile(const block_mx4 *b, float *Y, size_t ldy) {
    for (int r = 0; r < 16; r++) {
        const float s = lb_fp16_to_f32(b->s[r]);
        const int z = (b->z[r / 2] >> (4 * (r % 2))) & 15;
        for (int c = 0; c < 32; c++)
            Y[(size_t)r * ldy + c] = s * (float)(lb_mx4_q(b, r, c) - z);
    }
}

void lb_mx2_dot_tile_ref(const block_mx2 *b, const block_q8_0 *a, float *y) {
    const float d = lb_fp16_to_f32(a->d);
    for (int r = 0; r < 16; r++) {
        float acc = 0.0f;
        for (int h = 0; h < 2; h++) {
            const int z2x = kZ2[mx2_z1(b, h, r)];
            int32_t sum = 0; /* twice the sum of (q - z) a: exact with a half-step zero */
            for (int c = 16 * h; c < 16 * h + 16; c++) sum += (2 * lb_mx2_q(b, r, c) - z2x) * a->qs[c];
            acc += 0.5f * lb_mx2_scale(b, h, r) * (float)sum;
        }
        y[r] += d * acc;
    }
}

void lb_mx4_dot_tile_ref(const block_mx4 *b, const block_q8_0 *a, float *y) {
    const float d = lb_fp16_to_f32(a->d);
    for (int r = 0; r < 16; r++) {
        const int z = (b->z[r / 2] >> (4 * (r % 2))) & 15;
        int32_t sum = 0;
        for (int c = 0; c < 32; c++) sum += (lb_mx4_q(b, r, c) - z) * a->qs[c];
        y[r] += d * lb_fp16_to_f32(b->s[r]) * (float)sum;
    }
}

void lb_mx_sensitivity(const float *W, int64_t N, int64_t K, int M, const float *hinv_diag, double *S) {
    for (int64_t i = 0; i < K / M; i++) S[i] = 0.0;
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < K / M * M; k++) {
            const double w = W[(size_t)j * (size_t)K + (size_t)k], h = hinv_diag[k];
            S[k / M] += w * w / (h * h);
        }
}

double lb_mx_bpw_eq10(double alpha, int g1, int g2, int Ns) {
    return alpha * (2.0 + (double)(2 + Ns) / g1 + (double)(Ns + 16) / ((double)g1 * g2)) + (1.0 - alpha) * 4.0;
}

uint64_t lb_mx_bits(int64_t N, int64_t K, int64_t n_hi, int64_t n_out) {
    const int64_t groups = K / LB_MX_M, tiles = N / LB_MX_ROWS;
    const uint64_t tile_bits = (uint64_t)tiles * ((uint64_t)(groups - n_hi) * sizeof(block_mx2) +
                                                  (uint64_t)n_hi * sizeof(block_mx4)) * 8u;
    return tile_bits + 8u * (uint64_t)groups + (n_out > 0 ? (uint64_t)n_out * 32u + (uint64_t)(N + 1) * 32u : 0u);
}

/* ---- traits: whole tiles, row after row ---- */
static void mx2_to_float(const void *src, float *dst, int64_t k) {
    for (int64_t i = 0; i < k / 512; i++) lb_mx2_dequantize_tile((const block_mx2 *)src + i, dst + 512 * i, 32);
}
static void mx4_to_float(const void *src, float *dst, int64_t k) {
    for (int64_t i = 0; i < k / 512; i++) lb_mx4_dequantize_tile((const block_mx4 *)src + i, dst + 512 * i, 32);
}
static void mx2_from_float(const float *src, void *dst, int64_t k) {
    for (int64_t i = 0; i < k / 512; i++) lb_mx2_quantize_tile(src + 512 * i, 32, NULL, (block_mx2 *)dst + i);
}
static void mx4_from_float(const float *src, void *dst, int64_t k) {
    for (int64_t i = 0; i < k / 512; i++) lb_mx4_quantize_tile(src + 512 * i, 32, (block_mx4 *)dst + i);
}

const lb_type_traits *lb_mx_traits(int type) {
    static const lb_type_traits mx2 = {"MX2", 512, sizeof(block_mx2), 1, LB_TYPE_Q8_0, mx2_to_float, mx2_from_float, NULL};
    static const lb_type_traits mx4 = {"MX4", 512, sizeof(block_mx4), 1, LB_TYPE_Q8_0, mx4_to_float, mx4_from_float, NULL};
    static const lb_type_traits mx = {"MX", 1, 0, 1, LB_TYPE_Q8_0, NULL, NULL, NULL};
    switch (type) {
    case LB_TYPE_MX2: return &mx2;
    case LB_TYPE_MX4: return &mx4;
    case LB_TYPE_MX: return &mx;
    default: return NULL;
    }
}
