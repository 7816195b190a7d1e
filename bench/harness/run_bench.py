#!/usr/bin/env python3
"""Benchmark harness: builds a suite's programs, runs every (bench, runtime, workers) pair
alternately (one warm-up round, then N measured rounds), measures each run from the parent,
checks that all runtimes computed the same answer, and writes results, tables and plots.

    python3 bench/harness/run_bench.py SUITE [--reps N] [--quick] [--build-dir build/bench]

Normally invoked as `./run bench SUITE [--reps N] [--quick]`. See bench/README.md."""

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build as build_mod  # noqa: E402
import machine as machine_mod  # noqa: E402
import measure  # noqa: E402
import plots  # noqa: E402
import report  # noqa: E402
import suite as suite_mod  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def exes_to_build(pairs):
    """Every pair's program, and the program it starts when its params name one as `server`
    (an exe spec such as "cargo:echo": suite `io`'s driver starts the server it measures)."""
    specs = [p.exe for p in pairs]
    for p in pairs:
        server = p.params.get("server")
        if isinstance(server, str) and server.partition(":")[0] in suite_mod.EXE_KINDS:
            specs.append(server)
    return specs


def parse_args(argv):
    p = argparse.ArgumentParser(prog="run_bench.py", description=__doc__.splitlines()[0])
    p.add_argument("suite", nargs="?", help="suite name: a file bench/suites/NAME.py")
    p.add_argument("--reps", type=int, help="measured rounds after the warm-up round (default 5; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="smoke test: smaller inputs, fewer repetitions")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "bench"), help="default: build/bench")
    p.add_argument("--out", help="output directory (default: bench/results/SUITE for a complete full "
                                 "run, else BUILD_DIR/results/SUITE)")
    p.add_argument("--benches", help="comma-separated bench names to run (default: all)")
    p.add_argument("--runtimes", help="comma-separated runtimes to run (default: all)")
    p.add_argument("--workers", help="comma-separated worker counts to run (default: all)")
    p.add_argument("--timeout", type=float, help="per-run timeout in seconds (default: the suite's)")
    p.add_argument("--probe-ms", type=int, default=200, help="effective-core probe length (default 200)")
    p.add_argument("--no-build", action="store_true", help="use the programs already built")
    p.add_argument("--promptly-prefix", metavar="DIR",
                   help="build the C++ programs against the Promptly installed in DIR (bench/ "
                        "configured alone) instead of compiling the runtime again")
    p.add_argument("--list", action="store_true", help="list suites, or the pairs of SUITE, and exit")
    p.add_argument("--from-json", metavar="FILE",
                   help="run nothing: redo latest.md and the plots from a latest.json (into --out, "
                        "default: the file's directory)")
    return p.parse_args(argv)


def _csv(text, conv=str):
    return {conv(x) for x in text.split(",") if x} if text else None


def _duration(s):
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """One line per run: which pair, which round, what it measured, how many runs remain."""

    def __init__(self, total):
        self.total, self.done, self.last = total, 0, {}

    def start(self, pair, round_no, reps):
        self.done += 1
        what = "warm-up" if round_no == 0 else f"rep {round_no}/{reps}"
        print(f"[{self.done:>3}/{self.total}] {what:<9} {pair.bench:<18} {pair.runtime:<17} "
              f"w={pair.params['workers']:<2}", end=" ", file=sys.stderr, flush=True)

    def finish(self, pair, elapsed, text, remaining_pairs):
        self.last[pair.slug] = elapsed
        known = list(self.last.values())
        eta = sum(self.last.get(p.slug, sum(known) / len(known)) for p in remaining_pairs)
        print(f"{text}  | {self.total - self.done} left, ~{_duration(eta)}", file=sys.stderr, flush=True)

    def skip(self, n):
        self.total -= n


def check_answer(pair, value, answers):
    """Raises RunError unless `value` is the expected answer and the one every other runtime of
    the bench computed."""
    expected = pair.spec.get("expected")
    if expected is not None:
        want = expected(pair.params)
        if value != want:
            raise measure.RunError(f"wrong answer: computed {value!r}, expected {want!r}")
    first = answers.setdefault(pair.bench, (value, pair.label))
    if value != first[0]:
        raise measure.RunError(f"answer mismatch: computed {value!r}, but {first[1]} computed {first[0]!r}")


def run_rounds(pairs, paths, launcher, reps, probe_s, log_dir):
    """Round 0 is the warm-up, rounds 1..reps are measured; every round visits every live pair
    once, in the same order (A B C A B C ...). Returns ({slug: [runs]}, [(label, error)])."""
    runs = {p.slug: [] for p in pairs}
    failed = {}
    answers = {}
    env_base = dict(os.environ)
    progress = Progress(len(pairs) * (reps + 1))
    for round_no in range(reps + 1):
        for i, pair in enumerate(pairs):
            if pair.slug in failed:
                continue
            progress.start(pair, round_no, reps)
            t0 = time.monotonic()
            cores = measure.probe_cores(probe_s) if round_no > 0 and probe_s > 0 else None
            cmd = [str(paths[pair.exe])] + pair.args
            try:
                r = measure.run_once(launcher, cmd, {**env_base, **pair.env}, pair.timeout_s,
                                     log_dir / f"{pair.slug}.r{round_no}")
                check_answer(pair, r["result"], answers)
                metrics = dict(r["metrics"])
                if (derive := pair.spec.get("derived")) is not None:
                    try:
                        metrics.update(derive(pair.runtime, pair.params, metrics))
                    except Exception as e:  # a bug in the suite file: report it as this pair's failure
                        raise measure.RunError(f"the suite's 'derived' function failed: {e!r}")
            except measure.RunError as e:
                msg = f"{e}\n    command: {' '.join(cmd)}"
                failed[pair.slug] = (pair.label, msg)
                left = reps - round_no
                progress.skip(left)
                print(f"FAILED\nerror: {pair.label}: {msg}", file=sys.stderr, flush=True)
                continue
            if cores is not None:
                metrics["effective_cores"] = cores
            text = f"region {report.num(metrics['region_s'])} s  wall {report.num(r['wall_s'])} s"
            if cores is not None:
                text += f"  cores {cores:.2f}" + (" LOW" if cores < report.LOW_CORES else "")
            if round_no > 0:
                runs[pair.slug].append({**r, "metrics": metrics})
            remaining = [p for p in pairs[i + 1:] if p.slug not in failed] + \
                        [p for p in pairs if p.slug not in failed] * (reps - round_no)
            progress.finish(pair, time.monotonic() - t0, text, remaining)
    return runs, list(failed.values())


def calibrate(suite, paths, launcher, log_dir):
    """Runs each of the suite's "calibrate" entries ({"param", "exe", "args", "metric", "runs"})
    `runs` times (default 5) before the rounds and returns {param: median of its metric}, for
    the pairs' arguments: one measurement every program of the round shares (bench/suites/jobs.py
    says why). An entry whose program no selected pair uses is skipped (its parameter keeps its
    default)."""
    out = {}
    for c in suite.get("calibrate", []):
        if c["exe"] not in paths:
            continue
        cmd = [str(paths[c["exe"]])] + list(c.get("args", []))
        values = []
        for i in range(c.get("runs", 5)):
            r = measure.run_once(launcher, cmd, dict(os.environ), 60.0, log_dir / f"calibrate-{c['param']}.{i}")
            if c["metric"] not in r["metrics"]:
                raise measure.RunError(f"{' '.join(cmd)} reported no {c['metric']}")
            values.append(float(r["metrics"][c["metric"]]))
        out[c["param"]] = f"{statistics.median(values):.6g}"
        print(f"calibrated {c['param']} = {out[c['param']]} (median of {', '.join(f'{v:.4g}' for v in values)})",
              file=sys.stderr)
    return out


def write_reports(out, suite, machine, run_info, results, failures):
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    subtitle = f"{machine['cpu_model']}, {machine['cores_affinity']} cores, {run_info['date']}"
    plot_files = plots.plot_suite(out, suite, results, subtitle)
    # A suite may draw plots of its own (e.g. the priority suite's allotment
    # timelines); they are listed at the end of latest.md.
    extra = suite["extra_plots"](out, results) if "extra_plots" in suite else {}
    report.write_md(out / "latest.md", suite, machine, run_info, results, failures, plot_files, extra)
    plot_files = {**plot_files, **extra}
    return plot_files


def rerender(suite, path, out):
    doc = json.loads(path.read_text())
    machine = dict(doc["machine"])
    run_info = machine.pop("run")
    plot_files = write_reports(out or path.parent, suite, machine, run_info, doc["results"], [])
    print(f"wrote {out or path.parent}/latest.md and {len(plot_files)} plots", file=sys.stderr)
    return 0


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    if args.suite is None:
        print("suites: " + ", ".join(suite_mod.available(ROOT)))
        return 0 if args.list else 2
    try:
        suite = suite_mod.load(ROOT, args.suite)
        pairs = suite_mod.expand(suite, args.quick, _csv(args.benches), _csv(args.runtimes),
                                 _csv(args.workers, int), args.timeout)
    except suite_mod.SuiteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.from_json:
        return rerender(suite, Path(args.from_json), Path(args.out) if args.out else None)
    if args.list:
        for p in pairs:
            print(f"{p.label:<40} {p.exe:<28} {' '.join(p.args)}")
        return 0
    if not pairs:
        print("error: the filters leave no (bench, runtime, workers) pair to run", file=sys.stderr)
        return 2

    reps = args.reps if args.reps is not None else (1 if args.quick else 5)
    if reps < 1:
        print("error: --reps must be >= 1", file=sys.stderr)
        return 2
    build_dir = Path(args.build_dir).resolve()
    started, t0 = datetime.datetime.now(datetime.timezone.utc), time.monotonic()
    machine = machine_mod.describe(ROOT)

    try:
        launcher = build_mod.launcher(build_dir)
        if args.no_build:
            paths = {p.exe: build_mod.exe_path(p.exe, build_dir) for p in pairs}
        else:
            paths = build_mod.build(exes_to_build(pairs), ROOT, build_dir, args.promptly_prefix)
    except build_mod.BuildError as e:
        print(f"error: build failed: {e}", file=sys.stderr)
        return 1

    log_dir = build_dir / "logs" / suite["name"]
    shutil.rmtree(log_dir, ignore_errors=True)
    try:
        calibrated = calibrate(suite, paths, launcher, log_dir)
    except measure.RunError as e:
        print(f"error: calibration failed: {e}", file=sys.stderr)
        return 1
    if calibrated:
        pairs = suite_mod.expand(suite, args.quick, _csv(args.benches), _csv(args.runtimes),
                                 _csv(args.workers, int), args.timeout, calibrated)
    print(f"{suite['name']}: {len(pairs)} pairs x (1 warm-up + {reps}) runs"
          f"{' (quick)' if args.quick else ''}; program output in {log_dir}", file=sys.stderr)
    try:
        runs, failures = run_rounds(pairs, paths, launcher, reps, args.probe_ms / 1000.0, log_dir)
    except KeyboardInterrupt:
        print("\ninterrupted; no results written", file=sys.stderr)
        return 130

    failed_labels = {label for label, _ in failures}
    results = [report.make_result(p, runs[p.slug]) for p in pairs
               if runs[p.slug] and p.label not in failed_labels]
    report.apply_relative(results, {b["name"]: b for b in suite["benches"]})

    complete = not (args.quick or failures or args.benches or args.runtimes or args.workers)
    if args.out:
        out = Path(args.out)
    elif complete:
        out = ROOT / "bench" / "results" / suite["name"]
    else:
        out = build_dir / "results" / suite["name"]
    run_info = {"date": started.isoformat(timespec="seconds"), "reps": reps, "warmup_rounds": 1,
                "quick": args.quick, "probe_ms": args.probe_ms, "low_cores_below": report.LOW_CORES,
                "argv": ["run_bench.py"] + (argv if argv is not None else sys.argv[1:]),
                "duration_s": round(time.monotonic() - t0, 1), "calibrated": calibrated}
    out.mkdir(parents=True, exist_ok=True)
    (out / "machine.json").write_text(json.dumps(machine, indent=1) + "\n")
    report.write_json(out / "latest.json", suite["name"], {**machine, "run": run_info}, results)
    plot_files = write_reports(out, suite, machine, run_info, results, failures)

    where = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f"{suite['name']}: wrote {where}/latest.md, latest.json, machine.json"
          f"{', ' + str(len(plot_files)) + ' plots' if plot_files else ''} "
          f"in {_duration(time.monotonic() - t0)}", file=sys.stderr)
    if not complete and not args.out:
        print(f"(not bench/results/{suite['name']}: "
              f"{'a --quick run' if args.quick else 'a failed or filtered run'} does not replace the "
              f"committed results)", file=sys.stderr)
    if failures:
        print(f"error: {len(failures)} pair(s) failed:", file=sys.stderr)
        for label, msg in failures:
            print(f"  {label}: {msg.splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
