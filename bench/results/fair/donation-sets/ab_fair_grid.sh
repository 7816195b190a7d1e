#!/bin/bash
# OLD_BIN / NEW_BIN: the bench-bin directories of two builds (cmake -DPROMPTLY_BUILD_BENCH=ON, targets bench_io_driver bench_fair_echo).
# fair A/B: old vs new, alternated, $1 rounds; output lines "side bench sampling RESULT-json"
ROUNDS=$1
for r in $(seq 1 $ROUNDS); do
  for side in old new; do
    [ $side = old ] && B=$OLD_BIN || B=$NEW_BIN
    for spec in "fib 50-25-25 systematic 0 4.0" "fib 50-25-25 independent 0 4.0" "uts 50-25-25 systematic 0 4.0" "fib 5-45-50 systematic 600 2.0" "fib 5-45-50 independent 600 2.0"; do
      set -- $spec
      out=$(timeout 300 $B/bench_io_driver --server cmake:bench_fair_echo --policy fair --mode net --rate 50 --conns 8 --n 30 --cutoff 16 --min-loaded-ms $4 --expected-stretch $5 --server-args "--kernel $1 --scale quick --criterion $2 --sampling $3" --workers 2 --warmup 1 --reps 1 2>/dev/null | grep '^RESULT ')
      echo "$side $1-$2 $3 ${out#RESULT }"
    done
  done
done
