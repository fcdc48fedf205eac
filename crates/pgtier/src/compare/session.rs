//! A run of the matrix on this machine, one method per phase: begin (results directory, plan,
//! manifest), kernel settings, provision, device records, probes, load; the matrix itself is in
//! `matrix.rs`. Every phase goes through [`Session::phase`], which times it and writes the
//! manifest after it. Teardown and the report follow whatever happened ([`Session::conclude`]).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use experiment::Experiment;
use journal::Journal;
use results::{Manifest, ResultsDir, Warning, timestamp};
use runner::RunnerEnv;
use runner::cgroup::BlkioThrottle;
use runner::dataset::{self, Golden};
use runner::env::RemoteClient;
use runner::matrix::{MatrixSpec, PlannedRun};
use runner::server::ServerLaunch;
use tiers::{PlanContext, Provisioned};

use super::golden::{self, GoldenSite};
use super::preflight::Preflight;
use super::{faults, manifest, setup};
use crate::error::CompareError;
use crate::host;
use crate::signals::Interrupts;

pub struct Session<'a> {
    pub exp: &'a Experiment,
    pub journal: &'a Journal,
    pub interrupts: Interrupts,
    pub results: ResultsDir,
    pub pre: Preflight,
    pub run_id: String,
    /// The planned runs, in execution order.
    pub runs: Vec<PlannedRun>,
    pub started: SystemTime,
    pub manifest: Manifest,
    /// The manifest of the interrupted result set being resumed.
    pub previous: Option<Manifest>,
    pub ctx: PlanContext,
    /// The manifest has been begun (and is written after every phase from then on).
    pub begun: bool,
    /// The seed of the run order.
    pub seed: u64,
    /// Where the data sets' golden copies are built.
    pub golden: GoldenSite,
    /// Emulated tiers found failed after a run or slice, with what happened: each fails the one
    /// it died during, and no run or slice uses it after that.
    pub lost_tiers: std::collections::BTreeMap<String, String>,
    /// Where this study's priors come from: this host's calibration, or the fallback
    /// (`crate::calibration::for_study`); a resumed result set keeps its own.
    pub calibration: results::manifest::CalibrationRecord,
}

/// The phases of a session, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Begin,
    Kernel,
    Provision,
    Devices,
    Probe,
    Load,
    /// Records the time it spent relocating and measuring itself (not its wall time).
    Matrix,
    Teardown,
    Report,
}

impl Phase {
    /// The key of the manifest's `phase_seconds` the phase's time goes under.
    fn key(self) -> Option<&'static str> {
        match self {
            Phase::Provision => Some("provision"),
            Phase::Probe => Some("probe"),
            Phase::Load => Some("load"),
            Phase::Teardown => Some("teardown"),
            Phase::Report => Some("report"),
            Phase::Begin | Phase::Kernel | Phase::Devices | Phase::Matrix => None,
        }
    }
}

impl<'a> Session<'a> {
    /// Runs one phase: its time goes into `phase_seconds` and the manifest is written once it
    /// succeeded. A phase that fails leaves both to the final manifest write of the report.
    async fn phase<T>(&mut self, phase: Phase, body: impl AsyncFnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let t0 = Instant::now();
        let out = body(self).await?;
        self.timed(phase, t0);
        if self.begun {
            self.results.write_manifest(&self.manifest).context("write manifest.json")?;
        }
        Ok(out)
    }

    /// summary.csv and the other tables re-written from the run records so far, so that a run
    /// that stops leaves them current. The one place the measuring code reaches the renderer.
    pub(super) fn refresh_tables(&self) -> Result<(), report::ReportError> {
        report::refresh_tables(&self.results.root).map(|_| ())
    }

    fn timed(&mut self, phase: Phase, t0: Instant) {
        if let Some(key) = phase.key() {
            self.manifest.phase_seconds.insert(key.into(), t0.elapsed().as_secs_f64());
        }
    }

    /// The whole run up to teardown. A panic becomes an error like any other, so that it
    /// cannot skip teardown.
    pub async fn go_guarded(&mut self, plan: &tiers::Plan) -> Result<()> {
        match futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(self.go(plan))).await {
            Ok(r) => r,
            Err(panic) => Err(anyhow!(
                "internal error (a bug in pgtier): {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
        }
    }

    async fn go(&mut self, plan: &tiers::Plan) -> Result<()> {
        self.phase(Phase::Begin, async |s| s.begin(plan)).await?;
        // The client host's connection first: a host that cannot be reached stops the run
        // before anything is provisioned.
        let client = self.phase(Phase::Begin, async |s| s.client_host()).await?;
        // The storage target hosts' connections too (everything done there is a plan step).
        self.phase(Phase::Begin, async |s| s.target_hosts()).await?;
        // Kernel settings the experiment asks for (restored at teardown from the run record).
        if !self.exp.kernel.is_empty() {
            self.phase(Phase::Kernel, async |s| s.kernel()).await?;
        }
        // Provisioning's time is kept also when it fails.
        let provisioned = self.phase(Phase::Provision, async |s| Ok(s.provision(plan))).await?;
        let provisioned = match provisioned {
            Ok(p) => p,
            Err(tiers::ProvisionError::Cancelled { .. }) => bail!("interrupted during provisioning"),
            Err(e) => return Err(ProvisioningFailed(e).into()),
        };
        let throttles = self.phase(Phase::Devices, async |s| s.devices(&provisioned)).await?;
        // The physical ceilings of each device (fio), before any data is on it.
        if !self.exp.device_probe.is_zero() {
            self.phase(Phase::Probe, async |s| s.probe(&provisioned)).await?;
        }
        let env = self.runner_env(throttles, client)?;
        let matrix = setup::matrix_spec(self.exp, plan, Some(&provisioned), host::hardware_threads(), self.seed);
        let goldens = self.phase(Phase::Load, async |s| s.load(&env, &matrix).await).await?;
        let failures = match self.exp.measurement.design {
            experiment::Design::Runs => {
                self.phase(Phase::Matrix, async |s| s.run_matrix(&env, &matrix, &provisioned, &goldens).await).await?
            }
            experiment::Design::Slices => {
                self.phase(Phase::Matrix, async |s| s.run_sliced(&env, &matrix, &provisioned, &goldens).await).await?
            }
        };
        // (A tier already found failed was said with the run it failed, and used no more.)
        let undetected: Vec<(String, String)> = self
            .tier_survival(&provisioned, None)
            .into_iter()
            .filter(|(device, _)| !self.lost_tiers.contains_key(device))
            .collect();
        for (device, why) in undetected {
            self.manifest.warnings.push(Warning::Other(format!(
                "the emulated tier {device} did not survive the matrix: {why}; runs on placements using it after that failed or measured a broken device"
            )));
        }
        if failures > 0 {
            self.manifest.warnings.push(Warning::RunsFailed { count: failures });
            // The matrix ran to its end; only some of its runs failed.
            self.manifest.finished_at = Some(timestamp::now_rfc3339());
            if self.exp.measurement.design == experiment::Design::Slices {
                bail!(
                    "{failures} failure(s) of slices, servers or contests (each with its reason in runs.csv, the manifest's warnings and measurement.stopped); the report covers the rest"
                );
            }
            bail!(
                "{failures} of {} runs failed (each with its reason in runs.csv and its evidence in runs/<id>/); the report covers the rest",
                self.runs.len()
            );
        }
        Ok(())
    }

    /// The results directory, the plan and the manifest.
    fn begin(&mut self, plan: &tiers::Plan) -> Result<()> {
        std::fs::create_dir_all(self.results.logs_dir())
            .with_context(|| format!("create {}", self.results.root.display()))?;
        std::fs::write(self.results.root.join("plan.txt"), plan.to_string())?;
        self.manifest = manifest::begin(self.exp, &self.pre, plan, &self.runs, self.started, self.previous.as_ref());
        self.manifest.measurement.seed = Some(self.seed);
        // Every round of a result set under one set of priors: a resumed one keeps its own.
        self.manifest.calibration = match &self.previous {
            Some(p) => p.calibration.clone(),
            None => Some(self.calibration.clone()),
        };
        if plan.emulated {
            self.manifest.measurement.device_order = plan.mountpoints.iter().map(|(name, _)| name.clone()).collect();
        }
        self.begun = true;
        Ok(())
    }

    fn kernel(&mut self) -> Result<()> {
        if self.exp.kernel.apply {
            let applied = crate::kernel::apply(&self.exp.kernel, self.journal)?;
            for line in &applied {
                eprintln!("kernel: {line}");
            }
            self.manifest.kernel_changes = applied;
        } else {
            self.manifest.kernel_changes =
                vec!["[kernel] settings listed in the experiment file were NOT applied (emulated run)".into()];
        }
        Ok(())
    }

    fn provision(&mut self, plan: &tiers::Plan) -> Result<Provisioned, tiers::ProvisionError> {
        let devices: Vec<tiers::DeviceSpec> = self.exp.used_devices().into_iter().cloned().collect();
        eprintln!("provisioning {} device(s), {} steps", devices.len(), plan.steps.len());
        let mut sys = tiers::system::RealSystem;
        tiers::execute(plan, &devices, &mut sys, self.journal, &self.interrupts.cancel, &mut |e| match e {
            tiers::Event::Step { index, total, step } => {
                if step.action.is_destructive() {
                    eprintln!(
                        "  [{index}/{total}] {}{}",
                        step.device.as_deref().map(|d| format!("[{d}] ")).unwrap_or_default(),
                        step.action.describe()
                    );
                }
            }
            tiers::Event::Note(n) => eprintln!("  note: {n}"),
        })
    }

    /// `provision.log` and the device records: throttles, DAX in effect or not.
    fn devices(&mut self, provisioned: &Provisioned) -> Result<Vec<BlkioThrottle>> {
        manifest::write_provision_log(&self.results.root, provisioned)?;
        self.manifest.devices = provisioned.devices.iter().map(manifest::device_record).collect();
        let throttles = faults::throttles(self.exp, provisioned)?;
        for t in &throttles {
            if let Some(d) = self.manifest.devices.iter_mut().find(|d| d.name == t.device) {
                d.throttle = Some(faults::describe_throttle(t));
            }
        }
        for d in &provisioned.devices {
            if d.mount.dax.requested != tiers::DaxPolicy::Off && !d.mount.dax.honoured {
                let (device, note) = (d.name.clone(), d.mount.dax.note.clone());
                self.manifest.warnings.push(Warning::DaxNotInEffect { device, note });
            }
        }
        Ok(throttles)
    }

    fn probe(&mut self, provisioned: &Provisioned) -> Result<()> {
        let dir = self.results.root.join("probes");
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        for d in &provisioned.devices {
            if self.interrupts.cancelled() {
                bail!("interrupted while probing the devices");
            }
            eprintln!(
                "probing {} with fio ({} s per job: 8 KiB write+fdatasync, 4 KiB random read QD32)",
                d.name,
                self.exp.device_probe.as_secs()
            );
            // Random reads over a small file hit the device's own cache: on real devices the
            // file spans a tenth of the free space, up to 4 GiB.
            let size_mib = if self.exp.emulated {
                256
            } else {
                dataset::available_bytes(&d.mountpoint).map(|b| (b / 10 / 1048576).clamp(256, 4096)).unwrap_or(1024)
            };
            let mut sys = tiers::system::RealSystem;
            let probed = tiers::probe::probe(
                &mut sys,
                &d.name,
                &d.mountpoint,
                self.exp.device_probe,
                size_mib,
                (&dir, "probes"),
            );
            // An emulated tier that lost its NBD target says so, whatever fio printed.
            if let Some(why) = self.tier_survival(provisioned, Some(&d.name)).pop().map(|(_, w)| w) {
                let what = format!(
                    "the emulated tier {} did not survive the fio probe (sustained 8 KiB write+fdatasync, then random reads): {why}",
                    d.name
                );
                self.manifest.warnings.push(Warning::Other(what.clone()));
                if let Ok(mut p) = probed {
                    p.failure = Some(why);
                    self.manifest.device_probes.push(manifest::probe_record(p));
                }
                bail!("{what}; every run on it would fail, so the matrix is not started");
            }
            let p = probed?;
            eprintln!(
                "  {}: {:.0} write+fdatasync IOPS (sync p50 {:.0} us, p99 {:.0} us), {:.0} random-read IOPS; QD1: read {:.0} us, write+fdatasync {:.0} us",
                d.name,
                p.wal_write_iops,
                p.wal_sync_p50_us,
                p.wal_sync_p99_us,
                p.randread_iops,
                p.read_qd1_mean_us,
                p.write_sync_qd1_mean_us
            );
            self.manifest.device_probes.push(manifest::probe_record(p));
        }
        Ok(())
    }

    /// After a run or slice on `placement`: when one of its emulated tiers failed during it (one
    /// not found failed before), the record becomes a failure of kind device-lost, whatever the
    /// client printed, and is written again. Returns what failed, and why.
    pub(super) fn fail_if_tier_lost(
        &mut self,
        provisioned: &Provisioned,
        placement: &runner::matrix::PlacementTarget,
        record: &mut results::RunRecord,
    ) -> Result<Option<String>> {
        let lost = placement
            .devices
            .iter()
            .filter(|d| !self.lost_tiers.contains_key(&d.device))
            .find_map(|d| self.tier_survival(provisioned, Some(&d.device)).pop());
        let Some((device, why)) = lost else { return Ok(None) };
        let what = format!("the emulated tier {device} failed during the run: {why}");
        self.lost_tiers
            .insert(device.clone(), format!("the emulated tier {device} failed during {}: {why}", record.run_id));
        if record.status == results::RunStatus::Ok {
            record.status = results::RunStatus::Failed;
            record.failure = Some(format!("{what}; its figures measured a broken device and are left out"));
            record.failure_kind = Some(results::FailureKind::DeviceLost);
        } else {
            let earlier = record.failure.take().unwrap_or_default();
            record.failure = Some(format!("{earlier} ({what})"));
        }
        self.results.write_run(record).context("write result")?;
        Ok(Some(what))
    }

    /// Before a run or slice on `placement`: what happened to one of its emulated tiers when it
    /// was found failed earlier in the matrix (during a run of this or another placement).
    pub(super) fn lost_tier_of(&self, placement: &runner::matrix::PlacementTarget) -> Option<String> {
        placement.devices.iter().find_map(|d| self.lost_tiers.get(&d.device).cloned())
    }

    /// Emulated devices with helper processes (NVMe/TCP: nbdkit and nbdfuse) that did not survive
    /// (`only`: that device): a helper gone, a failed NBD request in their logs, or the kernel's
    /// I/O errors or a file system shutdown on the block device; with what went wrong.
    fn tier_survival(&self, provisioned: &Provisioned, only: Option<&str>) -> Vec<(String, String)> {
        let mut sys = tiers::system::RealSystem;
        provisioned
            .devices
            .iter()
            .filter(|d| d.emulated && !d.helpers.is_empty() && only.is_none_or(|n| n == d.name))
            .filter_map(|d| {
                let logs = ["nbdfuse", "nbdkit"].map(|h| self.results.logs_dir().join(format!("{h}-{}.log", d.name)));
                tiers::probe::survival(&mut sys, &d.block_device, &d.helpers, &logs).map(|w| (d.name.clone(), w))
            })
            .collect()
    }

    /// The host that runs the benchmark client, when the file names one: its ssh connection
    /// opened (closed at teardown from the run record), pgbench checked there, the route and
    /// its round trip measured into the manifest.
    fn client_host(&mut self) -> Result<Option<RemoteClient>> {
        let Some(h) = self.exp.client_host() else { return Ok(None) };
        let token = self.run_id.rsplit('-').next().unwrap_or(&self.run_id).to_string();
        let install = &self.pre.install;
        let pgbench = install.client_dir.join("pgbench");
        let (mut client, mut record) =
            crate::remote::open_client(h, &token, self.journal, &pgbench, &install.client_version_line)?;
        if self.exp.workloads.iter().any(|w| matches!(w.kind, runner::matrix::WorkloadKind::Tpcc(_))) {
            crate::tpcc_client::ship_driver(h, &token, &mut client, &mut record)?;
        }
        self.manifest.client = Some(record);
        Ok(Some(client))
    }

    /// The storage target hosts of the placements' devices: their ssh connections opened
    /// (closed at teardown from the run record), the routes and round trips into the manifest.
    fn target_hosts(&mut self) -> Result<()> {
        let token = self.run_id.rsplit('-').next().unwrap_or(&self.run_id).to_string();
        self.manifest.targets = crate::remote::target::open_targets(self.exp, &token, self.journal)?;
        Ok(())
    }

    /// The runner's environment, with its private socket directory.
    fn runner_env(&self, throttles: Vec<BlkioThrottle>, client: Option<RemoteClient>) -> Result<RunnerEnv<'a>> {
        let socket_dir = self.ctx.work_dir.join("sock");
        // A server a client host reaches listens on TCP: its ports (one per placement of a
        // slices session, after the first) must be free on the address facing the host.
        let port = match &client {
            None => 5432,
            Some(c) => {
                let count = self.exp.placements.len() as u16 + 1;
                crate::remote::free_ports(c.server_address, 5432, count)
                    .with_context(|| format!("{count} consecutive free TCP ports from 5432 on {}", c.server_address))?
            }
        };
        let server = ServerLaunch {
            install: self.pre.install.clone(),
            user: self.pre.user.clone(),
            journal: self.journal,
            socket_dir: socket_dir.clone(),
            port,
            cpus: self.exp.measurement.pinning.as_ref().map(|p| p.servers.clone()),
        };
        let env = RunnerEnv {
            server,
            cgroups: self.pre.cgroups.clone(),
            run_token: self.run_id.clone(),
            logs_dir: self.results.logs_dir(),
            cancel: self.interrupts.cancel.clone(),
            drop_caches: true,
            watchdog_grace: self.exp.watchdog_grace,
            throttles,
            client,
            client_cpus: self.exp.measurement.pinning.as_ref().map(|p| p.client.clone()),
            handicap: self.exp.measurement.handicap.map(|h| runner::env::LifeHandicap {
                cpus: h.cpus,
                spread_pct: h.spread_pct,
                seed: self.seed,
            }),
        };
        dataset::make_owned_dir(&env, &socket_dir)?;
        Ok(env)
    }

    /// Data sets: built once each, per major version of the builds (their on-disk formats
    /// differ), each by its build's binaries.
    async fn load(&mut self, env: &RunnerEnv<'_>, matrix: &MatrixSpec) -> Result<HashMap<String, Golden>> {
        let mut goldens: HashMap<String, Golden> = HashMap::new();
        let load_settings = self.exp.profiles.first().map(|p| p.profile.settings.clone()).unwrap_or_default();
        golden::prepare(&self.golden, self.journal, env)?;
        for b in 0..self.pre.builds.len() {
            if !self.exp.runs_build(&self.pre.builds[b].name) {
                // Listed, but no placement runs it (a warning says so).
                continue;
            }
            let benv = self.build_env(env, b);
            for w in &matrix.workloads {
                let spec = w.dataset(&matrix.tablespace_roles());
                let key = self.golden_key(&spec.key(), b);
                if goldens.contains_key(&key) {
                    continue;
                }
                eprintln!("building data set {key} once (it is then copied onto every placement)");
                let mut last = Instant::now();
                let dir = self.golden.root.join(&key);
                let golden = dataset::build_golden(&benv, &spec, &dir, &load_settings, &mut |line| {
                    if last.elapsed().as_secs() >= 5 {
                        eprintln!("  {line}");
                        last = Instant::now();
                    }
                })
                .await
                .with_context(|| format!("building data set {key}"))?;
                eprintln!(
                    "  data set {key}: database {:.0} MiB, built in {:.1} s",
                    golden.database_size_bytes as f64 / 1048576.0,
                    golden.build_seconds
                );
                self.manifest.datasets.push(manifest::dataset_record(&key, &golden, &dir));
                let warnings =
                    manifest::fits_in_memory_warnings(self.exp, self.manifest.host.memory_bytes, &key, &golden);
                self.manifest.warnings.extend(warnings);
                goldens.insert(key, golden);
            }
        }
        Ok(goldens)
    }

    /// The runner's environment with build `b`'s binaries.
    pub(super) fn build_env<'e>(&self, env: &RunnerEnv<'e>, b: usize) -> RunnerEnv<'e> {
        let mut env = env.clone();
        env.server.install = self.pre.builds[b].install.clone();
        env
    }

    /// The golden copy's name of a data set for build `b`: per major version when the builds
    /// differ in it.
    pub(super) fn golden_key(&self, dataset: &str, b: usize) -> String {
        let majors: std::collections::BTreeSet<u32> = self.pre.builds.iter().map(|b| b.install.major).collect();
        if majors.len() > 1 { format!("{dataset}-pg{}", self.pre.builds[b].install.major) } else { dataset.to_string() }
    }

    /// The profile as build `b` runs it: its optional settings only where the build knows them.
    pub(super) fn build_profile(&self, profile: &runner::matrix::Profile, b: usize) -> runner::matrix::Profile {
        profile.for_build(Some(&self.pre.builds[b].known_settings))
    }

    /// Placement `p` in the matrix's build `b` and profile `profile`: in the build's directories
    /// when the matrix has several builds; on its own build when it names one (`[[placement]]
    /// build`: its installation, and the profile as that build runs it); its own profile (if it
    /// names one) as its build runs it.
    pub(super) fn build_target(
        &self,
        spec: &runner::matrix::MatrixSpec,
        p: usize,
        b: usize,
        profile: usize,
    ) -> runner::matrix::PlacementTarget {
        let mut t = spec.placements[p].for_build(&spec.builds[b].name, spec.builds.len() > 1);
        let runs = self.runs_build(p, b);
        if let Some(own) = self.exp.placement_build(p) {
            t.install = Some(self.pre.builds[own].install.clone());
            t.profile.get_or_insert_with(|| spec.profiles[profile].clone());
        }
        t.profile = t.profile.map(|f| self.build_profile(&f, runs));
        t
    }

    /// The index (into the preflight's builds) of the build placement `p`'s server runs in the
    /// matrix's build `b`: its own when it names one.
    pub(super) fn runs_build(&self, p: usize, b: usize) -> usize {
        self.exp.placement_build(p).unwrap_or(b)
    }

    /// After the session, whatever happened: teardown, the run's error, the report, and what
    /// is left (nothing, or what `cargo xtask cleanup` must retry). The last line on stdout is
    /// the results directory, unless teardown left something.
    pub async fn conclude(mut self, outcome: Result<()>) -> Result<(), CompareError> {
        self.interrupts.tearing_down.store(true, Ordering::SeqCst);
        eprintln!("teardown: undoing everything this run made, newest first");
        let t0 = Instant::now();
        let torn = self.journal.teardown(|p, r| match r {
            Ok(journal::Outcome::Done) => eprintln!("  done: {}", p.undo),
            Ok(journal::Outcome::NothingLeft) => {}
            Err(e) => eprintln!("  FAILED: {}: {e}", p.undo),
        });
        self.timed(Phase::Teardown, t0);
        let closed = self.journal.path().with_extension("closed.jsonl");
        let record = if closed.exists() { closed } else { self.journal.path().to_path_buf() };
        let _ = std::fs::copy(&record, self.results.root.join("journal.jsonl"));

        let outcome = outcome.map_err(CompareError::Run);
        if let Err(e) = &outcome {
            e.print();
        }
        // The report covers whatever finished, also after a failure or an interruption.
        eprintln!("reporting: tables, charts and report.md in {}", self.results.root.display());
        let rendered = self.report_guarded(outcome.is_ok()).await;
        if !torn.is_clean() {
            let e = CompareError::Teardown { failed: torn.failed, record: self.journal.path().to_path_buf() };
            e.print();
            return Err(e);
        }
        eprintln!("teardown complete: nothing of this run is left mounted or running");
        let result = match (outcome, rendered) {
            (Ok(()), Ok(summary_text)) => {
                print!("{summary_text}");
                Ok(())
            }
            (Ok(()), Err(e)) => Err(CompareError::Report(e)).inspect_err(CompareError::print),
            (Err(e), _) => Err(e),
        };
        println!("{}", self.results.root.display());
        result
    }

    /// The report; a panic while rendering becomes an error.
    async fn report_guarded(&mut self, finished: bool) -> Result<String> {
        futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(self.report(finished)))
            .await
            .unwrap_or_else(|_| Err(anyhow!("internal error while rendering the report (a bug in pgtier)")))
    }

    /// Writes the final manifest and renders the report; returns a short text summary.
    async fn report(&mut self, finished: bool) -> Result<String> {
        if !self.results.manifest().exists() {
            return Ok(String::new());
        }
        if finished {
            self.manifest.finished_at = Some(timestamp::now_rfc3339());
        }
        let (summary, files) = self
            .phase(Phase::Report, async |s| {
                s.results.write_manifest(&s.manifest).context("write manifest.json")?;
                Ok(report::render(&s.results.root)?)
            })
            .await?;
        let mut text = crate::terminal::fit(&report::text::summary_table(&summary));
        text.push_str(&crate::terminal::warnings(
            &self.manifest.warnings,
            &summary.warnings,
            &self.results.report_md(),
        ));
        text.push_str(&format!("{} files written; report: {}\n", files.len(), self.results.report_md().display()));
        Ok(text)
    }
}

/// Provisioning stopped at a step (the step and its cause are in the message).
#[derive(Debug, thiserror::Error)]
#[error("provisioning failed at {0}")]
struct ProvisioningFailed(#[source] tiers::ProvisionError);
