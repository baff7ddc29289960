/* K-quants (Q2_K..Q6_K, Q8_K), IQ4_NL and IQ4_XS reference routines:
 *  - traits (block size, bytes, bits per weight, activation type);
 *  - dequantization of hand-built blocks against a decoder written here
 *    straight from the documented bit layouts (random bytes, exact scales);
 *  - quantize -> dequantize error on Gaussian and Student-t data, relative to
 *    the data's RMS, against per-type bounds (measured, then given margin);
 *  - vec_dot == dot of the dequantized weights and activations;
 *  - edge cases: all-zero, one huge outlier, constant, tiny, NaN/Inf input. */
#include <math.h>

#include "formats/kquants.h"
#include "test_util.h"

#define NBLK 64 /* super-blocks of 256 per random test vector */
#define N (NBLK * QK_K)

/* ---- random data ---- */
static double gauss(uint64_t *s) {
    double u1 = ((lb_test_rand(s) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (lb_test_rand(s) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static double student_t5(uint64_t *s) { /* heavy tails, like real weights */
    double v = 0;
    for (int i = 0; i < 5; i++) {
        const double z = gauss(s);
        v += z * z;
    }
    return gauss(s) / sqrt(v / 5.0);
}

/* ---- an independent decoder: value of weight w (0..255) of one block ---- */
static int bits(const uint8_t *p, int byte, int shift, int width) {
    return (p[byte] >> shift) & ((1 << width) - 1);
}
/* Q3_K's 6-bit scale j: low nibble in byte j%8 (high half for j >= 8), top
 * two bits in byte 8 + j%4 at bit 2*(j/4). */
static int q3_scale(const uint8_t *s, int j) {
    return bits(s, j % 8, j < 8 ? 0 : 4, 4) | (bits(s, 8 + j % 4, 2 * (j / 4), 2) << 4);
}
/* Q4_K/Q5_K 6-bit scale (which=0) or min (which=1) of group j. */
static int k4_scale(const uint8_t *s, int j, int which) {
    if (j < 4) return bits(s, j + 4 * which, 0, 6);
    return bits(s, j + 4, 4 * which, 4) | (bits(s, j - 4 + 4 * which, 6, 2) << 4);
}
/* 2-bit quants of Q2_K/Q3_K: byte 32*(w/128) + w%32, bits 2*((w%128)/32). */
static int q2_bits(const uint8_t *qs, int w) {
    return bits(qs, 32 * (w / 128) + w % 32, 2 * ((w % 128) / 32), 2);
}
static double decode_one(int type, const void *blk, int w) {
    switch (type) {
    case LB_TYPE_Q2_K: {
        const block_q2_K *b = blk;
        const int sc = b->scales[w / 16] & 0xF, m = b->scales[w / 16] >> 4;
        return (double)lb_fp16_to_f32(b->d) * sc * q2_bits(b->qs, w) -
               (double)lb_fp16_to_f32(b->dmin) * m;
    }
    case LB_TYPE_Q3_K: {
        const block_q3_K *b = blk;
        const int q = q2_bits(b->qs, w) - (bits(b->hmask, w % 32, w / 32, 1) ? 0 : 4);
        return (double)lb_fp16_to_f32(b->d) * (q3_scale(b->scales, w / 16) - 32) * q;
    }
    case LB_TYPE_Q4_K:
    case LB_TYPE_Q5_K: {
        const int q5 = type == LB_TYPE_Q5_K;
        const block_q4_K *b4 = blk;
        const block_q5_K *b5 = blk;
        const uint8_t *scales = q5 ? b5->scales : b4->scales, *qs = q5 ? b5->qs : b4->qs;
        int q = bits(qs, 32 * (w / 64) + w % 32, 4 * ((w % 64) / 32), 4);
        if (q5) q += 16 * bits(b5->qh, w % 32, w / 32, 1);
        const double d = lb_fp16_to_f32(q5 ? b5->d : b4->d);
        const double dmin = lb_fp16_to_f32(q5 ? b5->dmin : b4->dmin);
        return d * k4_scale(scales, w / 32, 0) * q - dmin * k4_scale(scales, w / 32, 1);
    }
    case LB_TYPE_Q6_K: {
        const block_q6_K *b = blk;
        const int half = w / 128, r = (w % 128) / 32, l = w % 32;
        const int lo = bits(b->ql, 64 * half + l + 32 * (r & 1), 4 * (r >> 1), 4);
        const int hi = bits(b->qh, 32 * half + l, 2 * r, 2);
        return (double)lb_fp16_to_f32(b->d) * b->scales[w / 16] * ((lo | (hi << 4)) - 32);
    }
    case LB_TYPE_Q8_K: {
        const block_q8_K *b = blk;
        return (double)b->d * b->qs[w];
    }
    case LB_TYPE_IQ4_NL: {
        const block_iq4_nl *b = blk;
        return (double)lb_fp16_to_f32(b->d) * lb_kvalues_iq4nl[bits(b->qs, w % 16, 4 * (w / 16), 4)];
    }
    case LB_TYPE_IQ4_XS: { /* 6-bit scale of block w/32: nibble, then 2 bits of scales_h */
        const block_iq4_xs *b = blk;
        const int ib = w / 32;
        const int ls = bits(b->scales_l, ib / 2, 4 * (ib % 2), 4) | (((b->scales_h >> 2 * ib) & 3) << 4);
        const int q = bits(b->qs, 16 * ib + w % 16, 4 * ((w % 32) / 16), 4);
        return (double)lb_fp16_to_f32(b->d) * (ls - 32) * lb_kvalues_iq4nl[q];
    }
    }
    return NAN;
}

static const int TYPES[] = {LB_TYPE_Q2_K, LB_TYPE_Q3_K, LB_TYPE_Q4_K, LB_TYPE_Q5_K,
                            LB_TYPE_Q6_K, LB_TYPE_Q8_K, LB_TYPE_IQ4_NL, LB_TYPE_IQ4_XS};
#define NTYPES ((int)(sizeof TYPES / sizeof TYPES[0]))

static void test_traits(void) {
    static const struct { int type; const char *name; int blck; size_t size; double bpw; int act; } want[] = {
        {LB_TYPE_Q2_K, "Q2_K", 256, 84, 2.625, LB_TYPE_Q8_K},
        {LB_TYPE_Q3_K, "Q3_K", 256, 110, 3.4375, LB_TYPE_Q8_K},
        {LB_TYPE_Q4_K, "Q4_K", 256, 144, 4.5, LB_TYPE_Q8_K},
        {LB_TYPE_Q5_K, "Q5_K", 256, 176, 5.5, LB_TYPE_Q8_K},
        {LB_TYPE_Q6_K, "Q6_K", 256, 210, 6.5625, LB_TYPE_Q8_K},
        {LB_TYPE_Q8_K, "Q8_K", 256, 292, 9.125, LB_TYPE_Q8_K},
        {LB_TYPE_IQ4_NL, "IQ4_NL", 32, 18, 4.5, LB_TYPE_Q8_0},
        {LB_TYPE_IQ4_XS, "IQ4_XS", 256, 136, 4.25, LB_TYPE_Q8_K},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lb_type_traits *t = lb_traits(want[i].type);
        CHECK_MSG(t != NULL, "no traits for %s", want[i].name);
        if (!t) continue;
        CHECK(strcmp(t->name, want[i].name) == 0);
        CHECK(t->blck == want[i].blck && t->type_size == want[i].size && t->is_quantized == 1);
        CHECK(t->vec_dot_type == want[i].act);
        CHECK(t->to_float && t->from_float && t->vec_dot);
        CHECK(lb_type_from_name(want[i].name) == want[i].type);
        CHECK(lb_type_bits_per_weight(want[i].type) == want[i].bpw);
        CHECK(lb_row_size(want[i].type, 512) == 512 / want[i].blck * want[i].size);
    }
    CHECK(lb_kquant_traits(LB_TYPE_Q4_0) == NULL && lb_kquant_traits(12345) == NULL);
}

/* Random bytes with exactly representable scales, decoded both ways. */
static void test_hand_built_blocks(void) {
    uint64_t s = 42;
    for (int ti = 0; ti < NTYPES; ti++) {
        const int type = TYPES[ti];
        const lb_type_traits *t = lb_traits(type);
        uint8_t blk[sizeof(block_q8_K)];
        float out[QK_K];
        for (int rep = 0; rep < 20; rep++) {
            for (size_t i = 0; i < t->type_size; i++) blk[i] = (uint8_t)lb_test_rand(&s);
            /* powers of two keep every product exact, so results must match exactly */
            const lb_fp16 d = lb_f32_to_fp16(ldexpf(1.0f, (int)(lb_test_rand(&s) % 9) - 6));
            const lb_fp16 dmin = lb_f32_to_fp16(ldexpf(1.0f, (int)(lb_test_rand(&s) % 9) - 6));
            switch (type) {
            case LB_TYPE_Q2_K: ((block_q2_K *)blk)->d = d; ((block_q2_K *)blk)->dmin = dmin; break;
            case LB_TYPE_Q3_K: ((block_q3_K *)blk)->d = d; break;
            case LB_TYPE_Q4_K: ((block_q4_K *)blk)->d = d; ((block_q4_K *)blk)->dmin = dmin; break;
            case LB_TYPE_Q5_K: ((block_q5_K *)blk)->d = d; ((block_q5_K *)blk)->dmin = dmin; break;
            case LB_TYPE_Q6_K: ((block_q6_K *)blk)->d = d; break;
            case LB_TYPE_Q8_K: ((block_q8_K *)blk)->d = lb_fp16_to_f32(d); break;
            case LB_TYPE_IQ4_NL: ((block_iq4_nl *)blk)->d = d; break;
            case LB_TYPE_IQ4_XS: ((block_iq4_xs *)blk)->d = d; break;
            }
            t->to_float(blk, out, t->blck);
            int bad = 0;
            for (int w = 0; w < t->blck; w++) bad += (double)out[w] != decode_one(type, blk, w);
            CHECK_MSG(bad == 0, "%s: %d of %d values differ from the layout decoder", t->name, bad,
                      t->blck);
        }
    }

    /* A few literal blocks. Q4_K: d=1, dmin=0.5, all scales 1, all mins 2,
     * every byte 0x21 -> groups alternate 1*1-0.5*2 = 0 and 1*2-1 = 1. */
    block_q4_K q4 = {0};
    q4.d = lb_f32_to_fp16(1.0f);
    q4.dmin = lb_f32_to_fp16(0.5f);
    const uint8_t ls[8] = {1, 1, 1, 1, 1, 1, 1, 1}, lm[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    lb_pack_scale_min_k4(ls, lm, q4.scales);
    memset(q4.qs, 0x21, sizeof q4.qs);
    float y[QK_K];
    lb_dequantize_row_q4_K(&q4, y, QK_K);
    for (int w = 0; w < QK_K; w++) CHECK(y[w] == ((w / 32) % 2 ? 1.0f : 0.0f));

    /* Q6_K: d=0.5, scale of group g = g-8, every 6-bit quant 33 -> (g-8)*0.5. */
    block_q6_K q6;
    q6.d = lb_f32_to_fp16(0.5f);
    for (int g = 0; g < 16; g++) q6.scales[g] = (int8_t)(g - 8);
    memset(q6.ql, 0x11, sizeof q6.ql); /* low nibbles 1 */
    memset(q6.qh, 0xAA, sizeof q6.qh); /* high bits 2 -> q = 1 | 2<<4 = 33 */
    lb_dequantize_row_q6_K(&q6, y, QK_K);
    for (int w = 0; w < QK_K; w++) CHECK(y[w] == 0.5f * (float)(w / 16 - 8));

    /* Q3_K: d=1, all scales 33 (-> 1), quants 3 with the high bit set -> 3,
     * without -> -1. */
    block_q3_K q3;
    q3.d = lb_f32_to_fp16(1.0f);
    memset(q3.qs, 0xFF, sizeof q3.qs);
    memset(q3.hmask, 0x0F, sizeof q3.hmask); /* weights 0..127 have it, 128..255 not */
    memset(q3.scales, 0, sizeof q3.scales);
    for (int j = 0; j < 8; j++) q3.scales[j] = 0x11; /* low nibbles 1, top bits 0 ... */
    for (int j = 8; j < 12; j++) q3.scales[j] = 0xAA; /* ... top bits 2 -> 33 */
    lb_dequantize_row_q3_K(&q3, y, QK_K);
    for (int w = 0; w < QK_K; w++) CHECK(y[w] == (w < 128 ? 3.0f : -1.0f));

    /* IQ4_NL: d=2, index i at weight i and i+16 -> 2*kvalues[i]. */
    block_iq4_nl nl;
    nl.d = lb_f32_to_fp16(2.0f);
    for (int i = 0; i < 16; i++) nl.qs[i] = (uint8_t)(i | (i << 4));
    lb_dequantize_row_iq4_nl(&nl, y, QK4_NL);
    for (int i = 0; i < 32; i++) CHECK(y[i] == 2.0f * lb_kvalues_iq4nl[i % 16]);

    /* IQ4_XS: d=0.5, block ib's 6-bit scale 32+ib-4 (so -4..3; 0 for ib 4),
     * every byte 0xF0 -> weights 0..15 of a block index 0 (-127), 16..31
     * index 15 (113). */
    block_iq4_xs xs;
    xs.d = lb_f32_to_fp16(0.5f);
    xs.scales_h = 0;
    for (int ib = 0; ib < 8; ib++) {
        const int ls = 32 + ib - 4;
        if (ib % 2 == 0) xs.scales_l[ib / 2] = (uint8_t)(ls & 0xF);
        else xs.scales_l[ib / 2] |= (uint8_t)((ls & 0xF) << 4);
        xs.scales_h |= (uint16_t)((ls >> 4) << 2 * ib);
    }
    memset(xs.qs, 0xF0, sizeof xs.qs);
    lb_dequantize_row_iq4_xs(&xs, y, QK_K);
    for (int w = 0; w < QK_K; w++)
        CHECK(y[w] == 0.5f * (float)(w / 32 - 4) * (w % 32 < 16 ? -127.0f : 113.0f));
}

/* Quantize -> dequantize; returns the error RMS relative to the data RMS. */
static double rel_rmse(int type, const float *x, int64_t n) {
    const lb_type_traits *t = lb_traits(type);
    void *q = malloc((size_t)(n / t->blck) * t->type_size);
    float *y = malloc((size_t)n * sizeof(float));
    t->from_float(x, q, n);
    t->to_float(q, y, n);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
        sx += (double)x[i] * x[i];
    }
    free(q);
    free(y);
    return sx > 0 ? sqrt(se / sx) : sqrt(se);
}

static void test_roundtrip_error(void) {
    /* Measured relative RMSE (N(0, 0.02^2) / 0.02 * Student-t nu=5, 64 blocks):
     *           Q2_K  Q3_K  Q4_K  Q5_K   Q6_K   Q8_K   IQ4_NL IQ4_XS
     * gaussian  .302  .152  .0718 .0364  .0181  .0071  .0763  .0769
     * student   .331  .177  .0831 .0420  .0213  .0114  .0884  .0893
     * The bounds give ~20% margin. These are the format's (and ggml's) own
     * errors: our quantizers produce llama.cpp's bytes (see test_interop). */
    static const struct { int type; double gauss, student; } bound[] = {
        {LB_TYPE_Q2_K, 0.37, 0.40},    {LB_TYPE_Q3_K, 0.185, 0.215},
        {LB_TYPE_Q4_K, 0.088, 0.10},   {LB_TYPE_Q5_K, 0.045, 0.052},
        {LB_TYPE_Q6_K, 0.022, 0.026},  {LB_TYPE_Q8_K, 0.0088, 0.014},
        {LB_TYPE_IQ4_NL, 0.093, 0.108},    {LB_TYPE_IQ4_XS, 0.093, 0.108},
    };
    float *g = malloc(N * sizeof(float)), *st = malloc(N * sizeof(float));
    uint64_t s = 7;
    for (int i = 0; i < N; i++) g[i] = (float)(0.02 * gauss(&s));
    for (int i = 0; i < N; i++) st[i] = (float)(0.02 * student_t5(&s));
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++) {
        const double eg = rel_rmse(bound[i].type, g, N), es = rel_rmse(bound[i].type, st, N);
        printf("%-6s relative RMSE: gaussian %.4f  student-t %.4f\n", lb_type_name(bound[i].type),
               eg, es);
        CHECK_MSG(eg < bound[i].gauss, "%s gaussian %.4f", lb_type_name(bound[i].type), eg);
        CHECK_MSG(es < bound[i].student, "%s student-t %.4f", lb_type_name(bound[i].type), es);
    }
    free(g);
    free(st);
}

/* vec_dot must equal the dot of what the blocks decode to (weights and
 * activations), up to float summation error. */
static void test_vec_dot(void) {
    float *w = malloc(N * sizeof(float)), *a = malloc(N * sizeof(float));
    float *wd = malloc(N * sizeof(float)), *ad = malloc(N * sizeof(float));
    uint8_t *wq = malloc(N * 2), *aq = malloc(N * 2);
    uint64_t s = 99;
    for (int ti = 0; ti < NTYPES; ti++) {
        const lb_type_traits *t = lb_traits(TYPES[ti]), *at = lb_traits(t->vec_dot_type);
        for (int rep = 0; rep < 4; rep++) {
            /* rep 3 shifts the weights so the min terms of Q2_K/Q4_K/Q5_K matter */
            for (int i = 0; i < N; i++) w[i] = (float)(student_t5(&s) + (rep == 3 ? 2.0 : 0.0));
            for (int i = 0; i < N; i++) a[i] = (float)gauss(&s);
            const int64_t n = rep == 0 ? QK_K : N; /* one block and many */
            t->from_float(w, wq, n);
            at->from_float(a, aq, n);
            t->to_float(wq, wd, n);
            at->to_float(aq, ad, n);
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                ref += (double)wd[i] * ad[i];
                mag += fabs((double)wd[i] * ad[i]);
            }
            float got = NAN;
            t->vec_dot(n, &got, wq, aq);
            CHECK_MSG(fabs(got - ref) <= 2e-7 * mag, "%s vec_dot %g vs %g (|terms| %g)", t->name,
                      (double)got, ref, mag);
        }
    }
    /* Q8_K's bsums are the sums of its groups of 16. */
    block_q8_K q8[2];
    for (int i = 0; i < 2 * QK_K; i++) a[i] = (float)gauss(&s);
    lb_quantize_row_q8_K_ref(a, q8, 2 * QK_K);
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += q8[b].qs[16 * j + l];
            CHECK(q8[b].bsums[j] == sum);
        }
    free(w), free(a), free(wd), free(ad), free(wq), free(aq);
}

static double max_abs_err(const float *x, const float *y, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)x[i] - y[i]));
    return m;
}

static void test_edge_cases(void) {
    float x[QK_K], y[QK_K];
    uint64_t s = 5;
    for (int ti = 0; ti < NTYPES; ti++) {
        const lb_type_traits *t = lb_traits(TYPES[ti]);
        const int n = QK_K; /* whole number of blocks for every type */
        uint8_t *qb = malloc((size_t)(n / t->blck) * t->type_size);

        /* All zero: decodes to exact zeros. */
        memset(x, 0, sizeof x);
        t->from_float(x, qb, n);
        t->to_float(qb, y, n);
        int nonzero = 0;
        for (int i = 0; i < n; i++) nonzero += y[i] != 0.0f;
        CHECK_MSG(nonzero == 0, "%s: all-zero input gives %d nonzero values", t->name, nonzero);

        /* Constant: every value close to it (a K-quant min or scale step). */
        for (int sign = -1; sign <= 1; sign += 2) {
            for (int i = 0; i < n; i++) x[i] = 0.37f * (float)sign;
            t->from_float(x, qb, n);
            t->to_float(qb, y, n);
            const double err = max_abs_err(x, y, n);
            CHECK_MSG(err <= 0.37 * 0.02, "%s: constant %g decodes with error %g", t->name,
                      0.37 * sign, err);
        }

        /* One huge outlier among small Gaussian values: the outlier survives
         * (within 2% of itself) and nothing turns non-finite. */
        for (int i = 0; i < n; i++) x[i] = (float)(0.01 * gauss(&s));
        x[77] = 1000.0f;
        t->from_float(x, qb, n);
        t->to_float(qb, y, n);
        int finite = 1;
        for (int i = 0; i < n; i++) finite &= isfinite(y[i]) != 0;
        CHECK_MSG(finite && fabsf(y[77] - 1000.0f) <= 20.0f, "%s: outlier 1000 decodes to %g",
                  t->name, (double)y[77]);

        /* Tiny values (far below fp16's range) and garbage must not crash. */
        for (int i = 0; i < n; i++) x[i] = (float)(1e-30 * gauss(&s));
        t->from_float(x, qb, n);
        t->to_float(qb, y, n);
        finite = 1;
        for (int i = 0; i < n; i++) finite &= isfinite(y[i]) != 0;
        CHECK_MSG(finite, "%s: tiny input decodes to non-finite values", t->name);
        x[3] = NAN;
        x[9] = INFINITY;
        x[10] = -INFINITY;
        t->from_float(x, qb, n); /* result unspecified; must just be memory-safe */
        t->to_float(qb, y, n);
        free(qb);
    }
}

int main(void) {
    test_traits();
    test_hand_built_blocks();
    test_roundtrip_error();
    test_vec_dot();
    test_edge_cases();
    return lb_test_result("test_kquants");
}
