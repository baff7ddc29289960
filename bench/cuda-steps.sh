# Sourced by the device-session scripts (bench/cuda-device-check.sh,
# bench/cuda-forward-check.sh), which set $logs (a folder) and $deadline
# (in $SECONDS' terms).
#
# step NAME CAP_SECONDS CMD...: runs CMD with its output in $logs/NAME.log,
# for at most CAP seconds and never past the deadline; records rc and time
# in $logs/steps.txt.
step() {
  local name=$1 cap=$2
  shift 2
  local left=$((deadline - SECONDS))
  [ "$cap" -gt "$left" ] && cap=$left
  if [ "$cap" -lt 5 ]; then
    echo "$name: skipped, out of time" | tee -a "$logs/steps.txt"
    return 124
  fi
  local t0=$SECONDS rc
  timeout --kill-after=5 "$cap" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  echo "$name: rc $rc in $((SECONDS - t0)) s (limit $cap s)" | tee -a "$logs/steps.txt"
  return $rc
}

# nvcc where the CUDA toolkit is installed but not on PATH
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
