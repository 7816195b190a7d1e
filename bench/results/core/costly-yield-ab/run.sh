#!/bin/bash
B=fib32-nocutoff,fib40-cutoff20,chain-futures-1M,reduce-map-1e7,reduce-sum-1e8,pools-create-remove-task
for r in 1 2 3; do
  (cd /tmp/base && python3 bench/harness/run_bench.py core --runtimes promptly --workers 2 --benches $B --reps 1 --build-dir /tmp/base-bench --out /tmp/coreab-base-r$r > /tmp/coreab-base-r$r.log 2>&1)
  (cd /work/main && python3 bench/harness/run_bench.py core --runtimes promptly --workers 2 --benches $B --reps 1 --out /tmp/coreab-new-r$r > /tmp/coreab-new-r$r.log 2>&1)
done
