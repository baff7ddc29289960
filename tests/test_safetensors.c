/* Hugging Face importer: the strict JSON parser, the strict safetensors
 * header parser (a table of malformed headers, each with its own message),
 * and whole conversions of tiny checkpoints this test writes itself:
 * a sharded Llama with F32/F16/BF16 tensors and a byte-level BPE tokenizer,
 * a single-file Qwen2 (biases, tied embeddings) and a Mistral with a
 * byte-fallback (SentencePiece-style) tokenizer. The q/k row permutation is
 * checked against a direct transcription of llama.cpp's reshape/swapaxes. */
#include <sys/stat.h>
#include <unistd.h>

#include "core/fp16.h"
#include "formats/types.h"
#include "gguf/gguf.h"
#include "import/json.h"
#include "import/safetensors.h"
#include "lowbit.h"
#include "test_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- small helpers ---- */

typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) LB_PRINTF(2, 3);
static void sb_add(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (b->p && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return; }
    fwrite(data, 1, n, f);
    fclose(f);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_file(path, text, strlen(text));
}

static void remove_in(const char *dir, const char *name) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
}

static int has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

/* ---- JSON ---- */

static void test_json(void) {
    json_doc *d = NULL;
    const char *ok = " {\"a\": [1, -2.5e1, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\\\"\\/\"],"
                     " \"big\": 9007199254740993, \"neg\": -9223372036854775808, \"huge\": 99999999999999999999,"
                     " \"nul\": \"a\\u0000b\", \"\": {}} ";
    CHECK_OK(json_parse(ok, strlen(ok), &d));
    if (d) {
        const json_value *r = json_root(d), *a = json_get_type(r, "a", JSON_ARRAY);
        CHECK(a && a->n == 6);
        if (a && a->n == 6) {
            CHECK(a->items[0].is_int && a->items[0].i == 1);
            CHECK(!a->items[1].is_int && a->items[1].number == -25.0);
            CHECK(a->items[2].type == JSON_BOOL && a->items[2].boolean && !a->items[3].boolean);
            CHECK(a->items[4].type == JSON_NULL);
            CHECK(a->items[5].n == 10 && !memcmp(a->items[5].str, "x\xc3\xa9\xf0\x9f\x98\x80\n\"/", 10));
        }
        int64_t i;
        CHECK(json_get_int(r, "big", &i) && i == 9007199254740993LL); /* exact beyond 2^53 */
        CHECK(json_get_int(r, "neg", &i) && i == INT64_MIN);
        CHECK(!json_get_int(r, "huge", &i) && json_get(r, "huge")->number > 9.9e19);
        const json_value *nul = json_get(r, "nul");
        CHECK(nul && nul->n == 3 && nul->str[1] == 0);
        CHECK(json_get_type(r, "", JSON_OBJECT) != NULL);
        json_free(d);
    }
    static const struct { const char *text, *msg; } bad[] = {
        {"", "unexpected end of input"},
        {"[1,]", "unexpected character"},
        {"{\"a\":1,}", "expected a string key"},
        {"[1 2]", "expected ',' or ']'"},
        {"{\"a\" 1}", "expected ':'"},
        {"01", "unexpected data after"},
        {"1.", "digit expected after '.'"},
        {"1e", "digit expected in exponent"},
        {"NaN", "unexpected character"},
        {"-", "invalid number"},
        {"\"abc", "unterminated string"},
        {"\"a\tb\"", "control character"},
        {"\"\\x\"", "invalid escape"},
        {"\"\\u12\"", "bad \\u escape"},
        {"\"\\ud800\"", "high surrogate not followed"},
        {"\"\\udc00\"", "lone low surrogate"},
        {"\"\xc0\xaf\"", "invalid UTF-8"},        /* overlong '/' */
        {"\"\xed\xa0\x80\"", "invalid UTF-8"},    /* encoded surrogate */
        {"{\"k\":1,\"k\":2}", "duplicate key \"k\""},
        {"[", "unexpected end of input"},
        {"{\"a\":[1}", "expected ',' or ']'"},
        {"tru", "unexpected character"},
        {"[] []", "unexpected data after"},
        {"// c\n1", "unexpected character"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        lb_status s = json_parse(bad[k].text, strlen(bad[k].text), &d);
        CHECK_MSG(s == LB_ERR_FORMAT && d == NULL, "accepted %s", bad[k].text);
        CHECK_MSG(has(lb_last_error(), bad[k].msg), "\"%s\": message \"%s\" lacks \"%s\"", bad[k].text,
                  lb_last_error(), bad[k].msg);
    }
    /* error position */
    CHECK(json_parse("{\n  \"a\": x}", 11, &d) == LB_ERR_FORMAT && has(lb_last_error(), "line 2, column 8"));
    /* depth: 128 nested arrays parse, 129 do not (and 100000 fail fast, no stack blowup) */
    char deep[100001];
    for (int depth = 128; depth <= 129; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        lb_status s = json_parse(deep, 2 * (size_t)depth, &d);
        CHECK(depth == 128 ? s == LB_OK : (s == LB_ERR_FORMAT && has(lb_last_error(), "nesting")));
        json_free(d);
        d = NULL;
    }
    memset(deep, '[', sizeof deep - 1);
    CHECK(json_parse(deep, sizeof deep - 1, &d) == LB_ERR_FORMAT);
}

/* ---- safetensors headers ---- */

static void write_st_raw(const char *path, uint64_t hlen, const char *header, size_t header_bytes, size_t data_bytes) {
    FILE *f = fopen(path, "wb");
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(hlen >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(header, 1, header_bytes, f);
    for (size_t i = 0; i < data_bytes; i++) fputc(0, f);
    fclose(f);
}

static void test_safetensors_headers(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s", lb_test_tmp("st_bad.safetensors"));
    static const struct { const char *header; size_t data; const char *msg; } bad[] = {
        {"{not json}", 0, "header is not valid JSON"},
        {"[]", 0, "header is a JSON array, not an object"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "out of bounds (data section is 4 bytes)"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 16, "overlap"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", 16, "span 8 bytes but shape and dtype F32 need 16"},
        {"{\"t\":{\"dtype\":\"F12\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype \"F12\""},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, "element count too large"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", 8, "byte size too large"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape[0] is not a non-negative integer"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "shape[0] is not a non-negative integer"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "begin 8 > end 0"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, "must have 2 entries"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,-8]}}", 8, "not non-negative integers"},
        {"{\"t\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "missing or non-string dtype"},
        {"{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "missing or non-array shape"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "missing or non-array data_offsets"},
        {"{\"t\":[]}", 8, "entry is not an object"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 8, "9 dimensions"},
        {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate key \"t\""},
        {"{\"__metadata__\":[1]}", 0, "__metadata__ is not an object"},
        {"{\"__metadata__\":{\"format\":1}}", 0, "__metadata__ value \"format\" is not a string"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t hl = strlen(bad[k].header);
        write_st_raw(path, hl, bad[k].header, hl, bad[k].data);
        st_file *st = NULL;
        lb_status s = st_open(path, &st);
        CHECK_MSG(s == LB_ERR_FORMAT && !st, "case %zu accepted", k);
        CHECK_MSG(has(lb_last_error(), bad[k].msg), "case %zu: message \"%s\" lacks \"%s\"", k, lb_last_error(),
                  bad[k].msg);
        CHECK(has(lb_last_error(), "st_bad.safetensors"));
        st_close(st);
    }
    /* header length problems */
    st_file *st = NULL;
    write_st_raw(path, 1ull << 40, "{}", 2, 0);
    CHECK(st_open(path, &st) == LB_ERR_FORMAT && has(lb_last_error(), "header length 1099511627776 is absurd"));
    write_st_raw(path, 1, "{", 1, 0);
    CHECK(st_open(path, &st) == LB_ERR_FORMAT && has(lb_last_error(), "is absurd"));
    write_st_raw(path, 1000, "{}", 2, 50);
    CHECK(st_open(path, &st) == LB_ERR_FORMAT && has(lb_last_error(), "header length 1000 is longer than the file (60 bytes)"));
    write_file(path, "\x02\0\0", 3);
    CHECK(st_open(path, &st) == LB_ERR_FORMAT && has(lb_last_error(), "too short for the 8-byte header length"));
    CHECK(st_open(lb_test_tmp("st_missing.safetensors"), &st) == LB_ERR_IO);

    /* a good one: padding spaces after the JSON, metadata, zero-size tensor, sorted lookup */
    const char *good = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[8,14]},"
                       "\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                       "\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[14,14]}}    ";
    write_st_raw(path, strlen(good), good, strlen(good), 14);
    CHECK_OK(st_open(path, &st));
    if (st) {
        CHECK(st->n_tensors == 3);
        const st_tensor *b = st_find(st, "b"), *a = st_find(st, "a"), *z = st_find(st, "z");
        CHECK(b && b->dtype == ST_BF16 && b->numel == 3 && b->nbytes == 6 && b->offset == 8 + strlen(good) + 8);
        CHECK(a && a->dtype == ST_I64 && a->offset == 8 + strlen(good));
        CHECK(z && z->numel == 0 && z->n_dims == 2);
        CHECK(!st_find(st, "__metadata__") && !st_find(st, "c"));
        st_close(st);
    }
    remove(path);
}

/* ---- tiny Hugging Face checkpoints ---- */

enum { D_F32, D_F16, D_BF16 };
#define H 32      /* hidden_size */
#define FF 64     /* intermediate_size */
#define NL 2
#define NH 4
#define NKV 2
#define HD 8

typedef struct {
    char name[96];
    int dtype, n_dims;
    int64_t rows, cols;       /* PyTorch shape [rows, cols]; cols 0 for vectors */
    float *vals;              /* exactly representable in dtype */
    int shard;                /* 1 or 2 */
} tspec;

typedef struct {
    tspec t[64];
    int n;
} model;

static void add_t(model *m, const char *name, int64_t rows, int64_t cols, int shard, uint64_t *rng) {
    tspec *t = &m->t[m->n];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = m->n % 3;
    t->n_dims = cols ? 2 : 1;
    t->rows = rows;
    t->cols = cols;
    t->shard = shard;
    int64_t n = rows * (cols ? cols : 1);
    t->vals = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        float v = lb_test_randf(rng);
        t->vals[i] = t->dtype == D_F16 ? lb_fp16_to_f32(lb_f32_to_fp16(v))
                   : t->dtype == D_BF16 ? lb_bf16_to_f32(lb_f32_to_bf16(v)) : v;
    }
    m->n++;
}

static void make_model(model *m, int64_t n_vocab, int bias, int lm_head, int sharded) {
    uint64_t rng = 7;
    m->n = 0;
    add_t(m, "model.embed_tokens.weight", n_vocab, H, 1, &rng);
    for (int l = 0; l < NL; l++) {
        int sh = sharded && l == 1 ? 2 : 1;
        char n[96];
#define L(suffix, r, c) snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), add_t(m, n, r, c, sh, &rng)
        L("input_layernorm.weight", H, 0);
        L("self_attn.q_proj.weight", NH * HD, H);
        L("self_attn.k_proj.weight", NKV * HD, H);
        L("self_attn.v_proj.weight", NKV * HD, H);
        if (bias) {
            L("self_attn.q_proj.bias", NH * HD, 0);
            L("self_attn.k_proj.bias", NKV * HD, 0);
            L("self_attn.v_proj.bias", NKV * HD, 0);
        }
        L("self_attn.o_proj.weight", H, NH * HD);
        L("post_attention_layernorm.weight", H, 0);
        L("mlp.gate_proj.weight", FF, H);
        L("mlp.up_proj.weight", FF, H);
        L("mlp.down_proj.weight", H, FF);
#undef L
    }
    add_t(m, "model.norm.weight", H, 0, sharded ? 2 : 1, &rng);
    if (lm_head) add_t(m, "lm_head.weight", n_vocab, H, sharded ? 2 : 1, &rng);
}

static void free_model(model *m) {
    for (int i = 0; i < m->n; i++) free(m->t[i].vals);
    m->n = 0;
}

/* Writes the tensors of one shard as a safetensors file. */
static void write_shard(const model *m, int shard, const char *path) {
    static const char *dn[] = {"F32", "F16", "BF16"};
    sbuf hdr = {0};
    uint64_t off = 0;
    sb_add(&hdr, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < m->n; i++) {
        const tspec *t = &m->t[i];
        if (t->shard != shard) continue;
        uint64_t bytes = (uint64_t)(t->rows * (t->cols ? t->cols : 1)) * (t->dtype == D_F32 ? 4 : 2);
        if (t->cols)
            sb_add(&hdr, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld,%lld],\"data_offsets\":[%llu,%llu]}", t->name,
                   dn[t->dtype], (long long)t->rows, (long long)t->cols, (unsigned long long)off,
                   (unsigned long long)(off + bytes));
        else
            sb_add(&hdr, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld],\"data_offsets\":[%llu,%llu]}", t->name,
                   dn[t->dtype], (long long)t->rows, (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    sb_add(&hdr, "}");
    while (hdr.n % 8) sb_add(&hdr, " ");
    FILE *f = fopen(path, "wb");
    uint64_t hl = hdr.n;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(hl >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(hdr.p, 1, hdr.n, f);
    for (int i = 0; i < m->n; i++) {
        const tspec *t = &m->t[i];
        if (t->shard != shard) continue;
        int64_t n = t->rows * (t->cols ? t->cols : 1);
        for (int64_t k = 0; k < n; k++) {
            if (t->dtype == D_F32) fwrite(&t->vals[k], 4, 1, f);
            else {
                uint16_t h = t->dtype == D_F16 ? lb_f32_to_fp16(t->vals[k]) : lb_f32_to_bf16(t->vals[k]);
                fwrite(&h, 2, 1, f);
            }
        }
    }
    fclose(f);
    free(hdr.p);
}

static void write_weights(const model *m, const char *dir, int sharded) {
    char path[4300];
    if (!sharded) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        write_shard(m, 1, path);
        return;
    }
    const char *shard_name[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    for (int s = 1; s <= 2; s++) {
        snprintf(path, sizeof path, "%s/%s", dir, shard_name[s - 1]);
        write_shard(m, s, path);
    }
    sbuf idx = {0};
    sb_add(&idx, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    for (int i = 0; i < m->n; i++)
        sb_add(&idx, "%s\"%s\": \"%s\"", i ? ", " : "", m->t[i].name, shard_name[m->t[i].shard - 1]);
    sb_add(&idx, "}}");
    write_text(dir, "model.safetensors.index.json", idx.p);
    free(idx.p);
}

static void make_dir(const char *dir) {
    mkdir(dir, 0755);
    static const char *files[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors",
                                  "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                  "model-00002-of-00002.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) remove_in(dir, files[i]);
}

/* Byte-level BPE vocabulary (ids 11..19 left as holes to be padded). */
static const char *BPE_TOKENIZER =
    "{\"version\": \"1.0\", \"added_tokens\": ["
    " {\"id\": 8, \"content\": \"<|begin|>\", \"special\": true},"
    " {\"id\": 9, \"content\": \"<|end|>\", \"special\": true},"
    " {\"id\": 10, \"content\": \"hello\", \"special\": false}],"
    " \"normalizer\": null,"
    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
    "   {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?i:'s|'t)|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+\"},"
    "    \"behavior\": \"Isolated\", \"invert\": false},"
    "   {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<|begin|>\"}},"
    "   {\"Sequence\": {\"id\": \"A\"}}]},"
    " \"model\": {\"type\": \"BPE\", \"byte_fallback\": false, \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2,"
    "   \"\\u0120\": 3, \"ab\": 4, \"\\u0120ab\": 5, \"abc\": 6, \"\\ud83d\\ude00\": 7},"
    "   \"merges\": [\"a b\", \"\\u0120 ab\", [\"ab\", \"c\"]]}}";

static const char *LLAMA_CONFIG =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 32,"
    " \"intermediate_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"vocab_size\": 20,"
    " \"tie_word_embeddings\": false, \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0},"
    " \"torch_dtype\": \"bfloat16\", \"bos_token_id\": 0, \"eos_token_id\": [1, 2]}";

/* llama.cpp's permute, transcribed literally: view rows as
 * (n_head, 2, rows/n_head/2), swap the last two axes, flatten. */
static void reference_permute(const float *in, float *out, int64_t rows, int64_t cols, int n_head) {
    int64_t half = rows / n_head / 2;
    for (int h = 0; h < n_head; h++)
        for (int64_t i = 0; i < half; i++)      /* new axis 1 (was axis 2) */
            for (int j = 0; j < 2; j++) {        /* new axis 2 (was axis 1) */
                int64_t dst = (h * half * 2 + i * 2 + j) * cols;
                int64_t src = (h * 2 * half + j * half + i) * cols;
                memcpy(out + dst, in + src, (size_t)cols * sizeof(float));
            }
}

static const char *gguf_name_of(const char *hf, char *buf, size_t cap) {
    static const char *map[][2] = {
        {"input_layernorm.weight", "attn_norm.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"}, {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"}, {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"}, {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"}, {"mlp.down_proj.weight", "ffn_down.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"}};
    if (!strcmp(hf, "model.embed_tokens.weight")) return "token_embd.weight";
    if (!strcmp(hf, "model.norm.weight")) return "output_norm.weight";
    if (!strcmp(hf, "lm_head.weight")) return "output.weight";
    int l;
    char rest[80];
    if (sscanf(hf, "model.layers.%d.%79s", &l, rest) != 2) return NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(rest, map[i][0])) {
            snprintf(buf, cap, "blk.%d.%s", l, map[i][1]);
            return buf;
        }
    return NULL;
}

/* Every HF tensor is in the GGUF under its llama.cpp name with the reversed
 * shape and the expected values (q/k permuted when `permute`). */
static void check_weights(const gguf_file *g, const model *m, int permute, int want_type) {
    for (int i = 0; i < m->n; i++) {
        const tspec *t = &m->t[i];
        char buf[96];
        const char *gn = gguf_name_of(t->name, buf, sizeof buf);
        const gguf_tensor *gt = gn ? gguf_find_tensor(g, gn) : NULL;
        CHECK_MSG(gt != NULL, "%s (%s) missing", t->name, gn ? gn : "?");
        if (!gt) continue;
        int64_t n = t->rows * (t->cols ? t->cols : 1);
        CHECK_MSG(gt->n_dims == t->n_dims && gt->ne[0] == (t->cols ? t->cols : t->rows) &&
                  gt->ne[1] == (t->cols ? t->rows : 1), "shape of %s", gn);
        float *expect = malloc((size_t)n * sizeof(float));
        int is_q = strstr(t->name, "q_proj") != NULL, is_k = strstr(t->name, "k_proj") != NULL;
        if (permute && (is_q || is_k))
            reference_permute(t->vals, expect, t->rows, t->cols ? t->cols : 1, is_q ? NH : NKV);
        else
            memcpy(expect, t->vals, (size_t)n * sizeof(float));
        int type = t->n_dims == 1 ? LB_TYPE_F32 : lb_type_fallback(want_type, gt->ne[0]);
        CHECK_MSG((int)gt->type == type, "type of %s", gn);
        uint64_t row = lb_row_size(type, gt->ne[0]), size = row * (uint64_t)gt->ne[1];
        unsigned char *bytes = malloc(size);
        for (int64_t r = 0; r < gt->ne[1]; r++)
            lb_traits(type)->from_float(expect + r * gt->ne[0], bytes + r * row, gt->ne[0]);
        CHECK_MSG(gt->size == size && memcmp(gt->data, bytes, size) == 0, "values of %s", gn);
        free(bytes);
        free(expect);
    }
}

static int u32_is(const gguf_file *g, const char *key, uint32_t want) {
    uint32_t v;
    return gguf_get_u32(g, key, &v) && v == want;
}
static int f32_is(const gguf_file *g, const char *key, float want) {
    float v;
    return gguf_get_f32(g, key, &v) && v == want;
}
static int str_is(const gguf_file *g, const char *key, const char *want) {
    const char *v = gguf_get_str(g, key);
    return v && !strcmp(v, want);
}
static int bool_is(const gguf_file *g, const char *key, int want) {
    int v;
    return gguf_get_bool(g, key, &v) && v == want;
}
static int tok_is(const gguf_kv *toks, uint64_t i, const char *want) {
    return toks && i < toks->arr_n && toks->strs[i].len == strlen(want) && !memcmp(toks->strs[i].ptr, want, toks->strs[i].len);
}
static int32_t type_at(const gguf_kv *types, uint64_t i) {
    int32_t t = -1;
    if (types && i < types->arr_n) memcpy(&t, (const char *)types->data + 4 * i, 4);
    return t;
}

/* The converted file loads in lowbit's model loader, tokenizes `text` to
 * `want` and evaluates those tokens to finite logits. */
static void check_runs(const char *path, const char *text, const int32_t *want, int n_want) {
    lb_model *m = NULL;
    CHECK_OK(lb_model_load(path, NULL, &m));
    if (!m) return;
    int32_t ids[32];
    int n = 0;
    CHECK_OK(lb_tokenize(m, text, strlen(text), 1, ids, 32, &n));
    CHECK_MSG(n == n_want && !memcmp(ids, want, sizeof(int32_t) * (size_t)n_want), "%s: \"%s\" -> %d ids", path, text, n);
    lb_context *ctx = NULL;
    lb_context_params cp = lb_context_default_params();
    cp.n_threads = 1;
    CHECK_OK(lb_context_new(m, &cp, &ctx));
    if (ctx) {
        int V = lb_model_n_vocab(m), finite = 1;
        float *logits = malloc(sizeof(float) * (size_t)V);
        CHECK_OK(lb_eval(ctx, want, n_want, 0, logits, 0));
        for (int i = 0; i < V; i++) finite &= isfinite(logits[i]) != 0;
        CHECK(finite);
        free(logits);
        lb_context_free(ctx);
    }
    lb_model_free(m);
}

static int progress_n;
static void count_progress(void *user, const char *what, int done, int total) {
    (void)user, (void)what, (void)done, (void)total;
    progress_n++;
}

/* config.json replaced by cfg, converted to F32 at out: the file open (its
 * weights checked against m, llama's q/k permutation), NULL if it failed */
static gguf_file *convert_with(const char *dir, const char *out, const char *cfg, const model *m) {
    write_text(dir, "config.json", cfg);
    gguf_file *g = NULL;
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    CHECK_OK(gguf_open(out, &g));
    if (g) check_weights(g, m, 1, LB_TYPE_F32);
    return g;
}

static void test_llama_sharded(const char *dir) {
    model m;
    make_dir(dir);
    make_model(&m, 20, 0, 1, 1);
    write_weights(&m, dir, 1);
    write_text(dir, "config.json", LLAMA_CONFIG);
    write_text(dir, "tokenizer.json", BPE_TOKENIZER);
    write_text(dir, "tokenizer_config.json",
               "{\"bos_token\": \"<|begin|>\", \"eos_token\": {\"content\": \"<|end|>\", \"lstrip\": false},"
               " \"model_max_length\": 64}");
    const char *out = lb_test_tmp("hf_llama.gguf");
    remove(out);
    progress_n = 0;
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, count_progress, NULL));
    CHECK(progress_n == m.n);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        CHECK(gguf_n_tensors(g) == m.n);
        check_weights(g, &m, 1, LB_TYPE_F32);
        CHECK(str_is(g, "general.architecture", "llama"));
        CHECK(str_is(g, "general.name", "hf_llama"));
        CHECK(u32_is(g, "general.file_type", 0));
        CHECK(u32_is(g, "llama.context_length", 64) && u32_is(g, "llama.embedding_length", H));
        CHECK(u32_is(g, "llama.feed_forward_length", FF) && u32_is(g, "llama.block_count", NL));
        CHECK(u32_is(g, "llama.attention.head_count", NH) && u32_is(g, "llama.attention.head_count_kv", NKV));
        CHECK(u32_is(g, "llama.rope.dimension_count", HD) && u32_is(g, "llama.vocab_size", 20));
        CHECK(f32_is(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
        CHECK(f32_is(g, "llama.rope.freq_base", 500000.0f));
        CHECK(str_is(g, "llama.rope.scaling.type", "linear") && f32_is(g, "llama.rope.scaling.factor", 2.0f));
        CHECK(!gguf_find_kv(g, "llama.attention.key_length"));
        CHECK(str_is(g, "tokenizer.ggml.model", "gpt2") && str_is(g, "tokenizer.ggml.pre", "llama-bpe"));
        const gguf_kv *toks = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
        const gguf_kv *types = gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32);
        const gguf_kv *merges = gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_TYPE_STRING);
        CHECK(toks && toks->arr_n == 20 && types && types->arr_n == 20);
        CHECK(tok_is(toks, 0, "a") && tok_is(toks, 3, "\xc4\xa0") && tok_is(toks, 5, "\xc4\xa0" "ab"));
        CHECK(tok_is(toks, 7, "\xf0\x9f\x98\x80") && tok_is(toks, 8, "<|begin|>") && tok_is(toks, 10, "hello"));
        CHECK(tok_is(toks, 11, "[PAD11]") && tok_is(toks, 19, "[PAD19]"));
        CHECK(type_at(types, 0) == 1 && type_at(types, 7) == 1 && type_at(types, 8) == 3 && type_at(types, 9) == 3);
        CHECK(type_at(types, 10) == 4 && type_at(types, 11) == 4 && type_at(types, 19) == 4);
        CHECK(merges && merges->arr_n == 3 && tok_is(merges, 0, "a b") && tok_is(merges, 1, "\xc4\xa0 ab") &&
              tok_is(merges, 2, "ab c"));
        CHECK(!gguf_find_kv(g, "tokenizer.ggml.scores"));
        /* tokenizer_config.json names win over config.json's ids */
        CHECK(u32_is(g, "tokenizer.ggml.bos_token_id", 8) && u32_is(g, "tokenizer.ggml.eos_token_id", 9));
        CHECK(bool_is(g, "tokenizer.ggml.add_bos_token", 1) && bool_is(g, "tokenizer.ggml.add_eos_token", 0));
        gguf_close(g);
        /* byte-level BPE: "ab" merges, " c" is "\u0120" + "c" (no merge) */
        const int32_t want[] = {8, 4, 3, 2};
        check_runs(out, "ab c", want, 4);
    }
    /* Q8_0: every matrix row here is a multiple of 32, so nothing falls back */
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_Q8_0, NULL, NULL));
    g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        check_weights(g, &m, 1, LB_TYPE_Q8_0);
        CHECK(u32_is(g, "general.file_type", 7) && u32_is(g, "general.quantization_version", 2));
        const gguf_tensor *q = gguf_find_tensor(g, "blk.1.attn_k.weight");
        CHECK(q && q->type == LB_TYPE_Q8_0);
        gguf_close(g);
    }
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_BF16, NULL, NULL));
    g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        check_weights(g, &m, 1, LB_TYPE_BF16);
        gguf_close(g);
    }

    /* llama3 rope scaling: rope_freqs.weight holds per-frequency slow-down factors */
    write_text(dir, "config.json",
               "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
               " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
               " \"max_position_embeddings\": 64, \"rope_theta\": 500000.0, \"rope_scaling\": {\"rope_type\": \"llama3\","
               " \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
               " \"original_max_position_embeddings\": 8192}}");
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        const gguf_tensor *rf = gguf_find_tensor(g, "rope_freqs.weight");
        CHECK(rf && rf->n_dims == 1 && rf->ne[0] == HD / 2 && rf->type == LB_TYPE_F32);
        CHECK(!gguf_find_kv(g, "llama.rope.scaling.type"));
        if (rf && rf->ne[0] == HD / 2) {
            /* wavelengths 6.3 and 167 (< 8192/4: kept), 4443 (between: smoothed), 118000 (> 8192: x8) */
            double wl2 = 2 * M_PI * pow(500000.0, 4.0 / 8), smooth = (8192 / wl2 - 1) / 3;
            const float want[4] = {1.0f, 1.0f, (float)(1 / ((1 - smooth) / 8 + smooth)), 8.0f};
            CHECK(memcmp(rf->data, want, sizeof want) == 0);
        }
        gguf_close(g);
        const int32_t ids[] = {8, 4, 3, 2};
        check_runs(out, "ab c", ids, 4);
    }

    /* SmolLM3: llama's conversion (q/k permuted) as arch smollm3; its NoPE
     * step must be llama.cpp's 4 */
    g = convert_with(dir, out,
                     "{\"architectures\": [\"SmolLM3ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
                     " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                     " \"max_position_embeddings\": 64, \"rope_theta\": 500000.0, \"no_rope_layer_interval\": 4}",
                     &m);
    if (g) {
        CHECK(str_is(g, "general.architecture", "smollm3") && u32_is(g, "smollm3.block_count", NL));
        CHECK(u32_is(g, "smollm3.attention.head_count_kv", NKV) && f32_is(g, "smollm3.rope.freq_base", 500000.0f));
        gguf_close(g);
        check_runs(out, "ab c", (const int32_t[]){8, 4, 3, 2}, 4);
    }
    write_text(dir, "config.json",
               "{\"architectures\": [\"SmolLM3ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
               " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"max_position_embeddings\": 64,"
               " \"no_rope_layer_interval\": 3}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_UNSUPPORTED &&
          has(lb_last_error(), "no_rope_layer_interval"));
    /* Granite: llama's conversion as arch granite, with its four multipliers */
    g = convert_with(dir, out,
                     "{\"architectures\": [\"GraniteForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
                     " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                     " \"max_position_embeddings\": 64, \"embedding_multiplier\": 12.0, \"residual_multiplier\": 0.22,"
                     " \"logits_scaling\": 8.0, \"attention_multiplier\": 0.015625}",
                     &m);
    if (g) {
        CHECK(str_is(g, "general.architecture", "granite") && f32_is(g, "granite.embedding_scale", 12.0f));
        CHECK(f32_is(g, "granite.residual_scale", 0.22f) && f32_is(g, "granite.logit_scale", 8.0f));
        CHECK(f32_is(g, "granite.attention.scale", 0.015625f));
        gguf_close(g);
        check_runs(out, "ab c", (const int32_t[]){8, 4, 3, 2}, 4);
    }
    write_text(dir, "config.json",
               "{\"architectures\": [\"GraniteForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
               " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"max_position_embeddings\": 64,"
               " \"embedding_multiplier\": 12.0, \"residual_multiplier\": 0.22, \"logits_scaling\": 8.0}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_FORMAT && has(lb_last_error(), "attention_multiplier"));
    write_text(dir, "config.json", LLAMA_CONFIG); /* valid again for the index checks */

    /* broken index files */
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_FORMAT &&
          has(lb_last_error(), "maps \"model.norm.weight\" to model-00001-of-00002.safetensors, but it is not there"));
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"model.norm.weight\": \"../x.safetensors\"}}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_FORMAT && has(lb_last_error(), "not a plain file name"));
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"model.norm.weight\": \"gone.safetensors\"}}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_IO && has(lb_last_error(), "gone.safetensors"));
    write_text(dir, "model.safetensors.index.json", "{\"metadata\": {}}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_FORMAT && has(lb_last_error(), "no \"weight_map\""));
    remove(out);
    free_model(&m);
}

static void test_qwen2_single(const char *dir) {
    model m;
    make_dir(dir);
    make_model(&m, 20, 1, 0, 0);
    write_weights(&m, dir, 0);
    write_text(dir, "config.json",
               "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
               " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
               " \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0,"
               " \"vocab_size\": 20, \"tie_word_embeddings\": true, \"sliding_window\": null,"
               " \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32},"
               " \"bos_token_id\": 8, \"eos_token_id\": [9, 8]}");
    /* no tokenizer_config.json and no template: ids from config.json, no BOS added */
    sbuf tj = {0};
    const char *p = strstr(BPE_TOKENIZER, " \"post_processor\"");
    const char *q = strstr(BPE_TOKENIZER, " \"model\"");
    sb_add(&tj, "%.*s%s", (int)(p - BPE_TOKENIZER), BPE_TOKENIZER, q);
    write_text(dir, "tokenizer.json", tj.p);
    free(tj.p);
    const char *out = lb_test_tmp("hf_qwen2.gguf");
    remove(out);
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        check_weights(g, &m, 0, LB_TYPE_F32); /* qwen2: NeoX RoPE, nothing permuted */
        CHECK(gguf_n_tensors(g) == m.n && !gguf_find_tensor(g, "output.weight"));
        CHECK(gguf_find_tensor(g, "blk.1.attn_k.bias") != NULL);
        CHECK(str_is(g, "general.architecture", "qwen2") && u32_is(g, "qwen2.context_length", 128));
        CHECK(f32_is(g, "qwen2.rope.freq_base", 1000000.0f) && f32_is(g, "qwen2.attention.layer_norm_rms_epsilon", 1e-6f));
        CHECK(!gguf_find_kv(g, "llama.block_count") && u32_is(g, "qwen2.block_count", NL));
        CHECK(str_is(g, "tokenizer.ggml.pre", "qwen2"));
        /* YaRN as llama.cpp's converter writes it */
        CHECK(str_is(g, "qwen2.rope.scaling.type", "yarn") && f32_is(g, "qwen2.rope.scaling.factor", 4.0f) &&
              u32_is(g, "qwen2.rope.scaling.original_context_length", 32));
        const int32_t want[] = {4, 6};
        check_runs(out, "ababc", want, 2); /* no BOS for this tokenizer */
        CHECK(u32_is(g, "tokenizer.ggml.bos_token_id", 8) && u32_is(g, "tokenizer.ggml.eos_token_id", 9));
        CHECK(bool_is(g, "tokenizer.ggml.add_bos_token", 0));
        gguf_close(g);
    }
    remove(out);

    /* malformed or unsupported config.json: each with its own message, no output left */
    static const struct { const char *cfg; lb_status want; const char *msg; } bad[] = {
        {"{\"hidden_size\": 32,}", LB_ERR_FORMAT, "config.json: JSON line 1, column 20"},
        {"[]", LB_ERR_FORMAT, "config.json is not a JSON object"},
        {"{\"architectures\": [\"GPT2LMHeadModel\"]}", LB_ERR_UNSUPPORTED, "architecture \"GPT2LMHeadModel\""},
        {"{\"model_type\": \"qwen2\", \"intermediate_size\": 64}", LB_ERR_FORMAT, "\"hidden_size\" is missing or not an integer"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": \"32\"}", LB_ERR_FORMAT, "\"hidden_size\" is missing or not an integer"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": -32}", LB_ERR_FORMAT, "\"hidden_size\" is -32"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 3, \"max_position_embeddings\": 64}",
         LB_ERR_FORMAT, "not a multiple of num_key_value_heads 3"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 5, \"max_position_embeddings\": 64}", LB_ERR_FORMAT, "not a multiple of num_attention_heads"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 5, \"max_position_embeddings\": 64, \"head_dim\": null}", LB_ERR_FORMAT,
         "not a multiple of num_attention_heads"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64, \"rms_norm_eps\": \"x\"}",
         LB_ERR_FORMAT, "\"rms_norm_eps\" must be a positive number"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64,"
         " \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4.0}}", LB_ERR_UNSUPPORTED, "rope_scaling type \"dynamic\""},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64,"
         " \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0}}", LB_ERR_FORMAT,
         "rope_scaling yarn: config.json: \"original_max_position_embeddings\" is missing"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64,"
         " \"tie_word_embeddings\": 1}", LB_ERR_FORMAT, "\"tie_word_embeddings\" is not a boolean"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64}",
         LB_ERR_UNSUPPORTED, "unexpected tensor \"model.layers.1."},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 3,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64}",
         LB_ERR_FORMAT, "missing tensor \"model.layers.2.input_layernorm.weight\""},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 48, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64}",
         LB_ERR_SHAPE, "\"model.layers.0.mlp.gate_proj.weight\" has shape [64, 32], config.json implies [48, 32]"},
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64, \"vocab_size\": 32}",
         LB_ERR_SHAPE, "vocab_size 32 but embed_tokens has 20 rows"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        write_text(dir, "config.json", bad[k].cfg);
        lb_status s = lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL);
        CHECK_MSG(s == bad[k].want, "config case %zu: %s (%s)", k, lb_status_name(s), lb_last_error());
        CHECK_MSG(has(lb_last_error(), bad[k].msg), "config case %zu: \"%s\" lacks \"%s\"", k, lb_last_error(), bad[k].msg);
        CHECK(!lb_test_have(out));
    }
    remove_in(dir, "config.json");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_IO && has(lb_last_error(), "config.json"));
    CHECK(lb_convert_hf(lb_test_tmp("hf_no_such_dir"), out, LB_TYPE_F32, NULL, NULL) == LB_ERR_IO);
    free_model(&m);
}

/* Qwen 3: Qwen 2's layout without the q/k/v biases, with per-head q/k norms
 * (self_attn.q_norm / k_norm, head_dim each) that become attn_q_norm /
 * attn_k_norm; the model loads and runs as arch "qwen3". */
static void test_qwen3_single(const char *dir) {
    model m;
    make_dir(dir);
    make_model(&m, 20, 0, 0, 0);
    uint64_t rng = 11;
    for (int l = 0; l < NL; l++) {
        char n[96];
        snprintf(n, sizeof n, "model.layers.%d.self_attn.q_norm.weight", l);
        add_t(&m, n, HD, 0, 1, &rng);
        snprintf(n, sizeof n, "model.layers.%d.self_attn.k_norm.weight", l);
        add_t(&m, n, HD, 0, 1, &rng);
    }
    write_weights(&m, dir, 0);
    const char *cfg = "{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
                      " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                      " \"head_dim\": 8, \"attention_bias\": false, \"max_position_embeddings\": 128,"
                      " \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, \"vocab_size\": 20,"
                      " \"tie_word_embeddings\": true, \"bos_token_id\": 8, \"eos_token_id\": 9}";
    write_text(dir, "config.json", cfg);
    write_text(dir, "tokenizer.json", BPE_TOKENIZER);
    const char *out = lb_test_tmp("hf_qwen3.gguf");
    remove(out);
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        check_weights(g, &m, 0, LB_TYPE_F32); /* NeoX RoPE: nothing permuted; the norms' values as given */
        CHECK(gguf_n_tensors(g) == m.n && !gguf_find_tensor(g, "blk.0.attn_q.bias"));
        const gguf_tensor *kn = gguf_find_tensor(g, "blk.1.attn_k_norm.weight");
        CHECK(kn && kn->n_dims == 1 && kn->ne[0] == HD && kn->type == LB_TYPE_F32);
        CHECK(str_is(g, "general.architecture", "qwen3") && u32_is(g, "qwen3.block_count", NL));
        CHECK(u32_is(g, "qwen3.attention.head_count_kv", NKV) && f32_is(g, "qwen3.rope.freq_base", 1000000.0f));
        CHECK(str_is(g, "tokenizer.ggml.pre", "qwen2"));
        gguf_close(g);
        lb_model *lm = NULL;
        CHECK_OK(lb_model_load(out, NULL, &lm));
        if (lm) CHECK(!strcmp(lb_model_arch(lm), "qwen3"));
        lb_model_free(lm);
        const int32_t want[] = {8, 4, 3, 2};
        check_runs(out, "ab c", want, 4);
    }
    /* a Qwen 3 checkpoint without a k_norm is refused by name, no output */
    remove(out);
    free_model(&m);
    make_model(&m, 20, 0, 0, 0);
    add_t(&m, "model.layers.0.self_attn.q_norm.weight", HD, 0, 1, &rng);
    add_t(&m, "model.layers.0.self_attn.k_norm.weight", HD, 0, 1, &rng);
    add_t(&m, "model.layers.1.self_attn.q_norm.weight", HD, 0, 1, &rng);
    remove_in(dir, "model.safetensors");
    write_weights(&m, dir, 0);
    lb_status st = lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL);
    CHECK_MSG(st == LB_ERR_FORMAT && has(lb_last_error(), "missing tensor \"model.layers.1.self_attn.k_norm.weight\""),
              "%s: %s", lb_status_name(st), lb_last_error());
    CHECK(!lb_test_have(out));
    free_model(&m);
}

/* The F32 values of GGUF tensor `gn`, compared with `want` plus `add`. */
static int values_are(const gguf_file *g, const char *gn, const float *want, int64_t n, float add) {
    const gguf_tensor *t = gguf_find_tensor(g, gn);
    if (!t || t->type != LB_TYPE_F32 || t->ne[0] * (t->n_dims > 1 ? t->ne[1] : 1) != n) return 0;
    for (int64_t i = 0; i < n; i++)
        if (((const float *)t->data)[i] != want[i] + add) return 0;
    return 1;
}

static const tspec *spec_named(const model *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].name, name)) return &m->t[i];
    return NULL;
}

/* Gemma 2 and 3 (text): four norms a layer (input, post-attention,
 * pre-FFN, post-FFN) written as 1 + w, as llama.cpp's converter writes them
 * for Gemma's RMSNorm (x times 1 + w); the head tied; Gemma 2's caps and
 * window, Gemma 3's q/k norms (1 + w too), window and local RoPE base. The
 * files load and run as gemma2 / gemma3. */
static void test_gemma(const char *dir, int version) {
    model m;
    make_dir(dir);
    make_model(&m, 20, 0, 0, 0);
    uint64_t rng = 13;
    for (int l = 0; l < NL; l++) {
        char n[96];
        snprintf(n, sizeof n, "model.layers.%d.pre_feedforward_layernorm.weight", l);
        add_t(&m, n, H, 0, 1, &rng);
        snprintf(n, sizeof n, "model.layers.%d.post_feedforward_layernorm.weight", l);
        add_t(&m, n, H, 0, 1, &rng);
        if (version == 3) {
            snprintf(n, sizeof n, "model.layers.%d.self_attn.q_norm.weight", l);
            add_t(&m, n, HD, 0, 1, &rng);
            snprintf(n, sizeof n, "model.layers.%d.self_attn.k_norm.weight", l);
            add_t(&m, n, HD, 0, 1, &rng);
        }
    }
    remove_in(dir, "model.safetensors");
    write_weights(&m, dir, 0);
    write_text(dir, "config.json",
               version == 2 ? "{\"architectures\": [\"Gemma2ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
                              " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                              " \"head_dim\": 8, \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-06,"
                              " \"rope_theta\": 10000.0, \"attn_logit_softcapping\": 50.0,"
                              " \"final_logit_softcapping\": 30.0, \"sliding_window\": 64, \"query_pre_attn_scalar\": 8,"
                              " \"bos_token_id\": 8, \"eos_token_id\": 9}"
                            : "{\"architectures\": [\"Gemma3ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
                              " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                              " \"head_dim\": 8, \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-06,"
                              " \"rope_local_base_freq\": 10000.0, \"final_logit_softcapping\": null,"
                              " \"attn_logit_softcapping\": null, \"sliding_window\": 32, \"query_pre_attn_scalar\": 8,"
                              " \"bos_token_id\": 8, \"eos_token_id\": 9}");
    write_text(dir, "tokenizer.json", BPE_TOKENIZER);
    const char *out = lb_test_tmp(version == 2 ? "hf_gemma2.gguf" : "hf_gemma3.gguf");
    const char *arch = version == 2 ? "gemma2" : "gemma3";
    remove(out);
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        char k[96];
        CHECK(str_is(g, "general.architecture", arch) && !gguf_find_tensor(g, "output.weight"));
        snprintf(k, sizeof k, "%s.attention.sliding_window", arch);
        CHECK(u32_is(g, k, version == 2 ? 64 : 32));
        snprintf(k, sizeof k, "%s.attention.key_length", arch);
        CHECK(u32_is(g, k, HD));
        snprintf(k, sizeof k, "%s.attn_logit_softcapping", arch);
        CHECK(version == 2 ? f32_is(g, k, 50.0f) : !gguf_find_kv(g, k));
        snprintf(k, sizeof k, "%s.final_logit_softcapping", arch);
        CHECK(version == 2 ? f32_is(g, k, 30.0f) : !gguf_find_kv(g, k));
        if (version == 3) {
            CHECK(f32_is(g, "gemma3.rope.freq_base", 1000000.0f) && f32_is(g, "gemma3.rope.freq_base_swa", 10000.0f));
            CHECK(f32_is(g, "gemma3.attention.scale", (float)(1.0 / sqrt(8.0))));
        }
        static const char *const norms[][2] = {
            {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "post_attention_norm"},
            {"pre_feedforward_layernorm", "ffn_norm"}, {"post_feedforward_layernorm", "post_ffw_norm"},
            {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"}};
        for (int l = 0; l < NL; l++)
            for (int i = 0; i < (version == 3 ? 6 : 4); i++) {
                char hn[96], gn[96];
                snprintf(hn, sizeof hn, "model.layers.%d.%s.weight", l, norms[i][0]);
                snprintf(gn, sizeof gn, "blk.%d.%s.weight", l, norms[i][1]);
                const tspec *t = spec_named(&m, hn);
                CHECK_MSG(t && values_are(g, gn, t->vals, t->rows, 1.0f), "%s: not 1 + %s", gn, hn);
            }
        const tspec *fn = spec_named(&m, "model.norm.weight"), *q = spec_named(&m, "model.layers.1.self_attn.q_proj.weight");
        CHECK(fn && values_are(g, "output_norm.weight", fn->vals, fn->rows, 1.0f));
        CHECK(q && values_are(g, "blk.1.attn_q.weight", q->vals, q->rows * q->cols, 0.0f)); /* NeoX: not permuted */
        gguf_close(g);
        lb_model *lm = NULL;
        CHECK_OK(lb_model_load(out, NULL, &lm));
        if (lm) CHECK(!strcmp(lb_model_arch(lm), arch));
        lb_model_free(lm);
        const int32_t want[] = {8, 4, 3, 2};
        check_runs(out, "ab c", want, 4);
    }
    remove(out);
    free_model(&m);
}

/* Phi-3: qkv_proj and gate_up_proj kept fused (attn_qkv, ffn_up), LongRoPE's
 * factor lists as rope_factors_long / _short with llama.cpp's attention
 * factor sqrt(1 + ln(256 / 64) / ln 64), partial rotary 0.75 (6 of 8
 * dimensions), the window; the file loads and runs as phi3. A factor list
 * of the wrong length is refused. */
static void test_phi3(const char *dir) {
    model m = {0};
    make_dir(dir);
    uint64_t rng = 17;
    add_t(&m, "model.embed_tokens.weight", 20, H, 1, &rng);
    for (int l = 0; l < NL; l++) {
        char n[96];
#define L(suffix, r, c) snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), add_t(&m, n, r, c, 1, &rng)
        L("input_layernorm.weight", H, 0);
        L("self_attn.qkv_proj.weight", (NH + 2 * NKV) * HD, H);
        L("self_attn.o_proj.weight", H, NH * HD);
        L("post_attention_layernorm.weight", H, 0);
        L("mlp.gate_up_proj.weight", 2 * FF, H);
        L("mlp.down_proj.weight", H, FF);
#undef L
    }
    add_t(&m, "model.norm.weight", H, 0, 1, &rng);
    add_t(&m, "lm_head.weight", 20, H, 1, &rng);
    remove_in(dir, "model.safetensors");
    write_weights(&m, dir, 0);
    const char *cfg_fmt = "{\"architectures\": [\"Phi3ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
                          " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                          " \"max_position_embeddings\": 256, \"original_max_position_embeddings\": 64,"
                          " \"partial_rotary_factor\": 0.75, \"sliding_window\": 48, \"rope_theta\": 10000.0,"
                          " \"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": [1.0, 2.5, 4.0%s],"
                          " \"short_factor\": [1.0, 1.25, 1.5%s]}, \"tie_word_embeddings\": false,"
                          " \"bos_token_id\": 8, \"eos_token_id\": 9}";
    char cfg[1024];
    snprintf(cfg, sizeof cfg, cfg_fmt, "", "");
    write_text(dir, "config.json", cfg);
    write_text(dir, "tokenizer.json", BPE_TOKENIZER);
    const char *out = lb_test_tmp("hf_phi3.gguf");
    remove(out);
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        CHECK(str_is(g, "general.architecture", "phi3") && u32_is(g, "phi3.rope.dimension_count", 6));
        CHECK(u32_is(g, "phi3.rope.scaling.original_context_length", 64) && u32_is(g, "phi3.attention.sliding_window", 48));
        CHECK(f32_is(g, "phi3.rope.scaling.attn_factor", (float)sqrt(1.0 + log(4.0) / log(64.0))));
        const float lf[3] = {1.0f, 2.5f, 4.0f}, sf[3] = {1.0f, 1.25f, 1.5f};
        CHECK(values_are(g, "rope_factors_long.weight", lf, 3, 0.0f) && values_are(g, "rope_factors_short.weight", sf, 3, 0.0f));
        const tspec *qkv = spec_named(&m, "model.layers.1.self_attn.qkv_proj.weight");
        const tspec *gu = spec_named(&m, "model.layers.0.mlp.gate_up_proj.weight");
        CHECK(qkv && values_are(g, "blk.1.attn_qkv.weight", qkv->vals, qkv->rows * qkv->cols, 0.0f));
        CHECK(gu && values_are(g, "blk.0.ffn_up.weight", gu->vals, gu->rows * gu->cols, 0.0f));
        CHECK(!gguf_find_tensor(g, "blk.0.ffn_gate.weight") && gguf_find_tensor(g, "output.weight"));
        gguf_close(g);
        lb_model *lm = NULL;
        CHECK_OK(lb_model_load(out, NULL, &lm));
        if (lm) CHECK(!strcmp(lb_model_arch(lm), "phi3"));
        lb_model_free(lm);
        const int32_t want[] = {8, 4, 3, 2};
        check_runs(out, "ab c", want, 4);
    }
    remove(out);
    snprintf(cfg, sizeof cfg, cfg_fmt, ", 5.0", ", 2.0");
    write_text(dir, "config.json", cfg);
    lb_status st = lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL);
    CHECK_MSG(st == LB_ERR_FORMAT && has(lb_last_error(), "4 long and 4 short factors; the 6 rotated dimensions need 3"),
              "%s: %s", lb_status_name(st), lb_last_error());
    CHECK(!lb_test_have(out));
    free_model(&m);
}

/* Mistral with a Llama-2 style tokenizer.json (BPE + byte_fallback). */
static void test_mistral_spm(const char *dir) {
    const int n_vocab = 268; /* 265 tokens + 3 padding rows */
    model m;
    make_dir(dir);
    make_model(&m, n_vocab, 0, 1, 0);
    write_weights(&m, dir, 0);
    write_text(dir, "config.json",
               "{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64,"
               " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 8,"
               " \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"vocab_size\": 268,"
               " \"sliding_window\": 4096}");
    sbuf t = {0};
    sb_add(&t, "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
               " {\"id\": 1, \"content\": \"<s>\", \"special\": true}, {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
               " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"},"
               "   {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"}]},"
               " \"pre_tokenizer\": null,"
               " \"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"unk_token\": \"<unk>\", \"vocab\": {"
               "\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2");
    for (int b = 0; b < 256; b++) sb_add(&t, ", \"<0x%02X>\": %d", b, 3 + b);
    sb_add(&t, ", \"\xe2\x96\x81\": 259, \"a\": 260, \"b\": 261, \"\xe2\x96\x81" "a\": 262, \"ab\": 263,"
               " \"\xe2\x96\x81" "ab\": 264}, \"merges\": [\"\xe2\x96\x81 a\", \"a b\", \"\xe2\x96\x81" "a b\"]}}");
    write_text(dir, "tokenizer.json", t.p);
    free(t.p);
    write_text(dir, "tokenizer_config.json",
               "{\"add_bos_token\": true, \"add_eos_token\": false, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\","
               " \"unk_token\": \"<unk>\", \"pad_token\": null}");
    const char *out = lb_test_tmp("hf_mistral.gguf");
    remove(out);
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        check_weights(g, &m, 1, LB_TYPE_F32);
        CHECK(str_is(g, "general.architecture", "llama") && str_is(g, "tokenizer.ggml.model", "llama"));
        CHECK(!gguf_find_kv(g, "tokenizer.ggml.merges") && !gguf_find_kv(g, "tokenizer.ggml.pre"));
        const gguf_kv *toks = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
        const gguf_kv *types = gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32);
        const gguf_kv *scores = gguf_get_arr(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32);
        CHECK(toks && toks->arr_n == (uint64_t)n_vocab && types && scores && scores->arr_n == (uint64_t)n_vocab);
        if (toks && types && scores && scores->arr_n == (uint64_t)n_vocab) {
            float sc[268];
            memcpy(sc, scores->data, sizeof sc);
            CHECK(type_at(types, 0) == 2 && type_at(types, 1) == 3 && type_at(types, 2) == 3);
            CHECK(type_at(types, 3) == 6 && type_at(types, 258) == 6 && tok_is(toks, 13, "<0x0A>"));
            CHECK(type_at(types, 259) == 1 && type_at(types, 264) == 1);
            CHECK(type_at(types, 265) == 5 && tok_is(toks, 267, "[PAD267]"));
            /* score = -(merge rank) for merged tokens, below every merge otherwise */
            CHECK(sc[262] == 0.0f && sc[263] == -1.0f && sc[264] == -2.0f);
            CHECK(sc[259] == -(3.0f + 259) && sc[261] == -(3.0f + 261));
            CHECK(sc[0] == 0.0f && sc[100] == 0.0f);
        }
        CHECK(u32_is(g, "tokenizer.ggml.bos_token_id", 1) && u32_is(g, "tokenizer.ggml.eos_token_id", 2));
        CHECK(u32_is(g, "tokenizer.ggml.unknown_token_id", 0) && !gguf_find_kv(g, "tokenizer.ggml.padding_token_id"));
        CHECK(bool_is(g, "tokenizer.ggml.add_bos_token", 1) && bool_is(g, "tokenizer.ggml.add_eos_token", 0));
        CHECK(bool_is(g, "tokenizer.ggml.add_space_prefix", 1));
        CHECK(u32_is(g, "llama.context_length", 256));
        gguf_close(g);
        const int32_t want[] = {1, 264, 261}; /* "\u2581ab" then "b" */
        check_runs(out, "abb", want, 3);
    }
    remove(out);
    /* a tokenizer with more ids than the embedding has rows */
    write_text(dir, "tokenizer.json",
               "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 0, \"b\": 300}, \"merges\": []}}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_FORMAT && has(lb_last_error(), "\"b\" has a missing or out-of-range id"));
    write_text(dir, "tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": {}}}");
    CHECK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL) == LB_ERR_UNSUPPORTED && has(lb_last_error(), "\"Unigram\""));
    CHECK(!lb_test_have(out));
    free_model(&m);
}

/* ---- stories260K through the HF path ----
 * The llama2.c checkpoint is exported the way transformers'
 * convert_llama_weights_to_hf.py does it (q/k rows permuted to rotate-half),
 * with a Llama-2 style tokenizer.json built from tok512.bin; importing that
 * must give back exactly the tensors of llama.cpp's stories260K-f32.gguf. */

/* transformers' permute, transcribed literally:
 * w.view(n_heads, rows // n_heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols) */
static void hf_export_permute(const float *in, float *out, int64_t rows, int64_t cols, int n_head) {
    int64_t half = rows / n_head / 2;
    for (int h = 0; h < n_head; h++)
        for (int a = 0; a < 2; a++)
            for (int64_t b = 0; b < half; b++)
                memcpy(out + (h * 2 * half + a * half + b) * cols, in + (h * half * 2 + b * 2 + a) * cols,
                       (size_t)cols * sizeof(float));
}

static void json_escape(sbuf *b, const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') sb_add(b, "\\%c", s[i]);
        else if (s[i] < 0x20) sb_add(b, "\\u%04x", s[i]);
        else sb_add(b, "%c", s[i]);
    }
}

static void add_f32(model *m, const char *name, const float *src, int64_t rows, int64_t cols, int perm_heads) {
    tspec *t = &m->t[m->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = D_F32;
    t->n_dims = cols ? 2 : 1;
    t->rows = rows;
    t->cols = cols;
    t->shard = 1;
    size_t n = (size_t)(rows * (cols ? cols : 1));
    t->vals = malloc(n * sizeof(float));
    if (perm_heads) hf_export_permute(src, t->vals, rows, cols, perm_heads);
    else memcpy(t->vals, src, n * sizeof(float));
}

static void test_stories_via_hf(const char *dir) {
    const char *bin = lb_test_shared("models/stories260K.bin"), *tokp = lb_test_shared("models/tok512.bin");
    char *ck = NULL, *tk = NULL;
    size_t ck_len, tk_len;
    gguf_file *ref = NULL, *g = NULL;
    if (!lb_test_have(bin) || lb_read_file(bin, &ck, &ck_len) != LB_OK || lb_read_file(tokp, &tk, &tk_len) != LB_OK ||
        gguf_open(lb_test_shared("models/stories260K-f32.gguf"), &ref) != LB_OK) {
        printf("stories260K not available: HF round trip skipped\n");
        free(ck);
        free(tk);
        return;
    }
    int32_t hd[7];
    memcpy(hd, ck, sizeof hd);
    const int dim = hd[0], hid = hd[1], nl = hd[2], nh = hd[3], nkv = hd[4], vocab = hd[5];
    const int kv_dim = dim / nh * nkv;
    CHECK(dim == 64 && hid == 172 && nl == 5 && nh == 8 && nkv == 4 && vocab == 512);
    const float *w = (const float *)(ck + 28);
    const float *emb = w, *rms_att = emb + vocab * dim, *wq = rms_att + nl * dim, *wk = wq + nl * dim * dim;
    const float *wv = wk + nl * dim * kv_dim, *wo = wv + nl * dim * kv_dim, *rms_ffn = wo + nl * dim * dim;
    const float *w1 = rms_ffn + nl * dim, *w2 = w1 + nl * dim * hid, *w3 = w2 + nl * hid * dim;
    const float *rms_final = w3 + nl * dim * hid;

    static model m;
    m.n = 0;
    add_f32(&m, "model.embed_tokens.weight", emb, vocab, dim, 0);
    for (int l = 0; l < nl; l++) {
        char n[96];
#define HFT(suffix, src, rows, cols, perm) \
        snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), add_f32(&m, n, src, rows, cols, perm)
        HFT("input_layernorm.weight", rms_att + l * dim, dim, 0, 0);
        HFT("self_attn.q_proj.weight", wq + l * dim * dim, dim, dim, nh);
        HFT("self_attn.k_proj.weight", wk + l * dim * kv_dim, kv_dim, dim, nkv);
        HFT("self_attn.v_proj.weight", wv + l * dim * kv_dim, kv_dim, dim, 0);
        HFT("self_attn.o_proj.weight", wo + l * dim * dim, dim, dim, 0);
        HFT("post_attention_layernorm.weight", rms_ffn + l * dim, dim, 0, 0);
        HFT("mlp.gate_proj.weight", w1 + l * dim * hid, hid, dim, 0);
        HFT("mlp.down_proj.weight", w2 + l * hid * dim, dim, hid, 0);
        HFT("mlp.up_proj.weight", w3 + l * dim * hid, hid, dim, 0);
#undef HFT
    }
    add_f32(&m, "model.norm.weight", rms_final, dim, 0, 0);
    make_dir(dir);
    write_weights(&m, dir, 0);
    write_text(dir, "config.json",
               "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 172,"
               " \"num_hidden_layers\": 5, \"num_attention_heads\": 8, \"num_key_value_heads\": 4,"
               " \"max_position_embeddings\": 512, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0,"
               " \"vocab_size\": 512, \"tie_word_embeddings\": true}");
    /* tokenizer.json: tok512's pieces with spaces as U+2581, no merges */
    sbuf t = {0};
    sb_add(&t, "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
               " {\"id\": 1, \"content\": \"<s>\", \"special\": true}, {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
               " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}]},"
               " \"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"unk_token\": \"<unk>\", \"merges\": [], \"vocab\": {");
    size_t pos = 4;
    for (int i = 0; i < vocab; i++) {
        int32_t len;
        memcpy(&len, tk + pos + 4, 4);
        const unsigned char *piece = (const unsigned char *)tk + pos + 8;
        pos += 8 + (size_t)len;
        sb_add(&t, "%s\"", i ? ", " : "");
        if (i < 3) sb_add(&t, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else
            for (int32_t k = 0; k < len; k++) {
                if (piece[k] == ' ') sb_add(&t, "\xe2\x96\x81");
                else json_escape(&t, piece + k, 1);
            }
        sb_add(&t, "\": %d", i);
    }
    sb_add(&t, "}}}");
    write_text(dir, "tokenizer.json", t.p);
    free(t.p);
    write_text(dir, "tokenizer_config.json", "{\"add_bos_token\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}");

    const char *out = lb_test_tmp("hf_stories260K.gguf");
    remove(out);
    CHECK_OK(lb_convert_hf(dir, out, LB_TYPE_F32, NULL, NULL));
    CHECK_OK(gguf_open(out, &g));
    if (g) {
        int64_t same = 0;
        for (int64_t i = 0; i < gguf_n_tensors(ref); i++) {
            const gguf_tensor *r = gguf_tensor_at(ref, i);
            char name[96];
            snprintf(name, sizeof name, "%.*s", (int)r->name.len, r->name.ptr);
            const gguf_tensor *o = gguf_find_tensor(g, strcmp(name, "output.weight") ? name : "token_embd.weight");
            int eq = o && o->type == r->type && !memcmp(o->ne, r->ne, sizeof o->ne) && o->size == r->size &&
                     !memcmp(o->data, r->data, r->size);
            CHECK_MSG(eq, "%s differs from llama.cpp's", name);
            same += eq;
        }
        CHECK(same == 48 && gguf_n_tensors(g) == 47);
        static const char *keys[] = {"llama.embedding_length", "llama.feed_forward_length", "llama.block_count",
            "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count",
            "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model", "tokenizer.ggml.tokens",
            "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.unknown_token_id"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const gguf_kv *a = gguf_find_kv(g, keys[k]), *b = gguf_find_kv(ref, keys[k]);
            int eq = a && b && a->type == b->type && a->arr_n == b->arr_n;
            if (eq && a->type == GGUF_TYPE_ARRAY && a->arr_type == GGUF_TYPE_STRING)
                for (uint64_t i = 0; i < a->arr_n && eq; i++)
                    eq = a->strs[i].len == b->strs[i].len && !memcmp(a->strs[i].ptr, b->strs[i].ptr, a->strs[i].len);
            else if (eq && a->type == GGUF_TYPE_STRING)
                eq = a->str.len == b->str.len && !memcmp(a->str.ptr, b->str.ptr, a->str.len);
            else if (eq)
                eq = a->data_size == b->data_size && !memcmp(a->data, b->data, a->data_size);
            CHECK_MSG(eq, "key %s differs from llama.cpp's", keys[k]);
        }
        /* without merges the scores keep the vocabulary order (llama.cpp's: -(id - 259)) */
        const gguf_kv *sc = gguf_get_arr(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32);
        int ordered = sc && sc->arr_n == 512;
        for (int i = 260; ordered && i < 512; i++) {
            float a, b;
            memcpy(&a, (const char *)sc->data + 4 * (i - 1), 4);
            memcpy(&b, (const char *)sc->data + 4 * i, 4);
            ordered = a > b;
        }
        CHECK(ordered);
        gguf_close(g);
        /* the tokenizer built from tokenizer.json splits the golden prompt as llama2.c does */
        const int32_t want[] = {1, 403, 407, 261, 378};
        check_runs(out, "Once upon a time", want, 5);
    }
    remove(out);
    gguf_close(ref);
    free_model(&m);
    free(ck);
    free(tk);
}

/* With LB_WRITE_HF_FIXTURE=DIR: only write the sharded Llama fixture there
 * (tests/cli_convert_hf.sh drives `lowbit convert --hf` on it). */
static int write_fixture_only(const char *dir) {
    model m;
    make_dir(dir);
    make_model(&m, 20, 0, 1, 1);
    write_weights(&m, dir, 1);
    write_text(dir, "config.json", LLAMA_CONFIG);
    write_text(dir, "tokenizer.json", BPE_TOKENIZER);
    write_text(dir, "tokenizer_config.json",
               "{\"bos_token\": \"<|begin|>\", \"eos_token\": {\"content\": \"<|end|>\", \"lstrip\": false},"
               " \"model_max_length\": 64}");
    free_model(&m);
    return lb_test_result("test_safetensors (fixture)");
}

int main(void) {
    const char *fixture = getenv("LB_WRITE_HF_FIXTURE");
    if (fixture && *fixture) return write_fixture_only(fixture);
    test_json();
    test_safetensors_headers();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_llama"));
    test_llama_sharded(dir);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_qwen2"));
    test_qwen2_single(dir);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_qwen3"));
    test_qwen3_single(dir);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_gemma2"));
    test_gemma(dir, 2);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_gemma3"));
    test_gemma(dir, 3);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_phi3"));
    test_phi3(dir);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_mistral"));
    test_mistral_spm(dir);
    snprintf(dir, sizeof dir, "%s", lb_test_tmp("hf_stories260K"));
    test_stories_via_hf(dir);
    return lb_test_result("test_safetensors");
}
