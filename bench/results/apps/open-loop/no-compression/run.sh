#!/bin/bash
# The email server at 36 open-loop clients, 15,000 requests/s, with its compression checker at
# the default period (250 ms) and in effect off (a period of 1000 s), alternated within each
# round, under aps and oblivious. Prints one line per run: round, policy, period, then the
# driver's resp / send p99 (us, from the arrival) and missed periods.
# Usage: bench/results/apps/open-loop/no-compression/run.sh [ROUNDS] [BUILD]   (from the repo root)
set -eu
rounds=${1:-3}
build=${2:-build}
port=7393
for ((r = 0; r < rounds; ++r)); do
  if ((r % 2 == 0)); then periods=(250 1000000); else periods=(1000000 250); fi
  for policy in aps oblivious; do
    for period in "${periods[@]}"; do
      "$build/apps/email/email_server" --port $port --workers 2 --policy $policy --period-ms $period >/dev/null 2>&1 &
      server=$!
      for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
      out=$("$build/apps/email/email_driver" --connect 127.0.0.1:$port --clients 36 --rate 15000 --measure-ms 3000 2>/dev/null | grep RESULT)
      kill $server; wait $server || true
      python3 -c '
import json, sys
m = json.loads(sys.argv[1][len("RESULT "):])["metrics"]
print(*sys.argv[2:5], "resp_p99", m["resp_us_p99"], "send_p99", m["send_us_p99"], "missed", int(m["missed_periods"]))' "$out" $r $policy $period
    done
  done
done
