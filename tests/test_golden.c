/* stories260K, converted from llama2.c's checkpoint by lowbit and also as the
 * GGUF llama.cpp's converter wrote, run greedily on "Once upon a time", must
 * reproduce llama2.c's output token for token
 * (../shared/golden/stories260K.greedy-golden.txt), with an f32 KV cache
 * with an fp16 one (-ctk f16 -ctv f16) and with a q8_0 one (-ctk q8_0 -ctv
 * q8_0: its rounding moves the logits by a KLD of 0.003, tests/cli_perplexity.sh,
 * and leaves these 64 greedy tokens as they are). */
#include "lowbit.h"
#include "test_util.h"

static int read_golden_ids(int32_t *ids, int cap) {
    FILE *f = fopen(lb_test_shared("golden/stories260K.greedy-golden.txt"), "r");
    if (!f) return 0;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "ids:", 4)) continue;
        char *p = line + 4, *end;
        for (long v; n < cap && (v = strtol(p, &end, 10), end != p); p = end) ids[n++] = (int32_t)v;
        break;
    }
    fclose(f);
    return n;
}

static void check_model(const char *path, const int32_t *golden, int n_golden, int kv_type) {
    lb_model *m = NULL;
    CHECK_OK(lb_model_load(path, NULL, &m));
    if (!m) return;
    int32_t prompt[16];
    int n = 0;
    CHECK_OK(lb_tokenize(m, "Once upon a time", 16, 1, prompt, 16, &n));
    const int32_t want_prompt[] = {1, 403, 407, 261, 378};
    CHECK_MSG(n == 5 && !memcmp(prompt, want_prompt, sizeof want_prompt), "%s: prompt tokenized to %d ids", path, n);

    lb_context *ctx = NULL;
    lb_context_params cp = lb_context_default_params();
    cp.n_threads = 2;
    cp.type_k = cp.type_v = kv_type;
    CHECK_OK(lb_context_new(m, &cp, &ctx));
    const int V = lb_model_n_vocab(m);
    float *logits = malloc((size_t)V * sizeof *logits);
    /* golden ids are positions 1..64: the 4 prompt tokens then 60 generated */
    int32_t out[128];
    int n_out = 0;
    for (int i = 1; i < n; i++) out[n_out++] = prompt[i];
    CHECK_OK(lb_eval(ctx, prompt, n, 0, logits, 0));
    int pos = n;
    while (n_out < n_golden) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        out[n_out++] = best;
        if (lb_eval(ctx, &out[n_out - 1], 1, pos++, logits, 0) != LB_OK) break;
    }
    int first_diff = -1;
    for (int i = 0; i < n_golden && first_diff < 0; i++)
        if (out[i] != golden[i]) first_diff = i;
    CHECK_MSG(first_diff < 0, "%s, %s KV cache: generation differs from the golden output at step %d (%d vs %d)", path,
              lb_type_name(kv_type), first_diff, first_diff >= 0 ? out[first_diff] : 0, first_diff >= 0 ? golden[first_diff] : 0);
    /* and the text reads as the golden text does */
    char text[4096] = "";
    size_t len = 0;
    for (int i = 0; i < n_golden; i++) {
        size_t pl;
        const char *p = lb_token_to_piece(m, out[i], &pl);
        if (len + pl < sizeof text - 1) { memcpy(text + len, p, pl); len += pl; }
    }
    text[len] = 0;
    CHECK_MSG(strstr(text, "Once upon a time, there was a little girl named Lily.") != NULL, "text: %s", text);
    free(logits);
    lb_context_free(ctx);
    lb_model_free(m);
}

int main(void) {
    if (!lb_test_have(lb_test_shared("models/stories260K.bin"))) SKIP("../shared/models not found");
    int32_t golden[128];
    int n_golden = read_golden_ids(golden, 128);
    CHECK(n_golden == 64);

    const char *out = lb_test_tmp("stories260K-golden.gguf");
    CHECK_OK(lb_convert_llama2c(lb_test_shared("models/stories260K.bin"), lb_test_shared("models/tok512.bin"), out,
                                LB_TYPE_F32, NULL, NULL));
    const int kv_types[] = {LB_TYPE_F32, LB_TYPE_F16, LB_TYPE_Q8_0};
    for (int kv = 0; kv < 3; kv++) {
        const int t = kv_types[kv];
        check_model(out, golden, n_golden, t);
        check_model(lb_test_shared("models/stories260K-f32.gguf"), golden, n_golden, t);
    }
    return lb_test_result("test_golden");
}
