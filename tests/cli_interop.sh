# Every llama.cpp-written GGUF in ../shared/interop whose types lowbit computes
# with must load and run (generate a few tokens, and bench a few).
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
for f in "$SHARED"/interop/tiny-*.gguf "$SHARED/models/stories260K-f32.gguf"; do
  name=$(basename "$f")
  out=$("$LOWBIT" run -m "$f" -p "Once upon a time" -n 8 --temp 0 -t 2 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q 'generation: 8 tokens' <<<"$out"; then
    ok "run $name"
  else
    bad "run $name (exit $rc): $(tail -n 3 <<<"$out")"
  fi
  out=$("$LOWBIT" bench -m "$f" -p 16 -n 4 -r 1 -t 2 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q '| tg4 |' <<<"$out"; then ok "bench $name"; else bad "bench $name (exit $rc): $(tail -n 3 <<<"$out")"; fi
  "$LOWBIT" info "$f" > "$WORK/info.txt" 2>&1 && grep -q 'bits per weight' "$WORK/info.txt" \
    && ok "info $name" || bad "info $name"
done
finish
