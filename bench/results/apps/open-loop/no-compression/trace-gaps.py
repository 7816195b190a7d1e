# The slowest waits of client loops in a trace (PROMPTLY_TRACE) of the email server: from the
# reactor making a loop's fiber ready (`wake ready` on the external track) to a worker resuming
# it, and every event of the worker and the policy thread in between.
# Usage: python3 trace-gaps.py TRACE.json   (trace-gaps.txt: a one-worker aps run before the fix)
import json, bisect, collections, sys
d=json.load(open(sys.argv[1])); ev=d['traceEvents'] if isinstance(d,dict) else d
ev=[e for e in ev if 'ts' in e and e.get('name') not in ('thread_name','dropped events')]
for tid in (0,1,2):
    t=[e['ts'] for e in ev if e['tid']==tid]; print(tid, min(t), max(t), len(t))
lo=max(min(e['ts'] for e in ev if e['tid']==k) for k in (0,1,2))
ev=[e for e in ev if e['ts']>=lo]; ev.sort(key=lambda e:e['ts'])
# pool-0 tasks on worker: when did they start; external wake readies
w=[e for e in ev if e['tid']==0]
res=collections.defaultdict(list)
for e in w:
    if e['name']=='task (resumed)': res[e['args']['fiber']].append(e['ts'])
delays=[]
for e in ev:
    if e['name']=='wake ready' and e['tid']==2:
        L=res.get(e['args'].get('target'),[]); i=bisect.bisect_left(L,e['ts'])
        if i<len(L): delays.append((L[i]-e['ts'], e['ts'], e['args'].get('target')))
delays.sort(); n=len(delays)
print('n',n,'p50 %.1f p90 %.1f p99 %.1f max %.1f'%(delays[n//2][0],delays[int(n*.9)][0],delays[int(n*.99)][0],delays[-1][0]))
ts=[e['ts'] for e in ev]
for dl,t,f in delays[-2:]:
    print('=== delay %.0f us, fiber %s'%(dl,f))
    i=bisect.bisect_left(ts,t-30); j=bisect.bisect_left(ts,t+dl+5)
    for e in ev[i:j]:
        if e['tid']==2 and e['name']=='wake ready': continue
        a={k:v for k,v in e.get('args',{}).items() if k in ('pool','fiber','arg','end','target')}
        print('  %8.1f tid%d %-16s %s %s'%(e['ts']-t, e['tid'], e['name'], ('dur %.1f'%e['dur']) if 'dur' in e else '', a))
print("=== all tracks in the last window")
dl,t,f=delays[-1]
i=bisect.bisect_left(ts,t-30); j=bisect.bisect_left(ts,t+dl+5)
c=collections.Counter((e['tid'],e['name']) for e in ev[i:j]); print(c)
ext=[e for e in ev[i:j] if e['tid']==2]
print([('%.0f'%(e['ts']-t), e['args'].get('target'), e['args'].get('pool')) for e in ext][:40])
