#!/usr/bin/env python3
"""The HAProxy hop (docs/cluster.md): submit + wait of a trivial job (fib n=1) over

  ndjson   the line protocol on the daemon's Unix socket (one connection, request after request)
  http     the HTTP API, straight to the daemon (a connection per request: the daemon closes)
  haproxy  the HTTP API through HAProxy (the configuration of examples/cluster/haproxy_cfg.py)

p50/p99 latency in microseconds per path, measured by this client (Python's own cost is in every
path alike). One daemon, one worker.

usage: bench/cluster/hop.py [--requests N] [--out FILE.md]   (build/bin/promptlyd, haproxy on PATH)
"""
import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from promptly_client import Client  # noqa: E402

BODY = json.dumps({"program": "fib", "args": {"n": 1}, "wait": True})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def http_submit(host, port, token):
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request("POST", "/v1/jobs", BODY, {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {body[:200]}")


def measure(fn, n):
    for _ in range(min(50, n)):  # warm-up
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--out", help="write a markdown report here")
    a = ap.parse_args()
    promptlyd = os.path.join(ROOT, "build", "bin", "promptlyd")
    if not shutil.which("haproxy"):
        sys.exit("hop.py: haproxy is not installed")
    d = tempfile.mkdtemp(prefix="promptly-hop-")
    token = "hop-bench-token-0123456789abcdef"
    with open(os.path.join(d, "token"), "w") as f:
        f.write(token + "\n")
    os.chmod(os.path.join(d, "token"), 0o600)
    sock = os.path.join(d, "d.sock")
    daemon = subprocess.Popen([promptlyd, "--socket", sock, "--workers", "1", "--http", "127.0.0.1:0",
                               "--token-file", os.path.join(d, "token"), "--node-id", "n1", "--agent-port", "0"],
                              stdout=subprocess.PIPE, text=True)
    lines = []
    for line in daemon.stdout:
        lines.append(line.strip())
        if line.strip() == "ready":
            break
    http_addr = next(l for l in lines if l.startswith("listening http")).split("://")[1]
    agent = next(l for l in lines if l.startswith("agent")).split(":")[1]
    host, port = http_addr.split(":")
    front = free_port()
    cfg = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "cluster", "haproxy_cfg.py"),
                          "--bind", f"127.0.0.1:{front}", f"n1={http_addr}:{agent}"],
                         check=True, capture_output=True, text=True).stdout
    with open(os.path.join(d, "haproxy.cfg"), "w") as f:
        f.write(cfg)
    haproxy = subprocess.Popen(["haproxy", "-db", "-q", "-f", os.path.join(d, "haproxy.cfg")])
    try:
        deadline = time.time() + 10
        while True:  # HAProxy is up once a submission through it succeeds
            try:
                http_submit("127.0.0.1", front, token)
                break
            except (OSError, RuntimeError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        results = {}
        with Client(sock) as c:
            results["ndjson (Unix socket)"] = measure(lambda: c.submit("fib", {"n": 1}, wait=True), a.requests)
        results["http (direct)"] = measure(lambda: http_submit(host, int(port), token), a.requests)
        results["http (through HAProxy)"] = measure(lambda: http_submit("127.0.0.1", front, token), a.requests)
    finally:
        haproxy.terminate()
        daemon.terminate()
        haproxy.wait()
        daemon.wait()
        shutil.rmtree(d, ignore_errors=True)
    rows = [(k, statistics.median(v), percentile(v, 99)) for k, v in results.items()]
    hop50 = rows[2][1] - rows[1][1]
    hop99 = rows[2][2] - rows[1][2]
    out = ["| path | p50 us | p99 us |", "|---|---|---|"]
    out += [f"| {k} | {p50:.0f} | {p99:.0f} |" for k, p50, p99 in rows]
    out.append(f"\nHAProxy hop: +{hop50:.0f} us at p50, +{hop99:.0f} us at p99 ({a.requests} requests per path).")
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
