#!/bin/bash
# Sourced by ctx_switches.sh and strace_counts.sh. start_saturated_echo SPEC OUT starts a 4 s
# saturated echo (1000 connections) against SPEC (cmake:TARGET, cargo:echo, go:echo) in the
# background, its driver's output to OUT, lets it warm up for 1.5 s, and sets C (the driver's
# pid) and P (the server's).
D=/work/main/build/bench/bench-bin/bench_io_driver
start_saturated_echo() {
  local s=$1 out=$2
  if [[ $s == cmake:* ]]; then
    (PROMPTLY_IO_BACKEND=epoll $D --server $s --mode saturate --conns 1000 --echo-ms 4000 --workers 2 --policy oblivious --server-args "--handler coroutine --idle-yield-bound 2" > $out 2>&1 &)
  else
    (GOMAXPROCS=2 $D --server $s --mode saturate --conns 1000 --echo-ms 4000 --workers 2 > $out 2>&1 &)
  fi
  sleep 1.5
  C=$(pgrep -f "bench_io_driver --server $s" | head -1); P=$(pgrep -P $C | head -1)
}
