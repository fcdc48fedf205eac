//! Which binary of pgtier's is shipped to other hosts: `$PGTIER_SHIP_BINARY` when set (the
//! tests ship the debug binary they run), else what the program running the product provides
//! ([`provide_with`]: `cargo xtask` builds the release `pgtier`), else this very executable (the
//! `pgtier` binary itself, as `cargo install` built it).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result};

/// The environment variable that names the binary to ship.
pub const SHIP_BINARY_VAR: &str = "PGTIER_SHIP_BINARY";

/// Finds or builds the binary to ship; called once, at the first host that needs it.
pub type Provider = fn() -> Result<PathBuf>;

static PROVIDER: OnceLock<Provider> = OnceLock::new();
/// The provider's answer, kept for every later host (one build per run, however many hosts).
static PROVIDED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Sets where the shipped binary comes from when `$PGTIER_SHIP_BINARY` is not set (the first
/// call wins).
pub fn provide_with(provider: Provider) {
    let _ = PROVIDER.set(provider);
}

/// The binary to ship to a host, with its source said once on stderr.
pub fn shipped_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(SHIP_BINARY_VAR) {
        return Ok(PathBuf::from(p));
    }
    let Some(provider) = PROVIDER.get() else {
        return std::env::current_exe().context("find pgtier's own executable");
    };
    let mut provided = PROVIDED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = provided.as_ref() {
        return Ok(p.clone());
    }
    let p = provider().context("provide the pgtier binary to ship to other hosts")?;
    *provided = Some(p.clone());
    Ok(p)
}
