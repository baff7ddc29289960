/* Tokenizer tests: llama.cpp's own tokenizer test vectors (ggml-vocab-*.gguf
 * with .inp/.out, produced with add_special=false), round trips, byte
 * fallback, invalid UTF-8, special tokens, the pre-tokenizer regexes,
 * malformed metadata, and speed on a 1.3 MB text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "test_util.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode.h"
#include "tokenizer/tokenizer.h"

#if defined(__SANITIZE_ADDRESS__)
#define SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOW_BUILD 1
#endif
#endif
#ifndef SLOW_BUILD
#define SLOW_BUILD 0
#endif

static lb_tokenizer *load_tok(const char *path, gguf_file **gout) {
    gguf_file *g = NULL;
    lb_tokenizer *t = NULL;
    lb_status s = gguf_open(path, &g);
    CHECK_MSG(s == LB_OK, "gguf_open %s: %s", path, lb_last_error());
    if (s) return NULL;
    double t0 = lb_time_s();
    s = lb_tokenizer_load(g, &t);
    CHECK_MSG(s == LB_OK, "load %s: %s", path, lb_last_error());
    printf("loaded %s: %d tokens in %.1f ms\n", path, lb_tokenizer_n_vocab(t), (lb_time_s() - t0) * 1e3);
    if (gout) *gout = g;
    else gguf_close(g);
    return t;
}

static int encode(const lb_tokenizer *t, const char *s, size_t len, int bos, int32_t **ids) {
    int n = -1;
    lb_status st = lb_tokenizer_encode(t, s, len, bos, ids, &n);
    CHECK_MSG(st == LB_OK, "encode: %s", lb_last_error());
    return st == LB_OK ? n : -1;
}

/* decode(ids) must be exactly want[0..want_len) */
static int roundtrip_ok(const lb_tokenizer *t, const int32_t *ids, int n, const char *want,
                        size_t want_len) {
    char *out = NULL;
    size_t len = 0;
    if (lb_tokenizer_decode(t, ids, n, &out, &len) != LB_OK) return 0;
    int ok = len == want_len && memcmp(out, want, len) == 0;
    free(out);
    return ok;
}

static void print_ids(const char *what, const int32_t *ids, int n) {
    fprintf(stderr, "  %s:", what);
    for (int i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, "\n");
}

/* The .inp cases are each followed by "\n__ggml_vocab_test__\n"; the .out
 * has one line of space-separated ids per case. vocab names the GGUF in
 * ../shared/tokenizer-tests; inp and out are paths, or NULL for the
 * vocabulary's own files there. pre >= 0 replaces the file's pre-tokenizer
 * with what the loader sets for that name (the gpt-4o, tekken and smollm oracles
 * run the GPT-2 vocabulary under those regexes). */
static void run_vocab_cases(const char *vocab, const char *inp_path, const char *out_path, int pre, int n_expect) {
    char gpath[512], ipath[512], opath[512], label[600];
    snprintf(gpath, sizeof gpath, "tokenizer-tests/%s", vocab);
    if (inp_path) snprintf(ipath, sizeof ipath, "%s", inp_path);
    else snprintf(ipath, sizeof ipath, "%s.inp", lb_test_shared(gpath));
    if (out_path) snprintf(opath, sizeof opath, "%s", out_path);
    else snprintf(opath, sizeof opath, "%s.out", lb_test_shared(gpath));
    snprintf(label, sizeof label, "%s%s%s", vocab, out_path ? " as " : "", out_path ? out_path : "");
    vocab = label;
    if (!lb_test_have(lb_test_shared(gpath))) {
        printf("no %s, skipping\n", gpath);
        return;
    }
    lb_tokenizer *t = load_tok(lb_test_shared(gpath), NULL);
    if (t && pre >= 0) {
        t->pre = (lb_tok_pre)pre;
        t->ignore_merges = pre == LB_PRE_TEKKEN; /* choose_pre's settings for the name */
        t->add_bos = t->add_bos || pre == LB_PRE_TEKKEN;
    }
    char *inp = NULL, *outp = NULL;
    size_t inp_len = 0, out_len = 0;
    CHECK_OK(lb_read_file(ipath, &inp, &inp_len));
    CHECK_OK(lb_read_file(opath, &outp, &out_len));
    if (!t || !inp || !outp) goto done;

    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    size_t pos = 0, opos = 0;
    int n_cases = 0, n_pass = 0, n_round = 0;
    while (pos < inp_len) {
        char *end = memmem(inp + pos, inp_len - pos, sep, sep_len);
        size_t case_len = end ? (size_t)(end - (inp + pos)) : inp_len - pos;
        const char *text = inp + pos;
        pos = end ? pos + case_len + sep_len : inp_len;

        char *eol = memchr(outp + opos, '\n', out_len - opos);
        size_t line_len = eol ? (size_t)(eol - (outp + opos)) : out_len - opos;
        int32_t want[1024];
        int n_want = 0;
        char line[8192];
        snprintf(line, sizeof line, "%.*s", (int)line_len, outp + opos);
        opos += line_len + (eol ? 1 : 0);
        for (char *p = strtok(line, " "); p && n_want < 1024; p = strtok(NULL, " "))
            want[n_want++] = (int32_t)atoi(p);

        int32_t *ids = NULL;
        int n = encode(t, text, case_len, 0, &ids);
        int same = n == n_want && (n == 0 || memcmp(ids, want, (size_t)n * sizeof *ids) == 0);
        if (!same) {
            fprintf(stderr, "%s case %d mismatch: '%.*s'\n", vocab, n_cases, (int)case_len, text);
            print_ids("want", want, n_want);
            print_ids("got ", ids, n);
        }
        n_pass += same;
        int rt = n >= 0 && roundtrip_ok(t, ids, n, text, case_len);
        CHECK_MSG(rt, "%s case %d does not round-trip", vocab, n_cases);
        n_round += rt;
        /* with BOS requested, the ids are the same after the configured BOS */
        int32_t *ids_b = NULL;
        int nb = encode(t, text, case_len, 1, &ids_b);
        int off = lb_tokenizer_add_bos(t) ? 1 : 0;
        CHECK(nb == n + off && (nb == 0 || memcmp(ids_b + off, ids, (size_t)n * sizeof *ids) == 0));
        if (off) CHECK(ids_b[0] == lb_tokenizer_bos(t));
        CHECK(roundtrip_ok(t, ids_b, nb, text, case_len));
        free(ids_b);
        free(ids);
        n_cases++;
    }
    CHECK_MSG(opos == out_len, "%s: .out has more lines than .inp has cases", vocab);
    CHECK_MSG(n_pass == n_cases, "%s: %d of %d cases match", vocab, n_pass, n_cases);
    CHECK_MSG(n_cases == n_expect, "%s: %d cases, expected %d", vocab, n_cases, n_expect);
    printf("%s: %d/%d cases match llama.cpp, %d round-trip\n", vocab, n_pass, n_cases, n_round);
done:
    free(inp);
    free(outp);
    lb_tokenizer_free(t);
}

/* Random valid UTF-8 (ASCII, whitespace, accents, Cyrillic, CJK, emoji,
 * unassigned code points) must come back exactly -- except that SPM cannot
 * tell U+2581 in the input from an escaped space, so no_2581 leaves it out. */
static void random_utf8_roundtrips(const lb_tokenizer *t, uint64_t seed, int no_2581) {
    static const uint32_t pool[] = {' ', ' ', '\n', '\t', '\r', 'a', 'Z', '3', '\'', '.', 0xA0,
                                    0xE9, 0x416, 0x5D0, 0x4E16, 0x3000, 0x1F999, 0x2581, 0xFFFD,
                                    0x10FFFF, 0xE000, 0x0378};
    int fails = 0;
    for (int k = 0; k < 300; k++) {
        char buf[256];
        size_t m = 0, want = (size_t)(lb_test_rand(&seed) % 48);
        for (size_t i = 0; i < want; i++) {
            uint64_t r = lb_test_rand(&seed);
            uint32_t cp = (r & 1) ? pool[(r >> 8) % (sizeof pool / sizeof pool[0])]
                                  : (uint32_t)((r >> 8) % 0x3000); /* dense low planes */
            if (cp >= 0xD800 && cp < 0xE000) cp = 'x'; /* no surrogates in valid UTF-8 */
            if (cp == 0x2581 && no_2581) cp = 'y';
            m += lb_utf8_encode(cp, buf + m);
        }
        int32_t *ids = NULL;
        int n = encode(t, buf, m, k & 1, &ids);
        int ok = n >= 0 && roundtrip_ok(t, ids, n, buf, m);
        if (!ok && fails++ == 0) {
            fprintf(stderr, "first failure: '%.*s' (", (int)m, buf);
            for (size_t i = 0; i < m; i++) fprintf(stderr, "%02x", (unsigned char)buf[i]);
            fprintf(stderr, ")\n");
        }
        free(ids);
    }
    CHECK_MSG(fails == 0, "%d random UTF-8 strings failed to round-trip", fails);
}

static void test_spm_details(void) {
    const char *path = lb_test_shared("tokenizer-tests/ggml-vocab-llama-spm.gguf");
    if (!lb_test_have(path)) return;
    lb_tokenizer *t = load_tok(path, NULL);
    if (!t) return;
    CHECK(lb_tokenizer_n_vocab(t) == 32000);
    CHECK(lb_tokenizer_bos(t) == 1 && lb_tokenizer_eos(t) == 2 && lb_tokenizer_add_bos(t) == 1);
    CHECK(lb_tokenizer_is_eog(t, 2) && !lb_tokenizer_is_eog(t, 1) && !lb_tokenizer_is_eog(t, 15043));
    CHECK(!lb_tokenizer_is_eog(t, -1) && !lb_tokenizer_is_eog(t, 32000));

    size_t len;
    const char *p = lb_tokenizer_piece(t, 15043, &len); /* "▁Hello" */
    CHECK(len == 6 && memcmp(p, " Hello", 6) == 0);
    CHECK(strcmp(lb_tokenizer_token_text(t, 15043), "\xE2\x96\x81Hello") == 0);
    p = lb_tokenizer_piece(t, 3 + 0x41, &len); /* <0x41> */
    CHECK(len == 1 && p[0] == 'A');
    p = lb_tokenizer_piece(t, 3 + 0xF0, &len);
    CHECK(len == 1 && (unsigned char)p[0] == 0xF0);
    lb_tokenizer_piece(t, 1, &len);
    CHECK(len == 0); /* control */
    lb_tokenizer_piece(t, 0, &len);
    CHECK(len == 0); /* unknown */
    lb_tokenizer_piece(t, 99999, &len);
    CHECK(len == 0);

    /* byte fallback: an emoji and rare CJK have no tokens -> <0xXX> */
    const char *s = "Hi \xF0\x9F\xA6\x99 \xE4\xB8\x96\xE7\x95\x8C \xF0\xA0\x80\x80!";
    int32_t *ids = NULL;
    int n = encode(t, s, strlen(s), 1, &ids);
    int n_bytes = 0;
    for (int i = 0; i < n; i++) n_bytes += ids[i] >= 3 && ids[i] < 3 + 256;
    CHECK(n > 0 && ids[0] == 1);
    CHECK_MSG(n_bytes >= 8, "only %d byte tokens", n_bytes); /* 🦙 and U+20000 at least */
    CHECK(roundtrip_ok(t, ids, n, s, strlen(s)));
    int found = 0; /* the emoji is exactly <0xF0><0x9F><0xA6><0x99> */
    for (int i = 0; i + 3 < n; i++)
        found |= ids[i] == 3 + 0xF0 && ids[i + 1] == 3 + 0x9F && ids[i + 2] == 3 + 0xA6 && ids[i + 3] == 3 + 0x99;
    CHECK(found);
    free(ids);

    /* special-token text is plain text (parse_special = false) */
    n = encode(t, "<s>x</s>", 8, 0, &ids);
    for (int i = 0; i < n; i++) CHECK(ids[i] != 1 && ids[i] != 2);
    CHECK(roundtrip_ok(t, ids, n, "<s>x</s>", 8));
    free(ids);

    /* empty text: nothing, or just BOS */
    n = encode(t, "", 0, 0, &ids);
    CHECK(n == 0 && ids != NULL);
    free(ids);
    n = encode(t, NULL, 0, 1, &ids);
    CHECK(n == 1 && ids[0] == 1);
    free(ids);

    /* invalid UTF-8 goes through as byte tokens and round-trips exactly */
    const char bad[] = "a\xFF\xC3(\xE2\x96z\x80\xF4\x90\x80\x80 \xC0\x80\xED\xA0\x80 end\xE2";
    n = encode(t, bad, sizeof bad - 1, 0, &ids);
    CHECK(n > 0 && roundtrip_ok(t, ids, n, bad, sizeof bad - 1));
    free(ids);

    /* random bytes: no crash. (They need not round-trip: a stray lead byte
     * swallows the bytes after it, even those of an escaped space, and the
     * resulting byte tokens keep U+2581 as it is -- so does llama.cpp.) */
    uint64_t seed = 12345;
    for (int k = 0; k < 300; k++) {
        char buf[64];
        size_t m = (size_t)(lb_test_rand(&seed) % sizeof buf);
        for (size_t i = 0; i < m; i++) {
            uint64_t r = lb_test_rand(&seed);
            buf[i] = (r & 3) == 0 ? ' ' : (char)(r >> 8);
        }
        n = encode(t, buf, m, k & 1, &ids);
        char *text = NULL;
        CHECK(n >= 0 && lb_tokenizer_decode(t, ids, n, &text, &len) == LB_OK);
        free(text);
        free(ids);
    }
    random_utf8_roundtrips(t, 99, 1);

    int32_t bad_id = 32000;
    char *out = NULL;
    CHECK(lb_tokenizer_decode(t, &bad_id, 1, &out, &len) == LB_ERR_ARG && out == NULL);
    lb_tokenizer_free(t);
}

/* 300 random byte strings (invalid UTF-8 included) encode without failing */
static void random_bytes_encode(const lb_tokenizer *t, uint64_t *seed) {
    for (int k = 0; k < 300; k++) {
        char buf[64];
        size_t m = (size_t)(lb_test_rand(seed) % sizeof buf);
        for (size_t i = 0; i < m; i++) buf[i] = (char)(lb_test_rand(seed) >> 16);
        int32_t *ids = NULL;
        CHECK(encode(t, buf, m, 0, &ids) >= 0);
        free(ids);
    }
}

static void test_gpt2_details(void) {
    const char *path = lb_test_shared("tokenizer-tests/ggml-vocab-gpt-2.gguf");
    if (!lb_test_have(path)) return;
    lb_tokenizer *t = load_tok(path, NULL);
    if (!t) return;
    CHECK(lb_tokenizer_n_vocab(t) == 50257);
    CHECK(lb_tokenizer_bos(t) == 50256 && lb_tokenizer_eos(t) == 50256);
    CHECK(lb_tokenizer_add_bos(t) == 0);
    CHECK(lb_tokenizer_is_eog(t, 50256) && !lb_tokenizer_is_eog(t, 198));
    size_t len;
    const char *p = lb_tokenizer_piece(t, 18435, &len); /* "ĠHello" */
    CHECK(len == 6 && memcmp(p, " Hello", 6) == 0);
    p = lb_tokenizer_piece(t, 198, &len); /* "Ċ" */
    CHECK(len == 1 && p[0] == '\n');
    lb_tokenizer_piece(t, 50256, &len);
    CHECK(len == 0);

    /* <|endoftext|> in the text is plain text */
    int32_t *ids = NULL;
    int n = encode(t, "a<|endoftext|>b", 15, 1, &ids); /* add_bos is off for gpt2 */
    CHECK(n > 3);
    for (int i = 0; i < n; i++) CHECK(ids[i] != 50256);
    CHECK(roundtrip_ok(t, ids, n, "a<|endoftext|>b", 15));
    free(ids);

    /* each invalid byte becomes U+FFFD, as in llama.cpp */
    n = encode(t, "a\377b", 3, 0, &ids);
    CHECK(n > 0 && roundtrip_ok(t, ids, n, "a\357\277\275b", 5));
    free(ids);
    uint64_t seed = 777;
    random_bytes_encode(t, &seed);
    random_utf8_roundtrips(t, 4242, 0);
    /* the o200k, tekken, smollm and DeepSeek scanners on random code points
     * (texts that round-trip) and random bytes */
    for (int pre = LB_PRE_GPT4O; pre <= LB_PRE_DEEPSEEK_LLM; pre++) {
        t->pre = (lb_tok_pre)pre;
        random_utf8_roundtrips(t, 4243 + (uint64_t)pre, 0);
        random_bytes_encode(t, &seed);
    }
    lb_tokenizer_free(t);
}

static void test_stories(void) {
    const char *path = lb_test_shared("models/stories260K-f32.gguf");
    if (!lb_test_have(path)) {
        printf("no stories260K-f32.gguf, skipping\n");
        return;
    }
    lb_tokenizer *t = load_tok(path, NULL);
    if (!t) return;
    int32_t *ids = NULL;
    int n = encode(t, "Once upon a time", 16, 1, &ids);
    const int32_t want[] = {1, 403, 407, 261, 378};
    CHECK(n == 5 && memcmp(ids, want, sizeof want) == 0);
    if (n != 5 || memcmp(ids, want, sizeof want) != 0) print_ids("stories got", ids, n);
    CHECK(roundtrip_ok(t, ids, n, "Once upon a time", 16));
    free(ids);
    /* the greedy continuation from golden/ decodes to llama2.c's text */
    static const int32_t gen[] = {
        403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338,
        401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385,
        328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267,
        337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13, 438, 310};
    const char *want_text =
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
        "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily";
    CHECK(roundtrip_ok(t, gen, 64, want_text, strlen(want_text)));
    lb_tokenizer_free(t);
}

/* ---- pre-tokenizer regexes, checked word by word ---- */

static void check_split(lb_tok_pre pre, const char *text, const char *const *want, int n_want) {
    uint32_t cpt[256];
    uint8_t cls[256];
    size_t n = 0, len = strlen(text);
    for (size_t off = 0; off < len && n < 256; n++) {
        size_t adv;
        cpt[n] = lb_utf8_decode((const unsigned char *)text + off, len - off, &adv);
        cls[n] = (uint8_t)lb_uclass(cpt[n]);
        off += adv;
    }
    lb_ivec ends = {0};
    CHECK_OK(lb_pretokenize(pre, cpt, cls, n, &ends));
    int ok = (int)ends.n == n_want;
    size_t start = 0; /* words back to UTF-8 to compare */
    for (int w = 0; ok && w < n_want; w++) {
        char word[256];
        size_t wl = 0;
        for (size_t i = start; i < (size_t)ends.v[w]; i++) wl += lb_utf8_encode(cpt[i], word + wl);
        ok = wl == strlen(want[w]) && memcmp(word, want[w], wl) == 0;
        start = (size_t)ends.v[w];
    }
    static const char *const names[] = {"gpt2", "llama3", "qwen2", "gpt-4o", "tekken", "smollm", "deepseek-v3", "deepseek-llm"};
    CHECK_MSG(ok, "%s split of '%s' (got %zu words)", names[pre], text, ends.n);
    free(ends.v);
}

#define SPLIT(pre, text, ...)                                                         \
    do {                                                                              \
        static const char *const w_[] = {__VA_ARGS__};                                \
        check_split(pre, text, w_, (int)(sizeof w_ / sizeof w_[0]));                 \
    } while (0)

static void test_pretokenizers(void) {
    SPLIT(LB_PRE_GPT2, "Hello world", "Hello", " world");
    SPLIT(LB_PRE_GPT2, "  Hello", " ", " Hello");
    SPLIT(LB_PRE_GPT2, "DON'T don't", "DON", "'", "T", " don", "'t");
    SPLIT(LB_PRE_GPT2, "333333 x1", "333333", " x", "1");
    SPLIT(LB_PRE_GPT2, "a  \n\n b", "a", "  \n\n", " b");
    SPLIT(LB_PRE_GPT2, "a   ", "a", "   ");
    SPLIT(LB_PRE_GPT2, "(!!) ?", "(!!)", " ?");
    SPLIT(LB_PRE_GPT2, "\xC3\xA9t\xC3\xA9 \xD9\xA3", "\xC3\xA9t\xC3\xA9", " \xD9\xA3"); /* été ٣ */
    SPLIT(LB_PRE_LLAMA3, "DON'T don't", "DON", "'T", " don", "'t");
    SPLIT(LB_PRE_LLAMA3, "3333333", "333", "333", "3");
    SPLIT(LB_PRE_LLAMA3, "Hello\n\n  x", "Hello", "\n\n", " ", " x");
    SPLIT(LB_PRE_LLAMA3, "(hello) ...\n\nok", "(hello", ")", " ...\n\n", "ok");
    SPLIT(LB_PRE_LLAMA3, "a \t1", "a", " ", "\t", "1");
    SPLIT(LB_PRE_LLAMA3, "x ", "x", " ");
    SPLIT(LB_PRE_LLAMA3, "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBD\x9E", "\xE4\xBD\xA0\xE5\xA5\xBD", "\xEF\xBD\x9E"); /* 你好～ */
    SPLIT(LB_PRE_QWEN2, "3333 apples", "3", "3", "3", "3", " apples");
    SPLIT(LB_PRE_QWEN2, "DON'T 12", "DON", "'T", " ", "1", "2");
    /* \s also covers U+00A0, U+3000 and U+2028 */
    SPLIT(LB_PRE_GPT2, "a\302\240\302\240b", "a", "\xC2\xA0", "\xC2\xA0", "b");
    SPLIT(LB_PRE_GPT2, "x\xE3\x80\x80", "x", "\xE3\x80\x80");
    /* o200k: words split where a capital follows lower case; contractions
     * stay on their word; '/' and newlines trail punctuation */
    SPLIT(LB_PRE_GPT4O, "HELLOworld helloWorld", "HELLOworld", " hello", "World");
    SPLIT(LB_PRE_GPT4O, "DON'T don't", "DON'T", " don't");
    SPLIT(LB_PRE_GPT4O, "1234567", "123", "456", "7");
    SPLIT(LB_PRE_GPT4O, "?\n/x", "?\n/", "x");
    SPLIT(LB_PRE_GPT4O, "\tHi  x", "\tHi", " ", " x");
    /* a letter outside ASCII is upper and lower case at once (llama.cpp) */
    SPLIT(LB_PRE_GPT4O, "\xC3\xA9t\xC3\xA9 \xC3\x89T\xC3\x89", "\xC3\xA9t\xC3\xA9", " \xC3\x89T\xC3\x89"); /* été ÉTÉ */
    SPLIT(LB_PRE_GPT4O, "\xC3\xA9" "ABC", "\xC3\xA9", "ABC"); /* éABC */
    SPLIT(LB_PRE_TEKKEN, "DON'T 12", "DON", "'T", " ", "1", "2");
    /* smollm: digits apart first, so gpt2's space run ends where they start
     * (gpt2 alone: "a", " ", " 12", "b") */
    SPLIT(LB_PRE_SMOLLM, "a  12b", "a", "  ", "1", "2", "b");
    SPLIT(LB_PRE_SMOLLM, "x's 7'd", "x", "'s", " ", "7", "'d");
}

/* The words llama.cpp's unicode_regex_split cuts each case of cases.inp
 * into under pre (scripts/make-pretok-fixture.py): one line per case, each
 * word the hex of its UTF-8 bytes, words separated by a space. */
static void run_split_cases(lb_tok_pre pre, const char *words_path, int n_expect) {
    char *inp = NULL, *want = NULL;
    size_t inp_len = 0, want_len = 0;
    CHECK_OK(lb_read_file(LB_TEST_DATA_DIR "/pretok/cases.inp", &inp, &inp_len));
    CHECK_OK(lb_read_file(words_path, &want, &want_len));
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t pos = 0, wpos = 0;
    int n_cases = 0, n_pass = 0;
    while (inp && want && pos < inp_len) {
        char *end = memmem(inp + pos, inp_len - pos, sep, sizeof sep - 1);
        const size_t len = end ? (size_t)(end - (inp + pos)) : inp_len - pos;
        const unsigned char *text = (const unsigned char *)inp + pos;
        pos += len + (end ? sizeof sep - 1 : 0);
        uint32_t *cpt = malloc((len + 1) * sizeof *cpt);
        uint8_t *cls = malloc(len + 1);
        char *got = malloc(3 * len + 2);
        size_t n = 0, g = 0;
        for (size_t off = 0; off < len; n++) {
            size_t adv;
            cpt[n] = lb_utf8_decode(text + off, len - off, &adv);
            cls[n] = (uint8_t)lb_uclass(cpt[n]);
            off += adv;
        }
        lb_ivec ends = {0};
        CHECK_OK(lb_pretokenize(pre, cpt, cls, n, &ends));
        for (size_t w = 0, start = 0; w < ends.n; w++) { /* the words back to hex UTF-8 */
            if (w) got[g++] = ' ';
            for (size_t i = start; i < (size_t)ends.v[w]; i++) {
                char u[4];
                const size_t ul = lb_utf8_encode(cpt[i], u);
                for (size_t b = 0; b < ul; b++) g += (size_t)sprintf(got + g, "%02x", (unsigned char)u[b]);
            }
            start = (size_t)ends.v[w];
        }
        got[g] = 0;
        char *eol = memchr(want + wpos, '\n', want_len - wpos);
        const size_t wl = eol ? (size_t)(eol - (want + wpos)) : want_len - wpos;
        const int same = wl == g && memcmp(want + wpos, got, g) == 0;
        if (!same) fprintf(stderr, "%s case %d words differ:\n  want: %.*s\n  got : %s\n", words_path, n_cases,
                           (int)wl, want + wpos, got);
        wpos += wl + (eol ? 1 : 0);
        n_pass += same;
        n_cases++;
        free(ends.v);
        free(cpt);
        free(cls);
        free(got);
    }
    CHECK_MSG(n_pass == n_cases && n_cases == n_expect, "%s: %d of %d cases split as llama.cpp (%d expected)",
              words_path, n_pass, n_cases, n_expect);
    printf("%s: %d/%d cases split as llama.cpp\n", words_path, n_pass, n_cases);
    free(inp);
    free(want);
}

/* ---- synthetic vocabularies written with the GGUF writer ---- */

static const char *named_pre = "gpt-2"; /* tokenizer.ggml.pre of a PRE_NAMED vocabulary */

enum { BREAK_NONE, PRE_LLAMA_BPE, PRE_MISSING, PRE_GPT4O, PRE_LLAMA4, PRE_TEKKEN, PRE_SMOLLM, PRE_GLM4, PRE_NAMED, VOCAB_END, VOCAB_HARMONY, BREAK_NO_TOKENS, BREAK_SHORT_SCORES, BREAK_BOS_RANGE, BREAK_BAD_MERGE,
       BREAK_NO_MERGES, BREAK_BAD_MODEL, BREAK_TOKENS_TYPE, BREAK_DUP_TOKEN, BREAK_BOS_TYPE };

#define N_EXTRA 8
static const char *const k_extra[N_EXTRA] = {"\xE2\x96\x81", "a", "b", "\342\226\201a",
                                             "<ud>", "<|im_end|>", "ab", "\342\226\201b"};

/* A small SPM vocab: <unk> <s> </s>, 256 byte tokens, then k_extra (with
 * "<ud>" user-defined); or a tiny gpt2 vocab when bpe is set. */
static lb_status write_vocab(const char *path, int bpe, int breakage) {
    gguf_writer *w = gguf_writer_new();
    if (!w) return LB_ERR_NOMEM;
    const char *strs[3 + 256 + N_EXTRA];
    char bytes[256][7];
    float scores[3 + 256 + N_EXTRA];
    int32_t types[3 + 256 + N_EXTRA];
    int n = 0;
    lb_status s = LB_OK;
    if (!bpe) {
        strs[n] = "<unk>", types[n] = 2, scores[n++] = 0;
        strs[n] = "<s>", types[n] = 3, scores[n++] = 0;
        strs[n] = breakage == BREAK_DUP_TOKEN ? "<s>" : "</s>", types[n] = 3, scores[n++] = 0;
        for (int b = 0; b < 256; b++) {
            snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
            strs[n] = bytes[b], types[n] = 6, scores[n++] = 0;
        }
        for (int i = 0; i < N_EXTRA; i++) {
            strs[n] = k_extra[i];
            types[n] = strcmp(k_extra[i], "<ud>") == 0 ? 4 : 1;
            scores[n++] = -(float)i;
        }
        s = gguf_writer_set_str(w, "tokenizer.ggml.model", breakage == BREAK_BAD_MODEL ? "bert" : "llama");
    } else {
        /* VOCAB_END: Phi-3's <|end|>; VOCAB_HARMONY: gpt-oss's o200k_harmony, which has <|return|> and <|call|> too */
        static const char *const toks[] = {"a",   "b",          "c",          "\xC4\xA0", "ab",      "\304\240a",
                                           "<|endoftext|>", "abc", "<|end|>", "<|return|>", "<|call|>"};
        const int nt = breakage == VOCAB_HARMONY ? 11 : breakage == VOCAB_END ? 9 : 8;
        for (int i = 0; i < nt; i++) strs[n] = toks[i], types[n] = i == 6 || i >= 8 ? 3 : 1, scores[n++] = 0;
        static const char *const merges_ok[] = {"a b", "\xC4\xA0 a"};
        static const char *const merges_bad[] = {"a b", "\xC4\xA0 z"};
        s = gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
        if (!s && breakage != PRE_MISSING)
            s = gguf_writer_set_str(w, "tokenizer.ggml.pre",
                                    breakage == PRE_LLAMA_BPE ? "llama-bpe"
                                    : breakage == PRE_GPT4O  ? "gpt-4o"
                                    : breakage == PRE_LLAMA4 ? "llama4"
                                    : breakage == PRE_TEKKEN ? "tekken"
                                    : breakage == PRE_SMOLLM ? "smollm"
                                    : breakage == PRE_GLM4   ? "glm4"
                                    : breakage == PRE_NAMED  ? named_pre
                                                             : "gpt-2");
        if (!s && breakage != BREAK_NO_MERGES)
            s = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
                                        breakage == BREAK_BAD_MERGE ? merges_bad : merges_ok, 2);
        if (!s) s = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 6);
        if (!s) s = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 6);
    }
    if (!s && breakage == BREAK_TOKENS_TYPE)
        s = gguf_writer_set_arr(w, "tokenizer.ggml.tokens", GGUF_TYPE_INT32, types, (uint64_t)n);
    else if (!s && breakage != BREAK_NO_TOKENS)
        s = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, (uint64_t)n);
    if (!s)
        s = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores,
                                (uint64_t)(breakage == BREAK_SHORT_SCORES ? n - 1 : n));
    if (!s) s = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n);
    if (!s && breakage == BREAK_BOS_RANGE) s = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 5000);
    if (!s && breakage == BREAK_BOS_TYPE) s = gguf_writer_set_str(w, "tokenizer.ggml.bos_token_id", "1");
    if (!s) s = gguf_writer_write(w, path, NULL, NULL, NULL, NULL);
    gguf_writer_free(w);
    return s;
}

/* Loads the synthetic vocab; returns the status and keeps the message. */
static lb_status try_load(int bpe, int breakage, lb_tokenizer **t, char *msg, size_t msg_size) {
    const char *path = lb_test_tmp("tok_synthetic.gguf");
    *t = NULL;
    lb_status s = write_vocab(path, bpe, breakage);
    CHECK_MSG(s == LB_OK, "writing the synthetic vocab: %s", lb_last_error());
    if (s) return s;
    gguf_file *g = NULL;
    s = gguf_open(path, &g);
    CHECK_MSG(s == LB_OK, "gguf_open synthetic: %s", lb_last_error());
    if (s) return s;
    s = lb_tokenizer_load(g, t);
    snprintf(msg, msg_size, "%s", lb_last_error());
    gguf_close(g);
    remove(path);
    return s;
}

static void expect_reject(int bpe, int breakage, lb_status want, const char *needle) {
    lb_tokenizer *t = NULL;
    char msg[1024];
    lb_status s = try_load(bpe, breakage, &t, msg, sizeof msg);
    CHECK_MSG(s == want && t == NULL, "breakage %d: got status %d", breakage, (int)s);
    CHECK_MSG(strstr(msg, needle) != NULL, "breakage %d: message '%s' lacks '%s'", breakage, msg, needle);
    printf("rejected as expected: %s\n", msg);
    lb_tokenizer_free(t);
}

static void test_synthetic(void) {
    expect_reject(0, BREAK_NO_TOKENS, LB_ERR_FORMAT, "tokenizer.ggml.tokens is missing");
    expect_reject(0, BREAK_TOKENS_TYPE, LB_ERR_FORMAT, "tokenizer.ggml.tokens is not an array of strings");
    expect_reject(0, BREAK_SHORT_SCORES, LB_ERR_FORMAT, "tokenizer.ggml.scores has 266 entries for 267 tokens");
    expect_reject(0, BREAK_BOS_RANGE, LB_ERR_FORMAT, "tokenizer.ggml.bos_token_id = 5000 is out of range");
    expect_reject(0, BREAK_BOS_TYPE, LB_ERR_FORMAT, "tokenizer.ggml.bos_token_id should be an integer");
    expect_reject(0, BREAK_DUP_TOKEN, LB_ERR_FORMAT, "duplicate token");
    expect_reject(0, BREAK_BAD_MODEL, LB_ERR_UNSUPPORTED, "'bert' is not supported");
    expect_reject(1, BREAK_BAD_MERGE, LB_ERR_FORMAT, "tokenizer.ggml.merges[1]");
    expect_reject(1, BREAK_NO_MERGES, LB_ERR_FORMAT, "without tokenizer.ggml.merges");

    /* SPM with a user-defined token and a name-detected end-of-turn token */
    lb_tokenizer *t = NULL;
    char msg[1024];
    if (try_load(0, BREAK_NONE, &t, msg, sizeof msg) == LB_OK) {
        /* ids: 259 "▁", 260 "a", 261 "b", 262 "▁a", 263 "<ud>", 264 "<|im_end|>", 265 "ab", 266 "▁b" */
        int32_t b = 261, spa = 262, ud = 263, im_end = 264, spb = 266;
        CHECK(lb_tokenizer_is_eog(t, im_end) && lb_tokenizer_is_eog(t, 2));
        size_t len;
        lb_tokenizer_piece(t, im_end, &len);
        CHECK(len == 0); /* became a control token */
        int32_t *ids = NULL;
        /* "<ud>" is cut out first; the text after it gets the dummy space too */
        int n = encode(t, "a<ud>b", 6, 1, &ids);
        const int32_t want[] = {1, spa, ud, spb};
        CHECK(n == 4 && memcmp(ids, want, sizeof want) == 0);
        if (n != 4 || memcmp(ids, want, sizeof want) != 0) print_ids("ud got", ids, n);
        CHECK(roundtrip_ok(t, ids, n, "a<ud>b", 6));
        free(ids);
        n = encode(t, "<ud><ud>ab", 10, 0, &ids);
        const int32_t want2[] = {ud, ud, spa, b}; /* "▁a" (score -3) beats "ab" (-6) */
        CHECK(n == 4 && memcmp(ids, want2, sizeof want2) == 0);
        if (n != 4 || memcmp(ids, want2, sizeof want2) != 0) print_ids("ud2 got", ids, n);
        CHECK(roundtrip_ok(t, ids, n, "<ud><ud>ab", 10));
        free(ids);
        /* "<|im_end|>" is control now, so it is plain text in the input */
        n = encode(t, "b<|im_end|>", 11, 0, &ids);
        for (int i = 0; i < n; i++) CHECK(ids[i] != im_end);
        CHECK(roundtrip_ok(t, ids, n, "b<|im_end|>", 11));
        free(ids);
        lb_tokenizer_free(t);
    }

    /* tiny gpt2 vocab: merges a+b and Ġ+a; <|endoftext|> is eos/bos */
    if (try_load(1, BREAK_NONE, &t, msg, sizeof msg) == LB_OK) {
        int32_t *ids = NULL;
        int n = encode(t, "ab a c", 6, 1, &ids);
        const int32_t want[] = {4, 5, 3, 2}; /* "ab" "Ġa" "Ġ" "c" */
        CHECK(n == 4 && memcmp(ids, want, sizeof want) == 0);
        if (n != 4 || memcmp(ids, want, sizeof want) != 0) print_ids("bpe got", ids, n);
        CHECK(roundtrip_ok(t, ids, n, "ab a c", 6));
        free(ids);
        /* a byte with no token is dropped, as in llama.cpp */
        n = encode(t, "ad", 2, 0, &ids);
        CHECK(n == 1 && ids[0] == 0);
        free(ids);
        CHECK(lb_tokenizer_is_eog(t, 6) && lb_tokenizer_eos(t) == 6);
        /* no merge makes "abc": gpt2 gives "ab" "c" */
        n = encode(t, "abc", 3, 0, &ids);
        CHECK(n == 2 && ids[0] == 4 && ids[1] == 2);
        free(ids);
        lb_tokenizer_free(t);
    }
    /* llama-bpe: a pre-token that is a whole token skips merging
     * (ignore_merges), and BOS is added by default */
    if (try_load(1, PRE_LLAMA_BPE, &t, msg, sizeof msg) == LB_OK) {
        CHECK(lb_tokenizer_add_bos(t) == 1);
        int32_t *ids = NULL;
        int n = encode(t, "abc", 3, 1, &ids);
        CHECK(n == 2 && ids[0] == 6 && ids[1] == 7);
        free(ids);
        lb_tokenizer_free(t);
    }
    /* the o200k, tekken and smollm names: their regexes, and tekken's llama.cpp
     * settings (ignore_merges, BOS) */
    const int named[5] = {PRE_GPT4O, PRE_LLAMA4, PRE_TEKKEN, PRE_SMOLLM, PRE_GLM4};
    for (int i = 0; i < 5; i++) {
        const lb_status ls = try_load(1, named[i], &t, msg, sizeof msg);
        CHECK_MSG(ls == LB_OK, "%s", msg);
        if (ls == LB_OK) {
            CHECK(t->pre == (named[i] == PRE_TEKKEN   ? LB_PRE_TEKKEN
                             : named[i] == PRE_SMOLLM ? LB_PRE_SMOLLM
                             : named[i] == PRE_GLM4   ? LB_PRE_LLAMA3
                                                      : LB_PRE_GPT4O));
            CHECK(t->ignore_merges == (named[i] == PRE_TEKKEN));
            if (named[i] == PRE_TEKKEN) CHECK(lb_tokenizer_add_bos(t) == 1);
            lb_tokenizer_free(t);
        }
    }
    /* the other names llama.cpp gives SmolLM's regex pair */
    static const char *const digits_first[] = {"starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"};
    static const char *const deepseek[2] = {"deepseek-v3", "deepseek-llm"};
    for (int i = 0; i < 2; i++) {
        named_pre = deepseek[i];
        CHECK_MSG(try_load(1, PRE_NAMED, &t, msg, sizeof msg) == LB_OK && t &&
                      t->pre == (i ? LB_PRE_DEEPSEEK_LLM : LB_PRE_DEEPSEEK3), "%s: %s", deepseek[i], msg);
        lb_tokenizer_free(t);
        t = NULL;
    }
    for (size_t i = 0; i < sizeof digits_first / sizeof digits_first[0]; i++) {
        named_pre = digits_first[i];
        const lb_status ls = try_load(1, PRE_NAMED, &t, msg, sizeof msg);
        CHECK_MSG(ls == LB_OK && t && t->pre == LB_PRE_SMOLLM, "pre '%s': %s", digits_first[i], msg);
        lb_tokenizer_free(t);
        t = NULL;
    }
    /* <|end|> ends generation (Phi-3), except beside <|return|> and <|call|>
     * (gpt-oss: it closes a message, not the turn), where it becomes a
     * user-defined token, as llama.cpp does */
    if (try_load(1, VOCAB_END, &t, msg, sizeof msg) == LB_OK) {
        CHECK(lb_tokenizer_is_eog(t, 8));
        lb_tokenizer_free(t);
    }
    if (try_load(1, VOCAB_HARMONY, &t, msg, sizeof msg) == LB_OK) {
        CHECK(!lb_tokenizer_is_eog(t, 8) && lb_tokenizer_is_eog(t, 9) && lb_tokenizer_is_eog(t, 10));
        CHECK(t->attr[8] == LB_ATTR_USER_DEFINED && lb_tokenizer_is_eog(t, 6));
        lb_tokenizer_free(t);
    }
    /* no tokenizer.ggml.pre: gpt2's regex (with a note in the log) */
    if (try_load(1, PRE_MISSING, &t, msg, sizeof msg) == LB_OK) {
        int32_t *ids = NULL;
        int n = encode(t, "ab a c", 6, 1, &ids);
        const int32_t want[] = {4, 5, 3, 2};
        CHECK(n == 4 && memcmp(ids, want, sizeof want) == 0);
        free(ids);
        lb_tokenizer_free(t);
    }
}

static void test_speed(void) {
    const char *data = lb_test_shared("data/wiki.test.raw");
    if (!lb_test_have(data)) return;
    char *text = NULL;
    size_t len = 0;
    CHECK_OK(lb_read_file(data, &text, &len));
    if (!text) return;
    const char *vocabs[] = {"tokenizer-tests/ggml-vocab-llama-spm.gguf", "tokenizer-tests/ggml-vocab-gpt-2.gguf"};
    for (int v = 0; v < 2; v++) {
        if (!lb_test_have(lb_test_shared(vocabs[v]))) continue;
        lb_tokenizer *t = load_tok(lb_test_shared(vocabs[v]), NULL);
        if (!t) continue;
        int32_t *ids = NULL;
        double t0 = lb_time_s();
        int n = encode(t, text, len, 1, &ids);
        double dt = lb_time_s() - t0;
        printf("%s: %zu bytes -> %d tokens in %.3f s\n", vocabs[v], len, n, dt);
        CHECK_MSG(SLOW_BUILD || dt < 3.0, "encoding took %.2f s", dt);
        CHECK(n > 200000);
        CHECK(roundtrip_ok(t, ids, n, text, len));
        free(ids);
        lb_tokenizer_free(t);
    }
    free(text);
}

int main(void) {
    lb_log_level = 0;
    run_vocab_cases("ggml-vocab-llama-spm.gguf", NULL, NULL, -1, 46);
    run_vocab_cases("ggml-vocab-gpt-2.gguf", NULL, NULL, -1, 46);
    /* words and ids from ik_llama.cpp (scripts/make-pretok-fixture.py) */
    run_split_cases(LB_PRE_GPT4O, LB_TEST_DATA_DIR "/pretok/gpt-4o.words", 50);
    run_split_cases(LB_PRE_TEKKEN, LB_TEST_DATA_DIR "/pretok/tekken.words", 50);
    run_split_cases(LB_PRE_SMOLLM, LB_TEST_DATA_DIR "/pretok/smollm.words", 50);
    run_split_cases(LB_PRE_DEEPSEEK3, LB_TEST_DATA_DIR "/pretok/deepseek-v3.words", 50);
    run_split_cases(LB_PRE_DEEPSEEK_LLM, LB_TEST_DATA_DIR "/pretok/deepseek-llm.words", 50);
    run_vocab_cases("ggml-vocab-gpt-2.gguf", LB_TEST_DATA_DIR "/pretok/cases.inp",
                    LB_TEST_DATA_DIR "/pretok/gpt-4o.out", LB_PRE_GPT4O, 50);
    run_vocab_cases("ggml-vocab-gpt-2.gguf", LB_TEST_DATA_DIR "/pretok/cases.inp",
                    LB_TEST_DATA_DIR "/pretok/tekken.out", LB_PRE_TEKKEN, 50);
    run_vocab_cases("ggml-vocab-gpt-2.gguf", LB_TEST_DATA_DIR "/pretok/cases.inp",
                    LB_TEST_DATA_DIR "/pretok/smollm.out", LB_PRE_SMOLLM, 50);
    run_vocab_cases("ggml-vocab-gpt-2.gguf", LB_TEST_DATA_DIR "/pretok/cases.inp",
                    LB_TEST_DATA_DIR "/pretok/deepseek-v3.out", LB_PRE_DEEPSEEK3, 50);
    run_vocab_cases("ggml-vocab-gpt-2.gguf", LB_TEST_DATA_DIR "/pretok/cases.inp",
                    LB_TEST_DATA_DIR "/pretok/deepseek-llm.out", LB_PRE_DEEPSEEK_LLM, 50);
    test_spm_details();
    test_gpt2_details();
    test_stories();
    test_pretokenizers();
    test_synthetic();
    test_speed();
    return lb_test_result("test_tokenizer");
}
