# lowbit tune (QIGen's empirical search, docs/qigen.md): --help, bad flags,
# a quick run on a small shape writes a well-formed tune file (temp name +
# rename, other entries kept), and a run with a malformed or foreign tune
# file warns and carries on with the model's defaults, never crashing.
. "$(dirname "$0")/lib_cli.sh"
need_shared interop/tiny-F32.gguf
F32=$SHARED/interop/tiny-F32.gguf

"$LOWBIT" tune --help > "$WORK/help.txt" 2>&1 && grep -q "usage: lowbit tune" "$WORK/help.txt" \
  && ok "tune --help" || bad "tune --help"
"$LOWBIT" --help | grep -q "tune" && ok "lowbit --help lists tune" || bad "lowbit --help lacks tune"
expect_fail "tune: unknown flag" "unknown option" "$LOWBIT" tune --no-such-flag
expect_fail "tune: not a GQ type" "not a GQ type" "$LOWBIT" tune --types Q4_0
expect_fail "tune: bad shape" "--shape" "$LOWBIT" tune --shape 17x100
level=$("$LOWBIT" info "$F32" 2>/dev/null | sed -n 's/.*(kernels at level \([a-z0-9]*\)).*/\1/p')
if [ "$level" = scalar ] || [ -z "$level" ]; then
  expect_fail "tune at the scalar level" "no generated" "$LOWBIT" tune --types GQ2_G16 -o "$WORK/t.txt"
else
  printf '# kept\nneon GQ3_G32 i8 1 2 1.00\n' > "$WORK/tune.txt"
  "$LOWBIT" tune --types GQ2_G16,GQ4_G128 --shape 32x256 -r 1 -s 0.001 -t 1 -o "$WORK/tune.txt" > "$WORK/tune.out" \
    2> "$WORK/tune.err" && ok "tune runs" || { bad "tune failed"; cat "$WORK/tune.err"; }
  grep -qE "^[a-z0-9]+ GQ2_G16 i8 [0-9]+ [0-9]+ [0-9.]+$" "$WORK/tune.txt" \
    && grep -qE "^[a-z0-9]+ GQ4_G128 i8 [0-9]+ [0-9]+ [0-9.]+$" "$WORK/tune.txt" \
    && ok "tune file has the two types" || { bad "tune file"; cat "$WORK/tune.txt"; }
  grep -q "^neon GQ3_G32 i8 1 2" "$WORK/tune.txt" && ok "other entries kept" || bad "tune dropped an entry"
  [ -z "$(ls "$WORK" | grep tmp)" ] && ok "no temp file left" || bad "temp file left behind"
  expect_fail "tune: unwritable file" "cannot create" "$LOWBIT" tune --types GQ2_G16 --shape 16x128 -r 1 -s 0.001 \
    -o "$WORK/help.txt/t.txt"
  grep -q "GQ4_G128" "$WORK/tune.out" && ok "tune prints its table" || bad "no table"
  "$LOWBIT" quantize "$F32" "$WORK/gq.gguf" GQ4_G128 > /dev/null 2>&1 || bad "quantize GQ4_G128"
  LOWBIT_TUNE_FILE="$WORK/tune.txt" "$LOWBIT" run -m "$WORK/gq.gguf" -p "Once" -n 4 --temp 0 > "$WORK/run.out" \
    2> "$WORK/run.err" && ! grep -q warning "$WORK/run.err" && ok "run with the tune file" \
    || { bad "run with the tune file"; cat "$WORK/run.err"; }
  printf 'avx512 GQ4_G128 i8 two 1\n' > "$WORK/bad.txt"
  LOWBIT_TUNE_FILE="$WORK/bad.txt" "$LOWBIT" run -m "$WORK/gq.gguf" -p "Once" -n 4 --temp 0 > "$WORK/run2.out" \
    2> "$WORK/run2.err" && grep -q "malformed" "$WORK/run2.err" && cmp -s "$WORK/run.out" "$WORK/run2.out" \
    && ok "malformed tune file: warning, same output" || { bad "malformed tune file"; cat "$WORK/run2.err"; }
  head -c 4096 /dev/urandom > "$WORK/junk.txt"
  LOWBIT_TUNE_FILE="$WORK/junk.txt" "$LOWBIT" run -m "$WORK/gq.gguf" -p "Once" -n 4 --temp 0 > "$WORK/run3.out" \
    2> "$WORK/run3.err"
  rc=$?
  [ $rc -eq 0 ] && ok "random bytes as tune file: runs (warning: $(grep -c warning "$WORK/run3.err"))" \
    || bad "random tune file: exit $rc"
fi
finish
