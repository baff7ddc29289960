/* GQ{b}_G{g} (formats/gq.h): GPTQ's group-wise uniform format, scalar
 * reference. One generic implementation over (bits, group); the 12 per-type
 * entry points the traits and the kernel table need are thin wrappers with
 * the two as constants. */
#include <math.h>

#include "formats/gq.h"
#include "formats/kquants.h" /* lb_nearest_int */

/* Codes are computed with a division and products are not fused, so fix()
 * + round() and dequantize give the same bits on every compiler. */
#include "core/fp_strict.h"

static lb_fp16 *scales(void *blk, int bits) { return (lb_fp16 *)((uint8_t *)blk + LB_GQ_S_OFF(bits)); }
static uint8_t *zeros(void *blk, int bits, int group) { return (uint8_t *)blk + LB_GQ_Z_OFF(bits, group); }
static const lb_fp16 *cscales(const void *blk, int bits) {
    return (const lb_fp16 *)((const uint8_t *)blk + LB_GQ_S_OFF(bits));
}
static const uint8_t *czeros(const void *blk, int bits, int group) {
    return (const uint8_t *)blk + LB_GQ_Z_OFF(bits, group);
}

/* The smallest fp16 >= s (s > 0), at most the largest finite fp16; 0 for
 * s <= 0 or NaN. Rounding up keeps [min, max] on the grid. */
static lb_fp16 fp16_up(float s) {
    if (!(s > 0.0f)) return 0;
    lb_fp16 h = lb_f32_to_fp16(s);
    if (h >= 0x7c00) return 0x7bff;
    if (lb_fp16_to_f32(h) < s) h++;
    return h >= 0x7c00 ? (lb_fp16)0x7bff : h;
}

/* round(v) for v clamped to [-lim, lim] first, so any float rounds without
 * overflow (lim small enough for lb_nearest_int); NaN rounds to 0, so a NaN
 * weight gets the code of zero. */
static int round_clamped(float v, float lim) {
    if (isnan(v)) return 0;
    v = fminf(fmaxf(v, -lim), lim);
    return lb_nearest_int(v);
}

/* GPTQ's code of x on the grid (s, z): clamp(round(x / s) + z, 0, maxq);
 * s == 0 (an all-zero group): z. */
static int code_of(float x, float s, int z, int maxq) {
    if (s == 0.0f) return z;
    const int q = round_clamped(x / s, (float)(maxq + 1)) + z;
    return LB_MAX(0, LB_MIN(maxq, q));
}

/* The grid (fp16 scale, zero) for the range [lo, hi] (lo <= 0 <= hi). */
static lb_fp16 grid_for(float lo, float hi, int maxq, int sym, int *z) {
    if (sym) {
        *z = (maxq + 1) / 2;
        return fp16_up(2.0f * fmaxf(-lo, hi) / (float)maxq);
    }
    const lb_fp16 h = fp16_up((hi - lo) / (float)maxq);
    const float sf = lb_fp16_to_f32(h);
    *z = sf > 0.0f ? LB_MAX(0, LB_MIN(maxq, round_clamped(-lo / sf, (float)(maxq + 1)))) : 0;
    return h;
}

/* GPTQ's quantizer with its `mse` option over n values (a group, or a
 * whole row for the GC types, formats/gqc.h): the range [min, max] (0 kept
 * in it) and 15 ranges shrunk towards 0 (factors 0.96 .. 0.40) are tried,
 * and the grid with the least squared error (weighted by imp, when given)
 * kept; shrinking clips the extremes to give the bulk finer steps, which
 * decides 2- and 3-bit quality. */
void lb_gq_fit(int bits, const float *x, int64_t n, const float *imp, int sym, lb_fp16 *s, int *zp) {
    const int maxq = (1 << bits) - 1;
    float lo = 0.0f, hi = 0.0f; /* min <= 0 <= max, as GPTQ; NaNs are skipped */
    for (int64_t j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    int z = 0;
    lb_fp16 h = grid_for(lo, hi, maxq, sym, &z);
    double best = INFINITY;
    for (int i = 0; i < 16 && lb_fp16_to_f32(h) > 0.0f; i++) {
        const float p = 1.0f - 0.04f * (float)i;
        int zc;
        const lb_fp16 hc = grid_for(p * lo, p * hi, maxq, sym, &zc);
        const float sc = lb_fp16_to_f32(hc);
        if (!(sc > 0.0f)) break;
        double e = 0.0;
        for (int64_t j = 0; j < n && e < best; j++) {
            if (isnan(x[j])) continue;
            const double d = (double)x[j] - (double)sc * (code_of(x[j], sc, zc, maxq) - zc);
            e += (imp ? (double)imp[j] : 1.0) * d * d;
        }
        if (e < best) best = e, h = hc, z = zc;
    }
    *s = h;
    *zp = z;
}

int lb_gq_code(float x, float s, int z, int bits) { return code_of(x, s, z, (1 << bits) - 1); }

/* Quantizes the group gi (x: its `group` values) of blk: scale, zero, codes
 * (lb_gq_fit). */
static void quantize_group(void *blk, int bits, int group, int gi, const float *x, const float *imp, int sym) {
    const int maxq = (1 << bits) - 1;
    int z = 0;
    lb_fp16 h;
    lb_gq_fit(bits, x, group, imp, sym, &h, &z);
    const float sf = lb_fp16_to_f32(h);
    scales(blk, bits)[gi] = h;
    zeros(blk, bits, group)[gi] = (uint8_t)z;
    for (int j = 0; j < group; j++) lb_gq_set_code(blk, bits, gi * group + j, code_of(x[j], sf, z, maxq));
}

static void quantize_row(int bits, int group, const float *x, void *vy, int64_t k, int sym) {
    const size_t bs = LB_GQ_SIZE(bits, group);
    uint8_t *y = vy;
    for (int64_t i = 0; i < k / QK_GQ; i++, y += bs, x += QK_GQ) {
        memset(y, 0, bs); /* padding and codes start at zero */
        for (int gi = 0; gi < QK_GQ / group; gi++) quantize_group(y, bits, group, gi, x + gi * group, NULL, sym);
    }
}

static void dequantize_row(int bits, int group, const void *vx, float *y, int64_t k) {
    const size_t bs = LB_GQ_SIZE(bits, group);
    const uint8_t *x = vx;
    for (int64_t i = 0; i < k / QK_GQ; i++, x += bs) {
        const lb_fp16 *s = cscales(x, bits);
        const uint8_t *z = czeros(x, bits, group);
        for (int j = 0; j < QK_GQ; j++, y++) {
            const int gi = j / group;
            *y = lb_fp16_to_f32(s[gi]) * (float)(lb_gq_get_code(x, bits, j) - z[gi]);
        }
    }
}

/* Against Q8_0: per 32 activations and group, sum (q - z) * a exactly in
 * int32, then add (s * d) * sum in float. */
static void vec_dot(int bits, int group, int64_t n, float *out, const void *vw, const void *va) {
    const size_t bs = LB_GQ_SIZE(bits, group);
    const uint8_t *w = vw;
    const block_q8_0 *a = va;
    const int seg = group < QK8_0 ? group : QK8_0; /* weights of one group within 32 activations */
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_GQ; i++, w += bs) {
        const lb_fp16 *s = cscales(w, bits);
        const uint8_t *z = czeros(w, bits, group);
        for (int c = 0; c < QK_GQ / QK8_0; c++, a++) {
            const float d = lb_fp16_to_f32(a->d);
            for (int j0 = 0; j0 < QK8_0; j0 += seg) {
                const int gi = (QK8_0 * c + j0) / group, zi = z[gi];
                int32_t sumi = 0;
                for (int j = j0; j < j0 + seg; j++)
                    sumi += (lb_gq_get_code(w, bits, QK8_0 * c + j) - zi) * a->qs[j];
                sumf += (lb_fp16_to_f32(s[gi]) * d) * (float)sumi;
            }
        }
    }
    *out = sumf;
}

/* ---- GPTQ hook (formats/grid.h) ---- */

static void grid_fix(int bits, int group, void *blk, int col, const float *x, const float *imp, int sym) {
    quantize_group(blk, bits, group, (col % QK_GQ) / group, x, imp, sym);
}

static float grid_round(int bits, int group, void *blk, int col, float x) {
    const int j = col % QK_GQ, gi = j / group, maxq = (1 << bits) - 1;
    const float s = lb_fp16_to_f32(scales(blk, bits)[gi]);
    const int z = zeros(blk, bits, group)[gi];
    const int q = code_of(x, s, z, maxq);
    lb_gq_set_code(blk, bits, j, q);
    return s * (float)(q - z); /* as dequantize_row computes it */
}

/* The scale refit's view: w = s * (q - z), z kept. */
static float grid_codes(int bits, int group, const void *blk, int col, float *c) {
    const int j0 = col % QK_GQ, gi = j0 / group;
    const int z = czeros(blk, bits, group)[gi];
    for (int j = 0; j < group; j++) c[j] = (float)(lb_gq_get_code(blk, bits, j0 + j) - z);
    return lb_fp16_to_f32(cscales(blk, bits)[gi]);
}

static float grid_set_scale(int bits, int group, void *blk, int col, float s) {
    const lb_fp16 h = lb_f32_to_fp16(s);
    scales(blk, bits)[(col % QK_GQ) / group] = h;
    return lb_fp16_to_f32(h);
}

/* ---- the 12 types ---- */

#define GQ_DEFINE(name, NAME, B, G)                                                                \
    void lb_dequantize_row_##name(const void *x, float *y, int64_t k) { dequantize_row(B, G, x, y, k); } \
    void lb_quantize_row_##name##_ref(const float *x, void *y, int64_t k) { quantize_row(B, G, x, y, k, 0); } \
    void lb_vec_dot_##name##_q8_0_ref(int64_t n, float *s, const void *w, const void *a) {         \
        vec_dot(B, G, n, s, w, a);                                                                 \
    }                                                                                              \
    static void fix_##name(void *blk, int col, const float *x, const float *imp) {                \
        (void)imp;                                                                                 \
        grid_fix(B, G, blk, col, x, imp, 0);                                                            \
    }                                                                                              \
    static void fix_sym_##name(void *blk, int col, const float *x, const float *imp) {            \
        (void)imp;                                                                                 \
        grid_fix(B, G, blk, col, x, imp, 1);                                                            \
    }                                                                                              \
    static float round_##name(void *blk, int col, float x) { return grid_round(B, G, blk, col, x); } \
    static float codes_##name(const void *blk, int col, float *c) { return grid_codes(B, G, blk, col, c); } \
    static float set_scale_##name(void *blk, int col, float s) { return grid_set_scale(B, G, blk, col, s); }
LB_GQ_LIST(GQ_DEFINE)
#undef GQ_DEFINE

static const struct {
    int type, bits, group;
    lb_type_traits traits;
    lb_grid grid, grid_sym;
} gq_types[] = {
#define GQ_ENTRY(name, NAME, B, G)                                                                 \
    {LB_TYPE_##NAME, B, G,                                                                         \
     {#NAME, QK_GQ, sizeof(block_##name), 1, LB_TYPE_Q8_0, lb_dequantize_row_##name,               \
      lb_quantize_row_##name##_ref, lb_vec_dot_##name##_q8_0_ref},                                 \
     {G, fix_##name, round_##name, codes_##name, set_scale_##name},                                \
     {G, fix_sym_##name, round_##name, codes_##name, set_scale_##name}},
    LB_GQ_LIST(GQ_ENTRY)
#undef GQ_ENTRY
};
#define N_GQ ((int)(sizeof gq_types / sizeof gq_types[0]))
static_assert(sizeof gq_types / sizeof gq_types[0] == LB_GQ_LAST - LB_GQ_FIRST + 1, "GQ ids are contiguous");

/* Index of type in gq_types, -1 for other types. */
static int index_of(int type) {
    if (type < LB_GQ_FIRST || type > LB_GQ_LAST) return -1;
    const int i = type - LB_GQ_FIRST;
    return gq_types[i].type == type ? i : -1;
}

int lb_gq_bits(int type) {
    const int i = index_of(type);
    return i < 0 ? 0 : gq_types[i].bits;
}

int lb_gq_group(int type) {
    const int i = index_of(type);
    return i < 0 ? 0 : gq_types[i].group;
}

int lb_gq_type(int bits, int group) {
    for (int i = 0; i < N_GQ; i++)
        if (gq_types[i].bits == bits && gq_types[i].group == group) return gq_types[i].type;
    return -1;
}

const lb_type_traits *lb_gq_traits(int type) {
    const int i = index_of(type);
    return i < 0 ? NULL : &gq_types[i].traits;
}

const lb_grid *lb_gq_grid(int type) {
    const int i = index_of(type);
    return i < 0 ? NULL : &gq_types[i].grid;
}

const lb_grid *lb_gq_grid_sym(int type) {
    const int i = index_of(type);
    return i < 0 ? NULL : &gq_types[i].grid_sym;
}

void lb_gq_quantize_row(int type, const float *x, void *y, int64_t k, int sym) {
    const int i = index_of(type);
    if (i < 0) return;
    quantize_row(gq_types[i].bits, gq_types[i].group, x, y, k, sym);
}
