# Gemma 2 GGUF files (general.architecture "gemma2": Gemma 3's layer without
# the q/k norms, a sliding window on every other layer, attention scores and
# final logits soft-capped, cap tanh(x / cap)). The model is
# tests/make_arch.py's rewrite of ../shared's stories260K (26 layers, window
# 48 on layers 0, 2, ..., scores capped at 2, logits at 8), and the expected
# numbers are ik_llama.cpp's (8337e4c, built by ../shared/peers/build.sh) on
# the very same file, measured 2026-11-30 on an AMD EPYC Zen 4 VM:
#   llama-perplexity -m g2.gguf -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2
#     [1]179.8702,[2]183.3866,[3]179.3364,[4]166.0686,[5]161.5868,[6]157.9207,[7]156.3851,[8]160.0510
#   the same with -c 64
#     [1]108.6087,[2]135.3960,[3]304.6743,[4]243.7855,[5]227.1823,[6]208.3153,[7]194.3764,[8]178.1579
#   llama-cli -m g2.gguf -p "Once upon a time" -n 60 --temp 0 -c 128         -> GREEDY below
# (lowbit then: 160.0600 and 178.1433, the same 60 tokens; at avx512, avx2
# and scalar alike.) What the 0.05 % tolerance tells apart, measured the same
# way: a window of 47 moves the c = 128 figure by 0.3 % (ik_llama.cpp
# 159.53), no score cap by 6 % (170.27), no logit cap by 75 %.
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
GREEDY="Once upon a time a vchhutututt miat we we we were. ouirat were weiririririririririririririririririririririririririririr she she she she she she she she"

python3 "$MAKE" gemma2 "$SHARED/models/stories260K-f32.gguf" "$WORK/g2.gguf" && ok "make_arch.py gemma2" \
  || { bad "make_arch.py gemma2"; finish; exit; }
arch_info "$WORK/g2.gguf" gemma2 blk.25.post_ffw_norm.weight "gemma2, 26 layers with post norms"

near "context 128" "$(ppl_at "$WORK/g2.gguf" 128)" 160.0510 0.0005
near "context 64" "$(ppl_at "$WORK/g2.gguf" 64)" 178.1579 0.0005

greedy_is "$WORK/g2.gguf" "$GREEDY"

# The sliding-window layers' ring (kernels/attention.h): the window plus a
# batch of slots. With -b 16 a 128-token chunk wraps a ring of 64 (48 + 15,
# rounded up to a block) twice, and the figure must not move; run -b 8 keeps
# a ring of 64 through 60 generated tokens after the prompt, the same text.
near "context 128, -b 16: the ring of 64" "$(ppl_at "$WORK/g2.gguf" 128 8 -b 16)" 160.0510 0.0005
"$LOWBIT" run -m "$WORK/g2.gguf" -p "Once upon a time" -n 60 --temp 0 -c 128 -b 8 -t 2 -v > "$WORK/ring.out" 2> "$WORK/ring.err"
grep -q 'KV cache: 128 positions (sliding-window layers: a ring of 64) x 1 sequence' "$WORK/ring.err" &&
  [ "$(cat "$WORK/ring.out")" = "$GREEDY" ] && ok "run -c 128 -b 8: a ring of 64, the same 60 tokens" ||
  bad "run -b 8: $(grep 'KV cache' "$WORK/ring.err"): '$(cat "$WORK/ring.out")'"
"$LOWBIT" run -m "$WORK/g2.gguf" -p "Once upon a time" -n 4 -c 128 -b 8 -t 2 -v --swa-full 2>&1 |
  grep -q 'KV cache: 128 positions x 1 sequence' && ok "--swa-full: every position kept" || bad "--swa-full: a ring still"

# malformed: a layer without its post-FFN norm
python3 "$MAKE" gemma2 "$SHARED/models/stories260K-f32.gguf" "$WORK/bad.gguf" blk.7.post_ffw_norm.weight
expect_fail "gemma2 without blk.7.post_ffw_norm" "blk.7.post_ffw_norm.weight is missing" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2
finish
