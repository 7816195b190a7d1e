#!/bin/bash
# Sort of 10^8 uint32 (uniform random, the suite's input at the size), alternated
# rounds of Promptly, oneTBB parallel_sort, std::sort(par) and Rayon par_sort_unstable, each
# invocation one warm-up and REPS timed sorts; peak RSS from /usr/bin/time. The suite itself
# sorts 10^7 to stay under 10 minutes. Usage: run.sh ROUNDS DIST [REPS [N]] > raw.txt (from the repo root,
# after ./run bench algorithms built the programs). REPS (default 1): timed sorts per invocation, the
# median reported (the fast inputs, sorted, reversed and few-unique, take a fraction of a second).
# N (default 10^8): elements (strings: 10^7, the size the algorithms target for strings).
rounds=${1:-3}; dist=${2:-uniform}; reps=${3:-1}; n=${4:-100000000}
B=build/bench/bench-bin; R=bench/rust/target/release/sort
for r in $(seq "$rounds"); do
  for w in 1 2; do
    for rt in promptly tbb std-par rayon; do
      case $rt in
        promptly) cmd=("$B/bench_algo_sort_promptly") ;;
        tbb) cmd=("$B/bench_algo_sort_tbb" --impl tbb) ;;
        std-par) cmd=("$B/bench_algo_sort_tbb" --impl std-par) ;;
        rayon) cmd=("$R") ;;
      esac
      out=$( { /usr/bin/time -f "rss_kib %M" "${cmd[@]}" --dist "$dist" --n "$n" --stable 0 --workers $w --warmup 1 --reps "$reps"; } 2>&1 )
      region=$(echo "$out" | grep -o '"region_s": [0-9.eE+-]*' | head -1 | awk '{printf "%.6f", $2}')
      rss=$(echo "$out" | grep -o 'rss_kib [0-9]*' | awk '{print $2}')
      echo "round $r workers $w $rt region_s $region rss_mib $((rss / 1024))"
    done
  done
done
