//! pgtier's entry point: `cargo xtask <command>`.

mod bench;
mod cleanup;
mod compare;
mod error_chain;
mod fleet;
mod host;
mod kernel;
mod paths;
mod progress;
mod remote;
mod setup;
mod signals;
mod tpcc_client;
mod vm;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "pgtier: what does this storage tier do for PostgreSQL?", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Provision the tiers, run the workload matrix, report, tear down.
    Compare {
        /// The experiment file (tiers/*.toml).
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
        /// Print the plan (every command, in order, with its reason) and the run matrix; touch
        /// nothing. Needs no root.
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
    },
    /// Undo what a killed run left behind, from its run record.
    Cleanup {
        /// Wait this long for runs still in progress (their run records held, or other processes
        /// of this same executable) to end first (e.g. 5min).
        #[arg(long)]
        wait: Option<String>,
    },
    /// Re-render CSV, charts and report.md from a results directory, without running anything;
    /// or compare two result sets (--baseline A --contender B).
    Report {
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
    },
    /// Install what pgtier needs from Debian's packages (as root), or say what is missing.
    Setup {
        /// Only check; install nothing.
        #[arg(long)]
        check: bool,
    },
    /// Benchmarks (results go to results/bench-*/ and are quoted in docs/benchmarks.md).
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
    /// A Debian 12 guest under qemu with real NVMe, PMem (NVDIMM) and NVMe/TCP: build it, run a
    /// command in it (see README, "The VM").
    Vm {
        #[command(subcommand)]
        what: vm::VmCommand,
    },
    /// Run the test suite (integration tests need root; see README); ends with
    /// `N passed, N failed, N skipped` and lists every skip with its reason.
    Test {
        /// Fail every test that would skip (naming what it misses); CI=true does the same.
        #[arg(long)]
        require_all: bool,
        /// Extra arguments for `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// TPC-C drives on this machine, the client host of a run: pgtier runs it there over ssh
    /// and asks for drives on its stdin, one JSON line each; the reports come back on stdout.
    /// Not for direct use.
    #[command(name = "tpcc-client", hide = true)]
    TpccClient,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// pgtier's measured TPS against plain pgbench by hand, same options, same data, interleaved.
    Fidelity {
        #[arg(long, default_value_t = 3)]
        runs: u32,
        #[arg(long, default_value = "20s")]
        duration: String,
        #[arg(long, default_value_t = 20)]
        scale: u32,
        #[arg(long, default_value_t = 4)]
        clients: u32,
        /// tpcb-like, simple-update or select-only.
        #[arg(long, default_value = "tpcb-like")]
        builtin: String,
    },
    /// Interval half-width per minute of machine time and A/A false positives, per measurement
    /// design, on the emulated seed-000 TPC-B cells and an A/A experiment (see docs/benchmarks.md).
    Precision {
        /// Trials of the seed-000 TPC-B experiment per design.
        #[arg(long, default_value_t = 2)]
        trials: u32,
        /// Trials of the A/A experiment per design.
        #[arg(long, default_value_t = 4)]
        aa_trials: u32,
        /// Designs, comma-separated: runs, slices, slices:<slice length> (e.g. slices:2s), shipped (the
        /// main job's measurement), shipped+prepared (pgbench -M prepared), shipped+c4 (4 clients).
        #[arg(long, default_value = "runs,slices")]
        designs: String,
        /// The slices designs' time budget per experiment.
        #[arg(long, default_value = "300s")]
        budget: String,
        /// Read the result sets of an earlier campaign in DIR again (its designs as given by
        /// --designs) instead of running one: no root needed.
        #[arg(long, value_name = "DIR")]
        from: Option<std::path::PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Compare { config, resume, emulate, dry_run, out, seed, design, budget, target_halfwidth, as_host } => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime");
            let measurement = compare::MeasurementArgs { seed, design, budget, target_halfwidth };
            rt.block_on(compare::run(compare::Args { config, resume, emulate, dry_run, out, measurement, as_host }))
        }
        Command::Cleanup { wait } => {
            let Ok(wait) = wait.as_deref().map(experiment::units::parse_duration).transpose() else {
                eprintln!("error: --wait takes a duration such as 5min");
                return ExitCode::from(2);
            };
            cleanup::run(wait.unwrap_or_default())
        }
        Command::Report { dir, baseline, contender, out, bundle, bundle_raw, figures } => {
            let code = report_command(dir.clone(), baseline, contender, out, figures);
            match (bundle, dir) {
                (Some(file), Some(dir)) if code == ExitCode::SUCCESS => bundle_command(&dir, &file, bundle_raw),
                _ => code,
            }
        }
        Command::Setup { check } => setup::run(check),
        Command::Test { require_all, args } => setup::test(require_all, &args),
        Command::Vm { what } => vm::command(what),
        Command::TpccClient => tpcc_client::serve(),
        Command::Bench { which: BenchCommand::Fidelity { runs, duration, scale, clients, builtin } } => {
            let (Ok(duration), Some(builtin)) =
                (experiment::units::parse_duration(&duration), runner::pgbench::Builtin::parse(&builtin))
            else {
                eprintln!("error: --duration takes e.g. 20s; --builtin takes tpcb-like, simple-update or select-only");
                return ExitCode::from(2);
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(bench::fidelity(bench::FidelityArgs { runs, duration, scale, clients, builtin }))
        }
        Command::Bench { which: BenchCommand::Precision { trials, aa_trials, designs, budget, from } } => {
            let designs = designs.split(',').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect();
            bench::precision::precision(bench::precision::PrecisionArgs { trials, aa_trials, designs, budget, from })
        }
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
            eprint!("{}", report::text::summary_table(&summary));
            for w in &summary.warnings {
                eprintln!("warning: {w}");
            }
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
