import json,sys
d=json.load(open(sys.argv[1])); ev=d['traceEvents'] if isinstance(d,dict) else d
ev=[e for e in ev if e['ph'] in ('i','X')]; ev.sort(key=lambda e:e['ts'])
res=[]; cur=None
for e in ev:
    if e['name']=='submit': cur=(e['ts'],{}); res.append(cur)
    elif cur and e['name'] in ('task',) and e['tid'] in (0,1) and e['tid'] not in cur[1]: cur[1][e['tid']]=e['ts']-cur[0]
print(' '.join('%d/%d'%tuple(sorted(r[1].values())) if len(r[1])==2 else 'x' for r in res))
