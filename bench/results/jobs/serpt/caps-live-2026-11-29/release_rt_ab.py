import os, statistics, sys
sys.path.insert(0, '/work/main/bench/jobs')
from live_jobs import run_program
exe='/work/main/build/bench/bench-bin/bench_jobs_promptly'
rows={}
R=int(sys.argv[1])
for r in range(R):
  for load in (0.75,0.9):
    order=[(rt,pol) for rt in (0,1) for pol in ('drep','drep-steal-boundary','serpt')]
    if r%2: order=order[::-1]
    for rt,pol in order:
      if rt: os.environ['JOBS_RT']='1'
      else: os.environ.pop('JOBS_RT',None)
      args=["--unit-ns","374.6","--policy",pol]+(["--hints","exact"] if pol=='serpt' else [])
      m=run_program(exe,'bing',load,1200,args)
      rows.setdefault((load,rt,pol),[]).append(m)
      print(r,load,'rt',rt,pol,'mean %.2f p99 %.1f late %.0f us'%(m['flow_ms_mean'],m['flow_ms_p99'],m['release_late_us_mean']),flush=True)
print()
for load in (0.75,0.9):
  for rt in (0,1):
    d=rows[(load,rt,'drep')]; sb=rows[(load,rt,'drep-steal-boundary')]; s=rows[(load,rt,'serpt')]
    rd=[a['flow_ms_mean']/b['flow_ms_mean'] for a,b in zip(s,d)]
    rsb=[a['flow_ms_mean']/b['flow_ms_mean'] for a,b in zip(s,sb)]
    rp=[a['flow_ms_p99']/b['flow_ms_p99'] for a,b in zip(s,d)]
    med=lambda v: statistics.median(v)
    print(f"load {load} rt {rt}: drep mean {med([x['flow_ms_mean'] for x in d]):.2f} sb {med([x['flow_ms_mean'] for x in sb]):.2f} serpt {med([x['flow_ms_mean'] for x in s]):.2f} | serpt/drep {med(rd):.2f} ({min(rd):.2f}-{max(rd):.2f}) serpt/sb {med(rsb):.2f} ({min(rsb):.2f}-{max(rsb):.2f}) p99/drep {med(rp):.2f} | late {med([x['release_late_us_mean'] for x in d+s]):.0f} us")
