/* llama2.c importer: the GGUF we write for stories260K must carry the same
 * tensors (bytes included) and tokenizer/hyperparameter values as the GGUF
 * llama.cpp's convert-llama2c-to-ggml wrote from the same checkpoint; other
 * output types must hold exactly what the reference quantizers make of those
 * floats; broken inputs must fail cleanly without leaving files behind. */
#include <unistd.h>

#include "formats/types.h"
#include "gguf/gguf.h"
#include "lowbit.h"
#include "test_util.h"

static int progress_calls, progress_last_done, progress_total;
static void on_progress(void *user, const char *what, int done, int total) {
    (void)what;
    (*(int *)user)++;
    progress_calls++;
    progress_last_done = done;
    progress_total = total;
}

static int gone(const char *path) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    return !lb_test_have(path) && !lb_test_have(tmp);
}

static int str_eq(gguf_str s, const char *c) { return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0; }

static int kv_equal(const gguf_kv *a, const gguf_kv *b) {
    if (a->type != b->type) return 0;
    if (a->type == GGUF_TYPE_STRING) return a->str.len == b->str.len && !memcmp(a->str.ptr, b->str.ptr, a->str.len);
    if (a->type != GGUF_TYPE_ARRAY) return a->data_size == b->data_size && !memcmp(a->data, b->data, a->data_size);
    if (a->arr_type != b->arr_type || a->arr_n != b->arr_n) return 0;
    if (a->arr_type == GGUF_TYPE_STRING) {
        for (uint64_t i = 0; i < a->arr_n; i++)
            if (a->strs[i].len != b->strs[i].len || memcmp(a->strs[i].ptr, b->strs[i].ptr, a->strs[i].len))
                return 0;
        return 1;
    }
    return a->data_size == b->data_size && !memcmp(a->data, b->data, a->data_size);
}

/* Every reference tensor is in `ours` with the same shape and, after the
 * reference routines convert the F32 values to our type, the same bytes. */
static void check_tensors(const gguf_file *ours, const gguf_file *ref, int want) {
    int64_t n_ref = gguf_n_tensors(ref), matched = 0;
    for (int64_t i = 0; i < n_ref; i++) {
        const gguf_tensor *r = gguf_tensor_at(ref, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)r->name.len, r->name.ptr);
        const gguf_tensor *o = gguf_find_tensor(ours, name);
        if (!o && strcmp(name, "output.weight") == 0) {
            /* tied: ours relies on token_embd, which must equal llama.cpp's copy */
            o = gguf_find_tensor(ours, "token_embd.weight");
            CHECK(o && !gguf_find_tensor(ours, "output.weight"));
        }
        CHECK_MSG(o != NULL, "tensor %s missing", name);
        if (!o) continue;
        CHECK_MSG(o->n_dims == r->n_dims && !memcmp(o->ne, r->ne, sizeof o->ne), "shape of %s", name);
        CHECK(r->type == LB_TYPE_F32);
        int expect_type = r->n_dims == 1 ? LB_TYPE_F32 : lb_type_fallback(want, r->ne[0]);
        CHECK_MSG((int)o->type == expect_type, "%s: type %u, expected %d", name, o->type, expect_type);
        if ((int)o->type != expect_type) continue;
        uint64_t size = lb_row_size(expect_type, r->ne[0]) * (uint64_t)(r->ne[1] * r->ne[2] * r->ne[3]);
        CHECK(o->size == size);
        unsigned char *expect = malloc(size);
        const lb_type_traits *tr = lb_traits(expect_type);
        uint64_t row = lb_row_size(expect_type, r->ne[0]);
        for (int64_t k = 0; k < r->ne[1] * r->ne[2] * r->ne[3]; k++)
            tr->from_float((const float *)r->data + k * r->ne[0], expect + k * row, r->ne[0]);
        CHECK_MSG(o->size == size && memcmp(o->data, expect, size) == 0, "bytes of %s differ", name);
        free(expect);
        matched++;
    }
    CHECK(matched == n_ref);
}

static void check_keys(const gguf_file *ours, const gguf_file *ref) {
    int compared = 0;
    for (int64_t i = 0; i < gguf_n_kv(ref); i++) {
        const gguf_kv *r = gguf_kv_at(ref, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)r->key.len, r->key.ptr);
        /* llama.cpp's converter writes its --n_ctx default (128) instead of the
         * checkpoint's seq_len (512); general.name is free text. */
        if (!strcmp(key, "llama.context_length") || !strcmp(key, "general.name")) continue;
        const gguf_kv *o = gguf_find_kv(ours, key);
        CHECK_MSG(o && kv_equal(o, r), "key %s missing or different", key);
        compared++;
    }
    CHECK(compared == 17);
    uint32_t u;
    float f;
    int b;
    CHECK(gguf_get_u32(ours, "llama.context_length", &u) && u == 512);
    CHECK(gguf_get_f32(ours, "llama.rope.freq_base", &f) && f == 10000.0f);
    CHECK(gguf_get_bool(ours, "tokenizer.ggml.add_bos_token", &b) && b == 1);
    const char *name = gguf_get_str(ours, "general.name");
    CHECK(name && strcmp(name, "stories260K") == 0);
}

static lb_status convert(const char *model, const char *tok, const char *out, int type) {
    remove(out);
    return lb_convert_llama2c(model, tok, out, type, NULL, NULL);
}

/* Our F32 file against llama.cpp's, plus each output type. */
static void test_stories260k(void) {
    const char *model = lb_test_shared("models/stories260K.bin");
    const char *tok = lb_test_shared("models/tok512.bin");
    const char *out = lb_test_tmp("imp_stories260K-f32.gguf");
    gguf_file *ref = NULL, *ours = NULL;
    CHECK_OK(gguf_open(lb_test_shared("models/stories260K-f32.gguf"), &ref));
    if (!ref) return;

    remove(out);
    int mine = 0;
    CHECK_OK(lb_convert_llama2c(model, tok, out, LB_TYPE_F32, on_progress, &mine));
    CHECK(mine > 0 && progress_calls == mine);
    CHECK(progress_total == 47 && progress_last_done == 47); /* 48 minus the tied output.weight */
    CHECK_OK(gguf_open(out, &ours));
    if (ours) {
        CHECK(gguf_n_tensors(ours) == 47);
        uint32_t ft;
        CHECK(gguf_get_u32(ours, "general.file_type", &ft) && ft == 0);
        check_keys(ours, ref);
        check_tensors(ours, ref, LB_TYPE_F32);
        /* F32 means byte-identical to llama.cpp's file (no Q/K permutation) */
        const gguf_tensor *a = gguf_find_tensor(ours, "blk.3.attn_k.weight");
        const gguf_tensor *b = gguf_find_tensor(ref, "blk.3.attn_k.weight");
        CHECK(a && b && a->size == b->size && memcmp(a->data, b->data, a->size) == 0);
        gguf_close(ours);
        ours = NULL;
    }

    static const struct { int type; uint32_t ftype; } kinds[] = {
        {LB_TYPE_F16, 1}, {LB_TYPE_BF16, 32}, {LB_TYPE_Q8_0, 7}, {LB_TYPE_Q4_0, 2}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const char *qout = lb_test_tmp("imp_stories260K-q.gguf");
        CHECK_OK(convert(model, tok, qout, kinds[k].type));
        CHECK_OK(gguf_open(qout, &ours));
        if (!ours) continue;
        uint32_t ft;
        CHECK(gguf_get_u32(ours, "general.file_type", &ft) && ft == kinds[k].ftype);
        check_tensors(ours, ref, kinds[k].type);
        const gguf_tensor *q = gguf_find_tensor(ours, "blk.0.attn_q.weight");
        const gguf_tensor *down = gguf_find_tensor(ours, "blk.0.ffn_down.weight");
        CHECK(q && (int)q->type == kinds[k].type);
        /* ffn_down rows are 172 long: not a multiple of 32, so quantized types fall back */
        if (kinds[k].type == LB_TYPE_Q8_0 || kinds[k].type == LB_TYPE_Q4_0)
            CHECK(down && down->type == LB_TYPE_F16);
        gguf_close(ours);
        ours = NULL;
        remove(qout);
    }
    gguf_close(ref);
    remove(out);
}

/* A synthetic checkpoint with a separate classifier (negative vocab_size) and
 * the 32000-token Llama 2 tokenizer. */
static void test_unshared_32000(void) {
    const char *bin = lb_test_tmp("imp_synth32000.bin");
    const char *out = lb_test_tmp("imp_synth32000.gguf");
    const int dim = 8, hid = 16, nl = 1, nh = 2, nkv = 1, vocab = 32000, seq = 16;
    const int kv_dim = dim / nh * nkv;
    FILE *f = fopen(bin, "wb");
    CHECK(f != NULL);
    if (!f) return;
    int32_t hdr[7] = {dim, hid, nl, nh, nkv, -vocab, seq};
    fwrite(hdr, 4, 7, f);
    long n_floats = (long)vocab * dim + nl * dim + nl * dim * dim + 2L * nl * dim * kv_dim + nl * dim * dim +
                    nl * dim + 3L * nl * dim * hid + dim + (long)seq * (dim / nh);
    long wcls_at = 28 + 4 * n_floats;
    uint64_t rng = 42;
    for (long i = 0; i < n_floats + (long)vocab * dim; i++) {
        float v = lb_test_randf(&rng);
        fwrite(&v, 4, 1, f);
    }
    fclose(f);

    remove(out);
    CHECK_OK(lb_convert_llama2c(bin, lb_test_shared("models/llama2-tokenizer.bin"), out, LB_TYPE_F32, NULL, NULL));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        const gguf_kv *toks = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
        const gguf_kv *types = gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32);
        const gguf_kv *scores = gguf_get_arr(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32);
        CHECK(toks && toks->arr_n == 32000 && types && types->arr_n == 32000 && scores && scores->arr_n == 32000);
        if (toks && types && scores && toks->arr_n == 32000) {
            int32_t t[32000];
            float sc[32000];
            memcpy(t, types->data, sizeof t);
            memcpy(sc, scores->data, sizeof sc);
            CHECK(str_eq(toks->strs[0], "<unk>") && t[0] == 2);
            CHECK(str_eq(toks->strs[1], "<s>") && t[1] == 3);
            CHECK(str_eq(toks->strs[2], "</s>") && t[2] == 3);
            CHECK(str_eq(toks->strs[13], "<0x0A>") && t[13] == 6);
            CHECK(str_eq(toks->strs[259], "\xe2\x96\x81\xe2\x96\x81") && t[259] == 1);
            CHECK(str_eq(toks->strs[29871], "\xe2\x96\x81"));
            CHECK(str_eq(toks->strs[400], "ht") && sc[400] == -141.0f);
            int n_byte = 0;
            for (int i = 0; i < 32000; i++) n_byte += t[i] == 6;
            CHECK(n_byte == 256);
        }
        const gguf_tensor *o = gguf_find_tensor(g, "output.weight");
        const gguf_tensor *e = gguf_find_tensor(g, "token_embd.weight");
        const gguf_tensor *k = gguf_find_tensor(g, "blk.0.attn_k.weight");
        CHECK(o && o->ne[0] == dim && o->ne[1] == vocab && e && k && k->ne[0] == dim && k->ne[1] == kv_dim);
        if (o) {
            /* output.weight is wcls, read back from the checkpoint */
            FILE *in = fopen(bin, "rb");
            float *w = malloc(sizeof(float) * vocab * dim);
            fseek(in, wcls_at, SEEK_SET);
            CHECK(fread(w, sizeof(float), (size_t)vocab * dim, in) == (size_t)vocab * dim);
            CHECK(memcmp(o->data, w, sizeof(float) * vocab * dim) == 0);
            CHECK(e && memcmp(e->data, o->data, o->size) != 0);
            free(w);
            fclose(in);
        }
        gguf_close(g);
    }
    remove(out);
    remove(bin);
}

/* Writes the first n bytes of src (plus `extra` trailing bytes) to dst. */
static void copy_prefix(const char *src, const char *dst, long n, int extra) {
    FILE *in = fopen(src, "rb"), *o = fopen(dst, "wb");
    char buf[4096];
    long left = n;
    while (left > 0) {
        size_t got = fread(buf, 1, (size_t)LB_MIN(left, (long)sizeof buf), in);
        if (!got) break;
        fwrite(buf, 1, got, o);
        left -= (long)got;
    }
    for (int i = 0; i < extra; i++) fputc(0, o);
    fclose(in);
    fclose(o);
}

static void expect_fail(const char *model, const char *tok, int type, lb_status want, const char *msg_part) {
    const char *out = lb_test_tmp("imp_fail.gguf");
    remove(out);
    lb_status s = lb_convert_llama2c(model, tok, out, type, NULL, NULL);
    CHECK_MSG(s == want, "status %s, expected %s (%s)", lb_status_name(s), lb_status_name(want), lb_last_error());
    CHECK_MSG(strstr(lb_last_error(), msg_part) != NULL, "message \"%s\" lacks \"%s\"", lb_last_error(), msg_part);
    CHECK_MSG(gone(out), "output left behind after: %s", msg_part);
}

static void test_errors(void) {
    const char *model = lb_test_shared("models/stories260K.bin");
    const char *tok = lb_test_shared("models/tok512.bin");
    /* lb_test_tmp's buffers rotate: keep our own copies */
    char bad[4200], badtok[4200];
    snprintf(bad, sizeof bad, "%s", lb_test_tmp("imp_bad.bin"));
    snprintf(badtok, sizeof badtok, "%s", lb_test_tmp("imp_badtok.bin"));

    expect_fail(model, lb_test_shared("models/llama2-tokenizer.bin"), LB_TYPE_F32, LB_ERR_FORMAT,
                "tokenizer has 32000 tokens but the checkpoint's vocab_size is 512");
    copy_prefix(model, bad, 1056540 - 1000, 0);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_FORMAT, "checkpoint is truncated: 1055540 bytes, the header implies 1056540");
    copy_prefix(model, bad, 20, 0);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_FORMAT, "too short for the 28-byte header");
    copy_prefix(model, bad, 1056540, 4);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_FORMAT, "4 unexpected trailing bytes");
    copy_prefix(tok, badtok, 6227 - 3, 0);
    expect_fail(model, badtok, LB_TYPE_F32, LB_ERR_FORMAT, "tokenizer is truncated inside token 511");
    copy_prefix(tok, badtok, 6227 - 11, 0); /* ends right after token 510 (token 511 is 8 + 3 bytes) */
    expect_fail(model, badtok, LB_TYPE_F32, LB_ERR_FORMAT, "tokenizer has 511 tokens");
    copy_prefix(tok, badtok, 2, 0);
    expect_fail(model, badtok, LB_TYPE_F32, LB_ERR_FORMAT, "too short for its header");
    expect_fail(model, lb_test_tmp("imp_no_such_tokenizer.bin"), LB_TYPE_F32, LB_ERR_IO, "cannot open");
    expect_fail(lb_test_tmp("imp_no_such_model.bin"), tok, LB_TYPE_F32, LB_ERR_IO, "cannot open");
    expect_fail(model, tok, LB_TYPE_Q4_K, LB_ERR_ARG, "not supported by the importers");

    /* header problems */
    int32_t hdr[7] = {64, 172, 5, 8, 3, 512, 512};
    FILE *f = fopen(bad, "wb");
    fwrite(hdr, 4, 7, f);
    fclose(f);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_FORMAT, "n_heads 8 is not a multiple of n_kv_heads 3");
    hdr[0] = 0x616b3432;
    f = fopen(bad, "wb");
    fwrite(hdr, 4, 7, f);
    fclose(f);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_UNSUPPORTED, "version 1/2 export");
    int32_t huge[7] = {1 << 30, 1 << 30, 1 << 30, 1 << 20, 1 << 20, 1 << 30, 1 << 30};
    f = fopen(bad, "wb");
    fwrite(huge, 4, 7, f);
    fclose(f);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_FORMAT, "overflow");
    int32_t zero[7] = {64, 172, 0, 8, 4, 512, 512};
    f = fopen(bad, "wb");
    fwrite(zero, 4, 7, f);
    fclose(f);
    expect_fail(bad, tok, LB_TYPE_F32, LB_ERR_FORMAT, "all must be positive");
    remove(bad);
    remove(badtok);
}

/* Must run last: the cancel flag cannot be cleared. */
static void test_cancel(void) {
    const char *out = lb_test_tmp("imp_cancel.gguf");
    remove(out);
    lb_request_cancel();
    lb_status s = lb_convert_llama2c(lb_test_shared("models/stories260K.bin"), lb_test_shared("models/tok512.bin"),
                                     out, LB_TYPE_Q8_0, NULL, NULL);
    CHECK(s == LB_ERR_INTERRUPTED);
    CHECK(gone(out));
}

int main(void) {
    if (!lb_test_have(lb_test_shared("models/stories260K.bin")) ||
        !lb_test_have(lb_test_shared("models/stories260K-f32.gguf")))
        SKIP("shared models not available");
    test_stories260k();
    test_unshared_32000();
    test_errors();
    test_cancel();
    return lb_test_result("test_import");
}
