# The fresh-clone runs' table (docs/benchmarks.md, "The main job twice from a fresh clone, settle
# and prewarm on"): python3 mainjob-table.py A-summary.csv B-summary.csv (or result directories).
import csv, math, os, sys, statistics as st
runs = sys.argv[1:]
def hw(r):
    lo, hi = float(r['tps_delta_ci95_low_pct']), float(r['tps_delta_ci95_high_pct'])
    return (math.log(1+hi/100) - math.log(1+lo/100))/2
data = {}
for i, d in enumerate(runs):
    rows = [r for r in csv.DictReader(open(os.path.join(d, 'summary.csv') if os.path.isdir(d) else d)) if r['tps_delta_ci95_low_pct']]
    hws = [hw(r) for r in rows]
    print(f"run {i+1}: {len(rows)} changes; half-width (log, as %) median ±{(math.exp(st.median(hws))-1)*100:.1f}%, widest ±{(math.exp(max(hws))-1)*100:.1f}%, narrowest ±{(math.exp(min(hws))-1)*100:.1f}%")
    by = {}
    for r in rows:
        key = (r['workload'], r['memory_limit'])
        by.setdefault(key, []).append((r['placement'], hw(r), r['steady'], r['kept_rounds'], r['rounds_needed']))
    for k, v in by.items():
        print("   ", k, "widest ±%.1f%%" % ((math.exp(max(x[1] for x in v))-1)*100), "steady", v[0][2], "kept", v[0][3], "needed", v[0][4])
    for r in rows:
        h = ''
        if r.get('tps_delta_holm_low_pct'):
            h = f" after Holm [{float(r['tps_delta_holm_low_pct']):+.1f}, {float(r['tps_delta_holm_high_pct']):+.1f}]"
        data.setdefault((r['workload'], r['memory_limit'], r['placement']), []).append(
            (f"{float(r['tps_delta_pct']):+.1f}% [{float(r['tps_delta_ci95_low_pct']):+.1f}, {float(r['tps_delta_ci95_high_pct']):+.1f}]{h} {r['tps_verdict']}", float(r['tps_delta_ci95_low_pct']), float(r['tps_delta_ci95_high_pct'])))
print("| cell | " + " | ".join(f"run {i+1}" for i in range(len(runs))) + " | intervals overlap |")
print("|---|" + "---|"*len(runs) + "---|")
for k, v in data.items():
    ov = max(x[1] for x in v) <= min(x[2] for x in v)
    print(f"| {k[0]} {k[1]}, {k[2]} | " + " | ".join(x[0] for x in v) + f" | {'yes' if ov else 'no'} |")
