/* QIGen (kernels/qigen.h, formats/repack_qg.h, tools/qigen/qigen.c):
 *  - layout: the GQ*_QG types' ids, traits and names; repack / unpack round
 *    trip of random bytes (padding included) with plain tail rows; the
 *    re-encoded code positions, scale / zero / padding planes where
 *    formats/repack_qg.h says; group to_float = the plain rows' to_float;
 *  - the generated table: every candidate satisfies eq. (4) and its
 *    Mini-GEMV block eq. (5) with t_b mod t_u VL = 0, m_b mod 128 = 0; the
 *    default uses the most registers; a t_u = 1 kernel per m_u (remainders);
 *  - every generated kernel (each ISA this CPU runs, 12 types, both
 *    variants, every candidate) through lb_qg_gemv, with enough rows for
 *    whole tiles and remainders, m_b = the model's and 128 (K blocking),
 *    an offset row range and 2 activation rows:
 *      exact: s = 1, integer activations with one +-127 per 32 (Q8_0
 *             quantizes them with d = 1), so every output is an integer
 *             below 2^24 that both variants must give exactly;
 *      float: quantized random weights and activations; i8 against the
 *             plain reference dot (Q8_0 activations, lb_vec_dot_gq*_ref),
 *             f32 against a double dot of the dequantized weights and the
 *             fp32 activations, both within 1e-5 * sum |w| |x|;
 *  - lb_matmul at every level (scalar reference, AVX2, AVX-512, AMX / NEON,
 *    dotprod, i8mm): K = 128, 256, 640, 2048, N = 1..17, 31, 48 (plain
 *    tail rows go to the plain reference), M = 1..17, 32 (the prefill GEMM
 *    for M >= 4 and g >= 32; at amx with AMX-BF16, for M >= 16 and every g,
 *    held to the bf16 reference of tests/test_matmul_util.h), 1 and 2
 *    threads, exact and float data; again without AMX-BF16 where it runs;
 *  - the prefill GEMM with every product at its integer extreme (exact);
 *  - dispatch and repack at load: a non-scalar kernel per type per level;
 *  - the tune file: applied, malformed / unknown / missing ignored. */
#include "test_util.h"

#include <omp.h>

#include "formats/repack_qg.h"
#include "kernels/dispatch.h"
#include "kernels/qigen.h"
#include "model/repack.h"
#include "test_matmul_util.h"

#define TOL 1e-5

static const lb_isa kLevels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX, LB_ISA_NEON, LB_ISA_DOTPROD, LB_ISA_I8MM};
enum { N_LEVELS = sizeof kLevels / sizeof kLevels[0] };

static int gq(int i) { return LB_GQ_FIRST + i; }
static size_t rsize(int type, int64_t K) { return lb_row_size(type, K); }

/* ---- data ---- */

/* exact: s = 1, random codes and zeros; float: the reference quantizer on random values */
static uint8_t *make_rows(int type, int64_t K, int64_t N, int exact, uint64_t *seed) {
    const int bits = lb_gq_bits(type), group = lb_gq_group(type);
    const size_t rs = rsize(type, K), bs = LB_GQ_SIZE(bits, group);
    uint8_t *w = calloc((size_t)N, rs);
    if (exact) {
        for (int64_t b = 0; b < N * (K / QK_GQ); b++) {
            uint8_t *blk = w + b * bs;
            for (int j = 0; j < QK_GQ; j++) lb_gq_set_code(blk, bits, j, (int)(lb_test_rand(seed) % (1u << bits)));
            for (int gi = 0; gi < QK_GQ / group; gi++) {
                const lb_fp16 one = lb_f32_to_fp16(1.0f);
                memcpy(blk + LB_GQ_S_OFF(bits) + 2 * gi, &one, 2);
                blk[LB_GQ_Z_OFF(bits, group) + gi] = (uint8_t)(lb_test_rand(seed) % (1u << bits));
            }
        }
    } else {
        float *row = malloc(sizeof(float) * K);
        for (int64_t n = 0; n < N; n++) {
            for (int64_t i = 0; i < K; i++) row[i] = lb_test_randf(seed) * 0.05f * (float)(1 + n % 5) + 0.02f * (float)(n % 3);
            lb_traits(type)->from_float(row, w + n * rs, K);
        }
        free(row);
    }
    return w;
}

static float *make_acts(int64_t K, int M, int exact, uint64_t *seed) {
    float *x = malloc(sizeof(float) * K * M);
    for (int64_t i = 0; i < K * M; i++) {
        if (exact) {
            x[i] = (float)((int)(lb_test_rand(seed) % 255) - 127);
            if (i % 32 == 7) x[i] = lb_test_rand(seed) & 1 ? 127.0f : -127.0f;
        } else {
            x[i] = lb_test_randf(seed) * (i % 61 == 0 ? 6.0f : 1.0f);
        }
    }
    return x;
}

/* want / mag per (m, n): i8 = the plain reference dot on Q8_0 activations,
 * f32 = a double dot with the fp32 activations; mag = sum |w x|. */
static void reference(int type, int variant, const uint8_t *plain, const float *x, int64_t K, int64_t N, int M,
                      double *want, double *mag) {
    const lb_type_traits *t = lb_traits(type), *q8 = lb_traits(LB_TYPE_Q8_0);
    const size_t rs = rsize(type, K);
    void *q = malloc(rsize(LB_TYPE_Q8_0, K));
    float *w = malloc(sizeof(float) * K), *a = malloc(sizeof(float) * K);
    for (int m = 0; m < M; m++) {
        q8->from_float(x + m * K, q, K);
        q8->to_float(q, a, K);
        for (int64_t n = 0; n < N; n++) {
            t->to_float(plain + n * rs, w, K);
            double exact = 0, g = 0;
            const float *xa = variant == LB_QG_I8 ? a : x + m * K;
            for (int64_t i = 0; i < K; i++) exact += (double)w[i] * xa[i], g += fabs((double)w[i] * xa[i]);
            if (variant == LB_QG_I8) {
                float s;
                t->vec_dot(K, &s, plain + n * rs, q);
                exact = s;
            }
            want[m * N + n] = exact;
            mag[m * N + n] = g;
        }
    }
    free(q);
    free(w);
    free(a);
}

/* Outputs [n0, N) of M rows against want (and, with want16, the AMX-BF16
 * GEMM's outputs against the bf16 reference): the number off. */
static int compare_bf16(const float *y, const double *want, const double *mag, const double *want16,
                        const double *mag16, int T, int64_t N, int n0, int M, int exact, const char *what) {
    return lb_test_compare_bf16(y, want, mag, want16, mag16, T, N, n0, M, TOL, exact, NULL, what);
}

static int compare(const float *y, const double *want, const double *mag, int64_t N, int n0, int M, int exact,
                   const char *what) {
    return compare_bf16(y, want, mag, NULL, NULL, 0, N, n0, M, exact, what);
}

/* ---- layout ---- */

static void test_layout(void) {
    uint64_t seed = 3;
    for (int i = 0; i < 12; i++) {
        const int base = gq(i), T = lb_qg_type_of(base), bits = lb_gq_bits(base), group = lb_gq_group(base);
        CHECK(T == LB_TYPE_GQ4_G128_QG + i && lb_gq_type_of_qg(T) == base);
        const lb_repack_layout *L = lb_repack_layout_of(T);
        CHECK(L && L->rows == 16 && L->chunk == 4 && L->base == base);
        CHECK(lb_type_base(T) == base && lb_type_rows(T) == 16 && lb_repack_find(base, 16, 4) == T);
        const lb_type_traits *t = lb_traits(T);
        CHECK(t && t->blck == QK_GQ && t->type_size == lb_traits(base)->type_size);
        char nm[32];
        snprintf(nm, sizeof nm, "%s_QG", lb_type_name(base));
        CHECK_MSG(t && !strcmp(t->name, nm), "%s", t ? t->name : "(no traits)");
        CHECK(lb_type_from_name(nm) == T);
        CHECK(lb_type_bits_per_weight(T) == lb_type_bits_per_weight(base));

        const int64_t K = 256, Ns[] = {1, 16, 17, 31, 48};
        const size_t rs = rsize(base, K), xbs = LB_QG_XBS(bits, group);
        for (int ni = 0; ni < 5; ni++) {
            const int64_t N = Ns[ni];
            const size_t bytes = rs * (size_t)N;
            uint8_t *plain = malloc(bytes), *packed = malloc(bytes), *back = malloc(bytes);
            for (size_t b = 0; b < bytes; b++) plain[b] = (uint8_t)lb_test_rand(&seed);
            lb_repack_tensor(T, plain, packed, K, N);
            lb_unpack_tensor(T, packed, back, K, N);
            CHECK_MSG(!memcmp(plain, back, bytes), "%s N=%lld: unpack(repack(x)) != x", nm, (long long)N);
            const size_t tail = rs * (size_t)(N - N % 16);
            CHECK(!memcmp(plain + tail, packed + tail, bytes - tail));
            if (N >= 16) {
                /* positions as formats/repack_qg.h documents them, group 0 */
                int ok = 1;
                const int G = QK_GQ / group, pad = (int)LB_GQ_SIZE(bits, group) - (16 * bits + 3 * G);
                for (int b = 0; b < 2; b++) {
                    const uint8_t *xb = packed + b * xbs;
                    for (int r = 0; r < 16; r++) {
                        const uint8_t *blk = plain + r * rs + b * LB_GQ_SIZE(bits, group);
                        int q[128];
                        for (int j = 0; j < 128; j++) q[j] = lb_gq_get_code(blk, bits, j);
                        for (int c = 0; c < 4 * bits; c++)
                            for (int e = 0; e < 4; e++) {
                                const int byte = xb[64 * c + 4 * r + e];
                                int want;
                                if (bits == 4) want = q[8 * c + e] | q[8 * c + 4 + e] << 4;
                                else if (bits == 2)
                                    want = q[16 * c + e] | q[16 * c + 4 + e] << 2 | q[16 * c + 8 + e] << 4 | q[16 * c + 12 + e] << 6;
                                else {
                                    const int tt = c / 3, wi = c % 3, b0 = 32 * tt;
                                    want = q[b0 + 8 * wi + e] | q[b0 + 8 * wi + 4 + e] << 3;
                                    if (wi < 2) want |= (q[b0 + 24 + 4 * wi + e] & 3) << 6;
                                    else want |= (q[b0 + 24 + e] >> 2) << 6 | (q[b0 + 28 + e] >> 2) << 7;
                                }
                                ok &= byte == want;
                            }
                        for (int j = 0; j < 128; j++) ok &= lb_qg_get_code(xb, bits, r, j) == q[j];
                        for (int gi = 0; gi < G; gi++) {
                            ok &= !memcmp(xb + 256 * bits + 32 * gi + 2 * r, blk + LB_GQ_S_OFF(bits) + 2 * gi, 2);
                            ok &= xb[256 * bits + 32 * G + 16 * gi + r] == blk[LB_GQ_Z_OFF(bits, group) + gi];
                        }
                        ok &= !memcmp(xb + 256 * bits + 48 * G + pad * r, blk + 16 * bits + 3 * G, (size_t)pad);
                    }
                }
                CHECK_MSG(ok, "%s: bytes not where formats/repack_qg.h says", nm);
                /* group to_float = the plain rows' */
                float *a = malloc(sizeof(float) * K * 16), *bf = malloc(sizeof(float) * K * 16);
                t->to_float(packed, a, K * 16);
                for (int r = 0; r < 16; r++) lb_traits(base)->to_float(plain + r * rs, bf + r * K, K);
                int same = 1;
                for (int64_t k = 0; k < K * 16; k++) same &= a[k] == bf[k] || (isnan(a[k]) && isnan(bf[k]));
                CHECK_MSG(same, "%s: group to_float differs", nm);
                free(a);
                free(bf);
            }
            free(plain);
            free(packed);
            free(back);
        }
    }
}

/* ---- the generated table ---- */

static void test_table(void) {
    int n_sets = 0;
    for (const lb_qg_set *s = lb_qg_sets; s->type >= 0; s++, n_sets++) {
        const int bits = lb_gq_bits(s->type), group = lb_gq_group(s->type);
        const char *nm = lb_type_name(s->type);
        CHECK(bits > 0 && s->vl * 4 * (16 / s->vl) == 64 && s->n_cand > 0 && s->def >= 0 && s->def < s->n_cand);
        CHECK(lb_qg_find(s->isa, s->type, s->variant) == s);
        CHECK((s->cvt != NULL) == (s->variant == LB_QG_I8 && group >= 32));
        const double gamma = 8192.0 * s->l1_kib, xbits = s->variant == LB_QG_F32 ? 32 : 9;
        const double wbits = lb_type_bits_per_weight(s->type);
        int most = 0, most_whole = 0, fewest_one = 0, most_four = 0; /* registers: any candidate, whole
                                       16-row-group tiles, the fewest among one-group tiles, the most among four-group tiles */
        for (int i = 0; i < s->n_cand; i++) {
            const lb_qg_cand *c = &s->cand[i];
            const int regs = c->mu + c->mu * c->tu + c->tu;
            CHECK_MSG(regs <= s->eta, "%s %s: eq. (4) %d > %d", nm, lb_qg_isa_name(s->isa), regs, s->eta);
            CHECK_MSG(c->tb % 16 == 0 && c->tb % (c->tu * s->vl) == 0 && c->mb % 128 == 0 && c->mb > 0,
                      "%s: m_b %d t_b %d t_u %d", nm, c->mb, c->tb, c->tu);
            CHECK_MSG(xbits * c->mb + wbits * c->mb * c->tb + 32.0 * c->tb <= gamma || c->mb == 128,
                      "%s %s (%d, %d): eq. (5) over gamma", nm, lb_qg_isa_name(s->isa), c->mu, c->tu);
            CHECK_MSG(lb_qg_find_cand(s, c->mu, 1) >= 0, "%s: no t_u = 1 kernel for m_u = %d", nm, c->mu);
            CHECK(c->fn != NULL);
            most = LB_MAX(most, regs);
            if (c->tu * s->vl % 16 == 0) most_whole = LB_MAX(most_whole, regs);
            if (c->tu * s->vl == 16 && (!fewest_one || regs < fewest_one)) fewest_one = regs;
            if (c->tu * s->vl == 64) most_four = LB_MAX(most_four, regs);
        }
        const lb_qg_cand *d = &s->cand[s->def];
        if (s->isa == LB_QG_AVX2 && fewest_one) {
            /* AVX2: one 16-row group per tile, the fewest registers (one stream the prefetch keeps ahead) */
            CHECK_MSG(d->tu * s->vl == 16 && d->mu + d->mu * d->tu + d->tu == fewest_one,
                      "%s avx2: the default (%d, %d) is not the one-group candidate with the fewest registers", nm,
                      d->mu, d->tu);
            continue;
        }
        if (s->isa == LB_QG_AVX512 && most_four) {
            /* AVX-512: four 16-row groups per tile, the most registers */
            CHECK_MSG(d->tu * s->vl == 64 && d->mu + d->mu * d->tu + d->tu == most_four,
                      "%s avx512: the default (%d, %d) is not the four-group candidate with the most registers", nm,
                      d->mu, d->tu);
            continue;
        }
        /* elsewhere: the most registers among whole-group tiles (any tile if none is) */
        CHECK_MSG(d->mu + d->mu * d->tu + d->tu == (most_whole ? most_whole : most) &&
                      (!most_whole || d->tu * s->vl % 16 == 0),
                  "%s %s: the default (%d, %d) is not the register-maximal whole-group candidate", nm,
                  lb_qg_isa_name(s->isa), d->mu, d->tu);
    }
    /* every type at every ISA of this architecture, both variants */
#if defined(__x86_64__)
    const int isas[] = {LB_QG_AVX2, LB_QG_AVX512}, n_isa = 2;
#elif defined(__aarch64__)
    const int isas[] = {LB_QG_NEON, LB_QG_DOTPROD}, n_isa = 2;
#else
    const int isas[] = {0}, n_isa = 0;
#endif
    for (int k = 0; k < n_isa; k++)
        for (int i = 0; i < 12; i++)
            for (int v = 0; v < LB_QG_N_VAR; v++)
                CHECK_MSG(lb_qg_find(isas[k], gq(i), v) != NULL, "no %s %s set for %s", lb_qg_isa_name(isas[k]),
                          lb_qg_variant_name(v), lb_type_name(gq(i)));
    CHECK(n_sets == 24 * n_isa);
}

/* ---- every generated kernel, directly ---- */

static int isa_runs(int qisa) { return lb_cpu_runs(lb_qg_level_of_isa(qisa)); }

static void test_kernels(void) {
    uint64_t seed = 11;
    const int M = 2;
    for (int qisa = 0; qisa < LB_QG_N_ISA; qisa++) {
        if (!isa_runs(qisa) || !lb_qg_find(qisa, LB_TYPE_GQ4_G128, LB_QG_I8)) continue;
        int runs = 0;
        const double t0 = lb_time_s();
        for (int i = 0; i < 12; i++) {
            const int type = gq(i), T = lb_qg_type_of(type);
            const lb_qg_set *s8 = lb_qg_find(qisa, type, LB_QG_I8);
            /* rows: one tile of the widest candidate and a remainder */
            int tumax = 1;
            for (int c = 0; c < s8->n_cand; c++) tumax = LB_MAX(tumax, s8->cand[c].tu);
            const int64_t N = ((tumax + 2) * s8->vl + 15) / 16 * 16 + 16, K = 640;
            for (int exact = 1; exact >= 0; exact--) {
                uint8_t *plain = make_rows(type, K, N, exact, &seed);
                uint8_t *packed = malloc(rsize(type, K) * N);
                lb_repack_tensor(T, plain, packed, K, N);
                float *x = make_acts(K, M, exact, &seed);
                void *q = malloc(rsize(LB_TYPE_Q8_0, K) * M);
                for (int m = 0; m < M; m++)
                    lb_quantize_row_q8_0_ref(x + m * K, (char *)q + m * rsize(LB_TYPE_Q8_0, K), K);
                for (int v = 0; v < LB_QG_N_VAR; v++) {
                    const lb_qg_set *s = lb_qg_find(qisa, type, v);
                    double *want = malloc(sizeof(double) * N * M), *mag = malloc(sizeof(double) * N * M);
                    reference(type, v, plain, x, K, N, M, want, mag);
                    const void *A = v == LB_QG_I8 ? q : (const void *)x;
                    const size_t ars = v == LB_QG_I8 ? rsize(LB_TYPE_Q8_0, K) : sizeof(float) * K;
                    float *y = malloc(sizeof(float) * N * M);
                    for (int c = 0; c < s->n_cand; c++)
                        for (int pass = 0; pass < 2; pass++) {
                            /* pass 0: the model's m_b, all rows; 1: m_b = 128 from row 16 */
                            const int n0 = pass ? 16 : 0, mb = pass ? 128 : 0;
                            for (int64_t k = 0; k < N * M; k++) y[k] = NAN;
                            lb_qg_gemv(s, c, mb, K, packed, rsize(type, K), n0, (int)N, A, ars, M, y, (size_t)N);
                            char what[128];
                            snprintf(what, sizeof what, "%s %s %s (m_u, t_u) = (%d, %d)%s %s", lb_qg_isa_name(qisa),
                                     lb_type_name(type), lb_qg_variant_name(v), s->cand[c].mu, s->cand[c].tu,
                                     pass ? " m_b = 128" : "", exact ? "exact" : "float");
                            const int bad = compare(y, want, mag, N, n0, M, exact, what);
                            CHECK_MSG(!bad, "%s: %d of %lld outputs off (K=%lld N=%lld)", what, bad, (long long)(N * M),
                                      (long long)K, (long long)N);
                            runs++;
                        }
                    free(y);
                    free(want);
                    free(mag);
                }
                free(plain);
                free(packed);
                free(x);
                free(q);
            }
        }
        printf("  %s: %d generated-kernel runs in %.1f s\n", lb_qg_isa_name(qisa), runs, lb_time_s() - t0);
    }
}

/* ---- lb_matmul at every level ---- */

static void test_matmul(void) {
    static const int64_t Ks[] = {128, 256, 640, 2048};
    static const int Ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 48};
    static const int Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 32};
    uint64_t seed = 21;
    for (size_t li = 0; li < N_LEVELS; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        const double t0 = lb_time_s();
        int runs = 0;
        for (int i = 0; i < 12; i++) {
            const int type = gq(i), T = lb_qg_type_of(type);
            for (int ni = 0; ni < 19; ni++) {
                const int64_t N = Ns[ni], K = Ks[(i + ni) % 4];
                /* every M over the N loop; M = 32 (prefill GEMM) for every type */
                const int M = ni == 18 ? 32 : Ms[(ni + 5 * i) % 18], nth = 1 + (ni + i) % 2, exact = (ni + i) % 3 != 0;
                if (kLevels[li] == LB_ISA_SCALAR && K == 2048 && M > 8) continue; /* slow and nothing new */
                uint8_t *plain = make_rows(type, K, N, exact, &seed);
                uint8_t *packed = malloc(rsize(type, K) * N);
                lb_repack_tensor(T, plain, packed, K, N);
                float *x = make_acts(K, M, exact, &seed);
                double *want = malloc(sizeof(double) * N * M), *mag = malloc(sizeof(double) * N * M);
                reference(type, LB_QG_I8, plain, x, K, N, M, want, mag);
                double *want16 = NULL, *mag16 = NULL;
                if (lb_kernel_get(T)->act_x4_block == sizeof(lb_block_bf16x16)) {
                    want16 = malloc(sizeof(double) * N * M), mag16 = malloc(sizeof(double) * N * M);
                    lb_test_reference_bf16(type, plain, x, K, N, M, want16, mag16);
                }
                float *y = lb_test_matmul(T, packed, K, N, x, M, nth);
                char what[128];
                snprintf(what, sizeof what, "%s (%s) at %s K=%lld N=%lld M=%d threads=%d %s", lb_type_name(T),
                         lb_kernel_get(T)->name, lb_isa_name(kLevels[li]), (long long)K, (long long)N, M, nth,
                         exact ? "exact" : "float");
                const int bad = compare_bf16(y, want, mag, want16, mag16, T, N, 0, M, exact, what);
                free(want16);
                free(mag16);
                CHECK_MSG(!bad, "%s: %d of %lld outputs off", what, bad, (long long)(N * M));
                runs++;
                free(y);
                free(plain);
                free(packed);
                free(x);
                free(want);
                free(mag);
            }
        }
        printf("  lb_matmul at %s: %d products in %.1f s\n", lb_isa_name(kLevels[li]), runs, lb_time_s() - t0);
    }
    lb_cpu_force_level(lb_cpu_detected());
}

/* The prefill GEMM at its integer bounds: weights q - z = +-(2^b - 1) for
 * whole rows (q at one end, z at the other) against activations of +-127,
 * every product at its extreme, so the AVX2 tile's int16 pair sums reach
 * their largest (31 * 127 per product after its +16 bias). Exact: every sum
 * is an integer below 2^24. */
static void test_gemm_extremes(void) {
    const int64_t K = 256, N = 48;
    enum { M = 8 };
    for (size_t li = 0; li < N_LEVELS; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        for (int i = 0; i < 12; i++) {
            const int type = gq(i), T = lb_qg_type_of(type), bits = lb_gq_bits(type), group = lb_gq_group(type);
            const int top = (1 << bits) - 1;
            const size_t rs = rsize(type, K), bs = LB_GQ_SIZE(bits, group);
            uint8_t *plain = calloc((size_t)N, rs), *packed = malloc(rs * N);
            for (int64_t n = 0; n < N; n++) /* rows: +top, -top, then alternating by group */
                for (int64_t b = 0; b < K / QK_GQ; b++) {
                    uint8_t *blk = plain + n * rs + b * bs;
                    for (int gi = 0; gi < QK_GQ / group; gi++) {
                        const int hi = n % 3 == 0 || (n % 3 == 2 && gi % 2 == 0);
                        const lb_fp16 one = lb_f32_to_fp16(1.0f);
                        memcpy(blk + LB_GQ_S_OFF(bits) + 2 * gi, &one, 2);
                        blk[LB_GQ_Z_OFF(bits, group) + gi] = (uint8_t)(hi ? 0 : top);
                        for (int j = gi * group; j < (gi + 1) * group; j++) lb_gq_set_code(blk, bits, j, hi ? top : 0);
                    }
                }
            lb_repack_tensor(T, plain, packed, K, N);
            float x[M * 256];
            for (int m = 0; m < M; m++) /* +127, -127, alternating per 32, per 64, ... */
                for (int64_t k = 0; k < K; k++) x[m * K + k] = (m == 0 || ((k >> (4 + m)) & 1)) ? 127.0f : -127.0f;
            double want[M * 48], mag[M * 48];
            reference(type, LB_QG_I8, plain, x, K, N, M, want, mag);
            float *y = lb_test_matmul(T, packed, K, N, x, M, 1);
            char what[128];
            snprintf(what, sizeof what, "%s (%s) at %s, extreme weights and activations", lb_type_name(T),
                     lb_kernel_get(T)->name, lb_isa_name(kLevels[li]));
            const int bad = compare(y, want, mag, N, 0, M, 1, what);
            CHECK_MSG(!bad, "%s: %d of %lld outputs off", what, bad, (long long)(N * M));
            free(y);
            free(plain);
            free(packed);
        }
    }
    lb_cpu_force_level(lb_cpu_detected());
}

/* ---- dispatch, repack at load ---- */

static void test_dispatch(void) {
    for (size_t li = 1; li < N_LEVELS; li++) {
        if (!lb_test_level_available(kLevels[li])) continue;
        lb_cpu_force_level(kLevels[li]);
        for (int i = 0; i < 12; i++) {
            const int T = lb_qg_type_of(gq(i));
            const lb_kernel *k = lb_kernel_get(T);
            CHECK_MSG(k && k->isa != LB_ISA_SCALAR && k->gemv, "%s at %s: %s", lb_type_name(T), lb_isa_name(kLevels[li]),
                      k ? k->name : "none");
            CHECK_MSG(lb_repack_target(gq(i)) == T, "%s is not repacked at %s", lb_type_name(gq(i)), lb_isa_name(kLevels[li]));
            /* AMX-BF16 folds the scales into the weights: every group size has the GEMM there */
            const int bf = k && k->act_x4_block == sizeof(lb_block_bf16x16);
            CHECK(bf == (kLevels[li] == LB_ISA_AMX && (lb_cpu_extra_features() & LB_CPU_AMXBF16) != 0));
            CHECK(!k || (k->gemm != NULL) == (lb_gq_group(gq(i)) >= 32 || bf));
        }
    }
    lb_cpu_force_level(LB_ISA_SCALAR);
    CHECK(lb_repack_target(LB_TYPE_GQ4_G128) == LB_TYPE_GQ4_G128); /* the reference reads the plain layout */
    lb_cpu_force_level(lb_cpu_detected());
}

/* ---- the tune file ---- */

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(text, f);
    fclose(f);
    return 1;
}

static void test_tune(void) {
#if defined(__x86_64__)
    const int qisa = LB_QG_AVX2;
#else
    const int qisa = LB_QG_NEON;
#endif
    const lb_qg_set *s = lb_qg_find(qisa, LB_TYPE_GQ3_G64, LB_QG_I8);
    if (!s) return;
    const char *path = lb_test_tmp("qigen-tune.txt");
    const int want = lb_qg_find_cand(s, 1, 1);
    char text[512];
    snprintf(text, sizeof text, "# comment\n\n%s GQ3_G64 i8 1 1 12.5\nneon GQ2_G16 f32 2 2\navx512 GQ4_G16 i8 2 1 3\n",
             lb_qg_isa_name(qisa));
    CHECK(write_text(path, text));
    CHECK(lb_qg_load_tune(path) >= 1);
    CHECK(lb_qg_choice(s) == want);
    /* malformed: ignored as a whole, the earlier choice stays */
    const char *bad[] = {"avx2 GQ3_G64 i8 x 1\n", "avx2 GQ3_G64 i8 1\n", "avx2 Q4_0 i8 1 1\n", "sse GQ3_G64 i8 1 1\n",
                         "avx2 GQ3_G64 int4 1 1\n", "avx2 GQ3_G64 i8 1 1 2.0 extra\n", "avx2 GQ3_G64 i8 -1 1\n",
                         "\x01\x02\xff\xfe binary\n", "avx2 GQ3_G64 i8 1 1 nan\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char t2[256];
        snprintf(t2, sizeof t2, "%s GQ3_G64 i8 2 1\n%s", lb_qg_isa_name(qisa), bad[i]);
        CHECK(write_text(path, t2));
        CHECK_MSG(lb_qg_load_tune(path) == -1, "malformed line %zu accepted", i);
        CHECK(lb_qg_choice(s) == want);
    }
    /* a line longer than the reader's buffer */
    FILE *f = fopen(path, "w");
    if (f) {
        for (int i = 0; i < 2000; i++) fputc('x', f);
        fputc('\n', f);
        fclose(f);
    }
    CHECK(lb_qg_load_tune(path) == -1 && lb_qg_choice(s) == want);
    /* a candidate not generated: that line skipped, the default kept */
    snprintf(text, sizeof text, "%s GQ3_G64 i8 3 3\n", lb_qg_isa_name(qisa));
    CHECK(write_text(path, text));
    CHECK(lb_qg_load_tune(path) == 0 && lb_qg_choice(s) == s->def);
    /* missing: nothing changes */
    CHECK(lb_qg_load_tune(lb_test_tmp("no-such-tune-file.txt")) == -1);
    /* written (merging with what is there) and read back */
    remove(path);
    lb_qg_tune_entry e[2] = {{qisa, LB_TYPE_GQ3_G64, LB_QG_I8, 2, 1, 10.0}, {qisa, LB_TYPE_GQ2_G32, LB_QG_F32, 1, 2, 3.0}};
    CHECK(lb_qg_write_tune(path, e, 2, "test") == 0);
    lb_qg_tune_entry e2 = {qisa, LB_TYPE_GQ3_G64, LB_QG_I8, 1, 2, 11.0};
    CHECK(lb_qg_write_tune(path, &e2, 1, NULL) == 0);
    CHECK(lb_qg_load_tune(path) == 2);
    CHECK(lb_qg_choice(s) == lb_qg_find_cand(s, 1, 2));
    CHECK(lb_qg_choice(lb_qg_find(qisa, LB_TYPE_GQ2_G32, LB_QG_F32)) ==
          lb_qg_find_cand(lb_qg_find(qisa, LB_TYPE_GQ2_G32, LB_QG_F32), 1, 2));
    /* forced beats the file; -1 returns to it */
    lb_qg_set_choice(s, 0);
    CHECK(lb_qg_choice(s) == 0);
    lb_qg_set_choice(s, -1);
    CHECK(lb_qg_choice(s) == lb_qg_find_cand(s, 1, 2));
    /* back to the defaults */
    CHECK(write_text(path, "# empty\n"));
    CHECK(lb_qg_load_tune(path) == 0 && lb_qg_choice(s) == s->def);
    remove(path);
}

int main(void) {
    setenv("LOWBIT_TUNE_FILE", "off", 1); /* the defaults, whatever the user's cache holds */
    test_layout();
    test_table();
    test_tune();
    test_kernels();
    test_matmul();
    test_gemm_extremes();
    test_dispatch();
    if (lb_cpu_extra_features() & LB_CPU_AMXBF16) {
        /* once more without AMX-BF16: the int8 GEMM (tiles as Q8_0_4X4) at the amx level */
        printf("again without AMX-BF16\n");
        lb_cpu_disable_features(LB_CPU_AMXBF16);
        test_matmul();
        test_gemm_extremes();
        test_dispatch();
        lb_cpu_disable_features(0);
    }
    return lb_test_result("test_qigen");
}
