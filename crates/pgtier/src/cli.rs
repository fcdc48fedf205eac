//! The product's commands as `cargo xtask` and the `pgtier` binary both parse and run them:
//! `compare`, `report`, `cleanup`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::error::{CompareError, HOST_FAILURE_LINE};
use crate::fleet;
use crate::measurement::MeasurementArgs;

/// `compare`'s command line.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The experiment file (tiers/*.toml). Without --emulate, the devices it names are
    /// partitioned and formatted: everything on them is lost.
    #[arg(long, required_unless_present = "resume")]
    config: Option<PathBuf>,
    /// Continue an interrupted matrix in this results directory: finished runs are kept, the
    /// rest are made on freshly provisioned tiers (the configuration must be unchanged).
    #[arg(long, conflicts_with_all = ["out", "dry_run"])]
    resume: Option<PathBuf>,
    /// Emulate the devices with RAM-, file- and network-backed block devices, and apply the
    /// file's [emulate] overrides.
    #[arg(long)]
    emulate: bool,
    /// Print the plan (the devices formatted, the expected time, every command in order with its
    /// reason) and the run matrix; touch nothing. Needs no root. Exits 1 when the real run would
    /// refuse (a device that is not here, no room for the data set).
    #[arg(long)]
    dry_run: bool,
    /// Results directory, new or empty (default: results/<experiment>/<UTC timestamp>-<token>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seeds the random order of the placements in every block or round (default: a new
    /// seed, recorded in manifest.json; give it again to repeat a run order).
    #[arg(long)]
    seed: Option<u64>,
    /// Overrides the file's [measurement] design: `slices` or `runs`.
    #[arg(long)]
    design: Option<String>,
    /// Overrides the file's [measurement] budget of the measured phase (e.g. 15min).
    #[arg(long)]
    budget: Option<String>,
    /// Overrides the file's [measurement] target half-width of every change (e.g. 5%).
    #[arg(long)]
    target_halfwidth: Option<String>,
    /// Run as server host NAME of the file's fleet, driven by a controller over ssh: the
    /// server hosts are this machine, and the end of standard input is an interrupt.
    #[arg(long, hide = true)]
    as_host: Option<String>,
}

/// `calibrate`'s command line.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// The experiment file whose studies this host is calibrated for (tiers/*.toml). Its
    /// baseline's devices are provisioned as `compare` would (without --emulate: formatted).
    #[arg(long, required_unless_present = "add")]
    config: Option<PathBuf>,
    /// Emulate the devices, as `compare --emulate` does.
    #[arg(long)]
    emulate: bool,
    /// Print the A/A run's plan and matrix; touch nothing.
    #[arg(long)]
    dry_run: bool,
    /// Twins of the baseline measured beside it (at least 2): more twins, more null changes
    /// per contest for the offset between server lives, at the cost of a slice each per round.
    #[arg(long, default_value_t = 3)]
    twins: u32,
    /// A/A runs to make now, each a new set of server lives; every finished one is added to
    /// this host's calibration for the file at once (an interrupted calibrate keeps what it
    /// finished, and a later one adds to it). The offset between server lives needs lives: one
    /// run of 3 twins gives it 3 degrees of freedom per memory limit, 4 runs 12
    /// (docs/benchmarks.md, "Calibrated on the machine that measures").
    #[arg(long, default_value_t = 4)]
    runs: u32,
    /// Add these finished A/A result sets (of `calibrate`, this host and this file's key) to the
    /// calibration and re-estimate it, measuring nothing.
    #[arg(long, num_args = 1.., conflicts_with_all = ["dry_run", "runs"])]
    add: Vec<PathBuf>,
    /// Overrides the file's [measurement] budget of the measured phase (e.g. 15min).
    #[arg(long)]
    budget: Option<String>,
    /// Seeds the run order (default: a new seed).
    #[arg(long)]
    seed: Option<u64>,
}

/// `cleanup`'s command line.
#[derive(Args, Debug)]
pub struct CleanupArgs {
    /// Wait this long for runs still in progress (their run records held, or other processes
    /// of this same executable) to end first (e.g. 5min).
    #[arg(long)]
    wait: Option<String>,
}

/// `report`'s command line.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The results directory to re-render.
    dir: Option<PathBuf>,
    /// The earlier (or reference) result set of a comparison.
    #[arg(long, requires = "contender", conflicts_with = "dir")]
    baseline: Option<PathBuf>,
    /// The later result set of a comparison.
    #[arg(long, requires = "baseline")]
    contender: Option<PathBuf>,
    /// Where the comparison goes (default: <contender>/comparison).
    #[arg(long, requires = "baseline")]
    out: Option<PathBuf>,
    /// After rendering, bundle the result set into this new .tar.gz: experiment file,
    /// manifest, tables, report and charts, without the runs' raw outputs.
    #[arg(long, requires = "dir")]
    bundle: Option<PathBuf>,
    /// With --bundle: include every run's raw output (runs/) too.
    #[arg(long, requires = "bundle")]
    bundle_raw: bool,
    /// `publication`: also write every figure at a journal's double-column size (183 mm)
    /// into charts/publication/: SVG and PDF (fonts embedded), PNG at 300 dpi, a caption file.
    #[arg(long, default_value = "screen", requires = "dir")]
    figures: report::publication::Figures,
}

/// The runtime of the commands that run PostgreSQL's clients (compare; xtask's benches).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime")
}

/// Provision the tiers, run the workload matrix, report, tear down: on this machine
/// (`compare`), or on every server host the file names (`fleet`). Exit codes: 0 success, 1 a
/// failure at run time (teardown still done), 2 an unusable command line or experiment file.
pub fn compare(args: CompareArgs) -> ExitCode {
    let CompareArgs { config, resume, emulate, dry_run, out, seed, design, budget, target_halfwidth, as_host } = args;
    let measurement = MeasurementArgs { seed, design, budget, target_halfwidth };
    let args = crate::compare::Args { config, resume, emulate, dry_run, out, measurement, as_host, calibrate: None };
    match runtime().block_on(compare_or_fleet(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if args.as_host.is_some() {
                // The controller reads the host's failure from this line.
                eprintln!("{HOST_FAILURE_LINE}{}", e.summary());
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// The dimensioning run of this host for an experiment file: its A/A form measured as `compare`
/// measures a study (the baseline and twins of it), each workload's priors estimated from it and
/// kept in the state directory under the file's key, where every later `compare` of a file with
/// the same key finds them. Exit codes as `compare`'s.
pub fn calibrate(args: CalibrateArgs) -> ExitCode {
    let CalibrateArgs { config, emulate, dry_run, twins, runs, add, budget, seed } = args;
    for dir in &add {
        if let Err(e) = crate::calibration::add_result_set(dir) {
            eprintln!("error: {e:#}");
            return ExitCode::from(1);
        }
    }
    if !add.is_empty() {
        return ExitCode::SUCCESS;
    }
    if twins < 2 {
        eprintln!("error: --twins {twins}: at least 2 twins are needed (one twin's change has no spread)");
        return ExitCode::from(2);
    }
    if runs == 0 {
        eprintln!("error: --runs 0: at least one A/A run");
        return ExitCode::from(2);
    }
    let rt = runtime();
    for run in 1..=runs {
        let measurement = MeasurementArgs {
            seed: seed.map(|s| s.wrapping_add(run as u64 - 1)),
            design: None,
            budget: budget.clone(),
            target_halfwidth: None,
        };
        let args = crate::compare::Args {
            config: config.clone(),
            resume: None,
            emulate,
            dry_run,
            out: None,
            measurement,
            as_host: None,
            calibrate: Some(twins),
        };
        let setup = match crate::compare::resolve(&args) {
            Ok(s) => s,
            Err(e) => return ExitCode::from(e.exit_code()),
        };
        if setup.exp.measurement.design != experiment::Design::Slices {
            eprintln!(
                "error: calibrate measures design `slices` only (its contests' rounds are what the priors describe); this file's is `runs`{}",
                if emulate { "" } else { ": try --emulate, or set [measurement] design = \"slices\"" }
            );
            return ExitCode::from(2);
        }
        if !dry_run {
            let left = match setup.exp.measurement.budget {
                Some(b) => {
                    let min = b.as_secs_f64() / 60.0;
                    format!(
                        "; each run measures for its budget, {min:.0} min, after its set-up and data set: about {:.0} min more in all",
                        (runs - run + 1) as f64 * (min + 2.0)
                    )
                }
                None => String::new(),
            };
            eprintln!(
                "calibration: A/A run {run} of {runs} (each finished run is added to this host's calibration at once){left}"
            );
        }
        let dir = setup.results_dir.clone();
        if let Err(e) = rt.block_on(crate::compare::run(setup, &args)) {
            return ExitCode::from(e.exit_code());
        }
        if dry_run {
            if runs > 1 {
                eprintln!("dry run: the plan above is made {runs} times, one A/A run after another");
            }
            return ExitCode::SUCCESS;
        }
        if let Err(e) = crate::calibration::add_result_set(&dir) {
            eprintln!("error: {e:#}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

/// A fleet's file (or result set, with `--resume`) goes to `fleet`, unless this run is one
/// host's part of it; everything else to `compare`.
async fn compare_or_fleet(args: &crate::compare::Args) -> Result<(), CompareError> {
    let fleet_dir = args.resume.as_ref().filter(|d| results::fleet::FleetRecord::read(d).is_some());
    if let Some(dir) = fleet_dir.filter(|_| args.as_host.is_none()) {
        return fleet::resume(dir, args.config.as_deref());
    }
    let setup = crate::compare::resolve(args)?;
    if args.as_host.is_some() || setup.exp.server_hosts().is_empty() {
        return crate::compare::run(setup, args).await;
    }
    let launch = fleet::Launch {
        exp: &setup.exp,
        dir: &setup.results_dir,
        run_id: &setup.run_id,
        token: &setup.ctx.short_id,
        seed: setup.seed,
        emulate: args.emulate,
        measurement: &args.measurement,
    };
    if args.dry_run {
        fleet::dry_run::print(&launch);
        crate::compare::print_dry_run(&setup);
        return Ok(());
    }
    fleet::run(&launch)
}

/// Undo what a killed run left behind, from its run record.
pub fn cleanup(args: CleanupArgs) -> ExitCode {
    let wait = match args.wait.as_deref().map(experiment::units::parse_duration_with_unit).transpose() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: --wait {e}; it takes a duration such as 5min");
            return ExitCode::from(2);
        }
    };
    crate::cleanup::run(wait.unwrap_or_default())
}

/// Re-render a results directory (and bundle it), or compare two result sets.
pub fn report(args: ReportArgs) -> ExitCode {
    let ReportArgs { dir, baseline, contender, out, bundle, bundle_raw, figures } = args;
    let code = report_command(dir.clone(), baseline, contender, out, figures);
    match (bundle, dir) {
        (Some(file), Some(dir)) if code == ExitCode::SUCCESS => bundle_command(&dir, &file, bundle_raw),
        _ => code,
    }
}

/// `report DIR --bundle OUT.tar.gz`: the rendered result set as one file.
fn bundle_command(dir: &std::path::Path, file: &std::path::Path, raw: bool) -> ExitCode {
    match report::bundle::write(dir, file, raw) {
        Ok(b) => {
            eprintln!(
                "bundled {} entries{}",
                b.entries.len(),
                b.experiment.map(|p| format!(" (experiment file {} as it is now)", p.display())).unwrap_or_default()
            );
            println!("{}", file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn report_command(
    dir: Option<PathBuf>,
    baseline: Option<PathBuf>,
    contender: Option<PathBuf>,
    out: Option<PathBuf>,
    figures: report::publication::Figures,
) -> ExitCode {
    if let (Some(a), Some(b)) = (baseline, contender) {
        let out = out.unwrap_or_else(|| b.join("comparison"));
        return match report::compare::compare(&a, &b, &out) {
            Ok((cmp, files)) => {
                eprintln!(
                    "{} difference(s) in environment and configuration; {} matching cell(s)",
                    cmp.changes.len(),
                    cmp.cells.len()
                );
                for c in cmp.changes.iter().take(20) {
                    eprintln!("  changed: {}: {} -> {}", c.what, c.baseline, c.contender);
                }
                eprintln!("wrote {} files", files.len());
                println!("{}", out.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(dir) = dir else {
        eprintln!("error: give a results directory, or --baseline DIR_A --contender DIR_B");
        return ExitCode::from(2);
    };
    if results::fleet::FleetRecord::read(&dir).is_some() {
        // A fleet: the hosts compared (each host's own report is rendered in hosts/<name>/).
        return match report::fleet::render(&dir) {
            Ok((fleet, files)) => {
                eprintln!("fleet of {} host(s) with results; wrote {} files", fleet.hosts.len(), files.len());
                println!("{}", dir.join("report.md").display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match report::render_with(&dir, figures) {
        Ok((summary, files)) => {
            eprint!("{}", crate::terminal::fit(&report::text::summary_table(&summary)));
            let manifest = report::ResultSet::load(&dir).map(|s| s.manifest.warnings).unwrap_or_default();
            eprint!("{}", crate::terminal::warnings(&manifest, &summary.warnings, &dir.join("report.md")));
            eprintln!("wrote {} files", files.len());
            println!("{}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
