# `lowbit convert --hf` on GPTQ checkpoints (written by test_import_gptq's
# fixture writer): a 4-bit group-128 checkpoint keeps its matrices as
# GQ4_G128 and the result runs (random weights: it may stop at EOS early)
# and scores perplexity; an act-order (desc_act) checkpoint is refused with
# the reason and the way out, and converts with --dequantize; a group_size -1
# checkpoint keeps GQ3_GC matrices and runs. Failures leave no file behind.
. "$(dirname "$0")/lib_cli.sh"
FIXTURE_BIN=$(dirname "$LOWBIT")/tests/test_import_gptq
[ -x "$FIXTURE_BIN" ] || { echo "SKIP: $FIXTURE_BIN not built"; exit 77; }
LB_WRITE_GPTQ_FIXTURE=$WORK/hf "$FIXTURE_BIN" > "$WORK/fixture.log" 2>&1 && [ -f "$WORK/hf/keep/config.json" ] \
  && ok "fixtures written" || { bad "fixture: $(tail -n2 "$WORK/fixture.log")"; finish; exit; }

out=$WORK/keep.gguf
if "$LOWBIT" convert --hf "$WORK/hf/keep" -o "$out" --type F16 > "$WORK/convert.log" 2>&1 && [ -s "$out" ]; then
  ok "convert --hf GPTQ 4-bit g128"
else
  bad "convert --hf GPTQ: $(tail -n3 "$WORK/convert.log")"
fi
"$LOWBIT" info -a "$out" > "$WORK/info.txt" 2>&1
grep -E "blk\.0\.attn_q\.weight.*GQ4_G128" "$WORK/info.txt" >/dev/null && grep -E "output\.weight.*GQ4_G128" "$WORK/info.txt" >/dev/null \
  && grep -E "token_embd\.weight.*F16" "$WORK/info.txt" >/dev/null \
  && ok "info: GPTQ matrices are GQ4_G128, the embedding F16" || bad "info: $(head -n 30 "$WORK/info.txt")"
res=$("$LOWBIT" run -m "$out" -p "hello hello" -n 4 --temp 0 -t 2 2>&1)
grep -qE 'generation: [1-4] tokens' <<<"$res" && ok "run" || bad "run: $(tail -n3 <<<"$res")"
for i in $(seq 1 100); do printf 'hello hello hell he ho '; done > "$WORK/text.txt"
res=$("$LOWBIT" perplexity -m "$out" -f "$WORK/text.txt" -c 32 -t 2 2>&1)
grep -qE 'Final estimate: PPL = [0-9]' <<<"$res" && ok "perplexity: $(grep -oE 'PPL = [0-9.]+' <<<"$res" | tail -n1)" \
  || bad "perplexity: $(tail -n3 <<<"$res")"

expect_fail "act-order checkpoint" "g_idx reorders.*--dequantize" "$LOWBIT" convert --hf "$WORK/hf/actorder" -o "$WORK/act.gguf"
[ ! -e "$WORK/act.gguf" ] && ok "refused conversion wrote nothing" || bad "a refused conversion left a file"
if "$LOWBIT" convert --hf "$WORK/hf/actorder" -o "$WORK/act.gguf" --dequantize > "$WORK/act.log" 2>&1; then
  "$LOWBIT" info -a "$WORK/act.gguf" 2>&1 | grep -E "blk\.0\.ffn_down\.weight.* F32 " >/dev/null \
    && ok "--dequantize writes F32 matrices" || bad "--dequantize: $("$LOWBIT" info -a "$WORK/act.gguf" 2>&1 | head -n 30)"
  res=$("$LOWBIT" run -m "$WORK/act.gguf" -p "hello" -n 2 --temp 0 -t 2 2>&1)
  grep -qE 'generation: [12] tokens' <<<"$res" && ok "run dequantized" || bad "run dequantized: $(tail -n3 <<<"$res")"
else
  bad "convert --dequantize: $(tail -n3 "$WORK/act.log")"
fi
# group_size -1 (one group per column, here with desc_act): GQ3_GC and its side tensors
if "$LOWBIT" convert --hf "$WORK/hf/column" -o "$WORK/col.gguf" > "$WORK/col.log" 2>&1; then
  "$LOWBIT" info -a "$WORK/col.gguf" > "$WORK/col.info" 2>&1
  grep -E "blk\.0\.ffn_down\.weight +GQ3_GC " "$WORK/col.info" >/dev/null \
    && grep -E "blk\.0\.ffn_down\.weight\.gq_sz +F16 +256 " "$WORK/col.info" >/dev/null \
    && grep -qE 'GQ3_GC +7 tensors.*3\.000 bpw +kernel: gq3_gc_q8_0_ref' "$WORK/col.info" \
    && ok "group_size -1: GQ3_GC matrices with their scale/zero tensors" || bad "group_size -1: $(head -n 40 "$WORK/col.info")"
  res=$("$LOWBIT" run -m "$WORK/col.gguf" -p "hello" -n 2 --temp 0 -t 2 2>&1)
  grep -qE 'generation: [12] tokens' <<<"$res" && ok "run GQ3_GC" || bad "run GQ3_GC: $(tail -n3 <<<"$res")"
else
  bad "convert group_size -1: $(tail -n3 "$WORK/col.log")"
fi
expect_fail "--dequantize with --llama2c" "dequantize" "$LOWBIT" convert --llama2c x.bin --tokenizer t.bin -o "$WORK/z.gguf" --dequantize
ls "$WORK"/*.tmp.* 2>/dev/null | grep -q . && bad "temporary files left behind" || ok "no temporary files left"
finish
