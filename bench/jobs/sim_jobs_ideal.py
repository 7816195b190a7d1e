#!/usr/bin/env python3
"""What size-based allocation can reach at best on the windows bench/jobs/sim_jobs.py replays: the
same jobs, arrivals and size hints (sim_jobs.job_list), run as ideal jobs (perfectly divisible work,
linear speedup, no cost to move a core), so that only the order in which cores go to jobs differs.
Its numbers are lower bounds for what promptly-sim's policies can reach on the same windows.

Rules (each job's rate is the cores it is given; ranks are re-evaluated at every arrival and
completion and every `tick`):
  srpt            every core to the job with the least true remaining work (SRPT: optimal for mean
                  flow time on one server, which P cores with linear speedup are; Schrage, "A proof
                  of the optimality of the shortest remaining processing time discipline", 1968)
  gittins         every core to the job of the highest Gittins index given its hint and the hints'
                  error model (`wrong`: a third of the hints are the true size x4 or /4, so a job
                  hinted h is h/4, h or 4h with probabilities 1/6, 2/3, 1/6): the optimal rule for
                  mean flow time among those that know the hints but not the sizes (Gittins,
                  "Multi-armed Bandit Allocation Indices", 1989; Aalto, Ayesta and Righter, "On the
                  Gittins index in the M/G/1 queue", Queueing Systems 2009; as a SOAP rank: Scully,
                  Harchol-Balter and Scheller-Wolf, "SOAP: One clean analysis of all age-based
                  scheduling policies", POMACS 2018). With exact hints it is srpt.
  srpt-hint       every core to the job of the least expected remaining work by its hint, the
                  `serpt` policy's estimate (expected - done below the hint; past it the hint
                  doubled until it exceeds the work done, minus that work)
  serpt           the `serpt` policy's rules (src/policy/serpt.hpp) on ideal jobs: slowdown-deadline
                  order (cap --cap, 10), first-core bound 20 ms, at most one core per 100 us of
                  expected remaining work, ranks refreshed at the policy's 2 ms quantum
  ps, drep        bench/jobs/ideal_allocation.py's processor sharing and DREP (median of 5 seeds)

Ratios are to the same round's promptly-sim `drep` (from --sim-json, sim_jobs.py's output) and to
the ideal drep here.

Usage: sim_jobs_ideal.py --sim-json FILE.json [--workers 2] [--jobs 600] [--rounds 3]
                         [--loads finance:75,finance:90] [--out FILE.md]
"""
import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ideal_allocation  # noqa: E402
import sim_jobs  # noqa: E402

WRONG_MODEL = ((0.25, 1 / 6), (1.0, 2 / 3), (4.0, 1 / 6))  # true / hint, probability


def gittins_rank(hint, done, model):
    """The inverse Gittins index (smaller first) of a job hinted `hint` that has done `done`:
    min over quanta D of E[min(R, D)] / P(R <= D), R its remaining size given it exceeds `done`."""
    support = [(hint * f - done, p) for f, p in model if hint * f > done + 1e-12]
    if not support:
        return max(done, 1e-12)  # past every size the model allows: an outlier, ranked by age
    total = sum(p for _, p in support)
    support.sort()
    best = math.inf
    below_p = below_e = 0.0
    for k, (r, p) in enumerate(support):
        below_p += p / total
        below_e += p / total * r
        above = sum(q for _, q in support[k + 1:]) / total
        best = min(best, (below_e + r * above) / below_p)
    return best


def policy_remaining(expected, done):
    """serpt's expected remaining work (src/policy/serpt.cpp, expected_remaining): past its estimate
    a job's estimate is doubled until it exceeds the work done."""
    if done < expected:
        return expected - done
    e = expected
    while e <= done:
        e *= 2
    return e - done


def fluid(jobs, workers, rule, cap=10.0, model=WRONG_MODEL, tick_us=None):
    """Flow times (us) of `jobs` (sim_jobs.job_list rows) under `rule` on ideal jobs."""
    work_per_core_us, start_wait_us, quantum_us = 100.0, 20_000.0, 2_000.0
    if tick_us is None:
        tick_us = quantum_us if rule == "serpt" else 20.0
    n = len(jobs)
    remaining, done, served = {}, {}, set()
    flows = [None] * n
    now, nxt = 0.0, 0
    next_tick = tick_us

    def expected_remaining(i):
        return policy_remaining(jobs[i][4], done[i])

    def usable(i):
        want = math.ceil(expected_remaining(i) / work_per_core_us - 1e-9)
        return max(1, min(workers, want))

    def rank(i):
        h = jobs[i][4]
        if rule == "srpt":
            return (remaining[i],)
        if rule == "gittins":
            return (gittins_rank(h, done[i], model),)
        if rule == "srpt-hint":
            return (expected_remaining(i),)
        age = now - jobs[i][0]
        if i not in served and age >= start_wait_us:
            return (0, -age)
        return (1, cap * expected_remaining(i) / usable(i) - age, -age)

    rates = {}

    def allocate():
        rates.clear()
        if not remaining:
            return
        order = sorted(remaining, key=lambda i: rank(i) + (i,))
        left = workers
        for i in order:
            if left == 0:
                break
            k = usable(i) if rule == "serpt" else workers
            k = min(k, left)
            rates[i] = k
            left -= k
        if left:
            rates[order[0]] += left
        served.update(rates)

    while nxt < n or remaining:
        t_arr = jobs[nxt][0] if nxt < n else math.inf
        t_done, who = math.inf, None
        for i, c in rates.items():
            t = now + remaining[i] / c
            if t < t_done:
                t_done, who = t, i
        t = min(t_arr, t_done, next_tick if remaining else math.inf)
        for i, c in rates.items():
            remaining[i] -= c * (t - now)
            done[i] += c * (t - now)
        now = t
        if t == t_done:
            flows[who] = now - jobs[who][0]
            del remaining[who], done[who]
        elif t == t_arr:
            remaining[nxt], done[nxt] = jobs[nxt][1], 0.0
            nxt += 1
        if t >= next_tick:
            next_tick = now + tick_us
        allocate()
    return flows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim-json", required=True, action="append", help="sim_jobs.py output with the drep rows")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=0)
    ap.add_argument("--loads", default="finance:75,finance:90,bing:75,bing:90")
    ap.add_argument("--cap", type=float, default=10.0, help="serpt's slowdown cap")
    ap.add_argument("--out")
    a = ap.parse_args()
    scale = a.scale if a.scale > 0 else a.workers / 2
    sim = {}
    for f in a.sim_json:
        for r in json.load(open(f)):
            if r["workers"] == a.workers:
                sim[(r["bench"], r["round"], r["runtime"])] = r
    rules = [("srpt", "exact"), ("gittins", "wrong"), ("srpt-hint", "wrong"), ("serpt", "exact"),
             ("serpt", "wrong"), ("ps", None), ("drep", None)]
    lines = [f"Ideal jobs, {a.workers} cores, {a.jobs} jobs, rounds 0-{a.rounds - 1} (written by "
             "`bench/jobs/sim_jobs_ideal.py`); ratios per round, then averaged.", "",
             "| load | rule | hints | mean flow ms | p99 flow ms | mean / sim drep | p99 / sim drep | "
             "mean / ideal drep |", "|---|---|---|---|---|---|---|---|"]
    for spec in a.loads.split(","):
        trace, load = spec.split(":")
        bench = f"{trace}-{load}"
        mean_units, _piece, _all = sim_jobs.read_trace(trace)
        per = {}
        for rnd in range(a.rounds):
            args = (trace, int(load) / 100, a.workers, rnd * a.jobs, a.jobs, scale)
            for rule, hints in rules:
                if rule in ("ps", "drep"):
                    rows = [(r[0] / (sim_jobs.UNIT_US * mean_units * scale) * int(load) / 100 * a.workers,
                             r[1] / sim_jobs.UNIT_US) for r in sim_jobs.job_list(*args, "none")]
                    seeds = [1] if rule == "ps" else range(1, 6)
                    flows_units = [ideal_allocation.simulate(rows, mean_units * scale, a.workers, int(load) / 100,
                                                             rule, random.Random(s)) for s in seeds]
                    mean_us = statistics.median(flows_units) * mean_units * scale * sim_jobs.UNIT_US
                    m, p99 = mean_us, float("nan")
                else:
                    fl = fluid(sim_jobs.job_list(*args, hints), a.workers, rule, a.cap)
                    m, p99 = statistics.mean(fl), sim_jobs.pct(fl, 0.99)
                per.setdefault((rule, hints), []).append((rnd, m / 1e3, p99 / 1e3))
        for (rule, hints), xs in per.items():
            def ratio(k, runtime):
                rs = [x[k] / sim[(bench, x[0], runtime)][("flow_ms_mean", "flow_ms_p99")[k - 1]] for x in xs
                      if (bench, x[0], runtime) in sim]
                return f"{statistics.mean(rs):.2f}" if rs and not any(math.isnan(r) for r in rs) else "-"
            ideal_drep = [x[1] for x in per[("drep", None)]]
            lines.append(f"| {bench} | {rule} | {hints or '-'} | {statistics.mean(x[1] for x in xs):.3g} | "
                         f"{statistics.mean(x[2] for x in xs):.3g} | {ratio(1, 'drep')} | {ratio(2, 'drep')} | "
                         f"{statistics.mean(x[1] / d for x, d in zip(xs, ideal_drep)):.2f} |")
    text = "\n".join(lines) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
