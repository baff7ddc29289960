/* GQ{b}_GC (formats/gqc.h), GPTQ's whole-column groups, the 3 types:
 *  - ids, names, block sizes, bits per weight, traits (geometry only), the
 *    Q8_0 fallback, the scalar reference kernel;
 *  - packing: random codes round-trip bit-exactly in GC rows, the words are
 *    GQ's (AutoGPTQ's) words, and lb_gqc_to_g128 gives GQ{b}_G128 blocks
 *    holding the same words, the row's scale and zero in every block;
 *  - dequantization of hand-built rows (known codes, s, z), exact, and equal
 *    to the G128 expansion's, bit for bit;
 *  - quantize: the whole row's grid is lb_gq_fit's over the row, every code
 *    is GPTQ's code on it, error within s/2 inside the span; symmetric z;
 *    at K = 128 the same bytes as GQ{b}_G128's quantizer; an all-zero row;
 *  - the reference dot against a double dot of both sides dequantized, and
 *    bit for bit GQ{b}_G128's dot of the expanded row;
 *  - GPTQ's rounding (lb_gqc_round) returns exactly what dequantization gives;
 *  - lb_matmul through the kernel table on an lb_gc_view (1 and 2 threads)
 *    equals the reference dot, and the expanded matrix repacked to its _QG
 *    layout gives the same products through the fastest kernel of this CPU;
 *  - lb_gc_view_make refuses bad sizes, non-finite scales and zero points
 *    that are not integers in range;
 *  - GGUF: a GC tensor's size follows from its shape. */
#include <math.h>

#include "core/common.h"
#include "formats/gc.h"
#include "formats/repack.h"
#include "formats/repack_qg.h"
#include "gguf/gguf.h"
#include "kernels/dispatch.h"
#include "test_matmul_util.h"
#include "test_util.h"

static const struct {
    int type;
    const char *name;
    int bits;
    size_t size;
} kTypes[3] = {{LB_TYPE_GQ4_GC, "GQ4_GC", 4, 64}, {LB_TYPE_GQ3_GC, "GQ3_GC", 3, 48}, {LB_TYPE_GQ2_GC, "GQ2_GC", 2, 32}};

static void test_geometry(void) {
    for (int i = 0; i < 3; i++) {
        const int type = kTypes[i].type, b = kTypes[i].bits;
        CHECK(type == 1063 + i);
        const lb_type_traits *t = lb_traits(type);
        CHECK_MSG(t && !strcmp(t->name, kTypes[i].name) && t->blck == 128 && t->type_size == kTypes[i].size &&
                      t->is_quantized && t->vec_dot_type == LB_TYPE_Q8_0 && !t->to_float && !t->from_float &&
                      !t->vec_dot,
                  "%s traits", kTypes[i].name);
        CHECK(lb_type_bits_per_weight(type) == (double)b);
        CHECK(lb_gqc_bits(type) == b && lb_gqc_type(b) == type && lb_gqc_g128(type) == lb_gq_type(b, 128));
        CHECK(lb_type_from_name(kTypes[i].name) == type);
        CHECK(lb_row_size(type, 640) == 5 * kTypes[i].size && lb_row_size(type, 640) * 8 == 640 * (uint64_t)b);
        CHECK(lb_gq_bits(type) == 0 && lb_gq_grid(type) == NULL); /* not a block type with a grid */
        CHECK(lb_type_fallback(type, 256) == type && lb_type_fallback(type, 96) == LB_TYPE_Q8_0 &&
              lb_type_fallback(type, 48) == LB_TYPE_F16);
        char want[32];
        snprintf(want, sizeof want, "gq%d_gc_q8_0_ref", b);
        const lb_kernel *k = lb_kernel_get(type);
        CHECK_MSG(k && !strcmp(k->name, want) && k->act_type == LB_TYPE_Q8_0 && !k->vec_dot && k->gemv &&
                      k->quantize_act == lb_quantize_row_q8_0_ref && lb_type_rows(type) == 1,
                  "%s kernel %s", kTypes[i].name, k ? k->name : "none");
    }
    CHECK(sizeof(block_gq4_gc) == 64 && sizeof(block_gq3_gc) == 48 && sizeof(block_gq2_gc) == 32);
    CHECK(lb_gqc_bits(LB_TYPE_GQ4_G128) == 0 && lb_gqc_bits(1062) == 0 && lb_gqc_bits(1066) == 0);
    CHECK(lb_gqc_type(5) == -1 && lb_gqc_g128(LB_TYPE_Q4_0) == -1 && lb_gqc_traits(1066) == NULL);
    CHECK(lb_gc_is_side("blk.0.attn_q.weight.gq_sz", 25) && !lb_gc_is_side("blk.0.attn_q.weight", 19) &&
          !lb_gc_is_side(".gq_sz", 6));
}

/* ---- packing, dequantization, the G128 expansion ---- */
static void test_packing(void) {
    uint64_t seed = 0x51ed2701u;
    enum { K = 384 };
    for (int i = 0; i < 3; i++) {
        const int type = kTypes[i].type, b = kTypes[i].bits, maxq = (1 << b) - 1;
        const size_t rs = lb_row_size(type, K), g128 = lb_row_size(lb_gqc_g128(type), K);
        uint8_t row[K / 2], exp[3 * 68];
        int q[K];
        float y[K], y128[K];
        for (int rep = 0; rep < 20; rep++) {
            for (size_t j = 0; j < rs; j++) row[j] = (uint8_t)lb_test_rand(&seed); /* set must clear */
            for (int j = 0; j < K; j++) q[j] = (int)(lb_test_rand(&seed) % (uint64_t)(maxq + 1));
            for (int j = 0; j < K; j++) lb_gq_set_code(row + (j / 128) * kTypes[i].size, b, j % 128, q[j]);
            int same = 1;
            for (int j = 0; j < K; j++) same &= lb_gq_get_code(row + (j / 128) * kTypes[i].size, b, j % 128) == q[j];
            CHECK_MSG(same, "%s: codes round trip", kTypes[i].name);
            /* known s, z: exact s * (q - z); the G128 expansion holds the
             * words, s and z in every block and dequantizes to the same bits */
            const float s = 0.125f * (float)(rep + 1) * (rep % 2 ? -1.0f : 1.0f);
            const int z = rep % (maxq + 1);
            const lb_fp16 h = lb_f32_to_fp16(s);
            lb_gqc_dequantize_row(type, row, y, K, h, z);
            int exact = 1;
            for (int j = 0; j < K; j++) exact &= y[j] == s * (float)(q[j] - z);
            CHECK_MSG(exact, "%s: dequantize of known codes", kTypes[i].name);
            memset(exp, 0xAB, sizeof exp);
            lb_gqc_to_g128(type, row, h, z, exp, K);
            int words = 1, params = 1;
            const size_t bs = LB_GQ_SIZE(b, 128);
            for (int blk = 0; blk < K / 128; blk++) {
                words &= !memcmp(exp + blk * bs, row + blk * kTypes[i].size, kTypes[i].size);
                lb_fp16 hs;
                memcpy(&hs, exp + blk * bs + LB_GQ_S_OFF(b), 2);
                params &= hs == h && exp[blk * bs + LB_GQ_Z_OFF(b, 128)] == z;
                for (size_t p = LB_GQ_Z_OFF(b, 128) + 1; p < bs; p++) params &= exp[blk * bs + p] == 0;
            }
            CHECK_MSG(words && params && g128 == 3 * bs, "%s: G128 expansion", kTypes[i].name);
            lb_traits(lb_gqc_g128(type))->to_float(exp, y128, K);
            CHECK_MSG(!memcmp(y, y128, sizeof y), "%s: G128 expansion dequantizes differently", kTypes[i].name);
        }
    }
    /* hand-written words: codes j % 2^b (as tests/test_gq.c's) */
    static const uint32_t w4[2] = {0x76543210u, 0xfedcba98u};
    static const uint32_t w3[3] = {0x88fac688u, 0xc688fac6u, 0xfac688fau};
    for (int i = 0; i < 3; i++) {
        const int b = kTypes[i].bits;
        uint32_t words[16];
        for (int k = 0; k < 4 * b; k++) words[k] = b == 4 ? w4[k % 2] : b == 3 ? w3[k % 3] : 0xe4e4e4e4u;
        float y[128];
        lb_gqc_dequantize_row(kTypes[i].type, words, y, 128, lb_f32_to_fp16(0.5f), 1);
        int ok = 1;
        for (int j = 0; j < 128; j++) ok &= y[j] == 0.5f * (float)(j % (1 << b) - 1);
        CHECK_MSG(ok, "%s: hand-written words", kTypes[i].name);
    }
}

/* ---- quantize ---- */
static void test_quantize(void) {
    uint64_t seed = 17;
    enum { K = 640 };
    float x[K], y[K], imp[K];
    uint8_t q[K / 2], ref[5 * 68];
    for (int i = 0; i < 3; i++) {
        const int type = kTypes[i].type, b = kTypes[i].bits, maxq = (1 << b) - 1;
        for (int rep = 0; rep < 12; rep++) {
            const int sym = rep % 2, weighted = rep % 3 == 2;
            for (int j = 0; j < K; j++) {
                x[j] = lb_test_randf(&seed) * (j % 61 == 0 ? 5.0f : 1.0f) + (rep % 4 == 1 ? 0.4f : 0.0f);
                imp[j] = 0.1f + (float)(j % 13);
            }
            lb_fp16 s;
            int z;
            lb_gqc_quantize_row(type, x, q, K, sym, weighted ? imp : NULL, &s, &z);
            lb_fp16 fs;
            int fz;
            lb_gq_fit(b, x, K, weighted ? imp : NULL, sym, &fs, &fz);
            CHECK_MSG(fs == s && fz == z, "%s: the row's grid is lb_gq_fit's", kTypes[i].name);
            CHECK(z >= 0 && z <= maxq && (!sym || z == 1 << (b - 1)));
            const float sf = lb_fp16_to_f32(s);
            lb_gqc_dequantize_row(type, q, y, K, s, z);
            const float lo = sf * (float)(0 - z), hi = sf * (float)(maxq - z);
            int codes = 1, near = 1;
            for (int j = 0; j < K; j++) {
                codes &= lb_gq_get_code(q + (j / 128) * kTypes[i].size, b, j % 128) == lb_gq_code(x[j], sf, z, b);
                if (x[j] >= lo && x[j] <= hi) near &= fabsf(y[j] - x[j]) <= 0.5f * sf * 1.0001f;
                else near &= y[j] == (x[j] < lo ? lo : hi);
            }
            CHECK_MSG(codes && near, "%s rep %d: codes or error bound", kTypes[i].name, rep);
            /* one block: a whole row is one group of 128, GQ{b}_G128's quantizer */
            lb_gqc_quantize_row(type, x, q, 128, sym, NULL, &s, &z);
            lb_gq_quantize_row(lb_gqc_g128(type), x, ref, 128, sym);
            uint8_t exp[68];
            lb_gqc_to_g128(type, q, s, z, exp, 128);
            CHECK_MSG(!memcmp(exp, ref, LB_GQ_SIZE(b, 128)), "%s: K = 128 differs from GQ%d_G128", kTypes[i].name, b);
        }
        /* all zeros: s = 0, everything dequantizes to 0 */
        memset(x, 0, sizeof x);
        lb_fp16 s;
        int z;
        lb_gqc_quantize_row(type, x, q, K, 0, NULL, &s, &z);
        lb_gqc_dequantize_row(type, q, y, K, s, z);
        int zero = s == 0;
        for (int j = 0; j < K; j++) zero &= y[j] == 0.0f;
        CHECK_MSG(zero, "%s: all-zero row", kTypes[i].name);
        /* not a GC type: nothing written */
        memset(q, 0xAB, sizeof q);
        lb_gqc_quantize_row(LB_TYPE_Q4_0, x, q, 128, 0, NULL, &s, &z);
        CHECK(q[0] == 0xAB && q[63] == 0xAB);
    }
}

/* ---- dot product, GPTQ's rounding ---- */
static void test_dot_round(void) {
    const int64_t Ks[] = {128, 256, 640, 2048};
    uint64_t seed = 29;
    for (int i = 0; i < 3; i++) {
        const int type = kTypes[i].type, g = lb_gqc_g128(type);
        for (size_t ki = 0; ki < 4; ki++) {
            const int64_t K = Ks[ki];
            float *x = malloc(sizeof(float) * K), *a = malloc(sizeof(float) * K);
            float *wd = malloc(sizeof(float) * K), *ad = malloc(sizeof(float) * K), *v = malloc(sizeof(float) * K);
            uint8_t *wq = malloc((size_t)(K / 128) * kTypes[i].size), *w128 = malloc(lb_row_size(g, K));
            block_q8_0 *aq = malloc(sizeof(block_q8_0) * (size_t)(K / 32));
            for (int rep = 0; rep < 4; rep++) {
                for (int64_t j = 0; j < K; j++) {
                    x[j] = lb_test_randf(&seed) * (rep == 3 ? 0.01f : 1.0f);
                    a[j] = lb_test_randf(&seed) * (j % 97 == 0 ? 8.0f : 1.0f);
                }
                lb_fp16 s;
                int z;
                lb_gqc_quantize_row(type, x, wq, K, rep % 2, NULL, &s, &z);
                lb_quantize_row_q8_0_ref(a, aq, K);
                lb_gqc_dequantize_row(type, wq, wd, K, s, z);
                lb_dequantize_row_q8_0(aq, ad, K);
                double ref = 0, mag = 0;
                for (int64_t j = 0; j < K; j++) {
                    ref += (double)wd[j] * (double)ad[j];
                    mag += fabs((double)wd[j] * (double)ad[j]);
                }
                float got = NAN, got128 = NAN;
                lb_gqc_vec_dot_q8_0(type, K, &got, wq, aq, s, z);
                CHECK_MSG(fabs(got - ref) <= 1e-5 * mag, "%s K=%lld: dot %.9g vs double %.9g (terms %.3g)",
                          kTypes[i].name, (long long)K, got, ref, mag);
                lb_gqc_to_g128(type, wq, s, z, w128, K);
                lb_traits(g)->vec_dot(K, &got128, w128, aq);
                CHECK_MSG(memcmp(&got, &got128, 4) == 0, "%s K=%lld: dot %.9g, G128's %.9g", kTypes[i].name,
                          (long long)K, got, got128);
                /* GPTQ's rounding of other values onto the same grid: what dequantize gives */
                for (int64_t j = 0; j < K; j++)
                    v[j] = lb_gqc_round(type, wq, j, x[j] + 0.2f * lb_test_randf(&seed) + (j % 41 ? 0.0f : 50.0f), s, z);
                lb_gqc_dequantize_row(type, wq, wd, K, s, z);
                CHECK_MSG(!memcmp(v, wd, sizeof(float) * (size_t)K), "%s: rounded values differ from dequantize",
                          kTypes[i].name);
                for (int64_t j = 0; j < K; j++) v[j] = lb_gqc_round(type, wq, j, wd[j], s, z);
                CHECK_MSG(!memcmp(v, wd, sizeof(float) * (size_t)K), "%s: grid values do not round to themselves",
                          kTypes[i].name);
            }
            free(x), free(a), free(wd), free(ad), free(v), free(wq), free(w128), free(aq);
        }
    }
}

/* ---- lb_matmul on a view, and the expanded matrix on the fast kernels ---- */
static void test_matmul(void) {
    enum { K = 384, N = 40, M = 5 }; /* N: two 16-row groups and a plain tail of 8 for _QG */
    uint64_t seed = 5;
    for (int i = 0; i < 3; i++) {
        const int type = kTypes[i].type, g = lb_gqc_g128(type);
        const size_t rs = lb_row_size(type, K), rs128 = lb_row_size(g, K);
        float *wf = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
        uint8_t *wq = malloc((size_t)N * rs), *w128 = malloc((size_t)N * rs128), *wqg = malloc((size_t)N * rs128);
        lb_fp16 sz[2 * N];
        block_q8_0 aq[K / 32];
        for (int j = 0; j < K * N; j++) wf[j] = lb_test_randf(&seed) * (j % 7 ? 1.0f : 3.0f);
        for (int j = 0; j < K * M; j++) x[j] = lb_test_randf(&seed);
        for (int n = 0; n < N; n++) {
            int z;
            lb_gqc_quantize_row(type, wf + n * K, wq + n * rs, K, n % 2, NULL, &sz[2 * n], &z);
            sz[2 * n + 1] = lb_gqc_zero_fp16(z);
        }
        lb_gc_view *v = NULL;
        CHECK_OK(lb_gc_view_make(type, N, K, wq, (uint64_t)N * rs, sz, 2 * N, &v));
        if (!v) continue;
        float *want = malloc(sizeof(float) * N * M);
        for (int m = 0; m < M; m++) {
            lb_quantize_row_q8_0_ref(x + m * K, aq, K);
            for (int n = 0; n < N; n++)
                lb_gqc_vec_dot_q8_0(type, K, &want[m * N + n], wq + n * rs, aq, sz[2 * n], lb_gqc_view_zero(v, n));
        }
        for (int nth = 1; nth <= 2; nth++) {
            float *y = lb_test_matmul(type, (const uint8_t *)v, K, N, x, M, nth);
            CHECK_MSG(!memcmp(y, want, sizeof(float) * N * M), "%s: lb_matmul (%d threads) differs from the dot",
                      kTypes[i].name, nth);
            free(y);
        }
        /* the view's bytes and weights */
        CHECK(lb_matrix_bytes(&(lb_matrix){type, K, N, rs, v, 0}) == (uint64_t)N * rs + 4 * N);
        float *wd = malloc(sizeof(float) * K * N), *wr = malloc(sizeof(float) * K);
        lb_gc_view_dequantize(v, wd);
        int same = 1;
        for (int n = 0; n < N; n++) {
            lb_gqc_dequantize_row(type, wq + n * rs, wr, K, sz[2 * n], lb_gqc_view_zero(v, n));
            same &= !memcmp(wr, wd + n * K, sizeof(float) * K);
        }
        CHECK_MSG(same, "%s: view dequantize", kTypes[i].name);
        /* what the load does where QIGen's kernels run: expand, repack */
        lb_gc_view_to_g128(v, 0, N, w128);
        const int qg = lb_qg_type_of(g);
        lb_repack_tensor(qg, w128, wqg, K, N);
        const lb_kernel *k = lb_kernel_get(qg);
        float *y = lb_test_matmul(qg, wqg, K, N, x, M, 2);
        double worst = 0;
        for (int j = 0; j < N * M; j++) {
            const double e = fabs((double)y[j] - want[j]) / (fabs(want[j]) + 1e-3);
            if (!(e <= worst)) worst = e;
        }
        CHECK_MSG(worst < 1e-4, "%s expanded to %s (kernel %s): worst relative difference %g", kTypes[i].name,
                  lb_type_name(qg), k ? k->name : "none", worst);
        free(y);
        free(wd), free(wr), free(want), free(wf), free(x), free(wq), free(w128), free(wqg);
        lb_free_aligned(v);
    }
}

/* ---- the view's checks ---- */
static void test_view_checks(void) {
    enum { K = 256, N = 4 };
    uint8_t codes[N * K / 2] = {0};
    lb_fp16 sz[2 * N];
    for (int n = 0; n < N; n++) sz[2 * n] = lb_f32_to_fp16(0.5f), sz[2 * n + 1] = lb_gqc_zero_fp16(3);
    lb_gc_view *v = NULL;
    const uint64_t cb = lb_row_size(LB_TYPE_GQ4_GC, K) * N;
    CHECK_OK(lb_gc_view_make(LB_TYPE_GQ4_GC, N, K, codes, cb, sz, 2 * N, &v));
    CHECK(v && v->N == N && v->K == K && v->bits == 4 && lb_gqc_view_zero(v, 2) == 3 && lb_gqc_view_scale(v, 1) == 0.5f);
    lb_free_aligned(v);
    struct {
        int type;
        int64_t K;
        uint64_t cb;
        int64_t nsz;
        int row;
        float s, z;
        lb_status want;
        const char *msg;
    } bad[] = {
        {LB_TYPE_GQ4_GC, K, cb - 1, 2 * N, -1, 0, 0, LB_ERR_SHAPE, "codes hold"},
        {LB_TYPE_GQ4_GC, K, cb, 2 * N - 1, -1, 0, 0, LB_ERR_SHAPE, "scales and zeros"},
        {LB_TYPE_GQ4_GC, 200, cb, 2 * N, -1, 0, 0, LB_ERR_SHAPE, "multiple of 128"},
        {LB_TYPE_GQ4_GC, K, cb, 2 * N, 2, 0.5f, 16.0f, LB_ERR_FORMAT, "row 2's zero point is 16, not an integer in 0..15"},
        {LB_TYPE_GQ2_GC, K, cb / 2, 2 * N, 1, 0.5f, 4.0f, LB_ERR_FORMAT, "row 1's zero point is 4, not an integer in 0..3"},
        {LB_TYPE_GQ3_GC, K, cb * 3 / 4, 2 * N, 3, 0.5f, 2.5f, LB_ERR_FORMAT, "row 3's zero point is 2.5"},
        {LB_TYPE_GQ4_GC, K, cb, 2 * N, 0, 0.5f, -1.0f, LB_ERR_FORMAT, "row 0's zero point is -1"},
        {LB_TYPE_GQ4_GC, K, cb, 2 * N, 1, INFINITY, 3.0f, LB_ERR_FORMAT, "row 1's scale is inf"},
        {LB_TYPE_GQ4_GC, K, cb, 2 * N, 2, NAN, 3.0f, LB_ERR_FORMAT, "row 2's scale is"},
        {LB_TYPE_GQ4_G128, K, cb, 2 * N, -1, 0, 0, LB_ERR_ARG, "not a GC type"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        lb_fp16 s2[2 * N];
        memcpy(s2, sz, sizeof s2);
        if (bad[c].row >= 0) s2[2 * bad[c].row] = lb_f32_to_fp16(bad[c].s), s2[2 * bad[c].row + 1] = lb_f32_to_fp16(bad[c].z);
        v = NULL;
        const lb_status s = lb_gc_view_make(bad[c].type, N, bad[c].K, codes, bad[c].cb, s2, bad[c].nsz, &v);
        CHECK_MSG(s == bad[c].want && !v && strstr(lb_last_error(), bad[c].msg), "case %zu: status %d, '%s' (want '%s')",
                  c, (int)s, lb_last_error(), bad[c].msg);
    }
}

/* ---- GGUF sizes ---- */
static void test_gguf(void) {
    gguf_writer *w = gguf_writer_new();
    uint8_t data[3 * 48];
    lb_fp16 sz[6] = {0};
    memset(data, 0x5A, sizeof data);
    const int64_t ne[2] = {384, 1}, ne_sz[1] = {2};
    CHECK_OK(gguf_writer_add_tensor(w, "m.weight", LB_TYPE_GQ3_GC, 2, ne, data));
    CHECK_OK(gguf_writer_add_tensor(w, "m.weight.gq_sz", LB_TYPE_F16, 1, ne_sz, sz));
    const char *path = lb_test_tmp("gqc_sizes.gguf");
    CHECK_OK(gguf_writer_write(w, path, NULL, NULL, NULL, NULL));
    gguf_writer_free(w);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(path, &g));
    if (g) {
        const gguf_tensor *t = gguf_find_tensor(g, "m.weight");
        CHECK(t && t->type == LB_TYPE_GQ3_GC && t->size == 3 * 48 && !memcmp(t->data, data, sizeof data));
        gguf_close(g);
    }
    remove(path);
}

int main(void) {
    lb_log_level = 0;
    test_geometry();
    test_packing();
    test_quantize();
    test_dot_round();
    test_matmul();
    test_view_checks();
    test_gguf();
    return lb_test_result("test_gqc");
}
