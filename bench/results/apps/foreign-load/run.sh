#!/bin/bash
# The email server's driver test (tests/apps_email_test.cpp, DriverChecksPassAndNothingIsLost:
# 6 closed-loop clients, 1200 requests) per policy, alone and beside 1 or 3 CPU-bound
# processes (`while :; do :; done`), policies alternated within each round.
# Usage: run.sh [ROUNDS] > runs-NAME.txt   (build/ must hold a Release build with tests)
# Prints one line per run: "hogs=<n> policy=<p> ms=<t> result=<OK|FAILED>".
set -u
rounds=${1:-3}
bin=${BIN:-build/tests/apps_email_test}
policies=(aps prompt fair oblivious)  # the test's parameters 0..3
for hogs in 0 1 3; do
  pids=()
  for ((h = 0; h < hogs; ++h)); do sh -c 'while :; do :; done' & pids+=($!); done
  for ((r = 0; r < rounds; ++r)); do
    for i in 0 1 2 3; do
      line=$(timeout 300 "$bin" --gtest_filter="Policies/EmailServerPolicies.DriverChecksPassAndNothingIsLost/$i" 2>&1 |
             grep -E '^\[ +(OK|FAILED) +\] Policies' | head -1)
      ms=$(sed -n 's/.*(\([0-9]*\) ms).*/\1/p' <<<"$line")
      result=$(grep -q OK <<<"$line" && echo OK || echo FAILED)
      echo "hogs=$hogs policy=${policies[$i]} ms=${ms:-none} result=$result"
    done
  done
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}"
  wait 2>/dev/null
done
