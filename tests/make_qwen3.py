# A Qwen3-architecture GGUF made from a llama- or qwen2-architecture one, for
# tests/cli_qwen3.sh: the metadata keys move from "ARCH." to "qwen3.", q/k/v
# biases are dropped (Qwen 3 has none; llama.cpp refuses unused tensors), and
# every layer gains the two per-head RMS norms Qwen 3 applies to q and k
# before RoPE (attn_q_norm / attn_k_norm, head_dim floats each, fixed
# non-trivial values). Qwen 3 rotates q and k by NeoX pairs where llama takes
# interleaved ones, so the result is another model, not the input's: its
# outputs are checked against llama.cpp-family engines (ik_llama.cpp), not
# against the llama original. Standard library only.
#   python3 tests/make_qwen3.py IN.gguf OUT.gguf [OMIT]
# OMIT: a tensor name to leave out (a malformed file for the loader's errors).
import math, os, struct, sys

src, dst = sys.argv[1], sys.argv[2]
omit = sys.argv[3] if len(sys.argv) > 3 else None
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


def sstr(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


for kv in kvs:
    if kv[0].startswith(arch + '.'):
        kv[0] = 'qwen3.' + kv[0][len(arch) + 1:]
    if kv[0] == 'general.architecture':
        kv[2] = sstr('qwen3')

# tensors: the input's (any type: each one's bytes run to the next one's
# offset), less the biases, then per layer the two norms (F32)
tensors = []
ends = sorted(off for _, _, _, off in infos) + [len(data) - base]
for name, ne, typ, off in infos:
    if name.endswith(('attn_q.bias', 'attn_k.bias', 'attn_v.bias')):
        continue
    end = min(e for e in ends if e > off)
    tensors.append((name, ne, typ, data[base + off:base + end]))
for il in range(n_layer):
    for which, phase in (('q', 0.0), ('k', 2.0)):
        w = [1.0 + 0.9 * math.sin(1.3 * i + 0.7 * il + phase) for i in range(head_dim)]
        tensors.append(('blk.%d.attn_%s_norm.weight' % (il, which), (head_dim,), 0, struct.pack('<%df' % head_dim, *w)))

tensors = [t for t in tensors if t[0] != omit]
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
