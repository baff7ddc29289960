/* The K-quant, IQ4_NL and MXFP4_NL dot-product kernels at every ISA level this CPU has,
 * against the scalar reference vec_dot (formats/q*_k.c, iq4_nl.c).
 *
 * Tolerance: |kernel - reference| <= 1e-5 * sum_i |w_i * a_i| (dequantized
 * weights and activations, in double). The kernels' integer inner sums are
 * exact; only the float scaling and summation order differs, which costs a
 * few float ulps of the partial sums (observed: below 1e-6 of the bound).
 *
 * Also: the AVX2 Q8_K quantizer (and every kernel's quantize_act) is byte-
 * identical to the reference, and dispatch hands out the expected kernels. */
#include "test_util.h"

#include "formats/kquants.h"
#include "kernels/dispatch.h"
#include "kernels/x86/kquants_x86.h"

static const int kTypes[] = {LB_TYPE_Q2_K, LB_TYPE_Q3_K, LB_TYPE_Q4_K,
                             LB_TYPE_Q5_K, LB_TYPE_Q6_K, LB_TYPE_IQ4_NL, LB_TYPE_MXFP4_NL};
/* the blocks of 32 with an fp16 scale and a 16-entry codebook against Q8_0 */
#define IS_NL(t) ((t) == LB_TYPE_IQ4_NL || (t) == LB_TYPE_MXFP4_NL)
#define TOL 1e-5
#define MAX_N 11008

static double worst_rel_err = 0.0;

/* Standard normal by Box-Muller. */
static float rand_gauss(uint64_t *s) {
    const double u1 = 1.0 - (lb_test_randf(s) + 1.0) / 2.0; /* (0, 1] */
    const double u2 = (lb_test_randf(s) + 1.0) / 2.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Student-t with 5 degrees of freedom: gaussian-like with heavier tails,
 * like LLM weights and activations. */
static float rand_t5(uint64_t *s) {
    double chi2 = 0.0;
    for (int i = 0; i < 5; i++) {
        const double g = rand_gauss(s);
        chi2 += g * g;
    }
    return (float)(rand_gauss(s) / sqrt(chi2 / 5.0));
}

/* Levels to test: scalar always, x86 levels the CPU has. */
static int level_available(lb_isa level) {
    const lb_isa hw = lb_cpu_detected();
    if (level == LB_ISA_SCALAR) return 1;
    return lb_isa_is_x86(hw) && level <= hw;
}

/* sum |w_i * a_i| of the dequantized rows: the scale of the error bound. */
static double abs_dot(int type, const void *wq, const void *aq, int64_t n) {
    static float w[MAX_N], a[MAX_N];
    const lb_type_traits *t = lb_traits(type);
    t->to_float(wq, w, n);
    lb_traits(t->vec_dot_type)->to_float(aq, a, n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += fabs((double)w[i] * (double)a[i]);
    return sum;
}

/* Every available level's kernel against the reference on one (w, a) pair. */
static void compare_levels(int type, const void *wq, const void *aq, int64_t n, const char *what) {
    const lb_type_traits *t = lb_traits(type);
    float ref = 0.0f;
    t->vec_dot(n, &ref, wq, aq);
    const double bound = TOL * abs_dot(type, wq, aq, n);
    CHECK_MSG(isfinite(ref), "%s %s n=%lld: reference not finite", t->name, what, (long long)n);
    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512};
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if (!level_available(levels[l])) continue;
        const lb_kernel *k = lb_kernel_get_at(type, levels[l]);
        CHECK(k != NULL);
        if (!k) continue;
        float got = -12345.0f;
        k->vec_dot(n, &got, wq, aq);
        const double err = fabs((double)got - (double)ref);
        if (bound > 0.0 && err / (bound / TOL) > worst_rel_err) worst_rel_err = err / (bound / TOL);
        CHECK_MSG(err <= bound, "%s %s n=%lld %s: got %.9g want %.9g (err %.3g > %.3g)", t->name, what,
                  (long long)n, k->name, got, ref, err, bound);
    }
}

/* Weights quantized by the reference from t5 floats, activations by the
 * reference activation quantizer. */
static void test_quantized_data(void) {
    static float wf[MAX_N], af[MAX_N];
    static _Alignas(64) uint8_t wq[MAX_N * 2], aq[MAX_N * 2], aq2[MAX_N * 2];
    const int64_t sizes_k[] = {256, 512, 4096, 11008};
    const int64_t sizes_nl[] = {32, 96, 160, 224, 256, 512, 4096, 11008};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ti++) {
        const int type = kTypes[ti];
        const lb_type_traits *t = lb_traits(type), *at = lb_traits(t->vec_dot_type);
        const int is_nl = IS_NL(type);
        const int64_t *sizes = is_nl ? sizes_nl : sizes_k;
        const size_t nsizes = is_nl ? 8 : 4;
        for (size_t si = 0; si < nsizes; si++) {
            const int64_t n = sizes[si];
            for (int rep = 0; rep < 3; rep++) {
                const float wscale = rep == 2 ? 1e-3f : 1.0f; /* small weights too */
                for (int64_t i = 0; i < n; i++) {
                    wf[i] = wscale * rand_t5(&seed);
                    af[i] = rand_t5(&seed);
                }
                t->from_float(wf, wq, n);
                at->from_float(af, aq, n);
                compare_levels(type, wq, aq, n, "quantized");

                /* each level's activation quantizer must match the reference */
                const lb_isa levels[] = {LB_ISA_AVX2, LB_ISA_AVX512};
                for (int l = 0; l < 2; l++) {
                    if (!level_available(levels[l])) continue;
                    const lb_kernel *k = lb_kernel_get_at(type, levels[l]);
                    CHECK(k && k->act_type == t->vec_dot_type);
                    if (!k) continue;
                    memset(aq2, 0xAB, lb_row_size(k->act_type, n));
                    k->quantize_act(af, aq2, n);
                    CHECK_MSG(memcmp(aq, aq2, lb_row_size(k->act_type, n)) == 0,
                              "%s quantize_act differs from the reference (n=%lld)", k->name, (long long)n);
                }
            }
        }
    }
}

static lb_fp16 rand_scale(uint64_t *s, float mag) {
    return lb_f32_to_fp16(mag * (0.25f + 0.75f * (lb_test_randf(s) + 1.0f) / 2.0f));
}

/* Random bytes are valid K-quant / IQ4_NL blocks: they reach every quant and
 * scale value (Q6_K q = 63 with scale -128, Q3_K scale -32, ...), extremes a
 * real quantizer rarely writes. Activations use the full int8 range the
 * quantizers produce (-127..127), with consistent bsums. */
static void test_random_blocks(void) {
    static _Alignas(64) uint8_t wq[MAX_N * 2], aq[MAX_N * 2];
    uint64_t seed = 0x2545f4914f6cdd1dull;
    const int64_t n = 4096;
    for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ti++) {
        const int type = kTypes[ti];
        const lb_type_traits *t = lb_traits(type);
        for (int rep = 0; rep < 8; rep++) {
            const size_t wbytes = lb_row_size(type, n);
            for (size_t i = 0; i < wbytes; i++) wq[i] = (uint8_t)lb_test_rand(&seed);
            const int64_t nb = n / t->blck;
            /* every fp16 scale finite */
            for (int64_t b = 0; b < nb; b++) {
                uint8_t *blk = wq + b * t->type_size;
                lb_fp16 d = rand_scale(&seed, 0.01f), dmin = rand_scale(&seed, 0.01f);
                lb_fp16 *dp = NULL, *dminp = NULL;
                switch (type) {
                case LB_TYPE_Q2_K: dp = &((block_q2_K *)blk)->d, dminp = &((block_q2_K *)blk)->dmin; break;
                case LB_TYPE_Q3_K: dp = &((block_q3_K *)blk)->d; break;
                case LB_TYPE_Q4_K: dp = &((block_q4_K *)blk)->d, dminp = &((block_q4_K *)blk)->dmin; break;
                case LB_TYPE_Q5_K: dp = &((block_q5_K *)blk)->d, dminp = &((block_q5_K *)blk)->dmin; break;
                case LB_TYPE_Q6_K: dp = &((block_q6_K *)blk)->d; break;
                case LB_TYPE_IQ4_NL: case LB_TYPE_MXFP4_NL: dp = &((block_iq4_nl *)blk)->d; break;
                }
                *dp = d;
                if (dminp) *dminp = dmin;
            }
            /* extreme activations on some reps: all +127 or alternating -127 */
            if (IS_NL(type)) {
                block_q8_0 *a = (block_q8_0 *)aq;
                for (int64_t b = 0; b < n / QK8_0; b++) {
                    a[b].d = rand_scale(&seed, 0.05f);
                    for (int j = 0; j < QK8_0; j++)
                        a[b].qs[j] = rep == 0 ? 127 : rep == 1 ? (j & 1 ? -127 : 127)
                                                    : (int8_t)(lb_test_rand(&seed) % 255 - 127);
                }
            } else {
                block_q8_K *a = (block_q8_K *)aq;
                for (int64_t b = 0; b < n / QK_K; b++) {
                    a[b].d = 0.05f * (lb_test_randf(&seed) + 1.5f);
                    for (int j = 0; j < QK_K; j++)
                        a[b].qs[j] = rep == 0 ? 127 : rep == 1 ? -127
                                                    : (int8_t)(lb_test_rand(&seed) % 255 - 127);
                    for (int g = 0; g < QK_K / 16; g++) {
                        int sum = 0;
                        for (int j = 0; j < 16; j++) sum += a[b].qs[16 * g + j];
                        a[b].bsums[g] = (int16_t)sum;
                    }
                }
            }
            compare_levels(type, wq, aq, n, "random-blocks");
        }
    }
}

#if LB_HAVE_X86_KERNELS
/* The AVX2 Q8_K quantizer byte for byte, on rows built to hit its corners. */
static void check_q8_K_row(const float *x, int64_t n, const char *what) {
    static block_q8_K ref[MAX_N / QK_K], got[MAX_N / QK_K];
    const size_t bytes = (size_t)(n / QK_K) * sizeof(block_q8_K);
    memset(ref, 0x11, bytes);
    memset(got, 0x22, bytes); /* padding-free struct: every byte is written */
    lb_quantize_row_q8_K_ref(x, ref, n);
    lb_quantize_row_q8_K_avx2(x, got, n);
    CHECK_MSG(memcmp(ref, got, bytes) == 0, "q8_K avx2 quantizer differs: %s", what);
}

static void test_q8_K_quantizer(void) {
    if (!level_available(LB_ISA_AVX2)) return;
    static float x[MAX_N];
    uint64_t seed = 12345;
    const int64_t sizes[] = {256, 512, 4096, 11008};
    for (size_t si = 0; si < 4; si++) {
        for (int64_t i = 0; i < sizes[si]; i++) x[i] = rand_t5(&seed);
        check_q8_K_row(x, sizes[si], "t5");
        for (int64_t i = 0; i < sizes[si]; i++) x[i] = 1e-30f * rand_gauss(&seed);
        check_q8_K_row(x, sizes[si], "tiny");
        for (int64_t i = 0; i < sizes[si]; i++) x[i] = 1e30f * rand_gauss(&seed);
        check_q8_K_row(x, sizes[si], "huge");
    }
    /* all zero; a zero block between two others */
    memset(x, 0, sizeof(float) * 768);
    check_q8_K_row(x, 256, "zero");
    for (int i = 0; i < 256; i++) x[i] = rand_gauss(&seed), x[512 + i] = rand_gauss(&seed);
    check_q8_K_row(x, 768, "zero middle block");
    /* +m and -m both present: the first decides the sign of d */
    for (int i = 0; i < 256; i++) x[i] = 0.5f * lb_test_randf(&seed);
    x[77] = -3.0f, x[200] = 3.0f;
    check_q8_K_row(x, 256, "-max first");
    x[77] = 3.0f, x[200] = -3.0f;
    check_q8_K_row(x, 256, "+max first");
    /* iscale = -1: x = k + 0.5 lands exactly on ties (round half to even) */
    for (int i = 0; i < 256; i++) x[i] = (float)(i % 253 - 126) + 0.5f;
    x[255] = 127.0f;
    check_q8_K_row(x, 256, "ties");
    /* a NaN is skipped by the max search as in the reference: same d */
    for (int i = 0; i < 256; i++) x[i] = lb_test_randf(&seed);
    x[3] = 4.0f, x[100] = NAN;
    block_q8_K r, g;
    lb_quantize_row_q8_K_ref(x, &r, 256);
    lb_quantize_row_q8_K_avx2(x, &g, 256);
    CHECK(g.d == r.d);
}
#endif

/* Dispatch hands out the x86 kernels at their levels. */
static void test_dispatch(void) {
    for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ti++) {
        const int type = kTypes[ti];
        const lb_kernel *k = lb_kernel_get_at(type, LB_ISA_SCALAR);
        CHECK(k && k->isa == LB_ISA_SCALAR && k->vec_dot == lb_traits(type)->vec_dot);
#if LB_HAVE_X86_KERNELS
        k = lb_kernel_get_at(type, LB_ISA_AVX2);
        CHECK_MSG(k && k->isa == LB_ISA_AVX2 && k->act_type == lb_traits(type)->vec_dot_type,
                  "%s has no AVX2 kernel", lb_traits(type)->name);
        k = lb_kernel_get_at(type, LB_ISA_AVX512);
        const int has512 = type == LB_TYPE_Q4_K || type == LB_TYPE_Q5_K || type == LB_TYPE_Q6_K ||
                           IS_NL(type);
        CHECK_MSG(k && k->isa == (has512 ? LB_ISA_AVX512 : LB_ISA_AVX2), "%s: wrong AVX-512 entry",
                  lb_traits(type)->name);
#endif
    }
}

int main(void) {
    printf("cpu: %s (%s)\n", lb_isa_name(lb_cpu_detected()), lb_cpu_features_string());
    if (lb_cpu_detected() < LB_ISA_AVX512 || !lb_isa_is_x86(lb_cpu_detected()))
        printf("note: no AVX-512 VNNI here; the avx512 kernels are not run\n");
    test_dispatch();
    test_quantized_data();
    test_random_blocks();
#if LB_HAVE_X86_KERNELS
    test_q8_K_quantizer();
#endif
    printf("worst |kernel - reference| / sum|w*a| = %.3g (tolerance %.0e)\n", worst_rel_err, TOL);
    return lb_test_result("test_kernels_kquants");
}
