# The table of README.md from runs.tsv (ab.sh): median (min-max) us per task per policy, pool count and build.
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(__import__('os').path.join(__import__('os').path.dirname(__file__), 'runs.tsv')):
    r, which, pol, what, P, v = line.rstrip('\n').split('\t')
    rows[(which, pol, what, int(P))].append(None if v == 'timeout' else float(v))
pols = ["prompt", "aps", "oblivious", "fair", "equi", "drep", "drep-steal-boundary", "asteal", "elastic"]
def cell(vals):
    if not vals: return "-"
    ok = [v for v in vals if v is not None]
    if len(ok) < len(vals): return f"timeout ({len(vals)-len(ok)}/{len(vals)} runs > 40 s)" if not ok else f"{statistics.median(ok):.0f} ({min(ok):.0f}-{max(ok):.0f}), {len(vals)-len(ok)} timeout"
    m = statistics.median(ok)
    f = (lambda x: f"{x:.1f}") if m < 100 else (lambda x: f"{x:.0f}")
    return f"{f(m)} ({f(min(ok))}-{f(max(ok))})"
def med(vals):
    ok = [v for v in vals if v is not None]
    return statistics.median(ok) if ok and len(ok) == len(vals) else None
for what in ["idle", "spread"]:
    print(f"\n### many-{what}\n")
    print("| policy | before, 8 pools | before, 4000 pools | before 4000/8 (median; min) | after, 8 pools | after, 4000 pools | after 4000/8 (median; min) |")
    print("|---|---|---|---|---|---|---|")
    for pol in pols:
        out = [pol]
        for which in ["old", "new"]:
            a, b = rows[(which, pol, what, 8)], rows[(which, pol, what, 4000)]
            ma, mb = med(a), med(b)
            mina = min([v for v in a if v is not None], default=None); minb = min([v for v in b if v is not None], default=None)
            out += [cell(a), cell(b), (f"{mb/ma:.2f}" if ma and mb else "-") + "; " + (f"{minb/mina:.2f}" if mina and minb else "-")]
        print("| " + " | ".join(out) + " |")
