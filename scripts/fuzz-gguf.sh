#!/usr/bin/env bash
# Builds the GGUF reader fuzzer (clang, libFuzzer + ASan + UBSan) in
# build-fuzz and runs it for a bounded time: scripts/fuzz-gguf.sh [SECONDS]
# Exits non-zero if the fuzzer finds a crash, leak or sanitizer report; the
# reproducer is left in build-fuzz/ (crash-*, leak-*, timeout-*).
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
corpus="$root/fuzz/corpus-gguf" # grows between runs; ignored by git

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DLOWBIT_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j2 --target fuzz_gguf
mkdir -p "$corpus"
cd "$build"
# New inputs go to the first directory (corpus); the seeds are only read.
exec "$build/fuzz/fuzz_gguf" "$corpus" "$root/fuzz/seeds" \
     -dict="$root/fuzz/gguf.dict" -max_total_time="$seconds" -max_len=8192 \
     -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
