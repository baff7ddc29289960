#!/usr/bin/env bash
# Cross-build lowbit for 64-bit Arm (Release, into build-arm) and run the test
# suite under qemu-user, on three emulated CPUs so every dispatch level runs:
#   max          neon + dotprod + i8mm: the C tests and the CLI scripts
#   neoverse-n1  neon + dotprod (no i8mm): the tests of the Arm kernels, at
#                dotprod alone
#   cortex-a53   neon only: the same at neon
# LOWBIT_EXPECT_ISA tells tests/test_kernels_arm.c which level the runtime
# detection (getauxval, kernels/cpu.c) must report on each CPU.
#
# Emulation is 10-50x slower than the host. To stay within ~8 minutes on 2
# cores, by default (each skip is printed):
#  - CLI scripts: only those in emu_cli (the others quantize or run real
#    models: 4 to 15+ minutes each emulated);
#  - C tests: those in emu_skip are skipped: compute-heavy tests without
#    Arm kernels of their own (test_cb), and ABQ's calibration search over
#    the tiny model (test_abq_search: 300 s emulated on -cpu max, over 200 s
#    on each fallback CPU, the longest test of every run; test_abq_dc runs
#    two such searches, 135 s emulated on -cpu max; a search is the same
#    code on every CPU, run natively at every x86 level, and test_abq
#    holds the ABQ kernels of every Arm level to the reference), and
#    test_gptq (196 s emulated on -cpu max, the longest there: GPTQ is
#    portable C over the NEON SGEMM, which test_sgemm holds to its
#    reference on -cpu max);
#  - the fallback CPUs run only fallback_tests, the tests of the Arm kernels
#    (and of the level detection), each at the CPU's own level alone
#    (LB_TEST_LEVELS=top, tests/test_matmul_util.h): -cpu max holds every
#    level to the reference; a fallback CPU shows that a level's kernels run
#    without the levels above it (no stray dotprod or i8mm instruction) and
#    that detection reports that level. Sweeping every level and running
#    the portable tests there took 169 s and 132 s of CI's ~15 Arm minutes
#    (2026-12-02).
#  - cli_perplexity leaves out its -b 7 and self-KLD passes under qemu.
# --quick runs only cli_errors of the CLI scripts; --full runs everything
# everywhere, every level on every CPU (about 25 minutes on 2 cores).
# Usage: scripts/test-arm.sh [--quick | --full]
# Env: LOWBIT_ARM_JOBS (build/test parallelism, default nproc),
#      LOWBIT_ARM_BUILD (build dir, default build-arm).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-default}
case $mode in default | --quick | --full) ;; *) echo "usage: $0 [--quick | --full]" >&2; exit 2 ;; esac
emu_cli="cli_errors cli_interop cli_perplexity"
emu_skip="test_cb test_abq_search test_abq_dc test_gptq"
fallback_tests="test_kernels_arm test_kernels_arm_kq test_repack_kernels test_kq_repack test_kx_repack test_mx_kernels
                test_abq test_bcq test_fgemm test_qigen test_matrix_rows"
fallback_levels=top
[ "$mode" = --quick ] && emu_cli="cli_errors"
[ "$mode" = --full ] && emu_cli="all" && emu_skip="" && fallback_tests="" && fallback_levels=""

need=""
for p in cmake gcc-aarch64-linux-gnu libgomp1-arm64-cross qemu-user; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  echo "installing:$need"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $need >/dev/null
fi

build=${LOWBIT_ARM_BUILD:-build-arm}
jobs=${LOWBIT_ARM_JOBS:-$(nproc)}
sysroot=/usr/aarch64-linux-gnu
unset LOWBIT_ISA # the tests pick levels themselves

echo "== Arm cross build ($build)"
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
# The library, CLI and test programs first: the tests run even if a program
# outside them (bench/) fails to build for Arm, which is reported at the end.
targets="lowbit_cli $(cd tests && ls test_*.c | sed 's/\.c$//' | tr '\n' ' ')"
if ! cmake --build "$build" -j"$jobs" --target $targets >"$build/build.log" 2>&1; then
  grep -E -B2 -A6 'error|Error' "$build/build.log" | head -n 60
  echo "FAILED: Arm cross build of the library, CLI and tests (log: $build/build.log)"
  exit 1
fi
grep -E 'warning:' "$build/build.log" | sort -u | head -n 20 || true

# The CLI scripts call the lowbit binary directly (ctest's emulator only wraps
# test programs), so they get a wrapper that runs it under qemu.
wrapper="$PWD/$build/lowbit-qemu"
printf '#!/bin/sh\nexec qemu-aarch64 -L %s %s "$@"\n' "$sysroot" "$PWD/$build/lowbit" >"$wrapper"
chmod +x "$wrapper"
shared=$(sed -n 's/^LOWBIT_SHARED_DIR:PATH=//p' "$build/CMakeCache.txt")

failed=()
summary=()
if cmake --build "$build" -j"$jobs" >"$build/build-all.log" 2>&1; then
  summary+=("full build (bench/ included): ok")
else
  failed+=("full build for aarch64 (bench/?)")
  summary+=("full build: FAILED, see $build/build-all.log: $(grep -m1 -E 'error' "$build/build-all.log")")
fi

# ctest -E pattern: the CLI scripts (run separately) and the given tests
exclude_pattern() {
  local p='^cli_' t
  for t in "$@"; do p="$p|^$t\$"; done
  echo "$p"
}

# ctest -R pattern: exactly the given tests
include_pattern() {
  local p="" t
  for t in "$@"; do p="$p${p:+|}^$t\$"; done
  echo "$p"
}

run_c_tests() { # cpu expected-level levels(top or empty: all) what ctest-filter-args...
  local cpu=$1 isa=$2 levels=$3 what=$4 log="$build/ctest-$1.log" t0=$SECONDS
  shift 4
  echo "== C tests under qemu -cpu $cpu (expect $isa${levels:+, that level alone})${what:+; $what}"
  if LB_TEST_LEVELS=$levels QEMU_CPU=$cpu LOWBIT_EXPECT_ISA=$isa ctest --test-dir "$build" "$@" \
       --output-on-failure -j"$jobs" >"$log" 2>&1; then
    summary+=("-cpu $cpu ($isa${levels:+ alone}): $(grep -E 'tests passed' "$log") [$((SECONDS - t0))s]${what:+, $what}")
  else
    failed+=("C tests under -cpu $cpu")
    summary+=("-cpu $cpu ($isa): FAILED, see $log")
  fi
  grep -E 'Passed|Failed|Skipped|Not Run|tests passed' "$log" | sed 's/^/  /'
}

run_cli_tests() { # cpu
  local cpu=$1
  for script in tests/cli_*.sh; do
    local name t0=$SECONDS rc=0
    name=$(basename "$script" .sh)
    if [ "$emu_cli" != all ] && [[ " $emu_cli " != *" $name "* ]]; then
      echo "SKIP: $name: too slow under emulation (--full runs it)"
      summary+=("-cpu $cpu $name: skipped, too slow emulated (--full runs it)")
      continue
    fi
    echo "== $name under qemu -cpu $cpu"
    QEMU_CPU=$cpu bash "$script" "$wrapper" "$shared" "$PWD/$build/tests/$name.work" \
      >"$build/$name-$cpu.log" 2>&1 || rc=$?
    tail -n 1 "$build/$name-$cpu.log" | sed 's/^/  /'
    case $rc in
      0) summary+=("-cpu $cpu $name: passed [$((SECONDS - t0))s]") ;;
      77) summary+=("-cpu $cpu $name: skipped ($(grep -m1 SKIP "$build/$name-$cpu.log"))") ;;
      *) failed+=("$name under -cpu $cpu"); summary+=("-cpu $cpu $name: FAILED, see $build/$name-$cpu.log") ;;
    esac
  done
}

run_c_tests max i8mm "" "${emu_skip:+skipped under emulation: $emu_skip}" -E "$(exclude_pattern $emu_skip)"
run_cli_tests max
for cpu in neoverse-n1:dotprod cortex-a53:neon; do
  if [ -n "$fallback_tests" ]; then
    run_c_tests "${cpu%:*}" "${cpu#*:}" "$fallback_levels" "the Arm kernels' tests only" -R "$(include_pattern $fallback_tests)"
  else
    run_c_tests "${cpu%:*}" "${cpu#*:}" "" "" -E "$(exclude_pattern)"
  fi
done

echo "== Arm summary"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all Arm test runs passed"
