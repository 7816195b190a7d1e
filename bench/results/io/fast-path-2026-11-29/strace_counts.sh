#!/bin/bash
# usage: strace_counts.sh server-spec: system calls of the server over 2 s of a saturated echo (strace -c -f)
D=/work/main/build/bench/bench-bin/bench_io_driver
s=$1
if [[ $s == cmake:* ]]; then
 (PROMPTLY_IO_BACKEND=epoll $D --server $s --mode saturate --conns 1000 --echo-ms 4000 --workers 2 --policy oblivious --server-args "--handler coroutine --idle-yield-bound 2" > /tmp/st.out 2>&1 &)
else
 (GOMAXPROCS=2 $D --server $s --mode saturate --conns 1000 --echo-ms 4000 --workers 2 > /tmp/st.out 2>&1 &)
fi
sleep 1.5
C=$(pgrep -f "bench_io_driver --server $s" | head -1); P=$(pgrep -P $C | head -1)
timeout -s INT 2 strace -c -f -p $P 2>&1 | grep -E "calls|recvfrom|sendto|epoll|futex|sched_yield|read|write|total" | head
sleep 3
