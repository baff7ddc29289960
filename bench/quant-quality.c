/* Quantization quality of the 2- to 4-bit formats: for each format, bits per
 * weight, relative weight-reconstruction error ||W - Ŵ|| / ||W|| and relative
 * output error ||XWᵀ - XŴᵀ|| / ||XWᵀ|| (Frobenius norms, float64 sums), on
 *   (a) synthetic LLM-like matrices (default): Student-t (ν = 5) values,
 *       log-normal per-row scales, 0.5% of input columns 4x larger; the
 *       activations X are Gaussian with 1% outlier channels 20x larger;
 *   (b) every 2-D weight of a GGUF model (-m, repeatable): dequantized to
 *       float and requantized; rows whose length does not fit a format's
 *       block get the wider type `lowbit quantize` would use (counted in
 *       that format's bits). Activations are Gaussian with the per-column
 *       variance of an imatrix when --imatrix is given, else as in (a).
 * "+imat" rows weight the quantizers' errors with the activations' mean
 * squares (for the synthetic case measured on separate calibration rows),
 * as `lowbit quantize --imatrix` does.
 *
 * CB2 / CB3 codebooks: discovered (`lowbit codebooks`' algorithm, seed 1)
 * from the synthetic matrices of another seed, or from the model itself;
 * --books FILE uses a codebook file instead (its count only).
 *
 * --speed: single-thread GEMV (4096 x 4096 weights, real blocks) with the
 * dispatched kernel of each 2-/3-bit format, and both of CB's lookups.
 *
 * usage: quant-quality [-m MODEL.gguf]... [--imatrix IMAT.gguf] [--rows N]
 *                      [--books BOOKS.gguf] [-t THREADS] [--only LABEL-PREFIX] [--speed] */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/cb_gguf.h"
#include "kernels/x86/cb_x86.h"
#include "kernels/dispatch.h"
#include "model/imatrix.h"

typedef struct {
    const char *label;
    int type;
    int count;   /* CB book count (0: not CB) */
    int imat;    /* weighted by importance */
} format;

static const format formats[] = {
    {"Q4_0", LB_TYPE_Q4_0, 0, 0},     {"IQ4_NL", LB_TYPE_IQ4_NL, 0, 0}, {"Q3_K", LB_TYPE_Q3_K, 0, 0},
    {"Q3_K+imat", LB_TYPE_Q3_K, 0, 1}, {"CB3 C=4", LB_TYPE_CB3, 4, 0},   {"CB3 C=8", LB_TYPE_CB3, 8, 0},
    {"CB3 C=16", LB_TYPE_CB3, 16, 0},  {"CB3 C=8+imat", LB_TYPE_CB3, 8, 1}, {"Q2_K", LB_TYPE_Q2_K, 0, 0},
    {"Q2_K+imat", LB_TYPE_Q2_K, 0, 1}, {"CB2 C=4", LB_TYPE_CB2, 4, 0},   {"CB2 C=8", LB_TYPE_CB2, 8, 0},
    {"CB2 C=16", LB_TYPE_CB2, 16, 0},  {"CB2 C=8+imat", LB_TYPE_CB2, 8, 1},
};
enum { N_FORMATS = sizeof formats / sizeof formats[0] };

/* ---- random numbers (deterministic) ---- */
static uint64_t rs;
static double urand(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return ((double)(rs >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()); }
static double student5(void) {
    double c = 0;
    for (int i = 0; i < 5; i++) {
        const double g = nrand();
        c += g * g;
    }
    return nrand() / sqrt(c / 5.0);
}

/* ---- one matrix ---- */
typedef struct {
    double werr, wnorm, oerr, onorm; /* sums of squares */
    double bits, n;                  /* stored bits and weights */
} acc;

/* Activations for K columns: Gaussian times a per-column scale. */
static void make_acts(float *X, int M, int64_t K, const float *colscale, uint64_t seed) {
    rs = seed | 1;
    for (int m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++) X[(size_t)m * K + k] = (float)nrand() * colscale[k];
}

/* W (N x K) against Ŵ of format f; X (M x K) for the output error. The
 * quantization runs in parallel over rows; sums in fixed row order. */
static void measure(const format *f, const float *W, int64_t N, int64_t K, const float *X, int M, const float *imp,
                    int nth, acc *a) {
    const int type = lb_type_fallback(f->type, K);
    const size_t rs_ = lb_row_size(type, K);
    float *Wq = malloc((size_t)N * K * sizeof *Wq);
    double *rowe = calloc((size_t)N, sizeof *rowe), *rown = calloc((size_t)N, sizeof *rown);
#pragma omp parallel num_threads(nth)
    {
        void *q = malloc(rs_);
#pragma omp for schedule(dynamic, 4)
        for (int64_t n = 0; n < N; n++) {
            const float *w = W + (size_t)n * K;
            if (f->imat && imp && lb_quantize_row_weighted(type, w, q, K, imp)) {
            } else {
                lb_traits(type)->from_float(w, q, K);
            }
            lb_traits(type)->to_float(q, Wq + (size_t)n * K, K);
            for (int64_t k = 0; k < K; k++) {
                const double d = (double)w[k] - Wq[(size_t)n * K + k];
                rowe[n] += d * d;
                rown[n] += (double)w[k] * w[k];
            }
        }
        free(q);
    }
    for (int64_t n = 0; n < N; n++) a->werr += rowe[n], a->wnorm += rown[n];
    /* outputs: y = X w for every row, both ways */
    double *oe = calloc((size_t)N, sizeof *oe), *on = calloc((size_t)N, sizeof *on);
#pragma omp parallel for num_threads(nth) schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float *w = W + (size_t)n * K, *wq = Wq + (size_t)n * K;
        for (int m = 0; m < M; m++) {
            const float *x = X + (size_t)m * K;
            double y = 0, yq = 0;
            for (int64_t k = 0; k < K; k++) {
                y += (double)x[k] * w[k];
                yq += (double)x[k] * wq[k];
            }
            oe[n] += (y - yq) * (y - yq);
            on[n] += y * y;
        }
    }
    for (int64_t n = 0; n < N; n++) a->oerr += oe[n], a->onorm += on[n];
    free(oe), free(on), free(Wq), free(rowe), free(rown);
}

/* ---- codebooks per (type, count) ---- */
static lb_cb_books books[2][3]; /* [CB2, CB3][C = 4, 8, 16] */
static int have_books[2][3];
static int books_given;
static const char *only; /* --only: formats whose label starts with this */
static int ci(int C) { return C == 4 ? 0 : C == 8 ? 1 : 2; }

static int use_books(const format *f) {
    if (only && strncmp(f->label, only, strlen(only))) return 0;
    if (!f->count) return 1;
    const int t = f->type == LB_TYPE_CB3;
    if (!have_books[t][ci(f->count)]) return 0;
    if (lb_cb_acquire(f->type, &books[t][ci(f->count)])) {
        fprintf(stderr, "%s\n", lb_last_error());
        return 0;
    }
    return 1;
}
static void drop_books(const format *f) {
    if (f->count) lb_cb_release(f->type);
}

static void print_table(const char *title, const acc *res, int what) {
    printf("\n%s\n\n| format | bits/weight | weight error | output error |\n|---|---:|---:|---:|\n", title);
    for (int i = 0; i < N_FORMATS; i++) {
        const acc *a = &res[(size_t)what * N_FORMATS + i];
        if (a->n == 0) continue;
        printf("| %s | %.4f | %.4f | %.4f |\n", formats[i].label, a->bits / a->n, sqrt(a->werr / a->wnorm),
               sqrt(a->oerr / a->onorm));
    }
}

/* ---- (a) synthetic ---- */
typedef struct {
    int64_t N, K;
} shape;

static void synth_matrix(float *W, int64_t N, int64_t K, uint64_t seed, float *colscale) {
    rs = seed | 1;
    for (int64_t k = 0; k < K; k++) colscale[k] = urand() < 0.005 ? 4.0f : 1.0f;
    for (int64_t n = 0; n < N; n++) {
        const double row = 0.02 * exp(0.5 * nrand());
        for (int64_t k = 0; k < K; k++) W[(size_t)n * K + k] = (float)(student5() * row * colscale[k]);
    }
}

static void outlier_scales(float *s, int64_t K, uint64_t seed) {
    rs = seed | 1;
    for (int64_t k = 0; k < K; k++) s[k] = urand() < 0.01 ? 20.0f : 1.0f;
}

static void learn_books_synthetic(int nth) {
    const int64_t N = 512, K = 4096;
    float *W = malloc((size_t)N * K * sizeof *W), *cs = malloc(K * sizeof *cs);
    synth_matrix(W, N, K, 424242, cs); /* not a seed the measurements use */
    lb_cb_groups G = {0};
    if (lb_cb_groups_add(&G, W, N * K, 0, 1.0, 1)) exit(1);
    for (int t = 0; t < 2; t++)
        for (int C = 4; C <= 16; C *= 2) {
            lb_cb_discover_params p = {C, t ? 8 : 4, 1, 0, 0, 10, nth, NULL, NULL};
            if (lb_cb_discover(&G, &p, &books[t][ci(C)])) {
                fprintf(stderr, "%s\n", lb_last_error());
                exit(1);
            }
            have_books[t][ci(C)] = 1;
        }
    lb_cb_groups_free(&G);
    free(W), free(cs);
}

static void run_synthetic(int nth) {
    const shape shapes[] = {{1024, 4096}, {4096, 1024}, {2048, 2048}};
    const int M = 64, MCAL = 256;
    acc res[N_FORMATS];
    memset(res, 0, sizeof res);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t N = shapes[s].N, K = shapes[s].K;
        float *W = malloc((size_t)N * K * sizeof *W), *cs = malloc(K * sizeof *cs), *as = malloc(K * sizeof *as);
        float *X = malloc((size_t)M * K * sizeof *X), *Xc = malloc((size_t)MCAL * K * sizeof *Xc);
        float *imp = calloc((size_t)K, sizeof *imp);
        synth_matrix(W, N, K, 1000 + s, cs);
        outlier_scales(as, K, 2000 + s);
        make_acts(X, M, K, as, 3000 + s);
        make_acts(Xc, MCAL, K, as, 4000 + s); /* calibration rows for the importance */
        for (int m = 0; m < MCAL; m++)
            for (int64_t k = 0; k < K; k++) imp[k] += Xc[(size_t)m * K + k] * Xc[(size_t)m * K + k] / MCAL;
        for (int i = 0; i < N_FORMATS; i++) {
            if (!use_books(&formats[i])) continue;
            measure(&formats[i], W, N, K, X, M, imp, nth, &res[i]);
            res[i].bits += (double)lb_row_size(lb_type_fallback(formats[i].type, K), K) * 8.0 * (double)N;
            res[i].n += (double)N * K;
            drop_books(&formats[i]);
        }
        fprintf(stderr, "synthetic %lld x %lld done\n", (long long)N, (long long)K);
        free(W), free(cs), free(as), free(X), free(Xc), free(imp);
    }
    print_table("(a) synthetic matrices (1024x4096, 4096x1024, 2048x2048; Student-t ν=5, row-scale spread, "
                "large input columns; 64 activation rows with 1% outlier channels)", res, 0);
}

/* ---- (b) a model ---- */
static int is_weight(const gguf_tensor *t) {
    if (t->n_dims != 2) return 0;
    const char *n = t->name.ptr;
    const size_t len = t->name.len;
    if (len < 7 || memcmp(n + len - 7, ".weight", 7)) return 0;
    for (size_t i = 0; i + 4 <= len; i++)
        if (!memcmp(n + i, "norm", 4)) return 0;
    return lb_traits((int)t->type) && lb_traits((int)t->type)->to_float;
}

static void run_model(const char *path, const char *imat_path, int64_t max_rows, int nth) {
    gguf_file *g = NULL;
    lb_imatrix *im = NULL;
    if (gguf_open(path, &g) || (imat_path && lb_imatrix_load(imat_path, &im))) {
        fprintf(stderr, "%s\n", lb_last_error());
        exit(1);
    }
    int held = 0;
    if (lb_cb_acquire_for_file(g, &held)) {
        fprintf(stderr, "%s\n", lb_last_error());
        exit(1);
    }
    if (!books_given) {
        memset(have_books, 0, sizeof have_books);
        for (int t = 0; t < 2; t++)
            for (int C = 4; C <= 16; C *= 2) {
                lb_cb_discover_params p = {C, t ? 8 : 4, 1, 0, 0, 10, nth, NULL, NULL};
                int64_t total, used;
                if (lb_cb_discover_file(g, &p, 1 << 20, &books[t][ci(C)], &total, &used) == LB_OK)
                    have_books[t][ci(C)] = 1;
                else
                    fprintf(stderr, "no codebooks from %s: %s\n", path, lb_last_error());
            }
    }
    enum { ALL, ALIGNED };
    acc res[2 * N_FORMATS];
    memset(res, 0, sizeof res);
    int n_t = 0, n_aligned = 0;
    int64_t sampled = 0;
    const int M = 64;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (!is_weight(t)) continue;
        const int64_t K = t->ne[0], rows = t->ne[1];
        const int64_t step = rows > max_rows ? (rows + max_rows - 1) / max_rows : 1;
        const int64_t N = (rows + step - 1) / step;
        if (step > 1) sampled++;
        float *W = malloc((size_t)N * K * sizeof *W), *X = malloc((size_t)M * K * sizeof *X);
        float *as = malloc(K * sizeof *as);
        const size_t rsz = lb_row_size((int)t->type, K);
        for (int64_t n = 0; n < N; n++)
            lb_traits((int)t->type)->to_float((const char *)t->data + (size_t)(n * step) * rsz, W + (size_t)n * K, K);
        const float *imp = im ? lb_imatrix_get(im, t->name.ptr, t->name.len, K) : NULL;
        if (imp)
            for (int64_t k = 0; k < K; k++) as[k] = sqrtf(LB_MAX(imp[k], 0.0f));
        else
            outlier_scales(as, K, 77 + (uint64_t)i);
        make_acts(X, M, K, as, 99 + (uint64_t)i);
        const int aligned = K % QK_K == 0;
        for (int f = 0; f < N_FORMATS; f++) {
            if (formats[f].imat && !imp) continue;
            if (!use_books(&formats[f])) continue;
            acc a = {0};
            measure(&formats[f], W, N, K, X, M, imp, nth, &a);
            /* bits of the whole tensor as stored */
            a.bits = (double)lb_row_size(lb_type_fallback(formats[f].type, K), K) * 8.0 * (double)rows;
            a.n = (double)K * rows;
            /* errors of sampled rows count for the rows they stand for */
            const double w = (double)rows / (double)N;
            for (int which = 0; which < 2; which++) {
                if (which == ALIGNED && !aligned) continue;
                acc *r = &res[which * N_FORMATS + f];
                r->werr += w * a.werr, r->wnorm += w * a.wnorm, r->oerr += w * a.oerr, r->onorm += w * a.onorm;
                r->bits += a.bits, r->n += a.n;
            }
            drop_books(&formats[f]);
        }
        n_t++;
        n_aligned += aligned;
        fprintf(stderr, "\r%s: %d tensors", path, n_t);
        free(W), free(X), free(as);
    }
    fprintf(stderr, "\n");
    char title[1024];
    snprintf(title, sizeof title,
             "(b) %s: all %d weight matrices (rows that do not fit a format keep its fallback type; %lld "
             "tensors sampled to at most %lld rows; activations from %s)",
             path, n_t, (long long)sampled, (long long)max_rows, im ? imat_path : "synthetic outlier channels");
    print_table(title, res, ALL);
    if (n_aligned && n_aligned < n_t) {
        snprintf(title, sizeof title, "(b) %s: the %d matrices whose rows are a multiple of 256", path, n_aligned);
        print_table(title, res, ALIGNED);
    } else if (!n_aligned) {
        printf("\n(no matrix of %s has rows that are a multiple of 256: the K-quants and CB formats all fall back)\n",
               path);
    }
    lb_cb_release_held(held);
    lb_imatrix_free(im);
    gguf_close(g);
}

/* ---- --speed ---- */

/* CPU time of this thread: on a shared machine wall time measures the
 * neighbours too; the work here is single-threaded. */
#include <time.h>
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void run_speed(void) {
    enum { R = 4096, C = 4096 };
    const int types[] = {LB_TYPE_Q2_K, LB_TYPE_CB2, LB_TYPE_Q3_K, LB_TYPE_CB3, LB_TYPE_Q4_0};
    float *x = malloc(C * sizeof *x), *y = malloc(R * sizeof *y);
    rs = 5;
    for (int i = 0; i < C; i++) x[i] = (float)nrand();
    printf("\nsingle-thread GEMV, %d x %d weights (ms of thread CPU time per product, median of 15)\n\n| format | kernel | ms | GB/s |\n|---|---|---:|---:|\n", R, C);
    double gemm_ms[15] = {0};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0] * 3; ti++) {
        const int type = types[ti % 5], books_n = 4 << (ti / 5);
        const int is_cb = type == LB_TYPE_CB2 || type == LB_TYPE_CB3;
        if (!is_cb && books_n > 4) continue;
        lb_cb_books b = *lb_cb_builtin(type); /* any valid books: speed does not depend on them */
        if (is_cb) {
            b.count = books_n;
            for (int c = 8; c < books_n; c++) memcpy(b.v[c], b.v[c - 8], sizeof b.v[c]);
            if (lb_cb_acquire(type, &b)) return;
        }
        const lb_kernel *k = lb_kernel_get(type);
        const size_t rsz = lb_row_size(type, C);
        unsigned char *w = lb_malloc_aligned(rsz * R), *act = lb_malloc_aligned(lb_row_size(k->act_type, C));
        /* real blocks (the quantizer) for a few rows, copied: speed does not depend on values */
        float *row = malloc(C * sizeof *row);
        for (int r = 0; r < 16; r++) {
            for (int i = 0; i < C; i++) row[i] = (float)nrand();
            lb_traits(type)->from_float(row, w + r * rsz, C);
        }
        for (int r = 16; r < R; r++) memcpy(w + r * rsz, w + (r % 16) * rsz, rsz);
        k->quantize_act(x, act, C);
        int nvar = 1;
        lb_vec_dot_fn fns[3] = {k->vec_dot, NULL, NULL};
        const char *names[3] = {k->name, NULL, NULL};
#if LB_HAVE_X86_KERNELS
        if (k->isa == LB_ISA_AVX2 && is_cb) {
            const int cb3 = type == LB_TYPE_CB3;
            fns[1] = cb3 ? lb_vec_dot_cb3_q8_K_avx2_combined : lb_vec_dot_cb2_q8_K_avx2_combined;
            fns[2] = cb3 ? lb_vec_dot_cb3_q8_K_avx2_pairs : lb_vec_dot_cb2_q8_K_avx2_pairs;
            names[1] = cb3 && books_n == 16 ? "combined index (n/a: pair tables)" : "combined index";
            names[2] = "pair tables";
            nvar = 3;
        }
#endif
        for (int v = 0; v < nvar; v++) {
            double ts[15];
            if (!fns[v]) continue;
            for (int rep = 0; rep < 15; rep++) {
                const double t0 = cpu_s();
                for (int r = 0; r < R; r++) fns[v](C, &y[r], w + r * rsz, act);
                ts[rep] = cpu_s() - t0;
            }
            for (int i = 1; i < 15; i++)
                for (int j = i; j > 0 && ts[j] < ts[j - 1]; j--) {
                    const double tmp = ts[j];
                    ts[j] = ts[j - 1];
                    ts[j - 1] = tmp;
                }
            char label[32];
            snprintf(label, sizeof label, is_cb ? "%s C=%d" : "%s", lb_type_name(type), books_n);
            printf("| %s | %s | %.3f | %.1f |\n", label, names[v], ts[7] * 1e3, (double)rsz * R / ts[7] * 1e-9);
        }
        /* 64 activation rows through lb_matmul (its GEMM when the kernel has one) */
        {
            enum { M = 64 };
            float *X = malloc((size_t)M * C * sizeof *X), *Y = malloc((size_t)M * R * sizeof *Y);
            for (size_t i = 0; i < (size_t)M * C; i++) X[i] = (float)nrand();
            const lb_matrix mat = {type, C, R, rsz, w, 0};
            void *scratch = lb_malloc_aligned(lb_matmul_scratch_size(&mat, M));
            double best = 1e9;
            for (int rep = 0; rep < 3; rep++) {
                const double t0 = cpu_s();
                lb_matmul(&mat, X, M, Y, R, scratch, 1);
                best = LB_MIN(best, cpu_s() - t0);
            }
            gemm_ms[ti] = best * 1e3;
            lb_free_aligned(scratch);
            free(X), free(Y);
        }
        free(row);
        lb_free_aligned(w);
        lb_free_aligned(act);
        if (is_cb) lb_cb_release(type);
    }
    printf("\nsingle-thread lb_matmul, 64 activation rows x %d x %d weights (ms of thread CPU time, best of 3)\n\n| format | ms | "
           "GEMM kernel |\n|---|---:|---|\n", C, R);
    for (size_t ti = 0; ti < 15; ti++) {
        const int type = types[ti % 5], books_n = 4 << (ti / 5);
        if (gemm_ms[ti] == 0) continue;
        char label[32];
        snprintf(label, sizeof label, type == LB_TYPE_CB2 || type == LB_TYPE_CB3 ? "%s C=%d" : "%s",
                 lb_type_name(type), books_n);
        printf("| %s | %.2f | %s |\n", label, gemm_ms[ti], lb_kernel_get(type)->gemm ? "yes" : "no (vec_dot loop)");
    }
    free(x), free(y);
}

int main(int argc, char **argv) {
    const char *models[8], *imat = NULL, *books_file = NULL;
    int n_models = 0, nth = omp_get_num_procs(), speed = 0;
    int64_t max_rows = 2048;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc && n_models < 8) models[n_models++] = argv[++i];
        else if (!strcmp(argv[i], "--imatrix") && i + 1 < argc) imat = argv[++i];
        else if (!strcmp(argv[i], "--books") && i + 1 < argc) books_file = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) max_rows = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--speed")) speed = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [-m MODEL.gguf]... [--imatrix IMAT.gguf] [--rows N] [--books BOOKS.gguf] "
                            "[-t THREADS] [--only LABEL-PREFIX] [--speed]\n", argv[0]);
            return 2;
        }
    }
    if (max_rows < 1) max_rows = 1;
    if (speed) {
        run_speed();
        return 0;
    }
    if (books_file) {
        gguf_file *g = NULL;
        if (gguf_open(books_file, &g)) {
            fprintf(stderr, "%s\n", lb_last_error());
            return 1;
        }
        for (int t = 0; t < 2; t++) {
            lb_cb_books b;
            int found = 0;
            if (lb_cb_books_read(g, t ? LB_TYPE_CB3 : LB_TYPE_CB2, &b, &found)) {
                fprintf(stderr, "%s\n", lb_last_error());
                return 1;
            }
            if (found) books[t][ci(b.count)] = b, have_books[t][ci(b.count)] = 1;
        }
        gguf_close(g);
        books_given = 1; /* only the file's counts are measured */
    }
    if (n_models == 0) {
        if (!books_file) learn_books_synthetic(nth);
        run_synthetic(nth);
    }
    for (int i = 0; i < n_models; i++) run_model(models[i], imat, max_rows, nth);
    return 0;
}
