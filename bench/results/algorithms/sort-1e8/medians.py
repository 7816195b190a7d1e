# Medians and ranges per worker count and runtime from run.sh output files: medians.py FILE...
import sys,statistics as st,collections
for f in sys.argv[1:]:
  d=collections.defaultdict(list); rss={}
  for l in open(f):
    p=l.split()
    if len(p)<9: continue
    d[(int(p[3]),p[4])].append(float(p[6])); rss[p[4]]=p[8]
  print(f)
  for w in (1,2):
    best=None
    for rt in ('promptly','tbb','std-par','rayon'):
      v=d[(w,rt)]
      print(f"  w{w} {rt:9s} median {st.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) rss {rss[rt]}")
    peers=[st.median(d[(w,rt)]) for rt in ('tbb','std-par','rayon')]
    print(f"  w{w} promptly / best peer {st.median(d[(w,'promptly')])/min(peers):.2f}x")
