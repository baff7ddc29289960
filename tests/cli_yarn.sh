# YaRN RoPE scaling (rope.scaling.type "yarn", as Qwen 2.5 / Qwen 3 long-context
# files, gpt-oss and DeepSeek carry it): per rotation pair a mix of the scaled and
# the plain frequency (ggml's ramp between beta_fast 32 and beta_slow 1 turns in
# the original context) and cos / sin times 1 + 0.1 ln(factor). The models are
# tests/make_arch.py's rewrites of ../shared's stories260K with MAKE_ARCH_YARN=4,64
# (factor 4, original context 64), as llama (interleaved pairs) and qwen3 (neox
# pairs); the expected numbers are ik_llama.cpp's (8337e4c, built by
# ../shared/peers/build.sh) on the very same files, measured 2026-11-30 on an
# AMD EPYC Zen 4 VM:
#   llama-perplexity -m F -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2
#     llama + yarn 4.9114, qwen3 + yarn 47.2495 (llama without yarn: 3.6781)
# (lowbit then: 4.9124 and 47.2502. Without the 1 + 0.1 ln 4 the llama file
# gives 4.8737, 0.8 % off; without the ramp, 30.47.)
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup

MAKE_ARCH_YARN=4,64 python3 "$MAKE" llama "$SHARED/models/stories260K-f32.gguf" "$WORK/ly.gguf" &&
  MAKE_ARCH_YARN=4,64 python3 "$MAKE" qwen3 "$SHARED/models/stories260K-f32.gguf" "$WORK/qy.gguf" &&
  ok "make_arch.py wrote both files" || { bad "make_arch.py"; finish; exit; }

"$LOWBIT" run -m "$WORK/ly.gguf" -p hi -n 1 > "$WORK/run.txt" 2>&1
grep -q "not implemented" "$WORK/run.txt" && bad "yarn warned as unimplemented" || ok "no warning for yarn"

near "stories260K + yarn (llama)" "$(ppl_at "$WORK/ly.gguf" 128)" 4.9114 0.001
near "stories260K + yarn (qwen3)" "$(ppl_at "$WORK/qy.gguf" 128)" 47.2495 0.001
finish
