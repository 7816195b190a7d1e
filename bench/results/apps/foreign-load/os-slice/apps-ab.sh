#!/bin/bash
# email-36 and proxy-8 of `./run bench apps` (the driver on the same 2 cores as the server) with an
# environment variable unset and set, alternated within each round, one measured run each
# (--reps 1). By default the variable is PROMPTLY_OS_SLICE_US=100 (the runtime's threads at the
# kernel's default time slice against 100 us); AB_VAR and AB_VALUE name another, RUNTIMES the
# runtimes (default promptly-aps,promptly-oblivious,promptly-prompt).
# Usage: [AB_VAR=NAME AB_VALUE=V] [RUNTIMES=a,b] apps-ab.sh [ROUNDS] > FILE
# Prints one line per metric: "<round> <default|V> <bench> <runtime> <metric> <value>".
set -u
rounds=${1:-3}
var=${AB_VAR:-PROMPTLY_OS_SLICE_US}
value=${AB_VALUE:-100}
runtimes=${RUNTIMES:-promptly-aps,promptly-oblivious,promptly-prompt}
out=$(mktemp -d)
python3 bench/harness/run_bench.py apps --benches email-6 --runtimes promptly-aps --quick --out "$out/build" >/dev/null  # builds the programs
for ((r = 0; r < rounds; ++r)); do
  if ((r % 2 == 0)); then settings=(default "$value"); else settings=("$value" default); fi
  for s in "${settings[@]}"; do
    if [ "$s" = default ]; then envs=(env -u "$var"); else envs=(env "$var=$s"); fi
    "${envs[@]}" python3 bench/harness/run_bench.py apps --benches email-36,proxy-8 \
      --runtimes "$runtimes" --reps 1 --no-build --out "$out/$r-$s" >/dev/null
    python3 - "$r" "$s" "$out/$r-$s/latest.json" <<'PY'
import json, sys
r, s, f = sys.argv[1:]
for x in json.load(open(f))["results"]:
    for k, v in sorted(x["metrics"].items()):
        if k.endswith(("_p50", "_p99")) or k in ("throughput_per_s", "missed_periods"):
            print(r, s, x["bench"], x["runtime"], k, v["median"])
PY
  done
done
rm -rf "$out"
