//! One measured run: start the placement's server (in its cgroup), read its settings,
//! CHECKPOINT, sync, drop the page cache, a discarded ramp-up, the measured interval (pgbench
//! or TPC-C), say what happened to the server if it was hurt, stop it. The run logic here takes
//! its steps on a [`RunSystem`](crate::system::RunSystem); raw output is kept next to every
//! parsed figure.

use std::path::Path;
use std::time::Duration;

use journal::{CommandError, Output};
use results::record::{FailureKind, RunRecord, RunStatus};
use results::timestamp;

use crate::RunnerError;
use crate::env::RunnerEnv;
use crate::error::IoContext;
pub use crate::record::not_run;
use crate::record::{FailureKindExt, new_record};
use crate::system::{RealRun, RunSystem};

pub(crate) use crate::run_inputs::RunCtx;
pub use crate::run_inputs::{Observer, RunInputs};

/// Makes one run. Failures of the run itself (the server does not start, pgbench fails) give a
/// record with status `failed` and the reason; only cancellation is an error.
pub async fn execute_run(
    env: &RunnerEnv<'_>,
    inp: &RunInputs<'_>,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunnerError> {
    let run_dir = inp.results.run_dir(&inp.planned.run_id);
    let mut sys = RealRun::new(RunCtx { env, inp, run_dir: &run_dir });
    run(&mut sys, inp, env.drop_caches, obs).await
}

/// The run logic: the steps of one run taken on `sys`, the record they give, stored as
/// `runs/<id>/result.json`.
pub(crate) async fn run<S: RunSystem>(
    sys: &mut S,
    inp: &RunInputs<'_>,
    drop_caches: bool,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunnerError> {
    let run_dir = inp.results.run_dir(&inp.planned.run_id);
    std::fs::create_dir_all(&run_dir).io_context(|| format!("mkdir {}", run_dir.display()))?;
    let mut record = new_record(inp.planned, inp.workload, timestamp::now_rfc3339());
    match measure(sys, inp, drop_caches, &mut record, obs).await {
        Ok(()) => {}
        Err(RunnerError::Cancelled) => return Err(RunnerError::Cancelled),
        Err(e) => record_failure(sys, &run_dir, &mut record, &e),
    }
    record.finished_at = timestamp::now_rfc3339();
    record.raw_files = list_files(&run_dir);
    inp.results.write_run(&record).io_context(|| format!("write result of {}", record.run_id))?;
    Ok(record)
}

/// One slice of a sliced session (design `slices`): the measured interval on a server that is
/// already up (the session starts it, CHECKPOINTs and drops caches once, and stops it at its
/// end), what happened to the server if it was hurt, the record stored as
/// `runs/<id>/result.json`.
pub(crate) async fn run_slice<S: RunSystem>(
    sys: &mut S,
    inp: &RunInputs<'_>,
    expected_tps: Option<f64>,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunnerError> {
    let run_dir = inp.results.run_dir(&inp.planned.run_id);
    std::fs::create_dir_all(&run_dir).io_context(|| format!("mkdir {}", run_dir.display()))?;
    let mut record = new_record(inp.planned, inp.workload, timestamp::now_rfc3339());
    let mut outcome = match sys.read_settings().await {
        Ok(settings) => {
            record.server_settings = settings;
            sys.measure(expected_tps, &mut record, obs).await
        }
        Err(e) => Err(e),
    };
    if matches!(outcome, Err(RunnerError::Cancelled)) {
        return Err(RunnerError::Cancelled);
    }
    outcome = explain_deaths(sys, inp, &mut record, outcome);
    if let Some(c) = sys.cgroup() {
        let mem = record.memory.get_or_insert_with(Default::default);
        mem.limit_bytes = c.limit_bytes;
        mem.peak_bytes = c.memory.peak;
        mem.page_cache_bytes = c.memory.page_cache;
    }
    if let Err(e) = outcome {
        record_failure(sys, &run_dir, &mut record, &e);
    }
    record.finished_at = timestamp::now_rfc3339();
    record.raw_files = list_files(&run_dir);
    inp.results.write_run(&record).io_context(|| format!("write result of {}", record.run_id))?;
    Ok(record)
}

/// A failed run's record: the reason with the server log's explaining lines, the kind
/// (`setup` when no step said), and the kernel's messages kept next to it (`dmesg.txt`).
fn record_failure<S: RunSystem>(sys: &mut S, run_dir: &Path, record: &mut RunRecord, e: &RunnerError) {
    record.status = RunStatus::Failed;
    let mut why = e.to_string();
    let excerpt = excerpt_of(&sys.server_log());
    if !excerpt.is_empty() {
        why.push_str(&format!("; server log: {excerpt}"));
    }
    record.failure = Some(why);
    record.default_kind(FailureKind::Setup);
    let _ = std::fs::write(run_dir.join("dmesg.txt"), kernel_messages(&sys.dmesg()));
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

/// Starts the server, measures on it, says what happened to it and stops it.
async fn measure<S: RunSystem>(
    sys: &mut S,
    inp: &RunInputs<'_>,
    drop_caches: bool,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
) -> Result<(), RunnerError> {
    if let Err(e) = sys.start_server().await {
        record.set_kind(FailureKind::ServerStart);
        return Err(e);
    }
    let mut outcome = measure_on(sys, inp, drop_caches, record, obs).await;
    if !matches!(outcome, Err(RunnerError::Cancelled)) {
        outcome = explain_deaths(sys, inp, record, outcome);
    }
    // A server that crashed may sit in crash recovery: it is not waited for a minute.
    let crashed = record.kind_is(FailureKind::OutOfMemory) || record.kind_is(FailureKind::ServerCrash);
    if let Some(c) = sys.cgroup() {
        let mem = record.memory.get_or_insert_with(Default::default);
        mem.limit_bytes = c.limit_bytes;
        mem.peak_bytes = c.memory.peak;
        mem.page_cache_bytes = c.memory.page_cache;
    }
    let stopped = sys.stop_server(Duration::from_secs(if crashed { 10 } else { 60 })).await;
    sys.remove_cgroup().await?;
    outcome?;
    stopped
}

/// On a started server: its settings, CHECKPOINT, sync, the page cache dropped, the ramp-up
/// and the measured interval.
async fn measure_on<S: RunSystem>(
    sys: &mut S,
    inp: &RunInputs<'_>,
    drop_caches: bool,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
) -> Result<(), RunnerError> {
    record.server_settings = sys.read_settings().await?;
    sys.checkpoint().await?;
    sys.sync();
    if drop_caches {
        sys.drop_caches()?;
    }
    sys.reset_peak();
    let expected_tps = if inp.workload.ramp_up.is_zero() { None } else { sys.ramp_up(obs).await? };
    sys.measure(expected_tps, record, obs).await
}

/// Says why a run failed when the server was hurt: an OOM kill inside its cgroup (kind
/// `out-of-memory`, even when the workload itself finished: a crash restart tainted it), a
/// process killed by a signal or a postmaster that ended (`server-crash`), with what the server
/// log and the kernel said. Other failures keep their own kind (`workload` when nothing
/// happened to the server).
fn explain_deaths<S: RunSystem>(
    sys: &mut S,
    inp: &RunInputs<'_>,
    record: &mut RunRecord,
    outcome: Result<(), RunnerError>,
) -> Result<(), RunnerError> {
    let oom_kills = sys.cgroup().and_then(|c| c.oom_kills).unwrap_or(0);
    let deaths = if oom_kills > 0 || outcome.is_err() { death_report(sys) } else { Vec::new() };
    if oom_kills > 0 {
        let (limit, peak) = sys.cgroup().map_or((None, None), |c| (c.limit_bytes, c.memory.peak));
        record.set_kind(FailureKind::OutOfMemory);
        return Err(RunnerError::Server(oom_text(inp, oom_kills, (limit, peak), &deaths, &outcome)));
    }
    match outcome {
        Ok(()) => Ok(()),
        Err(e) if deaths.is_empty() => {
            let running = sys.postmaster().is_some_and(|p| p.running);
            record.default_kind(if running { FailureKind::Workload } else { FailureKind::ServerCrash });
            Err(e)
        }
        Err(e) => {
            if record.failure_kind.is_none() || record.kind_is(FailureKind::Workload) {
                record.set_kind(FailureKind::ServerCrash);
            }
            Err(RunnerError::Server(format!("{}; the run then failed: {e}", deaths.join("; "))))
        }
    }
}

/// What happened to the server: the postmaster's end, processes killed, the kernel's words.
fn death_report<S: RunSystem>(sys: &mut S) -> Vec<String> {
    let Some(postmaster) = sys.postmaster() else { return Vec::new() };
    let exit = postmaster.exit.filter(|_| !postmaster.running);
    let log = sys.server_log();
    let cgroup = sys.cgroup().map(|c| c.kernel_path);
    let kernel = crate::diagnose::kernel_log_of(&sys.dmesg());
    crate::diagnose::death_report(postmaster.pid, exit.as_ref(), &log, &kernel, cgroup.as_deref())
}

/// An OOM kill in the server's cgroup, in words: the limit and the peak, who was killed, and
/// what the run's settings need.
fn oom_text(
    inp: &RunInputs<'_>,
    oom_kills: u64,
    (limit, peak): (Option<u64>, Option<u64>),
    deaths: &[String],
    outcome: &Result<(), RunnerError>,
) -> String {
    use crate::memory::{MemoryKind, MemoryPlan, show};
    let settings = crate::system::server_settings(inp.profile, inp.memory, inp.placement);
    let plan = MemoryPlan::of(&settings, inp.planned.clients, inp.workload.data_shape());
    let mut text = format!(
        "the kernel's OOM killer killed {oom_kills} process(es) in the server's memory cgroup (limit {}, peak {}): {}",
        limit.map(show).unwrap_or_else(|| "none".into()),
        peak.map(show).unwrap_or_else(|| "unknown".into()),
        deaths.join("; ")
    );
    text.push_str(&format!(
        ". What these settings need (largest first): {}",
        plan.describe(&[MemoryKind::Certain, MemoryKind::Likely, MemoryKind::UpperBound]).join("; ")
    ));
    if let Err(e) = outcome {
        text.push_str(&format!(". The workload then failed: {e}"));
    }
    text
}

/// The server log lines that explain a failure (PANIC, FATAL, ERROR, crashes), last few.
fn excerpt_of(log: &str) -> String {
    let hits: Vec<&str> = log
        .lines()
        .filter(|l| {
            ["PANIC", "FATAL", "ERROR", "terminated by signal", "No space left", "Input/output error", "could not"]
                .iter()
                .any(|k| l.contains(k))
        })
        .collect();
    hits[hits.len().saturating_sub(6)..].join(" | ")
}

/// The kernel's recent messages (I/O errors, XFS shutdowns) kept next to a failed run, or why
/// there are none.
fn kernel_messages(dmesg: &Result<Output, CommandError>) -> String {
    match dmesg {
        Ok(o) if o.status == 0 => {
            let lines: Vec<&str> = o.stdout.lines().collect();
            lines[lines.len().saturating_sub(200)..].join("\n")
        }
        Ok(o) => format!("dmesg exited with {}: {}", o.status, o.stderr.trim()),
        Err(e) => format!("dmesg could not run: {e}"),
    }
}

#[cfg(test)]
mod tests;
