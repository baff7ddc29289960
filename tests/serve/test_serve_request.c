/* lowbit serve's request side of tool calls (src/serve/request.c): an
 * OpenAI chat request with tools, an assistant's tool calls (arguments as
 * JSON text) and tool results goes through srv_parse_request and the Qwen
 * formatters and gives, byte for byte, what jinja2 renders from the real
 * templates for the same conversation (tests/data/chat-templates/
 * expected.inc's tool conversations); the tools and arguments are written as
 * Python's json.dumps writes them; a reply's <tool_call> blocks are cut out
 * as calls, and malformed ones stay text; bad tool fields are 400s. Built
 * only with the server's libraries (cJSON). */
#include <cjson/cJSON.h>

#include "model/chat_template.h"
#include "serve/serve.h"
#include "test_util.h"

#include "data/chat-templates/expected.inc"

/* the tool conversations as OpenAI requests: arguments as JSON strings */
static char *request_of(const lb_chat_msg *m, int n, int with_tools) {
    cJSON *o = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(o, "messages");
    for (int i = 0; i < n; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "role", m[i].role);
        cJSON_AddStringToObject(j, "content", m[i].content);
        if (m[i].n_calls) {
            cJSON *calls = cJSON_AddArrayToObject(j, "tool_calls");
            for (int k = 0; k < m[i].n_calls; k++) {
                cJSON *c = cJSON_CreateObject(), *f;
                cJSON_AddStringToObject(c, "id", m[i].calls[k].id ? m[i].calls[k].id : "call_1");
                cJSON_AddStringToObject(c, "type", "function");
                f = cJSON_AddObjectToObject(c, "function");
                cJSON_AddStringToObject(f, "name", m[i].calls[k].name);
                cJSON *args = cJSON_Parse(m[i].calls[k].arguments); /* re-printed compactly: a JSON string */
                char *txt = cJSON_PrintUnformatted(args);
                cJSON_AddStringToObject(f, "arguments", txt);
                free(txt);
                cJSON_Delete(args);
                cJSON_AddItemToArray(calls, c);
            }
        }
        if (m[i].tool_call_id) cJSON_AddStringToObject(j, "tool_call_id", m[i].tool_call_id);
        cJSON_AddItemToArray(msgs, j);
    }
    if (with_tools) {
        cJSON *tools = cJSON_AddArrayToObject(o, "tools");
        for (size_t k = 0; k < sizeof tool_json / sizeof tool_json[0]; k++)
            cJSON_AddItemToArray(tools, cJSON_Parse(tool_json[k]));
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void check_tool_requests(void) {
    for (size_t k = 0; k < sizeof tool_expected / sizeof tool_expected[0]; k++) {
        int t = 0;
        while (t < N_TEMPLATES && strcmp(templates[t].file, tool_expected[k].file)) t++;
        lb_chat_template ct;
        if (t == N_TEMPLATES || lb_chat_template_detect(templates[t].jinja, templates[t].bos, templates[t].eos, &ct))
            continue;
        char *body = request_of(tool_expected[k].msgs, tool_expected[k].n, tool_expected[k].with_tools);
        srv_params p;
        srv_error e;
        CHECK_MSG(body && srv_parse_request(body, strlen(body), SRV_CHAT, &p, &e) == 0, "%s: %s", tool_expected[k].conv,
                  e.message);
        ct.tools = (const char *const *)p.tools;
        ct.n_tools = p.n_tools;
        char *out = NULL;
        const lb_status st = lb_chat_apply(&ct, p.msgs, p.n_msgs, fixed_date, &out, NULL);
        if (tool_expected[k].error) /* Llama 3.1's one call a message */
            CHECK_MSG(st == LB_ERR_ARG && !out, "%s / %s: not refused", tool_expected[k].file, tool_expected[k].conv);
        else
            CHECK_MSG(st == LB_OK && out && !strcmp(out, tool_expected[k].expected),
                      "%s / %s: the request renders differently", tool_expected[k].file, tool_expected[k].conv);
        free(out);
        srv_params_free(&p);
        free(body);
    }
}

/* Python's json.dumps(ensure_ascii=False) */
static void check_py_json(void) {
    static const struct { const char *in, *want; } cases[] = {
        {"{\"a\":1,\"b\":[true,false,null],\"c\":{}}", "{\"a\": 1, \"b\": [true, false, null], \"c\": {}}"},
        {"{\"z\":\"x\\\"y\\\\\\n\\t\\u0001\",\"ä\":\"日本\"}", "{\"z\": \"x\\\"y\\\\\\n\\t\\u0001\", \"ä\": \"日本\"}"},
        {"[0.5,-2,1e-05,3.25,100000000000]", "[0.5, -2, 1e-05, 3.25, 100000000000]"},
        {"[]", "[]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = cJSON_Parse(cases[i].in);
        char *buf = NULL;
        size_t len = 0, cap = 0;
        CHECK(v && srv_json_py(v, &buf, &len, &cap) == 0);
        CHECK_MSG(buf && !strcmp(buf, cases[i].want), "json.dumps of %s: %s", cases[i].in, buf ? buf : "(null)");
        free(buf);
        cJSON_Delete(v);
    }
}

static void check_reply_calls(void) {
    static const struct {
        const char *reply, *left;
        int n;
        const char *name0, *args0;
    } cases[] = {
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", 1, "get_weather",
         "{\"city\":\"Paris\"}"},
        {"Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\"}\n"
         "</tool_call>\n", "Checking.", 2, "a", "{}"},
        {"<tool_call>not json</tool_call> after", "<tool_call>not json</tool_call> after", 0, NULL, NULL},
        {"<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>", 0, NULL, NULL},
        {"  plain text, no call  ", "  plain text, no call  ", 0, NULL, NULL},
        /* fenced JSON (small models' way): a call when it names a tool offered, else text */
        {"```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\"city\": \"Paris\"}\n}\n```", "", 1,
         "get_weather", "{\"city\":\"Paris\"}"},
        {"Here:\n```\n{\"name\": \"lookup\", \"arguments\": {}}\n```\nDone.", "Here:\n\nDone.", 1, "lookup", "{}"},
        {"```json\n{\"name\": \"Alice\", \"arguments\": {}}\n```", "```json\n{\"name\": \"Alice\", \"arguments\": {}}\n```", 0,
         NULL, NULL},
        {"```python\nprint(1)\n```", "```python\nprint(1)\n```", 0, NULL, NULL},
        {"<tool_call>{\"name\": \"x\", \"arguments\": {}} cut off", "<tool_call>{\"name\": \"x\", \"arguments\": {}} cut off",
         0, NULL, NULL},
        /* a reply that is one call's object alone (Llama 3.1's way, "parameters"): a call when it names a tool */
        {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", 1, "get_weather",
         "{\"city\":\"Paris\"}"},
        {"\n {\"name\": \"lookup\", \"arguments\": {}} \n", "", 1, "lookup", "{}"},
        {"{\"name\": \"Alice\", \"parameters\": {}}", "{\"name\": \"Alice\", \"parameters\": {}}", 0, NULL, NULL},
        {"Sure: {\"name\": \"lookup\", \"parameters\": {}}", "Sure: {\"name\": \"lookup\", \"parameters\": {}}", 0,
         NULL, NULL},
        {"{\"name\": \"lookup\", \"parameters\": [1]}", "{\"name\": \"lookup\", \"parameters\": [1]}", 0, NULL, NULL},
        /* Mistral v3's list of calls (its [TOOL_CALLS] marker a control token, or text) */
        {"[{\"name\": \"lookup\", \"arguments\": {}, \"id\": \"abcdefghi\"}, {\"name\": \"get_weather\", \"arguments\": "
         "{\"city\": \"Oslo\"}}]", "", 2, "lookup", "{}"},
        {"[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]", "", 1, "get_weather",
         "{\"city\":\"Rome\"}"},
        {"[{\"name\": \"lookup\", \"arguments\": {}}, {\"name\": \"nope\", \"arguments\": {}}]",
         "[{\"name\": \"lookup\", \"arguments\": {}}, {\"name\": \"nope\", \"arguments\": {}}]", 0, NULL, NULL},
        {"[1, 2]", "[1, 2]", 0, NULL, NULL},
        {"[]", "[]", 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = strdup(cases[i].reply);
        size_t len = strlen(t);
        char **names, **args;
        int n;
        char *offered[2] = {"get_weather", "lookup"};
        srv_parse_tool_calls(t, &len, offered, 2, &names, &args, &n);
        CHECK_MSG(n == cases[i].n && len == strlen(t) && !strcmp(t, cases[i].left), "reply %zu: %d calls, left '%s'", i,
                  n, t);
        if (n && cases[i].name0)
            CHECK_MSG(!strcmp(names[0], cases[i].name0) && !strcmp(args[0], cases[i].args0), "reply %zu: %s %s", i,
                      names[0], args[0]);
        for (int k = 0; k < n; k++) free(names[k]), free(args[k]);
        free(names), free(args), free(t);
    }
}

static void check_bad_tools(void) {
    static const char *const bodies[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":{}}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"retrieval\"}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{}}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\"}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[{\"function\":{\"name\":\"f\"}}]}]}",
        "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":5}}]}]}",
        "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":{}}]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        srv_params p;
        srv_error e;
        CHECK_MSG(srv_parse_request(bodies[i], strlen(bodies[i]), SRV_CHAT, &p, &e) == -1 && e.status == 400 &&
                      e.message[0],
                  "not refused: %s", bodies[i]);
        srv_params_free(&p);
    }
    /* "none": no tools offered */
    const char *none = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"none\","
                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}";
    srv_params p;
    srv_error e;
    CHECK(srv_parse_request(none, strlen(none), SRV_CHAT, &p, &e) == 0 && p.n_tools == 0);
    srv_params_free(&p);
}

/* grammar fields: response_format, json_schema, grammar, forced tool_choice
 * become GBNF (p.grammar, from p.grammar_param); bad ones are 400s */
static void check_grammar_fields(void) {
    static const struct { const char *body, *param, *has; } ok[] = {
        {"{\"prompt\":\"x\",\"grammar\":\"root ::= \\\"a\\\"\"}", "grammar", "root ::= \"a\""},
        {"{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_object\"}}", "response_format", "root ::= object"},
        {"{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"schema\":"
         "{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"integer\"}},\"required\":[\"k\"]}}}}",
         "response_format", "\"\\\"k\\\"\""},
        {"{\"prompt\":\"x\",\"json_schema\":{\"type\":\"array\"}}", "json_schema", "root ::= s0"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\",\"tools\":[{\"type\":"
         "\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}]}",
         "tool_choice", "<tool_call>"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":{\"type\":\"function\",\"function\":"
         "{\"name\":\"g\"}},\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},{\"type\":\"function\","
         "\"function\":{\"name\":\"g\"}}]}",
         "tool_choice", "\"\\\"g\\\"\""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        srv_params p;
        srv_error e;
        const srv_kind kind = strstr(ok[i].body, "messages") ? SRV_CHAT : SRV_COMPLETION;
        int r = srv_parse_request(ok[i].body, strlen(ok[i].body), kind, &p, &e);
        if (r == 0) r = srv_tool_grammar(&p, 0, &e); /* Qwen's style (a forced choice's grammar) */
        CHECK_MSG(r == 0 && p.grammar && strstr(p.grammar, ok[i].has) && !strcmp(p.grammar_param, ok[i].param),
                  "%s: %d %s / %s", ok[i].body, r, r ? e.message : p.grammar_param, p.grammar ? p.grammar : "(none)");
        if (r == 0 && !strcmp(ok[i].param, "tool_choice")) /* only the named tool when one is named */
            CHECK(!strstr(ok[i].body, "\"name\":\"g\"}}") || !strstr(p.grammar, "\"\\\"f\\\"\""));
        srv_params_free(&p);
    }
    static const struct { const char *body, *msg; } bad[] = {
        {"{\"prompt\":\"x\",\"response_format\":{\"type\":\"xml\"}}", "not 'xml'"},
        {"{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\"}}", "needs a 'json_schema' object"},
        {"{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":"
         "\"number\",\"maximum\":1}}}}", "\"maximum\" other than an integer's"},
        {"{\"prompt\":\"x\",\"grammar\":\"root ::= \\\"a\\\"\",\"response_format\":{\"type\":\"json_object\"}}",
         "give one of"},
        {"{\"prompt\":\"x\",\"grammar\":5}", "expected a string"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":{\"type\":\"function\",\"function\":"
         "{\"name\":\"h\"}},\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}", "no tool named 'h'"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"always\"}", "not 'always'"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\",\"tools\":[{\"type\":"
         "\"function\",\"function\":{\"name\":\"f\"}}],\"response_format\":{\"type\":\"json_object\"}}", "give one of"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\",\"tools\":[{\"type\":"
         "\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"minProperties\":1}}}]}",
         "minProperties"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_params p;
        srv_error e;
        const srv_kind kind = strstr(bad[i].body, "messages") ? SRV_CHAT : SRV_COMPLETION;
        int r = srv_parse_request(bad[i].body, strlen(bad[i].body), kind, &p, &e);
        if (r == 0) r = srv_tool_grammar(&p, 0, &e);
        CHECK_MSG(r == -1 && e.status == 400 && strstr(e.message, bad[i].msg),
                  "%s: '%s', want '%s'", bad[i].body, e.message, bad[i].msg);
        srv_params_free(&p);
    }
}

int main(void) {
    check_tool_requests();
    check_py_json();
    check_reply_calls();
    check_bad_tools();
    check_grammar_fields();
    return lb_test_result("test_serve_request");
}
