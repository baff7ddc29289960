/* BCQ{q}_G{g} (formats/bcq.h), all 12 types, their _LUT layouts and the
 * Q8_0_LUT4 activations:
 *  - ids, names, sizes, exact bits per weight, helpers, fallbacks, and the
 *    clear errors of lb_bcq_check (q = 0, q > 8, q > 4, bad group, a group
 *    that does not divide the row);
 *  - hand-built blocks dequantize to the values eq. (3) gives;
 *  - the quantizer: the (weighted) error is non-increasing over the
 *    alternating iterations (asserted per group, every type, with and
 *    without importance), the iterations help, importance helps the weighted
 *    error, degenerate groups (zero, constant, NaN, inf);
 *  - Q8_0_LUT4: the tables hold the signed sums, the builder of every
 *    level's kernel (AVX2, NEON) writes the scalar one's bytes;
 *  - the reference dot against a double dot of the dequantized sides; the
 *    table-lookup reference gives its bits;
 *  - every kernel of every level available (the plain reference, the _LUT
 *    scalar GEMV, the AVX2, AVX-512 and NEON mu = 4 GEMVs) equals the reference bit for bit on
 *    random data, K of one and several groups, N = 1..37, M = 1..17, through
 *    the kernels and through lb_matmul (tails, threads); on integer-valued
 *    data the result is the exact integer dot product;
 *  - the mu = 8 float tables: the AVX2 kernel equals its scalar reference,
 *    both within a stated bound of the double dot; the error of both paths
 *    against the unquantized activations is printed (the precision trade-off);
 *  - uniform -> BCQ (LUT-GEMM App. C): Q4_0 and symmetric GQ groups convert
 *    bit-identically, asymmetric GQ and Q4_1 where z fits fp16 (the closed
 *    form agrees with an exhaustive check), others within half an ulp of z;
 *    pairs that do not fit are refused;
 *  - repack / unpack round trips, GPTQ's hook, the GGUF reader's checks. */
#include <math.h>

#include "core/common.h"
#include "formats/bcq.h"
#include "formats/gq.h"
#include "formats/legacy.h"
#include "formats/repack.h"
#include "gguf/gguf.h"
#include "kernels/dispatch.h"
#include "kernels/x86/bcq_x86.h"
#include "test_matmul_util.h"
#include "test_gguf_build.h"
#include "test_util.h"

typedef struct {
    int type, q, g;
    const char *name;
    size_t size;
} bcq_want;

static const bcq_want kTypes[12] = {
    {LB_TYPE_BCQ4_G128, 4, 128, "BCQ4_G128", 74}, {LB_TYPE_BCQ4_G64, 4, 64, "BCQ4_G64", 42},
    {LB_TYPE_BCQ4_G32, 4, 32, "BCQ4_G32", 26},    {LB_TYPE_BCQ3_G128, 3, 128, "BCQ3_G128", 56},
    {LB_TYPE_BCQ3_G64, 3, 64, "BCQ3_G64", 32},    {LB_TYPE_BCQ3_G32, 3, 32, "BCQ3_G32", 20},
    {LB_TYPE_BCQ2_G128, 2, 128, "BCQ2_G128", 38}, {LB_TYPE_BCQ2_G64, 2, 64, "BCQ2_G64", 22},
    {LB_TYPE_BCQ2_G32, 2, 32, "BCQ2_G32", 14},    {LB_TYPE_BCQ1_G128, 1, 128, "BCQ1_G128", 20},
    {LB_TYPE_BCQ1_G64, 1, 64, "BCQ1_G64", 12},    {LB_TYPE_BCQ1_G32, 1, 32, "BCQ1_G32", 8},
};

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2,    LB_ISA_AVX512, LB_ISA_AMX,
                                 LB_ISA_NEON,   LB_ISA_DOTPROD, LB_ISA_I8MM};
/* a roughly Gaussian value (sum of 4 uniforms) */
static float gauss(uint64_t *s) {
    return (lb_test_randf(s) + lb_test_randf(s) + lb_test_randf(s) + lb_test_randf(s)) * 0.866f;
}

static void put_h(uint8_t *p, float v) {
    const lb_fp16 h = lb_f32_to_fp16(v);
    memcpy(p, &h, 2);
}

/* ---- geometry, names, errors ---- */
static void test_geometry(void) {
    for (int i = 0; i < 12; i++) {
        const bcq_want *w = &kTypes[i];
        CHECK(w->type == 1066 + i);
        const lb_type_traits *t = lb_traits(w->type);
        CHECK_MSG(t && !strcmp(t->name, w->name) && t->blck == w->g && t->type_size == w->size && t->is_quantized &&
                      t->vec_dot_type == LB_TYPE_Q8_0_LUT4 && t->to_float && t->from_float && t->vec_dot,
                  "%s traits", w->name);
        /* exactly q + 16 (q + 1) / g bits per weight */
        CHECK_MSG(lb_type_bits_per_weight(w->type) == w->q + 16.0 * (w->q + 1) / w->g, "%s: %.4f bpw", w->name,
                  lb_type_bits_per_weight(w->type));
        CHECK(lb_bcq_bits(w->type) == w->q && lb_bcq_group(w->type) == w->g && lb_bcq_is_plain(w->type));
        CHECK(lb_bcq_type(w->q, w->g) == w->type && lb_type_from_name(w->name) == w->type);
        CHECK(lb_row_size(w->type, 3 * w->g) == 3 * w->size);
        /* rows the group does not divide keep Q8_0, or F16 when not even 32 does */
        CHECK(lb_type_fallback(w->type, 2 * w->g) == w->type);
        CHECK(lb_type_fallback(w->type, w->g + 32) == (w->g == 32 ? w->type : LB_TYPE_Q8_0));
        CHECK(lb_type_fallback(w->type, 48) == LB_TYPE_F16);
        /* the _LUT layout */
        const int L = lb_bcq_lut_of(w->type);
        char name[40];
        snprintf(name, sizeof name, "%s_LUT", w->name);
        const lb_type_traits *lt = lb_traits(L);
        CHECK_MSG(L == 1078 + i && lt && !strcmp(lt->name, name) && lt->blck == w->g && lt->type_size == w->size &&
                      lt->vec_dot_type == LB_TYPE_Q8_0_LUT4 && !lt->from_float && !lt->vec_dot,
                  "%s layout", name);
        CHECK(lb_bcq_plain_of_lut(L) == w->type && lb_type_base(L) == w->type && lb_type_rows(L) == 16);
        CHECK(lb_bcq_bits(L) == w->q && !lb_bcq_is_plain(L) && lb_type_from_name(name) == L);
        /* kernels: the reference at scalar, the table lookup above */
        const lb_kernel *k = lb_kernel_get_at(w->type, LB_ISA_SCALAR);
        CHECK(k && k->act_type == LB_TYPE_Q8_0_LUT4 && k->vec_dot == t->vec_dot);
        k = lb_kernel_get_at(L, LB_ISA_SCALAR);
        CHECK(k && k->act_type == LB_TYPE_Q8_0_LUT4 && k->gemv);
    }
    const lb_type_traits *a = lb_traits(LB_TYPE_Q8_0_LUT4);
    CHECK(a && !strcmp(a->name, "Q8_0_LUT4") && a->blck == 32 && a->type_size == 320 && !a->from_float);
    CHECK(lb_bcq_bits(LB_TYPE_GQ4_G128) == 0 && lb_bcq_type(5, 128) == -1 && lb_bcq_type(4, 16) == -1 &&
          lb_bcq_lut_of(LB_TYPE_Q4_0) == -1 && lb_traits(1095) == NULL);
    /* clear errors for what no BCQ type holds */
    struct {
        int q, g;
        int64_t k;
        lb_status s;
        const char *msg;
    } bad[] = {{0, 128, 256, LB_ERR_FORMAT, "q = 0 bit planes"},  {9, 128, 256, LB_ERR_FORMAT, "more than 8"},
               {-1, 64, 64, LB_ERR_FORMAT, "q = -1"},              {5, 128, 256, LB_ERR_UNSUPPORTED, "hold 1 to 4"},
               {3, 16, 256, LB_ERR_FORMAT, "groups of 32, 64 or 128"}, {3, 128, 96, LB_ERR_FORMAT, "does not divide the row of 96"},
               {2, 64, 0, LB_ERR_FORMAT, "does not divide"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const lb_status s = lb_bcq_check(bad[i].q, bad[i].g, bad[i].k);
        CHECK_MSG(s == bad[i].s && strstr(lb_last_error(), bad[i].msg), "q %d g %d k %lld: %s", bad[i].q, bad[i].g,
                  (long long)bad[i].k, lb_last_error());
    }
    CHECK(lb_bcq_check(3, 128, 384) == LB_OK && lb_bcq_check(1, 32, 32) == LB_OK);
}

/* ---- hand-built blocks ---- */
static void test_dequant_known(void) {
    for (int i = 0; i < 12; i++) {
        const bcq_want *w = &kTypes[i];
        uint8_t blk[128];
        uint64_t seed = 7 + i;
        memset(blk, 0, sizeof blk);
        const float alpha[4] = {0.5f, 1.25f, -2.0f, 3.0f}, z = -0.75f;
        for (int p = 0; p < w->q; p++) put_h(blk + 2 * p, alpha[p]);
        put_h(blk + 2 * w->q, z);
        int codes[128];
        for (int j = 0; j < w->g; j++) {
            codes[j] = (int)(lb_test_rand(&seed) % (1u << w->q));
            lb_bcq_set_code(w->q, w->g, blk, j, codes[j]);
        }
        /* plane p's bit of weight j: bit j % 8 of byte j / 8 */
        int ok_bits = 1;
        for (int j = 0; j < w->g; j++)
            for (int p = 0; p < w->q; p++)
                ok_bits &= ((blk[2 * (w->q + 1) + p * w->g / 8 + j / 8] >> (j % 8)) & 1) == ((codes[j] >> p) & 1);
        CHECK_MSG(ok_bits, "%s: plane bits", w->name);
        float y[128];
        lb_traits(w->type)->to_float(blk, y, w->g);
        int ok = 1;
        for (int j = 0; j < w->g; j++) {
            float v = z;
            for (int p = 0; p < w->q; p++) v += (codes[j] >> p & 1) ? alpha[p] : -alpha[p];
            ok &= y[j] == v && lb_bcq_get_code(w->q, w->g, blk, j) == codes[j] &&
                  lb_bcq_code_value(w->q, blk, codes[j]) == v;
        }
        CHECK_MSG(ok, "%s: dequantized values", w->name);
    }
}

/* ---- quantizer ---- */
static double werr(const float *x, const float *y, const float *h, int n) {
    double e = 0;
    for (int j = 0; j < n; j++) e += (h ? (double)h[j] : 1.0) * ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
    return e;
}

static void test_quantize(void) {
    enum { GROUPS = 200, IT = 12 };
    uint64_t seed = 42;
    for (int i = 0; i < 12; i++) {
        const bcq_want *w = &kTypes[i];
        double sum_start = 0, sum_iter = 0, sum_w_plain = 0, sum_w_imp = 0;
        int monotone = 1, consistent = 1, iters_used = 0, improved = 0;
        for (int r = 0; r < GROUPS; r++) {
            float x[128], h[128], y[128];
            uint8_t blk[128], blk2[128];
            for (int j = 0; j < w->g; j++) {
                x[j] = gauss(&seed) * (r % 3 == 0 ? 0.01f : 1.0f) + (r % 5 == 0 ? 0.3f : 0.0f);
                if (r % 7 == 0 && j == 3) x[j] = 6.0f; /* an outlier */
                /* importance spread over two orders of magnitude */
                h[j] = 0.01f + 4.0f * (lb_test_randf(&seed) + 1.0f) * (lb_test_randf(&seed) + 1.0f);
            }
            for (int pass = 0; pass < 2; pass++) {
                const float *imp = pass ? h : NULL;
                double tr[IT + 1];
                const int used = lb_bcq_fit_group(w->q, w->g, x, imp, IT, blk, tr);
                iters_used += used;
                for (int t = 1; t <= IT; t++) monotone &= tr[t] <= tr[t - 1];
                improved += tr[IT] < tr[0];
                lb_traits(w->type)->to_float(blk, y, w->g);
                const double e = werr(x, y, imp, w->g);
                consistent &= fabs(e - tr[IT]) <= 1e-9 * (e + 1e-30);
                if (pass == 0) {
                    sum_start += tr[0], sum_iter += tr[IT];
                    sum_w_plain += werr(x, y, h, w->g);
                } else {
                    sum_w_imp += e;
                }
                /* the traits' quantizer (lb_bcq_iters() iterations) writes the same block */
                if (pass == 0 && lb_bcq_iters() == 8) {
                    lb_bcq_fit_group(w->q, w->g, x, NULL, 8, blk, NULL);
                    lb_traits(w->type)->from_float(x, blk2, w->g);
                    consistent &= !memcmp(blk, blk2, w->size);
                }
            }
        }
        CHECK_MSG(monotone, "%s: the error grew over an iteration", w->name);
        CHECK_MSG(consistent, "%s: the trace is not the error of the block written", w->name);
        printf("%s: squared error at the start %.5g, after alternating %.5g (x%.3f; %d of %d fits improved, %.1f "
               "iterations); importance-weighted error %.5g unweighted fit, %.5g weighted fit\n",
               w->name, sum_start / GROUPS, sum_iter / GROUPS, sum_iter / sum_start, improved, 2 * GROUPS,
               (double)iters_used / (2 * GROUPS), sum_w_plain / GROUPS, sum_w_imp / GROUPS);
        if (w->q > 1) CHECK_MSG(sum_iter < 0.98 * sum_start, "%s: iterations gain too little", w->name);
        else CHECK(sum_iter <= sum_start);
        CHECK_MSG(sum_w_imp < sum_w_plain, "%s: importance does not lower the weighted error", w->name);
    }
    /* degenerate groups */
    for (int i = 0; i < 12; i++) {
        const bcq_want *w = &kTypes[i];
        float x[128], y[128];
        uint8_t blk[128];
        for (int j = 0; j < w->g; j++) x[j] = 0.0f;
        lb_traits(w->type)->from_float(x, blk, w->g);
        lb_traits(w->type)->to_float(blk, y, w->g);
        int ok = 1;
        for (int j = 0; j < w->g; j++) ok &= y[j] == 0.0f;
        CHECK_MSG(ok, "%s: zeros", w->name);
        for (int j = 0; j < w->g; j++) x[j] = 0.375f;
        lb_traits(w->type)->from_float(x, blk, w->g);
        lb_traits(w->type)->to_float(blk, y, w->g);
        ok = 1;
        for (int j = 0; j < w->g; j++) ok &= y[j] == 0.375f;
        CHECK_MSG(ok, "%s: a constant group", w->name);
        for (int j = 0; j < w->g; j++) x[j] = (float)(j % 5) - 2.0f;
        x[1] = NAN, x[2] = INFINITY, x[3] = -INFINITY;
        lb_traits(w->type)->from_float(x, blk, w->g);
        lb_traits(w->type)->to_float(blk, y, w->g);
        ok = 1;
        for (int j = 0; j < w->g; j++) ok &= isfinite(y[j]);
        CHECK_MSG(ok, "%s: non-finite inputs give finite values", w->name);
    }
    /* q = 1 with two values: exact */
    float x[32], y[32];
    uint8_t blk[16];
    for (int j = 0; j < 32; j++) x[j] = j % 3 ? 1.5f : -0.25f;
    lb_traits(LB_TYPE_BCQ1_G32)->from_float(x, blk, 32);
    lb_traits(LB_TYPE_BCQ1_G32)->to_float(blk, y, 32);
    CHECK(!memcmp(x, y, sizeof x));
}

/* ---- Q8_0_LUT4 ---- */
static void test_act(void) {
    uint64_t seed = 5;
    enum { K = 256 };
    float x[K];
    for (int j = 0; j < K; j++) x[j] = gauss(&seed) * (j < 32 ? 100.0f : 1.0f);
    x[40] = 0.0f;
    block_q8_0_lut4 a[K / 32], b[K / 32];
    lb_quantize_row_q8_0_lut4_ref(x, a, K);
    block_q8_0 q[K / 32];
    lb_quantize_row_q8_0_ref(x, q, K);
    int ok = 1;
    for (int c = 0; c < K / 32; c++) {
        ok &= a[c].d == lb_fp16_to_f32(q[c].d) && !memcmp(a[c].qs, q[c].qs, 32);
        int S = 0;
        for (int j = 0; j < 32; j++) S += q[c].qs[j];
        ok &= a[c].ds == a[c].d * (float)S;
        for (int s = 0; s < 8; s++)
            for (int e = 0; e < 16; e++) {
                int T = 0;
                for (int t = 0; t < 4; t++) T += (e >> t & 1) ? q[c].qs[4 * s + t] : -q[c].qs[4 * s + t];
                ok &= lb_lut4_entry(&a[c], s, e) == T;
            }
    }
    CHECK_MSG(ok, "Q8_0_LUT4: Q8_0's values and the signed sums");
    /* the table builder of every level's kernel (AVX2, NEON, ...) writes the scalar one's bytes */
    for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        const lb_kernel *k = lb_kernel_get_at(LB_TYPE_BCQ3_G128_LUT, kLevels[li]);
        memset(b, 0xA5, sizeof b);
        k->quantize_act(x, b, K);
        CHECK_MSG(!memcmp(a, b, sizeof a), "Q8_0_LUT4: the builder of %s (level %s) differs from the scalar one",
                  k->name, lb_isa_name(kLevels[li]));
    }
}

/* ---- reference dot ---- */
static void test_vec_dot(void) {
    uint64_t seed = 9;
    enum { K = 512 };
    float x[K], wf[K], xa[K];
    uint8_t w[K * 2];
    block_q8_0_lut4 a[K / 32];
    for (int i = 0; i < 12; i++) {
        const bcq_want *t = &kTypes[i];
        double worst = 0;
        int same = 1;
        for (int r = 0; r < 20; r++) {
            for (int j = 0; j < K; j++) x[j] = gauss(&seed), wf[j] = gauss(&seed) * 0.05f + (r % 4 == 0 ? 0.02f : 0);
            lb_traits(t->type)->from_float(wf, w, K);
            lb_traits(t->type)->to_float(w, wf, K);
            lb_quantize_row_q8_0_lut4_ref(x, a, K);
            lb_dequantize_row_q8_0_lut4(a, xa, K);
            float s = 0, s2 = 0;
            lb_traits(t->type)->vec_dot(K, &s, w, a);
            switch (t->type) {
#define DOT_LUT(name, NAME, Q, G) \
    case LB_TYPE_##NAME: lb_vec_dot_##name##_lut4_ref(K, &s2, w, a); break;
                LB_BCQ_LIST(DOT_LUT)
#undef DOT_LUT
            }
            same &= !memcmp(&s, &s2, sizeof s);
            double d = 0, mag = 0;
            for (int j = 0; j < K; j++) d += (double)wf[j] * xa[j], mag += fabs((double)wf[j] * xa[j]);
            const double e = fabs(s - d) / mag;
            if (e > worst) worst = e;
        }
        CHECK_MSG(worst < 1e-5, "%s: dot off the double dot by %.3g of the terms", t->name, worst);
        CHECK_MSG(same, "%s: the table-lookup dot differs from the reference", t->name);
    }
}

/* ---- kernels ---- */

/* N rows of K weights of type t: random (or integer-valued) weights, plain */
static uint8_t *make_weights(const bcq_want *t, int64_t K, int64_t N, uint64_t *seed, int integer) {
    const size_t row = lb_row_size(t->type, K);
    uint8_t *w = malloc(row * (size_t)N);
    float *f = malloc(sizeof(float) * (size_t)K);
    for (int64_t n = 0; n < N; n++) {
        if (!integer) {
            const float sc = 0.02f * (1 + (float)(n % 5));
            for (int64_t j = 0; j < K; j++) f[j] = gauss(seed) * sc + (n % 3 == 0 ? 0.01f : 0.0f);
            lb_traits(t->type)->from_float(f, w + (size_t)n * row, K);
        } else {
            /* small integer alphas and z, random planes */
            uint8_t *r = w + (size_t)n * row;
            for (size_t b = 0; b < row; b++) r[b] = (uint8_t)lb_test_rand(seed);
            for (int64_t gi = 0; gi < K / t->g; gi++) {
                uint8_t *blk = r + (size_t)gi * t->size;
                for (int p = 0; p < t->q; p++) put_h(blk + 2 * p, (float)(1 + lb_test_rand(seed) % 7));
                put_h(blk + 2 * t->q, (float)((int)(lb_test_rand(seed) % 17) - 8));
            }
        }
    }
    free(f);
    return w;
}

/* M activation rows: random, or integers with each block's largest |x| 127
 * (so Q8_0 holds them exactly, d = 1) */
static float *make_acts(int64_t K, int M, uint64_t *seed, int integer) {
    float *x = malloc(sizeof(float) * (size_t)K * M);
    for (int64_t i = 0; i < K * M; i++)
        x[i] = integer ? (float)((int)(lb_test_rand(seed) % 255) - 127) : gauss(seed) * (i % 97 == 0 ? 8.0f : 1.0f);
    if (integer)
        for (int64_t i = 0; i < K * M; i += 32) x[i + lb_test_rand(seed) % 32] = lb_test_rand(seed) % 2 ? 127.0f : -127.0f;
    return x;
}

/* y[m * N + n] by the plain reference dot */
static void ref_outputs(const bcq_want *t, const uint8_t *w, int64_t K, int64_t N, const float *x, int M, float *y) {
    const size_t row = lb_row_size(t->type, K);
    block_q8_0_lut4 *a = malloc(lb_row_size(LB_TYPE_Q8_0_LUT4, K));
    for (int m = 0; m < M; m++) {
        lb_quantize_row_q8_0_lut4_ref(x + (size_t)m * K, a, K);
        for (int64_t n = 0; n < N; n++) lb_traits(t->type)->vec_dot(K, &y[(size_t)m * N + n], w + (size_t)n * row, a);
    }
    free(a);
}

/* K longer than the AVX2 kernel's table chunk (64 blocks): its sums carried
 * across chunks in y give the reference's bits, at every level */
static void test_kernels_long_k(void) {
    uint64_t seed = 77;
    int n_cases = 0;
    for (int i = 0; i < 12; i++) {
        const bcq_want *t = &kTypes[i];
        const int L = lb_bcq_lut_of(t->type);
        const int64_t K = 4096 + 3 * t->g, N = 33;
        const int M = 1 + i % 3;
        uint8_t *w = make_weights(t, K, N, &seed, 0);
        float *x = make_acts(K, M, &seed, 0);
        float *ref = malloc(sizeof(float) * (size_t)N * M);
        ref_outputs(t, w, K, N, x, M, ref);
        uint8_t *packed = malloc(lb_row_size(t->type, K) * (size_t)N);
        lb_repack_tensor(L, w, packed, K, N);
        for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
            if (!lb_test_level_available(kLevels[li])) continue;
            lb_cpu_force_level(kLevels[li]);
            float *y = lb_test_matmul(L, packed, K, N, x, M, 2);
            CHECK_MSG(!memcmp(y, ref, sizeof(float) * (size_t)N * M), "%s K %lld: %s at %s differs from the reference",
                      lb_type_name(L), (long long)K, lb_kernel_get(L)->name, lb_isa_name(kLevels[li]));
            free(y);
            n_cases++;
        }
        lb_cpu_force_level(lb_cpu_detected());
        free(packed), free(ref), free(x), free(w);
    }
    printf("kernels, K over 4096: %d type x level cases bit-identical to the reference\n", n_cases);
}

static void test_kernels(void) {
    uint64_t seed = 2024;
    const int Ns[] = {1, 5, 15, 16, 17, 31, 32, 37}, Ms[] = {1, 2, 3, 4, 7, 17};
    int n_cases = 0, n_exact_int = 0;
    for (int i = 0; i < 12; i++) {
        const bcq_want *t = &kTypes[i];
        const int L = lb_bcq_lut_of(t->type);
        const int64_t Ks[] = {t->g, 3 * t->g, 512 + t->g};
        /* 48 cases of K (one group, three, 512 + g) x N x M, random and integer-valued,
         * then a sweep at K = 2g over N = 1..37 with M = 1..17 */
        for (int cs = 0; cs < 48 + 37; cs++) {
            const int ki = cs < 48 ? cs / 16 : -1, ni = cs < 48 ? (cs / 2) % 8 : cs - 48;
            const int integer = cs < 48 ? cs % 2 : ni % 2;
            const int64_t K = cs < 48 ? Ks[ki] : 2 * t->g, N = cs < 48 ? Ns[ni] : ni + 1;
            const int M = cs < 48 ? Ms[(ki + ni + integer) % 6] : 1 + ni % 17;
            uint8_t *w = make_weights(t, K, N, &seed, integer);
            float *x = make_acts(K, M, &seed, integer);
            float *ref = malloc(sizeof(float) * (size_t)N * M);
            ref_outputs(t, w, K, N, x, M, ref);
            if (integer) {
                /* the exact integer dot: every float step is exact here */
                float *wf = malloc(sizeof(float) * (size_t)K);
                int exact = 1;
                for (int64_t n = 0; n < N; n++) {
                    lb_traits(t->type)->to_float(w + (size_t)n * lb_row_size(t->type, K), wf, K);
                    for (int m = 0; m < M; m++) {
                        int64_t d = 0;
                        for (int64_t j = 0; j < K; j++) d += (int64_t)wf[j] * (int64_t)x[(size_t)m * K + j];
                        exact &= ref[(size_t)m * N + n] == (float)d && llabs(d) < (1 << 24);
                    }
                }
                free(wf);
                n_exact_int += exact;
                CHECK_MSG(exact, "%s K %lld N %lld: the reference is not the integer dot", t->name,
                          (long long)K, (long long)N);
            }
            const size_t row = lb_row_size(t->type, K);
            uint8_t *packed = malloc(row * (size_t)N);
            lb_repack_tensor(L, w, packed, K, N);
            /* the AMX-BF16 GEMM (rows in groups of 16) against the bf16 reference */
            double *want16 = NULL, *mag16 = NULL;
            if (M >= 16) {
                want16 = malloc(sizeof(double) * (size_t)N * M), mag16 = malloc(sizeof(double) * (size_t)N * M);
                lb_test_reference_bf16(t->type, w, x, K, N, M, want16, mag16);
            }
            for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
                if (!lb_test_level_available(kLevels[li])) continue;
                lb_cpu_force_level(kLevels[li]);
                for (int layout = 0; layout < 2; layout++) {
                    const int type = layout ? L : t->type;
                    float *y = lb_test_matmul(type, layout ? packed : w, K, N, x, M, 1 + (int)(N % 2));
                    int same = 1;
                    for (int m = 0; m < M; m++)
                        for (int64_t n = 0; n < N; n++) {
                            const size_t o = (size_t)m * N + n;
                            if (want16 && lb_test_from_bf16(type, N, M, m, n))
                                same &= fabs((double)y[o] - want16[o]) <= 1e-5 * mag16[o] + 1e-30;
                            else
                                same &= !memcmp(y + o, ref + o, sizeof(float));
                        }
                    CHECK_MSG(same, "%s K %lld N %lld M %d%s: %s at %s differs from the reference",
                              lb_type_name(type), (long long)K, (long long)N, M, integer ? " (integers)" : "",
                              lb_kernel_get(type)->name, lb_isa_name(kLevels[li]));
                    free(y);
                    n_cases++;
                }
            }
            lb_cpu_force_level(lb_cpu_detected());
            free(want16), free(mag16);
            /* the kernels of every level on whole groups directly (no driver) */
            for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
                if (!lb_test_level_available(kLevels[li]) || N < 16) continue;
                const lb_kernel *k = lb_kernel_get_at(L, kLevels[li]);
                const size_t arow = lb_row_size(LB_TYPE_Q8_0_LUT4, K);
                uint8_t *A = malloc(arow * (size_t)M);
                for (int m = 0; m < M; m++) k->quantize_act(x + (size_t)m * K, A + (size_t)m * arow, K);
                const int N16 = (int)(N - N % 16);
                float *y = malloc(sizeof(float) * (size_t)N16 * M);
                k->gemv(K, packed, row, 0, N16, A, arow, M, y, (size_t)N16);
                int same = 1;
                for (int m = 0; m < M; m++)
                    same &= !memcmp(y + (size_t)m * N16, ref + (size_t)m * N, sizeof(float) * N16);
                CHECK_MSG(same, "%s K %lld N %lld M %d: %s differs from the reference", lb_type_name(L),
                          (long long)K, (long long)N, M, k->name);
                free(y), free(A);
            }
            free(packed), free(ref), free(x), free(w);
        }
    }
    printf("kernels: %d level x layout x shape cases bit-identical to the reference (AMX-BF16 GEMM rows: within 1e-5 of "
           "the bf16 one); %d integer cases exact\n",
           n_cases, n_exact_int);
    /* the kernel each level picks (the table is checked even where the level cannot run):
     * AVX2 at avx2, AVX-512 at avx512 and amx, the NEON one at every Arm level */
    const lb_isa hw = lb_cpu_detected();
    for (size_t li = 1; li < sizeof kLevels / sizeof kLevels[0]; li++) {
        const lb_isa lv = kLevels[li];
        const lb_kernel *k = lb_kernel_get_at(LB_TYPE_BCQ3_G128_LUT, lv);
        const int bf = lv == LB_ISA_AMX && (lb_cpu_extra_features() & LB_CPU_AMXBF16);
        const lb_isa want = lb_isa_is_arm(lv) ? LB_ISA_NEON : lv == LB_ISA_AVX2 ? LB_ISA_AVX2 : bf ? LB_ISA_AMX : LB_ISA_AVX512;
        const int family = lb_isa_is_x86(hw) ? lb_isa_is_x86(lv) : lb_isa_is_arm(hw) && lb_isa_is_arm(lv);
        if (family) CHECK(k && k->isa == want);
        if (lb_test_level_available(lv)) printf("  level %s: %s\n", lb_isa_name(lv), k ? k->name : "none");
        else if (family)
            printf("  SKIP level %s: this CPU (%s) lacks it; %s is not run here\n", lb_isa_name(lv),
                   lb_isa_name(hw), k ? k->name : "no kernel");
    }
}

/* ---- mu = 8 float tables ---- */
static void test_f8(void) {
    uint64_t seed = 77;
    for (int i = 0; i < 12; i++) {
        const bcq_want *t = &kTypes[i];
        const int64_t K = 1024, N = 37;
        const int L = lb_bcq_lut_of(t->type);
        uint8_t *w = make_weights(t, K, N, &seed, 0);
        const size_t row = lb_row_size(t->type, K);
        uint8_t *packed = malloc(row * N);
        lb_repack_tensor(L, w, packed, K, N);
        float *x = make_acts(K, 1, &seed, 0);
        void *act = malloc(lb_bcq_f8_size(K));
        lb_bcq_f8_prepare(x, K, act);
        float y[37], yq[37], wf[1024];
        lb_bcq_gemv_f8_ref(L, K, packed, N, act, y);
        ref_outputs(t, w, K, N, x, 1, yq);
        double worst_f8 = 0, worst_q8 = 0;
        int within = 1, plain = 1;
        for (int64_t n = 0; n < N; n++) {
            plain &= lb_bcq_dot_f8_ref(t->type, K, w + n * row, act) == y[n];
            lb_traits(t->type)->to_float(w + n * row, wf, K);
            double d = 0, mag = 0, amag = 0;
            for (int64_t j = 0; j < K; j++) {
                d += (double)wf[j] * x[j], mag += fabs((double)wf[j] * x[j]);
                /* the bound's terms: |x_j| (sum_i |alpha_i| + |z|) */
                const uint8_t *blk = w + n * row + (j / t->g) * t->size;
                double sa = 0;
                for (int p = 0; p <= t->q; p++) {
                    lb_fp16 h;
                    memcpy(&h, blk + 2 * p, 2);
                    sa += fabs(lb_fp16_to_f32(h));
                }
                amag += sa * fabs(x[j]);
            }
            /* stated tolerance of the float tables: the first-order bound of their roundings,
             * ((q + 1) K / g + g + 16) u sum_j |x_j| (sum_i |alpha_i| + |z|), u = 2^-24 (docs/bcq.md) */
            const double tol = ((t->q + 1) * K / t->g + t->g + 16) * ldexp(1.0, -24) * amag;
            within &= fabs(y[n] - d) <= tol;
            worst_f8 = fmax(worst_f8, fabs(y[n] - d) / mag);
            worst_q8 = fmax(worst_q8, fabs(yq[n] - d) / mag);
        }
        CHECK_MSG(plain, "%s: the F8 dot of plain rows differs from the layout's", t->name);
        CHECK_MSG(within, "%s: the F8 path off the double dot by more than its bound", t->name);
        printf("%s: error against the double dot of float activations, of the terms: mu = 8 float tables %.2g, "
               "mu = 4 int8 tables (Q8_0 activations) %.2g\n", t->name, worst_f8, worst_q8);
#if LB_HAVE_X86_KERNELS
        if (lb_test_level_available(LB_ISA_AVX2)) {
            float y2[37];
            lb_bcq_gemv_f8_avx2(L, K, packed, N, act, y2);
            CHECK_MSG(!memcmp(y, y2, sizeof y), "%s: the AVX2 F8 kernel differs from its reference", t->name);
        }
#endif
        free(act), free(x), free(packed), free(w);
    }
}

/* ---- uniform -> BCQ ---- */

/* converts rows of src (K each) and compares the dequantized values */
static int64_t convert_check(int src, const void *in, int dst, int64_t K, int64_t rows, int64_t *groups,
                             int *bit_identical, double *worst_ulps) {
    const size_t orow = lb_row_size(dst, K);
    uint8_t *out = malloc(orow * (size_t)rows);
    const int64_t inexact = lb_bcq_from_uniform(src, in, dst, out, K, rows, groups);
    float *a = malloc(sizeof(float) * K), *b = malloc(sizeof(float) * K);
    const int g = lb_bcq_group(dst), q = lb_bcq_bits(dst);
    int64_t counted = 0;
    *bit_identical = 1;
    *worst_ulps = 0;
    for (int64_t r = 0; r < rows; r++) {
        lb_traits(src)->to_float((const uint8_t *)in + (size_t)r * lb_row_size(src, K), a, K);
        lb_traits(dst)->to_float(out + (size_t)r * orow, b, K);
        for (int64_t gi = 0; gi < K / g; gi++) {
            /* equal values; the bits too, but for the sign of a zero (bcq.h) */
            int eq = 1;
            for (int j = 0; j < g; j++) {
                const float u = a[gi * g + j], v = b[gi * g + j];
                eq &= u == v && (u == 0.0f || !memcmp(&u, &v, sizeof u));
            }
            if (!eq) {
                counted++;
                /* within half an ulp of z (and float rounding) */
                const uint8_t *blk = out + (size_t)r * orow + (size_t)gi * LB_BCQ_SIZE(q, g);
                lb_fp16 zh;
                memcpy(&zh, blk + 2 * q, 2);
                const double z = fabs(lb_fp16_to_f32(zh)), ulp = z > 0 ? ldexp(1.0, ilogb(z) - 10) : ldexp(1.0, -24);
                for (int j = 0; j < g; j++) {
                    const double e = fabs((double)a[gi * g + j] - b[gi * g + j]) / ulp;
                    if (e > *worst_ulps) *worst_ulps = e;
                }
            }
        }
    }
    if (counted) *bit_identical = 0;
    CHECK_MSG(counted == inexact, "%s -> %s: %lld groups differ, %lld reported", lb_type_name(src), lb_type_name(dst),
              (long long)counted, (long long)inexact);
    free(a), free(b), free(out);
    return inexact;
}

static void test_uniform(void) {
    uint64_t seed = 31;
    enum { K = 512, ROWS = 24 };
    float *x = malloc(sizeof(float) * K * ROWS);
    for (int i = 0; i < K * ROWS; i++) x[i] = gauss(&seed) * (0.01f + (float)(i / K) * 0.003f);
    /* Q4_0: z = -d/2, always exact (unless d/2 is a subnormal fp16 with an odd last bit) */
    {
        uint8_t *in = malloc(lb_row_size(LB_TYPE_Q4_0, K) * ROWS);
        for (int r = 0; r < ROWS; r++) lb_quantize_row_q4_0_ref(x + r * K, in + r * lb_row_size(LB_TYPE_Q4_0, K), K);
        int64_t groups;
        int same;
        double ulps;
        const int64_t bad = convert_check(LB_TYPE_Q4_0, in, LB_TYPE_BCQ4_G32, K, ROWS, &groups, &same, &ulps);
        CHECK_MSG(bad == 0 && same && groups == ROWS * K / 32, "Q4_0 -> BCQ4_G32: %lld of %lld groups inexact",
                  (long long)bad, (long long)groups);
        free(in);
    }
    /* GQ: symmetric groups (zq = 2^(q-1), z = -s/2) always exact; asymmetric where s (2^q - 1 - 2 zq) / 2 fits */
    for (int gi = 0; gi < 12; gi++) {
        const int gq = LB_GQ_FIRST + gi, b = lb_gq_bits(gq), gs = lb_gq_group(gq);
        const size_t row = lb_row_size(gq, K);
        uint8_t *in = malloc(row * ROWS);
        for (int sym = 1; sym >= 0; sym--) {
            for (int r = 0; r < ROWS; r++) lb_gq_quantize_row(gq, x + r * K, in + r * row, K, sym);
            for (int g = 32; g <= 128; g *= 2) {
                const int dst = lb_bcq_type(b, g);
                const int fits = gs >= g && gs % g == 0;
                CHECK(lb_bcq_uniform_fits(gq, dst) == fits);
                if (!fits) {
                    uint8_t o[64];
                    CHECK(lb_bcq_from_uniform(gq, in, dst, o, K, 0, NULL) == -1);
                    continue;
                }
                int64_t groups;
                int same;
                double ulps;
                const int64_t bad = convert_check(gq, in, dst, K, ROWS, &groups, &same, &ulps);
                if (sym) CHECK_MSG(bad == 0 && same, "%s --sym -> %s: %lld inexact groups", lb_type_name(gq),
                                   lb_type_name(dst), (long long)bad);
                CHECK_MSG(ulps <= 0.51, "%s -> %s: off by %.3f ulps of z", lb_type_name(gq), lb_type_name(dst), ulps);
                if (!sym && g == gs)
                    printf("%s (asymmetric RTN) -> %s: %lld of %lld groups exact; the others within %.2f ulp of z\n",
                           lb_type_name(gq), lb_type_name(dst), (long long)(groups - bad), (long long)groups, ulps);
            }
        }
        free(in);
    }
    /* Q4_1: z = m + 7.5 d rarely fits fp16 */
    {
        const size_t row = lb_row_size(LB_TYPE_Q4_1, K);
        uint8_t *in = malloc(row * ROWS);
        for (int r = 0; r < ROWS; r++) lb_traits(LB_TYPE_Q4_1)->from_float(x + r * K, in + r * row, K);
        int64_t groups;
        int same;
        double ulps;
        const int64_t bad = convert_check(LB_TYPE_Q4_1, in, LB_TYPE_BCQ4_G32, K, ROWS, &groups, &same, &ulps);
        printf("Q4_1 -> BCQ4_G32: %lld of %lld groups exact; the others within %.2f ulp of z\n",
               (long long)(groups - bad), (long long)groups, ulps);
        /* a Q4_1 grid whose m + 7.5 d is an fp16: exact */
        block_q4_1 blk[K / 32];
        for (int c = 0; c < K / 32; c++) {
            blk[c].d = lb_f32_to_fp16(0.125f * (float)(1 + c % 3));
            blk[c].m = lb_f32_to_fp16(-0.9375f * (float)(1 + c % 3) + 0.5f);
            for (int j = 0; j < 16; j++) blk[c].qs[j] = (uint8_t)lb_test_rand(&seed);
        }
        const int64_t bad2 = convert_check(LB_TYPE_Q4_1, blk, LB_TYPE_BCQ4_G32, K, 1, &groups, &same, &ulps);
        CHECK_MSG(bad2 == 0 && same, "Q4_1 with fp16 midpoints: %lld inexact", (long long)bad2);
        free(in);
    }
    /* pairs that do not fit */
    CHECK(!lb_bcq_uniform_fits(LB_TYPE_Q4_0, LB_TYPE_BCQ4_G64) && !lb_bcq_uniform_fits(LB_TYPE_Q4_0, LB_TYPE_BCQ3_G32));
    CHECK(!lb_bcq_uniform_fits(LB_TYPE_GQ3_G128, LB_TYPE_BCQ4_G128) && !lb_bcq_uniform_fits(LB_TYPE_GQ4_G16, LB_TYPE_BCQ4_G32));
    CHECK(!lb_bcq_uniform_fits(LB_TYPE_Q8_0, LB_TYPE_BCQ4_G32) && !lb_bcq_uniform_fits(LB_TYPE_Q2_K, LB_TYPE_BCQ2_G32));
    CHECK(!lb_bcq_uniform_fits(LB_TYPE_GQ4_G128, LB_TYPE_BCQ4_G128_LUT) && !lb_bcq_uniform_fits(LB_TYPE_F32, LB_TYPE_BCQ4_G32));
    /* the closed form of the condition against an exhaustive check: a GQ
     * block with one group, every code, converted */
    int agree = 1, n_exact = 0, n_tried = 0;
    for (int it = 0; it < 4000; it++) {
        const int q = 2 + it % 3, gq = lb_gq_type(q, 128);
        lb_fp16 s = (lb_fp16)(lb_test_rand(&seed) & 0x7fff); /* any finite non-negative fp16 */
        if ((s & 0x7c00) == 0x7c00) s = (lb_fp16)(s & 0x7bff);
        if (it % 4 == 0) s = (lb_fp16)(s & 0x7f80);         /* a few significant bits */
        if (it % 16 == 1) s = (lb_fp16)(s & 0x03ff);        /* subnormal */
        const int zq = (int)(lb_test_rand(&seed) % (1u << q));
        uint8_t blk[128] = {0};
        memcpy(blk + LB_GQ_S_OFF(q), &s, 2);
        blk[LB_GQ_Z_OFF(q, 128)] = (uint8_t)zq;
        for (int j = 0; j < 128; j++) lb_gq_set_code(blk, q, j, j % (1 << q));
        uint8_t o[128];
        const int64_t bad = lb_bcq_from_uniform(gq, blk, lb_bcq_type(q, 128), o, 128, 1, NULL);
        const int pred = lb_bcq_uniform_exact(s, zq, q);
        /* s = 0 groups: the uniform side writes -0 below z, BCQ +0 (equal, not bitwise) */
        if (lb_fp16_to_f32(s) == 0.0f) continue;
        n_tried++;
        n_exact += pred;
        if (pred != (bad == 0)) {
            agree = 0;
            fprintf(stderr, "s %#06x zq %d q %d: closed form %d, values %s\n", s, zq, q, pred, bad ? "differ" : "equal");
        }
    }
    CHECK_MSG(agree, "the closed-form exactness condition disagrees with the values");
    printf("exactness condition: %d of %d random (s, zq, q) grids exact, closed form == exhaustive check\n", n_exact,
           n_tried);
    free(x);
}

/* ---- repack / unpack, traits of the layout ---- */
static void test_repack(void) {
    uint64_t seed = 3;
    for (int i = 0; i < 12; i++) {
        const bcq_want *t = &kTypes[i];
        const int L = lb_bcq_lut_of(t->type);
        const int64_t K = 2 * t->g + 128, N = 37;
        const size_t row = lb_row_size(t->type, K);
        uint8_t *w = malloc(row * N), *p = malloc(row * N), *u = malloc(row * N);
        for (size_t b = 0; b < row * N; b++) w[b] = (uint8_t)lb_test_rand(&seed);
        for (int64_t n = 0; n < N; n++)
            for (int64_t gi = 0; gi < K / t->g; gi++)
                for (int h = 0; h <= t->q; h++) put_h(w + n * row + gi * t->size + 2 * h, gauss(&seed));
        lb_repack_tensor(L, w, p, K, N);
        lb_unpack_tensor(L, p, u, K, N);
        CHECK_MSG(!memcmp(w, u, row * N), "%s: unpack(repack) is not the identity", lb_type_name(L));
        /* an x-block: alpha_i of row r at 32 i + 2 r, plane byte k at 32 (q+1) + 16 (i g/8 + k) + r */
        int ok = 1;
        const uint8_t *x1 = p + row * 16 + t->size * 16; /* rows 16..31, group 1 */
        for (int r = 0; r < 16; r++) {
            const uint8_t *blk = w + (16 + r) * row + t->size;
            for (int h = 0; h <= t->q; h++) ok &= !memcmp(x1 + 32 * h + 2 * r, blk + 2 * h, 2);
            for (int k = 0; k < t->q * t->g / 8; k++) ok &= x1[32 * (t->q + 1) + 16 * k + r] == blk[2 * (t->q + 1) + k];
        }
        CHECK_MSG(ok, "%s: x-block layout", lb_type_name(L));
        /* the layout's to_float decodes 16 rows */
        float *a = malloc(sizeof(float) * K * 16), *b = malloc(sizeof(float) * K * 16);
        lb_traits(L)->to_float(p, a, 16 * K);
        for (int r = 0; r < 16; r++) lb_traits(t->type)->to_float(w + r * row, b + r * K, K);
        CHECK_MSG(!memcmp(a, b, sizeof(float) * K * 16), "%s: to_float", lb_type_name(L));
        free(a), free(b), free(w), free(p), free(u);
    }
}

/* ---- GPTQ's hook ---- */
static void test_grid(void) {
    uint64_t seed = 11;
    for (int i = 0; i < 12; i++) {
        const bcq_want *t = &kTypes[i];
        const lb_grid *gr = lb_grid_get(t->type);
        CHECK(gr && gr->width == t->g && lb_bcq_grid(t->type) == gr);
        if (!gr) continue;
        float x[128], y[128];
        uint8_t a[128], b[128];
        for (int j = 0; j < t->g; j++) x[j] = gauss(&seed);
        lb_traits(t->type)->from_float(x, a, t->g);
        memset(b, 0xAB, sizeof b);
        gr->fix(b, 0, x, NULL);
        float r[128], ya[128];
        for (int j = 0; j < t->g; j++) r[j] = gr->round(b, j, x[j]);
        lb_traits(t->type)->to_float(b, y, t->g);
        lb_traits(t->type)->to_float(a, ya, t->g);
        /* the same alpha and z, the same values (codes may differ only between equal values) */
        const int ok = !memcmp(a, b, 2 * (t->q + 1)) && !memcmp(r, y, sizeof(float) * t->g) &&
                       !memcmp(ya, y, sizeof(float) * t->g);
        CHECK_MSG(ok, "%s: fix + round != the quantizer, or round's values != dequantize", t->name);
    }
}

/* ---- GGUF ---- */
static void test_gguf(void) {
    uint32_t type = 0;
    uint64_t size = 0;
    CHECK(lb_test_open_one(LB_TYPE_BCQ3_G64, 256, 2, 8 * 32, &type, &size) == LB_OK && type == LB_TYPE_BCQ3_G64 &&
          size == 8 * 32);
    /* the group does not divide the row */
    CHECK_MSG(lb_test_refused(LB_TYPE_BCQ3_G128, 96, 2, 256, "not a multiple of the BCQ3_G128 block size 128"),
              "row of 96: %s", lb_last_error());
    CHECK_MSG(lb_test_refused(LB_TYPE_BCQ1_G32_LUT, 48, 1, 64, "block size 32"), "row of 48: %s", lb_last_error());
    /* short data */
    CHECK_MSG(lb_test_refused(LB_TYPE_BCQ4_G128, 256, 3, 3 * 2 * 74 - 1, "past end"), "short data: %s", lb_last_error());
    /* no type with other q or g: the first id after the BCQ types (and BCQ{q}_GC) is unknown */
    CHECK_MSG(lb_test_refused(1095, 256, 1, 256, "unknown type 1095"), "id 1095: %s", lb_last_error());
}

int main(void) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } parts[] = {{"geometry", test_geometry}, {"dequant", test_dequant_known}, {"quantize", test_quantize},
                 {"act", test_act},           {"vec_dot", test_vec_dot},       {"kernels", test_kernels}, {"kernels_long_k", test_kernels_long_k},
                 {"f8", test_f8},             {"uniform", test_uniform},       {"repack", test_repack},
                 {"grid", test_grid},         {"gguf", test_gguf}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const double t0 = lb_time_s();
        parts[i].fn();
        if (getenv("BCQ_TEST_TIMES")) printf("[%s: %.2f s]\n", parts[i].name, lb_time_s() - t0);
    }
    if (lb_cpu_extra_features() & LB_CPU_VBMI) {
        /* once more without VBMI: the folded / lanes AVX-512 GEMV */
        printf("again without VBMI\n");
        lb_cpu_disable_features(LB_CPU_VBMI);
        test_kernels();
        lb_cpu_disable_features(0);
    }
    if (lb_cpu_extra_features() & LB_CPU_AMXBF16) {
        /* once more without AMX-BF16: the lookup GEMV for every row at the amx level */
        printf("again without AMX-BF16\n");
        lb_cpu_disable_features(LB_CPU_AMXBF16);
        test_kernels();
        lb_cpu_disable_features(0);
    }
    return lb_test_result("test_bcq");
}
