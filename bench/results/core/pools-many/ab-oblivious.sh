#!/bin/bash
# A/B of pools-many under oblivious: base vs queued index, 3 rounds alternated; columns: round which case pools us/task load1
OLD=${OLD:?the bench built from the commit before}
NEW=${NEW:-build/bench-bin/bench_pools_promptly}
OUT=${1:-runs-oblivious-index.tsv}; : > $OUT  # ROUNDS (3) and N (400) set the rounds and the tasks per run
for round in $(seq 1 ${ROUNDS:-3}); do
  for what in idle spread; do
    for P in 8 4000; do
      for which in old new; do
        B=$OLD; [ $which = new ] && B=$NEW
        r=$(timeout 40 nice -n 10 $B --what many-$what --n ${N:-400} --pools $P --policy oblivious --warmup 0 --reps 1 2>/dev/null | grep -o '"us_per_task": [0-9.e+-]*' | awk '{print $2}')
        echo -e "$round\t$which\t$what\t$P\t${r:-timeout}\t$(cut -d' ' -f1 /proc/loadavg)" >> $OUT
      done
    done
  done
done
