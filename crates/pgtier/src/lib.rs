//! pgtier, the product: what does this storage tier do for PostgreSQL? The `pgtier` binary
//! (`pgtier compare | report | cleanup`) and `cargo xtask`, which forwards the same commands
//! here, both run [`cli`]'s commands.

/// `--version`: the package version and the commit this binary was built from, `-dirty` when
/// its sources differed from that commit ("unknown" outside a git checkout).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("PGTIER_BUILD_REVISION"), ")");

pub mod calibration;
pub mod cleanup;
pub mod cli;
pub mod compare;
pub mod error;
pub mod error_chain;
pub mod fleet;
pub mod host;
pub mod kernel;
pub mod measurement;
pub mod paths;
pub mod progress;
pub mod record;
pub mod remote;
pub mod signals;
pub mod terminal;
pub mod tpcc_client;
