"""Plots for ./run demo: latency CDF per policy and the aps allotment timeline.

Usage: python3 examples/plot_demo.py OUTDIR   (reads OUTDIR/latency.csv, OUTDIR/allotment.csv)
"""
import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/demo")
    lat = defaultdict(list)
    with open(out / "latency.csv") as f:
        for row in csv.DictReader(f):
            lat[row["policy"]].append(float(row["latency_us"]))
    fig, ax = plt.subplots(figsize=(7, 4))
    for policy, values in lat.items():
        values.sort()
        ys = [(i + 1) / len(values) for i in range(len(values))]
        ax.plot(values, ys, label=policy)
    ax.set_xscale("log")
    ax.set_xlabel("interactive job latency (us, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("Latency CDF under a saturating background (2 workers)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "latency_cdf.png", dpi=120)

    trace = out / "allotment.csv"
    if trace.exists():
        series = defaultdict(lambda: ([], []))
        with open(trace) as f:
            for row in csv.DictReader(f):
                t, level = float(row["t_s"]), row["pool"]  # a level is a pool (docs/policies.md)
                series[level][0].append(t)
                series[level][1].append(int(row["allotted"]))
        fig, ax = plt.subplots(figsize=(7, 3))
        for level, (ts, ys) in sorted(series.items()):
            ax.step(ts, ys, where="post", label=f"level {level}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("workers allotted")
        ax.set_title("aps: workers per level over time")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "allotment.png", dpi=120)
    print(f"plots: {out / 'latency_cdf.png'}" + (f", {out / 'allotment.png'}" if trace.exists() else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
