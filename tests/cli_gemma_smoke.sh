# A real model end to end, when it is present: Gemma 3 270M (Q4_K_M, from
# scripts/get-model.sh) dequantized to F32 (the baseline) and requantized to
# Q4_0; two chunks of WikiText-2 perplexity (-c 512) on each must be finite,
# the F32 one close to its recorded value, and Q4_0 no better than F32 (1%
# slack for two chunks' noise). About a minute on 2 cores.
. "$(dirname "$0")/lib_cli.sh"
MODEL=${LOWBIT_MODEL_DIR:-$HOME/.cache/lowbit}/gemma-3-270m-q4_k_m.gguf
if [ ! -f "$MODEL" ]; then
  echo "SKIP: Gemma 3 model not found; run scripts/get-model.sh"
  exit 77
fi
need_shared data/wiki.test.raw
TEXT=$SHARED/data/wiki.test.raw

"$LOWBIT" quantize -t 2 "$MODEL" "$WORK/f32.gguf" F32 > "$WORK/f32.quant.log" 2>&1 \
  && ok "dequantized to F32" || { bad "quantize F32: $(tail -n1 "$WORK/f32.quant.log")"; finish; exit; }
"$LOWBIT" quantize -t 2 "$WORK/f32.gguf" "$WORK/q4_0.gguf" Q4_0 > "$WORK/q4_0.quant.log" 2>&1 \
  && ok "requantized to Q4_0" || bad "quantize Q4_0: $(tail -n1 "$WORK/q4_0.quant.log")"

ppl_of() { grep -oE 'Final estimate: PPL = [0-9.]+' "$1" | awk '{print $5}'; }
for t in f32 q4_0; do
  "$LOWBIT" perplexity -m "$WORK/$t.gguf" -f "$TEXT" -c 512 --chunks 2 -t 2 > "$WORK/$t.ppl" 2> "$WORK/$t.err" \
    || bad "perplexity $t: $(tail -n1 "$WORK/$t.err")"
done
F32=$(ppl_of "$WORK/f32.ppl")
Q40=$(ppl_of "$WORK/q4_0.ppl")
echo "PPL (2 chunks, c=512): F32 ${F32:-none}, Q4_0 ${Q40:-none}"
finite() { awk -v p="$1" 'BEGIN { exit !(p + 0 > 1 && p + 0 < 1e6) }'; }
finite "$F32" && ok "F32 PPL $F32 is finite" || bad "F32 PPL '$F32' is not finite"
finite "$Q40" && ok "Q4_0 PPL $Q40 is finite" || bad "Q4_0 PPL '$Q40' is not finite"
# Recorded when Gemma 3 was verified against an independent float64 forward
# pass (tests/gemma3_reference.py, below); 1% covers float summation order across ISAs.
REF_F32=15.5647
awk -v p="$F32" -v r=$REF_F32 'BEGIN { exit !(p > r * 0.99 && p < r * 1.01) }' \
  && ok "F32 PPL $F32 matches the recorded $REF_F32" || bad "F32 PPL $F32 differs from the recorded $REF_F32"
awk -v q="$Q40" -v f="$F32" 'BEGIN { exit !(q >= f * 0.99) }' \
  && ok "Q4_0 PPL $Q40 >= 0.99 x F32 $F32" || bad "Q4_0 PPL $Q40 is below F32 $F32"
# The forward pass against an independent float64 one (tests/gemma3_reference.py),
# on one chunk of 1024 tokens, so the local layers' 512-token sliding window
# matters; only where numpy is installed (about 30 s).
if python3 -c 'import numpy' 2>/dev/null; then
  head -c 8000 "$TEXT" > "$WORK/ref.txt"
  "$LOWBIT" run -m "$WORK/f32.gguf" -f "$WORK/ref.txt" -n 1 --temp 0 -c 2048 --ids -t 2 2>/dev/null |
    sed -n 's/^ids://p' > "$WORK/ref.ids"
  "$LOWBIT" perplexity -m "$WORK/f32.gguf" -f "$WORK/ref.txt" -c 1024 --chunks 1 -t 2 > "$WORK/ref.ppl" 2>/dev/null
  P=$(ppl_of "$WORK/ref.ppl")
  R=$(python3 "$(dirname "$0")/gemma3_reference.py" "$WORK/f32.gguf" "$WORK/ref.ids" 1024 2>&1 |
      sed -n 's/^reference PPL = \([0-9.]*\).*/\1/p')
  awk -v p="$P" -v r="$R" 'BEGIN { exit !(r + 0 > 1 && p > r * 0.999 && p < r * 1.001) }' \
    && ok "1024-token chunk: PPL $P matches the float64 reference $R" \
    || bad "1024-token chunk: PPL '$P' differs from the float64 reference '$R'"
else
  echo "note: numpy not installed; the float64 reference check is skipped"
fi
rm -f "$WORK"/*.gguf
finish
