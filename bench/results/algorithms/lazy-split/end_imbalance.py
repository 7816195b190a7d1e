import json,sys,statistics
d=json.load(open(sys.argv[1])); ev=d['traceEvents'] if isinstance(d,dict) else d
ev=[e for e in ev if e['ph'] in ('i','X')]; ev.sort(key=lambda e:e['ts'])
subs=[e['ts'] for e in ev if e['name']=='submit']+[1e18]
out=[]
for a,b in zip(subs,subs[1:]):
    last={}
    for e in ev:
        if a<=e['ts']<b and e['ph']=='X' and e['tid'] in (0,1):
            last[e['tid']]=max(last.get(e['tid'],0),e['ts']+e['dur'])
    if len(last)==2: out.append(abs(last[0]-last[1]))
print('end imbalance us: median %.0f max %.0f'%(statistics.median(out),max(out)))
