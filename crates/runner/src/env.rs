//! What every runner step needs: the PostgreSQL installation, its OS user, the run's journal,
//! the cgroup hierarchy, the private socket and the cancellation flag.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use journal::{CommandLine, Journal, ProcessId, RecordId, Undo};

use crate::RunnerError;

use crate::cgroup::Hierarchy;
use crate::install::{DbUser, PgInstall};

#[derive(Clone)]
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

    /// Starts a benchmark client (pgbench, pgbench -i) in its own process group, with the minimal
    /// environment, stderr piped, and records it in the journal so that teardown stops it even
    /// after a crash of the harness. Release the record once the client has exited.
    pub(crate) fn spawn_client(
        &self,
        cmd: &CommandLine,
        stdout: std::process::Stdio,
        label: &str,
    ) -> Result<(tokio::process::Child, Option<RecordId>), RunnerError> {
        let mut command = tokio::process::Command::new(&cmd.program);
        command.args(&cmd.args);
        minimal_env(command.as_std_mut());
        let child = command
            .stdin(std::process::Stdio::null())
            .stdout(stdout)
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| RunnerError::io(format!("start {cmd}"), e))?;
        let record = match child.id().and_then(|pid| ProcessId::of(pid as i32)) {
            Some(process) => Some(self.journal.record(
                Undo::StopProcess { label: label.into(), process, signal: "TERM".into(), grace_ms: 5000 },
                label,
            )?),
            None => None,
        };
        Ok((child, record))
    }
}

/// Replaces a child's environment by a minimal one (PATH, LC_ALL=C): PG* variables of the
/// caller (PGOPTIONS, ...) would silently change the benchmark, and root's environment, which may
/// hold secrets such as an NVMe DH-HMAC-CHAP key, is not handed on.
pub(crate) fn minimal_env(cmd: &mut std::process::Command) {
    cmd.env_clear().env("PATH", "/usr/local/bin:/usr/bin:/bin").env("LC_ALL", "C");
}
