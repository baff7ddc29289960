/* GQ{b}_GC files end to end (formats/gqc.h "in a GGUF file",
 * model/quantize_gqc.c, the loader, model/repack.c), on tiny-F32 (dim 256,
 * hidden 768: every matrix is whole 128-blocks):
 *  - `quantize ... GQ4_GC` writes every matrix as its codes (GQ4_GC [K, N])
 *    and its side tensor NAME.gq_sz (F16 [2N]); both are bit for bit what
 *    lb_gqc_quantize_row gives the input's rows; the stats count their bytes;
 *  - the loaded model gives the logits of its F32 twin (every GC matrix
 *    dequantized through its side tensor) to the Q8_0 activations' rounding,
 *    with the matrices expanded and repacked to GQ4_G128_QG where this CPU
 *    has QIGen kernels, and on the GC reference kernel (no expansion) at
 *    the scalar level; GQ3_GC --sym (every zero 4) and GQ2_GC run too;
 *  - a GC file requantizes: to its own type by copying (same bytes), to
 *    Q8_0 through its side tensor (which is then dropped);
 *  - a side tensor that is missing, of another type or shape, or holding a
 *    zero point out of range or a non-finite scale is refused with a
 *    message naming it. */
#include "test_model_util.h"

#include "formats/gc.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "model/model.h"
#include "model/repack.h"

static const gguf_tensor *side_of(const gguf_file *g, const gguf_tensor *t) {
    char name[300];
    snprintf(name, sizeof name, "%.*s%s", (int)t->name.len, t->name.ptr, LB_GQC_SFX);
    return gguf_find_tensor(g, name);
}

/* The file's GC matrices against lb_gqc_quantize_row of the input's rows
 * (sym); its F32 twin written to f32_out. */
static void check_file(const char *in_path, const char *gc_path, int type, int sym, const char *f32_out,
                       const lb_quantize_stats *st) {
    gguf_file *in = NULL, *g = NULL;
    CHECK_OK(gguf_open(in_path, &in));
    CHECK_OK(gguf_open(gc_path, &g));
    if (!in || !g) return;
    int n_gc = 0, exact = 0, shapes = 1, zsym = 1;
    uint64_t bytes = 0;
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(in); i++) gguf_writer_copy_kv(w, gguf_kv_at(in, i));
    float **deq = calloc((size_t)gguf_n_tensors(in), sizeof *deq);
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) {
        const gguf_tensor *ti = gguf_tensor_at(in, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)ti->name.len, ti->name.ptr);
        const gguf_tensor *t = gguf_find_tensor(g, name);
        const int64_t n = ti->ne[0] * ti->ne[1] * ti->ne[2] * ti->ne[3];
        const gguf_tensor *sz = t ? side_of(g, t) : NULL;
        if (t && (int)t->type == type && sz) {
            const int64_t K = ti->ne[0], N = ti->ne[1];
            shapes &= t->n_dims == 2 && t->ne[0] == K && t->ne[1] == N && sz->type == LB_TYPE_F16 && sz->n_dims == 1 &&
                      sz->ne[0] == 2 * N;
            const size_t rs = lb_row_size(type, K);
            uint8_t *codes = malloc(rs);
            int same = 1;
            for (int64_t r = 0; r < N; r++) {
                lb_fp16 s;
                int z;
                lb_gqc_quantize_row(type, (const float *)ti->data + r * K, codes, K, sym, NULL, &s, &z);
                const lb_fp16 *f = (const lb_fp16 *)sz->data + 2 * r;
                same &= !memcmp(codes, (const uint8_t *)t->data + r * rs, rs) && f[0] == s && f[1] == lb_gqc_zero_fp16(z);
                zsym &= !sym || z == 1 << (lb_gqc_bits(type) - 1);
            }
            free(codes);
            exact += same;
            n_gc++;
            bytes += t->size + sz->size;
            lb_gc_view *v = NULL;
            CHECK_OK(lb_gc_view_make(type, N, K, t->data, t->size, sz->data, sz->ne[0], &v));
            if (v && (deq[i] = malloc(sizeof(float) * (size_t)n))) lb_gc_view_dequantize(v, deq[i]);
            lb_free_aligned(v);
        } else if (t && lb_traits((int)t->type) && lb_traits((int)t->type)->to_float &&
                   (deq[i] = malloc(sizeof(float) * (size_t)n))) {
            lb_traits((int)t->type)->to_float(t->data, deq[i], n);
            bytes += t->size;
        }
        CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F32, ti->n_dims, ti->ne, deq[i] ? deq[i] : ti->data));
    }
    CHECK_MSG(n_gc == 16 && n_gc == st->n_quantized, "%d %s matrices in the file, %d quantized in the stats", n_gc,
              lb_type_name(type), st->n_quantized);
    CHECK_MSG(exact == n_gc, "%d of %d %s matrices equal lb_gqc_quantize_row's", exact, n_gc, lb_type_name(type));
    CHECK_MSG(shapes, "GC tensors with the documented types and shapes");
    CHECK_MSG(zsym, "symmetric: a zero point other than 2^(b-1)");
    CHECK_MSG(bytes == st->bytes_out, "the file's tensors hold %llu bytes, the stats %llu", (unsigned long long)bytes,
              (unsigned long long)st->bytes_out);
    CHECK_OK(gguf_writer_write(w, f32_out, NULL, NULL, NULL, NULL));
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) free(deq[i]);
    free(deq);
    gguf_writer_free(w);
    gguf_close(in);
    gguf_close(g);
}

int main(void) {
    const char *f32 = lb_test_shared("interop/tiny-F32.gguf");
    if (!lb_test_have(f32)) SKIP("no %s", f32);
    lb_log_level = 0;
    /* lb_test_tmp's buffers are reused: keep the paths */
    char gc[4096], twin[4096], gc3[4096], twin3[4096], gc2[4096], again[4096], q8[4096];
    snprintf(gc, sizeof gc, "%s", lb_test_tmp("gqc4.gguf"));
    snprintf(twin, sizeof twin, "%s", lb_test_tmp("gqc4_twin_f32.gguf"));
    snprintf(gc3, sizeof gc3, "%s", lb_test_tmp("gqc3.gguf"));
    snprintf(twin3, sizeof twin3, "%s", lb_test_tmp("gqc3_twin_f32.gguf"));
    snprintf(gc2, sizeof gc2, "%s", lb_test_tmp("gqc2.gguf"));
    snprintf(again, sizeof again, "%s", lb_test_tmp("gqc4_again.gguf"));
    snprintf(q8, sizeof q8, "%s", lb_test_tmp("gqc4_q8.gguf"));
    lb_quantize_params qp = {LB_TYPE_GQ4_GC, 2, NULL, NULL};
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file(f32, gc, &qp, &st));
    CHECK_MSG(st.n_fallback == 0 && st.layer_bpw > 4.0 && st.layer_bpw < 4.13, "layer bits %g", st.layer_bpw);
    check_file(f32, gc, LB_TYPE_GQ4_GC, 0, twin, &st);

    /* the model against its F32 twin: at the best level (expanded, repacked
     * where QIGen's kernels run) and at the scalar level (the GC reference) */
    int V = 0, V2 = 0, ty = -1;
    float *y = lb_test_logits(gc, &V, &ty), *ref = lb_test_logits(twin, &V2, NULL);
    CHECK(y && ref && V == V2);
    CHECK_MSG(ty == lb_repack_target(LB_TYPE_GQ4_GC), "blk.0.attn_q runs as %s", lb_type_name(ty));
    if (y && ref) lb_test_check_close(ref, y, 2 * V, "GQ4_GC model against its F32 twin", 0.05);
    lb_cpu_force_level(LB_ISA_SCALAR);
    float *ys = lb_test_logits(gc, &V, &ty);
    lb_cpu_force_level(lb_cpu_detected());
    CHECK_MSG(ty == LB_TYPE_GQ4_GC, "scalar level: blk.0.attn_q runs as %s", lb_type_name(ty));
    /* against the scalar reference with the same Q8_0 activations: AMX-BF16's
     * prefill GEMM rounds them to bf16 instead (held to the F32 twin above;
     * it is the closer of the two there), so it is left out of this one */
    lb_cpu_disable_features(LB_CPU_AMXBF16);
    float *yq = lb_test_logits(gc, &V, &ty);
    lb_cpu_disable_features(0);
    if (yq && ys) lb_test_check_close(ys, yq, 2 * V, "GQ4_GC at the best level against the scalar reference", 0.01);
    free(y), free(ref), free(ys), free(yq);

    /* symmetric 3 bits, 2 bits */
    lb_quantize_options o;
    memset(&o, 0, sizeof o);
    o.sym = 1;
    qp.type = LB_TYPE_GQ3_GC;
    CHECK_OK(lb_quantize_file_ex(f32, gc3, &qp, &o, &st));
    check_file(f32, gc3, LB_TYPE_GQ3_GC, 1, twin3, &st);
    y = lb_test_logits(gc3, &V, NULL), ref = lb_test_logits(twin3, &V2, NULL);
    if (y && ref) lb_test_check_close(ref, y, 2 * V, "GQ3_GC --sym model against its F32 twin", 0.05);
    free(y), free(ref);
    qp.type = LB_TYPE_GQ2_GC;
    CHECK_OK(lb_quantize_file(f32, gc2, &qp, &st));
    y = lb_test_logits(gc2, &V, NULL);
    int finite = y != NULL;
    for (int i = 0; y && i < 2 * V; i++) finite &= isfinite(y[i]) != 0;
    CHECK_MSG(finite, "GQ2_GC model: finite logits");
    free(y);

    /* requantizing: GC -> the same GC copies, GC -> Q8_0 reads the side tensors */
    qp.type = LB_TYPE_GQ4_GC;
    CHECK_OK(lb_quantize_file(gc, again, &qp, &st));
    gguf_file *a = NULL, *b = NULL;
    CHECK_OK(gguf_open(gc, &a));
    CHECK_OK(gguf_open(again, &b));
    if (a && b) {
        int same = gguf_n_tensors(a) == gguf_n_tensors(b);
        for (int64_t i = 0; same && i < gguf_n_tensors(a); i++) {
            const gguf_tensor *ta = gguf_tensor_at(a, i);
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)ta->name.len, ta->name.ptr);
            const gguf_tensor *tb = gguf_find_tensor(b, name);
            same &= tb && tb->type == ta->type && tb->size == ta->size && !memcmp(ta->data, tb->data, ta->size);
        }
        CHECK_MSG(same, "GQ4_GC -> GQ4_GC is a copy of every tensor");
    }
    gguf_close(a), gguf_close(b);
    qp.type = LB_TYPE_Q8_0;
    CHECK_OK(lb_quantize_file(gc, q8, &qp, &st));
    CHECK_MSG(st.n_quantized == 16 && st.n_tensors == 21, "GC -> Q8_0: %d of %d tensors quantized", st.n_quantized,
              st.n_tensors);
    CHECK_OK(gguf_open(q8, &a));
    if (a) {
        CHECK(gguf_n_tensors(a) == 21 && !gguf_find_tensor(a, "blk.0.attn_q.weight.gq_sz"));
        gguf_close(a);
    }
    y = lb_test_logits(q8, &V, NULL), ref = lb_test_logits(twin, &V2, NULL);
    if (y && ref) lb_test_check_close(ref, y, 2 * V, "GQ4_GC requantized to Q8_0 against the GC file's F32 twin", 0.05);
    free(y), free(ref);

    /* malformed side tensors */
    const char *side = "blk.1.attn_v.weight.gq_sz";
    lb_test_corrupt_side(gc, side, 0, 0, 0, "has no scale/zero tensor blk.1.attn_v.weight.gq_sz");
    lb_test_corrupt_side(gc, side, 1, 0, 0, "has type F32");
    lb_test_corrupt_side(gc, side, 2, 0, 0, "not the F16 [256]");
    lb_test_corrupt_side(gc, side, 3, 2 * 5 + 1, lb_gqc_zero_fp16(16), "row 5's zero point is 16, not an integer in 0..15");
    lb_test_corrupt_side(gc, side, 3, 2 * 7, 0x7c00 /* +inf */, "row 7's scale is inf");
    remove(gc), remove(twin), remove(gc3), remove(twin3), remove(gc2), remove(again), remove(q8);
    return lb_test_result("test_gqc_model");
}
