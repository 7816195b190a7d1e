import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    side, bench, sampling, js = line.split(" ", 3)
    m = json.loads(js)["metrics"]
    rows.setdefault((bench, sampling), {"old": [], "new": []})[side].append(m)
metrics = ["stretch_ratio", "latency_us_p50", "latency_us_mean", "latency_us_p99", "share_L1_received", "share_L2_received"]
def cell(v): return f"{statistics.median(v):.4g} ({min(v):.4g}-{max(v):.4g})"
for (bench, sampling), d in rows.items():
    print(f"\n{bench}, {sampling} sampling ({len(d['old'])} rounds each, alternated):\n")
    print("| metric | old median (min-max) | new median (min-max) | new / old |\n|---|---|---|---|")
    for k in metrics:
        o = [m[k] for m in d["old"] if k in m]; n = [m[k] for m in d["new"] if k in m]
        if not o or not n: continue
        r = statistics.median(n) / statistics.median(o) if statistics.median(o) else float("nan")
        print(f"| {k} | {cell(o)} | {cell(n)} | {r:.3f} |")
