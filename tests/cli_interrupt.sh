# Ctrl-C (SIGINT) or SIGTERM during `lowbit quantize` stops it with exit code
# 130 and leaves neither the output nor its temporary file behind; a run that
# is not interrupted writes the output under its final name only at the end.
. "$(dirname "$0")/lib_cli.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 not found (it writes the input GGUF)"; exit 77; }

# An F32 GGUF of 32 matrices of 1024 x 1024 (128 MiB): big enough that
# quantizing it takes a few seconds on one thread.
python3 - "$WORK/big.gguf" <<'PY' || { bad "writing the input GGUF"; finish; exit; }
import random, struct, sys
n_t, rows, cols = 32, 1024, 1024
def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b
hdr = b'GGUF' + struct.pack('<IQQ', 3, n_t, 1)
hdr += s('general.architecture') + struct.pack('<I', 8) + s('llama')
size = rows * cols * 4
for i in range(n_t):
    hdr += s('blk.%d.ffn_up.weight' % i) + struct.pack('<I', 2) + struct.pack('<qq', cols, rows)
    hdr += struct.pack('<IQ', 0, i * size)
hdr += b'\0' * (-len(hdr) % 32)
rng = random.Random(1)
tile = struct.pack('<%df' % 65536, *[rng.gauss(0, 0.02) for _ in range(65536)])
with open(sys.argv[1], 'wb') as f:
    f.write(hdr)
    for _ in range(n_t):
        f.write(tile * (size // len(tile)))
PY
"$LOWBIT" info "$WORK/big.gguf" > /dev/null 2>&1 && ok "input GGUF is valid" || bad "input GGUF is not valid"

# interrupt one quantize run with signal $1, once its temporary file exists
interrupt() {
  local sig=$1 out=$WORK/out-$1.gguf rc i
  "$LOWBIT" quantize -t 1 "$WORK/big.gguf" "$out" Q6_K > "$WORK/$sig.log" 2>&1 &
  local pid=$!
  for i in $(seq 1 400); do
    compgen -G "$out.tmp.*" > /dev/null && break
    sleep 0.05
  done
  compgen -G "$out.tmp.*" > /dev/null && ok "SIG$sig: temporary file while writing, not $out" || bad "SIG$sig: no temporary file seen"
  [ ! -e "$out" ] && ok "SIG$sig: no output under the final name while writing" || bad "SIG$sig: output exists while writing"
  kill -"$sig" "$pid"
  wait "$pid"; rc=$?
  [ $rc -eq 130 ] && ok "SIG$sig: exit code 130" || bad "SIG$sig: exit code $rc, expected 130: $(tail -c 300 "$WORK/$sig.log")"
  grep -qi "interrupted\|cancelled" "$WORK/$sig.log" && ok "SIG$sig: says it was interrupted" || bad "SIG$sig: no message"
  if [ ! -e "$out" ] && ! compgen -G "$out.tmp.*" > /dev/null; then ok "SIG$sig: nothing left behind"
  else bad "SIG$sig: left $(ls "$WORK"/out-"$sig"*)"; fi
}
interrupt INT
interrupt TERM

# not interrupted: the same command completes and leaves only the output
"$LOWBIT" quantize -t 2 "$WORK/big.gguf" "$WORK/done.gguf" Q8_0 > "$WORK/done.log" 2>&1 \
  && ok "uninterrupted quantize succeeds" || bad "uninterrupted quantize: $(tail -n 2 "$WORK/done.log")"
"$LOWBIT" info "$WORK/done.gguf" 2>/dev/null | grep -q "Q8_0 .* 32 tensors" && ok "output holds 32 Q8_0 tensors" \
  || bad "output is not 32 Q8_0 tensors"
compgen -G "$WORK/*.tmp.*" > /dev/null && bad "temporary files left" || ok "no temporary files"
rm -f "$WORK"/*.gguf
finish
