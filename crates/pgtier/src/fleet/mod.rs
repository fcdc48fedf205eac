//! A fleet: the experiment's matrix run on its server hosts (`[[host]] roles = ["server"]`),
//! all at once, each host driven over its own ssh connection by a copy of pgtier shipped to it
//! (`compare --as-host NAME`), which keeps the host's own run record there. This machine, the
//! controller, holds only its run record of the connections (their masters, the run's
//! directories on the hosts, and each host's own cleanup as the undo done first), `fleet.json`,
//! and the hosts' result sets once they are brought back; then one report compares the hosts.
//!
//! - `host`: one host's part (reach, clock offset, ship, run, fetch, upload for a resume);
//! - `dry_run`: `--dry-run`'s printout of the hosts' part.

pub mod dry_run;
pub mod host;

use std::path::{Path, PathBuf};

use experiment::Experiment;
use journal::Journal;
use results::fleet::{FleetHost, FleetRecord, HostStatus};
use results::timestamp;

use crate::error::CompareError;
use crate::measurement::MeasurementArgs;
use crate::signals::Interrupts;

/// What every host's part shares.
struct Fleet<'a> {
    exp: &'a Experiment,
    dir: &'a Path,
    journal: &'a Journal,
    interrupts: Interrupts,
    /// The run's short token (names each host's control socket and directory there).
    token: String,
    experiment_text: String,
    emulate: bool,
    revision: Option<String>,
}

/// A new fleet run as the command line and `compare`'s resolution of it give it.
pub struct Launch<'a> {
    pub exp: &'a Experiment,
    /// The controller's results directory.
    pub dir: &'a Path,
    pub run_id: &'a str,
    /// The run's short token (names each host's control socket and directory there).
    pub token: &'a str,
    /// Orders every host's runs alike.
    pub seed: u64,
    pub emulate: bool,
    pub measurement: &'a MeasurementArgs,
}

/// A new fleet run: every server host runs the matrix, its result set comes back here, the
/// report compares the hosts.
pub fn run(launch: &Launch) -> Result<(), CompareError> {
    let Launch { exp, dir, run_id, token, seed, emulate, measurement } = *launch;
    let record = FleetRecord {
        experiment_name: exp.name.clone(),
        experiment_file: exp.file.display().to_string(),
        run_id: run_id.to_string(),
        emulated: emulate,
        seed,
        measurement_args: measurement.to_args(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        started_at: timestamp::now_rfc3339(),
        finished_at: None,
        resumed_at: Vec::new(),
        hosts: exp.server_hosts().into_iter().map(|h| host::pending(h, run_id)).collect(),
    };
    go(exp, dir, run_id, token, record, emulate)
}

/// Continues the fleet in `dir`: the hosts that did not complete resume their matrix (from the
/// result set left on the host, or the one brought back here, put there again). `config`
/// replaces the experiment file fleet.json names.
pub fn resume(dir: &Path, config: Option<&Path>) -> Result<(), CompareError> {
    let mut record = FleetRecord::read(dir)
        .expect("called for a fleet")
        .map_err(|e| CompareError::BadArgument(format!("--resume {}: fleet.json: {e}", dir.display())))?;
    let file = config.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(&record.experiment_file));
    crate::paths::use_experiment_file(&file);
    let opts = experiment::LoadOptions {
        emulate: record.emulated,
        configs_dir: crate::paths::configs_dir(),
        hardware_threads: crate::host::hardware_threads(),
    };
    let exp = experiment::load(&file, &opts).map_err(CompareError::Config).inspect_err(CompareError::print)?;
    let names: Vec<&str> = exp.server_hosts().iter().map(|h| h.name.as_str()).collect();
    let recorded: Vec<&str> = record.hosts.iter().map(|h| h.name.as_str()).collect();
    if names != recorded {
        let e = CompareError::NotResumable {
            dir: dir.to_path_buf(),
            why: format!("the file's server hosts are {names:?}, the fleet's were {recorded:?}"),
        };
        e.print();
        return Err(e);
    }
    let now = std::time::SystemTime::now();
    record.resumed_at.push(timestamp::rfc3339(now));
    let run_id = format!("{}-resumed-{}", record.run_id, timestamp::compact(now));
    let token = crate::record::short_token(&run_id);
    let emulate = record.emulated;
    go(&exp, dir, &run_id, &token, record, emulate)
}

fn go(
    exp: &Experiment,
    dir: &Path,
    run_id: &str,
    token: &str,
    mut record: FleetRecord,
    emulate: bool,
) -> Result<(), CompareError> {
    let fail = |e: CompareError| {
        e.print();
        e
    };
    std::fs::create_dir_all(dir.join("hosts"))
        .map_err(|e| fail(CompareError::State(anyhow::anyhow!("create {}: {e}", dir.display()))))?;
    record.write(dir).map_err(|e| fail(CompareError::State(anyhow::anyhow!("write fleet.json: {e}"))))?;
    let experiment_text = std::fs::read_to_string(&exp.file)
        .map_err(|e| fail(CompareError::State(anyhow::anyhow!("read {}: {e}", exp.file.display()))))?;
    let interrupts = Interrupts::install();
    let journal = crate::record::begin_record(run_id, exp).map_err(|e| fail(CompareError::State(e)))?;
    eprintln!(
        "pgtier: {} on a fleet of {} server host(s): {}",
        exp.name,
        record.hosts.len(),
        record.hosts.iter().map(|h| format!("{} ({})", h.name, h.address)).collect::<Vec<_>>().join(", ")
    );
    eprintln!("results: {}", dir.display());
    eprintln!("run record: {}", journal.path().display());
    let fleet = Fleet {
        exp,
        dir,
        journal: &journal,
        interrupts,
        token: token.to_string(),
        experiment_text,
        emulate,
        revision: crate::record::git_commit(),
    };
    let measurement = record.measurement_args.clone();
    let seed = record.seed;
    std::thread::scope(|s| {
        let parts: Vec<_> = record
            .hosts
            .iter_mut()
            .filter(|h| h.status != HostStatus::Complete)
            .map(|h| {
                let fleet = &fleet;
                let measurement = &measurement;
                s.spawn(move || fleet.part(h, seed, measurement))
            })
            .collect();
        for p in parts {
            let _ = p.join();
        }
    });
    if record.hosts.iter().all(|h| h.status == HostStatus::Complete) {
        record.finished_at = Some(timestamp::now_rfc3339());
    }
    let _ = record.write(dir);
    let report = report::fleet::render(dir);
    conclude(&journal, &record, dir, report)
}

impl Fleet<'_> {
    /// One host's part; whatever happens ends in its record (status and cause), never a panic
    /// that would skip the others.
    fn part(&self, rec: &mut FleetHost, seed: u64, measurement: &[String]) {
        let h = self.exp.server_hosts().into_iter().find(|h| h.name == rec.name).expect("a fleet host").clone();
        rec.attempts.push(timestamp::now_rfc3339());
        let r = match host::reach(&h, &self.token, self.journal, &self.experiment_text, rec) {
            Ok(r) => r,
            Err(e) => {
                rec.status = HostStatus::Failed;
                rec.cause = Some(format!("host {}: {e:#}", h.name));
                eprintln!("[{}] error: {e:#}", h.name);
                return;
            }
        };
        let local = host::local_dir(self.dir, &h.name);
        let mut args: Vec<String> = vec!["compare".into(), "--config".into(), r.config.clone()];
        let on_host = host::remote_dir_exists(&r.ssh, &rec.remote_results);
        if rec.fetched || on_host {
            if !on_host && let Err(e) = host::upload(&r.ssh, &local, &rec.remote_results) {
                rec.status = HostStatus::Failed;
                rec.cause = Some(format!("host {}: {e:#}", h.name));
                return;
            }
            args.extend(["--resume".into(), rec.remote_results.clone()]);
        } else {
            args.extend(["--out".into(), rec.remote_results.clone(), "--seed".into(), seed.to_string()]);
            args.extend(measurement.iter().cloned());
        }
        args.extend(["--as-host".into(), h.name.clone()]);
        if self.emulate {
            args.push("--emulate".into());
        }
        let log = self.dir.join("hosts").join(format!("{}.log", h.name));
        let ended = match host::run_remote(&r, &args, self.revision.as_deref(), &log, &self.interrupts) {
            Ok(e) => e,
            Err(e) => host::Ended { status: HostStatus::Failed, cause: Some(format!("host {}: {e:#}", h.name)) },
        };
        if ended.status == HostStatus::Lost {
            eprintln!(
                "[{}] the connection was lost; reconnecting to wait for its teardown and bring its results back",
                h.name
            );
            if let Err(e) = host::reconnect_and_settle(&r) {
                eprintln!("[{}] {e:#}", h.name);
            }
        }
        rec.status = ended.status;
        rec.cause = ended.cause;
        match host::fetch(&r.ssh, &rec.remote_results, &local) {
            Ok(()) => rec.fetched = true,
            Err(e) => {
                let stays = format!("its result set stays on the host at {} ({e:#})", rec.remote_results);
                eprintln!("[{}] {stays}", h.name);
                rec.cause = Some(match rec.cause.take() {
                    Some(c) => format!("{c}; {stays}"),
                    None => format!("host {}: {stays}", h.name),
                });
                if rec.status == HostStatus::Complete {
                    rec.status = HostStatus::Failed;
                }
            }
        }
        rec.attempts.push(timestamp::now_rfc3339());
    }
}

/// Teardown from the controller's run record (each host's own cleanup first), then what
/// happened: every host that did not complete, by name and cause.
fn conclude(
    journal: &Journal,
    record: &FleetRecord,
    dir: &Path,
    report: Result<(report::fleet::FleetReport, Vec<PathBuf>), report::ReportError>,
) -> Result<(), CompareError> {
    eprintln!("teardown: undoing everything this run made on every host, newest first");
    let torn = journal.teardown(|p, r| match r {
        Ok(journal::Outcome::Done) => eprintln!("  done: {}", p.undo),
        Ok(journal::Outcome::NothingLeft) => {}
        Err(e) => eprintln!("  FAILED: {}: {e}", p.undo),
    });
    match &report {
        Ok((_, files)) => eprintln!("fleet report: {} ({} files)", dir.join("report.md").display(), files.len()),
        Err(e) => eprintln!("error: the fleet report: {e}"),
    }
    if !torn.is_clean() {
        let e = CompareError::Teardown { failed: torn.failed, record: journal.path().to_path_buf() };
        e.print();
        return Err(e);
    }
    let not_done: Vec<&FleetHost> = record.hosts.iter().filter(|h| h.status != HostStatus::Complete).collect();
    if !not_done.is_empty() {
        for h in &not_done {
            eprintln!("error: {}", h.cause.clone().unwrap_or_else(|| format!("host {}: not run", h.name)));
        }
        eprintln!(
            "{} of {} host(s) did not complete; what they measured is kept. Continue with: cargo xtask compare --resume {}",
            not_done.len(),
            record.hosts.len(),
            dir.display()
        );
        return Err(CompareError::Run(anyhow::anyhow!(
            "host(s) {} did not complete",
            not_done.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    if report.is_err() {
        return Err(CompareError::Report(anyhow::anyhow!("the fleet report could not be written")));
    }
    println!("{}", dir.display());
    Ok(())
}
