#!/usr/bin/env python3
"""Live `jobs` replays (Bing 75 / 90%) in three setups, alternated per round (reversed every other):
  shared-2w:  2 workers, the releasing thread and the server's threads share the 2 CPUs (the suite);
  shared-1w:  1 worker, nothing pinned;
  own-1w:     1 worker on CPU 0, every other thread pinned to CPU 1 (--generator-cpu 1).
Each setup runs drep, drep-steal-boundary and serpt (exact hints) at one arrival schedule (the
work unit measured once, median of 5). Prints a line per run; combine.py makes the tables
(the runs-*.txt files also end with this script's earlier per-set summary).

Usage: own_cpu_ab.py EXE ROUNDS [SETUP,SETUP,...]   (default shared-2w,shared-1w,own-1w; also scale4-2w)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "bench" / "jobs"))
from live_jobs import run_program  # noqa: E402

SETUPS = {"shared-2w": (2, []), "shared-1w": (1, []), "own-1w": (1, ["--generator-cpu", "1"]),
          # Jobs 4x larger at a quarter of the arrival rate (--size-scale): the same load, with a
          # per-job cost that does not grow with the job weighing a quarter as much.
          "scale4-2w": (2, ["--size-scale", "4"])}
DEFAULT_SETUPS = "shared-2w,shared-1w,own-1w"
POLICIES = [("drep", []), ("drep-steal-boundary", []), ("serpt", ["--hints", "exact"])]
LOADS = [0.75, 0.9]


def main():
    exe, rounds = sys.argv[1], int(sys.argv[2])
    setups = [(name, *SETUPS[name]) for name in (sys.argv[3] if len(sys.argv) > 3 else DEFAULT_SETUPS).split(",")]
    units = sorted(run_program(exe, "bing", 0.5, 10, ["--calibrate", "1"])["unit_ns"] for _ in range(5))
    unit_ns = units[2]
    print(f"unit_ns {unit_ns:.1f} (median of 5)", flush=True)
    order = [(s, p) for s in setups for p in POLICIES]
    for rnd in range(rounds):
        for load in LOADS:
            for (setup, workers, sargs), (pol, pargs) in (order if rnd % 2 == 0 else order[::-1]):
                m = run_program(exe, "bing", load, 1200, ["--unit-ns", f"{unit_ns:.1f}", "--policy", pol] + pargs + sargs,
                                workers=workers)
                print(f"round {rnd} bing-{int(load * 100)} {setup} {pol}: mean {m['flow_ms_mean']:.2f} "
                      f"p99 {m['flow_ms_p99']:.1f} start_p50 {m['start_us_p50']:.0f} us "
                      f"late {m.get('release_late_us_mean', 0):.0f} us "
                      f"work/est {m.get('work_over_estimate', 0):.3f}", flush=True)


if __name__ == "__main__":
    main()
