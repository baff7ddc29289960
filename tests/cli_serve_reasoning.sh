#!/usr/bin/env bash
# lowbit serve's reasoning settings (docs/serve.md) on stories260K with
# DeepSeek-V3.1's template, whose thinking is off unless the request turns it
# on: chat_template_kwargs' "thinking" / "enable_thinking" change the prompt
# (usage.prompt_tokens) and, once the prompt opens a <think> block, the greedy
# reply comes back as reasoning_content (whole and streamed, the same text);
# "reasoning_format": "none" gives the same bytes as content; a grammar
# (response_format) turns thinking off and is refused with thinking on; bad values get
# 400s, bad flags stop the server before it loads the model. Also /props and
# /metrics.
. "$(dirname "$0")/lib_cli.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
. "$(dirname "$0")/lib_serve.sh"

start_server "$WORK/serve.log" -np 2 -c 256 --chat-template deepseek-v3.1
C=(-H "Content-Type: application/json")
for body in '{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":"no"}}' \
            '{"messages":[{"role":"user","content":"x"}],"reasoning_format":"xml"}' \
            '{"messages":[{"role":"user","content":"x"}],"reasoning_format":1}'; do
  out=$(curl -s -w '\n%{http_code}' "${C[@]}" "$URL/v1/chat/completions" -d "$body")
  [ "${out##*$'\n'}" = 400 ] && ok "400 for $body" || bad "$body: $out"
done

python3 - "$URL" <<'EOF' && ok "thinking switch, reasoning_content whole and streamed, reasoning_format none" || bad "reasoning (see above)"
import json, sys, urllib.error, urllib.request
url = sys.argv[1]
def post(body, stream=False):
    body = dict(dict(messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=12, temperature=0,
                stream=stream), **body)
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        if not stream:
            return json.loads(r.read())
        reasoning, content = "", ""
        for line in r.read().decode().splitlines():
            if line.startswith("data: {"):
                for c in json.loads(line[6:]).get("choices", []):
                    reasoning += c["delta"].get("reasoning_content", "")
                    content += c["delta"].get("content", "") or ""
        return reasoning, content
off = post({})
on = post({"chat_template_kwargs": {"thinking": True}})
on2 = post({"chat_template_kwargs": {"enable_thinking": True}})
none = post({"chat_template_kwargs": {"thinking": True}, "reasoning_format": "none"})
stream = post({"chat_template_kwargs": {"thinking": True}}, stream=True)
m_off, m_on, m_none = off["choices"][0]["message"], on["choices"][0]["message"], none["choices"][0]["message"]
print("prompt tokens off / on:", off["usage"]["prompt_tokens"], on["usage"]["prompt_tokens"])
print("thinking on:", m_on)
print("reasoning_format none:", m_none)
# '<think></think>' against '<think>' closing the prompt
assert off["usage"]["prompt_tokens"] > on["usage"]["prompt_tokens"], (off["usage"], on["usage"])
assert on2["usage"] == on["usage"] and on2["choices"][0]["message"] == m_on, on2
assert "reasoning_content" not in m_off and m_off["content"], m_off
r = m_on.get("reasoning_content", "")
assert r and m_on["content"] == "" and "</think>" not in m_none["content"], m_on
assert r == m_none["content"].strip("\n") and "reasoning_content" not in m_none, (r, m_none)
assert stream == (r, ""), stream
# a grammar holds the whole reply: thinking goes off (the prompt as without it), the reply is content only;
# asked with thinking on it is a 400
sch = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
g = post({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": sch}}, "max_tokens": 60})
mg = g["choices"][0]["message"]
assert g["usage"]["prompt_tokens"] == off["usage"]["prompt_tokens"] and "reasoning_content" not in mg, g
assert json.loads(mg["content"])["ok"] in (True, False) and g["choices"][0]["finish_reason"] == "stop", g
try:
    post({"response_format": {"type": "json_object"}, "chat_template_kwargs": {"thinking": True}})
    assert False, "grammar with thinking on: not refused"
except urllib.error.HTTPError as e:
    assert e.code == 400 and "thinking off" in json.loads(e.read())["error"]["message"]
print("grammar:", mg)
EOF
# llama-server's /props and /metrics
python3 - "$URL" <<'EOF' && ok "/props and /metrics" || bad "/props, /metrics (see above)"
import json, sys, urllib.request
url = sys.argv[1]
p = json.loads(urllib.request.urlopen(url + "/props", timeout=30).read())
print({k: v for k, v in p.items() if k != "chat_template"})
assert p["default_generation_settings"]["n_ctx"] == 256 and p["total_slots"] == 2, p
assert p["chat_template_family"] == "deepseek-v3.1" and p["thinking_switch"] is True, p
assert p["reasoning_format"] == "deepseek" and p["bos_token"] == "<s>" and p["model_path"].endswith(".gguf"), p
m = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
vals = {l.split()[0]: float(l.split()[1]) for l in m.splitlines() if l and not l.startswith("#")}
print(vals)
assert vals["llamacpp:prompt_tokens_total"] > 0 and vals["llamacpp:tokens_predicted_total"] > 0, vals
assert vals["llamacpp:requests_processing"] == 0 and vals["llamacpp:n_decode_total"] > 0, vals
assert "# TYPE llamacpp:prompt_tokens_total counter" in m, m
EOF
stop_server "the reasoning server"

expect_fail "--reasoning-format unknown" "expected none, deepseek or auto" "$LOWBIT" serve -m "$MODEL" --port 0 --reasoning-format xml
expect_fail "--reasoning-budget 100" "only -1 .no limit. and 0" "$LOWBIT" serve -m "$MODEL" --port 0 --reasoning-budget 100
expect_fail "--chat-template-kwargs not JSON" "expected one JSON object" "$LOWBIT" serve -m "$MODEL" --port 0 --chat-template-kwargs 'enable_thinking=false'
finish
