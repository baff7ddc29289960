#!/usr/bin/env bash
# The official `openai` Python client against lowbit serve on stories260K
# (tests/serve_openai.py): chat and completions, streaming and not. Skips
# (77) when the package is not installed (.ci/run installs it with pip) or
# lowbit was built without the server's libraries.
. "$(dirname "$0")/lib_cli.sh"
python3 -c "import openai" 2>/dev/null || { echo "SKIP: the openai package is not installed (pip install openai)"; exit 77; }
. "$(dirname "$0")/lib_serve.sh"
start_server "$WORK/serve.log" -np 2 --api-key k3y --chat-template chatml
python3 "$(dirname "$0")/serve_openai.py" "$URL" k3y stories260K.gguf
rc=$?
[ $rc -eq 0 ] && ok "the openai client's checks" || bad "the openai client's checks (exit $rc)"
stop_server "after the client"
finish
