#!/bin/bash
# pools-many for every shipped policy at 8 and 4000 pools, ROUNDS rounds (3) with the policies in
# turn and 8/4000 back to back, N tasks per run (4000); columns: round policy case pools us/task load1
B=${B:-build/bench-bin/bench_pools_promptly}
OUT=${1:-runs-all-policies.tsv}; : > $OUT
for round in $(seq 1 ${ROUNDS:-3}); do
  for policy in prompt aps oblivious fair equi drep drep-steal-boundary asteal elastic serpt; do
    for what in idle spread; do
      for P in 8 4000; do
        r=$(timeout 60 $B --what many-$what --n ${N:-4000} --pools $P --policy $policy --warmup 0 --reps 1 2>/dev/null | grep -o '"us_per_task": [0-9.e+-]*' | awk '{print $2}')
        echo -e "$round\t$policy\t$what\t$P\t${r:-timeout}\t$(cut -d' ' -f1 /proc/loadavg)" >> $OUT
      done
    done
  done
done
