#!/usr/bin/env python3
"""The email server against a client that pipelines requests and never reads a reply.

Starts SERVER (an email_server binary) on a free loopback port, logs one client in, and sends
`SORT date` lines from it for --seconds without reading anything. Then it reads the server's
resident memory and fiber count (/proc), and times a second client's `USER` + `STATS` (login to
the STATS line). Prints one JSON object. The server is stopped with SIGTERM at the end.

  bench/apps/pipelining_attack.py --server build/apps/email/email_server [--seconds 5]

Results: bench/results/apps/pipelining-attack/.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS")).split()[1])


def stack_mappings(pid):
    """Mappings of 256 KiB + guard page: the fiber stacks (each a separate mmap)."""
    with open(f"/proc/{pid}/maps") as f:
        return sum(1 for l in f if (lambda a, b: int(b, 16) - int(a, 16))(*l.split()[0].split("-")) == 256 * 1024)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    srv = subprocess.Popen([args.server, "--port", "0", "--workers", "2", "--policy", "aps"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(srv.stdout.readline().split()[1])  # "LISTENING <port>"
        attacker = socket.create_connection(("127.0.0.1", port))
        attacker.sendall(b"USER mallory\n")
        attacker.recv(100)
        rss_before = rss_kib(srv.pid)
        attacker.setblocking(False)
        batch, sent, t0 = b"SORT date\n" * 1000, 0, time.time()
        while time.time() - t0 < args.seconds:
            try:
                sent += attacker.send(batch)
            except BlockingIOError:
                time.sleep(0.01)  # the server stopped reading: its socket buffer is full
        rss_after = rss_kib(srv.pid)
        stacks = stack_mappings(srv.pid)
        other = socket.create_connection(("127.0.0.1", port))
        other.settimeout(30)
        t1 = time.perf_counter()
        other.sendall(b"USER bob\nSTATS\n")
        got = b""
        while got.count(b"\n") < 2:
            part = other.recv(4096)
            if not part:
                break  # the server closed the connection
            got += part
        answered_ms = (time.perf_counter() - t1) * 1e3
        lines = got.decode(errors="replace").split("\n")
        stats = json.loads(lines[1]) if got.count(b"\n") >= 2 else {"other_client_got": got.decode(errors="replace")}
        print(json.dumps({"server": args.server, "seconds": args.seconds, "requests_sent": sent // 10,
                          "rss_kib_before": rss_before, "rss_kib_after": rss_after, "stack_mappings": stacks,
                          "other_client_answered_ms": round(answered_ms, 2),
                          "stats": {k: stats.get(k) for k in ("requests", "sorts", "in_flight", "busy", "missed_periods",
                                                             "write_failures", "other_client_got") if k in stats}}))
        attacker.close()
        other.close()
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()


if __name__ == "__main__":
    main()
