#!/usr/bin/env python3
"""Allotment timeline of suite `priority`: cores per priority level over time, from the
`runtime_config::allotment_trace` CSV of one three-level fib run under `aps`.

The fib program (promptly_fib_levels.cpp, option --trace FILE) writes FILE, one line per level at
every policy decision (quantum ticks and level empty/non-empty events):

    t_s,policy,level,desire,allotted,utilization,ready

and FILE.json with the levels' submission and completion times on the same clock.

    python3 bench/priority/plot_allotment.py TRACE.csv [TRACE.csv ...] --out DIR

writes DIR/allotment-<name>.png per trace (<name>: the trace's file name without
`allotment-` and `.csv`, e.g. fib-ep-w2). Top panel: workers allotted to each level (stacked,
step-wise); the dashed lines mark each level's completion. Bottom panel: each level's desire and
its measured utilization in the previous quantum. Needs matplotlib.
"""

import argparse
import csv
import json
import sys
from pathlib import Path

LEVEL_NAMES = ["H (level 0)", "M (level 1)", "L (level 2)"]


def read_trace(path):
    """{level: {"t": [...], "desire": [...], "allotted": [...], "util": [...], "ready": [...]}}."""
    levels = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            d = levels.setdefault(int(row["pool"] if "pool" in row else row["level"]), {"t": [], "desire": [], "allotted": [], "util": [], "ready": []})
            d["t"].append(float(row["t_s"]))
            d["desire"].append(float(row["desire"]))
            d["allotted"].append(int(row["allotted"]))
            d["util"].append(float(row["utilization"]))
            d["ready"].append(int(row["ready"]))
    return levels


def plot_allotment(trace, png, title=None):
    """Renders one trace to `png`; returns False (with a warning) if matplotlib or the trace is
    missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("warning: matplotlib is not installed, no allotment plot", file=sys.stderr)
        return False
    trace = Path(trace)
    if not trace.is_file():
        print(f"warning: no allotment trace {trace}", file=sys.stderr)
        return False
    levels = read_trace(trace)
    if not levels:
        print(f"warning: allotment trace {trace} is empty", file=sys.stderr)
        return False
    side = {}
    if Path(str(trace) + ".json").is_file():
        side = json.loads(Path(str(trace) + ".json").read_text())
    # the run ends when the last level finished (the trace goes on until the runtime stopped)
    t_end = max(side.get("done_s", [0])) * 1.03 or max(max(d["t"]) for d in levels.values())

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6.4), sharex=True, height_ratios=[3, 2])
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order = sorted(levels)
    # Decisions happen at events and quanta only (the aps master sleeps while a single level has
    # work), so the last allotment holds until the end: extend every series to t_end.
    t = list(levels[order[0]]["t"]) + [t_end]
    stack = [list(levels[l]["allotted"]) + [levels[l]["allotted"][-1]] for l in order]
    ax1.stackplot(t, *stack, step="post", labels=[LEVEL_NAMES[l] if l < 3 else f"level {l}" for l in order],
                  colors=[colors[i % len(colors)] for i in range(len(order))], alpha=0.85)
    for i, done in enumerate(side.get("done_s", [])):
        ax1.axvline(done, color=colors[i % len(colors)], ls="--", lw=1.2)
        ax1.annotate(f"{LEVEL_NAMES[i].split()[0]} done {done:.3f} s", (done, 0), xytext=(3, 3 + 14 * i),
                     textcoords="offset points", fontsize="small")
    workers = side.get("workers") or max(sum(x) for x in zip(*stack))
    ax1.set_ylim(0, workers + 0.5)
    ax1.set_ylabel("workers allotted")
    ax1.legend(loc="upper right", fontsize="small")
    ax1.grid(alpha=0.3)
    for i, l in enumerate(order):
        d = levels[l]
        ax2.step(d["t"], d["desire"], where="post", color=colors[i % len(colors)], label=f"{LEVEL_NAMES[l].split()[0]} desire")
        ax2.plot(d["t"], d["util"], ".", ms=2, color=colors[i % len(colors)], alpha=0.5)
    ax2.set_ylabel("desire (line), utilization (dots)")
    ax2.set_xlabel("time since the runtime started (s)")
    ax2.set_xlim(0, t_end)
    ax2.legend(loc="upper right", fontsize="small")
    ax2.grid(alpha=0.3)
    if title is None:
        title = (f"{trace.stem.removeprefix('allotment-')}: {side.get('policy', '?')} "
                 f"rho={side.get('rho', '?')} L={side.get('quantum_us', '?')} us delta={side.get('delta', '?')}, "
                 f"{workers} workers, fib({side.get('n', '?')}) serial below {side.get('base', '?')} at H, M, L; "
                 f"fib-ideal {side.get('ideal_s', 0):.3f} s")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+", help="allotment trace CSV files")
    p.add_argument("--out", required=True, help="directory of the PNGs")
    args = p.parse_args(argv)
    ok = True
    for tr in args.traces:
        name = Path(tr).stem.removeprefix("allotment-")
        png = Path(args.out) / f"allotment-{name}.png"
        if plot_allotment(tr, png):
            print(f"wrote {png}", file=sys.stderr)
        else:
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
