#!/usr/bin/env python3
"""Writes a job trace of the `jobs` suite (bench/README.md, "Suite jobs"): an open-loop Poisson
arrival process and a work size per job, drawn once from a seed and replayed by every runtime.

Arrival times are dimensionless: t_i is the sum of i exponential gaps of mean 1, in units of the
mean job's work per core. A program replays job i at t_i * mean_work / (rho * P) seconds, so one
trace serves every load rho and worker count P, and the offered utilisation is
rho = lambda * E[work] / P (the load definition of AMCilk Sec. 6.1).

Sizes (work units of about 0.4 us on this machine's cores; each program measures the unit's real
cost, so the load is right on any machine):
  bing     factor * 1600 units (~640 us: the paper's segment of ~1280 strands of ~10 us, scaled by
           1/20 for 2 cores instead of 40; a strand is one piece of 25 units), factor from the
           Bing request-work distribution of AMCilk Sec. 6.1 (after Li et al., PPoPP 2016): 0.5 (36.7%), 1 (18.4%), 1.5 (8%), 2 (6%),
           3, 4, 5, 6, 7, 8 (24.5% together: the paper's '...', our stated assumption), 10 (2.6%),
           14 (2.2%), 20 (1.6%); mean factor 2.79.
  finance  a 3x larger base job (4800 units) times a lighter-tailed factor: (k + 1) / 4 for
           k = 0..19 with the unimodal weights of the built-in bing program's finance table
           (our stand-in: the finance distribution's numbers are not in the paper).
Usage: make_trace.py --workload bing|finance --jobs N --seed S --out FILE
"""
import argparse
import random

BING = [(0.5, 36.7), (1, 18.4), (1.5, 8.0), (2, 6.0), (3, 5.0), (4, 4.5), (5, 4.0), (6, 3.8), (7, 3.6),
        (8, 3.6), (10, 2.6), (14, 2.2), (20, 1.6)]
FINANCE_WEIGHTS = [2, 6, 12, 16, 16, 13, 10, 7.5, 5.5, 4, 3, 2.2, 1.6, 1.2, 0.9, 0.7, 0.5, 0.4, 0.3, 0.2]
FINANCE = [((k + 1) / 4, w) for k, w in enumerate(FINANCE_WEIGHTS)]
BASE_UNITS = {"bing": 1600, "finance": 4800}
PIECE_UNITS = 25  # one strand = 25 units = ~10 us of work here (the paper's strand)


def table(workload):
    rows = BING if workload == "bing" else FINANCE
    total = sum(w for _, w in rows)
    return [(f, w / total) for f, w in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=["bing", "finance"], required=True)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = table(a.workload)
    base = BASE_UNITS[a.workload]
    mean_units = sum(round(f * base) * p for f, p in rows)
    rng = random.Random(a.seed)
    factors, weights = zip(*rows)
    t = 0.0
    with open(a.out, "w") as out:
        out.write(f"# promptly-jobs-trace 1 workload={a.workload} seed={a.seed} jobs={a.jobs} "
                  f"mean_units={mean_units:.6f} piece_units={PIECE_UNITS}\n")
        out.write("# t (arrival, in mean-job-work units)  units  seed\n")
        for i in range(a.jobs):
            t += rng.expovariate(1.0)
            units = round(rng.choices(factors, weights)[0] * base)
            out.write(f"{t:.6f} {units} {rng.getrandbits(48)}\n")


if __name__ == "__main__":
    main()
