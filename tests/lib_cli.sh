# Sourced by tests/cli_*.sh: $1 = lowbit binary, $2 = ../shared, $3 = work dir.
set -u
LOWBIT=$1
SHARED=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
fails=0
checks=0
ok() { checks=$((checks + 1)); echo "ok: $*"; }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*"; }
# expect_fail "description" pattern cmd...: the command must exit non-zero,
# print an error matching pattern, and not crash (exit code < 128).
expect_fail() {
  local what=$1 pat=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then bad "$what: succeeded"; return; fi
  if [ $rc -ge 128 ]; then bad "$what: crashed (exit $rc)"; echo "$out"; return; fi
  if ! grep -qiE -- "$pat" <<<"$out"; then bad "$what: message '$out' lacks /$pat/"; return; fi
  ok "$what (exit $rc): $(head -n1 <<<"$out")"
}
finish() {
  echo "$((checks - fails)) passed, $fails failed"
  [ $fails -eq 0 ]
}
need_shared() {
  [ -f "$SHARED/$1" ] || { echo "SKIP: $SHARED/$1 not found"; exit 77; }
}
