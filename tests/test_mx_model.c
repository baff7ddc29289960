/* MX files end to end (formats/mx.h "in a GGUF file", model/quantize_mx.c,
 * the loader), on tiny-F32 (dim 256, hidden 768: every layer matrix is
 * whole tiles):
 *  - `quantize ... MX` writes each layer matrix as its tiles, map and
 *    outliers with the documented types and shapes, the embedding and head
 *    in the types chosen for them, and stats whose bits match the file;
 *  - every MX matrix read back from the file dequantizes bit for bit to
 *    the matrix lb_mx_quantize makes from the same weights;
 *  - the loaded model (MX kernels) gives the logits of its F32 twin (every
 *    tensor of the file dequantized; F32 kernels) to the Q8_0 activations'
 *    rounding (Q4_0 and Q8_0 files and their twins differ by 2-4 % of the
 *    largest logit), at the best level and at the scalar reference;
 *  - no outliers (--mx-outliers 0): no outlier tensors, and it still runs;
 *  - a file whose group map or outliers are out of range, or whose row
 *    pointers go backwards, is refused with a message naming the matrix and
 *    the reason; an MX file is refused as the input of quantize. */
#include "test_model_util.h"

#include "formats/mx.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "model/model.h"

static const gguf_tensor *piece(const gguf_file *g, const gguf_tensor *t, const char *sfx) {
    char name[300];
    snprintf(name, sizeof name, "%.*s%s", (int)t->name.len, t->name.ptr, sfx);
    return gguf_find_tensor(g, name);
}

static lb_status view_of(const gguf_file *g, const gguf_tensor *t, lb_mx_view **v) {
    const gguf_tensor *hi = piece(g, t, LB_MX_SFX_HI), *map = piece(g, t, LB_MX_SFX_MAP);
    const gguf_tensor *rows = piece(g, t, LB_MX_SFX_ROWS), *out = piece(g, t, LB_MX_SFX_OUT);
    if (!map) return LB_ERR_FORMAT;
    const lb_mx_parts p = {16 * t->ne[1], 32 * map->ne[0], map->data, t->data, hi ? hi->data : NULL, t->size,
                           hi ? hi->size : 0, rows ? rows->data : NULL, rows ? rows->ne[0] : 0, out ? out->data : NULL,
                           out ? out->ne[0] : 0};
    return lb_mx_view_make(&p, v);
}

/* The file's MX matrices against lb_mx_quantize of the input's weights; its
 * twin, every tensor of the file dequantized to F32, written to f32_out. */
static void check_file(const char *in_path, const char *mx_path, const lb_mx_params *p, const char *f32_out,
                       const lb_quantize_stats *st) {
    gguf_file *in = NULL, *g = NULL;
    CHECK_OK(gguf_open(in_path, &in));
    CHECK_OK(gguf_open(mx_path, &g));
    if (!in || !g) return;
    int n_mx = 0, exact = 0, shapes = 1;
    uint64_t mx_bytes = 0, mx_w = 0;
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(in); i++) gguf_writer_copy_kv(w, gguf_kv_at(in, i));
    float **deq = calloc((size_t)gguf_n_tensors(in), sizeof *deq);
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) {
        const gguf_tensor *ti = gguf_tensor_at(in, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)ti->name.len, ti->name.ptr);
        const gguf_tensor *t = gguf_find_tensor(g, name);
        if (!t || t->type != LB_TYPE_MX2) continue;
        const int64_t K = ti->ne[0], N = ti->ne[1], G = K / 32;
        lb_mx_matrix m;
        lb_mx_params pp = *p;
        pp.n_threads = 2;
        pp.rank_by_error = 1; /* as quantize ranks without a Hessian (model/mx_gptq.h) */
        CHECK_OK(lb_mx_quantize(ti->data, N, K, NULL, NULL, &pp, &m));
        const gguf_tensor *hi = piece(g, t, LB_MX_SFX_HI), *map = piece(g, t, LB_MX_SFX_MAP);
        const gguf_tensor *rows = piece(g, t, LB_MX_SFX_ROWS), *out = piece(g, t, LB_MX_SFX_OUT);
        const int64_t cap = (int64_t)((double)p->outlier_frac * (double)N * (double)K);
        shapes &= t->n_dims == 2 && t->ne[0] == 512 * (G - m.n_hi) && t->ne[1] == N / 16;
        shapes &= m.n_hi ? hi && hi->type == LB_TYPE_MX4 && hi->ne[0] == 512 * m.n_hi && hi->ne[1] == N / 16 : !hi;
        shapes &= map && map->type == LB_TYPE_I8 && map->n_dims == 1 && map->ne[0] == G;
        shapes &= cap ? rows && out && rows->type == LB_TYPE_I32 && rows->ne[0] == N + 1 && out->type == LB_TYPE_I32 &&
                            out->ne[0] == cap
                      : !rows && !out;
        lb_mx_view *v = NULL;
        CHECK_OK(view_of(g, t, &v));
        if (v) {
            float *a = malloc(sizeof(float) * N * K), *b = malloc(sizeof(float) * N * K);
            lb_mx_view_dequantize(v, a);
            lb_mx_dequantize(&m, b);
            exact += !memcmp(a, b, sizeof(float) * N * K);
            mx_bytes += v->bytes, mx_w += (uint64_t)(N * K);
            deq[i] = a;
            free(b);
            lb_free_aligned(v);
        }
        lb_mx_free(&m);
        n_mx++;
    }
    int n_layer_mats = 0; /* every layer matrix of tiny-F32 is whole tiles */
    for (int64_t i = 0; i < gguf_n_tensors(in); i++)
        n_layer_mats += gguf_tensor_at(in, i)->n_dims == 2 && !memcmp(gguf_tensor_at(in, i)->name.ptr, "blk.", 4);
    CHECK_MSG(n_mx > 0 && n_mx == st->n_mx && n_mx == n_layer_mats, "%d MX matrices in the file, %d in the stats, %d layer matrices",
              n_mx, st->n_mx, n_layer_mats);
    CHECK_MSG(exact == n_mx, "%d of %d MX matrices read back equal lb_mx_quantize's", exact, n_mx);
    CHECK_MSG(shapes, "MX tensors with the documented types and shapes");
    CHECK_MSG(fabs(8.0 * (double)mx_bytes / (double)mx_w - st->mx_bpw) < 1e-9, "stored bits %g, stats %g",
              8.0 * (double)mx_bytes / (double)mx_w, st->mx_bpw);
    /* the F32 twin: dequantized MX matrices, everything else as in the input */
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) {
        const gguf_tensor *ti = gguf_tensor_at(in, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)ti->name.len, ti->name.ptr);
        /* the MX file's other tensors (the embedding and head in their types) as floats */
        const gguf_tensor *t = gguf_find_tensor(g, name);
        const int64_t n = ti->ne[0] * ti->ne[1] * ti->ne[2] * ti->ne[3];
        if (!deq[i] && t && lb_traits((int)t->type) && (deq[i] = malloc(sizeof(float) * (size_t)n)))
            lb_traits((int)t->type)->to_float(t->data, deq[i], n);
        CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F32, ti->n_dims, ti->ne, deq[i] ? deq[i] : ti->data));
    }
    CHECK_OK(gguf_writer_write(w, f32_out, NULL, NULL, NULL, NULL));
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) free(deq[i]);
    free(deq);
    gguf_writer_free(w);
    gguf_close(in);
    gguf_close(g);
}

/* A copy of the file with the bytes of one piece of blk.1.attn_v.weight
 * changed by patch; loading it must fail with a message holding want. */
static void corrupt(const char *mx_path, const char *sfx, void (*patch)(uint8_t *, const gguf_tensor *, const gguf_file *),
                    const char *want) {
    FILE *f = fopen(mx_path, "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open_memory(buf, (size_t)n, &g));
    char name[128];
    snprintf(name, sizeof name, "blk.1.attn_v.weight%s", sfx);
    const gguf_tensor *t = g ? gguf_find_tensor(g, name) : NULL;
    CHECK_MSG(t != NULL, "no %s", name);
    if (t) patch((uint8_t *)buf + ((const uint8_t *)t->data - buf), t, g);
    gguf_close(g);
    const char *bad = lb_test_tmp("mx_bad.gguf");
    f = fopen(bad, "wb");
    fwrite(buf, 1, (size_t)n, f);
    fclose(f);
    free(buf);
    lb_model *m = NULL;
    const lb_status s = lb_model_load(bad, NULL, &m);
    CHECK_MSG(s == LB_ERR_FORMAT && !m && strstr(lb_last_error(), want) && strstr(lb_last_error(), "blk.1.attn_v.weight"),
              "corrupt %s: status %d, '%s' (want '%s')", name, (int)s, lb_last_error(), want);
    lb_model_free(m);
}

static void map_2(uint8_t *d, const gguf_tensor *t, const gguf_file *g) { (void)t, (void)g, d[1] = 2; }
/* the first outlier's column: past the row, or in a 4-bit group */
static void out_col_k(uint8_t *d, const gguf_tensor *t, const gguf_file *g) {
    (void)t, (void)g;
    d[0] = 0, d[1] = 1; /* 256 = K */
}
static void out_col_hi(uint8_t *d, const gguf_tensor *t, const gguf_file *g) {
    (void)t;
    const gguf_tensor *map = gguf_find_tensor(g, "blk.1.attn_v.weight.map");
    const uint8_t *mp = map->data;
    int64_t hg = 0;
    while (hg < map->ne[0] && !mp[hg]) hg++;
    d[0] = (uint8_t)(32 * hg + 5), d[1] = 0;
}
static void rows_back(uint8_t *d, const gguf_tensor *t, const gguf_file *g) {
    (void)g;
    uint32_t *r = (uint32_t *)d, last;
    memcpy(&last, r + t->ne[0] - 1, 4);
    last = last ? 0 : 1; /* the end pointer below its predecessor, or past the words */
    if (!last) memcpy(r + t->ne[0] - 2, (uint32_t[]){5}, 4);
    memcpy(r + t->ne[0] - 1, &last, 4);
}

int main(void) {
    const char *f32 = lb_test_shared("interop/tiny-F32.gguf");
    if (!lb_test_have(f32)) SKIP("no %s", f32);
    lb_log_level = 0;
    const char *mx = lb_test_tmp("mx.gguf"), *twin = lb_test_tmp("mx_twin_f32.gguf");
    lb_quantize_params qp = {LB_TYPE_MX, 2, NULL, NULL};
    lb_quantize_options o;
    memset(&o, 0, sizeof o);
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file_ex(f32, mx, &qp, &o, &st));
    CHECK_MSG(st.mx_bpw > 2.8 && st.mx_bpw < 3.3 && st.mx_bpw_eq10 > 2.8 && st.mx_bpw_eq10 < st.mx_bpw,
              "MX bits: stored %g, eq. (10) %g", st.mx_bpw, st.mx_bpw_eq10);
    lb_mx_params p = lb_mx_default_params();
    check_file(f32, mx, &p, twin, &st);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(mx, &g));
    if (g) {
        const gguf_tensor *e = gguf_find_tensor(g, "token_embd.weight"), *h = gguf_find_tensor(g, "output.weight");
        CHECK_MSG(e && e->type == (uint32_t)(h ? LB_TYPE_Q4_K : LB_TYPE_Q6_K), "embedding type %u", e ? e->type : 0);
        CHECK(!h || h->type == LB_TYPE_Q6_K);
        gguf_close(g);
    }

    /* the model on MX kernels against its F32 twin on F32 kernels: Q8_0
     * activations (MX) against float ones, through every layer */
    int V = 0, V2 = 0;
    float *y = lb_test_logits(mx, &V, NULL), *ref = lb_test_logits(twin, &V2, NULL);
    CHECK(y && ref && V == V2);
    if (y && ref) lb_test_check_close(ref, y, 2 * V, "MX model against its F32 twin", 0.05);
    lb_cpu_force_level(LB_ISA_SCALAR);
    float *ys = lb_test_logits(mx, &V, NULL);
    lb_cpu_force_level(lb_cpu_detected());
    if (y && ys) lb_test_check_close(ys, y, 2 * V, "MX model at the best level against the scalar reference", 0.05);
    free(y), free(ref), free(ys);

    /* no outliers, half the groups in 4 bits */
    o.mx_set = 1, o.mx_hi = 0.5f, o.mx_outliers = 0.0f;
    const char *mx0 = lb_test_tmp("mx_no_outliers.gguf");
    CHECK_OK(lb_quantize_file_ex(f32, mx0, &qp, &o, &st));
    p.hi_frac = 0.5f, p.outlier_frac = 0.0f;
    check_file(f32, mx0, &p, twin, &st);
    y = lb_test_logits(mx0, &V, NULL), ref = lb_test_logits(twin, &V2, NULL);
    if (y && ref) lb_test_check_close(ref, y, 2 * V, "MX model without outliers against its F32 twin", 0.05);
    free(y), free(ref);

    /* malformed files and inputs */
    corrupt(mx, LB_MX_SFX_MAP, map_2, "group map entry");
    corrupt(mx, LB_MX_SFX_OUT, out_col_k, "past the row's");
    corrupt(mx, LB_MX_SFX_OUT, out_col_hi, "4-bit group");
    corrupt(mx, LB_MX_SFX_ROWS, rows_back, "row pointer");
    CHECK(lb_quantize_file_ex(mx, lb_test_tmp("mx_again.gguf"), &qp, NULL, &st) == LB_ERR_UNSUPPORTED &&
          strstr(lb_last_error(), "already MX"));
    return lb_test_result("test_mx_model");
}
