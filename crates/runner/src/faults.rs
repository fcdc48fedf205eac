//! Faults injected into a measured run at a time offset: storage errors, a full device, a killed
//! server, a vanished target, a hung client. The run is then judged like any other: pgtier must
//! detect, name and contain what happened.

use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::{Journal, ProcessId, RecordId, Undo};
use nix::sys::signal::Signal;

use crate::RunnerError;

/// What to do when a fault fires.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultAction {
    /// Create a file (nbdkit's error filter fails every I/O while it exists).
    CreateFile(PathBuf),
    /// Take all the free space of the filesystem holding this directory. With `switch_wal`, the
    /// server is then asked for WAL segment switches, so that it needs a new segment file (and
    /// meets the full device) within the run rather than whenever its recycled segments run out.
    FillFilesystem { dir: PathBuf, switch_wal: bool },
    /// SIGKILL the postmaster of the run's server.
    KillServer,
    /// SIGKILL a helper process (e.g. nbdkit: the remote target goes away).
    KillProcess { label: String, process: ProcessId },
    /// SIGSTOP the benchmark client (it hangs; the watchdog must end the run).
    StopClient,
}

/// A fault scheduled `after` into the measured interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub after: Duration,
    pub action: FaultAction,
    /// For the record: what is injected, in words.
    pub description: String,
}

/// What must be put right after the run (the injected state, not its consequences).
#[derive(Default)]
pub struct Injected {
    files: Vec<(PathBuf, RecordId)>,
    pub log: Vec<String>,
}

impl Injected {
    /// Removes injected files (error switches, fillers); returns what was injected.
    pub fn revert(self, journal: &Journal) -> Vec<String> {
        for (_, id) in self.files {
            let _ = journal.undo_now(id);
        }
        self.log
    }
}

fn record_file(journal: &Journal, path: &Path, note: &str) -> Result<RecordId, RunnerError> {
    journal.record(Undo::RemoveFile { path: path.to_path_buf() }, note).map_err(|e| RunnerError::Setup(e.to_string()))
}

/// Fires one fault. `client` is the benchmark client's PID, `server` the postmaster.
pub fn fire(
    f: &Fault,
    journal: &Journal,
    server: Option<ProcessId>,
    client: Option<u32>,
    injected: &mut Injected,
    at: f64,
) -> Result<(), RunnerError> {
    let io = |e: std::io::Error| RunnerError::Setup(format!("inject {}: {e}", f.description));
    match &f.action {
        FaultAction::CreateFile(p) => {
            let id = record_file(journal, p, "fault switch")?;
            std::fs::write(p, "pgtier fault injection\n").map_err(io)?;
            injected.files.push((p.clone(), id));
        }
        FaultAction::FillFilesystem { dir, .. } => {
            let p = dir.join("pgtier-fault-filler");
            let id = record_file(journal, &p, "fault filler")?;
            injected.files.push((p.clone(), id));
            fill(&p).map_err(io)?;
        }
        FaultAction::KillServer => {
            if let Some(s) = server {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.pid), Signal::SIGKILL);
            }
        }
        FaultAction::KillProcess { process, .. } => {
            if process.is_alive() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(process.pid), Signal::SIGKILL);
            }
        }
        FaultAction::StopClient => {
            if let Some(pid) = client {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGSTOP);
            }
        }
    }
    injected.log.push(format!("at {at:.1} s: {}", f.description));
    Ok(())
}

/// Takes every free byte of the filesystem holding `path` (fallocate, then small writes until
/// ENOSPC).
fn fill(path: &Path) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let st = nix::sys::statvfs::statvfs(dir).map_err(std::io::Error::from)?;
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    let f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
    let mut len = free;
    while len > 0 {
        // SAFETY: fallocate on an open file descriptor with a valid length.
        let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) };
        if rc == 0 {
            break;
        }
        len = len * 9 / 10;
    }
    use std::io::Write;
    let mut w = std::io::BufWriter::new(&f);
    let chunk = vec![0u8; 4096];
    let mut end = std::fs::metadata(path)?.len();
    use std::io::Seek;
    w.seek(std::io::SeekFrom::Start(end))?;
    // Until ENOSPC (or well past the free space the filesystem reported).
    while w.write_all(&chunk).and_then(|_| w.flush()).is_ok() {
        end += chunk.len() as u64;
        if end > free + (64 << 20) {
            break;
        }
    }
    let _ = f.sync_all();
    Ok(())
}
