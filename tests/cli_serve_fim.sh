#!/usr/bin/env bash
# lowbit serve's fill in the middle (docs/serve.md): /v1/completions with a
# "suffix" on a model with fill-in-the-middle tokens (stories260K with its
# last three tokens made Qwen's markers by tests/make_arch.py) evaluates
# [BOS] <|fim_prefix|> prompt <|fim_suffix|> suffix <|fim_middle|>: its
# prompt_tokens are the two texts' tokens plus four, whole and streamed the
# same text; without such tokens, with token ids, or with echo, a 400.
. "$(dirname "$0")/lib_cli.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
. "$(dirname "$0")/lib_serve.sh"
MAKE_ARCH_FIM=1 python3 "$(dirname "$0")/make_arch.py" llama "$MODEL" "$WORK/fim.gguf" >/dev/null ||
  { bad "make_arch.py (MAKE_ARCH_FIM)"; finish; exit 1; }

start_server "$WORK/serve.log" -np 1 -c 256
python3 - "$URL" <<'PY' && ok "a model without fill-in-the-middle tokens: suffix is a 400" || bad "suffix without FIM tokens (see above)"
import json, sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1] + "/v1/completions", json.dumps({"prompt": "a", "suffix": "b"}).encode())
try:
    urllib.request.urlopen(req, timeout=30)
    sys.exit("not refused")
except urllib.error.HTTPError as e:
    m = json.loads(e.read())["error"]
    assert e.code == 400 and m["param"] == "suffix" and "fill-in-the-middle tokens" in m["message"], m
PY
stop_server "the plain server"

MODEL=$WORK/fim.gguf start_server "$WORK/serve2.log" -np 1 -c 256
python3 - "$URL" <<'PY' && ok "fill in the middle: the prompt's layout, whole and streamed; ids and echo refused" || bad "fill in the middle (see above)"
import json, sys, urllib.error, urllib.request
url = sys.argv[1]
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read().decode()
            if body.get("stream"):
                ev = [json.loads(l[6:]) for l in raw.splitlines() if l.startswith("data: {")]
                return r.status, "".join(e["choices"][0]["text"] for e in ev if e["choices"])
            return r.status, json.loads(raw)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
pre, suf = "Once upon a time, there was a", " who lived in a big house."
n_pre = len(post("/tokenize", {"content": pre})[1]["tokens"])
n_suf = len(post("/tokenize", {"content": suf})[1]["tokens"])
st, d = post("/v1/completions", {"prompt": pre, "suffix": suf, "max_tokens": 8, "temperature": 0})
assert st == 200, d
assert d["usage"]["prompt_tokens"] == n_pre + n_suf + 4, (d["usage"], n_pre, n_suf)  # BOS and the three markers
st, s = post("/v1/completions", {"prompt": pre, "suffix": suf, "max_tokens": 8, "temperature": 0, "stream": True})
assert st == 200 and s == d["choices"][0]["text"], (s, d)
st, plain = post("/v1/completions", {"prompt": pre, "max_tokens": 8, "temperature": 0})
assert plain["usage"]["prompt_tokens"] == n_pre + 1, plain["usage"]
print("middle:", repr(d["choices"][0]["text"]), "plain:", repr(plain["choices"][0]["text"]))
for body, msg in [({"prompt": [1, 2, 3], "suffix": "x"}, "text prompt"), ({"prompt": "a", "suffix": "b", "echo": True}, "cannot go together"),
                  ({"prompt": "a", "suffix": 5}, "expected a string")]:
    st, e = post("/v1/completions", body)
    assert st == 400 and msg in e["error"]["message"], (body, st, e)
st, e = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "suffix": "y"})
assert st == 400 and "suffix" in e["error"]["message"], e
PY
stop_server "the FIM server"
finish
