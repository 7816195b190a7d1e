# Medians [min-max] per label of the RESULT lines in a file (a label, then the driver's RESULT
# JSON): python3 summarize.py FILE resp_us_p99,hit_us_p99,...  A metric a label's runs lack: "-".
import collections
import json
import statistics as st
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    label, js = line.split(' ', 1)
    for k, v in json.loads(js)['metrics'].items():
        runs[label][k].append(v)
keys = sys.argv[2].split(',')


def cell(values):
    return f"{st.median(values):.0f} [{min(values):.0f}-{max(values):.0f}]" if values else "-"


for label, m in runs.items():
    print(label, max(len(v) for v in m.values()), '  '.join(f"{k} {cell(m.get(k, []))}" for k in keys))
