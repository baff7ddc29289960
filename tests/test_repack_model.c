/* Interleaved layouts end to end, on stories260K (dim 64, hidden 172: the
 * 172-row matrices end in a plain tail of 4 rows under 8-row layouts, and
 * 172-long rows do not fit 32-blocks, so those stay wider):
 *  - `quantize ... Q4_0_8X8` (and IQ4_NL_4X4, Q8_0_4X8) writes the
 *    interleaved types, keeps token_embd plain, and loads with no repack;
 *  - a plain Q4_0 file repacked at load (auto, each layout, off) gives the
 *    same logits as the scalar plain reference (within the noise of int8
 *    activation rounding: see check_close), and loading the
 *    interleaved file gives bit-identical logits to repacking at load;
 *  - quantizing the interleaved file back to Q4_0 restores the Q4_0 file's
 *    tensor bytes (unpack is exact);
 *  - at the scalar level nothing is repacked (no faster kernel) and the
 *    interleaved file still runs, on the scalar reference kernels. */
#include "test_util.h"
#include "test_model_util.h"

#include "core/common.h"
#include "formats/repack.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "model/model.h"
#include "model/repack.h"

static double max_abs(const float *x, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* Kernels that sum in a different order differ by float rounding only, but
 * every matmul requantizes its input to int8: a 1e-7 difference can flip
 * one rounding, which moves the next layers' outputs by up to ~1% of the
 * largest logit on this tiny model (dim 64). A wrong kernel (nibble order,
 * scale, tail rows) changes the logits entirely. So: the RMS difference
 * within 1% of the logits' RMS, no logit off by more than 3% of the largest. */
static void check_close(const float *a, const float *b, int n, const char *what) {
    const double tol = 3e-2 * max_abs(a, n);
    double d2 = 0, a2 = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const double d = (double)a[i] - b[i];
        d2 += d * d;
        a2 += (double)a[i] * a[i];
        bad += !(fabs(d) <= tol);
    }
    CHECK_MSG(!bad, "%s: %d of %d logits differ by more than %g", what, bad, n, tol);
    CHECK_MSG(d2 <= 1e-4 * a2, "%s: RMS difference %.3g of the logits' RMS", what, sqrt(d2 / (a2 + 1e-30)));
}

static int count_type(const lb_model *m, int type) {
    int c = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (int i = 0; i < 7; i++) c += ws[i]->type == type;
    }
    return c;
}

/* Weight blocks (core/common.c): big ones are separate mappings, 2 MiB
 * aligned outside sanitized builds; all are freed by lb_free_aligned, and
 * absurd sizes fail with an error instead of wrapping around. */
static void check_weight_alloc(void) {
    const size_t n = (size_t)5 << 20;
    uint8_t *a = lb_malloc_huge(n), *b = lb_malloc_huge(100), *c = lb_malloc_aligned(n);
    CHECK(a && b && c && ((uintptr_t)a & 63) == 0 && ((uintptr_t)b & 63) == 0 && ((uintptr_t)c & 63) == 0);
    if (a) {
        memset(a, 7, n);
        CHECK(a[0] == 7 && a[n - 1] == 7);
    }
    lb_free_aligned(a);
    lb_free_aligned(b);
    lb_free_aligned(c);
    lb_free_aligned(NULL);
    CHECK(lb_malloc_huge(SIZE_MAX) == NULL);
    CHECK(lb_malloc_aligned(SIZE_MAX - 10) == NULL);
}

int main(void) {
    check_weight_alloc();
    const char *f32 = lb_test_shared("models/stories260K-f32.gguf");
    if (!lb_test_have(f32)) SKIP("no %s", f32);
    lb_log_level = 0;
    const lb_isa hw = lb_cpu_detected();
    char q4[512], q4x8[512], iq4x4[512], q8x48[512], back[512];
    snprintf(q4, sizeof q4, "%s", lb_test_tmp("rp_q4_0.gguf"));
    snprintf(q4x8, sizeof q4x8, "%s", lb_test_tmp("rp_q4_0_8x8.gguf"));
    snprintf(iq4x4, sizeof iq4x4, "%s", lb_test_tmp("rp_iq4_nl_4x4.gguf"));
    snprintf(q8x48, sizeof q8x48, "%s", lb_test_tmp("rp_q8_0_4x8.gguf"));
    snprintf(back, sizeof back, "%s", lb_test_tmp("rp_back_q4_0.gguf"));
    lb_quantize_params qp;
    memset(&qp, 0, sizeof qp);
    qp.type = LB_TYPE_Q4_0;
    qp.n_threads = 2;
    lb_quantize_stats st;
    CHECK_OK(lb_quantize_file(f32, q4, &qp, &st));
    qp.type = LB_TYPE_Q4_0_8X8;
    CHECK_OK(lb_quantize_file(f32, q4x8, &qp, &st));
    CHECK(st.n_quantized > 0);
    qp.type = LB_TYPE_IQ4_NL_4X4;
    CHECK_OK(lb_quantize_file(f32, iq4x4, &qp, &st));
    qp.type = LB_TYPE_Q8_0_4X8;
    CHECK_OK(lb_quantize_file(f32, q8x48, &qp, &st));
    qp.type = LB_TYPE_Q4_0;
    CHECK_OK(lb_quantize_file(q4x8, back, &qp, &st));

    /* the interleaved file: types on disk */
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(q4x8, &g));
    if (g) {
        const gguf_tensor *e = gguf_find_tensor(g, "token_embd.weight");
        const gguf_tensor *wq = gguf_find_tensor(g, "blk.0.attn_q.weight");
        const gguf_tensor *up = gguf_find_tensor(g, "blk.0.ffn_up.weight");
        CHECK(e && e->type == LB_TYPE_Q4_0);
        CHECK(wq && wq->type == LB_TYPE_Q4_0_8X8);
        CHECK(up && up->type == LB_TYPE_Q4_0_8X8 && up->ne[1] % 8 != 0); /* 172 rows: plain tail */
        gguf_close(g);
    }
    /* back to Q4_0: the same tensor bytes as the direct Q4_0 file */
    gguf_file *ga = NULL, *gb = NULL;
    CHECK_OK(gguf_open(q4, &ga));
    CHECK_OK(gguf_open(back, &gb));
    if (ga && gb) {
        CHECK(gguf_n_tensors(ga) == gguf_n_tensors(gb));
        int same = 1;
        for (int64_t i = 0; i < gguf_n_tensors(ga) && i < gguf_n_tensors(gb); i++) {
            const gguf_tensor *x = gguf_tensor_at(ga, i), *y = gguf_tensor_at(gb, i);
            same &= x->type == y->type && x->size == y->size && !memcmp(x->data, y->data, x->size);
        }
        CHECK_MSG(same, "Q4_0 -> Q4_0_8X8 -> Q4_0 changed tensor bytes");
    }
    gguf_close(ga);
    gguf_close(gb);

    /* reference: plain Q4_0 at the scalar level, no repacking */
    int V = 0;
    lb_cpu_force_level(LB_ISA_SCALAR);
    lb_repack_set_mode("auto");
    lb_model *m = NULL;
    float *ref = lb_test_logits_keep(q4, &V, NULL, &m);
    CHECK(ref && m && count_type(m, LB_TYPE_Q4_0) > 0 && count_type(m, LB_TYPE_Q4_0_8X8) == 0);
    lb_model_free(m);
    /* the interleaved file at the scalar level: reference kernels */
    float *y = lb_test_logits_keep(q4x8, &V, NULL, &m);
    CHECK(y && m && count_type(m, LB_TYPE_Q4_0_8X8) > 0);
    if (ref && y) check_close(ref, y, 2 * V, "Q4_0_8X8 file at scalar level");
    free(y);
    lb_model_free(m);
    lb_cpu_force_level(hw);
    if (!ref) return lb_test_result("test_repack_model");

    /* every mode at the detected level */
    const char *modes[] = {"off", "auto", "4x4", "4x8", "8x8"};
    const int want[] = {LB_TYPE_Q4_0, -1, LB_TYPE_Q4_0_4X4, LB_TYPE_Q4_0_4X8, LB_TYPE_Q4_0_8X8};
    float *auto_y = NULL;
    for (int i = 0; i < 5; i++) {
        CHECK(lb_repack_set_mode(modes[i]));
        y = lb_test_logits_keep(q4, &V, NULL, &m);
        CHECK(y != NULL);
        if (!y) continue;
        char what[64];
        snprintf(what, sizeof what, "Q4_0 file, repack %s", modes[i]);
        check_close(ref, y, 2 * V, what);
        const int t = want[i] >= 0 ? want[i] : lb_repack_target(LB_TYPE_Q4_0);
        /* a layout without a kernel above scalar stays plain */
        const int expect = lb_kernel_get(t)->isa != LB_ISA_SCALAR ? t : LB_TYPE_Q4_0;
        CHECK_MSG(count_type(m, expect) > 0, "mode %s: no %s matrices", modes[i], lb_type_name(expect));
        CHECK(m->tok_embd.type == LB_TYPE_Q4_0);
        lb_model_free(m);
        if (!strcmp(modes[i], "8x8")) auto_y = y;
        else free(y);
    }
    /* the 8x8 file loads as is and computes exactly what repacking at load does */
    lb_repack_set_mode("auto");
    y = lb_test_logits_keep(q4x8, &V, NULL, &m);
    if (y && auto_y && lb_kernel_get(LB_TYPE_Q4_0_8X8)->isa != LB_ISA_SCALAR)
        CHECK_MSG(!memcmp(y, auto_y, sizeof(float) * 2 * V), "Q4_0_8X8 file != Q4_0 repacked to 8x8 at load");
    free(y);
    lb_model_free(m);
    free(auto_y);

    /* IQ4_NL and Q8_0 interleaved files against their plain versions */
    const struct { const char *file; int type, base; } others[] = {
        {iq4x4, LB_TYPE_IQ4_NL_4X4, LB_TYPE_IQ4_NL}, {q8x48, LB_TYPE_Q8_0_4X8, LB_TYPE_Q8_0}};
    for (int i = 0; i < 2; i++) {
        char plain[512];
        snprintf(plain, sizeof plain, "%s", lb_test_tmp(i ? "rp_q8_0.gguf" : "rp_iq4_nl.gguf"));
        qp.type = others[i].base;
        CHECK_OK(lb_quantize_file(f32, plain, &qp, &st));
        lb_repack_set_mode("off");
        float *a = lb_test_logits_keep(plain, &V, NULL, NULL);
        lb_repack_set_mode("auto");
        float *b = lb_test_logits_keep(others[i].file, &V, NULL, &m);
        CHECK(b && m && count_type(m, others[i].type) > 0);
        if (a && b) check_close(a, b, 2 * V, lb_type_name(others[i].type));
        free(a);
        free(b);
        lb_model_free(m);
    }
    free(ref);
    return lb_test_result("test_repack_model");
}
