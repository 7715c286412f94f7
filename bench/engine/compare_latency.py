#!/usr/bin/env python3
# Alternates fio and iofleet-agent run on the same fio arguments (N runs each,
# default 3; env N) and prints median IOPS and clat p50/p99/mean for both, and
# the ratios. Run from the repository root: python3 bench/engine/compare_latency.py ARGS...
import json,subprocess,sys,statistics
args=sys.argv[1:]
def run(cmd):
    out=subprocess.run(cmd,capture_output=True,text=True).stdout
    d=json.loads(out[out.find('{'):])
    r=d['jobs'][0]['read']
    p=r['clat_ns'].get('percentile',{})
    return r['iops'], p.get('50.000000',0), p.get('99.000000',0), r['clat_ns']['mean']
res={'fio':[], 'ours':[]}
for i in range(int(__import__("os").environ.get("N","3"))):
    res['fio'].append(run(['fio']+args+['--output-format=json']))
    res['ours'].append(run(['build/bin/iofleet-agent','run']+args+['--output-format=json']))
for k,v in res.items():
    print(k, 'iops=%.0f p50=%d p99=%d mean=%.0f' % tuple(statistics.median(x[i] for x in v) for i in range(4)))
f=[statistics.median(x[i] for x in res['fio']) for i in range(4)]
o=[statistics.median(x[i] for x in res['ours']) for i in range(4)]
print('ratio iops %.3f p50 %.3f p99 %.3f mean %.3f' % tuple(o[i]/f[i] for i in range(4)))
