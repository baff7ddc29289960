/* ABQ's block-wise calibration search (model/abq_search.h) on tiny-F32 (dim
 * 256, ff 768, synthetic weights) at W4A4, with a few outlier channels put
 * into every norm (as real LLMs have, and what smoothing is for):
 *  - every layer's chosen objective (eq. (2)) is the least of its grid, and
 *    strictly below the default configuration's (no smoothing, clip 1);
 *  - a 1 x 1 grid of the default gives layer 0's default objective again
 *    (same input, same quantization: the search is deterministic);
 *  - end to end, the calibrated model's last residual stream is closer (in
 *    cosine) to the fp model's than the default-quantized model's is;
 *  - the writer's lookup finds the calibrated tensors; bad grids and
 *    non-ABQ types are refused. */
#include "test_util.h"

#include "formats/abq.h"
#include "model/abq_search.h"

#define CHUNKS 2
#define CHUNK 64

/* Outlier channels in every norm, deterministic. */
static void add_outliers(lb_model *m) {
    for (int l = 0; l < m->hp.n_layer; l++)
        for (int j = 0; j < m->hp.n_embd; j += 61) m->layers[l].attn_norm[j] *= 25.0f, m->layers[l].ffn_norm[j] *= 25.0f;
}

static lb_model *load(const char *path) {
    lb_model *m = NULL;
    lb_model_params mp = lb_model_default_params();
    mp.n_threads = 2;
    if (lb_model_load(path, &mp, &m) != LB_OK) return NULL;
    add_outliers(m);
    return m;
}

/* Mean over tokens of 1 - cos between the models' residual streams after the last layer. */
static double end_to_end(lb_model *a, lb_model *b, const int32_t *tok) {
    lb_context *ca = NULL, *cb = NULL;
    const lb_context_params cp = {CHUNK, CHUNK, 2, 1};
    const int d = a->hp.n_embd;
    float *xa = malloc((size_t)CHUNK * d * sizeof *xa), *xb = malloc((size_t)CHUNK * d * sizeof *xb);
    double sum = -1.0;
    if (xa && xb && lb_context_new(a, &cp, &ca) == LB_OK && lb_context_new(b, &cp, &cb) == LB_OK) {
        sum = 0.0;
        for (int ch = 0; ch < CHUNKS; ch++) {
            lb_embed_tokens(a, tok + ch * CHUNK, CHUNK, xa);
            lb_embed_tokens(b, tok + ch * CHUNK, CHUNK, xb);
            CHECK_OK(lb_eval_layers(ca, xa, CHUNK, 0, a->hp.n_layer));
            CHECK_OK(lb_eval_layers(cb, xb, CHUNK, 0, b->hp.n_layer));
            for (int t = 0; t < CHUNK; t++) {
                double ab = 0, aa = 0, bb = 0;
                for (int j = 0; j < d; j++) {
                    const double u = xa[t * d + j], v = xb[t * d + j];
                    ab += u * v, aa += u * u, bb += v * v;
                }
                sum += 1.0 - ab / sqrt(aa * bb);
            }
        }
        sum /= CHUNKS * CHUNK;
    }
    lb_context_free(ca);
    lb_context_free(cb);
    free(xa);
    free(xb);
    return sum;
}

int main(void) {
    const char *f32 = LB_SHARED_DIR "/interop/tiny-F32.gguf";
    FILE *f = fopen(f32, "rb");
    if (!f) {
        printf("test_abq_search: skipped (%s absent)\n", f32);
        return 77;
    }
    fclose(f);
    lb_model *fp = load(f32), *cal = load(f32), *def = load(f32);
    CHECK(fp && cal && def);
    if (!fp || !cal || !def) return lb_test_result("test_abq_search");
    int32_t tok[CHUNKS * CHUNK];
    uint32_t r = 12345;
    for (int i = 0; i < CHUNKS * CHUNK; i++) r = r * 1664525u + 1013904223u, tok[i] = (int32_t)((r >> 8) % (uint32_t)fp->hp.n_vocab);

    lb_abq_search_params p = {0};
    p.type = LB_TYPE_ABQ_W4, p.act_bits = 4, p.n_threads = 2;
    lb_abq_search *s = NULL;
    CHECK_OK(lb_abq_search_run(cal, tok, CHUNKS, CHUNK, &p, &s));
    double sum_def = 0, sum_best = 0;
    if (s) {
        CHECK(s->n_layer == cal->hp.n_layer && s->n_alpha == 4 && s->n_clip == 4);
        for (int l = 0; l < s->n_layer; l++) {
            const lb_abq_search_layer *L = &s->layers[l];
            double lo = INFINITY;
            for (int i = 0; i < s->n_alpha * s->n_clip; i++) {
                CHECK_MSG(L->obj_best <= L->grid[i], "layer %d: chosen %.8f above grid point %d's %.8f", l, L->obj_best, i,
                          L->grid[i]);
                lo = fmin(lo, L->grid[i]);
            }
            CHECK(L->obj_best == lo && L->obj_default == L->grid[0]);
            CHECK_MSG(L->obj_best < L->obj_default, "layer %d: chosen %.8f not below the default's %.8f", l, L->obj_best,
                      L->obj_default);
            printf("layer %d: alpha %5.2f clip %.2f  eq. (2) %.6f (default: no smoothing, clip 1: %.6f)\n", l,
                   (double)L->alpha, (double)L->clip, L->obj_best, L->obj_default);
            sum_def += L->obj_default, sum_best += L->obj_best;
        }
        printf("sum over layers: %.6f -> %.6f\n", sum_def, sum_best);
        /* the writer's lookup: the calibrated matrices and norms */
        int type = 0;
        const void *data = NULL;
        size_t bytes = 0;
        const char *q = "blk.0.attn_q.weight", *n = "blk.0.ffn_norm.weight", *o = "output.weight";
        CHECK(lb_abq_search_tensor(s, q, strlen(q), &type, &data, &bytes) && type == LB_TYPE_ABQ_W4 &&
              data == cal->layers[0].wq.data && bytes == lb_row_size(LB_TYPE_ABQ_W4, 256) * (size_t)cal->layers[0].wq.N);
        CHECK(lb_abq_search_tensor(s, n, strlen(n), &type, &data, &bytes) && type == LB_TYPE_F32 && bytes == 256 * 4);
        CHECK(!lb_abq_search_tensor(s, o, strlen(o), &type, &data, &bytes));
        CHECK(cal->layers[0].wq.act_bits == 4 && cal->layers[0].w_down.act_bits == 4);
    }

    /* the default configuration alone: layer 0 sees the same input, so the same objective */
    lb_abq_search_params p1 = p;
    p1.n_alpha = 1, p1.alphas[0] = -1.0f, p1.n_clip = 1, p1.clips[0] = 1.0f;
    lb_abq_search *s1 = NULL;
    CHECK_OK(lb_abq_search_run(def, tok, CHUNKS, CHUNK, &p1, &s1));
    if (s && s1) {
        CHECK_MSG(s1->layers[0].obj_best == s->layers[0].obj_default, "1x1 grid: %.10f, full grid's default %.10f",
                  s1->layers[0].obj_best, s->layers[0].obj_default);
        const double e_cal = end_to_end(fp, cal, tok), e_def = end_to_end(fp, def, tok);
        printf("end to end (1 - cos of the last residual stream vs fp): default %.6f, calibrated %.6f\n", e_def, e_cal);
        CHECK_MSG(e_cal >= 0 && e_cal < e_def, "calibrated %.6f, default %.6f", e_cal, e_def);
    }
    lb_abq_search_free(s1);

    /* refused: a non-ABQ type, a clip outside 0.55..1 */
    lb_abq_search *bad = NULL;
    lb_abq_search_params pb = p;
    pb.type = LB_TYPE_Q4_0;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad);
    pb = p, pb.n_clip = 1, pb.clips[0] = 0.3f;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad);
    lb_abq_search_free(s); /* before its model: the choices only */
    lb_model_free(fp);
    lb_model_free(cal);
    lb_model_free(def);
    return lb_test_result("test_abq_search");
}
