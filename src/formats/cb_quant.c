/* CB2 / CB3 post-training quantization (Algorithm 1, lines 11-15).
 *
 * For each super-block: (1) every sub-group fits every book with a free
 * (continuous) scale by alternating nearest-centroid assignment and weighted
 * least squares; (2) the super-block scale d is set so the largest fitted
 * scale lands on the top integer scale; (3) every sub-group then tries, for
 * each book, the two integer scales around its fitted one, reassigning its
 * indices to the nearest centroids at that exact scale, and keeps the
 * (book, scale, indices) with the lowest weighted squared error; (4) d is
 * refitted by least squares over the whole block and step 3 repeated if that
 * lowers the error. Errors are weighted by an importance vector when one is
 * given (e.g. mean squared activations per input column from an imatrix),
 * which makes the objective the expected squared error of the layer output. */
#include <float.h>
#include <math.h>

#include "formats/cb_fit.h"

typedef struct {
    float x[QK_CB], w[QK_CB], sxx[CB_NSUB];
    float a[CB_NSUB][CB_MAX_BOOKS]; /* fitted free scales */
    float e[CB_NSUB][CB_MAX_BOOKS]; /* and their errors */
} work;

/* Step 3 for a given d: the best (book, scale, indices) of every sub-group.
 * Returns the block's total weighted squared error. */
static float choose(const work *W, const cb_fbook *fb, const lb_cb_set *set, float d, lb_cb_unpacked *u) {
    const int C = set->books.count, k = set->books.k, smax = set->smax;
    float total = 0.0f;
    for (int j = 0; j < CB_NSUB; j++) {
        const float *x = W->x + CB_SUB * j, *w = W->w + CB_SUB * j;
        float best = FLT_MAX;
        uint8_t q[CB_SUB];
        for (int c = 0; c < C; c++) {
            const float sf = d > 0.0f ? W->a[j][c] / d : 0.0f;
            int s0 = (int)floorf(sf);
            s0 = LB_MAX(1, LB_MIN(smax, s0));
            const int s1 = LB_MIN(smax, s0 + 1);
            for (int s = s0; s <= s1; s++) {
                const float scale = d * (float)s;
                if (!(scale > 0.0f)) continue;
                const cb_sums sm = cb_assign(x, w, &fb[c], k, scale, q);
                const float e = cb_err_at(W->sxx[j], sm, scale);
                if (e < best) {
                    best = e;
                    u->cb[j] = (uint8_t)c;
                    u->s[j] = (uint8_t)s;
                    memcpy(u->q + CB_SUB * j, q, CB_SUB);
                }
            }
        }
        if (best == FLT_MAX) { /* d == 0: nothing to represent */
            u->cb[j] = 0;
            u->s[j] = 1;
            memset(u->q + CB_SUB * j, 0, CB_SUB);
            best = W->sxx[j];
        }
        total += best;
    }
    return total;
}

void lb_cb_quantize_block(const float *x, const float *imp, const lb_cb_set *set, lb_cb_unpacked *u) {
    const int C = set->books.count, k = set->books.k;
    cb_fbook fb[CB_MAX_BOOKS];
    cb_prepare_books(set, fb);
    work W;
    memcpy(W.x, x, sizeof W.x);
    float amax_all = 0.0f;
    for (int j = 0; j < CB_NSUB; j++) {
        const float *xj = x + CB_SUB * j;
        float *wj = W.w + CB_SUB * j;
        float wsum = 0.0f;
        for (int i = 0; i < CB_SUB; i++) {
            wj[i] = imp ? LB_MAX(imp[CB_SUB * j + i], 0.0f) : 1.0f;
            wsum += wj[i];
        }
        /* a sub-group nobody looks at still gets a sensible fit */
        if (!(wsum > 0.0f) || !isfinite(wsum))
            for (int i = 0; i < CB_SUB; i++) wj[i] = 1.0f;
        float sxx = 0.0f, amax = 0.0f, xmax = 0.0f;
        for (int i = 0; i < CB_SUB; i++) {
            sxx += wj[i] * xj[i] * xj[i];
            if (fabsf(xj[i]) > amax) {
                amax = fabsf(xj[i]);
                xmax = xj[i];
            }
        }
        W.sxx[j] = sxx;
        amax_all = LB_MAX(amax_all, amax);
        for (int c = 0; c < C; c++) W.e[j][c] = cb_fit_free(xj, wj, sxx, xmax, &fb[c], k, &W.a[j][c]);
    }
    memset(u, 0, sizeof *u);
    if (!(amax_all > 0.0f) || !isfinite(amax_all)) {
        for (int j = 0; j < CB_NSUB; j++) u->s[j] = 1;
        return;
    }

    /* Step 2: the largest scale a sub-group wants with its best-fitting book
     * sits on the top integer scale. */
    float top = 0.0f;
    for (int j = 0; j < CB_NSUB; j++) {
        int bc = 0;
        for (int c = 1; c < C; c++)
            if (W.e[j][c] < W.e[j][bc]) bc = c;
        top = LB_MAX(top, W.a[j][bc]);
    }
    if (!(top > 0.0f)) top = amax_all / (float)CB_VMAX; /* no usable fit: plain max scaling */
    /* keep d a finite fp16 even for absurd weights */
    float d = lb_fp16_to_f32(lb_f32_to_fp16(LB_MIN(top / (float)set->smax, 65504.0f)));
    float err = choose(&W, fb, set, d, u);
    u->d = d;

    /* Step 4: refit d to the chosen books, scales and indices. */
    float num = 0.0f, den = 0.0f;
    for (int j = 0; j < CB_NSUB; j++) {
        const float *v = fb[u->cb[j]].v;
        float sxb = 0.0f, sbb = 0.0f;
        for (int i = 0; i < CB_SUB; i++) {
            const int n = CB_SUB * j + i;
            sxb += W.w[n] * W.x[n] * v[u->q[n]];
            sbb += W.w[n] * v[u->q[n]] * v[u->q[n]];
        }
        num += (float)u->s[j] * sxb;
        den += (float)(u->s[j] * u->s[j]) * sbb;
    }
    if (den > 0.0f && num > 0.0f) {
        const float d2 = lb_fp16_to_f32(lb_f32_to_fp16(LB_MIN(num / den, 65504.0f)));
        if (d2 > 0.0f && d2 != d) {
            lb_cb_unpacked u2;
            const float err2 = choose(&W, fb, set, d2, &u2);
            if (err2 < err) {
                *u = u2;
                u->d = d2;
            }
        }
    }
}

void lb_cb_pack(int type, const lb_cb_set *set, const lb_cb_unpacked *u, void *block) {
    uint8_t field[CB_NSUB];
    for (int j = 0; j < CB_NSUB; j++) field[j] = (uint8_t)(u->cb[j] | ((u->s[j] - 1) << set->cbits));
    uint8_t *qs;
    if (type == LB_TYPE_CB2) {
        block_cb2 *b = block;
        lb_cb_pack_meta(field, b->meta);
        b->d = lb_f32_to_fp16(u->d);
        qs = b->qs;
    } else {
        block_cb3 *b = block;
        lb_cb_pack_meta(field, b->meta);
        b->d = lb_f32_to_fp16(u->d);
        memset(b->qh, 0, sizeof b->qh);
        for (int w = 0; w < QK_CB; w++) b->qh[w % 32] |= (uint8_t)(((u->q[w] >> 2) & 1) << (w / 32));
        qs = b->qs;
    }
    for (int c = 0; c < 2; c++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *q = u->q + 128 * c + l;
            qs[32 * c + l] = (uint8_t)((q[0] & 3) | ((q[32] & 3) << 2) | ((q[64] & 3) << 4) | ((q[96] & 3) << 6));
        }
}

void lb_quantize_row_cb_imp(int type, const float *x, void *y, int64_t k, const float *imp) {
    const lb_cb_set *set = lb_cb_current(type);
    const size_t bs = type == LB_TYPE_CB2 ? sizeof(block_cb2) : sizeof(block_cb3);
    lb_cb_unpacked u;
    for (int64_t i = 0; i < k / QK_CB; i++) {
        lb_cb_quantize_block(x + i * QK_CB, imp ? imp + i * QK_CB : NULL, set, &u);
        lb_cb_pack(type, set, &u, (char *)y + (size_t)i * bs);
    }
}

void lb_quantize_row_cb2_ref(const float *x, void *y, int64_t k) { lb_quantize_row_cb_imp(LB_TYPE_CB2, x, y, k, NULL); }
void lb_quantize_row_cb3_ref(const float *x, void *y, int64_t k) { lb_quantize_row_cb_imp(LB_TYPE_CB3, x, y, k, NULL); }
