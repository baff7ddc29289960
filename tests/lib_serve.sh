# Shared by the lowbit serve tests (after lib_cli.sh): skips (77) when lowbit
# was built without libmicrohttpd / cJSON or stories260K is missing, converts
# stories260K to $MODEL, and gives start_server / stop_server.
need_shared models/stories260K.bin
need_shared models/tok512.bin
if ! "$LOWBIT" serve --help >/dev/null 2>&1; then
  "$LOWBIT" serve 2>&1 | grep -q "built without" && { echo "SKIP: lowbit was built without libmicrohttpd / cJSON"; exit 77; }
  bad "lowbit serve --help fails"; finish; exit 1
fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

MODEL=$WORK/stories260K.gguf
"$LOWBIT" convert --llama2c "$SHARED/models/stories260K.bin" --tokenizer "$SHARED/models/tok512.bin" -o "$MODEL" \
  >/dev/null 2>&1 || { bad "convert"; finish; exit 1; }

PIDS=()
serve_cleanup() { for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; }
trap serve_cleanup EXIT

# start_server LOG ARGS...: starts lowbit serve on a free port; sets PID and URL
start_server() {
  local log=$1; shift
  "$LOWBIT" serve -m "$MODEL" --port 0 -t 2 "$@" >"$log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 1 300); do
    URL=$(grep -o 'listening on http://[^ ]*' "$log" | sed 's/listening on //')
    [ -n "$URL" ] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  bad "server did not start: $(cat "$log")"
  finish
  exit 1
}

# stop_server WHAT: SIGTERM, must exit 0 within 10 s
stop_server() {
  local what=$1
  kill -TERM "$PID"
  for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then bad "$what: still running 10 s after SIGTERM"; kill -KILL "$PID"; return; fi
  wait "$PID"; local rc=$?
  [ $rc -eq 0 ] && ok "$what: SIGTERM ends the server (exit 0)" || bad "$what: exit $rc after SIGTERM"
}
