#!/usr/bin/env python3
# From an event trace (PROMPTLY_TRACE) of bench_jobs_promptly: per job (a submit on the external
# track), the time from its submission to its first task, and from its first task to the first
# task of the job on the other worker (or the job's end if none ran there). Usage: second_core_join.py TRACE.json
import json, sys, statistics
d=json.load(open(sys.argv[1])); ev=[e for e in d['traceEvents'] if 'ts' in e and e.get('ph')!='C']
ev.sort(key=lambda e:e['ts'])
subs=[(e['ts'],e['args']['pool']) for e in ev if e.get('name')=='submit']
starts={}
for e in ev:
    if e.get('name') in ('task','task (resumed)') and e['tid'] in (0,1):
        starts.setdefault(e['args'].get('pool'),[]).append((e['ts'],e['tid'],e['ts']+e.get('dur',0)))
gaps=[]; first=[]
for k,(ts,p) in enumerate(subs):
    nxt = subs[k+1][0] if k+1<len(subs) else 1e18
    ss=[s for s in starts.get(p,[]) if ts<=s[0]<nxt]
    if not ss: continue
    t0,tid0,_=ss[0]
    other=[s for s in ss if s[1]!=tid0]
    end=max(s[2] for s in ss)
    if other: gaps.append(min(other[0][0]-t0, end-t0)); 
    else: gaps.append(end-t0)
    first.append(t0-ts)
def q(xs,f): xs=sorted(xs); return xs[int(f*len(xs))]
print("submit->first task p50 %.0f p90 %.0f"%(q(first,.5),q(first,.9)))
print("first task -> second core joins (or job end) p25 %.0f p50 %.0f p75 %.0f p90 %.0f mean %.0f"%(q(gaps,.25),q(gaps,.5),q(gaps,.75),q(gaps,.9),statistics.mean(gaps)))
