#!/bin/bash
# The email server with its compression checker off, on one CPU with one worker (taskset -c 0),
# the driver on the other CPU (taskset -c 1): 36 open-loop clients at 10,000 requests/s, 3 s.
# Each policy runs once per value of the variable AB_VAR (unset, then AB_VALUE; the order
# reversed every other round), so that a temporary build can compare two rules alternated.
# Prints per run: round, setting, policy, resp / send p99 (us, from the arrival), and how long
# the server's reactor and policy threads waited on the run queue (ms, /proc/.../schedstat).
# Usage: [AB_VAR=NAME AB_VALUE=V] one-cpu.sh [ROUNDS] [BUILD]   (from the repo root; needs CPUs 0 and 1)
set -eu
rounds=${1:-3}
build=${2:-build}
var=${AB_VAR:-}
value=${AB_VALUE:-1}
port=7402
for ((r = 0; r < rounds; ++r)); do
  settings=(default)
  [ -n "$var" ] && { if ((r % 2 == 0)); then settings=(default "$value"); else settings=("$value" default); fi; }
  for s in "${settings[@]}"; do
    if [ "$s" = default ]; then envs=(env ${var:+-u "$var"}); else envs=(env "$var=$s"); fi
    for policy in aps prompt fair oblivious; do
      "${envs[@]}" taskset -c 0 "$build/apps/email/email_server" --port $port --workers 1 --policy $policy \
        --period-ms 1000000 >/dev/null 2>&1 &
      server=$!
      for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
      out=$(taskset -c 1 "$build/apps/email/email_driver" --connect 127.0.0.1:$port --clients 36 --rate 10000 \
        --measure-ms 3000 2>/dev/null | grep RESULT)
      waits=""
      for t in /proc/$server/task/*; do
        case $(cat "$t/comm") in
          promptly-io) waits="$waits reactor_wait_ms $(awk '{printf "%.0f", $2 / 1e6}' "$t/schedstat")" ;;
          promptly-policy) waits="$waits policy_wait_ms $(awk '{printf "%.0f", $2 / 1e6}' "$t/schedstat")" ;;
        esac
      done
      kill $server; wait $server || true
      python3 -c '
import json, sys
m = json.loads(sys.argv[1][len("RESULT "):])["metrics"]
print(*sys.argv[2:5], "resp_p99", m["resp_us_p99"], "send_p99", m["send_us_p99"], sys.argv[5].strip())' "$out" $r "$s" $policy "$waits"
    done
  done
done
