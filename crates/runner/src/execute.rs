//! One measured run: start the placement's server (in its cgroup), CHECKPOINT, drop the page
//! cache, a discarded ramp-up, the measured pgbench run with per-second progress, then stop.
//! Raw output is kept next to every parsed figure.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use journal::{CommandLine, ProcessId};
use results::record::{Metrics, RunRecord, RunStatus, SecondSample, StatementLatency};
use results::{ResultsDir, timestamp};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::cgroup::ServerCgroup;
use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::faults::{self, Fault, Injected};
use crate::matrix::{MemoryLimit, PlacementTarget, PlannedRun, Profile, WorkloadKind, WorkloadSpec};
use crate::pgbench::{self, Progress, RunOptions};
use crate::pgstats;
pub use crate::record::not_run;
use crate::record::{FailureKindExt, kind, new_record};
use crate::sampler::{self, Sampler};
use crate::server::{self, Server};
use crate::{DATABASE, RunnerError};

/// Live reports while a run goes on.
pub trait Observer: Send {
    /// A `-P` progress line of the measured run (`ramp_up` true during the discarded ramp-up).
    fn progress(&mut self, _p: &Progress, _ramp_up: bool) {}
    fn note(&mut self, _text: &str) {}
    /// A live status line (replaces the previous one on a terminal).
    fn live(&mut self, _text: &str) {}
}

/// What a run needs.
pub struct RunInputs<'a> {
    pub planned: &'a PlannedRun,
    pub placement: &'a PlacementTarget,
    pub workload: &'a WorkloadSpec,
    pub profile: &'a Profile,
    pub memory: &'a MemoryLimit,
    pub results: &'a ResultsDir,
    /// Faults to inject into the measured interval.
    pub faults: &'a [Fault],
}

/// Makes one run. Failures of the run itself (the server does not start, pgbench fails) give a
/// record with status `failed` and the reason; only cancellation is an error.
pub async fn execute_run(
    env: &RunnerEnv<'_>,
    inp: &RunInputs<'_>,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunnerError> {
    let run_dir = inp.results.run_dir(&inp.planned.run_id);
    std::fs::create_dir_all(&run_dir).io_context(|| format!("mkdir {}", run_dir.display()))?;
    let started_at = timestamp::now_rfc3339();
    let mut record = new_record(inp.planned, inp.workload, started_at);
    match measure(env, inp, &run_dir, &mut record, obs).await {
        Ok(()) => {}
        Err(RunnerError::Cancelled) => return Err(RunnerError::Cancelled),
        Err(e) => {
            record.status = RunStatus::Failed;
            let mut why = e.to_string();
            let excerpt = log_excerpt(&run_dir.join("postgres.log"));
            if !excerpt.is_empty() {
                why.push_str(&format!("; server log: {excerpt}"));
            }
            record.failure = Some(why);
            record.default_kind(kind::SETUP);
            save_kernel_messages(&run_dir.join("dmesg.txt"));
        }
    }
    record.finished_at = timestamp::now_rfc3339();
    record.raw_files = list_files(&run_dir);
    inp.results.write_run(&record).io_context(|| format!("write result of {}", record.run_id))?;
    Ok(record)
}

fn list_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n != "result.json").collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

async fn measure(
    env: &RunnerEnv<'_>,
    inp: &RunInputs<'_>,
    run_dir: &Path,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
) -> Result<(), RunnerError> {
    let srv = start_server(env, inp, run_dir).await;
    let mut srv = match srv {
        Ok(s) => s,
        Err(e) => {
            record.set_kind(kind::SERVER_START);
            return Err(e);
        }
    };
    let mut outcome = measure_on(env, inp, run_dir, record, obs, &mut srv).await;
    if !matches!(outcome, Err(RunnerError::Cancelled)) {
        outcome = explain_deaths(inp, record, &mut srv, outcome);
    }
    // A server that crashed may sit in crash recovery: it is not waited for a minute.
    let crashed = record.kind_is(kind::OUT_OF_MEMORY) || record.kind_is(kind::SERVER_CRASH);
    let cgroup = srv.cgroup.take();
    if let Some(c) = &cgroup {
        let m = c.memory();
        let mem = record.memory.get_or_insert_with(Default::default);
        mem.limit_bytes = c.limit_bytes;
        mem.peak_bytes = m.peak;
        mem.page_cache_bytes = m.page_cache;
    }
    let stopped = srv.stop_within(env.journal, Duration::from_secs(if crashed { 10 } else { 60 })).await;
    if let Some(c) = cgroup {
        // Backends leave the cgroup a moment after the postmaster exits.
        for _ in 0..50 {
            if c.pids().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.remove(env.journal)?;
    }
    outcome?;
    stopped
}

/// Says why a run failed when the server was hurt: an OOM kill inside its cgroup (kind
/// `out-of-memory`, even when the workload itself finished: a crash restart tainted it), a
/// process killed by a signal or a postmaster that ended (`server-crash`), with what the server
/// log and the kernel said. Other failures keep their own kind (`workload` when nothing
/// happened to the server).
fn explain_deaths(
    inp: &RunInputs<'_>,
    record: &mut RunRecord,
    srv: &mut Server,
    outcome: Result<(), RunnerError>,
) -> Result<(), RunnerError> {
    let oom_kills = srv.cgroup.as_ref().and_then(|c| c.oom_kills()).unwrap_or(0);
    let deaths = if oom_kills > 0 || outcome.is_err() { srv.death_report() } else { Vec::new() };
    if oom_kills > 0 {
        let (limit, peak) = match &srv.cgroup {
            Some(c) => (c.limit_bytes, c.memory().peak),
            None => (None, None),
        };
        let mut settings = inp.profile.settings.clone();
        settings.extend(inp.memory.settings.clone());
        let plan = crate::memory::MemoryPlan::of(&settings, inp.planned.clients, inp.workload.data_shape());
        let mut text = format!(
            "the kernel's OOM killer killed {oom_kills} process(es) in the server's memory cgroup (limit {}, peak {}): {}",
            limit.map(crate::memory::show).unwrap_or_else(|| "none".into()),
            peak.map(crate::memory::show).unwrap_or_else(|| "unknown".into()),
            deaths.join("; ")
        );
        text.push_str(&format!(
            ". What these settings need (largest first): {}",
            plan.describe(&[
                crate::memory::MemoryKind::Certain,
                crate::memory::MemoryKind::Likely,
                crate::memory::MemoryKind::UpperBound
            ])
            .join("; ")
        ));
        if let Err(e) = &outcome {
            text.push_str(&format!(". The workload then failed: {e}"));
        }
        record.set_kind(kind::OUT_OF_MEMORY);
        return Err(RunnerError::Server(text));
    }
    match outcome {
        Ok(()) => Ok(()),
        Err(e) if deaths.is_empty() => {
            record.default_kind(if srv.is_running() { kind::WORKLOAD } else { kind::SERVER_CRASH });
            Err(e)
        }
        Err(e) => {
            if record.failure_kind.is_none() || record.kind_is(kind::WORKLOAD) {
                record.set_kind(kind::SERVER_CRASH);
            }
            Err(RunnerError::Server(format!("{}; the run then failed: {e}", deaths.join("; "))))
        }
    }
}

/// Writes the server's configuration, makes its cgroup and starts it. Any failure here means
/// the placement cannot run a server ("server-start").
async fn start_server(env: &RunnerEnv<'_>, inp: &RunInputs<'_>, run_dir: &Path) -> Result<Server, RunnerError> {
    let p = inp.planned;
    let mut settings = inp.profile.settings.clone();
    settings.extend(inp.memory.settings.clone());
    if inp.placement.tablespaces.contains_key("temp") {
        settings.insert("temp_tablespaces".into(), crate::matrix::tablespace_name("temp"));
    }
    server::write_config(&inp.placement.data_dir, env.port, &env.socket_dir, &settings, env.user.uid, env.user.gid)?;
    let cgroup = match (&env.cgroups, p.memory_limit) {
        (Some(h), limit) => {
            Some(ServerCgroup::create(env.journal, h, &env.run_token, &p.run_id, limit, &env.throttles)?)
        }
        (None, _) if !env.throttles.is_empty() => {
            return Err(RunnerError::Setup("an I/O throttle needs cgroups, and this machine has none".into()));
        }
        (None, Some(_)) => {
            return Err(RunnerError::Setup(
                "a memory limit needs a cgroup memory controller, and this machine has none".into(),
            ));
        }
        (None, None) => None,
    };
    Server::start(
        &env.install,
        &env.user,
        env.journal,
        &inp.placement.data_dir,
        &env.socket_dir,
        env.port,
        cgroup,
        &run_dir.join("postgres.log"),
    )
    .await
}

async fn measure_on(
    env: &RunnerEnv<'_>,
    inp: &RunInputs<'_>,
    run_dir: &Path,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
    srv: &mut Server,
) -> Result<(), RunnerError> {
    let client = srv.connect(DATABASE).await?;
    let rows = client
        .query("SELECT name, setting || coalesce(' ' || unit, '') FROM pg_settings WHERE source NOT IN ('default', 'override') ORDER BY name", &[])
        .await
        .map_err(|e| RunnerError::Server(format!("read pg_settings: {e:#}")))?;
    record.server_settings = rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1))).collect();
    client.batch_execute("CHECKPOINT").await.map_err(|e| RunnerError::Server(format!("checkpoint: {e:#}")))?;
    drop(client);
    crate::dataset::sync_all();
    if env.drop_caches {
        std::fs::write("/proc/sys/vm/drop_caches", "3").io_context(|| "drop the page cache".into())?;
    }
    if let Some(c) = &srv.cgroup {
        c.reset_peak();
    }
    match &inp.workload.kind {
        WorkloadKind::Pgbench(w) => measure_pgbench(env, inp, run_dir, record, obs, srv, w).await,
        WorkloadKind::Tpcc(w) => crate::tpcc_run::measure(env, inp, run_dir, record, obs, srv, w).await,
    }
}

async fn measure_pgbench(
    env: &RunnerEnv<'_>,
    inp: &RunInputs<'_>,
    run_dir: &Path,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
    srv: &mut Server,
    w: &crate::matrix::PgbenchWorkload,
) -> Result<(), RunnerError> {
    let target =
        pgbench::Target { socket_dir: &env.socket_dir, port: env.port, user: server::DB_ROLE, database: DATABASE };
    let mut options = RunOptions {
        builtin: w.builtin,
        clients: inp.planned.clients,
        threads: inp.planned.threads,
        duration: inp.workload.ramp_up,
        progress_s: 1,
        per_statement: w.per_statement,
        transaction_log: None,
        extra: w.extra_args.clone(),
    };
    // Expected transactions, to size the sampled transaction log (about 50,000 lines).
    let mut expected_tps = 5_000.0;
    if !inp.workload.ramp_up.is_zero() {
        let cmd = pgbench::run_command(&env.install.bin_dir, &target, &options);
        let watch = Watch { duration: inp.workload.ramp_up, faults: &[], server: Some(srv.process) };
        let out = run_pgbench(env, &cmd, &run_dir.join("rampup"), obs, true, watch).await?;
        if !out.success {
            return Err(RunnerError::Workload(format!("ramp-up pgbench failed ({}): {}", out.exit, out.stderr_tail())));
        }
        if let Ok(s) = pgbench::parse_summary(&out.stdout) {
            expected_tps = s.tps.max(1.0);
        }
    }
    options.duration = inp.workload.duration;
    let rate = (50_000.0 / (expected_tps * inp.workload.duration.as_secs_f64())).clamp(0.0001, 1.0);
    options.transaction_log = Some((round_rate(rate), run_dir.join("txlog").display().to_string()));
    let cmd = pgbench::run_command(&env.install.bin_dir, &target, &options);
    record.command = cmd.to_string();
    let command_file = run_dir.join("command.txt");
    std::fs::write(&command_file, format!("{cmd}\n")).io_context(|| format!("write {}", command_file.display()))?;

    let evidence = Evidence::begin(srv, inp.placement, run_dir).await?;
    let watch = Watch { duration: inp.workload.duration, faults: inp.faults, server: Some(srv.process) };
    let out = run_pgbench(env, &cmd, &run_dir.join("pgbench"), obs, false, watch).await;
    evidence.end(srv, record, None, "pgbench").await;
    let out = out?;
    record.faults = out.injected.clone();
    if let Some(w) = &out.watchdog {
        record.set_kind(kind::WATCHDOG);
        return Err(RunnerError::Workload(w.clone()));
    }
    record.series = out
        .progress
        .iter()
        .map(|p| SecondSample {
            t: p.t,
            tps: p.tps,
            latency_ms: p.latency_ms,
            latency_ms_stddev: p.stddev_ms,
            failed: p.failed,
        })
        .collect();
    if !out.success {
        return Err(RunnerError::Workload(format!("pgbench failed ({}): {}", out.exit, out.stderr_tail())));
    }
    let summary = pgbench::parse_summary(&out.stdout).map_err(|e| RunnerError::Workload(e.to_string()))?;
    record.metrics = Metrics {
        tps: summary.tps,
        latency_ms_avg: summary.latency_avg_ms,
        latency_ms_stddev: summary.latency_stddev_ms,
        transactions: summary.transactions,
        failed_transactions: summary.failed,
        retried_transactions: summary.retried,
        initial_connection_ms: summary.initial_connection_ms,
        ..Default::default()
    };
    if let Some([p50, p90, p95, p99, p999]) = pgstats::percentiles_ms(pgstats::read_transaction_logs(run_dir, "txlog"))
    {
        let m = &mut record.metrics;
        (m.latency_ms_p50, m.latency_ms_p90, m.latency_ms_p95, m.latency_ms_p99, m.latency_ms_p999) =
            (Some(p50), Some(p90), Some(p95), Some(p99), Some(p999));
    }
    record.statements = summary
        .statements
        .iter()
        .filter(|s| !s.text.starts_with('\\'))
        .map(|s| StatementLatency { latency_ms: s.latency_ms, failures: s.failures, statement: s.text.clone() })
        .collect();
    if !srv.is_running() {
        return Err(RunnerError::Server(format!(
            "the server stopped during the run; log tail: {}",
            server::log_tail(&srv.log, 10)
        )));
    }
    Ok(())
}

/// What is measured around a measured interval besides the workload's own figures:
/// PostgreSQL's counters, client and server CPU, device I/O, checkpoints.
pub(crate) struct Evidence {
    client: tokio_postgres::Client,
    before: pgstats::Snapshot,
    server_cpu0: Option<f64>,
    client_cpu0: f64,
    wall0: std::time::Instant,
    started: SystemTime,
    sampler: Sampler,
    /// The run's directory: the raw counters behind the figures are written there.
    run_dir: PathBuf,
}

impl Evidence {
    pub(crate) async fn begin(
        srv: &Server,
        placement: &PlacementTarget,
        run_dir: &Path,
    ) -> Result<Evidence, RunnerError> {
        let client = srv.connect(DATABASE).await?;
        let before =
            pgstats::snapshot(&client).await.map_err(|e| RunnerError::Server(format!("read statistics: {e:#}")))?;
        Ok(Evidence {
            client,
            before,
            server_cpu0: srv.cgroup.as_ref().and_then(|c| c.cpu_seconds()),
            client_cpu0: sampler::children_cpu_seconds(),
            wall0: std::time::Instant::now(),
            started: SystemTime::now(),
            sampler: Sampler::start(placement.devices.clone(), Duration::from_secs(1)),
            run_dir: run_dir.to_path_buf(),
        })
    }

    /// Fills the record. `client_cpu` overrides the CPU of reaped children (for an in-process
    /// client such as the TPC-C driver).
    pub(crate) async fn end(self, srv: &Server, record: &mut RunRecord, client_cpu: Option<f64>, client_name: &str) {
        let sampled = self.sampler.finish();
        let ended = SystemTime::now();
        let wall = self.wall0.elapsed().as_secs_f64();
        let client_cpu = client_cpu.unwrap_or_else(|| sampler::children_cpu_seconds() - self.client_cpu0);
        let server_cpu = match (self.server_cpu0, srv.cgroup.as_ref().and_then(|c| c.cpu_seconds())) {
            (Some(a), Some(b)) => b - a,
            _ => 0.0,
        };
        let mut pg_text = format!("before:\n{}", self.before.to_text());
        if let Ok(after) = pgstats::snapshot(&self.client).await {
            pg_text.push_str(&format!("after:\n{}", after.to_text()));
            record.postgres = Some(pgstats::delta(&self.before, &after));
        }
        // Raw counters next to the figures computed from them (listed in the record's raw files).
        let _ = std::fs::write(self.run_dir.join("pg_stat.txt"), pg_text);
        for (name, text) in &sampled.raw {
            let _ = std::fs::write(self.run_dir.join(name), text);
        }
        record.devices = sampled.devices;
        record.io_series = sampled.series;
        record.sampler_cpu_s = sampled.seconds;
        let mut cpu = sampled.cpu;
        cpu.client_cpu_s = client_cpu;
        cpu.server_cpu_s = server_cpu;
        cpu.client_core_pct = client_cpu / wall.max(1e-3) * 100.0;
        // The client can use one core per thread, and no more cores than the machine has.
        let hardware = std::thread::available_parallelism().map(|n| n.get() as f64).unwrap_or(1.0);
        let client_cores = (record.threads.max(1) as f64).min(hardware);
        if cpu.client_core_pct > 80.0 * client_cores {
            record.warnings.push(format!(
                "the {client_name} client used {:.0}% of a core with {} thread(s): the client, not storage, may be the limit",
                cpu.client_core_pct, record.threads
            ));
        }
        let machine_pct = (client_cpu + server_cpu) / wall.max(1e-3) / hardware * 100.0;
        if machine_pct > 90.0 {
            record.warnings.push(format!(
                "client and server together used {machine_pct:.0}% of all {hardware:.0} hardware threads: the run is CPU-bound, so storage differences are understated"
            ));
        }
        record.cpu = Some(cpu);
        let log = std::fs::read_to_string(&srv.log).unwrap_or_default();
        record.checkpoints_at_s = pgstats::checkpoints_between(&log, self.started, ended);
        if !record.checkpoints_at_s.is_empty() {
            record.warnings.push(format!(
                "a checkpoint started inside the measured run (at {} s): runs with and without a checkpoint are not comparable; prefer longer runs",
                record.checkpoints_at_s.iter().map(|t| format!("{t:.0}")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// What a pgbench invocation printed.
pub struct PgbenchOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub progress: Vec<Progress>,
    /// Set when the watchdog killed pgbench.
    pub watchdog: Option<String>,
    /// Faults injected during the run, as sentences.
    pub injected: Vec<String>,
    /// How pgbench ended: `exit code 2`, `signal 9 (SIGKILL)`.
    pub exit: String,
}

impl PgbenchOutput {
    fn stderr_tail(&self) -> String {
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.starts_with("progress:")).collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }
}

/// Runs pgbench, streaming its `-P` lines to `obs`, keeping its stdout and stderr in
/// `<prefix>.stdout` / `<prefix>.stderr`. Killed (and `Cancelled` returned) on cancellation.
pub async fn run_pgbench(
    env: &RunnerEnv<'_>,
    cmd: &CommandLine,
    prefix: &Path,
    obs: &mut dyn Observer,
    ramp_up: bool,
    watch: Watch<'_>,
) -> Result<PgbenchOutput, RunnerError> {
    let with_ext = |ext: &str| -> PathBuf { PathBuf::from(format!("{}.{ext}", prefix.display())) };
    let stdout_file =
        std::fs::File::create(with_ext("stdout")).io_context(|| format!("create {}", with_ext("stdout").display()))?;
    let (mut child, record) = env.spawn_client(cmd, Stdio::from(stdout_file), "pgbench")?;
    let mut stderr_text = String::new();
    let mut progress = Vec::new();
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let started = std::time::Instant::now();
    // The watchdog: a run that outlives its duration by this much is hung, and is killed.
    let limit = watch.duration + env.watchdog_grace.unwrap_or(Duration::from_secs(30).max(watch.duration / 2));
    let mut fired = vec![false; watch.faults.len()];
    let mut injected = Injected::default();
    let client = child.id();
    let mut hung = false;
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(l)) => {
                    if let Some(p) = pgbench::parse_progress(&l) {
                        obs.progress(&p, ramp_up);
                        progress.push(p);
                    }
                    stderr_text.push_str(&l);
                    stderr_text.push('\n');
                }
                _ => break,
            },
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if env.cancelled() {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    std::fs::write(with_ext("stderr"), &stderr_text).ok();
                    if let Some(r) = record { let _ = env.journal.release(r); }
                    injected.revert(env.journal);
                    return Err(RunnerError::Cancelled);
                }
                let elapsed = started.elapsed();
                for note in faults::fire_due(watch.faults, &mut fired, elapsed, env, watch.server, client, &mut injected) {
                    obs.note(&format!("fault injected: {note}"));
                }
                if elapsed > limit {
                    hung = true;
                    let _ = child.start_kill();
                    break;
                }
            }
        }
    }
    let status = child.wait().await.io_context(|| "wait for pgbench".into())?;
    let injected = injected.revert(env.journal);
    if let Some(r) = record {
        let _ = env.journal.release(r);
    }
    std::fs::write(with_ext("stderr"), &stderr_text)
        .io_context(|| format!("write {}", with_ext("stderr").display()))?;
    let stdout = std::fs::read_to_string(with_ext("stdout")).unwrap_or_default();
    let watchdog = hung.then(|| {
        format!(
            "pgbench did not finish within {} s of a {} s run and was killed by the watchdog (hung client or stalled storage)",
            limit.as_secs(),
            watch.duration.as_secs()
        )
    });
    Ok(PgbenchOutput {
        success: status.success() && !hung,
        stdout,
        stderr: stderr_text,
        progress,
        watchdog,
        injected,
        exit: crate::diagnose::exit_text(&status),
    })
}

/// What to watch while pgbench runs: its duration (for the watchdog), faults to inject, and
/// the server they may target.
#[derive(Clone, Copy)]
pub struct Watch<'a> {
    pub duration: Duration,
    pub faults: &'a [Fault],
    pub server: Option<ProcessId>,
}

/// A sampling rate pgbench prints back unchanged (4 significant digits).
fn round_rate(r: f64) -> f64 {
    if r >= 1.0 {
        return 1.0;
    }
    let digits = (-r.log10()).ceil() as i32 + 3;
    let f = 10f64.powi(digits);
    (r * f).round() / f
}

/// The server log lines that explain a failure (PANIC, FATAL, ERROR, crashes), last few.
pub fn log_excerpt(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let hits: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["PANIC", "FATAL", "ERROR", "terminated by signal", "No space left", "Input/output error", "could not"]
                .iter()
                .any(|k| l.contains(k))
        })
        .collect();
    hits[hits.len().saturating_sub(6)..].join(" | ")
}

/// Keeps the kernel's recent messages (I/O errors, XFS shutdowns) next to a failed run.
fn save_kernel_messages(to: &Path) {
    let text = match CommandLine::new("dmesg").output(Some(Duration::from_secs(10))) {
        Ok(o) if o.status == 0 => {
            let lines: Vec<&str> = o.stdout.lines().collect();
            lines[lines.len().saturating_sub(200)..].join("\n")
        }
        Ok(o) => format!("dmesg exited with {}: {}", o.status, o.stderr.trim()),
        Err(e) => format!("dmesg could not run: {e}"),
    };
    let _ = std::fs::write(to, text);
}
