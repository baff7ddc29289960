/* Byte-compatibility with llama.cpp for every quantized type lowbit supports.
 *
 * For each tiny-TYPE.gguf written by `llama-quantize --pure` (see
 * shared/interop/README.md):
 *  - every tensor is of TYPE, or F32 (the 1-D norms);
 *  - dequantizing blk.0.attn_q / blk.0.ffn_down with lb_traits(TYPE)->to_float
 *    reproduces llama.cpp's own dequantization bit for bit;
 *  - every tensor dequantizes to finite values;
 *  - requantizing the F32 original with our reference quantizer gives the
 *    same bytes llama.cpp wrote (asserted per block: 100% for every type).
 * tiny-Q4_K_M.gguf (llama.cpp's default mix) must load, dequantize to finite
 * values and requantize byte-identically too. */
#include <math.h>

#include "core/common.h"
#include "formats/types.h"
#include "gguf/gguf.h"
#include "test_util.h"

/* The fraction of blocks our quantizer must reproduce exactly, per file. */
#define REQUANT_MIN_IDENTICAL 1.0

static const char *const TYPE_NAMES[] = {"Q8_0", "Q4_0", "IQ4_NL", "Q2_K", "Q3_K",
                                         "Q4_K", "Q5_K", "Q6_K"};
static const char *const DEQUANT_TENSORS[][2] = {{"blk.0.attn_q.weight", "attn_q"},
                                                 {"blk.0.ffn_down.weight", "ffn_down"}};

static int64_t n_elements(const gguf_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

static void tensor_name(const gguf_tensor *t, char *buf, size_t cap) {
    snprintf(buf, cap, "%.*s", (int)t->name.len, t->name.ptr);
}

/* Dequantizes a whole tensor into a new buffer (NULL if the type is unknown). */
static float *dequantize(const gguf_tensor *t) {
    const lb_type_traits *tr = lb_traits((int)t->type);
    if (!tr || t->ne[0] % tr->blck) return NULL;
    const int64_t n = n_elements(t);
    float *out = malloc((size_t)n * sizeof(float));
    if (out) tr->to_float(t->data, out, n);
    return out;
}

static int all_finite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Exact comparison with llama.cpp's dequantization of one tensor. */
static void check_dequant_exact(const gguf_file *g, const char *type_name, const char *tensor,
                                const char *short_name) {
    const gguf_tensor *t = gguf_find_tensor(g, tensor);
    CHECK_MSG(t != NULL, "%s: no tensor %s", type_name, tensor);
    if (!t) return;
    char rel[256];
    snprintf(rel, sizeof rel, "interop/dequant/%s.%s.f32", type_name, short_name);
    char *ref = NULL;
    size_t ref_len = 0;
    CHECK_OK(lb_read_file(lb_test_shared(rel), &ref, &ref_len));
    float *got = dequantize(t);
    const int64_t n = n_elements(t);
    CHECK(got != NULL);
    CHECK_MSG(ref_len == (size_t)n * sizeof(float), "%s: reference has %zu bytes", rel, ref_len);
    if (got && ref && ref_len == (size_t)n * sizeof(float)) {
        int64_t n_diff = 0, first = -1;
        for (int64_t i = 0; i < n; i++) {
            if (memcmp(&got[i], ref + i * sizeof(float), sizeof(float)) != 0) {
                if (first < 0) first = i;
                n_diff++;
            }
        }
        CHECK_MSG(n_diff == 0, "%s %s: %lld of %lld values differ from llama.cpp (first at %lld)",
                  type_name, tensor, (long long)n_diff, (long long)n, (long long)first);
    }
    free(got);
    free(ref);
}

/* Requantizes the F32 original of tensor t and counts blocks byte-identical
 * to t's data. Adds to *same / *total. */
static void requant_compare(const gguf_file *f32, const gguf_tensor *t, int64_t *same,
                            int64_t *total) {
    char name[256];
    tensor_name(t, name, sizeof name);
    const gguf_tensor *src = gguf_find_tensor(f32, name);
    CHECK_MSG(src && src->type == LB_TYPE_F32 && n_elements(src) == n_elements(t),
              "F32 original of %s missing or of another shape", name);
    if (!src || src->type != LB_TYPE_F32 || n_elements(src) != n_elements(t)) return;
    const lb_type_traits *tr = lb_traits((int)t->type);
    const int64_t n = n_elements(t), nb = n / tr->blck;
    float *x = malloc((size_t)n * sizeof(float));
    uint8_t *q = malloc((size_t)nb * tr->type_size);
    CHECK(x && q);
    if (x && q) {
        memcpy(x, src->data, (size_t)n * sizeof(float)); /* the mapping may be unaligned */
        tr->from_float(x, q, n);
        const uint8_t *want = t->data;
        int64_t n_same = 0;
        for (int64_t b = 0; b < nb; b++)
            n_same += memcmp(q + b * tr->type_size, want + b * tr->type_size, tr->type_size) == 0;
        *same += n_same;
        *total += nb;
        if (n_same != nb)
            printf("  %s %s: %lld of %lld blocks identical\n", tr->name, name,
                   (long long)n_same, (long long)nb);
    }
    free(x);
    free(q);
}

/* Every tensor: known type, finite dequantization; quantized ones are
 * requantized from F32 and compared. Returns the identical-block fraction. */
static double check_all_tensors(const gguf_file *g, const gguf_file *f32, const char *label,
                                int pure_type) {
    int64_t same = 0, total = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        tensor_name(t, name, sizeof name);
        const lb_type_traits *tr = lb_traits((int)t->type);
        CHECK_MSG(tr != NULL, "%s: %s has unknown type %u", label, name, t->type);
        if (!tr) continue;
        if (pure_type >= 0)
            CHECK_MSG((int)t->type == pure_type || t->type == LB_TYPE_F32,
                      "%s: %s is %s, expected %s or F32", label, name, tr->name,
                      lb_type_name(pure_type));
        float *x = dequantize(t);
        CHECK_MSG(x && all_finite(x, n_elements(t)), "%s: %s does not dequantize to finite values",
                  label, name);
        free(x);
        if (tr->is_quantized && f32) requant_compare(f32, t, &same, &total);
    }
    const double frac = total ? (double)same / (double)total : 1.0;
    printf("%-7s requantized from F32: %lld/%lld blocks byte-identical to llama.cpp (%.2f%%)\n",
           label, (long long)same, (long long)total, 100.0 * frac);
    return frac;
}

/* `lowbit quantize IN OUT F32` (the baseline of a model that arrives
 * quantized): every matrix becomes F32 holding exactly the values its
 * type's dequantizer gives, so llama.cpp's own values for the tensors in
 * dequant/; everything else is copied unchanged. */
static void check_dequantize_to_f32(const char *file_name, const char *type_name) {
    char rel[128], out[64];
    snprintf(rel, sizeof rel, "interop/%s", file_name);
    snprintf(out, sizeof out, "interop-%s-f32.gguf", type_name);
    char out_path[4200];
    snprintf(out_path, sizeof out_path, "%s", lb_test_tmp(out));
    gguf_file *src = NULL, *g = NULL;
    CHECK_OK(gguf_open(lb_test_shared(rel), &src));
    lb_quantize_params qp = {LB_TYPE_F32, 2, NULL, NULL};
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file(lb_test_shared(rel), out_path, &qp, &st));
    CHECK_OK(gguf_open(out_path, &g));
    if (src && g) {
        CHECK_MSG(gguf_n_tensors(g) == gguf_n_tensors(src), "%s -> F32: tensor count", file_name);
        CHECK_MSG(st.n_fallback == 0 && st.bpw_out > 31.99 && st.bpw_out < 32.01,
                  "%s -> F32: %d fallbacks, %.3f bpw", file_name, st.n_fallback, st.bpw_out);
        int64_t n_bad = 0;
        for (int64_t i = 0; i < gguf_n_tensors(src); i++) {
            const gguf_tensor *a = gguf_tensor_at(src, i);
            char name[256];
            tensor_name(a, name, sizeof name);
            const gguf_tensor *b = gguf_find_tensor(g, name);
            CHECK_MSG(b && b->type == LB_TYPE_F32 && !memcmp(a->ne, b->ne, sizeof a->ne),
                      "%s -> F32: %s missing, not F32 or reshaped", file_name, name);
            if (!b || b->type != LB_TYPE_F32) continue;
            float *want = dequantize(a);
            const int64_t n = n_elements(a);
            if (!want || b->size != (uint64_t)n * sizeof(float) || memcmp(want, b->data, b->size)) n_bad++;
            free(want);
        }
        CHECK_MSG(n_bad == 0, "%s -> F32: %lld tensors differ from their dequantization", file_name,
                  (long long)n_bad);
        if (strcmp(type_name, "Q4_K_M")) {
            for (size_t d = 0; d < 2; d++) check_dequant_exact(g, type_name, DEQUANT_TENSORS[d][0], DEQUANT_TENSORS[d][1]);
        }
    }
    if (g) gguf_close(g);
    if (src) gguf_close(src);
    remove(out_path);
}

int main(void) {
    if (!lb_test_have(lb_test_shared("interop/tiny-F32.gguf")))
        SKIP("no interop data in %s", lb_test_shared("interop"));

    gguf_file *f32 = NULL;
    CHECK_OK(gguf_open(lb_test_shared("interop/tiny-F32.gguf"), &f32));

    for (size_t k = 0; k < sizeof TYPE_NAMES / sizeof TYPE_NAMES[0]; k++) {
        const char *type_name = TYPE_NAMES[k];
        const int type = lb_type_from_name(type_name);
        if (type < 0 || !lb_traits(type)) {
            printf("%s: not supported by lowbit, skipped\n", type_name);
            continue;
        }
        char rel[128];
        snprintf(rel, sizeof rel, "interop/tiny-%s.gguf", type_name);
        gguf_file *g = NULL;
        CHECK_OK(gguf_open(lb_test_shared(rel), &g));
        if (!g) continue;
        for (size_t d = 0; d < 2; d++)
            check_dequant_exact(g, type_name, DEQUANT_TENSORS[d][0], DEQUANT_TENSORS[d][1]);
        const double frac = check_all_tensors(g, f32, type_name, type);
        CHECK_MSG(frac >= REQUANT_MIN_IDENTICAL, "%s: only %.4f of blocks requantize identically",
                  type_name, frac);
        gguf_close(g);
    }

    /* The default Q4_K_M mix: several types in one file. */
    gguf_file *mix = NULL;
    CHECK_OK(gguf_open(lb_test_shared("interop/tiny-Q4_K_M.gguf"), &mix));
    if (mix) {
        const double frac = check_all_tensors(mix, f32, "Q4_K_M", -1);
        CHECK_MSG(frac >= REQUANT_MIN_IDENTICAL, "Q4_K_M: only %.4f of blocks requantize identically",
                  frac);
        gguf_close(mix);
    }
    if (f32) gguf_close(f32);

    for (size_t k = 0; k < sizeof TYPE_NAMES / sizeof TYPE_NAMES[0]; k++) {
        char file[64];
        snprintf(file, sizeof file, "tiny-%s.gguf", TYPE_NAMES[k]);
        const int type = lb_type_from_name(TYPE_NAMES[k]);
        if (type >= 0 && lb_traits(type)) check_dequantize_to_f32(file, TYPE_NAMES[k]);
    }
    check_dequantize_to_f32("tiny-Q4_K_M.gguf", "Q4_K_M");
    printf("quantize to F32: every interop file dequantizes exactly\n");
    return lb_test_result("test_interop");
}
