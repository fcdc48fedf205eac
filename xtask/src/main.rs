//! `cargo xtask <command>`: the developer's tasks (setup, test, vm, bench), and pgtier's own
//! commands (compare, report, cleanup), forwarded unchanged to the `pgtier` crate.

mod bench;
mod release;
mod setup;
mod vm;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pgtier::cli;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "pgtier: what does this storage tier do for PostgreSQL?", version = pgtier::VERSION)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Provision the tiers, run the workload matrix, report, tear down. Without --emulate it
    /// partitions and formats the devices the experiment file names: run --dry-run first.
    ///
    /// Without --emulate, every device the experiment file names is partitioned (where the file
    /// says so) and formatted with XFS, and everything on it is lost; a device that is mounted,
    /// in use, or carries a filesystem, partition table, LVM or RAID signature is refused unless
    /// the file sets allow_wipe = true for it. --dry-run prints what would be done, touching
    /// nothing, and exits 1 when the real run would refuse (a device not here, no room, memory the machine lacks).
    Compare(cli::CompareArgs),
    /// Calibrate this host for an experiment file: the baseline and twins of it measured side by
    /// side (an A/A run), each workload's round-to-round correlation and offset between server
    /// lives estimated, and kept for every later `compare` of the file on this host.
    Calibrate(cli::CalibrateArgs),
    /// Undo what a killed run left behind, from its run record.
    Cleanup(cli::CleanupArgs),
    /// Re-render CSV, charts and report.md from a results directory, without running anything;
    /// or compare two result sets (--baseline A --contender B).
    Report(cli::ReportArgs),
    /// Install what pgtier needs from Debian's packages (as root), or say what is missing.
    Setup {
        /// Only check; install nothing.
        #[arg(long)]
        check: bool,
        /// Also what the test suite needs (chromium, poppler-utils, npm, openssh-server);
        /// `cargo xtask test` installs them itself.
        #[arg(long)]
        tests: bool,
    },
    /// Benchmarks (results go to results/bench-*/ and are quoted in docs/benchmarks.md).
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
    /// A Debian 12 guest under qemu with real NVMe, PMem (NVDIMM) and NVMe/TCP: build it, run a
    /// command in it (see docs/testing.md, "The VM").
    Vm {
        #[command(subcommand)]
        what: vm::VmCommand,
    },
    /// Install what the tests need (as root), then run the test suite (integration tests need
    /// root; see docs/testing.md); ends with
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
        /// main job's measurement), shipped+prepared (pgbench -M prepared), shipped+c4 (4 clients), shipped+readonly (select-only),
        /// shipped+pinned (pgbench on CPU 0, the servers on the others), shipped+handicap:<spread> (each server
        /// life under a CPU quota of 1 CPU times exp(spread x z), a known offset between lives: a test of the method).
        #[arg(long, default_value = "runs,slices")]
        designs: String,
        /// The slices designs' time budget per experiment.
        #[arg(long, default_value = "300s")]
        budget: String,
        /// Before the trials, calibrate each design's A/A experiment with this many A/A runs, kept
        /// in the campaign's directory (PGTIER_CALIBRATION_DIR), which the trials then use.
        #[arg(long, default_value_t = 0)]
        calibrate_runs: u32,
        /// Read the result sets of an earlier campaign in DIR again (its designs as given by
        /// --designs) instead of running one: no root needed.
        #[arg(long, value_name = "DIR")]
        from: Option<std::path::PathBuf>,
        /// With --from: estimate every result set with this estimator instead of the one it
        /// recorded: long-warm-up (shipped), workload-prior-life-offset (before it, without the
        /// long warm-up check), workload-prior (issue 37's first) or per-contest-lag1 (issue 24's).
        #[arg(long, requires = "from", value_parser = ["long-warm-up", "workload-prior-life-offset", "workload-prior", "per-contest-lag1"])]
        estimator: Option<String>,
        /// With --from: the cut moves on past warm-up curves of at most this time constant
        /// (rounds) instead of the shipped 4 (a candidate rule replayed on the same rounds).
        #[arg(long, requires = "from")]
        cut_tau: Option<f64>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Compare(args) => {
            pgtier::remote::binary::provide_with(release::release_pgtier);
            cli::compare(args)
        }
        Command::Calibrate(args) => cli::calibrate(args),
        Command::Cleanup(args) => cli::cleanup(args),
        Command::Report(args) => cli::report(args),
        Command::Setup { check, tests } => {
            setup::run(check, if tests { setup::For::Tests } else { setup::For::Pgtier })
        }
        Command::Test { require_all, args } => setup::test(require_all, &args),
        Command::Vm { what } => vm::command(what),
        Command::TpccClient => pgtier::tpcc_client::serve(),
        Command::Bench { which: BenchCommand::Fidelity { runs, duration, scale, clients, builtin } } => {
            let (Ok(duration), Some(builtin)) =
                (experiment::units::parse_duration(&duration), runner::pgbench::Builtin::parse(&builtin))
            else {
                eprintln!("error: --duration takes e.g. 20s; --builtin takes tpcb-like, simple-update or select-only");
                return ExitCode::from(2);
            };
            cli::runtime().block_on(bench::fidelity(bench::FidelityArgs { runs, duration, scale, clients, builtin }))
        }
        Command::Bench {
            which:
                BenchCommand::Precision { trials, aa_trials, designs, budget, calibrate_runs, from, estimator, cut_tau },
        } => {
            let estimator = estimator.map(|e| match e.as_str() {
                "per-contest-lag1" => results::manifest::Estimator::PerContestLag1,
                "workload-prior" => results::manifest::Estimator::WorkloadPrior,
                "workload-prior-life-offset" => results::manifest::Estimator::WorkloadPriorLifeOffset,
                _ => results::manifest::Estimator::LongWarmUp,
            });
            let designs = designs.split(',').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect();
            bench::precision::precision(bench::precision::PrecisionArgs {
                trials,
                aa_trials,
                designs,
                budget,
                calibrate_runs,
                from,
                estimator,
                cut_tau,
            })
        }
    }
}
