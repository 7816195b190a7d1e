#!/usr/bin/env python3
# Live A/B of two builds of bench_jobs_promptly (bench_jobs_promptly_old, _new in DIR): drep,
# drep-steal-boundary and serpt (exact hints) of each, alternated and reversed every other round,
# Bing trace, 1200 jobs. Usage (from the repository root): ab_apply.py ROUNDS bing:30,bing:75 [DIR]
import os, sys, statistics
sys.path.insert(0, "bench/jobs")
from live_jobs import run_program
B=sys.argv[3] if len(sys.argv) > 3 else "build/bench/bench-bin/"
old, new = os.path.join(B, "bench_jobs_promptly_old"), os.path.join(B, "bench_jobs_promptly_new")
rounds=int(sys.argv[1]); loads=sys.argv[2].split(",")
units = sorted(run_program(old, "bing", 0.5, 10, ["--calibrate", "1"])["unit_ns"] for _ in range(5))
unit=units[2]; print("unit_ns", unit, flush=True)
variants=[("drep-old",old,["--policy","drep"]),("drep-new",new,["--policy","drep"]),
          ("sb-old",old,["--policy","drep-steal-boundary"]),("sb-new",new,["--policy","drep-steal-boundary"]),
          ("serpt-old",old,["--policy","serpt","--hints","exact"]),("serpt-new",new,["--policy","serpt","--hints","exact"])]
rows={}
for r in range(rounds):
    for spec in loads:
        tr,ld=spec.split(":")
        for label,exe,args in (variants if r%2==0 else variants[::-1]):
            m=run_program(exe,tr,int(ld)/100,1200,["--unit-ns",str(unit)]+args)
            rows.setdefault((spec,label),[]).append(m)
            print(f"round {r} {spec} {label}: mean {m['flow_ms_mean']:.3f} p50 {m['flow_ms_p50']:.3f} p99 {m['flow_ms_p99']:.2f} late {m.get('release_late_us_mean',0):.0f}",flush=True)
print()
for spec in loads:
    for label in [v[0] for v in variants]:
        ms=rows[(spec,label)]
        print(f"{spec:9} {label:10} mean med {statistics.median(m['flow_ms_mean'] for m in ms):.3f} (min {min(m['flow_ms_mean'] for m in ms):.3f} max {max(m['flow_ms_mean'] for m in ms):.3f}) p50 {statistics.median(m['flow_ms_p50'] for m in ms):.3f} p99 {statistics.median(m['flow_ms_p99'] for m in ms):.2f}")
    for a,b in (("drep-new","drep-old"),("sb-new","sb-old"),("serpt-new","serpt-old"),("serpt-old","drep-old"),("serpt-new","drep-new"),("serpt-old","sb-old"),("serpt-new","sb-new")):
        rat=[x['flow_ms_mean']/y['flow_ms_mean'] for x,y in zip(rows[(spec,a)],rows[(spec,b)])]
        print(f"{spec:9} {a}/{b}: median {statistics.median(rat):.3f} ({min(rat):.3f}-{max(rat):.3f})")
