#!/usr/bin/env python3
"""The 40-core Bing 90% replay (round 0, 600 jobs) under drep and serpt with some of promptly-sim's
modelled costs set to zero: which costs separate serpt from ideal SRPT. Run from the repository root."""
import sys, json, subprocess
sys.path.insert(0, "bench/jobs")
import sim_jobs as s
WL = "/tmp/sim_costs_wl40.json"
wl = s.make_workload("bing", 0.9, 40, 0, 600, 20.0, "exact")
json.dump(wl, open(WL,"w"))
def run(pol, extra):
    return s.run("build/bin/promptly-sim", WL, 40, pol, extra)
for name, extra in [("base", []), ("wake0", ["--wake-us","0"]), ("nap50", ["--nap-us","50"]), ("dec0", ["--decision-us","0"]), ("all0", ["--wake-us","0","--decision-us","0","--nap-us","50","--steal-us","0","--node-us","0"])]:
    d = run("drep", extra); r = run("serpt", extra)
    print(f"{name:6} drep {d['flow_ms_mean']:.2f} serpt {r['flow_ms_mean']:.2f} ratio {r['flow_ms_mean']/d['flow_ms_mean']:.3f} p99 ratio {r['flow_ms_p99']/d['flow_ms_p99']:.2f}", flush=True)
