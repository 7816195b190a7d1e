#!/bin/bash
# usage: ctx_switches.sh server-spec (cmake:TARGET, cargo:echo, go:echo): context switches and CPU per request of server and client over 2 s of a saturated echo
source "$(dirname "$0")/saturated_echo.sh"
s=$1
start_saturated_echo $s /tmp/cs.out
snap() { for p in $P $C; do v=0; n=0; for t in /proc/$p/task/*; do a=$(grep -E '^voluntary' $t/status | awk '{print $2}'); b=$(grep nonvol $t/status | awk '{print $2}'); v=$((v+a)); n=$((n+b)); done; st=$(awk '{print $14+$15}' /proc/$p/stat); echo -n "$v $n $st "; done; echo; }
a=$(snap); sleep 2; b=$(snap)
sleep 3
rps=$(grep -o '"requests_per_s": *[0-9.]*' /tmp/cs.out | grep -o '[0-9.]*$')
python3 -c "
a=list(map(int,'$a'.split())); b=list(map(int,'$b'.split())); r=float('$rps')*2
d=[y-x for x,y in zip(a,b)]
print('$s rps %.0f  server vol/req %.3f invol/req %.3f cpu_us/req %.2f | client vol/req %.3f invol/req %.3f cpu_us/req %.2f'%(r/2,d[0]/r,d[1]/r,d[2]*1e4/r,d[3]/r,d[4]/r,d[5]*1e4/r))"
