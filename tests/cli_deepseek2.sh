#!/bin/bash
# deepseek2 (DeepSeek-V2 / V3 and their kin): multi-head latent attention
# (model/mla.c) and its experts (a dense first layer, shared experts, softmax
# or sigmoid gating with a selection bias, expert groups), on
# tests/make_arch.py's rewrites of ../shared's stories260K:
#   v2   DeepSeek-V2-Lite-like: q in one matrix, 27 layers (llama.cpp knows
#        Lite by that count), attn_kv_b as llama.cpp b4748 converted it;
#   v3   (MAKE_ARCH_DS3=1) V3-like: q through a low-rank pair, sigmoid gating,
#        a selection bias, renormalised weights times 2.5;
#   y3   v3 with YaRN (factor 4, original context 64, log multiplier 0.1);
#   mla, mla3: v2 and v3 as llama.cpp's MLA conversion writes them
#        (attn_k_b / attn_v_b per head, one KV head), which must score as
#        the attn_kv_b files do (k_b is their transpose, exact in F32).
# Expected numbers: llama.cpp b4748 (built by ../shared/peers/build.sh) on
# the very same files with an F32 KV cache, measured 2026-12-01 on an AMD
# EPYC Zen 4 VM:
#   llama-perplexity -m F -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2 -ctk f32 -ctv f32
#     v2 2004.5973, v3 1618.6340, y3 1626.8757
#   llama-cli -m F -p "Once upon a time" -n 60 --temp 0 -c 128 -t 2 -no-cnv -ctk f32 -ctv f32 -> the texts below
# (lowbit then: 2004.5968, 1618.6344, 1626.8762 and the same texts; the
# expanded attention b4748 runs and the absorbed one here are one function.)
# Expert groups have no peer (b4748 and ik_llama.cpp 8337e4c ignore the
# keys): all groups open must change nothing, one of two must change the
# choice.
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
SRC="$SHARED/models/stories260K-f32.gguf"

python3 "$MAKE" deepseek2 "$SRC" "$WORK/v2.gguf" &&
  MAKE_ARCH_DS3=1 python3 "$MAKE" deepseek2 "$SRC" "$WORK/v3.gguf" &&
  MAKE_ARCH_DS3=1 MAKE_ARCH_YARN=4,64,0.1 python3 "$MAKE" deepseek2 "$SRC" "$WORK/y3.gguf" &&
  MAKE_ARCH_MLA=1 python3 "$MAKE" deepseek2 "$SRC" "$WORK/mla.gguf" &&
  MAKE_ARCH_MLA=1 MAKE_ARCH_DS3=1 python3 "$MAKE" deepseek2 "$SRC" "$WORK/mla3.gguf" &&
  MAKE_ARCH_DS3=1 MAKE_ARCH_GROUPS=2,2 python3 "$MAKE" deepseek2 "$SRC" "$WORK/g22.gguf" &&
  MAKE_ARCH_DS3=1 MAKE_ARCH_GROUPS=2,1 python3 "$MAKE" deepseek2 "$SRC" "$WORK/g21.gguf" &&
  ok "make_arch.py wrote the files" || { bad "make_arch.py"; finish; exit; }

arch_info "$WORK/v3.gguf" deepseek2 "attn_kv_a_mqa" "deepseek2 with latent attention"
near "stories260K as deepseek2, V2-Lite-like (against llama.cpp b4748)" "$(ppl_at "$WORK/v2.gguf" 128)" 2004.5973 0.0005
near "stories260K as deepseek2, V3-like (against llama.cpp b4748)" "$(ppl_at "$WORK/v3.gguf" 128)" 1618.6340 0.0005
near "stories260K as deepseek2, V3-like with YaRN (against llama.cpp b4748)" "$(ppl_at "$WORK/y3.gguf" 128)" 1626.8757 0.0005
near "deepseek2 as llama.cpp's MLA conversion writes it, V2-Lite-like" "$(ppl_at "$WORK/mla.gguf" 128)" 2004.5968 0.0001
near "deepseek2 as llama.cpp's MLA conversion writes it, V3-like" "$(ppl_at "$WORK/mla3.gguf" 128)" 1618.6344 0.0001
greedy_is "$WORK/v2.gguf" "Once upon a timetike.tiele.t, Timoeer.t.t,st.tittth.tttttth.ttttttttttttttttie, au ands" "llama.cpp b4748"
greedy_is "$WORK/v3.gguf" "Once upon a timee jugleltual his mommayertuayrtatsrtual mltuakunnon very fo. Hel ml timeeried a friendl timeeried a friend" "llama.cpp b4748"
greedy_is "$WORK/mla3.gguf" "Once upon a timee jugleltual his mommayertuayrtatsrtual mltuakunnon very fo. Hel ml timeeried a friendl timeeried a friend" "llama.cpp b4748 (MLA file)"

# expert groups: every group open is no grouping; one of two changes the choice
near "deepseek2, 2 expert groups both open" "$(ppl_at "$WORK/g22.gguf" 128)" 1618.6344 0.0001
g21=$(ppl_at "$WORK/g21.gguf" 128)
if [ -n "$g21" ] && awk -v p="$g21" 'BEGIN { exit !(p > 1700 && p < 2000) }'; then
  ok "deepseek2, 1 of 2 expert groups open: PPL $g21 (no grouping: 1618.63; lowbit measured 1866.23)"
else
  bad "deepseek2 with expert groups: PPL '$g21'"
fi

# quantized: k_b's rows of 8 keep F16; Q8_0 within 2 % of F32 (this peaked
# model moves 0.6 % at Q8_0)
if "$LOWBIT" quantize "$WORK/mla3.gguf" "$WORK/mla3-q8.gguf" Q8_0 > "$WORK/quant.txt" 2>&1; then
  near "deepseek2 (MLA file) Q8_0" "$(ppl_at "$WORK/mla3-q8.gguf" 128)" 1618.6344 0.02
  "$LOWBIT" info "$WORK/mla3-q8.gguf" 2>&1 | grep -q "attn_k_b.weight *F16" && ok "attn_k_b kept F16 (rows of 8)" ||
    bad "attn_k_b's type after quantize: $("$LOWBIT" info "$WORK/mla3-q8.gguf" 2>&1 | grep attn_k_b | head -n 1)"
else
  bad "quantize Q8_0: $(tail -n 2 "$WORK/quant.txt")"
fi

# malformed: no attn_kv_b nor attn_k_b; no expert_weights_scale
python3 "$MAKE" deepseek2 "$SRC" "$WORK/nokv.gguf" blk.0.attn_kv_b.weight
expect_fail "deepseek2 without attn_kv_b" "blk.0.attn_kv_b.weight is missing" "$LOWBIT" run -m "$WORK/nokv.gguf" -p hi -n 2
python3 -c '
import sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
k = b"deepseek2.expert_weights_scale"; i = d.index(k); d[i:i + len(k)] = b"deepseek2.expert_weights_scalX"
open(p, "wb").write(d)' "$WORK/v3.gguf"
expect_fail "deepseek2 without expert_weights_scale" "expert_weights_scale is missing" "$LOWBIT" run -m "$WORK/v3.gguf" -p hi -n 2
finish
