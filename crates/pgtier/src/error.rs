//! Why `compare` stops, and what that means for its exit code: 2 when the command line or the
//! experiment file is unusable (nothing was touched), 1 for a failure at run time (teardown is
//! still done).

use std::path::PathBuf;

use crate::error_chain::{Chain, chain};

/// The start of the last line a server host's run (`compare --as-host`) prints on stderr when
/// it fails, followed by [`CompareError::summary`]: how the fleet's controller tells the
/// host's failure from the rest of its output.
pub const HOST_FAILURE_LINE: &str = "pgtier host run failed: ";

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Neither --config nor --resume.
    #[error("give --config FILE (or --resume DIR)")]
    NoConfig,
    /// The results directory to resume has no readable manifest.
    #[error("--resume {}: {source}", dir.display())]
    ResumeUnreadable { dir: PathBuf, source: results::ReadError },
    /// The experiment file is invalid (every problem, with file, line and key).
    #[error("{0}")]
    Config(#[source] experiment::ConfigErrors),
    /// A new result set would be mixed into an old one.
    #[error(
        "--out {} is not empty; give a new directory (or --resume it to continue that result set)",
        .0.display()
    )]
    OutNotEmpty(PathBuf),
    /// A command-line value that cannot be used (`--budget`, `--design`, ...); nothing was touched.
    #[error("{0}")]
    BadArgument(String),
    /// The interrupted result set cannot be continued with this configuration.
    #[error("cannot resume {}: {why}", dir.display())]
    NotResumable { dir: PathBuf, why: String },
    /// Something this machine lacks (root, a program, cgroups, zram, huge pages); nothing was
    /// touched.
    #[error(transparent)]
    Preflight(anyhow::Error),
    /// The run record could not be started.
    #[error(transparent)]
    State(anyhow::Error),
    /// The run failed, was interrupted, or some of its runs failed.
    #[error(transparent)]
    Run(anyhow::Error),
    /// The matrix finished, but its report could not be rendered.
    #[error("report: {0}")]
    Report(anyhow::Error),
    /// A dry run saw what the real run would refuse (a device that is not here, no room for the
    /// golden copy); nothing was touched.
    #[error("the real run would refuse: {}", .0.join("; "))]
    WouldRefuse(Vec<String>),
    /// Teardown could not undo everything; the run record stays open for `cargo xtask cleanup`.
    #[error("teardown left {} thing(s) in place: {}", failed.len(), failed.join("; "))]
    Teardown { failed: Vec<String>, record: PathBuf },
}

impl CompareError {
    /// The process's exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            CompareError::NoConfig
            | CompareError::ResumeUnreadable { .. }
            | CompareError::Config(_)
            | CompareError::OutNotEmpty(_)
            | CompareError::BadArgument(_)
            | CompareError::NotResumable { .. } => 2,
            CompareError::Preflight(_)
            | CompareError::State(_)
            | CompareError::Run(_)
            | CompareError::Report(_)
            | CompareError::WouldRefuse(_)
            | CompareError::Teardown { .. } => 1,
        }
    }

    /// The error's first line as [`CompareError::print`] says it.
    pub fn summary(&self) -> String {
        match self {
            CompareError::Config(errors) => errors.to_string().lines().next().unwrap_or_default().to_string(),
            CompareError::Preflight(e) | CompareError::State(e) | CompareError::Run(e) => {
                format!("error: {}", chain(e))
            }
            CompareError::Report(e) => format!("error: report: {}", chain(e)),
            _ => format!("error: {}", Chain(self)),
        }
    }

    /// Prints the error on stderr, with what it means for the machine. Called where the error
    /// happens: its place among the other lines is part of the output (a run's error comes
    /// after teardown and before the report, for instance).
    pub fn print(&self) {
        match self {
            CompareError::Config(errors) => eprintln!("{errors}"),
            CompareError::Preflight(e) | CompareError::State(e) | CompareError::Run(e) => {
                eprintln!("error: {}", chain(e))
            }
            CompareError::Report(e) => eprintln!("error: report: {}", chain(e)),
            _ => eprintln!("error: {}", Chain(self)),
        }
        match self {
            CompareError::Config(_) => eprintln!("The experiment file is invalid; nothing was touched."),
            CompareError::OutNotEmpty(_) | CompareError::Preflight(_) | CompareError::BadArgument(_) => {
                eprintln!("Nothing was touched.")
            }
            CompareError::NotResumable { .. } => {
                eprintln!("Nothing was touched; start a new result set instead (without --resume).")
            }
            CompareError::Teardown { record, .. } => {
                eprintln!("Run `cargo xtask cleanup` to retry; the run record is {}", record.display())
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_problems_exit_2_and_failures_at_run_time_1() {
        let two = [
            CompareError::NoConfig,
            CompareError::OutNotEmpty("/r".into()),
            CompareError::NotResumable { dir: "/r".into(), why: "changed".into() },
            CompareError::Config(experiment::ConfigErrors(vec![])),
        ];
        for e in two {
            assert_eq!(e.exit_code(), 2, "{e:?}");
        }
        let one = [
            CompareError::Preflight(anyhow::anyhow!("needs root")),
            CompareError::State(anyhow::anyhow!("journal")),
            CompareError::Run(anyhow::anyhow!("interrupted")),
            CompareError::Report(anyhow::anyhow!("disk full")),
            CompareError::WouldRefuse(vec!["device d: /dev/x does not exist on this machine".into()]),
            CompareError::Teardown { failed: vec!["umount /x".into()], record: "/j".into() },
        ];
        for e in one {
            assert_eq!(e.exit_code(), 1, "{e:?}");
        }
    }

    #[test]
    fn messages() {
        let e = CompareError::Teardown { failed: vec!["a".into(), "b".into()], record: "/j".into() };
        assert_eq!(e.to_string(), "teardown left 2 thing(s) in place: a; b");
        let e = CompareError::NotResumable { dir: "/r".into(), why: "the planned runs differ".into() };
        assert_eq!(e.to_string(), "cannot resume /r: the planned runs differ");
    }
}
