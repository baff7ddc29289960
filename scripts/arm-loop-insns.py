#!/usr/bin/env python3
"""Instruction mix of the loops of aarch64 functions, from objdump -d output.

    aarch64-linux-gnu-objdump -d OBJ | scripts/arm-loop-insns.py [FUNCTION ...]

For every function (or those named) prints each loop (a backward branch and
its target; nested loops each) with its instruction count by class:
  simd     ASIMD / FP data processing (vector registers, excluding moves)
  mov      vector register copies and immediates (mov vX.16b, movi, fmov)
  vld/vst  vector loads / stores
  scalar   general-register instructions (address arithmetic, branches)
Used for the per-256-weight-block counts in docs/codebooks.md."""
import re
import sys

func_re = re.compile(r'^([0-9a-f]+) <([^>]+)>:$')
insn_re = re.compile(r'^\s*([0-9a-f]+):\s+[0-9a-f]{8}\s+(\S+)\s*(.*)$')
branch_re = re.compile(r'^(b(\.\w+)?|cbn?z|tbn?z)$')


def classify(mn, ops):
    ops = ops.split('//')[0]
    has_v = bool(re.search(r'\bv\d+\.|\{v\d+|\b[qdsh]\d+\b|\bb\d+\b', ops))
    if mn.startswith(('ld', 'st')) and has_v:
        return 'vst' if mn.startswith('st') else 'vld'
    if mn in ('movi', 'fmov') and has_v:
        return 'mov'
    if mn == 'mov' and re.match(r'\s*v\d+\.16b, v\d+\.16b\s*$', ops):
        return 'mov'
    if has_v:
        return 'simd'
    return 'scalar'


def main():
    want = set(sys.argv[1:])
    funcs = {}
    order = []
    cur = None
    for line in sys.stdin:
        line = line.rstrip('\n')
        m = func_re.match(line)
        if m:
            cur = m.group(2)
            funcs[cur] = []
            order.append(cur)
            continue
        m = insn_re.match(line)
        if m and cur:
            funcs[cur].append((int(m.group(1), 16), m.group(2), m.group(3)))
    for f in order:
        if want and f not in want:
            continue
        ins = funcs[f]
        addr = {a: i for i, (a, _, _) in enumerate(ins)}
        loops = []
        for i, (a, mn, ops) in enumerate(ins):
            if branch_re.match(mn):
                t = re.search(r'\b([0-9a-f]+) <', ops)
                if t:
                    ta = int(t.group(1), 16)
                    if ta <= a and ta in addr:
                        loops.append((addr[ta], i))
        # innermost loops only (a loop whose range holds another is skipped)
        loops = sorted(set(loops))
        loops = [(s, e) for s, e in loops
                 if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]
        print(f'{f}: {len(ins)} instructions')
        for s, e in loops:
            counts = {'simd': 0, 'mov': 0, 'vld': 0, 'vst': 0, 'scalar': 0}
            mix = {}
            for _, mn, ops in ins[s:e + 1]:
                c = classify(mn, ops)
                counts[c] += 1
                if c == 'simd':
                    if mn in ('tbl', 'tbx'):  # by table registers: tbl1 .. tbl4
                        m = re.search(r'\{([^}]*)\}', ops)
                        regs = m.group(1) if m else ''
                        n = regs.count(',') + 1 if '-' not in regs else \
                            int(re.findall(r'v(\d+)', regs)[-1]) - int(re.findall(r'v(\d+)', regs)[0]) + 1
                        mn = f'{mn}{n}'
                    mix[mn] = mix.get(mn, 0) + 1
            total = e - s + 1
            print(f'  loop {ins[s][0]:#x}..{ins[e][0]:#x}: {total} insns: ' +
                  ', '.join(f'{k} {v}' for k, v in counts.items()))
            print('    simd: ' + ' '.join(f'{k}:{v}' for k, v in sorted(mix.items(), key=lambda x: -x[1])))


if __name__ == '__main__':
    main()
