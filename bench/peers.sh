#!/usr/bin/env bash
# lowbit against its two peers on the same GGUF files: `lowbit bench` and the
# llama-bench of ik_llama.cpp (without and with run-time repack, the better
# kept) and of llama.cpp b4748, same threads / tokens / repetitions, one
# markdown table of t/s with ratios. Peers come from ../shared/peers/build.sh.
# Each tool runs alone, one after the other, with no NUMA option: the numbers
# are for the same cores, not for a race between the tools.
set -uo pipefail

usage() {
  cat <<'EOF'
usage: bench/peers.sh [options] [MODEL.gguf ...]

  -t N             threads for every tool (default 2)
  -p N             prompt tokens of the pp test (default 512; 0 = none)
  -n N             generated tokens of the tg test (default 128; 0 = none)
  -r N             repetitions (default 3)
  --rounds N       run every tool N times per file, interleaved (lowbit, ik
                   -rtr 0, ik -rtr 1, llama.cpp, then again), and report per
                   test the median of each tool's rounds and the lowbit/ik
                   ratio of each round (default 1). This VM-friendly mode
                   puts every tool under the same minutes of memory speed.
  --peers LIST     ik,llama.cpp (default), ik, llama.cpp or none
  --lowbit PATH    lowbit binary (default $LOWBIT, else build/lowbit)
  --peers-dir DIR  where build.sh put the peers (default $LOWBIT_PEERS,
                   else ~/.cache/lowbit-peers)

Default models: PEERS_DIR/models/synth-1.1b-{Q4_K_M,Q3_K_M,Q2_K,Q6_K,IQ4_XS,Q4_0}.gguf,
~/.cache/lowbit/gemma-3-270m-q4_k_m.gguf and
~/.cache/lowbit/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (scripts/get-model.sh) when present.
A missing synth-1.1b-TYPE.gguf is made with llama.cpp's llama-quantize from
synth-1.1b-F16.gguf; other missing files are skipped with a message.
The table goes to stdout; progress to stderr.
EOF
}

here=$(cd "$(dirname "$0")/.." && pwd)
threads=2 np=512 ng=128 reps=3 rounds=1 peers=ik,llama.cpp
lowbit=${LOWBIT:-$here/build/lowbit}
pdir=${LOWBIT_PEERS:-$HOME/.cache/lowbit-peers}
files=()
die() { echo "peers.sh: $*" >&2; exit 1; }
num() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 takes a number, not '$2'"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -t) num -t "${2:-}"; threads=$2; shift 2 ;;
    -p) num -p "${2:-}"; np=$2; shift 2 ;;
    -n) num -n "${2:-}"; ng=$2; shift 2 ;;
    -r) num -r "${2:-}"; reps=$2; shift 2 ;;
    --rounds) num --rounds "${2:-}"; rounds=$2; shift 2 ;;
    --peers) peers=${2:-}; shift 2 ;;
    --lowbit) lowbit=${2:-}; shift 2 ;;
    --peers-dir) pdir=${2:-}; shift 2 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) files+=("$1"); shift ;;
  esac
done
[ "$threads" -ge 1 ] && [ "$reps" -ge 1 ] && [ "$rounds" -ge 1 ] || die "-t, -r and --rounds must be at least 1"
[ "$np" -gt 0 ] || [ "$ng" -gt 0 ] || die "-p and -n are both 0: nothing to measure"
use_ik=0 use_lc=0
for p in ${peers//,/ }; do
  case $p in ik|ik_llama.cpp) use_ik=1 ;; llama.cpp) use_lc=1 ;; none) ;; *) die "unknown peer '$p' (ik, llama.cpp, none)" ;; esac
done
ik_bench=$pdir/ik_llama.cpp/build/bin/llama-bench
lc_bench=$pdir/llama.cpp/build/bin/llama-bench
quantize=$pdir/llama.cpp/build/bin/llama-quantize
models=$pdir/models
for b in $([ $use_ik = 1 ] && echo "$ik_bench") $([ $use_lc = 1 ] && echo "$lc_bench"); do
  [ -x "$b" ] || die "peer not built: $b is missing; run ../shared/peers/build.sh (builds both into ~/.cache/lowbit-peers, ~15 min)"
done
[ -x "$lowbit" ] || die "no lowbit binary at $lowbit: build it (cmake -S . -B build && cmake --build build -j) or pass --lowbit"

if [ ${#files[@]} -eq 0 ]; then
  for t in Q4_K_M Q3_K_M Q2_K Q6_K IQ4_XS Q4_0; do files+=("$models/synth-1.1b-$t.gguf"); done
  for f in "$HOME/.cache/lowbit/gemma-3-270m-q4_k_m.gguf" "$HOME/.cache/lowbit/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"; do
    [ -f "$f" ] && files+=("$f")
  done
fi

# A synth file that is missing is quantized as build.sh does its set (temp
# name + rename: a killed run leaves no half file that looks finished).
make_synth() { # path -> path of the made file, or nothing
  local base t out
  base=$(basename "$1")
  [[ $base =~ ^synth-1\.1b-([A-Za-z0-9_]+)\.gguf$ ]] || return 1
  t=${BASH_REMATCH[1]} out=$models/$base
  [ -f "$out" ] && { echo "$out"; return 0; }
  [ -x "$quantize" ] && [ -f "$models/synth-1.1b-F16.gguf" ] || return 1
  echo "making $out with llama.cpp's llama-quantize ($t)..." >&2
  if "$quantize" "$models/synth-1.1b-F16.gguf" "$out.tmp" "$t" "$(nproc)" > "$out.log" 2>&1; then
    mv "$out.tmp" "$out" && rm -f "$out.log" && echo "$out"
  else
    echo "llama-quantize $t failed: $(tail -n 1 "$out.log")" >&2
    rm -f "$out.tmp"
    return 1
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A res  # "file|test|tool|round" -> "mean sd"
declare -A ver  # tool -> build commit llama-bench reports
tests=()
[ "$np" -gt 0 ] && tests+=("pp$np")
[ "$ng" -gt 0 ] && tests+=("tg$ng")
notes=()

# llama-bench -o csv -> "test mean sd" lines (python's csv: the model and
# cpu fields may hold commas). b4748 has no test column: named from n_prompt
# and n_gen as llama-bench's markdown names it.
peer_csv() {
  python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    p, g = int(r["n_prompt"]), int(r["n_gen"])
    test = f"pp{p}" if g == 0 else f"tg{g}" if p == 0 else f"pp{p}+tg{g}"
    print(test, r["avg_ts"], r["stddev_ts"])' < "$1"
}
run_peer() { # tool-key binary file round extra-args...
  local key=$1 bin=$2 f=$3 r=$4; shift 4
  echo "  $key: $(basename "$bin") $*" >&2
  if "$bin" -m "$f" -p "$np" -n "$ng" -r "$reps" -t "$threads" -o csv "$@" > "$tmp/$key.csv" 2> "$tmp/$key.err"; then
    while read -r test mean sd; do res["$f|$test|$key|$r"]="$mean $sd"; done < <(peer_csv "$tmp/$key.csv")
    ver[${key%-rtr}]=$(python3 -c 'import csv, sys; print(next(csv.DictReader(sys.stdin), {}).get("build_commit", "?"))' < "$tmp/$key.csv")
  else
    notes+=("$(basename "$f"): $key failed: $(grep -v '^\s*$' "$tmp/$key.err" | tail -n 1)")
  fi
}

done_files=()
for f0 in "${files[@]}"; do
  f=$f0
  if [ ! -f "$f" ]; then
    if ! f=$(make_synth "$f0"); then echo "skipping $f0: not found" >&2; notes+=("$f0: not found, skipped"); continue; fi
  fi
  done_files+=("$f")
  for ((r = 1; r <= rounds; r++)); do
    echo "== $(basename "$f")$([ "$rounds" -gt 1 ] && echo ", round $r of $rounds")" >&2
    echo "  lowbit: bench -p $np -n $ng -r $reps -t $threads" >&2
    if "$lowbit" bench -m "$f" -p "$np" -n "$ng" -r "$reps" -t "$threads" > "$tmp/lb.out" 2> "$tmp/lb.err"; then
      # | desc | size | params | isa | threads | test | mean ± sd |
      while IFS='|' read -r _ _ _ _ _ _ test ts _; do
        test=${test// /}
        [[ $test =~ ^(pp|tg)[0-9]+$ ]] || continue
        read -r mean _ sd <<<"$ts"
        res["$f|$test|lowbit|$r"]="$mean $sd"
      done < "$tmp/lb.out"
      if [ "$r" = 1 ]; then
        desc=$(awk -F'|' '$7 ~ /(pp|tg)[0-9]/ { gsub(/^ +| +$/, "", $2); print $2; exit }' "$tmp/lb.out")
        notes+=("$(basename "$f") ($desc), lowbit rooflines$([ "$rounds" -gt 1 ] && echo " (round 1)"):")
        while IFS= read -r l; do notes+=("  $l"); done < <(grep -E '^  (pp|tg)[0-9]+' "$tmp/lb.err")
      fi
    else
      notes+=("$(basename "$f"): lowbit failed: $(tail -n 1 "$tmp/lb.err")")
    fi
    if [ $use_ik = 1 ]; then
      run_peer ik "$ik_bench" "$f" "$r" -rtr 0
      run_peer ik-rtr "$ik_bench" "$f" "$r" -rtr 1
    fi
    [ $use_lc = 1 ] && run_peer llama.cpp "$lc_bench" "$f" "$r"
  done
done

cpu=$(sed -n 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n1)
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|avx_vnni|avx512f|avx512_vnni|avx512_vbmi|avx512_bf16|amx_tile|amx_int8|amx_bf16' | xargs)
echo "# lowbit vs peers"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${cpu:-unknown CPU} ($(nproc) cores; ${flags:-no AVX2}), $threads threads, $reps repetitions."
# the tarball builds report no commit: name the one build.sh unpacks
v() { case ${ver[$1]:-unknown} in unknown|"") echo "$2 (build.sh's)" ;; *) echo "${ver[$1]}" ;; esac; }
echo "lowbit $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?'), ik_llama.cpp $(v ik 8337e4c) and llama.cpp $(v llama.cpp b4748)"
echo "from $pdir at their defaults but -t/-p/-n/-r (ik: the better of -rtr 0 and -rtr 1 per test, named)."
echo
[ "$rounds" -gt 1 ] && echo "$rounds rounds per file, the tools interleaved: t/s is the median of the rounds' means, lowbit/ik the median of the rounds' ratios (ik's better variant in each round), their range beside it." && echo
# one line per measurement: file test tool round mean sd
for k in "${!res[@]}"; do
  IFS='|' read -r f t tool r <<<"$k"
  echo "$(basename "$f" .gguf) $t $tool $r ${res[$k]}"
done > "$tmp/all.txt"
order=()
for f in "${done_files[@]}"; do order+=("$(basename "$f" .gguf)"); done
python3 - "$tmp/all.txt" "$rounds" "${tests[*]}" "${order[@]}" <<'PY'
import statistics, sys
rounds, tests, files = int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
res = {}
for line in open(sys.argv[1]):
    f, t, tool, r, mean, sd = line.split()
    res[(f, t, tool, int(r))] = (float(mean), float(sd))
def fmt(v): return "–" if v is None else f"{v[0]:.2f} ± {v[1]:.2f}"
def ratio(a, b): return "–" if a is None or b is None or b[0] <= 0 else f"{a[0] / b[0]:.2f}"
def median(vals):  # of (mean, sd): the median mean, with the sd of that round (middle round for even counts)
    vals = sorted(v for v in vals if v is not None)
    return vals[(len(vals) - 1) // 2] if vals else None
many = rounds > 1
head = "| model | test | lowbit t/s | ik_llama.cpp t/s | ik variant | llama.cpp t/s | lowbit/ik | lowbit/llama.cpp |"
print(head + (" lowbit/ik by round |" if many else ""))
print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |" + (" --- |" if many else ""))
for f in files:
    for t in tests:
        lb, ik, lc, per, variants = [], [], [], [], []
        for r in range(1, rounds + 1):
            a, i0, i1, c = (res.get((f, t, k, r)) for k in ("lowbit", "ik", "ik-rtr", "llama.cpp"))
            best, var = i0, "-rtr 0" if i0 else None
            if i1 and (not i0 or i1[0] > i0[0]): best, var = i1, "-rtr 1"
            lb.append(a); ik.append(best); lc.append(c); variants.append(var)
            if a and best and best[0] > 0: per.append(a[0] / best[0])
        mlb, mik, mlc = median(lb), median(ik), median(lc)
        named = sorted({v for v in variants if v})
        variant = "/".join(named) if named else "–"
        if many:
            r_ik = f"{statistics.median(per):.2f}" if per else "–"
            r_lc = "–"
            per_lc = [a[0] / c[0] for a, c in zip(lb, lc) if a and c and c[0] > 0]
            if per_lc: r_lc = f"{statistics.median(per_lc):.2f}"
            span = ", ".join(f"{x:.2f}" for x in per) if per else "–"
            print(f"| {f} | {t} | {fmt(mlb)} | {fmt(mik)} | {variant} | {fmt(mlc)} | {r_ik} | {r_lc} | {span} |")
        else:
            print(f"| {f} | {t} | {fmt(mlb)} | {fmt(mik)} | {variant} | {fmt(mlc)} | {ratio(mlb, mik)} | {ratio(mlb, mlc)} |")
PY
if [ ${#notes[@]} -gt 0 ]; then
  echo
  printf '%s\n' "${notes[@]}"
fi
