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
pub fn state_dir() -> PathBuf {
    std::env::var_os("PGTIER_STATE_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/var/lib/pgtier"))
}

pub fn journal_dir() -> PathBuf {
    state_dir().join("journal")
}

pub fn work_root() -> PathBuf {
    state_dir().join("work")
}
