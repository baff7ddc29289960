# The GQ types (GPTQ's group-wise uniform format, formats/gq.h) through the
# CLI: quantize tiny-F32 (dim 256: every matrix fits the 128-weight blocks)
# to GQ4_G128, GQ2_G32 and GQ4_G32, `info` shows the types, their bits per
# weight and the reference kernel (repacked at load to GQ*_QG for the
# generated QIGen kernels where the level has them), `run` generates, `perplexity` gives KL
# divergences against F32 in the expected order, a GQ file requantizes, and
# stories260K (dim 64) falls back to Q8_0 everywhere and still runs. The
# whole-column GQ4_GC (side tensors NAME.gq_sz) the same way, at the best
# level (expanded and repacked at load) and the scalar one (its reference).
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
F32=$SHARED/interop/tiny-F32.gguf
TEXT=$SHARED/data/TinyStories-valid.head31195.txt

for t in GQ4_G128 GQ2_G32 GQ4_G32; do
  "$LOWBIT" quantize -t 2 "$F32" "$WORK/$t.gguf" $t > "$WORK/$t.quant.log" 2>&1 \
    && ok "quantize $t" || { bad "quantize $t"; cat "$WORK/$t.quant.log"; }
done
grep -q "16 to GQ4_G128, 0 kept a wider type" "$WORK/GQ4_G128.quant.log" && ok "all 16 matrices GQ4_G128" \
  || bad "quantize GQ4_G128 summary: $(cat "$WORK/GQ4_G128.quant.log")"
"$LOWBIT" info "$WORK/GQ4_G128.gguf" 2>/dev/null | grep -qE 'GQ4_G128 +16 tensors.*4\.250 bpw +kernel: gq4_g128_q8_0_ref' \
  && ok "info: GQ4_G128 at 4.250 bpw, reference kernel" || bad "info does not show GQ4_G128 at 4.250 bpw"
"$LOWBIT" info "$WORK/GQ2_G32.gguf" 2>/dev/null | grep -qE 'GQ2_G32 +16 tensors.*2\.750 bpw +kernel: gq2_g32_q8_0_ref' \
  && ok "info: GQ2_G32 at 2.750 bpw, reference kernel" || bad "info does not show GQ2_G32 at 2.750 bpw"
"$LOWBIT" quantize --help | grep -q 'GQ3_G64 (3.50 bpw)' && ok "quantize --help lists GQ3_G64" \
  || bad "quantize --help lacks the GQ types"

for t in GQ4_G128 GQ2_G32; do
  "$LOWBIT" run -m "$WORK/$t.gguf" -p "Once upon a time" -n 4 -t 2 --temp 0 > "$WORK/$t.run" 2>&1 \
    && ok "run a $t model" || { bad "run $t"; cat "$WORK/$t.run"; }
done

"$LOWBIT" perplexity -m "$F32" -f "$TEXT" -c 128 --chunks 4 -t 2 --kl-divergence-base "$WORK/base.kld" \
  > /dev/null 2>&1 || bad "perplexity F32"
kld_of() { grep -oE 'Mean KLD = [0-9.]+' "$1" | awk '{print $4}'; }
for t in GQ4_G128 GQ2_G32 GQ4_G32; do
  "$LOWBIT" perplexity -m "$WORK/$t.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/$t.ppl" 2>/dev/null || bad "perplexity $t"
  eval "K_$t=$(kld_of "$WORK/$t.ppl")"
  echo "$t: $(grep -E 'Final estimate|Mean KLD' "$WORK/$t.ppl" | tr '\n' ' ')"
done
awk -v a="$K_GQ4_G128" -v b="$K_GQ2_G32" 'BEGIN { exit !(a > 0 && a < b) }' \
  && ok "KLD GQ4_G128 $K_GQ4_G128 < GQ2_G32 $K_GQ2_G32" || bad "KLD GQ4_G128 $K_GQ4_G128 not below GQ2_G32 $K_GQ2_G32"
awk -v a="$K_GQ4_G32" -v b="$K_GQ4_G128" 'BEGIN { exit !(a > 0 && a < b) }' \
  && ok "KLD GQ4_G32 $K_GQ4_G32 < GQ4_G128 $K_GQ4_G128" || bad "KLD GQ4_G32 $K_GQ4_G32 not below GQ4_G128"

# a GQ file is an input like any other
"$LOWBIT" quantize -t 2 "$WORK/GQ4_G128.gguf" "$WORK/requant.gguf" Q8_0 > /dev/null 2>&1 \
  && "$LOWBIT" run -m "$WORK/requant.gguf" -p "Once" -n 2 -t 2 > /dev/null 2>&1 \
  && ok "GQ4_G128 -> Q8_0 requantizes and runs" || bad "requantizing a GQ4_G128 file"

# rows of 64: nothing fits 128, every matrix keeps Q8_0
if [ -f "$SHARED/models/stories260K-f32.gguf" ]; then
  "$LOWBIT" quantize -t 2 "$SHARED/models/stories260K-f32.gguf" "$WORK/s260.gguf" GQ3_G64 > "$WORK/s260.log" 2>&1 \
    && grep -qE "\(0 to GQ3_G64, [0-9]+ kept a wider type" "$WORK/s260.log" \
    && "$LOWBIT" info "$WORK/s260.gguf" 2>/dev/null | grep -qE '^  Q8_0 ' \
    && "$LOWBIT" run -m "$WORK/s260.gguf" -p "Once upon a time" -n 4 -t 2 > /dev/null 2>&1 \
    && ok "stories260K: GQ3_G64 falls back to Q8_0 and runs" || { bad "stories260K fallback"; cat "$WORK/s260.log"; }
fi

"$LOWBIT" bench --synthetic stories15m --type GQ2_G32 -p 8 -n 2 -r 1 -t 2 > "$WORK/bench.out" 2> "$WORK/bench.err" \
  && grep -q 'llama 15M GQ2_G32' "$WORK/bench.out" \
  && grep -qE 'GQ2_G32 weights:.*gq2_g32_q8_0_ref|GQ2_G32_QG weights:.*gq2_g32_qg_' "$WORK/bench.err" \
  && ok "bench --synthetic --type GQ2_G32" || { bad "bench --synthetic GQ2_G32"; cat "$WORK/bench.out" "$WORK/bench.err"; }

# whole-column groups: GQ4_GC's codes and a side tensor NAME.gq_sz (F16, a scale and a zero per row)
"$LOWBIT" quantize -t 2 "$F32" "$WORK/GQ4_GC.gguf" GQ4_GC > "$WORK/GQ4_GC.quant.log" 2>&1 \
  && grep -q "16 to GQ4_GC, 0 kept a wider type" "$WORK/GQ4_GC.quant.log" && ok "quantize GQ4_GC" \
  || { bad "quantize GQ4_GC"; cat "$WORK/GQ4_GC.quant.log"; }
"$LOWBIT" info "$WORK/GQ4_GC.gguf" > "$WORK/GQ4_GC.info" 2>/dev/null
grep -qE 'GQ4_GC +16 tensors.*4\.000 bpw +kernel: gq4_gc_q8_0_ref' "$WORK/GQ4_GC.info" \
  && grep -qE 'blk\.0\.attn_q\.weight\.gq_sz +F16 +512 ' "$WORK/GQ4_GC.info" \
  && ok "info: GQ4_GC at 4.000 bpw, reference kernel, its side tensors" || bad "info GQ4_GC: $(cat "$WORK/GQ4_GC.info")"
"$LOWBIT" quantize --help | grep -q 'GQ2_GC (2 bpw + 32 bits per row)' && ok "quantize --help lists GQ2_GC" \
  || bad "quantize --help lacks the GC types"
for isa in "" scalar; do
  LOWBIT_ISA=$isa "$LOWBIT" run -m "$WORK/GQ4_GC.gguf" -p "Once upon a time" -n 4 -t 2 --temp 0 > "$WORK/gc.run" 2>&1 \
    && ok "run a GQ4_GC model (${isa:-best} level)" || { bad "run GQ4_GC ${isa:-best}"; cat "$WORK/gc.run"; }
done
"$LOWBIT" perplexity -m "$WORK/GQ4_GC.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
  > "$WORK/GQ4_GC.ppl" 2>/dev/null || bad "perplexity GQ4_GC"
K_GC=$(kld_of "$WORK/GQ4_GC.ppl")
echo "GQ4_GC: $(grep -E 'Final estimate|Mean KLD' "$WORK/GQ4_GC.ppl" | tr '\n' ' ')"
awk -v a="$K_GC" -v b="$K_GQ2_G32" 'BEGIN { exit !(a > 0 && a < b) }' \
  && ok "KLD GQ4_GC $K_GC < GQ2_G32 $K_GQ2_G32" || bad "KLD GQ4_GC '$K_GC' not below GQ2_G32 $K_GQ2_G32"
"$LOWBIT" quantize -t 2 --sym "$F32" "$WORK/GQ3_GC.gguf" GQ3_GC > /dev/null 2>&1 \
  && "$LOWBIT" run -m "$WORK/GQ3_GC.gguf" -p "Once" -n 2 -t 2 > /dev/null 2>&1 \
  && ok "GQ3_GC --sym quantizes and runs" || bad "GQ3_GC --sym"
"$LOWBIT" quantize -t 2 "$WORK/GQ4_GC.gguf" "$WORK/gc-q8.gguf" Q8_0 > "$WORK/gc-q8.log" 2>&1 \
  && grep -q "tensors: 21 (16 to Q8_0" "$WORK/gc-q8.log" \
  && "$LOWBIT" run -m "$WORK/gc-q8.gguf" -p "Once" -n 2 -t 2 > /dev/null 2>&1 \
  && ok "GQ4_GC -> Q8_0 requantizes and runs" || { bad "requantizing a GQ4_GC file"; cat "$WORK/gc-q8.log"; }
# the summary counts the embedding and head apart when they take their own types
"$LOWBIT" quantize -t 2 --token-embedding-type Q4_K --output-tensor-type Q6_K "$F32" "$WORK/own.gguf" Q8_0 \
  > "$WORK/own.log" 2>&1 && grep -q "tensors: 21 (14 to Q8_0, 2 to the embedding's and head's types" "$WORK/own.log" \
  && ok "quantize's summary: 14 to Q8_0, 2 to the embedding's and head's types" \
  || { bad "quantize's summary with --token-embedding-type / --output-tensor-type"; cat "$WORK/own.log"; }
rm -f "$WORK/own.gguf"
"$LOWBIT" bench --synthetic stories15m --type GQ4_GC -p 8 -n 2 -r 1 -t 2 > "$WORK/bench-gc.out" 2> "$WORK/bench-gc.err" \
  && grep -q 'llama 15M GQ4_GC' "$WORK/bench-gc.out" \
  && grep -qE 'GQ4_GC weights:.*gq4_gc_q8_0_ref|GQ4_G128_QG weights:.*gq4_g128_qg_' "$WORK/bench-gc.err" \
  && ok "bench --synthetic --type GQ4_GC" || { bad "bench --synthetic GQ4_GC"; cat "$WORK/bench-gc.out" "$WORK/bench-gc.err"; }

expect_fail "quantize to GQ4_G8" "unknown or unsupported type" "$LOWBIT" quantize "$F32" "$WORK/x.gguf" GQ4_G8
[ ! -e "$WORK/x.gguf" ] && ok "no output file left behind" || bad "a failure left $WORK/x.gguf"
finish
