/* Chat templates by family (model/chat_template.h): the names, the settings,
 * and each template recognised by its distinctive substrings (the formatters
 * are in chat_format.c and chat_format_think.c). */
#include "model/chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[LB_CHAT_COUNT + 1] = {
    "llama2", "llama3", "llama3.1", "mistral", "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7",
    "chatml", "gemma", "gemma3", "phi3", "gpt-oss", "deepseek-r1", "glm4.7", "command-r", "glm4.5",
    "deepseek-v3.1", "mistral-small3", "granite", NULL};

const char *const *lb_chat_template_names(void) { return names; }
const char *lb_chat_family_name(lb_chat_family f) { return f >= 0 && f < LB_CHAT_COUNT ? names[f] : "?"; }

static void set_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

static void init(lb_chat_template *t, lb_chat_family f, const char *bos, const char *eos) {
    memset(t, 0, sizeof *t);
    t->family = f;
    set_str(t->bos, sizeof t->bos, bos);
    set_str(t->eos, sizeof t->eos, eos);
    set_str(t->date, sizeof t->date, "26 Jul 2024");
    set_str(t->gemma_sep, sizeof t->gemma_sep, "\n\n");
    set_str(t->reasoning_effort, sizeof t->reasoning_effort, "medium");
    t->thinking = -1;
    t->default_system_date = -1;
    t->thinking_switch = f == LB_CHAT_GLM45 || f == LB_CHAT_GLM47 || f == LB_CHAT_DEEPSEEK_V31 || f == LB_CHAT_GRANITE;
}

lb_status lb_chat_set_thinking(lb_chat_template *t, int on) {
    if (on < -1 || on > 1) return lb_fail(LB_ERR_ARG, "thinking switch %d: expected -1, 0 or 1", on);
    t->thinking = on;
    return LB_OK;
}

int lb_chat_prompt_opens_think(const lb_chat_template *t) {
    switch (t->family) {
    case LB_CHAT_DEEPSEEK_R1: return 1;
    case LB_CHAT_GLM47: return t->thinking != 0;
    case LB_CHAT_DEEPSEEK_V31: return t->thinking == 1;
    default: return 0;
    }
}

int lb_chat_reasoning_effort_known(const char *effort) {
    return effort && (!strcmp(effort, "low") || !strcmp(effort, "medium") || !strcmp(effort, "high"));
}

lb_status lb_chat_set_reasoning_effort(lb_chat_template *t, const char *effort) {
    if (!lb_chat_reasoning_effort_known(effort))
        return lb_fail(LB_ERR_ARG, "reasoning effort '%s': expected low, medium or high", effort ? effort : "(null)");
    set_str(t->reasoning_effort, sizeof t->reasoning_effort, effort);
    return LB_OK;
}

/* A Jinja string literal's text: n bytes at p, escapes resolved; 0 if it
 * does not fit in cap. */
static int unescape(const char *p, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            c = p[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        if (o + 1 >= cap) return 0;
        out[o++] = c;
    }
    out[o] = 0;
    return 1;
}

/* The literal that starts just after the opening quote q at p. */
static int read_literal(const char *p, char q, char *out, size_t cap) {
    const char *e = p;
    while (*e && *e != q) e += e[0] == '\\' && e[1] ? 2 : 1;
    return *e == q && unescape(p, (size_t)(e - p), out, cap);
}

/* ChatML's default system message: a literal '<|im_start|>system\n...<|im_end|>'
 * (Qwen 2 / 2.5 write one when the conversation has no system message). */
static void chatml_default_system(const char *s, lb_chat_template *t) {
    /* the newline escaped in the literal, or a raw one */
    static const char *const markers[2] = {"<|im_start|>system\\n", "<|im_start|>system\n"};
    for (int k = 0; k < 2; k++)
        for (const char *p = strstr(s, markers[k]); p; p = strstr(p + 1, markers[k])) {
            const char *body = p + strlen(markers[k]), *end = strstr(body, "<|im_end|>");
            if (p == s || (p[-1] != '\'' && p[-1] != '"') || !end || end == body) continue;
            const size_t n = (size_t)(end - body);
            if (memchr(body, '\'', n) || memchr(body, '"', n)) continue; /* not one literal */
            if (unescape(body, n, t->default_system, sizeof t->default_system)) {
                t->has_default_system = 1;
                return;
            }
        }
}

/* Mistral Small 3.2's default system message: set default_system_message =
 * "..." + today + "..." (today: strftime_now("%Y-%m-%d")), or one literal */
static int mistral_default_system(const char *s, lb_chat_template *t) {
    static const char key[] = "set default_system_message = \"", mid[] = "\" + today + \"";
    const char *p = strstr(s, key) + strlen(key), *e = p;
    char *d = t->default_system;
    const size_t cap = sizeof t->default_system;
    for (int part = 0; part < 2; part++) {
        while (*e && *e != '"') e += e[0] == '\\' && e[1] ? 2 : 1;
        const size_t have = strlen(d);
        if (*e != '"' || !unescape(p, (size_t)(e - p), d + have, cap - have)) return 0;
        if (part || strncmp(e, mid, strlen(mid))) break;
        t->default_system_date = (int)strlen(d);
        p = e = e + strlen(mid);
    }
    t->has_default_system = 1;
    return 1;
}

/* A Jinja string literal opening at p (after its quote q) appended to dst;
 * returns the byte after the closing quote, NULL if there is none or it does
 * not fit. */
static const char *append_literal(const char *p, char q, char *dst, size_t cap) {
    const char *e = p;
    while (*e && *e != q) e += e[0] == '\\' && e[1] ? 2 : 1;
    const size_t have = strlen(dst);
    return *e == q && unescape(p, (size_t)(e - p), dst + have, cap - have) ? e + 1 : NULL;
}

/* Granite 3.3's default system message: "Knowledge Cutoff Date: ... Today's
 * Date: " + strftime_now('%B %d, %Y') + ". You are Granite, ...", then
 * without tools or documents system_message + " You are a helpful AI
 * assistant." (elif thinking: a longer text). */
static int granite_default_system(const char *s, lb_chat_template *t) {
    static const char key[] = "set system_message = \"", mid[] = " + strftime_now('%B %d, %Y') + \"",
                      add[] = "set system_message = system_message + \"";
    const char *p = strstr(s, key);
    if (!p || !(p = append_literal(p + strlen(key), '"', t->default_system, sizeof t->default_system))) return 0;
    if (strncmp(p, mid, strlen(mid))) return 0;
    t->default_system_date = (int)strlen(t->default_system);
    if (!append_literal(p + strlen(mid), '"', t->default_system, sizeof t->default_system)) return 0;
    const char *th = strstr(s, "{%- elif thinking %}"), *el = th ? strstr(th, "{%- else %}") : NULL;
    const char *a = th ? strstr(th, add) : NULL, *b = el ? strstr(el, add) : NULL;
    if (!a || !b || a > el) return 0;
    if (!append_literal(a + strlen(add), '"', t->system_suffix[1], sizeof t->system_suffix[1]) ||
        !append_literal(b + strlen(add), '"', t->system_suffix[0], sizeof t->system_suffix[0]))
        return 0;
    t->has_default_system = 1;
    return 1;
}

/* Qwen 2.5 / 3's texts around the tools' signatures: the string literals
 * that hold "# Tools" and "</tools>" (Qwen 2.5's first begins with the
 * "\n\n" after the system text; Qwen2.5-Coder's second writes "{{") */
static int tools_texts(const char *s, lb_chat_template *t) {
    static const char *const keys[2] = {"# Tools", "\\n</tools>"};
    char *const out[2] = {t->tools_head, t->tools_tail};
    for (int k = 0; k < 2; k++) {
        const char *p = strstr(s, keys[k]);
        if (!p) return 0;
        while (p > s && p[-1] != '"') p--; /* back to the literal's opening quote */
        if (p == s || !read_literal(p, '"', out[k], 512)) return 0;
    }
    return 1;
}

lb_status lb_chat_template_detect(const char *s, const char *bos, const char *eos, lb_chat_template *t) {
    if (!s || !*s) return lb_fail(LB_ERR_UNSUPPORTED, "the model has no chat template");
    if (strstr(s, "<|im_start|>")) {
        init(t, LB_CHAT_CHATML, bos, eos);
        chatml_default_system(s, t);
        t->qwen3_think = strstr(s, "last_query_index") && strstr(s, "</think>");
        /* Qwen 3: enable_thinking false closes an empty reasoning block in the prompt */
        t->thinking_switch = t->qwen3_think && strstr(s, "enable_thinking") && strstr(s, "'<think>\\n\\n</think>\\n\\n'");
        /* ChatML templates with reasoning rules other than Qwen 3's (QwQ's and Nemotron's prompt
         * opening <think>, SmolLM3's and Bielik's switches, Qwen 3.5's and Step 3.5's trimmed parts):
         * refused rather than formatted as plain ChatML, which would differ from them */
        const int think = strstr(s, "<think>") || strstr(s, "enable_thinking");
        if (think && (!t->qwen3_think || (strstr(s, "enable_thinking") && !t->thinking_switch) ||
                      strstr(s, "render_content") || !strstr(s, "'\\n</think>\\n\\n'")))
            return lb_fail(LB_ERR_UNSUPPORTED, "a ChatML chat template with reasoning rules lowbit does not know (only "
                                               "Qwen 3's); --chat-template chatml formats plain ChatML");
        /* Qwen 2.5 / 3's tools: <tools> in the system turn, <tool_call> in replies, results as
         * <tool_response> in a user turn */
        t->tool_calls = strstr(s, "<tools>") && strstr(s, "<tool_call>") && strstr(s, "<tool_response>") &&
                        strstr(s, "message.tool_calls") && tools_texts(s, t);
        /* LFM2's: the system message kept apart, left out when empty, past reasoning dropped */
        if (strstr(s, "ns.system_prompt"))
            return lb_fail(LB_ERR_UNSUPPORTED, "a ChatML chat template with its own system-message rules (LFM2's) is "
                                               "not supported; --chat-template chatml formats plain ChatML");
        return LB_OK;
    }
    if (strstr(s, "<start_of_turn>")) {
        const char *p = strstr(s, "first_user_prefix = messages[0]['content'] + ");
        if (!p) {
            init(t, LB_CHAT_GEMMA, bos, eos);
            return LB_OK;
        }
        init(t, LB_CHAT_GEMMA3, bos, eos);
        p += strlen("first_user_prefix = messages[0]['content'] + ");
        if ((*p == '\'' || *p == '"') && read_literal(p + 1, *p, t->gemma_sep, sizeof t->gemma_sep)) return LB_OK;
        return lb_fail(LB_ERR_UNSUPPORTED, "a Gemma 3 chat template with an unusual system prefix");
    }
    /* gpt-oss's harmony format (llama.cpp's test: "<|start|>" and "<|channel|>") */
    if (strstr(s, "<|start|>") && strstr(s, "<|channel|>")) {
        init(t, LB_CHAT_GPT_OSS, bos, eos);
        return LB_OK;
    }
    /* Phi-3 and 3.5 (llama.cpp's test: "<|assistant|>" and "<|end|>"; it
     * renders Phi-4-mini's newline-free variant the same way) */
    if (strstr(s, "<|assistant|>") && strstr(s, "<|end|>")) {
        if (strstr(s, "bos_token")) /* Apriel's: BOS, a default system message, newlines of its own */
            return lb_fail(LB_ERR_UNSUPPORTED, "a Phi-3-like chat template that writes BOS (not Phi-3's); name a "
                                               "family with --chat-template");
        init(t, LB_CHAT_PHI3, bos, eos);
        return LB_OK;
    }
    /* Command R / R+ (R7B's template, with <|START_RESPONSE|> and a long
     * preamble, is not this one) */
    if (strstr(s, "<|START_OF_TURN_TOKEN|>") && strstr(s, "<|CHATBOT_TOKEN|>")) {
        if (strstr(s, "<|START_RESPONSE|>") || strstr(s, "<|START_TEXT|>")) /* R7B's, Cohere2 MoE's */
            return lb_fail(LB_ERR_UNSUPPORTED, "Command R7B's chat template is not supported; name a family with "
                                               "--chat-template");
        init(t, LB_CHAT_COMMAND_R, bos, eos);
        return LB_OK;
    }
    /* GLM-4.7 and 4.7-Flash; GLM-4.5 and 4.6, which write a newline after
     * each role and an empty <think></think> in the earlier assistant turns */
    if (strstr(s, "[gMASK]<sop>") && strstr(s, "<|assistant|>") && strstr(s, "clear_thinking")) {
        if (strstr(s, "reasoning_effort")) /* GLM-5's: a "Reasoning Effort" system line */
            return lb_fail(LB_ERR_UNSUPPORTED, "a GLM chat template with a reasoning effort (GLM-5's) is not "
                                               "supported; name a family with --chat-template");
        init(t, LB_CHAT_GLM47, bos, eos);
        return LB_OK;
    }
    if (strstr(s, "[gMASK]<sop>") && strstr(s, "<|assistant|>") && strstr(s, "<think></think>")) {
        init(t, LB_CHAT_GLM45, bos, eos);
        return LB_OK;
    }
    /* DeepSeek-R1 and its distills: the turns' markers, and the prompt's
     * opening <think> (the later V3.1 templates, with a `thinking` switch,
     * render differently) */
    if (strstr(s, "<\xef\xbd\x9c" "User\xef\xbd\x9c>") && strstr(s, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>\\n") &&
        !strstr(s, "is_last_user")) {
        /* edited copies: a thinking switch, or an end of sentence after each user turn */
        if (strstr(s, "enable_thinking") || strstr(s, "'<\xef\xbd\x9c" "User\xef\xbd\x9c>' + message['content'] + '<\xef\xbd\x9c" "end"))
            return lb_fail(LB_ERR_UNSUPPORTED, "a DeepSeek-R1 chat template edited from the official one; name a "
                                               "family with --chat-template");
        init(t, LB_CHAT_DEEPSEEK_R1, bos, eos);
        return LB_OK;
    }
    /* DeepSeek-V3.1: is_last_user and a `thinking` switch; V3.2's and
     * later templates (their DSML tool syntax) are not this one */
    if (strstr(s, "<\xef\xbd\x9c" "User\xef\xbd\x9c>") && strstr(s, "is_last_user") && strstr(s, "<think></think>") &&
        strstr(s, "thinking") && !strstr(s, "DSML")) {
        init(t, LB_CHAT_DEEPSEEK_V31, bos, eos);
        return LB_OK;
    }
    if (strstr(s, "<|start_of_role|>") && strstr(s, "<|end_of_text|>")) {
        init(t, LB_CHAT_GRANITE, bos, eos);
        if (granite_default_system(s, t)) return LB_OK;
        return lb_fail(LB_ERR_UNSUPPORTED, "a Granite chat template whose default system message lowbit cannot "
                                           "read (Granite 3.3's is known); pass --chat-template NAME");
    }
    if (strstr(s, "<|start_header_id|>")) {
        /* functionary's: function definitions in the system header, or its >>> recipients */
        if (strstr(s, ">>>all") || (strstr(s, "Cutting Knowledge Date") && !strstr(s, "Today Date")))
            return lb_fail(LB_ERR_UNSUPPORTED, "a Llama 3 chat template with functions (functionary's) is not "
                                               "supported; name a family with --chat-template");
        if (!strstr(s, "Cutting Knowledge Date")) {
            init(t, LB_CHAT_LLAMA3, bos, eos);
            return LB_OK;
        }
        init(t, LB_CHAT_LLAMA31, bos, eos);
        t->date_now = strstr(s, "strftime_now") != NULL;
        /* Llama 3.1 / 3.2's tools: their signatures in the first user turn, calls as {"name", "parameters"}
         * JSON, results as ipython turns */
        t->tool_calls = strstr(s, "tools_in_user_message") && strstr(s, "\"parameters\": ") &&
                        strstr(s, "<|start_header_id|>ipython<|end_header_id|>") && strstr(s, "tool_call.arguments | tojson");
        const char *p = strstr(s, "set date_string = \"");
        if (p) read_literal(p + strlen("set date_string = \""), '"', t->date, sizeof t->date);
        return LB_OK;
    }
    if (strstr(s, "[INST]")) {
        if (strstr(s, "[SYSTEM_PROMPT]") && strstr(s, "'[SYSTEM_PROMPT]' + system_prompt + '[/SYSTEM_PROMPT]'") &&
            strstr(s, "set default_system_message = \"")) {
            init(t, LB_CHAT_MISTRAL_SMALL3, bos, eos);
            if (mistral_default_system(s, t)) return LB_OK;
            return lb_fail(LB_ERR_UNSUPPORTED, "a Mistral Small 3 chat template whose default system message lowbit "
                                               "cannot read; pass --chat-template NAME");
        }
        if (strstr(s, "[SYSTEM_PROMPT]")) {
            if (!strstr(s, "'[SYSTEM_PROMPT] ' + message['content']"))
                return lb_fail(LB_ERR_UNSUPPORTED, "a Mistral [SYSTEM_PROMPT] chat template other than the v7 one "
                                                   "lowbit knows; pass --chat-template NAME");
            init(t, LB_CHAT_MISTRAL_V7, bos, eos);
        } else if (strstr(s, "<<SYS>>")) {
            init(t, LB_CHAT_LLAMA2, bos, eos);
        } else if (strstr(s, "' [INST] ' + system_message") || strstr(s, "[AVAILABLE_TOOLS]")) {
            /* llama.cpp's test: the official v1, v3 and v3-tekken templates */
            lb_chat_family f = strstr(s, " [INST]")       ? LB_CHAT_MISTRAL_V1
                               : strstr(s, "\"[INST]\"") ? LB_CHAT_MISTRAL_V3_TEKKEN
                                                        : LB_CHAT_MISTRAL_V3;
            init(t, f, bos, eos);
            /* v3's tools: [AVAILABLE_TOOLS] before the last user turn, [TOOL_CALLS] with ids, [TOOL_RESULTS] */
            t->tool_calls = f != LB_CHAT_MISTRAL_V1 && strstr(s, "[AVAILABLE_TOOLS]") && strstr(s, "[TOOL_CALLS]") &&
                            strstr(s, "[TOOL_RESULTS]") && strstr(s, "tool_call.function|tojson");
        } else {
            init(t, LB_CHAT_MISTRAL, bos, eos);
        }
        return LB_OK;
    }
    return lb_fail(LB_ERR_UNSUPPORTED,
                   "unrecognised chat template (not Llama 2/3, Mistral, ChatML/Qwen, Gemma, Phi-3, gpt-oss, "
                   "DeepSeek-R1 / V3.1, GLM-4.5 / 4.6 / 4.7, Command R, Mistral Small 3 or Granite); name one with --chat-template (llama2, "
                   "llama3, llama3.1, mistral, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, chatml, gemma, "
                   "gemma3, phi3, gpt-oss, deepseek-r1, deepseek-v3.1, glm4.5, glm4.7, command-r, mistral-small3, "
                   "granite)");
}

lb_status lb_chat_template_named(const char *name, const char *bos, const char *eos, lb_chat_template *t) {
    for (int f = 0; f < LB_CHAT_COUNT; f++)
        if (name && !strcmp(name, names[f])) {
            init(t, (lb_chat_family)f, bos, eos);
            return LB_OK;
        }
    char known[256] = "";
    for (int f = 0; f < LB_CHAT_COUNT; f++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", f ? ", " : "", names[f]);
    return lb_fail(LB_ERR_ARG, "unknown chat template '%s' (known: %s)", name ? name : "", known);
}
