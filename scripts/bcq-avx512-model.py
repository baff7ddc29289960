#!/usr/bin/env python3
"""Model of the lane bookkeeping of the AVX-512 BCQ kernel's plane_block
(src/kernels/x86/bcq_avx512.c), for machines without AVX-512.

Each intrinsic is modelled by its documented semantics on 128-bit lanes
(vpshufb, vpunpck{l,h}bw, vshufi64x2, 16-bit adds); the tables are built as
Q8_0_LUT4 lays them out (formats/bcq.h: lb_lut4_pos) from random Q8_0
values, the plane bytes are random, and every row's result must equal the
direct sum of its 8 slices' table entries. It checks the shuffles, not the
compiled code: test_bcq does that on AVX-512 hardware.

    python3 scripts/bcq-avx512-model.py [TRIALS]"""
import random
import sys


def lut4_pos(s, e):  # formats/bcq.h
    return 128 * (s // 4) + 64 * (s % 2) + 16 * ((s % 4) // 2) + e


def lane(v, j):
    return v[16 * j:16 * j + 16]


def shuffle_epi8(t, idx):  # per lane: t[idx & 15], 0 where idx has bit 7
    return [0 if i & 0x80 else t[16 * (k // 16) + (i & 15)] for k, i in enumerate(idx)]


def unpack_epi8(a, b, hi):  # per lane: bytes 0-7 (lo) or 8-15 (hi) of a and b interleaved
    out = []
    for j in range(4):
        for k in range(8 * hi, 8 * hi + 8):
            out += [a[16 * j + k], b[16 * j + k]]
    return out


def words(v):
    return [((v[2 * i] | v[2 * i + 1] << 8) ^ 0x8000) - 0x8000 for i in range(len(v) // 2)]


def add_epi16(a, b):
    out = []
    for x in (p + q for p, q in zip(words(a), words(b))):
        out += [x & 0xFF, (x >> 8) & 0xFF]
    return out


def shuffle_i64x2(a, b, imm):  # lanes 0, 1 from a, 2, 3 from b, chosen by 2-bit fields of imm
    return lane(a, imm & 3) + lane(a, imm >> 2 & 3) + lane(b, imm >> 4 & 3) + lane(b, imm >> 6 & 3)


def mm_shuffle(z, y, x, w):
    return z << 6 | y << 4 | x << 2 | w


def plane_block(t, pl):  # the kernel's steps, in its order
    tables = [t[o:o + 32] + t[o + 128:o + 160] for o in (0, 32, 64, 96)]  # le, he, lo, ho
    ie, io = [b & 15 for b in pl], [b >> 4 for b in pl]
    le, he = shuffle_epi8(tables[0], ie), shuffle_epi8(tables[1], ie)
    lo, ho = shuffle_epi8(tables[2], io), shuffle_epi8(tables[3], io)
    a = add_epi16(unpack_epi8(le, he, 0), unpack_epi8(lo, ho, 0))
    b = add_epi16(unpack_epi8(le, he, 1), unpack_epi8(lo, ho, 1))
    t2 = add_epi16(shuffle_i64x2(a, b, mm_shuffle(1, 0, 1, 0)), shuffle_i64x2(a, b, mm_shuffle(3, 2, 3, 2)))
    u = add_epi16(t2, shuffle_i64x2(t2, t2, mm_shuffle(2, 3, 0, 1)))
    return words(shuffle_i64x2(u, u, mm_shuffle(2, 0, 2, 0))[:32])


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rng = random.Random(3)
    for _ in range(trials):
        x = [rng.randint(-127, 127) for _ in range(32)]

        def entry(s, e):
            return sum(x[4 * s + k] if e >> k & 1 else -x[4 * s + k] for k in range(4))

        t = [0] * 256
        for s in range(8):
            for e in range(16):
                v = entry(s, e) & 0xFFFF
                t[lut4_pos(s, e)], t[lut4_pos(s, e) + 32] = v & 0xFF, v >> 8
        pl = [rng.randint(0, 255) for _ in range(64)]  # byte k of row r at 16 k + r
        got = plane_block(t, pl)
        for r in range(16):
            want = sum(entry(2 * k + h, pl[16 * k + r] >> 4 * h & 15) for k in range(4) for h in range(2))
            if got[r] != want:
                sys.exit(f"row {r}: model {got[r]}, direct sum {want}")
    print(f"bcq avx512 model: {trials} random blocks x 16 rows equal to the direct sums")


if __name__ == "__main__":
    main()
