/* The per-sub-group fit shared by the quantizer (cb_quant.c) and the
 * codebook refinement (cb_discover.c): nearest-centroid assignment and the
 * weighted least-squares scale of one 16-weight group against one book. */
#ifndef LB_CB_FIT_H
#define LB_CB_FIT_H

#include <math.h>

#include "formats/cb.h"

/* A book prepared for the search: values as floats and the midpoints
 * between neighbours (the nearest-centroid decision thresholds). */
typedef struct {
    float v[CB_MAX_K];
    float thr[CB_MAX_K - 1];
} cb_fbook;

/* Thresholds of a book whose k values (ascending) are set. */
static inline void cb_fbook_thresholds(cb_fbook *b, int k) {
    for (int i = 0; i + 1 < k; i++) b->thr[i] = 0.5f * (b->v[i] + b->v[i + 1]);
}

static inline void cb_prepare_books(const lb_cb_set *set, cb_fbook *fb) {
    const lb_cb_books *b = &set->books;
    for (int c = 0; c < b->count; c++) {
        for (int i = 0; i < b->k; i++) fb[c].v[i] = (float)b->v[c][i];
        cb_fbook_thresholds(&fb[c], b->k);
    }
}

/* Nearest centroids of x / scale (scale > 0); the error cb_sums of that choice. */
typedef struct {
    float sxb, sbb; /* sum w*x*b, sum w*b*b */
} cb_sums;

static inline cb_sums cb_assign(const float *x, const float *w, const cb_fbook *b, int k, float scale, uint8_t *q) {
    const float inv = 1.0f / scale;
    cb_sums s = {0.0f, 0.0f};
    for (int i = 0; i < CB_SUB; i++) {
        const float y = x[i] * inv;
        int l = 0;
        for (int t = 0; t < k - 1; t++) l += y > b->thr[t];
        q[i] = (uint8_t)l;
        const float v = b->v[l];
        s.sxb += w[i] * x[i] * v;
        s.sbb += w[i] * v * v;
    }
    return s;
}

/* Weighted squared error of x ~ scale * b[q] given the cb_sums (sxx = sum w x^2). */
static inline float cb_err_at(float sxx, cb_sums s, float scale) { return sxx - 2.0f * scale * s.sxb + scale * scale * s.sbb; }

/* Step 1: the best free scale of book b for the sub-group, and its error. */
static inline float cb_fit_free(const float *x, const float *w, float sxx, float xmax, const cb_fbook *b, int k, float *scale_out) {
    /* Start by mapping the largest magnitude onto the extreme centroid of its sign. */
    const float ext = xmax > 0.0f ? b->v[k - 1] : b->v[0];
    float a = ext != 0.0f && (xmax > 0.0f) == (ext > 0.0f) ? xmax / ext : 0.0f;
    if (!(a > 0.0f)) {
        const float m = LB_MAX(fabsf(b->v[0]), fabsf(b->v[k - 1]));
        a = m > 0.0f ? fabsf(xmax) / m : 0.0f;
    }
    float best = sxx, best_a = 0.0f;
    uint8_t q[CB_SUB];
    for (int it = 0; it < 3 && a > 0.0f; it++) {
        const cb_sums s = cb_assign(x, w, b, k, a, q);
        if (!(s.sbb > 0.0f) || !(s.sxb > 0.0f)) break;
        const float a_ls = s.sxb / s.sbb;
        const float e = sxx - s.sxb * a_ls;
        if (e < best) {
            best = e;
            best_a = a_ls;
        }
        if (fabsf(a_ls - a) <= 1e-6f * a) break;
        a = a_ls;
    }
    *scale_out = best_a;
    return best;
}

#endif
