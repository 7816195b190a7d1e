#!/bin/bash
# usage: echo_ab.sh ROUNDS server-spec... ; prints rps per run
R=$1; shift
D=/work/main/build/bench/bench-bin/bench_io_driver
for r in $(seq 1 $R); do
  for s in "$@"; do
    if [[ $s == cmake:* ]]; then
      out=$(PROMPTLY_IO_BACKEND=epoll $D --server $s --mode saturate --conns 1000 --echo-ms 3000 --workers 2 --policy oblivious --server-args "--handler coroutine --idle-yield-bound 2" 2>&1)
    else
      out=$(GOMAXPROCS=2 $D --server $s --mode saturate --conns 1000 --echo-ms 3000 --workers 2 2>&1)
    fi
    echo "R$r $s $(echo "$out" | grep -o '"requests_per_s": *[0-9.]*\|"latency_us_p99": *[0-9.]*\|"server_cpu_pct": *[0-9.]*' | tr '\n' ' ')"
  done
done
