#!/bin/bash
# usage: ab.sh ROUNDS "binary|ENV=V ...|extra server args" ...
R=$1; shift
D=/work/main/build/bench/bench-bin/bench_io_driver
for r in $(seq 1 $R); do
  for spec in "$@"; do
    IFS='|' read -r bin envs extra <<< "$spec"
    if [[ $bin == cmake:* ]]; then
      out=$(env PROMPTLY_IO_BACKEND=epoll $envs $D --server $bin --mode saturate --conns 1000 --echo-ms 3000 --workers 2 --policy oblivious --server-args "--handler coroutine $extra" 2>&1)
    else
      out=$(env GOMAXPROCS=2 $envs $D --server $bin --mode saturate --conns 1000 --echo-ms 3000 --workers 2 2>&1)
    fi
    echo "R$r [$spec] $(echo "$out" | grep -o '"requests_per_s": *[0-9.]*\|"server_cpu_pct": *[0-9.]*' | sed 's/"requests_per_s"/rps/; s/"server_cpu_pct"/cpu/' | tr '\n' ' ')"
  done
done
