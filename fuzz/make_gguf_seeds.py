#!/usr/bin/env python3
"""Writes the tiny GGUF seed files in fuzz/seeds/ (run from anywhere).

Each seed is a valid file that reaches a different part of the reader; the
fuzzer mutates them into the malformed ones."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FIXED = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B",
         U64: "Q", I64: "q", F64: "d"}


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    """Encoding of a value after its type tag; arrays are (elem_type, [items])."""
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack("<" + FIXED[t], v)


def gguf(kvs, tensors, version=3, align=32):
    """kvs: [(key, type, value)]; tensors: [(name, ne, type, nbytes)]."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        head += gstr(k) + struct.pack("<I", t) + value(t, v)
    data, offsets = b"", []
    for _, _, _, nbytes in tensors:
        offsets.append(len(data))
        data += bytes((i * 37 + 11) & 255 for i in range(nbytes))
        data += b"\0" * (-len(data) % align)
    for (name, ne, t, _), off in zip(tensors, offsets):
        head += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", n) for n in ne)
        head += struct.pack("<IQ", t, off)
    head += b"\0" * (-len(head) % align)
    return head + data


SEEDS = {
    "empty.gguf": gguf([], []),
    "all-types.gguf": gguf([
        ("u8", U8, 7), ("i8", I8, -7), ("u16", U16, 700), ("i16", I16, -700),
        ("u32", U32, 70000), ("i32", I32, -70000), ("f32", F32, 0.5), ("bool", BOOL, 1),
        ("str", STR, "llama"), ("u64", U64, 1 << 40), ("i64", I64, -(1 << 40)), ("f64", F64, 2.5),
        ("arr.u32", ARR, (U32, [1, 2, 3])), ("arr.str", ARR, (STR, ["a", "", "bc"])),
        ("arr.nested", ARR, (ARR, [(I8, [1, -1]), (STR, ["x"])])),
    ], [("f32", [4, 2], 0, 32), ("f16", [8], 1, 16)]),
    "aligned-q.gguf": gguf([("general.alignment", U32, 64), ("general.architecture", STR, "llama")],
                           [("q8", [32, 2], 8, 68), ("q4", [32], 2, 18), ("q4k", [256], 12, 144)],
                           align=64),
    "v2-vocab.gguf": gguf([("tokenizer.ggml.tokens", ARR, (STR, ["<s>", "</s>", "a", "b"])),
                           ("tokenizer.ggml.scores", ARR, (F32, [0.0, 0.0, -1.0, -2.0]))],
                          [("token_embd.weight", [4, 4], 0, 64)], version=2),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, blob in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
        print(f"{name}: {len(blob)} bytes")
