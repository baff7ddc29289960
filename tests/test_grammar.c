/* Grammar-constrained sampling (src/grammar/): GBNF errors name their line
 * and column; texts fed token by token through stories260K's vocabulary are
 * taken or refused as the grammar says (byte tokens cut characters in two);
 * the JSON grammar and JSON Schemas turned into grammars take valid
 * instances and refuse invalid ones; sampling under a grammar from random
 * logits only ever writes sentences of it, ended by end-of-generation. */
#include "grammar/grammar_impl.h"
#include "grammar/json_schema.h"
#include "import/json.h"
#include "lowbit.h"
#include "test_util.h"

static void parse_error(const char *gbnf, const char *want) {
    lb_grules r;
    const lb_status s = lb_grules_parse(gbnf, &r);
    CHECK_MSG(s == LB_ERR_ARG && strstr(lb_last_error(), want), "%s: got %d '%s', want '%s'", gbnf, (int)s,
              lb_last_error(), want);
    if (s == LB_OK) lb_grules_free(&r);
}

static lb_model *model;

/* Feeds text token by token; 1 when every token is taken and the text is a
 * whole sentence, 0 when refused or incomplete. */
static int takes(const char *gbnf, const char *text) {
    lb_grammar *g = NULL;
    if (lb_grammar_new(model, gbnf, &g)) {
        fprintf(stderr, "grammar: %s\n", lb_last_error());
        return -1;
    }
    int ok = 1;
    for (const char *p = text; *p && ok;) { /* the longest piece of the vocabulary at p (SPM would add a space) */
        int best = -1;
        size_t best_len = 0;
        for (int t = 0; t < lb_model_n_vocab(model); t++) {
            size_t len;
            const char *pc = lb_token_to_piece(model, t, &len);
            if (len > best_len && !strncmp(p, pc, len)) best = t, best_len = len;
        }
        ok = best >= 0 && lb_grammar_accept(g, best) == LB_OK;
        p += best_len ? best_len : 1;
    }
    ok = ok && lb_grammar_complete(g) > 0 && lb_grammar_allows(g, lb_token_eos(model));
    lb_grammar_free(g);
    return ok;
}

/* Feeds text byte by byte through the byte tokens <0xHH> (every character
 * cut into its bytes): the same answers as whole tokens. */
static int takes_bytes(const char *gbnf, const char *text) {
    lb_grammar *g = NULL;
    if (lb_grammar_new(model, gbnf, &g)) return -1;
    int ok = 1;
    for (const unsigned char *p = (const unsigned char *)text; *p && ok; p++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", *p);
        int32_t id[4];
        int n = 0;
        int32_t tok = -1;
        for (int t = 0; t < lb_model_n_vocab(model) && tok < 0; t++) { /* the byte token: a one-byte piece */
            size_t len;
            const char *pc = lb_token_to_piece(model, t, &len);
            if (len == 1 && (unsigned char)pc[0] == *p && t < 259) tok = t;
        }
        (void)id, (void)n;
        ok = tok >= 0 && lb_grammar_accept(g, tok) == LB_OK;
    }
    ok = ok && lb_grammar_complete(g) > 0;
    lb_grammar_free(g);
    return ok;
}

static void both(const char *gbnf, const char *text, int want) {
    const int a = takes(gbnf, text), b = takes_bytes(gbnf, text);
    CHECK_MSG(a == want && b == want, "'%s' under '%s': tokens %d, bytes %d, want %d", text, gbnf, a, b, want);
}

static void schema_case(const char *schema, const char *const *good, const char *const *bad) {
    char *gbnf = NULL;
    CHECK_OK(lb_json_schema_to_grammar(schema, strlen(schema), &gbnf));
    if (!gbnf) return;
    for (; *good; good++) {
        const int r = takes(gbnf, *good);
        CHECK_MSG(r == 1, "schema %s: valid %s refused (%d)", schema, *good, r);
    }
    for (; *bad; bad++) CHECK_MSG(takes(gbnf, *bad) == 0, "schema %s: invalid %s taken", schema, *bad);
    free(gbnf);
}

static void schema_error(const char *schema, const char *want) {
    char *gbnf = NULL;
    const lb_status s = lb_json_schema_to_grammar(schema, strlen(schema), &gbnf);
    CHECK_MSG(s != LB_OK && strstr(lb_last_error(), want), "%s: got '%s', want '%s'", schema, lb_last_error(), want);
    free(gbnf);
}

/* Samples under g from random logits until end-of-generation; the text. */
static int sample_text(const char *gbnf, uint64_t seed, char *out, size_t cap) {
    lb_grammar *g = NULL;
    if (lb_grammar_new(model, gbnf, &g)) return -1;
    lb_sampler_params sp = lb_sampler_default_params();
    sp.temp = 1.0f, sp.top_k = 0, sp.top_p = 1.0f, sp.min_p = 0.0f, sp.seed = seed, sp.repeat_penalty = 1.0f;
    lb_sampler *s = NULL;
    const int V = lb_model_n_vocab(model);
    lb_sampler_new(&sp, V, &s);
    float *logits = malloc((size_t)V * sizeof *logits);
    uint64_t x = seed * 2654435761u + 1;
    size_t n = 0;
    int ended = 0;
    for (int step = 0; step < 400 && !ended; step++) {
        for (int v = 0; v < V; v++) { /* a random distribution, end-of-text unlikely until forced */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            logits[v] = (float)(x % 1000) / 250.0f;
        }
        logits[lb_token_eos(model)] = step > 60 ? 8.0f : -4.0f;
        const int32_t t = lb_sampler_sample_grammar(s, logits, g);
        if (t < 0 || lb_grammar_accept(g, t)) break;
        if (lb_token_is_eog(model, t)) { ended = 1; break; }
        size_t len;
        const char *pc = lb_token_to_piece(model, t, &len);
        if (n + len < cap) memcpy(out + n, pc, len), n += len;
    }
    out[n] = 0;
    free(logits);
    lb_sampler_free(s);
    lb_grammar_free(g);
    return ended;
}

int main(void) {
    parse_error("root ::= foo", "rule 'foo' is used but not defined");
    parse_error("a ::= \"x\"", "no rule named 'root'");
    parse_error("root ::= root \"x\" | \"y\"", "left-recursive");
    parse_error("root ::= a\na ::= \"b\"? root", "left-recursive");
    parse_error("root ::= \"x\"\nroot ::= \"y\"", "defined twice");
    parse_error("root ::= \"abc", "line 1, column 10: unterminated literal");
    parse_error("root ::= \"x\"\n  # comment\nfoo ::= * \"x\"", "line 3, column 9: '*' follows no symbol");
    parse_error("root ::= [z-a]", "range end below its start");
    parse_error("root ::= \"\\q\"", "unknown escape");
    parse_error("root ::= \"x\"{3,2}", "upper count");
    parse_error("root ::= ( \"x\"", "expected )");
    parse_error("root \"x\"", "expected ::=");

    const char *path = lb_test_shared("models/stories260K-f32.gguf");
    if (!lb_test_have(path)) {
        printf("SKIP (model-level checks): %s not found\n", path);
        return lb_test_result("test_grammar");
    }
    CHECK_OK(lb_model_load(path, NULL, &model));
    if (!model) return lb_test_result("test_grammar");

    const char *g1 = "root ::= \"a\" [0-9]+ ( \"x\" | \"yz\" )? tail\ntail ::= | \"!\" # optional\n";
    both(g1, "a1", 1);
    both(g1, "a123yz!", 1);
    both(g1, "a12x", 1);
    both(g1, "a", 0);
    both(g1, "ab", 0);
    both(g1, "a1y", 0);
    const char *g2 = "root ::= [^a-c\\n]{2,3} \".\"";
    both(g2, "xy.", 1);
    both(g2, "xyz.", 1);
    both(g2, "x.", 0);
    both(g2, "xyzw.", 0);
    both(g2, "ab.", 0);
    const char *g3 = "root ::= \"é\" [α-ω]* \"→\"";
    both(g3, "éαβ→", 1);
    both(g3, "é→", 1);
    both(g3, "éa→", 0);
    both(g3, "e→", 0);
    const char *g4 = "root ::= (\n  \"a\" |\n  \"b\"\n) . \"\\x41\\u00e9\"";
    both(g4, "a\nAé", 1);
    both(g4, "bzAé", 1);
    both(g4, "czAé", 0);

    const char *json = lb_grammar_json(0), *obj = lb_grammar_json(1);
    const char *good_json[] = {"{}", "[]", "{\"a\": [1, -2.5e3, true, null], \"b\": {\"c\": \"\\u00e9\\n\"}}", "\"x\"",
                               "0", "-0.5", "[\n  1,\n  2\n]"};
    for (size_t i = 0; i < sizeof good_json / sizeof *good_json; i++) both(json, good_json[i], 1);
    const char *bad_json[] = {"{a}", "[1,]", "01", "\"\\x\"", "{\"a\" 1}", "tru", "[1 2]", "\"tab\there\""};
    for (size_t i = 0; i < sizeof bad_json / sizeof *bad_json; i++) both(json, bad_json[i], 0);
    both(obj, "{\"k\": 1}", 1);
    both(obj, "[1]", 0);
    both(obj, "{} ", 0); /* nothing after a whole value: end-of-generation alone may follow */
    {
        lb_grammar *g = NULL;
        CHECK_OK(lb_grammar_new(model, obj, &g));
        CHECK(lb_grammar_complete(g) == 0 && !lb_grammar_allows(g, lb_token_eos(model)));
        int32_t lb = -1, rb = -1;
        for (int t = 0; t < lb_model_n_vocab(model); t++) {
            size_t len;
            const char *pc = lb_token_to_piece(model, t, &len);
            if (len == 1 && pc[0] == '{') lb = t;
            if (len == 1 && pc[0] == '}') rb = t;
        }
        CHECK_OK(lb_grammar_accept(g, lb));
        CHECK(lb_grammar_complete(g) == 0);
        CHECK_OK(lb_grammar_accept(g, rb));
        CHECK(lb_grammar_complete(g) == 2 && lb_grammar_allows(g, lb_token_eos(model)) && !lb_grammar_allows(g, rb));
        CHECK(lb_grammar_accept(g, rb) == LB_ERR_ARG);
        lb_grammar_free(g);
    }
    { /* forced tool calls: the wrapper, a tool's name, its arguments */
        const char *names[] = {"get_w", "say"};
        const char *schemas[] = {"{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}",
                                 "{\"type\": \"object\"}"};
        char *many = NULL, *one = NULL;
        const lb_tool_call_format hermes = {"arguments", "<tc>\n", "\n</tc>", "\n", "", "", 1},
                                  hermes1 = {"arguments", "<tc>\n", "\n</tc>", "\n", "", "", 0},
                                  llama_f = {"parameters", "", "", "", "", "", 0},
                                  mistral_f = {"arguments", "", "", ", ", "[", "]", 1};
        CHECK_OK(lb_json_tool_calls_grammar(2, names, schemas, &hermes, &many));
        CHECK_OK(lb_json_tool_calls_grammar(1, names + 1, schemas + 1, &hermes1, &one));
        if (many && one) {
            const char *call1 = "<tc>\n{\"name\": \"get_w\", \"arguments\": {\"city\": \"Oslo\"}}\n</tc>";
            const char *call2 = "<tc>\n{\"name\": \"say\", \"arguments\": {\"x\": [1]}}\n</tc>";
            char two[256];
            snprintf(two, sizeof two, "%s\n%s", call1, call2);
            CHECK(takes(many, call1) == 1 && takes(many, call2) == 1 && takes(many, two) == 1);
            CHECK(takes(one, call2) == 1 && takes(one, call1) == 0 && takes(one, two) == 0);
            CHECK(takes(many, "<tc>\n{\"name\": \"get_w\", \"arguments\": {}}\n</tc>") == 0); /* city required */
            CHECK(takes(many, "<tc>\n{\"name\": \"other\", \"arguments\": {}}\n</tc>") == 0);
            CHECK(takes(many, "hello") == 0);
        }
        free(many);
        free(one);
        char *llama = NULL; /* Llama 3.1's: the object alone, "parameters" */
        CHECK_OK(lb_json_tool_calls_grammar(2, names, schemas, &llama_f, &llama));
        if (llama) {
            CHECK(takes(llama, "{\"name\": \"get_w\", \"parameters\": {\"city\": \"Oslo\"}}") == 1);
            CHECK(takes(llama, "{\"name\": \"get_w\", \"arguments\": {\"city\": \"Oslo\"}}") == 0);
        }
        free(llama);
        char *mistral = NULL; /* Mistral v3's: a JSON list of calls */
        CHECK_OK(lb_json_tool_calls_grammar(2, names, schemas, &mistral_f, &mistral));
        if (mistral) {
            CHECK(takes(mistral, "[{\"name\": \"get_w\", \"arguments\": {\"city\": \"Oslo\"}}]") == 1);
            CHECK(takes(mistral, "[{\"name\": \"say\", \"arguments\": {}}, {\"name\": \"get_w\", \"arguments\": "
                                 "{\"city\": \"\"}}]") == 1);
            CHECK(takes(mistral, "[]") == 0 && takes(mistral, "{\"name\": \"say\", \"arguments\": {}}") == 0);
        }
        free(mistral);
        const char *bad[] = {"{\"type\": \"object\", \"patternProperties\": {}}"};
        char *g = NULL;
        CHECK(lb_json_tool_calls_grammar(1, names, bad, &hermes1, &g) == LB_ERR_UNSUPPORTED &&
              strstr(lb_last_error(), "tool 'get_w'") && strstr(lb_last_error(), "patternProperties"));
        free(g);
    }

    /* schemas */
    {
        const char *good[] = {"{\"name\": \"x\", \"age\": 3}", "{\"name\": \"x\", \"age\": 3, \"tags\": [\"a\", \"b\"]}",
                              "{\"name\": \"\", \"age\": -1, \"kind\": \"cat\"}",
                              "{\"name\": \"x\", \"age\": 3, \"tags\": [], \"kind\": \"dog\"}", NULL};
        const char *bad[] = {"{\"age\": 3, \"name\": \"x\"}", "{\"name\": \"x\"}", "{\"name\": \"x\", \"age\": 3.5}",
                             "{\"name\": \"x\", \"age\": 3, \"kind\": \"cow\"}",
                             "{\"name\": \"x\", \"age\": 3, \"kind\": \"dog\", \"tags\": []}",
                             "{\"name\": 1, \"age\": 3}", "{\"name\": \"x\", \"age\": 3, \"extra\": 1}", NULL};
        schema_case("{\"type\": \"object\", \"title\": \"Pet\", \"properties\": {\"name\": {\"type\": \"string\"},"
                    " \"age\": {\"type\": \"integer\"}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
                    " \"kind\": {\"enum\": [\"cat\", \"dog\"]}}, \"required\": [\"name\", \"age\"]}",
                    good, bad);
    }
    {
        const char *good[] = {"{}", "{\"b\": true}", "{\"a\": null, \"b\": false}", "{\"a\": \"s\"}", NULL};
        const char *bad[] = {"{\"b\": true, \"a\": null}", "{,}", "{\"a\": 1}", NULL};
        schema_case("{\"properties\": {\"a\": {\"type\": [\"string\", \"null\"]}, \"b\": {\"type\": \"boolean\"}}}",
                    good, bad);
    }
    {
        const char *good[] = {"{\"v\": 1, \"kids\": [{\"v\": 2, \"kids\": []}]}", "{\"v\": 1, \"kids\": []}", NULL};
        const char *bad[] = {"{\"v\": 1}", "{\"v\": 1, \"kids\": [{\"v\": 2}]}", NULL};
        schema_case("{\"$ref\": \"#/$defs/node\", \"$defs\": {\"node\": {\"type\": \"object\", \"properties\":"
                    " {\"v\": {\"type\": \"number\"}, \"kids\": {\"type\": \"array\", \"items\": {\"$ref\":"
                    " \"#/$defs/node\"}}}, \"required\": [\"v\", \"kids\"]}}}",
                    good, bad);
    }
    {
        const char *good[] = {"[1, 2]", "[1, 2, 3]", "\"ab\"", "\"abcd\"", NULL};
        const char *bad[] = {"[1]", "[1, 2, 3, 4]", "\"a\"", "\"abcde\"", "[1, \"2\"]", NULL};
        schema_case("{\"anyOf\": [{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 2,"
                    " \"maxItems\": 3}, {\"type\": \"string\", \"minLength\": 2, \"maxLength\": 4}]}",
                    good, bad);
    }
    {
        const char *good[] = {"{\"q\": \"a\\\"b\"}", NULL};
        const char *bad[] = {"{\"q\": \"ab\"}", NULL};
        schema_case("{\"type\": \"object\", \"properties\": {\"q\": {\"const\": \"a\\\"b\"}}, \"required\": [\"q\"]}",
                    good, bad);
    }
    { /* patterns: a string's value, as JSON text */
        static const struct { const char *pattern; const char *good[5], *bad[5]; } pats[] = {
            {"^[0-9]{3}-[0-9]{4}$", {"\"555-1234\"", NULL}, {"\"5551234\"", "\"555-12345\"", "\"a55-1234\"", NULL}},
            {"^(yes|no)$", {"\"yes\"", "\"no\"", NULL}, {"\"yesno\"", "\"maybe\"", "\"\"", NULL}},
            {"^-?\\d+(\\.\\d+)?$", {"\"12\"", "\"-0.5\"", NULL}, {"\"1.\"", "\".5\"", "\"1e3\"", NULL}},
            {"^[A-Z][a-z]*$", {"\"Oslo\"", "\"A\"", NULL}, {"\"oslo\"", "\"OSLO\"", NULL}},
            {"ab", {"\"ab\"", "\"xxabyy\"", NULL}, {"\"a b\"", "\"ba\"", NULL}},
            {"^a\"b\\\\c$", {"\"a\\\"b\\\\c\"", NULL}, {"\"a\\\"bc\"", NULL}},
            {"^[^a-c]+?$", {"\"xyz\"", "\"é\"", NULL}, {"\"xaz\"", "\"\"", NULL}},
            {"^\\w{2,3}\\s\\S$", {"\"ab c\"", "\"a_1 !\"", NULL}, {"\"a c\"", "\"abcd e\"", "\"ab  \"", NULL}},
            {"^(?:ab)*c{2}$", {"\"cc\"", "\"ababcc\"", NULL}, {"\"abc\"", "\"abcc c\"", NULL}},
            {"^x{2,}.$", {"\"xxq\"", "\"xxxxx\"", NULL}, {"\"xq\"", NULL}},
            {"^a{x}$", {"\"a{x}\"", NULL}, {"\"a\"", NULL}}, /* not a count: literal braces, as ECMA reads them */
        };
        for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
            char schema[256], *gbnf = NULL;
            char esc[128];
            size_t k = 0;
            for (const char *q = pats[i].pattern; *q && k + 2 < sizeof esc; q++) { /* as a JSON string */
                if (*q == '"' || *q == '\\') esc[k++] = '\\';
                esc[k++] = *q;
            }
            esc[k] = 0;
            snprintf(schema, sizeof schema, "{\"type\": \"string\", \"pattern\": \"%s\"}", esc);
            CHECK_MSG(lb_json_schema_to_grammar(schema, strlen(schema), &gbnf) == LB_OK, "%s: %s", schema, lb_last_error());
            if (!gbnf) continue;
            for (int g = 0; pats[i].good[g]; g++)
                CHECK_MSG(takes(gbnf, pats[i].good[g]) == 1, "pattern %s: %s refused", pats[i].pattern, pats[i].good[g]);
            for (int g = 0; pats[i].bad[g]; g++)
                CHECK_MSG(takes(gbnf, pats[i].bad[g]) == 0, "pattern %s: %s taken", pats[i].pattern, pats[i].bad[g]);
            free(gbnf);
        }
        schema_error("{\"type\": \"string\", \"pattern\": \"^(?=a)b$\"}", "lookarounds");
        schema_error("{\"type\": \"string\", \"pattern\": \"^(a)\\\\1$\"}", "backreferences");
        schema_error("{\"type\": \"string\", \"pattern\": \"^a\\\\bc$\"}", "word boundaries");
        schema_error("{\"type\": \"string\", \"pattern\": \"^a^b$\"}", "other than at the pattern's ends");
        schema_error("{\"type\": \"string\", \"pattern\": \"^[a-\"}", "unterminated character class");
        schema_error("{\"type\": \"string\", \"pattern\": \"^a)$\"}", "unmatched ')'");
        schema_error("{\"type\": \"string\", \"pattern\": \"a\", \"maxLength\": 3}", "pattern with minLength");
        schema_error("{\"pattern\": \"a\"}", "other than a string's");
        schema_error("{\"type\": \"string\", \"pattern\": \"^(a*)*$\"}", "can match the empty string");
        schema_error("{\"type\": \"string\", \"pattern\": \"^a{5,3}$\"}", "upper count below the lower");
    }
    { /* integer bounds: every integer of a window taken exactly when in range */
        static const struct { const char *bounds; long long lo, hi; } rs[] = {
            {"\"minimum\": 0, \"maximum\": 120", 0, 120},      {"\"minimum\": -5, \"maximum\": 37", -5, 37},
            {"\"minimum\": 18", 18, 1LL << 50},                  {"\"exclusiveMaximum\": 0", -(1LL << 50), -1},
            {"\"minimum\": 99, \"maximum\": 1001", 99, 1001},    {"\"minimum\": -120, \"maximum\": -7", -120, -7},
            {"\"exclusiveMinimum\": 2.5, \"maximum\": 10.7", 3, 10}, {"\"minimum\": 7, \"maximum\": 7", 7, 7},
        };
        for (size_t i = 0; i < sizeof rs / sizeof *rs; i++) {
            char schema[160], *gbnf = NULL;
            snprintf(schema, sizeof schema, "{\"type\": \"integer\", %s}", rs[i].bounds);
            CHECK_MSG(lb_json_schema_to_grammar(schema, strlen(schema), &gbnf) == LB_OK, "%s: %s", schema, lb_last_error());
            if (!gbnf) continue;
            int wrong = 0;
            lb_grammar *g = NULL;
            CHECK_OK(lb_grammar_new(model, gbnf, &g));
            for (long long x = -150; x <= 1100 && g; x++) {
                char num[32];
                snprintf(num, sizeof num, "%lld", x);
                const int want = x >= rs[i].lo && x <= rs[i].hi, got = takes(gbnf, num);
                if (got != want && wrong++ < 3) fprintf(stderr, "%s: %s %s\n", schema, num, got ? "taken" : "refused");
            }
            lb_grammar_free(g);
            CHECK_MSG(wrong == 0, "%s: %d integers wrong", schema, wrong);
            CHECK(takes(gbnf, "007") == 0 && takes(gbnf, "-0") == 0);
            free(gbnf);
        }
        schema_error("{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 3}", "maximum below its minimum");
        schema_error("{\"type\": \"number\", \"minimum\": 1}", "other than an integer's");
        schema_error("{\"type\": \"integer\", \"minimum\": 1e16}", "beyond 10^15");
        schema_error("{\"type\": \"integer\", \"exclusiveMaximum\": -4e64}", "beyond 10^15"); /* (no cast first) */
    }
    schema_error("{\"type\": \"integer\", \"multipleOf\": 3}", "keyword \"multipleOf\"");
    schema_error("{\"type\": \"string\", \"patternProperties\": {}}", "keyword \"patternProperties\"");
    schema_error("{\"$ref\": \"#/$defs/missing\"}", "names no definition");
    schema_error("{\"type\": \"object\", \"properties\": {\"b\": {}}, \"required\": [\"a\"]}", "required \"a\" is not among");
    schema_error("{\"type\": \"thing\"}", "type \"thing\"");
    schema_error("{\"type\": ", "json schema");

    /* sampling under a grammar from random logits: always a sentence of it */
    const char *sgbnf = NULL;
    char *pet = NULL;
    const char *pet_schema = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}, \"ok\": {\"type\":"
                             " \"boolean\"}, \"s\": {\"type\": \"string\", \"maxLength\": 6}}, \"required\": [\"n\", \"ok\"]}";
    CHECK_OK(lb_json_schema_to_grammar(pet_schema, strlen(pet_schema), &pet));
    for (int k = 0; k < 3; k++) {
        sgbnf = k == 0 ? obj : k == 1 ? pet : g1;
        for (uint64_t seed = 1; seed <= 4; seed++) {
            char text[4096];
            const int ended = sample_text(sgbnf, seed + 10 * (uint64_t)k, text, sizeof text);
            /* the plain object grammar's strings have no bound: random logits may not close them in 400 steps */
            if (k == 0 && !ended) continue;
            CHECK_MSG(ended == 1, "grammar %d seed %d: no end-of-generation (text '%s')", k, (int)seed, text);
            CHECK_MSG(takes(sgbnf, text) == 1, "grammar %d seed %d: sampled '%s' is not a sentence", k, (int)seed, text);
            if (k == 1) { /* and the JSON parser agrees (the plain object grammar allows repeated keys, which it refuses) */
                json_doc *d = NULL;
                CHECK_MSG(json_parse(text, strlen(text), &d) == LB_OK, "sampled '%s' is not JSON", text);
                json_free(d);
            }
        }
    }
    free(pet);
    lb_model_free(model);
    return lb_test_result("test_grammar");
}
