#!/usr/bin/env python3
"""Before/after comparison of one benchmark program built from two commits.

Runs OLD and NEW (the same bench program from two build trees) alternately,
ROUNDS times each, with the same arguments, and prints a Markdown table of
the chosen metrics from each program's RESULT line: median (min-max) per
side and the ratio new/old of the medians. Use it when a change could move
a number the committed reports show, and commit its output next to them.

  python3 bench/harness/ab.py --old /tmp/old/build/bench-bin/bench_fib_promptly \
      --new build/bench/bench-bin/bench_fib_promptly --rounds 7 \
      --metrics region_s -- --n 32 --cutoff 2 --workers 2 --warmup 2 --reps 10
"""
import argparse
import json
import statistics
import subprocess
import sys


def run_once(program, args, timeout):
    out = subprocess.run([program, *args], capture_output=True, text=True, timeout=timeout, check=True).stdout
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])["metrics"]
    raise RuntimeError(f"{program} printed no RESULT line")


def cell(values):
    return f"{statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--metrics", default="region_s", help="comma-separated metric names")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("args", nargs=argparse.REMAINDER, help="after --: the program's arguments")
    a = ap.parse_args()
    if a.rounds < 3:
        sys.exit("ab.py: --rounds must be >= 3 (medians of fewer say little)")
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    metrics = [m for m in a.metrics.split(",") if m]
    seen = {"old": {m: [] for m in metrics}, "new": {m: [] for m in metrics}}
    for r in range(a.rounds):
        for side, program in (("old", a.old), ("new", a.new)) if r % 2 == 0 else (("new", a.new), ("old", a.old)):
            got = run_once(program, args, a.timeout)
            for m in metrics:
                if m in got:
                    seen[side][m].append(float(got[m]))
                elif r > 0 and seen[side][m]:
                    sys.exit(f"ab.py: {program} reported metric '{m}' before, not now")
    for m in metrics:  # a metric new to one side (the change adds it) is shown for that side only
        if not seen["old"][m] and not seen["new"][m]:
            sys.exit(f"ab.py: neither program reports metric '{m}'")
    print(f"`{' '.join(args)}`, {a.rounds} rounds each, alternated (old first in odd rounds)\n")
    print("| metric | old median (min-max) | new median (min-max) | new / old |")
    print("|---|---|---|---|")
    for m in metrics:
        old, new = seen["old"][m], seen["new"][m]
        if not old or not new:
            print(f"| {m} | {cell(old) if old else 'not reported'} | {cell(new) if new else 'not reported'} | - |")
            continue
        ratio = statistics.median(new) / statistics.median(old) if statistics.median(old) else float("nan")
        print(f"| {m} | {cell(old)} | {cell(new)} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
