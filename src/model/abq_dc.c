/* Distribution-correction vectors by alternating least squares (model/abq_dc.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model/abq_dc.h"

#define DC_ALTERNATIONS 4
#define DC_CG_ITERS 40
#define DC_CG_TOL 1e-8 /* on |residual|^2 relative to |H^T r|^2 */
#define DC_PARTS 16     /* token blocks of H^T u (fixed: the sum must not depend on the threads) */

typedef struct {
    const float *H;
    int64_t T, K;
    int n_threads;
    double *part; /* DC_PARTS x K: partial sums of H^T u */
} mats;

/* u = H v (T) */
static void h_mul(const mats *m, const double *v, double *u) {
#pragma omp parallel for schedule(static) num_threads(m->n_threads)
    for (int64_t t = 0; t < m->T; t++) {
        const float *h = m->H + t * m->K;
        double s = 0.0;
        for (int64_t j = 0; j < m->K; j++) s += (double)h[j] * v[j];
        u[t] = s;
    }
}

/* v = H^T u (K): the tokens in DC_PARTS fixed blocks, each summed in order,
 * the blocks added in order, so the result does not depend on the threads. */
static void ht_mul(const mats *m, const double *u, double *v) {
#pragma omp parallel for schedule(static) num_threads(m->n_threads)
    for (int i = 0; i < DC_PARTS; i++) {
        double *p = m->part + (size_t)i * m->K;
        memset(p, 0, (size_t)m->K * sizeof *p);
        const int64_t t0 = m->T * i / DC_PARTS, t1 = m->T * (i + 1) / DC_PARTS;
        for (int64_t t = t0; t < t1; t++) {
            const float *h = m->H + t * m->K;
            const double ut = u[t];
            for (int64_t j = 0; j < m->K; j++) p[j] += ut * h[j];
        }
    }
    for (int64_t j = 0; j < m->K; j++) {
        double s = 0.0;
        for (int i = 0; i < DC_PARTS; i++) s += m->part[(size_t)i * m->K + j];
        v[j] = s;
    }
}

static double dot(const double *x, const double *y, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

/* b = (H^T H + lambda I)^-1 H^T r by conjugate gradients from b = 0.
 * w: 4 work vectors of K and one of T. */
static void ridge_solve(const mats *m, const double *r, double lambda, double *b, double *w) {
    const int64_t K = m->K;
    double *res = w, *p = w + K, *q = w + 2 * K, *tmp = w + 3 * K, *ht = w + 4 * K;
    ht_mul(m, r, res); /* residual of b = 0 */
    memcpy(p, res, (size_t)K * sizeof *p);
    memset(b, 0, (size_t)K * sizeof *b);
    double rr = dot(res, res, K);
    const double stop = rr * DC_CG_TOL;
    for (int it = 0; it < DC_CG_ITERS && rr > stop && rr > 0.0; it++) {
        h_mul(m, p, ht);
        ht_mul(m, ht, tmp);
        for (int64_t j = 0; j < K; j++) q[j] = tmp[j] + lambda * p[j];
        const double pq = dot(p, q, K);
        if (!(pq > 0.0)) break;
        const double alpha = rr / pq;
        for (int64_t j = 0; j < K; j++) b[j] += alpha * p[j], res[j] -= alpha * q[j];
        const double rr1 = dot(res, res, K);
        for (int64_t j = 0; j < K; j++) p[j] = res[j] + (rr1 / rr) * p[j];
        rr = rr1;
    }
}

/* a = E^T u / |u|^2; returns |E^T u|^2 / |u|^2 (the error energy it removes). */
static double a_step(const float *E, int64_t T, int64_t N, const double *u, double *a) {
    memset(a, 0, (size_t)N * sizeof *a);
    double uu = 0.0;
    for (int64_t t = 0; t < T; t++) {
        uu += u[t] * u[t];
        const float *e = E + t * N;
        for (int64_t i = 0; i < N; i++) a[i] += u[t] * e[i];
    }
    if (!(uu > 0.0)) {
        memset(a, 0, (size_t)N * sizeof *a);
        return 0.0;
    }
    const double gain = dot(a, a, N) / uu;
    for (int64_t i = 0; i < N; i++) a[i] /= uu;
    return gain;
}

int lb_abq_dc_fit(const float *H, const float *E, int64_t T, int64_t K, int64_t N, double ridge, int n_threads,
                  float *a_out, float *b_out, lb_abq_dc_fit_info *info) {
    memset(a_out, 0, (size_t)N * sizeof *a_out);
    memset(b_out, 0, (size_t)K * sizeof *b_out);
    *info = (lb_abq_dc_fit_info){0};
    if (n_threads < 1) n_threads = 1;
    double *a = malloc((size_t)N * sizeof *a), *b = malloc((size_t)K * sizeof *b);
    double *u = malloc((size_t)T * sizeof *u), *r = malloc((size_t)T * sizeof *r);
    double *w = malloc(((size_t)4 * K + T) * sizeof *w);
    double *part = malloc((size_t)DC_PARTS * K * sizeof *part);
    int rc = -1;
    if (!a || !b || !u || !r || !w || !part) goto done;
    rc = 0;
    const mats m = {H, T, K, n_threads, part};
    double e2 = 0.0, h2 = 0.0;
    for (int64_t i = 0; i < T * N; i++) e2 += (double)E[i] * E[i];
    for (int64_t i = 0; i < T * K; i++) h2 += (double)H[i] * H[i];
    info->err0 = info->err1 = e2;
    if (!(e2 > 0.0) || !(h2 > 0.0) || !isfinite(e2) || !isfinite(h2)) goto done;
    const double lambda = ridge * h2 / (double)K;
    for (int64_t t = 0; t < T; t++) u[t] = 1.0;
    a_step(E, T, N, u, a); /* the output's mean error */
    double gain = 0.0;
    for (int it = 0; it < DC_ALTERNATIONS; it++) {
        const double aa = dot(a, a, N);
        if (!(aa > 0.0)) break;
        for (int64_t t = 0; t < T; t++) {
            const float *e = E + t * N;
            double s = 0.0;
            for (int64_t i = 0; i < N; i++) s += (double)e[i] * a[i];
            r[t] = s / aa;
        }
        ridge_solve(&m, r, lambda, b, w);
        h_mul(&m, b, u);
        gain = a_step(E, T, N, u, a);
        info->iters = it + 1;
    }
    if (!(gain > 0.0) || !isfinite(gain)) goto done; /* nothing found: no correction */
    info->err1 = e2 - gain > 0.0 ? e2 - gain : 0.0;
    for (int64_t i = 0; i < N; i++) a_out[i] = (float)a[i];
    for (int64_t j = 0; j < K; j++) b_out[j] = (float)b[j];
done:
    free(a), free(b), free(u), free(r), free(w), free(part);
    return rc;
}
