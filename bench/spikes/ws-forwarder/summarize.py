# Summarize result files: per variant min-max msgs/CPU-s, per-round ratio to wsecho, user share
import json, sys, collections
for fn in sys.argv[1:]:
    rows = [l.split(' ', 1) for l in open(fn) if l.strip()]
    rounds = []; cur = {}
    for v, j in rows:
        d = json.loads(j)
        if v in cur: rounds.append(cur); cur = {}
        cur[v] = d
    rounds.append(cur)
    print(f"== {fn} ({len(rounds)} rounds)")
    for v in rounds[0]:
        vals = [r[v]['msgs_per_cpu_s'] for r in rounds if v in r]
        rat = [r[v]['msgs_per_cpu_s'] / r['wsecho']['msgs_per_cpu_s'] for r in rounds if v in r and 'wsecho' in r]
        u = sum(r[v]['user'] for r in rounds if v in r); c = sum(r[v]['cpu'] for r in rounds if v in r)
        w = [r[v]['wall'] for r in rounds if v in r]
        print(f"  {v:15s} {min(vals)/1e3:6.0f}k - {max(vals)/1e3:4.0f}k  ratio {min(rat):.2f}-{max(rat):.2f}  user {100*u/c:4.1f}% sys {100-100*u/c:4.1f}%  wall {min(w):.2f}-{max(w):.2f}s")
