#!/usr/bin/env python3
"""Renders the real chat templates in tests/data/chat-templates/*.jinja with
jinja2, the way Hugging Face transformers' apply_chat_template does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, raise_exception,
strftime_now, add_generation_prompt=True, tools=None), for a few fixed
conversations, and writes tests/data/chat-templates/expected.inc: the
templates, the conversations and the expected strings (or the template's
error) that tests/test_chat_template.c compares lowbit's C formatters with (and
gpt-oss's first conversation at each reasoning_effort).

    pip install jinja2 && python3 scripts/gen-chat-expected.py

Where the templates come from: llama.cpp b4748's models/templates/ (fetched
from the Hugging Face repositories by its scripts/get_chat_template.py; Qwen3-0.6B
and gpt-oss-120b from ik_llama.cpp 8337e4c's, the same script's) and
tests/test-chat-template.cpp (Command R+'s from the latter; DeepSeek-R1-Distill-Llama-8B's from the former;
GLM-4.7-Flash, GLM-4.6 and DeepSeek-V3.1 from ik_llama.cpp 8337e4c's, as are the
templates lowbit must refuse, REFUSED below: SmolLM3, Bielik, Nemotron 3, Qwen 3.5, Step 3.5, QwQ (as edited
there, with a thinking switch), Cohere2 MoE, Apriel 1.5, GLM-5.2, functionary, Command R7B (tool_use),
DeepSeek-V3.2, Kimi K2, LFM2 and 2.5), and Mistral Small 3.2's and Granite 3.3's);
Qwen2.5-Coder from the GGUF that
scripts/get-model.sh fetches; Llama 2, Llama 3 and Gemma 3 from the models'
tokenizer_config.json as quoted in public code.
"""
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "chat-templates")
FIXED_DATE = "01 Jan 2025"  # strftime_now("%d %b %Y") in the test

# file, family lowbit must detect, bos, eos
TEMPLATES = [
    ("llama2-7b-chat.jinja", "llama2", "<s>", "</s>"),
    ("llama3-8b-instruct.jinja", "llama3", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.1-8b-instruct.jinja", "llama3.1", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.2-3b-instruct.jinja", "llama3.1", "<|begin_of_text|>", "<|eot_id|>"),
    ("mistral-7b-instruct-v0.2-old.jinja", "mistral", "<s>", "</s>"),
    ("mistral-7b-instruct-v0.2.jinja", "mistral-v1", "<s>", "</s>"),
    ("mistral-large-instruct-2407.jinja", "mistral-v3", "<s>", "</s>"),
    ("mistral-nemo-instruct-2407.jinja", "mistral-v3-tekken", "<s>", "</s>"),
    ("mistral-large-instruct-2411.jinja", "mistral-v7", "<s>", "</s>"),
    ("openhermes-2.5-mistral-7b.jinja", "chatml", "<s>", "<|im_end|>"),
    ("qwen2.5-7b-instruct.jinja", "chatml", "", "<|im_end|>"),
    ("qwen2.5-coder-1.5b-instruct.jinja", "chatml", "", "<|im_end|>"),
    ("Qwen-Qwen3-0.6B.jinja", "chatml", "", "<|im_end|>"),
    ("gemma-7b-it.jinja", "gemma", "<bos>", "<eos>"),
    ("gemma-2-2b-it.jinja", "gemma", "<bos>", "<eos>"),
    ("gemma-3-it.jinja", "gemma3", "<bos>", "<eos>"),
    ("microsoft-Phi-3.5-mini-instruct.jinja", "phi3", "<s>", "<|endoftext|>"),
    ("openai-gpt-oss-120b.jinja", "gpt-oss", "<|startoftext|>", "<|return|>"),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "deepseek-r1", "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
     "<\uff5cend\u2581of\u2581sentence\uff5c>"),
    ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1", "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
     "<\uff5cend\u2581of\u2581sentence\uff5c>"),
    ("GLM-4.7-Flash.jinja", "glm4.7", "", "<|endoftext|>"),
    ("GLM-4.6.jinja", "glm4.5", "", "<|endoftext|>"),
    ("CohereForAI-c4ai-command-r-plus.jinja", "command-r", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistral-small3", "<s>", "</s>"),
    ("ibm-granite-granite-3.3-2B-Instruct.jinja", "granite", "<|end_of_text|>", "<|end_of_text|>"),
]

# real templates that a family's markers match but that write something else (reasoning rules, default
# system messages, function definitions): lowbit must refuse them (name a family with --chat-template)
# rather than format them as that family; and templates of families lowbit does not know
REFUSED = [
    "HuggingFaceTB-SmolLM3-3B.jinja", "Bielik-11B-v3.0-Instruct.jinja", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
    "Qwen3.5-4B.jinja", "stepfun-ai-Step-3.5-Flash.jinja", "Qwen-QwQ-32B.jinja", "Cohere2MoE.jinja",
    "unsloth-Apriel-1.5.jinja", "GLM-5.2.jinja", "meetkai-functionary-medium-v3.1.jinja",
    "meetkai-functionary-medium-v3.2.jinja", "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
    "deepseek-ai-DeepSeek-V3.2.jinja", "moonshotai-Kimi-K2.jinja", "LFM2.5-Instruct.jinja", "LFM2-8B-A1B.jinja",
]

# Tool calls (Hermes style: <tools> in the system turn, <tool_call> JSON in replies, <tool_response> turns;
# Llama 3.1 / 3.2's, below):
# the templates that have them, the tools offered, and conversations with calls and results. A call's
# arguments are an object (transformers' convention; lowbit parses OpenAI's JSON string into one).
TOOL_TEMPLATES = ("qwen2.5-7b-instruct.jinja", "qwen2.5-coder-1.5b-instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                  # Llama 3.1 / 3.2: tools in the first user turn, {"name", "parameters"} calls, ipython results
                  "llama3.1-8b-instruct.jinja", "llama3.2-3b-instruct.jinja",
                  # Mistral v3 (Large 2407, Nemo): [AVAILABLE_TOOLS] before the last user turn, [TOOL_CALLS] with
                  # 9-character ids, [TOOL_RESULTS]
                  "mistral-large-instruct-2407.jinja", "mistral-nemo-instruct-2407.jinja")
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city, \"now\"",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "unit": {"type": "string", "enum": ["c", "f"]}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "täglich", "parameters": {"type": "object", "properties": {}}}},
]
def call(name, args, id):
    return {"type": "function", "id": id, "function": {"name": name, "arguments": args}}
def result(text, id):  # a tool's result, answering the call of that id
    return {"role": "tool", "tool_call_id": id, "content": text}
TOOL_CONVERSATIONS = [
    ("ask", [("user", "Weather in Paris?")], True),
    ("ask_sys", [("system", "Be brief."), ("user", "Weather in Paris?")], True),
    ("called", [("system", "Be brief."), ("user", "Weather in Paris?"),
                {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "a1b2c3d4e")]},
                result("{\"temp\": 21}", "a1b2c3d4e"), ("user", "Thanks")], True),
    ("two_calls", [("user", "Paris and Rome?"),
                   {"role": "assistant", "content": "Checking both.",
                    "tool_calls": [call("get_weather", {"city": "Paris", "unit": "c"}, "Zq9Zq9Zq9"),
                                   call("täglich", {}, "000000001")]},
                   result("21", "Zq9Zq9Zq9"), result("ok", "000000001")], True),
    ("think_call", [("user", "Q"),
                    {"role": "assistant", "content": "<think>\nneed data\n</think>\n\n",
                     "tool_calls": [call("get_weather", {"city": "Oslo"}, "abcdefghi")]},
                    result("-3", "abcdefghi")], True),
    ("history_no_tools", [("user", "Weather in Paris?"),
                          {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "a1b2c3d4e")]},
                          result("21", "a1b2c3d4e"), ("user", "Thanks")], False),
    # Mistral's ids must be 9 characters long
    ("bad_id", [("user", "Weather in Paris?"),
                {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call_1")]},
                result("21", "call_1")], True),
]

# the templates that read enable_thinking (the others must ignore it)
THINKING_SWITCH = ("Qwen-Qwen3-0.6B.jinja", "GLM-4.7-Flash.jinja", "GLM-4.6.jinja", "deepseek-ai-DeepSeek-V3.1.jinja",
                   "ibm-granite-granite-3.3-2B-Instruct.jinja")

CONVERSATIONS = [
    ("full", [("system", "You are a helpful assistant"), ("user", "Hello"), ("assistant", "Hi there"),
              ("user", "Who are you"), ("assistant", "   I am an assistant   "), ("user", "Another question")]),
    ("nosys", [("user", "Hello"), ("assistant", "  Hi there\n"), ("user", "Who are you?")]),
    ("unicode", [("system", " Answer briefly.\u3000"), ("user", "\u00a0Hello, w\u00f6rld \u2603\t\n")]),
    ("single", [("user", "Once upon a time")]),
    ("ends_assistant", [("system", "S"), ("user", "U"), ("assistant", "A")]),
    ("not_alternating", [("user", "a"), ("user", "b")]),
    ("system_later", [("user", "a"), ("system", "s")]),
    # Qwen 3's reasoning blocks: dropped from turns before the last query, kept in the last turn
    ("think", [("user", "Hi"), ("assistant", "<think>\nhmm\n</think>\n\nHello!"), ("user", "Again")]),
    ("think_last", [("system", "S"), ("user", "Q"), ("assistant", "\n<think>\n\nr1\nr2\n\n</think>\n\nA\n")]),
    ("no_think_last", [("user", "Q"), ("assistant", "\nplain answer")]),
    # gpt-oss refuses harmony channel tags in a message's content; an empty system message
    ("channel_tags", [("user", "Q"), ("assistant", "<|channel|>final<|message|>A"), ("user", "R")]),
    ("empty_system", [("system", ""), ("user", "Q")]),
    # GLM-4.5 / 4.6 with thinking off: '/nothink' after a user message that does not end with it already
    ("nothink_suffix", [("user", "Q /nothink"), ("assistant", "A"), ("user", "R")]),
]


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def render(text, msgs, bos, eos, tools=None, **kwargs):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    # transformers' tojson: json.dumps with its keyword arguments (Llama 3.1's indent=4), ensure_ascii off
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_DATE
    tmpl = env.from_string(text)
    messages = [m if isinstance(m, dict) else {"role": m[0], "content": m[1]} for m in msgs]
    try:
        return tmpl.render(messages=messages, add_generation_prompt=True, tools=tools, documents=None,
                           bos_token=bos, eos_token=eos, **kwargs), None
    except TemplateError as e:
        return None, str(e)
    except jinja2.exceptions.UndefinedError as e:  # not a raise_exception: the C side has no equivalent
        return None, "undefined: " + str(e)


def c_string(s):
    """A C string literal (several adjacent pieces) of the UTF-8 bytes of s."""
    if s is None:
        return "NULL"
    out, line = [], ""
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch == "\\":
            piece = "\\\\"
        elif ch == '"':
            piece = '\\"'
        elif 0x20 <= b < 0x7F and ch != "?":
            piece = ch
        else:
            piece = "\\%03o" % b
        line += piece
        if len(line) > 100 or ch == "\n":
            out.append('"' + line + '"')
            line = ""
    if line or not out:
        out.append('"' + line + '"')
    return "\n    ".join(out)


def main():
    lines = ["/* Generated by scripts/gen-chat-expected.py (jinja2 %s): do not edit. */" % jinja2.__version__, ""]
    for name, msgs in CONVERSATIONS:
        lines.append("static const lb_chat_msg conv_%s[] = {" % name)
        for r, c in msgs:
            lines.append("    {%s, %s, NULL, 0, NULL}," % (c_string(r), c_string(c)))
        lines.append("};")
    lines.append("static const struct { const char *name; const lb_chat_msg *msgs; int n; } conversations[] = {")
    for name, msgs in CONVERSATIONS:
        lines.append('    {"%s", conv_%s, %d},' % (name, name, len(msgs)))
    lines.append("};")
    lines.append("enum { N_CONV = %d, N_TEMPLATES = %d };" % (len(CONVERSATIONS), len(TEMPLATES)))
    lines.append("static const char *const fixed_date = %s;" % c_string(FIXED_DATE))
    lines.append("static const struct {")
    lines.append("    const char *file, *family, *bos, *eos, *jinja;")
    lines.append("    const char *expected[N_CONV]; /* NULL: the template raises error[i] */")
    lines.append("    const char *error[N_CONV];")
    lines.append("} templates[] = {")
    for fname, family, bos, eos in TEMPLATES:
        text = open(os.path.join(HERE, fname), encoding="utf-8").read()
        exp, err = [], []
        for _, msgs in CONVERSATIONS:
            o, e = render(text, msgs, bos, eos)
            exp.append(o)
            err.append(e)
        lines.append("    {%s, %s, %s, %s," % (c_string(fname), c_string(family), c_string(bos), c_string(eos)))
        lines.append("     %s," % c_string(text))
        lines.append("     {" + ",\n      ".join(c_string(o) for o in exp) + "},")
        lines.append("     {" + ",\n      ".join(c_string(e) for e in err) + "}},")
    lines.append("};")
    # gpt-oss with each reasoning_effort (a chat_template_kwargs entry) on the first conversation
    text = open(os.path.join(HERE, "openai-gpt-oss-120b.jinja"), encoding="utf-8").read()
    lines.append("static const struct { const char *effort, *expected; } gpt_oss_effort[] = {")
    for effort in ("low", "medium", "high"):
        o, e = render(text, CONVERSATIONS[0][1], "<|startoftext|>", "<|return|>", reasoning_effort=effort)
        assert e is None, e
        lines.append("    {%s, %s}," % (c_string(effort), c_string(o)))
    lines.append("};")
    # the thinking switch (chat_template_kwargs enable_thinking and thinking, the name DeepSeek-V3.1's and
    # Granite's templates read): every conversation with it off and on, for the templates that read it; the others must
    # render exactly as without it (lowbit ignores the switch there)
    lines.append("static const struct { const char *file; int enable; const char *expected[N_CONV], *error[N_CONV]; }"
                 " thinking_switch[] = {")
    for fname, family, bos, eos in TEMPLATES:
        text = open(os.path.join(HERE, fname), encoding="utf-8").read()
        switch = fname in THINKING_SWITCH
        for enable in (False, True):
            exp, err = [], []
            for _, msgs in CONVERSATIONS:
                o, e = render(text, msgs, bos, eos, enable_thinking=enable, thinking=enable)
                if not switch:
                    assert (o, e) == render(text, msgs, bos, eos), (fname, "renders differently with the switch")
                exp.append(o)
                err.append(e)
            if not switch:
                continue
            lines.append("    {%s, %d," % (c_string(fname), int(enable)))
            lines.append("     {" + ",\n      ".join(c_string(o) for o in exp) + "},")
            lines.append("     {" + ",\n      ".join(c_string(e) for e in err) + "}},")
    lines.append("};")
    # tool calls: the tools and each call's arguments as JSON text (what lowbit's formatters take), and
    # the renderings
    lines.append("static const char *const tool_json[] = {%s};" % ", ".join(
        c_string(json.dumps(t, ensure_ascii=False)) for t in TOOLS))
    for name, msgs, _ in TOOL_CONVERSATIONS:
        for i, m in enumerate(msgs):
            if isinstance(m, dict) and m.get("tool_calls"):
                lines.append("static const lb_chat_tool_call tc_%s_%d[] = {%s};" % (name, i, ", ".join(
                    "{%s, %s, %s}" % (c_string(tc["function"]["name"]),
                                      c_string(json.dumps(tc["function"]["arguments"], ensure_ascii=False)),
                                      c_string(tc["id"]))
                    for tc in m["tool_calls"])))
        lines.append("static const lb_chat_msg tconv_%s[] = {" % name)
        for i, m in enumerate(msgs):
            if isinstance(m, dict):
                calls = m.get("tool_calls") or []
                lines.append("    {%s, %s, %s, %d, %s}," % (c_string(m["role"]), c_string(m["content"]),
                                                            ("tc_%s_%d" % (name, i)) if calls else "NULL", len(calls),
                                                            c_string(m["tool_call_id"]) if "tool_call_id" in m else "NULL"))
            else:
                lines.append("    {%s, %s, NULL, 0, NULL}," % (c_string(m[0]), c_string(m[1])))
        lines.append("};")
    lines.append("static const struct { const char *file, *conv; const lb_chat_msg *msgs; int n, with_tools; "
                 "const char *expected, *error; } tool_expected[] = {")
    tokens = {f: (b, e) for f, _, b, e in TEMPLATES}
    for fname in TOOL_TEMPLATES:
        text = open(os.path.join(HERE, fname), encoding="utf-8").read()
        bos, eos = tokens[fname]
        for name, msgs, with_tools in TOOL_CONVERSATIONS:
            o, e = render(text, msgs, bos, eos, tools=TOOLS if with_tools else None)
            # Llama 3.1: one call a message; Mistral: 9-character ids
            assert e is None or "llama" in fname or "mistral" in fname, (fname, name, e)
            lines.append("    {%s, %s, tconv_%s, %d, %d,\n     %s, %s}," % (
                c_string(fname), c_string(name), name, len(msgs), int(with_tools),
                c_string(o) if o is not None else "NULL", c_string(e) if e is not None else "NULL"))
    lines.append("};")
    lines.append("static const struct { const char *file, *jinja; } refused[] = {")
    for fname in REFUSED:
        text = open(os.path.join(HERE, fname), encoding="utf-8").read()
        lines.append("    {%s,\n     %s}," % (c_string(fname), c_string(text)))
    lines.append("};")
    out = os.path.join(HERE, "expected.inc")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
