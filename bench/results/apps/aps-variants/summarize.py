# Medians [min-max] per label of the RESULT lines in a file: python3 summarize.py FILE resp_us_p99,hit_us_p99,...
import sys,json,statistics as st,collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    lab,js=line.split(' ',1); m=json.loads(js)['metrics']
    for k,v in m.items(): d[lab][k].append(v)
keys=sys.argv[2].split(',')
for lab,m in d.items():
    print(lab, len(m[keys[0]]), '  '.join(f"{k} {st.median(m[k]):.0f} [{min(m[k]):.0f}-{max(m[k]):.0f}]" for k in keys))
