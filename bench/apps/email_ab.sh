#!/bin/bash
# Builds of the email server against each other: 36 open-loop clients at 15,000 requests/s,
# 2 workers, each build's own apps/email/email_server and email_driver, 3 s measured per run.
# Every round runs each policy (POLICIES, default "aps") at each compression-checker period
# (PERIODS in ms, default "1000000": in effect off; the server's default is 250) on every build,
# the builds' order reversed every other round.
# Usage (from anywhere): [POLICIES="aps prompt"] [PERIODS="250 1000000"] email_ab.sh ROUNDS NAME=BUILD_DIR...
# Prints one line per run: round, name, policy, period, then resp / send p99 (us, from the
# arrival) and missed checker periods.
set -eu
rounds=$1; shift
port=${PORT:-7395}
for ((r = 0; r < rounds; ++r)); do
  builds=("$@")
  if ((r % 2 == 1)); then mapfile -t builds < <(printf '%s\n' "$@" | tac); fi
  for policy in ${POLICIES:-aps}; do
    for period in ${PERIODS:-1000000}; do
      for b in "${builds[@]}"; do
        name=${b%%=*}; build=${b#*=}
        "$build/apps/email/email_server" --port "$port" --workers 2 --policy "$policy" --period-ms "$period" >/dev/null 2>&1 &
        server=$!
        for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.05; done
        out=$("$build/apps/email/email_driver" --connect 127.0.0.1:"$port" --clients 36 --rate 15000 --measure-ms 3000 2>/dev/null | grep RESULT)
        kill $server; wait $server || true
        python3 -c '
import json, sys
m = json.loads(sys.argv[1][len("RESULT "):])["metrics"]
print(*sys.argv[2:6], "resp_p99", m["resp_us_p99"], "send_p99", m["send_us_p99"], "missed", int(m["missed_periods"]), flush=True)' \
          "$out" "$r" "$name" "$policy" "$period"
      done
    done
  done
done
