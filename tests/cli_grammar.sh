#!/usr/bin/env bash
# Grammar-constrained output (docs/grammar.md) through the CLI and the
# server, on stories260K (which writes stories, never JSON, unless made to):
# `run` (and `chat`, every reply) with --grammar, --grammar-file, -j / --json-schema and
# --json-schema-file writes text the grammar or schema allows, at any
# temperature; bad grammars, schemas and flag combinations stop it before the
# model loads, with the line and column or the keyword; `serve` takes
# response_format json_object / json_schema and llama-server's grammar and
# json_schema on /v1/completions, whole and streamed, and answers a bad one
# with a 400.
. "$(dirname "$0")/lib_cli.sh"
need_shared models/stories260K-f32.gguf
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
M=$SHARED/models/stories260K-f32.gguf
SCHEMA='{"type":"object","properties":{"happy":{"type":"boolean"},"pet":{"enum":["cat","dog"]},"age":{"type":"integer"}},"required":["happy","pet"]}'

# the generated text (after the prompt "Once") must satisfy check.py's test
gen_check() {
  local what=$1 test=$2; shift 2
  local out rc
  out=$("$LOWBIT" run -m "$M" -p "Once" -n 400 -t 2 "$@" 2>"$WORK/err"); rc=$?
  if [ $rc -ne 0 ]; then bad "$what: exit $rc: $(cat "$WORK/err")"; return; fi
  if python3 -c "
import json, sys
text = sys.argv[1]
assert text.startswith('Once'), text
text = text[4:].rstrip('\n')
$test
" "$out"; then ok "$what: $(tr '\n' ' ' <<<"${out:4:70}")"; else bad "$what: '$out'"; fi
}
for seed in 1 2 3; do
  gen_check "-j, temp 1, seed $seed" "v = json.loads(text); assert set(v) <= {'happy','pet','age'} and isinstance(v['happy'], bool) and v['pet'] in ('cat','dog'), v" \
    -j "$SCHEMA" --temp 1 -s $seed
done
gen_check "-j, greedy" "v = json.loads(text); assert v['pet'] in ('cat','dog')" -j "$SCHEMA" --temp 0
printf '%s' "$SCHEMA" > "$WORK/schema.json"
gen_check "--json-schema-file" "v = json.loads(text); assert v['pet'] in ('cat','dog')" --json-schema-file "$WORK/schema.json" --temp 0.8 -s 4
gen_check "--grammar" "import re; assert re.fullmatch(r' (yes|no)[.!]', text), text" --grammar 'root ::= " " ("yes" | "no") [.!]' --temp 1 -s 5
cat > "$WORK/list.gbnf" <<'G'
# a list of one to three words of lower-case letters
root ::= item ( ", " item ){0,2} "."
item ::= [a-z]{1,8}
G
gen_check "--grammar-file" "import re; assert re.fullmatch(r'[a-z]{1,8}(, [a-z]{1,8}){0,2}\.', text), text" --grammar-file "$WORK/list.gbnf" --temp 1 -s 6

out=$(printf 'hi\n' | "$LOWBIT" chat -m "$M" --chat-template chatml -t 2 --temp 1 -s 3 -n 300 -j "$SCHEMA" 2>"$WORK/err")
if python3 -c "
import json, sys
lines = sys.argv[1].splitlines()
assert len(lines) == 1, lines
for l in lines: assert json.loads(l)['pet'] in ('cat', 'dog'), l
" "$out"; then ok "chat -j: the reply follows the schema: $(tr '\n' ' ' <<<"$out")"; else bad "chat -j: '$out' $(cat "$WORK/err")"; fi

expect_fail "chat: grammar with gpt-oss" "harmony" bash -c "printf 'hi\\n' | '$LOWBIT' chat -m '$M' --chat-template gpt-oss -j '{}'"

expect_fail "undefined rule" "rule 'item' is used but not defined" "$LOWBIT" run -m "$M" -p x --grammar 'root ::= item'
expect_fail "GBNF syntax" "line 2, column 7: unterminated literal" "$LOWBIT" run -m "$M" -p x --grammar $'root ::= a\na ::= "x'
expect_fail "left recursion" "left-recursive" "$LOWBIT" run -m "$M" -p x --grammar 'root ::= root "a" | "b"'
expect_fail "unsupported schema keyword" 'keyword "multipleOf" is not supported' "$LOWBIT" run -m "$M" -p x -j '{"type":"integer","multipleOf":3}'
gen_check "-j with integer bounds" "v = json.loads(text); assert isinstance(v, int) and 13 <= v <= 19, v" \
  -j '{"type":"integer","minimum":13,"exclusiveMaximum":20}' --temp 1 -s 9
expect_fail "unsupported pattern" 'lookarounds' "$LOWBIT" run -m "$M" -p x -j '{"type":"string","pattern":"^(?=a)"}'
gen_check "-j with a pattern" "import re; v = json.loads(text); assert re.fullmatch(r'[A-Z][a-z]{2,5}-[0-9]{2}', v), v" \
  -j '{"type":"string","pattern":"^[A-Z][a-z]{2,5}-\\d{2}$"}' --temp 1 -s 8
expect_fail "schema not JSON" "json schema" "$LOWBIT" run -m "$M" -p x -j '{"type":'
expect_fail "two grammars" "only one of" "$LOWBIT" run -m "$M" -p x -j '{}' --grammar 'root ::= "a"'
expect_fail "missing grammar file" "no such|cannot open" "$LOWBIT" run -m "$M" -p x --grammar-file "$WORK/none.gbnf"

# serve (when built with libmicrohttpd / cJSON)
if "$LOWBIT" serve --help >/dev/null 2>&1 && command -v curl >/dev/null; then
  . "$(dirname "$0")/lib_serve.sh"
  start_server "$WORK/serve.log" -np 2 -c 1024
  python3 - "$URL" "$SCHEMA" <<'PY' && ok "serve: response_format, json_schema, grammar (whole and streamed); bad ones 400" || bad "serve grammars (see above)"
import json, re, sys, urllib.error, urllib.request
url, schema = sys.argv[1], json.loads(sys.argv[2])
def post(body, stream=False):
    req = urllib.request.Request(url + "/v1/completions", json.dumps(dict(body, stream=stream)).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            if not stream:
                d = json.loads(r.read())
                return r.status, d["choices"][0]["text"], d["choices"][0]["finish_reason"]
            ev = [json.loads(l[6:]) for l in r.read().decode().splitlines() if l.startswith("data: {")]
            return r.status, "".join(e["choices"][0]["text"] for e in ev if e["choices"]), \
                [e["choices"][0]["finish_reason"] for e in ev if e["choices"] and e["choices"][0]["finish_reason"]][-1]
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())["error"]["message"], None
base = {"prompt": "Once upon a time", "max_tokens": 400, "temperature": 0.9, "seed": 7}
cases = [({"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}},
          lambda t: json.loads(t)["pet"] in ("cat", "dog")),
         ({"json_schema": schema}, lambda t: isinstance(json.loads(t)["happy"], bool)),
         ({"grammar": 'root ::= " " [a-z]{1,12} "."'}, lambda t: re.fullmatch(r" [a-z]{1,12}\.", t)),
         ({"response_format": {"type": "json_object"}, "temperature": 0, "max_tokens": 40}, None)]
for extra, test in cases:
    for stream in (False, True):
        st, text, finish = post(dict(base, **extra), stream)
        assert st == 200, (extra, text)
        if test:
            assert finish == "stop" and test(text), (extra, stream, text, finish)
        else: # an object, maybe cut by max_tokens: a prefix of one
            assert text.startswith("{"), text
        print(list(extra)[0], "stream" if stream else "whole", repr(text[:60]), finish)
for extra, msg in [({"grammar": "root ::= x"}, "rule 'x' is used but not defined"),
                   ({"response_format": {"type": "xml"}}, "not 'xml'"),
                   ({"json_schema": {"type": "string", "format": "date", "pattern": "(?<n>x)"}}, "named groups"),
                   ({"grammar": 'root ::= "a"', "json_schema": {}}, "give one of")]:
    st, text, _ = post(dict(base, **extra))
    assert st == 400 and msg in text, (extra, st, text)
PY
  stop_server "the grammar server"
fi
finish
