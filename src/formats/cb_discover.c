/* Codebook discovery (seed 000, Algorithm 1 lines 1-10).
 *
 * Every 16-weight group is scaled so its largest magnitude is 127 (the int8
 * range) and kept as int8. Phase 1 turns each group into its histogram over
 * `bins` equal bins of the int8 range (counts out of 16: the normalised
 * distribution times 16) and runs k-means over those histograms, giving C
 * clusters of groups with similar shapes. Phase 2 runs 1-D k-means over all
 * values of each cluster for its k centroids. The centroids are finally
 * mapped from the int8 range onto the books' range (lb_cb_discover_limit)
 * and sorted.
 *
 * Determinism: sampling is a hash of (seed, group index), k-means++ draws
 * from a seeded generator, and every sum that decides a centroid is an
 * integer sum (histogram counts, int8 values), so the books are the same for
 * a seed whatever the thread count. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "formats/cb_fit.h"

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

int lb_cb_discover_limit(int count, int k) {
    /* CB2: narrow books (formats/cb.h), which the kernels sum in integers;
     * measured on Gemma 3 270M (C = 8, 20 chunks of WikiText-2): KLD 1.448
     * against 1.452 with books to +-63, PPL 84.6 against 81.9. CB3's 8
     * centroids need the finer grid: narrow, its KLD rose from 0.360 to
     * 0.371 there and the tiny test model fell behind Q3_K. */
    return k == 4 ? lb_cb_narrow_limit(count) : CB_VMAX;
}

lb_status lb_cb_groups_add(lb_cb_groups *G, const float *x, int64_t n, int64_t g0, double rate, uint64_t seed) {
    for (int64_t i = 0; i < n / CB_SUB; i++) {
        if (rate < 1.0) {
            uint64_t h = seed ^ (uint64_t)(g0 + i) * 0xD1B54A32D192ED03ULL;
            if (uniform01(&h) >= rate) continue;
        }
        const float *xg = x + CB_SUB * i;
        float amax = 0.0f;
        for (int l = 0; l < CB_SUB; l++) amax = LB_MAX(amax, fabsf(xg[l]));
        if (!(amax > 0.0f) || !isfinite(amax)) continue; /* no shape to learn from */
        if (G->n == G->cap) {
            const int64_t cap = G->cap ? 2 * G->cap : 4096;
            void *g = realloc(G->g, (size_t)cap * sizeof *G->g);
            if (!g) return lb_fail(LB_ERR_NOMEM, "out of memory collecting weight groups");
            G->g = g;
            G->cap = cap;
        }
        const float iscale = 127.0f / amax;
        for (int l = 0; l < CB_SUB; l++) {
            const long v = lroundf(xg[l] * iscale);
            G->g[G->n][l] = (int8_t)LB_MAX(-127, LB_MIN(127, v));
        }
        G->n++;
    }
    return LB_OK;
}

void lb_cb_groups_free(lb_cb_groups *G) {
    free(G->g);
    memset(G, 0, sizeof *G);
}

#define MAX_BINS 64

static void histogram(const int8_t *g, int bins, float *h) {
    for (int b = 0; b < bins; b++) h[b] = 0.0f;
    for (int l = 0; l < CB_SUB; l++) h[((int)g[l] + 128) * bins / 256] += 1.0f;
}

static float dist2(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += (a[i] - b[i]) * (a[i] - b[i]);
    return s;
}

/* Nearest centroid of every group's histogram; returns how many changed. */
static int64_t assign_all(const lb_cb_groups *G, int bins, const float *cent, int C, int32_t *lab, float *dmin,
                          int nth) {
    int64_t changed = 0;
#pragma omp parallel for num_threads(nth) schedule(static) reduction(+ : changed)
    for (int64_t i = 0; i < G->n; i++) {
        float h[MAX_BINS], best = FLT_MAX;
        int bc = 0;
        histogram(G->g[i], bins, h);
        for (int c = 0; c < C; c++) {
            const float d = dist2(h, cent + c * bins, bins);
            if (d < best) {
                best = d;
                bc = c;
            }
        }
        if (lab[i] != bc) changed++;
        lab[i] = bc;
        dmin[i] = best;
    }
    return changed;
}

/* Phase 1: k-means++ seeding, then Lloyd iterations with integer sums. */
static lb_status phase1(const lb_cb_groups *G, const lb_cb_discover_params *p, int bins, int iters, int32_t *lab) {
    const int C = p->count, nth = p->n_threads > 0 ? p->n_threads : omp_get_num_procs();
    float *cent = calloc((size_t)C * bins, sizeof *cent), *dmin = malloc((size_t)G->n * sizeof *dmin);
    int64_t *sum = calloc((size_t)C * bins, sizeof *sum), *cnt = calloc((size_t)C, sizeof *cnt);
    if (!cent || !dmin || !sum || !cnt) {
        free(cent), free(dmin), free(sum), free(cnt);
        return lb_fail(LB_ERR_NOMEM, "out of memory in codebook discovery");
    }
    uint64_t rng = p->seed ^ 0x5851F42D4C957F2DULL;
    /* k-means++ over a bounded subsample keeps seeding cheap. */
    const int64_t ns = LB_MIN(G->n, 65536);
    const int64_t stride = G->n / ns;
    double *w = malloc((size_t)ns * sizeof *w);
    if (!w) {
        free(cent), free(dmin), free(sum), free(cnt);
        return lb_fail(LB_ERR_NOMEM, "out of memory in codebook discovery");
    }
    histogram(G->g[(int64_t)(uniform01(&rng) * (double)ns) * stride], bins, cent);
    for (int64_t i = 0; i < ns; i++) w[i] = DBL_MAX;
    for (int c = 1; c < C; c++) {
        double total = 0.0;
        for (int64_t i = 0; i < ns; i++) {
            float h[MAX_BINS];
            histogram(G->g[i * stride], bins, h);
            w[i] = LB_MIN(w[i], (double)dist2(h, cent + (c - 1) * bins, bins));
            total += w[i];
        }
        double r = uniform01(&rng) * total;
        int64_t pick = ns - 1;
        for (int64_t i = 0; i < ns; i++)
            if ((r -= w[i]) < 0.0) {
                pick = i;
                break;
            }
        histogram(G->g[pick * stride], bins, cent + c * bins);
    }
    free(w);

    for (int64_t i = 0; i < G->n; i++) lab[i] = -1;
    lb_status s = LB_OK;
    for (int it = 0; it < iters; it++) {
        if (lb_cancel_requested()) {
            s = lb_fail(LB_ERR_INTERRUPTED, "interrupted");
            break;
        }
        const int64_t changed = assign_all(G, bins, cent, C, lab, dmin, nth);
        if (p->progress) {
            char what[96];
            snprintf(what, sizeof what, "phase 1: k-means over %lld histograms, %lld moved", (long long)G->n,
                     (long long)changed);
            p->progress(p->user, what, it + 1, iters);
        }
        memset(sum, 0, (size_t)C * bins * sizeof *sum);
        memset(cnt, 0, (size_t)C * sizeof *cnt);
        for (int64_t i = 0; i < G->n; i++) {
            float h[MAX_BINS];
            histogram(G->g[i], bins, h);
            for (int b = 0; b < bins; b++) sum[lab[i] * bins + b] += (int64_t)h[b];
            cnt[lab[i]]++;
        }
        for (int c = 0; c < C; c++) {
            if (cnt[c] == 0) {
                /* An empty cluster restarts at the group worst served (lowest index on ties). */
                int64_t far = 0;
                for (int64_t i = 1; i < G->n; i++)
                    if (dmin[i] > dmin[far]) far = i;
                histogram(G->g[far], bins, cent + c * bins);
                dmin[far] = 0.0f;
                lab[far] = c;
                continue;
            }
            for (int b = 0; b < bins; b++) cent[c * bins + b] = (float)((double)sum[c * bins + b] / (double)cnt[c]);
        }
        if (changed == 0) {
            if (p->progress) p->progress(p->user, "phase 1: converged", iters, iters);
            break;
        }
    }
    free(cent), free(dmin), free(sum), free(cnt);
    return s;
}

/* Phase 2: k centroids of a weighted 1-D distribution over -127..127. */
static void kmeans_1d(const int64_t *hist, int k, int iters, float *cent) {
    int64_t total = 0;
    for (int v = 0; v < 255; v++) total += hist[v];
    /* start at the quantiles (i + 0.5) / k */
    int64_t run = 0;
    int next = 0;
    for (int v = 0; v < 255 && next < k; v++) {
        run += hist[v];
        while (next < k && (double)run >= ((double)next + 0.5) * (double)total / k) cent[next++] = (float)(v - 127);
    }
    while (next < k) cent[next++] = 127.0f; /* empty cluster: spread later by sort */
    for (int it = 0; it < iters; it++) {
        double sw[CB_MAX_K] = {0}, sx[CB_MAX_K] = {0};
        for (int v = 0; v < 255; v++) {
            if (!hist[v]) continue;
            int bc = 0;
            float best = FLT_MAX;
            for (int c = 0; c < k; c++) {
                const float d = fabsf((float)(v - 127) - cent[c]);
                if (d < best) {
                    best = d;
                    bc = c;
                }
            }
            sw[bc] += (double)hist[v];
            sx[bc] += (double)hist[v] * (double)(v - 127);
        }
        int moved = 0;
        for (int c = 0; c < k; c++) {
            if (sw[c] == 0.0) continue;
            const float nc = (float)(sx[c] / sw[c]);
            if (nc != cent[c]) moved = 1;
            cent[c] = nc;
        }
        if (!moved) break;
    }
}

/* Phase 3 (our addition to Algorithm 1): Lloyd iterations on the
 * quantizer's own objective. Every group picks the book that fits it best
 * with a free scale a (what PTQ will do), then every centroid moves to the
 * least-squares optimum for those choices, sum(a * x) / sum(a^2) over the
 * values assigned to it. Phase 2 fits centroids to max-normalised values;
 * this accounts for the scale PTQ actually picks. Sums are formed per fixed
 * chunk and added in chunk order, so the result does not depend on threads. */
#define REFINE_CHUNK 4096
static lb_status refine(const lb_cb_groups *G, const lb_cb_discover_params *p, cb_fbook *fb) {
    const int C = p->count, k = p->k, nth = p->n_threads > 0 ? p->n_threads : omp_get_num_procs();
    const int64_t nchunks = (G->n + REFINE_CHUNK - 1) / REFINE_CHUNK;
    const size_t per = (size_t)C * CB_MAX_K * 2;
    double *part = calloc((size_t)nchunks * per, sizeof *part);
    if (!part) return lb_fail(LB_ERR_NOMEM, "out of memory in codebook refinement");
    for (int it = 0; it < p->refine; it++) {
        if (lb_cancel_requested()) {
            free(part);
            return lb_fail(LB_ERR_INTERRUPTED, "interrupted");
        }
        for (int c = 0; c < C; c++) cb_fbook_thresholds(&fb[c], k);
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
        for (int64_t ch = 0; ch < nchunks; ch++) {
            double *acc = part + (size_t)ch * per; /* [c][i] a*x, then [c][i] a*a */
            memset(acc, 0, per * sizeof *acc);
            const float ones[CB_SUB] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
            for (int64_t g = ch * REFINE_CHUNK; g < LB_MIN(G->n, (ch + 1) * REFINE_CHUNK); g++) {
                float x[CB_SUB], sxx = 0.0f, xmax = 0.0f;
                for (int l = 0; l < CB_SUB; l++) {
                    x[l] = (float)G->g[g][l];
                    sxx += x[l] * x[l];
                    if (fabsf(x[l]) > fabsf(xmax)) xmax = x[l];
                }
                float best = FLT_MAX, best_a = 0.0f;
                int bc = -1;
                for (int c = 0; c < C; c++) {
                    float a;
                    const float e = cb_fit_free(x, ones, sxx, xmax, &fb[c], k, &a);
                    if (a > 0.0f && e < best) {
                        best = e;
                        best_a = a;
                        bc = c;
                    }
                }
                if (bc < 0) continue;
                uint8_t q[CB_SUB];
                cb_assign(x, ones, &fb[bc], k, best_a, q);
                for (int l = 0; l < CB_SUB; l++) {
                    acc[bc * CB_MAX_K + q[l]] += (double)best_a * x[l];
                    acc[(size_t)C * CB_MAX_K + bc * CB_MAX_K + q[l]] += (double)best_a * best_a;
                }
            }
        }
        for (int c = 0; c < C; c++)
            for (int i = 0; i < k; i++) {
                double ax = 0.0, aa = 0.0;
                for (int64_t ch = 0; ch < nchunks; ch++) {
                    ax += part[(size_t)ch * per + c * CB_MAX_K + i];
                    aa += part[(size_t)ch * per + (size_t)C * CB_MAX_K + c * CB_MAX_K + i];
                }
                if (aa > 0.0) fb[c].v[i] = (float)(ax / aa); /* unused centroids stay */
            }
        /* keep each book ascending for the threshold search */
        for (int c = 0; c < C; c++)
            for (int i = 1; i < k; i++)
                for (int j = i; j > 0 && fb[c].v[j] < fb[c].v[j - 1]; j--) {
                    const float t = fb[c].v[j];
                    fb[c].v[j] = fb[c].v[j - 1];
                    fb[c].v[j - 1] = t;
                }
        if (p->progress) p->progress(p->user, "phase 3: refining centroids for the quantizer", it + 1, p->refine);
    }
    free(part);
    return LB_OK;
}

static int cmp_i8(const void *a, const void *b) { return *(const int8_t *)a - *(const int8_t *)b; }

lb_status lb_cb_discover(const lb_cb_groups *G, const lb_cb_discover_params *p, lb_cb_books *out) {
    memset(out, 0, sizeof *out);
    if (p->count != 4 && p->count != 8 && p->count != 16)
        return lb_fail(LB_ERR_ARG, "codebook count must be 4, 8 or 16, not %d", p->count);
    if (p->k != 4 && p->k != 8) return lb_fail(LB_ERR_ARG, "centroids per book must be 4 or 8, not %d", p->k);
    if (G->n < (int64_t)p->count * 16)
        return lb_fail(LB_ERR_ARG, "only %lld non-zero weight groups: too few to find %d codebooks", (long long)G->n,
                       p->count);
    const int bins = p->bins > 0 ? LB_MIN(p->bins, MAX_BINS) : 16;
    const int iters = p->iters > 0 ? p->iters : 30;
    int32_t *lab = malloc((size_t)G->n * sizeof *lab);
    int64_t *hist = calloc((size_t)p->count * 255, sizeof *hist);
    if (!lab || !hist) {
        free(lab), free(hist);
        return lb_fail(LB_ERR_NOMEM, "out of memory in codebook discovery");
    }
    lb_status s = phase1(G, p, bins, iters, lab);
    if (s == LB_OK) {
        for (int64_t i = 0; i < G->n; i++)
            for (int l = 0; l < CB_SUB; l++) hist[lab[i] * 255 + G->g[i][l] + 127]++;
        cb_fbook fb[CB_MAX_BOOKS];
        for (int c = 0; c < p->count; c++) {
            kmeans_1d(hist + c * 255, p->k, 100, fb[c].v);
            if (p->progress) p->progress(p->user, "phase 2: k-means over each cluster's values", c + 1, p->count);
        }
        if (p->refine > 0) s = refine(G, p, fb);
        /* int8 range -> the books' range, one factor for all books (it keeps
         * their relative widths, which the coarse integer scales rely on) */
        const int lim = lb_cb_discover_limit(p->count, p->k);
        float vmax = 0.0f;
        for (int c = 0; c < p->count; c++)
            for (int i = 0; i < p->k; i++) vmax = LB_MAX(vmax, fabsf(fb[c].v[i]));
        out->count = p->count;
        out->k = p->k;
        for (int c = 0; c < p->count; c++) {
            for (int i = 0; i < p->k; i++) {
                const long v = vmax > 0.0f ? lroundf(fb[c].v[i] * ((float)lim / vmax)) : 0;
                out->v[c][i] = (int8_t)LB_MAX(CB_VMIN, LB_MIN(CB_VMAX, v));
            }
            qsort(out->v[c], (size_t)p->k, 1, cmp_i8);
        }
    }
    free(lab);
    free(hist);
    return s;
}
