/* Attention (kernels/attention.h) at every ISA level this machine has,
 * against a plain double-precision softmax(q k^T * scale) v, on random data:
 * one and odd token counts, decode after a prefix (pos0 > 0), head_dim 8, 64,
 * 80 and 256, GQA groups 1, 4 and 8, sliding windows, soft-capped scores
 * (Gemma 2: cap tanh(s / cap)), sinks (gpt-oss: a logit per head in the
 * softmax's sum only), 1 and 3 threads.
 * Unwritten cache positions hold NaN, so a kernel that reads a key it must
 * not see fails. Tolerance: |out - ref| <= 1e-4 * max|ref of the head| + 1e-6
 * (f32 sums of up to a few hundred terms, exp within ~2 ulp). Besides, every
 * level and thread count must give the scalar level's bits exactly (the
 * kernels share one order of operations, kernels/vmath.h).
 * Each shape runs with an f32 cache, an fp16 one, fp16 keys with f32
 * values, a q8_0 one, q8_0 keys with fp16 values, f32 keys with q8_0
 * values, a q4_0 one, q4_0 keys with q8_0 values and fp16 keys with q4_0
 * values: the reference takes the keys and values as the cache holds them
 * (rounded to fp16 by lb_f32_to_fp16, or each 32 values of a vector,
 * zero-padded, by lb_quantize_row_q8_0_ref / _q4_0_ref), so the tolerance
 * is the same.
 * A shape with a window runs again on a ring of the fewest slots it allows
 * (kernels/attention.h: n + window - 1, rounded up to a block), written in
 * position order from 0 as the forward pass writes it, so the ring wraps
 * over positions the window left behind: the same bits as the full cache. */
#include "kernels/attention.h"
#include "core/common.h"
#include "core/fp16.h"
#include "formats/types.h"
#include "test_util.h"

typedef struct {
    int n, pos0, n_head, n_head_kv, head_dim, window;
    float scale_mul; /* times 1/sqrt(head_dim): large values test exp's range */
    float softcap;   /* > 0: scores cap tanh(s / cap) */
    float sink;      /* != 0: head h's sink logit is sink + 0.37 h (gpt-oss) */
} shape;

static float sink_of(const shape *sh, int h) { return sh->sink + 0.37f * (float)h; }

static void reference(const shape *sh, const float *q, const float *k, const float *v, double *out) {
    const int hd = sh->head_dim, nh = sh->n_head, nkv = sh->n_head_kv, g = nh / nkv;
    const double scale = sh->scale_mul / sqrt((double)hd);
    const int L = sh->pos0 + sh->n;
    double *sc = malloc((size_t)L * sizeof *sc);
    for (int t = 0; t < sh->n; t++)
        for (int h = 0; h < nh; h++) {
            const int pos = sh->pos0 + t, kvh = h / g;
            const int first = sh->window > 0 && pos - sh->window + 1 > 0 ? pos - sh->window + 1 : 0;
            const float *qr = q + ((size_t)t * nh + h) * hd;
            double mx = -INFINITY, sum = 0.0;
            for (int p = first; p <= pos; p++) {
                const float *kr = k + ((size_t)p * nkv + kvh) * hd;
                double s = 0.0;
                for (int i = 0; i < hd; i++) s += (double)qr[i] * kr[i];
                sc[p] = s * scale;
                if (sh->softcap > 0) sc[p] = sh->softcap * tanh(sc[p] / sh->softcap);
                if (sc[p] > mx) mx = sc[p];
            }
            for (int p = first; p <= pos; p++) sum += (sc[p] = exp(sc[p] - mx));
            if (sh->sink != 0.0f) sum += exp((double)sink_of(sh, h) - mx);
            double *o = out + ((size_t)t * nh + h) * hd;
            for (int i = 0; i < hd; i++) o[i] = 0.0;
            for (int p = first; p <= pos; p++) {
                const float *vr = v + ((size_t)p * nkv + kvh) * hd;
                for (int i = 0; i < hd; i++) o[i] += sc[p] / sum * vr[i];
            }
        }
    free(sc);
}

/* cache element types of K and V */
static const int kv_types[][2] = {{LB_KV_F32, LB_KV_F32},   {LB_KV_F16, LB_KV_F16},   {LB_KV_F16, LB_KV_F32},
                                  {LB_KV_Q8_0, LB_KV_Q8_0}, {LB_KV_Q8_0, LB_KV_F16}, {LB_KV_F32, LB_KV_Q8_0},
                                  {LB_KV_Q4_0, LB_KV_Q4_0}, {LB_KV_Q4_0, LB_KV_Q8_0}, {LB_KV_F16, LB_KV_Q4_0}};
enum { N_KV_TYPES = 9 };
static const char *type_name(int t) { return lb_attn_kv_type_name(t); }

/* x (n vectors of hd floats) as a cache of element type t holds them */
static void as_cached(float *x, size_t n, int hd, int t) {
    for (size_t r = 0; r < n; r++) {
        float *row = x + r * hd;
        if (t == LB_KV_F16) {
            for (int i = 0; i < hd; i++) row[i] = lb_fp16_to_f32(lb_f32_to_fp16(row[i]));
        } else if (t == LB_KV_Q8_0 || t == LB_KV_Q4_0) {
            for (int g = 0; g < hd; g += QK8_0) {
                float pad[QK8_0] = {0}, back[QK8_0];
                const int m = hd - g < QK8_0 ? hd - g : QK8_0;
                memcpy(pad, row + g, (size_t)m * sizeof(float));
                if (t == LB_KV_Q8_0) {
                    block_q8_0 b;
                    lb_quantize_row_q8_0_ref(pad, &b, QK8_0);
                    lb_dequantize_row_q8_0(&b, back, QK8_0);
                } else {
                    block_q4_0 b;
                    lb_quantize_row_q4_0_ref(pad, &b, QK4_0);
                    lb_dequantize_row_q4_0(&b, back, QK4_0);
                }
                memcpy(row + g, back, (size_t)m * sizeof(float));
            }
        }
    }
}

/* the AMX level where the CPU has AMX-BF16: the products on the tile unit
 * in bf16x3 (kernels/x86/attention_amx_impl.h), held to the tolerance but
 * not to the scalar level's bits */
static int tiles_level(lb_isa level) {
    return level == LB_ISA_AMX && (lb_cpu_extra_features() & LB_CPU_AMXBF16);
}

/* the scalar level's output of each shape and cache type, for the bitwise comparison */
static float *scalar_out[32][N_KV_TYPES];

static void check_shape(const shape *sh, int si, int ti, lb_isa level, uint64_t *rng) {
    const int kt = kv_types[ti][0], vt = kv_types[ti][1];
    const int hd = sh->head_dim, nh = sh->n_head, nkv = sh->n_head_kv, L = sh->pos0 + sh->n;
    const int n_ctx = lb_attn_ctx_pad(L + 5);
    const size_t qn = (size_t)sh->n * nh * hd, kvn = (size_t)L * nkv * hd;
    float *q = malloc(qn * sizeof *q), *k = malloc(kvn * sizeof *k), *v = malloc(kvn * sizeof *v);
    float *out = malloc(qn * sizeof *out);
    double *ref = malloc(qn * sizeof *ref);
    const size_t kc_b = lb_attn_k_bytes(n_ctx, nkv, hd, kt), vc_b = lb_attn_v_bytes(n_ctx, nkv, hd, vt);
    void *kc = lb_malloc_aligned(kc_b), *vc = lb_malloc_aligned(vc_b);
    for (size_t i = 0; i < qn; i++) q[i] = lb_test_randf(rng);
    for (size_t i = 0; i < kvn; i++) k[i] = lb_test_randf(rng);
    for (size_t i = 0; i < kvn; i++) v[i] = lb_test_randf(rng);
    /* NaN: f32 entries, fp16 entries and q8_0 scales (0x7e7e) */
    if (kt == LB_KV_F32) for (size_t i = 0; i < kc_b / 4; i++) ((float *)kc)[i] = NAN;
    else memset(kc, 0x7e, kc_b);
    if (vt == LB_KV_F32) for (size_t i = 0; i < vc_b / 4; i++) ((float *)vc)[i] = NAN;
    else memset(vc, 0x7e, vc_b);
    /* the prefix, then the batch, as the forward pass writes them */
    lb_attn_store_kv(kc, vc, kt, vt, n_ctx, nkv, hd, k, (size_t)nkv * hd, v, (size_t)nkv * hd, sh->pos0, 0);
    lb_attn_store_kv(kc, vc, kt, vt, n_ctx, nkv, hd, k + (size_t)sh->pos0 * nkv * hd, (size_t)nkv * hd,
                     v + (size_t)sh->pos0 * nkv * hd, (size_t)nkv * hd, sh->n, sh->pos0);
    /* what the cache holds */
    as_cached(k, (size_t)L * nkv, hd, kt);
    as_cached(v, (size_t)L * nkv, hd, vt);
    reference(sh, q, k, v, ref);
    float sinks[64];
    for (int h = 0; h < nh && h < 64; h++) sinks[h] = sink_of(sh, h);

    for (int nth = 1; nth <= 3; nth += 2) {
        float *scratch = lb_malloc_aligned((size_t)nth * lb_attn_scratch_floats(hd, nh / nkv) * sizeof(float));
        lb_attn_args a = {0};
        a.q = q;
        a.out = out;
        a.k = kc;
        a.v = vc;
        a.k_type = kt, a.v_type = vt;
        a.q_stride = a.o_stride = (size_t)nh * hd;
        a.n_ctx = n_ctx;
        a.n = sh->n;
        a.pos0 = sh->pos0;
        a.n_head = nh;
        a.n_head_kv = nkv;
        a.head_dim = hd;
        a.window = sh->window;
        a.scale = (float)(sh->scale_mul / sqrt((double)hd));
        a.softcap = sh->softcap;
        a.sinks = sh->sink != 0.0f ? sinks : NULL;
        for (size_t i = 0; i < qn; i++) out[i] = NAN;
        lb_attention(&a, scratch, nth);
        double worst = 0.0;
        int bad = 0;
        for (size_t row = 0; row < (size_t)sh->n * nh; row++) {
            double amax = 0.0;
            for (int i = 0; i < hd; i++) amax = fmax(amax, fabs(ref[row * hd + i]));
            for (int i = 0; i < hd; i++) {
                const double e = fabs((double)out[row * hd + i] - ref[row * hd + i]);
                const double tol = 1e-4 * amax + 1e-6;
                if (!(e <= tol)) bad++;
                if (!(e / tol <= worst)) worst = e / tol;
            }
        }
        /* the ring: the same args but the cache */
        const int ring = lb_attn_ctx_pad(sh->n + sh->window - 1);
        if (sh->window > 0 && ring < n_ctx) {
            float *ring_out = malloc(qn * sizeof *ring_out);
            const size_t rk = lb_attn_k_bytes(ring, nkv, hd, kt), rv = lb_attn_v_bytes(ring, nkv, hd, vt);
            void *ring_k = lb_malloc_aligned(rk), *ring_v = lb_malloc_aligned(rv);
            memset(ring_k, 0x7e, rk), memset(ring_v, 0x7e, rv); /* NaN as f32, fp16 and q8_0 scales alike */
            lb_attn_args ra = a;
            ra.k = ring_k, ra.v = ring_v, ra.n_ctx = ring, ra.out = ring_out;
            /* k and v are now as the cache holds them, which storing rounds to themselves (fp16 and q8_0 alike) */
            for (int p = 0; p < L; p++)
                lb_attn_store_kv(ring_k, ring_v, kt, vt, ring, nkv, hd, k + (size_t)p * nkv * hd, (size_t)nkv * hd,
                                 v + (size_t)p * nkv * hd, (size_t)nkv * hd, 1, p);
            lb_attention(&ra, scratch, nth);
            CHECK_MSG(!memcmp(out, ring_out, qn * sizeof(float)),
                      "%s, cache K %s V %s: n=%d pos0=%d hd=%d window=%d threads=%d: a ring of %d slots differs from "
                      "the full cache",
                      lb_isa_name(level), type_name(kt), type_name(vt), sh->n, sh->pos0, hd, sh->window, nth, ring);
            free(ring_out);
            lb_free_aligned(ring_k), lb_free_aligned(ring_v);
        }
        CHECK_MSG(bad == 0,
                  "%s, cache K %s V %s: n=%d pos0=%d heads=%d/%d hd=%d window=%d scale*%g cap %g sink %g threads=%d: "
                  "%d values off, worst %.2f x tol",
                  lb_isa_name(level), type_name(kt), type_name(vt), sh->n, sh->pos0, nh, nkv, hd, sh->window, sh->scale_mul, sh->softcap, sh->sink,
                  nth, bad, worst);
        if (level == LB_ISA_SCALAR && nth == 1) {
            scalar_out[si][ti] = malloc(qn * sizeof(float));
            memcpy(scalar_out[si][ti], out, qn * sizeof(float));
        } else if (scalar_out[si][ti] && !tiles_level(level)) {
            CHECK_MSG(!memcmp(out, scalar_out[si][ti], qn * sizeof(float)),
                      "%s, cache K %s V %s: n=%d pos0=%d heads=%d/%d hd=%d threads=%d: not bit-identical to the "
                      "scalar level",
                      lb_isa_name(level), type_name(kt), type_name(vt), sh->n, sh->pos0, nh, nkv, hd, nth);
        }
        lb_free_aligned(scratch);
    }
    free(q);
    free(k);
    free(v);
    free(out);
    free(ref);
    lb_free_aligned(kc);
    lb_free_aligned(vc);
}

int main(void) {
    const shape shapes[] = {
        /* n pos0 heads kv hd window scale softcap (sink) */
        {1, 0, 4, 4, 64, 0, 1.0f, 0, 0},       /* one token, nothing before it */
        {1, 37, 32, 4, 64, 0, 1.0f, 0, 0},     /* decode after a prefix, group 8 */
        {1, 300, 8, 1, 256, 0, 1.0f, 0, 0},    /* decode, Gemma-like head_dim 256 */
        {1, 300, 8, 1, 256, 64, 1.0f, 0, 0},   /* decode in a sliding window */
        {7, 0, 8, 8, 64, 0, 1.0f, 0, 0},       /* odd batch, group 1 */
        {13, 21, 32, 4, 80, 0, 1.0f, 0, 0},    /* odd head_dim, prefix not block-aligned */
        {70, 0, 16, 2, 64, 0, 1.0f, 0, 0},     /* prefill across key blocks, group 8 */
        {67, 45, 8, 2, 256, 40, 1.0f, 0, 0},   /* prefill after a prefix, window shorter than the batch */
        {33, 0, 6, 6, 80, 0, 1.0f, 0, 0},      /* group 1, head_dim 80 */
        {50, 10, 8, 2, 8, 0, 1.0f, 0, 0},      /* stories260K's head_dim 8 */
        {1, 8, 8, 4, 8, 0, 1.0f, 0, 0},        /* and its decode */
        {40, 3, 8, 2, 64, 0, 40.0f, 0, 0},     /* scores in the hundreds: the max moves, exp flushes */
        {129, 0, 4, 1, 64, 17, 1.0f, 0, 0},    /* group 4, short window */
        {37, 20, 8, 4, 256, 24, 8.0f, 2.0f, 0}, /* soft-capped at 2 (scores up to ~8 squeezed), every other layer's window */
        {1, 90, 8, 4, 256, 0, 8.0f, 50.0f, 0},  /* Gemma 2's cap of 50, decode */
        {70, 0, 16, 2, 64, 0, 40.0f, 5.0f, 0},  /* scores in the hundreds capped: tanh saturates */
        {1, 150, 64, 8, 64, 128, 1.0f, 0, 0.5f},  /* gpt-oss: sinks, decode in its window of 128 */
        {45, 0, 8, 2, 64, 0, 1.0f, 0, 3.0f},      /* sinks above the scores: most of the sum */
        {70, 20, 8, 4, 64, 0, 40.0f, 0, -6.0f},   /* sinks far below scores in the hundreds */
        {5, 1000, 8, 2, 64, 48, 1.0f, 0, 0},      /* a short window far in: a ring of 64 slots wrapped 15 times */
        {40, 200, 8, 4, 80, 33, 1.0f, 0, 0},      /* prefill in a ring of 96, blocks not aligned to it */
    };
    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX};
    const lb_isa detected = lb_cpu_detected();
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        if (lb_cpu_force_level(levels[li]) != levels[li]) {
            printf("level %s: not available here\n", lb_isa_name(levels[li]));
            continue;
        }
        uint64_t rng = 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int ti = 0; ti < N_KV_TYPES; ti++) check_shape(&shapes[i], (int)i, ti, levels[li], &rng);
        printf("level %s: %zu shapes x %d cache types checked\n", lb_isa_name(levels[li]),
               sizeof shapes / sizeof shapes[0], N_KV_TYPES);
    }
    lb_cpu_force_level(detected);
#if defined(__x86_64__)
    /* every x86 level runs SIMD code (AMX without AMX-BF16 the AVX-512 code,
     * with it a kernel of its own) */
    for (int l = 0; l < LB_ISA_COUNT; l++)
        if (lb_isa_is_x86((lb_isa)l) && !tiles_level((lb_isa)l))
            CHECK_MSG(lb_attn_block_get_at((lb_isa)l) ==
                          lb_attn_block_get_at(l >= LB_ISA_AVX512 ? LB_ISA_AVX512 : LB_ISA_AVX2) &&
                          lb_attn_block_get_at((lb_isa)l) != lb_attn_block_get_at(LB_ISA_SCALAR),
                      "level %s", lb_isa_name((lb_isa)l));
    if (tiles_level(LB_ISA_AMX))
        CHECK_MSG(lb_attn_block_get_at(LB_ISA_AMX) != lb_attn_block_get_at(LB_ISA_AVX512), "AMX-BF16 attention");
#endif
    for (int i = 0; i < 32; i++)
        for (int ti = 0; ti < N_KV_TYPES; ti++) free(scalar_out[i][ti]);
    return lb_test_result("test_attention");
}
