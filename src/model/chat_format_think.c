/* Chat formatters of the reasoning models' and newer families (DeepSeek,
 * GLM, Mistral Small 3, Granite, Command R): model/chat_template.h. */
#include "model/chat_format_impl.h"

/* DeepSeek-R1's template (and its distills'): BOS, then the last system
 * message as it is; '<｜User｜>' + each user message; '<｜Assistant｜>' + each
 * assistant message after its last '</think>' (content.split('</think>')[-1])
 * + '<｜end▁of▁sentence｜>'; the prompt ends '<｜Assistant｜><think>\n'.
 * Tool calls and outputs are the template's too, not lowbit's. */
#define DS_USER "<\xef\xbd\x9c" "User\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"
#define DS_END "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
lb_status chat_fmt_deepseek_r1(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
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
lb_status chat_fmt_deepseek_v31(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
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
lb_status chat_fmt_glm(const lb_chat_template *t, const lb_chat_msg *m, int n, int v45, sbuf *b) {
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

/* Mistral Small 3.2's template, without tools: BOS, '[SYSTEM_PROMPT]' + the
 * first message if it is a system one, else the default (with today's date,
 * strftime_now("%Y-%m-%d")) + '[/SYSTEM_PROMPT]'; the rest must alternate
 * user / assistant (a later system message counts in the alternation) and
 * is written as '[SYSTEM_PROMPT]x[/SYSTEM_PROMPT]', '[INST]x[/INST]' and
 * 'x' + EOS; no generation prompt of its own. */
lb_status chat_fmt_mistral_small3(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b) {
    const int off = first_system(m, n);
    for (int i = off, k = 0; i < n; i++)
        if (!is(&m[i], "tool") && is(&m[i], "user") != (k++ % 2 == 0)) return raise(ALTERNATE_V1);
    char today[32];
    if (!date) date = today_as(today, "%Y-%m-%d");
    put(b, t->bos);
    put(b, "[SYSTEM_PROMPT]");
    if (off) {
        put(b, content(&m[0]));
    } else if (t->default_system_date >= 0) {
        put_n(b, t->default_system, (size_t)t->default_system_date);
        put(b, date);
        put(b, t->default_system + t->default_system_date);
    } else {
        put(b, t->default_system);
    }
    put(b, "[/SYSTEM_PROMPT]");
    for (int i = off; i < n; i++) {
        const char *c = content(&m[i]);
        if (is(&m[i], "system")) {
            put(b, "[SYSTEM_PROMPT]");
            put(b, c);
            put(b, "[/SYSTEM_PROMPT]");
        } else if (is(&m[i], "user")) {
            put(b, "[INST]");
            put(b, c);
            put(b, "[/INST]");
        } else if (is(&m[i], "assistant")) {
            put(b, c);
            put(b, t->eos);
        } else if (is(&m[i], "tool") || is(&m[i], "tool_results")) {
            return raise("Tool call IDs should be alphanumeric strings with length 9!");
        } else {
            return raise("Only system, user, assistant, and tool roles are supported!");
        }
    }
    return LB_OK;
}

/* Granite 3.3's template, without tools, documents or controls: the first
 * message if it is a system one, else the default (today's date as
 * strftime_now('%B %d, %Y'); the longer text with `thinking`), as a system
 * turn; every other message as '<|start_of_role|>' + role + '<|end_of_role|>'
 * + content + '<|end_of_text|>\n', whatever its role; the prompt
 * '<|start_of_role|>assistant<|end_of_role|>' only after a message. */
lb_status chat_fmt_granite(const lb_chat_template *t, const lb_chat_msg *m, int n, const char *date, sbuf *b) {
    const int off = n > 0 && is(&m[0], "system");
    char today[32];
    if (!date) date = today_as(today, "%B %d, %Y");
    put(b, "<|start_of_role|>system<|end_of_role|>");
    if (off) {
        put(b, content(&m[0]));
    } else {
        put_n(b, t->default_system, (size_t)LB_MAX(t->default_system_date, 0));
        if (t->default_system_date >= 0) put(b, date);
        put(b, t->default_system + LB_MAX(t->default_system_date, 0));
        put(b, t->system_suffix[t->thinking == 1]);
    }
    put(b, "<|end_of_text|>\n");
    for (int i = off; i < n; i++) {
        put(b, "<|start_of_role|>");
        put(b, m[i].role);
        put(b, "<|end_of_role|>");
        put(b, content(&m[i]));
        put(b, "<|end_of_text|>\n");
        if (i == n - 1) put(b, "<|start_of_role|>assistant<|end_of_role|>");
    }
    return LB_OK;
}

/* Command R / R+'s template: BOS; a first system message (even an empty
 * one) as a SYSTEM turn; then turns that must alternate user / assistant
 * from a user, each content stripped (a later system message in an
 * assistant's place is skipped, in a user's an error); the prompt opens a
 * CHATBOT turn. */
lb_status chat_fmt_command_r(const lb_chat_template *t, const lb_chat_msg *m, int n, sbuf *b) {
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
