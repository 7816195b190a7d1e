#!/bin/bash
# OLD_BIN / NEW_BIN: the bench-bin directories of two builds (cmake -DPROMPTLY_BUILD_BENCH=ON, targets bench_io_driver bench_fair_echo).
for r in $(seq 1 $1); do
  for side in old new; do
    [ $side = old ] && B=$OLD_BIN || B=$NEW_BIN
    out=$(timeout 300 $B/bench_io_driver --server cmake:bench_fair_echo --policy fair --mode net --rate 50 --conns 8 --n 30 --cutoff 16 --min-loaded-ms ${3:-600} --expected-stretch 2.0 --server-args "--kernel $2 --scale quick --criterion 5-45-50 --sampling systematic" --workers 2 --warmup 1 --reps 1 2>/dev/null | grep '^RESULT ')
    echo "$side $2-5-45-50 systematic ${out#RESULT }"
  done
done
