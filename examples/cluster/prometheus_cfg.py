#!/usr/bin/env python3
"""Writes a Prometheus scrape configuration for a promptlyd cluster.

    prometheus_cfg.py [--interval 5s] NAME=HOST:HTTP_PORT ...

Each daemon serves /metrics on its HTTP port without the bearer token, so the
configuration needs no credentials; the node name becomes the `node` label so
per-node series stay apart after HAProxy spreads the load.
"""
import argparse
import re
import sys

NODE = re.compile(r"^([A-Za-z0-9_.-]+)=([A-Za-z0-9_.-]+):(\d{1,5})$")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", default="5s", help="scrape interval (default 5s)")
    ap.add_argument("nodes", nargs="+", metavar="NAME=HOST:HTTP_PORT")
    a = ap.parse_args()
    if not re.fullmatch(r"\d+(ms|s|m)", a.interval):
        sys.exit(f"prometheus_cfg.py: bad --interval {a.interval!r} (want e.g. 5s)")
    out = ["global:", f"  scrape_interval: {a.interval}", "scrape_configs:",
           "  - job_name: promptlyd", "    metrics_path: /metrics", "    static_configs:"]
    for spec in a.nodes:
        m = NODE.match(spec)
        if not m or not 0 < int(m.group(3)) < 65536:
            sys.exit(f"prometheus_cfg.py: bad node {spec!r} (want NAME=HOST:HTTP_PORT)")
        out += [f"      - targets: ['{m.group(2)}:{m.group(3)}']",
                f"        labels: {{node: '{m.group(1)}'}}"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
