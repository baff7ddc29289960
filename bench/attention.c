/* Attention kernel benchmark (kernels/attention.h): prefill (n tokens from
 * position 0) and decode (one token after a context of d), per ISA level,
 * in GFLOPS of useful work (4 * head_dim flops per query and visible key:
 * q.k and p*v) and milliseconds per call.
 *
 * usage: attention [-t THREADS] [-n N] [-d DEPTH] [--heads H/KV] [--hd D] [--window W] [--cache f32|f16|q8_0|q4_0]
 *                  [-s SECONDS]
 *   defaults: 1 thread, n 512, depth 512, TinyLlama's heads 32/4, head_dim 64, an f32 cache (f16, q8_0 or q4_0:
 *   K and V in that type, as `lowbit run -ctk T -ctv T`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/attention.h"

typedef struct {
    float *q, *out, *scratch;
    void *k, *v;
    lb_attn_args a;
} setup;

static double useful_flops(const lb_attn_args *a) {
    double keys = 0;
    for (int t = 0; t < a->n; t++) {
        const int pos = a->pos0 + t;
        keys += a->window > 0 && pos + 1 > a->window ? a->window : pos + 1;
    }
    return 4.0 * keys * a->n_head * a->head_dim;
}

static double run(const lb_attn_args *a, float *scratch, int threads, double seconds) {
    lb_attention(a, scratch, threads); /* warm-up */
    int reps = 0;
    const double t0 = lb_time_s();
    double t = t0;
    while (t - t0 < seconds || reps < 3) {
        lb_attention(a, scratch, threads);
        reps++;
        t = lb_time_s();
    }
    return (t - t0) / reps;
}

int main(int argc, char **argv) {
    int threads = 1, n = 512, depth = 512, nh = 32, nkv = 4, hd = 64, window = 0, ct = LB_KV_F32;
    double seconds = 0.5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "-t")) threads = atoi(v);
        else if (!strcmp(o, "-n")) n = atoi(v);
        else if (!strcmp(o, "-d")) depth = atoi(v);
        else if (!strcmp(o, "--heads")) { if (sscanf(v, "%d/%d", &nh, &nkv) != 2) return 2; }
        else if (!strcmp(o, "--hd")) hd = atoi(v);
        else if (!strcmp(o, "--window")) window = atoi(v);
        else if (!strcmp(o, "-s")) seconds = atof(v);
        else if (!strcmp(o, "--cache")) {
            ct = -1;
            for (int t = LB_KV_F32; t < LB_KV_TYPES; t++)
                if (!strcmp(v, lb_attn_kv_type_name(t))) ct = t;
            if (ct < 0) { fprintf(stderr, "--cache %s: f32, f16, q8_0 or q4_0\n", v); return 2; }
        }
        else { fprintf(stderr, "unknown option %s\n", o); return 2; }
    }
    if (n < 1 || depth < 0 || nh < 1 || nkv < 1 || nh % nkv || hd < 1 || threads < 1) return 2;
    const int L = LB_MAX(n, depth + 1), n_ctx = lb_attn_ctx_pad(L);
    const size_t kc = lb_attn_k_bytes(n_ctx, nkv, hd, ct), vc = lb_attn_v_bytes(n_ctx, nkv, hd, ct);
    float *q = lb_malloc_aligned((size_t)n * nh * hd * sizeof(float));
    float *out = lb_malloc_aligned((size_t)n * nh * hd * sizeof(float));
    void *k = lb_malloc_aligned(kc), *v = lb_malloc_aligned(vc);
    float *krow = malloc((size_t)nkv * hd * sizeof(float)), *vrow = malloc((size_t)nkv * hd * sizeof(float));
    float *scratch = lb_malloc_aligned((size_t)threads * lb_attn_scratch_floats(hd, nh / nkv) * sizeof(float));
    if (!q || !out || !k || !v || !krow || !vrow || !scratch) return 1;
    uint64_t r = 88172645463325252ull;
#define RND() (r ^= r << 13, r ^= r >> 7, r ^= r << 17, (float)((r >> 40) * (1.0 / 8388608.0)) - 1.0f)
    for (size_t i = 0; i < (size_t)n * nh * hd; i++) q[i] = RND();
    for (int p = 0; p < L; p++) {
        for (int i = 0; i < nkv * hd; i++) krow[i] = RND(), vrow[i] = RND();
        lb_attn_store_kv(k, v, ct, ct, n_ctx, nkv, hd, krow, 0, vrow, 0, 1, p);
    }
    printf("heads %d/%d, head_dim %d, window %d, %s cache, %d thread(s)\n", nh, nkv, hd, window,
           lb_attn_kv_type_name(ct),
           threads);
    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_AMX};
    const lb_isa hw = lb_cpu_detected();
    for (int li = 0; li < 4; li++) {
        if (lb_cpu_force_level(levels[li]) != levels[li]) continue;
        lb_attn_args a = {.q = q, .out = out, .k = k, .v = v, .k_type = ct, .v_type = ct,
                          .q_stride = (size_t)nh * hd, .o_stride = (size_t)nh * hd, .n_ctx = n_ctx, .n = n, .pos0 = 0,
                          .n_head = nh, .n_head_kv = nkv, .head_dim = hd, .window = window, .scale = 0.125f};
        double dt = run(&a, scratch, threads, seconds);
        printf("%-7s prefill n=%-5d %8.3f ms %7.1f GFLOPS\n", lb_isa_name(levels[li]), n, dt * 1e3,
               useful_flops(&a) / dt / 1e9);
        a.n = 1;
        a.pos0 = depth;
        dt = run(&a, scratch, threads, seconds);
        printf("%-7s decode  d=%-5d %8.3f ms %7.1f GFLOPS\n", lb_isa_name(levels[li]), depth, dt * 1e3,
               useful_flops(&a) / dt / 1e9);
    }
    lb_cpu_force_level(hw);
    lb_free_aligned(q);
    lb_free_aligned(out);
    lb_free_aligned(k);
    lb_free_aligned(v);
    lb_free_aligned(scratch);
    free(krow);
    free(vrow);
    return 0;
}
