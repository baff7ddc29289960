#!/usr/bin/env bash
# Builds the safetensors header fuzzer (clang, libFuzzer + ASan + UBSan) in
# build-fuzz and runs it for a bounded time: scripts/fuzz-safetensors.sh [SECONDS]
# Exits non-zero if the fuzzer finds a crash, leak or sanitizer report; the
# reproducer is left in build-fuzz/ (crash-*, leak-*, timeout-*).
# BUILD=DIR builds elsewhere (default build-fuzz, shared with fuzz-gguf.sh).
set -euo pipefail
seconds=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-fuzz}
corpus="$root/fuzz/corpus-safetensors" # grows between runs; ignored by git

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DLOWBIT_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j2 --target fuzz_safetensors
mkdir -p "$corpus"
cd "$build"
exec "$build/fuzz/fuzz_safetensors" "$corpus" "$root/fuzz/seeds-safetensors" \
     -dict="$root/fuzz/safetensors.dict" -max_total_time="$seconds" -max_len=4096 \
     -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
