//! What a run says about itself, for `compare` and `fleet` alike: its short token, its run
//! record begun, the commit it was built from.

use anyhow::Result;
use experiment::Experiment;
use journal::Journal;

use crate::paths;

/// A 6-character token naming this run's interfaces and namespaces.
pub fn short_token(run_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in run_id.bytes().chain(std::process::id().to_le_bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{:06x}", h & 0xff_ffff)
}

/// The state directories and this run's record (held locked for as long as the run lives).
pub fn begin_record(run_id: &str, exp: &Experiment) -> Result<Journal> {
    paths::ensure_state_dirs()?;
    Ok(Journal::begin(&paths::journal_dir(), run_id, &format!("{} compare: {}", invoked_as(), exp.file.display()))?)
}

/// The command a user typed to start this process: `cargo xtask` for the developer entry point
/// (the binary named `xtask`), else the binary's own name (`pgtier`).
pub fn invoked_as() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    command_for(std::path::Path::new(&argv0))
}

fn command_for(argv0: &std::path::Path) -> String {
    match argv0.file_name().and_then(|n| n.to_str()) {
        Some("xtask") | None => "cargo xtask".into(),
        Some(name) => name.into(),
    }
}

/// The commit this binary was built from (`-dirty` when its sources differed from it;
/// "unknown" outside a git checkout: `build.rs`); on another host, the controller's
/// (`$PGTIER_REVISION`, set when it runs its shipped binary there).
pub fn git_commit() -> Option<String> {
    if let Ok(r) = std::env::var("PGTIER_REVISION") {
        return Some(r);
    }
    Some(env!("PGTIER_BUILD_REVISION").to_string()).filter(|r| r != "unknown")
}

#[cfg(test)]
mod invoked_as_tests {
    use super::command_for;
    use std::path::Path;

    #[test]
    fn records_name_the_command_that_ran() {
        assert_eq!(command_for(Path::new("/work/target/debug/xtask")), "cargo xtask");
        assert_eq!(command_for(Path::new("/usr/local/bin/pgtier")), "pgtier");
        assert_eq!(command_for(Path::new("")), "cargo xtask");
    }
}
