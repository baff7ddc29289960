#!/usr/bin/env python3
"""Write a random-weight mixture-of-experts GGUF (F16 matrices, F32 router) of
a real model's layer shape, for speed comparisons on a file every engine
loads (lowbit, ik_llama.cpp, and llama.cpp b4748 for Mixtral), with LAYERS of
its layers (default 4) and the 32000-token SPM vocab of
../shared/tokenizer-tests/ggml-vocab-llama-spm.gguf (so the head does not
hide the experts). SHAPE:
  qwen3moe-30b-a3b  qwen3moe, d 2048, 32 query / 4 KV heads of 128, 128 experts
                    of 768 hidden units, 8 used a token (of 48 layers)
  mixtral-8x7b      llama, d 4096, 32 / 8 heads of 128, 8 experts of 14336, 2 used
                    (of 32 layers)
  gpt-oss-20b       gpt-oss, d 2880, 64 / 8 heads of 64, 32 experts of 2880, 4 used
                    (of 24 layers), q/k/v/output and expert biases, sinks, a window
                    of 128 on even layers, YaRN (factor 32 over 4096)
  glm-4.7-flash     deepseek2 (DeepSeek-V3's layer), d 2048, 20 heads of latent
                    attention (q rank 768, KV rank 512, 192 + 64 RoPE per q/k head,
                    256 per value), 64 experts of 1536, 4 used, 1 shared, sigmoid
                    gating with a selection bias (of 47 layers; every layer here
                    has experts)

  PYTHONPATH=~/.cache/lowbit-peers/llama.cpp/gguf-py python3 bench/synth_moe.py OUT.gguf [LAYERS [SHAPE]]
  ~/.cache/lowbit-peers/ik_llama.cpp/build/bin/llama-quantize OUT.gguf OUT-Q4_K_M.gguf Q4_K_M

(needs numpy; llama.cpp b4748 has no qwen3moe: quantize that one with ik_llama.cpp's llama-quantize)
"""
import os
import sys

import gguf
import numpy as np

SHAPES = {  # arch, dim, heads, kv heads, head dim, experts, used, expert ff, rope base
    "qwen3moe-30b-a3b": ("qwen3moe", 2048, 32, 4, 128, 128, 8, 768, 1000000.0),
    "mixtral-8x7b": ("llama", 4096, 32, 8, 128, 8, 2, 14336, 1000000.0),
    "gpt-oss-20b": ("gpt-oss", 2880, 64, 8, 64, 32, 4, 2880, 150000.0),
    "glm-4.7-flash": ("deepseek2", 2048, 20, 20, 256, 64, 4, 1536, 1000000.0),
}
MLA = {"glm-4.7-flash": (768, 512, 192, 64, 256, 1)}  # q rank, KV rank, nope, rope, v, shared experts


def main():
    out = sys.argv[1]
    n_layer = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    shape = sys.argv[3] if len(sys.argv) > 3 else "qwen3moe-30b-a3b"
    ARCH, DIM, N_HEAD, N_KV, HEAD_DIM, N_EXPERT, N_USED, FF_EXP, BASE = SHAPES[shape]
    here = os.path.dirname(os.path.abspath(__file__))
    voc = gguf.GGUFReader(os.path.join(here, "..", "..", "shared", "tokenizer-tests", "ggml-vocab-llama-spm.gguf"))
    w = gguf.GGUFWriter(out, ARCH)
    w.add_name("synthetic %s shape, %d layers" % (shape, n_layer))
    w.add_context_length(4096)
    w.add_embedding_length(DIM)
    w.add_block_count(n_layer)
    # a llama file's expert size is its feed_forward_length
    w.add_feed_forward_length(FF_EXP if ARCH == "llama" else 6144)
    if ARCH != "llama":
        w.add_expert_feed_forward_length(FF_EXP)
    w.add_expert_count(N_EXPERT)
    w.add_expert_used_count(N_USED)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    ds = ARCH == "deepseek2"
    if ds:  # the expanded form's head sizes (llama.cpp b4748's conversion, attn_kv_b)
        Q_RANK, KV_RANK, NOPE, ROPE, VD, N_SHARED = MLA[shape]
        w.add_key_length(NOPE + ROPE)
        w.add_value_length(VD)
        w.add_rope_dimension_count(ROPE)
        w.add_uint32(ARCH + ".attention.q_lora_rank", Q_RANK)
        w.add_uint32(ARCH + ".attention.kv_lora_rank", KV_RANK)
        w.add_uint32(ARCH + ".leading_dense_block_count", 0)
        w.add_uint32(ARCH + ".expert_shared_count", N_SHARED)
        w.add_float32(ARCH + ".expert_weights_scale", 1.8)
        w.add_bool(ARCH + ".expert_weights_norm", True)
        w.add_uint32(ARCH + ".expert_gating_func", 2)
        w.add_float32(ARCH + ".rope.scaling.yarn_log_multiplier", 0.0)
    else:
        w.add_key_length(HEAD_DIM)
        w.add_value_length(HEAD_DIM)
        w.add_rope_dimension_count(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(BASE)
    w.add_file_type(1)  # MOSTLY_F16
    oss = ARCH == "gpt-oss"
    if oss:
        w.add_uint32(ARCH + ".attention.sliding_window", 128)
        w.add_string(ARCH + ".rope.scaling.type", "yarn")
        w.add_float32(ARCH + ".rope.scaling.factor", 32.0)
        w.add_uint32(ARCH + ".rope.scaling.original_context_length", 4096)
    f = voc.fields
    toks = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8", "replace") for i in f["tokenizer.ggml.tokens"].data]
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data])
    w.add_token_types([int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    rng = np.random.default_rng(1234)

    def mat(*shape, std=0.02):
        m = rng.standard_normal(shape, dtype=np.float32) * std
        return m.astype(np.float16)

    w.add_tensor("token_embd.weight", mat(len(toks), DIM))
    qd, kvd = N_HEAD * HEAD_DIM, N_KV * HEAD_DIM
    for l in range(n_layer):
        p = "blk.%d." % l
        w.add_tensor(p + "attn_norm.weight", np.ones(DIM, np.float32))
        if ds:
            w.add_tensor(p + "attn_q_a.weight", mat(Q_RANK, DIM))
            w.add_tensor(p + "attn_q_a_norm.weight", np.ones(Q_RANK, np.float32))
            w.add_tensor(p + "attn_q_b.weight", mat(N_HEAD * (NOPE + ROPE), Q_RANK))
            w.add_tensor(p + "attn_kv_a_mqa.weight", mat(KV_RANK + ROPE, DIM))
            w.add_tensor(p + "attn_kv_a_norm.weight", np.ones(KV_RANK, np.float32))
            w.add_tensor(p + "attn_kv_b.weight", mat(N_HEAD * (NOPE + VD), KV_RANK))
            w.add_tensor(p + "attn_output.weight", mat(DIM, N_HEAD * VD))
            w.add_tensor(p + "exp_probs_b.bias", rng.standard_normal(N_EXPERT, dtype=np.float32) * 0.01)
            w.add_tensor(p + "ffn_gate_shexp.weight", mat(N_SHARED * FF_EXP, DIM))
            w.add_tensor(p + "ffn_up_shexp.weight", mat(N_SHARED * FF_EXP, DIM))
            w.add_tensor(p + "ffn_down_shexp.weight", mat(DIM, N_SHARED * FF_EXP))
        else:
            w.add_tensor(p + "attn_q.weight", mat(qd, DIM))
            w.add_tensor(p + "attn_k.weight", mat(kvd, DIM))
            w.add_tensor(p + "attn_v.weight", mat(kvd, DIM))
            w.add_tensor(p + "attn_output.weight", mat(DIM, qd))
        if oss:
            for name, n in (("attn_q", qd), ("attn_k", kvd), ("attn_v", kvd), ("attn_output", DIM)):
                w.add_tensor(p + name + ".bias", rng.standard_normal(n, dtype=np.float32) * 0.02)
            w.add_tensor(p + "attn_sinks.weight", rng.standard_normal(N_HEAD, dtype=np.float32))
            w.add_tensor(p + "ffn_gate_inp.bias", rng.standard_normal(N_EXPERT, dtype=np.float32) * 0.05)
            for name, n in (("ffn_gate_exps", FF_EXP), ("ffn_up_exps", FF_EXP), ("ffn_down_exps", DIM)):
                w.add_tensor(p + name + ".bias", rng.standard_normal((N_EXPERT, n), dtype=np.float32) * 0.02)
        if ARCH == "qwen3moe":
            w.add_tensor(p + "attn_q_norm.weight", np.ones(HEAD_DIM, np.float32))
            w.add_tensor(p + "attn_k_norm.weight", np.ones(HEAD_DIM, np.float32))
        w.add_tensor(p + ("post_attention_norm.weight" if oss else "ffn_norm.weight"), np.ones(DIM, np.float32))
        w.add_tensor(p + "ffn_gate_inp.weight", rng.standard_normal((N_EXPERT, DIM), dtype=np.float32) * 0.05)
        w.add_tensor(p + "ffn_gate_exps.weight", mat(N_EXPERT, FF_EXP, DIM))
        w.add_tensor(p + "ffn_up_exps.weight", mat(N_EXPERT, FF_EXP, DIM))
        w.add_tensor(p + "ffn_down_exps.weight", mat(N_EXPERT, DIM, FF_EXP))
    w.add_tensor("output_norm.weight", np.ones(DIM, np.float32))
    w.add_tensor("output.weight", mat(len(toks), DIM))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
