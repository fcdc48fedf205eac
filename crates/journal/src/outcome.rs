//! What performing an undo found, and why one did not finish: shared by the local undos
//! ([`crate::undo`]) and those on another host ([`crate::remote`]).

use std::path::PathBuf;

use crate::command::CommandError;

/// Why an undo did not finish: what is still in place, with the error that left it there as
/// `source()` where there is one. The text says both, as teardown reports it.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// Something is still in place (a process running or exiting, a mount in a directory to
    /// remove, a loop or zram device that will not go).
    #[error("{0}")]
    StillThere(String),
    /// A file operation failed; `what` names it and its path (`rm /x`, `write /proc/sys/...`).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A cgroup could not be removed, with the processes still in it.
    #[error("rmdir {}: {source} (processes still in it: {procs})", .path.display())]
    Cgroup {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        procs: String,
    },
    /// `umount` kept failing for 30 s: its last stderr, or why it could not run.
    #[error("umount {} keeps failing: {}", .target.display(), unmount_why(.stderr, .source.as_deref()))]
    Unmount {
        target: PathBuf,
        stderr: String,
        #[source]
        source: Option<Box<CommandError>>,
    },
    /// Not attempted: the undo of a record that holds this one (a filesystem on an NVMe/TCP
    /// namespace holds its connection) failed, so this one waits for `cargo xtask cleanup`.
    #[error("not done: `{holder}` failed, and this must wait until it is undone; left for `cargo xtask cleanup`")]
    Held { holder: String },
    /// `nvme disconnect` failed.
    #[error("nvme disconnect -n {nqn}: {stderr}")]
    NvmeDisconnect { nqn: String, stderr: String },
    /// A command the undo runs could not run, failed or timed out.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The record names a signal that does not exist.
    #[error("unknown signal {0}")]
    UnknownSignal(String),
    /// A sweep's failures, each.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<UndoError>),
    /// The undo was done, but the journal could not record it released.
    #[error(transparent)]
    Journal(Box<crate::JournalError>),
}

/// Why `umount` failed: why it could not run, or what it printed.
fn unmount_why(stderr: &str, source: Option<&CommandError>) -> String {
    source.map(ToString::to_string).unwrap_or_else(|| stderr.to_string())
}

/// What performing an undo found.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It undid something.
    Done,
    /// Nothing was left to undo.
    NothingLeft,
}
