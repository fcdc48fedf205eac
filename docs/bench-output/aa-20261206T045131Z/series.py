# The A/A campaign's per-contender series of per-round log ratios (against placement a), read
# from each result set's runs.csv: lag-1 (bias-corrected), per-round sd, the plain paired t's
# z^2, after the fixed cut of 2 rounds (docs/benchmarks.md, "The estimator of issue 37, shipped").
# python3 series.py results/bench-precision/20261206T045131Z
import csv, glob, math, sys, statistics as st
D = sys.argv[1]
rows = []
for d in sorted(glob.glob(D + '/aa-t*-shipped')):
    try:
        open(d + '.wall')
    except FileNotFoundError:
        continue
    runs = list(csv.DictReader(open(d + '/runs.csv')))
    seg = {}
    by = {}
    for r in runs:
        if r['status'] != 'ok':
            continue
        by.setdefault(r['placement'], {})[int(r['repetition'])] = float(r['tps'])
    if 'a' not in by: continue
    base = by['a']
    for p in 'bcd':
        rs = sorted(set(base) & set(by[p]))
        x = [math.log(by[p][k] / base[k]) for k in rs]
        k = x[2:]  # fixed cut of 2
        n = len(k)
        m = sum(k) / n
        den = sum((v - m) ** 2 for v in k)
        lag = sum((k[i] - m) * (k[i - 1] - m) for i in range(1, n)) / den
        corr = (n * lag + 1) / (n - 3)
        sd = st.stdev(k)
        # trend t
        t = list(range(n)); mt = sum(t) / n
        stt = sum((a - mt) ** 2 for a in t)
        slope = sum((a - mt) * (b - m) for a, b in zip(t, k)) / stt
        rows.append((d.split('/')[-1], p, n, lag, corr, sd, slope))
for r in rows:
    print('%s %s n=%d lag1=%+.2f corrected=%+.2f sd=%.3f slope=%+.4f' % r)
c = [r[4] for r in rows]
print('series', len(c), 'mean corrected lag1 %.3f (se %.3f)' % (sum(c) / len(c), st.stdev(c) / math.sqrt(len(c))), 'median sd %.3f' % st.median([r[5] for r in rows]))
# heavy tails: pooled standardized residuals' kurtosis; plain-t z^2 (rho 0)
zs=[]; k4=[]
for d in sorted(glob.glob(D + '/aa-t*-shipped')):
    try: open(d + '.wall')
    except FileNotFoundError: continue
    runs = list(csv.DictReader(open(d + '/runs.csv')))
    by = {}
    for r in runs:
        if r['status'] == 'ok': by.setdefault(r['placement'], {})[int(r['repetition'])] = float(r['tps'])
    if 'a' not in by: continue
    for p in 'bcd':
        rs = sorted(set(by['a']) & set(by[p]))
        k = [math.log(by[p][q] / by['a'][q]) for q in rs][2:]
        n=len(k); m=sum(k)/n; s=st.stdev(k)
        zs.append((m/(s/math.sqrt(n)))**2)
        k4 += [((v-m)/s)**4 for v in k]
print('plain-t z^2 mean %.2f (t quantile not applied), pooled 4th moment %.2f (normal 3)' % (sum(zs)/len(zs), sum(k4)/len(k4)))
