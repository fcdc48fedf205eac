//! What every runner step needs: the PostgreSQL installation, its OS user, the run's journal,
//! the cgroup hierarchy, the private socket and the cancellation flag.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use journal::Journal;

use crate::cgroup::Hierarchy;
use crate::install::{DbUser, PgInstall};

pub struct RunnerEnv<'a> {
    pub install: PgInstall,
    pub user: DbUser,
    pub journal: &'a Journal,
    /// `None` when the machine has no usable cgroup hierarchy (then no memory limit can be set).
    pub cgroups: Option<Hierarchy>,
    /// Names this run's cgroups.
    pub run_token: String,
    /// The private socket directory (owned by the database user, mode 0700).
    pub socket_dir: PathBuf,
    pub port: u16,
    /// Logs of servers and loads go here.
    pub logs_dir: PathBuf,
    pub cancel: Arc<AtomicBool>,
    /// Drop the kernel's page cache before each measured run (needs root).
    pub drop_caches: bool,
    /// How long a benchmark may outlive its duration before the watchdog kills it (None: 30 s
    /// or half the duration, whichever is longer).
    pub watchdog_grace: Option<std::time::Duration>,
    /// I/O caps applied to every server (each only affects I/O to its own device).
    pub throttles: Vec<crate::cgroup::BlkioThrottle>,
}

impl RunnerEnv<'_> {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
}
