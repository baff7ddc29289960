# Architectures that are llama's layer with a switch or two:
#   smollm3   (SmolLM3) no RoPE on every 4th layer (layers 3, 7, ...: NoPE);
#   mistral3  (Ministral 3, Mistral Small / Devstral of that line) YaRN, its
#             attention factor divided by the mscale at yarn_log_multiplier,
#             and Llama 4's attention temperature: past the original context
#             q is scaled by 1 + s ln(floor((pos + 1) / n_orig) + 1);
#   granite, granitemoe (IBM Granite 3.x): the embedding, each branch's output
#             before it joins the stream, and the logits scaled, the attention
#             scale given (make_arch.py: 1.5, 0.8, 1 / 1.25, 0.25);
#   glm4      (GLM-4-0414, GLM-Z1): gate and up in one tensor, norms after the
#             attention and the FFN outputs as well as before, half of each
#             head rotated, q/k/v biases;
#   exaone    (EXAONE 3.0 / 3.5): llama's tensors with NeoX RoPE pairs;
#   olmo2     (OLMo 2): no norms before attention and FFN, norms after them,
#             RMS norms of the whole q and k, NeoX pairs;
#   command-r, cohere2 (Command R, R7B): one LayerNorm a layer feeding
#             attention and FFN side by side, tied head, logits times
#             logit_scale; cohere2's windows (48) on 3 layers of 4, the 4th
#             without RoPE.
# The models are tests/make_arch.py's rewrites of ../shared's stories260K
# (mistral3 with MAKE_ARCH_YARN=4,64[,0.5] and a temperature scale of 0.5, so
# every switch acts within a context of 128); the expected numbers are
# ik_llama.cpp's (8337e4c, built by ../shared/peers/build.sh) on the very same
# files, measured 2026-12-01 on an AMD EPYC Zen 4 VM:
#   llama-perplexity -m F -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2
#     smollm3 4.9134, mistral3 5.4436, mistral3 without the log multiplier 5.2270,
#     glm4 2570.8591 (its f16 KV cache: its CPU flash attention refuses f32;
#     lowbit 2568.6714, keeping f32, is 0.09 % from it on this peaked model)
#   llama-cli -m F -p "Once upon a time" -n 60 --temp 0 -c 128 -t 2   -> the texts below
# and llama.cpp b4748's for granite (ik_llama.cpp 8337e4c scales the stream
# after the residual sum, not the branch before it as transformers'
# GraniteDecoderLayer and llama.cpp do: 9.9645 and 58.7134 there):
#   llama-perplexity (as above)  granite 6.6854, granitemoe 32.4060, exaone
#                                104.7549, olmo2 7778.4481 (ik_llama.cpp has
#                                neither); with -ctk f32 -ctv f32: command-r
#                                121.8901, cohere2 115.7594, cohere2 with a
#                                window of 47 115.6779 (lowbit: the same digits)
#   llama-cli ... -no-cnv        -> the texts below
# (lowbit then: 4.9132, 5.4443, 5.2279, 6.6851, 32.4158 and the same texts. One switch wrong:
# smollm3 with RoPE on every layer is the llama file, 3.6781; mistral3 without
# the temperature 5.0332.)
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
SRC="$SHARED/models/stories260K-f32.gguf"

python3 "$MAKE" smollm3 "$SRC" "$WORK/smol.gguf" &&
  MAKE_ARCH_YARN=4,64,0.5 python3 "$MAKE" mistral3 "$SRC" "$WORK/m3.gguf" &&
  MAKE_ARCH_YARN=4,64 python3 "$MAKE" mistral3 "$SRC" "$WORK/m3b.gguf" &&
  python3 "$MAKE" granite "$SRC" "$WORK/gr.gguf" && python3 "$MAKE" granitemoe "$SRC" "$WORK/grm.gguf" &&
  python3 "$MAKE" glm4 "$SRC" "$WORK/glm.gguf" && python3 "$MAKE" exaone "$SRC" "$WORK/ex.gguf" &&
  python3 "$MAKE" olmo2 "$SRC" "$WORK/ol.gguf" && python3 "$MAKE" command-r "$SRC" "$WORK/cr.gguf" &&
  python3 "$MAKE" cohere2 "$SRC" "$WORK/co2.gguf" && MAKE_ARCH_WINDOW=47 python3 "$MAKE" cohere2 "$SRC" "$WORK/co47.gguf" &&
  ok "make_arch.py wrote the files" || { bad "make_arch.py"; finish; exit; }

arch_info "$WORK/smol.gguf" smollm3 "smollm3.block_count" "smollm3"
arch_info "$WORK/m3.gguf" mistral3 "mistral3.attention.temperature_scale" "mistral3 with a temperature scale"

near "stories260K as smollm3" "$(ppl_at "$WORK/smol.gguf" 128)" 4.9134 0.001
near "stories260K as mistral3" "$(ppl_at "$WORK/m3.gguf" 128)" 5.4436 0.001
near "stories260K as mistral3, yarn_log_multiplier absent" "$(ppl_at "$WORK/m3b.gguf" 128)" 5.2270 0.001

near "stories260K as granite (against llama.cpp b4748)" "$(ppl_at "$WORK/gr.gguf" 128)" 6.6854 0.001
near "stories260K as granitemoe (against llama.cpp b4748)" "$(ppl_at "$WORK/grm.gguf" 128)" 32.4060 0.002
greedy_is "$WORK/gr.gguf" "Once upon a time, there was a little girl named Lily. She loved to play with her toys and seeps. One day, she went to the park and her mommy went to the park. She saw a big box. She" "llama.cpp b4748"
greedy_is "$WORK/grm.gguf" "Once upon a time, there was a little boolff. He cried to the buzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz" "llama.cpp b4748"
near "stories260K as glm4" "$(ppl_at "$WORK/glm.gguf" 128)" 2570.8591 0.002
greedy_is "$WORK/glm.gguf" "Once upon a timeuttcecece day, onttchtcetttch we dayce dayt, a a.t timece, momt timet time  ncen.t         Wce a  Au as"
near "stories260K as exaone (against llama.cpp b4748)" "$(ppl_at "$WORK/ex.gguf" 128)" 104.7549 0.002
greedy_is "$WORK/ex.gguf" "Once upon a time, there was a little goth mist fearddownely thing was in the shank.
Their lourownand thenandrianthant the an as wind" "llama.cpp b4748"
near "stories260K as olmo2 (against llama.cpp b4748)" "$(ppl_at "$WORK/ol.gguf" 128)" 7778.4481 0.002
greedy_is "$WORK/ol.gguf" "Once upon a time O O O O O   ed do do do doed play do sa sa sa sa sa sa we play play play play play play playgggggggggg play play play play play play play play play play play play playar playar play play playar" "llama.cpp b4748"
near "stories260K as command-r (against llama.cpp b4748)" "$(ppl_at "$WORK/cr.gguf" 128)" 121.8901 0.0002
near "stories260K as cohere2 (against llama.cpp b4748)" "$(ppl_at "$WORK/co2.gguf" 128)" 115.7594 0.0002
near "stories260K as cohere2, window 47 (against llama.cpp b4748)" "$(ppl_at "$WORK/co47.gguf" 128)" 115.6779 0.0002
greedy_is "$WORK/cr.gguf" "Once upon a time, jop durererererererererererererererereinenn jos therereenldiziziziziziziziziziziziziz" "llama.cpp b4748"
greedy_is "$WORK/co2.gguf" "Once upon a time, jop wanted man her mommy was very seaminenning seaminenning kn Tim's aning the broudbittle the broudberercl Tim's another" "llama.cpp b4748"
# a granite file without one of its multipliers is refused by name
python3 "$MAKE" granite "$SRC" "$WORK/gr-bad.gguf" && python3 -c '
import sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
k = b"granite.logit_scale"; i = d.index(k); d[i:i + len(k)] = b"granite.logit_scalX"
open(p, "wb").write(d)' "$WORK/gr-bad.gguf"
expect_fail "granite without its logit_scale" "granite.logit_scale is missing" "$LOWBIT" run -m "$WORK/gr-bad.gguf" -p hi -n 2
greedy_is "$WORK/smol.gguf" "Once upon a time, there was a little girl named Lily. She loved to play with her toys in the sunshine. One day, she went to the park with her mommy to play with her toys. They were very happy to s"
greedy_is "$WORK/m3.gguf" "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she went to the park with her mommy and saw a big box with a big box."

# quantized: the keys stay, Q8_0 within 1 % of F32
if "$LOWBIT" quantize "$WORK/m3.gguf" "$WORK/m3-q8.gguf" Q8_0 > "$WORK/quant.txt" 2>&1; then
  near "mistral3 Q8_0" "$(ppl_at "$WORK/m3-q8.gguf" 128)" 5.4443 0.01
else
  bad "quantize Q8_0: $(tail -n 2 "$WORK/quant.txt")"
fi
finish
