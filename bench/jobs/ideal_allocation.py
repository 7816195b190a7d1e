#!/usr/bin/env python3
"""What an allocation policy can gain at best on a job trace: the `jobs` suite's trace replayed
through ideal jobs (perfectly divisible work, any number of cores, no overhead), so that only the
order in which cores go to jobs differs between policies.

Policies (AMCilk, "Adaptive Scheduling of Multiprogrammed Dynamic-Multithreading Applications",
Sec. 3.2 and 6.1):
  fcfs             every core serves the oldest job (the non-preemptive order)
  ps               processor sharing: every job gets P/n cores (the ideal equal share)
  drep             DREP with frame-boundary preemption: on an arrival each core moves to the new
                   job with probability 1/n (n counts the new job); on an exit each freed core goes
                   to a uniformly random unfinished job; moves take effect at once
  drep-steal-boundary
                   the same random choices, but a core reassigned away from a job keeps serving
                   it until it would next steal; with ample parallelism that is when the job ends

The M/G/1 formulas give the same comparison for one server:
  E[T_fcfs] = E[S] + lambda E[S^2] / (2 (1 - rho)),  E[T_ps] = E[S] / (1 - rho),
so E[T_ps] / E[T_fcfs] = 2 / (2 (1 - rho) + rho (1 + C^2)), C^2 the squared coefficient of
variation of the job sizes.

Usage: ideal_allocation.py [--trace bench/jobs/traces/bing.trace] [--jobs 1200] [--seeds 5]
                           [--cores 2,40] [--rho 0.6,0.75,0.9] [--out FILE.md]
Deterministic: the decisions' random numbers come from --seeds seeds 1..N.
"""
import argparse
import random
import statistics
import sys
from pathlib import Path


def read_trace(path, jobs):
    """(arrival in mean-job-work units, work units) of the first `jobs` jobs, and the mean work."""
    rows, mean_units = [], None
    for line in Path(path).read_text().splitlines():
        if line.startswith("#"):
            for field in line.split():
                if field.startswith("mean_units="):
                    mean_units = float(field.split("=", 1)[1])
            continue
        t, units, _seed = line.split()
        rows.append((float(t), int(units)))
        if len(rows) == jobs:
            break
    if mean_units is None:
        raise SystemExit(f"ideal_allocation: {path}: no mean_units= in the header")
    if len(rows) < jobs:
        raise SystemExit(f"ideal_allocation: {path} has {len(rows)} jobs, fewer than --jobs {jobs}")
    return rows, mean_units


def simulate(rows, mean_units, cores, rho, policy, rng):
    """Mean flow time, in units of the mean job's work on one core, of the ideal replay."""
    # Arrival i at t_i * mean_work / (rho P), as the suite's programs replay it (make_trace.py).
    arrivals = [(t * mean_units / (rho * cores), units) for t, units in rows]
    remaining = {}   # job -> work left
    arrived = {}     # job -> arrival time
    serving = [None] * cores  # the job each core runs now (None: idle)
    target = [None] * cores   # steal-boundary: where a reassigned core goes when its job ends
    flows = []
    now = 0.0
    nxt = 0

    def rates():
        """Cores (possibly fractional) per live job under the policy."""
        if not remaining:
            return {}
        if policy == "fcfs":
            return {min(remaining, key=lambda j: (arrived[j], j)): float(cores)}
        if policy == "ps":
            return {j: cores / len(remaining) for j in remaining}
        out = {}
        for j in serving:
            if j is not None:
                out[j] = out.get(j, 0.0) + 1.0
        return out

    def random_live():
        return rng.choice(sorted(remaining))

    while nxt < len(arrivals) or remaining:
        r = rates()
        # The next completion at the current rates.
        t_done, done = float("inf"), None
        for j, c in r.items():
            if c > 0:
                t = now + remaining[j] / c
                if t < t_done:
                    t_done, done = t, j
        t_arr = arrivals[nxt][0] if nxt < len(arrivals) else float("inf")
        t_next = min(t_done, t_arr)
        for j, c in r.items():
            remaining[j] -= c * (t_next - now)
        now = t_next
        if t_arr <= t_done:
            j = nxt
            nxt += 1
            remaining[j] = arrivals[j][1]
            arrived[j] = now
            n = len(remaining)
            if policy in ("drep", "drep-steal-boundary"):
                for c in range(cores):
                    if serving[c] is None:
                        serving[c] = j  # an idle core takes work at once under either variant
                        target[c] = None
                    elif rng.random() < 1.0 / n:
                        if policy == "drep":
                            serving[c] = j
                        else:
                            target[c] = j
        else:
            flows.append(now - arrived[done])
            del remaining[done]
            if policy in ("drep", "drep-steal-boundary"):
                for c in range(cores):
                    if serving[c] == done:
                        if target[c] is not None and target[c] in remaining:
                            serving[c] = target[c]
                        else:
                            serving[c] = random_live() if remaining else None
                        target[c] = None
                    elif target[c] == done:
                        target[c] = None
        # A job with no core when cores idle cannot happen: idle cores take arrivals and freed
        # cores go to live jobs, so both DREP variants are work-conserving here.
    return statistics.mean(flows) / mean_units


def size_stats(rows):
    sizes = [u for _, u in rows]
    mean = statistics.mean(sizes)
    c2 = statistics.pvariance(sizes) / mean ** 2
    return mean, c2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = Path(__file__).resolve().parent
    ap.add_argument("--trace", default=str(root / "traces" / "bing.trace"))
    ap.add_argument("--jobs", type=int, default=1200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--cores", default="2,40")
    ap.add_argument("--rho", default="0.6,0.75,0.9")
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        cores_list = [int(x) for x in a.cores.split(",")]
        rhos = [float(x) for x in a.rho.split(",")]
    except ValueError:
        ap.error("--cores and --rho take comma-separated numbers")
    if a.jobs < 1 or a.seeds < 1 or any(p < 1 for p in cores_list) or any(not 0 < r < 1 for r in rhos):
        ap.error("need --jobs >= 1, --seeds >= 1, --cores >= 1 and 0 < --rho < 1")
    rows, mean_units = read_trace(a.trace, a.jobs)
    mean, c2 = size_stats(rows)
    out = [f"# Ideal allocation on `{Path(a.trace).name}` (first {a.jobs} jobs)", "",
           "Written by `bench/jobs/ideal_allocation.py` (its docstring states the model): perfectly divisible",
           "jobs, no overhead, the trace's sizes and arrivals. Mean flow time in units of the trace's mean job",
           f"work on one core; DREP columns are medians over {a.seeds} seeds of the random choices (min-max).",
           f"Job sizes in these jobs: C^2 = {c2:.2f}.", "",
           "| cores | rho | fcfs | ps | drep | drep-steal-boundary | ps / fcfs | M/G/1 ps / fcfs | drep / steal-boundary |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in cores_list:
        for rho in rhos:
            f = simulate(rows, mean_units, p, rho, "fcfs", random.Random(0))
            s = simulate(rows, mean_units, p, rho, "ps", random.Random(0))
            d = [simulate(rows, mean_units, p, rho, "drep", random.Random(k)) for k in range(1, a.seeds + 1)]
            b = [simulate(rows, mean_units, p, rho, "drep-steal-boundary", random.Random(k))
                 for k in range(1, a.seeds + 1)]
            ratio = [x / y for x, y in zip(d, b)]
            mg1 = 2 / (2 * (1 - rho) + rho * (1 + c2))
            out.append(f"| {p} | {rho:.2f} | {f:.2f} | {s:.2f} | {statistics.median(d):.2f} ({min(d):.2f}-{max(d):.2f}) | "
                       f"{statistics.median(b):.2f} ({min(b):.2f}-{max(b):.2f}) | {s / f:.2f} | {mg1:.2f} | "
                       f"{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f}) |")
    text = "\n".join(out) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
