/* One MX matrix (formats/mx.h): group selection by eq. (9), the tiles, and
 * the fp16 outliers of the 2-bit groups, by rounding. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/fp16.h"
#include "formats/mx.h"

lb_mx_params lb_mx_default_params(void) { return (lb_mx_params){0.25f, 0.002f, 0, 0, 0}; }

void lb_mx_free(lb_mx_matrix *m) {
    if (!m) return;
    free(m->map), free(m->lo), free(m->hi), free(m->row_ptr), free(m->out_col), free(m->out_val), free(m->slot);
    free(m->s1);
    memset(m, 0, sizeof *m);
}

typedef struct {
    double s;
    int64_t g;
} ranked;
static int by_s_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;
    return (x->g > y->g) - (x->g < y->g);
}

/* the k-th largest of v[0..n) (1 <= k <= n); v is reordered */
static float kth_largest(float *v, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1, want = k - 1;
    while (lo < hi) {
        const float pivot = v[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] > pivot) i++;
            while (v[j] < pivot) j--;
            if (i <= j) {
                const float t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return v[want];
    }
    return v[want];
}

/* The first-order scale of (half h, row r) of 2-bit tile `tile`: as
 * stored, or the ablation's fp16 (lb_mx_params.fp16_scales) */
static float lo_scale(const lb_mx_matrix *m, int64_t tile, int h, int r) {
    return m->s1 ? lb_fp16_to_f32(m->s1[tile * 32 + 16 * h + r]) : lb_mx2_scale(&m->lo[tile], h, r);
}

/* Quantizes the 2-bit tiles (tile row t: rows 16t.., low groups in order)
 * from W with the positions in `drop` (NULL: none) set to 0. */
static void quantize_lo(const float *W, int64_t K, const int64_t *low, int64_t n_lo, const float *imp,
                        const uint8_t *drop, int64_t t, block_mx2 *tiles, lb_fp16 *s1) {
    float tile[16 * 32];
    for (int64_t l = 0; l < n_lo; l++) {
        const int64_t c0 = low[l] * LB_MX_M;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 32; c++) {
                const size_t at = (size_t)(16 * t + r) * (size_t)K + (size_t)(c0 + c);
                tile[r * 32 + c] = drop && drop[at] ? 0.0f : W[at];
            }
        if (s1) lb_mx2_quantize_tile_fp16(tile, 32, imp ? imp + c0 : NULL, &tiles[t * n_lo + l], s1 + (t * n_lo + l) * 32);
        else lb_mx2_quantize_tile(tile, 32, imp ? imp + c0 : NULL, &tiles[t * n_lo + l]);
    }
}

lb_status lb_mx_quantize(const float *W, int64_t N, int64_t K, const float *hinv_diag, const float *imp,
                         const lb_mx_params *pp, lb_mx_matrix *out) {
    const lb_mx_params p = pp ? *pp : lb_mx_default_params();
    memset(out, 0, sizeof *out);
    if (N <= 0 || K <= 0 || N % LB_MX_ROWS || K % LB_MX_M)
        return lb_fail(LB_ERR_SHAPE, "MX: %lld x %lld is not whole tiles of 16 rows x 32 columns", (long long)N,
                       (long long)K);
    if (K > 65536) return lb_fail(LB_ERR_SHAPE, "MX: rows of %lld inputs (at most 65536: 16-bit outlier columns)", (long long)K);
    if (!(p.hi_frac >= 0.0f && p.hi_frac <= 1.0f) || !(p.outlier_frac >= 0.0f && p.outlier_frac <= 0.5f))
        return lb_fail(LB_ERR_ARG, "MX: 4-bit fraction %g (0..1) or outlier fraction %g (0..0.5) out of range",
                       (double)p.hi_frac, (double)p.outlier_frac);
    const int64_t G = K / LB_MX_M, T = N / LB_MX_ROWS;
    const int nth = p.n_threads > 0 ? p.n_threads : omp_get_num_procs();
    (void)nth; /* used by the OpenMP pragmas only */
    out->N = N, out->K = K;
    /* at least one group stays in 2 bits: a file's primary tensor holds the 2-bit tiles */
    out->n_hi = LB_MIN((int64_t)lrint((double)p.hi_frac * (double)G), G - 1);
    const int64_t n_lo = G - out->n_hi;
    double *S = malloc((size_t)G * sizeof *S);
    float *ones = hinv_diag ? NULL : malloc((size_t)K * sizeof *ones);
    ranked *rk = malloc((size_t)G * sizeof *rk);
    int64_t *low = malloc((size_t)G * sizeof *low), *high = malloc((size_t)G * sizeof *high);
    out->map = calloc((size_t)(G + 7) / 8, 1);
    out->lo = malloc((size_t)(T * n_lo + 1) * sizeof *out->lo);
    out->hi = malloc((size_t)(T * out->n_hi + 1) * sizeof *out->hi);
    out->row_ptr = calloc((size_t)N + 1, sizeof *out->row_ptr);
    out->slot = malloc((size_t)G * sizeof *out->slot);
    if (p.fp16_scales && !(out->s1 = calloc((size_t)(T * n_lo) * 32 + 1, sizeof *out->s1)))
        return lb_mx_free(out), lb_fail(LB_ERR_NOMEM, "out of memory");
    lb_status s = S && (hinv_diag || ones) && rk && low && high && out->map && out->lo && out->hi && out->row_ptr &&
                          out->slot
                      ? LB_OK
                      : lb_fail(LB_ERR_NOMEM, "out of memory");
    /* rank_by_error: every group's 2-bit tiles first (the 2-bit groups
     * keep theirs), and what they miss of W */
    block_mx2 *all = s == LB_OK && p.rank_by_error && !p.fp16_scales ? malloc((size_t)(T * G) * sizeof *all) : NULL;
    double *E = all ? malloc((size_t)(T * G) * sizeof *E) : NULL;
    if (all && !E) free(all), all = NULL;
    if (s == LB_OK && p.rank_by_error && !p.fp16_scales && !all) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    if (s == LB_OK && all) {
#pragma omp parallel for num_threads(nth) schedule(dynamic, 4)
        for (int64_t t = 0; t < T; t++)
            for (int64_t g = 0; g < G; g++) {
                float tile[16 * 32], deq[16 * 32];
                for (int r = 0; r < 16; r++)
                    memcpy(tile + r * 32, W + (size_t)(16 * t + r) * (size_t)K + (size_t)(g * LB_MX_M), 32 * sizeof *tile);
                lb_mx2_quantize_tile(tile, 32, imp ? imp + g * LB_MX_M : NULL, &all[t * G + g]);
                lb_mx2_dequantize_tile(&all[t * G + g], deq, 32);
                double e = 0.0;
                for (int i = 0; i < 16 * 32; i++) {
                    const double d = isfinite(tile[i]) ? (double)tile[i] - deq[i] : 0.0;
                    e += (imp ? imp[g * LB_MX_M + i % 32] : 1.0) * d * d;
                }
                E[t * G + g] = e;
            }
    }
    if (s == LB_OK) {
        if (ones)
            for (int64_t k = 0; k < K; k++) ones[k] = 1.0f;
        if (all)
            for (int64_t g = 0; g < G; g++) {
                S[g] = 0.0;
                for (int64_t t = 0; t < T; t++) S[g] += E[t * G + g];
            }
        else lb_mx_sensitivity(W, N, K, LB_MX_M, hinv_diag ? hinv_diag : ones, S);
        for (int64_t g = 0; g < G; g++) rk[g] = (ranked){S[g], g};
        qsort(rk, (size_t)G, sizeof *rk, by_s_desc);
        for (int64_t i = 0; i < out->n_hi; i++) out->map[rk[i].g / 8] |= (uint8_t)(1u << (rk[i].g % 8));
        int64_t nl = 0, nh = 0;
        for (int64_t g = 0; g < G; g++) {
            if (lb_mx_is_hi(out, g)) out->slot[g] = nh, high[nh++] = g;
            else out->slot[g] = nl, low[nl++] = g;
        }
#pragma omp parallel for num_threads(nth) schedule(dynamic, 4)
        for (int64_t t = 0; t < T; t++) {
            float tile[16 * 32];
            for (int64_t h = 0; h < nh; h++) {
                for (int r = 0; r < 16; r++)
                    memcpy(tile + r * 32, W + (size_t)(16 * t + r) * (size_t)K + (size_t)(high[h] * LB_MX_M),
                           32 * sizeof *tile);
                lb_mx4_quantize_tile(tile, 32, &out->hi[t * nh + h]);
            }
            if (all)
                for (int64_t l = 0; l < nl; l++) out->lo[t * nl + l] = all[t * G + low[l]];
            else quantize_lo(W, K, low, nl, imp, NULL, t, out->lo, out->s1);
        }
    }
    /* outliers: the 2-bit weights whose error (imp-weighted) is largest */
    const int64_t want = s == LB_OK && n_lo > 0 ? (int64_t)((double)p.outlier_frac * (double)N * (double)K) : 0;
    if (want > 0) {
        const int64_t n_w = N * n_lo * LB_MX_M;
        float *err = malloc((size_t)n_w * sizeof *err), *sel = malloc((size_t)n_w * sizeof *sel);
        uint8_t *drop = calloc((size_t)N * (size_t)K, 1);
        if (!err || !sel || !drop) s = lb_fail(LB_ERR_NOMEM, "out of memory (MX outliers)");
        if (s == LB_OK)
#pragma omp parallel for num_threads(nth) schedule(dynamic, 4)
            for (int64_t t = 0; t < T; t++)
                for (int64_t l = 0; l < n_lo; l++) {
                    float deq[16 * 32];
                    lb_mx2_dequantize_tile(&out->lo[t * n_lo + l], deq, 32);
                    const int64_t c0 = low[l] * LB_MX_M;
                    for (int r = 0; r < 16; r++)
                        for (int c = 0; c < 32; c++) {
                            const float w = W[(size_t)(16 * t + r) * (size_t)K + (size_t)(c0 + c)];
                            const float d = isfinite(w) ? w - deq[r * 32 + c] : 0.0f;
                            err[((16 * t + r) * n_lo + l) * LB_MX_M + c] = (imp ? imp[c0 + c] : 1.0f) * d * d;
                        }
                }
        if (s == LB_OK) {
            memcpy(sel, err, (size_t)n_w * sizeof *sel);
            const float thr = kth_largest(sel, n_w, LB_MIN(want, n_w));
            int64_t taken = 0;
            /* > thr first, then == thr up to the budget, in row order */
            for (int pass = 0; pass < 2; pass++)
                for (int64_t i = 0; i < n_w && taken < want; i++) {
                    const int hit = pass == 0 ? err[i] > thr : err[i] == thr;
                    if (!hit || !(err[i] > 0.0f)) continue;
                    const int64_t row = i / (n_lo * LB_MX_M), l = i / LB_MX_M % n_lo, c = i % LB_MX_M;
                    const size_t at = (size_t)row * (size_t)K + (size_t)(low[l] * LB_MX_M + c);
                    if (!drop[at]) drop[at] = 1, taken++;
                }
            out->n_out = taken;
            out->out_col = malloc((size_t)(taken + 1) * sizeof *out->out_col);
            out->out_val = malloc((size_t)(taken + 1) * sizeof *out->out_val);
            if (!out->out_col || !out->out_val) s = lb_fail(LB_ERR_NOMEM, "out of memory (MX outliers)");
        }
        if (s == LB_OK) {
            int64_t o = 0;
            for (int64_t r = 0; r < N; r++) {
                out->row_ptr[r] = (uint32_t)o;
                for (int64_t c = 0; c < K; c++)
                    if (drop[(size_t)r * (size_t)K + (size_t)c]) out->out_col[o++] = (uint16_t)c;
            }
            out->row_ptr[N] = (uint32_t)o;
            /* the tiles holding outliers, again without them; an outlier
             * keeps what its (refitted) code misses, in fp16 */
#pragma omp parallel for num_threads(nth) schedule(dynamic, 4)
            for (int64_t t = 0; t < T; t++) {
                if (out->row_ptr[16 * t + 16] == out->row_ptr[16 * t]) continue;
                quantize_lo(W, K, low, n_lo, imp, drop, t, out->lo, out->s1);
                for (int64_t r = 16 * t; r < 16 * t + 16; r++)
                    for (uint32_t k = out->row_ptr[r]; k < out->row_ptr[r + 1]; k++) {
                        const int64_t c = out->out_col[k];
                        const block_mx2 *b = &out->lo[t * n_lo + out->slot[c / LB_MX_M]];
                        const int h = (int)(c % LB_MX_M) / 16, rr = (int)(r % 16), cc = (int)(c % LB_MX_M);
                        const int q = lb_mx2_q(b, rr, cc);
                        const float dense = lo_scale(out, t * n_lo + out->slot[c / LB_MX_M], h, rr) *
                                            ((float)q - lb_mx2_zero(b, h, rr));
                        out->out_val[k] = lb_f32_to_fp16(W[(size_t)r * (size_t)K + (size_t)c] - dense);
                    }
            }
        }
        free(err), free(sel), free(drop);
    }
    free(S), free(ones), free(rk), free(low), free(high), free(all), free(E);
    if (s) lb_mx_free(out);
    return s;
}

void lb_mx_dequantize(const lb_mx_matrix *m, float *W) {
    const int64_t G = m->K / LB_MX_M, n_lo = G - m->n_hi;
    float tile[16 * 32];
    for (int64_t t = 0; t < m->N / LB_MX_ROWS; t++) {
        int64_t l = 0, h = 0;
        for (int64_t g = 0; g < G; g++) {
            if (lb_mx_is_hi(m, g)) lb_mx4_dequantize_tile(&m->hi[t * m->n_hi + h++], tile, 32);
            else if (!m->s1) lb_mx2_dequantize_tile(&m->lo[t * n_lo + l++], tile, 32);
            else {
                for (int r = 0; r < 16; r++)
                    for (int c = 0; c < 32; c++)
                        tile[r * 32 + c] = lo_scale(m, t * n_lo + l, c / 16, r) *
                                           ((float)lb_mx2_q(&m->lo[t * n_lo + l], r, c) - lb_mx2_zero(&m->lo[t * n_lo + l], c / 16, r));
                l++;
            }
            for (int r = 0; r < 16; r++)
                memcpy(W + (size_t)(16 * t + r) * (size_t)m->K + (size_t)(g * LB_MX_M), tile + r * 32,
                       32 * sizeof *tile);
        }
    }
    for (int64_t r = 0; r < m->N; r++)
        for (uint32_t o = m->row_ptr[r]; o < m->row_ptr[r + 1]; o++)
            W[(size_t)r * (size_t)m->K + m->out_col[o]] += lb_fp16_to_f32(m->out_val[o]);
}

static int code_near(float v, int hi) {
    if (!(v > 0.0f)) return 0;
    if (v >= (float)hi) return hi;
    return (int)lrintf(v);
}

float lb_mx_round_at(lb_mx_matrix *m, int64_t row, int64_t col, float x) {
    const int64_t g = col / LB_MX_M, t = row / LB_MX_ROWS, n_lo = m->K / LB_MX_M - m->n_hi;
    const int r = (int)(row % LB_MX_ROWS), c = (int)(col % LB_MX_M);
    if (!isfinite(x)) x = 0.0f;
    if (lb_mx_is_hi(m, g)) {
        block_mx4 *b = &m->hi[t * m->n_hi + m->slot[g]];
        const float s = lb_fp16_to_f32(b->s[r]);
        const int z = (b->z[r / 2] >> (4 * (r % 2))) & 15;
        const int q = s > 0.0f ? code_near(x / s + (float)z, 15) : z;
        lb_mx4_set_q(b, r, c, q);
        return s * (float)(q - z);
    }
    block_mx2 *b = &m->lo[t * n_lo + m->slot[g]];
    const int h = c / 16;
    const float s1 = lo_scale(m, t * n_lo + m->slot[g], h, r), z1 = lb_mx2_zero(b, h, r);
    const int q = s1 > 0.0f ? code_near(x / s1 + z1, 3) : 0;
    float v = s1 * ((float)q - z1);
    /* an outlier keeps what the code misses of x, in fp16 */
    uint32_t lo = m->row_ptr[row], hi = m->row_ptr[row + 1];
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (m->out_col[mid] < col) lo = mid + 1;
        else hi = mid;
    }
    if (lo < m->row_ptr[row + 1] && m->out_col[lo] == col) {
        m->out_val[lo] = lb_f32_to_fp16(x - v);
        v += lb_fp16_to_f32(m->out_val[lo]);
    }
    lb_mx2_set_q(b, r, c, q);
    return v;
}
