/* The 16-row layouts end to end, on tiny-F32 (dim 256, hidden 768: every
 * matrix has 256-aligned rows), for Q2_K, CB2, CB3 and the K-quant mix
 * types Q3_K..Q6_K, IQ4_XS, Q4_1, Q5_0, Q5_1 (under qemu, QEMU_CPU set by
 * scripts/test-arm.sh, only Q2_K and Q4_K: ~55 s a type emulated; the
 * CB2_16X4 and CB3_16X4 kernels are held to the reference at every level by
 * test_kq_repack):
 *  - `quantize ... Q2_K_16X4` (CB2_16X4, CB3_16X4) writes the interleaved
 *    type for the matrices, keeps token_embd plain, and (CB) the books;
 *  - the plain file at the scalar level and the interleaved file there (the
 *    reference kernels) agree to 1e-4 of the largest logit; repacked at
 *    load, with repack off and at the scalar level agree loosely
 *    (lb_test_check_close); the interleaved file loads as is with
 *    bit-identical logits to repacking at load; at the scalar level the
 *    interleaved file still runs, on the scalar reference kernels;
 *  - quantizing the interleaved file back to the base type restores the
 *    plain file's tensor bytes (unpack is exact). */
#include "test_util.h"
#include "test_model_util.h"

#include "formats/repack.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "model/model.h"
#include "model/repack.h"

static int count_type(const lb_model *m, int type) {
    int c = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (int i = 0; i < 7; i++) c += ws[i]->type == type;
    }
    return c;
}

/* `lowbit quantize in out TYPE` on 2 threads; its stats */
static lb_quantize_stats quantize_to(const char *in, const char *out, int type) {
    lb_quantize_params qp;
    memset(&qp, 0, sizeof qp);
    qp.n_threads = 2;
    qp.type = type;
    lb_quantize_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(lb_quantize_file(in, out, &qp, &st));
    return st;
}

/* lb_test_check_close's rel: tolerance as a share of the largest logit. 1e-4 where only the
 * summation order of the reference kernels differs. Between different
 * kernels (or levels) a last-bit difference can put an activation on the
 * other side of a Q8 rounding step in the next layer, which moves the
 * logits of this random model by up to a few percent (Q5_1 SIMD against
 * scalar, Q6_K plain against 16X4: 2-3 %, while each matmul alone agrees to
 * 1e-6, test_kx_repack): 0.1 there, a guard against gross errors; the
 * exact checks are the bit-identical ones below. */
static void one_type(const char *f32, int base, int packed_type, const char *tag) {
    char plain[512], packed[512], back[512], what[128];
    snprintf(plain, sizeof plain, "%s", lb_test_tmp(tag));
    snprintf(packed, sizeof packed, "%s.16x4", lb_test_tmp(tag));
    snprintf(back, sizeof back, "%s.back", lb_test_tmp(tag));
    quantize_to(f32, plain, base);
    const lb_quantize_stats st = quantize_to(f32, packed, packed_type);
    CHECK(st.n_quantized > 0 && st.n_fallback == 0);
    quantize_to(packed, back, base);

    /* on disk: interleaved matrices, plain embedding, same bytes back */
    gguf_file *g = NULL, *ga = NULL, *gb = NULL;
    CHECK_OK(gguf_open(packed, &g));
    if (g) {
        const gguf_tensor *e = gguf_find_tensor(g, "token_embd.weight");
        const gguf_tensor *wq = gguf_find_tensor(g, "blk.0.attn_q.weight");
        CHECK(e && e->type == (uint32_t)base);
        CHECK(wq && wq->type == (uint32_t)packed_type);
        gguf_close(g);
    }
    CHECK_OK(gguf_open(plain, &ga));
    CHECK_OK(gguf_open(back, &gb));
    if (ga && gb) {
        int same = gguf_n_tensors(ga) == gguf_n_tensors(gb);
        for (int64_t i = 0; same && i < gguf_n_tensors(ga); i++) {
            const gguf_tensor *x = gguf_tensor_at(ga, i), *y = gguf_tensor_at(gb, i);
            same &= x->type == y->type && x->size == y->size && !memcmp(x->data, y->data, x->size);
        }
        CHECK_MSG(same, "%s -> %s -> %s changed tensor bytes", lb_type_name(base), lb_type_name(packed_type),
                  lb_type_name(base));
    }
    gguf_close(ga);
    gguf_close(gb);

    /* reference: the plain file at the scalar level (nothing repacked) */
    const lb_isa hw = lb_cpu_detected();
    int V = 0;
    lb_model *m = NULL;
    lb_cpu_force_level(LB_ISA_SCALAR);
    lb_repack_set_mode("auto");
    float *ref = lb_test_logits_keep(plain, &V, NULL, &m);
    CHECK(ref && m && count_type(m, base) == 7 * m->hp.n_layer);
    lb_model_free(m);
    float *y = lb_test_logits_keep(packed, &V, NULL, &m); /* the interleaved file on the reference kernels */
    CHECK(y && m && count_type(m, packed_type) > 0);
    snprintf(what, sizeof what, "%s file at scalar level", lb_type_name(packed_type));
    if (ref && y) lb_test_check_close(ref, y, 2 * V, what, 1e-4);
    free(y);
    lb_model_free(m);
    lb_cpu_force_level(hw);

    /* repacked at load (where a fast kernel exists) and the interleaved file */
    float *at_load = lb_test_logits_keep(plain, &V, NULL, &m);
    const int fast = lb_kernel_get(packed_type)->isa != LB_ISA_SCALAR;
    CHECK(at_load && m && count_type(m, fast ? packed_type : base) > 0);
    snprintf(what, sizeof what, "%s file repacked at load, against the scalar level", lb_type_name(base));
    if (ref && at_load) lb_test_check_close(ref, at_load, 2 * V, what, 0.1);
    lb_model_free(m);
    y = lb_test_logits_keep(packed, &V, NULL, NULL);
    if (y && at_load && fast)
        CHECK_MSG(!memcmp(y, at_load, sizeof(float) * 2 * V), "%s file != %s repacked at load",
                  lb_type_name(packed_type), lb_type_name(base));
    lb_repack_set_mode("off");
    float *off = lb_test_logits_keep(plain, &V, NULL, NULL);
    snprintf(what, sizeof what, "%s file with repack off, against the scalar level", lb_type_name(base));
    if (ref && off) lb_test_check_close(ref, off, 2 * V, what, 0.1);
    snprintf(what, sizeof what, "%s file repacked at load, against repack off", lb_type_name(base));
    if (at_load && off) lb_test_check_close(off, at_load, 2 * V, what, 0.1);
    lb_repack_set_mode("auto");
    free(off);
    free(y);
    free(at_load);
    free(ref);
}

/* A file with the Q6_K_16X4_V1 plane order (lowbit's Q6_K_16X4 before
 * 2026-11-29) loads, converted: the same logits as the plain Q6_K file,
 * repacked at load and with repack off (then plain Q6_K). */
static void v1_file(const char *f32) {
    char plain[512], v1[512];
    snprintf(plain, sizeof plain, "%s", lb_test_tmp("kx_v1_plain.gguf"));
    snprintf(v1, sizeof v1, "%s", lb_test_tmp("kx_v1.gguf"));
    quantize_to(f32, plain, LB_TYPE_Q6_K);
    quantize_to(f32, v1, LB_TYPE_Q6_K_16X4_V1);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(v1, &g));
    const gguf_tensor *wq = g ? gguf_find_tensor(g, "blk.0.attn_q.weight") : NULL;
    CHECK(wq && wq->type == (uint32_t)LB_TYPE_Q6_K_16X4_V1);
    gguf_close(g);
    static const char *modes[] = {"auto", "off"};
    for (int i = 0; i < 2; i++) {
        lb_repack_set_mode(modes[i]);
        int V = 0;
        lb_model *m = NULL;
        float *a = lb_test_logits_keep(plain, &V, NULL, NULL), *b = lb_test_logits_keep(v1, &V, NULL, &m);
        const int want = lb_repack_target(LB_TYPE_Q6_K);
        CHECK_MSG(m && count_type(m, want) == 7 * m->hp.n_layer && count_type(m, LB_TYPE_Q6_K_16X4_V1) == 0,
                  "repack %s: a Q6_K_16X4_V1 file's matrices are not %s", modes[i], lb_type_name(want));
        CHECK_MSG(a && b && !memcmp(a, b, sizeof(float) * 2 * V), "repack %s: the Q6_K_16X4_V1 file's logits differ",
                  modes[i]);
        lb_model_free(m);
        free(a);
        free(b);
    }
    lb_repack_set_mode("auto");
}

int main(void) {
    const char *f32 = lb_test_shared("interop/tiny-F32.gguf");
    if (!lb_test_have(f32)) SKIP("no %s", f32);
    lb_log_level = 0;
    one_type(f32, LB_TYPE_Q2_K, LB_TYPE_Q2_K_16X4, "kq_q2_k.gguf");
    if (!getenv("QEMU_CPU")) {
        one_type(f32, LB_TYPE_CB2, LB_TYPE_CB2_16X4, "kq_cb2.gguf");
        one_type(f32, LB_TYPE_CB3, LB_TYPE_CB3_16X4, "kq_cb3.gguf");
    } else {
        printf("under qemu: not the CB2 and CB3 files\n");
    }
    static const int kx[][2] = {{LB_TYPE_Q4_K, LB_TYPE_Q4_K_16X4},     {LB_TYPE_Q3_K, LB_TYPE_Q3_K_16X4},
                                {LB_TYPE_Q5_K, LB_TYPE_Q5_K_16X4},     {LB_TYPE_Q6_K, LB_TYPE_Q6_K_16X4},
                                {LB_TYPE_IQ4_XS, LB_TYPE_IQ4_XS_16X4}, {LB_TYPE_Q4_1, LB_TYPE_Q4_1_16X4},
                                {LB_TYPE_Q5_0, LB_TYPE_Q5_0_16X4},     {LB_TYPE_Q5_1, LB_TYPE_Q5_1_16X4}};
    const int n_kx = getenv("QEMU_CPU") ? 1 : (int)(sizeof kx / sizeof kx[0]);
    if (n_kx == 1) printf("under qemu: of the K-quant mix layouts only %s\n", lb_type_name(kx[0][1]));
    for (int i = 0; i < n_kx; i++) {
        char tag[64];
        snprintf(tag, sizeof tag, "kx_%s.gguf", lb_type_name(kx[i][0]));
        one_type(f32, kx[i][0], kx[i][1], tag);
    }
    if (n_kx > 1) v1_file(f32);
    return lb_test_result("test_kq_repack_model");
}
