# GGUF files of other architectures made from a llama- or qwen2-architecture
# one, for tests/cli_qwen3.sh and tests/cli_phi3.sh. The results are other
# models, not the input's (their RoPE pairs and layers differ), so their
# outputs are checked against llama.cpp-family engines (ik_llama.cpp), not
# against the input's. Standard library only.
#   python3 tests/make_arch.py ARCH IN.gguf OUT.gguf [OMIT]
# ARCH:
#   llama  the input as it is (with MAKE_ARCH_YARN below: YaRN on llama's RoPE);
#   smollm3 keys -> "smollm3." (llama's layer; llama.cpp skips RoPE on every
#          4th layer of it);
#   granite keys -> "granite." (llama's layer) and its four multipliers:
#          embedding 1.5, residual 0.8, logit 1.25, attention 0.25 (for
#          1/sqrt(8)); granitemoe the same with experts (as mixtral's);
#   exaone keys -> "exaone." (llama's tensors, which llama.cpp runs with NeoX
#          RoPE pairs);
#   olmo2  keys -> "olmo2.", the norms before attention and FFN dropped,
#          norms after them added (post_attention_norm, post_ffw_norm) and
#          RMS norms of the whole q and k (attn_q_norm, attn_k_norm), fixed
#          values around 1; K and V heads repeated to one per query head;
#   glm4   keys -> "glm4.", q/k/v biases (fixed values), phi3's fused
#          ffn_up (gate rows then up rows; Q, K, V stay apart, as llama.cpp
#          reads GLM-4), gemma2's post norms (post_attention_norm,
#          post_ffw_norm) and half of each head rotated;
#   mistral3 keys -> "mistral3." (llama's layer) and an attention temperature
#          scale (MAKE_ARCH_TEMP, default 0.5), which llama.cpp applies to q
#          past the original context (MAKE_ARCH_YARN's N);
#   qwen3  keys "ARCH." -> "qwen3.", q/k/v biases dropped (Qwen 3 has none;
#          llama.cpp refuses unused tensors), and per layer the two per-head
#          RMS norms Qwen 3 applies to q and k before RoPE (attn_q_norm /
#          attn_k_norm, head_dim floats each, fixed non-trivial values);
#   phi3   keys -> "phi3.", attn_q/k/v fused into attn_qkv and ffn_gate/up
#          into ffn_up (gate rows first), a sliding window of 48 tokens,
#          LongRoPE factors (rope_factors_long / _short, rope_dim/2 each) with
#          an original context of 64 and an attention factor of 1.19, so a
#          context of 128 takes the long factors and one of 64 the short.
#   gemma2 keys -> "gemma2.", per layer post_attention_norm / post_ffw_norm
#          (fixed values around 1), output.weight dropped (Gemma ties the
#          head to the embedding), a window of 48 on layers 0, 2, ..., scores
#          soft-capped at 2 and logits at 8; the layers repeated in turn to
#          26 (Gemma 2 2B's count: llama.cpp knows Gemma 2 by its size only).
#   qwen3moe, qwen2moe, mixtral, gpt-oss (mixture of experts): the FFN
#          becomes 4 experts, 2 used a token: expert e is the layer's FFN cut
#          to its first n_ff // 32 * 32 hidden units (160 for stories260K),
#          with its gate and up weights perturbed and its down weights scaled by
#          0.4 (1 + e) (perturbed too), so which experts a token takes and
#          their weights change the output; a router ffn_gate_inp (F32
#          [n_embd, 4]) of fixed values. qwen3moe adds qwen3's q/k norms;
#          qwen2moe keeps the layer's whole FFN as the shared expert with a gate
#          vector ffn_gate_inp_shexp, and adds q/k/v biases (llama.cpp
#          requires them there); gpt-oss adds those biases too, the output
#          projection's, a sink logit per head, the router's and each
#          expert's gate / up / down biases (fixed values), names the FFN
#          norm post_attention_norm, and a window of 48 (MAKE_ARCH_WINDOW)
#          on layers 0, 2, ...
#   command-r, cohere2 keys -> "command-r." / "cohere2.", the FFN norms and
#          output.weight dropped (one LayerNorm a layer feeds attention and FFN
#          side by side; the head is the embedding), logit_scale 0.625,
#          layer_norm_epsilon 1e-5; cohere2 a window of 48 (MAKE_ARCH_WINDOW)
#          on layers 0-2 of every 4, the 4th without RoPE;
#   ernie4_5 keys -> "ernie4_5." (llama's layer); ernie4_5-moe the same with
#          layer 0 dense, then 4 experts (2 used) as qwen3moe's, a selection
#          bias exp_probs_b (fixed values) and one shared expert (the layer's
#          FFN cut to the experts' width);
#   deepseek2 keys -> "deepseek2.", multi-head latent attention made from
#          the layer's own: the compressed KV c = [Wk x, Wv x] (64 floats, an
#          RMS norm of fixed values around 1) and a RoPE key from Wk's first
#          head; per head q = [0.5 q_h (no RoPE), q_h (RoPE)], its key and value
#          the rows of c its KV head had (attn_kv_b: one-hot rows plus a fixed
#          perturbation); layer 0 dense, the others 4 experts, 2 used, as
#          qwen3moe's (weights the softmax's, times expert_weights_scale 1) plus
#          one shared expert (the layer's FFN cut to the experts' width); the
#          layers repeated in turn to 27 (llama.cpp knows DeepSeek-V2-Lite, whose
#          q is one matrix, by that count).
#          MAKE_ARCH_DS3=1 makes it DeepSeek-V3-like: q through a low-rank
#          pair (attn_q_a, its norm, attn_q_b; rank 64), sigmoid gating, a
#          selection bias exp_probs_b, the weights renormalised and times 2.5.
#          MAKE_ARCH_GROUPS="G,U" puts the experts in G groups, U of them open.
#          MAKE_ARCH_MLA=1 writes attn_k_b / attn_v_b (per head, 3-D) instead of
#          attn_kv_b, with the keys llama.cpp's MLA conversion writes.
#   glm4moe keys -> "glm4moe." (GLM-4.5 / 4.6 / Air): half of each head rotated
#          (NeoX pairs), q/k/v biases and per-head q/k norms (fixed values),
#          the FFN norm named post_attention_norm, layer 0 dense, then 4
#          experts (2 used) as qwen3moe's with sigmoid gating, a selection bias
#          exp_probs_b, the weights renormalised and times 2.5, one shared
#          expert (the layer's FFN cut to the experts' width); and one NextN
#          (multi-token prediction) block after the others (nextn_predict_layers
#          1: a copy of the last layer plus nextn.eh_proj / enorm / hnorm /
#          shared_head_norm), which generation leaves unread.
# OMIT: a tensor name to leave out (a malformed file for the loader's errors).
# MAKE_ARCH_FIM=1 makes the last three tokens fill-in-the-middle markers (any target).
# MAKE_ARCH_LEGACY=1 writes mixtral's experts as one 2-D tensor each (the
# first GGUF layout). MAKE_ARCH_YARN="F,N[,M]" adds YaRN RoPE scaling keys (factor F, original
# context N, and yarn_log_multiplier M) to any target.
import math, os, struct, sys

target, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
omit = sys.argv[4] if len(sys.argv) > 4 else None
MOE = ('qwen3moe', 'qwen2moe', 'mixtral', 'gpt-oss', 'granitemoe', 'deepseek2', 'ernie4_5-moe', 'glm4moe')
assert target in ('llama', 'smollm3', 'mistral3', 'granite', 'glm4', 'exaone', 'olmo2', 'qwen3', 'phi3',
                  'gemma2', 'ernie4_5', 'command-r', 'cohere2') + MOE, \
    'ARCH: llama, smollm3, mistral3, granite, glm4, exaone, olmo2, qwen3, phi3, gemma2, ernie4_5, command-r, cohere2, ' \
    'qwen3moe, qwen2moe, '\
    'mixtral, gpt-oss, granitemoe, deepseek2, ernie4_5-moe or glm4moe'
data = open(src, 'rb').read()
pos = 0


def rd(fmt):
    global pos
    v = struct.unpack_from('<' + fmt, data, pos)
    pos += struct.calcsize('<' + fmt)
    return v


def rstr():
    global pos
    n, = rd('Q')
    s = data[pos:pos + n]
    pos += n
    return s


SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def raw_value(t):
    """the value's bytes as stored (type excluded), so it is copied exactly"""
    global pos
    start = pos
    if t == 8:
        rstr()
    elif t == 9:
        at, n = rd('IQ')
        for _ in range(n):
            raw_value(at)
    else:
        pos += SIZES[t]
    return data[start:pos]


assert data[:4] == b'GGUF'
pos = 4
version, n_tensors, n_kv = rd('IQQ')
kvs = []
for _ in range(n_kv):
    key = rstr().decode()
    t, = rd('I')
    kvs.append([key, t, raw_value(t)])
infos = []
for _ in range(n_tensors):
    name = rstr().decode()
    nd, = rd('I')
    ne = rd('%dQ' % nd)
    typ, off = rd('IQ')
    infos.append((name, ne, typ, off))
align = 32
for key, t, raw in kvs:
    if key == 'general.alignment':
        align = struct.unpack('<I', raw)[0]
base = (pos + align - 1) // align * align


def kv_u32(key):
    for k, t, raw in kvs:
        if k == key:
            return struct.unpack('<I', raw)[0]
    raise SystemExit('missing ' + key)


arch = None
for k, t, raw in kvs:
    if k == 'general.architecture':
        arch = raw[8:].decode()
n_embd, n_head, n_layer = (kv_u32(arch + '.' + k) for k in ('embedding_length', 'attention.head_count', 'block_count'))
try:
    head_dim = kv_u32(arch + '.attention.key_length')
except SystemExit:
    head_dim = n_embd // n_head
try:
    rope_dim = kv_u32(arch + '.rope.dimension_count')
except SystemExit:
    rope_dim = head_dim


def sstr(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


prefix = 'llama' if target == 'mixtral' else target
for kv in kvs:
    if kv[0].startswith(arch + '.'):
        kv[0] = prefix + '.' + kv[0][len(arch) + 1:]
    if kv[0] == 'general.architecture':
        kv[2] = sstr(prefix)
# MAKE_ARCH_EXPERTS="E,K": E experts, K used (default 4,2)
N_EXPERT, N_USED = (int(v) for v in os.environ.get('MAKE_ARCH_EXPERTS', '4,2').split(','))
if target in MOE:
    n_ff = kv_u32(prefix + '.feed_forward_length')
    FF_EXP = n_ff // 32 * 32
    kvs.append([prefix + '.expert_count', 4, struct.pack('<I', N_EXPERT)])
    kvs.append([prefix + '.expert_used_count', 4, struct.pack('<I', N_USED)])
    kvs.append([prefix + '.expert_feed_forward_length', 4, struct.pack('<I', FF_EXP)])
    if target in ('mixtral', 'granitemoe'):  # llama.cpp takes their expert size from feed_forward_length
        for kv in kvs:
            if kv[0] == prefix + '.feed_forward_length':
                kv[2] = struct.pack('<I', FF_EXP)
    if target == 'qwen2moe':
        kvs.append([prefix + '.expert_shared_feed_forward_length', 4, struct.pack('<I', n_ff)])
    if target == 'gpt-oss':  # MAKE_ARCH_WINDOW=N: another window
        window = int(os.environ.get('MAKE_ARCH_WINDOW', '48'))
        kvs.append([prefix + '.attention.sliding_window', 4, struct.pack('<I', window)])
# MAKE_ARCH_YARN="F,N": YaRN RoPE scaling, factor F, original context N
if os.environ.get('MAKE_ARCH_YARN'):
    y = os.environ['MAKE_ARCH_YARN'].split(',')
    kvs.append([prefix + '.rope.scaling.type', 8, sstr('yarn')])
    kvs.append([prefix + '.rope.scaling.factor', 6, struct.pack('<f', float(y[0]))])
    kvs.append([prefix + '.rope.scaling.original_context_length', 4, struct.pack('<I', int(y[1]))])
    if len(y) > 2:
        kvs.append([prefix + '.rope.scaling.yarn_log_multiplier', 6, struct.pack('<f', float(y[2]))])
DS3, MLA = os.environ.get('MAKE_ARCH_DS3'), os.environ.get('MAKE_ARCH_MLA')
if target == 'deepseek2':
    KV_RANK, Q_RANK = 64, 64
    def setk(key, t, raw):
        global kvs
        kvs = [kv for kv in kvs if kv[0] != 'deepseek2.' + key] + [['deepseek2.' + key, t, raw]]
    u32 = lambda v: struct.pack('<I', v)
    f32 = lambda v: struct.pack('<f', v)
    setk('attention.kv_lora_rank', 4, u32(KV_RANK))
    setk('leading_dense_block_count', 4, u32(1))
    setk('expert_shared_count', 4, u32(1))
    setk('expert_weights_scale', 6, f32(2.5 if DS3 else 1.0))
    if not any(kv[0] == 'deepseek2.rope.scaling.yarn_log_multiplier' for kv in kvs):  # llama.cpp b4748 needs it
        setk('rope.scaling.yarn_log_multiplier', 6, f32(0.0707))
    if DS3:
        setk('attention.q_lora_rank', 4, u32(Q_RANK))
        setk('expert_gating_func', 4, u32(2))
        setk('expert_weights_norm', 7, b'\x01')
    if os.environ.get('MAKE_ARCH_GROUPS'):  # "G,U": the experts in G groups, the best U of them open
        g, u = (int(v) for v in os.environ['MAKE_ARCH_GROUPS'].split(','))
        setk('expert_group_count', 4, u32(g))
        setk('expert_group_used_count', 4, u32(u))
    if MLA:  # llama.cpp's MLA conversion: one KV head of the compressed vector and the RoPE key
        setk('attention.head_count_kv', 4, u32(1))
        setk('attention.key_length', 4, u32(KV_RANK + rope_dim))
        setk('attention.value_length', 4, u32(KV_RANK))
        setk('attention.key_length_mla', 4, u32(head_dim + rope_dim))
        setk('attention.value_length_mla', 4, u32(head_dim))
    else:
        setk('attention.head_count_kv', 4, u32(n_head))
        setk('attention.key_length', 4, u32(head_dim + rope_dim))
        setk('attention.value_length', 4, u32(head_dim))
if target in ('command-r', 'cohere2'):
    kvs.append([prefix + '.logit_scale', 6, struct.pack('<f', 0.625)])
    kvs.append([prefix + '.attention.layer_norm_epsilon', 6, struct.pack('<f', 1e-5)])
    if target == 'cohere2':
        kvs.append([prefix + '.attention.sliding_window', 4, struct.pack('<I', int(os.environ.get('MAKE_ARCH_WINDOW', '48')))])
if target == 'ernie4_5-moe':
    for key, val in (('leading_dense_block_count', 1), ('interleave_moe_layer_step', 1),
                     ('expert_shared_feed_forward_length', FF_EXP)):
        kvs.append([prefix + '.' + key, 4, struct.pack('<I', val)])
if target in ('granite', 'granitemoe'):
    for key, val in (('embedding_scale', 1.5), ('residual_scale', 0.8), ('logit_scale', 1.25),
                     ('attention.scale', 0.25)):
        kvs.append([prefix + '.' + key, 6, struct.pack('<f', val)])
if target in ('glm4', 'glm4moe'):  # half of each head rotated
    kvs = [kv for kv in kvs if kv[0] != target + '.rope.dimension_count']
    kvs.append([target + '.rope.dimension_count', 4, struct.pack('<I', head_dim // 2)])
if target == 'glm4moe':
    for key, t, raw in (('leading_dense_block_count', 4, struct.pack('<I', 1)),
                        ('expert_shared_count', 4, struct.pack('<I', 1)),
                        ('expert_weights_scale', 6, struct.pack('<f', 2.5)),
                        ('expert_weights_norm', 7, b'\x01'),
                        ('expert_gating_func', 4, struct.pack('<I', 2)),
                        ('nextn_predict_layers', 4, struct.pack('<I', 1))):
        kvs.append(['glm4moe.' + key, t, raw])
if target == 'mistral3':
    temp = float(os.environ.get('MAKE_ARCH_TEMP', '0.5'))
    kvs.append(['mistral3.attention.temperature_scale', 6, struct.pack('<f', temp)])
if target == 'gemma2':
    kvs.append(['gemma2.attention.sliding_window', 4, struct.pack('<I', 48)])
    kvs.append(['gemma2.attn_logit_softcapping', 6, struct.pack('<f', 2.0)])
    kvs.append(['gemma2.final_logit_softcapping', 6, struct.pack('<f', 8.0)])
if target == 'phi3':
    kvs.append(['phi3.attention.sliding_window', 4, struct.pack('<I', 48)])
    kvs.append(['phi3.rope.scaling.original_context_length', 4, struct.pack('<I', 64)])
    kvs.append(['phi3.rope.scaling.attn_factor', 6, struct.pack('<f', 1.19)])

# tensors: the input's (any type: each one's bytes run to the next one's
# offset), less the biases, then per layer the two norms (F32)
tensors = []
ends = sorted(off for _, _, _, off in infos) + [len(data) - base]
for name, ne, typ, off in infos:
    if name.endswith(('attn_q.bias', 'attn_k.bias', 'attn_v.bias')):
        continue
    end = min(e for e in ends if e > off)
    tensors.append((name, ne, typ, data[base + off:base + end]))


def f32s(blob):
    return list(struct.unpack('<%df' % (len(blob) // 4), blob))


def moe(tensors, first=0):
    """the FFN of each layer from `first` on as N_EXPERT experts (3-D tensors) and a router"""
    by_name = {t[0]: t for t in tensors}
    out = [t for t in tensors if not (t[0].startswith('blk.') and '.ffn_' in t[0] and 'norm' not in t[0] and
                                      int(t[0].split('.')[1]) >= first)]
    for il in range(first, n_layer):
        b = 'blk.%d.' % il
        for kind in ('gate', 'up', 'down'):
            name, ne, typ, blob = by_name[b + 'ffn_%s.weight' % kind]
            assert typ == 0, 'MoE: F32 input expected'
            w = f32s(blob[:4 * ne[0] * ne[1]])
            # experts of FF_EXP hidden units (a multiple of 32, so llama.cpp's
            # quantizers take them): the first FF_EXP of the layer's
            if kind == 'down':
                w = [x for r in range(ne[1]) for x in w[r * ne[0]:r * ne[0] + FF_EXP]]
                ne = (FF_EXP, ne[1])
            else:
                w = w[:FF_EXP * ne[0]]
                ne = (ne[0], FF_EXP)
            experts = []
            for e in range(N_EXPERT):
                scale = 0.4 * (1 + e) if kind == 'down' else 1.0
                experts += [x * scale * (1 + 0.4 * math.sin(1.7 * i + 2.3 * e + 0.4 * il)) for i, x in enumerate(w)]
            out.append((b + 'ffn_%s_exps.weight' % kind, (ne[0], ne[1], N_EXPERT), 0,
                        struct.pack('<%df' % len(experts), *experts)))
            if target in ('deepseek2', 'ernie4_5-moe', 'glm4moe'):  # one shared expert: the cut FFN as it is
                out.append((b + 'ffn_%s_shexp.weight' % kind, ne, 0, struct.pack('<%df' % len(w), *w)))
            if target == 'qwen2moe':
                out.append((b + 'ffn_%s_shexp.weight' % kind, by_name[b + 'ffn_%s.weight' % kind][1], 0, blob))
        r = [0.5 * math.sin(0.9 * j + 1.7 * e + 0.3 * il) for e in range(N_EXPERT) for j in range(n_embd)]
        out.append((b + 'ffn_gate_inp.weight', (n_embd, N_EXPERT), 0, struct.pack('<%df' % len(r), *r)))
        if target in ('ernie4_5-moe', 'glm4moe'):
            pb = [0.15 * math.cos(1.1 * e + il) for e in range(N_EXPERT)]
            out.append((b + 'exp_probs_b.bias', (N_EXPERT,), 0, struct.pack('<%df' % N_EXPERT, *pb)))
        if target == 'qwen2moe':
            g = [0.3 * math.sin(0.7 * j + 0.5 * il) for j in range(n_embd)]
            out.append((b + 'ffn_gate_inp_shexp.weight', (n_embd,), 0, struct.pack('<%df' % n_embd, *g)))
        if target in ('qwen2moe', 'gpt-oss', 'glm4moe'):
            for which, rows in (('q', n_embd), ('k', by_name[b + 'attn_k.weight'][1][1]), ('v', by_name[b + 'attn_v.weight'][1][1])):
                v = [0.05 * math.cos(0.3 * i + il) for i in range(rows)]
                out.append((b + 'attn_%s.bias' % which, (rows,), 0, struct.pack('<%df' % rows, *v)))
        if target == 'gpt-oss':
            def vec(name, shape, f):
                n = 1
                for x in shape:
                    n *= x
                out.append((b + name, shape, 0, struct.pack('<%df' % n, *[f(i) for i in range(n)])))
            vec('attn_output.bias', (n_embd,), lambda i: 0.04 * math.sin(0.5 * i + il))
            vec('attn_sinks.weight', (n_head,), lambda h: 2.0 + 1.5 * math.sin(1.1 * h + 0.6 * il))
            vec('ffn_gate_inp.bias', (N_EXPERT,), lambda e: 0.3 * math.cos(1.3 * e + il))
            vec('ffn_gate_exps.bias', (FF_EXP, N_EXPERT), lambda i: 0.1 * math.sin(0.37 * i + il))
            vec('ffn_up_exps.bias', (FF_EXP, N_EXPERT), lambda i: 0.1 * math.cos(0.29 * i + il))
            vec('ffn_down_exps.bias', (n_embd, N_EXPERT), lambda i: 0.05 * math.sin(0.23 * i + il))
    return out


def repeat_layers(tensors, count, source):
    """count layers, layer il a copy of layer source(il); block_count set to count"""
    per_layer = {}
    for t in tensors:
        if t[0].startswith('blk.'):
            il, rest = t[0][4:].split('.', 1)
            per_layer.setdefault(int(il), []).append((rest, t))
    out = [t for t in tensors if not t[0].startswith('blk.')]
    for il in range(count):
        for rest, t in per_layer[source(il)]:
            out.append(('blk.%d.%s' % (il, rest), t[1], t[2], t[3]))
    for kv in kvs:
        if kv[0] == prefix + '.block_count':
            kv[2] = struct.pack('<I', count)
    return out


if target in MOE:
    tensors = moe(tensors, 1 if target in ('deepseek2', 'ernie4_5-moe', 'glm4moe') else 0)
if target == 'glm4moe':  # layer 0's q/k/v biases (moe() adds the others')
    k_rows = next(t for t in tensors if t[0] == 'blk.0.attn_k.weight')[1][1]
    for which, rows in (('q', n_embd), ('k', k_rows), ('v', k_rows)):
        v = [0.05 * math.cos(0.3 * i) for i in range(rows)]
        tensors.append(('blk.0.attn_%s.bias' % which, (rows,), 0, struct.pack('<%df' % rows, *v)))
if target in ('gpt-oss', 'glm4moe'):  # its FFN norm is named post_attention_norm
    tensors = [(t[0].replace('.ffn_norm.', '.post_attention_norm.'),) + t[1:] for t in tensors]
# MAKE_ARCH_LEGACY=1 (mixtral): each 3-D expert tensor as one 2-D tensor an
# expert, blk.N.ffn_X.E.weight: Mixtral's first GGUF layout
if target == 'mixtral' and os.environ.get('MAKE_ARCH_LEGACY'):
    split = []
    for name, ne, typ, blob in tensors:
        if name.endswith('_exps.weight'):
            assert typ == 0, 'legacy layout: F32 input expected'
            size = 4 * ne[0] * ne[1]
            for e in range(ne[2]):
                split.append((name.replace('_exps.weight', '.%d.weight' % e), ne[:2], typ, blob[e * size:(e + 1) * size]))
        else:
            split.append((name, ne, typ, blob))
    tensors = split
if target in ('qwen3', 'qwen3moe', 'glm4moe'):
    for il in range(n_layer):
        for which, phase in (('q', 0.0), ('k', 2.0)):
            w = [1.0 + 0.9 * math.sin(1.3 * i + 0.7 * il + phase) for i in range(head_dim)]
            tensors.append(('blk.%d.attn_%s_norm.weight' % (il, which), (head_dim,), 0, struct.pack('<%df' % head_dim, *w)))
elif target == 'olmo2':
    # llama.cpp b4748 sizes attn_k_norm by n_embd (OLMo 2 1B-13B have no GQA):
    # each K/V head repeated for the query heads it serves, which computes the same attention
    n_kv = kv_u32('olmo2.attention.head_count_kv')
    group = n_head // n_kv

    def widen(t):
        name, ne, typ, blob = t
        if not name.endswith(('attn_k.weight', 'attn_v.weight')) or group == 1:
            return t
        assert typ == 0, 'olmo2: F32 input expected'
        row = 4 * ne[0]
        heads = [blob[h * head_dim * row:(h + 1) * head_dim * row] for h in range(n_kv)]
        return (name, (ne[0], ne[1] * group), 0, b''.join(heads[h // group] for h in range(n_head)))

    tensors = [widen(t) for t in tensors if not t[0].endswith(('.attn_norm.weight', '.ffn_norm.weight'))]
    for kv in kvs:
        if kv[0] == 'olmo2.attention.head_count_kv':
            kv[2] = struct.pack('<I', n_head)
    for il in range(n_layer):
        sizes = (('post_attention_norm', n_embd, 0.5), ('post_ffw_norm', n_embd, 1.5), ('attn_q_norm', n_embd, 2.5),
                 ('attn_k_norm', n_embd, 3.5))
        for which, n, phase in sizes:
            w = [1.0 + 0.5 * math.sin(0.37 * i + 0.9 * il + phase) for i in range(n)]
            tensors.append(('blk.%d.%s.weight' % (il, which), (n,), 0, struct.pack('<%df' % n, *w)))
elif target == 'gemma2':
    tensors = repeat_layers([t for t in tensors if t[0] != 'output.weight'], 26, lambda il: il % n_layer)
    n_layer = 26
    for il in range(n_layer):
        for which, phase in (('post_attention_norm', 0.5), ('post_ffw_norm', 1.5)):
            w = [1.0 + 0.5 * math.sin(0.37 * i + 0.9 * il + phase) for i in range(n_embd)]
            tensors.append(('blk.%d.%s.weight' % (il, which), (n_embd,), 0, struct.pack('<%df' % n_embd, *w)))
elif target in ('phi3', 'glm4'):
    by_name = {t[0]: t for t in tensors}

    def fuse(parts, name):
        ts = [by_name.pop(p) for p in parts]
        assert all(t[2] == 0 for t in ts), 'phi3, glm4: F32 input expected'
        rows = sum(t[1][1] for t in ts)
        by_name[name] = (name, (ts[0][1][0], rows), 0, b''.join(t[3][:4 * t[1][0] * t[1][1]] for t in ts))

    for il in range(n_layer):
        b = 'blk.%d.' % il
        if target == 'phi3':
            fuse([b + 'attn_q.weight', b + 'attn_k.weight', b + 'attn_v.weight'], b + 'attn_qkv.weight')
        fuse([b + 'ffn_gate.weight', b + 'ffn_up.weight'], b + 'ffn_up.weight')
    tensors = list(by_name.values())
    if target == 'glm4':
        for il in range(n_layer):
            for which in ('q', 'k', 'v'):
                rows = by_name['blk.%d.attn_%s.weight' % (il, which)][1][1]
                bias = [0.05 * math.cos(0.3 * i + il + ord(which)) for i in range(rows)]
                tensors.append(('blk.%d.attn_%s.bias' % (il, which), (rows,), 0, struct.pack('<%df' % rows, *bias)))
            for which, phase in (('post_attention_norm', 0.5), ('post_ffw_norm', 1.5)):
                w = [1.0 + 0.5 * math.sin(0.37 * i + 0.9 * il + phase) for i in range(n_embd)]
                tensors.append(('blk.%d.%s.weight' % (il, which), (n_embd,), 0, struct.pack('<%df' % n_embd, *w)))
if target == 'deepseek2':
    by_name = {t[0]: t for t in tensors}
    n_kv = 4  # stories260K's
    nope = head_dim
    def tensor(name, ne, vals):
        tensors.append((name, ne, 0, struct.pack('<%df' % len(vals), *vals)))
    def rows(name):
        t = by_name[name]
        assert t[2] == 0, 'deepseek2: F32 input expected'
        w = f32s(t[3][:4 * t[1][0] * t[1][1]])
        return [w[r * t[1][0]:(r + 1) * t[1][0]] for r in range(t[1][1])]
    def onehot(col, n, il, r, amp=0.05):
        return [(1.0 if j == col else 0.0) + amp * math.sin(0.7 * j + 1.3 * r + 0.5 * il) for j in range(n)]
    tensors = [t for t in tensors if not t[0].endswith(('attn_q.weight', 'attn_k.weight', 'attn_v.weight'))]
    for il in range(n_layer):
        b = 'blk.%d.' % il
        wq, wk, wv = rows(b + 'attn_q.weight'), rows(b + 'attn_k.weight'), rows(b + 'attn_v.weight')
        # q: per head [0.5 q_h, q_h] (the second part rotated)
        if DS3:  # q_a = Wq x (64), normed; q_b picks each head's rows back out of it
            tensor(b + 'attn_q_a.weight', (n_embd, Q_RANK), [x for r in wq for x in r])
            tensor(b + 'attn_q_a_norm.weight', (Q_RANK,), [1.0 + 0.2 * math.sin(0.3 * i + il) for i in range(Q_RANK)])
            qb = []
            for h in range(n_head):
                qb += [0.5 * x for i in range(nope) for x in onehot(h * head_dim + i, Q_RANK, il, i)]
                qb += [x for i in range(rope_dim) for x in onehot(h * head_dim + i, Q_RANK, il, i + 50)]
            tensor(b + 'attn_q_b.weight', (Q_RANK, n_head * (nope + rope_dim)), qb)
        else:
            q = []
            for h in range(n_head):
                q += [0.5 * x for r in wq[h * head_dim:(h + 1) * head_dim] for x in r]
                q += [x for r in wq[h * head_dim:h * head_dim + rope_dim] for x in r]
            tensor(b + 'attn_q.weight', (n_embd, n_head * (nope + rope_dim)), q)
        # c = [Wk x, Wv x], then k_r from Wk's first head
        tensor(b + 'attn_kv_a_mqa.weight', (n_embd, KV_RANK + rope_dim),
               [x for r in wk + wv + wk[:rope_dim] for x in r])
        tensor(b + 'attn_kv_a_norm.weight', (KV_RANK,), [1.0 + 0.3 * math.sin(0.41 * i + 0.7 * il) for i in range(KV_RANK)])
        kb, vb = [], []  # per head: k rows (nope of KV_RANK), v rows (head_dim of KV_RANK)
        for h in range(n_head):
            g = h // (n_head // n_kv)
            kb.append([onehot(g * head_dim + i, KV_RANK, il, i) for i in range(nope)])
            vb.append([onehot(32 + g * head_dim + i, KV_RANK, il, i + 20) for i in range(head_dim)])
        if MLA:  # k_b[h]: KV_RANK rows of nope (the transpose); v_b[h]: head_dim rows of KV_RANK
            tensor(b + 'attn_k_b.weight', (nope, KV_RANK, n_head),
                   [kb[h][i][j] for h in range(n_head) for j in range(KV_RANK) for i in range(nope)])
            tensor(b + 'attn_v_b.weight', (KV_RANK, head_dim, n_head), [x for h in range(n_head) for r in vb[h] for x in r])
        else:
            tensor(b + 'attn_kv_b.weight', (KV_RANK, n_head * (nope + head_dim)),
                   [x for h in range(n_head) for r in kb[h] + vb[h] for x in r])
        if DS3 and il >= 1:
            tensor(b + 'exp_probs_b.bias', (N_EXPERT,), [0.2 * math.cos(1.1 * e + il) for e in range(N_EXPERT)])
    if not DS3:  # llama.cpp knows DeepSeek-V2-Lite (q in one matrix) by its 27 layers: the layers repeated
        tensors = repeat_layers(tensors, 27, lambda il: 0 if il == 0 else 1 + (il - 1) % (n_layer - 1))
if target in ('command-r', 'cohere2'):
    tensors = [t for t in tensors if t[0] != 'output.weight' and not t[0].endswith('.ffn_norm.weight')]
half = rope_dim // 2
if target == 'phi3':
    for which, base in (('long', 1.0), ('short', 0.5)):
        f = [1.0 + base * (1 + math.cos(0.9 * i)) * (i + 1) / half for i in range(half)]
        tensors.append(('rope_factors_%s.weight' % which, (half,), 0, struct.pack('<%df' % half, *f)))

if target == 'glm4moe':  # the NextN block: the last layer again, and its own tensors
    last = [t for t in tensors if t[0].startswith('blk.%d.' % (n_layer - 1))]
    for name, ne, typ, blob in last:
        tensors.append(('blk.%d.' % n_layer + name.split('.', 2)[2], ne, typ, blob))
    nb = 'blk.%d.nextn.' % n_layer
    tensors.append((nb + 'eh_proj.weight', (2 * n_embd, n_embd), 0,
                    struct.pack('<%df' % (2 * n_embd * n_embd), *[0.01 * math.sin(0.1 * i) for i in range(2 * n_embd * n_embd)])))
    for nm in ('enorm', 'hnorm', 'shared_head_norm'):
        tensors.append((nb + nm + '.weight', (n_embd,), 0, struct.pack('<%df' % n_embd, *[1.0] * n_embd)))
    for kv in kvs:
        if kv[0] == 'glm4moe.block_count':
            kv[2] = struct.pack('<I', n_layer + 1)
tensors = [t for t in tensors if t[0] != omit]
# MAKE_ARCH_FIM=1: the vocabulary's last three tokens become Qwen's fill-in-the-middle markers (control tokens)
if os.environ.get('MAKE_ARCH_FIM'):
    for kv in kvs:
        if kv[0] == 'tokenizer.ggml.tokens':
            at, n = struct.unpack_from('<IQ', kv[2], 0)
            q, toks = 12, []
            for _ in range(n):
                ln, = struct.unpack_from('<Q', kv[2], q)
                toks.append(kv[2][q + 8:q + 8 + ln])
                q += 8 + ln
            toks[-3:] = [b'<|fim_prefix|>', b'<|fim_suffix|>', b'<|fim_middle|>']
            kv[2] = struct.pack('<IQ', at, n) + b''.join(struct.pack('<Q', len(x)) + x for x in toks)
        if kv[0] == 'tokenizer.ggml.token_type':
            at, n = struct.unpack_from('<IQ', kv[2], 0)
            types = list(struct.unpack_from('<%di' % n, kv[2], 12))
            types[-3:] = [3, 3, 3]
            kv[2] = struct.pack('<IQ', at, n) + struct.pack('<%di' % n, *types)
out = bytearray(b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs)))
for key, t, raw in kvs:
    out += sstr(key) + struct.pack('<I', t) + raw
offset = 0
for name, ne, typ, blob in tensors:
    out += sstr(name) + struct.pack('<I', len(ne)) + struct.pack('<%dQ' % len(ne), *ne) + struct.pack('<IQ', typ, offset)
    offset = (offset + len(blob) + align - 1) // align * align
out += b'\0' * ((-len(out)) % align)
for name, ne, typ, blob in tensors:
    out += blob + b'\0' * ((-len(blob)) % align)
tmp = dst + '.tmp'
open(tmp, 'wb').write(out)
os.replace(tmp, dst)
