"""Medians and per-round ratios of the alternated runs in this directory (sort.csv, scan.csv).

Each row of a CSV is one process (1 warm-up + 1 timed repetition, the programs of
bench/algorithms/ and bench/rust/src/bin/sort.rs); every runtime of a bench ran once per round,
one after the other. cpu = region_s * run_util (the process's CPU time over the timed region).
Ratios are medians of per-round ratios (both runtimes from the same round).
Usage: python3 table.py sort.csv [scan.csv ...]   (unroll.csv: "before" is the rolled loop)
"""
import csv, sys, statistics as st
from collections import defaultdict

t = defaultdict(list); c = defaultdict(list); rd = defaultdict(dict); rc = defaultdict(dict); loads = []
for k, f in enumerate(sys.argv[1:]):
    for row in csv.DictReader(open(f)):
        # unroll.csv compares two builds of this branch: the rolled one in the "before" column
        i = {"promptly-rolled": "promptly-before", "promptly-unrolled": "promptly"}.get(row["runtime"], row["runtime"])
        n, w, r = row["bench"], row["workers"], f"{k}:{row['round']}"
        v = float(row["region_s"]); u = float(row["run_util"]); loads.append(float(row["loadavg_1min"]))
        t[(n, w, i)].append(v); c[(n, w, i)].append(v * u); rd[(n, w, r)][i] = v; rc[(n, w, r)][i] = v * u


def ratio(d, a, b, n, w):
    x = [dd[a] / dd[b] for (nn, ww, _), dd in d.items() if (nn, ww) == (n, w) and a in dd and b in dd]
    return f"{st.median(x):.2f}" if x else "-"


print(f"load average (1 min) during the runs: median {st.median(loads):.1f}, {min(loads):.1f}-{max(loads):.1f}\n")
print("| bench | workers | promptly before | promptly | tbb | std-par | rayon | promptly / best peer (wall; cpu) | promptly / before (wall; cpu) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, w in sorted(set((n, w) for n, w, _ in t)):
    cell = lambda i: f"{st.median(t[(n, w, i)]) * 1e3:.0f} / {st.median(c[(n, w, i)]) * 1e3:.0f}" if (n, w, i) in t else "-"
    peers = [p for p in ("tbb", "std-par", "rayon") if (n, w, p) in t]
    best = min(peers, key=lambda p: st.median(t[(n, w, p)]))
    bestc = min(peers, key=lambda p: st.median(c[(n, w, p)]))
    print(f"| {n} | {w} | {cell('promptly-before')} | {cell('promptly')} | {cell('tbb')} | {cell('std-par')} | {cell('rayon')} "
          f"| {ratio(rd, 'promptly', best, n, w)} ({best}); {ratio(rc, 'promptly', bestc, n, w)} ({bestc}) "
          f"| {ratio(rd, 'promptly', 'promptly-before', n, w)}; {ratio(rc, 'promptly', 'promptly-before', n, w)} |")
