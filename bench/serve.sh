#!/usr/bin/env bash
# lowbit serve under load (issue 21's targets; a benchmark, not a test):
#   1. streaming clients with the official `openai` package (bench/serve_clients.py):
#      aggregate generated tokens/s for 1 and N clients (batching: N clients
#      should give well over 1 client's rate), time to first token, latency p50/p99;
#      with the servers' prompt caches (on by default in both) and without;
#   2. time to first token of a long prompt (not cached) against `lowbit bench`'s prompt rate;
#   3. a bounded wrk load test on loopback (bench/serve_wrk.lua: valid and
#      malformed requests mixed), then: the server still up, no slot busy,
#      resident memory before and after;
#   4. the same clients against llama.cpp's llama-server on the same model and
#      settings, when ../shared/peers/build.sh has built it: one table.
set -uo pipefail

usage() {
  cat <<'EOF'
usage: bench/serve.sh [options]

  -m MODEL           GGUF (default: PEERS_DIR/models/synth-1.1b-Q4_0.gguf when present,
                     else stories260K converted from ../shared)
  -t N               threads (default 2)
  -np N              slots, for both servers (default 4)
  -c N               context per slot (default 1024; llama-server gets -c N*np)
  --clients LIST     concurrent streaming clients (default 1,4)
  --requests N       requests per client (default 4)
  -n N               max_tokens per request (default 128)
  --prompt-words N   prompt length in words for the client runs (default 60)
  --long-words N     prompt length in words of the time-to-first-token run (default 400; 0 = skip)
  --wrk-requests N   requests of the wrk load test (default 10000; 0 = skip)
  --wrk-seconds S    its time bound (default 120)
  --peer PATH|none   llama-server binary (default PEERS_DIR/llama.cpp/build/bin/llama-server if built)
  --lowbit PATH      lowbit binary (default $LOWBIT, else build/lowbit)
  --peers-dir DIR    where ../shared/peers/build.sh put the peers (default $LOWBIT_PEERS,
                     else ~/.cache/lowbit-peers)
Needs curl, python3 with `openai` (pip install openai) and, for step 3, wrk (apt-get install wrk).
Tables go to stderr, one JSON line per client run to stdout.
EOF
}

here=$(cd "$(dirname "$0")/.." && pwd)
threads=2 np=4 ctx=1024 clients=1,4 requests=4 ntok=128 words=60 long_words=400 wrk_requests=10000 wrk_seconds=120
lowbit=${LOWBIT:-$here/build/lowbit}
pdir=${LOWBIT_PEERS:-$HOME/.cache/lowbit-peers}
model="" peer=""
die() { echo "serve.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -m) model=$2; shift ;;
    -t) threads=$2; shift ;;
    -np) np=$2; shift ;;
    -c) ctx=$2; shift ;;
    --clients) clients=$2; shift ;;
    --requests) requests=$2; shift ;;
    -n) ntok=$2; shift ;;
    --prompt-words) words=$2; shift ;;
    --long-words) long_words=$2; shift ;;
    --wrk-requests) wrk_requests=$2; shift ;;
    --wrk-seconds) wrk_seconds=$2; shift ;;
    --peer) peer=$2; shift ;;
    --lowbit) lowbit=$2; shift ;;
    --peers-dir) pdir=$2; shift ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done
[ -x "$lowbit" ] || die "no lowbit binary at $lowbit (build first, or --lowbit PATH)"
"$lowbit" serve --help >/dev/null 2>&1 || die "$lowbit was built without lowbit serve (libmicrohttpd-dev, libcjson-dev)"
python3 -c "import openai" 2>/dev/null || die "python3 needs the openai package (pip install openai)"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

if [ -z "$model" ]; then
  model=$pdir/models/synth-1.1b-Q4_0.gguf
  if [ ! -f "$model" ]; then
    model=$work/stories260K.gguf
    "$lowbit" convert --llama2c "$here/../shared/models/stories260K.bin" \
      --tokenizer "$here/../shared/models/tok512.bin" -o "$model" >/dev/null 2>&1 || die "no model (use -m)"
    echo "serve.sh: no TinyLlama-shape peers model; using stories260K" >&2
  fi
fi
[ -z "$peer" ] && [ -x "$pdir/llama.cpp/build/bin/llama-server" ] && peer=$pdir/llama.cpp/build/bin/llama-server
[ "$peer" = none ] && peer=""
echo "serve.sh: model $model, $threads threads, $np slots x $ctx tokens" >&2

# wait_up URL PID: until /health answers 200 (at most 5 minutes: big models load slowly)
wait_up() {
  for _ in $(seq 1 3000); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/health")" = 200 ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# ---- lowbit serve
"$lowbit" serve -m "$model" -t "$threads" -np "$np" -c "$ctx" --port 0 --queue 65536 >"$work/lowbit.log" 2>&1 &
lpid=$!
pids+=("$lpid")
for _ in $(seq 1 3000); do
  url=$(grep -o 'listening on http://[^ ]*' "$work/lowbit.log" | sed 's/listening on //')
  [ -n "$url" ] && break
  kill -0 "$lpid" 2>/dev/null || break
  sleep 0.1
done
[ -n "${url:-}" ] && wait_up "$url" "$lpid" || die "lowbit serve did not start: $(cat "$work/lowbit.log")"
echo "== lowbit serve at $url" >&2
python3 "$here/bench/serve_clients.py" --url "$url" --clients "$clients" --requests "$requests" \
  --max-tokens "$ntok" --prompt-words "$words" --label "lowbit serve"
python3 "$here/bench/serve_clients.py" --url "$url" --clients "$clients" --requests "$requests" \
  --max-tokens "$ntok" --prompt-words "$words" --label "lowbit serve, no prompt cache" --no-cache-prompt

if [ "$long_words" -gt 0 ]; then
  echo "== time to first token of a long prompt vs lowbit bench's prompt rate" >&2
  python3 "$here/bench/serve_clients.py" --url "$url" --clients 1 --requests 3 --max-tokens 1 \
    --prompt-words "$long_words" --label "lowbit serve, long prompt" --no-cache-prompt | tee "$work/long.json"
  pp=$("$lowbit" bench -m "$model" -t "$threads" -p 512 -n 0 -r 2 2>/dev/null | awk -F'|' '/pp512/ {print $(NF-1)}' |
       awk '{print $1}')
  python3 - "$work/long.json" "${pp:-0}" <<'EOF' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
pp = float(sys.argv[2] or 0)
if pp > 0 and r["prompt_tokens"]:
    want = r["prompt_tokens"] / pp
    print("TTFT p50 %.3f s for %d prompt tokens; at lowbit bench's pp512 rate (%.1f t/s) they take %.3f s: %+.1f %%"
          % (r["ttft_p50_s"], r["prompt_tokens"], pp, want, 100 * (r["ttft_p50_s"] / want - 1)))
else:
    print("no pp512 figure from lowbit bench")
EOF
fi

if [ "$wrk_requests" -gt 0 ]; then
  if command -v wrk >/dev/null; then
    echo "== wrk: $wrk_requests requests (valid and malformed mixed), at most $wrk_seconds s" >&2
    before=$(rss_kib "$lpid")
    LOWBIT_WRK_REQUESTS=$wrk_requests LOWBIT_WRK_THREADS=2 \
      wrk -t2 -c8 -d"${wrk_seconds}s" --timeout 60s -s "$here/bench/serve_wrk.lua" "$url" >&2
    after=$(rss_kib "$lpid")
    health=$(curl -s "$url/health")
    kill -0 "$lpid" 2>/dev/null && echo "server alive after wrk: yes" >&2 || echo "server alive after wrk: NO" >&2
    echo "health right after wrk: $health" >&2
    # the requests wrk left in flight when it stopped: their slots must come back
    # (a closed connection is seen at the next write); wait up to 60 s for all idle
    t0=$SECONDS
    while [ $((SECONDS - t0)) -lt 60 ]; do
      health=$(curl -s "$url/health")
      case $health in *'"slots_processing":0,"requests_queued":0'*) break ;; esac
      sleep 0.5
    done
    case $health in
      *'"slots_processing":0,"requests_queued":0'*) echo "slots: all idle $((SECONDS - t0)) s after wrk (none leaked)" >&2 ;;
      *) echo "slots: NOT idle 60 s after wrk: $health" >&2 ;;
    esac
    after=$(rss_kib "$lpid")
    echo "resident memory: ${before:-?} KiB before, ${after:-?} KiB after" >&2
  else
    echo "serve.sh: wrk not installed (apt-get install wrk): load test skipped" >&2
  fi
fi
kill -TERM "$lpid"
wait "$lpid" 2>/dev/null

# ---- llama-server, same model and settings
if [ -n "$peer" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$peer" -m "$model" -t "$threads" -np "$np" -c $((ctx * np)) --host 127.0.0.1 --port "$port" >"$work/peer.log" 2>&1 &
  ppid=$!
  pids+=("$ppid")
  purl=http://127.0.0.1:$port
  if wait_up "$purl" "$ppid"; then
    echo "== llama-server at $purl" >&2
    python3 "$here/bench/serve_clients.py" --url "$purl" --clients "$clients" --requests "$requests" \
      --max-tokens "$ntok" --prompt-words "$words" --label "llama-server"
    python3 "$here/bench/serve_clients.py" --url "$purl" --clients "$clients" --requests "$requests" \
      --max-tokens "$ntok" --prompt-words "$words" --label "llama-server, no prompt cache" --no-cache-prompt
  else
    echo "serve.sh: llama-server did not start: $(tail -5 "$work/peer.log")" >&2
  fi
  kill -TERM "$ppid"
  wait "$ppid" 2>/dev/null
fi
