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
# The architecture tests (cli_qwen3, cli_phi3, cli_gemma2): stories260K and
# the scored text in ../shared, python3 for tests/make_arch.py (which $MAKE
# names); $TEXT the text.
arch_test_setup() {
  need_shared models/stories260K-f32.gguf
  need_shared data/TinyStories-valid.head31195.txt
  command -v python3 >/dev/null || { echo "SKIP: python3 not found (tests/make_arch.py writes the files)"; exit 77; }
  MAKE=$(dirname "$0")/make_arch.py
  TEXT=$SHARED/data/TinyStories-valid.head31195.txt
}
# `lowbit info -a MODEL` names ARCH and lists TENSOR: arch_info MODEL ARCH TENSOR WHAT
arch_info() {
  "$LOWBIT" info -a "$1" > "$WORK/info.txt" 2>&1 && grep -q "general.architecture *= \"$2\"" "$WORK/info.txt" \
    && grep -q "$3" "$WORK/info.txt" && ok "info: $4" || bad "info: $(head -n 5 "$WORK/info.txt")"
}
# 60 greedy tokens after "Once upon a time" (context 128) are EXPECTED, the
# text PEER (default ik_llama.cpp) gave: greedy_is MODEL EXPECTED [PEER]
greedy_is() {
  local out
  out=$("$LOWBIT" run -m "$1" -p "Once upon a time" -n 60 --temp 0 -c 128 -t 2 2>/dev/null)
  [ "$out" = "$2" ] && ok "greedy 60 tokens as ${3:-ik_llama.cpp}'s" || bad "greedy: '$out'"
}
# The final PPL of `lowbit perplexity -m MODEL -c CTX` over $TEXT, CHUNKS
# chunks (default 8; the architecture tests, cli_qwen3 / cli_phi3 /
# cli_gemma2): ppl_at MODEL CTX [CHUNKS [FLAGS...]]
# Expected figures are those of exact integer dot products (every level but
# AMX's bf16 and 256-chunk GEMMs, which round their operands: 0.4 % of PPL on
# these models), so on an AMX machine the tile GEMM used is the per-block
# int8 one, unless the caller sets LOWBIT_CPU_OFF itself.
ppl_at() {
  local f=$1 c=$2 k=${3:-8}
  shift 2; [ $# -gt 0 ] && shift # the rest: more perplexity flags (-ctk f16 ...)
  LOWBIT_CPU_OFF="${LOWBIT_CPU_OFF-amx-bf16,amx-q8}" "$LOWBIT" perplexity -m "$f" -f "$TEXT" -c "$c" --chunks "$k" -t 2 "$@" 2>&1 |
    sed -n 's/^Final estimate: PPL = \([0-9.]*\).*/\1/p'
}
# A check that VALUE is within REL (relative) of EXPECTED: near WHAT VALUE EXPECTED REL
near() {
  if [ -n "$2" ] && awk -v p="$2" -v e="$3" -v r="$4" 'BEGIN { d = p / e - 1; exit !(d < r && d > -r) }'; then
    ok "$1: PPL $2 (expected $3 within $4)"
  else
    bad "$1: PPL '$2', expected $3 within $4"
  fi
}
