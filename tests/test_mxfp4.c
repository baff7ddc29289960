/* MXFP4 (formats/mxfp4.h) against ik_llama.cpp and against its own
 * definition:
 *  - the E8M0 scale, a hand-made block's values and bytes, zero blocks;
 *  - our quantizer on ../shared/interop/tiny-F32.gguf reproduces the bytes of
 *    all 16 matrices of ik_llama.cpp's llama-quantize --pure MXFP4 file
 *    (SHA-256 each, tests/data/mxfp4, scripts/make-mxfp4-fixture.sh), and
 *    lb_quantize_file writes those bytes too;
 *  - the conversion the kernels run it through (MXFP4_NL) dequantizes to the same
 *    floats and gives the reference dot product's bits, on random blocks with
 *    every scale fp16 holds; scales beyond are refused or counted;
 *  - the file lowbit writes loads and runs. (Its perplexity against
 *    ik_llama.cpp's on the same file: tests/cli_moe.sh.) */
#include <math.h>
#include <unistd.h>

#include "core/common.h"
#include "formats/legacy.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "formats/mxfp4.h"
#include "gguf/gguf.h"
#include "test_sha256.h"
#include "test_model_util.h"
#include "test_util.h"

static const char *fixture(const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/mxfp4/%s", LB_TEST_DATA_DIR, name);
    return buf;
}

static void test_scale_and_block(void) {
    CHECK(sizeof(block_mxfp4) == 17 && lb_type_bits_per_weight(LB_TYPE_MXFP4) == 4.25);
    CHECK(lb_e8m0_to_f32_half(127) == 0.5f && lb_e8m0_to_f32_half(128) == 1.0f && lb_e8m0_to_f32_half(130) == 4.0f);
    CHECK(lb_e8m0_to_f32_half(1) == ldexpf(1.0f, -127) && lb_e8m0_to_f32_half(0) == ldexpf(1.0f, -128));
    CHECK(lb_e8m0_to_f32_half(255) == ldexpf(1.0f, 127));
    /* x = 0.5 * table: max 6, so e = floor(log2 6) - 2 + 127 = 127 and d = 0.5;
     * each value its own code, but -0 (code 8) encodes as +0 (code 0: the first) */
    float x[32], y[32];
    for (int j = 0; j < 32; j++) x[j] = 0.5f * (float)lb_kvalues_mxfp4[j % 16];
    block_mxfp4 b;
    lb_quantize_row_mxfp4_ref(x, &b, 32);
    CHECK(b.e == 127);
    for (int j = 0; j < 16; j++) {
        const int code = j == 8 ? 0 : j;
        CHECK_MSG(b.qs[j] == (code | code << 4), "byte %d: %02x", j, b.qs[j]);
    }
    lb_dequantize_row_mxfp4(&b, y, 32);
    CHECK(!memcmp(x, y, sizeof x) || (y[8] == 0.0f && y[24] == 0.0f));
    /* between two values: the nearer; halfway: the first in table order */
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    x[0] = 6.0f, x[1] = 2.4f, x[2] = 2.5f, x[3] = -0.74f, x[4] = 5.0f;
    lb_quantize_row_mxfp4_ref(x, &b, 32);
    lb_dequantize_row_mxfp4(&b, y, 32);
    CHECK(y[0] == 6.0f && y[1] == 2.0f && y[2] == 2.0f && y[3] == -0.5f && y[4] == 4.0f);
    /* an all-zero block: e 0 and zero codes, as ggml */
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    memset(&b, 0xAB, sizeof b);
    lb_quantize_row_mxfp4_ref(x, &b, 32);
    CHECK(b.e == 0 && b.qs[0] == 0 && b.qs[15] == 0);
}

/* Random blocks with scales e in [104, 143]: the MXFP4_NL conversion holds
 * the same values, its reference dot gives the MXFP4 one's bits, and its
 * dot at every level this CPU has agrees within float rounding. */
static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX, LB_ISA_NEON, LB_ISA_DOTPROD, LB_ISA_I8MM};
enum { N_LEVELS = sizeof kLevels / sizeof kLevels[0] };

static void test_conversion(void) {
    enum { NB = 64 };
    uint64_t rng = 0x5eed;
    block_mxfp4 w[NB];
    block_mxfp4_nl q[NB];
    block_q8_0 a[NB];
    float xa[NB * 32];
    for (int i = 0; i < NB * 32; i++) xa[i] = lb_test_randf(&rng);
    lb_quantize_row_q8_0_ref(xa, a, NB * 32);
    int n_bad = 0, n_level_dots = 0;
    for (int trial = 0; trial < 200; trial++) {
        for (int b = 0; b < NB; b++) {
            w[b].e = (uint8_t)(104 + lb_test_rand(&rng) % 40);
            for (int j = 0; j < 16; j++) w[b].qs[j] = (uint8_t)lb_test_rand(&rng);
        }
        CHECK(lb_mxfp4_to_nl(w, q, NB) == 0);
        float yw[NB * 32], yq[NB * 32], s_ref, s_q5;
        lb_dequantize_row_mxfp4(w, yw, NB * 32);
        lb_traits(LB_TYPE_MXFP4_NL)->to_float(q, yq, NB * 32);
        n_bad += memcmp(yw, yq, sizeof yw) != 0;
        lb_vec_dot_mxfp4_q8_0_ref(NB * 32, &s_ref, w, a);
        lb_traits(LB_TYPE_MXFP4_NL)->vec_dot(NB * 32, &s_q5, q, a);
        n_bad += memcmp(&s_ref, &s_q5, sizeof s_ref) != 0;
        /* the SIMD dots sum the same exact integer block sums in another
         * float order: within 1e-5 of sum |w_i a_i| */
        float ya[NB * 32];
        lb_dequantize_row_q8_0(a, ya, NB * 32);
        double mag = 0.0;
        for (int i = 0; i < NB * 32; i++) mag += fabs((double)yq[i] * ya[i]);
        for (int l = 0; l < N_LEVELS; l++) {
            const lb_kernel *k = lb_kernel_get_at(LB_TYPE_MXFP4_NL, kLevels[l]);
            if (!k || !lb_cpu_runs(kLevels[l])) continue;
            float s_k;
            k->vec_dot(NB * 32, &s_k, q, a);
            n_bad += !(fabs((double)s_k - s_ref) <= 1e-5 * mag);
            n_level_dots++;
        }
    }
    CHECK_MSG(n_bad == 0, "%d of the conversions or dots differ", n_bad);
    CHECK(n_level_dots >= 200);
    /* beyond fp16: a scale of 2^16 is refused, one of 2^-30 counted (codes nonzero) */
    w[0].e = 144;
    CHECK(lb_mxfp4_to_nl(w, q, 1) == -1);
    w[0].e = 98;
    memset(w[0].qs, 0x11, sizeof w[0].qs);
    CHECK(lb_mxfp4_to_nl(w, q, 1) == 1);
    memset(w[0].qs, 0, sizeof w[0].qs);
    CHECK(lb_mxfp4_to_nl(w, q, 1) == 0);
}

static int64_t n_elements(const gguf_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

/* Our quantizer on tiny-F32's matrices against ik_llama.cpp's bytes. */
static void test_requantize(void) {
    const char *path = lb_test_shared("interop/tiny-F32.gguf");
    if (!lb_test_have(path)) {
        printf("no %s, skipping the interop checks\n", path);
        return;
    }
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(path, &g));
    if (!g) return;
    int n_checked = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256], want[65] = "", got[65];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        CHECK_MSG(lb_test_manifest_sha(fixture("tensors.sha256"), name, want), "%s not in tensors.sha256", name);
        if (t->type != LB_TYPE_F32 || t->n_dims < 2 || !want[0]) continue;
        const int64_t n = n_elements(t);
        float *x = malloc((size_t)n * sizeof *x);
        block_mxfp4 *q = malloc((size_t)(n / QK_MXFP4) * sizeof *q);
        memcpy(x, t->data, (size_t)n * sizeof *x); /* the mapping may be unaligned */
        lb_quantize_row_mxfp4_ref(x, q, n);
        lb_sha256_hex(q, (size_t)(n / QK_MXFP4) * sizeof *q, got);
        CHECK_MSG(!strcmp(want, got), "%s: our MXFP4 bytes differ from llama-quantize's", name);
        n_checked++;
        free(x);
        free(q);
    }
    CHECK(n_checked == 16);
    printf("quantized %d matrices of tiny-F32: every byte as ik_llama.cpp's llama-quantize --pure MXFP4\n",
           n_checked);
    gguf_close(g);

    /* lowbit quantize writes them too; the file then loads (its matrices
     * converted to MXFP4_NL at load) and runs */
    char out[4200];
    snprintf(out, sizeof out, "%s", lb_test_tmp("tiny-lowbit-MXFP4.gguf"));
    lb_quantize_params qp = {LB_TYPE_MXFP4, 2, NULL, NULL};
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file(path, out, &qp, &st));
    CHECK(st.n_quantized == 16 && st.n_fallback == 0);
    /* MXFP4_NL and its layouts are what loading makes, not file types */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s", lb_test_tmp("tiny-lowbit-MXFP4_NL.gguf"));
    const int nl_types[] = {LB_TYPE_MXFP4_NL, LB_TYPE_MXFP4_NL_8X8};
    for (int i = 0; i < 2; i++) {
        lb_quantize_params qn = {nl_types[i], 2, NULL, NULL};
        CHECK(lb_quantize_file(path, bad, &qn, NULL) == LB_ERR_UNSUPPORTED);
        CHECK(access(bad, F_OK) != 0);
    }
    gguf_file *o = NULL;
    CHECK_OK(gguf_open(out, &o));
    int n_same = 0;
    for (int64_t i = 0; o && i < gguf_n_tensors(o); i++) {
        const gguf_tensor *t = gguf_tensor_at(o, i);
        char name[256], want[65] = "", got[65];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        lb_sha256_hex(t->data, t->size, got);
        n_same += lb_test_manifest_sha(fixture("tensors.sha256"), name, want) && !strcmp(want, got);
    }
    CHECK_MSG(n_same == 21, "lowbit quantize: %d of 21 tensors as llama-quantize wrote them", n_same);
    if (o) gguf_close(o);
    /* it loads and runs: the fixed prompt's logits (test_model_util.h) are finite */
    int V = 0;
    float *logits = lb_test_logits(out, &V, NULL);
    int finite = logits != NULL;
    for (int64_t i = 0; logits && i < 2 * (int64_t)V; i++) finite &= isfinite(logits[i]) != 0;
    CHECK_MSG(finite, "the MXFP4 model does not load or gives non-finite logits");
    free(logits);
    remove(out);
}

int main(void) {
    lb_log_level = 0;
    test_scale_and_block();
    test_conversion();
    test_requantize();
    return lb_test_result("test_mxfp4");
}
