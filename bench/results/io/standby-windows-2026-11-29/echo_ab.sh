#!/bin/bash
# Saturated echo (1000 connections, 3 s, 2 workers, oblivious, coroutine handlers, epoll), builds
# alternated (order reversed every other round). Usage: echo_ab.sh ROUNDS NAME=BUILD_DIR...
# (each BUILD_DIR holds bench-bin/bench_io_driver and bench-bin/bench_io_echo_promptly; a NAME
# starting with tokio runs that build's Tokio server, rust/release/echo; one starting with go its Go
# server, go/echo, at GOMAXPROCS=2, as the io suite does)
R=$1; shift
for r in $(seq 1 "$R"); do
  specs=("$@")
  if ((r % 2 == 0)); then mapfile -t specs < <(printf '%s\n' "$@" | tac); fi
  for s in "${specs[@]}"; do
    name=${s%%=*}; build=${s#*=}
    if [[ $name == tokio* ]]; then
      out=$("$build/bench-bin/bench_io_driver" --server cargo:echo --mode saturate --conns 1000 --echo-ms 3000 --workers 2 2>&1)
    elif [[ $name == go* ]]; then
      out=$(GOMAXPROCS=2 "$build/bench-bin/bench_io_driver" --server go:echo --mode saturate --conns 1000 --echo-ms 3000 --workers 2 2>&1)
    else
      out=$(PROMPTLY_IO_BACKEND=epoll "$build/bench-bin/bench_io_driver" --server cmake:bench_io_echo_promptly --mode saturate \
            --conns 1000 --echo-ms 3000 --workers 2 --policy oblivious --server-args "--handler coroutine --idle-yield-bound 2" 2>&1)
    fi
    echo "R$r $name $(echo "$out" | grep -o '"requests_per_s": *[0-9.]*\|"latency_us_p99": *[0-9.]*\|"server_cpu_pct": *[0-9.]*' | tr '\n' ' ')"
  done
done
