#!/usr/bin/env python3
"""Is there a server-level offset between identical PostgreSQL servers that the slices design's
paired rounds cannot cancel? (issue 37, "the null cell and the control never a real change")

Four identical servers (PostgreSQL 15, one XFS on a loop device with direct I/O each, the same
data set copied onto each: pgbench scale 40, the main job's emulated settings), measured as the
main job's read-only unlimited contest is: rounds of one 2 s pgbench select-only slice per server
(8 clients, 2 threads), in a random order per round. The servers live `--lives` lives: between
two lives every server is restarted (new postmaster, new shared memory) and prewarmed; within a
life, 2 warm-up rounds, then `--rounds` kept rounds split in two halves.

If a server's speed relative to the others is fixed for its life (memory layout, scheduling),
the per-life mean log ratios of servers 1-3 to server 0 vary between lives by more than their
within-life standard errors say; the two halves of one life (no restart between them) do not.
The script prints both heterogeneities (F statistics with the within-life and within-half
variance pooled over lives, 1 when nothing is fixed per life or per half) and the offset's
standard deviation estimated from them.

Run as root on an idle machine; it makes and removes its own loop devices, below --work.
    python3 docs/bench-output/server-life.py --lives 10 --rounds 10 --out docs/bench-output/server-life
"""
import argparse, json, math, os, random, re, shutil, statistics, subprocess, sys, time

BIN = "/usr/lib/postgresql/15/bin"
SETTINGS = {
    "shared_buffers": "64MB", "work_mem": "4MB", "max_wal_size": "1GB", "min_wal_size": "80MB",
    "huge_pages": "try", "listen_addresses": "''", "shared_preload_libraries": "''",
    "autovacuum": "on", "fsync": "on",
}


def run(args, user=None, check=True, capture=True):
    if user:
        args = ["runuser", "-u", user, "--"] + args
    p = subprocess.run(args, capture_output=capture, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{args}: {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


class Lab:
    def __init__(self, work, n):
        self.work, self.n, self.loops, self.mounts = work, n, [], []
        self.sock = os.path.join(work, "sock")

    def make(self):
        os.makedirs(self.sock, exist_ok=True)
        shutil.chown(self.sock, "postgres", "postgres")
        for i in range(self.n):
            img, mnt = os.path.join(self.work, f"d{i}.img"), os.path.join(self.work, f"m{i}")
            run(["truncate", "-s", "2G", img])
            loop = run(["losetup", "--find", "--show", "--direct-io=on", img]).strip()
            self.loops.append((loop, img))
            run(["mkfs.xfs", "-q", "-f", loop])
            os.makedirs(mnt, exist_ok=True)
            run(["mount", "-o", "noatime", loop, mnt])
            self.mounts.append(mnt)
            shutil.chown(mnt, "postgres", "postgres")

    def pgdata(self, i):
        return os.path.join(self.mounts[i], "pg")

    def port(self, i):
        return 55400 + i

    def start(self, i):
        opts = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
        opts += f" -p {self.port(i)} -k {self.sock}"
        run([f"{BIN}/pg_ctl", "-D", self.pgdata(i), "-w", "-l", self.pgdata(i) + ".log", "-o", opts, "start"],
            user="postgres")

    def stop(self, i):
        run([f"{BIN}/pg_ctl", "-D", self.pgdata(i), "-w", "-m", "fast", "stop"], user="postgres", check=False)

    def psql(self, i, sql):
        return run([f"{BIN}/psql", "-h", self.sock, "-p", str(self.port(i)), "-d", "postgres", "-XAtqc", sql],
                   user="postgres")

    def build(self, scale):
        run([f"{BIN}/initdb", "-D", self.pgdata(0), "-A", "trust", "--no-sync"], user="postgres")
        self.start(0)
        run([f"{BIN}/pgbench", "-h", self.sock, "-p", str(self.port(0)), "-i", "-q", "-s", str(scale), "postgres"],
            user="postgres")
        for sql in ("CREATE EXTENSION pg_prewarm", "VACUUM ANALYZE", "CHECKPOINT"):
            self.psql(0, sql)
        self.stop(0)
        for i in range(1, self.n):
            run(["cp", "-a", self.pgdata(0), self.pgdata(i)])

    def prewarm(self, i):
        self.psql(i, "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                     "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')")

    def slice(self, i, seconds, clients, threads):
        out = run([f"{BIN}/pgbench", "-h", self.sock, "-p", str(self.port(i)), "-S", "-c", str(clients),
                   "-j", str(threads), "-T", str(seconds), "postgres"], user="postgres")
        m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out)
        return float(m.group(1))

    def teardown(self):
        for i in range(len(self.mounts)):
            if os.path.isdir(self.pgdata(i)):
                self.stop(i)
        for m in self.mounts:
            run(["umount", m], check=False)
        for loop, img in self.loops:
            run(["losetup", "-d", loop], check=False)
            os.remove(img)


def f_sf(f, d1, d2):
    """P(F(d1, d2) > f), by the regularised incomplete beta function (continued fraction)."""
    if f <= 0:
        return 1.0
    x = d2 / (d2 + d1 * f)
    return betainc(d2 / 2, d1 / 2, x)


def betainc(a, b, x):
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x > (a + 1) / (a + b + 2):
        return 1.0 - betainc(b, a, 1 - x)
    # Lentz's continued fraction
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
    return math.exp(lbeta) * h / a


def analyse(rounds, n):
    """rounds: list of (life, half, [tps per server]). For each server k >= 1, the per-round
    log ratio to server 0; within-life variance pooled over lives (L (R - 1) degrees of freedom).
    Between lives (each a restart of every server): F = variance of the life means / (s^2 / R),
    F(L - 1, L (R - 1)) when there is no per-life offset. Between the halves of a life (no
    restart): F = mean of (half mean a - half mean b)^2 / (4 s_h^2 / R), s_h^2 the variance within
    a half pooled, F(L, L (R - 2))."""
    lives = sorted({r[0] for r in rounds})
    L = len(lives)
    out = {}
    f_lives, f_halves, offsets = [], [], []
    for k in range(1, n):
        x = {life: [math.log(t[k] / t[0]) for (l, h, t) in rounds if l == life] for life in lives}
        R = min(len(v) for v in x.values())
        s2 = statistics.mean(statistics.variance(v) for v in x.values())
        means = [statistics.mean(v) for v in x.values()]
        var_between = statistics.variance(means)
        f_l = var_between / (s2 / R)
        d2, within_half = [], []
        for life in lives:
            a = [math.log(t[k] / t[0]) for (l, h, t) in rounds if l == life and h == 0]
            b = [math.log(t[k] / t[0]) for (l, h, t) in rounds if l == life and h == 1]
            d2.append((statistics.mean(a) - statistics.mean(b)) ** 2)
            within_half += [statistics.variance(a), statistics.variance(b)]
        # The spread within a half (about its own mean), so that the half-to-half difference is
        # not in the denominator too: L (R - 2) degrees of freedom.
        s2_half = statistics.mean(within_half)
        f_h = statistics.mean(d2) / (s2_half * (1 / (R // 2) + 1 / (R - R // 2)))
        f_lives.append(f_l)
        f_halves.append(f_h)
        offsets.append(max(var_between - s2 / R, 0.0))
        out[f"server{k}"] = {
            "per_life_change_pct": [round(100 * (math.exp(m) - 1), 2) for m in means],
            "within_round_sd_pct": round(100 * math.sqrt(s2), 2),
            "se_of_a_life_mean_pct": round(100 * math.sqrt(s2 / R), 2),
            "between_life_sd_pct": round(100 * math.sqrt(var_between), 2),
            "F_between_lives": round(f_l, 2), "p_between_lives": round(f_sf(f_l, L - 1, L * (R - 1)), 4),
            "F_between_halves": round(f_h, 2), "p_between_halves": round(f_sf(f_h, L, L * (R - 2)), 4),
        }
    out["lives"] = L
    out["mean_F_between_lives"] = round(statistics.mean(f_lives), 2)
    out["mean_F_between_halves"] = round(statistics.mean(f_halves), 2)
    # The variance of a ratio's offset (two servers' offsets), pooled over the three contrasts
    # (they share server 0, so they are not independent); each server's own has half of it.
    d = statistics.mean(offsets)
    out["offset_sd_of_a_ratio_pct"] = round(100 * math.sqrt(d), 2)
    out["offset_sd_per_server_pct"] = round(100 * math.sqrt(d / 2), 2)
    return out


def from_csv(path, n):
    rows = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            v = dict(zip(head, line.strip().split(",")))
            rows.append((int(v["life"]), int(v["half"]), [float(v[f"tps{i}"]) for i in range(n)]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lives", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--scale", type=int, default=40)
    ap.add_argument("--slice", type=int, default=2)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default="/var/tmp/server-life")
    ap.add_argument("--out", required=True)
    ap.add_argument("--analyse", help="only analyse this rounds.csv")
    a = ap.parse_args()
    if a.analyse:
        print(json.dumps(analyse(from_csv(a.analyse, a.servers), a.servers), indent=1))
        return
    rng = random.Random(a.seed)
    os.makedirs(a.work, exist_ok=False)
    os.makedirs(a.out, exist_ok=True)
    lab = Lab(a.work, a.servers)
    rounds = []
    log = open(os.path.join(a.out, "rounds.csv"), "w")
    log.write("life,half,round,order," + ",".join(f"tps{i}" for i in range(a.servers)) + ",load1\n")
    t0 = time.time()
    try:
        lab.make()
        print(f"[{time.time()-t0:6.0f}s] building the data set (scale {a.scale}) and {a.servers} copies", flush=True)
        lab.build(a.scale)
        for life in range(a.lives):
            order = list(range(a.servers))
            rng.shuffle(order)
            for i in order:
                lab.stop(i)
            rng.shuffle(order)
            for i in order:
                lab.start(i)
                lab.prewarm(i)
            for r in range(-2, a.rounds):
                order = list(range(a.servers))
                rng.shuffle(order)
                tps = [0.0] * a.servers
                for i in order:
                    tps[i] = lab.slice(i, a.slice, a.clients, a.threads)
                load = os.getloadavg()[0]
                half = 0 if r < a.rounds // 2 else 1
                if r >= 0:
                    rounds.append((life, half, tps))
                    log.write(f"{life},{half},{r},{'-'.join(map(str, order))}," + ",".join(f"{t:.1f}" for t in tps)
                              + f",{load:.2f}\n")
                    log.flush()
                print(f"[{time.time()-t0:6.0f}s] life {life} round {r:2d}: " + " ".join(f"{t:8.0f}" for t in tps)
                      + f"  load {load:.1f}", flush=True)
    finally:
        log.close()
        lab.teardown()
        shutil.rmtree(a.work, ignore_errors=True)
    res = analyse(rounds, a.servers)
    res["args"] = vars(a)
    res["seconds"] = round(time.time() - t0)
    json.dump(res, open(os.path.join(a.out, "analysis.json"), "w"), indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
