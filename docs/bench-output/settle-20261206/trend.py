#!/usr/bin/env python3
"""Per placement, per contest: TPS per round (runs.csv), first vs last kept round, and the
OLS trend of log TPS over the kept rounds (and over all rounds), in % per round with its 95% CI."""
import csv, math, sys
from collections import defaultdict

def ols(xs, ys):
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    se = math.sqrt(res / (n - 2) / sxx)
    # t 0.975 quantiles for small df
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}.get(n - 2, 2.0 if n - 2 < 30 else 1.96)
    return b, se, t, n

def main():
  for d in sys.argv[1:]:
      rows = list(csv.DictReader(open(d if d.endswith(".csv") else f"{d}/runs.csv")))
      by = defaultdict(list)
      for r in rows:
          if r["status"] != "ok":
              continue
          by[(r["workload"], r["memory_limit"], r["placement"])].append(r)
      print(f"== {d}")
      for k in sorted(by):
          rs = sorted(by[k], key=lambda r: int(r["repetition"]))
          tps = [float(r["tps"]) for r in rs]
          kept = [r.get("kept", "true") == "true" for r in rs]
          kr = [(int(r["repetition"]), float(r["tps"])) for r, kk in zip(rs, kept) if kk]
          line = f"{k[0]:>9} {k[1]:>7} {k[2]:>12}: {len(rs)} rounds, {len(kr)} kept"
          if kr:
              line += f"; kept first {kr[0][1]:.0f} last {kr[-1][1]:.0f}"
              f = ols([x for x, _ in kr], [math.log(y) for _, y in kr])
              if f:
                  b, se, t, n = f
                  line += f"; trend {100*(math.exp(b)-1):+.2f}%/round [{100*(math.exp(b-t*se)-1):+.2f}, {100*(math.exp(b+t*se)-1):+.2f}]"
          fa = ols(list(range(1, len(tps) + 1)), [math.log(y) for y in tps])
          if fa:
              b, se, t, n = fa
              line += f"; all rounds {tps[0]:.0f}->{tps[-1]:.0f} trend {100*(math.exp(b)-1):+.2f}%/round"
          print(line)
          print("    tps:", " ".join(f"{x:.0f}{'' if kk else '*'}" for x, kk in zip(tps, kept)))
          def col(c, f=lambda r, v: v):
              out = []
              for r in rs:
                  try:
                      out.append(f(r, float(r[c])))
                  except (KeyError, ValueError):
                      out.append(float("nan"))
              return out
          print("    shared_buffers misses/tx:", " ".join(f"{x:.2f}" for x in col("blocks_read_per_tx")))
          print("    device reads/tx:", " ".join(f"{x:.3f}" for x in col("data_dev_read_iops", lambda r, v: v / float(r["tps"]))))
          print("    cpu idle %:", " ".join(f"{x:.0f}" for x in col("cpu_idle_pct")))

if __name__ == '__main__':
    main()
