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
