//! Where things live.

use std::path::PathBuf;

/// The repository root (xtask's parent directory).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the repository").to_path_buf()
}

/// Settings profiles live in `configs/`.
pub fn configs_dir() -> PathBuf {
    repo_root().join("configs")
}

/// Run records and work directories: `$PGTIER_STATE_DIR`, default `/var/lib/pgtier`.
/// A relative `PGTIER_STATE_DIR` is made absolute against the current directory once, so that
/// run records never name paths that depend on where a later `cleanup` is started.
pub fn state_dir() -> PathBuf {
    match std::env::var_os("PGTIER_STATE_DIR").map(PathBuf::from) {
        None => PathBuf::from("/var/lib/pgtier"),
        Some(p) if p.is_absolute() => p,
        Some(p) => std::path::absolute(&p).unwrap_or(p),
    }
}

pub fn journal_dir() -> PathBuf {
    state_dir().join("journal")
}

pub fn work_root() -> PathBuf {
    state_dir().join("work")
}
