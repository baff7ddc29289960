# Mixture-of-experts GGUF files: qwen3moe (Qwen3-30B-A3B's architecture),
# qwen2moe (a shared expert with a sigmoid gate, q/k/v biases, weights not
# renormalised), Mixtral's (general.architecture "llama" with
# llama.expert_count), gpt-oss and ERNIE 4.5 (below). The models are tests/make_arch.py's rewrites of
# ../shared's stories260K: 4 experts, 2 used a token, 160 hidden units each.
# Expected numbers from the peers (../shared/peers/build.sh) on the very same
# files, measured 2026-11-30 on an AMD EPYC Zen 4 VM, 2 threads:
#   ik_llama.cpp 8337e4c  llama-perplexity -m q3m.gguf -f TinyStories-valid.head31195.txt -c 128 --chunks 8
#       -> 101.8095 (its default f16 KV cache; lowbit's is f32: 101.7684)
#   llama.cpp b4748       llama-perplexity -m q2m.gguf (the same) -ctk f32 -ctv f32 -> 242.1931 (lowbit 242.1930)
#   llama.cpp b4748       llama-perplexity -m mix.gguf (the same) -ctk f32 -ctv f32 -> 41.2390 (lowbit 41.2390)
#   ik_llama.cpp          on lowbit's Q4_0 of q3m.gguf -> 128.3080 (lowbit 128.1528)
#   llama-cli -m F -p "Once upon a time" -n 60 --temp 0 (ik for qwen3moe, b4748 with an f32 cache for the
#       others) -> the greedy texts below, which lowbit gives at avx512, avx2 and scalar.
# llama.cpp b4748 has no qwen3moe; ik_llama.cpp's llama MoE branch adds the
# normalised input as the residual (84.53 on mix.gguf), so Mixtral is held to
# b4748. With their default f16 KV cache the peers land 0.2-0.3 % from the
# f32 figures on q2m.gguf, and the last greedy words differ there. For scale:
# renormalising qwen2moe's weights, or not renormalising the others', moves
# PPL by 11-17 %.
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
SRC=$SHARED/models/stories260K-f32.gguf

for a in qwen3moe:q3m qwen2moe:q2m mixtral:mix; do
  python3 "$MAKE" "${a%:*}" "$SRC" "$WORK/${a#*:}.gguf" || { bad "make_arch.py ${a%:*}"; finish; exit; }
done
ok "make_arch.py wrote the three files"

arch_info "$WORK/q3m.gguf" qwen3moe "blk.4.ffn_gate_exps.weight *F32 *64 x 160 x 4" "qwen3moe with 3-D expert tensors"
arch_info "$WORK/mix.gguf" llama "llama.expert_used_count" "Mixtral as llama with experts"
"$LOWBIT" info "$WORK/q3m.gguf" 2>&1 | grep -q "^experts: 4 a layer, 2 used a token: a token multiplies" &&
  ok "info: the weights a token multiplies" || bad "info: $("$LOWBIT" info "$WORK/q3m.gguf" 2>&1 | tail -n 4)"

near "stories260K as qwen3moe" "$(ppl_at "$WORK/q3m.gguf" 128)" 101.8095 0.002
near "stories260K as qwen2moe" "$(ppl_at "$WORK/q2m.gguf" 128)" 242.1931 0.001
near "stories260K as Mixtral" "$(ppl_at "$WORK/mix.gguf" 128)" 41.2390 0.001

# Mixtral's first GGUF layout (TheBloke's files): one 2-D tensor an expert,
# blk.N.ffn_X.E.weight. The same model as mix.gguf gives the same bits, and
# its imatrix entries (one per kind, as llama-imatrix names the merged
# tensor) give each expert tensor its own row. ik_llama.cpp reads both
# layouts alike (84.5260 on each: its residual, above); b4748 refuses this one.
MAKE_ARCH_LEGACY=1 python3 "$MAKE" mixtral "$SRC" "$WORK/mixl.gguf"
arch_info "$WORK/mixl.gguf" llama "blk.4.ffn_down.3.weight *F32 *160 x 64" "Mixtral with a tensor an expert"
pl=$("$LOWBIT" perplexity -m "$WORK/mixl.gguf" -f "$TEXT" -c 128 --chunks 8 -t 2 2>&1 | grep -E '^\[|^Final')
p3=$("$LOWBIT" perplexity -m "$WORK/mix.gguf" -f "$TEXT" -c 128 --chunks 8 -t 2 2>&1 | grep -E '^\[|^Final')
[ -n "$pl" ] && [ "$pl" = "$p3" ] && ok "Mixtral's first layout: the same PPL as the 3-D one ($(tail -n 1 <<<"$pl"))" ||
  bad "Mixtral's first layout: '$pl' against '$p3'"
"$LOWBIT" info "$WORK/mixl.gguf" 2>&1 | grep -q "^experts: 4 a layer, 2 used a token" &&
  ok "info counts the per-expert tensors" || bad "info: $("$LOWBIT" info "$WORK/mixl.gguf" 2>&1 | tail -n 3)"
python3 "$MAKE" mixtral "$SHARED/interop/tiny-F32.gguf" "$WORK/tm.gguf" &&
  MAKE_ARCH_LEGACY=1 python3 "$MAKE" mixtral "$SHARED/interop/tiny-F32.gguf" "$WORK/tml.gguf" &&
  "$LOWBIT" imatrix -m "$WORK/tm.gguf" -f "$TEXT" -c 128 --chunks 4 -t 2 -o "$WORK/tm-im.gguf" > /dev/null 2>&1 &&
  "$LOWBIT" quantize --imatrix "$WORK/tm-im.gguf" "$WORK/tm.gguf" "$WORK/tm-q2.gguf" Q2_K > /dev/null 2>&1 &&
  "$LOWBIT" quantize --imatrix "$WORK/tm-im.gguf" "$WORK/tml.gguf" "$WORK/tml-q2.gguf" Q2_K > /dev/null 2>&1
q3=$(ppl_at "$WORK/tm-q2.gguf" 128 4)
ql=$(ppl_at "$WORK/tml-q2.gguf" 128 4)
[ -n "$q3" ] && [ "$q3" = "$ql" ] && ok "quantize --imatrix Q2_K: the first layout as the 3-D one (PPL $q3)" ||
  bad "quantize --imatrix Q2_K: first layout '$ql', 3-D '$q3'"
MAKE_ARCH_LEGACY=1 python3 "$MAKE" mixtral "$SRC" "$WORK/bad.gguf" blk.1.ffn_up.2.weight
expect_fail "the first layout without blk.1.ffn_up.2" "blk.1.ffn_up.2.weight is missing" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2

greedy_is "$WORK/q3m.gguf" "Once upon a time, athlas westies chmas w Lily w day to Lily wverlct, Lily w at and at alble's atear quchament. quchament."
greedy_is "$WORK/q2m.gguf" "Once upon a time, there was a cut alnighilligherherstery. Once upon a dolly, there was alonela. She dide-\"ver,erin time,outoft time, alPu" "llama.cpp b4748"
greedy_is "$WORK/mix.gguf" "Once upon a time there was a big bigututterfppa. He cried her aut her daddy at. Lily didn't kitty wmasing her fasheeth. Onene cononball of her" "llama.cpp b4748"

# gpt-oss (make_arch.py's rewrite: q/k/v and output biases, a sink logit per
# head, router and expert biases, swiglu_oai, a window of 48 on layers 0, 2,
# ...; the experts chosen by biased logits and weighted by a softmax of the
# chosen) against ik_llama.cpp 8337e4c on the same file (llama.cpp b4748
# has no gpt-oss): PPL 4172.5928 with its f16 KV cache and flash attention
# (the only CPU path for sinks; its f32 cache is refused there), lowbit
# 4171.4761; KLD of lowbit's log-probabilities against ik's file
# (perplexity --kl-divergence reads llama-perplexity's): 1.2e-5. For scale,
# on lowbit: without the sinks 3806.6, without the down biases 4077.7, a
# window of 47: 4297.2. The model's PPL is high because stories260K was
# trained for llama's activation and RoPE pairs, not gpt-oss's.
python3 "$MAKE" gpt-oss "$SRC" "$WORK/oss.gguf"
arch_info "$WORK/oss.gguf" gpt-oss "blk.3.attn_sinks.weight *F32 *8 " "gpt-oss with attention sinks"
near "stories260K as gpt-oss" "$(ppl_at "$WORK/oss.gguf" 128)" 4172.5928 0.002
greedy_is "$WORK/oss.gguf" "Once upon a timeitheer and of fo a sor happingingazzzzzzzzze ad pyze do asototz upon the ar a fisxent twend sarenuenrrenref"
if "$LOWBIT" quantize "$WORK/oss.gguf" "$WORK/oss-q8.gguf" Q8_0 > "$WORK/quant.txt" 2>&1 &&
   "$LOWBIT" info -a "$WORK/oss-q8.gguf" 2>&1 | grep -q "blk.0.ffn_down_exps.bias *F32" &&
   [ -n "$(ppl_at "$WORK/oss-q8.gguf" 128 2)" ]; then
  ok "gpt-oss Q8_0: biases kept F32, and it runs"
else
  bad "gpt-oss Q8_0: $(tail -n 2 "$WORK/quant.txt")"
fi
# MXFP4, the type of gpt-oss's released experts: lowbit's MXFP4 of the
# interop tiny model (the bytes ik_llama.cpp's llama-quantize --pure writes:
# test_mxfp4) scores as ik_llama.cpp on the same file: 603.7073 against
# 603.8126 (KLD 5.8e-5 against its logits; on ik's own Q8_0 file of it
# lowbit is 597.5715 against 597.4913, KLD 6.1e-5); a gpt-oss file with
# MXFP4 experts runs
if "$LOWBIT" quantize "$SHARED/interop/tiny-F32.gguf" "$WORK/tiny-mx.gguf" MXFP4 > "$WORK/quant.txt" 2>&1; then
  near "interop tiny in MXFP4 (against ik_llama.cpp)" "$(ppl_at "$WORK/tiny-mx.gguf" 128)" 603.8126 0.001
else
  bad "quantize MXFP4: $(tail -n 2 "$WORK/quant.txt")"
fi
# (each expert converted into a buffer of its own: repacking frees one once
# its copy is made; a shared one was read after free, which the ASan build
# caught; LOWBIT_REPACK=off keeps the converted rows and must agree)
"$LOWBIT" quantize "$WORK/oss.gguf" "$WORK/oss-mx.gguf" MXFP4 > "$WORK/quant.txt" 2>&1 &&
  "$LOWBIT" info "$WORK/oss-mx.gguf" 2>&1 | grep -q "converted at load to MXFP4_NL" &&
  p_on=$(ppl_at "$WORK/oss-mx.gguf" 128 2) && p_off=$(LOWBIT_REPACK=off ppl_at "$WORK/oss-mx.gguf" 128 2) &&
  [ -n "$p_on" ] && [ "$p_on" = "$p_off" ] && ok "gpt-oss with MXFP4 experts runs (PPL $p_on, repacked or not)" ||
  bad "gpt-oss MXFP4: '${p_on:-}' / '${p_off:-}' $(tail -n 2 "$WORK/quant.txt")"
python3 "$MAKE" gpt-oss "$SRC" "$WORK/bad.gguf" blk.2.attn_sinks.weight
expect_fail "gpt-oss without blk.2.attn_sinks" "blk.2.attn_sinks.weight is missing" "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2

# 16 experts, 4 used: the same bits on 1 and 3 threads (each token's
# expert outputs are summed in the order chosen, whatever the path)
MAKE_ARCH_EXPERTS=16,4 python3 "$MAKE" qwen3moe "$SRC" "$WORK/q3m16.gguf"
p1=$("$LOWBIT" perplexity -m "$WORK/q3m16.gguf" -f "$TEXT" -c 128 --chunks 4 -t 1 2>&1 | grep -E '^\[|^Final')
p3=$("$LOWBIT" perplexity -m "$WORK/q3m16.gguf" -f "$TEXT" -c 128 --chunks 4 -t 3 2>&1 | grep -E '^\[|^Final')
[ -n "$p1" ] && [ "$p1" = "$p3" ] && ok "16 experts: the same PPL on 1 and 3 threads ($(tail -n 1 <<<"$p1"))" ||
  bad "16 experts: 1 thread '$p1', 3 threads '$p3'"

# quantized: the experts as row views of Q4_0 tensors, repacked at load;
# the router stays F32 (as llama-quantize keeps it)
if "$LOWBIT" quantize "$WORK/q3m.gguf" "$WORK/q3m-q4.gguf" Q4_0 > "$WORK/quant.txt" 2>&1; then
  "$LOWBIT" info -a "$WORK/q3m-q4.gguf" > "$WORK/info.txt" 2>&1
  grep -q "blk.0.ffn_down_exps.weight *Q4_0 *160 x 64 x 4" "$WORK/info.txt" &&
    grep -q "blk.0.ffn_gate_inp.weight *F32" "$WORK/info.txt" && ok "quantize: experts Q4_0, router F32" ||
    bad "quantize: $(grep -E 'exps|gate_inp' "$WORK/info.txt" | head -n 4)"
  grep -q "layer matrices: 4\.5[0-9]* bits per weight" "$WORK/quant.txt" && ok "quantize counts the experts' bits" ||
    bad "quantize: $(grep 'layer matrices' "$WORK/quant.txt")"
  near "Q4_0 (against ik_llama.cpp on the same file)" "$(ppl_at "$WORK/q3m-q4.gguf" 128)" 128.3080 0.01
else
  bad "quantize Q4_0: $(tail -n 2 "$WORK/quant.txt")"
fi

# imatrix keeps a row of sums per expert (llama-imatrix's [K, n] and [1, n]),
# and quantize --imatrix weights each expert's rows by its own: on the
# interop tiny model (d 256, so Q2_K holds its rows) as qwen3moe with 8
# experts, Q2_K's KLD falls (0.2100 -> 0.1715 when written)
need_shared interop/tiny-F32.gguf
need_shared data/wiki.test.raw
MAKE_ARCH_EXPERTS=8,2 python3 "$MAKE" qwen3moe "$SHARED/interop/tiny-F32.gguf" "$WORK/tq.gguf"
if "$LOWBIT" imatrix -m "$WORK/tq.gguf" -f "$SHARED/data/wiki.test.raw" -c 128 --chunks 16 -t 2 -o "$WORK/im.gguf" \
     > "$WORK/im.txt" 2>&1 && "$LOWBIT" info -a "$WORK/im.gguf" > "$WORK/info.txt" 2>&1 &&
   grep -q "blk.1.ffn_down_exps.weight.in_sum2 *F32 *768 x 8" "$WORK/info.txt" &&
   grep -q "blk.1.ffn_down_exps.weight.counts *F32 *1 x 8" "$WORK/info.txt"; then
  ok "imatrix: per-expert sums"
  "$LOWBIT" quantize "$WORK/tq.gguf" "$WORK/tq-q2.gguf" Q2_K > /dev/null 2>&1
  "$LOWBIT" quantize --imatrix "$WORK/im.gguf" "$WORK/tq.gguf" "$WORK/tq-q2i.gguf" Q2_K > /dev/null 2>&1
  "$LOWBIT" perplexity -m "$WORK/tq.gguf" -f "$TEXT" -c 128 --chunks 8 -t 2 --kl-divergence-base "$WORK/tq.kld" \
    > /dev/null 2>&1
  kld() { "$LOWBIT" perplexity -m "$1" -f "$TEXT" -c 128 --chunks 8 -t 2 --kl-divergence-base "$WORK/tq.kld" \
            --kl-divergence 2>&1 | sed -n 's/^Mean KLD = \([0-9.]*\).*/\1/p'; }
  k0=$(kld "$WORK/tq-q2.gguf"); k1=$(kld "$WORK/tq-q2i.gguf")
  [ -n "$k0" ] && [ -n "$k1" ] && awk -v a="$k1" -v b="$k0" 'BEGIN { exit !(a < 0.9 * b) }' &&
    ok "quantize --imatrix Q2_K: KLD $k0 -> $k1" || bad "quantize --imatrix Q2_K: KLD '$k0' -> '$k1'"
else
  bad "imatrix: $(tail -n 2 "$WORK/im.txt"; grep exps "$WORK/info.txt" | head -n 2)"
fi

# lowbit's own types on a MoE file: a whole-row grid type writes the experts
# in its groups-of-128 type (a 3-D tensor has no place for per-matrix side
# values), ABQ experts run with the FFN's activation bits
for ty in GQ4_GC:GQ4_G128 ABQ_W4:ABQ_W4 MX:Q4_0; do
  if "$LOWBIT" quantize "$WORK/tq.gguf" "$WORK/tq-x.gguf" "${ty%:*}" > "$WORK/quant.txt" 2>&1 &&
     "$LOWBIT" info -a "$WORK/tq-x.gguf" 2>&1 | grep -q "blk.0.ffn_up_exps.weight *${ty#*:} " &&
     [ -n "$(ppl_at "$WORK/tq-x.gguf" 128 2)" ]; then
    ok "quantize ${ty%:*}: experts ${ty#*:}, and it runs"
  else
    bad "quantize ${ty%:*}: $(tail -n 2 "$WORK/quant.txt"; "$LOWBIT" info -a "$WORK/tq-x.gguf" 2>&1 | grep up_exps)"
  fi
done

# bench counts the experts a token runs
"$LOWBIT" bench -m "$WORK/q3m.gguf" -p 16 -n 4 -r 1 --no-roofline -t 2 > "$WORK/bench.txt" 2>&1 &&
  grep -q "qwen3moe" "$WORK/bench.txt" && ok "bench runs qwen3moe" || bad "bench: $(tail -n 3 "$WORK/bench.txt")"

# convert --hf: tests/make_hf.py writes each file as a Hugging Face
# checkpoint (one matrix per expert); converting it back gives the same
# tensors bit for bit and the same expert keys
for a in q3m q2m mix; do
  rm -rf "$WORK/hf-$a"
  if python3 "$(dirname "$0")/make_hf.py" "$WORK/$a.gguf" "$WORK/hf-$a" &&
     "$LOWBIT" convert --hf "$WORK/hf-$a" -o "$WORK/conv-$a.gguf" > "$WORK/conv.txt" 2>&1 &&
     python3 "$(dirname "$0")/make_hf.py" --compare "$WORK/$a.gguf" "$WORK/conv-$a.gguf" > "$WORK/cmp.txt" 2>&1; then
    ok "convert --hf $a: $(tail -n 1 "$WORK/cmp.txt")"
  else
    bad "convert --hf $a: $(tail -n 3 "$WORK/conv.txt" "$WORK/cmp.txt" 2>/dev/null)"
  fi
done
# a config the GGUF cannot say is refused
sed 's/"norm_topk_prob": true/"norm_topk_prob": false/' "$WORK/hf-q3m/config.json" > "$WORK/cfg.json" &&
  cp "$WORK/cfg.json" "$WORK/hf-q3m/config.json"
expect_fail "Qwen3-MoE config without renormalised weights" "norm_topk_prob false" \
  "$LOWBIT" convert --hf "$WORK/hf-q3m" -o "$WORK/x.gguf"
sed 's/"mlp_only_layers": \[\]/"mlp_only_layers": [1]/' "$WORK/hf-q2m/config.json" > "$WORK/cfg.json" &&
  cp "$WORK/cfg.json" "$WORK/hf-q2m/config.json"
expect_fail "Qwen2-MoE config with a dense layer" "layers without experts" \
  "$LOWBIT" convert --hf "$WORK/hf-q2m" -o "$WORK/x.gguf"
[ ! -e "$WORK/x.gguf" ] && ok "no output left by the refused conversions" || bad "x.gguf written"

# ERNIE 4.5 (ernie4_5: llama's layer; ernie4_5-moe: layer 0 dense, then
# experts chosen by softmax + exp_probs_b, weights renormalised, a shared
# expert), against ik_llama.cpp 8337e4c on the same files (its f16 KV cache;
# 2026-12-01, Zen 4): ernie4_5 3.6781 (lowbit 3.6778, as on the llama file
# itself), ernie4_5-moe 14.0715 (lowbit 14.0726; without layer 1's selection
# bias 13.78), and the greedy text below
python3 "$MAKE" ernie4_5 "$SRC" "$WORK/ern.gguf" && python3 "$MAKE" ernie4_5-moe "$SRC" "$WORK/ernm.gguf" &&
  ok "make_arch.py wrote the ERNIE 4.5 files" || bad "make_arch.py ernie4_5"
near "stories260K as ernie4_5 (against ik_llama.cpp)" "$(ppl_at "$WORK/ern.gguf" 128)" 3.6781 0.001
near "stories260K as ernie4_5-moe (against ik_llama.cpp)" "$(ppl_at "$WORK/ernm.gguf" 128)" 14.0715 0.001
greedy_is "$WORK/ernm.gguf" 'Once upon a time, inol happy sun."
Lucy looks amesshestingld and a disappriing. She was very small and singlashapt.
Okay mel'

# GLM-4.5 / 4.6 (glm4moe): q/k/v biases, per-head q/k norms, half of each head
# rotated (NeoX pairs), layer 0 dense, then experts chosen by sigmoid +
# exp_probs_b, renormalised, times 2.5, a shared expert; a NextN block after
# the others, left unread. Against ik_llama.cpp 8337e4c on the same file
# (llama-perplexity -c 128 --chunks 8 -t 2: its f16 KV cache and flash
# attention; 2026-12-01, Zen 4): 836.1221, lowbit 836.7350 with its f32 cache
# and 836.7474 with an f16 one (-0.07 %; a 64-wide model 800 PPL from its
# data magnifies rounding), and the same 60 greedy tokens. (ik's -fa 0 path
# gives 795.87 here, and 1404 against its own 610.14 without the q/k norms:
# its flash-attention path is the one this follows.)
python3 "$MAKE" glm4moe "$SRC" "$WORK/glm.gguf" && ok "make_arch.py wrote the glm4moe file" || bad "make_arch.py glm4moe"
arch_info "$WORK/glm.gguf" glm4moe "nextn_predict_layers" "glm4moe with a NextN block"
near "stories260K as glm4moe (against ik_llama.cpp)" "$(ppl_at "$WORK/glm.gguf" 128)" 836.1221 0.001
near "stories260K as glm4moe, f16 KV cache as ik's (against ik_llama.cpp)" \
  "$(ppl_at "$WORK/glm.gguf" 128 8 -ctk f16 -ctv f16)" 836.1221 0.001
greedy_is "$WORK/glm.gguf" 'Once upon a timeked limmkes."le!"le and driedy- friends forwbceingge ex- friends."ref!
 sors."re,oure,oure,oure,oure,oure she'
python3 "$MAKE" glm4moe "$SRC" "$WORK/bad.gguf" blk.2.attn_k_norm.weight
expect_fail "glm4moe with a q norm but no k norm" "attn_q_norm and attn_k_norm come together" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2
python3 "$MAKE" glm4moe "$SRC" "$WORK/bad.gguf" blk.3.ffn_up_shexp.weight
expect_fail "glm4moe without a shared expert's up matrix" "blk.3.ffn_up_shexp.weight is missing" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2

# malformed files are refused by name
python3 "$MAKE" qwen3moe "$SRC" "$WORK/bad.gguf" blk.2.ffn_up_exps.weight
expect_fail "qwen3moe without blk.2.ffn_up_exps" "blk.2.ffn_up_exps.weight is missing" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2
MAKE_ARCH_EXPERTS=4,5 python3 "$MAKE" qwen3moe "$SRC" "$WORK/bad.gguf"
expect_fail "5 of 4 experts used a token" "4 experts, 5 used a token" "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2
python3 "$MAKE" qwen2moe "$SRC" "$WORK/bad.gguf" blk.1.ffn_gate_inp.weight
expect_fail "qwen2moe without its router" "blk.1.ffn_gate_inp.weight is missing" \
  "$LOWBIT" run -m "$WORK/bad.gguf" -p hi -n 2
finish
