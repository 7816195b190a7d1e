#!/usr/bin/env python3
"""Live A/B of builds of the `jobs` suite's Promptly program (bench_jobs_promptly) on the suite's
traces: every round runs each (load, variant) once, variants alternated (reversed every other
round), all at the same arrival schedule (`--unit-ns`, measured once before the rounds as the
suite does). Prints one line per run and, at the end, per-round ratios to the same round's `drep`
(from the first build), median and range.

Usage: ab_live.py --old EXE --new EXE --rounds N [--loads bing:75,finance:75] [--jobs 1200]
                  [--hints exact,wrong] [--build NAME=EXE ...] [--baselines drep,drep-steal-boundary]

--build adds a further build of `serpt` (its label NAME-serpt-HINTS); --baselines are the
size-blind policies run from the first build (drep always, first).
"""
import argparse
import statistics

from live_jobs import run_program


def run(exe, trace, rho, jobs, unit_ns, args):
    return run_program(exe, trace, rho, jobs, ["--unit-ns", str(unit_ns)] + args)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--build", action="append", default=[], metavar="NAME=EXE")
    ap.add_argument("--baselines", default="drep")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1200)
    ap.add_argument("--loads", default="bing:75,finance:75")
    ap.add_argument("--hints", default="exact")
    a = ap.parse_args()
    builds = [("old", a.old), ("new", a.new)] + [tuple(b.split("=", 1)) for b in a.build]
    units = sorted(run(a.old, "bing", 0.5, 10, 0, ["--calibrate", "1"])["unit_ns"] for _ in range(5))
    unit_ns = units[2]
    print(f"unit_ns {unit_ns:.1f} (median of 5)")
    baselines = ["drep"] + [b for b in a.baselines.split(",") if b and b != "drep"]
    variants = [(b, a.old, ["--policy", b]) for b in baselines]
    for h in a.hints.split(","):
        variants += [(f"{name}-serpt-{h}", exe, ["--policy", "serpt", "--hints", h]) for name, exe in builds]
    rows = {}
    for rnd in range(a.rounds):
        for spec in a.loads.split(","):
            trace, load = spec.split(":")
            for label, exe, args in (variants if rnd % 2 == 0 else variants[::-1]):
                m = run(exe, trace, int(load) / 100, a.jobs, unit_ns, args)
                rows.setdefault((spec, label), []).append(m)
                print(f"round {rnd} {spec} {label}: mean {m['flow_ms_mean']:.2f} p99 {m['flow_ms_p99']:.1f} "
                      f"start_p99 {m['start_us_p99'] / 1e3:.1f} ms", flush=True)
    print("\nper-round ratio to drep, median (range):")
    for (spec, label), ms in rows.items():
        base = rows[(spec, "drep")]
        mean = [m["flow_ms_mean"] / b["flow_ms_mean"] for m, b in zip(ms, base)]
        p99 = [m["flow_ms_p99"] / b["flow_ms_p99"] for m, b in zip(ms, base)]
        print(f"{spec:11} {label:24} mean {statistics.median(mean):.2f}x ({min(mean):.2f}-{max(mean):.2f}) "
              f"p99 {statistics.median(p99):.2f}x ({min(p99):.2f}-{max(p99):.2f})")
    if "drep-steal-boundary" in baselines:
        print("\nper-round mean ratio to drep-steal-boundary, median (range):")
        for (spec, label), ms in rows.items():
            base = rows[(spec, "drep-steal-boundary")]
            mean = [m["flow_ms_mean"] / b["flow_ms_mean"] for m, b in zip(ms, base)]
            print(f"{spec:11} {label:24} mean {statistics.median(mean):.2f}x ({min(mean):.2f}-{max(mean):.2f})")


if __name__ == "__main__":
    main()
