//! Where things live.

use std::path::PathBuf;

/// The repository root (two levels above `crates/pgtier`), as it was when this binary was built.
pub fn repo_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.ancestors().nth(2).expect("crates/pgtier lives in the repository").to_path_buf()
}

/// Settings profiles live in `configs/`, or in `$PGTIER_CONFIGS_DIR` (set when a controller
/// runs this binary on another host, where it shipped the profiles).
pub fn configs_dir() -> PathBuf {
    match std::env::var_os("PGTIER_CONFIGS_DIR") {
        Some(d) => PathBuf::from(d),
        None => repo_root().join("configs"),
    }
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

/// Creates the state and work directories with mode 0711 if they do not exist yet; an existing
/// directory (`PGTIER_STATE_DIR=/tmp`) keeps its mode.
pub fn ensure_state_dirs() -> anyhow::Result<()> {
    use anyhow::Context;
    use std::os::unix::fs::PermissionsExt;
    for d in [state_dir(), work_root()] {
        if d.exists() {
            continue;
        }
        std::fs::create_dir_all(&d).with_context(|| format!("create {}", d.display()))?;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o711))
            .with_context(|| format!("chmod {}", d.display()))?;
    }
    Ok(())
}

pub fn journal_dir() -> PathBuf {
    state_dir().join("journal")
}

pub fn work_root() -> PathBuf {
    state_dir().join("work")
}
