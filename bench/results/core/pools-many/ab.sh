#!/bin/bash
# A/B of pools-many: base (1986f56, the bench on the unchanged runtime) vs new, 3 rounds alternated.
NEW=${NEW:-build/bench-bin/bench_pools_promptly}
OLD=${OLD:?the bench built from the commit before}
OUT=${OUT:-runs.tsv}
: > $OUT
for round in 1 2 3; do
  for pol in prompt aps oblivious fair equi drep drep-steal-boundary asteal elastic; do
    for what in idle spread; do
      for P in 8 4000; do
        for which in old new; do
          B=$OLD; [ $which = new ] && B=$NEW
          r=$(timeout 40 $B --what many-$what --n 400 --pools $P --policy $pol --warmup 0 --reps 1 2>/dev/null | grep -o '"us_per_task": [0-9.e+-]*' | awk '{print $2}')
          echo -e "$round\t$which\t$pol\t$what\t$P\t${r:-timeout}" >> $OUT
        done
      done
    done
  done
done

