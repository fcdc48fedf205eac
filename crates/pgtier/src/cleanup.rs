//! `cargo xtask cleanup`: tears down what killed runs left behind, from their run records.

use std::process::ExitCode;

use journal::{Journal, Outcome};

use crate::paths;

/// `wait`: how long to wait for a run still in progress to end (a server host's run that is
/// tearing down after its controller went away) before its record is left alone.
pub fn run(wait: std::time::Duration) -> ExitCode {
    if !wait.is_zero() {
        wait_for_other_runs_of_this_binary(wait);
    }
    let dir = paths::journal_dir();
    let open = journal::open_journals(&dir);
    if open.is_empty() {
        println!("nothing to clean up: no unfinished run records in {}", dir.display());
        return ExitCode::SUCCESS;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("error: cleanup unmounts and detaches devices and needs root");
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    for path in open {
        let j = match Journal::open(&path) {
            Ok(j) => j,
            Err(journal::JournalError::InUse { .. }) => {
                println!("{}: in use by another pgtier process (a run in progress); stop it first", path.display());
                continue;
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed = true;
                continue;
            }
        };
        let t0 = std::time::Instant::now();
        while j.owned_by_live_other_process() && t0.elapsed() < wait {
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        if j.owned_by_live_other_process() {
            println!(
                "{}: run {} is still in progress (pid {}); stop it first (Ctrl-C tears down)",
                path.display(),
                j.run_id(),
                j.harness().pid
            );
            continue;
        }
        let pending = j.pending();
        println!(
            "{}: run {} ({}), {} recorded effect(s) to undo",
            path.display(),
            j.run_id(),
            j.description(),
            pending.len()
        );
        let report = j.teardown(|p, r| match r {
            Ok(Outcome::Done) => println!("  undone: {}", p.undo),
            Ok(Outcome::NothingLeft) => println!("  already gone: {}", p.undo),
            Err(e) => println!("  FAILED: {}: {e}", p.undo),
        });
        if report.is_clean() {
            println!("  clean: {} undone, {} already gone", report.undone.len(), report.already_gone.len());
        } else {
            failed = true;
            println!("  {} effect(s) could not be undone; fix the cause and run cleanup again", report.failed.len());
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Waits up to `wait` until no other process runs this executable: on a server host, the
/// shipped binary in the run's directory is that run's alone, and its process goes on after
/// its run record is closed (the report is written after teardown), so a controller that
/// brings the results back waits for the process, not only for the record.
fn wait_for_other_runs_of_this_binary(wait: std::time::Duration) {
    let Ok(me) = std::env::current_exe() else { return };
    let own = std::process::id();
    let others = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()))
            .filter(|pid| *pid != own)
            .any(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == me))
    };
    let t0 = std::time::Instant::now();
    let mut said = false;
    while others() && t0.elapsed() < wait {
        if !said {
            println!("waiting for the run of {} still in progress to end", me.display());
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
