# The BCQ types (seed 003's extended binary-coding quantization, formats/bcq.h,
# docs/bcq.md) through the CLI on tiny-F32 (dim 256, ff 768: every matrix fits
# groups of 128): quantize to BCQ4_G128, BCQ3_G128, BCQ2_G64, `info` shows
# the types at their exact bits per weight with the reference kernel and the
# _LUT layout they are repacked to, `run` generates at the best level and at
# scalar, `perplexity` gives KL divergences against F32 in the expected
# order; --imatrix, --gptq and --bcq-iters work; --from-uniform converts a
# symmetric GQ4_G128 file (every group exactly) and the Q4_0 interop file;
# flags that do not apply and unknown BCQ types are refused.
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
F32=$SHARED/interop/tiny-F32.gguf
TEXT=$SHARED/data/TinyStories-valid.head31195.txt

for t in BCQ4_G128 BCQ3_G128 BCQ2_G64 GQ3_G128; do
  "$LOWBIT" quantize -t 2 "$F32" "$WORK/$t.gguf" $t > "$WORK/$t.quant.log" 2>&1 \
    && ok "quantize $t" || { bad "quantize $t"; cat "$WORK/$t.quant.log"; }
done
grep -q "16 to BCQ3_G128, 0 kept a wider type" "$WORK/BCQ3_G128.quant.log" && ok "all 16 matrices BCQ3_G128" \
  || bad "quantize BCQ3_G128 summary: $(cat "$WORK/BCQ3_G128.quant.log")"
grep -q "layer matrices: 3.5000 bits per weight" "$WORK/BCQ3_G128.quant.log" && ok "BCQ3_G128: 3.5 bits per weight" \
  || bad "BCQ3_G128 bits per weight: $(cat "$WORK/BCQ3_G128.quant.log")"
"$LOWBIT" info "$WORK/BCQ4_G128.gguf" > "$WORK/BCQ4_G128.info" 2>/dev/null
grep -qE 'BCQ4_G128 +16 tensors.*4\.625 bpw +kernel: bcq4_g128_q8_0_lut4_ref' "$WORK/BCQ4_G128.info" \
  && ok "info: BCQ4_G128 at 4.625 bpw, reference kernel" || bad "info BCQ4_G128: $(cat "$WORK/BCQ4_G128.info")"
# on x86 above the scalar level (LOWBIT_ISA=scalar keeps the plain layout)
if grep -qE 'kernels at level (avx2|avx512|amx)' "$WORK/BCQ4_G128.info"; then
  # the AVX2 kernel, the AVX-512 one at the avx512 and amx levels, or the AMX-BF16 entry at amx where the CPU has it
  grep -qE 'repacked at load to BCQ4_G128_LUT.*kernel: bcq4_g128_lut_(q8_0_lut4_avx2|q8_0_lut4_1x16_avx512|bf16x16_amxbf16)' "$WORK/BCQ4_G128.info" \
    && ok "info: repacked to BCQ4_G128_LUT for the x86 table-lookup GEMV (and the AMX-BF16 GEMM)" \
    || bad "info: no BCQ4_G128_LUT repack: $(cat "$WORK/BCQ4_G128.info")"
fi
"$LOWBIT" info "$WORK/BCQ2_G64.gguf" 2>/dev/null | grep -qE 'BCQ2_G64 +16 tensors.*2\.750 bpw' \
  && ok "info: BCQ2_G64 at 2.750 bpw" || bad "info does not show BCQ2_G64 at 2.750 bpw"
"$LOWBIT" quantize --help | grep -q 'BCQ3_G64 (4.00 bpw)' && ok "quantize --help lists BCQ3_G64" \
  || bad "quantize --help lacks the BCQ types"

for isa in "" scalar; do
  LOWBIT_ISA=$isa "$LOWBIT" run -m "$WORK/BCQ3_G128.gguf" -p "Once upon a time" -n 6 -t 2 --temp 0 -v \
    > "$WORK/run.out" 2>&1 && ok "run a BCQ3_G128 model (${isa:-best} level)" || { bad "run ${isa:-best}"; cat "$WORK/run.out"; }
done

"$LOWBIT" perplexity -m "$F32" -f "$TEXT" -c 128 --chunks 4 -t 2 --kl-divergence-base "$WORK/base.kld" \
  > /dev/null 2>&1 || bad "perplexity F32"
kld_of() { grep -oE 'Mean KLD = [0-9.]+' "$1" | awk '{print $4}'; }
for t in BCQ4_G128 BCQ3_G128 BCQ2_G64 GQ3_G128; do
  "$LOWBIT" perplexity -m "$WORK/$t.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/$t.ppl" 2>/dev/null || bad "perplexity $t"
  eval "K_$t=$(kld_of "$WORK/$t.ppl")"
  echo "$t: $(grep -E 'Final estimate|Mean KLD' "$WORK/$t.ppl" | tr '\n' ' ')"
done
awk -v a="$K_BCQ4_G128" -v b="$K_BCQ3_G128" -v c="$K_BCQ2_G64" 'BEGIN { exit !(a > 0 && a < b && b < c) }' \
  && ok "KLD BCQ4_G128 $K_BCQ4_G128 < BCQ3_G128 $K_BCQ3_G128 < BCQ2_G64 $K_BCQ2_G64" \
  || bad "KLD order: BCQ4_G128 $K_BCQ4_G128, BCQ3_G128 $K_BCQ3_G128, BCQ2_G64 $K_BCQ2_G64"
echo "BCQ3_G128 (3.5 bpw) $K_BCQ3_G128 vs GQ3_G128 (3.25 bpw) $K_GQ3_G128"

# importance, GPTQ, iterations
"$LOWBIT" imatrix -m "$F32" -f "$TEXT" -o "$WORK/imat.gguf" -c 128 --chunks 8 -t 2 > "$WORK/imat.log" 2>&1 \
  || { bad "imatrix"; cat "$WORK/imat.log"; }
"$LOWBIT" quantize -t 2 --imatrix "$WORK/imat.gguf" "$F32" "$WORK/imat-BCQ3.gguf" BCQ3_G128 > "$WORK/imat.q.log" 2>&1 \
  && grep -q "importance matrix" "$WORK/imat.q.log" && ! grep -q "does not use an importance" "$WORK/imat.q.log" \
  && ok "quantize --imatrix BCQ3_G128 uses the importance" || { bad "quantize --imatrix"; cat "$WORK/imat.q.log"; }
"$LOWBIT" perplexity -m "$WORK/imat-BCQ3.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
  > "$WORK/imat.ppl" 2>/dev/null && echo "BCQ3_G128 with --imatrix: $(kld_of "$WORK/imat.ppl")"
"$LOWBIT" calibrate -m "$F32" -f "$TEXT" -o "$WORK/calib.gguf" -c 128 --skip-chunks 4 --chunks 16 -t 2 \
  > "$WORK/calib.log" 2>&1 || { bad "calibrate"; cat "$WORK/calib.log"; }
"$LOWBIT" quantize -t 2 --gptq "$WORK/calib.gguf" "$F32" "$WORK/gptq-BCQ3.gguf" BCQ3_G128 > "$WORK/gptq.log" 2>&1 \
  && grep -q 'GPTQ: 14 matrices' "$WORK/gptq.log" && "$LOWBIT" run -m "$WORK/gptq-BCQ3.gguf" -p "Once" -n 2 -t 2 > /dev/null 2>&1 \
  && ok "quantize --gptq BCQ3_G128 rounds 14 matrices and runs" || { bad "quantize --gptq BCQ3_G128"; cat "$WORK/gptq.log"; }
"$LOWBIT" perplexity -m "$WORK/gptq-BCQ3.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
  > "$WORK/gptq.ppl" 2>/dev/null && echo "BCQ3_G128 with GPTQ: $(kld_of "$WORK/gptq.ppl")"
"$LOWBIT" quantize -t 2 --bcq-iters 0 "$F32" "$WORK/greedy.gguf" BCQ3_G128 > /dev/null 2>&1 \
  && "$LOWBIT" perplexity -m "$WORK/greedy.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/greedy.ppl" 2>/dev/null && K0=$(kld_of "$WORK/greedy.ppl") \
  && awk -v a="$K0" -v b="$K_BCQ3_G128" 'BEGIN { exit !(b < a) }' \
  && ok "BCQ3_G128: KLD with the alternating iterations $K_BCQ3_G128 < without $K0" \
  || bad "--bcq-iters 0: KLD '${K0:-}' vs '$K_BCQ3_G128'"

# uniform -> BCQ: symmetric GQ4_G128 groups convert exactly, and Q4_0 (z = -d/2)
"$LOWBIT" quantize -t 2 --sym "$F32" "$WORK/gq4sym.gguf" GQ4_G128 > /dev/null 2>&1 || bad "quantize GQ4_G128 --sym"
"$LOWBIT" quantize -t 2 --from-uniform "$WORK/gq4sym.gguf" "$WORK/uni.gguf" BCQ4_G128 > "$WORK/uni.log" 2>&1 \
  && grep -qE 'from uniform: 16 matrices converted, ([0-9]+) of \1 groups exact \(0 with z rounded' "$WORK/uni.log" \
  && ok "GQ4_G128 --sym -> BCQ4_G128 --from-uniform: every group exact" || { bad "--from-uniform GQ4_G128"; cat "$WORK/uni.log"; }
"$LOWBIT" perplexity -m "$WORK/gq4sym.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence > "$WORK/gq.ppl" 2>/dev/null
"$LOWBIT" perplexity -m "$WORK/uni.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence > "$WORK/uni.ppl" 2>/dev/null
echo "GQ4_G128 --sym $(kld_of "$WORK/gq.ppl"), converted to BCQ4_G128 $(kld_of "$WORK/uni.ppl") (the same weights; other kernels)"
if [ -f "$SHARED/interop/tiny-Q4_0.gguf" ]; then
  "$LOWBIT" quantize -t 2 --from-uniform "$SHARED/interop/tiny-Q4_0.gguf" "$WORK/q40.gguf" BCQ4_G32 > "$WORK/q40.log" 2>&1 \
    && grep -qE 'from uniform: 16 matrices converted, ([0-9]+) of \1 groups exact' "$WORK/q40.log" \
    && "$LOWBIT" run -m "$WORK/q40.gguf" -p "Once" -n 2 -t 2 > /dev/null 2>&1 \
    && ok "tiny-Q4_0 -> BCQ4_G32 --from-uniform: every group exact, runs" || { bad "--from-uniform Q4_0"; cat "$WORK/q40.log"; }
fi
"$LOWBIT" quantize -t 2 --from-uniform "$F32" "$WORK/f32uni.gguf" BCQ3_G128 > "$WORK/f32uni.log" 2>&1 \
  && grep -q 'from uniform: 0 matrices converted, 0 of 0 groups exact (0 with z rounded to fp16), 16 quantized from their values' \
    "$WORK/f32uni.log" && ok "--from-uniform on F32: quantized from the values, said so" || { bad "--from-uniform F32"; cat "$WORK/f32uni.log"; }

# whole-row groups (BCQ{q}_GC): codes + NAME.bcq_az, run expanded to BCQ{q}_G128; GQ4_GC --sym converts exactly
"$LOWBIT" quantize -t 2 "$F32" "$WORK/BCQ3_GC.gguf" BCQ3_GC > "$WORK/gc.q.log" 2>&1 \
  && grep -q "16 to BCQ3_GC, 0 kept a wider type" "$WORK/gc.q.log" \
  && "$LOWBIT" info "$WORK/BCQ3_GC.gguf" 2>/dev/null | grep -q 'per-row grids (.gq_sz, .bcq_az side tensors)' \
  && "$LOWBIT" run -m "$WORK/BCQ3_GC.gguf" -p "Once upon a time" -n 4 -t 2 --temp 0 > /dev/null 2>&1 \
  && ok "quantize BCQ3_GC: 16 matrices, info counts the side tensors, runs" || { bad "BCQ3_GC"; cat "$WORK/gc.q.log"; }
"$LOWBIT" perplexity -m "$WORK/BCQ3_GC.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
  > "$WORK/BCQ3_GC.ppl" 2>/dev/null || bad "perplexity BCQ3_GC"
echo "KLD BCQ3_GC $(kld_of "$WORK/BCQ3_GC.ppl") (BCQ3_G128 $K_BCQ3_G128)"
"$LOWBIT" quantize -t 2 --sym "$F32" "$WORK/gq4gc.gguf" GQ4_GC > /dev/null 2>&1 || bad "quantize GQ4_GC --sym"
"$LOWBIT" quantize -t 2 --from-uniform "$WORK/gq4gc.gguf" "$WORK/unigc.gguf" BCQ4_GC > "$WORK/unigc.log" 2>&1 \
  && grep -qE 'from uniform: 16 matrices converted, ([0-9]+) of \1 groups exact \(0 with z rounded' "$WORK/unigc.log" \
  && "$LOWBIT" run -m "$WORK/unigc.gguf" -p "Once" -n 2 -t 2 > /dev/null 2>&1 \
  && ok "GQ4_GC --sym -> BCQ4_GC --from-uniform: every row exact, runs" || { bad "--from-uniform GQ4_GC"; cat "$WORK/unigc.log"; }
expect_fail "--sym for BCQ3_GC" "applies to the GQ types only" "$LOWBIT" quantize --sym "$F32" "$WORK/x.gguf" BCQ3_GC

expect_fail "--from-uniform to a non-BCQ type" "apply to the BCQ types only" "$LOWBIT" quantize --from-uniform "$F32" "$WORK/x.gguf" Q4_0
expect_fail "quantize to BCQ5_G128" "unknown or unsupported type" "$LOWBIT" quantize "$F32" "$WORK/x.gguf" BCQ5_G128
expect_fail "quantize to BCQ3_G16" "unknown or unsupported type" "$LOWBIT" quantize "$F32" "$WORK/x.gguf" BCQ3_G16
expect_fail "quantize to the activation type" "unknown or unsupported type" "$LOWBIT" quantize "$F32" "$WORK/x.gguf" Q8_0_LUT4
[ ! -e "$WORK/x.gguf" ] && ok "no output file left behind" || bad "a failure left $WORK/x.gguf"
finish
