#!/bin/bash
# Alternated A/B of the adaptive spin budget: old = /tmp/old-bench (fixed yield_bound 100), new = build/bench/bench-bin.
cd /work/main
OUT=/tmp/spinab/raw.txt
: > $OUT
NEW=build/bench/bench-bin; OLD=/tmp/oldb/bench-bin
tw() { for i in $(seq 70); do [ $(ss -tan state time-wait | wc -l) -lt 2000 ] && return; sleep 1; done; }
res() { grep '^RESULT ' | sed 's/^RESULT //'; }
for round in 1 2 3; do
  for side in old new; do
    B=$([ $side = old ] && echo $OLD || echo $NEW)
    echo "$round $side fib $($B/bench_fib_promptly --n 32 --cutoff 2 --workers 2 --warmup 2 --reps 10 | res)" >> $OUT
    echo "$round $side latency $($B/bench_prio_latency_promptly --workers 2 --policy prompt --n 36 --cutoff 16 --root-iters 5000 --sub-iters 5000 --period-us 10000 --window-jobs 100 --windows 6 --floor-jobs 100 | res)" >> $OUT
    echo "$round $side idle $($B/bench_io_driver --server cmake:bench_io_echo_promptly --mode idle --idle-conns 19000 --idle-ms 5000 --idle-line-ms 5000 --policy oblivious --server-args '--handler coroutine' --workers 2 | res)" >> $OUT; tw
    echo "$round $side saturate $($B/bench_io_driver --server cmake:bench_io_echo_promptly --mode saturate --conns 1000 --echo-ms 2000 --policy oblivious --server-args '--handler coroutine' --workers 2 | res)" >> $OUT
    echo "$round $side email36aps $($B/email_driver --server cmake:email_server --policy aps --clients 36 --rate 0 --measure-ms 3000 --warmup-ms 500 --workers 2 | res)" >> $OUT
  done
  echo "$round go idle $(GOMAXPROCS=2 $NEW/bench_io_driver --server go:echo --mode idle --idle-conns 19000 --idle-ms 5000 --idle-line-ms 5000 --workers 2 | res)" >> $OUT; tw
done
echo done >> $OUT
