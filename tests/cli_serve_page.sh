#!/usr/bin/env bash
# The chat page of lowbit serve (GET /) in headless Chromium (Debian's
# `chromium`, driven over the DevTools pipe by tests/serve_page.py): it loads,
# sends a prompt and streams the reply into the DOM, chunk by chunk; in
# completion mode at temperature 0 the text is the API's own answer. Skips
# (77) without chromium or without the server's libraries.
. "$(dirname "$0")/lib_cli.sh"
need_shared models/stories260K.bin
need_shared models/tok512.bin
if ! "$LOWBIT" serve --help >/dev/null 2>&1; then echo "SKIP: lowbit was built without libmicrohttpd / cJSON"; exit 77; fi
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "SKIP: no chromium (apt-get install chromium)"; exit 77; }
command -v python3 >/dev/null && command -v curl >/dev/null || { echo "SKIP: needs python3 and curl"; exit 77; }

MODEL=$WORK/stories260K.gguf
"$LOWBIT" convert --llama2c "$SHARED/models/stories260K.bin" --tokenizer "$SHARED/models/tok512.bin" -o "$MODEL" \
  >/dev/null 2>&1 || { bad "convert"; finish; exit 1; }
# steps of at least 10 ms, so the reply streams in visible pieces even on a loaded machine
LOWBIT_SERVE_TEST_DELAY_MS=10 "$LOWBIT" serve -m "$MODEL" --port 0 -t 2 -np 2 --chat-template chatml >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill -KILL $PID 2>/dev/null' EXIT
URL=""
for _ in $(seq 1 300); do
  URL=$(grep -o 'listening on http://[^ ]*' "$WORK/serve.log" | sed 's/listening on //')
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { bad "server did not start: $(cat "$WORK/serve.log")"; finish; exit 1; }

want=$(curl -s "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}' |
       python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["choices"][0]["text"]))')
mkdir -p "$WORK/chrome1" "$WORK/chrome2"
out=$(python3 "$(dirname "$0")/serve_page.py" "$CHROMIUM" \
      "$URL/#q=Once%20upon%20a%20time&mode=completion&max_tokens=24&temperature=0" "$WORK/chrome1")
rc=$?
echo "page: $out"
[ $rc -eq 0 ] && ok "completion mode: the reply streamed into the page" || bad "completion mode (see the page state above; $WORK/chrome1/chromium.log)"
got=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["text"]))' "$out" 2>/dev/null)
[ "$got" = "$want" ] && ok "the page shows the API's answer" || bad "page text $got, API $want"
grep -q '"chunk_seen_while_streaming": true' <<<"$out" && ok "text appeared while the page was still streaming" \
  || bad "no text before the end"

out=$(python3 "$(dirname "$0")/serve_page.py" "$CHROMIUM" "$URL/#q=Tell%20me%20a%20story&max_tokens=16" "$WORK/chrome2")
rc=$?
echo "page: $out"
[ $rc -eq 0 ] && ok "chat mode: the reply streamed into the page" || bad "chat mode ($WORK/chrome2/chromium.log)"
h=$(curl -s "$URL/health")
grep -q '"slots_processing":0' <<<"$h" && ok "no slot busy afterwards" || bad "health: $h"
kill -TERM $PID
wait $PID && ok "SIGTERM: exit 0" || bad "exit status after SIGTERM"
finish
