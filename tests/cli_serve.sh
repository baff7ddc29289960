#!/usr/bin/env bash
# lowbit serve on stories260K (docs/serve.md): endpoints, every bad-input case
# with its status and OpenAI-style error body, the API key, concurrent
# requests giving the same tokens as serial ones at temperature 0 (and being
# batched), the bounded queue's 503, a client that disconnects freeing its
# slot, no slot left busy at the end, and SIGTERM ending the server (also
# with a stream in flight). Needs curl and python3; skips (77) when lowbit
# was built without libmicrohttpd / cJSON.
. "$(dirname "$0")/lib_cli.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
. "$(dirname "$0")/lib_serve.sh"

KEY=sekrit
AUTH=(-H "Authorization: Bearer $KEY")

# expect STATUS CODE DESCRIPTION curl-args...: the status, and an OpenAI error
# body {"error": {"message", "type", "param", "code"}} with that code
expect() {
  local status=$1 code=$2 what=$3; shift 3
  local out got
  out=$(curl -s -w '\n%{http_code}' "$@"); got=${out##*$'\n'}; out=${out%$'\n'*}
  if [ "$got" != "$status" ]; then bad "$what: HTTP $got, expected $status: $out"; return; fi
  if python3 - "$code" "$out" <<'EOF'
import json, sys
e = json.loads(sys.argv[2])["error"]
assert set(e) == {"message", "type", "param", "code"}, e
assert e["code"] == sys.argv[1] and e["message"] and e["type"], e
EOF
  then ok "$what: $status $code"; else bad "$what: body $out"; fi
}

start_server "$WORK/serve.log" -np 3 -c 256 --api-key "$KEY" --chat-template llama2 --max-body 65536
echo "server at $URL"

# ---- endpoints
out=$(curl -s "$URL/health")
grep -q '"slots_idle":3' <<<"$out" && ok "/health without a key: $out" || bad "/health: $out"
out=$(curl -s "${AUTH[@]}" "$URL/v1/models")
grep -q '"id":"stories260K.gguf"' <<<"$out" && ok "/v1/models lists the model" || bad "/v1/models: $out"
out=$(curl -s "$URL/")
grep -q "<title>lowbit chat</title>" <<<"$out" && ok "GET / serves the chat page" || bad "GET /: ${out:0:200}"

# ---- bad input: status and error body
C=(-H "Content-Type: application/json" "${AUTH[@]}")
expect 401 invalid_api_key "no API key" "$URL/v1/completions" -d '{"prompt":"x"}'
expect 401 invalid_api_key "wrong API key" -H "Authorization: Bearer nope" "$URL/v1/models"
expect 400 invalid_json "malformed JSON" "${C[@]}" "$URL/v1/completions" -d '{"prompt": "x",'
expect 400 invalid_json "trailing garbage" "${C[@]}" "$URL/v1/completions" -d '{"prompt": "x"} x'
expect 400 invalid_json "empty body" "${C[@]}" -X POST "$URL/v1/completions"
expect 400 invalid_type "body not an object" "${C[@]}" "$URL/v1/completions" -d '["x"]'
expect 400 invalid_type "prompt of the wrong type" "${C[@]}" "$URL/v1/completions" -d '{"prompt": {"a": 1}}'
expect 400 invalid_type "temperature a string" "${C[@]}" "$URL/v1/completions" -d '{"prompt":"x","temperature":"hot"}'
expect 400 invalid_type "max_tokens not an integer" "${C[@]}" "$URL/v1/completions" -d '{"prompt":"x","max_tokens":2.5}'
expect 400 invalid_type "stream not a boolean" "${C[@]}" "$URL/v1/completions" -d '{"prompt":"x","stream":"yes"}'
expect 400 invalid_type "messages not an array" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":"hi"}'
expect 400 invalid_type "content a number" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":5}]}'
expect 400 invalid_value "temperature out of range" "${C[@]}" "$URL/v1/completions" -d '{"prompt":"x","temperature":7}'
expect 400 invalid_value "max_tokens = 0" "${C[@]}" "$URL/v1/completions" -d '{"prompt":"x","max_tokens":0}'
expect 400 invalid_value "max_tokens < 0" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}'
expect 400 invalid_value "token id outside the vocabulary" "${C[@]}" "$URL/v1/completions" -d '{"prompt":[1,600]}'
expect 400 invalid_value "no messages" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[]}'
expect 400 unsupported_value "unknown role" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"wizard","content":"x"}]}'
expect 400 missing_required_parameter "no prompt" "${C[@]}" "$URL/v1/completions" -d '{"max_tokens":3}'
expect 400 invalid_type "cache_prompt not a boolean" "${C[@]}" "$URL/v1/completions" -d '{"prompt":"x","cache_prompt":"yes"}'
expect 400 invalid_value "reasoning_effort not low, medium or high" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"extreme"}'
expect 400 invalid_value "chat_template_kwargs.reasoning_effort unknown" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"reasoning_effort":"max"}}'
expect 400 invalid_type "chat_template_kwargs not an object" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":5}'
out=$(curl -s -w '\n%{http_code}' "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"reasoning_effort":"low"}')
[ "${out##*$'\n'}" = 200 ] && ok "a valid reasoning_effort is accepted (llama2's template has no such setting)" ||
  bad "reasoning_effort low: $out"
expect 400 unsupported_parameter "tools with a template that has none (llama2)" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}'
expect 400 invalid_value "a malformed tool" "${C[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}'
expect 404 model_not_found "unknown model" "${C[@]}" "$URL/v1/completions" -d '{"model":"gpt-4o","prompt":"x"}'
expect 404 model_not_found "unknown model (chat)" "${C[@]}" "$URL/v1/chat/completions" -d '{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}'
python3 -c 'import json; print(json.dumps({"prompt": "Once upon a time " * 100}))' >"$WORK/long.json"
expect 400 context_length_exceeded "prompt longer than the context" "${C[@]}" "$URL/v1/completions" -d @"$WORK/long.json"
python3 -c 'print("{\"prompt\": \"" + "a" * 70000 + "\"}")' >"$WORK/big.json"
expect 413 request_too_large "oversized body" "${C[@]}" "$URL/v1/completions" --data-binary @"$WORK/big.json"
expect 413 request_too_large "oversized body, chunked" "${C[@]}" -H "Transfer-Encoding: chunked" "$URL/v1/completions" --data-binary @"$WORK/big.json"
expect 404 not_found "unknown path" "${AUTH[@]}" "$URL/v2/engines"
expect 405 method_not_allowed "GET on a POST route" "${AUTH[@]}" "$URL/v1/completions"
expect 400 invalid_value "the template refuses the conversation (llama2: roles must alternate)" "${C[@]}" \
  "$URL/v1/chat/completions" -d '{"messages":[{"role":"assistant","content":null}]}'
kill -0 "$PID" && ok "the server survived every bad request" || bad "the server died"

# ---- answers, streaming and not, usage and finish_reason; serial == concurrent at temperature 0
python3 - "$URL" "$KEY" <<'EOF' && ok "completions and chat, streamed and not; concurrent == serial at temperature 0" || bad "answers (see above)"
import concurrent.futures as cf, json, sys, urllib.request
url, key = sys.argv[1], sys.argv[2]
H = {"Content-Type": "application/json", "Authorization": "Bearer " + key}

def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), H)
    with urllib.request.urlopen(req, timeout=120) as r:
        if not body.get("stream"):
            return json.loads(r.read())
        chunks, done = [], False
        for line in r.read().decode().split("\n"):
            if not line.startswith("data: "):
                continue
            d = line[6:]
            if d == "[DONE]":
                done = True
                continue
            assert not done, "data after [DONE]"
            chunks.append(json.loads(d))
        assert done, "no data: [DONE]"
        return chunks

def run(kind, prompt, stream, max_tokens=40, **extra):
    body = dict(max_tokens=max_tokens, temperature=0, stream=stream)
    body.update(extra)
    if kind == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = prompt
        path = "/v1/completions"
    out = post(path, body)
    if not stream:
        c = out["choices"][0]
        assert out["object"] == ("chat.completion" if kind == "chat" else "text_completion"), out
        text = c["message"]["content"] if kind == "chat" else c["text"]
        assert (c["message"]["role"] == "assistant") if kind == "chat" else True
        u = out["usage"]
        assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], u
        return text, c["finish_reason"], u["completion_tokens"]
    text, finish, usage = "", None, None
    for ch in out:
        if ch.get("usage"):
            usage = ch["usage"]
        if not ch["choices"]:
            continue
        c = ch["choices"][0]
        assert ch["object"] == ("chat.completion.chunk" if kind == "chat" else "text_completion"), ch
        text += (c["delta"].get("content") or "") if kind == "chat" else c["text"]
        if c["finish_reason"]:
            finish = c["finish_reason"]
    return text, finish, usage["completion_tokens"] if usage else None

prompts = ["Once upon a time", "The little dog", "Lily and Tom went", "One day, a big", "There was a cat",
           "Sam had a red ball"]
# usage and finish_reason
t, f, n = run("completion", "Once upon a time", False, max_tokens=7)
assert f == "length" and n == 7, (t, f, n)
t2, f2, n2 = run("completion", "Once upon a time", True, max_tokens=7, stream_options={"include_usage": True})
assert (t2, f2, n2) == (t, "length", 7), (t2, f2, n2)
full, _, _ = run("completion", "Once upon a time", False, max_tokens=30)
t, f, n = run("completion", "Once upon a time", False, max_tokens=30, stop=["Lily"])
assert f == "stop" and full.startswith(t) and "Lily" not in t and "Lily" in full, (t, f)
t2, f2, _ = run("completion", "Once upon a time", True, max_tokens=30, stop=["Lily"])
assert (t2, f2) == (t, "stop"), (t2, f2)
# seeds: the same seed draws the same tokens
a = run("completion", "Once upon a time", False, max_tokens=20, seed=7, temperature=1.0)
b = run("completion", "Once upon a time", False, max_tokens=20, seed=7, temperature=1.0)
assert a == b, (a, b)
# penalties are honoured: strong ones change the greedy text
p = run("completion", "Once upon a time", False, max_tokens=30, frequency_penalty=2.0, presence_penalty=2.0)
assert p[0] != full, p
# the prompt cache: a repeated prompt reuses its slot's cache (all but the last token), the same answer
def cached(body, prompt="Lily and Tom went to the park"):
    out = post("/v1/completions", dict(body, prompt=prompt, max_tokens=12, temperature=0))
    u = out["usage"]
    return out["choices"][0]["text"], u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]
first, again, off = cached({}), cached({}), cached({"cache_prompt": False})
assert again[2] == again[1] - 1 and off[2] == 0 and first[0] == again[0] == off[0], (first, again, off)
# across slots: clients sending one new prompt at once; one slot evaluates it, the others copy its cache
# (or, when it has finished already, take that slot): all but the first reuse all but the last token
shared = "Tom and Sam found a big box in the garden. They opened it and saw a little"
with cf.ThreadPoolExecutor(3) as ex:
    res = sorted(ex.map(lambda _: cached({}, shared), range(3)), key=lambda x: x[2])
alone = cached({"cache_prompt": False}, shared)
assert all(x[0] == alone[0] for x in res) and [x[2] for x in res[1:]] == [alone[1] - 1] * 2, (res, alone)
jobs = [(k, pr, s) for k in ("completion", "chat") for pr in prompts for s in (False, True)]
serial = [run(*j) for j in jobs]
with cf.ThreadPoolExecutor(len(jobs)) as ex:
    concurrent = list(ex.map(lambda j: run(*j), jobs))
bad = [(j, a, b) for j, a, b in zip(jobs, serial, concurrent) if a[:2] != b[:2]]
for b in bad:
    print("differs:", b)
assert not bad
assert all(s[0] for s in serial), "empty answers"
print(len(jobs), "requests: concurrent answers equal the serial ones")
EOF
out=$(curl -s "$URL/health")
python3 -c 'import json,sys; h=json.loads(sys.argv[1]); assert h["max_batch_sequences"] >= 2, h' "$out" \
  && ok "requests were batched: $out" || bad "no step held two sequences: $out"
grep -q '"slots_idle":3,"slots_processing":0,"requests_queued":0' <<<"$out" && ok "no slot busy afterwards" || bad "slots after the answers: $out"
stop_server "main server"

# ---- the prompt cache with sliding-window layers (docs/attention.md): stories260K as
# gemma2 (tests/make_arch.py, a window of 48 on every other layer) with -b 8 keeps those
# layers in a ring of 64 positions. A prompt that goes on from where the slot stopped
# reuses its cache; one that shares only an early prefix, which the ring has moved past,
# is evaluated in full (cached_tokens 0). Both answers equal the uncached ones.
if python3 "$(dirname "$0")/make_arch.py" gemma2 "$SHARED/models/stories260K-f32.gguf" "$WORK/g2.gguf" >/dev/null 2>&1; then
  MODEL_SAVED=$MODEL MODEL=$WORK/g2.gguf
  start_server "$WORK/serve-swa.log" -np 1 -c 256 -b 8 -v
  MODEL=$MODEL_SAVED
  grep -q 'a ring of 64' "$WORK/serve-swa.log" && ok "gemma2 -b 8: $(grep -o 'KV cache: [^,]*' "$WORK/serve-swa.log")" \
    || bad "no ring: $(grep 'KV cache' "$WORK/serve-swa.log")"
  python3 - "$URL" <<'EOF' && ok "ring: a continued prompt reuses the cache, an early prefix is evaluated anew; the uncached answers" || bad "the prompt cache with a ring (see above)"
import json, sys, urllib.request
url = sys.argv[1]
def go(prompt, cache=True):
    body = {"prompt": prompt, "max_tokens": 40, "temperature": 0, "cache_prompt": cache}
    req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    out = json.loads(urllib.request.urlopen(req).read())
    return out["choices"][0]["text"], out["usage"]["prompt_tokens_details"]["cached_tokens"]
p = "Once upon a time, there was a little girl named Lily. She liked to play"
first = go(p)
cont = p + first[0] + " Then"
again = go(cont)
assert again[1] > 20, (first, again)  # the slot's own tokens, up to about where it stopped
assert again[0] == go(cont, False)[0], again
early = go("Once upon a time, there was a big dog")  # shares a few tokens, ~90 positions back
assert early[1] == 0, early
assert early[0] == go("Once upon a time, there was a big dog", False)[0], early
print("continued:", again[1], "tokens cached; the early prefix: 0")
EOF
  stop_server "the sliding-window server"
else
  bad "make_arch.py gemma2"
fi

# ---- slow steps (LOWBIT_SERVE_TEST_DELAY_MS): the queue bound, disconnects, shutdown in flight;
# no --chat-template and stories260K has none: chat requests get a 400
LOWBIT_SERVE_TEST_DELAY_MS=20 start_server "$WORK/serve-slow.log" -np 2 --queue 1 -c 512
expect 400 no_chat_template "no chat template" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}]}'

python3 - "$URL" <<'EOF' && ok "beyond 2 slots + a queue of 1: HTTP 503 server_busy" || bad "queue bound (see above)"
import concurrent.futures as cf, json, sys, urllib.error, urllib.request
url = sys.argv[1]
def go(i):
    req = urllib.request.Request(url + "/v1/completions",
                                 json.dumps({"prompt": "Once upon a time", "max_tokens": 30, "temperature": 0}).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
with cf.ThreadPoolExecutor(6) as ex:
    res = list(ex.map(go, range(6)))
codes = sorted(c for c, _ in res)
print("statuses:", codes)
assert codes.count(200) >= 3 and codes.count(503) >= 1, codes
for c, b in res:
    if c == 503:
        assert b["error"]["code"] == "server_busy", b
EOF

# a client that goes away frees its slot long before its 400 tokens (8 s here) would end
slot_freed() {
  local what=$1; shift
  curl -s --max-time 1 -o /dev/null "$@"
  local t0=$SECONDS out
  for _ in $(seq 1 30); do
    out=$(curl -s "$URL/health")
    grep -q '"slots_processing":0' <<<"$out" && break
    sleep 0.1
  done
  grep -q '"slots_idle":2,"slots_processing":0,"requests_queued":0' <<<"$out" \
    && ok "$what: slot freed ($out)" || bad "$what: slot still busy 3 s after the client left: $out"
}
slot_freed "streaming client disconnects" -N "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":true}'
slot_freed "waiting client disconnects" "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":400,"temperature":0}'

# SIGTERM with a stream and a plain request in flight: both end (an error event / 503), the server exits
curl -s -N "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":400,"stream":true}' >"$WORK/inflight.sse" &
c1=$!
curl -s -w '\n%{http_code}' "$URL/v1/completions" -d '{"prompt":"The dog","max_tokens":400}' >"$WORK/inflight.json" &
c2=$!
# and two idle connections: one that sent nothing, one stuck in the middle of its body
port=${URL##*:}
exec 7<>"/dev/tcp/127.0.0.1/$port"
exec 8<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"prompt":' >&8
sleep 1
stop_server "server with requests in flight and idle connections"
exec 7>&- 8>&-
wait $c1 $c2
if grep -q '"code":"shutting_down"' "$WORK/inflight.sse" && tail -n 2 "$WORK/inflight.sse" | grep -q 'data: \[DONE\]'; then
  ok "the stream in flight got an error event and [DONE]"
else
  bad "stream in flight: $(tail -c 300 "$WORK/inflight.sse")"
fi
if tail -n 1 "$WORK/inflight.json" | grep -q 503 && grep -q shutting_down "$WORK/inflight.json"; then
  ok "the request in flight got 503 shutting_down"
else
  bad "request in flight: $(cat "$WORK/inflight.json")"
fi

# ---- startup errors
expect_fail "unknown --chat-template" "unknown chat template" "$LOWBIT" serve -m "$MODEL" --chat-template jinja2 --port 0
expect_fail "no model" "-m MODEL is required" "$LOWBIT" serve --port 0
"$LOWBIT" serve -m "$MODEL" --port 0 --host 256.1.2.3 >"$WORK/badhost.log" 2>&1
[ $? -ne 0 ] && grep -q "host" "$WORK/badhost.log" && ok "a bad --host is refused" || bad "bad host: $(cat "$WORK/badhost.log")"
finish
