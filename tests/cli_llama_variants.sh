# Two architectures that are llama's layer with one switch each:
#   smollm3   (SmolLM3) no RoPE on every 4th layer (layers 3, 7, ...: NoPE);
#   mistral3  (Ministral 3, Mistral Small / Devstral of that line) YaRN, its
#             attention factor divided by the mscale at yarn_log_multiplier,
#             and Llama 4's attention temperature: past the original context
#             q is scaled by 1 + s ln(floor((pos + 1) / n_orig) + 1).
# The models are tests/make_arch.py's rewrites of ../shared's stories260K
# (mistral3 with MAKE_ARCH_YARN=4,64[,0.5] and a temperature scale of 0.5, so
# every switch acts within a context of 128); the expected numbers are
# ik_llama.cpp's (8337e4c, built by ../shared/peers/build.sh) on the very same
# files, measured 2026-12-01 on an AMD EPYC Zen 4 VM:
#   llama-perplexity -m F -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2
#     smollm3 4.9134, mistral3 5.4436, mistral3 without the log multiplier 5.2270
#   llama-cli -m F -p "Once upon a time" -n 60 --temp 0 -c 128 -t 2   -> the texts below
# (lowbit then: 4.9132, 5.4443, 5.2279 and the same texts. One switch wrong:
# smollm3 with RoPE on every layer is the llama file, 3.6781; mistral3 without
# the temperature 5.0332.)
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
SRC="$SHARED/models/stories260K-f32.gguf"

python3 "$MAKE" smollm3 "$SRC" "$WORK/smol.gguf" &&
  MAKE_ARCH_YARN=4,64,0.5 python3 "$MAKE" mistral3 "$SRC" "$WORK/m3.gguf" &&
  MAKE_ARCH_YARN=4,64 python3 "$MAKE" mistral3 "$SRC" "$WORK/m3b.gguf" &&
  ok "make_arch.py wrote the files" || { bad "make_arch.py"; finish; exit; }

arch_info "$WORK/smol.gguf" smollm3 "smollm3.block_count" "smollm3"
arch_info "$WORK/m3.gguf" mistral3 "mistral3.attention.temperature_scale" "mistral3 with a temperature scale"

near "stories260K as smollm3" "$(ppl_at "$WORK/smol.gguf" 128)" 4.9134 0.001
near "stories260K as mistral3" "$(ppl_at "$WORK/m3.gguf" 128)" 5.4436 0.001
near "stories260K as mistral3, yarn_log_multiplier absent" "$(ppl_at "$WORK/m3b.gguf" 128)" 5.2270 0.001

greedy_is "$WORK/smol.gguf" "Once upon a time, there was a little girl named Lily. She loved to play with her toys in the sunshine. One day, she went to the park with her mommy to play with her toys. They were very happy to s"
greedy_is "$WORK/m3.gguf" "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she went to the park with her mommy and saw a big box with a big box."

# quantized: the keys stay, Q8_0 within 1 % of F32
if "$LOWBIT" quantize "$WORK/m3.gguf" "$WORK/m3-q8.gguf" Q8_0 > "$WORK/quant.txt" 2>&1; then
  near "mistral3 Q8_0" "$(ppl_at "$WORK/m3-q8.gguf" 128)" 5.4443 0.01
else
  bad "quantize Q8_0: $(tail -n 2 "$WORK/quant.txt")"
fi
finish
