//! The TPC-C driver on a client host as `RunnerEnv`'s client holds it: the words that run
//! pgtier's shipped binary there, and its one session once started. A leaf: the environment
//! holds the driver without knowing how drives run (`tpcc_remote` does).

use std::sync::{Arc, Mutex};

use tokio::io::{BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// pgtier's binary shipped to the client host, and the driver session once it is up.
pub struct TpccDriver {
    /// The words that run the shipped binary there (its environment included).
    pub(crate) words: Vec<String>,
    pub(crate) session: tokio::sync::Mutex<Option<Session>>,
}

impl TpccDriver {
    /// The driver run by `words` (the shipped binary with its environment), not started yet.
    pub fn new(words: Vec<String>) -> TpccDriver {
        TpccDriver { words, session: tokio::sync::Mutex::new(None) }
    }
}

/// The driver process on the host as the runner holds it: the local ssh, the write end of its
/// stdin, its stdout lines, and what it printed on stderr so far.
pub(crate) struct Session {
    /// The local ssh; dropping the session kills it.
    pub(crate) _child: Child,
    pub(crate) stdin: std::fs::File,
    pub(crate) stdout: Lines<BufReader<ChildStdout>>,
    pub(crate) stderr: Arc<Mutex<String>>,
    pub(crate) pid: Option<u32>,
}
