#!/bin/bash
# usage: ab.sh ROUNDS "modes" -> lines hogs= mode= policy= ms=
rounds=$1; modes=$2
bin=${BIN:-build/tests/apps_email_test}  # a build with the temporary PROMPTLY_EXPLORE_WAIT switch (not in the tree)
policies=(aps prompt fair oblivious)
for hogs in 0 3; do
  pids=()
  for ((h = 0; h < hogs; ++h)); do sh -c 'while :; do :; done' & pids+=($!); done
  for ((r = 0; r < rounds; ++r)); do
    for m in $modes; do for i in 0 1 2 3; do
      line=$(env "${SWITCH:-PROMPTLY_EXPLORE_WAIT}=$m" timeout 300 "$bin" --gtest_filter="Policies/EmailServerPolicies.DriverChecksPassAndNothingIsLost/$i" 2>&1 | grep -E '^\[ +(OK|FAILED) +\] Policies' | head -1)
      ms=$(sed -n 's/.*(\([0-9]*\) ms).*/\1/p' <<<"$line")
      echo "hogs=$hogs mode=$m policy=${policies[$i]} ms=${ms:-none}"
    done; done
  done
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}"
  wait 2>/dev/null
done
