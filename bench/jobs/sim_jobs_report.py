#!/usr/bin/env python3
"""Tables from bench/jobs/sim_jobs.py's JSON files (or live rows in the same form): per bench and
variant, each metric's mean over the rounds (min-max), and the mean and p99 flow time over
`drep`'s and `drep-steal-boundary`'s of the same round (the ratio's mean over rounds).

Usage: sim_jobs_report.py FILE.json [FILE.json ...] > table.md
"""
import json
import statistics
import sys
from collections import defaultdict

METRICS = [("flow_ms_mean", "mean flow ms"), ("flow_ms_p99", "p99 flow ms"),
           ("start_wait_ms_p99", "start-wait p99 ms"), ("slowdown_mean", "mean slowdown")]


def fmt(xs):
    m = statistics.mean(xs)
    return f"{m:.3g} ({min(xs):.3g}-{max(xs):.3g})" if len(xs) > 1 else f"{m:.3g}"


def main():
    rows = []
    for f in sys.argv[1:]:
        rows += json.load(open(f))
    by = defaultdict(list)
    for r in rows:
        by[(r["workers"], r["bench"], r["runtime"])].append(r)
    base = {(r["workers"], r["bench"], r["round"], r["runtime"]): r for r in rows}
    order = []
    for r in rows:
        k = (r["workers"], r["bench"])
        if k not in order:
            order.append(k)
    for workers, bench in order:
        runtimes = []
        for r in rows:
            if (r["workers"], r["bench"]) == (workers, bench) and r["runtime"] not in runtimes:
                runtimes.append(r["runtime"])
        rounds = len({r["round"] for r in rows if (r["workers"], r["bench"]) == (workers, bench)})
        print(f"\n### {bench}, {workers} cores, {rounds} round(s)\n")
        print("| variant | " + " | ".join(t for _, t in METRICS) +
              " | mean / drep | mean / steal-boundary | p99 / drep |")
        print("|---" * (len(METRICS) + 4) + "|")
        for rt in runtimes:
            rs = by[(workers, bench, rt)]
            cells = [fmt([r[m] for r in rs]) for m, _ in METRICS if all(m in r for r in rs)]

            def ratio(metric, against):
                xs = [r[metric] / base[(workers, bench, r["round"], against)][metric] for r in rs
                      if (workers, bench, r["round"], against) in base]
                return f"{statistics.mean(xs):.2f}" if xs else "-"
            print(f"| {rt} | " + " | ".join(cells) + f" | {ratio('flow_ms_mean', 'drep')} | "
                  f"{ratio('flow_ms_mean', 'drep-steal-boundary')} | {ratio('flow_ms_p99', 'drep')} |")


if __name__ == "__main__":
    main()
