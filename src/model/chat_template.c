/* Chat templates by family (model/chat_template.h). Each formatter follows
 * its official Jinja template statement by statement; the comments quote the
 * parts that decide the bytes. Jinja's `trim` / `.strip()` are Python's
 * str.strip(): Unicode whitespace at both ends. */
#include "model/chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const names[LB_CHAT_COUNT + 1] = {
    "llama2", "llama3", "llama3.1", "mistral", "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7",
    "chatml", "gemma", "gemma3", "phi3", "gpt-oss", "deepseek-r1", "glm4.7", "command-r", "glm4.5",
    "deepseek-v3.1", NULL};

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
    t->thinking_switch = f == LB_CHAT_GLM45 || f == LB_CHAT_GLM47 || f == LB_CHAT_DEEPSEEK_V31;
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
        const char *p = strstr(s, "set date_string = \"");
        if (p) read_literal(p + strlen("set date_string = \""), '"', t->date, sizeof t->date);
        return LB_OK;
    }
    if (strstr(s, "[INST]")) {
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
        } else {
            init(t, LB_CHAT_MISTRAL, bos, eos);
        }
        return LB_OK;
    }
    return lb_fail(LB_ERR_UNSUPPORTED,
                   "unrecognised chat template (not Llama 2/3, Mistral, ChatML/Qwen, Gemma, Phi-3, gpt-oss, "
                   "DeepSeek-R1 / V3.1, GLM-4.5 / 4.6 / 4.7 or Command R); name one with --chat-template (llama2, "
                   "llama3, llama3.1, mistral, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, chatml, gemma, "
                   "gemma3, phi3, gpt-oss, deepseek-r1, deepseek-v3.1, glm4.5, glm4.7, command-r)");
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

/* ---- output ---- */

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put_n(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void put(sbuf *b, const char *s) { put_n(b, s, strlen(s)); }

/* Python's str.isspace() for the code point at s (its byte length in *len). */
static int py_space_at(const unsigned char *s, size_t avail, size_t *len) {
    unsigned c = s[0];
    *len = 1;
    if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
    if (c == 0xc2 && avail >= 2 && (s[1] == 0x85 || s[1] == 0xa0)) return *len = 2, 1;
    if (c == 0xe1 && avail >= 3 && s[1] == 0x9a && s[2] == 0x80) return *len = 3, 1; /* U+1680 */
    if (c == 0xe2 && avail >= 3) {
        unsigned cp = ((c & 0x0f) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
        if ((cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f)
            return *len = 3, 1;
    }
    if (c == 0xe3 && avail >= 3 && s[1] == 0x80 && s[2] == 0x80) return *len = 3, 1; /* U+3000 */
    return 0;
}

/* [s, s + n).strip()'s bounds: *a and *e (Jinja's trim). */
static void trim_bounds(const char *s, size_t n, size_t *a_out, size_t *e_out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, e = n, k;
    while (a < e && py_space_at(u + a, e - a, &k)) a += k;
    /* from the end: step back over one code point at a time */
    while (e > a) {
        size_t st = e - 1;
        while (st > a && (u[st] & 0xc0) == 0x80 && e - st < 4) st--;
        if (!py_space_at(u + st, e - st, &k) || st + k != e) break;
        e = st;
    }
    *a_out = a, *e_out = e;
}

/* Appends [s, s + n).strip(); put_trim: of a whole string. */
static void put_trim_n(sbuf *b, const char *s, size_t n) {
    size_t a, e;
    trim_bounds(s, n, &a, &e);
    put_n(b, s + a, e - a);
}
static void put_trim(sbuf *b, const char *s) { put_trim_n(b, s, strlen(s)); }

static int is(const lb_chat_msg *m, const char *role) { return m->role && !strcmp(m->role, role); }
static const char *content(const lb_chat_msg *m) { return m->content ? m->content : ""; }

static lb_status raise(const char *msg) { return lb_fail(LB_ERR_ARG, "%s", msg); }

static const char ALTERNATE[] = "Conversation roles must alternate user/assistant/user/assistant/...";
static const char ALTERNATE_V1[] =
    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";
static const char ONLY_UA_V1[] =
    "Only user and assistant roles are supported, with the exception of an initial optional system message!";

/* {% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %} ... */
static int first_system(const lb_chat_msg *m, int n) { return n > 0 && is(&m[0], "system"); }

static lb_status llama2(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    const int off = first_system(m, n);
    for (int i = off; i < n; i++) {
        const int k = i - off;
        if (is(&m[i], "user") != (k % 2 == 0)) return raise(ALTERNATE);
        /* {% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message
         * + '\n<</SYS>>\n\n' + message['content'] %} ... content.strip() */
        sbuf c = {0};
        if (k == 0 && off) {
            put(&c, "<<SYS>>\n");
            put(&c, content(&m[0]));
            put(&c, "\n<</SYS>>\n\n");
        }
        put(&c, content(&m[i]));
        if (c.oom) return lb_fail(LB_ERR_NOMEM, "out of memory");
        if (is(&m[i], "user")) {
            put(b, t->bos); /* bos_token + '[INST] ' + content.strip() + ' [/INST]' */
            put(b, "[INST] ");
            put_trim(b, c.p ? c.p : "");
            put(b, " [/INST]");
        } else if (is(&m[i], "assistant")) {
            put(b, " "); /* ' '  + content.strip() + ' ' + eos_token */
            put_trim(b, c.p ? c.p : "");
            put(b, " ");
            put(b, t->eos);
        }
        free(c.p);
    }
    return LB_OK;
}

static void llama3_turn(sbuf *b, const char *role, const char *text) {
    /* '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' */
    put(b, "<|start_header_id|>");
    put(b, role);
    put(b, "<|end_header_id|>\n\n");
    put_trim(b, text);
    put(b, "<|eot_id|>");
}

/* strftime_now(fmt) for today, into buf (32 bytes); returns buf */
static const char *today_as(char buf[32], const char *fmt) {
    const time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(buf, 32, fmt, &tm);
    return buf;
}

static lb_status llama3(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b) {
    if (t->family == LB_CHAT_LLAMA3) {
        for (int i = 0; i < n; i++) {
            if (i == 0) put(b, t->bos); /* {% if loop.index0 == 0 %}{% set content = bos_token + content %} */
            llama3_turn(b, m[i].role, content(&m[i]));
        }
    } else {
        /* 3.1+: {{- bos_token }} ... the system header always, with the dates and the trimmed system message */
        const int off = first_system(m, n);
        char today[32];
        if (!date && t->date_now) date = today_as(today, "%d %b %Y");
        put(b, t->bos);
        put(b, "<|start_header_id|>system<|end_header_id|>\n\n");
        put(b, "Cutting Knowledge Date: December 2023\n");
        put(b, "Today Date: ");
        put(b, date && t->date_now ? date : t->date);
        put(b, "\n\n");
        if (off) put_trim(b, content(&m[0]));
        put(b, "<|eot_id|>");
        for (int i = off; i < n; i++) llama3_turn(b, m[i].role, content(&m[i]));
    }
    put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return LB_OK;
}

static lb_status mistral(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    switch (t->family) {
    case LB_CHAT_MISTRAL: /* old: no system message, roles alternate from the first */
        put(b, t->bos);
        for (int i = 0; i < n; i++) {
            if (is(&m[i], "user") != (i % 2 == 0)) return raise(ALTERNATE);
            if (is(&m[i], "user")) {
                put(b, "[INST] ");
                put(b, content(&m[i]));
                put(b, " [/INST]");
            } else if (is(&m[i], "assistant")) {
                put(b, content(&m[i]));
                put(b, t->eos);
            } else {
                return raise("Only user and assistant roles are supported!");
            }
        }
        return LB_OK;
    case LB_CHAT_MISTRAL_V1: {
        const int off = first_system(m, n);
        put(b, t->bos);
        for (int i = off; i < n; i++) {
            if (is(&m[i], "user") != ((i - off) % 2 == 0)) return raise(ALTERNATE_V1);
            if (is(&m[i], "user")) {
                put(b, " [INST] "); /* loop.first and system_message is defined: sys + '\n\n' + content */
                if (i == off && off) {
                    put(b, content(&m[0]));
                    put(b, "\n\n");
                }
                put(b, content(&m[i]));
                put(b, " [/INST]");
            } else if (is(&m[i], "assistant")) {
                put(b, " ");
                put(b, content(&m[i]));
                put(b, t->eos);
            } else {
                return raise(ONLY_UA_V1);
            }
        }
        return LB_OK;
    }
    case LB_CHAT_MISTRAL_V3:
    case LB_CHAT_MISTRAL_V3_TEKKEN: {
        const int off = first_system(m, n), tekken = t->family == LB_CHAT_MISTRAL_V3_TEKKEN;
        /* the alternation is checked over all of loop_messages before any output */
        for (int i = off; i < n; i++)
            if (is(&m[i], "user") != ((i - off) % 2 == 0)) return raise(ALTERNATE_V1);
        put(b, t->bos);
        for (int i = off; i < n; i++) {
            if (is(&m[i], "user")) {
                put(b, tekken ? "[INST]" : "[INST] "); /* loop.last and system_message is defined */
                if (i == n - 1 && off) {
                    put(b, content(&m[0]));
                    put(b, "\n\n");
                }
                put(b, content(&m[i]));
                put(b, "[/INST]");
            } else if (is(&m[i], "assistant")) {
                if (tekken) put(b, content(&m[i])); /* message["content"] + eos_token */
                else {
                    put(b, " "); /* " " + message["content"]|trim + eos_token */
                    put_trim(b, content(&m[i]));
                }
                put(b, t->eos);
            } else {
                return raise(ONLY_UA_V1);
            }
        }
        return LB_OK;
    }
    default: /* LB_CHAT_MISTRAL_V7 */
        put(b, t->bos);
        for (int i = 0; i < n; i++) {
            if (is(&m[i], "user")) {
                put(b, "[INST] ");
                put(b, content(&m[i]));
                put(b, "[/INST]");
            } else if (is(&m[i], "system")) {
                put(b, "[SYSTEM_PROMPT] ");
                put(b, content(&m[i]));
                put(b, "[/SYSTEM_PROMPT]");
            } else if (is(&m[i], "assistant")) {
                put(b, " ");
                put(b, content(&m[i]));
                put(b, t->eos);
            } else {
                return raise("Only user, system and assistant roles are supported!");
            }
        }
        return LB_OK;
    }
}

/* Python's s.lstrip('\n') / rstrip('\n') on [p, e) */
static const char *skip_nl(const char *p, const char *e) {
    while (p < e && *p == '\n') p++;
    return p;
}
static const char *back_nl(const char *p, const char *e) {
    while (e > p && e[-1] == '\n') e--;
    return e;
}
static const char *find_last(const char *s, const char *pat) {
    const char *last = NULL;
    for (const char *q = strstr(s, pat); q; q = strstr(q + 1, pat)) last = q;
    return last;
}

/* An assistant turn c as Qwen 3's and GLM-4.7's templates split it: the
 * answer from *ans, the reasoning [*r0, *r1) (empty without a '</think>'). */
static void split_think(const char *c, const char **ans, const char **r0, const char **r1) {
    const char *end = c + strlen(c), *close = strstr(c, "</think>");
    *ans = *r0 = *r1 = c;
    if (!close) return;
    /* content.split('</think>')[-1].lstrip('\n') */
    *ans = skip_nl(find_last(c, "</think>") + strlen("</think>"), end);
    /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
    *r1 = back_nl(c, close);
    const char *open = NULL;
    for (const char *q = strstr(c, "<think>"); q && q < *r1; q = strstr(q + 1, "<think>")) open = q;
    *r0 = skip_nl(open ? open + strlen("<think>") : c, *r1);
}

/* Qwen 3's assistant turn i: a '</think>' in it splits reasoning from the
 * answer; after the last user query the turn is written with its reasoning
 * block (always when it is the last message), before it with the answer
 * only. */
static void qwen3_assistant(const lb_chat_msg *m, int i, int n, int last_query, sbuf *b) {
    const char *c = content(&m[i]), *end = c + strlen(c), *ans, *r0, *r1;
    split_think(c, &ans, &r0, &r1);
    put(b, "<|im_start|>assistant\n");
    if (i > last_query && (i == n - 1 || r1 > r0)) {
        /* '<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n');
         * [r0, r1) is stripped already */
        put(b, "<think>\n");
        put_n(b, r0, (size_t)(r1 - r0));
        put(b, "\n</think>\n\n");
        put(b, skip_nl(ans, end));
    } else {
        put(b, ans);
    }
    put(b, "<|im_end|>\n");
}

static lb_status chatml(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    if (t->has_default_system && !first_system(m, n)) {
        put(b, "<|im_start|>system\n");
        put(b, t->default_system);
        put(b, "<|im_end|>\n");
    }
    /* Qwen 3: the last user message that is not a wrapped tool response */
    int last_query = n - 1;
    for (int i = n - 1; t->qwen3_think && i >= 0; i--) {
        const char *c = content(&m[i]);
        const size_t cn = strlen(c), tn = strlen("</tool_response>");
        if (is(&m[i], "user") &&
            !(!strncmp(c, "<tool_response>", strlen("<tool_response>")) && cn >= tn && !strcmp(c + cn - tn, "</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        if (t->qwen3_think && is(&m[i], "assistant")) {
            qwen3_assistant(m, i, n, last_query, b);
            continue;
        }
        put(b, "<|im_start|>"); /* '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' */
        put(b, m[i].role);
        put(b, "\n");
        put(b, content(&m[i]));
        put(b, "<|im_end|>\n");
    }
    put(b, "<|im_start|>assistant\n");
    if (t->thinking_switch && t->thinking == 0) put(b, "<think>\n\n</think>\n\n"); /* enable_thinking is false */
    return LB_OK;
}

static lb_status phi3(const lb_chat_msg *m, int n, sbuf *b) {
    for (int i = 0; i < n; i++) {
        /* system (if its content is not empty), user, assistant:
         * '<|' role '|>\n' + message['content'] + '<|end|>\n'; other roles nothing */
        const char *c = content(&m[i]);
        if (!(is(&m[i], "system") && *c) && !is(&m[i], "user") && !is(&m[i], "assistant")) continue;
        put(b, "<|");
        put(b, m[i].role);
        put(b, "|>\n");
        put(b, c);
        put(b, "<|end|>\n");
    }
    put(b, "<|assistant|>\n");
    return LB_OK;
}

/* gpt-oss (openai-gpt-oss-120b.jinja without tools, builtin_tools or
 * model_identity: their defaults; reasoning_effort from t): the system preamble
 * with today's date, a first system message as the developer's
 * instructions, user turns, and earlier assistant turns as their final
 * channel (reasoning is never sent back); later system messages are not
 * written. */
static lb_status gpt_oss(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b) {
    char today[32];
    if (!date) date = today_as(today, "%Y-%m-%d"); /* strftime_now("%Y-%m-%d") */
    put(b, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
           "Knowledge cutoff: 2024-06\nCurrent date: ");
    put(b, date);
    put(b, "\n\nReasoning: "); /* "Reasoning: " + reasoning_effort */
    put(b, t->reasoning_effort[0] ? t->reasoning_effort : "medium");
    put(b, "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>");
    const int off = n > 0 && (is(&m[0], "system") || is(&m[0], "developer"));
    if (off && *content(&m[0])) {
        put(b, "<|start|>developer<|message|># Instructions\n\n");
        put(b, content(&m[0]));
        put(b, "\n\n<|end|>");
    }
    for (int i = off; i < n; i++) {
        const char *c = content(&m[i]);
        if (is(&m[i], "assistant")) {
            if (strstr(c, "<|channel|>analysis<|message|>") || strstr(c, "<|channel|>final<|message|>"))
                return raise("You have passed a message containing <|channel|> tags in the content field. Instead of "
                             "doing this, you should pass analysis messages (the string between '<|message|>' and "
                             "'<|end|>') in the 'thinking' field, and final messages (the string between "
                             "'<|message|>' and '<|end|>') in the 'content' field.");
            put(b, "<|start|>assistant<|channel|>final<|message|>");
            put(b, c);
            put(b, "<|end|>");
        } else if (is(&m[i], "user")) {
            put(b, "<|start|>user<|message|>");
            put(b, c);
            put(b, "<|end|>");
        } else if (is(&m[i], "tool")) {
            return raise("Message has tool role, but there was no previous assistant message with a tool call!");
        }
    }
    put(b, "<|start|>assistant");
    return LB_OK;
}

static lb_status gemma(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    const int g3 = t->family == LB_CHAT_GEMMA3, off = first_system(m, n);
    if (off && !g3) return raise("System role not supported");
    put(b, t->bos);
    for (int i = off; i < n; i++) {
        if (is(&m[i], "user") != ((i - off) % 2 == 0)) return raise(ALTERNATE);
        /* '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") + content | trim */
        put(b, "<start_of_turn>");
        put(b, is(&m[i], "assistant") ? "model" : m[i].role);
        put(b, "\n");
        if (g3 && off && i == off) {
            put(b, content(&m[0]));
            put(b, t->gemma_sep);
        }
        put_trim(b, content(&m[i]));
        put(b, "<end_of_turn>\n");
    }
    put(b, "<start_of_turn>model\n");
    return LB_OK;
}

/* DeepSeek-R1's template (and its distills'): BOS, then the last system
 * message as it is; '<｜User｜>' + each user message; '<｜Assistant｜>' + each
 * assistant message after its last '</think>' (content.split('</think>')[-1])
 * + '<｜end▁of▁sentence｜>'; the prompt ends '<｜Assistant｜><think>\n'.
 * Tool calls and outputs are the template's too, not lowbit's. */
#define DS_USER "<\xef\xbd\x9c" "User\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"
#define DS_END "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
static lb_status deepseek_r1(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    const char *sys = "";
    for (int i = 0; i < n; i++)
        if (is(&m[i], "system")) sys = content(&m[i]);
    put(b, t->bos);
    put(b, sys);
    for (int i = 0; i < n; i++) {
        const char *c = content(&m[i]), *after = find_last(c, "</think>");
        if (is(&m[i], "user")) {
            put(b, DS_USER);
            put(b, c);
        } else if (is(&m[i], "assistant")) {
            put(b, DS_ASSISTANT);
            put(b, after ? after + strlen("</think>") : c);
            put(b, DS_END);
        } else if (!is(&m[i], "system")) {
            return raise("Only user, system and assistant roles are supported!");
        }
    }
    put(b, DS_ASSISTANT "<think>\n");
    return LB_OK;
}

/* DeepSeek-V3.1's template, without tools, `thinking` from enable_thinking
 * (off unless it is true): BOS, then the system messages joined by '\n\n';
 * '<｜User｜>' + each user message; an assistant message opens with
 * '<｜Assistant｜><think></think>' only right after a user message, then
 * its content after the first '</think>' (content.split('</think>', 1)[1])
 * + '<｜end▁of▁sentence｜>'; the prompt is '<｜Assistant｜><think></think>'
 * ('<｜Assistant｜><think>' thinking), written only when the last turn is a
 * user's. */
static lb_status deepseek_v31(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    put(b, t->bos);
    int n_sys = 0, last_user = 0;
    for (int i = 0; i < n; i++)
        if (is(&m[i], "system")) {
            if (n_sys++) put(b, "\n\n");
            put(b, content(&m[i]));
        }
    for (int i = 0; i < n; i++) {
        const char *c = content(&m[i]);
        if (is(&m[i], "user")) {
            put(b, DS_USER);
            put(b, c);
            last_user = 1;
        } else if (is(&m[i], "assistant")) {
            const char *close = strstr(c, "</think>");
            if (last_user) put(b, DS_ASSISTANT "<think></think>");
            last_user = 0;
            put(b, close ? close + strlen("</think>") : c);
            put(b, DS_END);
        } else if (!is(&m[i], "system")) {
            return raise("Only user, system and assistant roles are supported!");
        }
    }
    if (last_user) put(b, t->thinking == 1 ? DS_ASSISTANT "<think>" : DS_ASSISTANT "<think></think>");
    return LB_OK;
}

/* GLM-4.7's template, without tools: '[gMASK]<sop>', then '<|system|>',
 * '<|user|>' + each message as it is; '<|assistant|>' + (after the last user
 * message and with reasoning: '<think>' + reasoning.strip() + '</think>';
 * else '</think>') + the answer stripped, where a '</think>' in the turn
 * splits reasoning (before the first, after its last '<think>', newlines
 * off its ends) from the answer (after the last, leading newlines off); the
 * prompt ends '<|assistant|><think>' ('<|assistant|></think>' with
 * enable_thinking false).
 * GLM-4.5 / 4.6's (v45): a newline after '<|system|>' and '<|user|>' (and
 * with enable_thinking false, '/nothink' after a user message that does not
 * end with it); '<|assistant|>' + (with reasoning as above:
 * '\n<think>' + reasoning.strip() + '</think>'; else '\n<think></think>') +
 * ('\n' + the answer stripped, if any); the prompt ends '<|assistant|>'
 * ('<|assistant|>\n<think></think>' with enable_thinking false). */
static lb_status glm(const lb_chat_template *t, const lb_chat_msg *m, int n, int v45, sbuf *b) {
    const int off = t->thinking == 0; /* enable_thinking is false */
    int last_user = -1;
    for (int i = 0; i < n; i++)
        if (is(&m[i], "user")) last_user = i;
    put(b, "[gMASK]<sop>");
    for (int i = 0; i < n; i++) {
        const char *c = content(&m[i]), *ans, *r0, *r1;
        if (is(&m[i], "user") || is(&m[i], "system")) {
            put(b, is(&m[i], "user") ? "<|user|>" : "<|system|>");
            if (v45) put(b, "\n");
            put(b, c);
            const size_t cn = strlen(c), nn = strlen("/nothink");
            if (v45 && off && is(&m[i], "user") && !(cn >= nn && !strcmp(c + cn - nn, "/nothink"))) put(b, "/nothink");
            continue;
        }
        if (!is(&m[i], "assistant")) return raise("Only user, system and assistant roles are supported!");
        split_think(c, &ans, &r0, &r1);
        put(b, v45 ? "<|assistant|>\n" : "<|assistant|>");
        const int reasoning = i > last_user && r1 > r0;
        if (reasoning) {
            put(b, "<think>");
            put_trim_n(b, r0, (size_t)(r1 - r0));
        } else if (v45) {
            put(b, "<think>");
        }
        put(b, "</think>");
        size_t a, e;
        trim_bounds(ans, strlen(ans), &a, &e);
        if (v45 && e > a) put(b, "\n");
        put_n(b, ans + a, e - a);
    }
    put(b, v45 ? (off ? "<|assistant|>\n<think></think>" : "<|assistant|>") : off ? "<|assistant|></think>" : "<|assistant|><think>");
    return LB_OK;
}

/* Command R / R+'s template: BOS; a first system message (even an empty
 * one) as a SYSTEM turn; then turns that must alternate user / assistant
 * from a user, each content stripped (a later system message in an
 * assistant's place is skipped, in a user's an error); the prompt opens a
 * CHATBOT turn. */
static lb_status command_r(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    put(b, t->bos);
    const int sys = first_system(m, n);
    if (sys) {
        put(b, "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>");
        put(b, content(&m[0]));
        put(b, "<|END_OF_TURN_TOKEN|>");
    }
    for (int i = sys; i < n; i++) {
        const int user = is(&m[i], "user");
        if (user != ((i - sys) % 2 == 0)) return raise(ALTERNATE);
        if (!user && !is(&m[i], "assistant")) continue;
        put(b, user ? "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>" : "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
        put_trim(b, content(&m[i]));
        put(b, "<|END_OF_TURN_TOKEN|>");
    }
    put(b, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
    return LB_OK;
}

lb_status lb_chat_apply(const lb_chat_template *t, const lb_chat_msg *msgs, int n, const char *date, char **out,
                        size_t *out_len) {
    *out = NULL;
    if (out_len) *out_len = 0;
    if (n < 0 || (n > 0 && !msgs)) return lb_fail(LB_ERR_ARG, "lb_chat_apply: bad arguments");
    for (int i = 0; i < n; i++)
        if (!msgs[i].role) return lb_fail(LB_ERR_ARG, "message %d has no role", i);
    sbuf b = {0};
    put(&b, ""); /* an empty result is still a string */
    lb_status s;
    switch (t->family) {
    case LB_CHAT_LLAMA2: s = llama2(t, msgs, n, &b); break;
    case LB_CHAT_LLAMA3:
    case LB_CHAT_LLAMA31: s = llama3(t, msgs, n, date, &b); break;
    case LB_CHAT_CHATML: s = chatml(t, msgs, n, &b); break;
    case LB_CHAT_GEMMA:
    case LB_CHAT_GEMMA3: s = gemma(t, msgs, n, &b); break;
    case LB_CHAT_PHI3: s = phi3(msgs, n, &b); break;
    case LB_CHAT_GPT_OSS: s = gpt_oss(t, msgs, n, date, &b); break;
    case LB_CHAT_DEEPSEEK_R1: s = deepseek_r1(t, msgs, n, &b); break;
    case LB_CHAT_GLM47: s = glm(t, msgs, n, 0, &b); break;
    case LB_CHAT_GLM45: s = glm(t, msgs, n, 1, &b); break;
    case LB_CHAT_DEEPSEEK_V31: s = deepseek_v31(t, msgs, n, &b); break;
    case LB_CHAT_COMMAND_R: s = command_r(t, msgs, n, &b); break;
    case LB_CHAT_MISTRAL:
    case LB_CHAT_MISTRAL_V1:
    case LB_CHAT_MISTRAL_V3:
    case LB_CHAT_MISTRAL_V3_TEKKEN:
    case LB_CHAT_MISTRAL_V7: s = mistral(t, msgs, n, &b); break;
    default: s = lb_fail(LB_ERR_ARG, "bad chat template family %d", (int)t->family);
    }
    if (!s && b.oom) s = lb_fail(LB_ERR_NOMEM, "out of memory formatting a conversation");
    if (s) {
        free(b.p);
        return s;
    }
    *out = b.p;
    if (out_len) *out_len = b.n;
    return LB_OK;
}

/* ---- gpt-oss's harmony replies ---- */

void lb_harmony_init(lb_harmony *h) { memset(h, 0, sizeof *h); } /* the prompt ends in a header */

lb_harmony_kind lb_harmony_step(lb_harmony *h, const char *text, const char *piece, size_t len) {
    if (!strcmp(text, "<|channel|>")) {
        h->state = 1, h->n_channel = 0, h->channel[0] = 0;
    } else if (!strcmp(text, "<|message|>")) {
        h->state = 2;
        h->answer = !strcmp(h->channel, "final");
    } else if (!strcmp(text, "<|end|>") || !strcmp(text, "<|start|>") || !strcmp(text, "<|return|>") ||
               !strcmp(text, "<|call|>")) {
        h->state = 0;
    } else if (h->state == 1) { /* the channel's name, possibly in pieces */
        const size_t room = sizeof h->channel - 1 - h->n_channel, k = len < room ? len : room;
        memcpy(h->channel + h->n_channel, piece, k);
        h->n_channel += k;
        h->channel[h->n_channel] = 0;
    } else if (h->state == 2) {
        return h->answer ? LB_HARMONY_ANSWER : LB_HARMONY_REASONING;
    }
    return LB_HARMONY_NONE; /* control tokens, channel names, headers ("assistant") */
}
