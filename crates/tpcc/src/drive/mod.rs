//! The driver: virtual users (server-side calls: one thread and connection each over
//! [`crate::wire`]; client-side SQL: tokio tasks on tokio-postgres pools), ramp-up, a measured
//! interval bracketed by two snapshots of the database's counters, per-type histograms.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use hdrhistogram::Histogram;
use tokio::sync::watch;
use tokio_postgres::Client;

use crate::cpu::{ServerCpu, process_cpu_seconds};
use crate::random::{NurandConstants, Rng};
use crate::terminal::{Terminal, TxKind};
use crate::transactions::{Outcome, Prepared, Scratch, error_kind, execute, execute_wire, wire_statements};
use crate::wire::{Format, WireConn, WireError};
use crate::{ConnectSpec, DriveProgress, DriveReport, Mode, Side, TpccConfig, TpccError, TxStats, describe_pg_error};

mod vu;
use vu::*;

/// Most distinct error messages kept for the report.
const MAX_ERROR_SAMPLES: usize = 20;
/// How long virtual users get to finish their current transaction after the measured interval.
const STOP_GRACE: Duration = Duration::from_secs(60);

/// Counters shared by all virtual users.
struct Shared {
    /// True during the measured interval (completions then go into the histograms).
    measuring: AtomicBool,
    /// Per virtual user (each on its own cache line, so virtual users on different CPUs do
    /// not contend): completed transactions, the sum of their latencies, committed
    /// new-orders, whole run. The supervisor adds them up once a second.
    counters: Vec<VuCounters>,
    /// Distinct error messages (bounded).
    samples: std::sync::Mutex<Vec<String>>,
}

/// One virtual user's running counters.
#[repr(align(64))]
#[derive(Default)]
struct VuCounters {
    completed: AtomicU64,
    latency_us: AtomicU64,
    new_orders: AtomicU64,
}

impl Shared {
    /// The sum of one counter over every virtual user.
    fn total(&self, field: fn(&VuCounters) -> &AtomicU64) -> u64 {
        self.counters.iter().map(|c| field(c).load(Ordering::Relaxed)).sum()
    }

    fn sample(&self, msg: String) {
        let mut s = self.samples.lock().unwrap();
        if s.len() < MAX_ERROR_SAMPLES && !s.contains(&msg) {
            s.push(msg);
        }
    }
}

/// One virtual user's measured figures.
struct VuStats {
    hist: Vec<Histogram<u64>>,
    rollbacks: [u64; 5],
    errors: Vec<BTreeMap<String, u64>>,
}

impl VuStats {
    fn new() -> VuStats {
        VuStats {
            hist: (0..5).map(|_| Histogram::new(3).expect("3 significant figures is valid")).collect(),
            rollbacks: [0; 5],
            errors: vec![BTreeMap::new(); 5],
        }
    }

    fn merge(&mut self, other: &VuStats) {
        for i in 0..5 {
            let _ = self.hist[i].add(&other.hist[i]);
            self.rollbacks[i] += other.rollbacks[i];
            for (k, v) in &other.errors[i] {
                *self.errors[i].entry(k.clone()).or_default() += v;
            }
        }
    }
}

/// Counter snapshot taken at both ends of the measured interval.
#[derive(Clone, Copy, Debug)]
struct Snapshot {
    at: Instant,
    next_o_id_sum: i64,
    commits: i64,
    rollbacks: i64,
    client_cpu: f64,
    server_cpu: Option<f64>,
}

const SNAPSHOT_SQL: &str = "SELECT (SELECT sum(d_next_o_id)::int8 FROM district), \
     sum(xact_commit)::int8, sum(xact_rollback)::int8 FROM pg_stat_database";

async fn snapshot(monitor: &Client, server: Option<&ServerCpu>) -> Result<Snapshot, TpccError> {
    let sent = Instant::now();
    let row = monitor
        .query_one(SNAPSHOT_SQL, &[])
        .await
        .map_err(|e| TpccError::sql("read the new-order and transaction counters", e))?;
    let got = Instant::now();
    Ok(Snapshot {
        at: sent + (got - sent) / 2,
        next_o_id_sum: row.get::<_, Option<i64>>(0).unwrap_or(0),
        commits: row.get::<_, Option<i64>>(1).unwrap_or(0),
        rollbacks: row.get::<_, Option<i64>>(2).unwrap_or(0),
        client_cpu: process_cpu_seconds(),
        server_cpu: server.and_then(ServerCpu::sample),
    })
}

/// Drives `virtual_users` virtual users for `ramp_up` then `duration` against a database
/// loaded by [`crate::create_schema_and_load`].
///
/// The figures are HammerDB's: when ramp-up ends and again when the measured time ends, one
/// query reads `sum(d_next_o_id)` from DISTRICT and `sum(xact_commit)`, `sum(xact_rollback)`
/// from `pg_stat_database` (all databases, as HammerDB reads it); NOPM and TPM are the growth
/// of the first and of commits + rollbacks, per minute of the interval between the two
/// snapshots. Virtual users keep running through both snapshots and are stopped after the
/// second. Latencies are measured by the client around each transaction and kept per type
/// for transactions that complete inside the measured interval. Failed transactions are
/// counted by kind and never retried; the virtual user goes on with a new transaction.
///
/// `progress` is called about once a second. When `cancel` becomes true the virtual users
/// are stopped and [`TpccError::Cancelled`] is returned.
///
/// `client_cpu_seconds` in the report is getrusage(RUSAGE_SELF) over the measured interval:
/// CPU of this whole process, including whatever else the caller runs meanwhile.
pub async fn run(
    conn: &ConnectSpec,
    cfg: &TpccConfig,
    virtual_users: u32,
    (ramp_up, duration): (Duration, Duration),
    cancel: &AtomicBool,
    progress: &mut (dyn FnMut(DriveProgress) + Send),
) -> Result<DriveReport, TpccError> {
    check_arguments(cfg, virtual_users, duration)?;
    let monitor = conn.connect("pgtier-tpcc-monitor").await?;
    let (warehouses, load_nurand) = check_database(&monitor, cfg).await?;
    let backend_pid: i32 = monitor
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| TpccError::sql("read the monitor's backend pid", e))?
        .get(0);
    let server_cpu = ServerCpu::from_backend(backend_pid);

    let mut seed_rng = Rng::from_entropy(u64::from(virtual_users));
    let nurand = run_nurand(cfg, &load_nurand, &mut seed_rng);

    let shared = Arc::new(Shared {
        measuring: AtomicBool::new(false),
        counters: (0..virtual_users).map(|_| VuCounters::default()).collect(),
        samples: std::sync::Mutex::new(Vec::new()),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let start = Instant::now();

    let terminals = terminals(cfg, warehouses, virtual_users, nurand, &mut seed_rng);
    let ctx = VuContext {
        conn: conn.clone(),
        shared: shared.clone(),
        stop: StopSignals {
            watch: stop_rx,
            flag: Arc::new(AtomicBool::new(false)),
            abandon: Arc::new(AtomicBool::new(false)),
        },
        mode: cfg.mode,
        side: cfg.side,
        keying_and_thinking: cfg.keying_and_thinking,
    };
    let stop_all = |ctx: &VuContext| {
        let _ = stop_tx.send(true);
        ctx.stop.flag.store(true, Ordering::SeqCst);
    };
    let finished = match start_virtual_users(conn, cfg.side, terminals, &ctx) {
        Ok(f) => f,
        Err(e) => {
            stop_all(&ctx);
            return Err(e);
        }
    };

    let clock = Clock { start, ramp_up, duration };
    let result = supervise(&monitor, server_cpu.as_ref(), &shared, clock, cancel, progress).await;

    // Stop the virtual users whatever happened, and collect what they measured.
    stop_all(&ctx);
    let stats = collect_virtual_users(finished, &shared, &ctx).await;

    Ok(drive_report(cfg, (virtual_users, warehouses, ramp_up), result?, &stats, &shared, nurand))
}

/// Refuses arguments no run can use.
fn check_arguments(cfg: &TpccConfig, virtual_users: u32, duration: Duration) -> Result<(), TpccError> {
    if virtual_users == 0 {
        return Err(TpccError::Config("virtual_users must be at least 1".into()));
    }
    if duration.is_zero() {
        return Err(TpccError::Config("the measured duration must not be zero".into()));
    }
    if cfg.mode == Mode::HammerDbFaithful && cfg.side != Side::ServerProcedures {
        return Err(TpccError::Config(
            "mode hammerdb-faithful runs HammerDB's server-side functions only: use side procedures".into(),
        ));
    }
    Ok(())
}

/// The report of a measured run: rates between the two snapshots, the virtual users' statistics.
fn drive_report(
    cfg: &TpccConfig,
    (virtual_users, warehouses, ramp_up): (u32, u32, Duration),
    (begin, end, per_second): (Snapshot, Snapshot, PerSecond),
    stats: &VuStats,
    shared: &Shared,
    nurand: NurandConstants,
) -> DriveReport {
    let minutes = (end.at - begin.at).as_secs_f64() / 60.0;
    let new_orders = end.next_o_id_sum - begin.next_o_id_sum;
    let commits = end.commits - begin.commits;
    let rollbacks = end.rollbacks - begin.rollbacks;
    let (per_type, errors, client_transactions) = per_type_stats(stats);
    let error_samples = shared.samples.lock().unwrap().clone();
    DriveReport {
        mode: cfg.mode,
        side: cfg.side,
        virtual_users,
        warehouses,
        all_warehouses: cfg.all_warehouses,
        keying_and_thinking: cfg.keying_and_thinking,
        nopm: new_orders as f64 / minutes,
        tpm: (commits + rollbacks) as f64 / minutes,
        new_orders,
        commits,
        rollbacks,
        measured_seconds: minutes * 60.0,
        ramp_up_seconds: ramp_up.as_secs_f64(),
        per_type,
        errors,
        error_samples,
        per_second,
        client_transactions,
        client_cpu_seconds: end.client_cpu - begin.client_cpu,
        server_cpu_seconds: match (begin.server_cpu, end.server_cpu) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
        nurand,
    }
}

/// The run's NURand constants: drawn against the load's (clause 2.1.6.1); in HammerDB's mix C for
/// C_LAST is the load's, as HammerDB generates C_LAST with the same constant at load and run time.
fn run_nurand(cfg: &TpccConfig, load_nurand: &NurandConstants, seed_rng: &mut Rng) -> NurandConstants {
    let mut nurand = NurandConstants::for_run(seed_rng, load_nurand);
    if cfg.mode.hammerdb_mix() {
        nurand.c_last = load_nurand.c_last;
    }
    nurand
}

/// One terminal per virtual user, each with a generator seeded from `seed_rng`.
fn terminals(
    cfg: &TpccConfig,
    warehouses: u32,
    virtual_users: u32,
    nurand: NurandConstants,
    seed_rng: &mut Rng,
) -> Vec<Terminal> {
    (0..virtual_users)
        .map(|vu| {
            Terminal::new(
                cfg.mode,
                warehouses,
                (vu, virtual_users),
                cfg.all_warehouses,
                nurand,
                Rng::seeded(seed_rng.next_u64()),
            )
        })
        .collect()
}

/// The database fits the run: loaded by the loader of the mode, with the configured warehouses
/// and the mode's functions. Returns the warehouses and the load's NURand constants.
async fn check_database(monitor: &Client, cfg: &TpccConfig) -> Result<(u32, NurandConstants), TpccError> {
    let (warehouses, load_nurand, loader) = read_meta(monitor).await?;
    let faithful_db = loader == crate::faithful::LOADER;
    if faithful_db != (cfg.mode == Mode::HammerDbFaithful) {
        return Err(TpccError::Schema(if faithful_db {
            format!(
                "the database was loaded for mode hammerdb-faithful (HammerDB's schema and functions); mode {} needs pgtier's own load: load it again in that mode",
                cfg.mode.as_str()
            )
        } else {
            "mode hammerdb-faithful needs a database loaded in that mode (HammerDB's schema, population and functions); this one was loaded by pgtier's loader for modes spec and hammerdb: load it again with mode hammerdb-faithful".to_string()
        }));
    }
    if warehouses != cfg.warehouses {
        return Err(TpccError::Config(format!(
            "the database holds {warehouses} warehouses but the configuration says {}; load it again or change the configuration",
            cfg.warehouses
        )));
    }
    if cfg.mode == Mode::HammerDbFaithful {
        let names: Vec<String> = crate::faithful::sql::ROUTINES.iter().map(|s| s.to_string()).collect();
        let n: i64 = monitor
            .query_one("SELECT count(DISTINCT proname) FROM pg_proc WHERE proname = ANY($1)", &[&names])
            .await
            .map_err(|e| TpccError::sql("look for HammerDB's functions", e))?
            .get(0);
        if n != names.len() as i64 {
            return Err(TpccError::Schema(format!(
                "{n} of HammerDB's {} functions ({}) exist; load the database again with mode hammerdb-faithful",
                names.len(),
                names.join(", ")
            )));
        }
    } else if cfg.side == Side::ServerProcedures {
        let n: i64 = monitor
            .query_one(
                "SELECT count(*) FROM pg_proc WHERE proname IN \
                 ('tpcc_new_order', 'tpcc_payment', 'tpcc_order_status', 'tpcc_delivery', 'tpcc_stock_level')",
                &[],
            )
            .await
            .map_err(|e| TpccError::sql("look for the transaction functions", e))?
            .get(0);
        if n != 5 {
            return Err(TpccError::Schema(format!(
                "{n} of the 5 tpcc_* functions exist; load the database with this version of pgtier"
            )));
        }
    }
    Ok((warehouses, load_nurand))
}

/// What a virtual user (or a group of them) reports when it ends: its figures and how many did
/// not stop in time.
type Finished = tokio::sync::oneshot::Receiver<Result<(VuStats, u32), String>>;

/// Starts the virtual users: for server-side calls one thread per virtual user with its own
/// connection and blocking I/O; for client-side SQL groups of them on driver threads.
fn start_virtual_users(
    conn: &ConnectSpec,
    side: Side,
    terminals: Vec<Terminal>,
    ctx: &VuContext,
) -> Result<Vec<Finished>, TpccError> {
    let virtual_users = terminals.len() as u32;
    let mut finished = Vec::new();
    if side == Side::ServerProcedures {
        // Server-side calls: one thread per virtual user with its own connection and blocking
        // I/O, as a HammerDB virtual user; a transaction then costs the client one send, one
        // recv and the wake-up between them, and no event loop.
        for (vu, terminal) in terminals.into_iter().enumerate() {
            match spawn_server_side_vu(vu as u32, ctx.clone(), terminal) {
                Ok(rx) => finished.push(rx),
                Err(source) => return Err(TpccError::Thread { what: "a virtual-user thread", source }),
            }
        }
    } else {
        // Client-side SQL: virtual users as tasks on dedicated threads, each with a
        // single-threaded runtime and its own pool, so a transaction's wake-ups (task,
        // connection task, socket) stay on one thread.
        let threads = driver_threads(virtual_users);
        let mut groups: Vec<Vec<(usize, Terminal)>> = (0..threads).map(|_| Vec::new()).collect();
        for (vu, t) in terminals.into_iter().enumerate() {
            groups[vu % threads].push((vu, t));
        }
        let mut pg = conn.pg_config("pgtier-tpcc");
        pg.connect_timeout(Duration::from_secs(30));
        for (t, terminals) in groups.into_iter().enumerate() {
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            let group = DriverGroup { pg: pg.clone(), terminals, ctx: ctx.clone() };
            let spawned = std::thread::Builder::new().name(format!("tpcc-driver-{t}")).spawn(move || {
                let _ = done_tx.send(group.run());
            });
            if let Err(source) = spawned {
                return Err(TpccError::Thread { what: "a driver thread", source });
            }
            finished.push(done_rx);
        }
    }

    Ok(finished)
}

/// Waits (at most the stop grace and 10 s) for every virtual user's figures, merged; what went
/// wrong goes to the error samples.
async fn collect_virtual_users(finished: Vec<Finished>, shared: &Shared, ctx: &VuContext) -> VuStats {
    let mut stats = VuStats::new();
    let mut lost = 0;
    let deadline = tokio::time::Instant::now() + STOP_GRACE + Duration::from_secs(10);
    for rx in finished {
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(Ok((s, l)))) => {
                stats.merge(&s);
                lost += l;
            }
            Ok(Ok(Err(e))) => shared.sample(e),
            Ok(Err(_)) => shared.sample("a driver thread did not report back".into()),
            Err(_) => lost += 1,
        }
    }
    // Threads still blocked in a read give up at their next tick.
    ctx.stop.abandon.store(true, Ordering::SeqCst);
    if lost > 0 {
        shared
            .sample(format!("{lost} virtual user(s) did not stop within {STOP_GRACE:?}; their latencies are missing"));
    }
    stats
}

/// Per transaction type: counts, rollbacks, errors and latency quantiles; the errors by kind
/// over all types, and the transactions the client counted.
fn per_type_stats(stats: &VuStats) -> (Vec<TxStats>, BTreeMap<String, u64>, u64) {
    let mut per_type = Vec::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut client_transactions = 0;
    for kind in TxKind::ALL {
        let i = kind.index();
        let h = &stats.hist[i];
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        for (k, v) in &stats.errors[i] {
            *errors.entry(k.clone()).or_default() += v;
        }
        client_transactions += h.len();
        per_type.push(TxStats {
            name: kind.name().to_string(),
            count: h.len(),
            rollbacks: stats.rollbacks[i],
            errors_by_kind: stats.errors[i].clone(),
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            p95_ms: ms(0.95),
            p99_ms: ms(0.99),
            p999_ms: ms(0.999),
            mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
            max_ms: h.max() as f64 / 1000.0,
        });
    }
    (per_type, errors, client_transactions)
}

/// Warehouses, the load's NURand constants, and which loader made the database (`pgtier`, or
/// [`crate::faithful::LOADER`]; pgtier's own `tpcc_meta` has no `loader` column).
async fn read_meta(monitor: &Client) -> Result<(u32, NurandConstants, String), TpccError> {
    let row = monitor
        .query_opt(
            "SELECT warehouses, c_last_load, c_id_load, ol_i_id_load, schema_version, \
             coalesce(to_jsonb(m) ->> 'loader', 'pgtier') FROM tpcc_meta m LIMIT 1",
            &[],
        )
        .await
        .map_err(|e| {
            TpccError::Schema(format!("cannot read tpcc_meta ({}); load the database first", describe_pg_error(&e)))
        })?
        .ok_or_else(|| TpccError::Schema("tpcc_meta is empty; the load did not finish".into()))?;
    let w: i32 = row.get(0);
    let version: i32 = row.get(4);
    let loader: String = row.get(5);
    let expected =
        if loader == crate::faithful::LOADER { crate::faithful::SCHEMA_VERSION } else { crate::schema::SCHEMA_VERSION };
    if version != expected {
        return Err(TpccError::Schema(format!(
            "the database was loaded with TPC-C schema version {version}, this pgtier uses version {expected}; load it again"
        )));
    }
    Ok((
        w as u32,
        NurandConstants {
            c_last: i64::from(row.get::<_, i32>(1)),
            c_id: i64::from(row.get::<_, i32>(2)),
            ol_i_id: i64::from(row.get::<_, i32>(3)),
        },
        loader,
    ))
}

type PerSecond = Vec<(f64, f64, f64)>;

/// When a drive began, and how long its ramp-up and measured interval last.
#[derive(Clone, Copy)]
struct Clock {
    start: Instant,
    ramp_up: Duration,
    duration: Duration,
}

/// Ticks every second, takes the two snapshots on time, reports progress.
async fn supervise(
    monitor: &Client,
    server_cpu: Option<&ServerCpu>,
    shared: &Shared,
    clock: Clock,
    cancel: &AtomicBool,
    progress: &mut (dyn FnMut(DriveProgress) + Send),
) -> Result<(Snapshot, Snapshot, PerSecond), TpccError> {
    let Clock { start, ramp_up, duration } = clock;
    let ramp_end = start + ramp_up;
    let mut begin: Option<Snapshot> = None;
    let mut per_second = Vec::new();
    let mut next_tick = start + Duration::from_secs(1);
    let (mut last_count, mut last_lat) = (0u64, 0u64);
    let (mut phase_start, mut phase_new_orders) = (start, 0u64);
    loop {
        if cancel.load(Ordering::SeqCst) {
            return Err(TpccError::Cancelled);
        }
        let now = Instant::now();
        // The second that just ended belongs to the phase it ran in: report it first.
        if now >= next_tick {
            let count = shared.total(|c| &c.completed);
            let lat = shared.total(|c| &c.latency_us);
            let (dc, dl) = (count - last_count, lat - last_lat);
            (last_count, last_lat) = (count, lat);
            let t = (next_tick - start).as_secs_f64();
            let mean_ms = if dc == 0 { 0.0 } else { dl as f64 / dc as f64 / 1000.0 };
            per_second.push((t, dc as f64, mean_ms));
            let phase_minutes = phase_start.elapsed().as_secs_f64() / 60.0;
            let no = shared.total(|c| &c.new_orders) - phase_new_orders;
            progress(DriveProgress {
                elapsed_seconds: t,
                in_ramp_up: begin.is_none(),
                transactions_per_second: dc as f64,
                new_orders_per_minute: if phase_minutes > 0.0 { no as f64 / phase_minutes } else { 0.0 },
            });
            next_tick += Duration::from_secs(1);
        }
        if begin.is_none() && now >= ramp_end {
            let s = snapshot(monitor, server_cpu).await?;
            shared.measuring.store(true, Ordering::SeqCst);
            phase_start = Instant::now();
            phase_new_orders = shared.total(|c| &c.new_orders);
            begin = Some(s);
        }
        if let Some(b) = begin
            && Instant::now() >= b.at + duration
        {
            let e = snapshot(monitor, server_cpu).await?;
            shared.measuring.store(false, Ordering::SeqCst);
            return Ok((b, e, per_second));
        }
        // Sleep to the next event: a tick, the end of ramp-up or of the measured interval,
        // but never more than 100 ms so cancellation is noticed quickly.
        let mut wake = next_tick.min(Instant::now() + Duration::from_millis(100));
        match begin {
            None => wake = wake.min(ramp_end),
            Some(b) => wake = wake.min(b.at + duration),
        }
        tokio::time::sleep_until(wake.into()).await;
    }
}

/// Driver threads for client-side SQL with `virtual_users`: one per 32 virtual users, at most
/// one per CPU.
fn driver_threads(virtual_users: u32) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (virtual_users as usize).div_ceil(32).clamp(1, cpus)
}

/// How a virtual user learns to stop: the watch channel wakes the async ones, the flags are
/// read by the threads of the server-side path between transactions and while a read waits.
#[derive(Clone)]
struct StopSignals {
    watch: watch::Receiver<bool>,
    flag: Arc<AtomicBool>,
    /// Raised once the driver has stopped waiting: a blocked read then gives up.
    abandon: Arc<AtomicBool>,
}

/// What every virtual user shares.
#[derive(Clone)]
struct VuContext {
    conn: ConnectSpec,
    shared: Arc<Shared>,
    stop: StopSignals,
    mode: Mode,
    side: Side,
    keying_and_thinking: bool,
}

// ---------------------------------------------------------------------------------------
// Server-side calls: one thread per virtual user, blocking I/O on its own connection.

// ---------------------------------------------------------------------------------------
// Client-side SQL: tokio-postgres, virtual users as tasks on a few single-threaded runtimes.
