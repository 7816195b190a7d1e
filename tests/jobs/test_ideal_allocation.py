#!/usr/bin/env python3
"""bench/jobs/ideal_allocation.py against the M/G/1 formulas it is read by, on synthetic traces.

With one core the ideal replay is an M/G/1 queue: FCFS's mean response is
E[S] + lambda E[S^2] / (2 (1 - rho)) and processor sharing's is E[S] / (1 - rho). A replay that
lost work, served a job twice or charged the wrong rate would miss them.
"""
import importlib.util
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ideal_allocation", ROOT / "bench" / "jobs" / "ideal_allocation.py")
ideal = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ideal)

failures = []


def check(name, ok, detail):
    print(("ok   " if ok else "FAIL ") + name + ": " + detail)
    if not ok:
        failures.append(name)


def poisson_trace(n, sizes, seed):
    """(arrival in mean-job units, size) with exponential gaps of mean 1, as make_trace.py writes."""
    rng = random.Random(seed)
    t, rows = 0.0, []
    for _ in range(n):
        t += rng.expovariate(1.0)
        rows.append((t, sizes(rng)))
    mean = sum(u for _, u in rows) / n
    return rows, mean


RHO = 0.75
# Deterministic sizes (C^2 = 0): FCFS 1 + rho / (2 (1 - rho)) = 2.5, PS 1 / (1 - rho) = 4.
rows, mean = poisson_trace(40000, lambda rng: 1000, 7)
fcfs = ideal.simulate(rows, mean, 1, RHO, "fcfs", random.Random(0))
ps = ideal.simulate(rows, mean, 1, RHO, "ps", random.Random(0))
check("M/D/1 FCFS", abs(fcfs / 2.5 - 1) < 0.1, f"mean response {fcfs:.2f} E[S], formula 2.50")
check("M/D/1 PS", abs(ps / 4.0 - 1) < 0.1, f"mean response {ps:.2f} E[S], formula 4.00")

# Exponential sizes (C^2 = 1): both 1 / (1 - rho) = 4; DREP on one core (a random preemptive
# order that does not look at sizes) has the same mean as well.
rows, mean = poisson_trace(40000, lambda rng: max(1, round(rng.expovariate(1 / 1000))), 8)
for policy in ("fcfs", "ps", "drep", "drep-steal-boundary"):
    r = ideal.simulate(rows, mean, 1, RHO, policy, random.Random(1))
    check(f"M/M/1 {policy}", abs(r / 4.0 - 1) < 0.12, f"mean response {r:.2f} E[S], formula 4.00")

# Heavy tail (the suite's Bing trace): preempting helps, and DREP sits between the two orders.
rows, mean = ideal.read_trace(ROOT / "bench" / "jobs" / "traces" / "bing.trace", 1200)
for cores in (2, 8):
    f = ideal.simulate(rows, mean, cores, RHO, "fcfs", random.Random(0))
    s = ideal.simulate(rows, mean, cores, RHO, "ps", random.Random(0))
    d = ideal.simulate(rows, mean, cores, RHO, "drep", random.Random(3))
    check(f"bing {cores} cores: ps < drep < fcfs", s < d < f, f"ps {s:.3f}, drep {d:.3f}, fcfs {f:.3f}")

sys.exit(1 if failures else 0)
