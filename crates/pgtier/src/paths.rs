//! Where things live.

use std::path::{Path, PathBuf};

/// The repository root (two levels above `crates/pgtier`), as it was when this binary was built:
/// for the developer's tasks (`cargo xtask test`, `bench`, `vm`), never for a user's files.
pub fn repo_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.ancestors().nth(2).expect("crates/pgtier lives in the repository").to_path_buf()
}

/// The shipped settings profiles (`configs/postgres/*.toml`), built into the binary.
const EMBEDDED_PROFILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/configs.rs"));

/// The experiment file of this process, once known: where `configs/` is looked for.
static EXPERIMENT_FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Remembers the experiment file this process runs (the first one given wins): its folder
/// decides [`configs_dir`] and the default results directory.
pub fn use_experiment_file(file: &Path) {
    let _ = EXPERIMENT_FILE.set(std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
}

/// A `configs/` directory with `postgres/` in the experiment file's folder or one above it
/// (`tiers/x.toml` finds the checkout's `configs/`).
fn configs_near_experiment() -> Option<PathBuf> {
    let file = EXPERIMENT_FILE.get()?;
    file.ancestors().skip(1).map(|d| d.join("configs")).find(|c| c.join("postgres").is_dir())
}

/// Settings profiles live in `configs/postgres/`: `$PGTIER_CONFIGS_DIR` (set when a controller
/// runs this binary on another host, where it shipped the profiles); else a `configs/` next to
/// the experiment file or above it; else the profiles built into this binary, written once
/// into a directory of the system's temporary directory named after their contents.
pub fn configs_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PGTIER_CONFIGS_DIR") {
        return PathBuf::from(d);
    }
    configs_near_experiment().unwrap_or_else(embedded_configs_dir)
}

/// The built-in profiles as a `configs/` directory: `<tmp>/pgtier-configs-<hash>/`, written to
/// a fresh directory and renamed into place, so concurrent processes never see half of it.
fn embedded_configs_dir() -> PathBuf {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, text) in EMBEDDED_PROFILES {
        for b in name.bytes().chain(text.bytes()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    let tmp = std::env::temp_dir();
    let dir = tmp.join(format!("pgtier-configs-{h:016x}"));
    if dir.join("postgres").is_dir() {
        return dir;
    }
    let staging = tmp.join(format!("pgtier-configs-{h:016x}.{}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(staging.join("postgres"))?;
        for (name, text) in EMBEDDED_PROFILES {
            std::fs::write(staging.join("postgres").join(name), text)?;
        }
        std::fs::rename(&staging, &dir)
    })();
    if written.is_err() {
        // Another process renamed its copy first (or the directory is not writable).
        let _ = std::fs::remove_dir_all(&staging);
    }
    dir
}

/// Where a new result set goes by default: `results/` beside the `configs/` found next to the
/// experiment file (the checkout's `results/` for `tiers/*.toml`), else in the current directory.
pub fn results_root() -> PathBuf {
    match configs_near_experiment().and_then(|c| c.parent().map(Path::to_path_buf)) {
        Some(d) => d.join("results"),
        None => std::path::absolute("results").unwrap_or_else(|_| PathBuf::from("results")),
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
