#!/usr/bin/env python3
"""Per-round view of a `jobs` suite run (run_bench.py jobs ... --out DIR): each runtime's mean and
p99 flow time, start-wait p99 and decision p99 per measured round, then the per-round ratio of
mean and p99 flow time to the same round's `promptly-drep` (and the mean to
`promptly-drep-steal-boundary`), median and range over the rounds: the form the issue's targets
take (bench/results/jobs/serpt/README.md).

Usage: suite_rounds.py DIR/latest.json
"""
import json
import statistics
import sys


def main():
    results = json.load(open(sys.argv[1]))["results"]
    by = {}
    for r in results:
        # Only the replays at one load have flow times (not bing-sweep, asteal-phases, elastic).
        if "flow_ms_mean" in r["samples"]:
            by.setdefault(r["bench"], {})[r["runtime"]] = r["samples"]

    def fmt(xs, f):
        return "[" + ", ".join(f.format(x) for x in xs) + "]"

    print("Per round (mean / p99 flow ms; start-wait and decision p99 ms):")
    for bench, rts in by.items():
        for rt, s in rts.items():
            print(f"{bench:10} {rt:28} mean {fmt(s['flow_ms_mean'], '{:.1f}')} p99 {fmt(s['flow_ms_p99'], '{:.0f}')} "
                  f"start_p99_ms {fmt([x / 1e3 for x in s.get('start_us_p99', [])], '{:.1f}')} "
                  f"dec_p99_ms {fmt([x / 1e3 for x in s.get('decision_us_p99', [])], '{:.2f}')}")
    print("\nPer-round ratio to the same round's drep, median (range); mean also to drep-steal-boundary:")
    for bench, rts in by.items():
        if "promptly-drep" not in rts or "promptly-drep-steal-boundary" not in rts:
            continue
        base, sb = rts["promptly-drep"], rts["promptly-drep-steal-boundary"]
        for rt, s in rts.items():
            if not rt.startswith("promptly-") or rt in ("promptly-drep",):
                continue
            mean = [a / b for a, b in zip(s["flow_ms_mean"], base["flow_ms_mean"])]
            p99 = [a / b for a, b in zip(s["flow_ms_p99"], base["flow_ms_p99"])]
            msb = [a / b for a, b in zip(s["flow_ms_mean"], sb["flow_ms_mean"])]
            print(f"{bench:10} {rt:28} mean {statistics.median(mean):.2f}x ({min(mean):.2f}-{max(mean):.2f}) "
                  f"p99 {statistics.median(p99):.2f}x ({min(p99):.2f}-{max(p99):.2f}) "
                  f"mean/sb {statistics.median(msb):.2f}x ({min(msb):.2f}-{max(msb):.2f})")


if __name__ == "__main__":
    main()
