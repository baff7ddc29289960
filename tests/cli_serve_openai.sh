#!/usr/bin/env bash
# The official `openai` Python client against lowbit serve on stories260K
# (tests/serve_openai.py): chat and completions, streaming and not. Skips
# (77) when the package is not installed (.ci/run installs it with pip) or
# lowbit was built without the server's libraries.
. "$(dirname "$0")/lib_cli.sh"
need_shared models/stories260K.bin
need_shared models/tok512.bin
if ! "$LOWBIT" serve --help >/dev/null 2>&1; then echo "SKIP: lowbit was built without libmicrohttpd / cJSON"; exit 77; fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
python3 -c "import openai" 2>/dev/null || { echo "SKIP: the openai package is not installed (pip install openai)"; exit 77; }

MODEL=$WORK/stories260K.gguf
"$LOWBIT" convert --llama2c "$SHARED/models/stories260K.bin" --tokenizer "$SHARED/models/tok512.bin" -o "$MODEL" \
  >/dev/null 2>&1 || { bad "convert"; finish; exit 1; }
"$LOWBIT" serve -m "$MODEL" --port 0 -t 2 -np 2 --api-key k3y --chat-template chatml >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill -KILL $PID 2>/dev/null' EXIT
URL=""
for _ in $(seq 1 300); do
  URL=$(grep -o 'listening on http://[^ ]*' "$WORK/serve.log" | sed 's/listening on //')
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { bad "server did not start: $(cat "$WORK/serve.log")"; finish; exit 1; }
python3 "$(dirname "$0")/serve_openai.py" "$URL" k3y stories260K.gguf
rc=$?
[ $rc -eq 0 ] && ok "the openai client's checks" || bad "the openai client's checks (exit $rc)"
kill -TERM $PID
wait $PID && ok "SIGTERM: exit 0" || bad "exit status after SIGTERM"
finish
