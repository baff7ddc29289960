# Perplexity of stories260K (F32, and its Q8_0 / Q4_0 copies) on the TinyStories
# sample with -c 128, llama.cpp's method; KL divergence of the copies against F32.
. "$(dirname "$0")/lib_cli.sh"
need_shared models/stories260K.bin
TEXT=$SHARED/data/TinyStories-valid.head31195.txt

"$LOWBIT" convert --llama2c "$SHARED/models/stories260K.bin" --tokenizer "$SHARED/models/tok512.bin" \
  -o "$WORK/f32.gguf" >/dev/null || bad "convert"
for t in Q8_0 Q4_0; do
  "$LOWBIT" quantize "$WORK/f32.gguf" "$WORK/$t.gguf" $t > "$WORK/$t.quant.log" 2>&1 || bad "quantize $t"
  cat "$WORK/$t.quant.log" | grep -E 'bits per weight|kept'
done

ppl_of() { grep -oE 'Final estimate: PPL = [0-9.]+' "$1" | awk '{print $5}'; }
"$LOWBIT" perplexity -m "$WORK/f32.gguf" -f "$TEXT" -c 128 -t 2 --kl-divergence-base "$WORK/base.kld" \
  > "$WORK/f32.ppl" 2>/dev/null || bad "perplexity f32"
F32=$(ppl_of "$WORK/f32.ppl")
echo "F32 PPL = $F32"
# Recorded value (Q8_0 5.6410, Q4_0 6.3007 alongside); a change beyond rounding means the
# forward pass, the tokenizer or the perplexity method changed.
REF_F32=5.6279
awk -v p="$F32" -v r=$REF_F32 'BEGIN { exit !(p > 0 && p - r < 0.01 && r - p < 0.01) }' \
  && ok "F32 PPL $F32 matches the recorded value" || bad "F32 PPL $F32 differs from the recorded value"
# batches smaller than a chunk (and not dividing it) score the same. Under
# qemu (QEMU_CPU set by scripts/test-arm.sh) this pass and the self-KLD one
# below are left out: batching and the KLD file are the same C on every CPU
# (run natively at every x86 level), and each pass is ~60 s emulated.
if [ -z "${QEMU_CPU:-}" ]; then
  B7=$("$LOWBIT" perplexity -m "$WORK/f32.gguf" -f "$TEXT" -c 128 -b 7 -t 2 2>/dev/null | grep -oE 'Final estimate: PPL = [0-9.]+' | awk '{print $5}')
  [ "$B7" = "$F32" ] && ok "-b 7 gives the same PPL" || bad "-b 7 gives PPL $B7, not $F32"
else
  echo "skip: -b 7 under qemu (QEMU_CPU=$QEMU_CPU)"
fi
# an fp16 KV cache (-ctk f16 -ctv f16): keys and values rounded to 11 bits move
# PPL by 0.0002 (5.6281; llama.cpp b4748's llama-perplexity gives 5.6280 with
# its f16 cache and 5.6279 with f32). Margin 0.05 %, and its KLD against the
# f32 base below 1e-4 (measured 0.000002, top-1 99.95 %). Not under qemu (the
# kernels' fp16 paths are tested there by test_attention and test_golden).
if [ -z "${QEMU_CPU:-}" ]; then
# kv_cache_check TYPE REL MAXKLD [VTYPE]: perplexity with -ctk TYPE -ctv
# VTYPE (default TYPE) within REL (relative) of the f32 cache's PPL and its
# mean KLD below MAXKLD
kv_cache_check() {
  local out p k
  out=$("$LOWBIT" perplexity -m "$WORK/f32.gguf" -t 2 -ctk "$1" -ctv "${4:-$1}" --kl-divergence-base "$WORK/base.kld" \
    --kl-divergence 2>/dev/null)
  p=$(grep -oE 'Final estimate: PPL = [0-9.]+' <<<"$out" | awk '{print $5}')
  k=$(sed -n 's/^Mean KLD = \([0-9.]*\).*/\1/p' <<<"$out")
  awk -v p="$p" -v f="$F32" -v k="$k" -v r="$2" -v m="$3" \
    'BEGIN { exit !(p > 0 && p <= f * (1 + r) && p >= f * (1 - r) && k != "" && k < m) }' \
    && ok "$1 K, ${4:-$1} V cache: PPL $p within $2 of $F32, KLD $k" || bad "$1/${4:-$1} cache: PPL '$p' KLD '$k' (F32 $F32)"
}
kv_cache_check f16 0.0005 1e-4
# a q8_0 KV cache (-ctk q8_0 -ctv q8_0): each 32 values of a key or value
# rounded to 8 bits with one scale (stories260K's head_dim 8: one scale per
# key, its vector zero-padded; llama.cpp refuses that head size). Measured
# 5.6477 (+0.35 %), KLD 0.0031, top-1 97.7 %; the keys' rounding is nearly all
# of it (q8_0 V alone: KLD 0.000012). Margins: PPL within 1 %, KLD < 0.006.
kv_cache_check q8_0 0.01 0.006
# a q4_0 cache (-ctk q4_0 -ctv q4_0): 4 bits and one scale per 32 values (here
# per key: head_dim 8). Values take it well: f16 K + q4_0 V measured 5.6473,
# KLD 0.0027 (margins as q8_0's). Keys do not on this model: 16 times q8_0's
# step, and the KLD grows with its square (0.003 x 256 ~ 0.8): q4_0 K + V
# measured 13.3137, KLD 0.898 (a check against NaN or a broken layout only:
# test_attention holds the kernels to the reference exactly).
kv_cache_check f16 0.01 0.006 q4_0
kv_cache_check q4_0 1.5 1.2
fi
for t in Q8_0 Q4_0; do
  "$LOWBIT" perplexity -m "$WORK/$t.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/$t.ppl" 2>/dev/null || bad "perplexity $t"
  P=$(ppl_of "$WORK/$t.ppl")
  grep -E 'KLD|Top-1|ratio' "$WORK/$t.ppl"
  # stated margins: Q8_0 within 0.5% of F32; Q4_0 within 15% (a dim-64 model is
  # far more sensitive to 4-bit weights than a real one; measured +12.0%)
  case $t in Q8_0) margin=0.005;; Q4_0) margin=0.15;; esac
  awk -v p="$P" -v f="$F32" -v m=$margin 'BEGIN { exit !(p > 0 && p <= f * (1 + m) && p >= f * (1 - m)) }' \
    && ok "$t PPL $P within $(awk -v m=$margin 'BEGIN{print m*100}')% of F32 $F32" || bad "$t PPL $P not within margin of F32 $F32"
done

# KL divergence: the base against itself is ~0 (only the saved log-probs'
# 16-bit rounding) with full top-1 agreement and a PPL ratio of 1; the copies
# rank as their widths do (measured: Q8_0 0.00097 / 98.2%, Q4_0 0.129 / 82.0%).
kld() { sed -n "s/^$2 = \([0-9.]*\).*/\1/p" "$1"; }
if [ -z "${QEMU_CPU:-}" ]; then
  "$LOWBIT" perplexity -m "$WORK/f32.gguf" -t 2 --kl-divergence-base "$WORK/base.kld" --kl-divergence \
    > "$WORK/self.ppl" 2>/dev/null || bad "perplexity self-KLD"
  awk -v k="$(kld "$WORK/self.ppl" "Mean KLD")" -v t="$(grep -oE 'Top-1 agreement = [0-9.]+' "$WORK/self.ppl" | awk '{print $4}')" \
      -v r="$(grep -oE 'PPL ratio PPL\(Q\)/PPL\(base\) = [0-9.]+' "$WORK/self.ppl" | awk '{print $NF}')" \
      'BEGIN { exit !(k != "" && k < 1e-5 && t == 100 && r == 1) }' \
    && ok "base against itself: KLD ~0, top-1 100%, ratio 1" || bad "base against itself: $(grep -E 'KLD|Top-1|ratio' "$WORK/self.ppl" | tr '\n' ' ')"
  # the same base in llama-perplexity's --kl-divergence-base layout ("_logits_", n_ctx, n_vocab, n_chunk,
  # the tokens, then per position its scale, min and u16 values, padded to even), which --kl-divergence
  # also reads: the same figures
  if command -v python3 >/dev/null && python3 - "$WORK/base.kld" "$WORK/llama.kld" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'LBKLD001'
n_ctx, V, n_chunk, n_scored = struct.unpack_from('<4i', d, 8)
pos = 24 + 4 * n_ctx * n_chunk
out = [b'_logits_', struct.pack('<Iii', n_ctx, V, n_chunk), d[24:pos]]
for _ in range(n_chunk * n_scored):
    mn, scale = struct.unpack_from('<ff', d, pos)
    out += [struct.pack('<ff', scale, mn), d[pos + 8:pos + 8 + 2 * V], b'\0\0' * (V % 2)]
    pos += 8 + 2 * V
assert pos == len(d)
open(sys.argv[2], 'wb').write(b''.join(out))
PY
  then
    "$LOWBIT" perplexity -m "$WORK/f32.gguf" -t 2 --kl-divergence-base "$WORK/llama.kld" --kl-divergence \
      > "$WORK/llama.ppl" 2>/dev/null
    [ -n "$(kld "$WORK/llama.ppl" "Mean KLD")" ] &&
      [ "$(grep -E 'KLD|Top-1|ratio' "$WORK/llama.ppl")" = "$(grep -E 'KLD|Top-1|ratio' "$WORK/self.ppl")" ] &&
      ok "a llama-perplexity base file gives the same KLD figures" ||
      bad "llama-perplexity base: $(grep -E 'KLD|ratio|error|not' "$WORK/llama.ppl" | tr '\n' ' ')"
  fi
else
  echo "skip: the base against itself under qemu (QEMU_CPU=$QEMU_CPU)"
fi
K8=$(kld "$WORK/Q8_0.ppl" "Mean KLD"); K4=$(kld "$WORK/Q4_0.ppl" "Mean KLD")
P8=$(kld "$WORK/Q8_0.ppl" "99th percentile KLD"); P4=$(kld "$WORK/Q4_0.ppl" "99th percentile KLD")
awk -v a="$K8" -v b="$K4" -v c="$P8" -v d="$P4" 'BEGIN { exit !(a > 0 && a < 0.005 && b > a && b < 0.5 && c >= a && d > c) }' \
  && ok "mean KLD Q8_0 $K8 < Q4_0 $K4; p99 $P8 < $P4" || bad "KLD out of order or range: Q8_0 $K8 (p99 $P8), Q4_0 $K4 (p99 $P4)"
finish
