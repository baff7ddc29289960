# MX (seed 002's 2/4/16-bit mixed precision, formats/mx.h) through the CLI:
# quantize tiny-F32 (every layer matrix is whole tiles) to MX with the
# default shares, with none in 4 bits and no outliers, and with an imatrix;
# `info` shows the MX line (stored bits, eq. (10), the kernel), `run` and
# `perplexity` work and the KL divergences order as the bits do; the
# embedding and head take their own types; the flags are checked; an MX
# file is refused as quantize's input; stories260K (rows of 172) keeps
# other types where MX's 16 x 32 tiles don't fit and still runs.
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
F32=$SHARED/interop/tiny-F32.gguf
TEXT=$SHARED/data/TinyStories-valid.head31195.txt

q() { # name, flags...
  local n=$1; shift
  "$LOWBIT" quantize -t 2 "$@" "$F32" "$WORK/$n.gguf" MX > "$WORK/$n.log" 2>&1 && ok "quantize MX $n" \
    || { bad "quantize MX $n"; cat "$WORK/$n.log"; }
}
q default
q all2 --mx-hi 0 --mx-outliers 0
q half4 --mx-hi 0.5 --mx-outliers 0.01
grep -qE "MX: 14 matrices, [0-9.]+ bits per weight stored .*eq. \(10\): [0-9.]+" "$WORK/default.log" \
  && ok "quantize prints the MX bits: $(grep -oE 'MX: .*' "$WORK/default.log" | head -1)" || bad "no MX summary: $(cat "$WORK/default.log")"
grep -q "14 matrices to MX" "$WORK/default.log" && ok "all 14 layer matrices MX" || bad "summary: $(tail -4 "$WORK/default.log")"
info=$("$LOWBIT" info "$WORK/default.gguf" 2>&1)
grep -qE '^  MX +14 matrices .* bpw +kernel: mx_(q8_0|bf16x16)_' <<< "$info" && ok "info: the MX line with its kernel" \
  || bad "info lacks the MX line: $info"
grep -qE '25\.0 % of groups in 4 bits, 0\.[0-9]+ % of weights as outliers; eq. \(10\)' <<< "$info" \
  && ok "info: 25 % of groups in 4 bits, outliers, eq. (10)" || bad "info lacks the MX shares"
grep -qE 'blk\.0\.attn_q\.weight\.map +I8' <<< "$info" && ok "info names the side tensors' types" || bad "side tensor types"
grep -qE '^  token_embd\.weight +Q4_K' <<< "$info" && grep -qE '^  output\.weight +Q6_K' <<< "$info" \
  && ok "embedding Q4_K, head Q6_K (MX's defaults)" || bad "embedding / head types"
"$LOWBIT" quantize -t 2 --token-embedding-type Q8_0 --output-tensor-type Q4_0 "$F32" "$WORK/emb.gguf" MX > /dev/null 2>&1 \
  && "$LOWBIT" info "$WORK/emb.gguf" 2>&1 | grep -qE '^  token_embd\.weight +Q8_0' \
  && "$LOWBIT" info "$WORK/emb.gguf" 2>&1 | grep -qE '^  output\.weight +Q4_0' \
  && ok "--token-embedding-type / --output-tensor-type" || bad "embedding / head type flags"

for n in default all2; do
  "$LOWBIT" run -m "$WORK/$n.gguf" -p "Once upon a time" -n 4 -t 2 --temp 0 > "$WORK/$n.run" 2>&1 \
    && ok "run MX $n" || { bad "run MX $n"; cat "$WORK/$n.run"; }
done

"$LOWBIT" perplexity -m "$F32" -f "$TEXT" -c 128 --chunks 4 -t 2 --kl-divergence-base "$WORK/base.kld" \
  > /dev/null 2>&1 || bad "perplexity F32"
kld_of() { grep -oE 'Mean KLD = [0-9.]+' "$1" | awk '{print $4}'; }
for n in default all2 half4; do
  "$LOWBIT" perplexity -m "$WORK/$n.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/$n.ppl" 2>/dev/null || bad "perplexity MX $n"
  eval "K_$n=$(kld_of "$WORK/$n.ppl")"
  echo "MX $n: $(grep -E 'Final estimate|Mean KLD' "$WORK/$n.ppl" | tr '\n' ' ')"
done
awk -v a="$K_half4" -v b="$K_default" -v c="$K_all2" 'BEGIN { exit !(a > 0 && a < b && b < c) }' \
  && ok "KLD: 50 % 4-bit + 1 % outliers $K_half4 < defaults $K_default < all 2-bit, no outliers $K_all2" \
  || bad "KLD order: $K_half4, $K_default, $K_all2"

# flags and inputs
expect_fail "--mx-hi out of range" "mx-hi" "$LOWBIT" quantize --mx-hi 2 "$F32" "$WORK/x.gguf" MX
expect_fail "--mx-outliers with Q4_0" "MX only" "$LOWBIT" quantize --mx-outliers 0.01 "$F32" "$WORK/x.gguf" Q4_0
expect_fail "unknown embedding type" "token-embedding-type" "$LOWBIT" quantize --token-embedding-type Q9_9 "$F32" "$WORK/x.gguf" MX
expect_fail "MX as the embedding type" "token-embedding-type" "$LOWBIT" quantize --token-embedding-type MX "$F32" "$WORK/x.gguf" Q4_0
expect_fail "an MX file as quantize's input" "already MX" "$LOWBIT" quantize "$WORK/default.gguf" "$WORK/x.gguf" Q4_0
expect_fail "unwritable output" "cannot|No such" "$LOWBIT" quantize "$F32" "$WORK/no/such/dir/x.gguf" MX
[ ! -e "$WORK/x.gguf" ] && ok "no output left behind by the failures" || bad "a failed quantize left $WORK/x.gguf"

# rows of 172: MX where the tiles fit, other types elsewhere
if [ -f "$SHARED/models/stories260K-f32.gguf" ]; then
  "$LOWBIT" quantize -t 2 "$SHARED/models/stories260K-f32.gguf" "$WORK/s260.gguf" MX > "$WORK/s260.log" 2>&1 \
    && grep -qE "\([0-9]+ matrices to MX" "$WORK/s260.log" \
    && "$LOWBIT" run -m "$WORK/s260.gguf" -p "Once upon a time" -n 4 -t 2 > /dev/null 2>&1 \
    && ok "stories260K: MX where it fits, and it runs" || { bad "stories260K MX"; cat "$WORK/s260.log"; }
fi

"$LOWBIT" bench --synthetic stories15m --type MX -p 8 -n 2 -r 1 -t 2 > "$WORK/bench.out" 2> "$WORK/bench.err" \
  && grep -q 'llama 15M MX' "$WORK/bench.out" && ok "bench --synthetic --type MX" \
  || { bad "bench synthetic MX"; cat "$WORK/bench.out" "$WORK/bench.err"; }
finish
