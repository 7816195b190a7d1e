"""The job-server segment of ./run demo: promptlyd with several clients and jobs of mixed sizes.

Usage: python3 examples/demo_server.py [OUTDIR] [--promptlyd PATH] [--seconds S] [--clients N]
                                       [--policy NAME] [--seed N]

Starts promptlyd on a Unix socket in a private temporary directory, switches it to a policy that
moves cores between jobs (`equi` by default: the jobs with work split the cores evenly, the
oldest first, AMCilk Sec. 6.3's equal partition), subscribes to its statistics stream every 20 ms
(AMCilk Sec. 4.1), and runs N client threads that each submit jobs of mixed sizes (fib, nqueens,
matmul, cilksort, bing) one after the other, waiting for each and thinking ~100 ms in between,
for S seconds. Then it checks that every job
reached exactly one terminal state, `done`, with a correct result (fib values, n-queens
counts, the programs' own checksums), stops the daemon with SIGTERM (a drain; exit status 0),
prints flow time per program and writes to OUTDIR (default build/demo):

  server_jobs.csv   one row per job: id, program, args, submit_s, state, queued_us, run_us, flow_us
  server_cores.csv  one row per running job per stream line: t_s, seq, job_id, program, cores
  server_cores.png  cores per job over time (stacked, coloured by program) and flow time per job
                    vs. submit time; skipped with a message if matplotlib is missing

Exit status 0 if every check passed, 1 otherwise (the message says which), 2 for bad usage.
Every socket read has a timeout and the daemon is killed on any failure.
"""
import argparse
import csv
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from promptly_client import Client, PromptlyError  # noqa: E402

STARTUP_TIMEOUT_S = 10.0  # promptlyd prints `ready` within milliseconds; this bounds a broken start
READ_TIMEOUT_S = 10.0  # bounds every socket read: far above the longest flow time of the mix (< 1 s)
STOP_TIMEOUT_S = 15.0  # SIGTERM -> exit: the drain finds no job left (all were waited for)
STREAM_INTERVAL_MS = 20
THINK_MEAN_S = 0.1  # a client's mean think time between a reply and its next submission

# n -> number of solutions of the n-queens problem (OEIS A000170).
NQUEENS = {1: 1, 2: 0, 3: 0, 4: 2, 5: 10, 6: 4, 7: 40, 8: 92, 9: 352, 10: 724, 11: 2680, 12: 14200, 13: 73712}

# The job mix: (program, args). On one core of this kind of machine the jobs take from about
# 3 ms (fib 30) to about 400 ms (cilksort 2^21), so short jobs keep arriving while long ones
# hold cores. The `bing` jobs draw their work from the heavy-tailed Bing-like distribution
# (5-195 ms, AMCilk Sec. 6.1), tripled.
def job_mix(rng):
    pick = rng.random()
    if pick < 0.25:
        return "fib", {"n": rng.choice([30, 34, 36, 38])}
    if pick < 0.40:
        return "nqueens", {"n": rng.choice([11, 12, 13])}
    if pick < 0.55:
        return "matmul", {"n": rng.choice([256, 512])}
    if pick < 0.70:
        return "cilksort", {"n": rng.choice([1 << 18, 1 << 20, 1 << 21]), "seed": rng.randrange(1, 1000)}
    return "bing", {"workload": "bing", "seed": rng.randrange(0, 1 << 30), "scale": 3}


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def check_result(program, args, result):
    """None if the job's result is what the program must return for args, else what is wrong."""
    if program == "fib":
        return None if result == fib(args["n"]) else f"fib({args['n']}) = {result}, expected {fib(args['n'])}"
    if program == "nqueens":
        want = NQUEENS[args["n"]]
        ok = result.get("n") == args["n"] and result.get("solutions") == want
        return None if ok else f"nqueens {args['n']}: {result}, expected {want} solutions"
    if program == "matmul":
        ok = result.get("n") == args["n"] and result.get("verified") is True and result.get("checksum") == result.get("expected")
        return None if ok else f"matmul {args['n']} not verified: {result}"
    if program == "cilksort":
        ok = (result.get("n") == args["n"] and result.get("sorted") is True
              and result.get("checksum") == result.get("checksum_before"))
        return None if ok else f"cilksort {args['n']} not sorted or lost elements: {result}"
    if program == "bing":
        units = round(result.get("work_ms", -1) * 1000 * args["scale"])
        ok = result.get("workload") == args["workload"] and 5 <= result.get("work_ms", 0) <= 195 and result.get("units") == units
        return None if ok else f"bing: {result} (expected work_ms in 5..195 and units = work_ms * 1000 * {args['scale']})"
    return f"no check for program {program}"


def percentile(sorted_values, p):
    """Nearest-rank percentile of a sorted, non-empty list."""
    k = math.ceil(p / 100 * len(sorted_values))
    return sorted_values[min(len(sorted_values), max(1, k)) - 1]


class Daemon:
    """promptlyd as a child process on a socket in a private directory; always stopped by close()."""

    def __init__(self, binary, workdir):
        self.socket = os.path.join(workdir, "promptlyd.sock")
        self.stderr_path = os.path.join(workdir, "promptlyd.stderr")
        self._stderr = open(self.stderr_path, "wb")
        # --drain-timeout bounds the drain after SIGTERM should a job still be running.
        self.proc = subprocess.Popen([binary, "--socket", self.socket, "--drain-timeout", "5"],
                                     stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL)
        self._ready = threading.Event()
        self.stdout_lines = []
        # A thread drains stdout (so the daemon never blocks on a full pipe) and signals `ready`,
        # the line promptlyd prints once it listens (docs/server.md, "Running promptlyd").
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()

    def _read_stdout(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.stdout_lines.append(line)
            if line == "ready":
                self._ready.set()
        self._ready.set()  # EOF: the daemon exited; wait_ready() sees that

    def wait_ready(self):
        if not self._ready.wait(STARTUP_TIMEOUT_S):
            raise RuntimeError(f"promptlyd did not print 'ready' within {STARTUP_TIMEOUT_S:.0f} s")
        if "ready" not in self.stdout_lines:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
            raise RuntimeError(f"promptlyd exited with status {self.proc.returncode} before 'ready': {self.stderr()}")

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace").strip()

    def terminate(self):
        """SIGTERM (a drain) and the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"promptlyd did not exit within {STOP_TIMEOUT_S:.0f} s of SIGTERM")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._reader.join(timeout=STOP_TIMEOUT_S)
        self._stderr.close()


def choose_policy(client, wanted):
    """Switches the daemon to the first policy of `wanted` it accepts; None if it takes none."""
    for name in wanted:
        try:
            client.set_policy(name)
            return name
        except PromptlyError as e:
            if e.code != "bad_args":
                raise
    return None


class Subscriber(threading.Thread):
    """Reads the stats stream and records, per stream line, the cores of every running job."""

    def __init__(self, path, t0):
        super().__init__(daemon=True)
        self.client = Client(path, timeout=READ_TIMEOUT_S)
        self.t0 = t0
        self.stop = threading.Event()
        self.samples = []  # (t_s, seq, job_id, program, cores)
        self.lines = 0
        self.max_cores_in_use = 0
        self.error = None

    def run(self):
        try:
            self.client.send({"op": "subscribe", "interval_ms": STREAM_INTERVAL_MS})
            subscribed = False
            while not self.stop.is_set():
                line = self.client.receive()
                if line.get("stream") != "stats":
                    if not line.get("ok") or not line.get("subscribed"):
                        raise RuntimeError(f"unexpected reply on the subscription: {line}")
                    subscribed = True
                    continue
                t = time.monotonic() - self.t0  # the stream line has no clock of its own: time of receipt
                self.lines += 1
                self.max_cores_in_use = max(self.max_cores_in_use, line["cores_in_use"])
                for job in line["jobs"]:
                    self.samples.append((t, line["seq"], job["id"], job["program"], job.get("cores", 0)))
            # Stream lines may still arrive before the unsubscribe reply; read up to it.
            self.client.send({"op": "unsubscribe"})
            while True:
                line = self.client.receive()
                if line.get("stream") != "stats":
                    if not line.get("ok") or line.get("subscribed") is not False:
                        raise RuntimeError(f"unexpected reply to unsubscribe: {line}")
                    break
            if not subscribed:
                raise RuntimeError("no 'subscribed' reply")
        except Exception as e:  # reported by the main thread
            self.error = e
        finally:
            self.client.close()


def client_loop(path, index, seed, t0, deadline, abort, jobs, errors, lock):
    """One interactive client (a closed loop with think times): submit a job, wait for its reply
    (wait:true), think for an exponentially distributed time, repeat until the deadline. The think
    times make the number of running jobs vary, so the policy has cores to move (a lone job gets
    every core, a newcomer takes its share); they pace the load and synchronise nothing."""
    rng = random.Random(seed * 1000 + index)
    try:
        with Client(path, timeout=READ_TIMEOUT_S) as c:
            while time.monotonic() < deadline:
                program, args = job_mix(rng)
                submit_s = time.monotonic() - t0
                reply = c.submit(program, args, wait=True)
                with lock:
                    jobs.append({"client": index, "program": program, "args": args, "submit_s": submit_s, "reply": reply})
                if abort.wait(rng.expovariate(1 / THINK_MEAN_S)):
                    break
    except Exception as e:
        with lock:
            errors.append(f"client {index}: {type(e).__name__}: {e}")


def check_jobs(path, jobs, subscriber):
    """Every job done once with a correct result; the daemon's own status and totals agree."""
    problems = []
    ids = [j["reply"].get("id") for j in jobs]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} duplicate job ids")
    for j in jobs:
        r = j["reply"]
        if r.get("state") != "done":
            problems.append(f"job {r.get('id')} ({j['program']} {j['args']}) ended {r.get('state')}: {r.get('error')}")
            continue
        wrong = check_result(j["program"], j["args"], r.get("result"))
        if wrong:
            problems.append(f"job {r['id']}: {wrong}")
    with Client(path, timeout=READ_TIMEOUT_S) as c:
        # Asked again, each id reports the same single terminal state and result.
        statuses = c.pipeline([{"op": "status", "id": i} for i in ids])
        for j, s in zip(jobs, statuses):
            if s.get("state") != "done" or s.get("result") != j["reply"].get("result"):
                problems.append(f"job {s.get('id')}: status says {s.get('state')} {s.get('result')}, its wait said done")
        st = c.stats()
    n = len(jobs)
    totals = {k: st[k] for k in ("submitted", "done", "failed", "cancelled", "rejected", "running", "queued")}
    want = {"submitted": n, "done": n, "failed": 0, "cancelled": 0, "rejected": 0, "running": 0, "queued": 0}
    if totals != want:
        problems.append(f"daemon totals {totals}, expected {want}")
    if subscriber.lines == 0:
        problems.append("no stream line received")
    return problems


def write_csvs(out, jobs, samples):
    with open(out / "server_jobs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "program", "args", "submit_s", "state", "queued_us", "run_us", "flow_us"])
        for j in sorted(jobs, key=lambda j: j["reply"]["id"]):
            r, t = j["reply"], j["reply"]["timing"]
            w.writerow([r["id"], j["program"], json.dumps(j["args"], separators=(",", ":")), f"{j['submit_s']:.6f}",
                        r["state"], t["queued_us"], t["run_us"], t["flow_us"]])
    with open(out / "server_cores.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "seq", "job_id", "program", "cores"])
        for t, seq, job_id, program, cores in samples:
            w.writerow([f"{t:.6f}", seq, job_id, program, cores])


def summary(jobs):
    by_program = defaultdict(list)
    for j in jobs:
        by_program[j["program"]].append(j["reply"]["timing"]["flow_us"] / 1000)
    rows = [("program", "jobs", "mean ms", "p50 ms", "p99 ms")]
    for program in sorted(by_program):
        v = sorted(by_program[program])
        rows.append((program, str(len(v)), f"{sum(v) / len(v):.1f}", f"{percentile(v, 50):.1f}", f"{percentile(v, 99):.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + r[0].ljust(widths[0]) + "".join("  " + c.rjust(w) for c, w in zip(r[1:], widths[1:])))


def plot(out, jobs, samples, workers, policy, clients):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        print("server plot skipped: matplotlib is not installed (the CSV files are written)")
        (out / "server_cores.png").unlink(missing_ok=True)  # never leave an older run's plot beside new data
        return None
    programs = sorted({j["program"] for j in jobs})
    colour = {p: plt.get_cmap("tab10")(i) for i, p in enumerate(programs)}
    program_of = {j["reply"]["id"]: j["program"] for j in jobs}

    # One series per job over the stream's sample times (0 where the job was not running).
    times = sorted({s[0] for s in samples})
    index = {t: i for i, t in enumerate(times)}
    series = {}
    for t, _seq, job_id, _program, cores in samples:
        series.setdefault(job_id, [0] * len(times))[index[t]] = cores
    job_ids = sorted(series)  # older jobs lower in the stack

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    fig.suptitle(f"promptlyd, policy {policy}, {workers} workers: {clients} clients, {len(jobs)} jobs of mixed sizes")
    if job_ids:
        ax1.stackplot(times, [series[i] for i in job_ids], step="post",
                      colors=[colour.get(program_of.get(i), "grey") for i in job_ids],
                      edgecolor="white", linewidth=0.3)
    ax1.axhline(workers, color="black", linestyle="--", linewidth=0.8)
    ax1.set_ylim(0, workers + 0.2)
    ax1.set_ylabel("cores")
    ax1.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax1.set_title(f"cores per job over time (stacked, one band per job; stream every {STREAM_INTERVAL_MS} ms)",
                  fontsize="medium")

    for p in programs:
        xs = [j["submit_s"] for j in jobs if j["program"] == p]
        ys = [j["reply"]["timing"]["flow_us"] / 1000 for j in jobs if j["program"] == p]
        ax2.scatter(xs, ys, s=12, color=colour[p])
    ax2.set_yscale("log")
    ax2.set_xlabel("time since the clients started (s)")
    ax2.set_ylabel("flow time (ms, log scale)")
    ax2.set_title("flow time per job (accepted -> done) vs. its submit time", fontsize="medium")
    ax2.grid(True, which="both", alpha=0.3)
    fig.legend(handles=[Patch(color=colour[p], label=p) for p in programs] +
               [plt.Line2D([], [], color="black", linestyle="--", label="workers")],
               loc="lower center", ncol=len(programs) + 1, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path = out / "server_cores.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", default="build/demo")
    ap.add_argument("--promptlyd", default="build/bin/promptlyd", help="the daemon binary (default: %(default)s)")
    ap.add_argument("--seconds", type=float, default=6.0, help="how long clients submit (default: %(default)s)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default: %(default)s)")
    ap.add_argument("--policy", default="equi",
                    help="core-allocation policy; if the daemon refuses it, drep, then its default (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the job mix (default: %(default)s)")
    a = ap.parse_args()
    if not 0 < a.seconds <= 60 or not 1 <= a.clients <= 64:
        ap.error("--seconds must be in (0, 60] and --clients in 1..64")
    if not os.access(a.promptlyd, os.X_OK):
        ap.error(f"{a.promptlyd} is not an executable (build it: ./run build)")
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)

    workdir = tempfile.mkdtemp(prefix="promptly-demo-")  # mode 0700, as promptlyd requires
    daemon = None
    abort = threading.Event()  # set on the way out: clients stop thinking and return
    try:
        daemon = Daemon(a.promptlyd, workdir)
        daemon.wait_ready()
        with Client(daemon.socket, timeout=READ_TIMEOUT_S) as c:
            workers = c.version()["workers"]
            policy = choose_policy(c, [a.policy, "drep"]) or "default"
        print(f"job server: promptlyd, {workers} workers, policy {policy}, {a.clients} clients for {a.seconds:g} s")

        t0 = time.monotonic()
        subscriber = Subscriber(daemon.socket, t0)
        subscriber.start()
        jobs, errors, lock = [], [], threading.Lock()
        deadline = t0 + a.seconds
        threads = [threading.Thread(target=client_loop, args=(daemon.socket, i, a.seed, t0, deadline, abort, jobs, errors, lock),
                                    daemon=True)
                   for i in range(a.clients)]
        for t in threads:
            t.start()
        for t in threads:
            # A client's last job started before the deadline; its reply has READ_TIMEOUT_S.
            t.join(timeout=a.seconds + 2 * READ_TIMEOUT_S)
        if any(t.is_alive() for t in threads):
            errors.append("a client did not finish")
        subscriber.stop.set()
        subscriber.join(timeout=2 * READ_TIMEOUT_S)
        if subscriber.is_alive() or subscriber.error:
            errors.append(f"subscriber: {subscriber.error or 'did not finish'}")
        if errors:
            raise RuntimeError("; ".join(errors))
        if not jobs:
            raise RuntimeError("no job completed")

        problems = check_jobs(daemon.socket, jobs, subscriber)
        if problems:
            raise RuntimeError(f"{len(problems)} check(s) failed:\n  " + "\n  ".join(problems[:20]))
        status = daemon.terminate()
        if status != 0:
            raise RuntimeError(f"promptlyd exited with status {status} after SIGTERM: {daemon.stderr()}")

        write_csvs(out, jobs, subscriber.samples)
        print(f"{len(jobs)} jobs, every one done once with a verified result; {subscriber.lines} stream lines, "
              f"up to {subscriber.max_cores_in_use} cores in use; promptlyd drained and exited 0")
        summary(jobs)
        png = plot(out, jobs, subscriber.samples, workers, policy, a.clients)
        print(f"files: {out / 'server_jobs.csv'}, {out / 'server_cores.csv'}" + (f", {png}" if png else ""))
        return 0
    except Exception as e:
        print(f"job-server demo FAILED: {e}", file=sys.stderr)
        if daemon is not None and daemon.proc.poll() is not None:
            print(f"promptlyd stderr: {daemon.stderr()}", file=sys.stderr)
        return 1
    finally:
        abort.set()
        if daemon is not None:
            daemon.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
