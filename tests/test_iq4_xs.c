/* IQ4_XS against llama.cpp, with the fixture in tests/data/iq4_xs (how it
 * was made: tests/data/README.md, scripts/make-iq4xs-fixture.sh):
 *  - dequantizing llama-quantize's blk.0.attn_q / blk.0.ffn_down gives
 *    llama.cpp's own floats bit for bit (first rows stored, all by SHA-256);
 *  - our quantizer on ../shared/interop/tiny-F32.gguf reproduces the bytes of
 *    all 21 tensors of llama-quantize --pure's IQ4_XS file (SHA-256 each),
 *    through the row quantizer and through lb_quantize_file, whose output
 *    then loads and runs;
 *  - bytes llama.cpp writes for an all-zero super-block, a negative maximum,
 *    the IQ4_XS -> IQ4_NL fallback and the importance-weighted path. */
#include <math.h>

#include "core/common.h"
#include "formats/cb.h"
#include "formats/kquants.h"
#include "gguf/gguf.h"
#include "test_sha256.h"
#include "test_model_util.h"
#include "test_util.h"

/* ---- the fixture ---- */
static const char *data_path(const char *name) { /* tests/data/iq4_xs beside this file */
    static char buf[4][4096];
    static int k = 0;
    k = (k + 1) % 4;
    const char *f = __FILE__, *slash = strrchr(f, '/');
    snprintf(buf[k], sizeof buf[k], "%.*sdata/iq4_xs/%s", slash ? (int)(slash - f + 1) : 0, f, name);
    return buf[k];
}

/* The digest listed for `name` in a manifest of the fixture; 0 if absent. */
static int manifest_sha(const char *manifest, const char *name, char hex[65]) {
    return lb_test_manifest_sha(data_path(manifest), name, hex);
}

static int64_t n_elements(const gguf_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

/* llama.cpp's dequantization of the two stored tensors, bit for bit. */
static void test_fixture_dequant(void) {
    static const char *const names[2][2] = {{"blk.0.attn_q.weight", "attn_q.head.f32"},
                                            {"blk.0.ffn_down.weight", "ffn_down.head.f32"}};
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(data_path("tiny-IQ4_XS-2t.gguf"), &g));
    if (!g) return;
    uint32_t ft = 0;
    CHECK(gguf_get_u32(g, "general.file_type", &ft) && ft == 30); /* LLAMA_FTYPE_MOSTLY_IQ4_XS */
    for (int k = 0; k < 2; k++) {
        const gguf_tensor *t = gguf_find_tensor(g, names[k][0]);
        CHECK_MSG(t && t->type == LB_TYPE_IQ4_XS, "%s missing or not IQ4_XS", names[k][0]);
        if (!t || t->type != LB_TYPE_IQ4_XS) continue;
        const int64_t n = n_elements(t);
        float *y = malloc((size_t)n * sizeof *y);
        lb_traits(LB_TYPE_IQ4_XS)->to_float(t->data, y, n);
        char *head = NULL;
        size_t head_len = 0;
        CHECK_OK(lb_read_file(data_path(names[k][1]), &head, &head_len));
        CHECK(head_len > 0 && head_len % (t->ne[0] * 4) == 0 && head_len <= (size_t)n * 4);
        if (head && head_len <= (size_t)n * 4) {
            int64_t n_diff = 0;
            for (size_t i = 0; i < head_len / 4; i++) n_diff += memcmp(head + 4 * i, &y[i], 4) != 0;
            CHECK_MSG(n_diff == 0, "%s: %lld of the first %zu values differ from llama.cpp's", names[k][0],
                      (long long)n_diff, head_len / 4);
        }
        char want[65] = "", got[65];
        CHECK(manifest_sha("dequant.sha256", names[k][0], want));
        lb_sha256_hex(y, (size_t)n * 4, got);
        CHECK_MSG(!strcmp(want, got), "%s: dequantization's SHA-256 %s, llama.cpp's %s", names[k][0], got, want);
        free(head);
        free(y);
    }
    gguf_close(g);
}

/* Our row quantizer on every tensor of tiny-F32 against the digests of
 * llama-quantize's bytes; the two stored tensors are compared per block too. */
static void test_requantize(const gguf_file *f32) {
    gguf_file *fix = NULL;
    CHECK_OK(gguf_open(data_path("tiny-IQ4_XS-2t.gguf"), &fix));
    int n_checked = 0;
    for (int64_t i = 0; i < gguf_n_tensors(f32); i++) {
        const gguf_tensor *t = gguf_tensor_at(f32, i);
        char name[256], want[65] = "", got[65];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        CHECK_MSG(manifest_sha("tensors.sha256", name, want), "%s not in tensors.sha256", name);
        const int64_t n = n_elements(t);
        if (t->type != LB_TYPE_F32 || !want[0]) continue;
        if (t->n_dims < 2) { /* norms stay F32: the same bytes */
            lb_sha256_hex(t->data, t->size, got);
            CHECK_MSG(!strcmp(want, got), "%s: F32 copy differs", name);
            continue;
        }
        float *x = malloc((size_t)n * sizeof *x);
        uint8_t *q = malloc((size_t)(n / QK_K) * sizeof(block_iq4_xs));
        memcpy(x, t->data, (size_t)n * sizeof *x); /* the mapping may be unaligned */
        for (int64_t r = 0; r < n / t->ne[0]; r++)
            lb_quantize_row_iq4_xs_ref(x + r * t->ne[0], q + r * (t->ne[0] / QK_K) * sizeof(block_iq4_xs), t->ne[0]);
        const size_t nbytes = (size_t)(n / QK_K) * sizeof(block_iq4_xs);
        lb_sha256_hex(q, nbytes, got);
        CHECK_MSG(!strcmp(want, got), "%s: requantized bytes differ from llama-quantize's", name);
        const gguf_tensor *ft = fix ? gguf_find_tensor(fix, name) : NULL;
        if (ft && ft->size == nbytes) {
            int64_t n_same = 0;
            for (size_t b = 0; b < nbytes / sizeof(block_iq4_xs); b++)
                n_same += !memcmp(q + b * sizeof(block_iq4_xs), (const uint8_t *)ft->data + b * sizeof(block_iq4_xs),
                                  sizeof(block_iq4_xs));
            CHECK_MSG(n_same == (int64_t)(nbytes / sizeof(block_iq4_xs)), "%s: %lld of %zu blocks identical", name,
                      (long long)n_same, nbytes / sizeof(block_iq4_xs));
        }
        n_checked++;
        free(x);
        free(q);
    }
    CHECK(n_checked == 16);
    printf("requantized %d matrices of tiny-F32: every byte as llama-quantize --pure IQ4_XS\n", n_checked);
    if (fix) gguf_close(fix);
}

/* lb_quantize_file writes llama-quantize's tensor bytes; the file loads and runs. */
static void test_quantize_file_and_run(void) {
    char out[4200];
    snprintf(out, sizeof out, "%s", lb_test_tmp("tiny-lowbit-IQ4_XS.gguf"));
    lb_quantize_params qp = {LB_TYPE_IQ4_XS, 2, NULL, NULL};
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file(lb_test_shared("interop/tiny-F32.gguf"), out, &qp, &st));
    CHECK(st.n_quantized == 16 && st.n_fallback == 0);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        int n_same = 0;
        for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            char name[256], want[65] = "", got[65];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            lb_sha256_hex(t->data, t->size, got);
            n_same += manifest_sha("tensors.sha256", name, want) && !strcmp(want, got);
        }
        CHECK_MSG(n_same == 21 && gguf_n_tensors(g) == 21, "%d of 21 tensors as llama-quantize's", n_same);
        uint32_t ft = 0;
        CHECK(gguf_get_u32(g, "general.file_type", &ft) && ft == 30);
        gguf_close(g);
    }
    /* it loads and runs: the fixed prompt's logits (test_model_util.h) are finite */
    int V = 0;
    float *logits = lb_test_logits(out, &V, NULL);
    int finite = logits != NULL;
    for (int64_t i = 0; logits && i < 2 * (int64_t)V; i++) finite &= isfinite(logits[i]) != 0;
    CHECK_MSG(finite, "the IQ4_XS model does not load or gives non-finite logits");
    free(logits);
    remove(out);
}

/* Cases checked against llama.cpp's quantize_iq4_xs when this was written. */
static void test_edges(void) {
    float x[QK_K], y[QK_K];
    block_iq4_xs b;
    /* All zero: ggml stores d = -0 (0x8000), every scale -32+32 = 0 in 6 bits
     * as 32 (scales_h 0b10 per block), and index 8 (value 1) everywhere. */
    memset(x, 0, sizeof x);
    lb_quantize_row_iq4_xs_ref(x, &b, QK_K);
    CHECK(b.d == 0x8000 && b.scales_h == 0xAAAA);
    int ok = 1;
    for (int i = 0; i < 4; i++) ok &= b.scales_l[i] == 0;
    for (int i = 0; i < 128; i++) ok &= b.qs[i] == 0x88;
    CHECK_MSG(ok, "all-zero super-block not as llama.cpp writes it");
    lb_dequantize_row_iq4_xs(&b, y, QK_K);
    for (int i = 0; i < QK_K; i++) ok &= y[i] == 0.0f;
    CHECK(ok);

    /* A negative maximum far above the rest decodes within fp16's rounding
     * of itself. The codebook's long end (-127) fits it with a positive block
     * scale, the largest, which becomes -32 steps of a negative d. */
    uint64_t s = 3;
    for (int i = 0; i < QK_K; i++) x[i] = 0.01f * lb_test_randf(&s);
    x[200] = -1000.0f;
    lb_quantize_row_iq4_xs_ref(x, &b, QK_K);
    lb_dequantize_row_iq4_xs(&b, y, QK_K);
    CHECK_MSG(fabsf(y[200] + 1000.0f) < 1.0f, "outlier -1000 decodes to %g", (double)y[200]);
    CHECK(lb_fp16_to_f32(b.d) < 0.0f && ((b.scales_l[3] & 0xF) | (((b.scales_h >> 12) & 3) << 4)) == 0); /* block 6 */

    /* Rows that don't fit 256 fall back as llama-quantize: IQ4_NL, else F16. */
    CHECK(lb_type_fallback(LB_TYPE_IQ4_XS, 512) == LB_TYPE_IQ4_XS);
    CHECK(lb_type_fallback(LB_TYPE_IQ4_XS, 288) == LB_TYPE_IQ4_NL);
    CHECK(lb_type_fallback(LB_TYPE_IQ4_XS, 48) == LB_TYPE_F16);

    /* Importance: weighting the even weights x100 lowers their error. */
    enum { K = 64 * QK_K };
    float *w = malloc(K * sizeof *w), *imp = malloc(K * sizeof *imp), *yd = malloc(K * sizeof *yd);
    uint8_t *q = malloc((K / QK_K) * sizeof(block_iq4_xs));
    for (int i = 0; i < K; i++) w[i] = lb_test_randf(&s) + 0.3f * lb_test_randf(&s) * lb_test_randf(&s);
    for (int i = 0; i < K; i++) imp[i] = i % 2 ? 1.0f : 100.0f;
    double err[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass) CHECK(lb_quantize_row_weighted(LB_TYPE_IQ4_XS, w, q, K, imp) == 1);
        else lb_quantize_row_iq4_xs_ref(w, q, K);
        lb_dequantize_row_iq4_xs(q, yd, K);
        for (int i = 0; i < K; i += 2) err[pass] += ((double)yd[i] - w[i]) * ((double)yd[i] - w[i]);
    }
    printf("IQ4_XS error on the weighted half: %.4g plain, %.4g with importance\n", err[0], err[1]);
    CHECK(err[1] < 0.9 * err[0]);
    free(w), free(imp), free(yd), free(q);
}

int main(void) {
    test_fixture_dequant();
    test_edges();
    if (!lb_test_have(lb_test_shared("interop/tiny-F32.gguf"))) {
        printf("no %s: requantization and model checks skipped\n", lb_test_shared("interop/tiny-F32.gguf"));
        return lb_test_result("test_iq4_xs");
    }
    gguf_file *f32 = NULL;
    CHECK_OK(gguf_open(lb_test_shared("interop/tiny-F32.gguf"), &f32));
    if (f32) test_requantize(f32);
    if (f32) gguf_close(f32);
    test_quantize_file_and_run();
    return lb_test_result("test_iq4_xs");
}
