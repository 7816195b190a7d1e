#!/bin/bash
# Before/after the scheduler split, alternated: BASE and NEW are bench-bin directories built
# from the tree before the split (7450751) and after it, with
#   cmake -S <tree> -B <tree>/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROMPTLY_BUILD_BENCH=ON
#   ninja -C <tree>/build-bench bench_fib_promptly bench_prio_latency_promptly
# fib(32) with no cutoff (the core suite's fib32-nocutoff, 2 workers, 2 warm-up + 10 timed runs
# per process) and the priority suite's latency-under-load with policy prompt (2 workers).
BASE=${BASE:?bench-bin of the tree before}
NEW=${NEW:?bench-bin of the tree after}
OUT=${OUT:-.}
for r in 1 2 3; do
  for side in base new; do
    bin=$BASE; [ $side = new ] && bin=$NEW
    "$bin/bench_fib_promptly" --n 32 --cutoff 2 --workers 2 --warmup 2 --reps 10 > "$OUT/fib-$side-r$r.txt"
  done
done
for r in 1 2 3; do
  for side in base new; do
    bin=$BASE; [ $side = new ] && bin=$NEW
    "$bin/bench_prio_latency_promptly" --workers 2 --policy prompt --n 36 --cutoff 16 --root-iters 5000 \
      --sub-iters 5000 --period-us 10000 --window-jobs 100 --windows 6 --floor-jobs 100 --warmup 0 --reps 1 \
      > "$OUT/latency-$side-r$r.txt"
  done
done
