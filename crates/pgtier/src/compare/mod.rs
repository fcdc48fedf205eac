//! `compare` on this machine: validate everything, plan, provision, build each data set once,
//! copy it onto every placement, run the matrix, report, tear down. Teardown runs after success,
//! failure and interruption alike, from the run's journal. (A file with server hosts is a
//! fleet's: `cli` hands it to `crate::fleet`.)
//!
//! - `setup`: the command line resolved (experiment, run id, results directory, plan, runs);
//! - `dry_run`: `--dry-run`'s printout;
//! - `preflight`: what is checked before anything is touched;
//! - `resume`: `--resume`'s checks and the runs it keeps;
//! - `session`: the run itself, one method per phase behind one phase wrapper, then teardown
//!   and the report; `matrix`: the matrix phase of design `runs`;
//! - `slices`: the matrix phase of design `slices` (`slices/decide`: its decisions without I/O;
//!   `slices/resumed`: stopped contests kept on `--resume`);
//! - `manifest`: the manifest and the device, probe and data set records, `provision.log`;
//! - `faults`: `[[fault]]`s made concrete, and I/O throttles;
//! - `would_refuse`: what a dry run can see that the real run would refuse;
//! - `golden`: where the golden copies of the data sets are built, the room there, the copies'
//!   expected times.
//!
//! [`CompareError`] (`crate::error`) decides the exit code.

mod dry_run;
mod faults;
mod golden;
mod manifest;
mod matrix;
mod preflight;
mod resume;
mod session;
mod setup;
mod slices;
mod would_refuse;

use std::path::PathBuf;

use results::{Manifest, ResultsDir};

use session::Session;
pub use setup::Setup;

use crate::error::CompareError;
use crate::measurement::MeasurementArgs;
use crate::signals::Interrupts;

pub struct Args {
    /// The experiment file (with --resume: defaults to the one the results directory records).
    pub config: Option<PathBuf>,
    /// Continue the interrupted matrix in this results directory.
    pub resume: Option<PathBuf>,
    pub emulate: bool,
    pub dry_run: bool,
    pub out: Option<PathBuf>,
    pub measurement: MeasurementArgs,
    /// This run is server host NAME's part of a fleet, driven by a controller over ssh.
    pub as_host: Option<String>,
    /// `pgtier calibrate`: measure the file's A/A form with this many twins of the baseline
    /// ([`experiment::Experiment::calibration_form`]).
    pub calibrate: Option<u32>,
}

/// The command line resolved, touching nothing (errors are printed).
pub fn resolve(args: &Args) -> Result<Setup, CompareError> {
    Setup::resolve(args).inspect_err(CompareError::print)
}

/// `--dry-run`'s printout of a resolved command line.
pub fn print_dry_run(setup: &Setup) {
    dry_run::print(setup);
}

/// `--dry-run` on this machine: the printout, ending with what the real run would refuse; an
/// error (exit 1) when there is anything.
fn dry_run_here(setup: &Setup) -> Result<(), CompareError> {
    dry_run::print(setup);
    let refusals = would_refuse::refusals(setup);
    dry_run::print_refusals(&refusals);
    if refusals.is_empty() {
        return Ok(());
    }
    eprintln!(
        "dry run: the real run would refuse {} thing(s) (listed at the end of the dry run); nothing was touched",
        refusals.len()
    );
    Err(CompareError::WouldRefuse(refusals))
}

/// The matrix in the header's words: design `runs` plans runs; design `slices` plans one entry
/// per cell, whose rounds of slices are decided as the run goes.
fn matrix_size(exp: &experiment::Experiment, planned: usize) -> String {
    match exp.measurement.design {
        experiment::Design::Runs => format!("{planned} runs"),
        experiment::Design::Slices => {
            let placements = exp.placements.len().max(1);
            format!("{planned} cells, {} contests measured in rounds of slices", planned.div_ceil(placements))
        }
    }
}

/// The run on this machine, with a resolved command line. Every error is printed where it
/// happens, by [`CompareError::print`].
pub async fn run(setup: Setup, args: &Args) -> Result<(), CompareError> {
    if args.dry_run {
        return dry_run_here(&setup);
    }
    let expected = dry_run::expected_line(&setup);
    let Setup { exp, previous, started, run_id, results_dir, user, ctx, plan, runs, seed, golden, .. } = setup;
    if let Some(prev) = &previous {
        resume::resumable(prev, &exp, &runs)
            .map_err(|why| CompareError::NotResumable { dir: results_dir.clone(), why: why.to_string() })
            .inspect_err(CompareError::print)?;
    }
    faults::warn_unreachable(&exp, runs.len());

    // Everything that can be checked before touching the machine.
    let pre =
        preflight::preflight(&exp, &plan, user).map_err(CompareError::Preflight).inspect_err(CompareError::print)?;
    preflight::check_settings_known(&exp, &pre).map_err(CompareError::Config).inspect_err(CompareError::print)?;
    golden::check_place(&exp, &golden, &pre.user).map_err(CompareError::Config).inspect_err(CompareError::print)?;
    golden::check_room(&exp, &golden).map_err(CompareError::Preflight).inspect_err(CompareError::print)?;
    let interrupts = Interrupts::install();
    if args.as_host.is_some() {
        // The controller's ssh session is standard input: its end (a lost connection, the
        // controller stopped) stops this run like Ctrl-C, and teardown follows.
        interrupts.watch_stdin();
    }
    let journal =
        crate::record::begin_record(&run_id, &exp).map_err(CompareError::State).inspect_err(CompareError::print)?;
    let header = format!(
        "pgtier {}: {} ({} placements, {} workloads, {}){}",
        crate::VERSION,
        exp.name,
        exp.placements.len(),
        exp.workloads.len(),
        matrix_size(&exp, runs.len()),
        if exp.emulated { ", emulated tiers" } else { "" },
    );
    eprint!("{}", crate::terminal::fit(&header));
    // A path stays on its label's line, whatever its length.
    eprintln!("results: {}", results_dir.display());
    eprint!("{}", crate::terminal::fit(&expected));
    eprintln!("run record: {}", journal.path().display());
    let calibration = crate::calibration::for_study(&exp, &crate::host::collect(), &pre.install.version());
    if args.calibrate.is_none() {
        eprint!("{}", crate::terminal::fit(&crate::calibration::line(&calibration)));
    }

    let mut session = Session {
        exp: &exp,
        journal: &journal,
        interrupts,
        results: ResultsDir::new(&results_dir),
        pre,
        run_id,
        runs,
        started,
        manifest: Manifest::default(),
        previous,
        ctx,
        begun: false,
        seed,
        golden,
        lost_tiers: Default::default(),
        calibration,
    };
    let outcome = session.go_guarded(&plan).await;
    session.conclude(outcome).await
}
