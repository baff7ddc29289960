# The codebook formats end to end through the CLI, on tiny-F32 (dim 256,
# heavy-tailed random weights: every matrix fits the 256-weight blocks):
# `lowbit codebooks` (deterministic for a seed, both types in one file),
# `lowbit imatrix`, `lowbit quantize --codebooks --imatrix`, `lowbit info`'s
# bits per weight, and KL divergence against F32 with `lowbit perplexity`:
# CB2 must beat our Q2_K and CB3 our Q3_K, both given the same imatrix.
# Then the error paths.
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
F32=$SHARED/interop/tiny-F32.gguf
TEXT=$SHARED/data/TinyStories-valid.head31195.txt

"$LOWBIT" codebooks -m "$F32" -o "$WORK/books.gguf" --count 8 --bits 2 --seed 3 -t 2 > "$WORK/cb2.log" 2>&1 \
  && ok "codebooks --bits 2" || { bad "codebooks --bits 2"; cat "$WORK/cb2.log"; }
"$LOWBIT" codebooks -m "$F32" -o "$WORK/books.gguf" --count 8 --bits 3 --seed 3 -t 2 > "$WORK/cb3.log" 2>&1 \
  && ok "codebooks --bits 3 (added to the same file)" || bad "codebooks --bits 3"
grep -A8 'codebooks' "$WORK/cb2.log" | head -n 10
"$LOWBIT" codebooks -m "$F32" -o "$WORK/books2.gguf" --count 8 --bits 2 --seed 3 -t 1 > /dev/null 2>&1
"$LOWBIT" codebooks -m "$F32" -o "$WORK/books2.gguf" --count 8 --bits 3 --seed 3 -t 1 > /dev/null 2>&1
cmp -s "$WORK/books.gguf" "$WORK/books2.gguf" && ok "same seed, other thread count: identical codebook file" \
  || bad "codebook files differ for the same seed"
"$LOWBIT" info "$WORK/books.gguf" > "$WORK/books.info" 2>&1
grep -q 'lowbit.codebooks.cb2 .*int8 x 32' "$WORK/books.info" && grep -q 'lowbit.codebooks.cb3 .*int8 x 64' "$WORK/books.info" \
  && ok "both codebook sets in the file" || bad "codebook keys missing: $(cat "$WORK/books.info")"

"$LOWBIT" imatrix -m "$F32" -f "$TEXT" -o "$WORK/imat.gguf" -c 128 --chunks 4 -t 2 > "$WORK/imat.log" 2>&1 \
  && ok "imatrix" || { bad "imatrix"; cat "$WORK/imat.log"; }
# --skip-chunks as calibrate has it: chunks 4..5 hold other text, so other sums
"$LOWBIT" imatrix -m "$F32" -f "$TEXT" -o "$WORK/imat-skip.gguf" -c 128 --skip-chunks 4 --chunks 2 -t 2 \
  > "$WORK/imat-skip.log" 2>&1 && grep -q 'chunks 4\.\.5' "$WORK/imat-skip.log" \
  && ! cmp -s "$WORK/imat.gguf" "$WORK/imat-skip.gguf" && ok "imatrix --skip-chunks" \
  || { bad "imatrix --skip-chunks"; cat "$WORK/imat-skip.log"; }

for t in CB2 CB3 Q2_K Q3_K; do
  case $t in CB*) extra="--codebooks $WORK/books.gguf";; *) extra="";; esac
  "$LOWBIT" quantize -t 2 --imatrix "$WORK/imat.gguf" $extra "$F32" "$WORK/$t.gguf" $t > "$WORK/$t.quant.log" 2>&1 \
    && ok "quantize $t" || { bad "quantize $t"; cat "$WORK/$t.quant.log"; }
done
"$LOWBIT" info "$WORK/CB2.gguf" 2>/dev/null | grep -qE 'CB2 +16 tensors.*2\.438 bpw' && ok "info: CB2 at 2.438 bpw" \
  || bad "info does not show CB2 at 2.438 bpw"
"$LOWBIT" info "$WORK/CB3.gguf" 2>/dev/null | grep -qE 'CB3 +16 tensors.*3\.438 bpw' && ok "info: CB3 at 3.438 bpw" \
  || bad "info does not show CB3 at 3.438 bpw"
# on the fly: no --codebooks says so
"$LOWBIT" quantize -t 2 "$F32" "$WORK/CB2fly.gguf" CB2 2>&1 | grep -q 'discovering 8 codebooks' \
  && ok "quantize without --codebooks discovers them and says so" || bad "no discovery message"
"$LOWBIT" run -m "$WORK/CB2.gguf" -p "Once upon a time" -n 8 -t 2 > /dev/null 2>&1 && ok "run a CB2 model" || bad "run CB2"

"$LOWBIT" perplexity -m "$F32" -f "$TEXT" -c 128 --chunks 8 -t 2 --kl-divergence-base "$WORK/base.kld" \
  > /dev/null 2>&1 || bad "perplexity F32"
kld_of() { grep -oE 'Mean KLD = [0-9.]+' "$1" | awk '{print $4}'; }
for t in CB2 CB3 Q2_K Q3_K; do
  "$LOWBIT" perplexity -m "$WORK/$t.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/$t.ppl" 2>/dev/null || bad "perplexity $t"
  eval "K_$t=$(kld_of "$WORK/$t.ppl")"
  echo "$t: $(grep -E 'Final estimate|Mean KLD' "$WORK/$t.ppl" | tr '\n' ' ')"
done
awk -v a="$K_CB2" -v b="$K_Q2_K" 'BEGIN { exit !(a > 0 && a < b) }' \
  && ok "KLD CB2 $K_CB2 < Q2_K $K_Q2_K" || bad "KLD CB2 $K_CB2 not below Q2_K $K_Q2_K"
awk -v a="$K_CB3" -v b="$K_Q3_K" 'BEGIN { exit !(a > 0 && a < b) }' \
  && ok "KLD CB3 $K_CB3 < Q3_K $K_Q3_K" || bad "KLD CB3 $K_CB3 not below Q3_K $K_Q3_K"

# errors
expect_fail "codebooks --count 5" "4, 8 or 16" "$LOWBIT" codebooks -m "$F32" -o "$WORK/x.gguf" --count 5
expect_fail "codebooks --bits 4" "bits" "$LOWBIT" codebooks -m "$F32" -o "$WORK/x.gguf" --bits 4
expect_fail "codebooks without -o" "required" "$LOWBIT" codebooks -m "$F32"
expect_fail "codebooks over a model file" "not a lowbit codebook file" "$LOWBIT" codebooks -m "$F32" -o "$WORK/CB2.gguf"
"$LOWBIT" codebooks -m "$F32" -o "$WORK/cb2only.gguf" --count 4 --bits 2 > /dev/null 2>&1
expect_fail "quantize CB3 with CB2-only books" "no CB3 codebooks" \
  "$LOWBIT" quantize --codebooks "$WORK/cb2only.gguf" "$F32" "$WORK/x.gguf" CB3
expect_fail "quantize with a missing codebook file" "cannot open|no such" \
  "$LOWBIT" quantize --codebooks "$WORK/none.gguf" "$F32" "$WORK/x.gguf" CB2
expect_fail "quantize with a model as imatrix" "imatrix|in_sum2" \
  "$LOWBIT" quantize --imatrix "$F32" "$F32" "$WORK/x.gguf" Q2_K
expect_fail "quantize --count 3" "4, 8|4\.\.16" "$LOWBIT" quantize --count 3 "$F32" "$WORK/x.gguf" CB2
expect_fail "imatrix without -f" "required" "$LOWBIT" imatrix -m "$F32" -o "$WORK/x.gguf"
expect_fail "imatrix past the text" "no chunk" "$LOWBIT" imatrix -m "$F32" -f "$TEXT" -o "$WORK/x.gguf" --skip-chunks 100000
[ ! -e "$WORK/x.gguf" ] && ok "no imatrix left after a failure" || bad "imatrix output left after a failure"
if [ -f "$SHARED/models/stories260K-f32.gguf" ]; then
  # dim 64: no matrix fits a 256-weight block, so there is nothing to learn from
  expect_fail "codebooks from a model without 256-aligned rows" "multiple of 256" \
    "$LOWBIT" codebooks -m "$SHARED/models/stories260K-f32.gguf" -o "$WORK/x.gguf"
fi
[ ! -e "$WORK/x.gguf" ] && ok "no output file left behind by the failures" || bad "a failure left $WORK/x.gguf"
finish
