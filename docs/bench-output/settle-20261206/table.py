#!/usr/bin/env python3
"""Reads runs.csv of result directories (or the committed <run>-runs.csv files). One row per (run, workload, placement): rounds, TPS round 1 / first kept / last, trend over
kept rounds (%/round, 95% CI), device reads per tx (rounds 1-2 vs last 5), data writes/s, server CPU ms per tx and the run's CPU % (same)."""
import csv, math, sys
from collections import defaultdict
sys.path.insert(0, __file__.rsplit('/', 1)[0])
from trend import ols
for d in sys.argv[1:]:
    path = d if d.endswith(".csv") else f"{d}/runs.csv"
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
    by = defaultdict(list)
    for r in rows:
        by[(r["workload"], r["placement"])].append(r)
    for (w, p), rs in sorted(by.items()):
        rs.sort(key=lambda r: int(r["repetition"]))
        tps = [float(r["tps"]) for r in rs]
        kr = [(int(r["repetition"]), float(r["tps"])) for r in rs if r.get("kept") == "true"]
        b, se, t, n = ols([x for x, _ in kr], [math.log(y) for _, y in kr])
        pct = lambda v: 100 * (math.exp(v) - 1)
        rd = [float(r["data_dev_read_iops"]) / float(r["tps"]) for r in rs]
        wr = [float(r["data_dev_write_iops"]) for r in rs]
        cpu = [float(r["server_cpu_ms_per_tx"]) for r in rs]
        share = [float(r["run_cpu_pct"]) for r in rs]
        m = lambda xs: sum(xs) / len(xs)
        print(f"| {d.split('/')[-1].replace('results-', '').replace('-runs.csv', '')} | {w} | {p} | {len(rs)} ({len(kr)} kept) | {tps[0]:,.0f} / {kr[0][1]:,.0f} / {tps[-1]:,.0f} "
              f"| {pct(b):+.1f} [{pct(b - t * se):+.1f}, {pct(b + t * se):+.1f}] | {m(rd[:2]):.2f} -> {m(rd[-5:]):.2f} | {m(wr[:2]):,.0f} -> {m(wr[-5:]):,.0f} | {m(cpu[:2]):.3f} -> {m(cpu[-5:]):.3f} | {m(share[:2]):.0f} -> {m(share[-5:]):.0f} |")
