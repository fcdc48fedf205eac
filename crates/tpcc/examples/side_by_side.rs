//! HammerDB 4.12 next to pgtier's `hammerdb-faithful` and `hammerdb` modes on one private
//! PostgreSQL server, in alternating runs, for the table in docs/benchmarks.md (issue 18).
//! Needs root (the server runs as the OS user postgres).
//!
//! ```text
//! cargo build --release -p tpcc --example side_by_side
//! HAMMERDB_HOME=/path/to/HammerDB-4.12 TCLLIBPATH=/path/to/pgtcl \
//!     ./target/release/examples/side_by_side --warehouses 4 --build-workers 2 --vus 1,4,16 \
//!     --rounds 4 --ramp 30 --duration 60 --out side_by_side.csv
//! ```
//!
//! HammerDB is not part of pgtier: the example runs it as an external command when
//! `HAMMERDB_HOME` names a HammerDB directory (its `hammerdbcli` is run with `tclsh8.6`, or
//! `HAMMERDB_TCLSH`; its `config/database.xml` must name a Pgtcl that loads, and `TCLLIBPATH`
//! is passed on). Without `HAMMERDB_HOME` only pgtier's two modes run, and it says so.
//!
//! Each round: the three databases are dropped and loaded again (HammerDB's `buildschema`
//! with `pg_num_vu` = build workers; pgtier's loader with as many workers, once per mode), in
//! an order that changes every round; then for each virtual-user count the three tools run one
//! after the other in that order (the six orders of three in turn, so each tool starts rounds
//! and follows each other tool). Before every run: a CHECKPOINT and a wait (at most `--settle`
//! seconds) until no autovacuum worker is busy and no table of the three databases is due for
//! autovacuum, so no run pays for background work another run or a load left behind. HammerDB's runs use `pg_rampup` = ramp / 60 and `pg_duration` =
//! duration / 60 minutes (the default timed driver, functions, no keying or thinking); its
//! NOPM and TPM are the ones it prints; its client CPU is the `tclsh` process's and the
//! server's CPU is the postmaster's tree's, both sampled when HammerDB prints "Rampup
//! complete" and "Test complete". pgtier's figures come from its `DriveReport`. Around every
//! run the example also reads the server's work counters (the run database's row of
//! pg_stat_database, pg_stat_wal, sum(d_next_o_id)) and prints them per new-order: what the
//! server did for each order, which the machine's load does not change; with `--out x.csv`
//! the per-relation counters' changes over each run go to `x.relations.csv`.
//!
//! For finding where server work comes from: `--tools hdb,faithful` runs only those tools (by
//! database name: hdb, faithful, pgtier); `--statements` loads pg_stat_statements with
//! `track = all` (statements inside the PL/pgSQL functions counted), resets it before each run
//! and writes its entries after it to `x.statements.csv`; `--explain-slow MS` loads
//! auto_explain for statements slower than MS (nested statements, ANALYZE without timing,
//! buffers), marks each run's start in the server log, copies that log to `x.server.log` at
//! the end and writes the stock-level statement's custom and generic plans after each run to
//! `x.plans.txt`; `--set name=value` (repeatable) adds a server setting.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use tpcc::cpu::{ServerCpu, pid_cpu_seconds};
use tpcc::{ConnectSpec, Mode, TpccConfig, create_schema_and_load, run};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tool {
    HammerDb,
    Faithful,
    PgtierHammerDb,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::HammerDb => "HammerDB 4.12",
            Tool::Faithful => "pgtier hammerdb-faithful",
            Tool::PgtierHammerDb => "pgtier hammerdb",
        }
    }

    fn database(self) -> &'static str {
        match self {
            Tool::HammerDb => "hdb",
            Tool::Faithful => "faithful",
            Tool::PgtierHammerDb => "pgtier",
        }
    }

    fn mode(self) -> Mode {
        match self {
            Tool::Faithful => Mode::HammerDbFaithful,
            _ => Mode::HammerDb,
        }
    }
}

struct Args {
    warehouses: u32,
    build_workers: u32,
    vus: Vec<u32>,
    rounds: u32,
    ramp: u64,
    duration: u64,
    settle: u64,
    out: Option<PathBuf>,
    /// `--tools`: the tools to run (database names: hdb, faithful, pgtier); all by default.
    only: Option<Vec<String>>,
    /// `--statements`: pg_stat_statements with track = all, reset before each run and dumped
    /// after it to `x.statements.csv`.
    statements: bool,
    /// `--explain-slow MS`: auto_explain (nested statements, analyze without timing, buffers)
    /// for statements slower than MS; the server log is copied to `x.server.log` at the end.
    explain_slow: Option<u64>,
    /// `--set name=value` (repeatable): more server settings, e.g. plan_cache_mode.
    extra_settings: Vec<(String, String)>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        warehouses: 4,
        build_workers: 2,
        vus: vec![1, 4, 16],
        rounds: 3,
        ramp: 30,
        duration: 60,
        settle: 180,
        out: None,
        only: None,
        statements: false,
        explain_slow: None,
        extra_settings: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--warehouses" => a.warehouses = num(value()?)? as u32,
            "--build-workers" => a.build_workers = num(value()?)? as u32,
            "--vus" => {
                a.vus = value()?
                    .split(',')
                    .map(|v| v.parse::<u32>().map_err(|e| format!("--vus: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--rounds" => a.rounds = num(value()?)? as u32,
            "--ramp" => a.ramp = num(value()?)?,
            "--duration" => a.duration = num(value()?)?,
            "--settle" => a.settle = num(value()?)?,
            "--out" => a.out = Some(PathBuf::from(value()?)),
            "--tools" => {
                let names: Vec<String> = value()?.split(',').map(str::to_string).collect();
                if let Some(n) = names.iter().find(|n| !["hdb", "faithful", "pgtier"].contains(&n.as_str())) {
                    return Err(format!("--tools: unknown tool {n} (hdb, faithful, pgtier)"));
                }
                a.only = Some(names);
            }
            "--statements" => a.statements = true,
            "--explain-slow" => a.explain_slow = Some(num(value()?)?),
            "--set" => {
                let v = value()?;
                let (k, v) = v.split_once('=').ok_or(format!("--set {v}: expected name=value"))?;
                a.extra_settings.push((k.to_string(), v.to_string()));
            }
            f => return Err(format!("unknown flag {f}")),
        }
    }
    if (a.statements || a.explain_slow.is_some()) && a.out.is_none() {
        return Err("--statements and --explain-slow write next to --out".into());
    }
    if a.duration < 60 || !a.duration.is_multiple_of(60) || !a.ramp.is_multiple_of(6) {
        return Err("HammerDB needs --duration in whole minutes and --ramp in multiples of 6 s".into());
    }
    Ok(a)
}

/// The server's work counters for one database: what the server did, whatever the machine's
/// load (pg_stat_database of the run's database, pg_stat_wal, and the new-order counter).
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    transactions: f64,
    tup_returned: f64,
    tup_fetched: f64,
    tup_inserted: f64,
    tup_updated: f64,
    tup_deleted: f64,
    blks_hit: f64,
    blks_read: f64,
    wal_records: f64,
    wal_bytes: f64,
    deadlocks: f64,
    new_orders: f64,
}

impl Work {
    const FIELDS: [&'static str; 10] = [
        "transactions",
        "tuples returned",
        "tuples fetched",
        "tuples inserted",
        "tuples updated",
        "tuples deleted",
        "buffer hits",
        "buffer reads",
        "WAL records",
        "WAL bytes",
    ];

    fn values(&self) -> [f64; 10] {
        [
            self.transactions,
            self.tup_returned,
            self.tup_fetched,
            self.tup_inserted,
            self.tup_updated,
            self.tup_deleted,
            self.blks_hit,
            self.blks_read,
            self.wal_records,
            self.wal_bytes,
        ]
    }

    async fn read(conn: &ConnectSpec) -> Work {
        let c = conn.connect("side-by-side-counters").await.unwrap();
        let r = c
            .query_one(
                "SELECT (d.xact_commit + d.xact_rollback)::float8, d.tup_returned::float8, d.tup_fetched::float8, \
                 d.tup_inserted::float8, d.tup_updated::float8, d.tup_deleted::float8, d.blks_hit::float8, \
                 d.blks_read::float8, w.wal_records::float8, w.wal_bytes::float8, d.deadlocks::float8, \
                 (SELECT sum(d_next_o_id) FROM district)::float8 \
                 FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()",
                &[],
            )
            .await
            .unwrap();
        let g = |i| r.get::<_, f64>(i);
        Work {
            transactions: g(0),
            tup_returned: g(1),
            tup_fetched: g(2),
            tup_inserted: g(3),
            tup_updated: g(4),
            tup_deleted: g(5),
            blks_hit: g(6),
            blks_read: g(7),
            wal_records: g(8),
            wal_bytes: g(9),
            deadlocks: g(10),
            new_orders: g(11),
        }
    }

    /// What happened between `self` and `later`.
    fn until(&self, later: &Work) -> Work {
        Work {
            transactions: later.transactions - self.transactions,
            tup_returned: later.tup_returned - self.tup_returned,
            tup_fetched: later.tup_fetched - self.tup_fetched,
            tup_inserted: later.tup_inserted - self.tup_inserted,
            tup_updated: later.tup_updated - self.tup_updated,
            tup_deleted: later.tup_deleted - self.tup_deleted,
            blks_hit: later.blks_hit - self.blks_hit,
            blks_read: later.blks_read - self.blks_read,
            wal_records: later.wal_records - self.wal_records,
            wal_bytes: later.wal_bytes - self.wal_bytes,
            deadlocks: later.deadlocks - self.deadlocks,
            new_orders: later.new_orders - self.new_orders,
        }
    }
}

/// Per-relation counters of one database (pg_stat_user_tables and pg_stat_user_indexes), keyed
/// by `table` or `table.index` and counter name: where the server's work went.
async fn relation_counters(conn: &ConnectSpec) -> BTreeMap<(String, &'static str), f64> {
    let c = conn.connect("side-by-side-counters").await.unwrap();
    let mut m = BTreeMap::new();
    let tables = c
        .query(
            "SELECT relname::text, seq_scan::float8, seq_tup_read::float8, coalesce(idx_scan, 0)::float8, \
             coalesce(idx_tup_fetch, 0)::float8, n_tup_ins::float8, n_tup_upd::float8, n_tup_hot_upd::float8, \
             n_tup_del::float8 FROM pg_stat_user_tables",
            &[],
        )
        .await
        .unwrap();
    const T: [&str; 8] = [
        "seq_scan",
        "seq_tup_read",
        "idx_scan",
        "idx_tup_fetch",
        "n_tup_ins",
        "n_tup_upd",
        "n_tup_hot_upd",
        "n_tup_del",
    ];
    for r in tables {
        for (i, name) in T.iter().enumerate() {
            m.insert((r.get::<_, String>(0), *name), r.get::<_, f64>(i + 1));
        }
    }
    let indexes = c
        .query(
            "SELECT relname || '.' || indexrelname, idx_scan::float8, idx_tup_read::float8, idx_tup_fetch::float8 \
             FROM pg_stat_user_indexes",
            &[],
        )
        .await
        .unwrap();
    const I: [&str; 3] = ["idx_scan", "idx_tup_read", "idx_tup_fetch"];
    for r in indexes {
        for (i, name) in I.iter().enumerate() {
            m.insert((r.get::<_, String>(0), *name), r.get::<_, f64>(i + 1));
        }
    }
    m
}

/// One measured run.
#[derive(Clone, Debug)]
struct RunResult {
    round: u32,
    vus: u32,
    tool: Tool,
    nopm: f64,
    tpm: f64,
    client_cpu: f64,
    server_cpu: f64,
    errors: u64,
    load_average: String,
    /// Server work over the whole run (ramp-up, measured interval and stop).
    work: Work,
}

/// HammerDB's installation and how to start it.
struct HammerDb {
    home: PathBuf,
    tclsh: String,
    work: PathBuf,
}

impl HammerDb {
    fn from_env(work: &Path) -> Option<HammerDb> {
        let home = PathBuf::from(std::env::var_os("HAMMERDB_HOME")?);
        Some(HammerDb {
            home,
            tclsh: std::env::var("HAMMERDB_TCLSH").unwrap_or_else(|_| "tclsh8.6".into()),
            work: work.to_path_buf(),
        })
    }

    fn settings(conn: &ConnectSpec) -> String {
        format!(
            "dbset db pg\ndbset bm TPC-C\n\
             diset connection pg_host {}\ndiset connection pg_port {}\ndiset connection pg_sslmode disable\n\
             diset tpcc pg_superuser {u}\ndiset tpcc pg_superuserpass unused\ndiset tpcc pg_defaultdbase postgres\n\
             diset tpcc pg_user {u}\ndiset tpcc pg_pass unused\ndiset tpcc pg_dbase {}\n\
             diset tpcc pg_storedprocs false\n",
            conn.socket_dir.display(),
            conn.port,
            Tool::HammerDb.database(),
            u = conn.user,
        )
    }

    /// Runs `script` with hammerdbcli (a fresh TMP so HammerDB's cached settings never leak
    /// between runs), handing each output line to `on_line` with the child's pid.
    fn run_script(
        &self,
        name: &str,
        script: &str,
        limit: Duration,
        on_line: &mut dyn FnMut(&str, u32),
    ) -> Result<(), String> {
        let dir = self.work.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tmp")).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("script.tcl");
        std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut log = std::fs::File::create(dir.join("output.log")).map_err(|e| e.to_string())?;
        let mut child = Command::new(&self.tclsh)
            .arg("hammerdbcli")
            .arg("auto")
            .arg(&path)
            .current_dir(&self.home)
            .env("TMP", dir.join("tmp"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("start {} hammerdbcli in {}: {e}", self.tclsh, self.home.display()))?;
        let pid = child.id();
        let started = Instant::now();
        let stdout = child.stdout.take().expect("piped");
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(log, "{line}");
            on_line(&line, pid);
            if started.elapsed() > limit {
                let _ = child.kill();
                return Err(format!("HammerDB's {name} took more than {limit:?}; killed"));
            }
        }
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("HammerDB's {name} exited with {status}"));
        }
        Ok(())
    }

    /// `buildschema` with `build_workers` virtual users; returns its wall time.
    fn build(&self, conn: &ConnectSpec, warehouses: u32, build_workers: u32) -> Result<f64, String> {
        let script = format!(
            "{}diset tpcc pg_count_ware {warehouses}\ndiset tpcc pg_num_vu {build_workers}\nbuildschema\n",
            HammerDb::settings(conn)
        );
        let start = Instant::now();
        let mut complete = false;
        self.run_script("build", &script, Duration::from_secs(1800), &mut |line, _| {
            complete |= line.contains("SCHEMA COMPLETE");
        })?;
        if !complete {
            return Err("HammerDB's build did not report SCHEMA COMPLETE (see its output.log)".into());
        }
        Ok(start.elapsed().as_secs_f64())
    }

    /// One timed run; NOPM and TPM as HammerDB prints them, CPU between its two counts.
    fn drive(
        &self,
        conn: &ConnectSpec,
        server: &ServerCpu,
        vus: u32,
        ramp: u64,
        duration: u64,
    ) -> Result<(f64, f64, f64, f64, u64), String> {
        let script = format!(
            "{}diset tpcc pg_driver timed\ndiset tpcc pg_rampup {}\ndiset tpcc pg_duration {}\n\
             diset tpcc pg_raiseerror false\ndiset tpcc pg_keyandthink false\ndiset tpcc pg_vacuum false\n\
             diset tpcc pg_allwarehouse false\ndiset tpcc pg_timeprofile false\n\
             loadscript\nvuset vu {vus}\nvucreate\nvurun\n_runtimer {}\nvudestroy\n",
            HammerDb::settings(conn),
            ramp as f64 / 60.0,
            duration / 60,
            ramp + duration + 120,
        );
        let (mut begin, mut end) = (None, None);
        let mut result = None;
        let mut errors = 0;
        let sample = |pid: u32| (pid_cpu_seconds(pid), server.sample());
        self.run_script(
            &format!("run-{vus}"),
            &script,
            Duration::from_secs(ramp + duration + 300),
            &mut |line, pid| {
                if line.contains("Rampup complete, Taking start Transaction Count") {
                    begin = Some(sample(pid));
                } else if line.contains("Test complete, Taking end Transaction Count") {
                    end = Some(sample(pid));
                } else if let Some(rest) = line.split("System achieved ").nth(1) {
                    let words: Vec<&str> = rest.split_whitespace().collect();
                    if let (Some(n), Some(t)) = (words.first(), words.get(3)) {
                        result = Some((n.parse::<f64>().unwrap_or(f64::NAN), t.parse::<f64>().unwrap_or(f64::NAN)));
                    }
                } else if line.contains("Error") {
                    errors += 1;
                }
            },
        )?;
        let (Some((Some(c0), Some(s0))), Some((Some(c1), Some(s1))), Some((nopm, tpm))) = (begin, end, result) else {
            return Err("HammerDB's run printed no result (see its output.log)".into());
        };
        Ok((nopm, tpm, c1 - c0, s1 - s0, errors))
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Two-sided 95% Student t quantile for `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    const T: [f64; 10] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];
    if df == 0 { f64::NAN } else { *T.get(df - 1).unwrap_or(&1.96) }
}

/// `mean ± half-width`, or just the mean when there is one value.
fn pm(v: &[f64], decimals: usize) -> String {
    let (m, h) = mean_ci(v);
    if h.is_nan() { format!("{m:.decimals$} (n = 1)") } else { format!("{m:.decimals$} ± {h:.decimals$}") }
}

/// Mean and the half-width of its 95% interval.
fn mean_ci(v: &[f64]) -> (f64, f64) {
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, f64::NAN);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * (var / n as f64).sqrt())
}

/// Geometric mean of ratios and its 95% interval (t on the logs).
fn ratio_ci(r: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = r.iter().map(|x| x.ln()).collect();
    let (m, h) = mean_ci(&logs);
    (m.exp(), (m - h).exp(), (m + h).exp())
}

async fn recreate_database(admin: &tokio_postgres::Client, name: &str) {
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
}

/// Tables of `conn`'s database past an autovacuum threshold (vacuum for dead rows, vacuum for
/// inserts, analyze), by the formulas autovacuum uses with the server's settings.
const PENDING_AUTOVACUUM: &str = "SELECT count(*) FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid \
     WHERE s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8 \
           + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0) \
        OR s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8 \
           + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * greatest(c.reltuples, 0) \
        OR s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8 \
           + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)";

/// CHECKPOINT, then wait (at most `max` seconds) until no autovacuum worker is busy and no
/// table of `databases` is due for one, so that no run pays for the background work another
/// run (or a load) left behind. Returns the seconds waited.
async fn settle(admin: &tokio_postgres::Client, databases: &[ConnectSpec], max: u64) -> f64 {
    admin.batch_execute("CHECKPOINT").await.unwrap();
    let start = Instant::now();
    let mut clients = Vec::new();
    for db in databases {
        clients.push(db.connect("side-by-side-settle").await.unwrap());
    }
    while start.elapsed() < Duration::from_secs(max) {
        let mut pending: i64 = admin
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'", &[])
            .await
            .unwrap()
            .get(0);
        for c in &clients {
            pending += c.query_one(PENDING_AUTOVACUUM, &[]).await.unwrap().get::<_, i64>(0);
        }
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    if start.elapsed() > Duration::from_secs(5) {
        // The autovacuum workers wrote: start from a clean checkpoint again.
        admin.batch_execute("CHECKPOINT").await.unwrap();
    }
    start.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("side_by_side: {e}");
            std::process::exit(2);
        }
    };
    if !common::root_or_skip() {
        return;
    }
    let mut settings: Vec<(&str, &str)> = vec![
        ("shared_buffers", "1GB"),
        ("max_connections", "200"),
        ("max_wal_size", "8GB"),
        ("checkpoint_timeout", "30min"),
    ];
    let explain_ms = args.explain_slow.map(|ms| format!("{ms}ms"));
    let preload = match (args.statements, explain_ms.is_some()) {
        (true, true) => Some("pg_stat_statements,auto_explain"),
        (true, false) => Some("pg_stat_statements"),
        (false, true) => Some("auto_explain"),
        (false, false) => None,
    };
    if let Some(p) = preload {
        settings.push(("shared_preload_libraries", p));
    }
    if args.statements {
        settings.extend([
            ("pg_stat_statements.track", "all"),
            ("pg_stat_statements.max", "10000"),
            ("pg_stat_statements.track_utility", "on"),
        ]);
    }
    for (k, v) in &args.extra_settings {
        settings.push((k.as_str(), v.as_str()));
    }
    if let Some(ms) = explain_ms.as_deref() {
        settings.extend([
            ("auto_explain.log_min_duration", ms),
            ("auto_explain.log_nested_statements", "on"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_timing", "off"),
            ("auto_explain.log_buffers", "on"),
        ]);
    }
    let cluster = common::Cluster::start("sbs", &settings).await;
    let work = tempfile::Builder::new().prefix("pgtier-sbs-").tempdir_in("/var/tmp").unwrap();
    let hammerdb = HammerDb::from_env(work.path());
    if hammerdb.is_none() {
        println!(
            "HAMMERDB_HOME is not set: HammerDB's runs are skipped (set it to a HammerDB 4.12 directory whose config/database.xml names a Pgtcl that loads; see docs/benchmarks.md)"
        );
    }
    let mut tools = vec![Tool::Faithful, Tool::PgtierHammerDb];
    if hammerdb.is_some() {
        tools.insert(0, Tool::HammerDb);
    }
    if let Some(only) = &args.only {
        tools.retain(|t| only.iter().any(|o| o == t.database()));
    }
    println!(
        "settings: {settings:?}, fsync on; {} warehouses; ramp {} s, measured {} s",
        args.warehouses, args.ramp, args.duration
    );
    let admin = cluster.connect("postgres").await;
    if args.statements {
        admin.batch_execute("CREATE EXTENSION pg_stat_statements").await.unwrap();
    }
    let mut plans_out = explain_ms.is_some().then(|| {
        std::fs::File::create(args.out.as_ref().expect("checked in parse").with_extension("plans.txt")).unwrap()
    });
    let mut statements_out = (args.statements).then(|| {
        let p = args.out.as_ref().expect("checked in parse").with_extension("statements.csv");
        let mut f = std::fs::File::create(p).unwrap();
        writeln!(
            f,
            "round,vus,tool,new_orders,database,toplevel,calls,rows,shared_blks_hit,shared_blks_read,total_exec_ms,query"
        )
        .unwrap();
        f
    });
    let backend: i32 = admin.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    let server = ServerCpu::from_backend(backend).expect("the server's processes in /proc");
    let spec = |tool: Tool| ConnectSpec { database: tool.database().into(), ..cluster.conn.clone() };
    let cancel = AtomicBool::new(false);
    let mut out = args.out.as_ref().map(|p| {
        let mut f = std::fs::File::create(p).unwrap();
        writeln!(
            f,
            "round,vus,tool,nopm,tpm,client_cpu_s,server_cpu_s,errors,load_average,new_orders,{},deadlocks",
            Work::FIELDS.join(",")
        )
        .unwrap();
        f
    });
    let mut relations_out = args.out.as_ref().map(|p| {
        let mut f = std::fs::File::create(p.with_extension("relations.csv")).unwrap();
        writeln!(f, "round,vus,tool,relation,counter,delta,new_orders").unwrap();
        f
    });
    let mut results: Vec<RunResult> = Vec::new();
    let mut loads: BTreeMap<Tool, Vec<f64>> = BTreeMap::new();
    let started = Instant::now();
    for round in 0..args.rounds {
        // Each round its own order, so that every tool starts rounds and follows each other tool.
        const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1], [2, 0, 1], [1, 0, 2]];
        let order: Vec<Tool> = ORDERS[round as usize % 6].iter().filter_map(|&i| tools.get(i).copied()).collect();
        for &tool in &order {
            recreate_database(&admin, tool.database()).await;
            let seconds = match tool {
                Tool::HammerDb => {
                    match hammerdb.as_ref().expect("listed only when set").build(
                        &spec(tool),
                        args.warehouses,
                        args.build_workers,
                    ) {
                        Ok(s) => s,
                        Err(e) => {
                            eprintln!("round {round}: {e}");
                            std::process::exit(1);
                        }
                    }
                }
                _ => {
                    let cfg = TpccConfig { mode: tool.mode(), ..TpccConfig::new(args.warehouses) };
                    create_schema_and_load(&spec(tool), &cfg, args.build_workers, &cancel, &mut |_| {})
                        .await
                        .unwrap()
                        .seconds
                }
            };
            println!("round {round}: {} loaded {} warehouses in {seconds:.1} s", tool.name(), args.warehouses);
            loads.entry(tool).or_default().push(seconds);
        }
        for &vus in &args.vus {
            for &tool in &order {
                let databases: Vec<ConnectSpec> = tools.iter().map(|t| spec(*t)).collect();
                let waited = settle(&admin, &databases, args.settle).await;
                let load_average = load_average();
                let work_before = Work::read(&spec(tool)).await;
                let relations_before = relation_counters(&spec(tool)).await;
                if args.statements {
                    admin.batch_execute("SELECT pg_stat_statements_reset()").await.unwrap();
                }
                if explain_ms.is_some() {
                    // A marker in the server log, to tell the runs' plans apart.
                    let mark = format!("side_by_side run: round {round}, {vus} VUs, {}", tool.name());
                    admin.batch_execute(&format!("DO $$ BEGIN RAISE LOG '%', {}; END $$", quote(&mark))).await.unwrap();
                }
                let r = match tool {
                    Tool::HammerDb => {
                        match hammerdb.as_ref().unwrap().drive(&spec(tool), &server, vus, args.ramp, args.duration) {
                            Ok((nopm, tpm, client_cpu, server_cpu, errors)) => RunResult {
                                round,
                                vus,
                                tool,
                                nopm,
                                tpm,
                                client_cpu,
                                server_cpu,
                                errors,
                                load_average,
                                work: Work::default(),
                            },
                            Err(e) => {
                                eprintln!("round {round}, {vus} VUs, HammerDB: {e}");
                                continue;
                            }
                        }
                    }
                    _ => {
                        let cfg = TpccConfig { mode: tool.mode(), ..TpccConfig::new(args.warehouses) };
                        let ramp = Duration::from_secs(args.ramp);
                        let d = match run(
                            &spec(tool),
                            &cfg,
                            vus,
                            (ramp, Duration::from_secs(args.duration)),
                            &cancel,
                            &mut |_| {},
                        )
                        .await
                        {
                            Ok(d) => d,
                            Err(e) => {
                                eprintln!("round {round}, {vus} VUs, {}: {e}", tool.name());
                                continue;
                            }
                        };
                        if !d.error_samples.is_empty() {
                            println!("     {} error samples: {:?}", tool.name(), d.error_samples);
                        }
                        RunResult {
                            round,
                            vus,
                            tool,
                            nopm: d.nopm,
                            tpm: d.tpm,
                            client_cpu: d.client_cpu_seconds,
                            server_cpu: d.server_cpu_seconds.unwrap_or(f64::NAN),
                            errors: d.errors.values().sum(),
                            load_average,
                            work: Work::default(),
                        }
                    }
                };
                // Backends flush their statistics when they exit; give the last ones a moment.
                tokio::time::sleep(Duration::from_secs(2)).await;
                let mut r = r;
                r.work = work_before.until(&Work::read(&spec(tool)).await);
                if let Some(f) = statements_out.as_mut() {
                    write_statements(f, &admin, round, vus, tool, r.work.new_orders).await;
                }
                // The stock-level statement is HammerDB's in these two databases only.
                if let Some(f) = plans_out.as_mut()
                    && tool != Tool::PgtierHammerDb
                {
                    write_stock_level_plans(f, &spec(tool), round, vus, tool).await;
                }
                if let Some(f) = relations_out.as_mut() {
                    for (key, after) in relation_counters(&spec(tool)).await {
                        let delta = after - relations_before.get(&key).copied().unwrap_or(0.0);
                        if delta != 0.0 {
                            writeln!(
                                f,
                                "{round},{vus},{},{},{},{delta:.0},{:.0}",
                                tool.name(),
                                key.0,
                                key.1,
                                r.work.new_orders
                            )
                            .unwrap();
                        }
                    }
                }
                println!(
                    "round {round} {vus:>2} VUs {:<26} NOPM {:>8.0} TPM {:>8.0} client {:>6.2} s server {:>7.2} s ({:.2}%) errors {} (settled {waited:.0} s, load {})",
                    tool.name(),
                    r.nopm,
                    r.tpm,
                    r.client_cpu,
                    r.server_cpu,
                    100.0 * r.client_cpu / r.server_cpu,
                    r.errors,
                    r.load_average
                );
                if let Some(f) = out.as_mut() {
                    let work: Vec<String> = r.work.values().iter().map(|v| format!("{v:.0}")).collect();
                    writeln!(
                        f,
                        "{},{},{},{:.1},{:.1},{:.3},{:.3},{},{},{:.0},{},{:.0}",
                        r.round,
                        r.vus,
                        tool.name(),
                        r.nopm,
                        r.tpm,
                        r.client_cpu,
                        r.server_cpu,
                        r.errors,
                        r.load_average,
                        r.work.new_orders,
                        work.join(","),
                        r.work.deadlocks
                    )
                    .unwrap();
                }
                results.push(r);
            }
        }
    }
    println!("\nfinished in {:.1} min\n", started.elapsed().as_secs_f64() / 60.0);

    // The tables.
    println!(
        "| VUs | tool | NOPM mean ± 95% | TPM mean ± 95% | NOPM / HammerDB (geo. mean, 95%) | client / server CPU |"
    );
    println!("|---:|---|---:|---:|---:|---:|");
    for &vus in &args.vus {
        for &tool in &tools {
            let rs: Vec<&RunResult> = results.iter().filter(|r| r.vus == vus && r.tool == tool).collect();
            if rs.is_empty() {
                continue;
            }
            let nopm = pm(&rs.iter().map(|r| r.nopm).collect::<Vec<_>>(), 0);
            let tpm = pm(&rs.iter().map(|r| r.tpm).collect::<Vec<_>>(), 0);
            let cpu = pm(&rs.iter().map(|r| 100.0 * r.client_cpu / r.server_cpu).collect::<Vec<_>>(), 1);
            let ratio = if tool == Tool::HammerDb {
                "1".to_string()
            } else {
                let ratios: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        results
                            .iter()
                            .find(|h| h.tool == Tool::HammerDb && h.vus == vus && h.round == r.round)
                            .map(|h| r.nopm / h.nopm)
                    })
                    .collect();
                if ratios.is_empty() {
                    "n/a".into()
                } else if ratios.len() == 1 {
                    format!("{:.3} (n = 1)", ratios[0])
                } else {
                    let (g, lo, hi) = ratio_ci(&ratios);
                    format!("{g:.3} [{lo:.3}, {hi:.3}]")
                }
            };
            println!("| {vus} | {} | {nopm} | {tpm} | {ratio} | {cpu} % |", tool.name());
        }
    }
    println!("\nServer work per new-order over whole runs (mean over rounds):\n");
    print!("| VUs | tool |");
    for f in Work::FIELDS {
        print!(" {f} |");
    }
    println!(" deadlocks |");
    print!("|---:|---|");
    for _ in Work::FIELDS {
        print!("---:|");
    }
    println!("---:|");
    for &vus in &args.vus {
        for &tool in &tools {
            let rs: Vec<&RunResult> = results.iter().filter(|r| r.vus == vus && r.tool == tool).collect();
            if rs.is_empty() {
                continue;
            }
            print!("| {vus} | {} |", tool.name());
            for i in 0..Work::FIELDS.len() {
                let per: Vec<f64> = rs.iter().map(|r| r.work.values()[i] / r.work.new_orders).collect();
                print!(" {:.2} |", per.iter().sum::<f64>() / per.len() as f64);
            }
            println!(" {} |", rs.iter().map(|r| r.work.deadlocks).sum::<f64>());
        }
    }
    println!("\n| loader | load time, s (mean ± 95%) | loads |");
    println!("|---|---:|---:|");
    for (tool, v) in &loads {
        println!("| {} | {} | {} |", tool.name(), pm(v, 1), v.len());
    }
    drop(admin);
    if explain_ms.is_some() {
        let p = args.out.as_ref().expect("checked in parse").with_extension("server.log");
        std::fs::write(&p, cluster.log()).unwrap();
    }
    cluster.shutdown().await;
}

/// HammerDB's stock-level statement (its SLEV function's one SELECT, the function's variables
/// as parameters), as the planner plans it now in `conn`'s database: a custom plan for
/// warehouse 1, district 1, threshold 15, and the generic plan.
async fn write_stock_level_plans(f: &mut std::fs::File, conn: &ConnectSpec, round: u32, vus: u32, tool: Tool) {
    let c = conn.connect("side-by-side-plans").await.unwrap();
    c.batch_execute(
        "PREPARE slev_q(integer, integer, integer) AS \
         SELECT count(DISTINCT (s_i_id)) FROM order_line, stock, district \
          WHERE ol_w_id = $1 AND ol_d_id = $2 AND d_w_id = $1 AND d_id = $2 \
            AND (ol_o_id < d_next_o_id) AND ol_o_id >= (d_next_o_id - 20) \
            AND s_w_id = $1 AND s_i_id = ol_i_id AND s_quantity < $3",
    )
    .await
    .unwrap();
    for mode in ["force_custom_plan", "force_generic_plan"] {
        c.batch_execute(&format!("SET plan_cache_mode = {mode}")).await.unwrap();
        let plan: Vec<String> =
            c.query("EXPLAIN EXECUTE slev_q(1, 1, 15)", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
        writeln!(f, "round {round}, {vus} VUs, {} after the run, {mode}:\n{}\n", tool.name(), plan.join("\n")).unwrap();
    }
}

/// `s` as an SQL string literal.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// pg_stat_statements' entries since the reset before the run (every database: HammerDB's
/// monitor and pgtier's checks connect where they connect), one CSV row each.
async fn write_statements(
    f: &mut std::fs::File,
    admin: &tokio_postgres::Client,
    round: u32,
    vus: u32,
    tool: Tool,
    new_orders: f64,
) {
    let rows = admin
        .query(
            "SELECT coalesce(d.datname, ''), s.toplevel, s.calls, s.rows, s.shared_blks_hit, s.shared_blks_read, \
                    s.total_exec_time, s.query \
               FROM pg_stat_statements s LEFT JOIN pg_database d ON d.oid = s.dbid \
              ORDER BY s.shared_blks_hit DESC",
            &[],
        )
        .await
        .unwrap();
    for row in rows {
        let query: String = row.get(7);
        let query = query.split_whitespace().collect::<Vec<_>>().join(" ").replace('"', "\"\"");
        writeln!(
            f,
            "{round},{vus},{},{new_orders:.0},{},{},{},{},{},{},{:.1},\"{query}\"",
            tool.name(),
            row.get::<_, String>(0),
            row.get::<_, bool>(1),
            row.get::<_, i64>(2),
            row.get::<_, i64>(3),
            row.get::<_, i64>(4),
            row.get::<_, i64>(5),
            row.get::<_, f64>(6),
        )
        .unwrap();
    }
}
