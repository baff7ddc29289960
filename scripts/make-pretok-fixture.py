#!/usr/bin/env python3
"""Writes the oracle of test_tokenizer's gpt-4o, tekken, smollm, deepseek-v3 and deepseek-llm cases: for every
case of tests/data/pretok/cases.inp, the words llama.cpp's pre-tokenizer cuts
(PRE.words) and the token ids it then gives (PRE.out).

Usage: [PRETOK_ONLY=NAME] python3 scripts/make-pretok-fixture.py PEER_SRC LLAMA_TOKENIZE
  PEER_SRC        an ik_llama.cpp (or llama.cpp) source tree, e.g. the one
                  ../shared/peers/build.sh unpacks into ~/.cache/lowbit-peers
  LLAMA_TOKENIZE  its llama-tokenize binary (cmake --build BUILD --target
                  llama-tokenize in the tree build.sh made)

Words: a small C++ program compiled against PEER_SRC/src/unicode.cpp calls
its unicode_regex_split with the regexes llama-vocab.cpp uses for the
pre-tokenizer, in its order (each checked to appear there verbatim; smollm's
are two: every digit apart, then GPT-2's on what is left) and prints each word as the
hex of its UTF-8 bytes, one line per case. With GPT-2's merges most words
come out as the same ids under any regex, so the words are what tells the
pre-tokenizers apart; the ids check the whole path (tekken's ignore_merges).

Ids: ../shared/tokenizer-tests/ggml-vocab-gpt-2.gguf with its
tokenizer.ggml.pre replaced by PRE (in a temporary file), each case
tokenized without BOS and without parsing special tokens (test_tokenizer's
add_special=false), one line of space-separated ids per case.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = os.path.join(HERE, "..", "..", "shared", "tokenizer-tests", "ggml-vocab-gpt-2.gguf")
DATA = os.path.join(HERE, "..", "tests", "data", "pretok")
SEP = "\n__ggml_vocab_test__\n"

# llama-vocab.cpp's regex_exprs for LLAMA_VOCAB_PRE_TYPE_GPT4O, _TEKKEN and
# _SMOLLM, as C++ source text (o200k's \p{Lu}... classes written with ASCII
# lookaheads); each a list, applied in turn
REGEX = {
    "gpt-4o": [r'"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+'
              r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?"
              r"((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|"
              r"'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
              r'"'],
    "tekken": [r'"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?'
              r"((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
              r'\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"'],
    "deepseek-v3": [r'"\\p{N}{1,3}"', '"[一-龥぀-ゟ゠-ヿ]+"',
                    r""""[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"""
                    r'''[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"'''],
    "smollm": [r'"\\p{N}"',
               r'''"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"'''],
}

# read from llama-vocab.cpp itself: the regex_exprs after this case label
# (DeepSeek LLM's cased-letter class is too long to spell out here)
FROM_SOURCE = {"deepseek-llm": "case LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM:"}


def regexes_of(vocab_src, label):
    """the string literals of the regex_exprs = { ... } block after label"""
    i = vocab_src.index(label)
    i = vocab_src.index("regex_exprs = {", i) + len("regex_exprs = {")
    block = vocab_src[i:vocab_src.index("};", i)]
    return [line.strip().rstrip(",") for line in block.split("\n") if line.strip().startswith('"')]


HARNESS = r"""
#include "unicode.h"
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>
int main(int argc, char **argv) {
    const std::vector<std::string> re = {%s};
    std::ifstream f(argv[1], std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
    for (size_t pos = 0; pos < all.size();) {
        size_t end = all.find(sep, pos);
        const std::string text = all.substr(pos, end - pos);
        pos = end + sep.size();
        const char *gap = "";
        for (const std::string &w : unicode_regex_split(text, re)) {
            printf("%%s", gap);
            gap = " ";
            for (uint32_t c : unicode_cpts_from_utf8(w)) printf("%%02x", unicode_utf8_to_byte(unicode_cpt_to_utf8(c)));
        }
        printf("\n");
    }
}
"""

STRING, ARRAY = 8, 9
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(data, pos, vtype):
    if vtype in FIXED:
        return pos + FIXED[vtype]
    if vtype == STRING:
        (n,) = struct.unpack_from("<Q", data, pos)
        return pos + 8 + n
    if vtype == ARRAY:
        etype, n = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if etype in FIXED:
            return pos + n * FIXED[etype]
        for _ in range(n):
            pos = skip_value(data, pos, etype)
        return pos
    raise ValueError("GGUF value type %d" % vtype)


def with_pre(data, pre):
    """The vocab-only GGUF with tokenizer.ggml.pre set to pre."""
    magic, version, n_tensors, n_kv = struct.unpack_from("<IIQQ", data, 0)
    assert magic == 0x46554747 and n_tensors == 0, "expected a vocab-only GGUF"
    pos, out, found = 24, [], False
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", data, pos)
        key = data[pos + 8:pos + 8 + klen].decode()
        (vtype,) = struct.unpack_from("<I", data, pos + 8 + klen)
        end = skip_value(data, pos + 12 + klen, vtype)
        if key == "tokenizer.ggml.pre":
            v = pre.encode()
            out.append(data[pos:pos + 12 + klen] + struct.pack("<Q", len(v)) + v)
            found = True
        else:
            out.append(data[pos:end])
        pos = end
    body = b"".join(out)
    if not found:
        k, v = b"tokenizer.ggml.pre", pre.encode()
        body += struct.pack("<Q", len(k)) + k + struct.pack("<IQ", STRING, len(v)) + v
        n_kv += 1
    return struct.pack("<IIQQ", magic, version, 0, n_kv) + body


def write(path, lines):
    tmp = path + ".tmp"
    open(tmp, "w").write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    print("%s: %d cases" % (path, len(lines)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    peer, tool = sys.argv[1:]
    cases_path = os.path.join(DATA, "cases.inp")
    cases = open(cases_path, encoding="utf-8", newline="").read().split(SEP)
    assert cases[-1] == "", "cases.inp must end with the separator"
    cases = cases[:-1]
    vocab_src = open(os.path.join(peer, "src", "llama-vocab.cpp")).read()
    with tempfile.TemporaryDirectory() as tmp:
        only = os.environ.get("PRETOK_ONLY")  # one pre-tokenizer (its files only)
        table = dict(REGEX, **{pre: regexes_of(vocab_src, label) for pre, label in FROM_SOURCE.items()})
        for pre, regexes in table.items():
            if only and pre != only:
                continue
            for regex in regexes:
                if regex not in vocab_src:
                    sys.exit("%s: a %s regex is not in %s/src/llama-vocab.cpp" % (sys.argv[0], pre, peer))
            src, exe = os.path.join(tmp, "split.cpp"), os.path.join(tmp, "split")
            open(src, "w").write(HARNESS % ", ".join(regexes))
            subprocess.run(["g++", "-O1", "-std=c++17", "-I", os.path.join(peer, "src"), src,
                            os.path.join(peer, "src", "unicode.cpp"), os.path.join(peer, "src", "unicode-data.cpp"),
                            "-o", exe], check=True)
            words = subprocess.run([exe, cases_path], check=True, capture_output=True, text=True).stdout
            write(os.path.join(DATA, pre + ".words"), words.rstrip("\n").split("\n"))

            vocab = os.path.join(tmp, "vocab-%s.gguf" % pre)
            open(vocab, "wb").write(with_pre(open(VOCAB, "rb").read(), pre))
            lines = []
            for i, text in enumerate(cases):
                case = os.path.join(tmp, "case.txt")
                open(case, "w", encoding="utf-8", newline="").write(text)
                r = subprocess.run([tool, "-m", vocab, "-f", case, "--ids", "--no-bos", "--no-parse-special",
                                    "--log-disable"], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit("case %d: %s failed:\n%s" % (i, tool, r.stderr))
                ids = r.stdout.strip().splitlines()[-1].strip("[] ")
                lines.append(" ".join(x.strip() for x in ids.split(",") if x.strip()))
            write(os.path.join(DATA, pre + ".out"), lines)


if __name__ == "__main__":
    main()
