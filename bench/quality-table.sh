#!/usr/bin/env bash
# Quality of every weight type lowbit can write, on one real model.
#
#   bench/quality-table.sh MODEL.gguf [--chunks N] [--ctx 512] [--threads 2]
#                          [--out docs/quality.md] [--types "Q8_0 Q4_0 ..."]
#                          [--text FILE] [--lowbit BIN] [--workdir DIR]
#                          [--variant "NAME:QUANTIZE ARGS"]... [--no-plain] [--no-bench]
#                          [--common "QUANTIZE ARGS"]
#
# A variant adds a row per type quantized with extra `lowbit quantize` flags,
# e.g. --variant "GPTQ:--gptq calib.gguf" --variant "imatrix:--imatrix calib.gguf"
# gives rows "Q4_K", "Q4_K + imatrix", "Q4_K + GPTQ" (--no-plain drops the
# first); --no-bench leaves the speed columns empty (the weights of a variant
# are the same type, so the same speed). --common adds flags to every
# quantize, e.g. --common "--token-embedding-type Q4_K --output-tensor-type Q6_K"
# to give every row the same embedding and head, so that the rows differ in
# their layer matrices only (the "matrix bpw" column counts those alone).
#
# The baseline is MODEL dequantized to F32 (real models arrive quantized, so
# F32 of what we have is the reference). Each type is quantized from that
# baseline and scored by llama.cpp's perplexity method on WikiText-2 (-c 512,
# the second half of each chunk scored) with the KL divergence against the
# baseline's saved log-probabilities, then timed with `lowbit bench`. The
# Markdown table goes to stdout and to --out.
#
# Types: every quantized type `lowbit quantize --help` lists (so a new format
# joins the table by registering itself), unless --types is given. Tensors
# whose rows don't fit a type keep a wider one; the table counts them.
#
# Cost: a 262k-token vocabulary makes the KL base file 512 KiB per scored
# position (134 MiB per chunk of 512: 2.7 GB for 20 chunks, 77 GB for the
# whole file), and each chunk is a full 512-token forward pass of every type,
# so by default only the first 20 chunks are scored (about 25 minutes for 16
# types on 2 idle cores of this machine; --chunks 5 takes 7); the header says
# how many were scored. For reference, the whole file (all 576 chunks,
# 146880 scored tokens) on the F32 baseline of Gemma 3 270M Q4_K_M gives
# PPL = 18.3312 +/- 0.14790 (`lowbit perplexity -m base.gguf -f wiki.test.raw
# -c 512 -t 2`, 40 minutes here); its first 20 chunks give 18.9501.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
chunks=20 ctx=512 threads=2 out=$root/docs/quality.md types="" workdir=""
variants=() plain=1 do_bench=1 common=""
text=$root/../shared/data/wiki.test.raw
lowbit=${LOWBIT:-$root/build/lowbit}
model=""

usage() { sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --chunks|--ctx|--threads|--out|--types|--text|--lowbit|--workdir|--variant|--common)
      [ $# -ge 2 ] || { echo "quality-table: $1 needs a value" >&2; usage; } ;;
  esac
  case $1 in
    --chunks) chunks=$2; shift 2 ;;
    --ctx) ctx=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --text) text=$2; shift 2 ;;
    --lowbit) lowbit=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --variant)
      [[ $2 == ?*:* ]] || { echo "quality-table: --variant wants NAME:ARGS, got '$2'" >&2; exit 2; }
      variants+=("$2"); shift 2 ;;
    --common) common=$2; shift 2 ;;
    --no-plain) plain=0; shift ;;
    --no-bench) do_bench=0; shift ;;
    -h|--help) usage ;;
    -*) echo "quality-table: unknown option $1" >&2; usage ;;
    *) [ -z "$model" ] || usage; model=$1; shift ;;
  esac
done
[ -n "$model" ] || usage
for v in "chunks=$chunks" "ctx=$ctx" "threads=$threads"; do
  [[ ${v#*=} =~ ^[0-9]+$ ]] || { echo "quality-table: --${v%%=*} ${v#*=} is not a whole number" >&2; exit 2; }
done
[ -f "$model" ] || { echo "quality-table: $model not found (scripts/get-model.sh fetches Gemma 3 270M)" >&2; exit 1; }
[ -x "$lowbit" ] || { echo "quality-table: $lowbit is not built (or pass --lowbit BIN)" >&2; exit 1; }
[ -f "$text" ] || { echo "quality-table: $text not found" >&2; exit 1; }

if [ -z "$types" ]; then
  # "types: F32 (32.00 bpw) F16 ... Q8_0 (8.50 bpw) ...": the quantized ones,
  # less the interleaved layouts (Q4_0_8X8 ...): the same weights as their
  # base type, repacked, so the same quality (the loader repacks anyway)
  types=$("$lowbit" quantize --help | sed -n 's/^types://p' | grep -oE '[A-Z0-9_]+ \(' | tr -d ' (' |
          grep -vE '^(F32|F16|BF16)$' | grep -vE '_[0-9]+X[0-9]+$' | tr '\n' ' ')
fi

work=${workdir:-$(mktemp -d "${TMPDIR:-/tmp}/lowbit-quality.XXXXXX")}
mkdir -p "$work"
cleanup() {
  if [ -n "$workdir" ]; then rm -f "$work"/*.gguf "$work"/*.kld "$work"/*.log "$work"/*.ppl "$work"/*.err "$work"/table.md
  else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# On a shared machine OpenMP threads that spin at barriers stall each other
# badly; sleeping ones keep timings stable (stated in the header).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
t_start=$(date +%s)
log() { echo "[$(( $(date +%s) - t_start ))s] $*" >&2; }

# --- parsers of lowbit's output ---
ppl_of() { sed -n 's/^Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 ± \2/p' "$1"; }
field() { sed -n "s/^$2 = \([0-9.]*\).*/\1/p" "$1"; }               # "Mean KLD = x"
top1_of() { sed -n 's/^Top-1 agreement = \([0-9.]*\)%.*/\1/p' "$1"; }
# bench table rows "| ... | pp128 | 72.35 ± 0.10 |": the mean t/s of test $2
tps_of() { awk -F'|' -v t="$2" '$7 ~ "^ *"t" *$" { gsub(/ /, "", $8); split($8, a, "±"); print a[1] }' "$1"; }
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }

bench() { # file -> "pp tg"
  [ "$do_bench" = 1 ] || { echo "- -"; return; }
  "$lowbit" bench -m "$1" -p 128 -n 32 -r 2 -t "$threads" > "$work/bench.log" 2>&1 || { echo "? ?"; return; }
  echo "$(tps_of "$work/bench.log" pp128) $(tps_of "$work/bench.log" tg32)"
}

ppl_args=(-c "$ctx" -t "$threads")
[ "$chunks" -gt 0 ] && ppl_args+=(--chunks "$chunks")

# --- baseline ---
log "baseline: dequantizing $model to F32"
"$lowbit" quantize -t "$threads" "$model" "$work/base.gguf" F32 > "$work/q.log" 2>&1 ||
  { cat "$work/q.log" >&2; exit 1; }
log "baseline: perplexity and saved log-probabilities"
"$lowbit" perplexity -m "$work/base.gguf" -f "$text" "${ppl_args[@]}" --kl-divergence-base "$work/base.kld" \
  > "$work/base.ppl" 2> "$work/base.err" || { cat "$work/base.err" >&2; exit 1; }
n_tok=$(sed -n 's/^tokenized .*: \([0-9]*\) tokens.*/\1/p' "$work/base.err")
n_scored=$(sed -n 's/^perplexity: \([0-9]*\) chunks.*/\1/p' "$work/base.err")
n_all=$(( n_tok / ctx ))
read -r pp tg <<< "$(bench "$work/base.gguf")"

rows=()
add_row() { # type bpw matrix-bpw size wider ppl kld kld99 top1 pp tg
  rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' "$@")")
}
add_row "F32 (baseline)" "32.00" "32.00" "$(mib "$work/base.gguf")" "0" "$(ppl_of "$work/base.ppl")" "0" "0" "100.00" "$pp" "$tg"

score() { # name file bpw matrix-bpw wider
  local name=$1 file=$2 bpw=$3 lbpw=$4 wider=$5
  log "$name: perplexity + KLD"
  if ! "$lowbit" perplexity -m "$file" "${ppl_args[@]}" --kl-divergence-base "$work/base.kld" --kl-divergence \
      > "$work/t.ppl" 2> "$work/t.err"; then
    cat "$work/t.err" >&2
    add_row "$name" "$bpw" "$lbpw" "$(mib "$file")" "$wider" "failed" "" "" "" "" ""
    return
  fi
  log "$name: bench"
  read -r pp tg <<< "$(bench "$file")"
  add_row "$name" "$bpw" "$lbpw" "$(mib "$file")" "$wider" "$(ppl_of "$work/t.ppl")" "$(field "$work/t.ppl" "Mean KLD")" \
    "$(field "$work/t.ppl" "99th percentile KLD")" "$(top1_of "$work/t.ppl")" "$pp" "$tg"
}

# the model as it came (e.g. Q4_K_M), for reference
src_bpw=$("$lowbit" info "$model" 2>/dev/null | sed -n 's/^bits per weight: \([0-9.]*\) overall.*/\1/p')
src_ftype=$("$lowbit" info "$model" 2>/dev/null | sed -n 's/^ *general.file_type *= *\([0-9]*\).*/\1/p')
score "source file$([ -n "$src_ftype" ] && echo " (file_type $src_ftype)")" "$model" "${src_bpw:-?}" "-" "-"

quantize_and_score() { # type row-name [quantize flags...]
  local t=$1 name=$2; shift 2
  log "$name: quantizing"
  local extra=()
  [ -n "$common" ] && read -r -a extra <<< "$common"
  if ! "$lowbit" quantize -t "$threads" "${extra[@]}" "$@" "$work/base.gguf" "$work/$t.gguf" "$t" > "$work/q.log" 2>&1; then
    tail -n 3 "$work/q.log" >&2
    add_row "$name" "" "" "" "" "quantize failed" "" "" "" "" ""
    return
  fi
  local q bpw lbpw n_wide kinds wider
  q=$(tr '\r' '\n' < "$work/q.log")
  bpw=$(sed -n 's/.*parameters, \([0-9.]*\) bits per weight.*/\1/p' <<< "$q")
  lbpw=$(sed -n 's/.*layer matrices: \([0-9.]*\) bits per weight.*/\1/p' <<< "$q")
  # "N kept a wider type" and which: "...; keeping Q5_0" per tensor
  n_wide=$(sed -n 's/.*, \([0-9]*\) kept a wider type.*/\1/p' <<< "$q")
  kinds=$( (grep -oE 'keeping [A-Z0-9_]+' <<< "$q" || true) | awk '{print $2}' | sort | uniq -c |
          awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')
  wider=${n_wide:-?}
  [ -n "$kinds" ] && wider="$kinds"
  score "$name" "$work/$t.gguf" "$bpw" "$lbpw" "$wider"
  rm -f "$work/$t.gguf"
}

for t in $types; do
  [ "$plain" = 1 ] && quantize_and_score "$t" "$t"
  for v in "${variants[@]}"; do
    read -r -a vargs <<< "${v#*:}"
    quantize_and_score "$t" "$t + ${v%%:*}" "${vargs[@]}"
  done
done

info=$("$lowbit" info "$model" 2>/dev/null || true)
cpu=$(sed -n 's/^cpu: //p' <<< "$info")
# "  Q5_0       81 tensors ..." lines of the types section -> "81 Q5_0, ..."
src_types=$(awk '/^types:/ { on = 1; next } on && /^ *[A-Z0-9_]+ +[0-9]+ tensors/ { printf "%s%s %s", sep, $2, $1; sep = ", " } on && /^$/ { on = 0 }' <<< "$info")
sha=$(sha256sum "$model" | cut -c1-16)
{
  echo "# Weight types on $(basename "$model")"
  echo
  echo "Generated by \`bench/quality-table.sh $(basename "$model") --chunks $chunks --ctx $ctx --threads $threads\` on $(date -u +%Y-%m-%d)."
  echo
  echo "- Model: $(basename "$model") (sha256 $sha...), tensors as shipped: $src_types."
  echo "- Baseline: the model dequantized to F32; every type below is quantized from it (\`lowbit quantize BASE OUT TYPE\`)." \
       "A tensor requantized to the type it was shipped in lands on the same grid and loses nothing, which flatters" \
       "the rows (and fallbacks) that match the shipped types."
  echo "- Perplexity: $(basename "$text"), llama.cpp's method (chunks of $ctx tokens, second half scored)," \
       "**first $n_scored of $n_all chunks** ($(( n_scored * (ctx - 1 - ctx / 2) )) scored tokens)."
  echo "- KLD: KL(baseline ‖ type) per scored token, mean and 99th percentile; top-1: how often both pick the same next token."
  echo "- Sizes in MiB of the whole file; bits per weight over all tensors (token embeddings included); matrix bpw: the"\
       "layer matrices alone (blk.N.*, the embedding and output head apart)."
  [ -n "$common" ] && echo "- Every quantize also had \`$common\`."
  echo "- Wider: matrices whose rows don't fit the type's block and keep a wider type (llama-quantize's fallbacks)."
  for v in "${variants[@]}"; do echo "- \"+ ${v%%:*}\": \`lowbit quantize ${v#*:} BASE OUT TYPE\`."; done
  echo "- Speed: \`lowbit bench -p 128 -n 32 -r 2 -t $threads\` (prompt pp128, generation tg32, tokens/s) on $cpu;" \
       "OMP_WAIT_POLICY=$OMP_WAIT_POLICY; the machine is shared (load average $load_at_start at the start), so timings are indicative."
  echo
  echo "| type | bits/weight | matrix bpw | size MiB | wider | PPL | mean KLD | KLD p99 | top-1 % | pp t/s | tg t/s |"
  echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  # baseline and source first, then the types by bits per weight, widest first
  printf '%s\n' "${rows[@]:0:2}"
  [ ${#rows[@]} -le 2 ] || printf '%s\n' "${rows[@]:2}" | sort -s -t'|' -k4,4 -g -r
  echo
  echo "Total time: $(( ($(date +%s) - t_start) / 60 )) min."
} > "$work/table.md"
mkdir -p "$(dirname "$out")"
cp "$work/table.md" "$out"
cat "$out"
log "wrote $out"
