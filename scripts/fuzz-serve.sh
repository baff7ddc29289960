#!/usr/bin/env bash
# Builds lowbit serve's request-parser fuzzer (clang, libFuzzer + ASan +
# UBSan; needs libcjson-dev) in build-fuzz and runs it for a bounded time:
# scripts/fuzz-serve.sh [SECONDS]. Exits non-zero on a crash, leak or
# sanitizer report; the reproducer is left in build-fuzz/ (crash-*, leak-*).
set -euo pipefail
seconds=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
build="${LOWBIT_FUZZ_BUILD:-$root/build-fuzz}"
corpus="$root/fuzz/corpus-serve" # grows between runs; ignored by git

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DLOWBIT_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j2 --target fuzz_serve_request
mkdir -p "$corpus"
cd "$build"
exec "$build/fuzz/fuzz_serve_request" "$corpus" "$root/fuzz/seeds-serve" \
     -dict="$root/fuzz/serve.dict" -max_total_time="$seconds" -max_len=4096 \
     -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
