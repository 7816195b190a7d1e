#!/usr/bin/env python3
"""Validate promptly-sim against the real runtime (bench/sim/README.md).

    python3 bench/sim/validate.py --build build-lead-bench --reps 3 [--out bench/results/sim]

Generates four workloads (promptly-sim-workload-1 JSON, written to OUT/workloads/), runs each
at P = 1 and 2 workers alternately on the real runtime (BUILD/bench-bin/sim_real_run) and on
the simulator (BUILD/bin/promptly-sim run), --reps times, and reports the median and min-max
of the makespan (and, for the latency workload, of the urgent requests' response p50 and p99)
on each side and the ratio sim/real of the medians. The target is |sim/real - 1| <= 10%.
If the simulator binary does not exist, only the real side runs and the report says so.

The real side runs the runtime's threads under SCHED_FIFO by default (--threads fifo; needs root
or CAP_SYS_NICE): under CFS the kernel may queue a woken worker behind the busy one that woke it,
a placement the simulator does not model (--threads normal measures it anyway and writes
validation-cfs.md). The simulator draws every wake-up's cost from BUILD/bench-bin/sim_vcpu_wake's
measurement of this machine, taken just before the runs in the same thread mode. Urgent response
times count from each request's submission.

Writes OUT/validation.md (the table, the machine, the date, the command), OUT/validation.json
(every run's numbers) and each run's raw JSON output under OUT/runs/.
Every number in the report is computed from the runs' outputs; percentiles are nearest-rank.
"""
import argparse
import datetime
import json
import math
import os
import platform
import random
import resource
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import FORMAT, chain, fork_join_tree, parallel_loop, request, span_of, work_of  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = 0.10  # |sim/real - 1| within 10%


# ---- the workloads (generators: workloads.py) ----------------------------------------------------

def workloads():
    """name -> (description, workload, policies, kind whose responses are reported or None)."""
    lat = [request(fork_join_tree(12, 100), pool=1, release_us=0, kind="background")]
    # Each urgent request 0-100 us (one background leaf) past its 5 ms slot, from a fixed seed:
    # on the slots themselves, every request met the simulated background leaves at the same
    # phase (the simulator's strands end on a 100 us grid; real ones drift), so the simulated
    # wait for a strand boundary was one value instead of the real spread over 0-100 us.
    offsets = random.Random(18).random
    lat += [request(fork_join_tree(3, 200), pool=0, release_us=round(2000 + 5000 * k + 100 * offsets(), 1), kind="urgent")
            for k in range(40)]
    return {
        "forkjoin": ("fork-join tree, depth 10, leaves 200 us",
                     {"format": FORMAT, "pools": 1, "requests": [request(fork_join_tree(10, 200), kind="forkjoin")]},
                     ["prompt"], None),
        "loop": ("parallel loop, 4096 iterations of 20 us, grain 64",
                 {"format": FORMAT, "pools": 1, "requests": [request(parallel_loop(4096, 20, 64), kind="loop")]},
                 ["prompt"], None),
        "chain": ("chain of 2000 nodes of 50 us",
                  {"format": FORMAT, "pools": 1, "requests": [request(chain(2000, 50), kind="chain")]},
                  ["prompt"], None),
        "latency": ("2 pools: background tree depth 12, leaves 100 us, at pool 1 from 0; 40 urgent trees "
                    "depth 3, leaves 200 us, at pool 0 every 5 ms from 2 ms, each 0-100 us late (seeded)",
                    {"format": FORMAT, "pools": 2, "requests": lat},
                    ["prompt", "oblivious"], "urgent"),
    }


# ---- measurements ------------------------------------------------------------------------------

def percentile(values, q):
    """Nearest-rank percentile (q in (0, 100])."""
    v = sorted(values)
    if not v:
        return float("nan")
    return v[max(0, min(len(v) - 1, math.ceil(q / 100.0 * len(v)) - 1))]


def metrics_of(out, urgent_kind):
    """The compared numbers of one run's JSON output, in ms."""
    m = {"makespan_ms": out["makespan_us"] / 1000.0}
    if "max_release_lag_us" in out:  # real: the submitter's largest delay past a release time
        m["release_lag_max_us"] = out["max_release_lag_us"]
    if "pauses" in out:  # real: gaps a spinning strand saw (its thread was off the CPU; real_run.cpp)
        m["paused_ms"] = sum(p["end_us"] - p["start_us"] for p in out["pauses"]) / 1000.0
        if urgent_kind is not None:
            m["urgent_paused"] = sum(1 for r in out["requests"] if r.get("kind") == urgent_kind and r.get("paused_us", 0) > 0)
    if "cpu_us" in out:  # real: user + sys CPU time of the process
        m["cpu_ms"] = out["cpu_us"] / 1000.0
        if "work_us" in out:  # > 0: strands spun while their worker was off the CPU (something else ran)
            m["work_minus_cpu_ms"] = max(0.0, out["work_us"] - out["cpu_us"]) / 1000.0
    elif "awake_us" in out:  # sim: the time its workers were not asleep (working or looking for work)
        m["cpu_ms"] = out["awake_us"] / 1000.0
    if urgent_kind is not None:
        # From submission: the real submitter calls graph.run() some 20-50 us after the release
        # time (its sleep's overshoot), the simulator releases on time; the scheduler's share of
        # the response starts at the submission on both sides.
        resp = [(r["finish_us"] - r.get("submitted_us", r["release_us"])) / 1000.0
                for r in out["requests"] if r.get("kind") == urgent_kind]
        m["urgent_p50_ms"] = percentile(resp, 50)
        m["urgent_p99_ms"] = percentile(resp, 99)
        others = [r["response_us"] / 1000.0 for r in out["requests"] if r.get("kind") != urgent_kind]
        if others:
            m["background_response_ms"] = max(others)
    return m


def summary(values):
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def machine_busy_seconds():
    """CPU seconds the whole machine has spent not idle (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_one(cmd, out_path, timeout):
    """Runs cmd (which writes out_path); returns (parsed JSON or None, error text or None, other_cores):
    other_cores is the CPU the rest of the machine used meanwhile (busy time of /proc/stat minus
    the child's own CPU time, over the wall time), a measure of how contended the run was."""
    busy0, child0, t0 = machine_busy_seconds(), children_cpu_seconds(), time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s: {shlex.join(cmd)}", None
    wall, busy1, child1 = time.monotonic() - t0, machine_busy_seconds(), children_cpu_seconds()
    other = None if busy0 is None or busy1 is None or wall <= 0 else max(0.0, (busy1 - busy0) - (child1 - child0)) / wall
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {shlex.join(cmd)}: {p.stderr.strip()[-500:]}", other
    try:
        with open(out_path) as f:
            return json.load(f), None, other
    except (OSError, ValueError) as e:
        return None, f"{shlex.join(cmd)}: no readable JSON in {out_path}: {e}", other


def machine():
    model = platform.processor() or platform.machine()
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
    except (OSError, ValueError):
        nproc = os.cpu_count()
    return {"model": model, "nproc": nproc, "kernel": platform.release()}


def resolve(path):
    """A path as given if absolute, else relative to the repository root."""
    return path if os.path.isabs(path) else os.path.join(REPO, path)


# ---- report ------------------------------------------------------------------------------------

def fmt(s):
    if s is None:
        return "-"
    return f"{s['median']:.2f} [{s['min']:.2f}-{s['max']:.2f}]"


def write_report(out_dir, res):
    lines = ["# Simulator validation: promptly-sim against the real runtime", ""]
    lines.append(f"* date: {res['date']}")
    m = res["machine"]
    lines.append(f"* machine: {m['model']}, nproc {m['nproc']}, Linux {m['kernel']}")
    lines.append(f"* load average (1 min) before / after: {res['loadavg_before'][0]:.2f} / {res['loadavg_after'][0]:.2f}")
    lines.append(f"* command: `{res['command']}`")
    lines.append(f"* real: `{res['real_bin']}` (runtime threads: {res['threads']}; submitter thread: {res['submitter']}); simulator: " +
                 (f"`{res['sim_bin']}`" if res["sim_available"] else
                  f"**not run**: `{res['sim_bin']}` does not exist (only the real side was measured)"))
    w = res.get("wake")
    lines.append("* simulator's wake costs: " + (f"drawn from {w['wakeups']} notify-to-running times of this machine, "
                                                 f"measured just before the runs by `bench-bin/sim_vcpu_wake` ({w['mode']}; "
                                                 f"p50 {w['p50_us']:.1f} us, p99 {w['p99_us']:.0f} us, max {w['max_us']:.0f} us; "
                                                 f"`wake-samples{res['suffix']}.json`)" if w else
                                                 "the constant default (sim_vcpu_wake not built)"))
    lines.append(f"* repetitions: {res['reps']} per configuration, real and simulator alternately; "
                 "median [min-max]; times in ms; percentiles nearest-rank; urgent response times from the "
                 "request's submission (`graph.run()`) on the real side; "
                 f"target |sim/real - 1| <= {TARGET:.0%}")
    lines.append("")
    lines.append("| workload | P | policy | metric | real | sim | sim/real | within 10% | "
                 "real runs without pauses: n, median | their sim/real |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for c in res["configs"]:
        for metric in c["metrics"]:
            r = c["real"]["summary"].get(metric)
            s = c["sim"]["summary"].get(metric) if c["sim"] else None
            ratio = c["ratio"].get(metric)
            ok = "-" if ratio is None else ("yes" if abs(ratio - 1) <= TARGET else "**no**")
            cl = c.get("without_pauses", {}).get(metric)
            clean = "0, -" if cl is None else f"{cl['runs']}, {cl['real']['median']:.2f}"
            clean_ratio = "-" if cl is None else f"{cl['ratio']:.3f}"
            lines.append(f"| {c['workload']} | {c['workers']} | {c['policy']} | {metric} | {fmt(r)} | {fmt(s)} | "
                         f"{'-' if ratio is None else f'{ratio:.3f}'} | {ok} | {clean} | {clean_ratio} |")
    lines.append("")
    lines.append("CPU: real = user + sys CPU time of the process during the run; sim = the time its workers were "
                 "awake (`awake_us`: working or looking for work). Utilization = CPU / (P x makespan).")
    lines.append("")
    lines.append("| workload | P | policy | real cpu_ms | real utilization | sim cpu_ms | sim utilization | "
                 "other processes' cores during the real runs | real work - cpu, ms | "
                 "real submitter's largest release lag, us | real pauses, ms | urgent requests a pause overlapped |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def util(side, c):
        if not side:
            return "-"
        cpu, mk = side["summary"].get("cpu_ms"), side["summary"].get("makespan_ms")
        return "-" if not cpu or not mk else f"{cpu['median'] / (c['workers'] * mk['median']):.2f}"

    for c in res["configs"]:
        sim_cpu = c["sim"]["summary"].get("cpu_ms") if c["sim"] else None
        lines.append(f"| {c['workload']} | {c['workers']} | {c['policy']} | {fmt(c['real']['summary'].get('cpu_ms'))} | "
                     f"{util(c['real'], c)} | {fmt(sim_cpu)} | {util(c['sim'], c)} | "
                     f"{fmt(c['real']['summary'].get('other_cores'))} | "
                     f"{fmt(c['real']['summary'].get('work_minus_cpu_ms'))} | "
                     f"{fmt(c['real']['summary'].get('release_lag_max_us'))} | "
                     f"{fmt(c['real']['summary'].get('paused_ms'))} | {fmt(c['real']['summary'].get('urgent_paused'))} |")
    lines.append("")
    lines.append("(Other processes' cores: the machine's busy CPU time in /proc/stat minus the run's own, over its "
                 "wall time; above 0.1 the real numbers are disturbed by other work on the machine. Work - cpu: "
                 "the workload's work minus the process's CPU time, when positive: strands (which spin on the wall "
                 "clock) lost at least that much CPU to something else, e.g. the host of a virtual machine, "
                 "which the first column does not see. Release lag: "
                 "how late `sim_real_run`'s submitter called `graph.run()` after a release time; an urgent "
                 "request's real response includes it, the simulator's has none. Pauses: gaps of 100 us or more "
                 "between two clock reads of a spinning strand, i.e. its thread was off the CPU (the kernel ran "
                 "another thread there, or the host stopped the virtual CPU); summed over the run, and how many urgent requests one "
                 "overlapped, between submission and finish. The simulator models no pauses.)")
    lines.append("")
    lines.append("Workloads (work and span computed from the generated files, in ms):")
    lines.append("")
    lines.append("| workload | file | requests | nodes | work | span of the longest request | description |")
    lines.append("|---|---|---|---|---|---|---|")
    for name, w in res["workloads"].items():
        lines.append(f"| {name} | `{w['file']}` | {w['requests']} | {w['nodes']} | {w['work_ms']:.1f} | "
                     f"{w['max_span_ms']:.2f} | {w['description']} |")
    if res["errors"]:
        lines.append("")
        lines.append("Failed runs:")
        lines.append("")
        for e in res["errors"]:
            lines.append(f"* {e}")
    lines.append("")
    with open(os.path.join(out_dir, f"validation{res['suffix']}.md"), "w") as f:
        f.write("\n".join(lines))


# ---- main --------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-lead-bench", help="build directory, relative to the repository root (bench-bin/sim_real_run, bin/promptly-sim)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="bench/results/sim", help="output directory (relative: to the repository root)")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--submitter", choices=["fifo", "normal"], default="fifo",
                    help="sim_real_run --submitter: the releasing thread under SCHED_FIFO when permitted (default)")
    ap.add_argument("--threads", choices=["fifo", "normal"], default="fifo",
                    help="sim_real_run --threads: the runtime's threads under SCHED_FIFO (default; needs root or "
                         "CAP_SYS_NICE), so the kernel's CFS placement of woken workers stays out of the comparison; "
                         "normal writes validation-cfs.md and runs-cfs/ instead")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be >= 1")

    build = resolve(args.build)
    real_bin = os.path.join(build, "bench-bin", "sim_real_run")
    sim_bin = os.path.join(build, "bin", "promptly-sim")
    if not os.access(real_bin, os.X_OK):
        sys.exit(f"validate.py: {real_bin} does not exist; build it: cmake --build {args.build} --target sim_real_run")
    sim_available = os.access(sim_bin, os.X_OK)
    if not sim_available:
        print(f"validate.py: {sim_bin} does not exist: skipping the simulator side", file=sys.stderr)

    out_dir = resolve(args.out)
    suffix = "" if args.threads == "fifo" else "-cfs"
    wl_dir, runs_dir = os.path.join(out_dir, "workloads"), os.path.join(out_dir, "runs" + suffix)
    os.makedirs(wl_dir, exist_ok=True)
    os.makedirs(runs_dir, exist_ok=True)
    workers = [int(x) for x in args.workers.split(",") if x]
    all_wl = workloads()
    only = [x for x in args.only.split(",") if x]
    for x in only:
        if x not in all_wl:
            ap.error(f"--only: unknown workload '{x}' (known: {', '.join(all_wl)})")
    chosen = {k: v for k, v in all_wl.items() if not only or k in only}

    wl_info, configs = {}, []
    for name, (desc, wl, policies, urgent) in chosen.items():
        path = os.path.join(wl_dir, name + ".json")
        with open(path, "w") as f:
            json.dump(wl, f, separators=(",", ":"))
        wl_info[name] = {"file": os.path.relpath(path, out_dir), "description": desc, "requests": len(wl["requests"]),
                         "nodes": sum(len(r["nodes"]) for r in wl["requests"]),
                         "work_ms": sum(work_of(r["nodes"]) for r in wl["requests"]) / 1000.0,
                         "max_span_ms": max(span_of(r["nodes"]) for r in wl["requests"]) / 1000.0}
        for p in workers:
            for pol in policies:
                configs.append({"workload": name, "file": path, "workers": p, "policy": pol, "urgent": urgent,
                                "real_runs": [], "sim_runs": []})

    # The simulator's wake costs: this machine's notify-to-running times with the notifier busy,
    # measured now in the real side's thread mode (sim_vcpu_wake, 200 wake-ups), drawn from by
    # every simulated wake-up. Without the tool the simulator keeps its constant (20 us).
    wake = None
    wake_bin = os.path.join(build, "bench-bin", "sim_vcpu_wake")
    wake_file = os.path.join(out_dir, f"wake-samples{suffix}.json")
    if os.access(wake_bin, os.X_OK):
        cmd = [wake_bin, "--json"] + (["--fifo"] if args.threads == "fifo" else [])
        try:
            got = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            got = subprocess.CompletedProcess(cmd, 1, "", "no answer within 60 s")
        if got.returncode == 0:
            wake = json.loads(got.stdout)
            with open(wake_file, "w") as f:
                json.dump(wake, f)
            print(f"validate.py: wake costs p50 {wake['p50_us']:.1f} us, p99 {wake['p99_us']:.1f} us "
                  f"(sim_vcpu_wake, {wake['mode']})", file=sys.stderr)
        else:
            print(f"validate.py: {' '.join(cmd)} failed: {got.stderr.strip()}; the simulator keeps its constant wake cost",
                  file=sys.stderr)
    sim_extra = ["--wake-samples", wake_file] if wake else []

    errors = []
    loadavg_before = os.getloadavg()
    for rep in range(args.reps):
        for c in configs:
            tag = f"{c['workload']}-P{c['workers']}-{c['policy']}-rep{rep}"
            sides = [("real", real_bin, [real_bin, "--submitter", args.submitter, "--threads", args.threads])]
            if sim_available:
                # One seed per repetition: the simulator's probes and wake-cost draws vary as the real runs do.
                sides.append(("sim", sim_bin, [sim_bin, "run", "--seed", str(rep + 1), *sim_extra]))
            for side, _, prefix in sides:
                out_path = os.path.join(runs_dir, f"{tag}-{side}.json")
                cmd = prefix + ["--workload", c["file"], "--workers", str(c["workers"]), "--policy", c["policy"],
                                "--json", out_path]
                out, err, other = run_one(cmd, out_path, args.timeout)
                if err:
                    errors.append(f"{tag} {side}: {err}")
                    print(f"  {tag} {side}: FAILED: {err}", file=sys.stderr)
                    continue
                if out.get("completed") is False or out.get("problem"):
                    errors.append(f"{tag} {side}: the run did not complete: {out.get('problem', '')}")
                    print(f"  {tag} {side}: INCOMPLETE: {out.get('problem', '')}", file=sys.stderr)
                    continue
                m = metrics_of(out, c["urgent"])
                print(f"  {tag} {side}: " + ", ".join(f"{k} {v:.2f}" for k, v in m.items()), file=sys.stderr)
                m["other_cores"] = other  # CPU used by other processes during the run (not compared)
                m["raw"] = os.path.relpath(out_path, out_dir)
                c[f"{side}_runs"].append(m)
    loadavg_after = os.getloadavg()

    res_configs = []
    for c in configs:
        metric_names = ["makespan_ms"] + (["urgent_p50_ms", "urgent_p99_ms", "background_response_ms"] if c["urgent"] else [])
        real = {"runs": c["real_runs"], "summary": {}}
        for k in metric_names + ["cpu_ms", "other_cores", "release_lag_max_us", "work_minus_cpu_ms", "paused_ms", "urgent_paused"]:
            s = summary([r[k] for r in c["real_runs"] if r.get(k) is not None])
            if s:
                real["summary"][k] = s
        sim = None
        if sim_available:
            sim = {"runs": c["sim_runs"], "summary": {}}
            for k in metric_names + ["cpu_ms"]:
                s = summary([r[k] for r in c["sim_runs"] if k in r])
                if s:
                    sim["summary"][k] = s
        ratio = {}
        for k in metric_names:
            if sim and k in sim["summary"] and k in real["summary"] and real["summary"][k]["median"] > 0:
                ratio[k] = sim["summary"][k]["median"] / real["summary"][k]["median"]
        # The real runs in which no spinning strand saw a pause (the simulator models none).
        clean_runs = [r for r in c["real_runs"] if r.get("paused_ms", 0) == 0]
        clean = {}
        for k in metric_names:
            cs = summary([r[k] for r in clean_runs if r.get(k) is not None])
            if cs and sim and k in sim["summary"] and cs["median"] > 0:
                clean[k] = {"runs": len(clean_runs), "real": cs, "ratio": sim["summary"][k]["median"] / cs["median"]}
        res_configs.append({"workload": c["workload"], "workers": c["workers"], "policy": c["policy"],
                            "metrics": metric_names, "real": real, "sim": sim, "ratio": ratio, "without_pauses": clean,
                            "within_target": {k: abs(v - 1) <= TARGET for k, v in ratio.items()}})

    res = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": machine(),
        "loadavg_before": loadavg_before,
        "loadavg_after": loadavg_after,
        "command": shlex.join([os.path.relpath(sys.argv[0], os.getcwd())] + sys.argv[1:]),
        "real_bin": real_bin,
        "sim_bin": sim_bin,
        "sim_available": sim_available,
        "reps": args.reps,
        "submitter": args.submitter,
        "threads": args.threads,
        "wake": {k: v for k, v in wake.items() if k != "samples_us"} if wake else None,
        "suffix": suffix,
        "target": TARGET,
        "workloads": wl_info,
        "configs": res_configs,
        "errors": errors,
    }
    with open(os.path.join(out_dir, f"validation{suffix}.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_report(out_dir, res)
    print(f"wrote {os.path.join(out_dir, f'validation{suffix}.md')} and validation{suffix}.json", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
