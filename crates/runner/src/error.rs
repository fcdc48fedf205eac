//! Why a runner step failed. Errors of the machine keep their cause as `source()` (an
//! `io::Error`, the journal's, an undo's or a command's error); the text of each variant already includes
//! the cause, as a run's `failure` in result.json and runs.csv shows it.

/// Why a runner step failed.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The machine or the installation cannot do what is asked (no PostgreSQL binaries, no
    /// cgroup controller, not enough space, a path pgtier refuses to use).
    #[error("{0}")]
    Setup(String),
    /// A file, directory or process operation failed; `what` names the operation and its path
    /// (`mkdir /x`, `start pgbench ...`).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The run's journal could not record a step before it was taken (or release it after).
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    /// Undoing a recorded step at once (removing a cgroup, a fault's file) failed.
    #[error(transparent)]
    Undo(#[from] journal::UndoError),
    /// A helper command could not run or failed.
    #[error(transparent)]
    Command(#[from] journal::CommandError),
    /// The server misbehaved (did not start, crashed).
    #[error("server: {0}")]
    Server(String),
    /// A connection to the server or a query failed; `what` names it (`checkpoint`, `connect`).
    #[error("server: {what}: {source:#}")]
    Query {
        what: String,
        #[source]
        source: tokio_postgres::Error,
    },
    /// The workload failed.
    #[error("workload: {0}")]
    Workload(String),
    #[error("interrupted")]
    Cancelled,
}

impl RunnerError {
    /// The error of a failed query or connection `what`: `.map_err(RunnerError::query("checkpoint"))`.
    pub fn query(what: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> RunnerError {
        let what = what.into();
        move |source| RunnerError::Query { what, source }
    }

    pub fn io(what: impl Into<String>, source: std::io::Error) -> RunnerError {
        RunnerError::Io { what: what.into(), source }
    }
}

/// Names the operation of a failed I/O call: `fs::create_dir_all(d).io_context(|| format!("mkdir {}", d.display()))`.
pub(crate) trait IoContext<T> {
    fn io_context(self, what: impl FnOnce() -> String) -> Result<T, RunnerError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io_context(self, what: impl FnOnce() -> String) -> Result<T, RunnerError> {
        self.map_err(|source| RunnerError::Io { what: what(), source })
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[tokio::test]
    async fn query_errors_keep_their_cause_and_read_as_before() {
        let Err(pg) = tokio_postgres::connect("host=/nonexistent/pgtier port=1 user=x", tokio_postgres::NoTls).await
        else {
            panic!("a connection to a socket that does not exist");
        };
        let flattened = format!("server: connect: {pg:#}");
        let e = RunnerError::query("connect")(pg);
        assert_eq!(
            e.to_string(),
            flattened,
            "the text of RunnerError::Server(format!(\"connect: {{e:#}}\")) it replaces"
        );
        assert!(e.source().and_then(|s| s.downcast_ref::<tokio_postgres::Error>()).is_some(), "{:?}", e.source());
    }

    #[test]
    fn io_errors_keep_their_cause() {
        let e = std::fs::read_dir("/nonexistent/pgtier").io_context(|| "read /nonexistent/pgtier".into()).unwrap_err();
        assert!(e.to_string().starts_with("read /nonexistent/pgtier: No such file or directory"), "{e}");
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("an io::Error source");
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn journal_and_command_errors_show_as_before() {
        let inner =
            journal::JournalError::Io { path: "/j".into(), source: std::io::Error::from_raw_os_error(libc::ENOSPC) };
        let text = inner.to_string();
        let e = RunnerError::from(inner);
        assert_eq!(e.to_string(), text);
        assert!(e.source().is_some_and(|s| s.to_string().contains("No space left")), "{:?}", e.source());
        let c = RunnerError::from(journal::CommandError::Timeout {
            command: "dmesg".into(),
            after: std::time::Duration::from_secs(1),
        });
        assert_eq!(c.to_string(), "`dmesg` did not finish within 1s and was killed");
    }

    #[test]
    fn undo_errors_show_as_before_and_keep_their_cause() {
        let inner =
            journal::UndoError::Io { what: "rm /x".into(), source: std::io::Error::from_raw_os_error(libc::EISDIR) };
        let text = inner.to_string();
        let e = RunnerError::from(inner);
        assert_eq!(e.to_string(), text);
        assert!(e.source().is_some_and(|s| s.to_string().contains("Is a directory")), "{:?}", e.source());
    }
}
