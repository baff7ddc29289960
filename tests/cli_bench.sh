# lowbit bench: the llama-bench style table (mean ± stddev per test), with a
# synthetic model (no download: the README's first command) for each shape it
# names, and with a model file.
. "$(dirname "$0")/lib_cli.sh"

# one row per test and thread count: "| model | size | params | isa | threads | ppN | mean ± sd |"
rows_ok() { # log want_rows
  local n
  n=$(grep -cE '^\| .* \| [0-9]+ \| (pp|tg)[0-9]+ \| [0-9.]+ ± [0-9.]+ \|$' "$1")
  [ "$n" -eq "$2" ]
}

out=$("$LOWBIT" bench --synthetic stories15m --type Q4_0 -p 16 -n 4 -r 2 -t 1,2 2>"$WORK/err.log")
rc=$?
echo "$out"
printf '%s\n' "$out" > "$WORK/bench.log"
[ $rc -eq 0 ] && rows_ok "$WORK/bench.log" 4 && head -n1 "$WORK/bench.log" | grep -q '^| model | size | params |' \
  && ok "synthetic stories15m: header and 4 rows (pp16, tg4 at 1 and 2 threads)" \
  || bad "synthetic stories15m (exit $rc): $(tail -n 2 "$WORK/err.log")"
# the rooflines on stderr: int8 rate of pp (and the measured int8 peak on x86,
# kernels/peak.h), weight bandwidth of tg
grep -qE 'pp16: [0-9.]+ G weight multiply-adds per token: [0-9]+ int8 GOPS' "$WORK/err.log" \
  && grep -qE 'tg4 reads [0-9.]+ MiB of weights per token' "$WORK/err.log" \
  && ok "pp and tg roofline lines" || bad "roofline lines missing: $(head -n 4 "$WORK/err.log")"
# the bandwidth read beside each tg repetition: one figure per repetition (-r 2), then the steady ones' median
grep -qE '^  tg4 beside each repetition, .*: [0-9]+% \([0-9.]+, [0-9.]+(: changed)?\), [0-9]+% \([0-9.]+, [0-9.]+(: changed)?\); (median of the [12] steady: [0-9]+%|none steady)$' \
  "$WORK/err.log" && ok "tg beside each repetition" || bad "no per-repetition bandwidth line: $(grep 'tg4' "$WORK/err.log")"
if [ "$(uname -m)" = x86_64 ] && [ -z "${LOWBIT_ISA:-}" ]; then
  grep -qE 'int8 GOPS, [0-9]+% of the [0-9]+ GOPS .* peak measured on 2 threads' "$WORK/err.log" \
    && ok "pp compared with the measured int8 peak" || bad "no int8 peak in: $(grep pp16 "$WORK/err.log")"
fi
grep -q '| 1 | pp16 |' "$WORK/bench.log" && grep -q '| 2 | tg4 |' "$WORK/bench.log" \
  && ok "thread list 1,2 honoured" || bad "thread list not honoured"

for t in Q8_0 F16 Q4_K IQ4_NL; do
  "$LOWBIT" bench --synthetic stories15m --type $t -p 8 -n 2 -r 1 -t 2 > "$WORK/$t.log" 2>&1 && rows_ok "$WORK/$t.log" 2 \
    && ok "synthetic stories15m $t" || bad "synthetic stories15m $t: $(tail -n 2 "$WORK/$t.log")"
done

# every shape the help lists can be named (building the big ones takes minutes
# and gigabytes, so only the names are checked against the help here)
shapes=$("$LOWBIT" bench --help | sed -n 's/^synthetic shapes: //p')
for s in stories15m tinyllama-1.1b llama-3.2-1b llama-2-7b; do
  grep -qw -- "$s" <<<"$shapes" && ok "shape $s is offered" || bad "shape $s missing from --help ($shapes)"
done
[ "$("$LOWBIT" bench --help | grep -c -- '-t, --threads')" -eq 1 ] && ok "--help lists -t once" \
  || bad "--help lists -t more than once"
expect_fail "unknown type" "unknown type" "$LOWBIT" bench --synthetic stories15m --type Q9_9
expect_fail "bad thread list" "bad thread list" "$LOWBIT" bench --synthetic stories15m -t 1,x

need_shared models/stories260K-f32.gguf
"$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 32 -n 8 -r 3 -t 2 > "$WORK/file.log" 2>&1 \
  && rows_ok "$WORK/file.log" 2 && ok "model file: pp32 and tg8 rows" || bad "model file: $(tail -n 2 "$WORK/file.log")"

# -d: the tests start after DEPTH positions of the cache (filled untimed), named
# as llama-bench names them ("tg8 @ d100"), with fp16, q8_0 and q4_0 caches as well (a
# cache type other than the default gets type_k and type_v columns); tg's
# roofline then counts the cache a token reads beside the weights
for c in f32 f16 q8_0 q4_0; do
  "$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 16 -n 8 -d 0,100 -r 2 -t 2 -ctk $c -ctv $c \
    > "$WORK/depth-$c.log" 2>&1
  [ "$(grep -cE '^\| .* \| 2 \|( [a-z0-9_]+ \| [a-z0-9_]+ \|)? (pp16|tg8)( @ d100)? \| [0-9.]+ ± [0-9.]+ \|$' "$WORK/depth-$c.log")" -eq 4 ] &&
    grep -q '| pp16 @ d100 |' "$WORK/depth-$c.log" && grep -q '| tg8 @ d100 |' "$WORK/depth-$c.log" &&
    { [ $c = f32 ] || grep -q "| $c | $c | tg8 @ d100 |" "$WORK/depth-$c.log"; } &&
    grep -qE 'tg8 @ d100 reads [0-9.]+ MiB of weights and [0-9.]+ MiB of KV cache per token' "$WORK/depth-$c.log" &&
    ok "-d 0,100, $c cache: pp16, tg8 at depths 0 and 100" || bad "-d 0,100 ($c): $(grep -E '^\||error' "$WORK/depth-$c.log")"
done
# -o json / jsonl / csv: llama-bench's field names, one record per test
"$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 16 -n 4 -d 0,20 -r 2 -t 2 -ctk f16 -o json --no-roofline \
  > "$WORK/bench.json" 2>/dev/null &&
  python3 - "$WORK/bench.json" <<'PY' && ok "-o json: 4 records with llama-bench's fields" || bad "-o json: $(head -c 300 "$WORK/bench.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 4, rows
for r in rows:
    for k in ('model_filename', 'model_type', 'model_size', 'model_n_params', 'n_threads', 'type_k', 'type_v',
              'n_prompt', 'n_gen', 'n_depth', 'avg_ns', 'stddev_ns', 'avg_ts', 'stddev_ts', 'samples_ts'):
        assert k in r, k
    assert r['type_k'] == 'f16' and r['type_v'] == 'f32' and r['avg_ts'] > 0 and len(r['samples_ts']) == 2
assert [(r['n_prompt'], r['n_gen'], r['n_depth']) for r in rows] == [(16, 0, 0), (0, 4, 0), (16, 0, 20), (0, 4, 20)]
PY
"$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 16 -n 4 -r 1 -t 2 -o jsonl --no-roofline > "$WORK/bench.jsonl" 2>/dev/null &&
  [ "$(wc -l < "$WORK/bench.jsonl")" -eq 2 ] && python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$WORK/bench.jsonl" &&
  ok "-o jsonl: 2 lines, each a JSON object" || bad "-o jsonl: $(cat "$WORK/bench.jsonl")"
"$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 16 -n 4 -r 1 -t 2 -o csv --no-roofline > "$WORK/bench.csv" 2>/dev/null &&
  [ "$(wc -l < "$WORK/bench.csv")" -eq 3 ] && head -n1 "$WORK/bench.csv" | grep -q '^model_filename,model_type,.*,avg_ts,stddev_ts$' &&
  ok "-o csv: a header and 2 rows" || bad "-o csv: $(cat "$WORK/bench.csv")"
expect_fail "-o xml" "expected md, csv, json or jsonl" "$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -o xml
expect_fail "bad -d list" "bad -d list" "$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -d 5,y
expect_fail "-ctk q4_1" "f32, f16, q8_0 or q4_0" "$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -ctk q4_1
expect_fail "-ctk f16,iq4_nl" "f32, f16, q8_0 or q4_0" "$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -ctk f16,iq4_nl
expect_fail "-ctv f16," "f32, f16, q8_0 or q4_0" "$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -ctv f16,
# -ctk/-ctv lists, as llama-bench takes them: every -ctk with every -ctv, each
# pair a type_k and type_v column in the table and its own records in JSON
"$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 16 -n 4 -r 1 -t 2 -ctk f16,q8_0 -ctv f32,f16 --no-roofline \
  > "$WORK/kvlist.md" 2>/dev/null &&
  head -n1 "$WORK/kvlist.md" | grep -q '| threads | type_k | type_v | test | t/s |' &&
  [ "$(grep -cE '^\| .* \| 2 \| (f16|q8_0) \| (f32|f16) \| (pp16|tg4) \| [0-9.]+ ± [0-9.]+ \|$' "$WORK/kvlist.md")" -eq 8 ] &&
  grep -q '| q8_0 | f16 | tg4 |' "$WORK/kvlist.md" && ok "-ctk f16,q8_0 -ctv f32,f16: 4 cache pairs x pp16, tg4" ||
  bad "-ctk/-ctv lists: $(cat "$WORK/kvlist.md")"
"$LOWBIT" bench -m "$SHARED/models/stories260K-f32.gguf" -p 0 -n 4 -r 1 -t 2 -ctk f32,q8_0 -ctv q8_0 -o jsonl --no-roofline \
  > "$WORK/kvlist.jsonl" 2>/dev/null &&
  python3 - "$WORK/kvlist.jsonl" <<'PY' && ok "-o jsonl with -ctk f32,q8_0: one record per cache pair" || bad "-ctk list jsonl: $(cat "$WORK/kvlist.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r['type_k'], r['type_v'], r['n_gen']) for r in rows] == [('f32', 'q8_0', 4), ('q8_0', 'q8_0', 4)], rows
PY

# The model column names the file type as llama.cpp does: from general.file_type
# (this llama.cpp-written file says 15), else guessed from the tensors (the
# stories file has no key and only F32 tensors). Size and params as llama-bench
# prints them: every tensor counted (info's "MiB of tensors"), in MiB / M.
row_of() { grep -m1 -E '\| tg2 \|' "$1"; }
grep -qE '^\| llama [0-9.]+[KMB] all F32 \(guessed\) \| [0-9]+\.[0-9]{2} MiB \| [0-9]+\.[0-9]{2} M \|' "$WORK/file.log" \
  && ok "no general.file_type: 'all F32 (guessed)'" || bad "stories260K row: $(grep -m1 pp32 "$WORK/file.log")"
synth_row=$(grep -m1 -E '\| pp16 \|' "$WORK/bench.log")
grep -qE '^\| llama [0-9.]+M Q4_0 \(synthetic stories15m\) \| [0-9.]+ MiB \| [0-9.]+ M \|' <<<"$synth_row" \
  && ok "synthetic model named by its type" || bad "synthetic row: $synth_row"
need_shared interop/tiny-Q4_K_M.gguf
tiny=$SHARED/interop/tiny-Q4_K_M.gguf
"$LOWBIT" bench -m "$tiny" -p 8 -n 2 -r 1 -t 1 --no-roofline > "$WORK/q4km.log" 2>&1
row=$(row_of "$WORK/q4km.log")
grep -qE '^\| llama [0-9.]+[KMB] Q4_K - Medium \| ' <<<"$row" && ok "file_type 15: 'Q4_K - Medium'" \
  || bad "tiny-Q4_K_M row: ${row:-$(tail -n 2 "$WORK/q4km.log")}"
mib=$("$LOWBIT" info "$tiny" 2>/dev/null | sed -n 's/^bits per weight: .*(\([0-9.]*\) MiB of tensors)$/\1/p')
[ -n "$mib" ] && grep -qF "| $mib MiB |" <<<"$row" && ok "size column counts every tensor ($mib MiB)" \
  || bad "size column of '$row' is not info's ${mib:-?} MiB of tensors"
# bench/peers.sh without peers (--peers none): lowbit's own rows, in rounds
peers=$(dirname "$0")/../bench/peers.sh
LOWBIT=$LOWBIT bash "$peers" --peers none --rounds 2 -p 8 -n 2 -r 1 -t 1 "$SHARED/models/stories260K-f32.gguf" \
  > "$WORK/peers.md" 2> "$WORK/peers.err"
rc=$?
[ $rc -eq 0 ] && grep -q '^2 rounds per file' "$WORK/peers.md" \
  && grep -qE '^\| stories260K-f32 \| pp8 \| [0-9.]+ ± [0-9.]+ \| – \|' "$WORK/peers.md" \
  && grep -qE '^\| stories260K-f32 \| tg2 \| [0-9.]+ ± [0-9.]+ \| – \|' "$WORK/peers.md" \
  && [ "$(grep -c 'round [12] of 2' "$WORK/peers.err")" -eq 2 ] \
  && ok "peers.sh --peers none --rounds 2: lowbit's pp and tg rows" \
  || bad "peers.sh (exit $rc): $(tail -n 3 "$WORK/peers.md" "$WORK/peers.err")"
bash "$peers" --rounds 0 > /dev/null 2> "$WORK/peers0.err"
[ $? -ne 0 ] && grep -q 'must be at least 1' "$WORK/peers0.err" && ok "peers.sh --rounds 0 refused" \
  || bad "peers.sh --rounds 0: $(cat "$WORK/peers0.err")"
finish
