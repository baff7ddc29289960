#!/usr/bin/env python3
"""N concurrent streaming clients (the official `openai` package) against an
OpenAI-compatible server (lowbit serve, llama-server): aggregate generated
tokens/s, time to first token and request latency (p50 / p99), for each
client count given. Used by bench/serve.sh; runs alone too:

    python3 bench/serve_clients.py --url http://127.0.0.1:8080 --clients 1,4 \\
        --requests 8 --max-tokens 128 --prompt-words 400 [--api-key KEY] [--model ID]

Every client sends --requests requests one after the other (the same prompt,
temperature 0; a request may end early at end of text, so tokens are counted
from the usage chunk). Both servers keep a slot's prompt and skip the prefix a
new request shares with it (llama-server's `cache_prompt`, on by default in
both); --no-cache-prompt sends `"cache_prompt": false` so every prompt is
evaluated in full. One line of JSON per client count
goes to stdout; the readable table to stderr."""
import argparse
import json
import sys
import threading
import time

try:
    import openai
except ImportError:
    sys.exit("serve_clients.py needs the openai package (pip install openai)")


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def one_request(client, model, prompt, max_tokens, out, extra=None):
    t0 = time.perf_counter()
    first, n = None, 0
    stream = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0,
                                       stream=True, stream_options={"include_usage": True}, extra_body=extra)
    usage = None
    for ch in stream:
        if ch.usage:
            usage = ch.usage
        if ch.choices and ch.choices[0].text and first is None:
            first = time.perf_counter()
        if ch.choices and ch.choices[0].text:
            n += 1
    t1 = time.perf_counter()
    out.append({"ttft": (first or t1) - t0, "latency": t1 - t0,
                "tokens": usage.completion_tokens if usage else n,
                "prompt_tokens": usage.prompt_tokens if usage else None})


def run(args, clients):
    client = openai.OpenAI(base_url=args.url.rstrip("/") + "/v1", api_key=args.api_key or "none", max_retries=0,
                           timeout=600)
    model = args.model or client.models.list().data[0].id
    prompt = " ".join(["Once upon a time there was a little girl who liked to play in the park."] *
                      max(1, args.prompt_words // 15))
    results, errors = [], []
    extra = {"cache_prompt": False} if args.no_cache_prompt else None

    def worker():
        for _ in range(args.requests):
            try:
                one_request(client, model, prompt, args.max_tokens, results, extra)
            except Exception as e:  # counted, reported
                errors.append(repr(e))

    # one warm-up request outside the timing
    one_request(client, model, prompt, 4, [], extra)
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    tokens = sum(r["tokens"] for r in results)
    return {"clients": clients, "requests": len(results), "errors": len(errors), "wall_s": round(wall, 3),
            "generated_tokens": tokens, "aggregate_tok_s": round(tokens / wall, 2) if wall > 0 else 0,
            "prompt_tokens": results[0]["prompt_tokens"] if results else None,
            "ttft_p50_s": round(pct([r["ttft"] for r in results], 50), 4),
            "ttft_p99_s": round(pct([r["ttft"] for r in results], 99), 4),
            "latency_p50_s": round(pct([r["latency"] for r in results], 50), 4),
            "latency_p99_s": round(pct([r["latency"] for r in results], 99), 4),
            "first_error": errors[0] if errors else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--clients", default="1,4", help="comma-separated client counts")
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=60)
    ap.add_argument("--label", default="")
    ap.add_argument("--no-cache-prompt", action="store_true", help='send "cache_prompt": false')
    args = ap.parse_args()
    rows = []
    for c in [int(x) for x in args.clients.split(",") if x]:
        r = run(args, c)
        r["label"] = args.label
        rows.append(r)
        print(json.dumps(r), flush=True)
    base = rows[0]["aggregate_tok_s"] if rows else 0
    print("| server | clients | requests | errors | prompt tok | gen tok/s (aggregate) | x 1st row | TTFT p50 / p99 s "
          "| latency p50 / p99 s |", file=sys.stderr)
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", file=sys.stderr)
    for r in rows:
        print("| %s | %d | %d | %d | %s | %.1f | %.2f | %.3f / %.3f | %.2f / %.2f |" %
              (args.label or args.url, r["clients"], r["requests"], r["errors"], r["prompt_tokens"],
               r["aggregate_tok_s"], r["aggregate_tok_s"] / base if base else 0, r["ttft_p50_s"], r["ttft_p99_s"],
               r["latency_p50_s"], r["latency_p99_s"]), file=sys.stderr)


if __name__ == "__main__":
    main()
