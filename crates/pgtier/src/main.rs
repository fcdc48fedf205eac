//! The `pgtier` binary: `pgtier compare | report | cleanup` (`cargo install --path crates/pgtier`).

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use pgtier::cli;

#[derive(Parser)]
#[command(name = "pgtier", about = "pgtier: what does this storage tier do for PostgreSQL?", version = pgtier::VERSION)]
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
    /// Print a shell completion script for SHELL (bash, zsh, fish, elvish, powershell), e.g.
    /// `pgtier completions bash > /etc/bash_completion.d/pgtier`.
    Completions { shell: clap_complete::Shell },
    /// Print pgtier's manual page (roff), e.g. `pgtier man > /usr/local/share/man/man1/pgtier.1`.
    Man,
    /// TPC-C drives on this machine, the client host of a run: pgtier runs it there over ssh
    /// and asks for drives on its stdin, one JSON line each; the reports come back on stdout.
    /// Not for direct use.
    #[command(name = "tpcc-client", hide = true)]
    TpccClient,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Compare(args) => cli::compare(args),
        Command::Calibrate(args) => cli::calibrate(args),
        Command::Cleanup(args) => cli::cleanup(args),
        Command::Report(args) => cli::report(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "pgtier", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Man => match clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Command::TpccClient => pgtier::tpcc_client::serve(),
    }
}
