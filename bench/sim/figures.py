#!/usr/bin/env python3
"""The papers' many-core figures, simulated with promptly-sim (docs/simulator.md).

Reproduces the shapes of
  * I-Cilk (Priority Scheduling for Interactive Applications), Figs. 2-4: fib-ep and fib-rp at
    three levels on 20 cores under APS against a priority-oblivious scheduler, and APS's
    sensitivity to rho and to the quantum L;
  * Fairness in Responsive Parallelism, Table 1: the low priority's stretch on 70 cores under the
    criteria 0-0-100, 50-0-50 and 50-25-25 (expected 1, 2 and 4) with an interactive top level
    and a time sink in the middle;
  * AMCilk (Adaptive Scheduling of Multiprogrammed Dynamic-Multithreading Applications), Sec.
    6.1: mean flow time of Bing-like jobs on 40 cores under DREP with frame-boundary preemption
    against the steal-boundary baseline and the equal share, at 60%, 75% and 90% load;
  * AMCilk Sec. 6.3: two jobs alternating wide and narrow phases in opposite phase on 40 cores
    under A-STEAL's parallelism feedback against the equal partition and no partition;
  * Taskflow's executor paper (An Efficient Work-Stealing Scheduler for Task Dependency Graph),
    Figs. 2-3: runtime and CPU utilisation of a linear chain and a binary tree from 1 to 40 cores,
    with the sleep protocol against never-sleeping thieves (ABP).
Every number is simulated, never measured; each cell is the median over --seeds seeds of the
simulator's random probes, with min-max.

  python3 bench/sim/figures.py --build build [--seeds 3] [--out bench/results/sim]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as W  # noqa: E402

def simulate(sim, workload, workers, policy, seed, extra=()):
    cmd = [sim, "run", "--workload", workload, "--workers", str(workers), "--policy", policy, "--seed", str(seed), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"figures.py: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def med(values):
    return statistics.median(values), min(values), max(values)


def fmt(m, lo, hi, digits=3):
    return f"{m:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding bin/promptly-sim")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="bench/results/sim")
    a = ap.parse_args()
    sim = os.path.join(a.build, "bin", "promptly-sim")
    if not os.path.exists(sim):
        sys.exit(f"figures.py: {sim} not found: build first (./run build)")
    os.makedirs(a.out, exist_ok=True)
    seeds = list(range(1, a.seeds + 1))
    started = time.time()
    tmp = tempfile.mkdtemp(prefix="promptly-sim-fig-")
    report = {"simulated": True, "seeds": seeds, "icilk": {}, "taskflow": {}}

    # ---- I-Cilk, Figs. 2-4: three fib instances H, M, L released together ----
    # Scaled so that fib-ideal at 20 cores is about the paper's 0.58 s (fib-ep) while the DAG
    # stays ~20k nodes (serial cutoff 12 instead of 2: 20 cores still have ample parallelism).
    ep = W.fib(30, 12, 11.6e6 / W.fib_calls(30))
    # fib-rp: fib(44) with a serial base case of 40: exactly 8 serial leaves per level, as in the
    # paper, each yielding every 1 ms (a chain of 1 ms strands).
    rp = W.fib(44, 40, 6.0e6 / W.fib_calls(44), piece_us=1000)
    files = {}
    for name, nodes in (("fib-ep", ep), ("fib-rp", rp)):
        files[name] = os.path.join(tmp, f"{name}.json")
        W.write(files[name], 3, [{"pool": i, "release_us": 0, "kind": "HML"[i], "nodes": nodes} for i in range(3)])
        files[name + "-ideal"] = os.path.join(tmp, f"{name}-ideal.json")
        W.write(files[name + "-ideal"], 1, [{"pool": 0, "release_us": 0, "kind": "ideal", "nodes": nodes}])

    def levels(name, workers, policy, extra=()):
        per = {k: [] for k in "HML"}
        for s in seeds:
            r = simulate(sim, files[name], workers, policy, s, extra)
            for q in r["requests"]:
                per[q["kind"]].append(q["finish_us"] / 1e6)
        return {k: med(v) for k, v in per.items()}

    def ideal(name, workers):
        return med([simulate(sim, files[name + "-ideal"], workers, "oblivious", s)["makespan_us"] / 1e6 for s in seeds])

    icilk = report["icilk"]
    fig2 = []
    rho_of = {"fib-ep": "2", "fib-rp": "1.2"}
    for name in ("fib-ep", "fib-rp"):
        base = ideal(name, 20)
        icilk[name + "-ideal-20"] = base
        obl = levels(name, 20, "oblivious")
        aps = levels(name, 20, "aps", ("--aps-rho", rho_of[name], "--aps-delta", "0.9", "--aps-quantum-us", "1000"))
        icilk[name] = {"oblivious": obl, "aps": aps}
        for k in "HML":
            fig2.append((name, k, obl[k], obl[k][0] / base[0], aps[k], aps[k][0] / base[0]))
    fig3 = []
    for name in ("fib-ep", "fib-rp"):
        base = icilk[name + "-ideal-20"]
        row = {}
        for rho in ("1.2", "1.5", "1.75", "2"):
            row[rho] = levels(name, 20, "aps", ("--aps-rho", rho, "--aps-delta", "0.9", "--aps-quantum-us", "1000"))
        icilk[name + "-rho"] = row
        for k in "HML":
            fig3.append((name, k, [(row[r][k][0], row[r][k][0] / base[0]) for r in ("1.2", "1.5", "1.75", "2")]))
    fig4 = []
    ideal1 = ideal("fib-ep", 1)
    icilk["fib-ep-ideal-1"] = ideal1
    for name, workers, rho in (("fib-ep", 1, "2"), ("fib-ep", 20, "2"), ("fib-rp", 20, "1.2")):
        base = ideal1 if workers == 1 else icilk[name + "-ideal-20"]
        row = {}
        for q in ("100", "500", "1000", "10000"):
            row[q] = levels(name, workers, "aps", ("--aps-rho", rho, "--aps-delta", "0.9", "--aps-quantum-us", q))
        icilk[f"{name}-L-{workers}"] = row
        for k in "HML":
            fig4.append((f"{name} (T{workers})", k, [(row[q][k][0], row[q][k][0] / base[0]) for q in ("100", "500", "1000", "10000")]))

    # ---- Fairly prompt scheduling, Table 1: stretch of the low priority on 70 cores ----
    # Top: an interactive kernel, 50 interactions per second (each a fork-join of 8 leaves of
    # 0.5 ms); middle: a time sink (16384 leaves of 20 ms: it outlasts the low kernel); low: a
    # compute kernel (fib(30), cutoff 12) scaled to about 0.5 s alone on 70 cores.
    fair_file = os.path.join(tmp, "fair70.json")
    fair_reqs = [{"pool": 2, "release_us": 0, "kind": "low", "nodes": W.fib(30, 12, 35e6 / W.fib_calls(30))},
                 {"pool": 1, "release_us": 0, "kind": "sink", "nodes": W.fork_join_tree(15, 20000, 0.05)}]
    interactive = W.fork_join_tree(4, 500, 0.05)
    fair_reqs += [{"pool": 0, "release_us": 20000 * i, "kind": "interactive", "nodes": interactive} for i in range(250)]
    W.write(fair_file, 3, fair_reqs)
    fair = report["fair"] = {}
    for crit in ("0,0,100", "50,0,50", "50,25,25"):
        lows, p50s, p99s = [], [], []
        for s in seeds:
            r = simulate(sim, fair_file, 70, "fair", s, ("--fair-weights", crit))
            lows.append([q["finish_us"] for q in r["requests"] if q["kind"] == "low"][0] / 1e6)
            inter = sorted(q["response_us"] / 1e3 for q in r["requests"] if q["kind"] == "interactive")
            p50s.append(inter[len(inter) // 2])
            p99s.append(inter[min(len(inter) - 1, int(0.99 * len(inter)))])
        fair[crit] = {"low_s": med(lows), "interactive_p50_ms": med(p50s), "interactive_p99_ms": med(p99s)}

    # ---- AMCilk Sec. 6.1: DREP vs steal-boundary on 40 cores, Bing-like jobs ----
    # The first 600 jobs of the jobs suite's trace (bench/jobs/traces/bing.trace); a job of U
    # trace units is a parallel loop of 8 U / 25 strands of 20 us (the paper's ~1280 strands of
    # ~10 us per segment, at half the strands of twice the length), mean work 28.6 ms; arrivals
    # at rho * 40 cores. One pool per job.
    trace = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs", "traces", "bing.trace")
    rows = [line.split() for line in open(trace) if not line.startswith("#")][:600]
    mean_work = 1600 * 2.79 / 25 * 8 * 20.0
    amcilk = report["amcilk"] = {}
    for rho in (0.6, 0.75, 0.9):
        f = os.path.join(tmp, f"bing-{rho}.json")
        W.write(f, 1, [{"pool": 0, "release_us": float(t) * mean_work / (rho * 40), "kind": "job",
                      "nodes": W.parallel_loop(max(1, round(int(u) * 8 / 25)), 20.0, 1, 0.05)} for t, u, _ in rows])
        amcilk[str(rho)] = {}
        for policy in ("drep", "drep-steal-boundary", "equi"):
            means, p50s, p99s = [], [], []
            for s in seeds:
                r = simulate(sim, f, 40, policy, s, ("--pool-per-request",))
                flows = sorted(q["response_us"] / 1e3 for q in r["requests"])
                means.append(statistics.mean(flows))
                p50s.append(flows[len(flows) // 2])
                p99s.append(flows[min(len(flows) - 1, int(0.99 * len(flows)))])
            amcilk[str(rho)][policy] = {"mean_ms": med(means), "p50_ms": med(p50s), "p99_ms": med(p99s)}

    # ---- AMCilk Sec. 6.3: A-STEAL on two jobs in opposite phases, 40 cores ----
    # Each job alternates 10 times between a wide phase (one parallel loop) and a narrow phase
    # (a series of small loops); job B starts with the narrow phase. The paper's phases: one loop
    # of 12.8M iterations; 4000 loops of 100 iterations, whose parallelism is low. Here a wide
    # phase is 100,000 iterations of 20 us (grain 64), a narrow one 200 loops of 100 iterations
    # of 20 us in strands of 25 (parallelism 4): under an equal split (20 cores each) both
    # phases last about 100 ms, as the paper's (1.86-2.34 s for 20 phases). One pool per job.
    wide = W.parallel_loop(100000, 20.0, 64, 0.05)
    narrow = W.sequence([W.parallel_loop(100, 20.0, 25, 0.05)] * 200)
    phases_file = os.path.join(tmp, "asteal-phases.json")
    W.write(phases_file, 1, [{"pool": 0, "release_us": 0, "kind": "A", "nodes": W.sequence([wide, narrow] * 10)},
                             {"pool": 0, "release_us": 0, "kind": "B", "nodes": W.sequence([narrow, wide] * 10)}])
    phases = report["asteal_phases"] = {"wide_work_ms": W.work_of(wide) / 1e3, "narrow_work_ms": W.work_of(narrow) / 1e3,
                                        "narrow_span_ms": W.span_of(narrow) / 1e3}
    for policy in ("asteal", "equi", "oblivious"):
        done = {"A": [], "B": []}
        for s in seeds:
            r = simulate(sim, phases_file, 40, policy, s, ("--pool-per-request",))
            for q in r["requests"]:
                done[q["kind"]].append(q["finish_us"] / 1e6)
        phases[policy] = {k: med(v) for k, v in done.items()}

    # ---- The 1 ms nap at many cores (docs/simulator.md, "Finding") ----
    nap_file = os.path.join(tmp, "random-sp.json")
    subprocess.run([sim, "gen", "random", "--seed", "4", "--max-nodes", "4000", "--fork-p", "0.8",
                    "--min-us", "5", "--max-us", "100", "--out", nap_file], check=True, capture_output=True)
    nap = report["nap"] = {}
    for p in (16, 64):
        for nap_us in ("1000", "50"):
            nap[f"{p}-{nap_us}"] = med([simulate(sim, nap_file, p, "prompt", s, ("--nap-us", nap_us))["makespan_us"]
                                        for s in seeds])

    # ---- Replays of recorded traces (promptly-prof --to-workload; docs/simulator.md) ----
    replay_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results", "sim", "replay")
    replay = report["replay"] = {}
    for name in ("slow_request", "slow_request-yield"):
        p50s, maxs = [], []
        for s in seeds:
            r = simulate(sim, os.path.join(replay_dir, name + ".json"), 2, "prompt", s)
            u = sorted(q["response_us"] for q in r["requests"] if q["pool"] == 0)
            p50s.append(u[len(u) // 2])
            maxs.append(u[-1])
        replay[name] = {"urgent_p50_us": med(p50s), "urgent_max_us": med(maxs)}

    # ---- Taskflow, Figs. 2-3: chain and binary tree, runtime and CPU utilisation ----
    # Scaled from 8.4M tasks to 65k (tasks of 0.1 us: the paper's increment a counter or nothing).
    tf_files = {"linear chain": os.path.join(tmp, "chain.json"), "binary tree": os.path.join(tmp, "tree.json")}
    W.write(tf_files["linear chain"], 1, [{"pool": 0, "release_us": 0, "kind": "chain", "nodes": W.chain(65536, 0.1)}])
    W.write(tf_files["binary tree"], 1, [{"pool": 0, "release_us": 0, "kind": "tree", "nodes": W.task_tree(16, 0.1)}])
    cores = [1, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40]
    tf = report["taskflow"]
    for bench, f in tf_files.items():
        tf[bench] = {}
        for mode, extra in (("sleep (Promptly)", ()), ("never sleep (ABP)", ("--never-sleep",))):
            rows = []
            for p in cores:
                runs = [simulate(sim, f, p, "prompt", s, extra) for s in seeds]
                rows.append({"cores": p, "runtime_ms": med([r["makespan_us"] / 1e3 for r in runs]),
                             "cpu_utilization": med([r["utilization"] for r in runs])})
            tf[bench][mode] = rows

    elapsed = time.time() - started
    report["elapsed_s"] = elapsed
    with open(os.path.join(a.out, "figures.json"), "w") as f:
        json.dump(report, f, indent=1)

    # ---- the report ----
    L = []
    L.append("# The papers' many-core figures, simulated\n")
    L.append("**Simulated, not measured**: `promptly-sim` (docs/simulator.md) with its default costs, the "
             f"median over {len(seeds)} seeds of its random probes (min-max). Generated by "
             f"`python3 bench/sim/figures.py --build {a.build} --seeds {a.seeds}` in {elapsed:.0f} s on "
             f"{platform.node() or 'this machine'} ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}.\n")
    L.append("## I-Cilk Fig. 2: fib-ep and fib-rp on 20 cores\n")
    L.append("Three fib instances at levels H, M, L released together; completion time in simulated seconds and "
             "over fib-ideal (one instance alone on 20 cores). fib-ep: fib(30), serial cutoff 12 (the paper: "
             "fib(42), cutoff 2), scaled to fib-ideal "
             f"{icilk['fib-ep-ideal-20'][0]:.3f} s; fib-rp: fib(44), cutoff 40, 8 serial leaves per level that yield every 1 ms, as the paper's call yield. "
             "APS with delta 0.9, L 1 ms, rho 2 (ep) / 1.2 (rp), as the paper's Fig. 2.\n")
    L.append("| bench | level | oblivious (s) | / ideal | aps (s) | / ideal | paper, Cilk-F / I-Cilk |")
    L.append("|---|---|---|---|---|---|---|")
    paper2 = {("fib-ep", "H"): "- / 1.08x", ("fib-ep", "M"): "2.96x / 2.15x", ("fib-ep", "L"): "2.98x / 3.22x",
              ("fib-rp", "H"): "- / 1.12x", ("fib-rp", "M"): "1.34x / 1.12x", ("fib-rp", "L"): "1.47x / 1.63x"}
    for name, k, o, orat, p, prat in fig2:
        L.append(f"| {name} | {k} | {fmt(*o)} | {orat:.2f}x | {fmt(*p)} | {prat:.2f}x | {paper2[(name, k)]} |")
    L.append("\n## I-Cilk Fig. 3: APS's rho on 20 cores (L = 1 ms)\n")
    L.append("| bench | level | rho 1.2 | rho 1.5 | rho 1.75 | rho 2 |")
    L.append("|---|---|---|---|---|---|")
    for name, k, cells in fig3:
        L.append(f"| {name} | {k} | " + " | ".join(f"{t:.3f} ({r:.2f}x)" for t, r in cells) + " |")
    L.append("\n## I-Cilk Fig. 4: APS's quantum L\n")
    L.append("| bench | level | L 100 us | L 500 us | L 1 ms | L 10 ms |")
    L.append("|---|---|---|---|---|---|")
    for name, k, cells in fig4:
        L.append(f"| {name} | {k} | " + " | ".join(f"{t:.3f} ({r:.2f}x)" for t, r in cells) + " |")
    L.append("\n## Fairly prompt scheduling, Table 1: stretch on 70 cores\n")
    L.append("Three levels: an interactive kernel at the top (50 interactions per second, each 8 leaves of "
             "0.5 ms), a time sink in the middle that outlasts the run, a compute kernel at the bottom (fib(30), "
             "about 0.5 s alone). Stretch = the low kernel's time / its time under 0-0-100 (T70 / T70b); the "
             "expected stretch is 100 / L. The paper reports ratios actual / expected close to 1 for its "
             "compute-bound kernels (fib, UTS, DMM) and up to 2.5 for memory-bound ones, which this model "
             "cannot show (it has no memory system).\n")
    L.append("| criterion | low kernel (s) | stretch | expected | ratio | interactive p50 (ms) | interactive p99 (ms) |")
    L.append("|---|---|---|---|---|---|---|")
    base_low = fair["0,0,100"]["low_s"][0]
    for crit, row in fair.items():
        low_w = int(crit.split(",")[2])
        stretch = row["low_s"][0] / base_low
        expected = 100 / low_w
        L.append(f"| {crit.replace(',', '-')} | {fmt(*row['low_s'])} | {stretch:.2f} | {expected:.0f} | {stretch / expected:.2f} | "
                 f"{row['interactive_p50_ms'][0]:.1f} | {row['interactive_p99_ms'][0]:.1f} |")
    L.append("\n## AMCilk Sec. 6.1: DREP on 40 cores, Bing-like jobs\n")
    L.append("600 jobs of the jobs suite's Bing trace, each a parallel loop of 20 us strands (mean 28.6 ms of "
             "work), one pool per job, Poisson arrivals at the load. Flow time from arrival to end, ms. The "
             "paper reports DREP (frame-boundary preemption) 60-70% below the steal-boundary baseline.\n")
    L.append("| load | policy | mean flow | p50 | p99 | mean / steal-boundary |")
    L.append("|---|---|---|---|---|---|")
    for rho, by in amcilk.items():
        sb = by["drep-steal-boundary"]["mean_ms"][0]
        for policy, row in by.items():
            L.append(f"| {float(rho):.0%} | {policy} | {fmt(*row['mean_ms'], 2)} | {row['p50_ms'][0]:.2f} | "
                     f"{row['p99_ms'][0]:.2f} | {row['mean_ms'][0] / sb:.2f}x |")
    L.append("\n## AMCilk Sec. 6.3: A-STEAL, two jobs in opposite phases on 40 cores\n")
    L.append("Each job alternates 10 times between a wide phase (one parallel loop, "
             f"{phases['wide_work_ms']:.0f} ms of work) and a narrow phase (200 loops of 100 iterations, "
             f"{phases['narrow_work_ms']:.0f} ms of work, span {phases['narrow_span_ms']:.1f} ms: at most 4 strands "
             "at once); job B starts narrow. One pool per job; A-STEAL with its defaults (quantum 2 ms, "
             "delta 0.95, rho 2, surplus cores shared); `oblivious` is "
             "the paper's \"no partition\" (every core serves both jobs). Completion in simulated seconds. The paper "
             "reports 1.86 / 1.87 s under A-STEAL against 2.32 / 2.34 s under the equal partition (0.80x).\n")
    L.append("| policy | job A (s) | job B (s) | A / equi | B / equi |")
    L.append("|---|---|---|---|---|")
    for policy in ("asteal", "equi", "oblivious"):
        row = phases[policy]
        L.append(f"| {policy} | {fmt(*row['A'])} | {fmt(*row['B'])} | {row['A'][0] / phases['equi']['A'][0]:.2f}x | "
                 f"{row['B'][0] / phases['equi']['B'][0]:.2f}x |")
    L.append("\n## The 1 ms nap at many cores\n")
    L.append("A random series-parallel DAG (`promptly-sim gen random --seed 4 --max-nodes 4000 --fork-p 0.8 "
             "--min-us 5 --max-us 100`), prompt, makespan in us by the last thief's nap.\n")
    L.append("| cores | nap 1000 us | nap 50 us |")
    L.append("|---|---|---|")
    for p in (16, 64):
        L.append(f"| {p} | {fmt(*nap[f'{p}-1000'], 0)} | {fmt(*nap[f'{p}-50'], 0)} |")
    L.append("\n## Replays of recorded traces\n")
    L.append("`replay/*.json`: the requests of two real runs of `examples/slow_request.cpp` (the traces of "
             "docs/profiling.md's real run, turned into workloads by `promptly-prof --to-workload`), "
             "simulated at P = 2 under prompt. The real runs' level-0 response, from the same traces: "
             "p50 1709.5 / max 4656.8 us without `--yield`, 221.8 / 300.0 us with it (docs/profiling.md).\n")
    L.append("| run | simulated urgent p50 (us) | simulated urgent max (us) |")
    L.append("|---|---|---|")
    for name, row in replay.items():
        L.append(f"| {name} | {fmt(*row['urgent_p50_us'], 0)} | {fmt(*row['urgent_max_us'], 0)} |")
    L.append("\n## Taskflow Figs. 2-3: linear chain and binary tree, 1-40 cores\n")
    L.append("65,536 tasks of 0.1 us each (the paper: 8.4M tasks that increment a counter or do nothing). CPU "
             "utilisation = awake worker time / makespan (the paper: `perf stat`'s CPUs utilized). The paper "
             "reports, for its scheduler, about 1.2 CPUs on the chain from 4 to 40 cores and the lowest "
             "utilisation of the three on the tree; ABP's grows with the cores.\n")
    for bench, modes in tf.items():
        L.append(f"**{bench}**\n")
        L.append("| cores | " + " | ".join(f"{m}: runtime ms | {m}: CPUs" for m in modes) + " |")
        L.append("|---|" + "---|---|" * len(modes))
        for i, p in enumerate(cores):
            cells = []
            for m in modes:
                row = modes[m][i]
                cells.append(f"{row['runtime_ms'][0]:.2f} | {row['cpu_utilization'][0]:.2f}")
            L.append(f"| {p} | " + " | ".join(cells) + " |")
        L.append("")
    with open(os.path.join(a.out, "figures.md"), "w") as f:
        f.write("\n".join(L) + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, (bench, modes) in zip(axes, tf.items()):
            for m, rows in modes.items():
                ax.plot(cores, [r["cpu_utilization"][0] for r in rows], marker="o", label=m)
            ax.set_title(f"{bench} (simulated)")
            ax.set_xlabel("cores")
            ax.set_ylabel("CPU utilisation (CPUs)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "taskflow-cpu.png"), dpi=110)
        plt.close(fig)
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, name in zip(axes, ("fib-ep", "fib-rp")):
            rows = [r for r in fig2 if r[0] == name]
            xs = range(3)
            ax.bar([x - 0.2 for x in xs], [r[3] for r in rows], width=0.4, label="oblivious")
            ax.bar([x + 0.2 for x in xs], [r[5] for r in rows], width=0.4, label="aps")
            ax.set_xticks(list(xs), [r[1] for r in rows])
            ax.set_ylabel("completion / fib-ideal")
            ax.set_title(f"{name}, 20 cores (simulated)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "icilk-fig2.png"), dpi=110)
        plt.close(fig)
    except ImportError:
        print("figures.py: matplotlib missing: no plots", file=sys.stderr)
    print(f"figures.py: wrote {a.out}/figures.md in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
