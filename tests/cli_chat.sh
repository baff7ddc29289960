# lowbit chat: turns from stdin through a chat template, the KV cache reused
# across turns. stories260K has no template, so --chat-template chatml
# formats its turns (its vocabulary has no ChatML tokens: the markers are
# plain text to it, which changes nothing here). Greedy replies are checked
# against lowbit run over the same formatted conversation, so the second
# turn's reuse of the first turn's cache must give the bits a fresh pass
# gives; /reset must reproduce the first reply; bad input gets clear errors.
. "$(dirname "$0")/lib_cli.sh"
need_shared models/stories260K-f32.gguf
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
M=$SHARED/models/stories260K-f32.gguf
chat() { "$LOWBIT" chat -m "$M" --chat-template chatml --temp 0 -n 16 -t 2 "$@"; }

printf 'Hello there\n' | chat > "$WORK/c1.txt" 2> "$WORK/c1.err" && ok "one turn" || bad "one turn: $(tail -n 2 "$WORK/c1.err")"
grep -q 'template chatml' "$WORK/c1.err" && ok "names its template" || bad "no template line: $(cat "$WORK/c1.err")"
printf 'Hello there\nTell me a story\n/reset\nHello there\n' | chat > "$WORK/c2.txt" 2> "$WORK/c2.err" \
  && ok "three turns and a reset" || bad "three turns: $(tail -n 2 "$WORK/c2.err")"
# the conversation as the template writes it before the second reply
if python3 - "$WORK" > "$WORK/split.txt" 2>&1 <<'EOF'
import sys
w = sys.argv[1]
c1, c2 = open(w + '/c1.txt').read(), open(w + '/c2.txt').read()
assert c1.endswith('\n') and c2.startswith(c1), 'the first reply differs between runs'
r1 = c1[:-1]
rest = c2[len(c1):]
assert rest.endswith(c1), 'after /reset the first reply is not reproduced: %r' % rest
r2 = rest[:len(rest) - len(c1)][:-1]
p = ('<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n' + r1 +
     '<|im_end|>\n<|im_start|>user\nTell me a story<|im_end|>\n<|im_start|>assistant\n')
open(w + '/p.txt', 'w').write(p)
open(w + '/r2.txt', 'w').write(r2)
EOF
then
  ok "replies split; /reset reproduced the first"
  "$LOWBIT" run -m "$M" -f "$WORK/p.txt" --temp 0 -n 16 -t 2 > "$WORK/run.txt" 2>/dev/null
  python3 -c "
import sys
w = sys.argv[1]
p, o, r2 = open(w + '/p.txt').read(), open(w + '/run.txt').read(), open(w + '/r2.txt').read()
sys.exit(0 if o.startswith(p) and o[len(p):-1] == r2 else 1)" "$WORK" \
    && ok "second reply (cache reused) equals lowbit run over the whole conversation" \
    || bad "second reply '$(cat "$WORK/r2.txt")' vs run '$(tail -c 80 "$WORK/run.txt")'"
else
  bad "splitting the replies: $(cat "$WORK/split.txt")"
fi

# reasoning: DeepSeek-R1's prompt opens a <think> block, so the whole greedy reply
# (no </think> in it) is reasoning: on stderr, nothing on stdout or in the
# history; --reasoning-format none prints the same bytes on stdout instead
printf 'Hello there\n' | chat --chat-template deepseek-r1 > "$WORK/r1.txt" 2> "$WORK/r1.err"
printf 'Hello there\n' | chat --chat-template deepseek-r1 --reasoning-format none > "$WORK/r1n.txt" 2> "$WORK/r1n.err"
python3 - "$WORK" <<'EOF2' && ok "a reply's reasoning on stderr, the same bytes on stdout with --reasoning-format none" \
  || bad "reasoning split: stdout '$(cat "$WORK/r1.txt")' stderr '$(tail -c 200 "$WORK/r1.err")'"
import sys
w = sys.argv[1]
out, err, plain = (open(w + f).read() for f in ('/r1.txt', '/r1.err', '/r1n.txt'))
reply = plain[:-1]
assert out == "\n" and reply.strip("\n") and "</think>" not in reply, (out, plain)
assert err.endswith(reply.strip("\n")), (err, reply)
EOF2
# the thinking switch: glm4.5 has one (no warning), llama2 none (a warning); bad values exit 2
printf 'Hi\n' | chat --chat-template glm4.5 --reasoning-budget 0 > /dev/null 2> "$WORK/sw.err"
! grep -q "no thinking switch" "$WORK/sw.err" && ok "--reasoning-budget 0 with glm4.5" || bad "glm4.5: $(cat "$WORK/sw.err")"
printf 'Hi\n' | chat --chat-template llama2 --chat-template-kwargs '{"enable_thinking": false, "x": [1]}' \
  > /dev/null 2> "$WORK/sw2.err"
grep -q "no thinking switch" "$WORK/sw2.err" && grep -q "'x' ignored" "$WORK/sw2.err" \
  && ok "warnings: a template without the switch, an unknown key" || bad "llama2 warnings: $(cat "$WORK/sw2.err")"
# /think in the conversation: DeepSeek-V3.1 thinks only when switched on, so after /think on the prompt ends
# '<think>' and the greedy reply is reasoning (stderr), after /think off it is the answer again (stdout)
printf 'Hello there\n/think on\nHello there\n/think off\n/think bogus\n' |
  chat --chat-template deepseek-v3.1 > "$WORK/t.txt" 2> "$WORK/t.err"
grep -q '(thinking on)' "$WORK/t.err" && grep -q '(thinking off)' "$WORK/t.err" && grep -q '/think on, /think off' "$WORK/t.err" &&
  [ "$(head -n 1 "$WORK/t.txt")" != "" ] && [ "$(sed -n 2p "$WORK/t.txt")" = "" ] &&
  ok "/think on|off: the reply moves to the reasoning and back" || bad "/think: $(cat "$WORK/t.txt") | $(tail -n 4 "$WORK/t.err")"
printf '/think on\n' | chat --chat-template llama2 2>&1 >/dev/null | grep -q 'no switch' && ok "/think on a template without a switch says so" ||
  bad "/think with llama2"
# llama.cpp command lines: its flags that change nothing here run, each with a note
printf 'Hi\n' | chat -ngl 99 -fa on --jinja --mlock --no-mmap -cb > /dev/null 2> "$WORK/compat.err" &&
  [ "$(grep -c "(llama.cpp's) ignored" "$WORK/compat.err")" = 6 ] && ok "llama.cpp's -ngl, -fa, --jinja, --mlock, --no-mmap, -cb: notes" ||
  bad "compat flags: $(cat "$WORK/compat.err")"
expect_fail "-ngl without a value" "-ngl needs a value" chat -ngl < /dev/null
expect_fail "--reasoning-budget 512" "only -1" chat --reasoning-budget 512 < /dev/null
expect_fail "--chat-template-kwargs enable_thinking not a boolean" "expected true or false" \
  chat --chat-template-kwargs '{"enable_thinking": 0}' < /dev/null
expect_fail "--chat-template-kwargs cut short" "unterminated|expected" chat --chat-template-kwargs '{"thinking": tr' < /dev/null
expect_fail "--reasoning-format unknown" "expected none, deepseek or auto" chat --reasoning-format xml < /dev/null

# bad input: no template in the model and none named; an unknown family; no model
expect_fail "model without a chat template" "no tokenizer.chat_template.*--chat-template" \
  "$LOWBIT" chat -m "$M" -t 2 < /dev/null
out=$("$LOWBIT" chat -m "$M" --chat-template nope -t 2 < /dev/null 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "nope" <<<"$out" && ok "unknown --chat-template (exit 2): $out" || bad "unknown template (exit $rc): $out"
expect_fail "a system message the template refuses" "system.*not supported" \
  "$LOWBIT" chat -m "$M" --chat-template gemma --system "Be brief." -t 2 < /dev/null
expect_fail "missing model" "cannot open|no such" "$LOWBIT" chat -m "$WORK/none.gguf" < /dev/null
expect_fail "no -m" "-m MODEL is required" "$LOWBIT" chat
finish
