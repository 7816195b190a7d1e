#!/usr/bin/env python3
"""Medians, ranges and per-round ratios of echo_ab.sh output (echo-runs.txt) and of email_ab.sh's
(email-runs.txt: round, build, resp p99 us, send p99 us; or bench/apps/email_ab.sh's lines).
Usage: summarize.py DIR"""
import re
import statistics as st
import sys
from pathlib import Path

d = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
rounds = {}
for line in (d / "echo-runs.txt").read_text().splitlines():
    m = re.search(r'requests_per_s": *([0-9.]+)', line)
    if m:
        r, name = line.split()[:2]
        rounds.setdefault(r, {})[name] = float(m.group(1))
names = list(next(iter(rounds.values())))
print("saturated echo, requests/s: median (range)")
for n in names:
    v = [r[n] for r in rounds.values()]
    print(f"  {n:8} {st.median(v) / 1e3:.0f}k ({min(v) / 1e3:.0f}-{max(v) / 1e3:.0f}k)")
print("per round, against stretch: median (range)")
for n in names:
    if n == "stretch":
        continue
    v = [r[n] / r["stretch"] for r in rounds.values()]
    print(f"  {n:8} {st.median(v):.2f}x ({min(v):.2f}-{max(v):.2f})")
email = d / "email-runs.txt"
if email.exists():
    runs = {}
    for line in email.read_text().splitlines():
        p = line.split()  # round, name, resp, send; or bench/apps/email_ab.sh's line
        if len(p) == 10:
            p = [p[0], p[1], p[5], p[7]]
        if len(p) == 4:
            runs.setdefault(p[1], []).append((float(p[2]), float(p[3])))
    print("email server, aps, checker off: p99 in ms, median (range)")
    for n, v in runs.items():
        resp, send = [x[0] / 1e3 for x in v], [x[1] / 1e3 for x in v]
        print(f"  {n:8} resp {st.median(resp):.2f} ({min(resp):.2f}-{max(resp):.2f})"
              f"  send {st.median(send):.2f} ({min(send):.2f}-{max(send):.2f})")
