//! The run record: every side effect a pgtier run makes (loop device, zram device, mount,
//! network namespace, helper process, cgroup, PostgreSQL server, ...) is written here, fsync'd,
//! *before* it is made (or, where its identity is only known afterwards, such as a PID,
//! immediately after). Teardown walks the record backwards and undoes exactly what is in it;
//! `cargo xtask cleanup` does the same from the file after the harness itself was killed.
//!
//! The record is a JSON-lines file: a `begin` line, then `record` lines (an [`Undo`] each),
//! `released` lines (an effect that its owner already undid) and finally `closed`.
//!
//! A record may *hold* earlier ones ([`Journal::record_holding`]): a filesystem mounted on an
//! NVMe/TCP namespace holds the connection under it. Teardown does not undo a held record while
//! its holder's undo failed (disconnecting would pull the device from under the mounted
//! filesystem); it says so and leaves both for `cargo xtask cleanup`.

pub mod command;
pub mod mounts;
pub mod outcome;
pub mod process;
pub mod remote;
pub mod undo;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use command::{CommandError, CommandLine, Output};
pub use process::ProcessId;
pub use undo::{Outcome, Undo, UndoError};

/// Identifies one recorded side effect within its journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordId(pub u64);

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
enum Line {
    Begin {
        run_id: String,
        harness: ProcessId,
        started_unix: u64,
        description: String,
    },
    Record {
        seq: u64,
        undo: Undo,
        note: String,
        /// Earlier records that must not be undone until this one is.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        holds: Vec<u64>,
    },
    Released {
        seq: u64,
    },
    Closed,
}

/// One pending side effect.
#[derive(Clone, Debug)]
pub struct Pending {
    pub id: RecordId,
    pub undo: Undo,
    pub note: String,
    /// Earlier records that must not be undone until this one is.
    pub holds: Vec<RecordId>,
}

/// A durable, append-only record of a run's side effects.
pub struct Journal {
    path: PathBuf,
    run_id: String,
    harness: ProcessId,
    description: String,
    inner: Mutex<Inner>,
}

struct Inner {
    file: File,
    next_seq: u64,
    records: Vec<Pending>,
    released: HashSet<u64>,
    closed: bool,
}

/// What a teardown did.
#[derive(Debug, Default)]
pub struct TeardownReport {
    /// Undos that removed something.
    pub undone: Vec<String>,
    /// Undos that found nothing left.
    pub already_gone: Vec<String>,
    /// Undos that failed, with the reason; these stay pending in the journal.
    pub failed: Vec<String>,
}

impl TeardownReport {
    pub fn is_clean(&self) -> bool {
        self.failed.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("journal {path} line {line}: {message}")]
    Corrupt { path: PathBuf, line: usize, message: String },
    /// Another process holds the journal (a run in progress, or a cleanup).
    #[error("journal {path} is in use by another pgtier process (a run in progress or a cleanup)")]
    InUse { path: PathBuf },
}

/// Takes the journal's exclusive lock without waiting; the lock lives as long as the file
/// description (it is released when the process ends, however it ends).
fn lock_exclusive(file: &File, path: &Path) -> Result<(), JournalError> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a valid, open descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(JournalError::InUse { path: path.to_path_buf() })
    } else {
        Err(JournalError::Io { path: path.to_path_buf(), source: e })
    }
}

impl Journal {
    /// Starts a new journal `DIR/RUN_ID.jsonl` (directory mode 0700, file mode 0600).
    pub fn begin(dir: &Path, run_id: &str, description: &str) -> Result<Journal, JournalError> {
        let io_err = |source| JournalError::Io { path: dir.to_path_buf(), source };
        std::fs::create_dir_all(dir).map_err(io_err)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io_err)?;
        let path = dir.join(format!("{run_id}.jsonl"));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| JournalError::Io { path: path.clone(), source })?;
        lock_exclusive(&file, &path)?;
        let harness = ProcessId::of(std::process::id() as i32)
            .unwrap_or(ProcessId { pid: std::process::id() as i32, start_time: 0 });
        let journal = Journal {
            path: path.clone(),
            run_id: run_id.to_string(),
            harness,
            description: description.to_string(),
            inner: Mutex::new(Inner {
                file,
                next_seq: 1,
                records: Vec::new(),
                released: HashSet::new(),
                closed: false,
            }),
        };
        journal.append(&Line::Begin {
            run_id: run_id.to_string(),
            harness,
            started_unix: unix_now(),
            description: description.to_string(),
        })?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(journal)
    }

    /// Opens an existing journal to continue or tear down what it records.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let io_err = |source| JournalError::Io { path: path.to_path_buf(), source };
        let mut file = OpenOptions::new().read(true).append(true).open(path).map_err(io_err)?;
        lock_exclusive(&file, path)?;
        let mut text = String::new();
        io::Read::read_to_string(&mut file, &mut text).map_err(io_err)?;
        let mut run_id = String::new();
        let mut description = String::new();
        let mut harness = ProcessId { pid: 0, start_time: 0 };
        let mut records = Vec::new();
        let mut released = HashSet::new();
        let mut closed = false;
        let mut next_seq = 1;
        let mut good_len = 0usize;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            if line.trim().is_empty() {
                good_len += line.len();
                continue;
            }
            if !line.ends_with('\n') {
                // A crash can cut the last line short; everything before it is intact.
                break;
            }
            let parsed: Line = serde_json::from_str(line.trim_end()).map_err(|e| JournalError::Corrupt {
                path: path.to_path_buf(),
                line: i + 1,
                message: e.to_string(),
            })?;
            good_len += line.len();
            match parsed {
                Line::Begin { run_id: r, harness: h, description: d, .. } => {
                    run_id = r;
                    harness = h;
                    description = d;
                }
                Line::Record { seq, undo, note, holds } => {
                    next_seq = next_seq.max(seq + 1);
                    records.push(Pending {
                        id: RecordId(seq),
                        undo,
                        note,
                        holds: holds.into_iter().map(RecordId).collect(),
                    });
                }
                Line::Released { seq } => {
                    released.insert(seq);
                }
                Line::Closed => closed = true,
            }
        }
        if good_len < text.len() {
            // Drop the torn tail so that new lines start on a line of their own.
            file.set_len(good_len as u64).map_err(io_err)?;
        }
        Ok(Journal {
            path: path.to_path_buf(),
            run_id,
            harness,
            description,
            inner: Mutex::new(Inner { file, next_seq, records, released, closed }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    /// The process that wrote this journal; while it lives, nobody else may tear it down.
    pub fn harness(&self) -> ProcessId {
        self.harness
    }

    /// True when the harness that began this journal is a process other than this one and still runs.
    pub fn owned_by_live_other_process(&self) -> bool {
        let me = ProcessId::of(std::process::id() as i32);
        self.harness.is_alive() && Some(self.harness) != me
    }

    /// Records a side effect that is about to be made (or was just made), with the undo for it.
    pub fn record(&self, undo: Undo, note: impl Into<String>) -> Result<RecordId, JournalError> {
        self.record_holding(undo, note, &[])
    }

    /// Like [`Journal::record`], for an effect that depends on earlier ones (`holds`): teardown
    /// undoes those only after this one was undone.
    pub fn record_holding(
        &self,
        undo: Undo,
        note: impl Into<String>,
        holds: &[RecordId],
    ) -> Result<RecordId, JournalError> {
        let note = note.into();
        let seq = {
            let mut inner = self.inner.lock().unwrap();
            let seq = inner.next_seq;
            inner.next_seq += 1;
            inner.records.push(Pending {
                id: RecordId(seq),
                undo: undo.clone(),
                note: note.clone(),
                holds: holds.to_vec(),
            });
            seq
        };
        self.append(&Line::Record { seq, undo, note, holds: holds.iter().map(|h| h.0).collect() })?;
        Ok(RecordId(seq))
    }

    /// Marks a side effect as already undone by its owner.
    pub fn release(&self, id: RecordId) -> Result<(), JournalError> {
        self.inner.lock().unwrap().released.insert(id.0);
        self.append(&Line::Released { seq: id.0 })
    }

    /// Performs the undo of one record now and releases it.
    pub fn undo_now(&self, id: RecordId) -> Result<Outcome, UndoError> {
        let undo = {
            let inner = self.inner.lock().unwrap();
            inner.records.iter().find(|p| p.id == id).map(|p| p.undo.clone())
        };
        let Some(undo) = undo else {
            return Ok(Outcome::NothingLeft);
        };
        let outcome = undo.perform()?;
        self.release(id).map_err(|e| UndoError::Journal(Box::new(e)))?;
        Ok(outcome)
    }

    /// Side effects that are recorded and not yet undone, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        let inner = self.inner.lock().unwrap();
        inner.records.iter().filter(|p| !inner.released.contains(&p.id.0)).cloned().collect()
    }

    /// Undoes every pending side effect, newest first. Each step is reported to `on_step` as it
    /// completes. A failed undo stays pending and teardown carries on with the rest, except with
    /// the records the failed one holds (and those they hold): they are not undone, reported as
    /// failed with the reason, and stay pending for a later `cleanup`.
    pub fn teardown(&self, mut on_step: impl FnMut(&Pending, &Result<Outcome, UndoError>)) -> TeardownReport {
        let mut report = TeardownReport::default();
        // Record -> the undo that failed while holding it.
        let mut blocked: std::collections::HashMap<RecordId, String> = std::collections::HashMap::new();
        for p in self.pending().into_iter().rev() {
            let result = match blocked.get(&p.id) {
                Some(holder) => Err(UndoError::Held { holder: holder.clone() }),
                None => p.undo.perform(),
            };
            if result.is_err() {
                let holder = blocked.get(&p.id).cloned().unwrap_or_else(|| p.undo.to_string());
                for h in &p.holds {
                    blocked.entry(*h).or_insert_with(|| holder.clone());
                }
            }
            on_step(&p, &result);
            match &result {
                Ok(outcome) => {
                    let _ = self.release(p.id);
                    match outcome {
                        Outcome::Done => report.undone.push(p.undo.to_string()),
                        Outcome::NothingLeft => report.already_gone.push(p.undo.to_string()),
                    }
                }
                Err(e) => report.failed.push(format!("{}: {e}", p.undo)),
            }
        }
        if report.is_clean() {
            let _ = self.close();
        }
        report
    }

    /// Marks the journal finished (nothing pending) and renames it to `*.closed.jsonl`.
    pub fn close(&self) -> Result<(), JournalError> {
        self.append(&Line::Closed)?;
        self.inner.lock().unwrap().closed = true;
        let closed = self.path.with_extension("closed.jsonl");
        std::fs::rename(&self.path, &closed).map_err(|source| JournalError::Io { path: self.path.clone(), source })?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a valid, open descriptor.
        unsafe { libc::flock(self.inner.lock().unwrap().file.as_raw_fd(), libc::LOCK_UN) };
        Ok(())
    }

    fn append(&self, line: &Line) -> Result<(), JournalError> {
        let mut text = serde_json::to_string(line).expect("journal lines serialise");
        text.push('\n');
        let mut inner = self.inner.lock().unwrap();
        let io_err = |source| JournalError::Io { path: self.path.clone(), source };
        inner.file.write_all(text.as_bytes()).map_err(io_err)?;
        inner.file.sync_data().map_err(io_err)
    }
}

/// Journals in `dir` that are not closed (runs that may have left something behind).
pub fn open_journals(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    name.ends_with(".jsonl") && !name.ends_with(".closed.jsonl")
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Held by tests that start processes and by tests that drop a journal and take its lock
/// again: a child between fork and exec holds a copy of every descriptor, and with it the
/// journal's lock.
#[cfg(test)]
pub(crate) static FORKING: Mutex<()> = Mutex::new(());

#[cfg(test)]
pub(crate) fn forking() -> std::sync::MutexGuard<'static, ()> {
    FORKING.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teardown_walks_backwards_and_second_time_finds_nothing() {
        let _forking = forking();
        let dir = tempfile::tempdir().unwrap();
        let [a, b, c] = ["a", "b", "c"].map(|n| dir.path().join(n));
        for f in [&a, &b, &c] {
            std::fs::write(f, "x").unwrap();
        }
        let j = Journal::begin(&dir.path().join("j"), "run1", "test").unwrap();
        j.record(Undo::RemoveFile { path: a.clone() }, "a").unwrap();
        let id_b = j.record(Undo::RemoveFile { path: b.clone() }, "b").unwrap();
        j.record(Undo::RemoveFile { path: c.clone() }, "c").unwrap();
        j.release(id_b).unwrap();
        let path = j.path().to_path_buf();
        drop(j);

        let j = Journal::open(&path).unwrap();
        assert_eq!(j.pending().len(), 2, "the released record is not pending");
        let mut order = Vec::new();
        let report = j.teardown(|p, _| order.push(p.note.clone()));
        assert!(report.is_clean());
        assert_eq!(order, vec!["c", "a"], "newest first");
        assert!(!a.exists() && b.exists() && !c.exists());
        assert!(open_journals(&dir.path().join("j")).is_empty(), "closed journals are not listed");
        assert!(
            matches!(Undo::RemoveFile { path: a.clone() }.perform(), Ok(Outcome::NothingLeft)),
            "undoing again finds nothing left"
        );
    }

    #[test]
    fn a_held_record_waits_for_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let under = dir.path().join("under");
        let also = dir.path().join("also-under");
        let other = dir.path().join("other");
        for f in [&under, &also, &other] {
            std::fs::write(f, "x").unwrap();
        }
        // A directory cannot be removed with remove_file: the holder's undo fails.
        let holder_dir = dir.path().join("a-directory");
        std::fs::create_dir(&holder_dir).unwrap();
        let j = Journal::begin(&dir.path().join("j"), "run4", "test").unwrap();
        let id_under = j.record(Undo::RemoveFile { path: under.clone() }, "under").unwrap();
        let id_also = j.record_holding(Undo::RemoveFile { path: also.clone() }, "also", &[id_under]).unwrap();
        j.record(Undo::RemoveFile { path: other.clone() }, "other").unwrap();
        j.record_holding(Undo::RemoveFile { path: holder_dir.clone() }, "holder", &[id_also]).unwrap();
        let path = j.path().to_path_buf();
        drop(j);

        // The holds survive in the file (cleanup reads them from there).
        let j = Journal::open(&path).unwrap();
        let mut seen = Vec::new();
        let report = j.teardown(|p, r| seen.push((p.note.clone(), r.is_ok())));
        assert_eq!(
            seen,
            vec![("holder".into(), false), ("other".into(), true), ("also".into(), false), ("under".into(), false)]
        );
        assert!(!other.exists() && also.exists() && under.exists(), "held records were not undone");
        assert_eq!(report.failed.len(), 3);
        assert!(
            report.failed[1].contains("not done") && report.failed[1].contains("cargo xtask cleanup"),
            "{:?}",
            report.failed
        );
        assert!(report.failed[2].contains(&holder_dir.display().to_string()), "the reason names the failed holder");
        assert_eq!(j.pending().len(), 3, "all three stay for cleanup");
        drop(j);

        // Once the holder can be undone, cleanup undoes the rest in order.
        std::fs::remove_dir(&holder_dir).unwrap();
        let j = Journal::open(&path).unwrap();
        let report = j.teardown(|_, _| {});
        assert!(report.is_clean(), "{:?}", report.failed);
        assert!(!also.exists() && !under.exists());
    }

    #[test]
    fn a_journal_in_use_cannot_be_opened_twice() {
        let _forking = forking();
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::begin(dir.path(), "run3", "test").unwrap();
        assert!(matches!(Journal::open(j.path()), Err(JournalError::InUse { .. })));
        let path = j.path().to_path_buf();
        drop(j);
        let again = Journal::open(&path).unwrap();
        assert!(matches!(Journal::open(&path), Err(JournalError::InUse { .. })));
        drop(again);
    }

    #[test]
    fn a_torn_last_line_is_ignored() {
        let _forking = forking();
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::begin(dir.path(), "run2", "test").unwrap();
        j.record(Undo::RemoveFile { path: "/nonexistent/x".into() }, "x").unwrap();
        let path = j.path().to_path_buf();
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"op\":\"record\",\"seq\":9,\"und").unwrap();
        let j = Journal::open(&path).unwrap();
        assert_eq!(j.pending().len(), 1);
        assert_eq!(open_journals(dir.path()), vec![path]);
    }
}
