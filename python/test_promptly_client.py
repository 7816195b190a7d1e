"""Test of python/promptly_client.py against a real promptlyd (run by CTest: server_python_client).

Starts the daemon given by --promptlyd on a Unix socket in a private temporary directory, then
checks submit (waiting and not), wait, status, cancel, jobs, stats, programs, version, error
replies, pipelining and subscribe, then the same through HttpClient on the daemon's HTTP API, and
HttpClient's kept connection across the daemon's idle timeout; stops the daemon with SIGTERM and
expects exit status 0.
"""

import argparse
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from promptly_client import Client, HttpClient, PromptlyError  # noqa: E402


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def wait_for_server_close(h):
    """Until the daemon closes h's idle connection (its --http-idle-timeout, 0.5 s; bounded at 10 s)."""
    sock = h._conn.sock
    readable, _, _ = select.select([sock], [], [], 10)
    expect(readable and sock.recv(1, socket.MSG_PEEK) == b"", "the daemon closed the idle connection")


def check_http_keep_alive(url, token_file):
    """HttpClient keeps one connection; after the daemon closes it for idleness the next request
    goes on a new one; a close the client cannot see in time resends a GET once, never a POST."""
    with HttpClient(url, token_file=token_file, timeout=30) as h:
        job = h.submit("fib", {"n": 12}, wait=True)
        for _ in range(10):
            expect(h.status(job["id"])["state"] == "done", "status on the kept connection")
        try:
            h.status("py-999999")
        except PromptlyError as e:
            expect(e.status == 404, f"404: {e.status}")
        expect(h.stats()["submitted"] >= 1, "stats")
        expect(h.connections_opened == 1, f"13 requests on {h.connections_opened} connections, not 1")

        wait_for_server_close(h)
        expect(h.status(job["id"])["state"] == "done", "status after the idle close")
        expect(h.connections_opened == 2, "a new connection after the idle close")

        # The close lands after the client looked: the connection seems open until it is used.
        h._server_closed = lambda sock: False
        wait_for_server_close(h)
        expect(h.status(job["id"])["state"] == "done", "a GET resent on a new connection")
        expect(h.connections_opened == 3, "the GET went on a third connection")
        submitted = h.stats()["submitted"]
        wait_for_server_close(h)
        try:
            h.submit("fib", {"n": 1})
            raise AssertionError("a POST was resent on a new connection")
        except ConnectionError:
            pass
        expect(h.stats()["submitted"] == submitted, "the POST was not submitted")
        wait_for_server_close(h)
        expect(h.cancel(job["id"])["cancelled"] is False, "a DELETE resent on a new connection")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--promptlyd", required=True)
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="promptly-py-")
    sock = os.path.join(tmp, "promptlyd.sock")
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w", encoding="utf-8") as f:
        f.write("python-client-test-token-0123456\n")
    os.chmod(token_file, 0o600)
    proc = subprocess.Popen([opts.promptlyd, "--socket", sock, "--workers", "2", "--max-running", "2",
                             "--max-queued", "4", "--http", "127.0.0.1:0", "--token-file", token_file,
                             "--node-id", "py", "--http-idle-timeout", "0.5"], stdout=subprocess.PIPE, text=True)
    url = None
    try:
        for line in proc.stdout:  # start-up lines end with "ready"
            if line.startswith("listening http "):
                url = line.split()[2]
            if line.strip() == "ready":
                break
        else:
            raise AssertionError("promptlyd exited before it was ready")
        with Client(sock) as c:
            expect(c.version()["protocol"] == 1, "protocol version 1")
            names = {p["name"] for p in c.programs()}
            expect({"fib", "nqueens", "matmul", "cilksort", "bing", "stream"} <= names, f"built-ins in {names}")
            r = c.submit("fib", {"n": 20}, wait=True)
            expect(r["state"] == "done" and r["result"] == 6765, f"fib(20): {r}")
            expect(set(r["timing"]) >= {"queued_us", "run_us", "flow_us"}, "timing fields")
            r = c.submit("nqueens", {"n": 6})
            expect(r["state"] in ("queued", "running", "done"), f"no-wait submit: {r}")
            w = c.wait(r["id"])
            expect(w["result"]["solutions"] == 4, f"nqueens(6): {w}")
            expect(c.status(r["id"])["state"] == "done", "status after wait")
            long_job = c.submit("bing", {"work_ms": 5000})
            cancel = c.cancel(long_job["id"])
            expect(cancel["cancelled"] is True, f"cancel: {cancel}")
            expect(c.wait(long_job["id"])["state"] == "cancelled", "cancelled job")
            expect(c.jobs() == [], "no live jobs")
            t = c.submit_periodic("fib", 2.0, {"n": 5}, count=3,
                                  elastic={"work_ms": 1, "span_ms": 0.5, "period_min_ms": 2, "period_max_ms": 2})
            expect(t["period_ms"] == 2.0 and t["count"] == 3, f"periodic task: {t}")
            deadline = time.monotonic() + 30
            while c.periodic(t["id"])["done"] < 3 and time.monotonic() < deadline:
                time.sleep(0.005)  # polls the server's counters; the loop ends on the event, the deadline is a guard
            p = c.periodic(t["id"])
            expect(p["released"] == 3 and p["done"] == 3 and not p["active"], f"periodic after 3: {p}")
            expect(c.cancel_periodic(t["id"])["cancelled"] is False, "cancel of an ended periodic task")
            expect(c.jobs() == [], "no live jobs after the periodic task")
            for bad, code in [({"op": "nope"}, "unknown_op"),
                              ({"op": "submit", "program": "nope"}, "unknown_program"),
                              ({"op": "submit", "program": "fib", "args": {"n": "x"}}, "bad_args"),
                              ({"op": "status", "id": 10**9}, "unknown_job"),
                              ({"op": "status"}, "bad_request")]:
                try:
                    c.call(bad)
                    raise AssertionError(f"{bad} did not fail")
                except PromptlyError as e:
                    expect(e.code == code, f"{bad}: {e.code} != {code}")
            replies = c.pipeline([{"op": "submit", "program": "fib", "args": {"n": i}, "wait": True, "tag": i}
                                  for i in range(12)], check=False)
            expect([r["tag"] for r in replies] == list(range(12)), "pipelined replies in order")
            expect(all(r["ok"] or r["error"]["code"] == "rejected" for r in replies), "done or rejected")
            s = c.stats()
            expect(s["submitted"] >= 3 and "flow" in s, f"stats: {s}")
        with Client(sock) as sub:
            lines = list(sub.subscribe(interval_ms=10, count=3))
            expect([l["seq"] for l in lines] == [0, 1, 2], "three stream lines")
            expect(all("cores_in_use" in l and "queued" in l for l in lines), "stream fields")
        h = HttpClient(url, token_file=token_file, timeout=30)
        r = h.submit("fib", {"n": 20}, wait=True)
        expect(r["result"] == 6765 and r["id"].startswith("py-"), f"HTTP fib(20): {r}")
        r = h.submit("nqueens", {"n": 6})
        expect(h.wait(r["id"])["result"]["solutions"] == 4, "HTTP wait")
        expect(h.status(r["id"])["state"] == "done", "HTTP status")
        long_job = h.submit("bing", {"work_ms": 5000})
        expect(h.cancel(long_job["id"])["cancelled"] is True, "HTTP cancel")
        expect(h.wait(long_job["id"])["state"] == "cancelled", "HTTP cancelled job")
        for call, code, status in [(lambda: h.submit("nope"), "unknown_program", 422),
                                   (lambda: h.status("py-999999"), "unknown_job", 404),
                                   (lambda: HttpClient(url, token="wrong").stats(), "not_allowed", 401)]:
            try:
                call()
                raise AssertionError(f"{code} did not fail")
            except PromptlyError as e:
                expect((e.code, e.status) == (code, status), f"{e.code} {e.status} != {code} {status}")
        expect([l["seq"] for l in h.subscribe(interval_ms=10, count=2)] == [0, 1], "HTTP event stream")
        check_http_keep_alive(url, token_file)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        expect(rc == 0, f"promptlyd exit status {rc}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("python client: ok")


if __name__ == "__main__":
    main()
