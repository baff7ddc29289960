/* GQ{b}_G{g} (formats/gq.h), every one of the 12 types:
 *  - sizes, bits per weight, ids, names, helpers, the Q8_0 fallback;
 *  - packing: random codes round-trip bit-exactly, match AutoGPTQ's packing
 *    loops (written out here independently, the 3-bit one with its word
 *    straddles at weights 10 and 21) and hand-written words;
 *  - dequantization of hand-built blocks (known codes, s, z), exact;
 *  - quantize: error within s/2 per weight inside the grid's span, clipped
 *    weights on the grid's end, squared error at most plain min/max's
 *    (the range search; asymmetric and symmetric), the
 *    all-zero / constant / single-outlier / non-finite groups;
 *  - vec_dot against Q8_0 vs a double dot of both sides dequantized;
 *  - the GPTQ hook (fix + round) against the row quantizer and dequantize;
 *  - lb_matmul through the kernel table;
 *  - GGUF: a GQ tensor of inconsistent size is refused, a good one read. */
#include <math.h>

#include "core/common.h"
#include "formats/gq.h"
#include "gguf/gguf.h"
#include "kernels/dispatch.h"
#include "test_matmul_util.h"
#include "test_gguf_build.h"
#include "test_util.h"

typedef struct {
    int type;
    const char *name;
    int bits, group;
    size_t size;
    double bpw;
} gq_want;

static const gq_want kTypes[12] = {
    {LB_TYPE_GQ4_G128, "GQ4_G128", 4, 128, 68, 4.25}, {LB_TYPE_GQ4_G64, "GQ4_G64", 4, 64, 72, 4.5},
    {LB_TYPE_GQ4_G32, "GQ4_G32", 4, 32, 76, 4.75},    {LB_TYPE_GQ4_G16, "GQ4_G16", 4, 16, 88, 5.5},
    {LB_TYPE_GQ3_G128, "GQ3_G128", 3, 128, 52, 3.25}, {LB_TYPE_GQ3_G64, "GQ3_G64", 3, 64, 56, 3.5},
    {LB_TYPE_GQ3_G32, "GQ3_G32", 3, 32, 60, 3.75},    {LB_TYPE_GQ3_G16, "GQ3_G16", 3, 16, 72, 4.5},
    {LB_TYPE_GQ2_G128, "GQ2_G128", 2, 128, 36, 2.25}, {LB_TYPE_GQ2_G64, "GQ2_G64", 2, 64, 40, 2.5},
    {LB_TYPE_GQ2_G32, "GQ2_G32", 2, 32, 44, 2.75},    {LB_TYPE_GQ2_G16, "GQ2_G16", 2, 16, 56, 3.5},
};

/* ---- block field access, written from the layout in gq.h ---- */
static float blk_s(const uint8_t *blk, const gq_want *w, int gi) {
    lb_fp16 h;
    memcpy(&h, blk + 16 * w->bits + 2 * gi, 2);
    return lb_fp16_to_f32(h);
}
static int blk_z(const uint8_t *blk, const gq_want *w, int gi) {
    return blk[16 * w->bits + 2 * (128 / w->group) + gi];
}
static void put_s(uint8_t *blk, const gq_want *w, int gi, float s) {
    const lb_fp16 h = lb_f32_to_fp16(s);
    memcpy(blk + 16 * w->bits + 2 * gi, &h, 2);
}
/* ---- sizes, names, helpers ---- */
static void test_geometry(void) {
    for (int i = 0; i < 12; i++) {
        const gq_want *w = &kTypes[i];
        CHECK(w->type == 1030 + i);
        const lb_type_traits *t = lb_traits(w->type);
        CHECK_MSG(t != NULL, "%s has no traits", w->name);
        if (!t) continue;
        CHECK_MSG(!strcmp(t->name, w->name) && t->blck == 128 && t->type_size == w->size && t->is_quantized &&
                      t->vec_dot_type == LB_TYPE_Q8_0 && t->to_float && t->from_float && t->vec_dot,
                  "%s traits", w->name);
        CHECK_MSG(lb_type_bits_per_weight(w->type) == w->bpw, "%s: %.4f bpw", w->name,
                  lb_type_bits_per_weight(w->type));
        CHECK(lb_gq_bits(w->type) == w->bits && lb_gq_group(w->type) == w->group);
        CHECK(lb_gq_type(w->bits, w->group) == w->type);
        CHECK(lb_type_from_name(w->name) == w->type);
        CHECK(lb_row_size(w->type, 640) == 5 * w->size);
        const lb_grid *g = lb_gq_grid(w->type);
        CHECK(g && g->width == w->group && g->fix && g->round);
        /* rows of 128k stay; others fall back to Q8_0 (F16 when not even 32 fits) */
        CHECK(lb_type_fallback(w->type, 256) == w->type);
        CHECK(lb_type_fallback(w->type, 64) == LB_TYPE_Q8_0 && lb_type_fallback(w->type, 288) == LB_TYPE_Q8_0);
        CHECK(lb_type_fallback(w->type, 48) == LB_TYPE_F16);
        const lb_kernel *k = lb_kernel_get(w->type);
        char want[32];
        snprintf(want, sizeof want, "%s_q8_0_ref", w->name);
        for (char *c = want; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        CHECK_MSG(k && !strcmp(k->name, want) && k->act_type == LB_TYPE_Q8_0 && k->vec_dot == t->vec_dot &&
                      k->quantize_act == lb_quantize_row_q8_0_ref,
                  "%s kernel %s", w->name, k ? k->name : "none");
        for (lb_isa l = LB_ISA_SCALAR; l <= LB_ISA_AMX; l++) CHECK(lb_kernel_get_at(w->type, l) == k);
    }
    CHECK(sizeof(block_gq4_g128) == 68 && sizeof(block_gq3_g64) == 56 && sizeof(block_gq2_g16) == 56);
    CHECK(lb_type_from_name("GQ3_G64") == LB_TYPE_GQ3_G64 && lb_type_from_name("gq3_g64") == LB_TYPE_GQ3_G64);
    CHECK(lb_type_from_name("GQ3_G8") == -1 && lb_type_from_name("GQ5_G128") == -1);
    CHECK(lb_gq_type(5, 128) == -1 && lb_gq_type(4, 256) == -1 && lb_gq_type(1, 16) == -1);
    CHECK(lb_gq_bits(LB_TYPE_Q4_0) == 0 && lb_gq_group(LB_TYPE_CB2) == 0 && lb_gq_bits(1029) == 0 &&
          lb_gq_bits(1042) == 0);
    CHECK(lb_gq_traits(1029) == NULL && lb_gq_traits(1042) == NULL && lb_gq_grid(LB_TYPE_Q4_0) == NULL);
    CHECK(lb_traits(1024) == NULL && lb_traits(1029) == NULL && lb_traits(1054) == NULL);
    /* 1042-1053: the interleaved _QG layouts (formats/repack_qg.h), not GQ types themselves */
    CHECK(lb_traits(1042) != NULL && lb_gq_bits(1053) == 0);
    /* not GQ: lb_gq_quantize_row leaves the output alone */
    float x[128] = {1.0f};
    uint8_t y[68];
    memset(y, 0xAB, sizeof y);
    lb_gq_quantize_row(LB_TYPE_Q4_0, x, y, 128, 0);
    CHECK(y[0] == 0xAB && y[67] == 0xAB);
}

/* ---- packing ---- */

/* AutoGPTQ's pack loops for one block of 128 codes, on words. */
static void pack_autogptq(const int *q, int bits, uint32_t *w) {
    memset(w, 0, 4 * (size_t)bits * 4);
    if (bits != 3) {
        const int per = 32 / bits;
        for (int j = 0; j < 128; j++) w[j / per] |= (uint32_t)q[j] << (bits * (j % per));
        return;
    }
    int i = 0, row = 0;
    while (row < 12) {
        for (int j = i; j < i + 10; j++) w[row] |= (uint32_t)q[j] << (3 * (j - i));
        i += 10;
        w[row] |= (uint32_t)q[i] << 30;
        row++;
        w[row] |= ((uint32_t)q[i] >> 2) & 1;
        i++;
        for (int j = i; j < i + 10; j++) w[row] |= (uint32_t)q[j] << (3 * (j - i) + 1);
        i += 10;
        w[row] |= (uint32_t)q[i] << 31;
        row++;
        w[row] |= ((uint32_t)q[i] >> 1) & 3;
        i++;
        for (int j = i; j < i + 10; j++) w[row] |= (uint32_t)q[j] << (3 * (j - i) + 2);
        i += 10;
        row++;
    }
}

static void test_packing(void) {
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int bits = 2; bits <= 4; bits++) {
        const int maxq = (1 << bits) - 1;
        for (int rep = 0; rep < 50; rep++) {
            uint32_t blk[16], ref[16];
            int q[128];
            for (int i = 0; i < 16; i++) blk[i] = (uint32_t)lb_test_rand(&seed); /* garbage: set must clear */
            for (int j = 0; j < 128; j++) q[j] = (int)(lb_test_rand(&seed) % (uint64_t)(maxq + 1));
            for (int j = 0; j < 128; j++) lb_gq_set_code(blk, bits, j, q[j]);
            int same = 1;
            for (int j = 0; j < 128; j++) same &= lb_gq_get_code(blk, bits, j) == q[j];
            CHECK_MSG(same, "%d-bit codes round trip", bits);
            pack_autogptq(q, bits, ref);
            CHECK_MSG(!memcmp(blk, ref, 4 * (size_t)bits * 4), "%d-bit words differ from AutoGPTQ's packing", bits);
        }
        /* setting one code leaves its neighbours alone, straddling ones included */
        uint32_t blk[16] = {0};
        for (int j = 0; j < 128; j++) lb_gq_set_code(blk, bits, j, maxq);
        const int probe[] = {0, 10, 11, 21, 22, 31, 32, 42, 53, 127};
        for (size_t p = 0; p < sizeof probe / sizeof probe[0]; p++) {
            lb_gq_set_code(blk, bits, probe[p], 0);
            int ok = 1;
            for (int j = 0; j < 128; j++) ok &= lb_gq_get_code(blk, bits, j) == (j == probe[p] ? 0 : maxq);
            CHECK_MSG(ok, "%d-bit: clearing code %d", bits, probe[p]);
            lb_gq_set_code(blk, bits, probe[p], maxq);
        }
        for (int i = bits * 4; i < 16; i++) CHECK(blk[i] == 0); /* nothing past qs[4b] */
    }
    /* the 3-bit straddles by hand: 101b at weight 10 of each 32 is bits 30-31
     * of word 0 (01) + bit 0 of word 1 (1); 101b at weight 21 is bit 31 of
     * word 1 (1) + bits 0-1 of word 2 (10) */
    for (int c = 0; c < 4; c++) {
        uint32_t blk[12] = {0};
        lb_gq_set_code(blk, 3, 32 * c + 10, 5);
        CHECK(blk[3 * c] == 1u << 30 && blk[3 * c + 1] == 1u && blk[3 * c + 2] == 0);
        memset(blk, 0, sizeof blk);
        lb_gq_set_code(blk, 3, 32 * c + 21, 5);
        CHECK(blk[3 * c] == 0 && blk[3 * c + 1] == 1u << 31 && blk[3 * c + 2] == 2u);
        blk[3 * c] = 3u << 30;
        blk[3 * c + 1] = 1u | 1u << 31;
        CHECK(lb_gq_get_code(blk, 3, 32 * c + 10) == 7 && lb_gq_get_code(blk, 3, 32 * c + 21) == 5);
        CHECK(lb_gq_get_code(blk, 3, 32 * c + 9) == 0 && lb_gq_get_code(blk, 3, 32 * c + 11) == 0);
    }
}

/* ---- dequantization of hand-built blocks ---- */
static void test_dequant_known(void) {
    /* codes j % 2^b, written as literal words (computed outside this code) */
    static const uint32_t w4[2] = {0x76543210u, 0xfedcba98u};
    static const uint32_t w3[3] = {0x88fac688u, 0xc688fac6u, 0xfac688fau};
    for (int i = 0; i < 12; i++) {
        const gq_want *w = &kTypes[i];
        const int ng = 128 / w->group, maxq = (1 << w->bits) - 1;
        uint8_t blk[88];
        memset(blk, 0, sizeof blk);
        for (int k = 0; k < 4 * w->bits; k++) {
            const uint32_t v = w->bits == 4 ? w4[k % 2] : w->bits == 3 ? w3[k % 3] : 0xe4e4e4e4u;
            memcpy(blk + 4 * k, &v, 4);
        }
        for (int gi = 0; gi < ng; gi++) {
            put_s(blk, w, gi, 0.25f * (float)(gi + 1) * (gi % 2 ? -1.0f : 1.0f));
            blk[16 * w->bits + 2 * ng + gi] = (uint8_t)((3 * gi + 1) % (maxq + 1));
        }
        float y[128];
        lb_traits(w->type)->to_float(blk, y, 128);
        int exact = 1;
        for (int j = 0; j < 128; j++) {
            const int gi = j / w->group;
            const double s = 0.25 * (gi + 1) * (gi % 2 ? -1.0 : 1.0);
            const double want = s * ((j % (maxq + 1)) - (3 * gi + 1) % (maxq + 1));
            exact &= (double)y[j] == want;
        }
        CHECK_MSG(exact, "%s: hand-built block", w->name);
    }
    /* GQ4_G128, s = 0.5, z = 8, codes 0..15: -4 .. 3.5 by halves */
    uint8_t b[68] = {0};
    for (int k = 0; k < 16; k++) memcpy(b + 4 * k, &w4[k % 2], 4);
    put_s(b, &kTypes[0], 0, 0.5f);
    b[66] = 8;
    float y[128];
    lb_dequantize_row_gq4_g128(b, y, 128);
    CHECK(y[0] == -4.0f && y[8] == 0.0f && y[15] == 3.5f && y[16] == -4.0f && y[127] == 3.5f);
}

/* ---- quantize ---- */

/* Max over the row of |x - y| / (s/2) for the weights inside their grid's
 * span (1 = at the bound); a weight outside it (the range search clips
 * extremes) must land on the grid's end: else 1e9. */
static double worst_ratio(const gq_want *w, const float *x, const uint8_t *q, const float *y, int64_t k, int sym) {
    double worst = 0.0;
    const int maxq = (1 << w->bits) - 1;
    for (int64_t j = 0; j < k; j++) {
        const uint8_t *blk = q + (size_t)(j / 128) * w->size;
        const int gi = (int)(j % 128) / w->group;
        const double s = blk_s(blk, w, gi);
        const int z = blk_z(blk, w, gi);
        if (z > maxq || (sym && z != (maxq + 1) / 2)) return 1e9;
        const double lo = s * (0 - z), hi = s * (maxq - z);
        if (s > 0 && (x[j] < lo - 0.5 * s || x[j] > hi + 0.5 * s)) {
            if ((double)y[j] != (x[j] < lo ? lo : hi)) return 1e9;
            continue;
        }
        const double e = fabs((double)x[j] - (double)y[j]);
        const double r = s > 0 ? e / (0.5 * s) : (e == 0 ? 0 : 1e9);
        if (r > worst) worst = r;
    }
    return worst;
}

/* Squared error of the row against GPTQ's plain min/max grid per group (no
 * range search, fp32 scale), written out here. */
static double minmax_sq_error(const gq_want *w, const float *x, int64_t k, int sym) {
    const int maxq = (1 << w->bits) - 1;
    double e = 0.0;
    for (int64_t g0 = 0; g0 < k; g0 += w->group) {
        float lo = 0, hi = 0;
        for (int j = 0; j < w->group; j++) lo = fminf(lo, x[g0 + j]), hi = fmaxf(hi, x[g0 + j]);
        const float s = sym ? 2.0f * fmaxf(-lo, hi) / maxq : (hi - lo) / maxq;
        const int z = sym ? (maxq + 1) / 2 : (s > 0 ? (int)rintf(-lo / s) : 0);
        for (int j = 0; j < w->group; j++) {
            int c = s > 0 ? (int)rintf(x[g0 + j] / s) + z : z;
            c = c < 0 ? 0 : c > maxq ? maxq : c;
            const double d = x[g0 + j] - (double)s * (c - z);
            e += d * d;
        }
    }
    return e;
}

static void test_quantize(void) {
    enum { K = 512, NB = K / 128 };
    uint64_t seed = 42;
    float x[K], y[K];
    uint8_t q[NB * 88];
    const float mags[] = {1e-3f, 0.02f, 1.0f, 300.0f};
    double sq_gain = 0.0;
    int n_gain = 0;
    for (int i = 0; i < 12; i++) {
        const gq_want *w = &kTypes[i];
        for (int sym = 0; sym <= 1; sym++) {
            double worst = 0;
            for (size_t m = 0; m < sizeof mags / sizeof mags[0]; m++) {
                for (int j = 0; j < K; j++) {
                    const float u = lb_test_randf(&seed);
                    /* mixed signs, some groups all positive or all negative */
                    x[j] = mags[m] * (j / 64 % 4 == 1 ? fabsf(u) : j / 64 % 4 == 2 ? -fabsf(u) : u * u * u);
                }
                lb_gq_quantize_row(w->type, x, q, K, sym);
                lb_traits(w->type)->to_float(q, y, K);
                const double r = worst_ratio(w, x, q, y, K, sym);
                if (r > worst) worst = r;
                double e = 0.0;
                for (int j = 0; j < K; j++) e += ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
                const double e_mm = minmax_sq_error(w, x, K, sym);
                if (e > 1.02 * e_mm + 1e-30) worst = fmax(worst, 1e6);
                sq_gain += e_mm / (e + 1e-30), n_gain++;
            }
            CHECK_MSG(worst <= 1.0 + 1e-5, "%s %s: error %.6f of s/2 (1e6: more squared error than min/max)",
                      w->name, sym ? "sym" : "asym", worst);
        }
        /* from_float is the asymmetric quantizer */
        for (int j = 0; j < K; j++) x[j] = lb_test_randf(&seed);
        uint8_t q2[NB * 88];
        lb_gq_quantize_row(w->type, x, q, K, 0);
        lb_traits(w->type)->from_float(x, q2, K);
        CHECK(!memcmp(q, q2, NB * w->size));
        /* the padding is zero */
        for (int b = 0; b < NB; b++)
            for (size_t p = 16 * w->bits + 3 * (128 / w->group); p < w->size; p++) CHECK(q[b * w->size + p] == 0);

        /* special groups, both quantizers */
        for (int sym = 0; sym <= 1; sym++) {
            const int maxq = (1 << w->bits) - 1;
            /* all zero: s = 0, zeros back, no NaN */
            float xz[128] = {0}, yz[128];
            uint8_t b[88];
            lb_gq_quantize_row(w->type, xz, b, 128, sym);
            lb_traits(w->type)->to_float(b, yz, 128);
            int ok = 1;
            for (int j = 0; j < 128; j++) ok &= yz[j] == 0.0f && !signbit(yz[j]);
            for (int gi = 0; gi < 128 / w->group; gi++) ok &= blk_s(b, w, gi) == 0.0f;
            CHECK_MSG(ok, "%s %s: all-zero group", w->name, sym ? "sym" : "asym");
            /* constant groups, positive and negative: within s/2, not zero */
            for (int sg = -1; sg <= 1; sg += 2) {
                float xc[128], yc[128];
                for (int j = 0; j < 128; j++) xc[j] = 0.37f * (float)sg;
                lb_gq_quantize_row(w->type, xc, b, 128, sym);
                lb_traits(w->type)->to_float(b, yc, 128);
                CHECK_MSG(worst_ratio(w, xc, b, yc, 128, sym) <= 1.0 + 1e-5 && yc[0] != 0.0f && yc[0] == yc[127],
                          "%s %s: constant %g -> %g", w->name, sym ? "sym" : "asym", xc[0], yc[0]);
                if (!sym) CHECK(blk_z(b, w, 0) == (sg > 0 ? 0 : maxq));
            }
            /* one outlier in an otherwise zero group: zeros stay exactly zero */
            for (int sg = -1; sg <= 1; sg += 2) {
                float xo[128] = {0}, yo[128];
                xo[5] = 10.0f * (float)sg;
                xo[127] = -3.0f * (float)sg;
                lb_gq_quantize_row(w->type, xo, b, 128, sym);
                lb_traits(w->type)->to_float(b, yo, 128);
                int zero_ok = 1;
                for (int j = 0; j < 128; j++)
                    if (j != 5 && j != 127) zero_ok &= yo[j] == 0.0f;
                CHECK_MSG(zero_ok && worst_ratio(w, xo, b, yo, 128, sym) <= 1.0 + 1e-5,
                          "%s %s: outlier %g -> %g", w->name, sym ? "sym" : "asym", xo[5], yo[5]);
            }
            /* NaN, infinities, huge values: finite output, no crash */
            float xn[128], yn[128];
            for (int j = 0; j < 128; j++) xn[j] = lb_test_randf(&seed);
            xn[3] = NAN;
            xn[40] = INFINITY;
            xn[77] = -INFINITY;
            xn[100] = 3e38f;
            lb_gq_quantize_row(w->type, xn, b, 128, sym);
            lb_traits(w->type)->to_float(b, yn, 128);
            int finite = 1;
            for (int j = 0; j < 128; j++) finite &= isfinite(yn[j]);
            CHECK_MSG(finite && yn[3] == 0.0f, "%s %s: non-finite input (NaN -> %g)", w->name, sym ? "sym" : "asym",
                      yn[3]);
            /* tiny values (scale below fp16's smallest normal) */
            for (int j = 0; j < 128; j++) xn[j] = 1e-7f * lb_test_randf(&seed);
            lb_gq_quantize_row(w->type, xn, b, 128, sym);
            lb_traits(w->type)->to_float(b, yn, 128);
            CHECK_MSG(worst_ratio(w, xn, b, yn, 128, sym) <= 1.0 + 1e-5, "%s %s: tiny values", w->name,
                      sym ? "sym" : "asym");
        }
    }
    printf("range search: squared error %.2fx lower than plain min/max on average (random rows, all types)\n",
           sq_gain / n_gain);
}

/* ---- vec_dot ---- */
static void test_vec_dot(void) {
    const int64_t Ks[] = {128, 256, 640, 2048};
    uint64_t seed = 7;
    for (int i = 0; i < 12; i++) {
        const gq_want *w = &kTypes[i];
        for (size_t ki = 0; ki < 4; ki++) {
            const int64_t K = Ks[ki];
            float *x = malloc(sizeof(float) * K), *a = malloc(sizeof(float) * K);
            float *wd = malloc(sizeof(float) * K), *ad = malloc(sizeof(float) * K);
            uint8_t *wq = malloc((size_t)(K / 128) * w->size);
            block_q8_0 *aq = malloc(sizeof(block_q8_0) * (size_t)(K / 32));
            for (int rep = 0; rep < 4; rep++) {
                for (int64_t j = 0; j < K; j++) {
                    x[j] = lb_test_randf(&seed) * (rep == 3 ? 0.01f : 1.0f);
                    a[j] = lb_test_randf(&seed) * (j % 97 == 0 ? 8.0f : 1.0f);
                }
                lb_gq_quantize_row(w->type, x, wq, K, rep % 2);
                lb_quantize_row_q8_0_ref(a, aq, K);
                lb_traits(w->type)->to_float(wq, wd, K);
                lb_dequantize_row_q8_0(aq, ad, K);
                double ref = 0, mag = 0;
                for (int64_t j = 0; j < K; j++) {
                    ref += (double)wd[j] * (double)ad[j];
                    mag += fabs((double)wd[j] * (double)ad[j]);
                }
                float got = NAN;
                lb_traits(w->type)->vec_dot(K, &got, wq, aq);
                /* relative to the magnitude of the terms (the sum itself may cancel) */
                CHECK_MSG(fabs(got - ref) <= 1e-5 * mag, "%s K=%lld: %.9g vs %.9g (terms %.3g)", w->name,
                          (long long)K, got, ref, mag);
            }
            free(x), free(a), free(wd), free(ad), free(wq), free(aq);
        }
    }
}

/* ---- GPTQ hook ---- */
static void test_grid(void) {
    enum { K = 256 };
    uint64_t seed = 99;
    for (int i = 0; i < 12; i++) {
        const gq_want *w = &kTypes[i];
        const lb_grid *g = lb_gq_grid(w->type);
        if (!g) continue;
        float x[K], v[K], y[K];
        uint8_t ref[2 * 88], got[2 * 88];
        for (int j = 0; j < K; j++) x[j] = lb_test_randf(&seed) * (j % 50 == 0 ? 4.0f : 1.0f);
        lb_gq_quantize_row(w->type, x, ref, K, 0);
        /* fix then round every column, blk = each block, col within the row */
        memset(got, 0, sizeof got);
        for (int col = 0; col < K; col++) {
            uint8_t *blk = got + (size_t)(col / 128) * w->size;
            if (col % g->width == 0) g->fix(blk, col, x + col, NULL);
            v[col] = g->round(blk, col, x[col]);
        }
        CHECK_MSG(!memcmp(got, ref, 2 * w->size), "%s: fix + round differ from the row quantizer", w->name);
        lb_traits(w->type)->to_float(got, y, K);
        CHECK_MSG(!memcmp(v, y, sizeof v), "%s: round's values differ from dequantize", w->name);
        /* GPTQ rounds error-corrected values, not the ones fix saw: still
         * exactly what dequantize gives (col within the block this time) */
        memset(got, 0, sizeof got);
        for (int col = 0; col < K; col++) {
            uint8_t *blk = got + (size_t)(col / 128) * w->size;
            if (col % g->width == 0) g->fix(blk, col % 128, x + col, NULL);
            const float xr = x[col] + 0.3f * lb_test_randf(&seed) + (col % 37 == 0 ? 100.0f : 0.0f);
            v[col] = g->round(blk, col % 128, xr);
        }
        lb_traits(w->type)->to_float(got, y, K);
        CHECK_MSG(!memcmp(v, y, sizeof v), "%s: round's values (perturbed) differ from dequantize", w->name);
        /* an all-zero group: round gives 0 for anything */
        memset(got, 0, sizeof got);
        float zeros[128] = {0};
        g->fix(got, 0, zeros, NULL);
        CHECK(g->round(got, 0, 5.0f) == 0.0f && g->round(got, 1, -5.0f) == 0.0f);
    }
}

/* ---- lb_matmul through the kernel table ---- */
static void test_matmul(void) {
    enum { K = 384, N = 12, M = 3 };
    uint64_t seed = 5;
    for (int i = 0; i < 12; i++) {
        const gq_want *w = &kTypes[i];
        float *wf = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
        uint8_t *wq = malloc((size_t)N * (K / 128) * w->size);
        block_q8_0 aq[K / 32];
        for (int j = 0; j < K * N; j++) wf[j] = lb_test_randf(&seed);
        for (int j = 0; j < K * M; j++) x[j] = lb_test_randf(&seed);
        const size_t rs = lb_row_size(w->type, K);
        for (int n = 0; n < N; n++) lb_traits(w->type)->from_float(wf + n * K, wq + n * rs, K);
        for (int nth = 1; nth <= 2; nth++) {
            float *y = lb_test_matmul(w->type, wq, K, N, x, M, nth);
            int same = 1;
            double worst = 0;
            float wd[K];
            for (int m = 0; m < M; m++) {
                lb_quantize_row_q8_0_ref(x + m * K, aq, K);
                for (int n = 0; n < N; n++) {
                    float r;
                    lb_traits(w->type)->vec_dot(K, &r, wq + n * rs, aq);
                    same &= y[m * N + n] == r;
                    /* and close to the float product of the dequantized weights */
                    lb_traits(w->type)->to_float(wq + n * rs, wd, K);
                    double d = 0, mag = 0;
                    for (int j = 0; j < K; j++) {
                        d += (double)wd[j] * x[m * K + j];
                        mag += fabs((double)wd[j] * x[m * K + j]);
                    }
                    const double e = fabs(y[m * N + n] - d) / mag;
                    if (!(e <= worst)) worst = e;
                }
            }
            CHECK_MSG(same, "%s: lb_matmul (%d threads) differs from vec_dot", w->name, nth);
            CHECK_MSG(worst < 0.02, "%s: lb_matmul off the float product by %.4f of the terms", w->name, worst);
            free(y);
        }
        free(wf), free(x), free(wq);
    }
}

/* ---- GGUF: the reader's size checks hold for GQ tensors ---- */
static void test_gguf(void) {
    uint32_t type = 0;
    uint64_t size = 0;
    CHECK(lb_test_open_one(LB_TYPE_GQ3_G64, 256, 2, 4 * 56, &type, &size) == LB_OK && type == LB_TYPE_GQ3_G64 &&
          size == 4 * 56);
    CHECK_MSG(lb_test_refused(LB_TYPE_GQ4_G128, 64, 2, 256, "not a multiple of the GQ4_G128 block size 128"),
              "row of 64: %s", lb_last_error());
    CHECK_MSG(lb_test_refused(LB_TYPE_GQ2_G16, 256, 3, 3 * 2 * 56 - 1, "past end"), "short data: %s", lb_last_error());
    /* the id after the last GQ type's _QG layout */
    CHECK_MSG(lb_test_refused(1054, 256, 1, 256, "unknown type 1054"), "id 1054: %s", lb_last_error());
}

int main(void) {
    test_geometry();
    test_packing();
    test_dequant_known();
    test_quantize();
    test_vec_dot();
    test_grid();
    test_matmul();
    test_gguf();
    return lb_test_result("test_gq");
}
