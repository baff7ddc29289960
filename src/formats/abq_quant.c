/* The ABQ weight quantizer (formats/abq.h): round-to-nearest per group of
 * 128 with a search over the clipping ratio, the paper's learnable weight
 * clipping (sec. 3.2) done as a grid search on the group's (importance
 * weighted) squared error. */
#include <math.h>
#include <string.h>

#include "formats/abq.h"

#define FP16_MAX 65504.0f
#define N_CLIPS 10 /* 1.00, 0.95, ... 0.55 */

static float finite_weight(float v) {
    if (v != v) return 0.0f;
    return LB_MIN(LB_MAX(v, -FP16_MAX), FP16_MAX);
}

/* The grid of one clip: d (as stored) and z; codes by nearest rounding. */
typedef struct {
    lb_fp16 dh;
    float d;
    int z, cmax;
} grid;

static grid make_grid(int type, const float *x, float clip) {
    const int q = lb_abq_bits(type);
    grid g = {0, 0.0f, 0, lb_abq_is_balanced(type) ? 4 : (1 << q) - 1};
    float lo = 0.0f, hi = 0.0f;
    for (int j = 0; j < LB_ABQ_G; j++) lo = LB_MIN(lo, x[j]), hi = LB_MAX(hi, x[j]);
    float d;
    if (lb_abq_is_balanced(type)) {
        d = clip * LB_MAX(hi, -lo) / 2.0f;
        g.z = 2;
    } else {
        d = clip * (hi - lo) / (float)g.cmax;
    }
    g.dh = lb_f32_to_fp16(LB_MIN(d, FP16_MAX)); /* a range wider than fp16's (W1 of +-65504) saturates */
    g.d = lb_fp16_to_f32(g.dh);
    if (!(g.d > 0.0f)) return g.z = lb_abq_is_balanced(type) ? 2 : 0, g.d = 0.0f, g.dh = lb_f32_to_fp16(0.0f), g;
    if (!lb_abq_is_balanced(type)) g.z = (int)LB_MIN(LB_MAX(lrintf(-clip * lo / g.d), 0), g.cmax);
    return g;
}

static int grid_code(const grid *g, float v) {
    if (g->d == 0.0f) return g->z;
    const float c = v / g->d + (float)g->z;
    return c <= 0.0f ? 0 : c >= (float)g->cmax ? g->cmax : (int)lrintf(c);
}

static double grid_error(const grid *g, const float *x, const float *imp) {
    double e = 0.0;
    for (int j = 0; j < LB_ABQ_G; j++) {
        const double r = (double)x[j] - (double)g->d * (grid_code(g, x[j]) - g->z);
        e += (imp ? (double)imp[j] : 1.0) * r * r;
    }
    return e;
}

static void write_block(int type, const grid *g, const float *x, void *blk) {
    const int q = lb_abq_bits(type), hb = lb_abq_is_balanced(type) ? 2 : 4;
    uint8_t *b = blk;
    memset(b, 0, (size_t)hb + LB_ABQ_PLANE * (size_t)q);
    memcpy(b, &g->dh, 2);
    if (!lb_abq_is_balanced(type)) {
        const int16_t z = (int16_t)g->z;
        memcpy(b + 2, &z, 2);
    }
    for (int j = 0; j < LB_ABQ_G; j++) {
        const int c = grid_code(g, x[j]);
        for (int s = 0; s < q; s++) b[hb + LB_ABQ_PLANE * s + j / 8] |= (uint8_t)(((c >> s) & 1) << (j % 8));
    }
}

double lb_abq_quantize_group(int type, const float *x, const float *imp, void *blk) {
    return lb_abq_quantize_group_clip(type, x, imp, 1.0f, blk);
}

/* The clips clip_max, clip_max - 0.05, ... down to 0.55 (clip_max itself
 * when it is below): clip_max 1 is the search above. */
double lb_abq_quantize_group_clip(int type, const float *x0, const float *imp, float clip_max, void *blk) {
    float x[LB_ABQ_G];
    for (int j = 0; j < LB_ABQ_G; j++) x[j] = finite_weight(x0[j]);
    if (!(clip_max > 0.0f && clip_max <= 1.0f)) clip_max = 1.0f;
    grid best = make_grid(type, x, clip_max);
    double best_e = grid_error(&best, x, imp);
    for (int i = 1; i < N_CLIPS && clip_max - 0.05f * (float)i > 0.5f; i++) {
        const grid g = make_grid(type, x, clip_max - 0.05f * (float)i);
        const double e = grid_error(&g, x, imp);
        if (e < best_e) best = g, best_e = e;
    }
    write_block(type, &best, x, blk);
    return best_e;
}

int lb_abq_quantize_row_imp(int type, const float *x, void *y, int64_t k, const float *imp) {
    const lb_type_traits *t = lb_abq_bits(type) ? lb_abq_traits(type) : NULL;
    if (!t) return 0;
    for (int64_t i = 0; i < k / LB_ABQ_G; i++)
        lb_abq_quantize_group(type, x + i * LB_ABQ_G, imp ? imp + i * LB_ABQ_G : NULL, (uint8_t *)y + i * t->type_size);
    return 1;
}

int lb_abq_quantize_row_clip(int type, const float *x, void *y, int64_t k, const float *imp, float clip_max) {
    const lb_type_traits *t = lb_abq_bits(type) ? lb_abq_traits(type) : NULL;
    if (!t) return 0;
    for (int64_t i = 0; i < k / LB_ABQ_G; i++)
        lb_abq_quantize_group_clip(type, x + i * LB_ABQ_G, imp ? imp + i * LB_ABQ_G : NULL, clip_max,
                                   (uint8_t *)y + i * t->type_size);
    return 1;
}
