/* ABQ's distribution-correction vectors (seed 004 eq. (3); model/abq_dc.h,
 * model/abq_search.c with dc):
 *  - the rank-1 fit: an error that is exactly (H b) a^T plus a little noise
 *    is found (the error left at most 2 % of it, a and b up to their common
 *    scale); on pure noise and on random data the error never grows; a zero
 *    error or zero inputs give no correction; the fit is deterministic at 1
 *    and 2 threads (bit for bit);
 *  - the search with dc on tiny-F32 at W4A4 (outlier channels in every
 *    norm): layer 0 (the same input in both) runs the same grid and ends at
 *    most at the plain search's objective; every layer that kept the
 *    correction is strictly below its grid's best, every other one has its
 *    grid's best and a tried correction no better; layer 0's ffn_down bytes
 *    differ from the plain search's exactly when it kept one; a bad ridge is
 *    refused. */
#include "test_util.h"

#include "formats/abq.h"
#include "model/abq_dc.h"
#include "model/abq_search.h"

static uint32_t rng = 2463534242u;
static float frand(void) { /* uniform in (-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return (float)((double)rng / 2147483648.0 - 1.0);
}

static void test_fit(void) {
    enum { T = 300, K = 64, N = 24 };
    float *H = malloc(sizeof(float) * T * K), *E = malloc(sizeof(float) * T * N), *a = malloc(sizeof(float) * N),
          *b = malloc(sizeof(float) * K), *a2 = malloc(sizeof(float) * N), *b2 = malloc(sizeof(float) * K);
    float at[N], bt[K];
    for (int i = 0; i < T * K; i++) H[i] = frand() + (i % K == 3 ? 2.0f : 0.0f); /* a channel with a mean */
    for (int i = 0; i < N; i++) at[i] = frand();
    for (int j = 0; j < K; j++) bt[j] = frand() * 0.1f;
    for (int t = 0; t < T; t++) {
        double u = 0;
        for (int j = 0; j < K; j++) u += (double)H[t * K + j] * bt[j];
        for (int i = 0; i < N; i++) E[t * N + i] = (float)(u * at[i]) + 0.01f * frand();
    }
    lb_abq_dc_fit_info fi;
    CHECK(lb_abq_dc_fit(H, E, T, K, N, 1e-6, 2, a, b, &fi) == 0);
    printf("planted rank 1: error %.6g -> %.6g after %d alternations\n", fi.err0, fi.err1, fi.iters);
    CHECK_MSG(fi.err1 <= 0.02 * fi.err0, "left %.6g of %.6g", fi.err1, fi.err0);
    /* a b^T against the planted one, entry by entry */
    double d2 = 0, n2 = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < K; j++) {
            const double x = (double)a[i] * b[j], y = (double)at[i] * bt[j];
            d2 += (x - y) * (x - y), n2 += y * y;
        }
    CHECK_MSG(d2 <= 0.01 * n2, "a b^T off the planted one by %.3g of its energy", d2 / n2);
    /* the same at 1 thread: bit for bit */
    lb_abq_dc_fit_info f1;
    CHECK(lb_abq_dc_fit(H, E, T, K, N, 1e-6, 1, a2, b2, &f1) == 0);
    CHECK(!memcmp(a, a2, sizeof(float) * N) && !memcmp(b, b2, sizeof(float) * K) && f1.err1 == fi.err1);
    /* pure noise, and a strong ridge: never worse than no correction */
    for (int i = 0; i < T * N; i++) E[i] = frand();
    const double ridges[] = {1e-6, 0.1, 10.0};
    for (int k = 0; k < 3; k++) {
        CHECK(lb_abq_dc_fit(H, E, T, K, N, ridges[k], 2, a, b, &fi) == 0);
        CHECK_MSG(fi.err1 <= fi.err0, "noise, ridge %g: %.6g -> %.6g", ridges[k], fi.err0, fi.err1);
    }
    /* nothing to correct: a = b = 0 */
    memset(E, 0, sizeof(float) * T * N);
    CHECK(lb_abq_dc_fit(H, E, T, K, N, 0.1, 2, a, b, &fi) == 0 && fi.err0 == 0.0 && fi.err1 == 0.0);
    int zero = 1;
    for (int i = 0; i < N; i++) zero &= a[i] == 0.0f;
    for (int j = 0; j < K; j++) zero &= b[j] == 0.0f;
    CHECK(zero);
    for (int i = 0; i < T * N; i++) E[i] = frand();
    memset(H, 0, sizeof(float) * T * K);
    CHECK(lb_abq_dc_fit(H, E, T, K, N, 0.1, 2, a, b, &fi) == 0 && fi.err1 == fi.err0);
    free(H), free(E), free(a), free(b), free(a2), free(b2);
}

#define CHUNKS 2
#define CHUNK 64

static lb_model *load(const char *path) {
    lb_model *m = NULL;
    lb_model_params mp = lb_model_default_params();
    mp.n_threads = 2;
    if (lb_model_load(path, &mp, &m) != LB_OK) return NULL;
    for (int l = 0; l < m->hp.n_layer; l++) /* outlier channels, as in test_abq_search */
        for (int j = 0; j < m->hp.n_embd; j += 61) m->layers[l].attn_norm[j] *= 25.0f, m->layers[l].ffn_norm[j] *= 25.0f;
    return m;
}

static void test_search(const char *f32) {
    lb_model *plain = load(f32), *dc = load(f32);
    CHECK(plain && dc);
    if (!plain || !dc) return;
    int32_t tok[CHUNKS * CHUNK];
    uint32_t r = 777;
    for (int i = 0; i < CHUNKS * CHUNK; i++) r = r * 1664525u + 1013904223u, tok[i] = (int32_t)((r >> 8) % (uint32_t)plain->hp.n_vocab);
    lb_abq_search_params p = {0};
    p.type = LB_TYPE_ABQ_W4, p.act_bits = 4, p.n_threads = 2;
    lb_abq_search *s0 = NULL, *s1 = NULL;
    CHECK_OK(lb_abq_search_run(plain, tok, CHUNKS, CHUNK, &p, &s0));
    p.dc = 1;
    CHECK_OK(lb_abq_search_run(dc, tok, CHUNKS, CHUNK, &p, &s1));
    int kept = 0;
    for (int l = 0; s0 && s1 && l < s1->n_layer; l++) {
        const lb_abq_search_layer *A = &s0->layers[l], *B = &s1->layers[l];
        printf("layer %d: without %.6f, with %.6f (gamma %.2f; fit %.4g -> %.4g; best tried %.6f)\n", l, A->obj_best,
               B->obj_best, (double)B->dc_gamma, B->dc_err0, B->dc_err1, B->obj_dc);
        CHECK(B->dc_err1 <= B->dc_err0 && !isnan(B->obj_dc));
        CHECK(isnan(A->obj_dc) && A->dc_gamma == 0.0f);
        if (l == 0) /* the same input: the same grid */
            CHECK(A->obj_grid == B->obj_grid && A->alpha == B->alpha && A->clip == B->clip);
        const size_t bytes = plain->layers[l].w_down.row_size * (size_t)plain->layers[l].w_down.N;
        const int same = !memcmp(plain->layers[l].w_down.data, dc->layers[l].w_down.data, bytes);
        if (B->dc_gamma > 0.0f) {
            kept++;
            CHECK_MSG(B->obj_best < B->obj_grid && B->obj_best == B->obj_dc, "layer %d: kept at %.8f, grid %.8f", l,
                      B->obj_best, B->obj_grid);
            if (l == 0) CHECK_MSG(!same, "layer 0: the corrected ffn_down equals the plain one");
        } else {
            CHECK_MSG(B->obj_best == B->obj_grid && B->obj_dc >= B->obj_grid, "layer %d: not kept, %.8f against %.8f", l,
                      B->obj_dc, B->obj_grid);
            if (l == 0) CHECK(same);
        }
        if (l == 0) CHECK(B->obj_best <= A->obj_best);
    }
    printf("correction kept in %d of %d layers\n", kept, s1 ? s1->n_layer : 0);
    lb_abq_search_free(s0);
    lb_abq_search_free(s1);
    lb_model_free(plain);
    lb_model_free(dc);
    /* a bad ridge */
    lb_abq_search *bad = NULL;
    lb_model *m = load(f32);
    p.dc_ridge = -1.0f;
    CHECK(m && lb_abq_search_run(m, tok, CHUNKS, CHUNK, &p, &bad) != LB_OK && !bad && strstr(lb_last_error(), "ridge"));
    lb_model_free(m);
}

int main(void) {
    test_fit();
    const char *f32 = LB_SHARED_DIR "/interop/tiny-F32.gguf";
    FILE *f = fopen(f32, "rb");
    if (f) {
        fclose(f);
        test_search(f32);
    } else {
        printf("test_abq_dc: the search part skipped (%s absent)\n", f32);
    }
    return lb_test_result("test_abq_dc");
}
