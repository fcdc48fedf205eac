//! [`ServerLaunch`], what every server of a run is started with. A leaf that both `env` (which
//! holds it) and `server` (which starts servers with it) use.

use std::path::PathBuf;

use journal::Journal;

use crate::install::{DbUser, PgInstall};

/// What every server of a run is started with: the build, its OS user, the run record that
/// holds each server's undo, the private socket and port it listens on, and its CPUs. `RunnerEnv` holds
/// it; a server's own facts (data directory, cgroup, log) are the start's arguments.
#[derive(Clone)]
pub struct ServerLaunch<'a> {
    pub install: PgInstall,
    pub user: DbUser,
    pub journal: &'a Journal,
    /// The private socket directory (owned by the database user, mode 0700).
    pub socket_dir: PathBuf,
    pub port: u16,
    /// The CPUs every server is confined to (`[measurement] pin_servers`); None: any.
    pub cpus: Option<Vec<u32>>,
}

/// The role every connection uses; the OS users root and postgres map to it (peer auth).
pub const DB_ROLE: &str = "postgres";
