#!/usr/bin/env bash
# One short device session for the GPU forward pass (docs/cuda.md, "The
# forward pass on the GPU"), run from the repository root on the GPU
# machine: build, test_cuda_forward (GPU logits against the CPU's),
# test_cuda (quick), then `lowbit bench --device cuda` on the TinyLlama shape
# for each GPU type, and a perplexity / greedy-run comparison of
# stories260K on the CPU and the GPU. Each step under a timeout inside an
# overall budget (LB_BUDGET_S, default 480 s). Logs go to $OUT (else
# build-cuda-logs/): steps.txt and one log per step.
#
# The device machine gets the working tree only, not ../shared: copy what the
# model steps read into .dev/ (ignored; name it in the run's carry):
#   mkdir -p .dev && cp ../shared/models/stories260K-f32.gguf ../shared/data/TinyStories-valid.head31195.txt .dev/
# LB_TYPES (default below) and LB_REPS (3) set the bench rows.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${OUT:-build-cuda-logs}
mkdir -p "$logs"
deadline=$((SECONDS + ${LB_BUDGET_S:-480}))
status=0
. bench/cuda-steps.sh

: >"$logs/steps.txt"
{ nvidia-smi; nvcc --version; nproc; lscpu | grep -m1 'Model name'; } >"$logs/machine.txt" 2>&1
# a build-cuda configured elsewhere (another generator or checkout path) would stop cmake
if [ -f build-cuda/CMakeCache.txt ] && { ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' build-cuda/CMakeCache.txt ||
     ! grep -qx "CMAKE_CACHEFILE_DIR:INTERNAL=$PWD/build-cuda" build-cuda/CMakeCache.txt; }; then
  rm -rf build-cuda
fi
gen=(-G Ninja)
command -v ninja >/dev/null 2>&1 || gen=()
if ! { step configure 60 cmake -S . -B build-cuda "${gen[@]}" -DLOWBIT_CUDA=ON -DCMAKE_BUILD_TYPE=Release &&
       step build 240 cmake --build build-cuda -j"$(nproc)" --target lowbit_cli test_cuda_forward test_cuda; }; then
  tail -30 "$logs/configure.log" "$logs/build.log" 2>/dev/null
  exit 1
fi
model=.dev/stories260K-f32.gguf
text=.dev/TinyStories-valid.head31195.txt
LOWBIT_TEST_MODEL=$model step test_cuda_forward 120 ./build-cuda/tests/test_cuda_forward || status=1
cat "$logs/test_cuda_forward.log"
LOWBIT_CUDA_TEST_QUICK=1 step test_cuda 60 ./build-cuda/tests/test_cuda || status=1
grep -E "^(device|FAIL|test_cuda)" "$logs/test_cuda.log" | head -20

if [ -f "$model" ]; then
  for dev in cpu cuda; do
    step "ppl_$dev" 40 ./build-cuda/lowbit perplexity -m "$model" -f "$text" -c 128 --device $dev
    grep -iE "ppl|perplexity|error" "$logs/ppl_$dev.log" | tail -3
    step "run_$dev" 20 ./build-cuda/lowbit run -m "$model" -p "Once upon a time" -n 48 --temp 0 --device $dev
    head -c 400 "$logs/run_$dev.log"; echo
  done
  cmp -s <(grep -m1 '^Once' "$logs/run_cpu.log") <(grep -m1 '^Once' "$logs/run_cuda.log") && echo "greedy text: same on cpu and cuda" ||
    echo "greedy text: DIFFERS between cpu and cuda"
fi

for t in ${LB_TYPES:-Q4_0 Q8_0 Q4_K F16 MX ABQ_W2 BCQ3_G128}; do
  step "bench_$t" 75 ./build-cuda/lowbit bench --synthetic tinyllama-1.1b --type "$t" --device cuda \
    -p 512 -n 128 -r "${LB_REPS:-3}"
  grep -E "^\| |device:|^cuda:|tg128 reads|pp512:|error" "$logs/bench_$t.log"
done
# decode launch by launch, for the CUDA graph's share (docs/cuda.md)
LOWBIT_CUDA_GRAPHS=0 step bench_Q4_0_nographs 40 ./build-cuda/lowbit bench --synthetic tinyllama-1.1b --type Q4_0 \
  --device cuda -p 0 -n 128 -r "${LB_REPS:-3}"
grep -E "^\| |^cuda:|tg128 reads|error" "$logs/bench_Q4_0_nographs.log"
echo "== steps"
cat "$logs/steps.txt"
exit $status
