#!/usr/bin/env python3
"""Perplexity of a text file through a running `lowbit serve` (or any server
with llama-server's /tokenize and OpenAI's completions echo + logprobs), in
llama.cpp's method: the file tokenized whole (BOS first), chunks of CTX
tokens each starting with BOS, the second half of each chunk scored. Prints
the running estimate per chunk as `lowbit perplexity` does, so the two can be
compared line by line: the same numbers mean the server's log probabilities
are the model's.

    python3 bench/serve_ppl.py URL FILE [--ctx 512] [--chunks N] [--key KEY]

The server's context (-c) must hold CTX tokens. Measured (docs/serve.md):
gemma-3-270m Q4_K_M, wiki.test.raw, 2 chunks of 512: [1]11.4319 [2]15.5268
here and from `lowbit perplexity -c 512 --chunks 2`."""
import argparse
import json
import math
import sys
import urllib.request


def post(url, route, body, key):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(url + route, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("file")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=0, help="0: all")
    ap.add_argument("--key", default=None)
    a = ap.parse_args()
    url = a.url.rstrip("/")
    text = open(a.file, encoding="utf-8", errors="replace").read()
    ids = post(url, "/tokenize", {"content": text, "add_special": True}, a.key)["tokens"]
    n = len(ids) // a.ctx
    if a.chunks:
        n = min(n, a.chunks)
    if n == 0:
        sys.exit("the file has fewer than %d tokens" % a.ctx)
    bos = ids[0]
    first = a.ctx // 2
    scored = []
    for c in range(n):
        chunk = [bos] + ids[c * a.ctx + 1:(c + 1) * a.ctx]
        d = post(url, "/v1/completions", {"prompt": [chunk], "max_tokens": 0, "echo": True, "logprobs": 1,
                                          "temperature": 0}, a.key)
        lp = d["choices"][0]["logprobs"]["token_logprobs"]  # lp[i]: token i given 0..i-1 (lp[0] is None)
        scored += lp[first + 1:a.ctx]
        print("[%d]%.4f," % (c + 1, math.exp(-sum(scored) / len(scored))), end="", flush=True)
    print("\nFinal estimate: PPL = %.4f (%d chunks of %d tokens, %d scored)" %
          (math.exp(-sum(scored) / len(scored)), n, a.ctx, len(scored)))


if __name__ == "__main__":
    main()
