#!/usr/bin/env python3
"""The Bing-like workload through HAProxy over a cluster of daemons vs one daemon (docs/cluster.md).

Open-loop Poisson arrivals (AMCilk Sec. 6.1) of the daemon's built-in `bing` program (work drawn
from its heavy-tailed Bing table, mean 30 ms times --scale; src/server/programs/bing.cpp), at a
utilisation rho of `--cores` cores: rate = rho * cores / mean work. Every job is a "wait":true
POST /v1/jobs from one of --clients threads, each on its own kept-alive HTTP connection.

  cluster   --nodes daemons of one worker each, behind HAProxy (examples/cluster/haproxy_cfg.py)
  single:W  one daemon with W workers, addressed directly (--setups; default W = --nodes, the
            cluster's workers, and W = --cores)

Both get the same arrivals (one seed per rep). Per run: the daemons' flow time (the job's
timing.flow_us: queued + run on its node), the client's response time (from the job's scheduled
arrival to its reply: adds HTTP, HAProxy and any wait for a free client thread), and for the
cluster each node's share of the jobs and of the run time (timing.run_us summed).

usage: bench/cluster/bing.py [--rho 0.6,0.75] [--seconds S] [--reps R] [--out FILE.md]
"""
import argparse
import http.client
import json
import os
import queue
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROMPTLYD = os.path.join(ROOT, "build", "bin", "promptlyd")
TOKEN = "bing-bench-token-0123456789abcdef"


def bing_mean_ms():
    """The bing table's mean work (src/server/programs/bing.cpp: bins 5 + 10k ms, weight (k+1)^-1.5)."""
    w = [(k + 1) ** -1.5 for k in range(20)]
    return sum(wk * (5 + 10 * k) for k, wk in enumerate(w)) / sum(w)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def start_daemon(d, name, workers):
    out = subprocess.Popen([PROMPTLYD, "--socket", os.path.join(d, name + ".sock"), "--workers", str(workers), "--http", "127.0.0.1:0",
                            "--token-file", os.path.join(d, "token"), "--node-id", name, "--agent-port", "0",
                            "--max-queued", "4096"],
                           stdout=subprocess.PIPE, stderr=open(os.path.join(d, name + ".err"), "w"), text=True)
    lines = []
    for line in out.stdout:
        lines.append(line.strip())
        if line.strip() == "ready":
            break
    if "ready" not in lines:
        with open(os.path.join(d, name + ".err")) as f:
            raise RuntimeError(f"promptlyd {name} did not start: {f.read()}")
    http_addr = next(l for l in lines if l.startswith("listening http")).split("://")[1]
    agent = next(l for l in lines if l.startswith("agent")).split(":")[1]
    return out, http_addr, agent


def wait_up(host, port):
    deadline = time.time() + 10
    while True:
        try:
            c = http.client.HTTPConnection(host, port, timeout=5)
            c.request("GET", "/v1/stats", headers={"Authorization": "Bearer " + TOKEN})
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 200:
                return
        except OSError:
            pass
        if time.time() > deadline:
            raise RuntimeError(f"{host}:{port} did not answer")
        time.sleep(0.05)


def replay(host, port, arrivals, seeds, scale, clients):
    """Submits job i at arrivals[i] (seconds from start); returns one record per job."""
    jobs = queue.Queue()
    records = [None] * len(arrivals)

    def client():
        conn = http.client.HTTPConnection(host, port, timeout=60)
        while True:
            item = jobs.get()
            if item is None:
                return
            i, due = item
            body = json.dumps({"program": "bing", "args": {"workload": "bing", "seed": seeds[i], "scale": scale},
                               "wait": True})
            for attempt in (1, 2):
                try:
                    conn.request("POST", "/v1/jobs", body, {"Authorization": "Bearer " + TOKEN,
                                                            "Content-Type": "application/json"})
                    r = conn.getresponse()
                    reply = json.loads(r.read())
                    status = r.status
                    break
                except (OSError, http.client.HTTPException, ValueError) as e:
                    # A kept connection the server (HAProxy or the daemon) closed while this
                    # client was idle fails its next request before any reply: send it again,
                    # once, on a new connection, as HTTP clients do.
                    conn.close()
                    conn = http.client.HTTPConnection(host, port, timeout=60)
                    reply, status = {"error": f"{type(e).__name__}: {e}"}, 0
            done = time.perf_counter()
            timing = reply.get("timing", {})
            records[i] = {"status": status, "state": reply.get("state"), "id": str(reply.get("id", "")),
                          "error": reply.get("error"),
                          "flow_us": timing.get("flow_us"), "run_us": timing.get("run_us"),
                          "response_us": (done - due) * 1e6}

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    for i, a in enumerate(arrivals):
        due = t0 + a
        while (left := due - time.perf_counter()) > 0:
            time.sleep(left)
        jobs.put((i, due))
    for _ in threads:
        jobs.put(None)
    for t in threads:
        t.join()
    return records


def run(kind, nodes, rate, seconds, scale, clients, seed):
    """One run of setup `kind` ("cluster" or "single:W") on the arrivals of `seed`."""
    rng = random.Random(seed)
    arrivals, t = [], 0.0
    while True:
        t += rng.expovariate(rate)
        if t > seconds:
            break
        arrivals.append(t)
    seeds = [rng.getrandbits(48) for _ in arrivals]
    d = tempfile.mkdtemp(prefix="promptly-bing-")
    with open(os.path.join(d, "token"), "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(os.path.join(d, "token"), 0o600)
    procs = []
    try:
        if kind.startswith("single"):
            p, http_addr, _ = start_daemon(d, "n1", int(kind.split(":")[1]))
            procs.append(p)
            host, port = http_addr.split(":")
            port = int(port)
        else:
            specs = []
            for i in range(1, nodes + 1):
                p, http_addr, agent = start_daemon(d, f"n{i}", 1)
                procs.append(p)
                specs.append(f"n{i}={http_addr}:{agent}")
            host, port = "127.0.0.1", free_port()
            cfg = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "cluster", "haproxy_cfg.py"),
                                  "--bind", f"{host}:{port}", *specs],
                                 check=True, capture_output=True, text=True).stdout
            with open(os.path.join(d, "haproxy.cfg"), "w") as f:
                f.write(cfg)
            procs.append(subprocess.Popen(["haproxy", "-db", "-q", "-f", os.path.join(d, "haproxy.cfg")]))
        wait_up(host, port)
        return replay(host, port, arrivals, seeds, scale, clients)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


def summarize(records, nodes):
    ok = [r for r in records if r and r["status"] == 200 and r["state"] == "done"]
    flow = [r["flow_us"] / 1000 for r in ok]
    resp = [r["response_us"] / 1000 for r in ok]
    share, busy = {}, {}
    for r in ok:
        n = r["id"].split("-")[0]
        share[n] = share.get(n, 0) + 1
        busy[n] = busy.get(n, 0) + r["run_us"]
    total_busy = sum(busy.values()) or 1
    errors = {}
    for r in records:
        if r and r not in ok:
            key = f"{r['status']} {json.dumps(r['error'])[:80]}"
            errors[key] = errors.get(key, 0) + 1
    return {"errors": errors,"jobs": len(records), "failed": len(records) - len(ok),
            "flow_mean": statistics.fmean(flow) if flow else float("nan"), "flow_p99": percentile(flow, 99),
            "resp_mean": statistics.fmean(resp) if resp else float("nan"), "resp_p99": percentile(resp, 99),
            "job_share": {n: share.get(n, 0) / max(1, len(ok)) for n in sorted(share)},
            "time_share": {n: busy.get(n, 0) / total_busy for n in sorted(busy)}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--cores", type=float, default=2.0, help="the cores rho is a share of (this machine's)")
    ap.add_argument("--rho", default="0.6,0.75")
    ap.add_argument("--seconds", type=float, default=10.0, help="arrivals per run")
    ap.add_argument("--scale", type=float, default=1.0, help="times the bing table's work (mean 30 ms)")
    ap.add_argument("--clients", type=int, default=32, help="client threads, one kept-alive connection each")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--setups", help="comma-separated: cluster, single:W (default: cluster, single:NODES, "
                                     "single:CORES)")
    ap.add_argument("--out", help="write a markdown report here")
    a = ap.parse_args()
    if not shutil.which("haproxy"):
        sys.exit("bing.py: haproxy is not installed")
    mean_s = bing_mean_ms() * a.scale / 1000
    setups = (a.setups.split(",") if a.setups else
              list(dict.fromkeys(["cluster", f"single:{a.nodes}", f"single:{int(a.cores)}"])))
    rows = []
    for rho in (float(x) for x in a.rho.split(",")):
        rate = rho * a.cores / mean_s
        per = {k: [] for k in setups}
        for rep in range(a.reps):
            k0 = rep % len(setups)
            for kind in setups[k0:] + setups[:k0]:
                per[kind].append(summarize(run(kind, a.nodes, rate, a.seconds, a.scale, a.clients, 1000 + rep),
                                           a.nodes))
                s = per[kind][-1]
                print(f"rho {rho} rep {rep} {kind}: {s['jobs']} jobs, failed {s['failed']}, flow mean "
                      f"{s['flow_mean']:.1f} ms p99 {s['flow_p99']:.1f} ms, response p99 {s['resp_p99']:.1f} ms"
                      + (f", errors {s['errors']}" if s["errors"] else ""),
                      file=sys.stderr)
        rows.append((rho, rate, per))

    def med(xs):
        return statistics.median(xs)

    def rng(xs):
        return f"{min(xs):.1f}-{max(xs):.1f}"

    out = [f"`bench/cluster/bing.py --nodes {a.nodes} --cores {a.cores:g} --rho {a.rho} --seconds {a.seconds:g} "
           f"--scale {a.scale:g} --clients {a.clients} --reps {a.reps} --setups {','.join(setups)}`: the bing "
           f"program (mean {bing_mean_ms() * a.scale:.1f} ms of work), Poisson arrivals at rho of {a.cores:g} "
           f"cores; cluster = {a.nodes} daemons x 1 worker behind HAProxy, single:W = 1 daemon x W workers. "
           f"Medians over {a.reps} reps (range in brackets), ms.", "",
           "| rho | jobs/s | setup | flow mean | flow p99 | response mean | response p99 | failed |",
           "|---|---|---|---|---|---|---|---|"]
    for rho, rate, per in rows:
        for kind in setups:
            ss = per[kind]
            out.append(f"| {rho:g} | {rate:.1f} | {kind} | {med([s['flow_mean'] for s in ss]):.1f} "
                       f"({rng([s['flow_mean'] for s in ss])}) | {med([s['flow_p99'] for s in ss]):.1f} "
                       f"({rng([s['flow_p99'] for s in ss])}) | {med([s['resp_mean'] for s in ss]):.1f} | "
                       f"{med([s['resp_p99'] for s in ss]):.1f} ({rng([s['resp_p99'] for s in ss])}) | "
                       f"{sum(s['failed'] for s in ss)} of {sum(s['jobs'] for s in ss)} |")
    out += ["", "Cluster balance (each node's share of the jobs / of the run time, median over reps):", "",
            "| rho | " + " | ".join(f"n{i}" for i in range(1, a.nodes + 1)) + " |",
            "|---|" + "---|" * a.nodes]
    for rho, rate, per in rows:
        if "cluster" not in per:
            continue
        cells = []
        for i in range(1, a.nodes + 1):
            js = med([s["job_share"].get(f"n{i}", 0) for s in per["cluster"]])
            ts = med([s["time_share"].get(f"n{i}", 0) for s in per["cluster"]])
            cells.append(f"{100 * js:.0f}% / {100 * ts:.0f}%")
        out.append(f"| {rho:g} | " + " | ".join(cells) + " |")
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
