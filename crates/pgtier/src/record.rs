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
    Ok(Journal::begin(&paths::journal_dir(), run_id, &format!("cargo xtask compare: {}", exp.file.display()))?)
}

/// The repository's commit; on another host, the controller's (`$PGTIER_REVISION`, set when it
/// runs its shipped binary there, which has no repository).
pub fn git_commit() -> Option<String> {
    if let Ok(r) = std::env::var("PGTIER_REVISION") {
        return Some(r);
    }
    journal::CommandLine::new("git")
        .args(["-C", &paths::repo_root().display().to_string(), "rev-parse", "--short", "HEAD"])
        .output(Some(std::time::Duration::from_secs(5)))
        .ok()
        .filter(|o| o.status == 0)
        .map(|o| o.stdout.trim().to_string())
}
