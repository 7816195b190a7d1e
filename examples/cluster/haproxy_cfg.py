#!/usr/bin/env python3
"""Writes the HAProxy configuration of a promptlyd cluster (docs/cluster.md).

usage: haproxy_cfg.py --bind HOST:PORT [--stats-socket PATH] [--check-ms MS] [--http-reuse safe|aggressive]
                      NODE=HOST:PORT:AGENT_PORT ...

NODE is the daemon's --node-id (the prefix of its job ids), HOST:PORT its
--http address, AGENT_PORT its --agent-port. The configuration goes to stdout.
"""
import argparse
import re
import sys


def node(spec):
    m = re.fullmatch(r"([A-Za-z0-9_]{1,32})=([^:]+):(\d+):(\d+)", spec)
    if not m:
        raise argparse.ArgumentTypeError(f"'{spec}' is not NODE=HOST:PORT:AGENT_PORT")
    return m.group(1), m.group(2), int(m.group(3)), int(m.group(4))


def config(bind, nodes, stats_socket=None, check_ms=500, http_reuse="safe"):
    out = ["global",
           "    maxconn 4096"]
    if stats_socket:
        out.append(f"    stats socket {stats_socket} mode 600 level admin")
    out += ["",
            "defaults",
            "    mode http",
            "    timeout connect 1s",
            "    timeout client 60s",
            "    timeout http-request 5s",
            "    timeout server 600s",
            "    timeout queue 10s",
            "    retries 3",
            "",
            "frontend promptly",
            f"    bind {bind}",
            "    default_backend promptlyd",
            "",
            "backend promptlyd",
            "    balance leastconn",
            "    # The nodes keep connections alive (--http-idle-timeout): requests reuse",
            "    # an idle connection to a node instead of opening one each (safe: a",
            "    # client's requests after its first; aggressive: its first too).",
            f"    http-reuse {http_reuse}",
            "    option httpchk GET /readyz",
            "    http-check expect status 200",
            "    # A submission refused by a full or draining node (503) or a node that",
            "    # is gone (conn-failure) is sent again, to another node.",
            "    retry-on 503 conn-failure",
            "    option redispatch 1",
            "    acl submission method POST",
            "    acl submission_path path /v1/jobs",
            "    http-request disable-l7-retry unless submission submission_path",
            "    # A job's status and cancel go to the node that owns it, by its id's",
            "    # prefix, even while that node is full or draining.",
            "    force-persist if { path_beg /v1/jobs/ }"]
    for name, _, _, _ in nodes:
        out.append(f"    use-server {name} if {{ path_beg /v1/jobs/{name}- }}")
    out += ["    # When no node has room, HAProxy's own 503 says so like a node's would.",
            "    http-error status 503 content-type application/json "
            "string '{\"ok\":false,\"error\":{\"code\":\"rejected\",\"message\":\"no node has room\"}}' "
            "hdr Retry-After 1"]
    for name, host, port, agent in nodes:
        out.append(f"    server {name} {host}:{port} check inter {check_ms}ms fall 1 rise 1 "
                   f"agent-check agent-addr 127.0.0.1 agent-port {agent} agent-inter {check_ms}ms weight 100")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bind", required=True, help="HOST:PORT clients connect to")
    p.add_argument("--stats-socket", help="HAProxy's admin socket (show stat)")
    p.add_argument("--check-ms", type=int, default=500, help="health and agent check interval")
    p.add_argument("--http-reuse", choices=["safe", "aggressive"], default="safe",
                   help="HAProxy's reuse of idle connections to the nodes (docs/cluster.md)")
    p.add_argument("nodes", nargs="+", type=node)
    a = p.parse_args()
    sys.stdout.write(config(a.bind, a.nodes, a.stats_socket, a.check_ms, a.http_reuse))


if __name__ == "__main__":
    main()
