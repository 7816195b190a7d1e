#!/usr/bin/env python3
"""Where the time goes when an app's urgent tail misses its target on this machine: the numbers
behind the "why" paragraphs of bench/results/apps/README.md. Not a suite: one or two runs each,
read from the programs' own output, /proc and the runtime's trace (PROMPTLY_TRACE).

  email, 36 clients, aps and oblivious: the driver's CPU (cores), each server thread's time
          running and runnable-but-waiting (/proc/PID/task/TID/schedstat) over the driver's run,
          and, from a traced aps run, the client loops' I/O-ready-to-running times;
  proxy, 32 clients x 1500 requests, aps and oblivious, twice each: hit p99, resp p50 / p99,
          throughput; and, from a traced aps run (300 requests), the share of the time each
          worker served each pool and ran its tasks, and what the workers did during the client
          loops' slowest wake-ups.

  python3 bench/apps/diagnose.py [--build build] [--out bench/results/apps]
Writes OUT/diagnostics.md and OUT/diagnostics.json (about 1 minute).

  python3 bench/apps/diagnose.py --driver-nice-rounds R [--build build] [--out DIR]
          only this: email at 36 clients, aps and oblivious, with the driver at nice 0 and at
          nice 10 (it then yields the 2 cores to the server's threads, roughly as clients on
          other machines would), R alternated rounds. Writes OUT/driver-nice.md and .json.
"""
import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time


def result_of(text):
    m = re.search(r"^RESULT (\{.*\})$", text, re.M)
    if not m:
        sys.exit("diagnose.py: no RESULT line in the driver's output:\n" + text[-2000:])
    return json.loads(m.group(1))["metrics"]


def schedstat(pid):
    """tid -> (name, ns running, ns runnable but waiting)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait, _ = (int(x) for x in f.read().split())
        except FileNotFoundError:
            continue
        out[tid] = (name, run, wait)
    return out


def email_run(build, policy, trace=None, driver_nice=0):
    """One email run at 36 clients with the server started here (the driver connects to it)."""
    env = dict(os.environ)
    if trace:
        env["PROMPTLY_TRACE"] = trace
    server = subprocess.Popen([os.path.join(build, "apps/email/email_server"), "--port", "0", "--workers", "2",
                               "--policy", policy], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = server.stdout.readline()
        m = re.match(r"LISTENING (\d+)", line)
        if not m:
            sys.exit(f"diagnose.py: email_server did not say where it listens: {line!r}")
        before = schedstat(server.pid)
        t0 = time.monotonic()
        nice = ["nice", "-n", str(driver_nice)] if driver_nice else []
        driver = subprocess.Popen(nice + [os.path.join(build, "apps/email/email_driver"), "--connect", f"127.0.0.1:{m.group(1)}",
                                          "--clients", "36", "--measure-ms", "3000", "--warmup-ms", "500"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = driver.stdout.read()
        _, status, usage = os.wait4(driver.pid, 0)
        wall = time.monotonic() - t0
        after = schedstat(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    if status != 0:
        sys.exit(f"diagnose.py: email_driver failed ({status}):\n{out[-2000:]}")
    zero = (None, 0, 0)  # a thread started during the run (the I/O reactor starts with the first connection)
    threads = [{"name": after[t][0], "run_s": (after[t][1] - before.get(t, zero)[1]) / 1e9,
                "wait_s": (after[t][2] - before.get(t, zero)[2]) / 1e9} for t in sorted(after, key=int)]
    return {"policy": policy, "driver_nice": driver_nice, "wall_s": wall, "driver_cores": (usage.ru_utime + usage.ru_stime) / wall,
            "server_threads": threads, "metrics": result_of(out)}


def events(path):
    with open(path) as f:
        d = json.load(f)
    return sorted((e for e in d["traceEvents"] if e.get("ph") in ("X", "i")), key=lambda e: e["ts"])


def both_workers_from(ev):
    """The first time both workers' rings still hold events (older ones may have been dropped)."""
    return max(min(e["ts"] for e in ev if e["tid"] == w) for w in (0, 1))


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def reactor_wakeups(ev, start):
    """(I/O ready, running again) times, us, of every pool-0 fiber the I/O reactor made ready."""
    ready, lat = {}, []
    for e in ev:
        a = e.get("args", {})
        if e["name"] == "wake ready" and a.get("fiber") == 0 and a.get("pool") == 0 and e["ts"] >= start:
            ready[a["target"]] = e["ts"]
        elif e["name"] == "task (resumed)" and a.get("fiber") in ready:
            t = ready.pop(a["fiber"])
            lat.append((t, e["ts"]))
    return lat


def ran_within(e, t0, t1):
    """How long the task stretch `e` (an "X" event) ran between t0 and t1, us."""
    return max(0.0, min(e["ts"] + e["dur"], t1) - max(e["ts"], t0))


def worker_stretches(ev):
    return [e for e in ev if e["ph"] == "X" and e["tid"] in (0, 1)]


def client_loop_wakes(path):
    """I/O-ready (the reactor's wake of a pool-0 fiber) to that fiber running again, us; and in the
    wake-ups over 300 us, the share of the two workers' time spent running tasks."""
    ev = events(path)
    lat = reactor_wakeups(ev, both_workers_from(ev))
    stretches = worker_stretches(ev)
    window = running = 0.0
    for t0, t1 in lat:
        if t1 - t0 < 300:
            continue
        window += 2 * (t1 - t0)
        running += sum(ran_within(e, t0, t1) for e in stretches)
    d = [t1 - t0 for t0, t1 in lat]
    return {"wakeups": len(d), "p50_us": pct(d, 0.5), "p90_us": pct(d, 0.9), "p99_us": pct(d, 0.99),
            "running_share_in_slow_wakeups": running / window if window else float("nan")}


def slow_client_loop_waits(path, over_us=1000):
    """The proxy's client-loop wake-ups (I/O ready to running) over `over_us`: how many; in how
    many one worker ran tasks of some pool for at most a fifth of the wait (it was off the CPU,
    or between tasks) while the other ran fetch (pool 1) tasks for at least half of it; and the
    share of the wait those two workers ran tasks, each."""
    ev = events(path)
    slow = [(t0, t1) for t0, t1 in reactor_wakeups(ev, both_workers_from(ev)) if t1 - t0 >= over_us]
    stretches = worker_stretches(ev)
    matched, idle_ran, fetch_ran = 0, [], []
    for t0, t1 in slow:
        ran = {(w, p): 0.0 for w in (0, 1) for p in ("any", "fetch")}
        for e in stretches:
            o = ran_within(e, t0, t1)
            ran[(e["tid"], "any")] += o
            if e["args"]["pool"] == 1:
                ran[(e["tid"], "fetch")] += o
        for quiet in (0, 1):
            if ran[(quiet, "any")] <= 0.2 * (t1 - t0) and ran[(1 - quiet, "fetch")] >= 0.5 * (t1 - t0):
                matched += 1
                idle_ran.append(ran[(quiet, "any")] / (t1 - t0))
                fetch_ran.append(ran[(1 - quiet, "fetch")] / (t1 - t0))
                break
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    return {"over_us": over_us, "slow": len(slow), "one_idle_other_fetching": matched,
            "idle_worker_ran_share": mean(idle_ran), "other_ran_fetch_share": mean(fetch_ran)}


def proxy_run(build, policy, requests, trace=None):
    env = dict(os.environ)
    if trace:
        env["PROMPTLY_TRACE"] = trace
    got = subprocess.run([os.path.join(build, "apps/proxy/proxy_driver"), "--server", os.path.join(build, "apps/proxy/proxy_server"),
                          "--policy", policy, "--workers", "2", "--clients", "32", "--requests", str(requests)],
                         capture_output=True, text=True, env=env, timeout=300)
    if got.returncode != 0:
        sys.exit(f"diagnose.py: proxy_driver failed ({got.returncode}):\n{got.stdout[-1000:]}{got.stderr[-1000:]}")
    return result_of(got.stdout + got.stderr)


def proxy_shares(path):
    """Per worker and pool: the share of the traced time it served the pool (from its moves and
    mugs) and ran the pool's tasks."""
    ev = events(path)
    start, end = both_workers_from(ev), ev[-1]["ts"]
    served, running = collections.defaultdict(float), collections.defaultdict(float)
    at, since = {}, {}
    for e in ev:
        if e["ts"] < start or e["tid"] not in (0, 1):
            continue
        w = e["tid"]
        if e["ph"] == "X":
            running[(w, e["args"]["pool"])] += e["dur"]
        elif e["name"] in ("move", "mug"):
            if w in at:
                served[(w, at[w])] += e["ts"] - since[w]
            at[w], since[w] = e["args"]["pool"], e["ts"]
    for w in at:
        served[(w, at[w])] += end - since[w]
    span = end - start
    return [{"worker": w, "pool": p, "served": served[(w, p)] / span, "running": running[(w, p)] / span}
            for (w, p) in sorted(set(served) | set(running))]


def driver_nice_experiment(build, out, rounds):
    """email-36 under aps and oblivious, driver at nice 0 and 10, alternated; medians (min-max)."""
    started = time.time()
    runs = [email_run(build, p, driver_nice=n) for _ in range(rounds) for n in (0, 10) for p in ("aps", "oblivious")]
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node(),
           "cpus": os.cpu_count(), "rounds": rounds, "runs": runs, "elapsed_s": time.time() - started}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "driver-nice.json"), "w") as f:
        json.dump(res, f, indent=1)

    def cell(values):
        return f"{pct(values, 0.5):.0f} ({min(values):.0f}-{max(values):.0f})"

    def of(n, p, key):
        return [r["metrics"][key] if key in r["metrics"] else r[key] for r in runs
                if r["driver_nice"] == n and r["policy"] == p]

    L = ["# Email at 36 clients with the driver niced (diagnostic)", "",
         f"`python3 bench/apps/diagnose.py --driver-nice-rounds {rounds}` on {res['machine']} ({res['cpus']} CPUs), "
         f"{res['date']}, {res['elapsed_s']:.0f} s. Each round runs the four cells below in turn; median (min-max) "
         "over the rounds. At nice 10 the driver's threads weigh about a tenth of the server's under the kernel's "
         "fair scheduler, so they mostly run when the server's threads do not: roughly clients on other machines. "
         "The closed loop then offers less load, so compare throughput too.", "",
         "| driver | policy | resp p99 us | send p99 us | throughput/s | driver cores | resp p99 / oblivious | send p99 / oblivious |",
         "|---|---|---|---|---|---|---|---|"]
    for n in (0, 10):
        med = {}
        for p in ("aps", "oblivious"):
            med[p] = {k: pct(of(n, p, k), 0.5) for k in ("resp_us_p99", "send_us_p99")}
        for p in ("aps", "oblivious"):
            L.append(f"| nice {n} | {p} | {cell(of(n, p, 'resp_us_p99'))} | {cell(of(n, p, 'send_us_p99'))} | "
                     f"{cell(of(n, p, 'throughput_per_s'))} | {pct(of(n, p, 'driver_cores'), 0.5):.2f} | "
                     f"{med[p]['resp_us_p99'] / med['oblivious']['resp_us_p99']:.2f} | "
                     f"{med[p]['send_us_p99'] / med['oblivious']['send_us_p99']:.2f} |")
    with open(os.path.join(out, "driver-nice.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"diagnose.py: wrote {out}/driver-nice.md in {res['elapsed_s']:.0f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="bench/results/apps")
    ap.add_argument("--driver-nice-rounds", type=int, default=0,
                    help="run only the niced-driver email experiment, this many rounds")
    a = ap.parse_args()
    for exe in ("apps/email/email_server", "apps/email/email_driver", "apps/proxy/proxy_driver", "apps/proxy/proxy_server"):
        if not os.access(os.path.join(a.build, exe), os.X_OK):
            sys.exit(f"diagnose.py: {a.build}/{exe} is missing: build first (./run build)")
    if a.driver_nice_rounds > 0:
        driver_nice_experiment(a.build, a.out, a.driver_nice_rounds)
        return
    started = time.time()
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="promptly-diagnose-") as tmp:  # the traces, removed after
        res["email"] = [email_run(a.build, p) for p in ("aps", "oblivious")]
        email_run(a.build, "aps", trace=os.path.join(tmp, "email.json"))
        res["email_wakes"] = client_loop_wakes(os.path.join(tmp, "email.json"))
        res["proxy"] = [dict(proxy_run(a.build, p, 1500), policy=p) for _ in range(2) for p in ("aps", "oblivious")]
        proxy_run(a.build, "aps", 300, trace=os.path.join(tmp, "proxy.json"))
        res["proxy_shares"] = proxy_shares(os.path.join(tmp, "proxy.json"))
        res["proxy_slow_waits"] = slow_client_loop_waits(os.path.join(tmp, "proxy.json"))
    res["elapsed_s"] = time.time() - started
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "diagnostics.json"), "w") as f:
        json.dump(res, f, indent=1)

    L = ["# Apps: where the urgent tail goes (diagnostics)", "",
         f"`python3 bench/apps/diagnose.py` on {res['machine']} ({res['cpus']} CPUs), {res['date']}, "
         f"{res['elapsed_s']:.0f} s; one run per line, not a suite (bench/apps/diagnose.py says what each "
         "number is).", "", "## Email server, 36 clients", "",
         "Server threads by name (`comm`): the two busiest are the workers; `promptly-io` is the I/O reactor.", "",
         "| policy | resp p99 | send p99 | driver (cores) | server thread: running / runnable but waiting, s |",
         "|---|---|---|---|---|"]
    for r in res["email"]:
        th = "; ".join(f"{t['name']} {t['run_s']:.2f} / {t['wait_s']:.2f}" for t in r["server_threads"]
                       if t["run_s"] + t["wait_s"] >= 0.01)  # threads that barely ran (start-up) left out
        L.append(f"| {r['policy']} | {r['metrics']['resp_us_p99']:.0f} us | {r['metrics']['send_us_p99']:.0f} us | "
                 f"{r['driver_cores']:.2f} | {th} (of {r['wall_s']:.2f} s) |")
    w = res["email_wakes"]
    L += ["", f"Traced aps run: {w['wakeups']} client-loop wake-ups (I/O ready to running): p50 {w['p50_us']:.0f} us, "
              f"p90 {w['p90_us']:.0f} us, p99 {w['p99_us']:.0f} us; during those over 300 us the two workers ran tasks "
              f"{w['running_share_in_slow_wakeups']:.0%} of the time.", "",
          "## Caching proxy, 32 clients", "",
          "| policy | resp p50 | resp p99 | hit p99 | throughput |", "|---|---|---|---|---|"]
    for r in res["proxy"]:
        L.append(f"| {r['policy']} | {r['resp_us_p50']:.0f} us | {r['resp_us_p99']:.0f} us | {r['hit_us_p99']:.0f} us | "
                 f"{r['throughput_per_s']:.0f}/s |")
    L += ["", "Traced aps run (300 requests per client): share of the time each worker served a pool and ran its tasks.", "",
          "| worker | pool | served | running |", "|---|---|---|---|"]
    for s in res["proxy_shares"]:
        if s["served"] >= 0.01 or s["running"] >= 0.01:
            L.append(f"| {s['worker']} | {s['pool']} | {s['served']:.0%} | {s['running']:.0%} |")
    sw = res["proxy_slow_waits"]
    L += ["", f"In the same run, {sw['slow']} client-loop wake-ups took {sw['over_us']} us or more from I/O ready to "
              f"running. In {sw['one_idle_other_fetching']} of them one worker ran tasks for at most a fifth of the wait "
              f"({sw['idle_worker_ran_share']:.0%} on average: off the CPU, or between tasks) while the other ran fetch "
              f"tasks for at least half of it ({sw['other_ran_fetch_share']:.0%} on average)."]
    with open(os.path.join(a.out, "diagnostics.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"diagnose.py: wrote {a.out}/diagnostics.md in {res['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
