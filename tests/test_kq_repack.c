/* The 16-row layouts of the 256-weight super-block formats (Q2_K_16X4,
 * CB2_16X4, CB3_16X4; formats/repack.h) and every GEMV / GEMM kernel on
 * them, at every ISA level this CPU has, against the references.
 *
 *  layout:  traits and ids; every documented bit position checked by hand;
 *           repack -> unpack restores the bytes (plain tail when N % 16);
 *           group to_float == the base dequantization.
 *  acts:    lb_quantize_q8_Kx4_ref == lb_quantize_row_q8_K_ref per row (d,
 *           qs, the bsum forms); each level's 4-row quantizer == the ref.
 *  ref:     the scalar reference GEMV / GEMM on repacked rows == the plain
 *           reference dot on the unpacked rows, bit for bit.
 *  exact:   unit scales (Q2_K d = dmin = 1; CB d = 1) and integer
 *           activations whose Q8_K scale is +-1, so every output is an
 *           integer below 2^24 that every kernel must produce exactly (the
 *           table lookups, the folded Q2_K scales, the min pairs, the CB
 *           scale extraction and -64 * bsum offsets, bit for bit); also
 *           extreme blocks (all scales / mins 15, q = 3, centroids -64 and
 *           63, activations -128 / 127) straight into the kernels.
 *  float:   random weights (the formats' own quantizers) and activations
 *           through lb_matmul (4-row groups + GEMV tail, row split, plain
 *           tail rows when N % 16 != 0, 1 and 2 threads) against the plain
 *           reference dot in double on dequantized values. Tolerance:
 *           |y - ref| <= 2e-6 * sum|w_i a_i| (integer sums are exact; only
 *           the float scaling and summation order differ).
 *  shapes:  K = 256, 512, 2816 (11 super-blocks), 16896 (66: the GEMV's
 *           second pass over K); M = 1..17, 32, 48; N = 5 (all plain), 16,
 *           40, 48, 100, 112 (1-3 vectors of 16 rows, tails of 8 and 4).
 *  books:   CB2 and CB3 with 4, 8 and 16 books (the three scale widths and,
 *           for CB3 with 16, the 128-entry table).
 *  gating:  without AVX-512 VBMI the AVX-512 entries are not handed out;
 *           Q2_K then takes the AVX2 kernel (repacked at load), CB2 / CB3
 *           keep the plain layout. */
#include "test_util.h"

#include "formats/cb.h"
#include "formats/repack.h"
#include "kernels/dispatch.h"
#include "test_matmul_util.h"
#include "model/repack.h"

static const int kTypes[3] = {LB_TYPE_Q2_K_16X4, LB_TYPE_CB2_16X4, LB_TYPE_CB3_16X4};
static const char *kNames[3] = {"Q2_K_16X4", "CB2_16X4", "CB3_16X4"};
static const int kBases[3] = {LB_TYPE_Q2_K, LB_TYPE_CB2, LB_TYPE_CB3};
#define TOL 2e-6

static double worst = 0.0;

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX,
                                 LB_ISA_NEON,   LB_ISA_DOTPROD, LB_ISA_I8MM};
enum { N_LEVELS = sizeof kLevels / sizeof kLevels[0] };

static size_t bsize(int base) { return lb_traits(base)->type_size; }

/* Books with count C for k centroids: ascending, in [lo, hi], the first
 * book from lo and the last to hi. lo, hi = -64, 63: the extremes of the
 * format; -L, L with L = 127 / smax: the extremes of narrow books. */
static lb_cb_books make_books_in(int C, int k, int lo, int hi, uint64_t seed) {
    lb_cb_books b;
    memset(&b, 0, sizeof b);
    b.count = C;
    b.k = k;
    const int spread = LB_MAX(1, (hi - lo - 7) / k);
    for (int c = 0; c < C; c++) {
        int v = lo + (c ? (int)(lb_test_rand(&seed) % 8) : 0);
        for (int i = 0; i < k; i++) {
            b.v[c][i] = (int8_t)LB_MIN(hi, v);
            v += 1 + (int)(lb_test_rand(&seed) % spread);
        }
        if (c == C - 1) b.v[c][k - 1] = (int8_t)hi;
    }
    return b;
}
static lb_cb_books make_books(int C, int k, uint64_t seed) { return make_books_in(C, k, -64, 63, seed); }
static lb_cb_books make_narrow_books(int C, int k, uint64_t seed) {
    const int L = lb_cb_narrow_limit(C);
    return make_books_in(C, k, -L, L, seed);
}

/* ---- plain rows ---- */

/* Random bytes, with every scale a given fp16 (Q2_K: d and dmin; CB: d). */
static uint8_t *rand_blocks(int base, int64_t K, int64_t N, lb_fp16 d, uint64_t *seed) {
    const size_t bs = bsize(base), n = (size_t)(K / 256) * (size_t)N;
    uint8_t *w = malloc(bs * n);
    for (size_t i = 0; i < bs * n; i++) w[i] = (uint8_t)lb_test_rand(seed);
    for (size_t b = 0; b < n; b++) {
        uint8_t *blk = w + b * bs;
        memcpy(blk + bs - 2, &d, 2);
        if (base == LB_TYPE_Q2_K) memcpy(blk + bs - 4, &d, 2); /* d, dmin */
    }
    return w;
}

/* Weights from the format's quantizer (heavy-ish tails, per-row scales). */
static uint8_t *quant_rows(int base, int64_t K, int64_t N, uint64_t *seed) {
    const size_t rs = lb_row_size(base, K);
    uint8_t *w = malloc(rs * (size_t)N);
    float *row = malloc(sizeof(float) * K);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t i = 0; i < K; i++) {
            const float u = lb_test_randf(seed), v = lb_test_randf(seed);
            row[i] = 0.02f * (float)(1 + n % 5) * u / (0.3f + fabsf(v));
        }
        lb_traits(base)->from_float(row, w + n * rs, K);
    }
    free(row);
    return w;
}

static uint8_t *repacked(int type, const uint8_t *plain, int64_t K, int64_t N) {
    uint8_t *p = malloc(lb_row_size(type, K) * (size_t)N);
    lb_repack_tensor(type, plain, p, K, N);
    return p;
}

/* ---- activations ---- */

/* Integer activations, one +-127 per block of 256 (Q8_K keeps them with d = -+1). */
static float *int_acts(int64_t K, int M, int amp, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) {
        x[i] = (float)((int)(lb_test_rand(seed) % (2 * amp + 1)) - amp);
        if (i % 256 == 77) x[i] = lb_test_rand(seed) & 1 ? 127.0f : -127.0f;
    }
    return x;
}

static float *rand_acts(int64_t K, int M, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) x[i] = lb_test_randf(seed) * (i % 61 == 0 ? 8.0f : 1.0f);
    return x;
}

/* y[m][n] in double from dequantized plain rows and Q8_K activations, and sum |w a|. */
static void reference(int base, const uint8_t *plain, const float *x, int64_t K, int64_t N, int M, double *y,
                      double *mag) {
    const size_t rs = lb_row_size(base, K);
    float *w = malloc(sizeof(float) * K * N), *a = malloc(sizeof(float) * K);
    block_q8_K *q = malloc(sizeof(block_q8_K) * (K / 256));
    for (int64_t n = 0; n < N; n++) lb_traits(base)->to_float(plain + n * rs, w + n * K, K);
    for (int m = 0; m < M; m++) {
        lb_quantize_row_q8_K_ref(x + m * K, q, K);
        lb_dequantize_row_q8_K(q, a, K);
        for (int64_t n = 0; n < N; n++) {
            double s = 0, t = 0;
            for (int64_t i = 0; i < K; i++) {
                s += (double)w[n * K + i] * a[i];
                t += fabs((double)w[n * K + i] * a[i]);
            }
            y[m * N + n] = s;
            mag[m * N + n] = t;
        }
    }
    free(w);
    free(a);
    free(q);
}

/* ---- layout ---- */

static void test_traits(void) {
    for (int i = 0; i < 3; i++) {
        const int T = kTypes[i];
        const lb_type_traits *t = lb_traits(T), *bt = lb_traits(kBases[i]);
        const lb_repack_layout *L = lb_repack_layout_of(T);
        CHECK(t && L);
        if (!t || !L) continue;
        CHECK(T == 1012 + i);
        CHECK(!strcmp(t->name, kNames[i]) && lb_type_from_name(kNames[i]) == T);
        CHECK(t->blck == 256 && t->type_size == bt->type_size && t->vec_dot_type == LB_TYPE_Q8_K);
        CHECK(t->to_float && !t->from_float && !t->vec_dot);
        CHECK(L->base == kBases[i] && L->rows == 16 && L->chunk == 4);
        CHECK(lb_type_base(T) == kBases[i] && lb_type_rows(T) == 16);
        CHECK(lb_repack_find(kBases[i], 16, 4) == T);
        CHECK(lb_row_size(T, 4096) == lb_row_size(kBases[i], 4096));
        CHECK(fabs(lb_type_bits_per_weight(T) - lb_type_bits_per_weight(kBases[i])) < 1e-12);
    }
}

/* Every bit of the documented layout, from the plain blocks. */
static int bit_at(const uint8_t *p, int byte, int shift, int mask) { return (p[byte] >> shift) & mask; }

static void test_positions(void) {
    uint64_t seed = 5;
    for (int i = 0; i < 3; i++) {
        const int base = kBases[i];
        const int64_t K = 512, N = 16;
        const size_t bs = bsize(base), rs = (size_t)(K / 256) * bs;
        uint8_t *plain = rand_blocks(base, K, N, 0x3C00, &seed);
        for (size_t b = 0; b < (size_t)(K / 256) * N; b++) /* distinct scales */
            for (int k = 0; k < 2; k++) plain[b * bs + bs - 2 + k] = (uint8_t)lb_test_rand(&seed) & 0x3F;
        uint8_t *packed = repacked(kTypes[i], plain, K, N);
        int ok = 1;
        for (int b = 0; b < K / 256; b++) {
            const uint8_t *xb = packed + (size_t)b * 16 * bs;
            for (int r = 0; r < 16; r++) {
                const uint8_t *blk = plain + (size_t)r * rs + (size_t)b * bs;
                const uint8_t *qs = base == LB_TYPE_Q2_K ? blk + 16 : blk + 12;
                for (int w = 0; w < 256; w++) {
                    const int q = (qs[32 * (w / 128) + w % 32] >> (2 * ((w % 128) / 32))) & 3;
                    ok &= bit_at(xb, 64 * (w / 16) + 4 * r + w % 4, 2 * ((w % 16) / 4), 3) == q;
                    if (base == LB_TYPE_CB3) {
                        const int h = (qs[64 + w % 32] >> (4 * (w / 128) + (w % 128) / 32)) & 1;
                        const int j = w / 16;
                        ok &= bit_at(xb, 1024 + 64 * (j / 2) + 4 * r + w % 4, 4 * (j % 2) + (w % 16) / 4, 1) == h;
                    }
                }
                if (base == LB_TYPE_Q2_K) {
                    for (int j = 0; j < 16; j++) {
                        const int nb = 64 * (j / 8) + 4 * r + j % 4, sh = 4 * ((j / 4) % 2);
                        ok &= bit_at(xb, 1024 + nb, sh, 15) == (blk[j] & 15);
                        ok &= bit_at(xb, 1152 + nb, sh, 15) == (blk[j] >> 4);
                    }
                    ok &= !memcmp(xb + 1280 + 2 * r, blk + 80, 2) && !memcmp(xb + 1312 + 2 * r, blk + 82, 2);
                } else {
                    uint8_t f[16];
                    lb_cb_unpack_meta(blk, f);
                    const int mo = base == LB_TYPE_CB2 ? 1024 : 1536, dof = base == LB_TYPE_CB2 ? 1216 : 1728;
                    for (int j = 0; j < 16; j++) {
                        ok &= bit_at(xb, mo + 64 * (j / 8) + 4 * r + j % 4, 4 * ((j / 4) % 2), 15) == (f[j] & 15);
                        ok &= bit_at(xb, mo + 128 + 4 * r + j % 4, 2 * (j / 4), 3) == (f[j] >> 4);
                    }
                    ok &= !memcmp(xb + dof + 2 * r, blk + bs - 2, 2);
                }
            }
        }
        CHECK_MSG(ok, "%s: layout differs from formats/repack.h", kNames[i]);
        free(plain);
        free(packed);
    }
}

static void test_roundtrip(void) {
    uint64_t seed = 9;
    const int64_t Ns[] = {16, 21, 40, 5};
    for (int i = 0; i < 3; i++)
        for (size_t ni = 0; ni < 4; ni++) {
            const int base = kBases[i];
            const int64_t K = 768, N = Ns[ni];
            const size_t bytes = lb_row_size(base, K) * (size_t)N;
            uint8_t *plain = rand_blocks(base, K, N, 0x3C00, &seed);
            uint8_t *packed = repacked(kTypes[i], plain, K, N), *back = malloc(bytes);
            lb_unpack_tensor(kTypes[i], packed, back, K, N);
            CHECK_MSG(!memcmp(plain, back, bytes), "%s N=%lld: unpack(repack(x)) != x", kNames[i], (long long)N);
            /* the tail rows are plain */
            const size_t tail = (size_t)(N - N % 16) * lb_row_size(base, K);
            CHECK(!memcmp(plain + tail, packed + tail, bytes - tail));
            if (N >= 16) { /* group to_float == base dequantization */
                float *a = malloc(sizeof(float) * K * 16), *b = malloc(sizeof(float) * K * 16);
                lb_traits(kTypes[i])->to_float(packed, a, K * 16);
                for (int r = 0; r < 16; r++) lb_traits(base)->to_float(plain + r * lb_row_size(base, K), b + r * K, K);
                CHECK_MSG(!memcmp(a, b, sizeof(float) * K * 16), "%s: group to_float differs", kNames[i]);
                free(a);
                free(b);
            }
            free(plain);
            free(packed);
            free(back);
        }
}

/* ---- activations ---- */

static void test_acts(void) {
    uint64_t seed = 4;
    const int64_t K = 2816, nb = K / 256;
    float *x = rand_acts(K, 16, &seed);
    for (int i = 0; i < 256; i++) x[K + i] = 0.0f; /* an all-zero block */
    /* ties: the first element of largest magnitude sets the sign (-7 before +7) */
    for (int i = 0; i < 256; i++) x[2 * K + 256 + i] = (float)(i % 13) * 0.25f;
    x[2 * K + 256 + 40] = -7.0f;
    x[2 * K + 256 + 200] = 7.0f;
    /* scale exactly 1 (max -127): halves round to even */
    for (int i = 0; i < 256; i++) x[3 * K + 512 + i] = (float)((i % 9) - 4) + 0.5f;
    x[3 * K + 512 + 100] = -127.0f;
    lb_block_q8_Kx4 *r = malloc(sizeof *r * nb);
    lb_block_q8_Kx16 *r16 = malloc(sizeof *r16 * nb);
    uint8_t *y = malloc(sizeof *r16 * nb);
    block_q8_K *q = malloc(sizeof *q * nb);
    lb_quantize_q8_Kx4_ref(x, (size_t)K, r, K);
    lb_quantize_q8_Kx16_ref(x, (size_t)K, r16, K);
    int ok = 1;
    for (int m = 0; m < 16; m++) {
        lb_quantize_row_q8_K_ref(x + m * K, q, K);
        for (int b = 0; b < nb; b++) {
            ok &= r16[b].d[m] == q[b].d && !memcmp(r16[b].qs[m], q[b].qs, 256);
            for (int j = 0; j < 16; j++) { /* bf16 digits: 64 h + l = bsum, 0 <= l < 64 */
                float h, l;
                const uint32_t hb = (uint32_t)r16[b].bsd[m][2 * j] << 16, lbits = (uint32_t)r16[b].bsd[m][2 * j + 1] << 16;
                memcpy(&h, &hb, 4);
                memcpy(&l, &lbits, 4);
                ok &= 64.0f * h + l == (float)q[b].bsums[j] && l >= 0.0f && l < 64.0f && h == floorf(h);
            }
            if (m >= 4) continue;
            ok &= r[b].d[m] == q[b].d && !memcmp(r[b].qs[m], q[b].qs, 256);
            int all = 0;
            for (int j = 0; j < 16; j++) ok &= r[b].b64[m][j] == -64 * q[b].bsums[j], all += q[b].bsums[j];
            ok &= r[b].b128[m] == -128 * all;
            for (int p = 0; p < 8; p++) {
                const int lo = p + 4 * (p / 4);
                ok &= r[b].bsp[m][2 * p] == 16 * q[b].bsums[lo] && r[b].bsp[m][2 * p + 1] == q[b].bsums[lo + 4];
            }
        }
    }
    CHECK_MSG(ok, "lb_quantize_q8_Kx4_ref / x16_ref != lb_quantize_row_q8_K_ref per row");
    const unsigned extra = lb_cpu_extra_features();
    for (int t = 0; t < 3; t++)
        for (int li = 0; li < N_LEVELS; li++) {
            if (!lb_test_level_available(kLevels[li])) continue;
            const lb_kernel *k = lb_kernel_get_at(kTypes[t], kLevels[li]);
            CHECK(k && k->gemv && k->gemm && !k->vec_dot && k->act_type == LB_TYPE_Q8_K && k->quantize_act_x4);
            if (!k || !k->quantize_act_x4) continue;
            const int x16 = k->act_rows == 16;
            CHECK(x16 ? k->act_x4_block * 8 == sizeof(lb_block_q8_Kx16)
                      : k->act_rows == 4 && k->act_x4_block * 8 == sizeof(lb_block_q8_Kx4));
            /* which kernel each level hands out */
            const int vbmi = lb_isa_is_x86(kLevels[li]) && (extra & LB_CPU_VBMI) && (extra & LB_CPU_GFNI);
            const int amx = vbmi && kLevels[li] == LB_ISA_AMX && (t || (extra & LB_CPU_AMXBF16));
            /* Q2_K_16X4 has an AVX2 kernel (kq_q2k_avx2.c) for every x86 level below VBMI */
            const int avx2 = t == 0 && lb_isa_is_x86(kLevels[li]) && kLevels[li] >= LB_ISA_AVX2;
            const lb_isa want = amx                                        ? LB_ISA_AMX
                                : vbmi && kLevels[li] >= LB_ISA_AVX512 ? LB_ISA_AVX512
                                : avx2                                 ? LB_ISA_AVX2
                                                                       : LB_ISA_SCALAR;
            CHECK_MSG(k->isa == want && x16 == (want == LB_ISA_AMX), "%s at %s: kernel %s", kNames[t],
                      lb_isa_name(kLevels[li]), k->name);
            const size_t n = x16 ? sizeof *r16 * nb : sizeof *r * nb;
            memset(y, 0x55, n);
            k->quantize_act_x4(x, (size_t)K, y, K);
            CHECK_MSG(!memcmp(y, x16 ? (const void *)r16 : (const void *)r, n), "%s: grouped quantizer differs from the reference", k->name);
            block_q8_K *p = malloc(sizeof *p * nb);
            k->quantize_act(x, p, K);
            lb_quantize_row_q8_K_ref(x, q, K);
            CHECK_MSG(!memcmp(p, q, sizeof *p * nb), "%s: row quantizer differs", k->name);
            free(p);
        }
    free(x);
    free(r);
    free(r16);
    free(y);
    free(q);
}

/* ---- the scalar references, bit for bit ---- */

static void test_ref_bitexact(void) {
    uint64_t seed = 31;
    const int64_t K = 2816, N = 32;
    const int M = 8;
    for (int i = 0; i < 3; i++) {
        const int base = kBases[i];
        const lb_kernel *k = lb_kernel_get_at(kTypes[i], LB_ISA_SCALAR);
        uint8_t *plain = quant_rows(base, K, N, &seed), *packed = repacked(kTypes[i], plain, K, N);
        float *x = rand_acts(K, M, &seed);
        const size_t arow = lb_row_size(LB_TYPE_Q8_K, K), grp = (size_t)(K / 256) * sizeof(lb_block_q8_Kx4);
        uint8_t *a1 = malloc(arow * M), *a4 = malloc(grp * (M / 4));
        for (int m = 0; m < M; m++) lb_quantize_row_q8_K_ref(x + m * K, a1 + m * arow, K);
        for (int g = 0; g < M / 4; g++) lb_quantize_q8_Kx4_ref(x + g * 4 * K, (size_t)K, a4 + g * grp, K);
        float *yv = malloc(sizeof(float) * N * M), *ym = malloc(sizeof(float) * N * M);
        k->gemv(K, packed, lb_row_size(kTypes[i], K), 0, (int)N, a1, arow, M, yv, (size_t)N);
        k->gemm(K, packed, lb_row_size(kTypes[i], K), 0, (int)N, a4, grp, M, ym, (size_t)N);
        int bad = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float want;
                lb_traits(base)->vec_dot(K, &want, plain + n * lb_row_size(base, K), a1 + m * arow);
                bad += yv[m * N + n] != want || ym[m * N + n] != want;
            }
        CHECK_MSG(!bad, "%s: %d reference outputs differ from the plain reference dot", kNames[i], bad);
        free(plain);
        free(packed);
        free(x);
        free(a1);
        free(a4);
        free(yv);
        free(ym);
    }
}

/* ---- exact integers through every level ---- */

static void exact_case(int t, const uint8_t *plain, int64_t K, int64_t N, const float *x, int M, const char *what) {
    const int base = kBases[t];
    uint8_t *packed = repacked(kTypes[t], plain, K, N);
    double *want = malloc(sizeof(double) * N * M), *mag = malloc(sizeof(double) * N * M);
    reference(base, plain, x, K, N, M, want, mag);
    for (int li = 0; li < N_LEVELS; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        for (int nth = 1; nth <= 2; nth++) {
            float *y = lb_test_matmul(kTypes[t], packed, K, N, x, M, nth);
            int bad = 0;
            for (int64_t i = 0; i < N * M; i++) bad += (double)y[i] != want[i];
            CHECK_MSG(!bad, "%s %s at %s, K=%lld N=%lld M=%d t=%d: %d of %lld outputs not exact", kNames[t], what,
                      lb_isa_name(kLevels[li]), (long long)K, (long long)N, M, nth, bad, (long long)(N * M));
            free(y);
        }
    }
    lb_cpu_force_level(lb_cpu_detected());
    free(packed);
    free(want);
    free(mag);
}

/* Extreme blocks straight into the kernels (Q8_K values the quantizer never
 * writes, -128 included), every level's gemv and gemm against the scalar
 * reference kernels: exact. */
static void extreme_case(int t) {
    uint64_t seed = 77 + t;
    const int base = kBases[t];
    const int64_t K = 512, N = 48;
    const int M = 16;
    const size_t bs = bsize(base);
    uint8_t *plain = rand_blocks(base, K, N, 0x3C00, &seed);
    for (size_t b = 0; b < (size_t)(K / 256) * N; b++) {
        uint8_t *blk = plain + b * bs;
        if (b % 2) continue; /* half random, half extreme */
        if (base == LB_TYPE_Q2_K) memset(blk, 0xFF, 80); /* scales and mins 15, q = 3 */
        else memset(blk, b % 4 ? 0x00 : 0xFF, bs - 2);  /* book 0 / last book, largest scale */
    }
    uint8_t *packed = repacked(kTypes[t], plain, K, N);
    const size_t arow = lb_row_size(LB_TYPE_Q8_K, K), grp = (size_t)(K / 256) * sizeof(lb_block_q8_Kx4);
    const size_t grp16 = (size_t)(K / 256) * sizeof(lb_block_q8_Kx16);
    block_q8_K *a1 = malloc(arow * M);
    lb_block_q8_Kx4 *a4 = malloc(grp * (M / 4));
    lb_block_q8_Kx16 *a16 = malloc(grp16 * (M / 16));
    for (int m = 0; m < M; m++)
        for (int b = 0; b < K / 256; b++) {
            block_q8_K *q = a1 + m * (K / 256) + b;
            q->d = 1.0f;
            for (int i = 0; i < 256; i++) {
                /* CB: |w| <= 1024, so extremes at every 8th position (a different
                 * byte of the dword for each row) keep block sums below 2^24 */
                const int on = base == LB_TYPE_Q2_K || (i + m) % 8 == 0;
                const int rnd = base == LB_TYPE_Q2_K ? (int)(lb_test_rand(&seed) % 256) - 128 : (int)(lb_test_rand(&seed) % 33) - 16;
                q->qs[i] = (int8_t)((m + b) % 3 == 2 ? rnd : !on ? 0 : (m + b) % 3 == 0 ? -128 : 127);
            }
            for (int j = 0; j < 16; j++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += q->qs[16 * j + i];
                q->bsums[j] = (int16_t)s;
            }
            lb_block_q8_Kx4 *g = a4 + (m / 4) * (K / 256) + b;
            g->d[m % 4] = q->d;
            memcpy(g->qs[m % 4], q->qs, 256);
            lb_q8_K_bsum_forms(q->bsums, g->b64[m % 4], g->bsp[m % 4], &g->b128[m % 4]); /* checked in test_acts */
            lb_block_q8_Kx16 *g16 = a16 + (m / 16) * (K / 256) + b;
            g16->d[m % 16] = q->d;
            memcpy(g16->qs[m % 16], q->qs, 256);
            lb_q8_K_bsum_digits(q->bsums, g16->bsd[m % 16]);
        }
    const size_t wrs = lb_row_size(kTypes[t], K);
    float *want = malloc(sizeof(float) * N * M), *want4 = malloc(sizeof(float) * N * M), *y = malloc(sizeof(float) * N * M);
    const lb_kernel *ref = lb_kernel_get_at(kTypes[t], LB_ISA_SCALAR);
    ref->gemv(K, packed, wrs, 0, (int)N, a1, arow, M, want, (size_t)N);
    ref->gemm(K, packed, wrs, 0, (int)N, a4, grp, M, want4, (size_t)N);
    CHECK(!memcmp(want, want4, sizeof(float) * N * M));
    for (int li = 0; li < N_LEVELS; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        const lb_kernel *k = lb_kernel_get_at(kTypes[t], kLevels[li]);
        for (int pass = 0; pass < 2; pass++) {
            for (int64_t i = 0; i < N * M; i++) y[i] = NAN;
            if (pass == 0) k->gemv(K, packed, wrs, 0, (int)N, a1, arow, M, y, (size_t)N);
            else if (k->act_rows == 16) k->gemm(K, packed, wrs, 0, (int)N, a16, grp16, M, y, (size_t)N);
            else k->gemm(K, packed, wrs, 0, (int)N, a4, grp, M, y, (size_t)N);
            int bad = 0;
            for (int64_t i = 0; i < N * M; i++) bad += y[i] != want[i];
            CHECK_MSG(!bad, "%s extreme blocks, %s %s: %d of %lld outputs differ", kNames[t], k->name,
                      pass ? "gemm" : "gemv", bad, (long long)(N * M));
        }
    }
    free(plain);
    free(packed);
    free(a1);
    free(a4);
    free(a16);
    free(want);
    free(want4);
    free(y);
}

static void test_exact(void) {
    uint64_t seed = 21;
    const int64_t Ks[] = {256, 512, 1024};
    const int M = 37; /* 16- and 4-row groups and a GEMV tail */
    const int64_t N = 64;
    for (int t = 0; t < 3; t++)
        for (size_t ki = 0; ki < 3; ki++) {
            const int64_t K = Ks[ki];
            /* CB: |d s c| <= 1024, so smaller activations keep the sums below 2^24 */
            uint8_t *plain = rand_blocks(kBases[t], K, N, 0x3C00, &seed);
            float *x = int_acts(K, M, t ? 15 : 127, &seed);
            exact_case(t, plain, K, N, x, M, "unit scales");
            free(plain);
            free(x);
        }
    for (int t = 0; t < 3; t++) extreme_case(t);
}

/* ---- random floats through lb_matmul ---- */

static void float_case(int t, int64_t K, int64_t N, int Mmax, int all_m, uint64_t *seed) {
    const int base = kBases[t];
    uint8_t *plain = quant_rows(base, K, N, seed), *packed = repacked(kTypes[t], plain, K, N);
    float *x = rand_acts(K, Mmax, seed);
    double *want = malloc(sizeof(double) * N * Mmax), *mag = malloc(sizeof(double) * N * Mmax);
    reference(base, plain, x, K, N, Mmax, want, mag);
    for (int li = 0; li < N_LEVELS; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        for (int M = 1; M <= Mmax; M++) {
            const int some = M == 1 || M == 4 || M == 7 || M == 17 || M == 32 || M == 48;
            if (!some && !(all_m && M <= 17)) continue;
            for (int nth = 1; nth <= 2; nth++) {
                float *y = lb_test_matmul(kTypes[t], packed, K, N, x, M, nth);
                int bad = 0;
                for (int m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) {
                        const double e = fabs((double)y[m * N + n] - want[m * N + n]);
                        const double bound = TOL * mag[m * N + n] + 1e-30;
                        if (!(e <= bound)) bad++;
                        else if (e / bound > worst) worst = e / bound;
                    }
                CHECK_MSG(!bad, "%s at %s (%s books): K=%lld N=%lld M=%d threads=%d: %d outputs off", kNames[t],
                          lb_isa_name(kLevels[li]), t ? (lb_cb_current(base)->books.count == 4 ? "4" : lb_cb_current(base)->books.count == 8 ? "8" : "16") : "-",
                          (long long)K, (long long)N, M, nth, bad);
                free(y);
            }
        }
    }
    lb_cpu_force_level(lb_cpu_detected());
    free(plain);
    free(packed);
    free(x);
    free(want);
    free(mag);
}

static void test_float(void) {
    uint64_t seed = 77;
    const int64_t Ks[] = {256, 512, 2816};
    const int64_t Ns[] = {5, 16, 40, 48, 100, 112};
    for (int t = 0; t < 3; t++) {
        for (size_t ki = 0; ki < 3; ki++)
            for (size_t ni = 0; ni < 6; ni++) {
                if (ki == 2 && ni != 4) continue; /* long rows: one shape */
                float_case(t, Ks[ki], Ns[ni], 48, ki == 1 && ni == 4, &seed);
            }
        float_case(t, 16896, 32, 4, 0, &seed); /* the GEMV's second pass over K */
    }
}

/* CB with 4, 8 and 16 books, wide and narrow (formats/cb.h: the kernels'
 * integer-scale paths): exact integers and random floats again. */
static void test_book_counts(void) {
    uint64_t seed = 123;
    const int Cs[] = {4, 8, 16};
    for (int t = 1; t < 3; t++)
        for (int ci = 0; ci < 6; ci++) {
            const int nar = ci >= 3, C = Cs[ci % 3];
            const lb_cb_books b = nar ? make_narrow_books(C, lb_cb_k(kBases[t]), 70 + C + t)
                                      : make_books(C, lb_cb_k(kBases[t]), 50 + C + t);
            CHECK_OK(lb_cb_acquire(kBases[t], &b));
            CHECK(lb_cb_current(kBases[t])->narrow == nar);
            printf("%s, %d %s books\n", kNames[t], C, nar ? "narrow" : "wide");
            uint8_t *plain = rand_blocks(kBases[t], 1024, 48, 0x3C00, &seed);
            float *x = int_acts(1024, 21, 15, &seed);
            exact_case(t, plain, 1024, 48, x, 21, nar ? "narrow books" : "wide books");
            extreme_case(t);
            float_case(t, 512, 40, 17, 0, &seed);
            free(plain);
            free(x);
            lb_cb_release(kBases[t]);
        }
}

/* Without VBMI: no AVX-512 entry; Q2_K takes the AVX2 kernel (repacked at
 * load), CB2 / CB3 keep the plain layout. */
static void test_gating(void) {
    if (!(lb_cpu_extra_features() & LB_CPU_VBMI)) {
        printf("no AVX-512 VBMI here: the AVX-512 kernels are not handed out\n");
    } else {
        CHECK(lb_repack_target(LB_TYPE_Q2_K) == LB_TYPE_Q2_K_16X4 || lb_cpu_level() < LB_ISA_AVX512);
    }
    /* the kernel the CPU could run, and the repack at the level in force (LOWBIT_ISA may lower it) */
    const int x86 = lb_isa_is_x86(lb_cpu_detected()) && lb_cpu_detected() >= LB_ISA_AVX2;
    const int x86_now = lb_isa_is_x86(lb_cpu_level()) && lb_cpu_level() >= LB_ISA_AVX2;
    lb_cpu_disable_features(LB_CPU_VBMI);
    for (int t = 0; t < 3; t++) {
        const lb_kernel *k = lb_kernel_get_at(kTypes[t], lb_cpu_detected());
        CHECK(k && k->isa == (t == 0 && x86 ? LB_ISA_AVX2 : LB_ISA_SCALAR));
        CHECK(lb_repack_target(kBases[t]) == (t == 0 && x86_now ? kTypes[t] : kBases[t]));
    }
    lb_cpu_disable_features(0);
    if (x86) {
        lb_cpu_force_level(LB_ISA_AVX2);
        for (int t = 0; t < 3; t++) CHECK(lb_repack_target(kBases[t]) == (t == 0 ? kTypes[t] : kBases[t]));
    }
    lb_cpu_force_level(lb_cpu_detected());
}

int main(void) {
    test_traits();
    test_positions();
    test_roundtrip();
    test_acts();
    test_ref_bitexact();
    test_gating();
    test_exact();
    test_float();
    test_book_counts();
    /* a 16 KiB L2: the whole-M kernels get the activation rows in several
     * tiles (kernels/matmul.c) */
    printf("again with a 16 KiB L2\n");
    lb_cpu_set_l2_bytes(16 << 10);
    test_exact();
    lb_cpu_set_l2_bytes(0);
    /* the GEMV's other prefetch path (into L1 or L2, kernels/cpu.h) */
    const int l2 = lb_cpu_prefetch_l2();
    printf("again with prefetches into %s\n", l2 ? "L1" : "L2");
    lb_cpu_set_prefetch_l2(!l2);
    test_exact();
    lb_cpu_set_prefetch_l2(-1);
    printf("worst error: %.3g of the bound\n", worst);
    return lb_test_result("test_kq_repack");
}
