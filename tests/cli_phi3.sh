# Phi-3 GGUF files (general.architecture "phi3": Q, K, V in one attn_qkv
# tensor and gate + up in one ffn_up, NeoX RoPE with LongRoPE factors and an
# attention factor, a sliding window on every layer). The model is
# tests/make_arch.py's rewrite of ../shared's stories260K (window 48,
# original context 64, attn_factor 1.19), and the expected numbers are
# ik_llama.cpp's (8337e4c, built by ../shared/peers/build.sh) on the very same
# file, measured 2026-11-30 on an AMD EPYC Zen 4 VM:
#   llama-perplexity -m p3.gguf -f TinyStories-valid.head31195.txt -c 128 --chunks 8 -t 2   (long factors)
#     [1]65.7282,[2]71.0611,[3]64.1313,[4]69.2222,[5]69.3342,[6]67.7367,[7]73.4948,[8]71.3159
#   the same with -c 64 (short factors)
#     [1]133.5288,[2]88.4779,[3]244.7554,[4]166.7838,[5]131.8991,[6]118.4319,[7]97.6594,[8]91.5998
#   llama-cli -m p3.gguf -p "Once upon a time" -n 60 --temp 0 -c 128         -> GREEDY below
# (lowbit then: 71.3483 and 91.6091, the same 60 tokens; at avx512, avx2 and
# scalar alike.) What the 0.1 % tolerance tells apart, measured the same way:
# a window of 47 or 49 instead of 48 moves the c = 128 figure by 2 %
# (ik_llama.cpp: 69.83 / 72.35), an attention factor of 1 instead of 1.19 by 20 %.
. "$(dirname "$0")/lib_cli.sh"
arch_test_setup
GREEDY="Once upon a time, there was a little girlwhlftthtthon, there was a trous and sh carking. Jerterostlys, there was there. She was very mon and ally b"

python3 "$MAKE" phi3 "$SHARED/models/stories260K-f32.gguf" "$WORK/p3.gguf" && ok "make_arch.py phi3" \
  || { bad "make_arch.py phi3"; finish; exit; }
arch_info "$WORK/p3.gguf" phi3 blk.4.attn_qkv.weight "phi3 with fused tensors"

near "context 128 (long factors)" "$(ppl_at "$WORK/p3.gguf" 128)" 71.3159 0.001
near "context 64 (short factors)" "$(ppl_at "$WORK/p3.gguf" 64)" 91.5998 0.001

greedy_is "$WORK/p3.gguf" "$GREEDY"

# quantized: the fused tensors stay fused (Q8_0: 72.14 when written, 1.2 % above F32)
if "$LOWBIT" quantize "$WORK/p3.gguf" "$WORK/p3-q8.gguf" Q8_0 > "$WORK/quant.txt" 2>&1; then
  "$LOWBIT" info -a "$WORK/p3-q8.gguf" 2>&1 | grep -q 'blk.0.attn_qkv.weight *Q8_0' && ok "quantize keeps attn_qkv" \
    || bad "quantize: no Q8_0 attn_qkv"
  near "Q8_0" "$(ppl_at "$WORK/p3-q8.gguf" 128)" 71.3483 0.03
else
  bad "quantize Q8_0: $(tail -n 2 "$WORK/quant.txt")"
fi

# MX: the fused attn_qkv as MX tiles, split into sub-views at their 16-row
# tiles (test_matrix_rows holds every split to the whole matrix's bits);
# 81.74 when written (2-4 bits: 15 % above F32)
if "$LOWBIT" quantize "$WORK/p3.gguf" "$WORK/p3-mx.gguf" MX > "$WORK/qmx.txt" 2>&1; then
  "$LOWBIT" info "$WORK/p3-mx.gguf" 2>&1 | grep -q 'blk.0.attn_qkv.weight *MX2' && ok "MX attn_qkv written" \
    || bad "no MX attn_qkv"
  near "MX" "$(ppl_at "$WORK/p3-mx.gguf" 128)" 81.7405 0.001
else
  bad "quantize MX: $(tail -n 2 "$WORK/qmx.txt")"
fi

# MXFP4 (converted to MXFP4_NL at load): the fused attn_qkv's pieces each get
# their own copy of the converted rows, which repacking may free apart; 91.56
# when written, and the same without repacking
if "$LOWBIT" quantize "$WORK/p3.gguf" "$WORK/p3-mxfp4.gguf" MXFP4 > "$WORK/qmx.txt" 2>&1; then
  near "MXFP4" "$(ppl_at "$WORK/p3-mxfp4.gguf" 128)" 91.5614 0.001
  near "MXFP4 without repacking" "$(LOWBIT_REPACK=off ppl_at "$WORK/p3-mxfp4.gguf" 128)" 91.5614 0.001
else
  bad "quantize MXFP4: $(tail -n 2 "$WORK/qmx.txt")"
fi

# imatrix and calibration name the fused tensors' inputs by the tensors, so
# quantize --imatrix / --gptq find them (GPTQ's IQ4_NL: 70.80 when written)
if "$LOWBIT" imatrix -m "$WORK/p3.gguf" -f "$TEXT" -c 128 --chunks 8 -o "$WORK/p3.imatrix" -t 2 > "$WORK/im.txt" 2>&1; then
  n=$("$LOWBIT" info -a "$WORK/p3.imatrix" 2>&1 | grep -cE 'blk\.[0-9]\.(attn_qkv|ffn_up)\.weight\.in_sum2')
  [ "$n" = 10 ] && ok "imatrix: attn_qkv and ffn_up sums in all 5 layers" || bad "imatrix: $n fused entries, not 10"
  "$LOWBIT" quantize --imatrix "$WORK/p3.imatrix" "$WORK/p3.gguf" "$WORK/p3-im.gguf" IQ4_NL > "$WORK/qi.txt" 2>&1 \
    && ok "quantize --imatrix" || bad "quantize --imatrix: $(tail -n 2 "$WORK/qi.txt")"
else
  bad "imatrix: $(tail -n 2 "$WORK/im.txt")"
fi
if "$LOWBIT" calibrate -m "$WORK/p3.gguf" -f "$TEXT" -c 128 --chunks 8 -o "$WORK/p3.calib" -t 2 > "$WORK/cal.txt" 2>&1 &&
   "$LOWBIT" quantize --gptq "$WORK/p3.calib" "$WORK/p3.gguf" "$WORK/p3-g.gguf" IQ4_NL > "$WORK/qg.txt" 2>&1; then
  near "quantize --gptq IQ4_NL" "$(ppl_at "$WORK/p3-g.gguf" 128)" 71.3483 0.05
else
  bad "calibrate + quantize --gptq: $(tail -n 2 "$WORK/cal.txt" "$WORK/qg.txt")"
fi

# malformed: no attn_qkv (nor separate Q, K, V); one LongRoPE table without the other
python3 "$MAKE" phi3 "$SHARED/models/stories260K-f32.gguf" "$WORK/bad1.gguf" blk.2.attn_qkv.weight
expect_fail "phi3 without blk.2.attn_qkv" "blk.2.attn_qkv.weight is missing" "$LOWBIT" run -m "$WORK/bad1.gguf" -p hi -n 2
python3 "$MAKE" phi3 "$SHARED/models/stories260K-f32.gguf" "$WORK/bad2.gguf" rope_factors_short.weight
expect_fail "phi3 with only the long factors" "rope_factors_long.weight and rope_factors_short.weight" \
  "$LOWBIT" run -m "$WORK/bad2.gguf" -p hi -n 2
finish
