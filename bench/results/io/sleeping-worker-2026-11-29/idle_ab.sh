#!/bin/bash
# usage: idle_ab.sh ROUNDS CONNS server-spec... ; prints idle CPU and RSS per run
R=$1; C=$2; shift 2
D=/work/main/build/bench/bench-bin/bench_io_driver
for r in $(seq 1 $R); do
  for s in "$@"; do
    if [[ $s == cmake:* ]]; then
      out=$(PROMPTLY_IO_BACKEND=epoll $D --server $s --mode idle --idle-conns $C --idle-ms 5000 --idle-line-ms 5000 --workers 2 --policy oblivious --server-args "--handler coroutine --idle-yield-bound 2" 2>&1)
    else
      out=$(GOMAXPROCS=2 $D --server $s --mode idle --idle-conns $C --idle-ms 5000 --idle-line-ms 5000 --workers 2 2>&1)
    fi
    echo "R$r $s $(echo "$out" | grep -o '"idle_cpu_pct": *[0-9.]*\|"idle_rss_mib": *[0-9.]*' | tr '\n' ' ')"
  done
done
