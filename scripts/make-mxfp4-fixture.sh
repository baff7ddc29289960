#!/usr/bin/env bash
# Rebuilds tests/data/mxfp4/ (the MXFP4 interop fixture, tests/data/README.md)
# from the peer ik_llama.cpp build (llama.cpp b4748 predates MXFP4), so the
# expected bytes come from the peer and never from lowbit:
#   1. llama-quantize --pure ../shared/interop/tiny-F32.gguf -> MXFP4 (every
#      matrix; its rows of 256 and 768 are whole 32-weight blocks);
#   2. sha256sum of every tensor's data (tensors.sha256: "<sha256>  <tensor> <ggml type>"),
#      read with a few lines of Python from the GGUF's tensor table;
#   3. SOURCE: which build made them (sha256 of llama-quantize).
# Usage: scripts/make-mxfp4-fixture.sh [IK_LLAMA_CPP_DIR]   (default ~/.cache/lowbit-peers/ik_llama.cpp)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peer=${1:-$HOME/.cache/lowbit-peers/ik_llama.cpp}
src=$root/../shared/interop/tiny-F32.gguf
out=$root/tests/data/mxfp4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$peer/build/bin/llama-quantize" --pure "$src" "$tmp/tiny-MXFP4.gguf" MXFP4 > "$tmp/quantize.log" 2>&1 \
  || { cat "$tmp/quantize.log"; exit 1; }
mkdir -p "$out"
python3 - "$tmp/tiny-MXFP4.gguf" > "$out/tensors.sha256.tmp" <<'PY'
import hashlib, struct, sys
d = open(sys.argv[1], 'rb').read()
pos = 4
version, n_t, n_kv = struct.unpack_from('<IQQ', d, pos); pos += 20
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(t):
    global pos
    if t in FIXED: pos += FIXED[t]
    elif t == 8: n, = struct.unpack_from('<Q', d, pos); pos += 8 + n
    else:
        et, n = struct.unpack_from('<IQ', d, pos); pos += 12
        for _ in range(n): skip(et)
align = 32
for _ in range(n_kv):
    n, = struct.unpack_from('<Q', d, pos); key = d[pos + 8:pos + 8 + n].decode(); pos += 8 + n
    t, = struct.unpack_from('<I', d, pos); pos += 4
    if key == 'general.alignment': align, = struct.unpack_from('<I', d, pos)
    skip(t)
GEO = {0: (1, 4), 39: (32, 17)}
infos = []
for _ in range(n_t):
    n, = struct.unpack_from('<Q', d, pos); name = d[pos + 8:pos + 8 + n].decode(); pos += 8 + n
    nd, = struct.unpack_from('<I', d, pos); pos += 4
    ne = struct.unpack_from('<%dQ' % nd, d, pos); pos += 8 * nd
    typ, off = struct.unpack_from('<IQ', d, pos); pos += 12
    infos.append((name, ne, typ, off))
base = (pos + align - 1) // align * align
for name, ne, typ, off in infos:
    blck, size = GEO[typ]
    count = 1
    for x in ne: count *= x
    data = d[base + off:base + off + count // blck * size]
    print('%s  %s %d' % (hashlib.sha256(data).hexdigest(), name, typ))
PY
mv "$out/tensors.sha256.tmp" "$out/tensors.sha256"
{
  echo "made by scripts/make-mxfp4-fixture.sh with the ik_llama.cpp build in $peer"
  echo "llama-quantize sha256 $(sha256sum "$peer/build/bin/llama-quantize" | cut -d' ' -f1)"
  grep -m1 -i "build" "$tmp/quantize.log" || true
} > "$out/SOURCE"
echo "wrote $out/tensors.sha256 ($(wc -l < "$out/tensors.sha256") tensors)"
