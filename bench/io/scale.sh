#!/usr/bin/env bash
# Idle connections at server scale: the server's resident memory, CPU and mappings with K idle
# connections (driver --mode idle, bench/io/README.md), for Promptly with a fiber handler (a task
# per connection), Promptly with a coroutine handler (a co::task per connection,
# docs/coroutines.md) and Go (a goroutine per connection), alternated over rounds.
#   bench/io/scale.sh BUILD_DIR OUT_DIR [ROUNDS] [CONNS...]
# BUILD_DIR: a Release build with -DPROMPTLY_BUILD_BENCH=ON and the targets bench_io_driver,
# bench_io_echo_promptly and bench_io_echo_go built. Raises the descriptor limit (as root) so that
# K connections fit in each process; K above the ephemeral port range (about 28k on one
# address pair) cannot be opened by the driver.
set -euo pipefail
build=$1 out=$2 rounds=${3:-3}
shift 3 || true
conns=("${@:-10000}")
ulimit -Hn 200000 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"
mkdir -p "$out"
driver="$build/bench/bench_io_driver"
[ -x "$driver" ] || driver=$(find "$build" -name bench_io_driver -type f | head -1)
for k in "${conns[@]}"; do
  for r in $(seq 1 "$rounds"); do
    for rt in promptly-fiber promptly-coroutine-epoll promptly-coroutine-io_uring go; do
      backend=auto
      case $rt in
        promptly-fiber) spec=cmake:bench_io_echo_promptly extra=(--policy oblivious --server-args "--handler fiber") ;;
        promptly-coroutine-*) spec=cmake:bench_io_echo_promptly backend=${rt#promptly-coroutine-}
                              extra=(--policy oblivious --server-args "--handler coroutine") ;;
        go) spec=go:echo extra=() ;;
      esac
      line=$(cd "$build" && PROMPTLY_IO_BACKEND=$backend "$driver" --server "$spec" --mode idle --idle-conns "$k" \
               --idle-ms 2000 "${extra[@]}" 2>&1 | grep RESULT || echo "RESULT failed")
      echo "conns=$k round=$r runtime=$rt $line" | tee -a "$out/raw.txt"
    done
  done
done
