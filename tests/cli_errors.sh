# Bad input gets a clear error, a non-zero exit, no crash and nothing left behind.
. "$(dirname "$0")/lib_cli.sh"
need_shared models/stories260K-f32.gguf
M=$SHARED/models/stories260K-f32.gguf

expect_fail "no subcommand" "usage" "$LOWBIT"
expect_fail "unknown subcommand" "unknown subcommand" "$LOWBIT" frobnicate
for sub in run perplexity bench quantize info convert; do
  "$LOWBIT" $sub --help > "$WORK/help.txt" 2>&1 && grep -q "usage: lowbit $sub" "$WORK/help.txt" \
    && ok "$sub --help" || bad "$sub --help"
  expect_fail "$sub: unknown flag" "unknown option" "$LOWBIT" $sub --no-such-flag
done
expect_fail "run without model" "-m MODEL is required" "$LOWBIT" run -p hi
expect_fail "run: missing model file" "cannot open|no such file" "$LOWBIT" run -m "$WORK/missing.gguf" -p hi
expect_fail "run: bad thread count" "expects an integer" "$LOWBIT" run -m "$M" -t zero
expect_fail "run: flag without value" "needs a value" "$LOWBIT" run -m "$M" -p
expect_fail "run: --isa unknown" "expected scalar" "$LOWBIT" run -m "$M" --isa sse9 -p hi
expect_fail "run: --device unknown" "expected cpu or cuda" "$LOWBIT" run -m "$M" --device tpu -p hi
expect_fail "perplexity: --device unknown" "expected cpu or cuda" "$LOWBIT" perplexity -m "$M" -f "$M" --device tpu
expect_fail "bench: --device unknown" "expected cpu or cuda" "$LOWBIT" bench -m "$M" --device tpu -r 1
if "$LOWBIT" serve --help >/dev/null 2>&1; then
  expect_fail "serve: --device unknown" "expected cpu or cuda" "$LOWBIT" serve -m "$M" --device tpu
fi
# --device cuda: a clear error where this build has no CUDA backend or the
# machine no GPU; where both are there it runs
out=$("$LOWBIT" run -m "$M" --device cuda -p hi -n 2 --temp 0 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "run --device cuda ran (a GPU is here)"
elif [ $rc -ge 128 ]; then bad "run --device cuda crashed (exit $rc)"
elif grep -qE "built without the CUDA backend|no CUDA device" <<<"$out"; then ok "run --device cuda (exit $rc): $(head -n1 <<<"$out")"
else bad "run --device cuda: message '$out'"; fi
expect_fail "run: prompt longer than context" "context holds" "$LOWBIT" run -m "$M" -c 8 -p "Once upon a time there was a very long prompt that does not fit"
expect_fail "run: missing prompt file" "cannot open .*missing.txt" "$LOWBIT" run -m "$M" -f "$WORK/missing.txt"
expect_fail "run: prompt file is a directory" "error reading .*directory" "$LOWBIT" run -m "$M" -f "$WORK"
printf 'Once upon a time' > "$WORK/prompt.txt"
"$LOWBIT" run -m "$M" -f "$WORK/prompt.txt" -n 4 --temp 0 -t 2 2>/dev/null | grep -q "^Once upon a time" \
  && ok "run: prompt from a file" || bad "run: prompt from a file"
printf 'this is not a gguf file at all' > "$WORK/junk.gguf"
expect_fail "run: not a GGUF" "magic" "$LOWBIT" run -m "$WORK/junk.gguf" -p hi
head -c 3000 "$M" > "$WORK/trunc.gguf"
expect_fail "info: truncated GGUF" "trunc|past end|end of file" "$LOWBIT" info "$WORK/trunc.gguf"
expect_fail "quantize: unknown type" "unknown or unsupported type" "$LOWBIT" quantize "$M" "$WORK/o.gguf" Q9_9
expect_fail "quantize: unwritable output" "cannot create" "$LOWBIT" quantize "$M" "$WORK/no/such/dir/o.gguf" Q8_0
[ -z "$(ls "$WORK"/no 2>/dev/null)" ] && ok "nothing left behind" || bad "left files behind"
expect_fail "quantize: same in and out" "must differ" "$LOWBIT" quantize "$M" "$M" Q8_0
cp "$M" "$WORK/in.gguf"; sum1=$(md5sum < "$WORK/in.gguf")
"$LOWBIT" quantize "$WORK/in.gguf" "$WORK/q8.gguf" Q8_0 >/dev/null 2>&1 || bad "quantize Q8_0"
[ "$sum1" = "$(md5sum < "$WORK/in.gguf")" ] && ok "input unchanged by quantize" || bad "input modified"
ls "$WORK"/*.tmp.* >/dev/null 2>&1 && bad "temp files left" || ok "no temp files"
expect_fail "perplexity: file too short" "fewer than one chunk" "$LOWBIT" perplexity -m "$M" -f "$WORK/junk.gguf" -c 128
expect_fail "perplexity: kld without base" "needs --kl-divergence-base" "$LOWBIT" perplexity -m "$M" --kl-divergence
expect_fail "perplexity: bad kld base" "not a KL-divergence base file" "$LOWBIT" perplexity -m "$M" --kl-divergence-base "$WORK/junk.gguf" --kl-divergence
expect_fail "bench: unknown synthetic shape" "unknown synthetic shape" "$LOWBIT" bench --synthetic gpt-17 -r 1
expect_fail "bench: model and synthetic" "exactly one" "$LOWBIT" bench -m "$M" --synthetic stories15m
expect_fail "convert: missing tokenizer" "needs --tokenizer" "$LOWBIT" convert --llama2c "$SHARED/models/stories260K.bin" -o "$WORK/x.gguf"
head -c 5000 "$SHARED/models/stories260K.bin" > "$WORK/trunc.bin"
expect_fail "convert: truncated checkpoint" "trunc|too short|expected" "$LOWBIT" convert --llama2c "$WORK/trunc.bin" --tokenizer "$SHARED/models/tok512.bin" -o "$WORK/t.gguf"
[ ! -e "$WORK/t.gguf" ] && ok "no output from failed convert" || bad "failed convert left output"
finish
