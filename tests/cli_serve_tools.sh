#!/usr/bin/env bash
# lowbit serve's tools (docs/serve.md) on stories260K with Qwen 2.5's real
# template given by --chat-template-file: tools offered lengthen the prompt
# by their signatures; a reply without a call streams the same text as it
# comes whole (the stream holds back only what may begin "<tool_call>"); an
# assistant's tool calls and the tool results of a follow-up are taken;
# tool_choice "required" and a named tool force a call (a grammar: even this
# model, which never calls a tool, writes one, with arguments its schema
# allows); tools with a template that has none are 400s; a missing or unknown template file stops the server. (The calls'
# formatting against jinja2 and the parsing of <tool_call> replies are
# tests/serve/test_serve_request.c's; the model here never calls a tool.)
. "$(dirname "$0")/lib_cli.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
. "$(dirname "$0")/lib_serve.sh"
TEMPLATES="$(cd "$(dirname "$0")" && pwd)/data/chat-templates"

start_server "$WORK/serve.log" -np 2 -c 1024 --chat-template-file "$TEMPLATES/qwen2.5-7b-instruct.jinja"
python3 - "$URL" <<'EOF' && ok "tools offered, replies streamed and whole, a follow-up with calls and results" || bad "tools (see above)"
import json, sys, urllib.error, urllib.request
url = sys.argv[1]
def post(body, stream=False):
    body = dict(body, stream=stream)
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            if not stream:
                return r.status, json.loads(r.read())
            return r.status, [json.loads(l[6:]) for l in r.read().decode().splitlines() if l.startswith("data: {")]
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
msgs = [{"role": "user", "content": "Once upon a time"}]
st, plain = post({"messages": msgs, "max_tokens": 12, "temperature": 0})
st2, d = post({"messages": msgs, "max_tokens": 12, "temperature": 0, "tools": tools})
assert st == st2 == 200, (plain, d)
print("prompt tokens without / with tools:", plain["usage"]["prompt_tokens"], d["usage"]["prompt_tokens"])
assert d["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"] + 50, (plain["usage"], d["usage"])
st, s = post({"messages": msgs, "max_tokens": 12, "temperature": 0, "tools": tools}, stream=True)
text = "".join(c["choices"][0]["delta"].get("content") or "" for c in s if c["choices"])
assert text == d["choices"][0]["message"]["content"] and d["choices"][0]["finish_reason"] == "length", (text, d)
st, n = post({"messages": msgs, "max_tokens": 12, "temperature": 0, "tools": tools, "tool_choice": "none"})
assert n["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"], n
follow = msgs + [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                  "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
st, f = post({"messages": follow, "max_tokens": 4, "temperature": 0, "tools": tools})
assert st == 200 and f["usage"]["prompt_tokens"] > d["usage"]["prompt_tokens"], f
forced = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties":
           {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"]}}},
          {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties":
           {"utc": {"type": "boolean"}}, "required": ["utc"]}}}]
for choice, names in [("required", {"get_weather", "get_time"}),
                      ({"type": "function", "function": {"name": "get_time"}}, {"get_time"})]:
    for stream in (False, True):
        st, r = post({"messages": msgs, "max_tokens": 300, "temperature": 0, "tools": forced, "tool_choice": choice},
                     stream=stream)
        if stream:
            calls = [tc for c in r if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls") or []]
            finish = [c["choices"][0]["finish_reason"] for c in r if c["choices"] and c["choices"][0]["finish_reason"]]
        else:
            calls = r["choices"][0]["message"].get("tool_calls") or []
            finish = [r["choices"][0]["finish_reason"]]
        assert st == 200 and calls and finish == ["tool_calls"], (choice, stream, r)
        for c in calls:
            args = json.loads(c["function"]["arguments"])
            assert c["function"]["name"] in names, c
            assert args in ({"city": "Paris"}, {"city": "Oslo"}, {"utc": True}, {"utc": False}), c
        print("forced", choice, "stream" if stream else "whole", "->", [(c["function"]["name"], c["function"]["arguments"]) for c in calls])
for body in [{"messages": msgs, "tools": tools, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
             {"messages": msgs, "tool_choice": "required"},
             {"messages": msgs, "tools": [{"type": "function"}]},
             {"messages": [{"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f"}}]}]}]:
    st, e = post(body)
    assert st == 400 and e["error"]["message"], (body, st, e)
EOF
stop_server "the tools server"

# Llama 3.1's template: its tools (in the first user turn) and a forced call as its lone JSON object
start_server "$WORK/serve3.log" -np 1 -c 1024 --chat-template-file "$TEMPLATES/llama3.1-8b-instruct.jinja"
python3 - "$URL" <<'EOF' && ok "Llama 3.1's template: tools offered, a forced call whole and streamed, one call a message" || bad "Llama 3.1 tools (see above)"
import json, sys, urllib.error, urllib.request
url = sys.argv[1]
def post(body, stream=False):
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(dict(body, stream=stream)).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            if not stream:
                return r.status, json.loads(r.read())
            return r.status, [json.loads(l[6:]) for l in r.read().decode().splitlines() if l.startswith("data: {")]
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties":
          {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"]}}}]
msgs = [{"role": "user", "content": "Once upon a time"}]
st, plain = post({"messages": msgs, "max_tokens": 4, "temperature": 0})
st2, d = post({"messages": msgs, "max_tokens": 4, "temperature": 0, "tools": tools})
assert st == st2 == 200 and d["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"] + 50, (plain, d)
for stream in (False, True):
    st, r = post({"messages": msgs, "max_tokens": 200, "temperature": 0, "tools": tools, "tool_choice": "required"},
                 stream)
    if stream:
        calls = [tc for c in r if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls") or []]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in r if c["choices"])
    else:
        calls, text = r["choices"][0]["message"].get("tool_calls") or [], r["choices"][0]["message"]["content"] or ""
    assert st == 200 and len(calls) == 1 and not text.strip(), (stream, r)
    assert calls[0]["function"]["name"] == "get_weather" and json.loads(calls[0]["function"]["arguments"])["city"] in ("Paris", "Oslo"), calls
    print("Llama 3.1 forced", "stream" if stream else "whole", calls[0]["function"])
two = msgs + [{"role": "assistant", "content": None, "tool_calls": [
    {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
    {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}]
st, e = post({"messages": two, "tools": tools})
assert st == 400 and "single tool-calls" in e["error"]["message"], (st, e)
EOF
stop_server "the Llama 3.1 tools server"

# Mistral Nemo's template: tools before the last user turn, a forced call as a list of calls, 9-character ids
start_server "$WORK/serve4.log" -np 1 -c 1024 --chat-template-file "$TEMPLATES/mistral-nemo-instruct-2407.jinja"
python3 - "$URL" <<'EOF' && ok "Mistral Nemo's template: tools offered, forced calls whole and streamed with 9-character ids, taken back" || bad "Mistral tools (see above)"
import json, re, sys, urllib.error, urllib.request
url = sys.argv[1]
def post(body, stream=False):
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(dict(body, stream=stream)).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            if not stream:
                return r.status, json.loads(r.read())
            return r.status, [json.loads(l[6:]) for l in r.read().decode().splitlines() if l.startswith("data: {")]
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties":
          {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"]}}}]
msgs = [{"role": "user", "content": "Once upon a time"}]
st, plain = post({"messages": msgs, "max_tokens": 4, "temperature": 0})
st2, d = post({"messages": msgs, "max_tokens": 4, "temperature": 0, "tools": tools})
assert st == st2 == 200 and d["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"] + 20, (plain, d)
for stream in (False, True):
    # (named: one call; "required" lets this model list calls until max_tokens)
    st, r = post({"messages": msgs, "max_tokens": 200, "temperature": 0, "tools": tools,
                  "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}, stream)
    if stream:
        calls = [tc for c in r if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    else:
        calls = r["choices"][0]["message"].get("tool_calls") or []
    assert st == 200 and len(calls) == 1, (stream, r)
    for c in calls:
        assert re.fullmatch(r"[A-Za-z0-9]{9}", c["id"]), c
        assert c["function"]["name"] == "get_weather" and json.loads(c["function"]["arguments"])["city"] in ("Paris", "Oslo"), c
    print("Mistral forced", "stream" if stream else "whole", [(c["id"], c["function"]["arguments"]) for c in calls])
# the calls and their results sent back (with those ids) are taken; a 24-character id is the template's 400
back = msgs + [{"role": "assistant", "content": None, "tool_calls": [dict(c, type="function") for c in calls]}] + \
       [{"role": "tool", "tool_call_id": c["id"], "content": "21 C"} for c in calls]
for c in back[1]["tool_calls"]:
    c.pop("index", None)
st, f = post({"messages": back, "max_tokens": 4, "temperature": 0, "tools": tools})
assert st == 200, f
bad = [dict(back[0]), {"role": "assistant", "content": None, "tool_calls": [{"id": "call_abcdefghijklmnopqrstuvwx",
       "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
       {"role": "tool", "tool_call_id": "call_abcdefghijklmnopqrstuvwx", "content": "x"}]
st, e = post({"messages": bad, "tools": tools})
assert st == 400 and "length 9" in e["error"]["message"], (st, e)
EOF
stop_server "the Mistral tools server"

# a template without tools: tools and tool messages are 400s
start_server "$WORK/serve2.log" -np 1 -c 256 --chat-template llama2
out=$(curl -s -w '\n%{http_code}' "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}')
[ "${out##*$'\n'}" = 400 ] && grep -q 'does not take tools' <<<"$out" && ok "tools with llama2's template: 400" || bad "llama2 tools: $out"
out=$(curl -s -w '\n%{http_code}' "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"},{"role":"tool","content":"r"}]}')
[ "${out##*$'\n'}" = 400 ] && ok "a tool message with llama2's template: 400" || bad "llama2 tool message: $out"
stop_server "the llama2 server"

expect_fail "--chat-template-file missing" "cannot open|no such" "$LOWBIT" serve -m "$MODEL" --port 0 --chat-template-file "$WORK/none.jinja"
printf '{{ messages }}' > "$WORK/odd.jinja"
expect_fail "--chat-template-file of no known family" "unrecognised chat template" "$LOWBIT" serve -m "$MODEL" --port 0 --chat-template-file "$WORK/odd.jinja"
finish
