#!/bin/bash
# Alternated runs behind this directory's README: every round runs each BENCHSPEC once per worker
# count, one process each (1 warm-up + 1 timed repetition), and appends
# bench,runtime,workers,round,region_s,region_s_min,run_util,answer,loadavg_1min to OUT.csv.
# usage: alt.sh OUT.csv ROUNDS "WORKERS" BENCHSPEC...   BENCHSPEC: bench|runtime|program and args (without --workers)
# e.g.   alt.sh sort.csv 3 "1 2" "sort-uniform|promptly|build/bench-bin/bench_algo_sort_promptly --dist uniform --n 10000000" \
#                               "sort-uniform|rayon|build/rust/release/sort --dist uniform --n 10000000"
out=$1; rounds=$2; workers=$3; shift 3
for r in $(seq 1 $rounds); do
  for w in $workers; do
    for spec in "$@"; do
      IFS='|' read -r name impl cmd <<<"$spec"
      line=$(nice -n 5 $cmd --workers $w --warmup 1 --reps 1 2>&1 | grep RESULT)
      rs=$(sed -E 's/.*"region_s": ([0-9.e+-]+).*/\1/' <<<"$line")
      rmin=$(sed -E 's/.*"region_s_min": ([0-9.e+-]+).*/\1/' <<<"$line")
      ru=$(sed -E 's/.*"run_util": ([0-9.e+-]+).*/\1/' <<<"$line")
      res=$(sed -E 's/.*"result": ([^,]+),.*/\1/' <<<"$line")
      echo "$name,$impl,$w,$r,$rs,$rmin,$ru,$res,$(cut -d' ' -f1 /proc/loadavg)" >> $out
    done
  done
done
