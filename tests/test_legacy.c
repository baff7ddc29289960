/* The legacy 32-weight formats Q4_1, Q5_0, Q5_1 and the Q8_1 activations.
 *
 *  - hand-built blocks decode to the values ggml's layout defines;
 *  - quantize -> dequantize stays within each format's step (Q4_1 / Q5_1:
 *    half a step, Q5_0: one step, since +max clamps from 32 to 31), plus the
 *    fp16 rounding of d and m;
 *  - the reference vec_dot equals the dot of the dequantized weights and
 *    activations within 2e-6 * sum |w_i a_i| (float accumulation only);
 *  - the AVX2 kernels equal the reference within 1e-5 * sum |w_i a_i| on
 *    quantized data and on random blocks with extreme quants and
 *    activations (the integer sums are exact; only the float summation order
 *    differs);
 *  - dispatch hands out the AVX2 kernels with the right activation types;
 *  - if the Gemma 3 270M Q4_K_M model is present (scripts/get-model.sh), its
 *    llama.cpp-written Q5_0 tensors requantize byte for byte: the dequantized
 *    values run through our reference quantizer give back llama.cpp's blocks. */
#include "test_util.h"

#include "formats/legacy.h"
#include "gguf/gguf.h"
#include "kernels/dispatch.h"
#include "kernels/x86/legacy_x86.h"

#define MAX_N 8192
#define REF_TOL 2e-6
#define KERNEL_TOL 1e-5

static const int kTypes[] = {LB_TYPE_Q4_1, LB_TYPE_Q5_0, LB_TYPE_Q5_1};

/* Standard normal by Box-Muller, and Student-t (5 dof): heavy-tailed like LLM
 * weights and activations. */
static float rand_gauss(uint64_t *s) {
    const double u1 = 1.0 - (lb_test_randf(s) + 1.0) / 2.0;
    const double u2 = (lb_test_randf(s) + 1.0) / 2.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
static float rand_t5(uint64_t *s) {
    double chi2 = 0.0;
    for (int i = 0; i < 5; i++) {
        const double g = rand_gauss(s);
        chi2 += g * g;
    }
    return (float)(rand_gauss(s) / sqrt(chi2 / 5.0));
}

static void test_traits(void) {
    const struct { int type; const char *name; size_t size; int act; } want[] = {
        {LB_TYPE_Q4_1, "Q4_1", 20, LB_TYPE_Q8_1},
        {LB_TYPE_Q5_0, "Q5_0", 22, LB_TYPE_Q8_0},
        {LB_TYPE_Q5_1, "Q5_1", 24, LB_TYPE_Q8_1},
        {LB_TYPE_Q8_1, "Q8_1", 36, LB_TYPE_Q8_1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lb_type_traits *t = lb_traits(want[i].type);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK(!strcmp(t->name, want[i].name));
        CHECK(t->blck == 32 && t->type_size == want[i].size && t->is_quantized);
        CHECK(t->vec_dot_type == want[i].act);
        CHECK(t->to_float && t->from_float);
        CHECK(lb_type_from_name(want[i].name) == want[i].type);
    }
    CHECK(fabs(lb_type_bits_per_weight(LB_TYPE_Q4_1) - 5.0) < 1e-9);
    CHECK(fabs(lb_type_bits_per_weight(LB_TYPE_Q5_0) - 5.5) < 1e-9);
    CHECK(fabs(lb_type_bits_per_weight(LB_TYPE_Q5_1) - 6.0) < 1e-9);
}

/* Blocks written by hand, decoded by the rules of ggml-common.h. */
static void test_hand_built(void) {
    float y[32];
    /* Q4_1: d = 0.5, m = -4; q_j = j % 16 in the low nibbles (weights 0..15)
     * and 15 - j % 16 in the high ones (weights 16..31). */
    block_q4_1 b41;
    b41.d = lb_f32_to_fp16(0.5f);
    b41.m = lb_f32_to_fp16(-4.0f);
    for (int j = 0; j < 16; j++) b41.qs[j] = (uint8_t)(j | (15 - j) << 4);
    lb_dequantize_row_q4_1(&b41, y, 32);
    int ok = 1;
    for (int j = 0; j < 16; j++) ok &= y[j] == 0.5f * j - 4.0f && y[16 + j] == 0.5f * (15 - j) - 4.0f;
    CHECK_MSG(ok, "Q4_1 hand-built block decodes wrongly (y[0]=%g y[31]=%g)", y[0], y[31]);

    /* Q5_0: d = 0.25; weight j has low nibble j % 16 and fifth bit set for odd
     * j, so q_j = j % 16 + 16 * (j & 1) and value = 0.25 * (q_j - 16). */
    block_q5_0 b50;
    b50.d = lb_f32_to_fp16(0.25f);
    for (int j = 0; j < 16; j++) b50.qs[j] = (uint8_t)(j | j << 4);
    b50.qh[0] = b50.qh[1] = b50.qh[2] = b50.qh[3] = 0xAA; /* bits 1, 3, 5, ... */
    lb_dequantize_row_q5_0(&b50, y, 32);
    ok = 1;
    for (int j = 0; j < 32; j++) ok &= y[j] == 0.25f * ((j % 16) + 16 * (j & 1) - 16);
    CHECK_MSG(ok, "Q5_0 hand-built block decodes wrongly (y[0]=%g y[1]=%g)", y[0], y[1]);
    /* the qh word is little-endian: only weight 24 has its fifth bit */
    memset(b50.qh, 0, 4);
    b50.qh[3] = 0x01;
    memset(b50.qs, 0, sizeof b50.qs);
    lb_dequantize_row_q5_0(&b50, y, 32);
    CHECK(y[24] == 0.0f && y[23] == -4.0f && y[25] == -4.0f && y[0] == -4.0f);

    /* Q5_1: d = 1, m = 0.5; all fifth bits set: value = q + 16 + 0.5 */
    block_q5_1 b51;
    b51.d = lb_f32_to_fp16(1.0f);
    b51.m = lb_f32_to_fp16(0.5f);
    for (int j = 0; j < 16; j++) b51.qs[j] = (uint8_t)(j | (15 - j) << 4);
    memset(b51.qh, 0xFF, 4);
    lb_dequantize_row_q5_1(&b51, y, 32);
    ok = 1;
    for (int j = 0; j < 16; j++) ok &= y[j] == j + 16.5f && y[16 + j] == (15 - j) + 16.5f;
    CHECK_MSG(ok, "Q5_1 hand-built block decodes wrongly (y[0]=%g y[16]=%g)", y[0], y[16]);

    /* Q8_1 quantizer: x = j - 16 + 0.25 has amax 15.75 at j = 0 -> q = -127;
     * s is d * sum(q) */
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16) + 0.25f;
    block_q8_1 b81;
    lb_quantize_row_q8_1_ref(x, &b81, 32);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += b81.qs[j];
    CHECK(b81.qs[0] == -127);
    CHECK(b81.d == lb_f32_to_fp16(15.75f / 127.0f));
    CHECK(b81.s == lb_f32_to_fp16((float)sum * (15.75f / 127.0f)));

    /* known quantizations: Q4_1 of 0..31 is d = 31/15, m = 0 */
    for (int j = 0; j < 32; j++) x[j] = (float)j;
    lb_quantize_row_q4_1_ref(x, &b41, 32);
    CHECK(b41.m == lb_f32_to_fp16(0.0f) && b41.d == lb_f32_to_fp16(31.0f / 15.0f));
    CHECK((b41.qs[0] & 15) == 0 && (b41.qs[15] >> 4) == 15);
    /* Q5_0 of a block whose largest magnitude is -8: d = 0.5, that weight is q = 0 */
    for (int j = 0; j < 32; j++) x[j] = 0.25f * (float)(j % 7);
    x[5] = -8.0f;
    lb_quantize_row_q5_0_ref(x, &b50, 32);
    CHECK(b50.d == lb_f32_to_fp16(0.5f));
    CHECK((b50.qs[5] & 15) == 0 && !(lb_q5_high_bits(b50.qh) & (1u << 5)));
    /* Q5_1 of -1..+1 in 31 steps reproduces the inputs' grid */
    for (int j = 0; j < 32; j++) x[j] = -1.0f + (float)(j % 32) * (2.0f / 31.0f);
    lb_quantize_row_q5_1_ref(x, &b51, 32);
    lb_dequantize_row_q5_1(&b51, y, 32);
    ok = 1;
    for (int j = 0; j < 32; j++) ok &= fabsf(y[j] - x[j]) < 2e-3f;
    CHECK_MSG(ok, "Q5_1 grid round trip");
}

/* quantize -> dequantize error per block within the format's step. */
static void test_round_trip(void) {
    static float x[MAX_N], y[MAX_N];
    static uint8_t q[MAX_N * 2];
    uint64_t seed = 0x51ed2701;
    const int types[] = {LB_TYPE_Q4_1, LB_TYPE_Q5_0, LB_TYPE_Q5_1, LB_TYPE_Q8_1};
    for (size_t ti = 0; ti < 4; ti++) {
        const int type = types[ti];
        const lb_type_traits *t = lb_traits(type);
        for (int rep = 0; rep < 4; rep++) {
            const int64_t n = 4096;
            const float scale = rep == 3 ? 1e-3f : 1.0f;
            for (int64_t i = 0; i < n; i++)
                x[i] = scale * (rep == 0 ? lb_test_randf(&seed) : rep == 1 ? rand_gauss(&seed) + 0.7f : rand_t5(&seed));
            t->from_float(x, q, n);
            t->to_float(q, y, n);
            int bad = 0;
            double worst = 0.0;
            for (int64_t b = 0; b < n / 32; b++) {
                float mn = x[b * 32], mx = x[b * 32], amax = 0.0f;
                for (int j = 0; j < 32; j++) {
                    const float v = x[b * 32 + j];
                    mn = v < mn ? v : mn;
                    mx = v > mx ? v : mx;
                    amax = fabsf(v) > amax ? fabsf(v) : amax;
                }
                /* step plus what fp16 storage of d (and m) may add: relative
                 * 2^-11, or 2^-25 absolute where d is subnormal in fp16, times
                 * the largest quant */
                double bound;
                const double r16 = 1.0 / 2048.0, sub = 1.0 / 33554432.0;
                switch (type) {
                case LB_TYPE_Q4_1: bound = 0.5 * (mx - mn) / 15 + (mx - mn) * r16 + fabs(mn) * r16 + 16 * sub; break;
                case LB_TYPE_Q5_1: bound = 0.5 * (mx - mn) / 31 + (mx - mn) * r16 + fabs(mn) * r16 + 32 * sub; break;
                case LB_TYPE_Q5_0: bound = amax / 16 + amax * r16 + 16 * sub; break;
                default: bound = 0.5 * amax / 127 + amax * r16 + 127 * sub; break;
                }
                bound *= 1.0001;
                for (int j = 0; j < 32; j++) {
                    const double e = fabs((double)x[b * 32 + j] - y[b * 32 + j]);
                    if (e > bound) bad++;
                    if (e / bound > worst) worst = e / bound;
                }
            }
            CHECK_MSG(bad == 0, "%s rep %d: %d values beyond the bound (worst %.3f x bound)", t->name, rep, bad, worst);
        }
    }
}

/* sum |w_i a_i| and the exact dot (double) of the dequantized rows */
static void dequant_dots(int type, const void *wq, const void *aq, int64_t n, double *dot, double *mag) {
    static float w[MAX_N], a[MAX_N];
    const lb_type_traits *t = lb_traits(type);
    t->to_float(wq, w, n);
    lb_traits(t->vec_dot_type)->to_float(aq, a, n);
    *dot = *mag = 0.0;
    for (int64_t i = 0; i < n; i++) {
        *dot += (double)w[i] * a[i];
        *mag += fabs((double)w[i] * a[i]);
    }
}

static double worst_kernel_err = 0.0;

/* Reference against the dequantized dot; each available kernel level
 * against the reference. */
static void check_dot(int type, const void *wq, const void *aq, int64_t n, const char *what) {
    const lb_type_traits *t = lb_traits(type);
    double dot, mag;
    dequant_dots(type, wq, aq, n, &dot, &mag);
    /* Q8_1's s is d * sum(q) rounded to fp16: the min term carries that error */
    double extra = 0.0;
    if (t->vec_dot_type == LB_TYPE_Q8_1) {
        for (int64_t b = 0; b < n / 32; b++) {
            const lb_fp16 m = type == LB_TYPE_Q4_1 ? ((const block_q4_1 *)wq)[b].m : ((const block_q5_1 *)wq)[b].m;
            extra += fabs(lb_fp16_to_f32(m)) * fabs(lb_fp16_to_f32(((const block_q8_1 *)aq)[b].s)) / 1024.0;
        }
    }
    float ref = 0.0f;
    t->vec_dot(n, &ref, wq, aq);
    CHECK_MSG(fabs(ref - dot) <= REF_TOL * mag + extra + 1e-30, "%s %s n=%lld: reference dot %.9g, dequantized %.9g",
              t->name, what, (long long)n, ref, dot);
    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2};
    for (int l = 0; l < 2; l++) {
        if (levels[l] != LB_ISA_SCALAR && lb_cpu_detected() < levels[l]) continue;
        const lb_kernel *k = lb_kernel_get_at(type, levels[l]);
        CHECK(k && k->act_type == t->vec_dot_type);
        if (!k) continue;
        float got = -1.0f;
        k->vec_dot(n, &got, wq, aq);
        const double err = fabs((double)got - ref);
        if (mag > 0 && err / mag > worst_kernel_err) worst_kernel_err = err / mag;
        CHECK_MSG(err <= KERNEL_TOL * mag, "%s %s n=%lld %s: %.9g vs reference %.9g", t->name, what,
                  (long long)n, k->name, got, ref);
    }
}

static void test_dots_quantized(void) {
    static float wf[MAX_N], af[MAX_N];
    static uint8_t wq[MAX_N * 2], aq[MAX_N * 2];
    uint64_t seed = 0xfeedbeef;
    const int64_t sizes[] = {32, 64, 640, 2048, 8192};
    for (size_t ti = 0; ti < 3; ti++) {
        const lb_type_traits *t = lb_traits(kTypes[ti]), *at = lb_traits(t->vec_dot_type);
        for (size_t si = 0; si < 5; si++) {
            for (int rep = 0; rep < 3; rep++) {
                const int64_t n = sizes[si];
                for (int64_t i = 0; i < n; i++) {
                    wf[i] = (rep == 2 ? 1e-3f : 1.0f) * rand_t5(&seed) + (rep == 1 ? 0.5f : 0.0f);
                    af[i] = rand_t5(&seed);
                }
                t->from_float(wf, wq, n);
                at->from_float(af, aq, n);
                check_dot(kTypes[ti], wq, aq, n, "quantized");
            }
        }
    }
}

/* Random bytes reach every quant and bit pattern; scales are set finite,
 * activations span -127..127 with the all-extreme cases too. */
static void test_dots_random_blocks(void) {
    static uint8_t wq[MAX_N * 2], aq[MAX_N * 2];
    uint64_t seed = 0x1234567;
    const int64_t n = 4096;
    for (size_t ti = 0; ti < 3; ti++) {
        const int type = kTypes[ti];
        const lb_type_traits *t = lb_traits(type);
        for (int rep = 0; rep < 6; rep++) {
            for (size_t i = 0; i < lb_row_size(type, n); i++) wq[i] = (uint8_t)lb_test_rand(&seed);
            for (int64_t b = 0; b < n / 32; b++) {
                uint8_t *blk = wq + b * t->type_size;
                const lb_fp16 d = lb_f32_to_fp16(0.01f * (lb_test_randf(&seed) + 1.5f));
                const lb_fp16 m = lb_f32_to_fp16(0.05f * lb_test_randf(&seed));
                memcpy(blk, &d, 2);
                if (type != LB_TYPE_Q5_0) memcpy(blk + 2, &m, 2);
            }
            for (int64_t b = 0; b < n / 32; b++) {
                int8_t qs[32];
                for (int j = 0; j < 32; j++)
                    qs[j] = rep == 0 ? 127 : rep == 1 ? -127 : rep == 2 ? (j & 1 ? -127 : 127)
                                                    : (int8_t)(lb_test_rand(&seed) % 255 - 127);
                const float d = 0.02f * (lb_test_randf(&seed) + 1.5f);
                if (t->vec_dot_type == LB_TYPE_Q8_0) {
                    block_q8_0 *a = (block_q8_0 *)aq + b;
                    a->d = lb_f32_to_fp16(d);
                    memcpy(a->qs, qs, 32);
                } else {
                    block_q8_1 *a = (block_q8_1 *)aq + b;
                    int sum = 0;
                    for (int j = 0; j < 32; j++) sum += qs[j];
                    a->d = lb_f32_to_fp16(d);
                    a->s = lb_f32_to_fp16((float)sum * d);
                    memcpy(a->qs, qs, 32);
                }
            }
            check_dot(type, wq, aq, n, "random-blocks");
        }
    }
}

static void test_dispatch(void) {
    for (size_t ti = 0; ti < 3; ti++) {
        const int type = kTypes[ti];
        const lb_kernel *k = lb_kernel_get_at(type, LB_ISA_SCALAR);
        CHECK(k && k->isa == LB_ISA_SCALAR && k->vec_dot == lb_traits(type)->vec_dot);
#if LB_HAVE_X86_KERNELS
        k = lb_kernel_get_at(type, LB_ISA_AVX2);
        CHECK_MSG(k && k->isa == LB_ISA_AVX2, "%s has no AVX2 kernel", lb_traits(type)->name);
#endif
    }
    CHECK(lb_kernel_get(LB_TYPE_Q8_1) == NULL); /* activation-only type */
}

/* llama.cpp-written Q5_0 blocks (Gemma 3's 640-wide rows in its Q4_K_M file):
 * dequantize, requantize with our reference, compare bytes. The largest
 * magnitude of a dequantized block is exactly -16 d, so the requantization
 * sees the same scale and must reproduce the block. */
static void test_gemma_q5_0(void) {
    char path[4096];
    const char *dir = getenv("LOWBIT_MODEL_DIR");
    const char *home = getenv("HOME");
    if (dir) snprintf(path, sizeof path, "%s/gemma-3-270m-q4_k_m.gguf", dir);
    else snprintf(path, sizeof path, "%s/.cache/lowbit/gemma-3-270m-q4_k_m.gguf", home ? home : "");
    if (!lb_test_have(path)) {
        printf("note: %s not found (scripts/get-model.sh); llama.cpp Q5_0 byte check skipped\n", path);
        return;
    }
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(path, &g));
    if (!g) return;
    static float buf[MAX_N];
    static block_q5_0 requant[MAX_N / 32];
    long blocks = 0, same = 0, tensors = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (t->type != LB_TYPE_Q5_0 || t->ne[0] > MAX_N) continue;
        tensors++;
        const int64_t K = t->ne[0], rows = (int64_t)(t->size / lb_row_size(LB_TYPE_Q5_0, K));
        for (int64_t r = 0; r < rows; r++) {
            const block_q5_0 *src = (const block_q5_0 *)((const char *)t->data + r * lb_row_size(LB_TYPE_Q5_0, K));
            lb_dequantize_row_q5_0(src, buf, K);
            lb_quantize_row_q5_0_ref(buf, requant, K);
            for (int64_t b = 0; b < K / 32; b++, blocks++) same += !memcmp(&src[b], &requant[b], sizeof requant[b]);
        }
    }
    printf("gemma Q5_0: %ld tensors, %ld of %ld llama.cpp blocks requantized byte-identically (%.4f%%)\n",
           tensors, same, blocks, blocks ? 100.0 * same / blocks : 0.0);
    CHECK(tensors > 0);
    CHECK(same == blocks);
    gguf_close(g);
}

int main(void) {
    test_traits();
    test_hand_built();
    test_round_trip();
    test_dots_quantized();
    test_dots_random_blocks();
    test_dispatch();
    printf("worst kernel error: %.3g x sum|w*a| (tolerance %g)\n", worst_kernel_err, KERNEL_TOL);
    test_gemma_q5_0();
    return lb_test_result("test_legacy");
}
