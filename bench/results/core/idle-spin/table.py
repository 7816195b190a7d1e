import json,collections,statistics,sys
rows=collections.defaultdict(list)
for l in open(sys.argv[1]):
    p=l.split(' ',3)
    if len(p)<4: continue
    m=json.loads(p[3])['metrics']
    rows[(p[1],p[2])].append(m)
keys={'fib':['region_s'],'latency':['latency_us_p50','latency_us_p99','floor_us_p50','floor_us_p99','background_slowdown'],'idle':['idle_cpu_pct'],'saturate':['requests_per_s','server_cpu_pct','latency_us_p99'],'email36aps':['resp_us_p99','send_us_p99','print_us_p99','throughput_per_s']}
def c(v): return f"{statistics.median(v):.4g} ({min(v):.4g}-{max(v):.4g})"
print("| bench | metric | fixed 100 | adaptive | adaptive / fixed | go |\n|---|---|---|---|---:|---|")
for b,ks in keys.items():
    for k in ks:
        o=[m[k] for m in rows[('old',b)] if k in m]; n=[m[k] for m in rows[('new',b)] if k in m]; g=[m[k] for m in rows[('go',b)] if k in m]
        print(f"| {b} | {k} | {c(o)} | {c(n)} | {statistics.median(n)/statistics.median(o):.2f} | {c(g) if g else ''} |")
