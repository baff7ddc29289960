# A Hugging Face checkpoint (config.json, model.safetensors, a stand-in
# tokenizer.json) made from one of tests/make_arch.py's mixture-of-experts
# GGUF files (F32), for tests/cli_moe.sh: `lowbit convert --hf` of it must
# give back the GGUF's tensors bit for bit. Each expert becomes its own HF
# matrix (mlp.experts.E.{gate,up,down}_proj, Mixtral's
# block_sparse_moe.experts.E.w1 / w3 / w2), the router mlp.gate (Mixtral:
# block_sparse_moe.gate), Mixtral's q/k rows go back to HF's rotate-half
# order. The tokenizer is a placeholder of the right size (the test compares
# tensors, not vocabularies). Standard library only.
#   python3 tests/make_hf.py IN.gguf OUTDIR
#   python3 tests/make_hf.py --compare A.gguf B.gguf   (tensors equal: exit 0)
import json, os, struct, sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def read_gguf(path):
    data = open(path, 'rb').read()
    pos = [4]

    def rd(fmt):
        v = struct.unpack_from('<' + fmt, data, pos[0])
        pos[0] += struct.calcsize('<' + fmt)
        return v

    def rstr():
        n, = rd('Q')
        s = data[pos[0]:pos[0] + n]
        pos[0] += n
        return s.decode()

    def value(t):
        if t == 8:
            return rstr()
        if t == 9:
            at, n = rd('IQ')
            return [value(at) for _ in range(n)]
        fmt = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}[t]
        return rd(fmt)[0]

    assert data[:4] == b'GGUF'
    version, n_t, n_kv = rd('IQQ')
    kv = {}
    for _ in range(n_kv):
        k = rstr()
        t, = rd('I')
        kv[k] = value(t)
    infos = []
    for _ in range(n_t):
        name = rstr()
        nd, = rd('I')
        ne = rd('%dQ' % nd)
        typ, off = rd('IQ')
        infos.append((name, ne, typ, off))
    align = kv.get('general.alignment', 32)
    base = (pos[0] + align - 1) // align * align
    tensors = {}
    for name, ne, typ, off in infos:
        n = 1
        for x in ne:
            n *= x
        size = n * 4 if typ == 0 else None
        tensors[name] = (ne, typ, data[base + off:base + off + size] if size else None)
    return kv, tensors


def compare(a, b):
    ka, ta = read_gguf(a)
    kb, tb = read_gguf(b)
    # a Mixtral file's expert size is its feed_forward_length (llama.cpp's converter writes no other)
    keys = [k for k in ka if '.expert_' in k and k != 'llama.expert_feed_forward_length']
    for k in keys:
        if kb.get(k) != ka[k]:
            print('key differs:', k, ka[k], kb.get(k))
            return False
    bad = [n for n in ta if n not in tb or ta[n][0] != tb[n][0] or ta[n][1] != tb[n][1] or ta[n][2] != tb[n][2]]
    extra = [n for n in tb if n not in ta]
    for n in bad[:5]:
        print('differs:', n, ta[n][:2], tb.get(n, (None, None))[:2])
    for n in extra[:5]:
        print('extra:', n)
    print('%d tensors, %d differ, %d extra; %d expert keys equal' % (len(ta), len(bad), len(extra), len(keys)))
    return not bad and not extra


def unpermute(blob, rows, cols, n_head):
    """GGUF's interleaved pairs back to HF's rotate-half rows, per head"""
    per = rows // n_head
    half = per // 2
    rb = cols * 4
    out = bytearray(len(blob))
    for h in range(n_head):
        for r in range(per):  # GGUF row 2i + j holds HF row j * half + i
            i, j = r // 2, r % 2
            src = (h * per + r) * rb
            dst = (h * per + j * half + i) * rb
            out[dst:dst + rb] = blob[src:src + rb]
    return bytes(out)


def main():
    if sys.argv[1] == '--compare':
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    src, outdir = sys.argv[1], sys.argv[2]
    kv, t = read_gguf(src)
    arch = kv['general.architecture']
    moe_arch = 'mixtral' if arch == 'llama' else arch
    g = lambda k: kv[arch + '.' + k]
    n_layer, n_embd, n_head = g('block_count'), g('embedding_length'), g('attention.head_count')
    n_kv = g('attention.head_count_kv')
    n_vocab = t['token_embd.weight'][0][1]
    cfg = {
        'architectures': [{'qwen3moe': 'Qwen3MoeForCausalLM', 'qwen2moe': 'Qwen2MoeForCausalLM',
                           'mixtral': 'MixtralForCausalLM'}[moe_arch]],
        'hidden_size': n_embd, 'num_hidden_layers': n_layer, 'num_attention_heads': n_head,
        'num_key_value_heads': n_kv, 'max_position_embeddings': g('context_length'),
        'rms_norm_eps': g('attention.layer_norm_rms_epsilon'), 'rope_theta': kv.get(arch + '.rope.freq_base', 10000.0),
        'vocab_size': n_vocab, 'num_experts_per_tok': g('expert_used_count'), 'tie_word_embeddings': False,
        'torch_dtype': 'float32',
    }
    if moe_arch == 'mixtral':
        cfg['num_local_experts'] = g('expert_count')
        cfg['intermediate_size'] = g('feed_forward_length')
    else:
        cfg['num_experts'] = g('expert_count')
        cfg['moe_intermediate_size'] = g('expert_feed_forward_length')
        cfg['intermediate_size'] = g('feed_forward_length')
        cfg['norm_topk_prob'] = moe_arch == 'qwen3moe'
        cfg['decoder_sparse_step'] = 1
        cfg['mlp_only_layers'] = []
        if moe_arch == 'qwen2moe':
            cfg['shared_expert_intermediate_size'] = g('expert_shared_feed_forward_length')
        else:
            cfg['head_dim'] = n_embd // n_head
    hf = {}  # name -> (shape, bytes)

    def put(name, gname, shape=None, perm=0):
        ne, _, blob = t[gname]
        shape = shape or list(reversed(ne))
        if perm:
            blob = unpermute(blob, shape[0], shape[1], perm)
        hf[name] = (shape, blob)

    put('model.embed_tokens.weight', 'token_embd.weight')
    put('model.norm.weight', 'output_norm.weight')
    put('lm_head.weight', 'output.weight')
    block = 'block_sparse_moe' if moe_arch == 'mixtral' else 'mlp'
    for l in range(n_layer):
        b, m = 'blk.%d.' % l, 'model.layers.%d.' % l
        put(m + 'input_layernorm.weight', b + 'attn_norm.weight')
        put(m + 'post_attention_layernorm.weight', b + 'ffn_norm.weight')
        perm = moe_arch == 'mixtral'
        put(m + 'self_attn.q_proj.weight', b + 'attn_q.weight', perm=n_head if perm else 0)
        put(m + 'self_attn.k_proj.weight', b + 'attn_k.weight', perm=n_kv if perm else 0)
        put(m + 'self_attn.v_proj.weight', b + 'attn_v.weight')
        put(m + 'self_attn.o_proj.weight', b + 'attn_output.weight')
        for x in ('q', 'k', 'v'):
            if b + 'attn_%s.bias' % x in t:
                put(m + 'self_attn.%s_proj.bias' % x, b + 'attn_%s.bias' % x)
        for x in ('q', 'k'):
            if b + 'attn_%s_norm.weight' % x in t:
                put(m + 'self_attn.%s_norm.weight' % x, b + 'attn_%s_norm.weight' % x)
        put(m + block + '.gate.weight', b + 'ffn_gate_inp.weight')
        names = {'gate': 'w1', 'up': 'w3', 'down': 'w2'} if moe_arch == 'mixtral' else \
                {k: k + '_proj' for k in ('gate', 'up', 'down')}
        for kind, hname in names.items():
            ne, _, blob = t[b + 'ffn_%s_exps.weight' % kind]
            per = ne[0] * ne[1] * 4
            for e in range(ne[2]):
                hf[m + '%s.experts.%d.%s.weight' % (block, e, hname)] = ([ne[1], ne[0]], blob[e * per:(e + 1) * per])
        if moe_arch == 'qwen2moe':
            for kind in ('gate', 'up', 'down'):
                put(m + 'mlp.shared_expert.%s_proj.weight' % kind, b + 'ffn_%s_shexp.weight' % kind)
            put(m + 'mlp.shared_expert_gate.weight', b + 'ffn_gate_inp_shexp.weight', shape=[1, n_embd])
    os.makedirs(outdir, exist_ok=True)
    header, off = {}, 0
    for name, (shape, blob) in hf.items():
        header[name] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [off, off + len(blob)]}
        off += len(blob)
    hb = json.dumps(header).encode()
    hb += b' ' * ((-len(hb)) % 8)
    with open(os.path.join(outdir, 'model.safetensors'), 'wb') as f:
        f.write(struct.pack('<Q', len(hb)) + hb)
        for shape, blob in hf.values():
            f.write(blob)
    json.dump(cfg, open(os.path.join(outdir, 'config.json'), 'w'), indent=1)
    # a byte-level BPE of n_vocab tokens: the 256 byte symbols, then filler
    syms = [chr(c) for c in range(33, 127)] + [chr(c) for c in range(161, 173)] + [chr(c) for c in range(174, 256)]
    syms += [chr(256 + i) for i in range(256 - len(syms))]
    vocab = {s: i for i, s in enumerate(syms[:n_vocab])}
    for i in range(len(vocab), n_vocab):
        vocab['tok%d' % i] = i
    tok = {'model': {'type': 'BPE', 'vocab': vocab, 'merges': []},
           'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False}, 'added_tokens': []}
    json.dump(tok, open(os.path.join(outdir, 'tokenizer.json'), 'w'))


if __name__ == '__main__':
    main()
