import subprocess, json, statistics, sys
B='/work/main/build/bench/bench-bin/'
progs={'old':['/tmp/old/bench_algo_grain_promptly','--grains','0'],'new':[B+'bench_algo_grain_promptly','--grains','0'],'tbb':[B+'bench_algo_grain_tbb']}
rounds=int(sys.argv[1]) if len(sys.argv)>1 else 5
kinds=sys.argv[2].split(',') if len(sys.argv)>2 else ['sum','map','blur','irregular']
def run(p,kind,w):
    n={'blur':'4096','irregular':'16384','sum':'50000000'}.get(kind,'10000000')
    out=subprocess.run(progs[p]+['--kind',kind,'--n',n,'--workers',str(w),'--warmup','2','--reps','10'],capture_output=True,text=True,check=True).stdout
    for l in out.splitlines():
        if l.startswith('RESULT '): return json.loads(l[7:])['metrics']['region_s']
print('| bench | workers | old ms | new ms | oneTBB ms | new/old | new/oneTBB |'); print('|---|---:|---:|---:|---:|---:|---:|')
for kind in kinds:
    for w in (1,2):
        r={p:[] for p in progs}
        for i in range(rounds):
            order=list(progs) if i%2==0 else list(reversed(list(progs)))
            for p in order: r[p].append(run(p,kind,w))
        m={p:statistics.median(v)*1e3 for p,v in r.items()}
        c=lambda p:'%.2f (%.2f-%.2f)'%(m[p],min(r[p])*1e3,max(r[p])*1e3)
        print('| grain-%s | %d | %s | %s | %s | %.3f | %.3f |'%(kind,w,c('old'),c('new'),c('tbb'),m['new']/m['old'],m['new']/m['tbb']),flush=True)
