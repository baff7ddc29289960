/* Chat formatters (model/chat_template.h), one per family: each follows its
 * official Jinja template statement by statement; the comments quote the
 * parts that decide the bytes. The reasoning models' families are in
 * chat_format_think.c. */
#include <stdio.h>

#include "model/chat_format_impl.h"

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


/* JSON text (compact, as `tojson` writes it) as Python's json.dumps(indent=4)
 * writes the same value: every member and item on its own line, indented by
 * depth, "{}" and "[]" when empty. Strings are copied as they are. */
static void put_json_indent4(sbuf *b, const char *j) {
    int depth = 0;
    for (const char *p = j; *p; p++) {
        const char c = *p;
        if (c == '"') { /* a string, escapes and all */
            const char *e = p + 1;
            while (*e && *e != '"') e += e[0] == '\\' && e[1] ? 2 : 1;
            put_n(b, p, (size_t)(e - p) + (*e != 0));
            p = *e ? e : e - 1;
        } else if (c == '{' || c == '[') {
            const char *q = p + 1;
            while (*q == ' ' || *q == '\n') q++;
            if (*q == (c == '{' ? '}' : ']')) { /* empty */
                put_n(b, c == '{' ? "{}" : "[]", 2);
                p = q;
                continue;
            }
            put_n(b, &c, 1);
            put(b, "\n");
            depth++;
            for (int k = 0; k < depth; k++) put(b, "    ");
        } else if (c == '}' || c == ']') {
            put(b, "\n");
            depth--;
            for (int k = 0; k < depth; k++) put(b, "    ");
            put_n(b, &c, 1);
        } else if (c == ',') {
            put(b, ",\n");
            for (int k = 0; k < depth; k++) put(b, "    ");
        } else if (c == ':') put(b, ": ");
        else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') put_n(b, &c, 1);
    }
}

/* A string as Python's json.dumps(s, ensure_ascii=False) writes it. */
static void put_json_string(sbuf *b, const char *s) {
    put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        static const char esc[] = "\"\"\\\\\bb\ff\nn\rr\tt";
        const char *e = NULL;
        for (int k = 0; esc[k]; k += 2)
            if ((unsigned char)esc[k] == *p) e = esc + k + 1;
        char u[8];
        if (e) {
            put(b, "\\");
            put_n(b, e, 1);
        } else if (*p < 0x20) {
            snprintf(u, sizeof u, "\\u%04x", *p);
            put(b, u);
        } else put_n(b, (const char *)p, 1);
    }
    put(b, "\"");
}

static lb_status llama3(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b) {
    if (t->family == LB_CHAT_LLAMA3) {
        for (int i = 0; i < n; i++) {
            if (i == 0) put(b, t->bos); /* {% if loop.index0 == 0 %}{% set content = bos_token + content %} */
            llama3_turn(b, m[i].role, content(&m[i]));
        }
        put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        return LB_OK;
    }
    /* 3.1+: {{- bos_token }} ... the system header always, with the dates and the trimmed system message */
    const int off = first_system(m, n), tools = t->tool_calls && t->n_tools > 0 && t->tools;
    char today[32];
    if (!date && t->date_now) date = today_as(today, "%d %b %Y");
    put(b, t->bos);
    put(b, "<|start_header_id|>system<|end_header_id|>\n\n");
    if (tools) put(b, "Environment: ipython\n"); /* {%- if builtin_tools is defined or tools is not none %} */
    put(b, "Cutting Knowledge Date: December 2023\n");
    put(b, "Today Date: ");
    put(b, date && t->date_now ? date : t->date);
    put(b, "\n\n");
    if (off) put_trim(b, content(&m[0]));
    put(b, "<|eot_id|>");
    int i = off;
    if (tools) { /* tools_in_user_message (its default): the tools, then the first message's text, as a user turn */
        if (i >= n) return raise("Cannot put tools in the first user message when there's no first user message!");
        put(b, "<|start_header_id|>user<|end_header_id|>\n\n");
        put(b, "Given the following functions, please respond with a JSON for a function call with its proper "
               "arguments that best answers the given prompt.\n\n");
        put(b, "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its "
               "value}.Do not use variables.\n\n");
        for (int k = 0; k < t->n_tools; k++) { /* t | tojson(indent=4) + "\n\n" */
            put_json_indent4(b, t->tools[k]);
            put(b, "\n\n");
        }
        put_trim(b, content(&m[i++]));
        put(b, "<|eot_id|>");
    }
    for (; i < n; i++) {
        if (t->tool_calls && (is(&m[i], "tool") || is(&m[i], "ipython"))) {
            /* a string is iterable: {{- message.content | tojson }} */
            put(b, "<|start_header_id|>ipython<|end_header_id|>\n\n");
            put_json_string(b, content(&m[i]));
            put(b, "<|eot_id|>");
        } else if (t->tool_calls && m[i].n_calls > 0) {
            if (m[i].n_calls != 1) return raise("This model only supports single tool-calls at once!");
            /* '{"name": "' + tool_call.name + '", ' + '"parameters": ' + tool_call.arguments | tojson + "}" */
            put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"");
            put(b, m[i].calls[0].name);
            put(b, "\", \"parameters\": ");
            put(b, m[i].calls[0].arguments ? m[i].calls[0].arguments : "{}");
            put(b, "}<|eot_id|>");
        } else llama3_turn(b, m[i].role, content(&m[i]));
    }
    put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return LB_OK;
}

#define MISTRAL_IDS "Tool call IDs should be alphanumeric strings with length 9!"

/* The end of the JSON value at p (compact JSON text): past a string, a
 * nested object or array, or a scalar. */
static const char *json_skip(const char *p) {
    if (*p == '"') {
        for (p++; *p && *p != '"'; p += p[0] == '\\' && p[1] ? 2 : 1) {}
        return *p ? p + 1 : p;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; *p; p++) {
            if (*p == '"') p = json_skip(p) - 1;
            else if (*p == '{' || *p == '[') depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']') p++;
    return p;
}

/* The text of the JSON string [p, e) (quotes included), unescaped: what
 * Jinja prints for a string value. */
static void put_json_unescaped(sbuf *b, const char *p, const char *e) {
    for (p++, e--; p < e; p++) {
        if (*p != '\\' || p + 1 >= e) { put_n(b, p, 1); continue; }
        const char c = *++p;
        const char one = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
        if (c != 'u') { put_n(b, &one, 1); continue; } /* \" \\ \/ and the control escapes */
        if (p + 4 >= e) continue;
        unsigned v = (unsigned)strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
        p += 4;
        if (v >= 0xD800 && v < 0xDC00 && p + 6 < e && p[1] == '\\' && p[2] == 'u') { /* a surrogate pair */
            const unsigned lo = (unsigned)strtoul((char[5]){p[3], p[4], p[5], p[6], 0}, NULL, 16);
            if (lo >= 0xDC00 && lo < 0xE000) v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00), p += 6;
        }
        char u[4];
        int n = 0;
        if (v < 0x80) u[n++] = (char)v;
        else if (v < 0x800) u[n++] = (char)(0xC0 | v >> 6), u[n++] = (char)(0x80 | (v & 0x3F));
        else if (v < 0x10000) u[n++] = (char)(0xE0 | v >> 12), u[n++] = (char)(0x80 | (v >> 6 & 0x3F)), u[n++] = (char)(0x80 | (v & 0x3F));
        else u[n++] = (char)(0xF0 | v >> 18), u[n++] = (char)(0x80 | (v >> 12 & 0x3F)), u[n++] = (char)(0x80 | (v >> 6 & 0x3F)), u[n++] = (char)(0x80 | (v & 0x3F));
        put_n(b, u, (size_t)n);
    }
}

/* A tool (its JSON text as tojson writes it) as Mistral v3's template writes
 * it: '{"type": "function", "function": {' + each of the function's members
 * but "return", a string as '"key": "' + val + '"' (unescaped), others as
 * '"key": ' + val|tojson, joined by ", " + "}}". -1: no "function" object. */
static int mistral_tool(sbuf *b, const char *j) {
    const char *p = j;
    while (*p && *p != '{') p++;
    if (!*p) return -1;
    for (p++;;) { /* the tool's members: find "function" */
        while (*p == ' ' || *p == ',') p++;
        if (*p != '"') return -1;
        const char *k = p, *ke = json_skip(p);
        p = ke;
        while (*p == ' ' || *p == ':') p++;
        if (ke - k == 10 && !strncmp(k, "\"function\"", 10) && *p == '{') break;
        p = json_skip(p);
    }
    put(b, "{\"type\": \"function\", \"function\": {");
    int first = 1;
    for (p++;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p != '"') break;
        const char *k = p, *ke = json_skip(p);
        const char *v = ke;
        while (*v == ' ' || *v == ':') v++;
        const char *ve = json_skip(v);
        p = ve;
        if (ke - k == 8 && !strncmp(k, "\"return\"", 8)) continue;
        if (!first) put(b, ", ");
        first = 0;
        put(b, "\"");
        put_json_unescaped(b, k, ke);
        put(b, "\": ");
        if (*v == '"') {
            put(b, "\"");
            put_json_unescaped(b, v, ve);
            put(b, "\"");
        } else put_n(b, v, (size_t)(ve - v));
    }
    put(b, "}}");
    return 0;
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
        const int tools = t->tool_calls && t->n_tools > 0 && t->tools;
        /* the alternation is checked over all of loop_messages before any output, skipping tool results and
         * messages with tool calls */
        int last_user = -1;
        for (int i = off, k = 0; i < n; i++) {
            if (t->tool_calls && (is(&m[i], "tool") || m[i].n_calls > 0)) continue;
            if (is(&m[i], "user") != (k++ % 2 == 0)) return raise(ALTERNATE_V1);
        }
        for (int i = off; i < n; i++)
            if (is(&m[i], "user")) last_user = i;
        put(b, t->bos);
        for (int i = off; i < n; i++) {
            if (is(&m[i], "user")) {
                /* tools is not none and (message == user_messages[-1]): the same text as the last user turn */
                if (tools && !strcmp(content(&m[i]), content(&m[last_user]))) {
                    put(b, tekken ? "[AVAILABLE_TOOLS][" : "[AVAILABLE_TOOLS] [");
                    for (int k = 0; k < t->n_tools; k++) {
                        if (k) put(b, ", ");
                        if (mistral_tool(b, t->tools[k])) return raise("a tool without a \"function\" object");
                    }
                    put(b, "][/AVAILABLE_TOOLS]");
                }
                put(b, tekken ? "[INST]" : "[INST] "); /* loop.last and system_message is defined */
                if (i == n - 1 && off) {
                    put(b, content(&m[0]));
                    put(b, "\n\n");
                }
                put(b, content(&m[i]));
                put(b, "[/INST]");
            } else if (t->tool_calls && m[i].n_calls > 0) {
                /* tool_call.function|tojson minus its '}', then ', "id": "' + tool_call.id + '"}' */
                put(b, tekken ? "[TOOL_CALLS][" : "[TOOL_CALLS] [");
                for (int k = 0; k < m[i].n_calls; k++) {
                    const lb_chat_tool_call *c = &m[i].calls[k];
                    if (!c->id || strlen(c->id) != 9) return raise(MISTRAL_IDS);
                    put(b, k ? ", {\"name\": " : "{\"name\": ");
                    put_json_string(b, c->name);
                    put(b, ", \"arguments\": ");
                    put(b, c->arguments ? c->arguments : "{}");
                    put(b, ", \"id\": \"");
                    put(b, c->id);
                    put(b, "\"}");
                }
                put(b, "]");
                put(b, t->eos);
            } else if (is(&m[i], "assistant")) {
                if (tekken) put(b, content(&m[i])); /* message["content"] + eos_token */
                else {
                    put(b, " "); /* " " + message["content"]|trim + eos_token */
                    put_trim(b, content(&m[i]));
                }
                put(b, t->eos);
            } else if (t->tool_calls && is(&m[i], "tool")) {
                /* '[TOOL_RESULTS]{"content": ' + content|string + ", " + '"call_id": "' + message.tool_call_id + '"}' */
                put(b, tekken ? "[TOOL_RESULTS]{\"content\": " : "[TOOL_RESULTS] {\"content\": ");
                put(b, content(&m[i]));
                put(b, ", ");
                if (!m[i].tool_call_id || strlen(m[i].tool_call_id) != 9) return raise(MISTRAL_IDS);
                put(b, "\"call_id\": \"");
                put(b, m[i].tool_call_id);
                put(b, "\"}[/TOOL_RESULTS]");
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

/* Qwen 3's assistant turn i: a '</think>' in it splits reasoning from the
 * answer; after the last user query the turn is written with its reasoning
 * block (always when it is the last message), before it with the answer
 * only. */
static void tool_calls(const lb_chat_msg *m, int qwen3, int answer, sbuf *b);

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
    tool_calls(&m[i], 1, *ans != 0, b);
    put(b, "<|im_end|>\n");
}

/* An assistant message's tool calls, after its text: each
 * '<tool_call>\n{"name": "' + name + '", "arguments": ' + arguments + '}\n</tool_call>',
 * after a newline (Qwen 3: but for the first when the answer is empty) */
static void tool_calls(const lb_chat_msg *m, int qwen3, int answer, sbuf *b) {
    for (int k = 0; k < m->n_calls && m->calls; k++) {
        if (!qwen3 || k > 0 || answer) put(b, "\n");
        put(b, "<tool_call>\n{\"name\": \"");
        put(b, m->calls[k].name ? m->calls[k].name : "");
        put(b, "\", \"arguments\": ");
        put(b, m->calls[k].arguments ? m->calls[k].arguments : "{}");
        put(b, "}\n</tool_call>");
    }
}

/* Qwen 2.5 / 3's tools header: the system turn with the first system
 * message (or Qwen 2.5's default one) and the tools' signatures */
static void tools_header(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    const int qwen25 = t->tools_head[0] == '\n'; /* the system text, then "\n\n# Tools..." */
    put(b, "<|im_start|>system\n");
    if (first_system(m, n)) {
        put(b, content(&m[0]));
        if (!qwen25) put(b, "\n\n"); /* Qwen 3: messages[0].content + '\n\n' */
    } else if (qwen25) {
        put(b, t->has_default_system ? t->default_system : "");
    }
    put(b, t->tools_head);
    for (int k = 0; k < t->n_tools; k++) {
        put(b, "\n");
        put(b, t->tools[k]);
    }
    put(b, t->tools_tail);
}

static lb_status chatml(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
    const int tools = t->tool_calls && t->n_tools > 0 && t->tools;
    if (tools) {
        tools_header(t, m, n, b);
    } else if (t->has_default_system && !first_system(m, n)) {
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
        if (tools && i == 0 && first_system(m, n)) continue; /* in the tools header */
        if (t->qwen3_think && is(&m[i], "assistant")) {
            qwen3_assistant(m, i, n, last_query, b);
            continue;
        }
        if (t->tool_calls && is(&m[i], "tool")) { /* consecutive results share one user turn */
            if (i == 0 || !is(&m[i - 1], "tool")) put(b, "<|im_start|>user");
            put(b, "\n<tool_response>\n");
            put(b, content(&m[i]));
            put(b, "\n</tool_response>");
            if (i == n - 1 || !is(&m[i + 1], "tool")) put(b, "<|im_end|>\n");
            continue;
        }
        if (t->tool_calls && is(&m[i], "assistant") && m[i].n_calls > 0) { /* Qwen 2.5 */
            put(b, "<|im_start|>assistant");
            if (*content(&m[i])) {
                put(b, "\n");
                put(b, content(&m[i]));
            }
            tool_calls(&m[i], 0, 1, b);
            put(b, "<|im_end|>\n");
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
    case LB_CHAT_DEEPSEEK_R1: s = chat_fmt_deepseek_r1(t, msgs, n, &b); break;
    case LB_CHAT_GLM47: s = chat_fmt_glm(t, msgs, n, 0, &b); break;
    case LB_CHAT_GLM45: s = chat_fmt_glm(t, msgs, n, 1, &b); break;
    case LB_CHAT_DEEPSEEK_V31: s = chat_fmt_deepseek_v31(t, msgs, n, &b); break;
    case LB_CHAT_COMMAND_R: s = chat_fmt_command_r(t, msgs, n, &b); break;
    case LB_CHAT_MISTRAL_SMALL3: s = chat_fmt_mistral_small3(t, msgs, n, date, &b); break;
    case LB_CHAT_GRANITE: s = chat_fmt_granite(t, msgs, n, date, &b); break;
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
