#!/bin/bash
# The email server's driver test (tests/apps_email_test.cpp, DriverChecksPassAndNothingIsLost:
# 6 closed-loop clients, 1200 requests) per policy, alone and beside 1 or 3 CPU-bound
# processes (`while :; do :; done`), policies alternated within each round.
# Usage: run.sh [ROUNDS] > runs-NAME.txt   (build/ must hold a Release build with tests)
# Prints one line per run: "hogs=<n> policy=<p> ms=<t> result=<OK|FAILED>".
# With SLICES="default 100" (os-slice/), each policy runs once per PROMPTLY_OS_SLICE_US value
# ("default": unset), their order reversed every other round, and each line says "slice=<s>".
set -u
rounds=${1:-3}
bin=${BIN:-build/tests/apps_email_test}
policies=(aps prompt fair oblivious)  # the test's parameters 0..3
read -r -a slices <<<"${SLICES:-}"
for hogs in 0 1 3; do
  pids=()
  for ((h = 0; h < hogs; ++h)); do sh -c 'while :; do :; done' & pids+=($!); done
  for ((r = 0; r < rounds; ++r)); do
    for i in 0 1 2 3; do
      order=("${slices[@]}")
      ((r % 2 == 1 && ${#order[@]} > 1)) && order=($(printf '%s\n' "${order[@]}" | tac))
      [ ${#order[@]} -eq 0 ] && order=(none)
      for s in "${order[@]}"; do
        case $s in
          none) envs=(env); label="" ;;
          default) envs=(env -u PROMPTLY_OS_SLICE_US); label=" slice=default" ;;
          *) envs=(env PROMPTLY_OS_SLICE_US="$s"); label=" slice=$s" ;;
        esac
        line=$(timeout 300 "${envs[@]}" "$bin" --gtest_filter="Policies/EmailServerPolicies.DriverChecksPassAndNothingIsLost/$i" 2>&1 |
               grep -E '^\[ +(OK|FAILED) +\] Policies' | head -1)
        ms=$(sed -n 's/.*(\([0-9]*\) ms).*/\1/p' <<<"$line")
        result=$(grep -q OK <<<"$line" && echo OK || echo FAILED)
        echo "hogs=$hogs policy=${policies[$i]}$label ms=${ms:-none} result=$result"
      done
    done
  done
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}"
  wait 2>/dev/null
done
