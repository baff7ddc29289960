/* The sliding-window layers' ring (kernels/attention.h, model/forward.c):
 * a context whose batch is small keeps those layers' keys in a ring of the
 * window plus a batch, and gives the logits a context holding every position
 * gives; a sequence can go on from a position only while the ring still
 * holds the keys it sees (lb_seq_reusable), and lb_eval, lb_eval_multi and
 * lb_seq_copy refuse a position it has lost. The model is stories260K with
 * a window of 20 put on its even layers after loading (the forward pass
 * reads both from the model, whatever the architecture); swa_full keeps
 * every position instead. f32, f16, q8_0 and q4_0 caches. Tolerance as test_eval_multi's: batches of another size run the
 * matmuls' other kernels. */
#include "lowbit.h"
#include "kernels/cpu.h"
#include "model/model.h"
#include "test_util.h"

enum { N = 100, WINDOW = 20 };

static lb_context *context(lb_model *m, int n_batch, int n_seq, int kv, int swa_full) {
    lb_context_params cp = lb_context_default_params();
    cp.swa_full = swa_full;
    cp.n_ctx = 128, cp.n_batch = n_batch, cp.n_seq = n_seq, cp.n_threads = 2;
    cp.type_k = cp.type_v = kv;
    lb_context *c = NULL;
    CHECK_OK(lb_context_new(m, &cp, &c));
    return c;
}

static void check_kv(lb_model *m, int kv) {
    const int V = lb_model_n_vocab(m);
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = (int32_t)(1 + (i * 37 + i * i) % (V - 1));
    float *ref = malloc((size_t)N * V * sizeof *ref), *got = malloc((size_t)N * V * sizeof *got);
    /* every position held: a batch of 128 needs a ring of 160 > 128 */
    lb_context *full = context(m, 128, 1, kv, 0);
    /* a batch of 8: a ring of 32 (20 + 7, rounded up to a block of 32) */
    lb_context *ring = context(m, 8, 2, kv, 0);
    if (!full || !ring || !ref || !got) goto done;
    CHECK_MSG(!strstr(lb_context_kv_desc(full), "ring"), "%s", lb_context_kv_desc(full));
    CHECK_MSG(strstr(lb_context_kv_desc(ring), "(sliding-window layers: a ring of 32)"), "%s", lb_context_kv_desc(ring));
    /* 3 of 5 layers hold 32 slots of 128: per sequence, (2 * 128 + 3 * 32) / (5 * 128) of the full cache */
    CHECK_MSG(lb_context_kv_bytes(ring) * 640 == 2 * lb_context_kv_bytes(full) * 352, "%llu vs %llu",
              (unsigned long long)lb_context_kv_bytes(ring), (unsigned long long)lb_context_kv_bytes(full));
    CHECK_OK(lb_eval(full, toks, N, 0, ref, 1));
    CHECK_OK(lb_eval(ring, toks, N, 0, got, 1)); /* 13 batches: the ring wraps 3 times */
    CHECK_MSG(lb_test_max_rel_diff(ref, got, (size_t)N * V) < 1e-4f, "ring vs full: %g", lb_test_max_rel_diff(ref, got, (size_t)N * V));

    /* 100 positions written: the ring holds 68..99, and position k sees k - 19 .. k - 1 */
    CHECK(lb_seq_reusable(ring, 0, 90) == 90);
    CHECK(lb_seq_reusable(ring, 0, 87) == 87);
    CHECK(lb_seq_reusable(ring, 0, 86) == 0);
    CHECK(lb_seq_reusable(ring, 0, 0) == 0);
    CHECK(lb_seq_reusable(ring, 5, 90) == 0); /* no such sequence */
    CHECK(lb_seq_reusable(full, 0, 50) == 50);
    /* swa_full: a batch of 8 and every position kept, which can go back anywhere */
    lb_context *swa_full = context(m, 8, 1, kv, 1);
    if (swa_full) {
        CHECK_MSG(!strstr(lb_context_kv_desc(swa_full), "ring"), "%s", lb_context_kv_desc(swa_full));
        CHECK(lb_context_kv_bytes(swa_full) == lb_context_kv_bytes(full));
        CHECK_OK(lb_eval(swa_full, toks, N, 0, NULL, 0));
        CHECK(lb_seq_reusable(swa_full, 0, 50) == 50);
        CHECK_OK(lb_eval(swa_full, toks + 50, N - 50, 50, got, 1));
        CHECK_MSG(lb_test_max_rel_diff(ref + (size_t)50 * V, got, (size_t)(N - 50) * V) < 1e-4f, "swa_full from 50: %g",
                  lb_test_max_rel_diff(ref + (size_t)50 * V, got, (size_t)(N - 50) * V));
    }
    lb_context_free(swa_full);
    CHECK(lb_eval(ring, toks + 50, 1, 50, got, 0) == LB_ERR_ARG);
    CHECK_MSG(strstr(lb_last_error(), "no longer holds the keys position 50 sees"), "%s", lb_last_error());
    /* going on from 90: the same logits */
    CHECK_OK(lb_eval(ring, toks + 90, N - 90, 90, got, 1));
    CHECK_MSG(lb_test_max_rel_diff(ref + (size_t)90 * V, got, (size_t)(N - 90) * V) < 1e-4f, "from 90: %g",
              lb_test_max_rel_diff(ref + (size_t)90 * V, got, (size_t)(N - 90) * V));

    /* a wrapped ring copied whole: sequence 1 goes on from 95 */
    CHECK(lb_seq_copy(ring, 0, 1, 60) == LB_ERR_ARG);
    CHECK_OK(lb_seq_copy(ring, 0, 1, 95));
    const lb_seq_batch b = {1, 95, N - 95, toks + 95, 1};
    CHECK_OK(lb_eval_multi(ring, &b, 1, got));
    CHECK_MSG(lb_test_max_rel_diff(ref + (size_t)(N - 1) * V, got, (size_t)V) < 1e-4f, "copied, from 95: %g",
              lb_test_max_rel_diff(ref + (size_t)(N - 1) * V, got, (size_t)V));
    const lb_seq_batch lost = {1, 40, 1, toks + 40, 1};
    CHECK(lb_eval_multi(ring, &lost, 1, got) == LB_ERR_ARG);

    /* from 0 again, one token at a time (decode): a fresh start is always
     * allowed, and gives the full cache's decode */
    float *dec = malloc((size_t)V * sizeof *dec);
    for (int i = 0; dec && i < N; i++) CHECK_OK(lb_eval(full, toks + i, 1, i, dec, 0));
    for (int i = 0; dec && i < N; i++) CHECK_OK(lb_eval(ring, toks + i, 1, i, got, 0));
    CHECK_MSG(dec && lb_test_max_rel_diff(dec, got, (size_t)V) < 1e-4f, "decode, %s cache: %g vs decode with every position",
              lb_context_kv_desc(ring), dec ? lb_test_max_rel_diff(dec, got, (size_t)V) : -1.0f);
    free(dec);
    /* a short prefix, before the ring wrapped, copies as positions 0..n-1 */
    CHECK_OK(lb_eval(ring, toks, 25, 0, NULL, 0));
    CHECK_OK(lb_seq_copy(ring, 0, 1, 20));
    const lb_seq_batch b2 = {1, 20, 5, toks + 20, 1};
    CHECK_OK(lb_eval_multi(ring, &b2, 1, got));
    CHECK_MSG(lb_test_max_rel_diff(ref + (size_t)24 * V, got, (size_t)V) < 1e-4f, "copied before wrapping: %g",
              lb_test_max_rel_diff(ref + (size_t)24 * V, got, (size_t)V));
done:
    lb_context_free(full);
    lb_context_free(ring);
    free(ref);
    free(got);
}

int main(void) {
    /* AMX-BF16 CPUs run prefill attention of 16 rows or more on the tile unit
     * in split bf16 (kernels/x86/attention_amx_impl.h), within ~1e-5 of the
     * AVX-512 kernel that takes units of fewer rows, so how a sequence is
     * cut into batches would move its logits by more than this test's bound
     * (3e-4 to 1.6e-2 of their range here, the greedy steps amplifying it):
     * the invariance checked here is the other kernels' */
    lb_cpu_disable_features(LB_CPU_AMXBF16);
    const char *f32 = lb_test_shared("models/stories260K-f32.gguf");
    if (!lb_test_have(f32)) SKIP("no %s", f32);
    lb_model_params mp = lb_model_default_params();
    mp.n_threads = 2;
    lb_model *m = NULL;
    CHECK_OK(lb_model_load(f32, &mp, &m));
    if (!m) return lb_test_result("test_swa_ring");
    m->hp.sliding_window = WINDOW;
    for (int il = 0; il < m->hp.n_layer; il++) m->layers[il].is_local = il % 2 == 0;
    CHECK(m->hp.n_layer == 5);
    const int kvs[] = {LB_TYPE_F32, LB_TYPE_F16, LB_TYPE_Q8_0, LB_TYPE_Q4_0};
    for (int i = 0; i < 4; i++) check_kv(m, kvs[i]);
    lb_model_free(m);
    return lb_test_result("test_swa_ring");
}
