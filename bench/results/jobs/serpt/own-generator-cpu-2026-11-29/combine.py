#!/usr/bin/env python3
"""Per-round serpt ratios over every runs-*.txt of own_cpu_ab.py: median (range) per load and setup."""
import re
import statistics as st
from pathlib import Path

LINE = re.compile(r"round (\d+) (bing-\d+) (\S+) (\S+): mean ([\d.]+) p99 ([\d.]+) start_p50 (\d+) us late (\d+) us work/est ([\d.]+)")
rows = {}
for f in sorted(Path(__file__).parent.glob("runs-*.txt")):
    for m in LINE.finditer(f.read_text()):
        rnd, load, setup, pol = f.stem + m[1], m[2], m[3], m[4]
        rows[(load, setup, pol, rnd)] = dict(mean=float(m[5]), p99=float(m[6]), start=float(m[7]), late=float(m[8]),
                                             west=float(m[9]))
rounds = sorted({k[3] for k in rows})
fmt = lambda v: f"{st.median(v):.2f}x ({min(v):.2f}-{max(v):.2f})"
for load in ("bing-75", "bing-90"):
    for setup in sorted({k[1] for k in rows if k[0] == load}, key=lambda x: (x[-2:], x)):
        g = lambda pol: [rows[(load, setup, pol, r)] for r in rounds if (load, setup, pol, r) in rows]
        d, sb, s = g("drep"), g("drep-steal-boundary"), g("serpt")
        rd = [a["mean"] / b["mean"] for a, b in zip(s, d)]
        rsb = [a["mean"] / b["mean"] for a, b in zip(s, sb)]
        rp = [a["p99"] / b["p99"] for a, b in zip(s, d)]
        print(f"| {load} | {setup} | {len(rd)} | {st.median([x['mean'] for x in d]):.2f} | {st.median([x['mean'] for x in sb]):.2f} | "
              f"{st.median([x['mean'] for x in s]):.2f} | {fmt(rd)} | {fmt(rsb)} | {fmt(rp)} | "
              f"{st.median([x['start'] for x in s]):.0f} | {st.median([x['late'] for x in d + sb + s]):.0f} | "
              f"{st.median([x['west'] for x in s]):.3f} |")
