# The ABQ types (seed 004's bit-plane weights and per-token p-bit
# activations, formats/abq.h, docs/abq.md) through the CLI on tiny-F32 (dim
# 256, ff 768: every matrix fits groups of 128): quantize to ABQ_W4 with
# --act-bits 6, `info` shows the type at 4.25 bpw and the activation bits,
# `run` generates at the best level and at scalar with the same tokens,
# `perplexity` gives KL divergences against F32 in the expected order (more
# weight bits, more activation bits: lower), bit balance (ABQ_W2S) below
# plain ABQ_W2, --act-bits at run time overrides the file, --act-bits-down
# keeps ffn_down's input at its own bits (info shows it); flags that do not
# apply, bad bit counts and the activation type are refused; --smooth-alpha
# folds SmoothQuant's balance vectors into the norms exactly (F32 output:
# KLD ~ 0) and its effect on W8A4 / W4A4 is printed; --act-bits 16 keeps
# the activations in fp32 (WqA16), the dequantized F32 model's perplexity.
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
F32=$SHARED/interop/tiny-F32.gguf
TEXT=$SHARED/data/TinyStories-valid.head31195.txt

for t in ABQ_W8 ABQ_W4 ABQ_W2 ABQ_W2S; do
  "$LOWBIT" quantize -t 2 "$F32" "$WORK/$t.gguf" $t > "$WORK/$t.quant.log" 2>&1 \
    && ok "quantize $t" || { bad "quantize $t"; cat "$WORK/$t.quant.log"; }
done
"$LOWBIT" quantize -t 2 --act-bits 6 "$F32" "$WORK/w4a6.gguf" ABQ_W4 > "$WORK/w4a6.log" 2>&1 \
  && grep -q "16 to ABQ_W4, 0 kept a wider type" "$WORK/w4a6.log" && grep -q "activations at 6 bits" "$WORK/w4a6.log" \
  && ok "quantize ABQ_W4 --act-bits 6: all 16 matrices" || { bad "quantize --act-bits 6"; cat "$WORK/w4a6.log"; }
grep -q "layer matrices: 4.2500 bits per weight" "$WORK/w4a6.log" && ok "ABQ_W4: 4.25 bits per weight" \
  || bad "ABQ_W4 bits per weight: $(cat "$WORK/w4a6.log")"
grep -q "layer matrices: 3.1250 bits per weight" "$WORK/ABQ_W2S.quant.log" && ok "ABQ_W2S: 3.125 bits per weight" \
  || bad "ABQ_W2S bits per weight: $(cat "$WORK/ABQ_W2S.quant.log")"
"$LOWBIT" info "$WORK/w4a6.gguf" > "$WORK/w4a6.info" 2>/dev/null
grep -qE 'ABQ_W4 +16 tensors.*4\.250 bpw +kernel: abq_w4_abq_act_' "$WORK/w4a6.info" \
  && grep -q 'activations quantized per token to 6 bits' "$WORK/w4a6.info" \
  && ok "info: ABQ_W4 at 4.250 bpw, activations at 6 bits" || bad "info ABQ_W4: $(cat "$WORK/w4a6.info")"
"$LOWBIT" quantize --help | grep -q 'ABQ_W2S (3.12 bpw)' && ok "quantize --help lists ABQ_W2S" \
  || bad "quantize --help lacks the ABQ types"

# the kernels are bit-identical to the reference, so every level generates the same text
for isa in "" scalar; do
  LOWBIT_ISA=$isa "$LOWBIT" run -m "$WORK/w4a6.gguf" -p "Once upon a time" -n 12 -t 2 --temp 0 \
    > "$WORK/run${isa:-best}.out" 2>/dev/null && ok "run an ABQ_W4 model (${isa:-best} level)" || bad "run ${isa:-best}"
done
cmp -s "$WORK/runbest.out" "$WORK/runscalar.out" && ok "the best level and scalar generate the same text" \
  || bad "best level and scalar differ: $(cat "$WORK/runbest.out") / $(cat "$WORK/runscalar.out")"

"$LOWBIT" perplexity -m "$F32" -f "$TEXT" -c 128 --chunks 4 -t 2 --kl-divergence-base "$WORK/base.kld" \
  > /dev/null 2>&1 || bad "perplexity F32"
kld_of() { grep -oE 'Mean KLD = [0-9.]+' "$1" | awk '{print $4}'; }
kld() { # model, act bits
  "$LOWBIT" perplexity -m "$1" -t 2 --act-bits "$2" --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/k.ppl" 2>/dev/null || bad "perplexity $1 --act-bits $2"
  kld_of "$WORK/k.ppl"
}
W8A8=$(kld "$WORK/ABQ_W8.gguf" 8); W8A4=$(kld "$WORK/ABQ_W8.gguf" 4)
W4A8=$(kld "$WORK/ABQ_W4.gguf" 8); W4A4=$(kld "$WORK/ABQ_W4.gguf" 4)
W2A8=$(kld "$WORK/ABQ_W2.gguf" 8); W2SA8=$(kld "$WORK/ABQ_W2S.gguf" 8)
echo "KLD vs F32: W8A8 $W8A8 W8A4 $W8A4 W4A8 $W4A8 W4A4 $W4A4 W2A8 $W2A8 W2*A8 $W2SA8"
awk -v a="$W8A8" -v b="$W4A8" -v c="$W2SA8" -v d="$W2A8" 'BEGIN { exit !(a > 0 && a < b && b < c && c < d) }' \
  && ok "KLD W8A8 $W8A8 < W4A8 $W4A8 < W2*A8 $W2SA8 < W2A8 $W2A8 (bit balance helps)" \
  || bad "KLD order over weight bits: W8A8 $W8A8, W4A8 $W4A8, W2*A8 $W2SA8, W2A8 $W2A8"
awk -v a="$W8A8" -v b="$W8A4" -v c="$W4A8" -v d="$W4A4" 'BEGIN { exit !(a < b && c < d) }' \
  && ok "fewer activation bits cost: W8A8 < W8A4, W4A8 < W4A4" || bad "KLD over activation bits: $W8A8 $W8A4 $W4A8 $W4A4"
# the file's default (6) is what a run takes without --act-bits
"$LOWBIT" perplexity -m "$WORK/w4a6.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence > "$WORK/d.ppl" 2>/dev/null
[ "$(kld_of "$WORK/d.ppl")" = "$(kld "$WORK/w4a6.gguf" 6)" ] && ok "no --act-bits: the file's 6 bits" \
  || bad "the file's default act bits are not what a run takes"

# ffn_down's input at its own bits (lowbit.abq.act_bits_ffn_down): info names it, a run takes it
# (lower KLD than W4A4 everywhere), and --act-bits at run time covers ffn_down too
"$LOWBIT" quantize -t 2 --act-bits 4 --act-bits-down 8 "$F32" "$WORK/w4a4d8.gguf" ABQ_W4 > "$WORK/w4a4d8.log" 2>&1 \
  && grep -q "ffn_down's at 8" "$WORK/w4a4d8.log" && ok "quantize --act-bits 4 --act-bits-down 8" \
  || { bad "quantize --act-bits-down"; cat "$WORK/w4a4d8.log"; }
# a W4A4 file with ffn_down at its own bits: info names them (pattern), its KLD is below W4A4's
down_check() { # file, bits, info pattern
  "$LOWBIT" info "$1" 2>/dev/null | grep -q "$3" && ok "info: ffn_down's inputs at $2 bits" \
    || bad "info does not show ffn_down at $2 bits"
  "$LOWBIT" perplexity -m "$1" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence > "$WORK/d$2.ppl" 2>/dev/null
  local k; k=$(kld_of "$WORK/d$2.ppl")
  awk -v a="$k" -v b="$W4A4" 'BEGIN { exit !(a > 0 && a < b) }' \
    && ok "W4A4 with ffn_down at A$2: KLD $k < W4A4 $W4A4" || bad "ffn_down at $2 bits: KLD $k, W4A4 $W4A4"
}
down_check "$WORK/w4a4d8.gguf" 8 "ffn_down's inputs (every layer) to 8 bits"
[ "$(kld "$WORK/w4a4d8.gguf" 4)" = "$W4A4" ] && ok "--act-bits 4 at run time: ffn_down at 4 too (= W4A4)" \
  || bad "--act-bits 4 does not override ffn_down's bits"

# SmoothQuant's balance vectors folded into the norms: exact in float (an F32
# output keeps the F32 model's outputs), then W8A4 / W4A4 with and without
"$LOWBIT" imatrix -m "$F32" -f "$TEXT" -o "$WORK/imat.gguf" -c 128 --chunks 8 -t 2 > "$WORK/imat.log" 2>&1 \
  || { bad "imatrix"; cat "$WORK/imat.log"; }
"$LOWBIT" quantize -t 2 --imatrix "$WORK/imat.gguf" --smooth-alpha 0.5 "$F32" "$WORK/sm-f32.gguf" F32 > "$WORK/sm.log" 2>&1 \
  && grep -q "smoothing: 6 groups folded (alpha 0.50)" "$WORK/sm.log" \
  && ok "--smooth-alpha 0.5: 6 groups (2 layers x attn_norm, ffn_norm, ffn_up rows)" || { bad "quantize --smooth-alpha"; cat "$WORK/sm.log"; }
"$LOWBIT" perplexity -m "$WORK/sm-f32.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence > "$WORK/sm.ppl" 2>/dev/null
awk -v k="$(kld_of "$WORK/sm.ppl")" 'BEGIN { exit !(k != "" && k < 1e-5) }' \
  && ok "smoothing folded into F32 is exact: KLD $(kld_of "$WORK/sm.ppl")" || bad "smoothed F32 KLD $(kld_of "$WORK/sm.ppl")"
for t in ABQ_W8 ABQ_W4; do
  "$LOWBIT" quantize -t 2 --imatrix "$WORK/imat.gguf" --smooth-alpha 0.5 "$F32" "$WORK/sm-$t.gguf" $t > /dev/null 2>&1 \
    || bad "quantize $t --smooth-alpha"
  "$LOWBIT" quantize -t 2 --imatrix "$WORK/imat.gguf" "$F32" "$WORK/im-$t.gguf" $t > /dev/null 2>&1 || bad "quantize $t --imatrix"
  IM=$(kld "$WORK/im-$t.gguf" 4); SM=$(kld "$WORK/sm-$t.gguf" 4)
  echo "$t A4 KLD: imatrix $IM, imatrix + smoothing 0.5 $SM; A8: $(kld "$WORK/im-$t.gguf" 8), $(kld "$WORK/sm-$t.gguf" 8)"
  awk -v a="$SM" -v b="$IM" 'BEGIN { exit !(a > 0 && a < b) }' && ok "$t A4: smoothing lowers KLD $IM -> $SM" \
    || bad "$t A4: smoothing KLD $SM not below $IM"
done

# --abq-search (part 2, model/abq_search.h): per layer the smoothing alpha and the clipping cap
# of least eq. (2) (the block output's cosine error), calibrated on text disjoint from the
# scored chunks (the file's last 16 KB); W4A4 KLD against plain W4A4 (and, printed, the
# imatrix and alpha 0.5 files above); info prints the per-layer choices
tail -c 16000 "$TEXT" > "$WORK/calib.txt"
"$LOWBIT" quantize -t 2 --act-bits 4 --abq-search "$WORK/calib.txt" --abq-search-chunks 8 -c 128 "$F32" \
  "$WORK/se-w4a4.gguf" ABQ_W4 > "$WORK/se.log" 2> "$WORK/se.err" \
  && grep -q "ABQ search: 2 layers on 8 chunks" "$WORK/se.log" && grep -q "ABQ search: layer 2/2: alpha" "$WORK/se.err" \
  && ok "quantize --abq-search: 2 layers, progress on stderr" || { bad "quantize --abq-search"; cat "$WORK/se.log" "$WORK/se.err"; }
grep "ABQ search" "$WORK/se.err" "$WORK/se.log" | sed 's/^.*ABQ search/  ABQ search/'
SE=$(kld "$WORK/se-w4a4.gguf" 4); SE8=$(kld "$WORK/se-w4a4.gguf" 8)
echo "W4A4 KLD: plain $W4A4, imatrix $IM, imatrix + alpha 0.5 $SM, --abq-search $SE (the same file at A8: $SE8, plain W4A8 $W4A8)"
awk -v a="$SE" -v b="$W4A4" 'BEGIN { exit !(a > 0 && a < b) }' && ok "W4A4: --abq-search lowers KLD $W4A4 -> $SE" \
  || bad "W4A4: --abq-search KLD $SE not below plain $W4A4"
"$LOWBIT" info "$WORK/se-w4a4.gguf" > "$WORK/se.info" 2>/dev/null
grep -q "block search (8 chunks of 128 tokens), per layer alpha / clip" "$WORK/se.info" \
  && grep -qE ' 0: (none|0\.[0-9]+)/[01]\.[0-9]+ +1: (none|0\.[0-9]+)/[01]\.[0-9]+' "$WORK/se.info" \
  && ok "info prints the per-layer choices" || bad "info lacks the search's choices: $(cat "$WORK/se.info")"
# --abq-down-bits: per layer, ffn_down's input at 8 bits where that lowers eq. (2) (any gain here)
"$LOWBIT" quantize -t 2 --act-bits 4 --abq-search "$WORK/calib.txt" --abq-search-chunks 4 -c 128 --abq-down-bits 8 \
  --abq-down-gain 0 "$F32" "$WORK/sd-w4a4.gguf" ABQ_W4 > "$WORK/sd.log" 2> "$WORK/sd.err" \
  && grep -qE "ffn_down's input at 8 bits in [12] of 2 layers, at 4 elsewhere" "$WORK/sd.log" \
  && grep -q "layer 1/2: alpha .*, ffn_down's input [48] bits" "$WORK/sd.err" \
  && ok "quantize --abq-down-bits 8: ffn_down's input raised per layer" || { bad "quantize --abq-down-bits"; cat "$WORK/sd.log" "$WORK/sd.err"; }
"$LOWBIT" info "$WORK/sd-w4a4.gguf" 2>/dev/null | grep -A1 "ffn_down's inputs per layer, bits" | grep -qE ' 0: [48] +1: [48]' \
  && ok "info prints ffn_down's bits per layer" || bad "info lacks ffn_down's per-layer bits"
"$LOWBIT" run -m "$WORK/sd-w4a4.gguf" -p "Once" -n 4 > "$WORK/sd.run" 2>&1 && ok "run a file with per-layer ffn_down bits" \
  || { bad "run with per-layer ffn_down bits"; cat "$WORK/sd.run"; }
# --abq-akl: eq. (5), the block objective plus the attention maps' symmetric KL
"$LOWBIT" quantize -t 2 --act-bits 4 --abq-search "$WORK/calib.txt" --abq-search-chunks 4 -c 128 --abq-akl 1 \
  "$F32" "$WORK/sk-w4a4.gguf" ABQ_W4 > "$WORK/sk.log" 2> "$WORK/sk.err" \
  && grep -q "eq. (5) summed over layers" "$WORK/sk.log" && grep -q "attention-map KL at weight 1; eq. (4) summed" "$WORK/sk.log" \
  && ok "quantize --abq-akl 1: the search on eq. (5)" || { bad "quantize --abq-akl"; cat "$WORK/sk.log" "$WORK/sk.err"; }
# --abq-dc: eq. (3)'s distribution correction on ffn_down, gamma per layer in the file; the
# calibrated file's KLD printed beside --abq-search's alone (on 2 layers and 512 tokens the
# search's choice is made on the calibration text, so only "runs and is written" is asserted)
"$LOWBIT" quantize -t 2 --act-bits 4 --abq-search "$WORK/calib.txt" --abq-search-chunks 8 -c 128 --abq-dc \
  "$F32" "$WORK/sc-w4a4.gguf" ABQ_W4 > "$WORK/sc.log" 2> "$WORK/sc.err" \
  && grep -qE "distribution correction \(eq. \(3\)\) kept on ffn_down in [0-2] of 2 layers" "$WORK/sc.log" \
  && grep -qE "layer 2/2: .*(correction gamma|no correction)" "$WORK/sc.err" \
  && ok "quantize --abq-dc: the correction tried per layer" || { bad "quantize --abq-dc"; cat "$WORK/sc.log" "$WORK/sc.err"; }
grep "ABQ search" "$WORK/sc.err" "$WORK/sc.log" | sed 's/^.*ABQ search/  ABQ search/'
echo "W4A4 KLD: --abq-search $SE, --abq-search --abq-dc $(kld "$WORK/sc-w4a4.gguf" 4)"
"$LOWBIT" info "$WORK/sc-w4a4.gguf" 2>/dev/null | grep -A1 "distribution correction W + gamma a b^T per layer" \
  | grep -qE ' 0: [01]\.[0-9]+ +1: [01]\.[0-9]+' && ok "info prints the correction's gamma per layer" \
  || bad "info lacks the correction's gamma per layer"
# --abq-smooth-vo: attn_output's input smoothed through attn_v, named by info
"$LOWBIT" quantize -t 2 --act-bits 4 --abq-search "$WORK/calib.txt" --abq-search-chunks 8 -c 128 --abq-smooth-vo \
  "$F32" "$WORK/sv-w4a4.gguf" ABQ_W4 > "$WORK/sv.log" 2> "$WORK/sv.err" \
  && "$LOWBIT" info "$WORK/sv-w4a4.gguf" 2>/dev/null | grep -q "attn_output's input smoothed through attn_v" \
  && ok "quantize --abq-smooth-vo: in the file, named by info" || { bad "quantize --abq-smooth-vo"; cat "$WORK/sv.log" "$WORK/sv.err"; }
echo "W4A4 KLD: --abq-search $SE, --abq-search --abq-smooth-vo $(kld "$WORK/sv-w4a4.gguf" 4)"
expect_fail "--abq-smooth-vo without --abq-search" "go with --abq-search" "$LOWBIT" quantize --abq-smooth-vo "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-dc without --abq-search" "go with --abq-search" "$LOWBIT" quantize --abq-dc "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-dc-ridge without --abq-dc" "goes with --abq-dc" "$LOWBIT" quantize --abq-search "$WORK/calib.txt" --abq-dc-ridge 5 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-dc-ridge 0" "abq-dc-ridge" "$LOWBIT" quantize --abq-search "$WORK/calib.txt" --abq-dc --abq-dc-ridge 0 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-akl without --abq-search" "go with --abq-search" "$LOWBIT" quantize --abq-akl 1 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-down-bits without --abq-search" "go with --abq-search" "$LOWBIT" quantize --abq-down-bits 8 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-down-bits not above ffn_down's bits" "must be above ffn_down's 4 bits" "$LOWBIT" quantize --act-bits 4 --abq-search "$WORK/calib.txt" --abq-down-bits 4 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-down-gain without --abq-down-bits" "goes with --abq-down-bits" "$LOWBIT" quantize --abq-search "$WORK/calib.txt" --abq-down-gain 0.1 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-down-gain 1" "abq-down-gain" "$LOWBIT" quantize --act-bits 4 --abq-search "$WORK/calib.txt" --abq-down-bits 8 --abq-down-gain 1 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-search for a non-ABQ type" "applies to the ABQ types only" "$LOWBIT" quantize --abq-search "$WORK/calib.txt" "$F32" "$WORK/x.gguf" Q4_0
expect_fail "--abq-search with a missing text" "cannot open calibration text" "$LOWBIT" quantize --abq-search "$WORK/none.txt" "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-search with --smooth-alpha" "chooses the smoothing itself" "$LOWBIT" quantize --abq-search "$WORK/calib.txt" --smooth-alpha 0.5 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--abq-search on a text shorter than a chunk" "fewer than one chunk" "$LOWBIT" quantize --abq-search "$WORK/calib.txt" -c 100000 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--smooth-alpha without an imatrix" "give --imatrix" "$LOWBIT" quantize --smooth-alpha 0.5 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--smooth-alpha 2" "smooth-alpha" "$LOWBIT" quantize --smooth-alpha 2 "$F32" "$WORK/x.gguf" ABQ_W4

# 16 activation bits: unquantized (fp32) activations, WqA16. The file's default or a run-time
# override; the same outputs as the weights dequantized to F32 (sums in another order), info
# names the mode and the F32-row kernel
"$LOWBIT" quantize -t 2 --act-bits 16 "$F32" "$WORK/w4a16.gguf" ABQ_W4 > "$WORK/w4a16.log" 2>&1 \
  && grep -q "activations at 16 bits" "$WORK/w4a16.log" && ok "quantize ABQ_W4 --act-bits 16" \
  || { bad "quantize --act-bits 16"; cat "$WORK/w4a16.log"; }
"$LOWBIT" info "$WORK/w4a16.gguf" > "$WORK/w4a16.info" 2>/dev/null
grep -qE 'ABQ_W4 +16 tensors.*kernel: abq_w4_f32_' "$WORK/w4a16.info" && grep -q 'activations unquantized, fp32' "$WORK/w4a16.info" \
  && ok "info: ABQ_W4 at 16 activation bits, its F32-row kernel" || bad "info A16: $(cat "$WORK/w4a16.info")"
"$LOWBIT" quantize -t 2 "$WORK/w4a16.gguf" "$WORK/w4deq.gguf" F32 > /dev/null 2>&1 || bad "dequantize ABQ_W4 to F32"
ppl_of() { grep -oE 'PPL = [0-9.]+' "$1" | tail -1 | awk '{print $3}'; }
for isa in "" scalar; do
  LOWBIT_ISA=$isa "$LOWBIT" perplexity -m "$WORK/w4a16.gguf" -f "$TEXT" -c 128 --chunks 4 -t 2 > "$WORK/a16$isa.ppl" 2>/dev/null \
    || bad "perplexity A16 ${isa:-best}"
done
"$LOWBIT" perplexity -m "$WORK/w4deq.gguf" -f "$TEXT" -c 128 --chunks 4 -t 2 > "$WORK/deq.ppl" 2>/dev/null
P16=$(ppl_of "$WORK/a16.ppl"); PS=$(ppl_of "$WORK/a16scalar.ppl"); PD=$(ppl_of "$WORK/deq.ppl")
awk -v a="$P16" -v b="$PD" -v c="$PS" 'BEGIN { exit !(a > 0 && (a - b) ^ 2 < (1e-4 * b) ^ 2 && (c - b) ^ 2 < (1e-4 * b) ^ 2) }' \
  && ok "W4A16 PPL $P16 (scalar $PS) = the dequantized F32 model's $PD" || bad "W4A16 PPL $P16 / $PS, dequantized F32 $PD"
# (on this random-weight model 8-bit activations cost next to nothing: W4A16 and W4A8 are level)
W4A16=$(kld "$WORK/ABQ_W4.gguf" 16)
awk -v a="$W4A16" -v b="$W4A8" -v c="$W4A4" 'BEGIN { exit !(a > 0 && a < c && a < 1.1 * b) }' \
  && ok "KLD W4A16 $W4A16 < W4A4 $W4A4, within 10 % of W4A8 $W4A8" || bad "KLD W4A16 $W4A16, W4A8 $W4A8, W4A4 $W4A4"
# ffn_down's input alone unquantized: W4A4 with ffn_down at A16 (info says so; KLD below W4A4's)
"$LOWBIT" quantize -t 2 --act-bits 4 --act-bits-down 16 "$F32" "$WORK/w4a4d16.gguf" ABQ_W4 > /dev/null 2>&1 \
  || bad "quantize --act-bits-down 16"
down_check "$WORK/w4a4d16.gguf" 16 "ffn_down's inputs (every layer) to 16 bits, i.e. unquantized"
expect_fail "--abq-search at 16 activation bits" "nothing to fit" "$LOWBIT" quantize --act-bits 16 --abq-search "$WORK/calib.txt" "$F32" "$WORK/x.gguf" ABQ_W4

expect_fail "--act-bits for a non-ABQ type" "applies to the ABQ types only" "$LOWBIT" quantize --act-bits 4 "$F32" "$WORK/x.gguf" Q4_0
expect_fail "quantize --act-bits 9" "1..8 activation bits, or 16" "$LOWBIT" quantize --act-bits 9 "$F32" "$WORK/x.gguf" ABQ_W4
expect_fail "--act-bits-down for a non-ABQ type" "act-bits-down applies to the ABQ types only" "$LOWBIT" quantize --act-bits-down 8 "$F32" "$WORK/x.gguf" Q4_0
expect_fail "run --act-bits 0" "act-bits" "$LOWBIT" run -m "$WORK/ABQ_W4.gguf" --act-bits 0 -p "Once" -n 1
expect_fail "quantize to ABQ_W9" "unknown or unsupported type" "$LOWBIT" quantize "$F32" "$WORK/x.gguf" ABQ_W9
expect_fail "quantize to the activation type" "unknown or unsupported type" "$LOWBIT" quantize "$F32" "$WORK/x.gguf" ABQ_ACT
[ ! -e "$WORK/x.gguf" ] && ok "no output file left behind" || bad "a failure left $WORK/x.gguf"
finish
