/* BCQ{q}_GC, whole-row BCQ groups (formats/bcqc.h, formats/gc.h):
 *  - geometry: block sizes, names, ids, bits per weight, side tensors;
 *  - the whole-row fit: a row that is exactly a BCQ grid comes back
 *    exactly; the alternating iterations never raise the error; rows of
 *    128 fit as one BCQ{q}_G128 group does (the same bytes);
 *  - a row's values and dot products are its G128 expansion's, bit for
 *    bit (the scalar GEMV on a view, at M = 1..3, through lb_matmul);
 *  - lb_bcqc_round gives the nearest of the row's 2^q values;
 *  - GQ{q}_GC -> BCQ{q}_GC (App. C) is exact where the closed form says so;
 *  - a view refuses a short side tensor and non-finite alphas or z;
 *  - on tiny-F32 (every matrix whole 128-blocks): `quantize ... BCQ4_GC`
 *    writes the codes and NAME.bcq_az as lb_bcqc_quantize_row gives them,
 *    the model gives its F32 twin's logits (expanded and repacked to the
 *    table-lookup layout at the best level; the view's reference GEMV at
 *    the scalar level), --from-uniform turns a GQ4_GC file into BCQ4_GC
 *    with every row exact, and a missing or non-finite side tensor is
 *    refused naming the matrix. */
#include "test_model_util.h"

#include "formats/gc.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "model/model.h"
#include "model/repack.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static void test_geometry(void) {
    static const struct { int type, q; const char *name; } t[] = {
        {LB_TYPE_BCQ4_GC, 4, "BCQ4_GC"}, {LB_TYPE_BCQ3_GC, 3, "BCQ3_GC"},
        {LB_TYPE_BCQ2_GC, 2, "BCQ2_GC"}, {LB_TYPE_BCQ1_GC, 1, "BCQ1_GC"}};
    for (int i = 0; i < 4; i++) {
        const lb_type_traits *tr = lb_traits(t[i].type);
        CHECK_MSG(tr && tr->blck == 128 && tr->type_size == (size_t)(16 * t[i].q) && !tr->to_float && !tr->from_float,
                  "%s traits", t[i].name);
        CHECK(!strcmp(lb_type_name(t[i].type), t[i].name) && lb_type_from_name(t[i].name) == t[i].type);
        CHECK(lb_type_bits_per_weight(t[i].type) == t[i].q);
        CHECK(lb_gc_is(t[i].type) && lb_gc_bits(t[i].type) == t[i].q && lb_gc_side_n(t[i].type) == t[i].q + 1);
        CHECK(lb_gc_g128(t[i].type) == lb_bcq_type(t[i].q, 128) && lb_bcqc_type(t[i].q) == t[i].type);
        CHECK(!strcmp(lb_gc_sfx(t[i].type), ".bcq_az"));
        const lb_kernel *k = lb_kernel_get_at(t[i].type, LB_ISA_SCALAR);
        CHECK_MSG(k && k->act_type == LB_TYPE_Q8_0_LUT4 && k->gemv == lb_gemv_bcqc_lut4_ref, "%s kernel", t[i].name);
    }
    CHECK(lb_gc_side_n(LB_TYPE_GQ4_GC) == 2 && !strcmp(lb_gc_sfx(LB_TYPE_GQ4_GC), ".gq_sz"));
    CHECK(!lb_gc_is(LB_TYPE_BCQ4_G128) && lb_gc_side_n(LB_TYPE_Q4_0) == 0 && !lb_gc_sfx(LB_TYPE_Q4_0));
    CHECK(lb_gc_is_side("blk.0.ffn_up.weight.bcq_az", 26) && lb_gc_is_side("a.gq_sz", 7) &&
          !lb_gc_is_side(".bcq_az", 7) && !lb_gc_is_side("blk.0.ffn_up.weight", 19));
}

/* squared error of the row's values against x */
static double row_error(int type, const void *codes, const lb_fp16 *az, const float *x, int64_t K) {
    float *y = malloc(sizeof(float) * (size_t)K);
    lb_bcqc_dequantize_row(type, codes, y, K, az);
    double e = 0;
    for (int64_t k = 0; k < K; k++) e += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
    free(y);
    return e;
}

static void test_fit(void) {
    enum { K = 1024 };
    float x[K];
    uint8_t codes[K / 128 * 64];
    lb_fp16 az[5];
    for (int q = 1; q <= 4; q++) {
        const int type = lb_bcqc_type(q);
        /* an exact BCQ row (fp16 alphas, z, random signs) comes back with no error */
        const float alpha[4] = {0.0625f, 0.125f, 0.3125f, 0.5f}, z = -0.25f;
        for (int k = 0; k < K; k++) {
            float v = z;
            for (int i = 0; i < q; i++) v += frand() > 0 ? alpha[i] : -alpha[i];
            x[k] = v;
        }
        CHECK(lb_bcqc_quantize_row(type, x, codes, K, NULL, az) == 0);
        CHECK_MSG(row_error(type, codes, az, x, K) == 0.0, "BCQ%d_GC: an exact BCQ row, error %g", q,
                  row_error(type, codes, az, x, K));
        /* Gaussian-ish rows: more iterations never hurt */
        for (int k = 0; k < K; k++) x[k] = 0.05f * (frand() + frand() + frand());
        lb_bcq_set_iters(0);
        lb_bcqc_quantize_row(type, x, codes, K, NULL, az);
        const double e0 = row_error(type, codes, az, x, K);
        lb_bcq_set_iters(8);
        lb_bcqc_quantize_row(type, x, codes, K, NULL, az);
        const double e8 = row_error(type, codes, az, x, K);
        CHECK_MSG(e8 <= e0 && e8 > 0, "BCQ%d_GC: error %g after 8 iterations, %g before", q, e8, e0);
        /* a row of 128 is one BCQ{q}_G128 group: the same alphas, z and planes */
        uint8_t g128[LB_BCQ_SIZE(4, 128)], mine[LB_BCQ_SIZE(4, 128)];
        lb_traits(lb_bcq_type(q, 128))->from_float(x, g128, 128);
        lb_bcqc_quantize_row(type, x, codes, 128, NULL, az);
        lb_bcqc_to_g128(type, codes, az, mine, 128);
        CHECK_MSG(!memcmp(g128, mine, LB_BCQ_SIZE(q, 128)), "BCQ%d_GC: a row of 128 as BCQ%d_G128 quantizes it", q, q);
    }
    /* bad arguments: a row that is no multiple of 128 */
    CHECK(lb_bcqc_quantize_row(LB_TYPE_BCQ4_GC, x, codes, 100, NULL, az) < 0);
}

/* values, dot products and rounding against the G128 expansion */
static void test_dot_round(void) {
    enum { K = 640, N = 7, M = 3 };
    for (int q = 1; q <= 4; q++) {
        const int type = lb_bcqc_type(q), g = lb_bcq_type(q, 128);
        const size_t rs = lb_row_size(type, K), gs = lb_row_size(g, K);
        uint8_t *codes = malloc(rs * N), *exp = malloc(gs * N);
        lb_fp16 az[N * 5];
        float *x = malloc(sizeof(float) * K * N), *a = malloc(sizeof(float) * K * M);
        for (int i = 0; i < K * N; i++) x[i] = 0.1f * frand() + (i % K == 5 ? 0.8f : 0.0f);
        for (int i = 0; i < K * M; i++) a[i] = frand();
        for (int n = 0; n < N; n++) {
            lb_bcqc_quantize_row(type, x + n * K, codes + n * rs, K, NULL, az + (q + 1) * n);
            lb_bcqc_to_g128(type, codes + n * rs, az + (q + 1) * n, exp + n * gs, K);
        }
        /* values */
        float *y1 = malloc(sizeof(float) * K), *y2 = malloc(sizeof(float) * K);
        int same = 1;
        for (int n = 0; n < N; n++) {
            lb_bcqc_dequantize_row(type, codes + n * rs, y1, K, az + (q + 1) * n);
            lb_traits(g)->to_float(exp + n * gs, y2, K);
            same &= !memcmp(y1, y2, sizeof(float) * K);
        }
        CHECK_MSG(same, "BCQ%d_GC values = BCQ%d_G128's of the expansion", q, q);
        /* the view's GEMV, directly and through lb_matmul */
        lb_gc_view *v = NULL;
        CHECK_OK(lb_gc_view_make(type, N, K, codes, rs * N, az, (q + 1) * N, &v));
        const size_t as = lb_row_size(LB_TYPE_Q8_0_LUT4, K);
        uint8_t *aq = malloc(as * M);
        for (int m = 0; m < M; m++) lb_quantize_row_q8_0_lut4_ref(a + m * K, aq + m * as, K);
        float want[M * N], got[M * N], viamm[M * N];
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) lb_traits(g)->vec_dot(K, &want[m * N + n], exp + n * gs, aq + m * as);
        if (v) {
            lb_gemv_bcqc_lut4_ref(K, v, rs, 0, N, aq, as, M, got, N);
            CHECK_MSG(!memcmp(want, got, sizeof want), "BCQ%d_GC GEMV = BCQ%d_G128's reference dot, bit for bit", q, q);
            const lb_matrix W = {type, K, N, rs, v, 0};
            void *scratch = malloc(lb_matmul_scratch_size(&W, M));
            for (int threads = 1; threads <= 2; threads++) {
                lb_matmul(&W, a, M, viamm, N, scratch, threads);
                CHECK_MSG(!memcmp(want, viamm, sizeof want), "BCQ%d_GC lb_matmul (%d threads)", q, threads);
            }
            free(scratch);
            CHECK(lb_gc_view_bytes(v) == rs * N + 2 * (q + 1) * N && lb_matrix_bytes(&W) == lb_gc_view_bytes(v));
        }
        lb_free_aligned(v);
        /* rounding: the nearest of the 2^q values (brute force), stored */
        int nearest = 1;
        for (int t = 0; t < 200; t++) {
            const int col = (int)((rng >> 20) % K);
            const float xv = 0.3f * frand();
            const float r = lb_bcqc_round(type, codes, col, xv, az);
            float best = INFINITY;
            for (int c = 0; c < 1 << q; c++) {
                uint8_t blk[LB_BCQ_SIZE(4, 128)];
                lb_bcqc_to_g128(type, codes, az, blk, 128);
                const float vv = lb_bcq_code_value(q, blk, c);
                if (fabsf(vv - xv) < fabsf(best - xv)) best = vv;
            }
            lb_bcqc_dequantize_row(type, codes, y1, K, az);
            nearest &= fabsf(r - xv) == fabsf(best - xv) && y1[col] == r;
        }
        CHECK_MSG(nearest, "BCQ%d_GC: round gives the nearest value and stores its code", q);
        free(codes), free(exp), free(x), free(a), free(aq), free(y1), free(y2);
    }
}

/* GQ{q}_GC -> BCQ{q}_GC */
static void test_from_gqc(void) {
    enum { K = 384 };
    float x[K], y1[K], y2[K];
    for (int q = 2; q <= 4; q++) {
        uint8_t gq[K / 128 * 64], bc[K / 128 * 64];
        lb_fp16 s, az[5];
        int z;
        for (int k = 0; k < K; k++) x[k] = 0.02f * frand();
        lb_gqc_quantize_row(lb_gqc_type(q), x, gq, K, 0, NULL, &s, &z);
        const int exact = lb_bcqc_from_gqc(q, gq, s, z, bc, az, K);
        lb_gqc_dequantize_row(lb_gqc_type(q), gq, y1, K, s, z);
        lb_bcqc_dequantize_row(lb_bcqc_type(q), bc, y2, K, az);
        int same = 1;
        for (int k = 0; k < K; k++) same &= y1[k] == y2[k];
        CHECK_MSG(exact && same, "GQ%d_GC -> BCQ%d_GC: exact %d, values equal %d", q, q, exact, same);
        /* a scale whose z = s (2^q - 1 - 2 zq) / 2 needs more than fp16's bits */
        const lb_fp16 odd = lb_f32_to_fp16(1.0009765625f); /* 1 + 2^-10 */
        CHECK(!lb_bcqc_from_gqc(q, gq, odd, 0, bc, az, K) == !lb_bcq_uniform_exact(odd, 0, q));
    }
}

static void test_view_checks(void) {
    enum { K = 256, N = 4 };
    uint8_t codes[N * 2 * 64] = {0};
    lb_fp16 az[N * 5];
    for (int i = 0; i < N * 5; i++) az[i] = lb_f32_to_fp16(0.5f);
    lb_gc_view *v = NULL;
    CHECK_OK(lb_gc_view_make(LB_TYPE_BCQ4_GC, N, K, codes, sizeof codes, az, 5 * N, &v));
    CHECK(v && v->side_n == 5 && v->bits == 4 && v->row_size == 128);
    lb_free_aligned(v);
    v = NULL;
    lb_status s = lb_gc_view_make(LB_TYPE_BCQ4_GC, N, K, codes, sizeof codes, az, 5 * N - 1, &v);
    CHECK_MSG(s == LB_ERR_SHAPE && !v && strstr(lb_last_error(), "alphas and z"), "short side: %s", lb_last_error());
    s = lb_gc_view_make(LB_TYPE_BCQ4_GC, N, K, codes, sizeof codes - 1, az, 5 * N, &v);
    CHECK_MSG(s == LB_ERR_SHAPE && !v, "short codes: %s", lb_last_error());
    az[5 * 2 + 1] = 0x7e00; /* NaN alpha_1 of row 2 */
    s = lb_gc_view_make(LB_TYPE_BCQ4_GC, N, K, codes, sizeof codes, az, 5 * N, &v);
    CHECK_MSG(s == LB_ERR_FORMAT && !v && strstr(lb_last_error(), "row 2's alpha_1"), "NaN alpha: %s", lb_last_error());
    az[5 * 2 + 1] = az[0];
    az[5 * 3 + 4] = 0xfc00; /* -inf z of row 3 */
    s = lb_gc_view_make(LB_TYPE_BCQ4_GC, N, K, codes, sizeof codes, az, 5 * N, &v);
    CHECK_MSG(s == LB_ERR_FORMAT && !v && strstr(lb_last_error(), "row 3's z"), "inf z: %s", lb_last_error());
}

/* ---- files ---- */

/* The file's BCQ4_GC matrices (16, each with its F16 [5N] side tensor)
 * against lb_bcqc_quantize_row of the input's F32 rows (check_rows); the
 * file's F32 twin (every matrix dequantized) written to f32_out. */
static void check_file(const char *in_path, const char *gc_path, int check_rows, const char *f32_out) {
    gguf_file *in = NULL, *g = NULL;
    CHECK_OK(gguf_open(in_path, &in));
    CHECK_OK(gguf_open(gc_path, &g));
    const int type = LB_TYPE_BCQ4_GC;
    int n_gc = 0, exact = 0;
    for (int64_t i = 0; in && g && i < gguf_n_tensors(in); i++) {
        const gguf_tensor *ti = gguf_tensor_at(in, i);
        char name[256], side[300];
        snprintf(name, sizeof name, "%.*s", (int)ti->name.len, ti->name.ptr);
        snprintf(side, sizeof side, "%s.bcq_az", name);
        const gguf_tensor *t = gguf_find_tensor(g, name), *az = gguf_find_tensor(g, side);
        if (!t || (int)t->type != type || !az) continue;
        const int64_t K = t->ne[0], N = t->ne[1];
        CHECK(az->type == LB_TYPE_F16 && az->n_dims == 1 && az->ne[0] == 5 * N);
        n_gc++;
        if (!check_rows || ti->type != LB_TYPE_F32) continue;
        const size_t rs = lb_row_size(type, K);
        uint8_t *codes = malloc(rs);
        int same = 1;
        for (int64_t r = 0; r < N; r++) {
            lb_fp16 h[5];
            lb_bcqc_quantize_row(type, (const float *)ti->data + r * K, codes, K, NULL, h);
            same &= !memcmp(codes, (const uint8_t *)t->data + r * rs, rs) &&
                    !memcmp(h, (const lb_fp16 *)az->data + 5 * r, sizeof h);
        }
        free(codes);
        exact += same;
    }
    CHECK_MSG(n_gc == 16, "%d BCQ4_GC matrices in %s", n_gc, gc_path);
    if (check_rows) CHECK_MSG(exact == n_gc, "%d of %d matrices equal lb_bcqc_quantize_row's", exact, n_gc);
    gguf_close(in);
    gguf_close(g);
    lb_test_f32_twin(gc_path, f32_out);
}

static void test_files(void) {
    const char *f32 = lb_test_shared("interop/tiny-F32.gguf");
    if (!lb_test_have(f32)) {
        printf("SKIP files: no %s\n", f32);
        return;
    }
    char gc[4096], twin[4096], gq[4096], conv[4096], twin2[4096];
    snprintf(gc, sizeof gc, "%s", lb_test_tmp("bcqc4.gguf"));
    snprintf(twin, sizeof twin, "%s", lb_test_tmp("bcqc4_twin_f32.gguf"));
    snprintf(gq, sizeof gq, "%s", lb_test_tmp("bcqc_gq4gc.gguf"));
    snprintf(conv, sizeof conv, "%s", lb_test_tmp("bcqc4_from_gq.gguf"));
    snprintf(twin2, sizeof twin2, "%s", lb_test_tmp("bcqc4_from_gq_twin.gguf"));
    lb_quantize_params qp = {LB_TYPE_BCQ4_GC, 2, NULL, NULL};
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file(f32, gc, &qp, &st));
    /* 4 bits + 80 per row of 256 or 768 */
    CHECK_MSG(st.n_fallback == 0 && st.layer_bpw > 4.1 && st.layer_bpw < 4.32, "layer bits %g", st.layer_bpw);
    check_file(f32, gc, 1, twin);

    int V = 0, V2 = 0, ty = -1;
    float *y = lb_test_logits(gc, &V, &ty), *ref = lb_test_logits(twin, &V2, NULL);
    CHECK(y && ref && V == V2);
    CHECK_MSG(ty == lb_repack_target(LB_TYPE_BCQ4_GC), "blk.0.attn_q runs as %s", lb_type_name(ty));
    if (y && ref) lb_test_check_close(ref, y, 2 * V, "BCQ4_GC model against its F32 twin", 0.05);
    lb_cpu_force_level(LB_ISA_SCALAR);
    float *ys = lb_test_logits(gc, &V, &ty);
    lb_cpu_force_level(lb_cpu_detected());
    CHECK_MSG(ty == LB_TYPE_BCQ4_GC, "scalar level: blk.0.attn_q runs as %s", lb_type_name(ty));
    lb_cpu_disable_features(LB_CPU_AMXBF16); /* its prefill rounds to bf16 (docs/bcq.md) */
    float *yq = lb_test_logits(gc, &V, NULL);
    lb_cpu_disable_features(0);
    if (yq && ys) lb_test_check_close(ys, yq, 2 * V, "BCQ4_GC at the best level against the scalar reference", 1e-4);
    free(y), free(ref), free(ys), free(yq);

    /* GQ4_GC -> BCQ4_GC --from-uniform. Asymmetric rows: exact where the
     * closed form says z = s (15 - 2 zq) / 2 is an fp16 (formats/bcq.h),
     * the others within half an ulp of z; symmetric rows (zq = 8, z = -s/2):
     * all exact, and the same model */
    lb_quantize_options o;
    memset(&o, 0, sizeof o);
    for (int sym = 0; sym <= 1; sym++) {
        o.sym = sym, o.from_uniform = 0;
        qp.type = LB_TYPE_GQ4_GC;
        CHECK_OK(lb_quantize_file_ex(f32, gq, &qp, &o, &st));
        int64_t want_inexact = 0, rows = 0;
        gguf_file *g = NULL;
        CHECK_OK(gguf_open(gq, &g));
        for (int64_t i = 0; g && i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            if (t->type != LB_TYPE_F16 || !lb_gc_is_side(t->name.ptr, t->name.len)) continue;
            const lb_fp16 *sz = t->data;
            for (int64_t r = 0; r < t->ne[0] / 2; r++, rows++)
                want_inexact += !lb_bcq_uniform_exact(sz[2 * r], (int)lb_fp16_to_f32(sz[2 * r + 1]), 4);
        }
        gguf_close(g);
        o.sym = 0, o.from_uniform = 1;
        qp.type = LB_TYPE_BCQ4_GC;
        CHECK_OK(lb_quantize_file_ex(gq, conv, &qp, &o, &st));
        printf("GQ4_GC%s -> BCQ4_GC: %lld of %lld rows exact\n", sym ? " --sym" : "",
               (long long)(st.uniform_groups - st.uniform_inexact), (long long)st.uniform_groups);
        CHECK_MSG(st.n_from_uniform == 16 && st.uniform_groups == rows && st.uniform_inexact == want_inexact &&
                      (!sym || !want_inexact),
                  "--from-uniform%s: %d matrices, %lld rows (%lld in the file), %lld inexact, %lld by the closed form",
                  sym ? " (sym)" : "", st.n_from_uniform, (long long)st.uniform_groups, (long long)rows,
                  (long long)st.uniform_inexact, (long long)want_inexact);
        check_file(gq, conv, 0, twin2);
        y = lb_test_logits(conv, &V, NULL);
        float *yg = lb_test_logits(gq, &V2, NULL);
        if (y && yg) lb_test_check_close(yg, y, 2 * V, "BCQ4_GC from GQ4_GC against GQ4_GC", sym ? 0.01 : 0.05);
        free(y), free(yg);
    }

    const char *side = "blk.1.attn_v.weight.bcq_az";
    lb_test_corrupt_side(gc, side, 0, 0, 0, "has no alpha/z tensor blk.1.attn_v.weight.bcq_az");
    lb_test_corrupt_side(gc, side, 2, 0, 0, "not the F16 [640] (5 values for each of 128 rows)");
    lb_test_corrupt_side(gc, side, 3, 5 * 3 + 4, 0x7c00 /* +inf */, "row 3's z is inf");
    lb_test_corrupt_side(gc, side, 3, 5 * 6 + 2, 0x7e00 /* NaN */, "row 6's alpha_2 is nan");
    remove(gc), remove(twin), remove(gq), remove(conv), remove(twin2);
}

int main(void) {
    lb_log_level = 0;
    test_geometry();
    test_fit();
    test_dot_round();
    test_from_gqc();
    test_view_checks();
    test_files();
    return lb_test_result("test_bcqc");
}
