#!/usr/bin/env bash
# lowbit serve's log probabilities (docs/serve.md) on stories260K: chat's
# "logprobs" / "top_logprobs" and the completions API's "logprobs": N, whole
# and streamed. Each entry is a token of the reply, in order, its text the
# reply's next bytes; log probabilities are <= 0, the alternatives sorted and
# their probabilities summing to at most 1; greedy picks the first
# alternative; a sampled token's own log probability is the one its entry
# among the alternatives shows; a stop string drops the entries of the tokens
# after it; "echo" returns the prompt first and, with logprobs, its tokens'
# values (evaluated in one pass, equal to what decoding gave the same tokens),
# also for lm-evaluation-harness's [[ids]] requests and max_tokens 0; bad
# values are 400s. Also llama-server's /tokenize and /detokenize. (The openai client's reading of them is in serve_openai.py.)
. "$(dirname "$0")/lib_cli.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
. "$(dirname "$0")/lib_serve.sh"

start_server "$WORK/serve.log" -np 2 -c 256 --chat-template chatml
C=(-H "Content-Type: application/json")
for body in '{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}' \
            '{"messages":[{"role":"user","content":"x"}],"logprobs":1}' \
            '{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}' \
            '{"prompt":"x","logprobs":-1}' '{"prompt":"x","logprobs":true}' '{"prompt":"x","max_tokens":0}' \
            '{"messages":[{"role":"user","content":"x"}],"echo":true}' '{"prompt":"x","echo":1}' \
            '{"prompt":[[1,2],[3]]}'; do
  route=chat/completions; [[ $body == *prompt* ]] && route=completions
  out=$(curl -s -w '\n%{http_code}' "${C[@]}" "$URL/v1/$route" -d "$body")
  [ "${out##*$'\n'}" = 400 ] && ok "400 for $body" || bad "$body: $out"
done

python3 - "$URL" <<'EOF' && ok "entries: order, text, values, alternatives, stop, streaming" || bad "logprobs (see above)"
import json, math, sys, urllib.request
url = sys.argv[1]
def post(route, body):
    req = urllib.request.Request(url + "/v1/" + route, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        if not body.get("stream"):
            return json.loads(r.read())
        return [json.loads(l[6:]) for l in r.read().decode().splitlines() if l.startswith("data: {")]
def entries_ok(entries, text, greedy):
    assert "".join(e["token"] for e in entries).startswith(text), (entries, text)
    for e in entries:
        tops = e["top_logprobs"]
        assert e["logprob"] <= 0 and bytes(e["bytes"]).decode() == e["token"], e
        assert all(a["logprob"] >= b["logprob"] for a, b in zip(tops, tops[1:])), tops
        assert sum(math.exp(a["logprob"]) for a in tops) <= 1 + 1e-5, tops
        assert not greedy or (tops[0]["token"] == e["token"] and abs(tops[0]["logprob"] - e["logprob"]) < 1e-6), e
        mine = [a["logprob"] for a in tops if a["token"] == e["token"]]
        assert not mine or abs(mine[0] - e["logprob"]) < 1e-6, e  # a sampled token among the alternatives
msgs = [{"role": "user", "content": "Tell me a story"}]
# greedy, whole and streamed
d = post("chat/completions", {"messages": msgs, "max_tokens": 16, "temperature": 0, "logprobs": True, "top_logprobs": 5})
m, lp = d["choices"][0]["message"], d["choices"][0]["logprobs"]["content"]
assert len(lp) == 16 == d["usage"]["completion_tokens"], (len(lp), d["usage"])
entries_ok(lp, m["content"], True)
assert "".join(e["token"] for e in lp) == m["content"]
s = post("chat/completions", {"messages": msgs, "max_tokens": 16, "temperature": 0, "logprobs": True, "top_logprobs": 5,
                              "stream": True})
got = [e for c in s for ch in c["choices"] if ch.get("logprobs") for e in ch["logprobs"]["content"]]
assert [e["token"] for e in got] == [e["token"] for e in lp], (got, lp)
# sampled (temperature 1.5): the entries follow the draws; without top_logprobs, empty alternatives
d = post("chat/completions", {"messages": msgs, "max_tokens": 24, "temperature": 1.5, "seed": 7, "logprobs": True,
                              "top_logprobs": 20})
entries_ok(d["choices"][0]["logprobs"]["content"], d["choices"][0]["message"]["content"], False)
d = post("chat/completions", {"messages": msgs, "max_tokens": 4, "temperature": 0, "logprobs": True})
assert all(e["top_logprobs"] == [] for e in d["choices"][0]["logprobs"]["content"]), d
# not asked: null
d = post("chat/completions", {"messages": msgs, "max_tokens": 2})
assert d["choices"][0]["logprobs"] is None, d
# completions: a stop string cuts the text inside a token; entries after it are gone
base = post("completions", {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "logprobs": 3})
l = base["choices"][0]["logprobs"]
text = base["choices"][0]["text"]
assert "".join(l["tokens"]) == text and len(l["tokens"]) == 12, l
assert l["text_offset"] == [sum(len(t) for t in l["tokens"][:i]) for i in range(12)], l
stop = text[l["text_offset"][4] + 1:l["text_offset"][6] + 1]  # from inside token 4 into token 6
d = post("completions", {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "logprobs": 3, "stop": [stop]})
c = d["choices"][0]
print("stop %r: text %r, tokens %r" % (stop, c["text"], c["logprobs"]["tokens"]))
assert c["finish_reason"] == "stop" and c["logprobs"]["tokens"] == l["tokens"][:5], c
s = post("completions", {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "logprobs": 3, "stream": True})
toks = [t for ch in s for x in ch["choices"] if x.get("logprobs") for t in x["logprobs"]["tokens"]]
assert toks == l["tokens"], (toks, l["tokens"])
# echo: the prompt's tokens scored by the same model, the first one null; evaluated in one pass (all
# positions' logits), they agree with the values decoding gave the same tokens one at a time
full = "Once upon a time" + text[:l["text_offset"][5]]
d = post("completions", {"prompt": full, "max_tokens": 1, "temperature": 0, "logprobs": 3, "echo": True})
c, e = d["choices"][0], d["choices"][0]["logprobs"]
print("echo:", repr(c["text"]), e["tokens"])
assert c["text"].startswith(full) and e["token_logprobs"][0] is None and e["top_logprobs"][0] is None, c
assert len(e["tokens"]) == d["usage"]["prompt_tokens"] + 1 and e["tokens"][-6:-1] == l["tokens"][:5], e
assert all(abs(a - b) < 1e-3 for a, b in zip(e["token_logprobs"][-6:-1], l["token_logprobs"][:5])), e
assert all(max(t.values()) >= x - 1e-6 for t, x in zip(e["top_logprobs"][1:], e["token_logprobs"][1:])), e
# each offset points at its token's text (the first piece's leading space is the decoder's, dropped)
assert all(c["text"][o:].startswith(t) or c["text"][o:].startswith(t[1:]) for o, t in zip(e["text_offset"], e["tokens"])), e
# what lm-evaluation-harness sends: [[ids]], echo, max_tokens 1, logprobs 1; and max_tokens 0: the prompt alone
ids = [1, 403, 407, 261, 378]
d = post("completions", {"prompt": [ids], "max_tokens": 1, "temperature": 0, "logprobs": 1, "echo": True})
e = d["choices"][0]["logprobs"]
assert len(e["tokens"]) == 6 and e["token_logprobs"][0] is None and all(x <= 0 for x in e["token_logprobs"][1:]), e
d0 = post("completions", {"prompt": [ids], "max_tokens": 0, "logprobs": 1, "echo": True})
e0 = d0["choices"][0]["logprobs"]
assert d0["usage"]["completion_tokens"] == 0 and e0["token_logprobs"] == e["token_logprobs"][:5], (d0, e)
# a prompt longer than an echo step (64 rows): 150 tokens over three steps, their values the same as those
# of its first 100 tokens' (two steps) and each position's own
long_ids = [1] + [(7 * i) % 500 + 3 for i in range(149)]
a = post("completions", {"prompt": [long_ids], "max_tokens": 0, "echo": True, "logprobs": 2})["choices"][0]["logprobs"]
b = post("completions", {"prompt": [long_ids[:100]], "max_tokens": 0, "echo": True, "logprobs": 2})["choices"][0]["logprobs"]
assert len(a["token_logprobs"]) == 150 and len(b["token_logprobs"]) == 100, (len(a["token_logprobs"]), len(b["token_logprobs"]))
assert all(abs(x - y) < 1e-3 for x, y in zip(a["token_logprobs"][1:100], b["token_logprobs"][1:])), (a, b)
# echo without logprobs: the prompt's text before the reply; streamed, the prompt's event first
d = post("completions", {"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, "echo": True})
assert d["choices"][0]["text"] == "Once upon a time" + text[:len(d["choices"][0]["text"]) - 16], d
s = post("completions", {"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, "echo": True, "stream": True})
parts = [x["text"] for ch in s for x in ch["choices"]]
assert parts[0] == "Once upon a time" and "".join(parts) == d["choices"][0]["text"], parts
s = post("completions", {"prompt": [ids], "max_tokens": 2, "temperature": 0, "echo": True, "logprobs": 1, "stream": True})
got = [x["logprobs"]["token_logprobs"] for ch in s for x in ch["choices"] if x.get("logprobs")]
assert got[0][0] is None and len(got[0]) == 5 and len(sum(got, [])) == 7, got
EOF
# llama-server's /tokenize and /detokenize: the ids echo and lm-eval use, round trips, errors
python3 - "$URL" <<'EOF' && ok "/tokenize and /detokenize" || bad "/tokenize, /detokenize (see above)"
import json, sys, urllib.error, urllib.request
url = sys.argv[1]
def post(route, body):
    req = urllib.request.Request(url + route, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
st, d = post("/tokenize", {"content": "Once upon a time"})
assert st == 200 and d["tokens"] == [403, 407, 261, 378], d
st, d = post("/tokenize", {"content": "Once upon a time", "add_special": True, "with_pieces": True})
assert st == 200 and [t["id"] for t in d["tokens"]] == [1, 403, 407, 261, 378], d
assert "".join(t["piece"] for t in d["tokens"]) == " Once upon a time", d
for text in ["Once upon a time", "The dog ran.\nIt was happy!", "a  b"]:
    st, ids = post("/tokenize", {"content": text})
    st2, back = post("/v1/detokenize", {"tokens": ids["tokens"]})
    assert st == st2 == 200 and back["content"] == text, (text, ids, back)
# the ids /tokenize gives are the prompt's: echo of [[BOS] + ids] scores the same tokens as the text prompt
st, d = post("/v1/completions", {"prompt": [[1] + [403, 407, 261, 378]], "max_tokens": 0, "echo": True, "logprobs": 1})
st2, d2 = post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 0, "echo": True, "logprobs": 1})
assert st == st2 == 200 and d["choices"][0]["logprobs"]["tokens"] == d2["choices"][0]["logprobs"]["tokens"], (d, d2)
for route, body, code in [("/tokenize", {"text": "x"}, 400), ("/tokenize", {"content": 5}, 400),
                          ("/detokenize", {"tokens": [1, 99999]}, 400), ("/detokenize", {"tokens": "1 2"}, 400),
                          ("/detokenize", {}, 400)]:
    st, d = post(route, body)
    assert st == code and d["error"]["message"], (route, body, st, d)
EOF
stop_server "the logprobs server"
finish
