/* MX tiles (formats/mx.h), seed 002's first layer:
 *  - eq. (10) and the stored bits against hand-computed values, and the
 *    2-bit tile's size equal to eq. (10) exactly;
 *  - eq. (9) on a hand-computed case;
 *  - dequantization of hand-packed tiles (layout written out here from the
 *    header's description, half-step zeros included), exact;
 *  - quantize: random tiles within a stated error, the whole 2-bit tile
 *    (4-bit second-order scales, half-step zeros, range search) below the
 *    squared error of fp32 first-order scales with integer zeros, second-
 *    order zeros in use, all-zero and non-finite tiles;
 *  - the dot with Q8_0 against a double dot of both sides dequantized;
 *  - one matrix: shape and parameter errors, the 4-bit groups chosen by
 *    eq. (9) (with and without an H^-1 diagonal), no outliers = the tiles
 *    quantized one by one, outliers within budget, only in 2-bit groups,
 *    exact, sorted, and lowering the error; the stored bits. */
#include <math.h>

#include "core/fp16.h"
#include "formats/mx.h"
#include "test_util.h"

static void test_bits(void) {
    /* eq. (10), g1 = g2 = 16, Ns = 4: 2 + 6/16 + 20/256 = 2.453125; 25 % in 4 bits: 0.75 * 2.453125 + 1 */
    CHECK(lb_mx_bpw_eq10(1.0, 16, 16, 4) == 2.453125);
    CHECK(lb_mx_bpw_eq10(0.75, 16, 16, 4) == 2.83984375);
    CHECK(lb_mx_bpw_eq10(0.0, 16, 16, 4) == 4.0);
    /* the 2-bit tile is eq. (10) to the bit */
    CHECK(sizeof(block_mx2) * 8.0 / (LB_MX_ROWS * LB_MX_M) == lb_mx_bpw_eq10(1.0, 16, 16, 4));
    CHECK(sizeof(block_mx4) * 8.0 / (LB_MX_ROWS * LB_MX_M) == 4.625);
    /* N = 16, K = 64, one group of two in 4 bits, 3 outliers:
     * 157*8 + 296*8 tiles + 2 map bytes + 3*32 outliers + 17*32 row pointers */
    CHECK(lb_mx_bits(16, 64, 1, 3) == 1256 + 2368 + 16 + 96 + 544);
    /* no outliers: no row pointers either */
    CHECK(lb_mx_bits(32, 64, 0, 0) == 2 * 2 * 1256 + 16);
}

static void test_sensitivity(void) {
    /* N = 2, K = 4, M = 2: S0 = 1/1 + 4/4 + 0 + 1/4 = 2.25, S1 = 9/0.25 + 16/1 + 0 + 4/1 = 56 */
    const float W[8] = {1, 2, 3, 4, 0, 1, 0, -2}, hinv[4] = {1, 2, 0.5f, 1};
    double S[2];
    lb_mx_sensitivity(W, 2, 4, 2, hinv, S);
    CHECK_MSG(S[0] == 2.25 && S[1] == 56.0, "S = %g %g", S[0], S[1]);
}

/* ---- hand packing, from the layout in mx.h ---- */
static void put2(uint8_t *p, int i, int v) { p[i / 4] |= (uint8_t)(v << (2 * (i % 4))); }
static void put4(uint8_t *p, int i, int v) { p[i / 2] |= (uint8_t)(v << (4 * (i % 2))); }

static void test_hand_tiles(void) {
    block_mx2 b;
    memset(&b, 0, sizeof b);
    const lb_fp16 s2a = lb_f32_to_fp16(0.25f), s2b = lb_f32_to_fp16(0.5f);
    memcpy(b.s2, &s2a, 2);
    memcpy(b.s2 + 2, &s2b, 2);
    b.z2 = 3 | (1 << 4); /* z2 = 3 (half 0), 1 (half 1) */
    for (int r = 0; r < 16; r++)
        for (int h = 0; h < 2; h++) {
            put4(b.s1, 16 * h + r, (r + h) % 16);
            put2(b.z1, 16 * h + r, (r + 2 * h) % 4);
        }
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 32; c++) /* byte 64h + 4r + i, bits 2t for c = 16h + 4t + i */
            b.qs[64 * (c / 16) + 4 * r + c % 4] |= (uint8_t)(((r * 3 + c) % 4) << (2 * (c % 16 / 4)));
    float Y[16 * 32];
    lb_mx2_dequantize_tile(&b, Y, 32);
    int bad = 0;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 32; c++) {
            const int h = c / 16;
            const float s1 = (h ? 0.5f : 0.25f) * (float)((r + h) % 16 + (h ? 1 : 3));
            /* zero codes 0..3 mean z = 0.5, 1, 1.5, 2 */
            const float want = s1 * ((float)((r * 3 + c) % 4) - 0.5f * (float)((r + 2 * h) % 4 + 1));
            bad += Y[r * 32 + c] != want;
        }
    CHECK_MSG(bad == 0, "mx2 hand tile: %d of 512 differ", bad);

    block_mx4 b4;
    memset(&b4, 0, sizeof b4);
    for (int r = 0; r < 16; r++) {
        b4.s[r] = lb_f32_to_fp16(0.125f * (float)(r + 1));
        put4(b4.z, r, (r * 5) % 16);
        for (int c = 0; c < 32; c++) /* byte 64v + 4r + i, low nibble c = 8v + i, high 8v + 4 + i */
            b4.qs[64 * (c / 8) + 4 * r + c % 4] |= (uint8_t)(((r + 7 * c) % 16) << (4 * (c % 8 / 4)));
    }
    lb_mx4_dequantize_tile(&b4, Y, 32);
    bad = 0;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 32; c++)
            bad += Y[r * 32 + c] != 0.125f * (float)(r + 1) * (float)((r + 7 * c) % 16 - (r * 5) % 16);
    CHECK_MSG(bad == 0, "mx4 hand tile: %d of 512 differ", bad);
}

static void random_tile(uint64_t *seed, float *W, int kind) {
    for (int r = 0; r < 16; r++) {
        const float row_scale = kind == 1 ? 1.0f : 0.2f + 3.0f * (float)((r * 7) % 16) / 16.0f;
        for (int c = 0; c < 32; c++) W[r * 32 + c] = row_scale * lb_test_randf(seed);
    }
    if (kind == 2) W[5 * 32 + 9] = 25.0f; /* one large weight */
}

static void test_quantize_and_dot(void) {
    uint64_t seed = 7;
    float W[16 * 32], Y[16 * 32], Y2[16 * 32];
    double worst2 = 0.0, worst4 = 0.0;
    double worst_ratio = 0.0;
    int second_order_used = 0, dot_bad = 0;
    for (int t = 0; t < 300; t++) {
        random_tile(&seed, W, t % 3);
        block_mx2 b;
        lb_mx2_quantize_tile(W, 32, NULL, &b);
        lb_mx2_dequantize_tile(&b, Y, 32);
        /* per first-order group: error against the group's range / 3 (the
         * ideal scale); the 4-bit scale codes may round it down by up to a
         * 15th of the tile's top scale, which clips the group's extremes
         * (kind 2, one weight 25x the rest, pushes the others' scales to
         * the bottom codes: that is what the outliers are kept out for) */
        double e2 = 0.0, e1 = 0.0;
        for (int r = 0; r < 16; r++)
            for (int h = 0; h < 2; h++) {
                float mn = 0, mx = 0, e = 0;
                for (int c = 16 * h; c < 16 * h + 16; c++) {
                    mn = fminf(mn, W[r * 32 + c]), mx = fmaxf(mx, W[r * 32 + c]);
                    e = fmaxf(e, fabsf(W[r * 32 + c] - Y[r * 32 + c]));
                }
                if (t % 3 != 2) worst2 = fmax(worst2, e / ((mx - mn) / 3.0f));
                /* first order only (fp32 scale, no 4-bit codes) for comparison */
                const float sc = (mx - mn) / 3.0f;
                const int z = (int)lrintf(-mn / sc);
                for (int c = 16 * h; c < 16 * h + 16; c++) {
                    int q = (int)lrintf(W[r * 32 + c] / sc) + z;
                    q = q < 0 ? 0 : q > 3 ? 3 : q;
                    const double d1 = W[r * 32 + c] - sc * (q - z), d2 = W[r * 32 + c] - Y[r * 32 + c];
                    e1 += d1 * d1, e2 += d2 * d2;
                }
            }
        if (t % 3 != 2) worst_ratio = fmax(worst_ratio, e2 / e1);
        second_order_used += (b.z2 & 15) != 0 || (b.z2 >> 4) != 0;

        block_mx4 b4;
        lb_mx4_quantize_tile(W, 32, &b4);
        lb_mx4_dequantize_tile(&b4, Y2, 32);
        for (int r = 0; r < 16; r++) {
            const float s = lb_fp16_to_f32(b4.s[r]);
            for (int c = 0; c < 32; c++) worst4 = fmax(worst4, fabsf(W[r * 32 + c] - Y2[r * 32 + c]) / s);
        }

        /* dots against Q8_0 activations */
        block_q8_0 a;
        a.d = lb_f32_to_fp16(0.01f + 0.02f * (float)(t % 5));
        for (int c = 0; c < 32; c++) a.qs[c] = (int8_t)((t * 31 + c * 17) % 255 - 127);
        float y2[16] = {0}, y4[16] = {0};
        lb_mx2_dot_tile_ref(&b, &a, y2);
        lb_mx4_dot_tile_ref(&b4, &a, y4);
        for (int r = 0; r < 16; r++) {
            double w2 = 0.0, w4 = 0.0, n2 = 0.0, n4 = 0.0;
            for (int c = 0; c < 32; c++) {
                const double av = (double)lb_fp16_to_f32(a.d) * a.qs[c];
                w2 += (double)Y[r * 32 + c] * av, n2 += fabs((double)Y[r * 32 + c] * av);
                w4 += (double)Y2[r * 32 + c] * av, n4 += fabs((double)Y2[r * 32 + c] * av);
            }
            dot_bad += fabs(y2[r] - w2) > 1e-5 * (n2 + 1e-6) || fabs(y4[r] - w4) > 1e-5 * (n4 + 1e-6);
        }
    }
    /* single weights of small-scale rows can be off by more than their own
     * ideal scale (the 4-bit codes step by s2, set by the tile's top row):
     * bounded loosely, the squared error above is the measure */
    CHECK_MSG(worst2 <= 4.0, "mx2: worst error %.3f of the ideal scale", worst2);
    CHECK_MSG(worst4 <= 0.5 + 1e-4, "mx4: worst error %.4f of s", worst4);
    CHECK_MSG(second_order_used > 0, "second-order zero never above 0");
    CHECK_MSG(worst_ratio <= 1.0, "mx2: squared error %.3fx that of fp32 first-order scales", worst_ratio);
    CHECK_MSG(dot_bad == 0, "%d row dots differ from the dequantized double dot", dot_bad);
    printf("mx2 worst error %.3f of the group's ideal scale, squared error up to %.3fx that of fp32 scales; "
           "mx4 %.4f of s\n", worst2, worst_ratio, worst4);

    /* all zero and non-finite: finite zeros, no crash */
    for (int i = 0; i < 512; i++) W[i] = 0.0f;
    block_mx2 b;
    block_mx4 b4;
    lb_mx2_quantize_tile(W, 32, NULL, &b);
    lb_mx2_dequantize_tile(&b, Y, 32);
    int nz = 0;
    for (int i = 0; i < 512; i++) nz += Y[i] != 0.0f;
    W[3] = NAN, W[40] = INFINITY, W[100] = -INFINITY, W[200] = 1.0f;
    lb_mx2_quantize_tile(W, 32, NULL, &b);
    lb_mx2_dequantize_tile(&b, Y, 32);
    lb_mx4_quantize_tile(W, 32, &b4);
    lb_mx4_dequantize_tile(&b4, Y2, 32);
    int nonfinite = 0;
    for (int i = 0; i < 512; i++) nonfinite += !isfinite(Y[i]) || !isfinite(Y2[i]);
    CHECK(nz == 0);
    CHECK(nonfinite == 0);
}

static double sq_err(const float *a, const float *b, int64_t n) {
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return e;
}

static void test_matrix(void) {
    lb_mx_matrix m;
    lb_mx_params p = lb_mx_default_params();
    CHECK(p.hi_frac == 0.25f && p.outlier_frac == 0.002f);
    float small[16 * 32] = {0};
    CHECK(lb_mx_quantize(small, 15, 32, NULL, NULL, &p, &m) == LB_ERR_SHAPE);
    CHECK(lb_mx_quantize(small, 16, 31, NULL, NULL, &p, &m) == LB_ERR_SHAPE);
    p.hi_frac = 1.5f;
    CHECK(lb_mx_quantize(small, 16, 32, NULL, NULL, &p, &m) == LB_ERR_ARG);

    /* N = 48, K = 320 (10 groups): groups 3 and 7 have 4x and 3x the
     * weights, so with 20 % in 4 bits they are the ones; an H^-1 diagonal
     * of 0.1 on group 1 (eq. (9) divides by its square: 100x) puts it first,
     * and 7 out */
    const int64_t N = 48, K = 320, G = K / 32;
    float *W = malloc(sizeof(float) * N * K), *Y = malloc(sizeof(float) * N * K), *Y0 = malloc(sizeof(float) * N * K),
          *hinv = malloc(sizeof(float) * K);
    uint64_t seed = 99;
    for (int64_t r = 0; r < N; r++)
        for (int64_t c = 0; c < K; c++) {
            const int64_t g = c / 32;
            W[r * K + c] = (g == 3 ? 4.0f : g == 7 ? 3.0f : 1.0f) * lb_test_randf(&seed);
        }
    for (int64_t c = 0; c < K; c++) hinv[c] = c / 32 == 1 ? 0.1f : 1.0f;
    p = lb_mx_default_params();
    p.hi_frac = 0.2f, p.outlier_frac = 0.0f;
    CHECK_OK(lb_mx_quantize(W, N, K, NULL, NULL, &p, &m));
    CHECK(m.n_hi == 2 && m.n_out == 0);
    int map_ok = 1;
    for (int64_t g = 0; g < G; g++) map_ok &= lb_mx_is_hi(&m, g) == (g == 3 || g == 7);
    CHECK_MSG(map_ok, "eq. (9) with H^-1 = I picks groups 3 and 7");
    /* no outliers: exactly the tiles, each quantized on its own */
    lb_mx_dequantize(&m, Y0);
    int tiles_bad = 0;
    for (int64_t t = 0; t < N / 16; t++)
        for (int64_t g = 0; g < G; g++) {
            float tile[16 * 32];
            block_mx2 b2;
            block_mx4 b4;
            if (g == 3 || g == 7) lb_mx4_quantize_tile(W + t * 16 * K + g * 32, (size_t)K, &b4), lb_mx4_dequantize_tile(&b4, tile, 32);
            else lb_mx2_quantize_tile(W + t * 16 * K + g * 32, (size_t)K, NULL, &b2), lb_mx2_dequantize_tile(&b2, tile, 32);
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 32; c++) tiles_bad += tile[r * 32 + c] != Y0[(t * 16 + r) * K + g * 32 + c];
        }
    CHECK_MSG(tiles_bad == 0, "%d weights differ from tile-by-tile quantization", tiles_bad);
    const uint64_t bits0 = lb_mx_bits(N, K, m.n_hi, m.n_out);
    CHECK(bits0 == (uint64_t)(N / 16) * (8 * 157 + 2 * 296) * 8 + 8 * (uint64_t)G); /* no outliers, no row pointers */
    lb_mx_free(&m);

    CHECK_OK(lb_mx_quantize(W, N, K, hinv, NULL, &p, &m));
    CHECK_MSG(lb_mx_is_hi(&m, 1) && lb_mx_is_hi(&m, 3) && !lb_mx_is_hi(&m, 7), "eq. (9) with the H^-1 diagonal");
    lb_mx_free(&m);

    /* spikes (0.5 % of the 2-bit groups' weights, 10x) and 1 % outliers:
     * within budget, only in 2-bit groups, each its weight after
     * dequantization (to fp16's rounding of the residual it stores), and
     * less error than without */
    for (int64_t i = 0; i < N * K; i += 211)
        if ((i % K) / 32 != 3 && (i % K) / 32 != 7) W[i] *= 10.0f;
    p.outlier_frac = 0.0f;
    CHECK_OK(lb_mx_quantize(W, N, K, NULL, NULL, &p, &m));
    lb_mx_dequantize(&m, Y0);
    lb_mx_free(&m);
    p.outlier_frac = 0.01f;
    CHECK_OK(lb_mx_quantize(W, N, K, NULL, NULL, &p, &m));
    lb_mx_dequantize(&m, Y);
    const int64_t budget = (int64_t)(0.01 * N * K);
    CHECK_MSG(m.n_out > 0 && m.n_out <= budget, "%lld outliers for a budget of %lld", (long long)m.n_out, (long long)budget);
    int out_bad = 0;
    for (int64_t r = 0; r < N; r++)
        for (uint32_t o = m.row_ptr[r]; o < m.row_ptr[r + 1]; o++) {
            const int c = m.out_col[o];
            /* dense code + the fp16 of what it misses: within fp16's rounding of the residual */
            const float res = lb_fp16_to_f32(m.out_val[o]);
            out_bad += lb_mx_is_hi(&m, c / 32) || fabsf(Y[r * K + c] - W[r * K + c]) > 1e-3f * fabsf(res) + 1e-7f ||
                       (o > m.row_ptr[r] && c <= m.out_col[o - 1]);
        }
    CHECK_MSG(out_bad == 0, "%d outliers misplaced or not exact", out_bad);
    const double e0 = sq_err(W, Y0, N * K), e1 = sq_err(W, Y, N * K);
    CHECK_MSG(e1 < 0.9 * e0, "1 %% outliers: squared error %g against %g without", e1, e0);
    printf("MX 48 x 320 with spikes, 20 %% in 4 bits: squared error %.4g, with 1 %% outliers %.4g; %.4f bits per weight stored\n",
           e0, e1, (double)lb_mx_bits(N, K, m.n_hi, m.n_out) / (double)(N * K));
    lb_mx_free(&m);
    free(W), free(Y), free(Y0), free(hinv);
}

/* ---- a file's pieces: every check of lb_mx_view_make, and the view's
 * dequantization equal to the matrix's ---- */
static int rejects(const lb_mx_parts *p, const char *want) {
    lb_mx_view *v = NULL;
    const lb_status s = lb_mx_view_make(p, &v);
    const int ok = s == LB_ERR_FORMAT && !v && strstr(lb_last_error(), want) != NULL;
    if (!ok) fprintf(stderr, "  want an error with '%s', got status %d: %s\n", want, (int)s, lb_last_error());
    lb_free_aligned(v);
    return ok;
}

static void test_pieces(void) {
    uint64_t seed = 99;
    const int64_t N = 32, K = 128, G = K / 32, T = N / 16;
    float *W = malloc(sizeof(float) * N * K), *Y = malloc(sizeof(float) * N * K), *Z = malloc(sizeof(float) * N * K);
    for (int64_t i = 0; i < N * K; i++) W[i] = lb_test_randf(&seed) * (i % 97 == 0 ? 8.0f : 1.0f);
    lb_mx_matrix m;
    lb_mx_params p = lb_mx_default_params();
    p.hi_frac = 0.25f, p.outlier_frac = 0.01f;
    CHECK_OK(lb_mx_quantize(W, N, K, NULL, NULL, &p, &m));
    CHECK(m.n_hi == 1 && m.n_out > 0);
    uint8_t map[4];
    uint32_t *rows = malloc(4 * (N + 1)), *words = malloc(4 * (size_t)(m.n_out + 2));
    lb_mx_map_bytes(&m, map);
    memcpy(rows, m.row_ptr, 4 * (N + 1));
    lb_mx_outlier_words(&m, words);
    const lb_mx_parts good = {N, K, map, m.lo, m.hi, (uint64_t)(T * (G - 1)) * 157, (uint64_t)T * 296,
                              rows, N + 1, words, m.n_out + 2};
    lb_mx_view *v = NULL;
    CHECK_OK(lb_mx_view_make(&good, &v));
    if (v) {
        CHECK(v->n_lo == 3 && v->n_hi == 1 && v->n_cap == m.n_out + 2);
        lb_mx_view_dequantize(v, Y);
        lb_mx_dequantize(&m, Z);
        CHECK_MSG(!memcmp(Y, Z, sizeof(float) * N * K), "the view dequantizes as the matrix");
        /* bytes: tiles, one map byte per group, row pointers and the outlier words with their capacity */
        CHECK(v->bytes == (uint64_t)(T * 3 * 157 + T * 296 + G + 4 * (N + 1) + 4 * (m.n_out + 2)));
        lb_free_aligned(v);
    }
    lb_mx_parts p2;
    int rej = 0;
    const int hi_g = map[0] ? 0 : map[1] ? 1 : map[2] ? 2 : 3, lo_g = hi_g ? 0 : 1;
    p2 = good, p2.N = 24;
    rej += rejects(&p2, "whole tiles");
    map[lo_g] = 2, rej += rejects(&good, "group map entry"), map[lo_g] = 0;
    {
        uint8_t all[4] = {1, 1, 1, 1};
        p2 = good, p2.map = all;
        rej += rejects(&p2, "no 2-bit group");
    }
    p2 = good, p2.lo_bytes -= 157;
    rej += rejects(&p2, "2-bit tiles");
    p2 = good, p2.hi = NULL;
    rej += rejects(&p2, "4-bit tiles");
    p2 = good, p2.n_row_ptr = N;
    rej += rejects(&p2, "row pointers for");
    p2 = good, p2.row_ptr = NULL;
    rej += rejects(&p2, "no row pointers");
    rows[0] = 1, rej += rejects(&good, "first outlier row pointer"), rows[0] = 0;
    p2 = good, p2.n_cap = rows[N] - 1;
    rej += rejects(&p2, "past the");
    /* a row whose pointers go backwards */
    int64_t r1 = 0;
    while (r1 < N && rows[r1 + 1] == rows[r1]) r1++;
    const uint32_t keep = rows[r1 + 1];
    rows[r1 + 1] = rows[r1] - 1;
    if (rows[r1] > 0) rej += rejects(&good, "out of order");
    else rej++;
    rows[r1 + 1] = keep;
    /* outlier words: a column past the row, in the 4-bit group, out of order, not finite */
    const uint32_t w0 = words[rows[r1]];
    words[rows[r1]] = (w0 & 0xffff0000u) | (uint32_t)K, rej += rejects(&good, "past the row's");
    words[rows[r1]] = (w0 & 0xffff0000u) | (uint32_t)(hi_g * 32 + 3), rej += rejects(&good, "4-bit group");
    words[rows[r1]] = (w0 & 0xffff0000u) | 0x7c00u << 16, rej += rejects(&good, "finite"); /* +inf in the value */
    words[rows[r1]] = w0;
    if (rows[r1 + 1] - rows[r1] >= 2) {
        const uint32_t w1 = words[rows[r1] + 1];
        words[rows[r1] + 1] = (w1 & 0xffff0000u) | (w0 & 0xffffu), rej += rejects(&good, "increasing column");
        words[rows[r1] + 1] = w1;
    } else rej++;
    CHECK_MSG(rej == 14, "%d of 14 malformed piece sets rejected with their reason", rej);
    CHECK_OK(lb_mx_view_make(&good, &v)); /* everything restored */
    lb_free_aligned(v);
    lb_mx_free(&m);
    free(W), free(Y), free(Z), free(rows), free(words);
}

/* the ablation without second-order scales: fp16 first-order scales fit
 * at least as well as the stored 4-bit codes, and the matrix uses them */
static void test_fp16_scales(void) {
    uint64_t seed = 5;
    float W[16 * 32], Y[16 * 32];
    double e4 = 0, e16 = 0;
    for (int t = 0; t < 100; t++) {
        random_tile(&seed, W, t % 2);
        block_mx2 b;
        lb_fp16 s1[32];
        lb_mx2_quantize_tile(W, 32, NULL, &b);
        lb_mx2_dequantize_tile(&b, Y, 32);
        for (int i = 0; i < 512; i++) e4 += (W[i] - Y[i]) * (W[i] - Y[i]);
        lb_mx2_quantize_tile_fp16(W, 32, NULL, &b, s1);
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 32; c++) {
                const float y = lb_fp16_to_f32(s1[16 * (c / 16) + r]) * ((float)lb_mx2_q(&b, r, c) - lb_mx2_zero(&b, c / 16, r));
                e16 += (W[r * 32 + c] - y) * (W[r * 32 + c] - y);
            }
    }
    CHECK_MSG(e16 <= e4, "fp16 first-order scales: squared error %g, 4-bit second-order %g", e16, e4);
    const int64_t N = 32, K = 96;
    float *M = malloc(sizeof(float) * N * K), *D = malloc(sizeof(float) * N * K);
    for (int64_t i = 0; i < N * K; i++) M[i] = lb_test_randf(&seed);
    lb_mx_params p = lb_mx_default_params();
    p.fp16_scales = 1;
    lb_mx_matrix m;
    CHECK_OK(lb_mx_quantize(M, N, K, NULL, NULL, &p, &m));
    CHECK(m.s1 != NULL);
    lb_mx_dequantize(&m, D);
    double e = 0, n = 0;
    for (int64_t i = 0; i < N * K; i++) e += (M[i] - D[i]) * (M[i] - D[i]), n += M[i] * M[i];
    CHECK_MSG(e < 0.05 * n, "fp16-scale matrix: relative squared error %g", e / n);
    lb_mx_view *v = NULL;
    CHECK(lb_mx_view_of_matrix(&m, &v) == LB_ERR_ARG && !v); /* no kernel reads it */
    lb_mx_free(&m);
    free(M), free(D);
}

int main(void) {
    test_bits();
    test_sensitivity();
    test_hand_tiles();
    test_quantize_and_dot();
    test_matrix();
    test_pieces();
    test_fp16_scales();
    return lb_test_result("test_mx");
}
