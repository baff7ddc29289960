/* The reasoning flags of chat and serve (cli/cli.h): llama.cpp's
 * --reasoning-budget, --chat-template-kwargs and --reasoning-format, and
 * gpt-oss's --reasoning-effort. lowbit's templates are C code, not Jinja, so
 * --chat-template-kwargs takes the keys they read; its JSON is one flat
 * object, parsed here (the CLI does not depend on a JSON library). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
    const char *p;
    char err[96];
} json_in;

static void ws(json_in *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

/* a JSON string into out (truncated to cap - 1 bytes; \uXXXX kept as is) */
static int json_string(json_in *j, char *out, size_t cap) {
    if (*j->p != '"') return snprintf(j->err, sizeof j->err, "expected a string at '%.12s'", j->p), -1;
    size_t n = 0;
    for (j->p++; *j->p != '"'; j->p++) {
        char c = *j->p;
        if (!c) return snprintf(j->err, sizeof j->err, "an unterminated string"), -1;
        if (c == '\\') {
            c = *++j->p;
            if (!c) return snprintf(j->err, sizeof j->err, "an unterminated string"), -1;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        if (n + 1 < cap) out[n++] = c;
    }
    j->p++;
    out[n] = 0;
    return 0;
}

typedef enum { J_FALSE, J_TRUE, J_NULL, J_STRING, J_NUMBER, J_NESTED } json_kind;

/* an array or object, skipped (no key the templates read takes one) */
static int json_skip_nested(json_in *j) {
    int depth = 0;
    char tmp[2];
    do {
        const char c = *j->p;
        if (!c) return snprintf(j->err, sizeof j->err, "an unterminated array or object"), -1;
        if (c == '"') {
            if (json_string(j, tmp, sizeof tmp)) return -1;
            continue;
        }
        depth += (c == '[' || c == '{') - (c == ']' || c == '}');
        j->p++;
    } while (depth > 0);
    return 0;
}

static int json_value(json_in *j, json_kind *k, char *str, size_t cap) {
    static const struct { const char *word; json_kind k; } words[] = {
        {"true", J_TRUE}, {"false", J_FALSE}, {"null", J_NULL}};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(j->p, words[i].word, strlen(words[i].word))) {
            j->p += strlen(words[i].word);
            *k = words[i].k;
            return 0;
        }
    if (*j->p == '"') {
        *k = J_STRING;
        return json_string(j, str, cap);
    }
    if (*j->p == '[' || *j->p == '{') {
        *k = J_NESTED;
        return json_skip_nested(j);
    }
    char *end;
    strtod(j->p, &end);
    if (end == j->p)
        return snprintf(j->err, sizeof j->err, "expected a value at '%.12s'", j->p), -1;
    j->p = end;
    *k = J_NUMBER;
    return 0;
}

/* {"enable_thinking": false, ...} into r; -1 with a message */
static int parse_kwargs(const char *cmd, const char *text, cli_reasoning *r) {
    json_in j = {text, ""};
    ws(&j);
    if (*j.p != '{') goto bad_object;
    j.p++;
    ws(&j);
    if (*j.p == '}') goto end;
    for (;;) {
        char key[64], str[64];
        json_kind k;
        ws(&j);
        if (json_string(&j, key, sizeof key)) goto bad;
        ws(&j);
        if (*j.p++ != ':') goto bad_object;
        ws(&j);
        if (json_value(&j, &k, str, sizeof str)) goto bad;
        if (!strcmp(key, "enable_thinking") || !strcmp(key, "thinking")) {
            if (k != J_TRUE && k != J_FALSE) {
                fprintf(stderr, "lowbit %s: --chat-template-kwargs: %s: expected true or false\n", cmd, key);
                return -1;
            }
            r->thinking = k == J_TRUE;
        } else if (!strcmp(key, "reasoning_effort")) {
            if (k != J_STRING || !lb_chat_reasoning_effort_known(str)) {
                fprintf(stderr, "lowbit %s: --chat-template-kwargs: reasoning_effort: expected \"low\", \"medium\" "
                                "or \"high\"\n", cmd);
                return -1;
            }
            snprintf(r->effort, sizeof r->effort, "%.7s", str);
        } else {
            fprintf(stderr, "lowbit %s: warning: --chat-template-kwargs: '%s' ignored (lowbit's templates read "
                            "enable_thinking, thinking and reasoning_effort)\n", cmd, key);
        }
        ws(&j);
        if (*j.p == ',') { j.p++; continue; }
        if (*j.p == '}') break;
        goto bad_object;
    }
end:
    j.p++;
    ws(&j);
    if (!*j.p) return 0;
bad_object:
    snprintf(j.err, sizeof j.err, "expected one JSON object of \"key\": value pairs");
bad:
    fprintf(stderr, "lowbit %s: --chat-template-kwargs '%s': %s\n", cmd, text, j.err);
    return -1;
}

int cli_reasoning_flag(cli_args *a, cli_reasoning *r) {
    const char *v;
    if (cli_flag(a, "--reasoning-budget", NULL)) {
        if (!(v = cli_value(a))) return 1;
        if (strcmp(v, "-1") && strcmp(v, "0")) {
            fprintf(stderr, "lowbit %s: --reasoning-budget %s: only -1 (no limit) and 0 (thinking off) are "
                            "supported, as in llama.cpp\n", a->cmd, v);
            a->bad = 1;
        } else {
            r->thinking = !strcmp(v, "0") ? 0 : -1;
        }
    } else if (cli_flag(a, "--chat-template-kwargs", NULL)) {
        if ((v = cli_value(a)) && parse_kwargs(a->cmd, v, r)) a->bad = 1;
    } else if (cli_flag(a, "--reasoning-effort", NULL)) {
        if (!(v = cli_value(a))) return 1;
        if (!lb_chat_reasoning_effort_known(v)) {
            fprintf(stderr, "lowbit %s: --reasoning-effort '%s': expected low, medium or high\n", a->cmd, v);
            a->bad = 1;
        } else {
            snprintf(r->effort, sizeof r->effort, "%.7s", v);
        }
    } else if (cli_flag(a, "--reasoning-format", NULL)) {
        if (!(v = cli_value(a))) return 1;
        if (!strcmp(v, "none")) r->format = 0;
        else if (!strcmp(v, "deepseek") || !strcmp(v, "auto")) r->format = 1;
        else {
            fprintf(stderr, "lowbit %s: --reasoning-format '%s': expected none, deepseek or auto\n", a->cmd, v);
            a->bad = 1;
        }
    } else {
        return 0;
    }
    return 1;
}

void cli_reasoning_apply(const char *cmd, const cli_reasoning *r, lb_chat_template *t) {
    if (r->effort[0]) lb_chat_set_reasoning_effort(t, r->effort);
    if (r->thinking < 0) return;
    lb_chat_set_thinking(t, r->thinking);
    if (!t->thinking_switch)
        fprintf(stderr, "lowbit %s: warning: the %s chat template has no thinking switch: thinking %s changes "
                        "nothing\n", cmd, lb_chat_family_name(t->family), r->thinking ? "on" : "off");
}
