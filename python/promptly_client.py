"""A small client of promptlyd, the Promptly job server (protocol version 1, docs/server.md).

For the benchmark harness and scripts; standard library only.

    from promptly_client import Client
    with Client() as c:                       # the default Unix socket
        job = c.submit("fib", {"n": 30}, wait=True)
        print(job["result"], job["timing"]["flow_us"])
        print(c.stats()["flow"]["p99_us"])
        for line in c.subscribe(interval_ms=100, count=5):
            print(line["cores_in_use"], line["queued"])

Over HTTP (promptlyd --http, or a cluster behind HAProxy, docs/cluster.md), the same ops:

    from promptly_client import HttpClient
    c = HttpClient("http://127.0.0.1:8080", token_file="token")
    job = c.submit("fib", {"n": 30}, wait=True)   # job ids are strings there ("n2-17")

Every request is one JSON line; replies come back one line per request, in order. `pipeline()`
sends many requests before reading their replies. An error reply raises PromptlyError with the
protocol's code (bad_request, unknown_op, unknown_program, bad_args, unknown_job, rejected,
not_allowed).
"""

import http.client
import json
import os
import select
import socket
import ssl
import urllib.parse

PROTOCOL_VERSION = 1


class PromptlyError(Exception):
    """An error reply: .code is the protocol's error code, .message its message."""

    def __init__(self, code, message, reply=None, status=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply
        self.status = status  # the HTTP status (HttpClient only)


def default_socket_path():
    """$XDG_RUNTIME_DIR/promptly/promptlyd.sock, else /tmp/promptly-<uid>/promptlyd.sock (as promptlyd)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "promptly", "promptlyd.sock")
    return f"/tmp/promptly-{os.getuid()}/promptlyd.sock"


class Client:
    """One connection to promptlyd: a Unix socket path, or tcp=("127.0.0.1", port) with a token."""

    def __init__(self, path=None, tcp=None, token=None, token_file=None, timeout=None):
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.readline().strip()
        self.token = token
        if tcp is not None:
            self.sock = socket.create_connection(tcp, timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(path or default_socket_path())
        self._buf = b""

    # -- plumbing -------------------------------------------------------------------------------
    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _encode(self, request):
        if self.token is not None:
            request = dict(request, token=self.token)
        return (json.dumps(request, separators=(",", ":")) + "\n").encode()

    def send(self, request):
        """Send one request without reading its reply (pipelining)."""
        self.sock.sendall(self._encode(request))

    def receive(self):
        """The next line from the server as a dict (a reply, or a stream line after subscribe)."""
        while b"\n" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                if self._buf:
                    raise ConnectionError("promptlyd closed the connection in the middle of a line")
                raise ConnectionError("promptlyd closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    @staticmethod
    def _check(reply):
        if not reply.get("ok", False):
            err = reply.get("error", {})
            raise PromptlyError(err.get("code", "?"), err.get("message", ""), reply)
        return reply

    def call(self, request):
        """Send one request and return its reply; raises PromptlyError for an error reply."""
        self.send(request)
        return self._check(self.receive())

    def pipeline(self, requests, check=True):
        """Send all requests, then read their replies (in request order). With check=False error
        replies are returned instead of raised."""
        data = b"".join(self._encode(r) for r in requests)
        self.sock.sendall(data)
        replies = [self.receive() for _ in requests]
        return [self._check(r) for r in replies] if check else replies

    # -- ops ------------------------------------------------------------------------------------
    def submit(self, program, args=None, wait=False, job_class=None):
        req = {"op": "submit", "program": program, "args": args or {}, "wait": wait}
        if job_class:
            req["class"] = job_class
        return self.call(req)

    def submit_periodic(self, program, period_ms, args=None, count=0, job_class=None, elastic=None):
        """Start a periodic task: an instance every period_ms (its deadline: the next release).
        Returns the periodic task object (id, released, done, missed, ...)."""
        req = {"op": "submit_periodic", "program": program, "args": args or {}, "period_ms": period_ms,
               "count": count}
        if job_class:
            req["class"] = job_class
        if elastic:
            req["elastic"] = elastic
        return self.call(req)

    def periodic(self, periodic_id):
        return self.call({"op": "periodic", "id": periodic_id})

    def cancel_periodic(self, periodic_id):
        return self.call({"op": "cancel_periodic", "id": periodic_id})

    def wait(self, job_id):
        return self.call({"op": "wait", "id": job_id})

    def status(self, job_id):
        return self.call({"op": "status", "id": job_id})

    def cancel(self, job_id):
        return self.call({"op": "cancel", "id": job_id})

    def jobs(self):
        return self.call({"op": "jobs"})["jobs"]

    def stats(self):
        return self.call({"op": "stats"})

    def programs(self):
        return self.call({"op": "programs"})["programs"]

    def version(self):
        return self.call({"op": "version"})

    def set_policy(self, policy):
        return self.call({"op": "set_policy", "policy": policy})

    def set_cores(self, cores):
        return self.call({"op": "set_cores", "cores": cores})

    def subscribe(self, interval_ms=1000, count=None):
        """Yield stats lines (dicts with "stream": "stats") every interval_ms; stops after count
        lines if given. The connection should be used for nothing else meanwhile."""
        self.call({"op": "subscribe", "interval_ms": interval_ms})
        n = 0
        while count is None or n < count:
            line = self.receive()
            if line.get("stream") == "stats":
                n += 1
                yield line


class HttpClient:
    """promptlyd's HTTP API (docs/server.md, "HTTP API") at url, e.g. "http://127.0.0.1:8080"
    (a daemon's --http address or HAProxy's). Every request carries the bearer token. Error
    replies raise PromptlyError with the protocol's code and the HTTP status (.status); a 503
    (rejected: full or draining) carries Retry-After. For HTTPS with a self-signed certificate,
    pass cafile=...

    Requests go over one persistent HTTP/1.1 connection, opened on the first request and kept
    (a new connection per request costs a TCP handshake, and through HAProxy a second one to the
    node). A server or balancer closes idle connections (promptlyd's --http-idle-timeout); a
    connection found closed before a request is replaced before anything is sent. If it closes
    while a request is sent, a GET or DELETE (status, wait, cancel, jobs, stats: repeating them
    changes nothing) is sent once more on a new connection; a POST (submit) is not, since the job
    may have been accepted: the ConnectionError is raised, and the caller decides whether the job
    may run twice (the API has no idempotency key). subscribe() uses a connection of its own.

    Not thread-safe: the connection carries one request at a time. Give each thread its own
    HttpClient (close() ends its connection; it is also a context manager)."""

    def __init__(self, url, token=None, token_file=None, timeout=None, cafile=None):
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.readline().strip()
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        u = urllib.parse.urlsplit(self.url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._https = u.scheme == "https"
        self._host, self._port = u.hostname, u.port
        self._base = u.path  # a prefix the balancer routes on, usually ""
        self._ssl = ssl.create_default_context(cafile=cafile) if cafile or self._https else None
        self._conn = None
        self.connections_opened = 0  # for tests and benchmarks: how often the connection was (re)made

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _new_connection(self, timeout):
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers(self, data):
        headers = {}
        if self.token is not None:
            headers["Authorization"] = "Bearer " + self.token
        if data is not None:
            headers["Content-Type"] = "application/json"
        return headers

    def _kept_connection(self):
        """The kept connection, replaced first if the server has closed it (or sent something
        unasked, such as a 408 before closing); whether it is new."""
        c = self._conn
        if c is not None and c.sock is not None and not self._server_closed(c.sock):
            return c, False
        self.close()
        self._conn = self._new_connection(self.timeout)
        self._conn.connect()
        self.connections_opened += 1
        return self._conn, True

    @staticmethod
    def _server_closed(sock):
        """Whether an idle connection has something to read: the server's close (or a reply
        nobody asked for, which ends it too)."""
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)

    def request(self, method, path, body=None):
        """One request; the reply's JSON object, or PromptlyError for an error reply."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = self._headers(data)
        while True:
            conn, new = self._kept_connection()
            try:
                conn.request(method, self._base + path, body=data, headers=headers)
                r = conn.getresponse()
                raw = r.read()
            except ConnectionError:
                # Closed under the request: resent once if it was an idempotent request on a
                # connection that had served before (a new one failing is the server's answer).
                self.close()
                if new or method not in ("GET", "DELETE"):
                    raise
                continue
            except BaseException:
                self.close()  # a timeout or an interrupted read leaves the connection mid-reply
                raise
            if r.will_close:
                self.close()
            break
        if 200 <= r.status < 300:
            return json.loads(raw)
        try:
            reply = json.loads(raw)
            err = reply.get("error", {})
        except ValueError:  # not the daemon's reply (e.g. a balancer's page)
            reply, err = None, {"code": "http", "message": raw[:200].decode(errors="replace")}
        raise PromptlyError(err.get("code", "http"), err.get("message", ""), reply, r.status)

    def submit(self, program, args=None, wait=False, job_class=None):
        body = {"program": program, "args": args or {}, "wait": wait}
        if job_class:
            body["class"] = job_class
        return self.request("POST", "/v1/jobs", body)

    def status(self, job_id):
        return self.request("GET", f"/v1/jobs/{urllib.parse.quote(str(job_id))}")

    def wait(self, job_id):
        return self.request("GET", f"/v1/jobs/{urllib.parse.quote(str(job_id))}?wait=1")

    def cancel(self, job_id):
        return self.request("DELETE", f"/v1/jobs/{urllib.parse.quote(str(job_id))}")

    def jobs(self, state=None):
        return self.request("GET", "/v1/jobs" + (f"?state={state}" if state else ""))["jobs"]

    def stats(self):
        return self.request("GET", "/v1/stats")

    def subscribe(self, interval_ms=1000, count=None):
        """Yield stats objects from the server-sent event stream every interval_ms; stops after
        count events if given. The stream has a connection of its own."""
        conn = self._new_connection(self.timeout)
        try:
            conn.request("GET", f"{self._base}/v1/events?interval_ms={interval_ms}", headers=self._headers(None))
            r = conn.getresponse()
            if r.status != 200:
                raw = r.read()
                try:
                    err = json.loads(raw).get("error", {})
                except ValueError:
                    err = {"code": "http", "message": raw[:200].decode(errors="replace")}
                raise PromptlyError(err.get("code", "http"), err.get("message", ""), None, r.status)
            n = 0
            while count is None or n < count:
                raw = r.readline()
                if not raw:
                    return
                line = raw.decode().rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                yield json.loads(line[len("data: "):])
                n += 1
        finally:
            conn.close()
