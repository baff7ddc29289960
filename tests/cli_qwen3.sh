# Qwen 3 GGUF files (general.architecture "qwen3": Qwen 2's layer without
# q/k/v biases, with per-head RMS norms of q and k before RoPE). The models are
# tests/make_arch.py's rewrites of ../shared's llama files, and the expected
# numbers are ik_llama.cpp's (8337e4c, built by ../shared/peers/build.sh) on
# the very same files, measured 2026-11-30 on an AMD EPYC Zen 4 VM:
#   llama-perplexity -m q3.gguf -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2
#     [1]46.7565,[2]50.6218,[3]48.5220,[4]48.0383,[5]45.7668,[6]46.1867,[7]49.0687,[8]46.9362
#   llama-perplexity -m t3.gguf -f (the same) -c 256 --chunks 4 -t 2          -> 607.9249
#   llama-cli -m q3.gguf -p "Once upon a time" -n 60 --temp 0                  -> GREEDY below
# (lowbit then: 46.9430 and 607.9241, the same 60 tokens at avx512, avx2 and
# scalar.)
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
need_shared interop/tiny-F32.gguf
GREEDY="Once upon a time, there was a little gir mommy. The bir mommy. The bir mommy. The bir mom and dekieped. She was athiefisisiefishiemanthiement"

python3 "$MAKE" qwen3 "$SHARED/models/stories260K-f32.gguf" "$WORK/q3.gguf" && python3 "$MAKE" qwen3 "$SHARED/interop/tiny-F32.gguf" \
  "$WORK/t3.gguf" && ok "make_arch.py wrote both files" || { bad "make_arch.py"; finish; exit; }

arch_info "$WORK/q3.gguf" qwen3 blk.4.attn_k_norm.weight "qwen3 with per-head norms"

# perplexity against ik_llama.cpp's: 0.1 % (the engines differ by 0.015 %;
# norm weights of 1 instead of the file's move it by 1.6 %)
near "stories260K as qwen3" "$(ppl_at "$WORK/q3.gguf" 128)" 46.9362 0.001
near "interop tiny as qwen3" "$(ppl_at "$WORK/t3.gguf" 256 4)" 607.9249 0.001

greedy_is "$WORK/q3.gguf" "$GREEDY"

# quantized: Q8_0 within 1 % of F32 (0.16 % when written)
if "$LOWBIT" quantize "$WORK/q3.gguf" "$WORK/q3-q8.gguf" Q8_0 > "$WORK/quant.txt" 2>&1; then
  "$LOWBIT" info "$WORK/q3-q8.gguf" 2>&1 | grep -q 'qwen3.attention.head_count_kv' && ok "quantize keeps the qwen3 keys" \
    || bad "quantize dropped the qwen3 keys"
  near "Q8_0" "$(ppl_at "$WORK/q3-q8.gguf" 128)" 46.9430 0.01
else
  bad "quantize Q8_0: $(tail -n 2 "$WORK/quant.txt")"
fi

# a qwen3 file without one of its norms is refused by name
python3 "$MAKE" qwen3 "$SHARED/models/stories260K-f32.gguf" "$WORK/bad.gguf" blk.3.attn_k_norm.weight
expect_fail "qwen3 without blk.3.attn_k_norm" "blk.3.attn_k_norm.weight is missing" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2
finish
