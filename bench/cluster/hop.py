#!/usr/bin/env python3
"""The HAProxy hop (docs/cluster.md): submit + wait of a trivial job (fib n=1) over

  ndjson           the line protocol on the daemon's Unix socket (one connection, request after request)
  http kept        the HTTP API straight to the daemon, one kept-alive connection
  haproxy kept     the same through HAProxy (examples/cluster/haproxy_cfg.py): one kept-alive client
                   connection; HAProxy reuses its idle connection to the daemon (http-reuse safe)
  http new         the HTTP API straight to the daemon, a new connection per request ("Connection: close")
  haproxy new      the same through HAProxy: a new client connection per request, so HAProxy opens a
                   new one to the daemon too (safe reuse never sends a session's first request on
                   another session's connection)

With --python-client the four HTTP paths go through python/promptly_client.py's HttpClient instead
of raw http.client calls: "kept" is one HttpClient for every request (its persistent connection),
"new" a new HttpClient per request (a connection per request, as HttpClient did before it kept its
connection).

p50/p99 latency in microseconds per path, measured by this client (Python's own cost is in every
path alike). One daemon, one worker. Each of --rounds rounds sends --requests per path in blocks of
100 taking turns (the order rotated each block), so load drifting on a shared machine falls on
every path alike; the report gives the median over rounds of each round's p50 and p99, the range
of the p50s, and the hop per round (its p50 through HAProxy minus its p50 direct).

usage: bench/cluster/hop.py [--requests N] [--rounds R] [--python-client] [--out FILE.md]   (build/bin/promptlyd, haproxy on PATH)
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
from promptly_client import Client, HttpClient  # noqa: E402

BODY = json.dumps({"program": "fib", "args": {"n": 1}, "wait": True})
BLOCK = 100
PATHS = ["ndjson (Unix socket)", "http kept (direct)", "haproxy kept", "http new (direct)", "haproxy new"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def http_submit(conn, token, close):
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    if close:
        headers["Connection"] = "close"
    conn.request("POST", "/v1/jobs", BODY, headers)
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {body[:200]}")


def new_connection_submit(host, port, token):
    c = http.client.HTTPConnection(host, port, timeout=10)
    try:
        http_submit(c, token, close=True)
    finally:
        c.close()


def measure(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def haproxy_stat(sock_path, columns):
    """HAProxy's counters for the backend's server n1 (its stats socket, "show stat")."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock_path)
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    lines = data.decode().splitlines()
    head = lines[0].lstrip("# ").split(",")
    for line in lines[1:]:
        col = line.split(",")
        if col[:2] == ["promptlyd", "n1"]:
            return {c: int(col[head.index(c)] or 0) for c in columns}
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000, help="per path per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-timeout", type=float, default=5.0,
                    help="the daemon's --http-idle-timeout (0: one request per connection, no keep-alive)")
    ap.add_argument("--http-reuse", default="safe", help="HAProxy's http-reuse (haproxy_cfg.py --http-reuse)")
    ap.add_argument("--python-client", action="store_true",
                    help="the HTTP paths through promptly_client.HttpClient (kept: one client; new: one per request)")
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
    stats_sock = os.path.join(d, "haproxy.sock")
    daemon = subprocess.Popen([promptlyd, "--socket", sock, "--workers", "1", "--http", "127.0.0.1:0",
                               "--token-file", os.path.join(d, "token"), "--node-id", "n1", "--agent-port", "0",
                               "--http-idle-timeout", str(a.idle_timeout)],
                              stdout=subprocess.PIPE, text=True)
    lines = []
    for line in daemon.stdout:
        lines.append(line.strip())
        if line.strip() == "ready":
            break
    http_addr = next(l for l in lines if l.startswith("listening http")).split("://")[1]
    agent = next(l for l in lines if l.startswith("agent")).split(":")[1]
    host, port = http_addr.split(":")
    port = int(port)
    front = free_port()
    cfg = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "cluster", "haproxy_cfg.py"),
                          "--bind", f"127.0.0.1:{front}", "--stats-socket", stats_sock, "--http-reuse", a.http_reuse,
                          f"n1={http_addr}:{agent}"],
                         check=True, capture_output=True, text=True).stdout
    with open(os.path.join(d, "haproxy.cfg"), "w") as f:
        f.write(cfg)
    haproxy = subprocess.Popen(["haproxy", "-db", "-q", "-f", os.path.join(d, "haproxy.cfg")])
    rounds = {p: [] for p in PATHS}
    reuse = {}
    opened = {}  # HttpClient's own connections, per kept path
    try:
        deadline = time.time() + 10
        while True:  # HAProxy is up once a submission through it succeeds
            try:
                new_connection_submit("127.0.0.1", front, token)
                break
            except (OSError, RuntimeError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        with Client(sock) as c:
            kept = {}
            run = {
                PATHS[0]: lambda: c.submit("fib", {"n": 1}, wait=True),
                PATHS[1]: lambda: http_submit(kept[PATHS[1]], token, close=False),
                PATHS[2]: lambda: http_submit(kept[PATHS[2]], token, close=False),
                PATHS[3]: lambda: new_connection_submit(host, port, token),
                PATHS[4]: lambda: new_connection_submit("127.0.0.1", front, token),
            }
            if a.python_client:
                direct_url, front_url = f"http://{host}:{port}", f"http://127.0.0.1:{front}"

                def client_submit(h):
                    if h.submit("fib", {"n": 1}, wait=True)["state"] != "done":
                        raise RuntimeError("fib n=1 not done")

                def new_client_submit(url):
                    with HttpClient(url, token=token, timeout=10) as h:
                        client_submit(h)

                run.update({
                    PATHS[1]: lambda: client_submit(kept[PATHS[1]]),
                    PATHS[2]: lambda: client_submit(kept[PATHS[2]]),
                    PATHS[3]: lambda: new_client_submit(direct_url),
                    PATHS[4]: lambda: new_client_submit(front_url),
                })
            for r in range(a.rounds):
                # Fresh kept connections each round (one left idle past the daemon's idle timeout
                # would be closed: a client then reconnects, which is not what is measured here).
                if a.python_client:
                    kept[PATHS[1]] = HttpClient(direct_url, token=token, timeout=10)
                    kept[PATHS[2]] = HttpClient(front_url, token=token, timeout=10)
                else:
                    kept[PATHS[1]] = http.client.HTTPConnection(host, port, timeout=10)
                    kept[PATHS[2]] = http.client.HTTPConnection("127.0.0.1", front, timeout=10)
                for p in PATHS:
                    rounds[p].append([])
                    for _ in range(min(50, a.requests)):  # warm-up
                        run[p]()
                # Blocks of BLOCK requests per path in turn, the order rotated each block: load
                # that drifts on a shared machine falls on every path alike.
                for b in range((a.requests + BLOCK - 1) // BLOCK):
                    k = (b + r) % len(PATHS)
                    for p in PATHS[k:] + PATHS[:k]:
                        if p.startswith("haproxy"):
                            stat0 = haproxy_stat(stats_sock, ["connect", "reuse"])
                        rounds[p][-1] += measure(run[p], min(BLOCK, a.requests - b * BLOCK))
                        if p.startswith("haproxy"):
                            stat1 = haproxy_stat(stats_sock, ["connect", "reuse"])
                            prev = reuse.setdefault(p, {"connect": 0, "reuse": 0})
                            for key in prev:
                                prev[key] += stat1[key] - stat0[key]
                for p, k in kept.items():
                    if a.python_client:
                        opened[p] = opened.get(p, 0) + k.connections_opened
                    k.close()
    finally:
        haproxy.terminate()
        daemon.terminate()
        haproxy.wait()
        daemon.wait()
        shutil.rmtree(d, ignore_errors=True)

    def summary(p):
        p50s = [statistics.median(v) for v in rounds[p]]
        p99s = [percentile(v, 99) for v in rounds[p]]
        return statistics.median(p50s), min(p50s), max(p50s), statistics.median(p99s)

    s = {p: summary(p) for p in PATHS}
    out = [f"| path | p50 us (median of {a.rounds} rounds) | p50 range | p99 us (median) |", "|---|---|---|---|"]
    out += [f"| {p} | {s[p][0]:.0f} | {s[p][1]:.0f}-{s[p][2]:.0f} | {s[p][3]:.0f} |" for p in PATHS]
    out.append("")
    for through, direct in (("haproxy kept", "http kept (direct)"), ("haproxy new", "http new (direct)")):
        hops = [statistics.median(t) - statistics.median(dd) for t, dd in zip(rounds[through], rounds[direct])]
        out.append(f"- HAProxy hop, {through.split()[1]} connections: +{statistics.median(hops):.0f} us at p50 "
                   f"(per round: {', '.join(f'{h:+.0f}' for h in hops)}), "
                   f"+{s[through][3] - s[direct][3]:.0f} us at p99.")
    for p in ("haproxy kept", "haproxy new"):
        if p in reuse:
            out.append(f"- {p}: HAProxy opened {reuse[p]['connect']} connections to the daemon and reused one "
                       f"{reuse[p]['reuse']} times for its {a.rounds * a.requests} measured requests.")
    for p, n in opened.items():
        out.append(f"- {p}: the kept HttpClient opened {n} connection(s) for its {a.rounds * (a.requests + min(50, a.requests))} requests.")
    client = "promptly_client.HttpClient" if a.python_client else "http.client"
    out.append(f"\nHTTP client: {client}. Daemon: --http-idle-timeout {a.idle_timeout:g}; HAProxy: http-reuse {a.http_reuse}. {a.requests} requests per path per round (after 50 of warm-up), in blocks of {BLOCK} taking "
               f"turns, {a.rounds} rounds.")
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
