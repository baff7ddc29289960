/* Chat templates (model/chat_template.h): every real template in
 * tests/data/chat-templates/ is recognised as its family, and the C
 * formatter gives, byte for byte, what jinja2 renders from the template for
 * each fixed conversation, or the same raise_exception() message
 * (expected.inc, from scripts/gen-chat-expected.py). Also: names, unknown
 * templates, and parse_special tokenization of the control-token texts a
 * template writes. */
#include "model/chat_template.h"
#include "lowbit.h"
#include "model/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

#include "data/chat-templates/expected.inc"

static void show_diff(const char *want, const char *got) {
    size_t i = 0;
    while (want[i] && want[i] == got[i]) i++;
    fprintf(stderr, "  first difference at byte %zu:\n  want: ...%.60s\n  got:  ...%.60s\n", i,
            want + (i > 20 ? i - 20 : 0), got + (i > 20 ? i - 20 : 0));
}

/* every conversation through ct against jinja2's rendering (or its error) */
static void check_conversations(const lb_chat_template *ct, const char *what, const char *const *expected,
                                const char *const *error) {
    for (int c = 0; c < N_CONV; c++) {
        char *out = NULL;
        size_t len = 0;
        lb_status s = lb_chat_apply(ct, conversations[c].msgs, conversations[c].n, fixed_date, &out, &len);
        if (expected[c]) {
            CHECK_MSG(s == LB_OK, "%s / %s: failed: %s", what, conversations[c].name, lb_last_error());
            if (s == LB_OK) {
                int same = !strcmp(out, expected[c]) && len == strlen(out);
                CHECK_MSG(same, "%s / %s: output differs from jinja2's", what, conversations[c].name);
                if (!same) show_diff(expected[c], out);
            }
        } else {
            CHECK_MSG(s == LB_ERR_ARG, "%s / %s: should raise '%s'", what, conversations[c].name, error[c]);
            if (s == LB_ERR_ARG)
                CHECK_MSG(!strcmp(lb_last_error(), error[c]), "%s / %s: raised '%s', not '%s'", what,
                          conversations[c].name, lb_last_error(), error[c]);
        }
        free(out);
    }
}

static void check_templates(void) {
    for (int t = 0; t < N_TEMPLATES; t++) {
        lb_chat_template ct;
        lb_status s = lb_chat_template_detect(templates[t].jinja, templates[t].bos, templates[t].eos, &ct);
        CHECK_MSG(s == LB_OK, "%s: not recognised: %s", templates[t].file, lb_last_error());
        if (s) continue;
        CHECK_MSG(!strcmp(lb_chat_family_name(ct.family), templates[t].family), "%s: detected as %s, not %s",
                  templates[t].file, lb_chat_family_name(ct.family), templates[t].family);
        check_conversations(&ct, templates[t].file, templates[t].expected, templates[t].error);
    }
}

/* tools and tool calls (Qwen 2.5 / 3): the tools' signatures in the system
 * turn, calls in assistant turns, results in user turns, as jinja2 renders
 * the real templates; the other templates do not take tools */
static void check_tools(void) {
    const int n_cases = (int)(sizeof tool_expected / sizeof tool_expected[0]);
    for (int k = 0; k < n_cases; k++) {
        int t = 0;
        while (t < N_TEMPLATES && strcmp(templates[t].file, tool_expected[k].file)) t++;
        lb_chat_template ct;
        if (t == N_TEMPLATES || lb_chat_template_detect(templates[t].jinja, templates[t].bos, templates[t].eos, &ct)) {
            CHECK_MSG(0, "%s: not found or not recognised", tool_expected[k].file);
            continue;
        }
        CHECK_MSG(ct.tool_calls, "%s: tool calls not detected", tool_expected[k].file);
        if (tool_expected[k].with_tools) {
            ct.tools = tool_json;
            ct.n_tools = (int)(sizeof tool_json / sizeof tool_json[0]);
        }
        char *out = NULL;
        const lb_status st = lb_chat_apply(&ct, tool_expected[k].msgs, tool_expected[k].n, fixed_date, &out, NULL);
        if (tool_expected[k].error) { /* the template raises: so must the formatter, with its words */
            CHECK_MSG(st == LB_ERR_ARG && !out && strstr(lb_last_error(), tool_expected[k].error), "%s / %s: '%s'",
                      tool_expected[k].file, tool_expected[k].conv, st ? lb_last_error() : "no error");
            free(out);
            continue;
        }
        CHECK_OK(st);
        const int same = out && !strcmp(out, tool_expected[k].expected);
        CHECK_MSG(same, "%s / %s: output differs from jinja2's", tool_expected[k].file, tool_expected[k].conv);
        if (out && !same) show_diff(tool_expected[k].expected, out);
        free(out);
    }
    int with = 0;
    for (int t = 0; t < N_TEMPLATES; t++) {
        lb_chat_template ct;
        if (!lb_chat_template_detect(templates[t].jinja, templates[t].bos, templates[t].eos, &ct)) with += ct.tool_calls;
    }
    CHECK_MSG(with == 7, "%d templates take tools, expected the 3 Qwen ones, Llama 3.1 / 3.2 and Mistral v3 / Nemo", with);
}

/* templates a family's markers match but that write something else, and
 * families lowbit does not know: refused with a message, never formatted */
static void check_refused(void) {
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        lb_chat_template ct;
        const lb_status s = lb_chat_template_detect(refused[i].jinja, "<s>", "</s>", &ct);
        CHECK_MSG(s == LB_ERR_UNSUPPORTED && *lb_last_error(), "%s: not refused (detected as %s)", refused[i].file,
                  s ? "-" : lb_chat_family_name(ct.family));
    }
}

/* enable_thinking false and true: jinja2's rendering for the templates that
 * read it; the others say they have no switch and render as without it */
static void check_thinking_switch(void) {
    const int n_switch = (int)(sizeof thinking_switch / sizeof thinking_switch[0]);
    for (int t = 0; t < N_TEMPLATES; t++) {
        lb_chat_template ct;
        if (lb_chat_template_detect(templates[t].jinja, templates[t].bos, templates[t].eos, &ct)) continue;
        int has = 0;
        for (int k = 0; k < n_switch; k++) {
            if (strcmp(thinking_switch[k].file, templates[t].file)) continue;
            has = 1;
            lb_chat_template on = ct;
            CHECK_OK(lb_chat_set_thinking(&on, thinking_switch[k].enable));
            char what[128];
            snprintf(what, sizeof what, "%s, enable_thinking %s", templates[t].file,
                     thinking_switch[k].enable ? "true" : "false");
            check_conversations(&on, what, thinking_switch[k].expected, thinking_switch[k].error);
        }
        CHECK_MSG(ct.thinking_switch == has, "%s: thinking switch %s", templates[t].file,
                  has ? "not detected" : "detected where it has none");
        if (has) continue;
        for (int on = 0; on <= 1; on++) {
            lb_chat_template sw = ct;
            CHECK_OK(lb_chat_set_thinking(&sw, on));
            check_conversations(&sw, templates[t].file, templates[t].expected, templates[t].error);
        }
    }
    lb_chat_template ct;
    CHECK_OK(lb_chat_template_named("glm4.5", "", "", &ct));
    CHECK(ct.thinking_switch && lb_chat_set_thinking(&ct, 2) == LB_ERR_ARG && ct.thinking == -1);
    /* where the prompt leaves the reply inside a reasoning block */
    CHECK(!lb_chat_prompt_opens_think(&ct));
    CHECK_OK(lb_chat_template_named("glm4.7", "", "", &ct));
    CHECK(lb_chat_prompt_opens_think(&ct));
    CHECK_OK(lb_chat_set_thinking(&ct, 0));
    CHECK(!lb_chat_prompt_opens_think(&ct));
    CHECK_OK(lb_chat_template_named("deepseek-v3.1", "", "", &ct));
    CHECK(!lb_chat_prompt_opens_think(&ct));
    CHECK_OK(lb_chat_set_thinking(&ct, 1));
    CHECK(lb_chat_prompt_opens_think(&ct));
    CHECK_OK(lb_chat_template_named("deepseek-r1", "", "", &ct));
    CHECK(lb_chat_prompt_opens_think(&ct));
}

/* the reasoning / answer split, fed whole, byte by byte, and cut in two at
 * every point: the same two strings each way */
typedef struct {
    char part[2][256];
    size_t n[2];
} split_out;

static void collect(void *ud, int reasoning, const char *p, size_t n) {
    split_out *o = ud;
    CHECK(n > 0 && o->n[reasoning] + n < sizeof o->part[0]);
    if (o->n[reasoning] + n >= sizeof o->part[0]) return;
    memcpy(o->part[reasoning] + o->n[reasoning], p, n);
    o->n[reasoning] += n;
    o->part[reasoning][o->n[reasoning]] = 0;
}

static void check_think_split(void) {
    static const struct {
        int open;
        const char *reply, *reasoning, *answer;
    } cases[] = {
        {0, "<think>\nhmm\n</think>\n\nHello!", "hmm", "Hello!"},           /* Qwen 3 */
        {0, "\n <think>a\n\nb\n\n</think>x</think>\ny", "a\n\nb", "x</think>\ny"}, /* the first </think> ends it */
        {0, "Hello <think>x</think>", "", "Hello <think>x</think>"},           /* not at the start: all answer */
        {0, "  \nHi", "", "  \nHi"},                                            /* no block: the reply as it is */
        {0, "<thin", "", "<thin"},                                               /* cut off at the start */
        {0, "<thinking>x", "", "<thinking>x"},
        {1, "\nr1 < r2 </thin </think>\n\nA\n", "r1 < r2 </thin ", "A\n"}, /* DeepSeek-R1: the prompt opened it */
        {1, "still thinking\n\n</thi", "still thinking\n\n</thi", ""},        /* cut off in the closing tag */
        {1, "still thinking\n\n", "still thinking", ""},
        {1, "</think>", "", ""},
        {1, "<<</think>A", "<<", "A"},
        {0, "<think></think>\n\n", "", ""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t len = strlen(cases[c].reply);
        for (size_t cut = 0; cut <= len + 1; cut++) { /* cut = len + 1: one byte at a time */
            split_out o = {{"", ""}, {0, 0}};
            lb_think_split t;
            lb_think_init(&t, cases[c].open);
            if (cut <= len) {
                lb_think_feed(&t, cases[c].reply, cut, collect, &o);
                lb_think_feed(&t, cases[c].reply + cut, len - cut, collect, &o);
            } else {
                for (size_t i = 0; i < len; i++) lb_think_feed(&t, cases[c].reply + i, 1, collect, &o);
            }
            lb_think_finish(&t, collect, &o);
            CHECK_MSG(!strcmp(o.part[1], cases[c].reasoning) && !strcmp(o.part[0], cases[c].answer),
                      "split of case %zu cut at %zu: reasoning '%s' answer '%s'", c, cut, o.part[1], o.part[0]);
        }
    }
}

static void check_names(void) {
    const char *const *names = lb_chat_template_names();
    int n = 0;
    for (; names[n]; n++) {
        lb_chat_template ct;
        CHECK_OK(lb_chat_template_named(names[n], "<s>", "</s>", &ct));
        CHECK(!strcmp(lb_chat_family_name(ct.family), names[n]));
        /* every family formats a plain conversation */
        lb_chat_msg m[2] = {{.role = "user", .content = "hi"}, {.role = "assistant", .content = "ho"}};
        char *out = NULL;
        CHECK_OK(lb_chat_apply(&ct, m, 2, NULL, &out, NULL));
        CHECK(out && strstr(out, "hi") && strstr(out, "ho"));
        free(out);
    }
    CHECK(n == LB_CHAT_COUNT);
    lb_chat_template ct;
    CHECK(lb_chat_template_named("jinja", "", "", &ct) == LB_ERR_ARG);
    CHECK(lb_chat_template_named(NULL, "", "", &ct) == LB_ERR_ARG);
    /* unknown and missing templates say so, and name the way out */
    CHECK(lb_chat_template_detect("{% for m in messages %}{{ m.content }}{% endfor %}", "", "", &ct) ==
          LB_ERR_UNSUPPORTED);
    CHECK(strstr(lb_last_error(), "--chat-template") != NULL);
    CHECK(lb_chat_template_detect("", "", "", &ct) == LB_ERR_UNSUPPORTED);
    CHECK(lb_chat_template_detect(NULL, "", "", &ct) == LB_ERR_UNSUPPORTED);
    /* a ChatML template without a default system message adds none */
    CHECK_OK(lb_chat_template_detect("{{'<|im_start|>' + message['role'] + '\\n'}}", "", "", &ct));
    CHECK(!ct.has_default_system);
    /* Llama 3.2 without a date argument writes today's */
    for (int t = 0; t < N_TEMPLATES; t++)
        if (strstr(templates[t].file, "llama3.2")) {
            CHECK_OK(lb_chat_template_detect(templates[t].jinja, "", "", &ct));
            CHECK(ct.date_now);
            char *out = NULL;
            lb_chat_msg m = {.role = "user", .content = "x"};
            CHECK_OK(lb_chat_apply(&ct, &m, 1, NULL, &out, NULL));
            CHECK(out && strstr(out, "Today Date: ") && !strstr(out, fixed_date));
            free(out);
        }
}

/* parse_special: "<s>" in the text is BOS only when asked for; user text
 * around it is tokenized as usual. */
static void check_parse_special(void) {
    const char *path = lb_test_shared("models/stories260K-f32.gguf");
    lb_model *m = NULL;
    if (lb_model_load(path, NULL, &m) != LB_OK) {
        fprintf(stderr, "skipping the parse_special check: %s\n", lb_last_error());
        return;
    }
    const lb_tokenizer *tok = m->tok;
    const char *text = "<s>Hello</s> world";
    int32_t *a = NULL, *b = NULL, *c = NULL;
    int na = 0, nb = 0, nc = 0;
    CHECK_OK(lb_tokenizer_encode_special(tok, text, strlen(text), 0, 1, &a, &na));
    CHECK_OK(lb_tokenizer_encode_special(tok, text, strlen(text), 0, 0, &b, &nb));
    CHECK_OK(lb_tokenizer_encode(tok, "Hello", 5, 0, &c, &nc));
    CHECK(na >= 3 && a[0] == lb_token_bos(m));
    int has_eos = 0;
    for (int i = 0; i < na; i++) has_eos |= a[i] == lb_token_eos(m);
    CHECK(has_eos);
    for (int i = 0; i < nb; i++) CHECK(b[i] != lb_token_bos(m) && b[i] != lb_token_eos(m));
    /* after a special token the text gets SPM's dummy prefix, as llama.cpp does */
    CHECK(na >= 1 + nc && !memcmp(a + 1, c, (size_t)nc * sizeof *c));
    /* lb_think_piece: a token's piece; a control token other than <think> / </think> prints nothing */
    for (int i = 0; i < na; i++) {
        size_t l1, l2;
        const char *p1 = lb_think_piece(m, a[i], &l1), *p2 = lb_token_to_piece(m, a[i], &l2);
        CHECK(l1 == l2 && !memcmp(p1, p2, l1));
    }
    free(a);
    free(b);
    free(c);
    lb_model_free(m);
}

/* gpt-oss's reply split into reasoning and answer, whatever the pieces */
static void check_harmony(void) {
    static const struct { const char *text, *piece; lb_harmony_kind kind; } seq[] = {
        {"<|channel|>", "", LB_HARMONY_NONE},   {"analysis", "analysis", LB_HARMONY_NONE},
        {"<|message|>", "", LB_HARMONY_NONE},   {"Think", "Think", LB_HARMONY_REASONING},
        {" more", " more", LB_HARMONY_REASONING}, {"<|end|>", "<|end|>", LB_HARMONY_NONE},
        {"<|start|>", "", LB_HARMONY_NONE},     {"assistant", "assistant", LB_HARMONY_NONE},
        {"<|channel|>", "", LB_HARMONY_NONE},   {"fin", "fin", LB_HARMONY_NONE},
        {"al", "al", LB_HARMONY_NONE},          {"<|message|>", "", LB_HARMONY_NONE},
        {"Hello", "Hello", LB_HARMONY_ANSWER},  {"!", "!", LB_HARMONY_ANSWER},
        {"<|end|>", "<|end|>", LB_HARMONY_NONE}, {"<|start|>", "", LB_HARMONY_NONE},
        {"assistant", "assistant", LB_HARMONY_NONE}, {"<|channel|>", "", LB_HARMONY_NONE},
        {"commentary", "commentary", LB_HARMONY_NONE}, {"<|message|>", "", LB_HARMONY_NONE},
        {"x", "x", LB_HARMONY_REASONING},
    };
    lb_harmony h;
    lb_harmony_init(&h);
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        CHECK_MSG(lb_harmony_step(&h, seq[i].text, seq[i].piece, strlen(seq[i].piece)) == seq[i].kind,
                  "harmony token %zu ('%s')", i, seq[i].text);
}

/* gpt-oss's reasoning_effort: each of low, medium, high as jinja2 renders it
 * (expected.inc), anything else refused, and the setting ignored elsewhere */
static void check_reasoning_effort(void) {
    int t = 0;
    while (t < N_TEMPLATES && strcmp(templates[t].family, "gpt-oss")) t++;
    CHECK(t < N_TEMPLATES);
    if (t == N_TEMPLATES) return;
    for (size_t i = 0; i < sizeof gpt_oss_effort / sizeof gpt_oss_effort[0]; i++) {
        lb_chat_template ct;
        CHECK_OK(lb_chat_template_detect(templates[t].jinja, templates[t].bos, templates[t].eos, &ct));
        CHECK_OK(lb_chat_set_reasoning_effort(&ct, gpt_oss_effort[i].effort));
        char *out = NULL;
        CHECK_OK(lb_chat_apply(&ct, conversations[0].msgs, conversations[0].n, fixed_date, &out, NULL));
        const int same = out && !strcmp(out, gpt_oss_effort[i].expected);
        CHECK_MSG(same, "gpt-oss at reasoning_effort %s: output differs from jinja2's", gpt_oss_effort[i].effort);
        if (out && !same) show_diff(gpt_oss_effort[i].expected, out);
        free(out);
    }
    lb_chat_template ct;
    CHECK_OK(lb_chat_template_named("gpt-oss", "", "", &ct));
    CHECK(lb_chat_set_reasoning_effort(&ct, "extreme") == LB_ERR_ARG && !strcmp(ct.reasoning_effort, "medium"));
    CHECK(lb_chat_set_reasoning_effort(&ct, NULL) == LB_ERR_ARG && lb_chat_set_reasoning_effort(&ct, "") == LB_ERR_ARG);
    /* a family without the setting renders as before */
    CHECK_OK(lb_chat_template_named("chatml", "", "", &ct));
    char *a = NULL, *b = NULL;
    CHECK_OK(lb_chat_apply(&ct, conversations[0].msgs, conversations[0].n, fixed_date, &a, NULL));
    CHECK_OK(lb_chat_set_reasoning_effort(&ct, "high"));
    CHECK_OK(lb_chat_apply(&ct, conversations[0].msgs, conversations[0].n, fixed_date, &b, NULL));
    CHECK(a && b && !strcmp(a, b));
    free(a), free(b);
}

/* DeepSeek-V3.1: two system messages joined by a blank line, an assistant
 * turn cut after its first '</think>', a second assistant turn with no
 * '<｜Assistant｜>' of its own (jinja2's rendering of the template) */
static void check_deepseek_v31(void) {
    static const lb_chat_msg msgs[] = {{.role = "system", .content = "A"}, {.role = "user", .content = "Q"},      {.role = "system", .content = "B"},
                                       {.role = "assistant", .content = "r</think>x</think>y"}, {.role = "assistant", .content = "z"}, {.role = "user", .content = "R"}};
    static const char expected[] =
        "<B>A\012"
        "\012"
        "B<\357\275\234User\357\275\234>Q<\357\275\234Assistant\357\275\234><think></think>x</think>y<\357\275"
        "\234end\342\226\201of\342\226\201sentence\357\275\234>z<\357\275\234end\342\226\201of\342\226\201sent"
        "ence\357\275\234><\357\275\234User\357\275\234>R<\357\275\234Assistant\357\275\234><think></think>";
    lb_chat_template ct;
    CHECK_OK(lb_chat_template_named("deepseek-v3.1", "<B>", "<E>", &ct));
    char *out = NULL;
    CHECK_OK(lb_chat_apply(&ct, msgs, 6, fixed_date, &out, NULL));
    CHECK_MSG(out && !strcmp(out, expected), "deepseek-v3.1: output differs from jinja2's");
    if (out && strcmp(out, expected)) show_diff(expected, out);
    free(out);
    out = NULL;
    const lb_chat_msg tool[] = {{.role = "user", .content = "Q"}, {.role = "tool", .content = "T"}};
    CHECK(lb_chat_apply(&ct, tool, 2, fixed_date, &out, NULL) == LB_ERR_ARG && !out);
}

int main(void) {
    check_templates();
    check_thinking_switch();
    check_refused();
    check_tools();
    check_think_split();
    check_deepseek_v31();
    check_reasoning_effort();
    check_names();
    check_harmony();
    check_parse_special();
    return lb_test_result("test_chat_template");
}
