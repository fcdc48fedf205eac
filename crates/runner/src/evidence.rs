//! The evidence around a measured interval besides the workload's own figures: PostgreSQL's
//! counters, client and server CPU, device I/O, checkpoints and wait events, with the raw
//! counters written next to the figures.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use results::Warning;
use results::record::RunRecord;

use crate::matrix::PlacementTarget;
use crate::pgstats;
use crate::sampler::{self, Sampler};
use crate::server::{self, Server};
use crate::waits::{self, WaitSampler};
use crate::{DATABASE, RunnerError};

/// What is measured around a measured interval besides the workload's own figures:
/// PostgreSQL's counters, client and server CPU, device I/O, checkpoints.
pub(crate) struct Evidence {
    client: tokio_postgres::Client,
    before: pgstats::Snapshot,
    server_cpu0: Option<f64>,
    client_cpu0: f64,
    /// The study's own CPU at the start (for the CPU used outside it).
    study0: StudyCpu,
    wall0: std::time::Instant,
    started: SystemTime,
    sampler: Sampler,
    /// pg_stat_activity about ten times a second, on a connection of its own.
    waits: WaitSampler,
    /// The run's directory: the raw counters behind the figures are written there.
    run_dir: PathBuf,
}

/// The raw figures behind [`results::record::MachineState::study_cpu_s`], in the run's directory.
pub const STUDY_CPU_FILE: &str = "study-cpu.txt";

/// CPU-seconds the study's own processes have used so far: every PostgreSQL server of the run
/// (the run's cgroup, parent of each server's), and pgtier's process (every thread: the
/// samplers, an in-process TPC-C driver) with its reaped children (pgbench, reaped at the end
/// of its run; with a client host, the local ssh). Cheap: one cgroup file and two getrusage.
struct StudyCpu {
    servers_s: Option<f64>,
    pgtier_s: f64,
    children_s: f64,
}

impl StudyCpu {
    fn now(srv: &Server) -> StudyCpu {
        StudyCpu {
            servers_s: srv.cgroup.as_ref().and_then(|c| c.run_cpu_seconds()),
            pgtier_s: sampler::process_cpu_seconds(),
            children_s: sampler::children_cpu_seconds(),
        }
    }

    /// The study's CPU-seconds between `start` and now; None without the servers' cgroup.
    fn since(&self, start: &StudyCpu) -> Option<f64> {
        let servers = self.servers_s? - start.servers_s?;
        Some(servers + (self.pgtier_s - start.pgtier_s) + (self.children_s - start.children_s))
    }
}

fn study_cpu_text(a: &StudyCpu, b: &StudyCpu, study: Option<f64>) -> String {
    let line = |at: &str, c: &StudyCpu| {
        format!(
            "{at} servers_cgroup_s={} pgtier_s={:.6} children_s={:.6}\n",
            c.servers_s.map(|s| format!("{s:.6}")).unwrap_or_else(|| "unknown".into()),
            c.pgtier_s,
            c.children_s
        )
    };
    format!(
        "# CPU-seconds of the study's processes so far: the run's server cgroup, pgtier (getrusage self), its reaped children\n{}{}study_cpu_s={}\n",
        line("begin", a),
        line("end", b),
        study.map(|s| format!("{s:.6}")).unwrap_or_else(|| "unknown".into())
    )
}

impl Evidence {
    pub(crate) async fn begin(
        srv: &Server,
        placement: &PlacementTarget,
        run_dir: &Path,
    ) -> Result<Evidence, RunnerError> {
        let client = srv.connect(DATABASE).await?;
        let before = pgstats::snapshot(&client).await.map_err(RunnerError::query("read statistics"))?;
        Ok(Evidence {
            client,
            before,
            server_cpu0: srv.cgroup.as_ref().and_then(|c| c.cpu_seconds()),
            client_cpu0: sampler::children_cpu_seconds(),
            study0: StudyCpu::now(srv),
            wall0: std::time::Instant::now(),
            started: SystemTime::now(),
            sampler: Sampler::start(placement.devices.clone(), Duration::from_secs(1)),
            waits: WaitSampler::start(
                waits::Target {
                    socket_dir: srv.socket_dir.clone(),
                    port: srv.port,
                    user: server::DB_ROLE.into(),
                    database: DATABASE.into(),
                },
                waits::INTERVAL,
            ),
            run_dir: run_dir.to_path_buf(),
        })
    }

    /// Fills the record. `client_cpu` overrides the CPU of reaped children (for an in-process
    /// client such as the TPC-C driver).
    pub(crate) async fn end(self, srv: &Server, record: &mut RunRecord, client_cpu: Option<f64>, client_name: &str) {
        let sampled = self.sampler.finish();
        let study1 = StudyCpu::now(srv);
        let (mut wait_events, wait_text) = self.waits.finish();
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
        wait_events.raw_file = waits::write_raw(&self.run_dir, &wait_text);
        if wait_events.snapshots == 0 {
            record.warnings.push(Warning::Other(format!(
                "no wait events were sampled ({}): the run's bottleneck is judged from its counters alone",
                wait_text.lines().find_map(|l| l.strip_prefix("# sampling stopped early: ")).unwrap_or("no snapshot")
            )));
        }
        record.wait_events = Some(wait_events);
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
            record.warnings.push(Warning::ClientCpuBound {
                client: client_name.to_string(),
                core_pct: cpu.client_core_pct,
                threads: record.threads,
            });
        }
        let machine_pct = (client_cpu + server_cpu) / wall.max(1e-3) / hardware * 100.0;
        if machine_pct > 90.0 {
            record.warnings.push(Warning::MachineCpuBound { machine_pct, hardware_threads: hardware as u32 });
        }
        record.cpu = Some(cpu);
        let (c0, c1) = sampled.cpu_ends;
        let study_cpu = study1.since(&self.study0);
        record.machine = Some(sampler::machine_state(&c0, &c1, sampler::clock_ticks(), sampled.load1, study_cpu));
        let _ = std::fs::write(self.run_dir.join(STUDY_CPU_FILE), study_cpu_text(&self.study0, &study1, study_cpu));
        let log = std::fs::read_to_string(&srv.log).unwrap_or_default();
        record.checkpoints_at_s = pgstats::checkpoints_between(&log, self.started, ended);
        if !record.checkpoints_at_s.is_empty() {
            record.warnings.push(Warning::CheckpointInRun { at_s: record.checkpoints_at_s.clone() });
        }
    }
}
