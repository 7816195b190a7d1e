#!/bin/bash
# usage: strace_counts.sh server-spec: system calls of the server over 2 s of a saturated echo (strace -c -f)
source "$(dirname "$0")/saturated_echo.sh"
s=$1
start_saturated_echo $s /tmp/st.out
timeout -s INT 2 strace -c -f -p $P 2>&1 | grep -E "calls|recvfrom|sendto|epoll|futex|sched_yield|read|write|total" | head
sleep 3
