//! Faults injected into a measured run at a time offset: storage errors, a full device, a killed
//! server, a vanished target, a hung client. The run is then judged like any other: pgtier must
//! detect, name and contain what happened.

use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::{Journal, ProcessId, RecordId, Undo};
use nix::sys::signal::Signal;

use crate::{RunnerEnv, RunnerError};

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
    Ok(journal.record(Undo::RemoveFile { path: path.to_path_buf() }, note)?)
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
    let io = |e: std::io::Error| RunnerError::io(format!("inject {}", f.description), e);
    let not_applicable = match &f.action {
        FaultAction::KillServer => server.is_none().then_some("no server process"),
        FaultAction::StopClient => client.is_none().then_some("the client runs inside pgtier, not as a process"),
        _ => None,
    };
    if let Some(why) = not_applicable {
        injected.log.push(format!("at {at:.1} s: {} (not applicable: {why})", f.description));
        return Ok(());
    }
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

/// Fires every fault of `list` that is due at `elapsed` and has not fired yet, and returns the
/// log lines of those it fired. A fill-the-filesystem fault with `switch_wal` then asks the
/// server for WAL segment switches (in the background).
pub fn fire_due(
    list: &[Fault],
    fired: &mut [bool],
    elapsed: Duration,
    env: &RunnerEnv<'_>,
    (server, client): (Option<ProcessId>, Option<u32>),
    injected: &mut Injected,
) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, f) in list.iter().enumerate() {
        if fired[i] || elapsed < f.after {
            continue;
        }
        fired[i] = true;
        let at = elapsed.as_secs_f64();
        if let Err(e) = fire(f, env.server.journal, server, client, injected, at) {
            injected.log.push(format!("at {at:.1} s: could not inject {}: {e}", f.description));
        } else if let FaultAction::FillFilesystem { switch_wal: true, .. } = f.action {
            tokio::spawn(switch_wal_segments(env.server.socket_dir.clone(), env.server.port));
        }
        notes.push(injected.log.last().cloned().unwrap_or_default());
    }
    notes
}

/// Asks the server for up to 40 WAL segment switches, 50 ms apart, until one fails.
async fn switch_wal_segments(socket_dir: PathBuf, port: u16) {
    let Ok((client, conn)) = tokio_postgres::Config::new()
        .host_path(&socket_dir)
        .port(port)
        .user(crate::server::DB_ROLE)
        .dbname(crate::DATABASE)
        .connect(tokio_postgres::NoTls)
        .await
    else {
        return;
    };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    for _ in 0..40 {
        if client.batch_execute("SELECT pg_switch_wal()").await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
