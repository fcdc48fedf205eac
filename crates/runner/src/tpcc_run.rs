//! One measured TPC-C run with the `tpcc` crate's driver: a discarded ramp-up drive, then the
//! measured drive, with the same evidence, faults and watchdog as a pgbench run. NOPM and TPM
//! are computed from the database's counters as HammerDB computes them.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use journal::ProcessId;
use results::record::{Metrics, RunRecord, SecondSample, StatementLatency};

use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::execute::{Evidence, Observer, RunInputs};
use crate::faults::{self, Fault, Injected};
use crate::matrix::TpccWorkload;
use crate::record::{FailureKindExt, kind};
use crate::server::{self, Server};
use crate::{DATABASE, RunnerError};

struct Drive {
    report: Option<tpcc::DriveReport>,
    error: Option<String>,
    injected: Vec<String>,
    watchdog: Option<String>,
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    env: &RunnerEnv<'_>,
    conn: &tpcc::ConnectSpec,
    cfg: &tpcc::TpccConfig,
    vus: u32,
    duration: Duration,
    obs: &mut dyn Observer,
    ramp_up: bool,
    fault_list: &[Fault],
    server: ProcessId,
) -> Result<Drive, RunnerError> {
    let cancel = AtomicBool::new(false);
    let limit = duration + env.watchdog_grace.unwrap_or(Duration::from_secs(30).max(duration / 2));
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel::<tpcc::DriveProgress>();
    let mut on_progress = move |p: tpcc::DriveProgress| {
        let _ = tx.send(p);
    };
    let run = tpcc::run(conn, cfg, vus, Duration::ZERO, duration, &cancel, &mut on_progress);
    tokio::pin!(run);
    let mut fired = vec![false; fault_list.len()];
    let mut injected = Injected::default();
    let mut watchdog = None;
    let result = loop {
        tokio::select! {
            r = &mut run => break r,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if env.cancelled() {
                    cancel.store(true, Ordering::SeqCst);
                }
                let elapsed = started.elapsed();
                for note in faults::fire_due(fault_list, &mut fired, elapsed, env, Some(server), None, &mut injected) {
                    obs.note(&format!("fault injected: {note}"));
                }
                if elapsed > limit && watchdog.is_none() {
                    watchdog = Some(format!(
                        "the TPC-C drive did not finish within {} s of a {} s run and was stopped by the watchdog",
                        limit.as_secs(),
                        duration.as_secs()
                    ));
                    cancel.store(true, Ordering::SeqCst);
                }
            }
        }
        while let Ok(p) = rx.try_recv() {
            obs.live(&format!(
                "{} {:>4.0} s  {:>9.1} tx/s  NOPM so far {:>9.0}",
                if ramp_up { "ramp-up" } else { "measuring" },
                p.elapsed_seconds,
                p.transactions_per_second,
                p.new_orders_per_minute
            ));
        }
    };
    let injected = injected.revert(env.journal);
    match result {
        Ok(report) => Ok(Drive { report: Some(report), error: None, injected, watchdog }),
        Err(tpcc::TpccError::Cancelled) if watchdog.is_none() => Err(RunnerError::Cancelled),
        Err(e) => Ok(Drive { report: None, error: Some(e.to_string()), injected, watchdog }),
    }
}

/// Measures one TPC-C run on a started server.
pub(crate) async fn measure(
    env: &RunnerEnv<'_>,
    inp: &RunInputs<'_>,
    run_dir: &Path,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
    srv: &mut Server,
    w: &TpccWorkload,
) -> Result<(), RunnerError> {
    let conn = tpcc::ConnectSpec {
        socket_dir: env.socket_dir.clone(),
        port: env.port,
        user: server::DB_ROLE.into(),
        database: DATABASE.into(),
    };
    let cfg = w.config();
    let vus = inp.planned.clients;
    if !inp.workload.ramp_up.is_zero() {
        let d = drive(env, &conn, &cfg, vus, inp.workload.ramp_up, obs, true, &[], srv.process).await?;
        if let Some(r) = &d.report {
            let _ = std::fs::write(run_dir.join("rampup.json"), serde_json::to_string_pretty(r).unwrap_or_default());
        }
        if let Some(e) = d.watchdog.or(d.error) {
            return Err(RunnerError::Workload(format!("TPC-C ramp-up failed: {e}")));
        }
    }
    record.command = format!(
        "pgtier TPC-C driver: {} virtual users, {} warehouses, mode {}, {}, keying/thinking {}, {}, {} s measured after a {} s ramp-up drive",
        vus,
        w.warehouses,
        w.mode.as_str(),
        match w.side {
            tpcc::Side::ServerProcedures => "server-side PL/pgSQL functions",
            tpcc::Side::ClientSql => "client-side SQL",
        },
        if w.keying_and_thinking { "on" } else { "off" },
        if w.all_warehouses { "all warehouses" } else { "one home warehouse per virtual user" },
        inp.workload.duration.as_secs(),
        inp.workload.ramp_up.as_secs()
    );
    let command_file = run_dir.join("command.txt");
    std::fs::write(&command_file, format!("{}\n", record.command))
        .io_context(|| format!("write {}", command_file.display()))?;
    let evidence = Evidence::begin(srv, inp.placement, run_dir).await?;
    let d = drive(env, &conn, &cfg, vus, inp.workload.duration, obs, false, inp.faults, srv.process).await;
    let client_cpu = d.as_ref().ok().and_then(|d| d.report.as_ref()).map(|r| r.client_cpu_seconds);
    evidence.end(srv, record, client_cpu, "TPC-C").await;
    let d = d?;
    record.faults = d.injected;
    if let Some(w) = d.watchdog {
        record.set_kind(kind::WATCHDOG);
        return Err(RunnerError::Workload(w));
    }
    let report = match (d.report, d.error) {
        (Some(r), _) => r,
        (None, e) => return Err(RunnerError::Workload(format!("TPC-C drive failed: {}", e.unwrap_or_default()))),
    };
    let report_file = run_dir.join("tpcc-report.json");
    std::fs::write(&report_file, serde_json::to_string_pretty(&report).unwrap_or_default())
        .io_context(|| format!("write {}", report_file.display()))?;
    let completed: u64 = report.per_type.iter().map(|t| t.count).sum();
    let errors: u64 = report.errors.values().sum();
    let mean = if completed > 0 {
        report.per_type.iter().map(|t| t.mean_ms * t.count as f64).sum::<f64>() / completed as f64
    } else {
        0.0
    };
    let neword = report.per_type.iter().find(|t| t.name == "new_order");
    record.metrics = Metrics {
        tps: report.tpm / 60.0,
        latency_ms_avg: mean,
        transactions: completed,
        failed_transactions: errors,
        latency_ms_p50: neword.map(|t| t.p50_ms),
        latency_ms_p90: neword.map(|t| t.p90_ms),
        latency_ms_p95: neword.map(|t| t.p95_ms),
        latency_ms_p99: neword.map(|t| t.p99_ms),
        latency_ms_p999: neword.map(|t| t.p999_ms),
        nopm: Some(report.nopm),
        tpm: Some(report.tpm),
        ..Default::default()
    };
    record.statements = report
        .per_type
        .iter()
        .map(|t| StatementLatency {
            latency_ms: t.mean_ms,
            failures: Some(t.errors_by_kind.values().sum()),
            statement: format!("TPC-C {}", t.name),
        })
        .collect();
    record.series = report
        .per_second
        .iter()
        .map(|(t, tps, lat)| SecondSample { t: *t, tps: *tps, latency_ms: *lat, latency_ms_stddev: None, failed: None })
        .collect();
    if errors > 0 {
        record.warnings.push(format!(
            "{errors} TPC-C transactions failed ({}), none retried; e.g. {}",
            report.errors.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
            report.error_samples.first().map(String::as_str).unwrap_or("")
        ));
    }
    Ok(())
}
