# `lowbit convert --hf` end to end: a sharded Llama-style Hugging Face
# directory (config.json, model-0000N-of-00002.safetensors + index,
# tokenizer.json; written by test_safetensors' fixture writer) converts to
# GGUF in F32, F16, BF16 and Q8_0; each file has the expected tensor types,
# loads, runs and benches. Bad directories fail with a message, no output.
. "$(dirname "$0")/lib_cli.sh"
FIXTURE_BIN=$(dirname "$LOWBIT")/tests/test_safetensors
[ -x "$FIXTURE_BIN" ] || { echo "SKIP: $FIXTURE_BIN not built"; exit 77; }
HF=$WORK/hf
LB_WRITE_HF_FIXTURE=$HF "$FIXTURE_BIN" > "$WORK/fixture.log" 2>&1 && [ -f "$HF/config.json" ] \
  && ok "fixture written ($(ls "$HF" | tr '\n' ' '))" || { bad "fixture: $(tail -n2 "$WORK/fixture.log")"; finish; exit; }

for t in F32 F16 BF16 Q8_0; do
  out=$WORK/hf-$t.gguf
  if "$LOWBIT" convert --hf "$HF" -o "$out" --type "$t" > "$WORK/convert-$t.log" 2>&1 && [ -s "$out" ]; then
    ok "convert --hf --type $t"
  else
    bad "convert --hf --type $t: $(tail -n2 "$WORK/convert-$t.log")"; continue
  fi
  "$LOWBIT" info -a "$out" > "$WORK/info-$t.txt" 2>&1 && grep -q "blk.0.attn_q.weight" "$WORK/info-$t.txt" \
    && grep -q " $t " "$WORK/info-$t.txt" && ok "info lists blk.0.attn_q.weight and $t tensors" \
    || bad "info $t: $(head -n 20 "$WORK/info-$t.txt")"
  res=$("$LOWBIT" run -m "$out" -p "hello world" -n 4 --temp 0 -t 2 2>&1)
  grep -q 'generation: 4 tokens' <<<"$res" && ok "run $t" || bad "run $t: $(tail -n3 <<<"$res")"
  res=$("$LOWBIT" bench -m "$out" -p 8 -n 2 -r 1 -t 2 2>&1)
  grep -q '| tg2 |' <<<"$res" && ok "bench $t" || bad "bench $t: $(tail -n3 <<<"$res")"
done
ls "$WORK"/*.tmp "$WORK"/.*.tmp 2>/dev/null | grep -q . && bad "temporary files left behind" || ok "no temporary files left"

# bad input: no such directory, a directory without config.json, an unwritable output
expect_fail "missing directory" "no such|not found|cannot|could not" "$LOWBIT" convert --hf "$WORK/nope" -o "$WORK/x.gguf"
mkdir -p "$WORK/empty"
expect_fail "directory without config.json" "config.json" "$LOWBIT" convert --hf "$WORK/empty" -o "$WORK/y.gguf"
[ ! -e "$WORK/x.gguf" ] && [ ! -e "$WORK/y.gguf" ] && ok "failed conversions wrote nothing" || bad "a failed conversion left a file"
expect_fail "unwritable output" "cannot|could not|denied|no such" "$LOWBIT" convert --hf "$HF" -o /nonexistent-dir/z.gguf
finish
