import sys,re,statistics,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    m=dict(x.split('=') for x in l.split())
    if m['ms']!='none': d[(m['hogs'],m['policy'],m['mode'])].append(int(m['ms']))
for k in sorted(d): v=d[k]; print(*k, statistics.median(v), min(v), max(v), len(v))
