//! One measured run: start the placement's server (in its cgroup), CHECKPOINT, drop the page
//! cache, a discarded ramp-up, the measured pgbench run with per-second progress, then stop.
//! Raw output is kept next to every parsed figure.

use std::path::Path;
use std::time::Duration;

use journal::CommandLine;
use results::record::{RunRecord, RunStatus};
use results::{ResultsDir, timestamp};

use crate::cgroup::ServerCgroup;
use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::faults::Fault;
use crate::matrix::{MemoryLimit, PlacementTarget, PlannedRun, Profile, WorkloadKind, WorkloadSpec};
use crate::pgbench::Progress;
pub use crate::record::not_run;
use crate::record::{FailureKindExt, kind, new_record};
use crate::server::{self, Server};
use crate::{DATABASE, RunnerError, pgbench_run, tpcc_run};

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

/// What the steps of a run share: the environment, the inputs and the run's directory.
pub(crate) struct RunCtx<'c> {
    pub env: &'c RunnerEnv<'c>,
    pub inp: &'c RunInputs<'c>,
    pub run_dir: &'c Path,
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
    let ctx = RunCtx { env, inp, run_dir };
    let ramp_up = !inp.workload.ramp_up.is_zero();
    match &inp.workload.kind {
        WorkloadKind::Pgbench(w) => {
            let expected_tps = if ramp_up { pgbench_run::ramp_up(&ctx, srv, w, obs).await? } else { None };
            pgbench_run::measure(&ctx, srv, w, expected_tps, record, obs).await
        }
        WorkloadKind::Tpcc(w) => {
            if ramp_up {
                tpcc_run::ramp_up(&ctx, srv, w, obs).await?;
            }
            tpcc_run::measure(&ctx, srv, w, record, obs).await
        }
    }
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
