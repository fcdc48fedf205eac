//! One measured TPC-C run with the `tpcc` crate's driver: a discarded ramp-up drive, then the
//! measured drive, with the same evidence, supervisor (faults, watchdog, cancellation) as a
//! pgbench run. NOPM and TPM are computed from the database's counters as HammerDB computes them.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use results::Warning;
use results::record::{FailureKind, Metrics, RunRecord, SecondSample, StatementLatency};

use crate::env::RunnerEnv;
use crate::error::IoContext;
use crate::evidence::Evidence;
use crate::matrix::TpccWorkload;
use crate::record::FailureKindExt;
use crate::run_inputs::{Observer, RunCtx, RunInputs};
use crate::server::{self, Server};
use crate::supervisor::{Stop, Supervised, Watch, supervise};
use crate::tpcc_drive::{Drive, live_line};
use crate::{DATABASE, RunnerError, tpcc_remote};

struct DriveSpec {
    conn: tpcc::ConnectSpec,
    cfg: tpcc::TpccConfig,
    vus: u32,
}

/// The tpcc crate's drive as the supervisor sees it: a future that ends with the report, asked
/// to stop through its cancel flag, its progress coming through a channel.
struct TpccDrive<'f, F> {
    run: Pin<&'f mut F>,
    cancel: &'f AtomicBool,
    progress: std::sync::mpsc::Receiver<tpcc::DriveProgress>,
    ramp_up: bool,
}

impl<F: Future<Output = Result<tpcc::DriveReport, tpcc::TpccError>>> Supervised for TpccDrive<'_, F> {
    type Output = F::Output;

    async fn step(&mut self) -> Option<F::Output> {
        Some(self.run.as_mut().await)
    }

    fn report(&mut self, obs: &mut dyn Observer) {
        while let Ok(p) = self.progress.try_recv() {
            obs.live(&live_line(&p, self.ramp_up));
        }
    }

    fn stop(&mut self, _why: Stop) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    fn client_pid(&self) -> Option<u32> {
        // The virtual users run inside pgtier.
        None
    }
}

/// One drive of `watch.duration` under the supervisor.
async fn drive(
    env: &RunnerEnv<'_>,
    spec: &DriveSpec,
    watch: Watch<'_>,
    obs: &mut dyn Observer,
    ramp_up: bool,
) -> Result<Drive, RunnerError> {
    let cancel = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel::<tpcc::DriveProgress>();
    let mut on_progress = move |p: tpcc::DriveProgress| {
        let _ = tx.send(p);
    };
    let run = tpcc::run(&spec.conn, &spec.cfg, spec.vus, (Duration::ZERO, watch.duration), &cancel, &mut on_progress);
    tokio::pin!(run);
    let mut work = TpccDrive { run: run.as_mut(), cancel: &cancel, progress: rx, ramp_up };
    let done = supervise(env, watch, &mut work, obs).await;
    let watchdog = (done.stopped == Some(Stop::Watchdog)).then(|| {
        format!(
            "the TPC-C drive did not finish within {} s of a {} s run and was stopped by the watchdog",
            done.limit.as_secs(),
            watch.duration.as_secs()
        )
    });
    let injected = done.injected;
    match done.output {
        Ok(report) => Ok(Drive { report: Some(report), error: None, injected, watchdog, cpu: None }),
        Err(tpcc::TpccError::Cancelled) if watchdog.is_none() => Err(RunnerError::Cancelled),
        Err(e) => Ok(Drive { report: None, error: Some(e.to_string()), injected, watchdog, cpu: None }),
    }
}

/// One drive: in this process, or on the client host when the run has one (`prefix` names
/// the files of what the driver there printed).
async fn drive_anywhere(
    ctx: &RunCtx<'_>,
    w: &TpccWorkload,
    watch: Watch<'_>,
    obs: &mut dyn Observer,
    ramp_up: bool,
    prefix: &str,
) -> Result<Drive, RunnerError> {
    let Some(client) = &ctx.env.client else {
        return drive(ctx.env, &drive_spec(ctx.env, ctx.inp, w), watch, obs, ramp_up).await;
    };
    let spec = remote_spec(ctx, w, watch.duration);
    tpcc_remote::drive(ctx.env, client, (&spec, ramp_up), watch, obs, &ctx.run_dir.join(prefix)).await
}

/// What the driver on the client host is asked to do.
fn remote_spec(ctx: &RunCtx<'_>, w: &TpccWorkload, duration: Duration) -> tpcc_remote::RemoteDrive {
    let client = ctx.env.client.as_ref().expect("a client host");
    tpcc_remote::RemoteDrive {
        address: client.server_address,
        port: ctx.env.server.port,
        user: server::DB_ROLE.into(),
        database: DATABASE.into(),
        passfile: client.passfile.clone(),
        config: w.config(),
        virtual_users: ctx.inp.planned.clients,
        duration_ms: duration.as_millis() as u64,
    }
}

fn drive_spec(env: &RunnerEnv<'_>, inp: &RunInputs<'_>, w: &TpccWorkload) -> DriveSpec {
    let conn = tpcc::ConnectSpec {
        socket_dir: env.server.socket_dir.clone(),
        port: env.server.port,
        user: server::DB_ROLE.into(),
        database: DATABASE.into(),
        tcp: None,
    };
    DriveSpec { conn, cfg: w.config(), vus: inp.planned.clients }
}

/// The discarded ramp-up drive (its report in `rampup.json`).
pub(crate) async fn ramp_up(
    ctx: &RunCtx<'_>,
    srv: &Server,
    w: &TpccWorkload,
    obs: &mut dyn Observer,
) -> Result<(), RunnerError> {
    let watch = Watch { duration: ctx.inp.workload.ramp_up, faults: &[], server: Some(srv.process) };
    let d = drive_anywhere(ctx, w, watch, obs, true, "rampup-tpcc").await?;
    if let Some(r) = &d.report {
        let _ = std::fs::write(ctx.run_dir.join("rampup.json"), serde_json::to_string_pretty(r).unwrap_or_default());
    }
    if let Some(e) = d.watchdog.or(d.error) {
        return Err(RunnerError::Workload(format!("TPC-C ramp-up failed: {e}")));
    }
    Ok(())
}

/// Measures one TPC-C run on a started server.
pub(crate) async fn measure(
    ctx: &RunCtx<'_>,
    srv: &mut Server,
    w: &TpccWorkload,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
) -> Result<(), RunnerError> {
    let (env, inp, run_dir) = (ctx.env, ctx.inp, ctx.run_dir);
    record.command = command_text(env, w, inp);
    let mut command = format!("{}\n", record.command);
    if let Some(client) = &env.client {
        // The driver's session on the client host, and this drive's request to it (neither
        // holds the password).
        let request = tpcc_remote::Request::Drive(Box::new(remote_spec(ctx, w, inp.workload.duration)));
        let request = serde_json::to_string(&request).unwrap_or_default();
        command.push_str(&format!(
            "driver session (one for the run): {}\nthis drive's request to it: {request}\n",
            tpcc_remote::session_command(client)?
        ));
    }
    let command_file = run_dir.join("command.txt");
    std::fs::write(&command_file, command).io_context(|| format!("write {}", command_file.display()))?;
    let evidence = Evidence::begin(srv, inp.placement, run_dir).await?;
    let watch = Watch { duration: inp.workload.duration, faults: inp.faults, server: Some(srv.process) };
    let d = drive_anywhere(ctx, w, watch, obs, false, "tpcc").await;
    let client_cpu = match &d {
        Ok(Drive { cpu: Some(c), .. }) => Some(*c),
        Ok(Drive { report: Some(r), .. }) => {
            if env.client.is_some() {
                record.warnings.push(Warning::Other(
                    "the client host did not report the TPC-C driver's CPU time over the drive: the client CPU figures are those of its measured interval".into(),
                ));
            }
            Some(r.client_cpu_seconds)
        }
        _ => None,
    };
    evidence.end(srv, record, client_cpu, "TPC-C").await;
    let d = d?;
    record.faults = d.injected;
    if let Some(w) = d.watchdog {
        record.set_kind(FailureKind::Watchdog);
        return Err(RunnerError::Workload(w));
    }
    let report = match (d.report, d.error) {
        (Some(r), _) => r,
        (None, e) => return Err(RunnerError::Workload(format!("TPC-C drive failed: {}", e.unwrap_or_default()))),
    };
    let report_file = run_dir.join("tpcc-report.json");
    std::fs::write(&report_file, serde_json::to_string_pretty(&report).unwrap_or_default())
        .io_context(|| format!("write {}", report_file.display()))?;
    fill(record, &report);
    Ok(())
}

/// The driver's command, in words (`command.txt`).
fn command_text(env: &RunnerEnv<'_>, w: &TpccWorkload, inp: &RunInputs<'_>) -> String {
    let vus = inp.planned.clients;
    let place = match &env.client {
        None => String::new(),
        Some(c) => format!(
            " on client host {}, over TCP to {} (scram-sha-256)",
            c.transport.host(),
            std::net::SocketAddr::new(c.server_address, env.server.port)
        ),
    };
    format!(
        "pgtier TPC-C driver{place}: {} virtual users, {} warehouses, mode {}, {}, keying/thinking {}, {}, {} s measured after a {} s ramp-up drive",
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
    )
}

/// The record's figures from the drive's report.
fn fill(record: &mut RunRecord, report: &tpcc::DriveReport) {
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
        record.warnings.push(Warning::TpccErrors {
            failed: errors,
            by_kind: report.errors.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            example: report.error_samples.first().cloned().unwrap_or_default(),
        });
    }
}
