/* Every GEMV / GEMM kernel of the interleaved types, at every ISA level this
 * CPU has (lb_kernel_get_at / lb_cpu_force_level), against the reference.
 *
 *  exact:  all scales 1 and integer activations (blocks whose largest
 *          magnitude is 127 quantize to themselves with d = 1), so each
 *          output is an integer below 2^24 that every kernel must produce
 *          exactly: this pins the integer paths (sign toggle, nibble order,
 *          codebook lookup, the -8*sum correction) bit for bit.
 *  float:  random weights and activations through lb_matmul (the driver:
 *          4-row groups + per-row tail, row split, plain tail rows when
 *          N % R != 0, 1 and 2 threads) against the plain reference dot on
 *          the unpacked rows. Tolerance: |y - ref| <= 1e-5 * sum|w_i a_i|
 *          (dequantized, double): integer sums are exact, only the float
 *          scaling / accumulation order differs (a few ulps per block).
 *  shapes: K = 32, 96, 2080, 8224 (not multiples of 256), M = 1..17, 32, 48, N = 3,
 *          4, 12, 13, 24, 40 (tails of 8 and 4).
 *          The AMX-BF16 GEMM (bf16 activations) is held to a second reference:
 *          the same double sum over the bf16 roundings of the dequantized
 *          weights and of the activations (lb_pack_bf16x16_ref), same bound;
 *          its rows past a multiple of 16, and the plain tail columns, still
 *          take Q8_0 activations (the GEMV) and the first reference.
 * Also: each level's 4-row activation quantizer is bit-identical to the
 * reference one, and the x86 levels hand out the AVX2 and AVX-512 VNNI kernels.
 * The AMX level's int8 GEMM on 256-value chunks (formats/q8_256.h) is held to
 * its own reference (lb_test_reference_q8_256, the same bound; in test_exact
 * too, as its Q4_0 / MXFP4 weight scales are not 1): the AMX level runs it
 * with AMX-BF16 turned off, and the per-block int8 GEMM with both off. */
#include "test_util.h"

#include "formats/repack.h"
#include "kernels/dispatch.h"
#include "test_matmul_util.h"

static const int kTypes[] = {LB_TYPE_Q4_0_4X4,   LB_TYPE_Q4_0_4X8,   LB_TYPE_Q4_0_8X8,
                             LB_TYPE_IQ4_NL_4X4, LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL_8X8,
                             LB_TYPE_Q8_0_4X4,   LB_TYPE_Q8_0_4X8,   LB_TYPE_Q8_0_8X8,
                             LB_TYPE_MXFP4_NL_4X4, LB_TYPE_MXFP4_NL_4X8, LB_TYPE_MXFP4_NL_8X8};
enum { N_TYPES = sizeof kTypes / sizeof kTypes[0] };
#define TOL 1e-5

static double worst = 0.0;

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX, LB_ISA_NEON, LB_ISA_DOTPROD, LB_ISA_I8MM};

/* Plain rows with scale 1 and random quants (Q8_0 includes -128). */
static uint8_t *unit_rows(int base, int64_t K, int64_t N, uint64_t *seed) {
    const size_t rs = lb_row_size(base, K), bs = base == LB_TYPE_Q8_0 ? 34 : 18;
    uint8_t *w = malloc(rs * (size_t)N);
    for (size_t b = 0; b < rs * (size_t)N / bs; b++) {
        uint8_t *blk = w + b * bs;
        const lb_fp16 one = 0x3C00;
        memcpy(blk, &one, 2);
        for (size_t i = 2; i < bs; i++) blk[i] = (uint8_t)lb_test_rand(seed);
    }
    return w;
}

/* Integer-valued activations: per block of 32 one value is +-127, so Q8_0
 * quantization keeps every value with scale 1. */
static float *int_acts(int64_t K, int M, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) {
        x[i] = (float)((int)(lb_test_rand(seed) % 255) - 127);
        if (i % 32 == 5) x[i] = lb_test_rand(seed) & 1 ? 127.0f : -127.0f;
    }
    return x;
}

static float *rand_acts(int64_t K, int M, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) x[i] = lb_test_randf(seed) * (i % 61 == 0 ? 8.0f : 1.0f);
    return x;
}

static uint8_t *rand_rows(int base, int64_t K, int64_t N, uint64_t *seed) {
    const size_t rs = lb_row_size(base, K);
    uint8_t *w = malloc(rs * (size_t)N);
    float *row = malloc(sizeof(float) * K);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t i = 0; i < K; i++) row[i] = lb_test_randf(seed) * 0.05f * (float)(1 + n % 5);
        lb_traits(base)->from_float(row, w + n * rs, K);
    }
    free(row);
    return w;
}

/* y[m][n] in double from dequantized plain rows and Q8_0 activations, and
 * sum |w a| for the error bound. */
static void reference(int base, const uint8_t *plain, const float *x, int64_t K, int64_t N, int M, double *y,
                      double *mag) {
    const size_t rs = lb_row_size(base, K);
    float *w = malloc(sizeof(float) * K), *a = malloc(sizeof(float) * K);
    block_q8_0 *q = malloc(sizeof(block_q8_0) * (K / 32));
    for (int m = 0; m < M; m++) {
        lb_quantize_row_q8_0_ref(x + m * K, q, K);
        lb_dequantize_row_q8_0(q, a, K);
        for (int64_t n = 0; n < N; n++) {
            lb_traits(base)->to_float(plain + n * rs, w, K);
            double s = 0, t = 0;
            for (int64_t i = 0; i < K; i++) {
                s += (double)w[i] * a[i];
                t += fabs((double)w[i] * a[i]);
            }
            y[m * N + n] = s;
            mag[m * N + n] = t;
        }
    }
    free(w);
    free(a);
    free(q);
}

static void test_exact(void) {
    uint64_t seed = 21;
    const int64_t Ks[] = {32, 96, 1024};
    const int M = 37; /* 16-row AMX groups, 4-row groups and a tail */
    const int64_t N = 24;
    for (int t = 0; t < N_TYPES; t++) {
        const lb_repack_layout *L = lb_repack_layout_of(kTypes[t]);
        for (size_t ki = 0; ki < 3; ki++) {
            const int64_t K = Ks[ki];
            uint8_t *plain = unit_rows(L->base, K, N, &seed);
            uint8_t *packed = malloc(lb_row_size(L->base, K) * N);
            lb_repack_tensor(L->type, plain, packed, K, N);
            float *x = int_acts(K, M, &seed);
            double *want = malloc(sizeof(double) * N * M), *mag = malloc(sizeof(double) * N * M);
            double *want8 = malloc(sizeof(double) * N * M), *mag8 = malloc(sizeof(double) * N * M);
            reference(L->base, plain, x, K, N, M, want, mag);
            for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
                if (!lb_test_level_available(kLevels[li])) continue;
                lb_cpu_force_level(kLevels[li]);
                float *y = lb_test_matmul(L->type, packed, K, N, x, M, 1);
                int bad = 0;
                if (lb_test_from_q8_256(L->type)) {
                    /* the int8 256-chunk GEMM's outputs: its own reference (its
                     * weight scale qmax / 127 is not 1), the float bound */
                    lb_test_reference_q8_256(L->base, plain, x, K, N, M, want8, mag8);
                    for (int m = 0; m < M; m++)
                        for (int64_t n = 0; n < N; n++) {
                            const size_t o = (size_t)m * N + n;
                            if (lb_test_from_bf16(L->type, N, M, m, n))
                                bad += !(fabs((double)y[o] - want8[o]) <= TOL * mag8[o] + 1e-30);
                            else
                                bad += (double)y[o] != want[o];
                        }
                } else {
                    for (int64_t i = 0; i < N * M; i++) bad += (double)y[i] != want[i];
                }
                CHECK_MSG(!bad, "%s at %s, K=%lld: %d of %lld outputs not exact", lb_type_name(L->type),
                          lb_isa_name(kLevels[li]), (long long)K, bad, (long long)(N * M));
                free(y);
            }
            lb_cpu_force_level(lb_cpu_detected());
            free(plain);
            free(packed);
            free(x);
            free(want);
            free(mag);
            free(want8);
            free(mag8);
        }
    }
}

static void test_float(void) {
    uint64_t seed = 77;
    /* 8224 = 257 blocks: the GEMV's second pass over K (256 blocks each) */
    const int64_t Ks[] = {32, 96, 2080, 8224};
    const int64_t Ns[] = {3, 4, 12, 13, 24, 40};
    for (int t = 0; t < N_TYPES; t++) {
        const lb_repack_layout *L = lb_repack_layout_of(kTypes[t]);
        for (size_t ki = 0; ki < 4; ki++)
            for (size_t ni = 0; ni < 6; ni++) {
                const int64_t K = Ks[ki], N = Ns[ni];
                if (ki == 3 && ni != 3) continue; /* long rows: one shape */
                const int Mmax = 48;
                uint8_t *plain = rand_rows(L->base, K, N, &seed);
                uint8_t *packed = malloc(lb_row_size(L->base, K) * N);
                lb_repack_tensor(L->type, plain, packed, K, N);
                float *x = rand_acts(K, Mmax, &seed);
                double *want = malloc(sizeof(double) * N * Mmax), *mag = malloc(sizeof(double) * N * Mmax);
                double *want16 = malloc(sizeof(double) * N * Mmax), *mag16 = malloc(sizeof(double) * N * Mmax);
                double *want8 = malloc(sizeof(double) * N * Mmax), *mag8 = malloc(sizeof(double) * N * Mmax);
                reference(L->base, plain, x, K, N, Mmax, want, mag);
                lb_test_reference_bf16(L->base, plain, x, K, N, Mmax, want16, mag16);
                lb_test_reference_q8_256(L->base, plain, x, K, N, Mmax, want8, mag8);
                for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
                    if (!lb_test_level_available(kLevels[li])) continue;
                    lb_cpu_force_level(kLevels[li]);
                    const int q8 = lb_test_from_q8_256(L->type);
                    for (int M = 1; M <= Mmax; M++) {
                        /* every M to 17 at K = 96; a few elsewhere (time) */
                        const int some = M == 1 || M == 4 || M == 7 || M == 17 || M == 32 || M == 48;
                        if (!some && (ki != 1 || M > 17)) continue;
                        /* decode (M <= 4) also on 3 threads: odd shares of the
                         * tails every thread may take */
                        const int threads[] = {1, 2, 3};
                        const int n_th = M <= 4 && ki == 2 ? 3 : 2;
                        for (int ti = 0; ti < n_th; ti++) {
                            const int nth = threads[ti];
                            float *y = lb_test_matmul(L->type, packed, K, N, x, M, nth);
                            const int bad = lb_test_compare_bf16(y, want, mag, q8 ? want8 : want16, q8 ? mag8 : mag16,
                                                                 L->type, N, 0, M, TOL, 0, &worst, lb_type_name(L->type));
                            CHECK_MSG(!bad, "%s at %s: K=%lld N=%lld M=%d threads=%d: %d outputs off",
                                      lb_type_name(L->type), lb_isa_name(kLevels[li]), (long long)K, (long long)N, M,
                                      nth, bad);
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
                free(want16);
                free(mag16);
                free(want8);
                free(mag8);
            }
    }
}

/* Each level's kernel entries: complete, and their 4-row quantizer equals
 * the reference one of the same chunk. */
static void test_entries(void) {
    uint64_t seed = 4;
    const int64_t K = 2080;
    float *x = rand_acts(K, 16, &seed);
    for (int i = 0; i < 32; i++) x[K + i] = 0.0f;
    for (int t = 0; t < N_TYPES; t++)
        for (size_t li = 0; li < sizeof kLevels / sizeof kLevels[0]; li++) {
            if (!lb_test_level_available(kLevels[li])) continue;
            const lb_kernel *k = lb_kernel_get_at(kTypes[t], kLevels[li]);
            CHECK(k && k->gemv && !k->vec_dot && k->act_type == LB_TYPE_Q8_0);
            if (!k) continue;
            if (kLevels[li] == LB_ISA_AVX2) {
                CHECK_MSG(k->isa == LB_ISA_AVX2, "%s: no AVX2 kernel", k->name);
                /* AVX-VNNI variant exactly when the CPU has it (and it is not disabled) */
                const int vnni = (lb_cpu_extra_features() & LB_CPU_AVXVNNI) != 0;
                CHECK_MSG(vnni == (strstr(k->name, "avxvnni") != NULL), "%s at avx2 with AVX-VNNI %s", k->name,
                          vnni ? "on" : "off");
            }
            if (!k->quantize_act_x4) continue;
            /* three grouped activation layouts: lb_block_q8_0x4a (4 rows,
             * chunked), lb_block_q8_0x4v (AVX-512 VNNI GEMM), lb_block_q8_0x16
             * (AMX GEMM, 16 rows) */
            const int x4v = k->act_x4_block == sizeof(lb_block_q8_0x4v);
            const int x16 = k->act_x4_block == sizeof(lb_block_q8_0x16);
            const int bf16 = k->act_x4_block == sizeof(lb_block_bf16x16);
            const int q8c = k->act_x4_block == LB_Q8_256X16_BLOCK;
            CHECK(k->gemm && (x16 || bf16 || q8c ? k->act_rows == 16
                                          : k->act_rows == 4 && (x4v || k->act_x4_block == sizeof(lb_block_q8_0x4a))));
            if (kLevels[li] == LB_ISA_AVX512)
                CHECK_MSG(k->isa == LB_ISA_AVX512 && x4v, "%s: no AVX-512 VNNI kernel", k->name);
            if (kLevels[li] == LB_ISA_AMX) {
                /* the bf16 tiles where the CPU has AMX-BF16 (and it is not turned
                 * off), else the int8 256-chunk tiles, else the per-block int8 tiles */
                const unsigned f = lb_cpu_extra_features();
                const int has_q8 = (f & LB_CPU_AMXQ8) != 0, has_bf = (f & LB_CPU_AMXBF16) != 0;
                CHECK_MSG(k->isa == LB_ISA_AMX && (has_bf ? bf16 : has_q8 ? q8c : x16), "%s: not the AMX %s kernel",
                          k->name, has_bf ? "bf16" : has_q8 ? "q8_256" : "int8");
            }
            /* which layout: compare with every reference */
            uint8_t *y = malloc(k->act_x4_block * (K / 32)), *r4 = malloc(k->act_x4_block * (K / 32)),
                    *r8 = malloc(k->act_x4_block * (K / 32));
            k->quantize_act_x4(x, (size_t)K, y, K);
            const size_t n = k->act_x4_block * (K / 32);
            if (q8c) {
                lb_quantize_q8_256x16_ref(x, (size_t)K, r4, K);
                CHECK_MSG(!memcmp(y, r4, lb_q8_256x16_scales_at(K) + (size_t)(K + 255) / 256 * 64),
                          "%s: 256-chunk quantizer differs from the reference", k->name);
                /* K = 96: a half step and a short chunk */
                lb_quantize_q8_256x16_ref(x, (size_t)K, r8, 96);
                k->quantize_act_x4(x, (size_t)K, y, 96);
                CHECK_MSG(!memcmp(y, r8, lb_q8_256x16_scales_at(96) + 64),
                          "%s: 256-chunk quantizer differs from the reference at K = 96", k->name);
            } else if (x16) {
                lb_quantize_q8_0x16_ref(x, (size_t)K, r4, K);
                CHECK_MSG(!memcmp(y, r4, n), "%s: 16-row quantizer differs from the reference", k->name);
            } else if (bf16) {
                lb_pack_bf16x16_ref(x, (size_t)K, r4, K);
                CHECK_MSG(!memcmp(y, r4, n), "%s: bf16 packer differs from the reference", k->name);
                /* and on the edges: denormals (to signed zero), NaN, infinities, ties to even */
                float e[16 * 32];
                const uint32_t special[] = {0x00000001u, 0x80700000u, 0x7f800001u, 0xffc00000u, 0x7f800000u,
                                            0xff800000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x7f7fffffu};
                for (int i = 0; i < 16 * 32; i++) {
                    const uint32_t u = special[i % 10] ^ (uint32_t)(i / 10 % 2) << 31;
                    memcpy(&e[i], &u, 4);
                }
                lb_block_bf16x16 pe, re;
                k->quantize_act_x4(e, 32, &pe, 32);
                lb_pack_bf16x16_ref(e, 32, &re, 32);
                CHECK_MSG(!memcmp(&pe, &re, sizeof pe), "%s: bf16 packer differs from the reference on edge values",
                          k->name);
            } else if (x4v) {
                lb_quantize_q8_0x4v_ref(x, (size_t)K, r4, K);
                CHECK_MSG(!memcmp(y, r4, n), "%s: 4-row quantizer differs from the reference", k->name);
            } else {
                lb_quantize_q8_0x4_c4_ref(x, (size_t)K, r4, K);
                lb_quantize_q8_0x4_c8_ref(x, (size_t)K, r8, K);
                CHECK_MSG(!memcmp(y, r4, n) || !memcmp(y, r8, n), "%s: 4-row quantizer differs from the reference",
                          k->name);
            }
            /* the plain quantizer too */
            block_q8_0 *p = malloc(sizeof *p * (K / 32)), *pr = malloc(sizeof *pr * (K / 32));
            k->quantize_act(x, p, K);
            lb_quantize_row_q8_0_ref(x, pr, K);
            CHECK(!memcmp(p, pr, sizeof *p * (K / 32)));
            free(p);
            free(pr);
            free(y);
            free(r4);
            free(r8);
        }
    free(x);
}

/* lb_matmul_multi: several matrices of one type (N with and without a plain
 * tail) in one region give exactly what one lb_matmul each gives; a mixed
 * pair falls back to separate calls. Decode (M = 1..4) at 1-17 threads and
 * prefill (M = 37). */
static void test_multi(void) {
    uint64_t seed = 99;
    const int64_t K = 256;
    const int64_t Ns[3] = {200, 133, 96}; /* above the driver's one-thread size at M = 1 */
    const int types[3] = {LB_TYPE_Q4_0_8X8, LB_TYPE_Q4_0_8X8, LB_TYPE_Q4_0_8X8};
    for (int mixed = 0; mixed < 2; mixed++) {
        uint8_t *packed[3];
        lb_matrix W[3];
        const lb_matrix *pw[3];
        for (int i = 0; i < 3; i++) {
            const int type = mixed && i == 1 ? LB_TYPE_Q8_0_4X8 : types[i];
            const lb_repack_layout *L = lb_repack_layout_of(type);
            uint8_t *plain = rand_rows(L->base, K, Ns[i], &seed);
            packed[i] = malloc(lb_row_size(L->base, K) * Ns[i]);
            lb_repack_tensor(type, plain, packed[i], K, Ns[i]);
            free(plain);
            W[i] = (lb_matrix){type, K, Ns[i], lb_row_size(type, K), packed[i], 0};
            pw[i] = &W[i];
        }
        /* M = 1..4: decode's paths (every thread quantizing its own copy of
         * the rows, the two-ended queues of units), at thread counts that do
         * not divide the units and one above PRIV_MAX_THREADS (16) */
        static const int Ms[] = {1, 2, 3, 4, 37}, threads[] = {1, 2, 3, 5, 17};
        for (int mi = 0; mi < 5; mi++)
        for (int ti = 0; ti < 5; ti++) {
            const int M = Ms[mi], nth = threads[ti];
            if (M == 37 && nth != 2) continue;
            float *x = rand_acts(K, M, &seed);
            size_t sc = 0;
            for (int i = 0; i < 3; i++) sc = LB_MAX(sc, lb_matmul_scratch_size(&W[i], M));
            void *scratch = lb_malloc_aligned(sc + 64);
            float *y1[3], *y2[3];
            size_t ldy[3];
            for (int i = 0; i < 3; i++) {
                y1[i] = malloc(sizeof(float) * Ns[i] * M);
                y2[i] = malloc(sizeof(float) * Ns[i] * M);
                for (int64_t e = 0; e < Ns[i] * M; e++) y2[i][e] = NAN;
                ldy[i] = (size_t)Ns[i];
                lb_matmul(&W[i], x, M, y1[i], ldy[i], scratch, 1);
            }
            lb_matmul_multi(pw, 3, x, M, y2, ldy, scratch, nth);
            for (int i = 0; i < 3; i++) {
                CHECK_MSG(!memcmp(y1[i], y2[i], sizeof(float) * Ns[i] * M),
                          "lb_matmul_multi (%s, M=%d, %d threads): matrix %d differs from one thread's lb_matmul",
                          mixed ? "mixed types" : "one type", M, nth, i);
                free(y1[i]);
                free(y2[i]);
            }
            lb_free_aligned(scratch);
            free(x);
        }
        for (int i = 0; i < 3; i++) free(packed[i]);
    }
}

/* lb_matmul_rows (a decoded MoE token's experts): each matrix times its
 * own row gives exactly what one lb_matmul of that row gives, for 1..20
 * matrices (past the driver's 32 a region only with a fallback: 20 here),
 * one type with a plain tail, a mixed set (separate calls), at 1-17 threads. */
static void test_rows(void) {
    uint64_t seed = 7;
    enum { NW = 20 };
    const int64_t K = 256, N = 136; /* 17 groups of 8: a plain tail for the 16-row layouts */
    for (int mixed = 0; mixed < 2; mixed++) {
        uint8_t *packed[NW];
        lb_matrix W[NW];
        const lb_matrix *pw[NW];
        float *x[NW], *y1[NW], *y2[NW];
        const float *cx[NW];
        for (int i = 0; i < NW; i++) {
            const int type = mixed && i == 3 ? LB_TYPE_Q8_0_4X8 : LB_TYPE_Q4_0_8X8;
            const lb_repack_layout *L = lb_repack_layout_of(type);
            uint8_t *plain = rand_rows(L->base, K, N, &seed);
            packed[i] = malloc(lb_row_size(L->base, K) * N);
            lb_repack_tensor(type, plain, packed[i], K, N);
            free(plain);
            W[i] = (lb_matrix){type, K, N, lb_row_size(type, K), packed[i], 0};
            pw[i] = &W[i];
            cx[i] = x[i] = rand_acts(K, 1, &seed);
            y1[i] = malloc(sizeof(float) * N);
            y2[i] = malloc(sizeof(float) * N);
        }
        static const int nws[] = {1, 2, 8, 20}, threads[] = {1, 2, 3, 17};
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++) {
                const int nw = nws[a], nth = threads[b];
                size_t sc = 0;
                for (int i = 0; i < nw; i++)
                    sc = LB_MAX(sc, LB_MAX(lb_matmul_scratch_size(&W[i], 1), lb_matmul_rows_scratch_size(&W[i], nw)));
                void *scratch = lb_malloc_aligned(sc + 64);
                for (int i = 0; i < nw; i++) {
                    lb_matmul(&W[i], x[i], 1, y1[i], (size_t)N, scratch, 1);
                    for (int64_t e = 0; e < N; e++) y2[i][e] = NAN;
                }
                lb_matmul_rows(pw, nw, cx, y2, scratch, nth);
                for (int i = 0; i < nw; i++)
                    CHECK_MSG(!memcmp(y1[i], y2[i], sizeof(float) * N),
                              "lb_matmul_rows (%s, %d matrices, %d threads): matrix %d differs from its lb_matmul",
                              mixed ? "mixed types" : "one type", nw, nth, i);
                lb_free_aligned(scratch);
            }
        for (int i = 0; i < NW; i++) free(packed[i]), free(x[i]), free(y1[i]), free(y2[i]);
    }
}

/* More rows than the driver hands the AMX GEMMs at once (1024): two calls. */
static void test_many_rows(void) {
    uint64_t seed = 5;
    const int64_t K = 64, N = 24;
    const int M = 1041;
    const int type = LB_TYPE_Q4_0_8X8;
    const lb_repack_layout *L = lb_repack_layout_of(type);
    uint8_t *plain = rand_rows(L->base, K, N, &seed);
    uint8_t *packed = malloc(lb_row_size(L->base, K) * N);
    lb_repack_tensor(type, plain, packed, K, N);
    float *x = rand_acts(K, M, &seed);
    double *want = malloc(sizeof(double) * N * M), *mag = malloc(sizeof(double) * N * M);
    double *want16 = malloc(sizeof(double) * N * M), *mag16 = malloc(sizeof(double) * N * M);
    reference(L->base, plain, x, K, N, M, want, mag);
    if (lb_test_from_q8_256(type)) lb_test_reference_q8_256(L->base, plain, x, K, N, M, want16, mag16);
    else lb_test_reference_bf16(L->base, plain, x, K, N, M, want16, mag16);
    float *y = lb_test_matmul(type, packed, K, N, x, M, 2);
    const int bad = lb_test_compare_bf16(y, want, mag, want16, mag16, type, N, 0, M, TOL, 0, NULL, lb_type_name(type));
    CHECK_MSG(!bad, "%s, M=%d: %d outputs off", lb_type_name(type), M, bad);
    free(y), free(plain), free(packed), free(x), free(want), free(mag), free(want16), free(mag16);
}

int main(void) {
    test_entries();
    test_many_rows();
    test_exact();
    test_multi();
    test_rows();
    test_float();
    /* a 16 KiB L2: the whole-M kernels (AVX-512, AMX) get the activation
     * rows in several tiles (kernels/matmul.c) */
    printf("again with a 16 KiB L2\n");
    lb_cpu_set_l2_bytes(16 << 10);
    test_exact();
    lb_cpu_set_l2_bytes(0);
    /* the GEMVs' other prefetch path (into L1 or L2, kernels/cpu.h) */
    const int l2 = lb_cpu_prefetch_l2();
    printf("again with prefetches into %s\n", l2 ? "L1" : "L2");
    lb_cpu_set_prefetch_l2(!l2);
    test_exact();
    lb_cpu_set_prefetch_l2(-1);
    if (lb_cpu_extra_features() & LB_CPU_AVXVNNI) {
        /* once more without AVX-VNNI: the plain AVX2 products at the avx2 level */
        printf("again without AVX-VNNI\n");
        lb_cpu_disable_features(LB_CPU_AVXVNNI);
        test_entries();
        test_exact();
        test_float();
        lb_cpu_disable_features(0);
    }
    if (lb_cpu_extra_features() & LB_CPU_AMXQ8) {
        /* once more without AMX-BF16: the int8 GEMM on 256-value chunks at the amx level */
        printf("again without AMX-BF16\n");
        lb_cpu_disable_features(LB_CPU_AMXBF16);
        test_entries();
        test_many_rows();
        test_exact();
        test_float();
        /* and without it either: the per-block int8 tile GEMM */
        printf("again without AMX-BF16 and q8_256\n");
        lb_cpu_disable_features(LB_CPU_AMXBF16 | LB_CPU_AMXQ8);
        test_entries();
        test_exact();
        test_float();
        lb_cpu_disable_features(0);
    }
    printf("worst error: %.3g of the bound\n", worst);
    return lb_test_result("test_repack_kernels");
}
