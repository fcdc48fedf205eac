#!/usr/bin/env python3
"""Per round of one workload's contest (default read-only), per placement: the data device's
writes per second and the TPS, from runs.csv files (or the committed <run>-runs.csv files)."""
import csv, sys
from collections import defaultdict
workload = "read-only"
args = sys.argv[1:]
if args and args[0].startswith("--workload="):
    workload = args.pop(0).split("=", 1)[1]
for d in args:
    path = d if d.endswith(".csv") else f"{d}/runs.csv"
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok" and r["workload"] == workload]
    by = defaultdict(list)
    for r in rows:
        by[r["placement"]].append(r)
    name = d.split('/')[-1].replace('results-', '').replace('-runs.csv', '')
    for p, rs in sorted(by.items()):
        rs.sort(key=lambda r: int(r["repetition"]))
        w = " ".join(f"{float(r['data_dev_write_iops']):.0f}" for r in rs)
        t = " ".join(f"{float(r['tps']):.0f}{'' if r.get('kept') == 'true' else '*'}" for r in rs)
        print(f"{name} {p}: data writes/s {w}\n{name} {p}: TPS ({'*'} = not kept) {t}")
