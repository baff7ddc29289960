#!/usr/bin/env bash
# The chat page of lowbit serve (GET /) in headless Chromium (Debian's
# `chromium`, driven over the DevTools pipe by tests/serve_page.py): it loads,
# sends a prompt and streams the reply into the DOM, chunk by chunk; in
# completion mode at temperature 0 the text is the API's own answer; with
# DeepSeek-V3.1's template and thinking on (the page's switch), the reply's
# reasoning_content fills the reasoning box, as the API gives it. Skips
# (77) without chromium or without the server's libraries.
. "$(dirname "$0")/lib_cli.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "SKIP: no chromium (apt-get install chromium)"; exit 77; }
command -v python3 >/dev/null && command -v curl >/dev/null || { echo "SKIP: needs python3 and curl"; exit 77; }

. "$(dirname "$0")/lib_serve.sh"
# steps of at least 10 ms, so the reply streams in visible pieces even on a loaded machine
LOWBIT_SERVE_TEST_DELAY_MS=10 start_server "$WORK/serve.log" -np 2 --chat-template deepseek-v3.1

want=$(curl -s "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}' |
       python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["choices"][0]["text"]))')
mkdir -p "$WORK/chrome1" "$WORK/chrome2" "$WORK/chrome3"
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
want=$(curl -s "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":16,
       "temperature":0,"chat_template_kwargs":{"enable_thinking":true}}' |
       python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["choices"][0]["message"]["reasoning_content"]))')
out=$(python3 "$(dirname "$0")/serve_page.py" "$CHROMIUM" \
      "$URL/#q=Tell%20me%20a%20story&max_tokens=16&temperature=0&thinking=on" "$WORK/chrome3" reasoning)
rc=$?
echo "page: $out"
got=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["reasoning"]))' "$out" 2>/dev/null)
[ $rc -eq 0 ] && [ "$got" = "$want" ] && ok "thinking on: the reasoning streamed into its box, as the API gives it" \
  || bad "thinking on: page $got, API $want ($WORK/chrome3/chromium.log)"
h=$(curl -s "$URL/health")
grep -q '"slots_processing":0' <<<"$h" && ok "no slot busy afterwards" || bad "health: $h"
stop_server "after the page"
finish
