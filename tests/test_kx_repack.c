/* The 16-row layouts of formats/repack_kx.h (Q3_K, Q4_K, Q5_K, Q6_K,
 * IQ4_XS, Q4_1, Q5_0, Q5_1): layout, round trip, group to_float, and every
 * GEMV / GEMM kernel at every ISA level this CPU has, through lb_matmul
 * (the driver: 4-row groups + per-row tail, plain tail rows when
 * N % 16 != 0, 1 and 2 threads), against the base type's plain reference
 * dot on the unpacked rows.
 *
 *  exact:  unit super-scales (d = dmin = 1), small sub-block scales and
 *          integer activations whose blocks quantize with |d| = 1, so every
 *          output is an integer below 2^24 that each kernel must produce
 *          exactly: the integer paths (nibble and bit planes, scales, mins,
 *          offsets) bit for bit.
 *  float:  weights from the base quantizer on random floats, random
 *          activations. Tolerance |y - ref| <= 1e-5 * sum|w_i a_i|
 *          (dequantized, in double): integer sums are exact, the float
 *          scaling order differs from the reference's. The AMX-BF16 GEMM
 *          (Q3_K..IQ4_XS at the amx level) is held to the same sum over the
 *          bf16 roundings of the dequantized weights and of the activations,
 *          for the outputs it computes (whole groups of 16 rows and columns);
 *          the integer cases stay exact there too.
 *  shapes: K = 1..9 blocks and 2816 / 2080 (not multiples of any kernel's
 *          K step), M = 1..17, 32, 48, N = 3 (all plain), 16, 17, 48, 40;
 *          the AVX-512 GEMV with one and with two 16-row groups a step;
 *          Q3_K also at the ends of its q x scale range (exact). */
#include "test_util.h"

#include "formats/repack_kx.h"
#include "kernels/dispatch.h"
#include "test_matmul_util.h"

static const int kBases[] = {LB_TYPE_Q3_K,   LB_TYPE_Q4_K, LB_TYPE_Q5_K, LB_TYPE_Q6_K,
                             LB_TYPE_IQ4_XS, LB_TYPE_Q4_1, LB_TYPE_Q5_0, LB_TYPE_Q5_1};
enum { N_BASES = sizeof kBases / sizeof kBases[0] };
#define TOL 1e-5

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX,
                                 LB_ISA_NEON,   LB_ISA_DOTPROD, LB_ISA_I8MM};

static int repacked(int base) { return lb_repack_find(base, 16, 4); }

static int blck(int base) { return lb_traits(base)->blck; }
static size_t bsize(int base) { return lb_traits(base)->type_size; }

/* ---- blocks with unit super-scales ---- */

static void put_fp16(uint8_t *p, float v) {
    const lb_fp16 h = lb_f32_to_fp16(v);
    memcpy(p, &h, 2);
}

/* One block of base with d (and dmin) 1, random quants, small scales. */
static void unit_block(int base, uint8_t *blk, uint64_t *seed) {
    const size_t bs = bsize(base);
    for (size_t i = 0; i < bs; i++) blk[i] = (uint8_t)lb_test_rand(seed);
    switch (base) {
    case LB_TYPE_Q3_K: { /* 6-bit raw scales 24..40: sc - 32 in -8..8 */
        uint8_t *sc = blk + 96;
        memset(sc, 0, 12);
        for (int j = 0; j < 16; j++) {
            const int raw = 24 + (int)(lb_test_rand(seed) % 17);
            sc[j % 8] |= (uint8_t)((raw & 15) << (4 * (j / 8)));
            sc[8 + j % 4] |= (uint8_t)((raw >> 4) << (2 * (j / 4)));
        }
        put_fp16(blk + 108, 1.0f);
        break;
    }
    case LB_TYPE_Q4_K:
    case LB_TYPE_Q5_K: {
        uint8_t ls[8], lm[8];
        for (int j = 0; j < 8; j++) ls[j] = (uint8_t)(lb_test_rand(seed) % 8), lm[j] = (uint8_t)(lb_test_rand(seed) % 8);
        lb_pack_scale_min_k4(ls, lm, blk + 4);
        put_fp16(blk, 1.0f);
        put_fp16(blk + 2, 1.0f);
        break;
    }
    case LB_TYPE_Q6_K:
        for (int j = 0; j < 16; j++) blk[192 + j] = (uint8_t)(int8_t)((int)(lb_test_rand(seed) % 17) - 8);
        put_fp16(blk + 208, 1.0f);
        break;
    case LB_TYPE_IQ4_XS: { /* ls 28..36: ls - 32 in -4..4 */
        uint16_t h = 0;
        memset(blk + 4, 0, 4);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = 28 + (int)(lb_test_rand(seed) % 9);
            blk[4 + ib / 2] |= (uint8_t)((ls & 15) << (4 * (ib % 2)));
            h |= (uint16_t)((ls >> 4) << (2 * ib));
        }
        memcpy(blk + 2, &h, 2);
        put_fp16(blk, 1.0f);
        break;
    }
    case LB_TYPE_Q4_1:
    case LB_TYPE_Q5_1:
        put_fp16(blk, 1.0f);
        put_fp16(blk + 2, (float)((int)(lb_test_rand(seed) % 17) - 8));
        break;
    case LB_TYPE_Q5_0: put_fp16(blk, 1.0f); break;
    }
}

static uint8_t *unit_rows(int base, int64_t K, int64_t N, uint64_t *seed) {
    const int64_t nb = K / blck(base);
    uint8_t *w = malloc(bsize(base) * nb * N);
    for (int64_t b = 0; b < nb * N; b++) unit_block(base, w + b * bsize(base), seed);
    return w;
}

/* Q3_K at the ends of its range, block by block: q -4 with sc -32 (q sc =
 * 128), q 3 with sc -32 (-96), q -4 with sc 31 (-124); d = 1. The AVX-512
 * GEMM folds q sc + 127 into one unsigned byte (3..255): its edges. */
static uint8_t *q3k_extreme_rows(int64_t K, int64_t N) {
    const size_t bs = bsize(LB_TYPE_Q3_K);
    const int64_t nb = K / QK_K * N;
    uint8_t *w = calloc((size_t)nb, bs);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = w + (size_t)b * bs;
        if (b % 3 == 1) memset(blk, 0xFF, 96);      /* hmask and qs: q = 3; raw scales 0: sc = -32 */
        if (b % 3 == 2) memset(blk + 96, 0xFF, 12); /* q = -4; raw scales 63: sc = 31 */
        put_fp16(blk + 108, 1.0f);
    }
    return w;
}

static uint8_t *rand_rows(int base, int64_t K, int64_t N, uint64_t *seed) {
    const size_t rs = lb_row_size(base, K);
    uint8_t *w = malloc(rs * (size_t)N);
    float *row = malloc(sizeof(float) * K);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t i = 0; i < K; i++) row[i] = lb_test_randf(seed) * 0.05f * (float)(1 + n % 5) + 0.01f * (float)(n % 3);
        lb_traits(base)->from_float(row, w + n * rs, K);
    }
    free(row);
    return w;
}

/* Integer activations; every 32 values hold one +-127, so Q8_0, Q8_1 and
 * Q8_K all quantize them with |d| = 1, exactly. */
static float *int_acts(int64_t K, int M, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) {
        x[i] = (float)((int)(lb_test_rand(seed) % 255) - 127);
        if (i % 32 == 5) x[i] = lb_test_rand(seed) & 1 ? 127.0f : -127.0f;
    }
    return x;
}

/* Every activation at +-127 with one sign per 16 (alternating by row): the
 * Q8_K block sums reach +-2032 and the int16/int32 partial sums their limits. */
static float *extreme_acts(int64_t K, int M) {
    float *x = malloc(sizeof(float) * K * M);
    for (int m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++) x[m * K + k] = ((k / 16 + m) & 1) ? -127.0f : 127.0f;
    return x;
}

static float *rand_acts(int64_t K, int M, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) x[i] = lb_test_randf(seed) * (i % 61 == 0 ? 8.0f : 1.0f);
    return x;
}

/* want[m][n]: the base type's plain reference dot; mag: sum |w a| of the
 * dequantized values, for the error bound. */
static void reference(int base, const uint8_t *plain, const float *x, int64_t K, int64_t N, int M, double *want,
                      double *mag) {
    const lb_type_traits *t = lb_traits(base), *at = lb_traits(t->vec_dot_type);
    const size_t rs = lb_row_size(base, K);
    void *q = malloc(lb_row_size(t->vec_dot_type, K));
    float *w = malloc(sizeof(float) * K), *a = malloc(sizeof(float) * K);
    for (int m = 0; m < M; m++) {
        at->from_float(x + m * K, q, K);
        at->to_float(q, a, K);
        for (int64_t n = 0; n < N; n++) {
            float s;
            t->vec_dot(K, &s, plain + n * rs, q);
            t->to_float(plain + n * rs, w, K);
            double g = 0;
            for (int64_t i = 0; i < K; i++) g += fabs((double)w[i] * a[i]);
            want[m * N + n] = s;
            mag[m * N + n] = g;
        }
    }
    free(q);
    free(w);
    free(a);
}

/* ---- layout ---- */

static void test_layout(void) {
    uint64_t seed = 5;
    for (int i = 0; i <= N_BASES; i++) {
        /* the bases' layouts, then the read-only Q6_K_16X4_V1 */
        const int base = i < N_BASES ? kBases[i] : LB_TYPE_Q6_K;
        const int T = i < N_BASES ? repacked(base) : LB_TYPE_Q6_K_16X4_V1;
        CHECK_MSG(T >= 0, "%s has no 16-row layout", lb_type_name(base));
        if (T < 0) continue;
        const lb_repack_layout *L = lb_repack_layout_of(T);
        CHECK(L->rows == 16 && L->chunk == 4 && lb_type_base(T) == base && lb_type_rows(T) == 16);
        CHECK(lb_traits(T)->type_size == bsize(base) && lb_traits(T)->blck == blck(base));
        CHECK(fabs(lb_type_bits_per_weight(T) - lb_type_bits_per_weight(base)) < 1e-12);
        CHECK(lb_type_from_name(lb_type_name(T)) == T);
        const int64_t K = 3 * (int64_t)blck(base);
        const int64_t Ns[] = {1, 16, 17, 35, 48};
        for (int ni = 0; ni < 5; ni++) {
            const int64_t N = Ns[ni];
            const size_t bytes = lb_row_size(base, K) * N;
            uint8_t *plain = malloc(bytes), *packed = malloc(bytes), *back = malloc(bytes);
            for (size_t b = 0; b < bytes; b++) plain[b] = (uint8_t)lb_test_rand(&seed);
            lb_repack_tensor(T, plain, packed, K, N);
            lb_unpack_tensor(T, packed, back, K, N);
            CHECK_MSG(!memcmp(plain, back, bytes), "%s N=%lld: unpack(repack(x)) != x", lb_type_name(T), (long long)N);
            /* the plain tail is copied as is */
            const size_t tail = lb_row_size(base, K) * (size_t)(N - N % 16);
            CHECK(!memcmp(plain + tail, packed + tail, bytes - tail));
            if (N >= 16) {
                /* group to_float = the rows' plain to_float */
                float *a = malloc(sizeof(float) * K * 16), *b = malloc(sizeof(float) * K * 16);
                lb_traits(T)->to_float(packed, a, K * 16);
                for (int r = 0; r < 16; r++) lb_traits(base)->to_float(plain + r * lb_row_size(base, K), b + r * K, K);
                CHECK_MSG(!memcmp(a, b, sizeof(float) * K * 16), "%s: group to_float differs", lb_type_name(T));
                free(a);
                free(b);
            }
            free(plain);
            free(packed);
            free(back);
        }
    }
    /* the documented positions: DW plane vector c, row r, byte e = plain
     * field byte 4c + e of row r (Q4_K's qs at 256, Q6_K's qh at 2048) */
    const int64_t K = 256, N = 16;
    uint8_t *plain = malloc(144 * N * 2), *packed = malloc(144 * N * 2);
    for (size_t b = 0; b < 144 * N; b++) plain[b] = (uint8_t)lb_test_rand(&seed);
    lb_repack_tensor(LB_TYPE_Q4_K_16X4, plain, packed, K, N);
    int ok = 1;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 32; c++)
            for (int e = 0; e < 4; e++) ok &= packed[256 + 64 * c + 4 * r + e] == plain[144 * r + 16 + 4 * c + e];
    for (int r = 0; r < 16; r++) ok &= !memcmp(packed + 2 * r, plain + 144 * r, 2);
    CHECK_MSG(ok, "Q4_K_16X4 planes are not where formats/repack_kx.h says");
    CHECK(lb_kx_x_offset(LB_TYPE_Q4_K, 16) == 256 && lb_kx_x_offset(LB_TYPE_Q4_K, 17) == 257);
    CHECK(lb_kx_x_offset(LB_TYPE_Q5_0, 6) == 0 && lb_kx_x_offset(LB_TYPE_Q5_0, 2) == 256);
    /* Q6_K's planes in the kernels' reading order (LB_KX_Q6_*) */
    int q6 = lb_kx_x_offset(LB_TYPE_Q6_K, 192) == LB_KX_Q6_SC && lb_kx_x_offset(LB_TYPE_Q6_K, 208) == LB_KX_Q6_D;
    for (int v = 0; v < 32; v++) q6 &= lb_kx_x_offset(LB_TYPE_Q6_K, 4 * v) == lb_kx_q6_ql(v);
    for (int u = 0; u < 16; u++) q6 &= lb_kx_x_offset(LB_TYPE_Q6_K, 128 + 4 * u) == lb_kx_q6_qh(u);
    for (int sc = 0; sc < 4; sc++) q6 &= lb_kx_x_offset(LB_TYPE_Q6_K, 192 + 4 * sc) == LB_KX_Q6_SC + 64 * sc;
    CHECK_MSG(q6, "Q6_K_16X4 planes are not where LB_KX_Q6_* say");
    /* the read-only V1 keeps the plain field order: ql at 0, qh at 2048 */
    uint8_t *q6p = malloc(210 * 16), *q6x = malloc(210 * 16);
    for (size_t b = 0; b < 210 * 16; b++) q6p[b] = (uint8_t)lb_test_rand(&seed);
    lb_repack_tensor(LB_TYPE_Q6_K_16X4_V1, q6p, q6x, 256, 16);
    ok = 1;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 48; c++)
            for (int e = 0; e < 4; e++) ok &= q6x[64 * c + 4 * r + e] == q6p[210 * r + 4 * c + e];
    CHECK_MSG(ok, "Q6_K_16X4_V1 planes moved");
    free(q6p);
    free(q6x);
    CHECK(lb_kx_x_offset(LB_TYPE_Q6_K, 210) == -1);
    /* the Q5 bit permutation: fifth bit of weight 4c + e + 16h at 8e + 2c + h */
    uint8_t q5[22 * 16];
    memset(q5, 0, sizeof q5);
    q5[22 * 3 + 2 + 2] = 0x20; /* row 3: qh bit 21 = weight 21 = 4*1 + 1 + 16 */
    lb_repack_tensor(LB_TYPE_Q5_0_16X4, q5, packed, 32, 16);
    uint32_t p5;
    memcpy(&p5, packed + 256 + 4 * 3, 4);
    CHECK_MSG(p5 == 1u << (8 * 1 + 2 * 1 + 1), "Q5 bit plane: %08x", p5);
    free(plain);
    free(packed);
}

/* The GEMM's activation quantizers against the reference one, per level. */
static void test_act_quantizers(void) {
    uint64_t seed = 9;
    const int64_t K = 512;
    float *x = rand_acts(K, 4, &seed);
    for (int i = 0; i < N_BASES; i++) {
        const int T = repacked(kBases[i]);
        const lb_kernel *ref = lb_kernel_get_at(T, LB_ISA_SCALAR);
        for (size_t li = 1; li < sizeof kLevels / sizeof kLevels[0]; li++) {
            if (!lb_test_level_available(kLevels[li])) continue;
            const lb_kernel *k = lb_kernel_get_at(T, kLevels[li]);
            if (!k || k == ref || !k->quantize_act_x4 || k->act_rows != 4) continue;
            const size_t n = (size_t)(K / 32) * k->act_x4_block;
            uint8_t *a = malloc(n), *b = malloc(n);
            ref->quantize_act_x4(x, (size_t)K, a, K);
            k->quantize_act_x4(x, (size_t)K, b, K);
            CHECK_MSG(!memcmp(a, b, n) || k->act_x4_block != ref->act_x4_block, "%s: 4-row quantizer differs",
                      k->name);
            free(a);
            free(b);
        }
    }
    free(x);
}

/* ---- kernels ---- */

static void run_case(int base, const uint8_t *plain, int64_t K, int64_t N, const float *x, int Mmax, int exact,
                     const char *what) {
    const int T = repacked(base);
    const size_t bytes = lb_row_size(base, K) * (size_t)N;
    uint8_t *packed = malloc(bytes);
    lb_repack_tensor(T, plain, packed, K, N);
    double *want = malloc(sizeof(double) * N * Mmax), *mag = malloc(sizeof(double) * N * Mmax);
    double *want16 = malloc(sizeof(double) * N * Mmax), *mag16 = malloc(sizeof(double) * N * Mmax);
    reference(base, plain, x, K, N, Mmax, want, mag);
    lb_test_reference_bf16(base, plain, x, K, N, Mmax, want16, mag16);
    for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        for (int M = 1; M <= Mmax; M++) {
            if (M > 17 && M != 32 && M != Mmax) continue;
            for (int nth = 1; nth <= 2; nth++) {
                if (nth == 2 && M % 5 != 1) continue;
                float *y = lb_test_matmul(T, packed, K, N, x, M, nth);
                double worst = 0;
                const int bad = lb_test_compare_bf16(y, want, mag, want16, mag16, T, N, 0, M, TOL, exact, &worst, what);
                CHECK_MSG(!bad, "%s %s (%s) at %s: K=%lld N=%lld M=%d threads=%d: %d of %lld outputs off",
                          lb_type_name(T), what, lb_kernel_get(T)->name, lb_isa_name(kLevels[li]), (long long)K,
                          (long long)N, M, nth, bad, (long long)(N * M));
                free(y);
            }
        }
    }
    lb_cpu_force_level(lb_cpu_detected());
    free(packed);
    free(want);
    free(mag);
    free(want16);
    free(mag16);
}

static void test_kernels(void) {
    uint64_t seed = 77;
    for (int i = 0; i < N_BASES; i++) {
        const int base = kBases[i], bk = blck(base);
        /* exact: K of 2 super-blocks (sums stay below 2^24) or 9 blocks of 32 */
        {
            const int64_t K = bk == 256 ? 512 : 288, N = 48;
            uint8_t *plain = unit_rows(base, K, N, &seed);
            float *x = int_acts(K, 37, &seed);
            run_case(base, plain, K, N, x, 37, 1, "unit scales");
            free(x);
            x = extreme_acts(K, 18);
            run_case(base, plain, K, N, x, 18, 1, "extreme activations");
            free(plain);
            free(x);
        }
        if (base == LB_TYPE_Q3_K) {
            uint8_t *plain = q3k_extreme_rows(512, 48);
            float *x = extreme_acts(512, 18);
            run_case(base, plain, 512, 48, x, 18, 1, "extreme codes and scales");
            free(x);
            x = int_acts(512, 18, &seed);
            run_case(base, plain, 512, 48, x, 18, 1, "extreme codes and scales, integer activations");
            free(plain);
            free(x);
        }
        /* float */
        const int64_t Ks[] = {bk, 3 * (int64_t)bk, bk == 256 ? 2816 : 2080};
        const int64_t Ns[] = {3, 16, 17, 40, 48};
        for (int ki = 0; ki < 3; ki++)
            for (int ni = 0; ni < 5; ni++) {
                const int64_t K = Ks[ki], N = Ns[ni];
                if (ki != 1 && ni != 4) continue; /* one N for the other K */
                uint8_t *plain = rand_rows(base, K, N, &seed);
                float *x = rand_acts(K, 48, &seed);
                run_case(base, plain, K, N, x, 48, 0, "random");
                free(plain);
                free(x);
            }
    }
}

/* The kernels in force: every level above scalar has one for every type
 * (the dispatcher would otherwise run the scalar reference, slowly). */
static void test_dispatch(void) {
    for (size_t li = 1; li < sizeof kLevels / sizeof kLevels[0]; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        for (int i = 0; i < N_BASES; i++) {
            const lb_kernel *k = lb_kernel_get_at(repacked(kBases[i]), kLevels[li]);
            CHECK_MSG(k && k->isa != LB_ISA_SCALAR, "%s at %s: only the scalar reference (%s)",
                      lb_type_name(repacked(kBases[i])), lb_isa_name(kLevels[li]), k ? k->name : "none");
            /* every type takes the AMX-BF16 GEMM exactly where the CPU has it */
            const int bf = kLevels[li] == LB_ISA_AMX && (lb_cpu_extra_features() & LB_CPU_AMXBF16);
            if (k)
                CHECK_MSG(bf == (k->act_x4_block == sizeof(lb_block_bf16x16)), "%s at %s: %s", lb_type_name(repacked(kBases[i])),
                          lb_isa_name(kLevels[li]), k->name);
        }
    }
}

int main(void) {
    test_layout();
    test_act_quantizers();
    test_kernels();
    test_dispatch();
    if (lb_cpu_extra_features() & LB_CPU_AVXVNNI) {
        /* once more without AVX-VNNI: the plain AVX2 products at the avx2 level */
        printf("again without AVX-VNNI\n");
        lb_cpu_disable_features(LB_CPU_AVXVNNI);
        test_act_quantizers();
        test_kernels();
        test_dispatch();
        lb_cpu_disable_features(0);
    }
    {
        /* once more with the other number of 16-row groups the AVX-512
         * decode GEMV walks side by side (1 on AMD, 2 elsewhere), so both
         * ways are tested on either CPU */
        const int ng = lb_cpu_gemv_groups();
        printf("again with %d row group%s per GEMV step\n", 3 - ng, ng == 2 ? "" : "s");
        lb_cpu_set_gemv_groups(3 - ng);
        test_kernels();
        lb_cpu_set_gemv_groups(0);
    }
    if (lb_cpu_extra_features() & LB_CPU_AMXBF16) {
        /* once more without AMX-BF16: the VNNI GEMM at the amx level */
        printf("again without AMX-BF16\n");
        lb_cpu_disable_features(LB_CPU_AMXBF16);
        test_kernels();
        test_dispatch();
        lb_cpu_disable_features(0);
    }
    return lb_test_result("test_kx_repack");
}
