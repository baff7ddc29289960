#!/usr/bin/env python3
"""The chat page of a running `lowbit serve` in headless Chromium: it loads,
sends a prompt (the page's #q=... hash), and streams the reply into the DOM.
Drives the browser over the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages separated by NUL on fds 3 and 4), so
it needs nothing beyond Python and Debian's `chromium`.

    python3 tests/serve_page.py CHROMIUM URL_WITH_HASH WORK_DIR [reasoning]
Prints the page's state as JSON; exit 0 when a reply arrived in several
chunks and the page finished without an error (with `reasoning`: when the
reply's reasoning arrived in its box instead)."""
import json
import os
import subprocess
import sys
import time

chromium, url, work = sys.argv[1], sys.argv[2], sys.argv[3]
want_reasoning = len(sys.argv) > 4 and sys.argv[4] == "reasoning"
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()


os.set_inheritable(to_chrome_r, True)
os.set_inheritable(from_chrome_w, True)


def child_fds():
    # the two ends the browser uses onto fds 3 and 4 (in an order that never
    # overwrites one with the other), open across exec
    r = os.dup(to_chrome_r)
    w = os.dup(from_chrome_w)
    os.dup2(r, 3)
    os.dup2(w, 4)


proc = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                         "--disable-extensions", "--remote-debugging-pipe", "--user-data-dir=" + work,
                         "about:blank"], preexec_fn=child_fds,
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "chromium.log"), "w"),
                        close_fds=False)
os.close(to_chrome_r)
os.close(from_chrome_w)
buf = b""
next_id = 0


def send(method, params=None, session=None):
    global next_id, buf
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
    while True:  # the answer to this id (events in between are dropped)
        while b"\0" not in buf:
            chunk = os.read(from_chrome_r, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            buf += chunk
        raw, buf = buf.split(b"\0", 1)
        reply = json.loads(raw)
        if reply.get("id") == next_id:
            if "error" in reply:
                raise RuntimeError("%s: %s" % (method, reply["error"]))
            return reply.get("result", {})


state = {}
try:
    # note when the reply has text while the page still says "streaming": the DOM grows piece by piece.
    # The observer is installed before the page's own script runs (the page sends its prompt at load,
    # and on a loaded machine the whole reply can arrive before a later Runtime.evaluate would)
    watch = """new MutationObserver(() => { if (document.body && document.body.dataset.state === 'streaming' &&
            document.querySelector('.msg.assistant') && document.querySelector('.msg.assistant').textContent)
            window.__lbSeen = true; }).observe(document, {subtree: true, childList: true, characterData: true,
                                                          attributes: true});"""
    target = send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    send("Page.enable", {}, session)
    send("Page.addScriptToEvaluateOnNewDocument", {"source": watch}, session)
    send("Page.navigate", {"url": url}, session)
    probe = """JSON.stringify((() => {
        const r = document.querySelectorAll('.msg.assistant');
        const last = r.length ? r[r.length - 1] : null;
        const think = document.querySelector('.msg.reasoning');
        return { title: document.title, state: document.body ? document.body.dataset.state : null,
                 replies: r.length, text: last ? last.textContent : null,
                 chunks: last ? parseInt(last.dataset.chunks || '0', 10) : 0,
                 finish: last ? last.dataset.finish || null : null,
                 error: last ? last.classList.contains('error') : null,
                 reasoning: think ? think.textContent : null,
                 chunk_seen_while_streaming: window.__lbSeen || false };
    })())"""
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            state = json.loads(send("Runtime.evaluate", {"expression": probe, "returnByValue": True},
                                    session)["result"]["value"])
        except RuntimeError:
            state = {}
        if state.get("state") == "done":
            break
        time.sleep(0.1)
    try:
        send("Browser.close")
    except Exception:
        pass
finally:
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
print(json.dumps(state))
ok = (state.get("title") == "lowbit chat" and state.get("state") == "done" and state.get("replies") == 1 and
      (state.get("reasoning") if want_reasoning else state.get("text") and state.get("chunks", 0) > 1) and
      not state.get("error") and state.get("finish") in ("stop", "length"))
sys.exit(0 if ok else 1)
