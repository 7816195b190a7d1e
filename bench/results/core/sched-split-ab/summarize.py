#!/usr/bin/env python3
# Medians and spreads (min-max over rounds) of the A/B runs in this directory.
import glob, json, statistics
def load(pattern):
    out = []
    for f in sorted(glob.glob(pattern)):
        for line in open(f):
            if line.startswith("RESULT "):
                out.append(json.loads(line[7:])["metrics"])
    return out
for bench, keys in (("fib", ["region_s", "region_s_min", "run_util"]),
                    ("latency", ["latency_us_p50", "latency_us_p99", "floor_us_p99", "background_slowdown", "run_util"])):
    for key in keys:
        row = []
        for side in ("base", "new"):
            v = [m[key] for m in load(f"{bench}-{side}-r*.txt")]
            row.append(f"{side}: " + ", ".join(f"{x:.4g}" for x in v) + f" (median {statistics.median(v):.4g})")
        print(f"{bench} {key}: " + " | ".join(row))
