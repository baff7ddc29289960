/* BCQ{q}_G{g} (formats/bcq.h): the reference format code. One generic
 * implementation over (q, g); the per-type entry points the traits and the
 * kernel table name are thin wrappers with the two as constants.
 *   - geometry, traits, the ids;
 *   - the quantizer: greedy initialisation, alternating least squares /
 *     nearest codes, optionally importance-weighted; GPTQ's hook;
 *   - dequantize, the dot against Q8_0_LUT4 (by its int8 values and by its
 *     tables), the Q8_0_LUT4 activation builder;
 *   - uniform -> BCQ (LUT-GEMM App. C).
 * The _LUT layouts and the mu = 8 float tables are in formats/bcq_lut.c. */
#include <math.h>
#include <stdlib.h>

#include "formats/bcq.h"
#include "formats/gq.h"
#include "formats/legacy.h"

/* Values are sums in a fixed order and products are never fused, so every
 * compiler and every kernel gives the same bits (the kernels mirror this). */
#include "core/fp_strict.h"

#define FP16_MAX 65504.0

static const struct {
    int type, q, g;
} kinds[] = {
#define BCQ_KIND(name, NAME, Q, G) {LB_TYPE_##NAME, Q, G},
    LB_BCQ_LIST(BCQ_KIND)
#undef BCQ_KIND
};
enum { N_BCQ = sizeof kinds / sizeof kinds[0] };
static_assert(sizeof kinds / sizeof kinds[0] == LB_BCQ_LAST - LB_BCQ_FIRST + 1, "BCQ ids are contiguous");
static_assert(LB_BCQ_LUT_LAST - LB_BCQ_LUT_FIRST + 1 == LB_BCQ_LAST - LB_BCQ_FIRST + 1, "one _LUT per BCQ type");

/* index 0..11 of a plain type or of its _LUT layout, -1 otherwise */
static int kind_of(int type) {
    if (type >= LB_BCQ_FIRST && type <= LB_BCQ_LAST) return type - LB_BCQ_FIRST;
    if (type >= LB_BCQ_LUT_FIRST && type <= LB_BCQ_LUT_LAST) return type - LB_BCQ_LUT_FIRST;
    return -1;
}

int lb_bcq_bits(int type) {
    const int i = kind_of(type);
    return i < 0 ? 0 : kinds[i].q;
}
int lb_bcq_group(int type) {
    const int i = kind_of(type);
    return i < 0 ? 0 : kinds[i].g;
}
int lb_bcq_is_plain(int type) { return type >= LB_BCQ_FIRST && type <= LB_BCQ_LAST; }
int lb_bcq_type(int q, int g) {
    for (int i = 0; i < N_BCQ; i++)
        if (kinds[i].q == q && kinds[i].g == g) return kinds[i].type;
    return -1;
}
int lb_bcq_lut_of(int type) { return lb_bcq_is_plain(type) ? type - LB_BCQ_FIRST + LB_BCQ_LUT_FIRST : -1; }
int lb_bcq_plain_of_lut(int type) {
    return type >= LB_BCQ_LUT_FIRST && type <= LB_BCQ_LUT_LAST ? type - LB_BCQ_LUT_FIRST + LB_BCQ_FIRST : -1;
}

lb_status lb_bcq_check(int q, int g, int64_t k) {
    if (q < 1) return lb_fail(LB_ERR_FORMAT, "BCQ with q = %d bit planes: a BCQ group needs at least one", q);
    if (q > 8) return lb_fail(LB_ERR_FORMAT, "BCQ with q = %d bit planes: more than 8 is not a BCQ format", q);
    if (q > LB_BCQ_MAX_Q)
        return lb_fail(LB_ERR_UNSUPPORTED, "BCQ with q = %d bit planes: the BCQ types hold 1 to %d", q, LB_BCQ_MAX_Q);
    if (g != 32 && g != 64 && g != 128)
        return lb_fail(LB_ERR_FORMAT, "BCQ group of %d weights: the BCQ types have groups of 32, 64 or 128", g);
    if (k <= 0 || k % g)
        return lb_fail(LB_ERR_FORMAT, "BCQ%d_G%d: the group of %d weights does not divide the row of %lld", q, g, g,
                       (long long)k);
    return LB_OK;
}

/* ---- block fields ---- */

static inline float get_h(const uint8_t *p) {
    lb_fp16 h;
    memcpy(&h, p, 2);
    return lb_fp16_to_f32(h);
}
static inline void put_h(uint8_t *p, lb_fp16 h) { memcpy(p, &h, 2); }
static inline const uint8_t *cplane(const void *blk, int q, int g, int i) {
    return (const uint8_t *)blk + 2 * (q + 1) + i * g / 8;
}

int lb_bcq_get_code(int q, int g, const void *blk, int j) {
    int c = 0;
    for (int i = 0; i < q; i++) c |= ((cplane(blk, q, g, i)[j / 8] >> (j % 8)) & 1) << i;
    return c;
}

void lb_bcq_set_code(int q, int g, void *blk, int j, int c) {
    for (int i = 0; i < q; i++) {
        uint8_t *p = (uint8_t *)blk + 2 * (q + 1) + i * g / 8 + j / 8;
        *p = (uint8_t)((*p & ~(1u << (j % 8))) | (((unsigned)c >> i & 1u) << (j % 8)));
    }
}

/* The 2^q values of a block's codes (bcq.h's order of operations). */
static void code_values(int q, const float *a, float z, float *v) {
    for (int c = 0; c < (1 << q); c++) {
        float x = z;
        for (int i = 0; i < q; i++) x += (c >> i & 1) ? a[i] : -a[i];
        v[c] = x;
    }
}

static void block_params(int q, const void *blk, float *a, float *z) {
    for (int i = 0; i < q; i++) a[i] = get_h((const uint8_t *)blk + 2 * i);
    *z = get_h((const uint8_t *)blk + 2 * q);
}

void lb_bcq_values(int q, const void *head, float *v) {
    float a[LB_BCQ_MAX_Q], z;
    block_params(q, head, a, &z);
    code_values(q, a, z, v);
}

float lb_bcq_code_value(int q, const void *blk, int c) {
    float v[1 << LB_BCQ_MAX_Q];
    lb_bcq_values(q, blk, v);
    return v[c & ((1 << q) - 1)];
}

/* ---- quantizer ---- */

static int iters_setting = 8;
void lb_bcq_set_iters(int iters) { iters_setting = iters < 0 ? 0 : iters; }
int lb_bcq_iters(void) { return iters_setting; }

/* fp16 of v, saturated to the finite range (NaN: 0) */
static lb_fp16 to_h(double v) {
    if (isnan(v)) return 0;
    if (v > FP16_MAX) v = FP16_MAX;
    if (v < -FP16_MAX) v = -FP16_MAX;
    return lb_f32_to_fp16((float)v);
}

typedef struct {
    int q, g, nc;
    const float *x; /* sanitized weights */
    const float *h; /* importance (>= 0) */
    int *k;         /* g ints of scratch (nearest_codes) */
    double *r;      /* g doubles of scratch (init_greedy) */
} fit_ctx;

/* E = sum h (x - v[code])^2, in double, in order */
static double error_of(const fit_ctx *f, const float *v, const uint8_t *code) {
    double e = 0.0;
    for (int j = 0; j < f->g; j++) {
        const double d = (double)f->x[j] - (double)v[code[j]];
        e += (double)f->h[j] * d * d;
    }
    return e;
}

/* Each weight's nearest value: the values sorted (stable), the weight
 * placed among the midpoints m of neighbours, a tie going to the smaller
 * value. x > m is decided exactly in float: m (exact in double) rounded
 * down to a float m', x > m iff x > m' for a float x. 1 if a code changed. */
static int nearest_codes(const fit_ctx *f, const float *v, uint8_t *code) {
    int ord[16], *restrict k = f->k;
    float mid[15];
    const int nc = f->nc, g = f->g;
    for (int c = 0; c < nc; c++) ord[c] = c;
    for (int a = 1; a < nc; a++) { /* insertion sort by value, stable */
        const int c = ord[a];
        int b = a;
        while (b > 0 && v[ord[b - 1]] > v[c]) ord[b] = ord[b - 1], b--;
        ord[b] = c;
    }
    for (int t = 0; t + 1 < nc; t++) {
        const double m = 0.5 * ((double)v[ord[t]] + (double)v[ord[t + 1]]);
        float mf = (float)m;
        if ((double)mf > m) mf = nextafterf(mf, -INFINITY);
        mid[t] = mf;
    }
    const float *restrict x = f->x;
    for (int j = 0; j < g; j++) k[j] = 0;
    for (int t = 0; t + 1 < nc; t++) {
        const float m = mid[t];
#pragma omp simd
        for (int j = 0; j < g; j++) k[j] += x[j] > m;
    }
    int changed = 0;
    for (int j = 0; j < g; j++) {
        const uint8_t c = (uint8_t)ord[k[j]];
        changed |= c != code[j];
        code[j] = c;
    }
    return changed;
}

/* Least squares for alpha (q) and z given the codes: the normal equations of
 * the design [b_0 .. b_{q-1}, 1] from per-code sums, solved in double with
 * partial pivoting (a tiny ridge for singular cases: a plane constant over
 * the group, two planes equal). 0 if it could not be solved. */
static int least_squares(const fit_ctx *f, const uint8_t *code, double *theta) {
    const int q = f->q, n = q + 1;
    double Hc[16] = {0}, Xc[16] = {0};
    for (int j = 0; j < f->g; j++) {
        Hc[code[j]] += (double)f->h[j];
        Xc[code[j]] += (double)f->h[j] * (double)f->x[j];
    }
    double A[LB_BCQ_MAX_Q + 1][LB_BCQ_MAX_Q + 2] = {{0}};
    for (int c = 0; c < f->nc; c++) {
        if (Hc[c] == 0.0 && Xc[c] == 0.0) continue;
        double phi[LB_BCQ_MAX_Q + 1];
        for (int i = 0; i < q; i++) phi[i] = (c >> i & 1) ? 1.0 : -1.0;
        phi[q] = 1.0;
        for (int r = 0; r < n; r++) {
            for (int s = 0; s < n; s++) A[r][s] += Hc[c] * phi[r] * phi[s];
            A[r][n] += Xc[c] * phi[r];
        }
    }
    double tr = 0.0;
    for (int r = 0; r < n; r++) tr += A[r][r];
    if (!(tr > 0.0)) return 0;
    for (int r = 0; r < n; r++) A[r][r] += 1e-12 * tr;
    for (int col = 0; col < n; col++) {
        int p = col;
        for (int r = col + 1; r < n; r++)
            if (fabs(A[r][col]) > fabs(A[p][col])) p = r;
        if (!(fabs(A[p][col]) > 1e-300)) return 0;
        if (p != col)
            for (int s = 0; s <= n; s++) {
                const double t = A[p][s];
                A[p][s] = A[col][s], A[col][s] = t;
            }
        for (int r = col + 1; r < n; r++) {
            const double m = A[r][col] / A[col][col];
            for (int s = col; s <= n; s++) A[r][s] -= m * A[col][s];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = A[r][n];
        for (int c = r + 1; c < n; c++) s -= A[r][c] * theta[c];
        theta[r] = s / A[r][r];
        if (!isfinite(theta[r])) return 0;
    }
    return 1;
}

static void write_block(int q, int g, void *blk, const lb_fp16 *ah, lb_fp16 zh, const uint8_t *code) {
    uint8_t *p = blk;
    for (int i = 0; i < q; i++) put_h(p + 2 * i, ah[i]);
    put_h(p + 2 * q, zh);
    memset(p + 2 * (q + 1), 0, (size_t)q * g / 8);
    for (int j = 0; j < g; j++)
        for (int i = 0; i < q; i++)
            if (code[j] >> i & 1) p[2 * (q + 1) + i * g / 8 + j / 8] |= (uint8_t)(1u << (j % 8));
}

/* One fit: alpha, z (fp16) and codes; E its error. */
typedef struct {
    lb_fp16 ah[LB_BCQ_MAX_Q], zh;
    uint8_t *code; /* g codes (a state copied shares them) */
    float v[16];
    double e;
} fit_state;

static void state_values(const fit_ctx *f, fit_state *st) {
    float a[LB_BCQ_MAX_Q];
    for (int i = 0; i < f->q; i++) a[i] = lb_fp16_to_f32(st->ah[i]);
    code_values(f->q, a, lb_fp16_to_f32(st->zh), st->v);
}

/* The alternating refinement from st (alpha, z set; codes the nearest):
 * at most `iters` iterations, trace[1..] the error after each. */
static int refine(const fit_ctx *f, fit_state *st, int iters, double *trace) {
    const int q = f->q;
    int it = 0;
    for (; it < iters; it++) {
        int changed = 0;
        /* least-squares alpha and z for these codes, kept if not worse in fp16 */
        double theta[LB_BCQ_MAX_Q + 1];
        if (least_squares(f, st->code, theta)) {
            fit_state n = *st;
            int same = (n.zh = to_h(theta[q])) == st->zh;
            for (int i = 0; i < q; i++) same &= (n.ah[i] = to_h(theta[i])) == st->ah[i];
            if (!same) {
                state_values(f, &n);
                n.e = error_of(f, n.v, n.code);
                if (n.e <= st->e) {
                    changed |= n.e < st->e;
                    *st = n;
                }
            }
        }
        /* the nearest code of each weight for these alpha, z */
        if (nearest_codes(f, st->v, st->code)) {
            const double e = error_of(f, st->v, st->code);
            changed |= e < st->e;
            st->e = e;
        }
        if (trace) trace[it + 1] = st->e;
        if (!changed) {
            it++;
            break;
        }
    }
    if (trace)
        for (int t = it + 1; t <= iters; t++) trace[t] = st->e;
    return it;
}

/* Greedy initialisation: the weighted mean, then residual signs and mean magnitudes */
static void init_greedy(const fit_ctx *f, double W, fit_state *st) {
    double *r = f->r, zm = 0.0;
    for (int j = 0; j < f->g; j++) zm += (double)f->h[j] * f->x[j];
    zm /= W;
    for (int j = 0; j < f->g; j++) r[j] = f->x[j] - zm, st->code[j] = 0;
    st->zh = to_h(zm);
    for (int i = 0; i < f->q; i++) {
        double m = 0.0;
        for (int j = 0; j < f->g; j++) m += (double)f->h[j] * fabs(r[j]);
        m /= W;
        st->ah[i] = to_h(m);
        for (int j = 0; j < f->g; j++) {
            const int plus = r[j] >= 0.0;
            st->code[j] |= (uint8_t)(plus << i);
            r[j] -= plus ? m : -m;
        }
    }
    state_values(f, st);
    nearest_codes(f, st->v, st->code); /* the stored (rounded) values' nearest codes */
    st->e = error_of(f, st->v, st->code);
}

/* Uniform initialisation (a uniform grid is BCQ with alpha_i = 2^(i-1) s,
 * App. C): z the middle of [min, max], s its span over 2^q - 1, and spans
 * shrunk around z by 0.92 .. 0.68, the best kept (as GQ's range search) */
static void init_uniform(const fit_ctx *f, fit_state *st, uint8_t *cand) {
    float lo = f->x[0], hi = f->x[0];
    for (int j = 1; j < f->g; j++) lo = fminf(lo, f->x[j]), hi = fmaxf(hi, f->x[j]);
    const double mid = 0.5 * ((double)lo + hi), span = (double)hi - lo;
    st->e = INFINITY;
    for (int k = 0; k < 5; k++) {
        fit_state c = {.code = cand};
        const double sc = span * (1.0 - 0.08 * k) / (double)((1 << f->q) - 1);
        c.zh = to_h(mid);
        for (int i = 0; i < f->q; i++) c.ah[i] = to_h(ldexp(sc, i - 1));
        for (int j = 0; j < f->g; j++) c.code[j] = 0;
        state_values(f, &c);
        nearest_codes(f, c.v, c.code);
        c.e = error_of(f, c.v, c.code);
        if (c.e < st->e) {
            uint8_t *keep = st->code;
            *st = c;
            st->code = memcpy(keep, cand, (size_t)f->g);
        }
        if (span == 0.0) break;
    }
}

/* Scratch of one fit: on the stack for groups up to 128, else allocated */
enum { FIT_STACK = 128 };
typedef struct {
    float xs[FIT_STACK], hs[FIT_STACK];
    int k[FIT_STACK];
    double r[FIT_STACK];
    uint8_t code[3][FIT_STACK];
} fit_scratch;

int lb_bcq_fit_group(int q, int g, const float *x, const float *imp, int iters, void *blk, double *trace) {
    if (q < 1 || q > LB_BCQ_MAX_Q || g < 8 || g % 8 || g > LB_BCQ_MAX_FIT) return 0;
    fit_scratch small;
    void *big = NULL;
    float *xs = small.xs, *hs = small.hs;
    int *ks = small.k;
    double *rs = small.r;
    uint8_t *codes = small.code[0];
    if (g > FIT_STACK) {
        const size_t n = (size_t)g;
        big = malloc(n * (2 * sizeof(float) + sizeof(int) + sizeof(double) + 3));
        if (!big) {
            memset(blk, 0, LB_BCQ_SIZE(q, (size_t)g)); /* every value 0 */
            return -1;
        }
        rs = big;
        xs = (float *)(rs + n);
        hs = xs + n;
        ks = (int *)(hs + n);
        codes = (uint8_t *)(ks + n);
    }
    double W = 0.0;
    for (int j = 0; j < g; j++) {
        const float t = x[j];
        xs[j] = isnan(t) ? 0.0f : (float)fmax(-FP16_MAX, fmin(FP16_MAX, (double)t));
        const float w = imp ? imp[j] : 1.0f;
        hs[j] = w > 0.0f && isfinite(w) ? w : 0.0f;
        W += hs[j];
    }
    if (!(W > 0.0) || !isfinite(W)) { /* no usable importance: plain squares */
        for (int j = 0; j < g; j++) hs[j] = 1.0f;
        W = g;
    }
    const fit_ctx f = {q, g, 1 << q, xs, hs, ks, rs};
    /* both starts refined, the better fit kept (its trace reported) */
    fit_state st[2] = {{.code = codes}, {.code = codes + g}};
    double *tr = trace ? malloc(2 * sizeof(double) * (size_t)(iters + 1)) : NULL;
    int used[2];
    init_greedy(&f, W, &st[0]);
    init_uniform(&f, &st[1], codes + 2 * (size_t)g);
    for (int k = 0; k < 2; k++) {
        double *t = tr ? tr + (size_t)k * (iters + 1) : NULL;
        if (t) t[0] = st[k].e;
        used[k] = refine(&f, &st[k], iters, t);
    }
    const int b = st[1].e < st[0].e;
    if (tr) memcpy(trace, tr + (size_t)b * (iters + 1), sizeof(double) * (size_t)(iters + 1));
    free(tr);
    write_block(q, g, blk, st[b].ah, st[b].zh, st[b].code);
    free(big);
    return used[b];
}

static void quantize_row(int q, int g, const float *x, void *vy, int64_t k, const float *imp, int iters) {
    uint8_t *y = vy;
    const size_t bs = LB_BCQ_SIZE(q, g);
    for (int64_t b = 0; b < k / g; b++)
        lb_bcq_fit_group(q, g, x + b * g, imp ? imp + b * g : NULL, iters, y + (size_t)b * bs, NULL);
}

int lb_bcq_quantize_row_imp(int type, const float *x, void *y, int64_t k, const float *imp) {
    if (!lb_bcq_is_plain(type)) return 0;
    quantize_row(lb_bcq_bits(type), lb_bcq_group(type), x, y, k, imp, iters_setting);
    return 1;
}

/* ---- dequantize, dot ---- */

static void dequantize_row(int q, int g, const void *vx, float *y, int64_t k) {
    const uint8_t *x = vx;
    const size_t bs = LB_BCQ_SIZE(q, g);
    float a[LB_BCQ_MAX_Q], z, v[16];
    for (int64_t b = 0; b < k / g; b++, x += bs, y += g) {
        block_params(q, x, a, &z);
        code_values(q, a, z, v);
        for (int j = 0; j < g; j++) y[j] = v[lb_bcq_get_code(q, g, x, j)];
    }
}

/* I = sum_j b_j x_j over 32 weights of plane bytes p[0..4) */
static inline int32_t plane_dot(const uint8_t *p, const int8_t *x) {
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += ((p[j / 8] >> (j % 8)) & 1) ? x[j] : -x[j];
    return s;
}

/* The plane sums through the tables: 8 lookups of 4 weights each */
static inline int32_t plane_dot_lut(const uint8_t *p, const block_q8_0_lut4 *a) {
    int32_t s = 0;
    for (int sl = 0; sl < 8; sl++) s += lb_lut4_entry(a, sl, (p[sl / 2] >> (4 * (sl % 2))) & 15);
    return s;
}

/* Against Q8_0_LUT4 (bcq.h's order); lut: the plane sums by table lookup */
static float dot_row(int q, int g, int64_t n, const void *vw, const block_q8_0_lut4 *a, int lut) {
    const uint8_t *w = vw;
    const size_t bs = LB_BCQ_SIZE(q, g);
    const int nc = g / 32;
    float sum = 0.0f;
    for (int64_t gi = 0; gi < n / g; gi++, w += bs, a += nc) {
        float zs = 0.0f;
        for (int c = 0; c < nc; c++) zs += a[c].ds;
        sum += get_h(w + 2 * q) * zs;
        for (int i = 0; i < q; i++) {
            const uint8_t *pl = w + 2 * (q + 1) + i * g / 8;
            float p = 0.0f;
            for (int c = 0; c < nc; c++)
                p += a[c].d * (float)(lut ? plane_dot_lut(pl + 4 * c, &a[c]) : plane_dot(pl + 4 * c, a[c].qs));
            sum += get_h(w + 2 * i) * p;
        }
    }
    return sum;
}

/* ---- Q8_0_LUT4 ---- */

void lb_q8_0_lut4_fill(block_q8_0_lut4 *b) {
    int32_t S = 0;
    for (int j = 0; j < 32; j++) S += b->qs[j];
    b->ds = b->d * (float)S;
    for (int s = 0; s < 8; s++)
        for (int e = 0; e < 16; e++) {
            int T = 0;
            for (int t = 0; t < 4; t++) T += (e >> t & 1) ? b->qs[4 * s + t] : -b->qs[4 * s + t];
            const int p = lb_lut4_pos(s, e);
            b->t[p] = (uint8_t)(T & 0xFF);
            b->t[p + 32] = (uint8_t)((T >> 8) & 0xFF);
        }
    memset(b->pad, 0, sizeof b->pad);
}

void lb_quantize_row_q8_0_lut4_ref(const float *x, void *vy, int64_t k) {
    block_q8_0_lut4 *y = vy;
    for (int64_t b = 0; b < k / 32; b++) {
        block_q8_0 q;
        lb_quantize_row_q8_0_ref(x + 32 * b, &q, 32);
        y[b].d = lb_fp16_to_f32(q.d);
        memcpy(y[b].qs, q.qs, 32);
        lb_q8_0_lut4_fill(&y[b]);
    }
}

void lb_dequantize_row_q8_0_lut4(const void *vx, float *y, int64_t k) {
    const block_q8_0_lut4 *x = vx;
    for (int64_t b = 0; b < k / 32; b++)
        for (int j = 0; j < 32; j++) y[32 * b + j] = x[b].qs[j] * x[b].d;
}

/* ---- GPTQ hook ---- */

static void grid_fix(int q, int g, void *blk, const float *x, const float *imp) {
    lb_bcq_fit_group(q, g, x, imp, iters_setting, blk, NULL);
}

static float grid_round(int q, int g, void *blk, int col, float x) {
    float a[LB_BCQ_MAX_Q], z, v[16];
    block_params(q, blk, a, &z);
    code_values(q, a, z, v);
    const float xs = isnan(x) ? 0.0f : x;
    int best = 0;
    double bd = INFINITY;
    for (int c = 0; c < (1 << q); c++) {
        const double d = (double)xs - (double)v[c];
        if (d * d < bd) bd = d * d, best = c;
    }
    lb_bcq_set_code(q, g, blk, col % g, best);
    return v[best];
}

/* ---- the 12 types ---- */

const lb_type_traits *lb_bcq_lut_traits_(int type); /* formats/bcq_lut.c */

#define BCQ_DEFINE(name, NAME, Q, G)                                                                         \
    void lb_dequantize_row_##name(const void *x, float *y, int64_t k) { dequantize_row(Q, G, x, y, k); }    \
    void lb_quantize_row_##name##_ref(const float *x, void *y, int64_t k) {                                 \
        quantize_row(Q, G, x, y, k, NULL, iters_setting);                                                    \
    }                                                                                                       \
    void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a) {                       \
        *s = dot_row(Q, G, n, w, a, 0);                                                                     \
    }                                                                                                       \
    void lb_vec_dot_##name##_lut4_ref(int64_t n, float *s, const void *w, const void *a) {                  \
        *s = dot_row(Q, G, n, w, a, 1);                                                                     \
    }                                                                                                       \
    static void fix_##name(void *blk, int col, const float *x, const float *imp) {                          \
        (void)col;                                                                                          \
        grid_fix(Q, G, blk, x, imp);                                                                        \
    }                                                                                                       \
    static float round_##name(void *blk, int col, float x) { return grid_round(Q, G, blk, col, x); }
LB_BCQ_LIST(BCQ_DEFINE)
#undef BCQ_DEFINE

static const struct {
    lb_type_traits traits;
    lb_grid grid;
} bcq_types[] = {
#define BCQ_ENTRY(name, NAME, Q, G)                                                                          \
    {{#NAME, G, LB_BCQ_SIZE(Q, G), 1, LB_TYPE_Q8_0_LUT4, lb_dequantize_row_##name, lb_quantize_row_##name##_ref, \
      lb_vec_dot_##name##_ref},                                                                             \
     {G, fix_##name, round_##name, NULL, NULL}},
    LB_BCQ_LIST(BCQ_ENTRY)
#undef BCQ_ENTRY
};

/* Q8_0_LUT4 has no from_float in its traits: nothing quantizes a weight
 * matrix to it (`quantize` refuses it); the kernels name its builders. */
static const lb_type_traits traits_q8_0_lut4 = {"Q8_0_LUT4", 32, sizeof(block_q8_0_lut4), 1, LB_TYPE_Q8_0_LUT4,
                                                lb_dequantize_row_q8_0_lut4, NULL, NULL};

const lb_type_traits *lb_bcq_traits(int type) {
    if (type == LB_TYPE_Q8_0_LUT4) return &traits_q8_0_lut4;
    if (lb_bcq_is_plain(type)) return &bcq_types[type - LB_BCQ_FIRST].traits;
    return lb_bcq_lut_traits_(type);
}

const lb_grid *lb_bcq_grid(int type) { return lb_bcq_is_plain(type) ? &bcq_types[type - LB_BCQ_FIRST].grid : NULL; }

/* ---- uniform -> BCQ ---- */

int lb_bcq_uniform_fits(int src, int dst) {
    if (!lb_bcq_is_plain(dst)) return 0;
    const int q = lb_bcq_bits(dst), g = lb_bcq_group(dst);
    if (src == LB_TYPE_Q4_0 || src == LB_TYPE_Q4_1) return q == 4 && g == 32;
    const int b = lb_gq_bits(src), gs = lb_gq_group(src);
    return b == q && gs >= g && gs % g == 0;
}

/* fp16 exactly v? (v finite, in range, on fp16's grid) */
static int exact_h(double v) {
    if (!(fabs(v) <= FP16_MAX)) return 0;
    return (double)lb_fp16_to_f32(lb_f32_to_fp16((float)v)) == v && (double)(float)v == v;
}

void lb_bcq_uniform_grid(int q, double s, double m, lb_fp16 *az) {
    /* eq. (7): alpha_i = 2^(i-1) s, z = m + s (2^q - 1) / 2 (exact in double) */
    for (int i = 0; i < q; i++) az[i] = to_h(ldexp(s, i - 1));
    az[q] = to_h(m + s * (double)((1 << q) - 1) / 2.0);
}

int lb_bcq_uniform_exact(lb_fp16 sh, int zq, int q) {
    const double s = lb_fp16_to_f32(sh);
    if (!isfinite(s)) return 0;
    for (int i = 0; i < q; i++)
        if (!exact_h(ldexp(s, i - 1))) return 0;
    return exact_h(s * (double)((1 << q) - 1 - 2 * zq) / 2.0);
}

/* The uniform grid of BCQ group gi (g weights) of a row: w = s * code + m
 * (GQ, Q4_0: m = -s zq); codes[0..g) */
static void uniform_group(int src, const uint8_t *row, int g, int64_t gi, double *s, double *m, uint8_t *codes) {
    const int64_t j0 = gi * g; /* first weight */
    if (src == LB_TYPE_Q4_0 || src == LB_TYPE_Q4_1) {
        const size_t bs = src == LB_TYPE_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q4_1);
        const uint8_t *b = row + (size_t)(j0 / 32) * bs;
        const uint8_t *qs = b + (src == LB_TYPE_Q4_0 ? 2 : 4);
        *s = get_h(b);
        *m = src == LB_TYPE_Q4_0 ? -8.0 * *s : get_h(b + 2);
        for (int j = 0; j < 32; j++) codes[j] = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
        return;
    }
    const int bits = lb_gq_bits(src), gs = lb_gq_group(src);
    const uint8_t *b = row + (size_t)(j0 / QK_GQ) * LB_GQ_SIZE(bits, gs);
    const int jb = (int)(j0 % QK_GQ), sg = jb / gs;
    *s = get_h(b + LB_GQ_S_OFF(bits) + 2 * sg);
    *m = -*s * (double)b[LB_GQ_Z_OFF(bits, gs) + sg];
    for (int j = 0; j < g; j++) codes[j] = (uint8_t)lb_gq_get_code(b, bits, jb + j);
}

int64_t lb_bcq_from_uniform(int src, const void *in, int dst, void *out, int64_t K, int64_t rows, int64_t *groups) {
    if (groups) *groups = 0;
    if (!lb_bcq_uniform_fits(src, dst) || K % lb_traits(src)->blck) return -1;
    const int q = lb_bcq_bits(dst), g = lb_bcq_group(dst);
    const size_t in_row = lb_row_size(src, K), out_row = lb_row_size(dst, K), bs = LB_BCQ_SIZE(q, g);
    const lb_type_traits *st = lb_traits(src);
    int64_t inexact = 0;
    int oom = 0;
#pragma omp parallel reduction(+ : inexact) if (rows * K > 65536)
    {
        float *ws = malloc((size_t)K * sizeof *ws), *wb = malloc((size_t)K * sizeof *wb);
        if (!ws || !wb) oom = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!ws || !wb) continue;
            const uint8_t *row = (const uint8_t *)in + (size_t)r * in_row;
            uint8_t *o = (uint8_t *)out + (size_t)r * out_row;
            for (int64_t gi = 0; gi < K / g; gi++) {
                double s, m;
                uint8_t codes[128];
                uint8_t *blk = o + (size_t)gi * bs;
                uniform_group(src, row, g, gi, &s, &m, codes);
                lb_fp16 az[LB_BCQ_MAX_Q + 1];
                lb_bcq_uniform_grid(q, s, m, az);
                write_block(q, g, blk, az, az[q], codes);
            }
            /* exact where the dequantized values are equal: bit for bit, but
             * for the sign of zero (Q4_0's (8 - 8) d is -0 when d < 0, GQ's
             * 0 (c - zq) when c < zq; a BCQ sum that is zero is +0) */
            st->to_float(row, ws, K);
            dequantize_row(q, g, o, wb, K);
            for (int64_t gi = 0; gi < K / g; gi++) {
                int same = 1;
                for (int j = 0; j < g; j++) same &= ws[gi * g + j] == wb[gi * g + j];
                inexact += !same;
            }
        }
        free(ws);
        free(wb);
    }
    if (oom) return lb_fail(LB_ERR_NOMEM, "out of memory"), -1;
    if (groups) *groups = rows * (K / g);
    return inexact;
}
