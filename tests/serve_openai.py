#!/usr/bin/env python3
"""The official `openai` client against a running `lowbit serve`
(tests/cli_serve_openai.sh starts it): models, chat and completions, streamed
and not, usage and finish_reason, log probabilities read by the client's own
models, and the client's exceptions for errors.

    python3 tests/serve_openai.py BASE_URL API_KEY MODEL_ID
Exit 0 when every check passes; 77 (skip) when `openai` is not installed."""
import sys

try:
    import openai
except ImportError:
    print("SKIP: the openai package is not installed (pip install openai)")
    sys.exit(77)

base, key, model = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=120)
fails = 0


def check(what, cond, detail=""):
    global fails
    print(("ok: " if cond else "FAIL: ") + what + ("" if cond else ": " + str(detail)))
    fails += not cond


print("openai", openai.__version__)
ids = [m.id for m in client.models.list()]
check("models.list() has the model", model in ids, ids)

msgs = [{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Once upon a time"}]

r = client.chat.completions.create(model=model, messages=msgs, max_tokens=24, temperature=0)
c = r.choices[0]
check("chat: an assistant message", c.message.role == "assistant" and len(c.message.content) > 0, r)
check("chat: finish_reason length at max_tokens", c.finish_reason == "length", c.finish_reason)
check("chat: usage", r.usage.completion_tokens == 24 and r.usage.prompt_tokens > 0 and
      r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, r.usage)
check("chat: object", r.object == "chat.completion", r.object)

text, finish, n, usage = "", None, 0, None
for ch in client.chat.completions.create(model=model, messages=msgs, max_tokens=24, temperature=0, stream=True,
                                         stream_options={"include_usage": True}):
    if ch.usage:
        usage = ch.usage
    if not ch.choices:
        continue
    n += 1
    text += ch.choices[0].delta.content or ""
    finish = ch.choices[0].finish_reason or finish
check("chat stream: same text as without streaming", text == c.message.content, (text, c.message.content))
check("chat stream: several chunks", n > 3, n)
check("chat stream: finish_reason", finish == "length", finish)
check("chat stream: usage chunk", usage is not None and usage.completion_tokens == 24, usage)

r = client.completions.create(model=model, prompt="Once upon a time", max_tokens=30, temperature=0, stop=["Lily"])
c = r.choices[0]
check("completion: text", len(c.text) > 0 and "Lily" not in c.text, c.text)
check("completion: stop string ends it", c.finish_reason == "stop", c.finish_reason)
check("completion: usage", r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0, r.usage)

parts = [ch.choices[0].text for ch in client.completions.create(model=model, prompt="Once upon a time",
                                                                  max_tokens=30, temperature=0, stop=["Lily"],
                                                                  stream=True) if ch.choices]
check("completion stream: same text", "".join(parts) == c.text, ("".join(parts), c.text))

a = client.completions.create(model=model, prompt="The dog", max_tokens=20, temperature=1.0, seed=3).choices[0].text
b = client.completions.create(model=model, prompt="The dog", max_tokens=20, temperature=1.0, seed=3).choices[0].text
check("seed: the same draws", a == b, (a, b))

# log probabilities: the client's own models read them; greedy picks the likeliest token
r = client.chat.completions.create(model=model, messages=msgs, max_tokens=12, temperature=0, logprobs=True,
                                   top_logprobs=3)
lp = r.choices[0].logprobs.content
check("chat logprobs: one entry a token, the text's pieces", len(lp) == 12 and
      "".join(e.token for e in lp) == r.choices[0].message.content, lp)
check("chat logprobs: greedy = the first alternative", all(
    len(e.top_logprobs) == 3 and e.top_logprobs[0].token == e.token and abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6
    and e.logprob <= 0 and bytes(e.bytes).decode() == e.token for e in lp), lp[:2])
streamed = []
for ch in client.chat.completions.create(model=model, messages=msgs, max_tokens=12, temperature=0, logprobs=True,
                                         top_logprobs=3, stream=True):
    if ch.choices and ch.choices[0].logprobs:
        streamed += ch.choices[0].logprobs.content
# the same tokens; the values up to the rounding of a prompt evaluated in another batch shape (the cache)
check("chat logprobs streamed: the same entries", [e.token for e in streamed] == [e.token for e in lp] and
      all(abs(a.logprob - b.logprob) < 1e-3 for a, b in zip(streamed, lp)),
      [(a.token, a.logprob, b.logprob) for a, b in zip(streamed, lp)])
r = client.completions.create(model=model, prompt="Once upon a time", max_tokens=10, temperature=0, logprobs=2)
l = r.choices[0].logprobs
check("completion logprobs: tokens, offsets, alternatives", "".join(l.tokens) == r.choices[0].text and
      l.text_offset == [sum(len(t) for t in l.tokens[:i]) for i in range(len(l.tokens))] and
      all(len(d) <= 2 and abs(max(d.values()) - x) < 1e-6 for d, x in zip(l.top_logprobs, l.token_logprobs)), l)

try:
    client.completions.create(model="no-such-model", prompt="x", max_tokens=2)
    check("unknown model raises NotFoundError", False, "no exception")
except openai.NotFoundError as e:
    check("unknown model raises NotFoundError", e.status_code == 404 and e.code == "model_not_found", e)
try:
    client.chat.completions.create(model=model, messages=msgs, max_tokens=0)
    check("max_tokens = 0 raises BadRequestError", False, "no exception")
except openai.BadRequestError as e:
    check("max_tokens = 0 raises BadRequestError", e.param == "max_tokens", e)
try:
    openai.OpenAI(base_url=base + "/v1", api_key="wrong", max_retries=0).models.list()
    check("a wrong key raises AuthenticationError", False, "no exception")
except openai.AuthenticationError as e:
    check("a wrong key raises AuthenticationError", e.status_code == 401, e)

print("%d failed" % fails)
sys.exit(1 if fails else 0)
