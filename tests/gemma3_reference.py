# An independent float64 forward pass of a Gemma 3 text model (numpy), for
# checking lowbit's: reads an F32 GGUF (`lowbit quantize IN OUT F32`) and the
# token ids of one chunk, and prints the chunk's perplexity by llama.cpp's
# method (BOS first, second half scored), as `lowbit perplexity -c N --chunks 1`
# computes it. Written from the Gemma 3 architecture (Hugging Face
# transformers' Gemma3 text model, with llama.cpp's GGUF conventions: norm
# weights already include the +1), sharing no code with lowbit.
#   python3 tests/gemma3_reference.py MODEL-F32.gguf IDS.txt N_CTX
# IDS.txt: whitespace-separated token ids (at least N_CTX), BOS first.
import struct, sys, numpy as np
path, ids_path, n_ctx = sys.argv[1], sys.argv[2], int(sys.argv[3])
f = open(path, 'rb'); buf = np.memmap(path, dtype=np.uint8, mode='r')
def rd(fmt): return struct.unpack('<' + fmt, f.read(struct.calcsize('<' + fmt)))
def rstr(): n, = rd('Q'); return f.read(n).decode('utf-8', 'replace')
SZ = {0:'B',1:'b',2:'H',3:'h',4:'I',5:'i',6:'f',7:'?',10:'Q',11:'q',12:'d'}
def rval(t):
    if t == 8: return rstr()
    if t == 9:
        at, n = rd('IQ')
        return [rval(at) for _ in range(n)] if at in (8, 9) else list(rd('%d%s' % (n, SZ[at])))
    return rd(SZ[t])[0]
assert f.read(4) == b'GGUF'
ver, nt, nkv = rd('IQQ')
kv = {}
for _ in range(nkv):
    k = rstr(); t, = rd('I'); kv[k] = rval(t)
tinfo = {}
for _ in range(nt):
    name = rstr(); nd, = rd('I'); ne = rd('%dQ' % nd); typ, off = rd('IQ'); tinfo[name] = (ne, typ, off)
align = kv.get('general.alignment', 32)
data0 = (f.tell() + align - 1) // align * align
def T(name):
    ne, typ, off = tinfo[name]; assert typ == 0, name
    n = int(np.prod(ne)); a = np.frombuffer(buf, dtype='<f4', count=n, offset=data0 + off)
    return a.reshape(tuple(reversed(ne))).astype(np.float64)
A = 'gemma3.'
D = kv[A+'embedding_length']; L = kv[A+'block_count']; H = kv[A+'attention.head_count']
HKV = kv[A+'attention.head_count_kv']; HD = kv[A+'attention.key_length']; eps = kv[A+'attention.layer_norm_rms_epsilon']
base_g = kv[A+'rope.freq_base']; swa = kv.get(A+'attention.sliding_window', 0)
base_l = kv.get(A+'rope.freq_base_swa', 10000.0)  # local (sliding-window) layers
pattern = kv.get(A+'attention.sliding_window_pattern', 6)  # every 6th layer is global
ids = [int(x) for x in open(ids_path).read().split()][:n_ctx]
assert len(ids) == n_ctx
ids[0] = kv['tokenizer.ggml.bos_token_id']
emb = np.frombuffer(buf, dtype='<f4', count=D * tinfo['token_embd.weight'][0][1], offset=data0 + tinfo['token_embd.weight'][2]).reshape(-1, D)
x = emb[ids].astype(np.float64) * np.sqrt(D)
def rms(v, w): return v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * w
pos = np.arange(n_ctx)
def rope(v, base):  # neox: pairs (i, i + HD/2); v: [n, heads, HD]
    half = HD // 2
    inv = base ** (-np.arange(half) * 2.0 / HD)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = v[..., :half], v[..., half:]
    return np.concatenate([a * c - b * s, a * s + b * c], -1)
def gelu(v): return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
causal = pos[None, :] <= pos[:, None]
for il in range(L):
    p = 'blk.%d.' % il
    local = swa > 0 and (il + 1) % pattern != 0
    h = rms(x, T(p+'attn_norm.weight'))
    q = (h @ T(p+'attn_q.weight').T).reshape(n_ctx, H, HD)
    k = (h @ T(p+'attn_k.weight').T).reshape(n_ctx, HKV, HD)
    v = (h @ T(p+'attn_v.weight').T).reshape(n_ctx, HKV, HD)
    q = rms(q, T(p+'attn_q_norm.weight')); k = rms(k, T(p+'attn_k_norm.weight'))
    b = base_l if local else base_g
    q = rope(q, b) / np.sqrt(HD); k = rope(k, b)  # query_pre_attn_scalar = head_dim (not 27B)
    mask = causal & ((pos[:, None] - pos[None, :]) < swa) if local else causal
    out = np.zeros((n_ctx, H, HD))
    for hh in range(H):
        kh = hh // (H // HKV)
        sc = q[:, hh, :] @ k[:, kh, :].T
        sc = np.where(mask, sc, -np.inf)
        sc -= sc.max(-1, keepdims=True); pr = np.exp(sc); pr /= pr.sum(-1, keepdims=True)
        out[:, hh, :] = pr @ v[:, kh, :]
    a = out.reshape(n_ctx, H * HD) @ T(p+'attn_output.weight').T
    x = x + rms(a, T(p+'post_attention_norm.weight'))
    h = rms(x, T(p+'ffn_norm.weight'))
    ff = (gelu(h @ T(p+'ffn_gate.weight').T) * (h @ T(p+'ffn_up.weight').T)) @ T(p+'ffn_down.weight').T
    x = x + rms(ff, T(p+'post_ffw_norm.weight'))
x = rms(x, T('output_norm.weight'))
first = n_ctx // 2
nll = 0.0; cnt = 0
E = emb.astype(np.float64)
for j in range(first, n_ctx - 1, 64):
    jj = range(j, min(j + 64, n_ctx - 1))
    lg = x[list(jj)] @ E.T
    m = lg.max(-1, keepdims=True); lse = (m[:, 0] + np.log(np.exp(lg - m).sum(-1)))
    for r, jx in enumerate(jj):
        nll += lse[r] - lg[r, ids[jx + 1]]; cnt += 1
print("reference PPL = %.6f over %d tokens" % (np.exp(nll / cnt), cnt))
