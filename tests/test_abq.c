/* ABQ_W{1..8}, ABQ_W2S (formats/abq.h) and the ABQ_ACT activations:
 *  - ids, names, sizes, exact bits per weight, fallbacks;
 *  - bit balance: a group on the grid {-2..2} d encodes and decodes exactly,
 *    every code 0..4 appears, and W2S beats W2 on Gaussian weights;
 *  - the quantizer: the clipping search never loses to clip 1, importance
 *    helps the weighted error; degenerate groups (zero, NaN, inf);
 *  - activations at every p = 1..8: planes p..7 zero, code sums right,
 *    error within half a step, all-zero rows exact;
 *  - every (p, q) in 1..8 x 1..8 and W2S: the plane popcount group dot
 *    equals the plain integer dot of the codes, group by group; every
 *    kernel of every level available equals the reference bit for bit, by
 *    vec_dot and through lb_matmul (K of 1..5 groups, odd N, M = 1..17,
 *    1 and 2 threads), and both AVX2 ways (popcount, int8) directly; on
 *    integer data the reference is the double dot of the dequantized sides
 *    up to the result's one float rounding;
 *  - 16 activation bits (fp32 rows): every type and code layout at every
 *    level within 2^-20 of the reference, weights decoded exactly;
 *  - malformed blocks: lb_abq_check_blocks names a non-finite d, a zero
 *    point out of range, a W2S code above 4; the model loader refuses a
 *    corrupted file with that message; the GGUF reader refuses rows 128
 *    does not divide. */
#include <math.h>
#include <stdio.h>

#include "core/common.h"
#include "formats/abq.h"
#include "gguf/gguf.h"
#include "lowbit.h"
#include "formats/repack.h"
#include "kernels/dispatch.h"
#include "model/model.h"
#include "model/repack.h"
#include "kernels/x86/abq_x86.h"
#include "test_matmul_util.h"
#include "test_util.h"

static float gauss(uint64_t *s) {
    return (lb_test_randf(s) + lb_test_randf(s) + lb_test_randf(s) + lb_test_randf(s)) * 0.866f;
}

/* the 9 weight types: W1..W8 then W2S */
static int weight_type(int i) { return i < 8 ? lb_abq_type(i + 1) : LB_TYPE_ABQ_W2S; }

/* ---- geometry ---- */
static void test_geometry(void) {
    for (int q = 1; q <= 8; q++) {
        const int t = lb_abq_type(q);
        char name[16];
        snprintf(name, sizeof name, "ABQ_W%d", q);
        CHECK(t == 1100 + q && lb_abq_bits(t) == q && !lb_abq_is_balanced(t));
        CHECK_MSG(lb_type_name(t) && !strcmp(lb_type_name(t), name) && lb_type_from_name(name) == t, "%s", name);
        CHECK(lb_traits(t)->type_size == (size_t)(4 + 16 * q) && lb_traits(t)->blck == 128);
        CHECK_MSG(lb_type_bits_per_weight(t) == q + 0.25, "%s: %g bpw", name, lb_type_bits_per_weight(t));
        CHECK(lb_traits(t)->vec_dot_type == LB_TYPE_ABQ_ACT);
    }
    CHECK(lb_abq_type(0) == -1 && lb_abq_type(9) == -1);
    CHECK(LB_TYPE_ABQ_W2S == 1109 && lb_type_from_name("abq_w2s") == LB_TYPE_ABQ_W2S);
    CHECK(lb_abq_bits(LB_TYPE_ABQ_W2S) == 3 && lb_abq_is_balanced(LB_TYPE_ABQ_W2S));
    CHECK(lb_type_bits_per_weight(LB_TYPE_ABQ_W2S) == 3.125);
    CHECK(lb_traits(LB_TYPE_ABQ_ACT) && !lb_traits(LB_TYPE_ABQ_ACT)->from_float);
    CHECK(lb_abq_bits(LB_TYPE_ABQ_ACT) == 0 && lb_abq_bits(LB_TYPE_Q4_0) == 0);
    CHECK(lb_type_fallback(LB_TYPE_ABQ_W4, 256) == LB_TYPE_ABQ_W4);
    CHECK(lb_type_fallback(LB_TYPE_ABQ_W4, 96) == LB_TYPE_Q8_0);
    CHECK(lb_type_fallback(LB_TYPE_ABQ_W2S, 100) == LB_TYPE_F16);
    CHECK(!lb_traits(LB_TYPE_ABQ_W2S_C3X16 + 5) && !lb_traits(1099)); /* past the last type ids */
}

/* ---- bit balance ---- */
static void test_balance(void) {
    float x[128], y[128];
    block_abq_w2s b;
    const float d = 0.375f; /* an fp16 number: the grid survives storing d */
    for (int j = 0; j < 128; j++) x[j] = d * (float)((j * 7) % 5 - 2);
    lb_traits(LB_TYPE_ABQ_W2S)->from_float(x, &b, 128);
    lb_traits(LB_TYPE_ABQ_W2S)->to_float(&b, y, 128);
    int seen[8] = {0};
    for (int j = 0; j < 128; j++) seen[lb_abq_get_code(LB_TYPE_ABQ_W2S, &b, j)]++;
    CHECK_MSG(!memcmp(x, y, sizeof x), "W2S does not round-trip the grid {-2..2} d");
    CHECK(seen[0] && seen[1] && seen[2] && seen[3] && seen[4] && !seen[5] && !seen[6] && !seen[7]);
    CHECK(lb_abq_block_d(LB_TYPE_ABQ_W2S, &b) == d && lb_abq_block_z(LB_TYPE_ABQ_W2S, &b) == 2);
    CHECK_OK(lb_abq_check_blocks(LB_TYPE_ABQ_W2S, &b, 128, 1));
    /* each code c in 0..4 by hand: planes in offset binary, value d (c - 2) */
    for (int c = 0; c <= 4; c++) {
        memset(&b, 0, sizeof b);
        b.d = lb_f32_to_fp16(1.0f);
        for (int s = 0; s < 3; s++) b.b[s][5] = (uint8_t)(((c >> s) & 1) << 3); /* weight 43 */
        lb_traits(LB_TYPE_ABQ_W2S)->to_float(&b, y, 128);
        CHECK_MSG(y[43] == (float)(c - 2) && y[0] == -2.0f, "code %d decodes to %g", c, (double)y[43]);
    }
    /* Gaussian weights: the symmetric 5-level grid beats the 4-level one */
    uint64_t seed = 5;
    double e2 = 0, e2s = 0;
    for (int g = 0; g < 64; g++) {
        for (int j = 0; j < 128; j++) x[j] = gauss(&seed);
        block_abq_w2 b2;
        e2 += lb_abq_quantize_group(LB_TYPE_ABQ_W2, x, NULL, &b2);
        e2s += lb_abq_quantize_group(LB_TYPE_ABQ_W2S, x, NULL, &b);
    }
    printf("balance: Gaussian groups, squared error W2 %.2f, W2S %.2f\n", e2, e2s);
    CHECK_MSG(e2s < e2, "W2S %.3f not below W2 %.3f", e2s, e2);
}

/* ---- quantizer ---- */
static void test_quantize(void) {
    uint64_t seed = 7;
    float x[128], imp[128], y[128];
    uint8_t blk[140];
    for (int i = 0; i < 9; i++) {
        const int t = weight_type(i);
        double e_search = 0, e_plain = 0, ew_imp = 0, ew_none = 0;
        for (int g = 0; g < 32; g++) {
            for (int j = 0; j < 128; j++) x[j] = gauss(&seed) * (j == 3 ? 6.0f : 1.0f), imp[j] = j % 4 ? 0.1f : 10.0f;
            const double e_group = lb_abq_quantize_group(t, x, NULL, blk);
            e_search += e_group;
            lb_traits(t)->to_float(blk, y, 128);
            double e = 0;
            for (int j = 0; j < 128; j++) e += ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
            CHECK_MSG(fabs(e - e_group) <= 1e-6 * (1 + e), "%s: returned error != dequantized error", lb_type_name(t));
            /* clip 1 alone: the max-min grid */
            float lo = 0, hi = 0;
            for (int j = 0; j < 128; j++) lo = LB_MIN(lo, x[j]), hi = LB_MAX(hi, x[j]);
            const int cmax = lb_abq_is_balanced(t) ? 4 : (1 << lb_abq_bits(t)) - 1;
            const float d = lb_fp16_to_f32(lb_f32_to_fp16(lb_abq_is_balanced(t) ? LB_MAX(hi, -lo) / 2 : (hi - lo) / cmax));
            const int z = lb_abq_is_balanced(t) ? 2 : (int)LB_MIN(LB_MAX(lrintf(-lo / d), 0), cmax);
            for (int j = 0; j < 128; j++) {
                const int c = (int)LB_MIN(LB_MAX(lrintf(x[j] / d) + z, 0), cmax);
                const double r = x[j] - (double)d * (c - z);
                e_plain += r * r;
            }
            double a = 0, b = 0;
            lb_abq_quantize_group(t, x, imp, blk);
            lb_traits(t)->to_float(blk, y, 128);
            for (int j = 0; j < 128; j++) a += imp[j] * ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
            lb_abq_quantize_group(t, x, NULL, blk);
            lb_traits(t)->to_float(blk, y, 128);
            for (int j = 0; j < 128; j++) b += imp[j] * ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
            ew_imp += a, ew_none += b;
        }
        CHECK_MSG(e_search <= e_plain * (1 + 1e-9), "%s: clip search %.4f above clip 1 %.4f", lb_type_name(t),
                  e_search, e_plain);
        CHECK_MSG(ew_imp <= ew_none * (1 + 1e-9), "%s: importance does not help the weighted error", lb_type_name(t));
        if (i == 3 || i == 8)
            printf("quantize %s: clip search %.3f vs clip 1 %.3f; weighted %.3f with importance, %.3f without\n",
                   lb_type_name(t), e_search, e_plain, ew_imp, ew_none);
        /* degenerate groups */
        for (int j = 0; j < 128; j++) x[j] = 0.0f;
        lb_abq_quantize_group(t, x, NULL, blk);
        lb_traits(t)->to_float(blk, y, 128);
        int zero = 1;
        for (int j = 0; j < 128; j++) zero &= y[j] == 0.0f;
        CHECK_MSG(zero, "%s: zero group not exact", lb_type_name(t));
        x[1] = NAN, x[2] = INFINITY, x[3] = -INFINITY, x[4] = 1.0f;
        lb_abq_quantize_group(t, x, NULL, blk);
        CHECK_MSG(lb_abq_check_blocks(t, blk, 128, 1) == LB_OK, "%s: NaN / inf group malformed", lb_type_name(t));
    }
}

/* ---- activations ---- */
static void test_act(void) {
    uint64_t seed = 3;
    const int64_t K = 384;
    float x[384], y[384];
    block_abq_act a[3];
    for (int p = 1; p <= 8; p++) {
        for (int j = 0; j < K; j++) x[j] = gauss(&seed) + (j == 17 ? 9.0f : 0.0f);
        lb_abq_quantize_act(x, a, K, p);
        lb_dequantize_row_abq_act(a, y, K);
        int ok = 1;
        for (int i = 0; i < 3; i++) {
            ok &= a[i].p == p && a[i].d == a[0].d && a[i].z == a[0].z && a[i].z >= 0 && a[i].z < (1 << p);
            for (int t = p; t < 8; t++)
                for (int b = 0; b < 16; b++) ok &= a[i].b[t][b] == 0;
            int sum = 0;
            for (int j = 0; j < 128; j++) sum += (int)lrintf(y[i * 128 + j] / a[0].d) + a[0].z;
            ok &= sum == a[i].sum;
        }
        float err = 0;
        for (int j = 0; j < K; j++) err = LB_MAX(err, fabsf(x[j] - y[j]));
        CHECK_MSG(ok && err <= 0.5f * a[0].d * 1.0001f, "p %d: blocks wrong or error %g above half a step %g", p,
                  (double)err, (double)(0.5f * a[0].d));
    }
    memset(x, 0, sizeof x);
    lb_abq_quantize_act(x, a, K, 4);
    lb_dequantize_row_abq_act(a, y, K);
    CHECK(!memcmp(x, y, sizeof x) && a[0].sum == 0);
#if LB_HAVE_X86_KERNELS
    /* the AVX2 and AVX-512 quantizers write the reference's bytes: every p, Gaussian rows with a spike, rows
     * with NaN, infinities, huge and tiny values, all-negative and all-zero rows, a row length with a tail of 5 */
    static const struct {
        int level;
        const char *name;
        void (*fn)(const float *, void *, int64_t, int);
    } qs[] = {{LB_ISA_AVX2, "AVX2", lb_abq_quantize_act_avx2}, {LB_ISA_AVX512, "AVX-512", lb_abq_quantize_act_avx512}};
    for (int qi = 0; qi < 2; qi++) {
        if (!lb_test_level_available(qs[qi].level)) {
            printf("act: no %s on this CPU: its quantizer not run\n", qs[qi].name);
            continue;
        }
        block_abq_act r[3], v[3];
        int n_rows = 0, same = 1;
        const float specials[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-30f, -0.0f};
        for (int c = 0; c < 6; c++)
            for (int p = 1; p <= 8; p++) {
                const int64_t k = c == 5 ? K - 123 : K; /* 261: two blocks and a tail of 5 */
                for (int j = 0; j < K; j++) {
                    x[j] = gauss(&seed) * (c == 3 ? 1e-3f : 1.0f) + (j == 17 ? 9.0f : 0.0f);
                    if (c == 1 && j % 37 == 5) x[j] = specials[(j / 37) % 7];
                    if (c == 2) x[j] = -fabsf(x[j]) - 0.5f;
                    if (c == 4) x[j] = 0.0f;
                }
                memset(r, 0x55, sizeof r), memset(v, 0xaa, sizeof v);
                lb_abq_quantize_act(x, r, k, p);
                qs[qi].fn(x, v, k, p);
                same &= !memcmp(r, v, sizeof(block_abq_act) * (size_t)(k / 128));
                n_rows++;
            }
        CHECK_MSG(same, "the %s activation quantizer differs from the reference", qs[qi].name);
        printf("act: %s quantizer byte-identical to the reference on %d rows (p 1..8, NaN / inf / huge rows)\n",
               qs[qi].name, n_rows);
    }
#endif
}

/* ---- dots and kernels ---- */

/* weights on the type's grid (integers times 2^-4), activations too */
static void grid_data(int t, int p, float *w, int64_t nw, float *x, int64_t nx, uint64_t *seed) {
    const int q = lb_abq_bits(t);
    for (int64_t i = 0; i < nw; i++)
        w[i] = lb_abq_is_balanced(t) ? (float)((int)(lb_test_rand(seed) % 5) - 2)
                                     : (float)((int)(lb_test_rand(seed) % (1u << q)) - (1 << (q - 1)));
    for (int64_t i = 0; i < nx; i++) x[i] = (float)((int)(lb_test_rand(seed) % (1u << p)) - (1 << (p - 1)));
}

static void test_kernels(void) {
    uint64_t seed = 21;
    int n_pairs = 0, n_groups = 0, n_cases = 0, n_exact = 0, n_ways = 0, n_ways512 = 0;
    const int64_t Ks[] = {128, 384, 640};
    for (int p = 1; p <= 8; p++) {
        for (int i = 0; i < 9; i++) {
            const int t = weight_type(i);
            const int64_t K = Ks[(p + i) % 3], N = 1 + 2 * ((p * 3 + i) % 9); /* odd N */
            const int M = p == 8 && i == 3 ? 70 : 1 + (p * 5 + i * 3) % 17; /* 70: the gemm's passes of 64 rows */
            const size_t row = lb_row_size(t, K), arow = lb_row_size(LB_TYPE_ABQ_ACT, K);
            for (int integer = 0; integer < 2; integer++) {
                float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
                if (integer) grid_data(t, p, w, K * N, x, K * M, &seed);
                else {
                    for (int64_t j = 0; j < K * N; j++) w[j] = gauss(&seed);
                    for (int64_t j = 0; j < K * M; j++) x[j] = gauss(&seed) * (j % 97 == 0 ? 8.0f : 1.0f);
                }
                uint8_t *W = malloc(row * N), *A = malloc(arow * M);
                lb_traits(t)->from_float(w, W, K * N);
                for (int m = 0; m < M; m++) lb_abq_quantize_act(x + m * K, A + m * arow, K, p);
                /* group by group: planes == codes */
                int same_groups = 1;
                for (int64_t n = 0; n < N; n++)
                    for (int m = 0; m < M; m++)
                        for (int64_t g = 0; g < K / 128; g++) {
                            const void *wb = W + n * row + g * lb_traits(t)->type_size;
                            const block_abq_act *ab = (const block_abq_act *)(A + m * arow) + g;
                            same_groups &= lb_abq_group_dot_codes(t, wb, ab) == lb_abq_group_dot_planes(t, wb, ab);
                            n_groups++;
                        }
                CHECK_MSG(same_groups, "%s p %d: the plane dot differs from the code dot", lb_type_name(t), p);
                float *ref = malloc(sizeof(float) * N * M);
                for (int m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) lb_traits(t)->vec_dot(K, &ref[m * N + n], W + n * row, A + m * arow);
                if (integer) {
                    /* integer-valued data: the reference is the dot of the dequantized sides up to the
                     * one float rounding of the result (its group sums are exact integers) */
                    int exact = 1;
                    float *wf = malloc(sizeof(float) * K), *af = malloc(sizeof(float) * K);
                    for (int64_t n = 0; n < N; n++) {
                        lb_traits(t)->to_float(W + n * row, wf, K);
                        for (int m = 0; m < M; m++) {
                            lb_dequantize_row_abq_act(A + m * arow, af, K);
                            double d = 0, mag = 0;
                            for (int64_t j = 0; j < K; j++) d += (double)wf[j] * af[j], mag += fabs((double)wf[j] * af[j]);
                            exact &= fabs(d - ref[m * N + n]) <= 1e-7 * mag + fabs(d) * 0x1p-24;
                        }
                    }
                    n_exact += exact;
                    CHECK_MSG(exact, "%s p %d: the reference is not the dot of the dequantized sides", lb_type_name(t), p);
                    free(wf), free(af);
                }
                for (int li = 0; li < LB_ISA_COUNT; li++) {
                    if (!lb_test_level_available(li)) continue;
                    const lb_kernel *k = lb_kernel_get_at(t, (lb_isa)li);
                    int same = k && k->act_type == LB_TYPE_ABQ_ACT && k->act_whole_row;
                    for (int m = 0; same && m < M; m++)
                        for (int64_t n = 0; n < N; n++) {
                            float s;
                            k->vec_dot(K, &s, W + n * row, A + m * arow);
                            same &= !memcmp(&s, &ref[m * N + n], sizeof s);
                        }
                    CHECK_MSG(same, "%s p %d K %lld: %s differs from the reference", lb_type_name(t), p, (long long)K,
                              k ? k->name : "no kernel");
#if LB_HAVE_X86_KERNELS
                    if (li == LB_ISA_AVX2) { /* both ways, whichever vec_dot takes */
                        for (int way = 0; way < 2; way++)
                            for (int m = 0; m < M; m++)
                                for (int64_t n = 0; n < N; n++) {
                                    const float s = lb_abq_dot_avx2(t, way, K, W + n * row, A + m * arow);
                                    same &= !memcmp(&s, &ref[m * N + n], sizeof s);
                                    n_ways++;
                                }
                        CHECK_MSG(same, "%s p %d K %lld: an AVX2 way differs from the reference", lb_type_name(t), p,
                                  (long long)K);
                    }
                    if (li == LB_ISA_AVX512 && (lb_cpu_extra_features() & LB_CPU_VPOPCNTDQ)) {
                        /* the AVX-512 popcount way, whichever way vec_dot takes */
                        for (int m = 0; m < M; m++)
                            for (int64_t n = 0; n < N; n++) {
                                const float s = lb_abq_dot_avx512(t, 0, K, W + n * row, A + m * arow);
                                same &= !memcmp(&s, &ref[m * N + n], sizeof s);
                                n_ways512++;
                            }
                        CHECK_MSG(same, "%s p %d K %lld: the AVX-512 popcount way differs from the reference",
                                  lb_type_name(t), p, (long long)K);
                    }
#endif
                    lb_cpu_force_level((lb_isa)li);
                    for (int nth = 1; nth <= 2; nth++) {
                        float *y = lb_test_matmul_bits(t, W, K, N, x, M, nth, p);
                        CHECK_MSG(!memcmp(y, ref, sizeof(float) * N * M), "%s p %d K %lld N %lld M %d: lb_matmul at %s, %d threads",
                                  lb_type_name(t), p, (long long)K, (long long)N, M, lb_isa_name((lb_isa)li), nth);
                        free(y);
                        n_cases++;
                    }
                    lb_cpu_force_level(lb_cpu_detected());
                }
                free(ref), free(W), free(A), free(w), free(x);
                n_pairs++;
            }
        }
    }
    printf("kernels: %d (p, q) x data cases, %d groups plane dot == code dot, %d on integer data within float "
           "rounding of the double dot, %d level x thread cases bit-identical to the reference",
           n_pairs, n_groups, n_exact, n_cases);
    if (n_ways) printf(", and %d dots of the AVX2 popcount and int8 ways", n_ways);
    if (n_ways512) printf(", %d of the AVX-512 VPOPCNTDQ way", n_ways512);
    printf("\n");

    for (int li = 0; li < LB_ISA_COUNT; li++) {
        const lb_kernel *k = lb_kernel_get_at(LB_TYPE_ABQ_W4, (lb_isa)li);
        if (lb_test_level_available(li)) printf("  level %s: %s\n", lb_isa_name((lb_isa)li), k ? k->name : "none");
        else if (li == LB_ISA_AVX512 && lb_isa_is_x86(lb_cpu_detected()))
            printf("  level avx512: skipped, this CPU has no AVX-512 (no ABQ kernel of that level either)\n");
    }
}

/* ---- the code layouts made at load (formats/abq.h) ----
 * Planes -> codes -> planes gives the same bytes; the codes dequantize to
 * the planes' floats; and at every level, through lb_matmul, the code
 * layout's outputs equal the plane type's reference bit for bit, for every
 * activation bits p, M = 1..17, 32..36 and 70, odd N (1..17 and 37), K of
 * 1, 3, 5 and 9 groups: at the AMX level the GEMM's 16-row tiles, its column
 * tails and the rows it leaves to the AVX-512 level's kernel; at the
 * AVX-512 level the 16-row VNNI tile and the 8-row one of an odd block. */
/* Weights w (N x K) quantized to plane type t and rewritten in its code
 * layout, activation rows x (M x K) at p bits: lb_matmul at every level this
 * machine has, with 1 .. max_threads threads, equals the plane type's
 * reference bit for bit. */
/* The same code rows C (layout ct, N x K) 16 rows interleaved (formats/abq.h,
 * X16): back to the row layout byte for byte, and through lb_matmul at
 * every level, 1 .. max_threads threads, equal to ref bit for bit (the tail
 * N mod 16 rows by the row layout's kernel). Returns the matmuls run. */
/* The AMX GEMM of the code layouts (kernels/x86/abq_amx.c) sums dw_g I_g
 * in float, not in double: at the AMX level, where it runs (M >= 16), an
 * output may differ from the reference by its float roundings, at most
 * (nb + 4) 2^-24 sum_j |w_j a_j| + 2^-23 |ref| (nb groups, w and a the
 * dequantized sides). Every other kernel: bit for bit. */
static float *amx_bound(int t, const uint8_t *W, int64_t K, int64_t N, const uint8_t *A, int M, const float *ref) {
    const size_t row = lb_row_size(t, K), arow = lb_row_size(LB_TYPE_ABQ_ACT, K);
    float *b = malloc(sizeof(float) * (size_t)(M * N)), *wf = malloc(sizeof(float) * K), *af = malloc(sizeof(float) * K);
    double *aw = malloc(sizeof(double) * K * (size_t)M);
    for (int m = 0; m < M; m++) {
        lb_dequantize_row_abq_act(A + m * arow, af, K);
        for (int64_t j = 0; j < K; j++) aw[m * K + j] = fabs((double)af[j]);
    }
    for (int64_t n = 0; n < N; n++) {
        lb_traits(t)->to_float(W + n * row, wf, K);
        for (int m = 0; m < M; m++) {
            double s = 0;
            for (int64_t j = 0; j < K; j++) s += fabs((double)wf[j]) * aw[m * K + j];
            b[m * N + n] = (float)((double)(K / 128 + 4) * 0x1p-24 * s + 0x1p-23 * fabs((double)ref[m * N + n]));
        }
    }
    free(wf), free(af), free(aw);
    return b;
}
static int n_amx_close, n_amx_exact;
/* y against ref at level li: within bound where the AMX GEMM runs, else
 * bit for bit */
static int matches(int li, int M, const float *y, const float *ref, const float *bound, int64_t n) {
    if (li != LB_ISA_AMX || M < 16) return !memcmp(y, ref, sizeof(float) * (size_t)n);
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= fabsf(y[i] - ref[i]) <= bound[i];
    n_amx_close++;
    n_amx_exact += !memcmp(y, ref, sizeof(float) * (size_t)n);
    return ok;
}

static int n_x16_round, n_c3_round;
static int x16_check_one(int xt, const uint8_t *W, int ct, const uint8_t *C, int64_t K, int64_t N, const float *x,
                         int M, int p, const float *ref, const float *bound, int max_threads, const char *what) {
    const size_t crow = lb_row_size(ct, K), xrow = lb_row_size(xt, K);
    const int three = lb_abq_x16_bits(xt) == 3;
    uint8_t *X = malloc(xrow * N), *B = malloc(crow * N), *X2 = malloc(xrow * N);
    CHECK(xt >= 0 && lb_abq_codes_of_x16(xt) == ct && lb_type_base(xt) == ct && lb_type_rows(xt) == 16 &&
          (three ? 8 * xrow == (size_t)K * 7 / 2 : xrow == crow));
    lb_repack_tensor(xt, C, X, K, N);
    lb_unpack_tensor(xt, X, B, K, N);
    CHECK(lb_abq_planes_to_x16(xt, W, X2, K, N)); /* the load's one pass */
    CHECK_MSG(!memcmp(B, C, crow * N) && !memcmp(X2, X, xrow * N),
              "%s: codes -> X16 -> codes, or planes -> X16, differs (K %lld N %lld)", lb_type_name(xt), (long long)K,
              (long long)N);
    free(X2);
    if (three) n_c3_round++;
    else n_x16_round++;
    int n = 0;
    for (int li = 0; li < LB_ISA_COUNT; li++) {
        if (!lb_test_level_available(li)) continue;
        const lb_kernel *k = lb_kernel_get_at(xt, (lb_isa)li);
        CHECK_MSG(k && k->gemv && !k->vec_dot && k->act_whole_row && k->quantize_act_bits, "%s at %s: no gemv",
                  lb_type_name(xt), lb_isa_name((lb_isa)li));
        lb_cpu_force_level((lb_isa)li);
        for (int nth = 1; nth <= max_threads; nth++, n++) {
            float *y = lb_test_matmul_bits(xt, X, K, N, x, M, nth, p);
            CHECK_MSG(matches(li, M, y, ref, bound, N * M), "%s K %lld N %lld M %d p %d, %s, %d threads: %s differs",
                      lb_type_name(xt), (long long)K, (long long)N, M, p, what, nth, lb_isa_name((lb_isa)li));
            free(y);
        }
        lb_cpu_force_level(lb_cpu_detected());
    }
    free(X), free(B);
    return n;
}

/* The X16 layout of ct, and where N is a multiple of 16 its 3-bit one
 * (W3, W2S: formats/abq.h, ABQ_W{3,2S}_C3X16), the same checks. */
static int x16_check(const uint8_t *W, int ct, const uint8_t *C, int64_t K, int64_t N, const float *x, int M, int p,
                     const float *ref, const float *bound, int max_threads, const char *what) {
    int n = x16_check_one(lb_abq_x16_of(ct), W, ct, C, K, N, x, M, p, ref, bound, max_threads, what);
    if (lb_abq_x16_3_of(ct) >= 0 && N % 16 == 0)
        n += x16_check_one(lb_abq_x16_3_of(ct), W, ct, C, K, N, x, M, p, ref, bound, max_threads, what);
    return n;
}

static void codes_matmul_check(int t, int64_t K, int64_t N, int M, int p, const float *w, const float *x,
                               int max_threads, const char *what) {
    const int ct = lb_abq_codes_of(t);
    const size_t row = lb_row_size(t, K), crow = lb_row_size(ct, K), arow = lb_row_size(LB_TYPE_ABQ_ACT, K);
    float *ref = malloc(sizeof(float) * N * M);
    uint8_t *W = malloc(row * N), *C = malloc(crow * N), *A = malloc(arow * M);
    lb_traits(t)->from_float(w, W, K * N);
    lb_abq_to_codes(t, W, C, K, N);
    for (int m = 0; m < M; m++) lb_abq_quantize_act(x + m * K, A + m * arow, K, p);
    for (int m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) lb_traits(t)->vec_dot(K, &ref[m * N + n], W + n * row, A + m * arow);
    float *bound = amx_bound(t, W, K, N, A, M, ref);
    for (int li = 0; li < LB_ISA_COUNT; li++) {
        if (!lb_test_level_available(li)) continue;
        lb_cpu_force_level((lb_isa)li);
        for (int nth = 1; nth <= max_threads; nth++) {
            float *y = lb_test_matmul_bits(ct, C, K, N, x, M, nth, p);
            CHECK_MSG(matches(li, M, y, ref, bound, N * M), "%s K %lld N %lld M %d p %d, %s, %d threads: %s differs",
                      lb_type_name(ct), (long long)K, (long long)N, M, p, what, nth, lb_isa_name((lb_isa)li));
            free(y);
        }
        lb_cpu_force_level(lb_cpu_detected());
    }
    x16_check(W, ct, C, K, N, x, M, p, ref, bound, max_threads, what);
    free(ref), free(bound), free(W), free(C), free(A);
}

static void test_codes(void) {
    static const int plains[] = {LB_TYPE_ABQ_W1, LB_TYPE_ABQ_W2, LB_TYPE_ABQ_W3, LB_TYPE_ABQ_W4, LB_TYPE_ABQ_W2S};
    const int64_t Ks[] = {128, 384, 640, 1152}; /* 1, 3, 5 and 9 groups */
    uint64_t seed = 77;
    int n_round = 0, n_cases = 0, n_x16 = 0;
    CHECK(lb_abq_x16_of(LB_TYPE_ABQ_W4) == -1 && lb_abq_codes_of_x16(LB_TYPE_ABQ_W4_C4) == -1);
    CHECK(lb_abq_codes_of(LB_TYPE_ABQ_W5) == -1 && lb_abq_codes_of(LB_TYPE_Q4_0) == -1);
    CHECK(lb_type_bits_per_weight(LB_TYPE_ABQ_W4_C4) == 4.5 && lb_type_bits_per_weight(LB_TYPE_ABQ_W2_C2) == 2.5);
    for (int i = 0; i < 5; i++) {
        const int t = plains[i], ct = lb_abq_codes_of(t);
        CHECK(ct >= LB_TYPE_ABQ_W1_C2 && lb_abq_plain_of_codes(ct) == t && lb_type_base(ct) == t);
        for (int p = 1; p <= 8; p++) {
            /* p = 5: three column tiles and two row tiles plus a tail of the AMX GEMM */
            const int64_t K = Ks[(p + i) % 4], N = p == 5 ? 37 : 1 + 2 * ((p * 3 + i) % 9);
            const int M = p == 8 && i == 3 ? 70 : p == 5 ? 32 + i : 1 + (p * 5 + i * 3) % 17;
            const size_t row = lb_row_size(t, K), crow = lb_row_size(ct, K), arow = lb_row_size(LB_TYPE_ABQ_ACT, K);
            float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
            float *f1 = malloc(sizeof(float) * K * N), *f2 = malloc(sizeof(float) * K * N);
            uint8_t *W = malloc(row * N), *C = malloc(crow * N), *B = malloc(row * N), *A = malloc(arow * M);
            for (int64_t j = 0; j < K * N; j++) w[j] = gauss(&seed);
            for (int64_t j = 0; j < K * M; j++) x[j] = gauss(&seed) * (j % 89 == 0 ? 6.0f : 1.0f);
            lb_traits(t)->from_float(w, W, K * N);
            lb_abq_to_codes(t, W, C, K, N);
            lb_abq_from_codes(t, C, B, K, N);
            lb_traits(t)->to_float(W, f1, K * N);
            for (int64_t n = 0; n < N; n++) lb_traits(ct)->to_float(C + n * crow, f2 + n * K, K); /* a row at a time */
            CHECK_MSG(!memcmp(W, B, row * N) && !memcmp(f1, f2, sizeof(float) * K * N),
                      "%s: planes -> codes -> planes or the dequantization differs", lb_type_name(ct));
            n_round++;
            for (int m = 0; m < M; m++) lb_abq_quantize_act(x + m * K, A + m * arow, K, p);
            float *ref = malloc(sizeof(float) * N * M);
            for (int m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) lb_traits(t)->vec_dot(K, &ref[m * N + n], W + n * row, A + m * arow);
            float *bound = amx_bound(t, W, K, N, A, M, ref);
            for (int li = 0; li < LB_ISA_COUNT; li++) {
                if (!lb_test_level_available(li)) continue;
                const lb_kernel *k = lb_kernel_get_at(ct, (lb_isa)li);
                CHECK_MSG(k && k->act_type == LB_TYPE_ABQ_ACT && k->act_whole_row && k->quantize_act_bits,
                          "%s at %s: no whole-row ABQ_ACT kernel", lb_type_name(ct), lb_isa_name((lb_isa)li));
                if (!k) continue;
                int same = 1;
                for (int m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) {
                        float s1;
                        k->vec_dot(K, &s1, C + n * crow, A + m * arow);
                        same &= !memcmp(&s1, &ref[m * N + n], sizeof s1);
                    }
                lb_cpu_force_level((lb_isa)li);
                for (int nth = 1; nth <= 2; nth++) {
                    float *y = lb_test_matmul_bits(ct, C, K, N, x, M, nth, p);
                    same &= matches(li, M, y, ref, bound, N * M);
                    free(y);
                    n_cases++;
                }
                lb_cpu_force_level(lb_cpu_detected());
                CHECK_MSG(same, "%s p %d K %lld N %lld M %d: %s differs from %s's reference", lb_type_name(ct), p,
                          (long long)K, (long long)N, M, k->name, lb_type_name(t));
            }
            n_x16 += x16_check(W, ct, C, K, N, x, M, p, ref, bound, 2, "random data");
            free(bound), free(ref), free(w), free(x), free(f1), free(f2), free(W), free(C), free(B), free(A);
        }
    }
    /* The int16 bounds of the AVX2 8-row GEMM (its columns per chain,
     * cpc_for): every code at its type's largest (all weights 1) against
     * activation bytes all -128 or all 127 (rows all -1 or all +1, p = 8),
     * and, where it takes the raw codes ca (p <= 7) and longer chains, against
     * ca all 2^p - 1 but one (rows of +1 and one -1), M >= 8. */
    for (int i = 0; i < 5; i++) {
        enum { K = 256, N = 16, M = 9 };
        static float w[K * N], x[K * M];
        for (int j = 0; j < K * N; j++) w[j] = 1.0f;
        for (int sign = -1; sign <= 1; sign += 2) {
            for (int j = 0; j < K * M; j++) x[j] = (float)sign;
            codes_matmul_check(plains[i], K, N, M, 8, w, x, 1, sign < 0 ? "largest codes, activations all -1"
                                                                         : "largest codes, activations all +1");
        }
        for (int j = 0; j < K * M; j++) x[j] = j % K ? 1.0f : -1.0f;
        for (int p = 4; p <= 7; p++) codes_matmul_check(plains[i], K, N, M, p, w, x, 1, "largest codes and ca");
    }
    /* Rows longer than the AVX2 GEMM's decoded chunk (16 groups) and more
     * 8-row blocks than it decodes together (4), plus a tail row: K of 17 and
     * 33 groups, N = 41, M = 13, random data, every level, bit for bit. */
    for (int i = 0; i < 5; i++) {
        const int M = 13;
        const int64_t K = (i % 2 ? 33 : 17) * 128, N = 41;
        float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
        for (int64_t j = 0; j < K * N; j++) w[j] = gauss(&seed);
        for (int64_t j = 0; j < K * M; j++) x[j] = gauss(&seed);
        codes_matmul_check(plains[i], K, N, M, i % 2 ? 4 : 8, w, x, 2, "rows of several chunks");
        free(w), free(x);
    }
    /* The AMX GEMM's blocking: K of 44 groups (TinyLlama's ffn_down: 22 K
     * chunks), three activation tiles, a lone last column tile (N = 40);
     * and N = 300 (a block of 256 columns and one of 44), M = 33 (two tiles
     * and a row left to the AVX-512 kernel); p 4 (activation bytes ca - za)
     * and 8 (ca - 128 and the offset's correction). */
    for (int i = 1; i < 5; i += 2) {
        static const struct { int64_t nb, N; int M, p; } cs[] = {{44, 40, 48, 4}, {17, 300, 33, 8}};
        for (int j = 0; j < 2; j++) {
            const int64_t K = cs[j].nb * 128, N = cs[j].N;
            float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * cs[j].M);
            for (int64_t k = 0; k < K * N; k++) w[k] = gauss(&seed);
            for (int64_t k = 0; k < K * cs[j].M; k++) x[k] = gauss(&seed) * (k % 97 == 0 ? 8.0f : 1.0f);
            codes_matmul_check(plains[i], K, N, cs[j].M, cs[j].p, w, x, 2, "AMX blocking");
            free(w), free(x);
        }
    }
    /* Decode (M = 1, and 2 through the row-by-row GEMM) at longer rows, K of
     * 8, 9, 17 and 44 groups (a TinyLlama ffn_down row: the AVX2 decode's
     * blocks of 4 groups and their tails), and the 8- and 16-row GEMM tiles
     * at M = 9. */
    for (int i = 0; i < 5; i++) {
        static const int64_t nbs[4] = {8, 9, 17, 44};
        for (int j = 0; j < 4; j++) {
            const int64_t K = nbs[j] * 128, N = 19;
            const int M = j == 3 ? 9 : 1 + j % 2;
            float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
            for (int64_t k = 0; k < K * N; k++) w[k] = gauss(&seed);
            for (int64_t k = 0; k < K * M; k++) x[k] = gauss(&seed) * (k % 97 == 0 ? 8.0f : 1.0f);
            codes_matmul_check(plains[i], K, N, M, j % 2 ? 4 : 8, w, x, 2, "decode blocks of 8 groups");
            free(w), free(x);
        }
    }
    /* The 3-bit X16 layouts (W3, W2S; N a multiple of 16 only): random
     * codes, rows of 1 to 44 groups (the decode's triples, the prefill's
     * unpack in chunks of 16 groups), M from 1 (decode) to 13 (prefill
     * tiles of 4 and their tails), p 8, 4 and 3, every level, bit for bit. */
    for (int i = 2; i < 5; i += 2) {
        static const struct { int64_t nb, N; int M, p; } cs[] = {
            {1, 16, 1, 8}, {3, 48, 2, 4}, {17, 32, 5, 8}, {44, 16, 1, 3}, {9, 64, 13, 8}, {2, 16, 4, 4},
        };
        for (int j = 0; j < (int)(sizeof cs / sizeof cs[0]); j++) {
            const int64_t K = cs[j].nb * 128, N = cs[j].N;
            const int M = cs[j].M;
            float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M);
            for (int64_t k = 0; k < K * N; k++) w[k] = gauss(&seed);
            for (int64_t k = 0; k < K * M; k++) x[k] = gauss(&seed) * (k % 97 == 0 ? 8.0f : 1.0f);
            codes_matmul_check(plains[i], K, N, M, cs[j].p, w, x, 2, "3-bit fields");
            free(w), free(x);
        }
    }
    CHECK(lb_abq_x16_3_of(LB_TYPE_ABQ_W3_C4) == LB_TYPE_ABQ_W3_C3X16 && lb_abq_x16_3_of(LB_TYPE_ABQ_W4_C4) == -1 &&
          lb_abq_x16_bits(LB_TYPE_ABQ_W2S_C3X16) == 3 && lb_abq_x16_bits(LB_TYPE_ABQ_W2S_C4X16) == 4 &&
          lb_type_bits_per_weight(LB_TYPE_ABQ_W2S_C3X16) == 3.5);
    /* one matrix's layout at load (model/repack.h): whatever the level gives the type, a matrix of N % 16 != 0
     * never gets 3-bit fields and one at 16 activation bits never an X16 layout */
    for (int i = 0; i < 9; i++) {
        const int t = weight_type(i), whole = lb_repack_target_matrix(t, 32, 8), odd = lb_repack_target_matrix(t, 40, 8);
        const int f32 = lb_repack_target_matrix(t, 32, LB_ABQ_ACT_F32);
        CHECK_MSG(whole == lb_repack_target(t) && lb_abq_x16_bits(odd) != 3 && lb_abq_codes_of_x16(f32) < 0 &&
                      (lb_abq_x16_bits(whole) != 3 || odd == lb_abq_x16_of(lb_abq_codes_of_x16(whole))),
                  "%s: load layouts %s / %s / %s", lb_type_name(t), lb_type_name(whole), lb_type_name(odd),
                  lb_type_name(f32));
    }
    printf("codes: %d round trips exact, %d level x thread matmuls bit-identical to the plane reference (at the AMX "
           "level with M >= 16: within its float bound)\n", n_round, n_cases);
    if (lb_test_level_available(LB_ISA_AMX)) {
        CHECK(n_amx_close > 0);
        printf("amx: %d matmuls through the AMX GEMM within its float bound, %d of them bit-identical\n", n_amx_close,
               n_amx_exact);
    }
    printf("x16: %d round trips exact (3-bit layouts: %d), %d level x thread matmuls of the random cases "
           "bit-identical (and those of every check above)\n", n_x16_round, n_c3_round, n_x16);
    for (int li = 0; li < LB_ISA_COUNT; li++) {
        const lb_kernel *k = lb_kernel_get_at(LB_TYPE_ABQ_W4_C4, (lb_isa)li), *kx = lb_kernel_get_at(LB_TYPE_ABQ_W4_C4X16, (lb_isa)li);
        if (lb_test_level_available(li))
            printf("  level %s: %s, %s\n", lb_isa_name((lb_isa)li), k ? k->name : "none", kx ? kx->name : "none");
    }
}

/* ---- 16 activation bits (LB_ABQ_ACT_F32): fp32 activations ----
 * Every plane type, and the code layouts made at load: the kernel
 * lb_kernel_for picks at each level takes F32 rows; through lb_matmul (M =
 * 1..17 and 33, odd N, K of 1..5 groups, 1 and 2 threads) and by vec_dot it
 * is within 2^-20 of sum |w x| of the reference (float sums against its
 * double ones). Decoding is exact: with unit activation rows e_j the output
 * is the weight's float d (c - z) bit for bit, the same as to_float. The
 * reference itself is the double dot of the dequantized weights. */
static void test_a16(void) {
    uint64_t seed = 1616;
    int n_cases = 0, n_decode = 0;
    const int64_t Ks[] = {128, 384, 640};
    for (int i = 0; i < 14; i++) {
        /* the 9 plane types, then the 5 code layouts of W1, W2, W3, W4, W2S */
        static const int codes_of[] = {LB_TYPE_ABQ_W1, LB_TYPE_ABQ_W2, LB_TYPE_ABQ_W3, LB_TYPE_ABQ_W4, LB_TYPE_ABQ_W2S};
        const int plain = i < 9 ? weight_type(i) : codes_of[i - 9];
        const int t = i < 9 ? plain : lb_abq_codes_of(plain);
        const int64_t K = Ks[i % 3], N = 1 + 2 * (i % 9);
        const int M = i == 4 ? 33 : 1 + (i * 5) % 17;
        const size_t prow = lb_row_size(plain, K), row = lb_row_size(t, K);
        float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M), *wf = malloc(sizeof(float) * K * N);
        uint8_t *P = malloc(prow * N), *W = malloc(row * N);
        for (int64_t j = 0; j < K * N; j++) w[j] = gauss(&seed);
        for (int64_t j = 0; j < K * M; j++) x[j] = gauss(&seed) * (j % 61 == 0 ? 10.0f : 1.0f);
        lb_traits(plain)->from_float(w, P, K * N);
        if (t == plain) memcpy(W, P, row * N);
        else lb_abq_to_codes(plain, P, W, K, N);
        lb_traits(plain)->to_float(P, wf, K * N);
        float *ref = malloc(sizeof(float) * N * M);
        double *mag = malloc(sizeof(double) * N * M);
        int ref_ok = 1;
        for (int m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double d = 0, a = 0;
                for (int64_t j = 0; j < K; j++) d += (double)wf[n * K + j] * x[m * K + j], a += fabs((double)wf[n * K + j] * x[m * K + j]);
                ref[m * N + n] = lb_abq_row_dot_f32(t, K, W + n * row, x + m * K);
                mag[m * N + n] = a;
                ref_ok &= ref[m * N + n] == (float)d;
            }
        CHECK_MSG(ref_ok, "%s: the A16 reference is not the double dot of the dequantized weights", lb_type_name(t));
        /* unit rows: e_j for j = 0..min(K, 128)-1 pick out the decoded weights */
        const int MU = 128;
        float *e = calloc((size_t)MU * K, sizeof(float));
        for (int j = 0; j < MU; j++) e[(size_t)j * K + (j * 37) % K] = 1.0f;
        for (int li = 0; li < LB_ISA_COUNT; li++) {
            if (!lb_test_level_available(li)) continue;
            const lb_kernel *k = lb_kernel_get_act(t, LB_ABQ_ACT_F32, (lb_isa)li);
            CHECK_MSG(k && k->act_type == LB_TYPE_F32 && !k->quantize_act_bits, "%s at %s: no F32-activation kernel",
                      lb_type_name(t), lb_isa_name((lb_isa)li));
            if (!k) continue;
            int close = 1;
            for (int m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    float s;
                    k->vec_dot(K, &s, W + n * row, x + m * K);
                    close &= fabs((double)s - ref[m * N + n]) <= 0x1p-20 * mag[m * N + n] + 1e-30;
                }
            lb_cpu_force_level((lb_isa)li);
            for (int nth = 1; nth <= 2; nth++) {
                float *y = lb_test_matmul_bits(t, W, K, N, x, M, nth, LB_ABQ_ACT_F32);
                for (int64_t c = 0; c < N * M; c++) close &= fabs((double)y[c] - ref[c]) <= 0x1p-20 * mag[c] + 1e-30;
                free(y);
                n_cases++;
            }
            float *y = lb_test_matmul_bits(t, W, K, N, e, MU, 2, LB_ABQ_ACT_F32);
            int exact = 1;
            for (int j = 0; j < MU; j++)
                for (int64_t n = 0; n < N; n++) exact &= y[(size_t)j * N + n] == wf[n * K + (j * 37) % K];
            free(y);
            n_decode += exact;
            lb_cpu_force_level(lb_cpu_detected());
            CHECK_MSG(close, "%s K %lld N %lld M %d: %s is not within 2^-20 of the A16 reference", lb_type_name(t),
                      (long long)K, (long long)N, M, k->name);
            CHECK_MSG(exact, "%s: %s does not decode the weights exactly", lb_type_name(t), k->name);
        }
        free(e), free(ref), free(mag), free(w), free(x), free(wf), free(P), free(W);
    }
    /* the kernel lb_kernel_for picks follows the matrix's bits */
    lb_matrix m8 = {LB_TYPE_ABQ_W4, 128, 1, lb_row_size(LB_TYPE_ABQ_W4, 128), NULL, 8}, m16 = m8;
    m16.act_bits = LB_ABQ_ACT_F32;
    CHECK(lb_kernel_for(&m8)->act_type == LB_TYPE_ABQ_ACT && lb_kernel_for(&m16)->act_type == LB_TYPE_F32);
    CHECK(lb_abq_act_bits_ok(16) && lb_abq_act_bits_ok(1) && !lb_abq_act_bits_ok(9) && !lb_abq_act_bits_ok(0));
    printf("a16: %d level x thread matmuls within 2^-20 of the reference, %d exact weight decodes\n", n_cases, n_decode);
    for (int li = 0; li < LB_ISA_COUNT; li++) {
        const lb_kernel *k = lb_kernel_get_act(LB_TYPE_ABQ_W4_C4, LB_ABQ_ACT_F32, (lb_isa)li);
        if (lb_test_level_available(li)) printf("  level %s: %s\n", lb_isa_name((lb_isa)li), k ? k->name : "none");
    }
}

/* ---- malformed blocks ---- */
static void test_malformed(void) {
    float x[256];
    uint64_t seed = 9;
    for (int j = 0; j < 256; j++) x[j] = gauss(&seed);
    block_abq_w3 b[2];
    lb_traits(LB_TYPE_ABQ_W3)->from_float(x, b, 256);
    CHECK_OK(lb_abq_check_blocks(LB_TYPE_ABQ_W3, b, 128, 2));
    b[1].z = 8;
    lb_status s = lb_abq_check_blocks(LB_TYPE_ABQ_W3, b, 128, 2);
    CHECK_MSG(s == LB_ERR_FORMAT && strstr(lb_last_error(), "row 1, group 0: zero point 8 outside 0..7"), "%s",
              lb_last_error());
    b[1].z = -1;
    CHECK(lb_abq_check_blocks(LB_TYPE_ABQ_W3, b, 256, 1) == LB_ERR_FORMAT &&
          strstr(lb_last_error(), "row 0, group 1: zero point -1"));
    b[1].z = 3, b[0].d = lb_f32_to_fp16(INFINITY);
    CHECK(lb_abq_check_blocks(LB_TYPE_ABQ_W3, b, 128, 2) == LB_ERR_FORMAT && strstr(lb_last_error(), "not finite"));
    block_abq_w2s s2[1];
    lb_traits(LB_TYPE_ABQ_W2S)->from_float(x, s2, 128);
    CHECK_OK(lb_abq_check_blocks(LB_TYPE_ABQ_W2S, s2, 128, 1));
    s2[0].b[2][7] |= 1, s2[0].b[0][7] |= 1; /* weight 56: code 5 */
    s = lb_abq_check_blocks(LB_TYPE_ABQ_W2S, s2, 128, 1);
    CHECK_MSG(s == LB_ERR_FORMAT && strstr(lb_last_error(), "code above 4 in byte 7"), "%s", lb_last_error());
    CHECK(lb_abq_check_blocks(LB_TYPE_ABQ_W2, x, 100, 1) == LB_ERR_FORMAT);
    CHECK_OK(lb_abq_check_blocks(LB_TYPE_Q4_0, x, 100, 1));
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    if (b && fread(b, 1, *n, f) != *n) free(b), b = NULL;
    fclose(f);
    return b;
}

/* A real file through the loader: tiny-F32 -> ABQ_W4, one zero point of
 * one matrix set out of range, the load refused naming the tensor. */
static void test_loader(void) {
    const char *f32 = LB_SHARED_DIR "/interop/tiny-F32.gguf";
    FILE *f = fopen(f32, "rb");
    if (!f) {
        printf("loader: skipped (%s absent)\n", f32);
        return;
    }
    fclose(f);
    const char *out = LB_TEST_TMPDIR "/abq_w4.gguf", *bad = LB_TEST_TMPDIR "/abq_w4_bad.gguf";
    lb_quantize_params qp = {0};
    qp.type = LB_TYPE_ABQ_W4;
    qp.n_threads = 2;
    lb_quantize_options o = {0};
    o.act_bits = 6;
    o.act_bits_down = 8;
    CHECK_OK(lb_quantize_file_ex(f32, out, &qp, &o, NULL));
    /* a code layout is made at load, never written */
    lb_quantize_params cp = qp;
    cp.type = LB_TYPE_ABQ_W4_C4;
    const lb_status cs = lb_quantize_file_ex(f32, bad, &cp, &o, NULL);
    CHECK_MSG(cs == LB_ERR_UNSUPPORTED && strstr(lb_last_error(), "not a file type"), "quantize to ABQ_W4_C4: %s",
              lb_last_error());
    cp.type = LB_TYPE_ABQ_W4_C4X16;
    const lb_status cx = lb_quantize_file_ex(f32, bad, &cp, &o, NULL);
    CHECK_MSG(cx == LB_ERR_UNSUPPORTED && strstr(lb_last_error(), "not a file type: quantize to ABQ_W4"),
              "quantize to ABQ_W4_C4X16: %s", lb_last_error());
    /* the bits are each matrix's: two models loaded at once keep their own */
    lb_model *m = NULL, *m3 = NULL;
    CHECK_OK(lb_model_load(out, NULL, &m));
    lb_model_params mp = lb_model_default_params();
    mp.act_bits = 3;
    CHECK_OK(lb_model_load(out, &mp, &m3));
    if (m && m3) {
        const lb_layer *l = &m->layers[0], *l3 = &m3->layers[m3->hp.n_layer - 1];
        CHECK_MSG(l->wq.act_bits == 6 && l->w_gate.act_bits == 6 && l->w_down.act_bits == 8,
                  "file's bits: wq %d, ffn_gate %d, ffn_down %d (want 6, 6, 8)", l->wq.act_bits, l->w_gate.act_bits,
                  l->w_down.act_bits);
        CHECK_MSG(l3->wq.act_bits == 3 && l3->w_down.act_bits == 3, "--act-bits 3: wq %d, ffn_down %d",
                  l3->wq.act_bits, l3->w_down.act_bits);
        CHECK(m->layers[m->hp.n_layer - 1].w_down.act_bits == 8);
    }
    lb_model_free(m3);
    lb_model_free(m);
    m = NULL;
    /* corrupt blk.0.ffn_down.weight's first zero point */
    size_t n = 0;
    uint8_t *buf = read_file(out, &n);
    gguf_file *g = NULL;
    if (buf && gguf_open_memory(buf, n, &g) == LB_OK) {
        const gguf_tensor *t = gguf_find_tensor(g, "blk.0.ffn_down.weight");
        CHECK(t && t->type == LB_TYPE_ABQ_W4);
        if (t) {
            const size_t off = (size_t)((const uint8_t *)t->data - buf);
            gguf_close(g);
            const int16_t z = 99;
            memcpy(buf + off + 2, &z, 2);
            FILE *o2 = fopen(bad, "wb");
            CHECK(o2 && fwrite(buf, 1, n, o2) == n);
            if (o2) fclose(o2);
            const lb_status s = lb_model_load(bad, NULL, &m);
            CHECK_MSG(s == LB_ERR_FORMAT && strstr(lb_last_error(), "blk.0.ffn_down.weight") &&
                          strstr(lb_last_error(), "zero point 99 outside 0..15"),
                      "corrupted file: %s", lb_last_error());
            if (s == LB_OK) lb_model_free(m);
        } else {
            gguf_close(g);
        }
    }
    free(buf);
    remove(bad);
}

int main(void) {
    test_geometry();
    test_balance();
    test_quantize();
    test_act();
    test_kernels();
    test_codes();
    test_a16();
    test_malformed();
    test_loader();
    return lb_test_result("test_abq");
}
