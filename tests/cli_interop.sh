# Every llama.cpp-written GGUF in ../shared/interop whose types lowbit computes
# with must load and run (generate a few tokens, and bench a few).
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
# IQ4_XS has no file in ../shared: lowbit's quantization of tiny-F32, whose
# tensor bytes test_iq4_xs proves equal to llama-quantize's, runs with the rest.
if "$LOWBIT" quantize -t 2 "$SHARED/interop/tiny-F32.gguf" "$WORK/tiny-IQ4_XS.gguf" IQ4_XS > "$WORK/q.txt" 2>&1; then
  ok "quantize tiny-F32 to IQ4_XS"
else
  bad "quantize tiny-F32 to IQ4_XS: $(tail -n 3 "$WORK/q.txt")"
fi
fixture=$(dirname "$0")/data/iq4_xs/tiny-IQ4_XS-2t.gguf # llama-quantize's own bytes, two tensors
"$LOWBIT" info "$fixture" > "$WORK/info.txt" 2>&1 && grep -q 'IQ4_XS .*4.250 bpw' "$WORK/info.txt" \
  && ok "info $(basename "$fixture")" || bad "info $(basename "$fixture"): $(tail -n 3 "$WORK/info.txt")"
for f in "$SHARED"/interop/tiny-*.gguf "$WORK/tiny-IQ4_XS.gguf" "$SHARED/models/stories260K-f32.gguf"; do
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
