#!/usr/bin/env bash
# Builds the CUDA kernels (-DLOWBIT_CUDA=ON, in build-cuda or $LOWBIT_CUDA_BUILD)
# and runs bench/cuda: each kernel (Q4_0, Q8_0, Q4_K, MX, cuBLAS fp16) at seed
# 002's shapes, M = 1, 16, 512, as a Markdown table of times, GB/s, share of
# the measured memory bandwidth and speedup over cuBLAS fp16 (docs/cuda.md).
# Arguments go to the bench: --reps N, --shapes NxK,..., --m M,..., --bw-mib N.
# Needs nvcc (CUDA 12+) and a GPU; sm_90 unless CUDAARCHS says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOWBIT_CUDA_BUILD:-build-cuda}
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
gen=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
arch=()
if [ -n "${CUDAARCHS:-}" ]; then arch=(-DCMAKE_CUDA_ARCHITECTURES="$CUDAARCHS"); fi
cmake -S . -B "$build" "${gen[@]}" "${arch[@]}" -DLOWBIT_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_cuda >/dev/null
"$build/bench/cuda" "$@"
