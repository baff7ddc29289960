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
 *    non-ABQ types are refused;
 *  - eq. (5) (akl_weight): eq. (2) plus the attention maps' KL, exactly,
 *    the KL >= 0 and smaller at W8A8 than at W4A4;
 *  - per-layer p of ffn_down's input (down_bits_hi): a layer keeps the
 *    higher bits exactly when they lower its objective by the gain asked,
 *    the model runs the choice, and the file (quantize) carries it per
 *    layer, overridden by a run's act bits, a bad value refused at load;
 *  - smooth_vo: attn_output's input smoothed through attn_v (GQA-shared
 *    scales, and a value bias) keeps a W8A8 model as close to fp as without
 *    it (exact fold); the writer's lookup returns the smoothed bias. */
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
    const lb_context_params cp = {.n_ctx = CHUNK, .n_batch = CHUNK, .n_threads = 2, .n_seq = 1};
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

/* The file: quantize --abq-search --abq-down-bits 8 --abq-down-gain 0 writes
 * ffn_down's bits per layer, a load runs each layer's, a run's act bits
 * override them all, and a value outside 1..8 is refused at load. */
static void test_file(const char *f32) {
    char out[1024], bad[1024];
    snprintf(out, sizeof out, "%s", lb_test_tmp("abq_down.gguf"));
    snprintf(bad, sizeof bad, "%s", lb_test_tmp("abq_down_bad.gguf"));
    lb_quantize_params qp = {LB_TYPE_ABQ_W4, 2, NULL, NULL};
    lb_quantize_options o = {0};
    o.act_bits = 4, o.abq_search = LB_SHARED_DIR "/data/TinyStories-valid.head31195.txt";
    o.abq_search_chunks = 2, o.abq_search_ctx = 64;
    o.abq_down_bits = 8, o.abq_down_gain_set = 1, o.abq_down_gain = 0.0f;
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file_ex(f32, out, &qp, &o, &st));
    lb_model *m = NULL;
    lb_model_params mp = lb_model_default_params();
    CHECK_OK(lb_model_load(out, &mp, &m));
    int raised = 0;
    for (int l = 0; m && l < m->hp.n_layer; l++) {
        const int b = m->layers[l].w_down.act_bits;
        CHECK_MSG((b == 4 || b == 8) && m->layers[l].wq.act_bits == 4, "layer %d: ffn_down at %d bits", l, b);
        raised += b == 8;
    }
    CHECK_MSG(m && raised == st.n_search_down_raised && raised > 0, "%d layers raised in the file, %d by the search", raised,
              st.n_search_down_raised);
    lb_model_free(m);
    mp.act_bits = 6, m = NULL;
    CHECK_OK(lb_model_load(out, &mp, &m));
    for (int l = 0; m && l < m->hp.n_layer; l++) CHECK(m->layers[l].w_down.act_bits == 6 && m->layers[l].wq.act_bits == 6);
    lb_model_free(m);
    /* the first value of the array to 9 */
    FILE *f = fopen(out, "rb");
    uint8_t *buf = NULL;
    long n = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n)
        free(buf), buf = NULL;
    if (f) fclose(f);
    CHECK(buf != NULL);
    const char *key = "lowbit.abq.act_bits_ffn_down_layers";
    const size_t kl = strlen(key);
    long at = -1;
    for (long i = 0; buf && i + (long)kl + 16 + 4 <= n && at < 0; i++)
        if (!memcmp(buf + i, key, kl)) at = i + (long)kl + 4 + 4 + 8; /* value type, element type, count */
    CHECK(at > 0);
    if (at > 0) {
        const uint32_t nine = 9;
        memcpy(buf + at, &nine, 4);
        f = fopen(bad, "wb");
        CHECK(f && fwrite(buf, 1, (size_t)n, f) == (size_t)n);
        if (f) fclose(f);
        mp.act_bits = 0, m = NULL;
        CHECK(lb_model_load(bad, &mp, &m) != LB_OK && !m && strstr(lb_last_error(), "act_bits_ffn_down_layers[0] = 9"));
        lb_model_free(m);
    }
    free(buf);
    remove(out);
    remove(bad);
}

/* smooth_vo: attn_output's input smoothed through attn_v's rows, one scale
 * per KV head's channel (tiny-F32 has 4 query heads on 2 KV heads). The fold
 * is exact in fp, so at W8A8 (near lossless) the smoothed model stays as
 * close to fp as the unsmoothed one, while attn_v and attn_output differ;
 * a mapping of the wrong heads would leave it far off. */
static void test_vo(const char *f32, const int32_t *tok) {
    double e[2] = {0, 0};
    lb_model *fp = load(f32), *m[2] = {load(f32), load(f32)};
    CHECK(fp && m[0] && m[1]);
    if (!fp || !m[0] || !m[1]) goto done;
    /* a value bias, as Qwen2 has: it must take the same 1/s as attn_v's rows */
    const int kv = fp->hp.n_head_kv * fp->hp.head_dim;
    lb_model *all[3] = {fp, m[0], m[1]};
    for (int i = 0; i < 3; i++)
        for (int l = 0; l < fp->hp.n_layer; l++) {
            float *b = lb_model_own(all[i], lb_malloc_aligned((size_t)kv * sizeof *b));
            CHECK(b != NULL);
            if (!b) goto done;
            for (int r = 0; r < kv; r++) b[r] = 0.05f * (float)((r * 37 + l * 11) % 17 - 8);
            all[i]->layers[l].bv = b;
        }
    for (int vo = 0; vo < 2; vo++) {
        lb_abq_search_params p = {0};
        p.type = LB_TYPE_ABQ_W8, p.act_bits = 8, p.n_threads = 2, p.smooth_vo = vo;
        p.n_alpha = 1, p.alphas[0] = 0.75f, p.n_clip = 1, p.clips[0] = 1.0f;
        lb_abq_search *s = NULL;
        CHECK_OK(lb_abq_search_run(m[vo], tok, CHUNKS, CHUNK, &p, &s));
        if (vo && s) {
            int type = 0;
            const void *data = NULL;
            size_t bytes = 0;
            const char *bias = "blk.0.attn_v.bias";
            CHECK(s->smooth_vo == 1 && lb_abq_search_tensor(s, bias, strlen(bias), &type, &data, &bytes) &&
                  type == LB_TYPE_F32 && bytes == (size_t)kv * 4 && data == m[1]->layers[0].bv);
            const float *b = data;
            int scaled = 0;
            for (int r = 0; b && r < kv; r++) scaled += b[r] != fp->layers[0].bv[r];
            CHECK_MSG(scaled > kv / 2, "%d of %d bias values smoothed", scaled, kv);
        }
        lb_abq_search_free(s);
        e[vo] = end_to_end(fp, m[vo], tok);
    }
    const lb_matrix *v0 = &m[0]->layers[0].wv, *v1 = &m[1]->layers[0].wv, *o0 = &m[0]->layers[0].wo, *o1 = &m[1]->layers[0].wo;
    CHECK(memcmp(v0->data, v1->data, v0->row_size * (size_t)v0->N) && memcmp(o0->data, o1->data, o0->row_size * (size_t)o0->N));
    printf("W8A8, alpha 0.75: end to end 1 - cos vs fp %.3g without the vo group, %.3g with it\n", e[0], e[1]);
    CHECK_MSG(e[1] >= 0.0 && e[1] < 2.0 * e[0] + 1e-5, "with the vo group %.6g, without %.6g", e[1], e[0]);
done:
    lb_model_free(fp), lb_model_free(m[0]), lb_model_free(m[1]);
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

    /* eq. (5): the objective plus the attention maps' symmetric KL (eq. (4)).
     * Layer 0 sees the same input in every run, so its default objective is
     * eq. (2)'s plus the KL exactly; the choice is still the grid's least;
     * the KL is >= 0, and W8A8's maps are closer to fp than W4A4's. */
    if (s) {
        lb_model *am = load(f32);
        lb_abq_search_params pa = p;
        pa.akl_weight = 1.0f;
        lb_abq_search *sa = NULL;
        CHECK(am != NULL);
        if (am) CHECK_OK(lb_abq_search_run(am, tok, CHUNKS, CHUNK, &pa, &sa));
        for (int l = 0; sa && l < sa->n_layer; l++) {
            const lb_abq_search_layer *L = &sa->layers[l];
            double lo = INFINITY;
            for (int i = 0; i < sa->n_alpha * sa->n_clip; i++) lo = fmin(lo, L->grid[i]);
            CHECK(L->obj_best == lo && L->akl_best >= 0.0 && L->akl_default >= 0.0);
            printf("eq. (5), layer %d: alpha %5.2f clip %.2f, objective %.6f (attention KL %.6f), default %.6f (KL %.6f)\n",
                   l, (double)L->alpha, (double)L->clip, L->obj_best, L->akl_best, L->obj_default, L->akl_default);
        }
        if (sa)
            CHECK_MSG(sa->layers[0].obj_default == s->layers[0].obj_default + sa->layers[0].akl_default &&
                          sa->layers[0].akl_default > 0.0,
                      "layer 0: eq. (5) %.10f, eq. (2) %.10f + KL %.10f", sa->layers[0].obj_default, s->layers[0].obj_default,
                      sa->layers[0].akl_default);
        lb_abq_search_free(sa);
        lb_model_free(am);
        double kl[2] = {0, 0};
        for (int w8 = 0; w8 < 2; w8++) {
            lb_model *bm = load(f32);
            lb_abq_search_params pw = p1; /* the default configuration alone */
            pw.akl_weight = 1.0f, pw.type = w8 ? LB_TYPE_ABQ_W8 : LB_TYPE_ABQ_W4, pw.act_bits = w8 ? 8 : 4;
            lb_abq_search *sw = NULL;
            if (bm) CHECK_OK(lb_abq_search_run(bm, tok, CHUNKS, CHUNK, &pw, &sw));
            if (sw) kl[w8] = sw->layers[0].akl_best;
            lb_abq_search_free(sw);
            lb_model_free(bm);
        }
        printf("layer 0's attention KL, default configuration: W4A4 %.6f, W8A8 %.6f\n", kl[0], kl[1]);
        CHECK_MSG(kl[1] >= 0.0 && kl[1] < kl[0], "attention KL: W8A8 %.8f not below W4A4 %.8f", kl[1], kl[0]);
    }

    /* per-layer p of ffn_down's input: with any gain (0) a layer keeps 8 bits
     * wherever they lower eq. (2), and the model runs it so; with a gain of
     * 0.99 none does */
    for (int gi = 0; gi < 2; gi++) {
        lb_model *dm = load(f32);
        lb_abq_search_params pd = p;
        pd.down_bits_hi = 8, pd.down_gain = gi ? 0.99f : 0.0f;
        lb_abq_search *sd = NULL;
        CHECK(dm != NULL);
        if (dm) CHECK_OK(lb_abq_search_run(dm, tok, CHUNKS, CHUNK, &pd, &sd));
        int raised = 0;
        for (int l = 0; sd && l < sd->n_layer; l++) {
            const lb_abq_search_layer *L = &sd->layers[l];
            double lo = INFINITY;
            for (int i = 0; i < sd->n_alpha * sd->n_clip; i++) lo = fmin(lo, L->grid[i]);
            CHECK(L->obj_grid == lo && !isnan(L->obj_down_hi));
            CHECK(L->down_bits == 4 || L->down_bits == 8);
            CHECK_MSG(dm->layers[l].w_down.act_bits == L->down_bits && dm->layers[l].wq.act_bits == 4,
                      "layer %d: ffn_down runs at %d bits, the search chose %d", l, dm->layers[l].w_down.act_bits,
                      L->down_bits);
            if (L->down_bits == 8)
                CHECK_MSG(L->obj_best == L->obj_down_hi && L->obj_down_hi <= lo * (1.0 - pd.down_gain),
                          "layer %d: raised at %.8f against the grid's %.8f", l, L->obj_down_hi, lo);
            else
                CHECK_MSG(L->obj_best == lo && L->obj_down_hi > lo * (1.0 - pd.down_gain),
                          "layer %d: not raised though %.8f against %.8f", l, L->obj_down_hi, lo);
            raised += L->down_bits == 8;
            printf("gain %.2f, layer %d: ffn_down's input at 4 bits %.6f, at 8 bits %.6f: %d bits\n", (double)pd.down_gain,
                   l, lo, L->obj_down_hi, L->down_bits);
        }
        CHECK_MSG(gi ? raised == 0 : raised > 0, "gain %.2f: %d layers raised", (double)pd.down_gain, raised);
        lb_abq_search_free(sd);
        lb_model_free(dm);
    }

    /* refused: a non-ABQ type, a clip outside 0.55..1, ffn_down raised to no more bits, a gain of 1 */
    lb_abq_search *bad = NULL;
    lb_abq_search_params pb = p;
    pb.type = LB_TYPE_Q4_0;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad);
    pb = p, pb.n_clip = 1, pb.clips[0] = 0.3f;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad);
    pb = p, pb.down_bits_hi = 4;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad && strstr(lb_last_error(), "above"));
    pb = p, pb.down_bits_hi = 8, pb.down_gain = 1.0f;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad);
    pb = p, pb.akl_weight = -1.0f;
    CHECK(lb_abq_search_run(fp, tok, CHUNKS, CHUNK, &pb, &bad) != LB_OK && !bad);
    test_file(f32);
    test_vo(f32, tok);
    lb_abq_search_free(s); /* before its model: the choices only */
    lb_model_free(fp);
    lb_model_free(cal);
    lb_model_free(def);
    return lb_test_result("test_abq_search");
}
