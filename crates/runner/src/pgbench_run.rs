//! A pgbench run on a started server: the discarded ramp-up, the measured run with `-P 1 -r`
//! and a sampled transaction log, and pgbench itself under the supervisor (its `-P` lines
//! streamed to the observer, stdout and stderr kept in the run's directory).

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use journal::CommandLine;
use results::record::{FailureKind, Metrics, RunRecord, SecondSample, StatementLatency};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr};

use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::evidence::Evidence;
use crate::matrix::PgbenchWorkload;
use crate::pgbench::{self, Progress, RunOptions};
use crate::pgstats;
use crate::record::FailureKindExt;
use crate::run_inputs::{Observer, RunCtx};
use crate::server::{self, Server};
use crate::supervisor::{Stop, Supervised, Watch, supervise};
use crate::{DATABASE, RunnerError};

/// The transactions a second assumed when no ramp-up said, to size the transaction log.
const DEFAULT_TPS: f64 = 5_000.0;

fn options(ctx: &RunCtx<'_>, w: &PgbenchWorkload) -> RunOptions {
    RunOptions {
        builtin: w.builtin,
        clients: ctx.inp.planned.clients,
        threads: ctx.inp.planned.threads,
        duration: ctx.inp.workload.ramp_up,
        progress_s: 1,
        per_statement: w.per_statement,
        transaction_log: None,
        extra: w.extra_args.clone(),
    }
}

fn command(env: &RunnerEnv<'_>, options: &RunOptions) -> CommandLine {
    let Some(client) = &env.client else {
        let target = pgbench::Target {
            socket_dir: &env.server.socket_dir,
            port: env.server.port,
            user: server::DB_ROLE,
            database: DATABASE,
        };
        return pgbench::run_command(&env.server.install.client_dir, &target, options);
    };
    // On the client host: over TCP to the address the server listens on for it (`-h` takes
    // an address as well as a socket directory), the password from the host's PGPASSFILE.
    let address = client.server_address.to_string();
    let target = pgbench::Target {
        socket_dir: Path::new(&address),
        port: env.server.port,
        user: server::DB_ROLE,
        database: DATABASE,
    };
    let mut cmd = pgbench::run_command(Path::new("/"), &target, options);
    cmd.program = client.pgbench.clone();
    client.wrap(&cmd)
}

/// Where the measured run's transaction log is written: the run's directory here, or the
/// run's files on the client host (brought back by [`fetch_transaction_log`]).
fn transaction_log_prefix(env: &RunnerEnv<'_>, run_dir: &Path) -> String {
    match &env.client {
        None => run_dir.join("txlog").display().to_string(),
        Some(c) => {
            let run = run_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
            format!("{}/{run}-txlog", c.transport.work_dir())
        }
    }
}

/// Brings a remote run's transaction logs (`<prefix>.<pid>[.<thread>]`) back into the run's
/// directory as `txlog.remote`, and removes them on the client host.
fn fetch_transaction_log(env: &RunnerEnv<'_>, prefix: &str, run_dir: &Path) -> Result<(), RunnerError> {
    let Some(c) = &env.client else { return Ok(()) };
    let sh =
        |script: &str| -> Vec<String> { vec!["sh".into(), "-c".into(), script.into(), "sh".into(), prefix.into()] };
    let bytes = c.transport.run(&sh(r#"cat -- "$1".*"#))?;
    let local = run_dir.join("txlog.remote");
    std::fs::write(&local, bytes).io_context(|| format!("write {}", local.display()))?;
    c.transport.run(&sh(r#"rm -f -- "$1".*"#))?;
    Ok(())
}

/// The discarded ramp-up (`rampup.*`); returns its throughput when its summary gives one.
pub(crate) async fn ramp_up(
    ctx: &RunCtx<'_>,
    srv: &Server,
    w: &PgbenchWorkload,
    obs: &mut dyn Observer,
) -> Result<Option<f64>, RunnerError> {
    let cmd = command(ctx.env, &options(ctx, w));
    let watch = Watch { duration: ctx.inp.workload.ramp_up, faults: &[], server: Some(srv.process) };
    let out = run_pgbench(ctx.env, &cmd, &ctx.run_dir.join("rampup"), obs, true, watch).await?;
    if !out.success {
        return Err(RunnerError::Workload(format!("ramp-up pgbench failed ({}): {}", out.exit, out.stderr_tail())));
    }
    Ok(pgbench::parse_summary(&out.stdout).ok().map(|s| s.tps.max(1.0)))
}

/// The measured run, with its evidence and the faults to inject. `expected_tps` (the
/// ramp-up's) sizes the sampled transaction log to about 50,000 lines.
pub(crate) async fn measure(
    ctx: &RunCtx<'_>,
    srv: &mut Server,
    w: &PgbenchWorkload,
    expected_tps: Option<f64>,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
) -> Result<(), RunnerError> {
    let (inp, run_dir) = (ctx.inp, ctx.run_dir);
    let mut options = options(ctx, w);
    options.duration = inp.workload.duration;
    let expected = expected_tps.unwrap_or(DEFAULT_TPS);
    let rate = (50_000.0 / (expected * inp.workload.duration.as_secs_f64())).clamp(0.0001, 1.0);
    let txlog = transaction_log_prefix(ctx.env, run_dir);
    options.transaction_log = Some((round_rate(rate), txlog.clone()));
    let cmd = command(ctx.env, &options);
    record.command = cmd.to_string();
    let command_file = run_dir.join("command.txt");
    std::fs::write(&command_file, format!("{cmd}\n")).io_context(|| format!("write {}", command_file.display()))?;

    let evidence = Evidence::begin(srv, inp.placement, run_dir).await?;
    let watch = Watch { duration: inp.workload.duration, faults: inp.faults, server: Some(srv.process) };
    let out = run_pgbench(ctx.env, &cmd, &run_dir.join("pgbench"), obs, false, watch).await;
    // On a client host the harness's child is ssh: pgbench's CPU is what the host's shell said.
    let remote_cpu = match (&ctx.env.client, &out) {
        (Some(_), Ok(o)) => {
            let cpu = crate::env::remote_cpu_seconds(&o.stderr);
            if cpu.is_none() {
                record.warnings.push(results::Warning::Other(
                    "the client host did not report pgbench's CPU time: the client CPU figures are those of the local ssh".into(),
                ));
            }
            cpu
        }
        _ => None,
    };
    evidence.end(srv, record, remote_cpu, "pgbench").await;
    let out = out?;
    record.faults = out.injected.clone();
    if let Some(w) = &out.watchdog {
        record.set_kind(FailureKind::Watchdog);
        return Err(RunnerError::Workload(w.clone()));
    }
    if out.success {
        fetch_transaction_log(ctx.env, &txlog, run_dir)?;
    }
    fill(record, &out, run_dir)?;
    if !srv.is_running() {
        return Err(RunnerError::Server(format!(
            "the server stopped during the run; log tail: {}",
            server::log_tail(&srv.log, 10)
        )));
    }
    Ok(())
}

/// The record's figures from what pgbench printed and its transaction logs.
fn fill(record: &mut RunRecord, out: &PgbenchOutput, run_dir: &Path) -> Result<(), RunnerError> {
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
    Ok(())
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

/// pgbench as the supervisor sees it: its stderr read line by line until it closes, then its
/// exit status.
struct PgbenchClient {
    child: Child,
    pid: Option<u32>,
    lines: Lines<BufReader<ChildStderr>>,
    closed: bool,
    stderr: String,
    progress: Vec<Progress>,
    /// `progress[reported..]` is not yet passed on.
    reported: usize,
    ramp_up: bool,
}

impl Supervised for PgbenchClient {
    type Output = std::io::Result<ExitStatus>;

    async fn step(&mut self) -> Option<std::io::Result<ExitStatus>> {
        if !self.closed {
            match self.lines.next_line().await {
                Ok(Some(l)) => {
                    if let Some(p) = pgbench::parse_progress(&l) {
                        self.progress.push(p);
                    }
                    self.stderr.push_str(&l);
                    self.stderr.push('\n');
                    return None;
                }
                _ => self.closed = true,
            }
        }
        Some(self.child.wait().await)
    }

    fn report(&mut self, obs: &mut dyn Observer) {
        for p in &self.progress[self.reported..] {
            obs.progress(p, self.ramp_up);
        }
        self.reported = self.progress.len();
    }

    fn stop(&mut self, _why: Stop) {
        let _ = self.child.start_kill();
    }

    fn client_pid(&self) -> Option<u32> {
        self.pid
    }
}

/// Runs pgbench under the supervisor, streaming its `-P` lines to `obs`, keeping its stdout
/// and stderr in `<prefix>.stdout` / `<prefix>.stderr`. Killed (and `Cancelled` returned) on
/// cancellation; killed by the watchdog when it outlives its duration.
pub(crate) async fn run_pgbench(
    env: &RunnerEnv<'_>,
    cmd: &CommandLine,
    prefix: &Path,
    obs: &mut dyn Observer,
    ramp_up: bool,
    watch: Watch<'_>,
) -> Result<PgbenchOutput, RunnerError> {
    let with_ext = |ext: &str| -> PathBuf { PathBuf::from(format!("{}.{ext}", prefix.display())) };
    let (stdout_path, stderr_path) = (with_ext("stdout"), with_ext("stderr"));
    let stdout_file = std::fs::File::create(&stdout_path).io_context(|| format!("create {}", stdout_path.display()))?;
    let (mut child, record) = env.spawn_client(cmd, Stdio::from(stdout_file), "pgbench")?;
    let lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let pid = child.id();
    let mut client = PgbenchClient {
        child,
        pid,
        lines,
        closed: false,
        stderr: String::new(),
        progress: Vec::new(),
        reported: 0,
        ramp_up,
    };
    let run = supervise(env, watch, &mut client, obs).await;
    if let Some(r) = record {
        let _ = env.server.journal.release(r);
    }
    if run.stopped == Some(Stop::Cancelled) {
        std::fs::write(&stderr_path, &client.stderr).ok();
        return Err(RunnerError::Cancelled);
    }
    let status = run.output.io_context(|| "wait for pgbench".into())?;
    std::fs::write(&stderr_path, &client.stderr).io_context(|| format!("write {}", stderr_path.display()))?;
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let hung = run.stopped == Some(Stop::Watchdog);
    let watchdog = hung.then(|| {
        format!(
            "pgbench did not finish within {} s of a {} s run and was killed by the watchdog (hung client or stalled storage)",
            run.limit.as_secs(),
            watch.duration.as_secs()
        )
    });
    Ok(PgbenchOutput {
        success: status.success() && !hung,
        stdout,
        stderr: client.stderr,
        progress: client.progress,
        watchdog,
        injected: run.injected,
        exit: crate::diagnose::exit_text(&status),
    })
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

#[cfg(test)]
mod tests {
    use super::round_rate;

    #[test]
    fn sampling_rates_pgbench_prints_back() {
        assert_eq!(round_rate(1.5), 1.0);
        assert_eq!(round_rate(0.123456), 0.1235);
        assert_eq!(round_rate(0.000123456), 0.0001235);
    }
}
