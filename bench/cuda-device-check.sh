#!/usr/bin/env bash
# One short device session for the CUDA kernels (docs/cuda.md), run from the
# repository root on the GPU machine: configure and build build-cuda with
# ninja, run test_cuda (every kernel against the CPU reference) and
# bench/cuda (the table), each step under a timeout inside an overall budget
# of 340 s. Logs go to $OUT when it is set (else build-cuda-logs/): steps.txt
# (each step's exit code and seconds), nvidia-smi.txt, configure.log,
# build.log, test_cuda.log, test_cuda_seeds.log, bench_cuda.log. Exit code 0 only if the build
# and the test passed and the bench ran.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${OUT:-build-cuda-logs}
mkdir -p "$logs"
deadline=$((SECONDS + 340))
status=0
. bench/cuda-steps.sh

: >"$logs/steps.txt"
{ nvidia-smi; nvcc --version; cmake --version | head -1; ninja --version; nproc; } >"$logs/nvidia-smi.txt" 2>&1
head -12 "$logs/nvidia-smi.txt"

# a build-cuda configured elsewhere (another generator or checkout path) would stop cmake
if [ -f build-cuda/CMakeCache.txt ] && { ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' build-cuda/CMakeCache.txt ||
     ! grep -qx "CMAKE_CACHEFILE_DIR:INTERNAL=$PWD/build-cuda" build-cuda/CMakeCache.txt; }; then
  rm -rf build-cuda
fi
gen=(-G Ninja)
command -v ninja >/dev/null 2>&1 || gen=()

if step configure 60 cmake -S . -B build-cuda "${gen[@]}" -DLOWBIT_CUDA=ON -DCMAKE_BUILD_TYPE=Release &&
   step build 220 cmake --build build-cuda -j"$(nproc)" --target test_cuda test_cuda_seeds bench_cuda; then
  grep -i "warning" "$logs/build.log" | head -20
  # the test needs ~10-30 s of CPU reference on 16 cores; the bench ~10-20 s
  step test_cuda 120 ./build-cuda/tests/test_cuda || status=1
  grep -E "^(device|FAIL|test_cuda|no CUDA)" "$logs/test_cuda.log" | head -40
  step test_cuda_seeds 90 ./build-cuda/tests/test_cuda_seeds || status=1
  grep -E "^(device|FAIL|test_cuda|no CUDA)" "$logs/test_cuda_seeds.log" | head -40
  step bench_cuda 90 ./build-cuda/bench/cuda || status=1
  cat "$logs/bench_cuda.log"
else
  status=1
  tail -40 "$logs/configure.log" "$logs/build.log" 2>/dev/null
fi
echo "== steps"
cat "$logs/steps.txt"
exit $status
