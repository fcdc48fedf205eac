//! [`FakeSystem`]: a machine made of recorded outputs of real tools, for testing plans for
//! hardware this machine lacks by the exact calls they make.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::{CommandError, CommandLine, Output, ProcessId};

use super::{DaemonSpec, DiskLock, FileKind, Opener, System, redact};

/// One canned answer of the fake machine.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Canned {
    pub fn ok(stdout: impl Into<String>) -> Self {
        Canned { status: 0, stdout: stdout.into(), stderr: String::new() }
    }
    pub fn fail(status: i32, stderr: impl Into<String>) -> Self {
        Canned { status, stdout: String::new(), stderr: stderr.into() }
    }
}

/// A machine made of recorded tool outputs. Commands are answered by the first registered
/// prefix that matches the command line; answers registered with [`FakeSystem::answer_once`] come
/// first and are used up in order. Unanswered commands succeed with empty output. Every call is
/// recorded.
#[derive(Default)]
pub struct FakeSystem {
    pub calls: Vec<String>,
    answers: Vec<(String, VecDeque<Canned>, bool)>,
    pub files: BTreeMap<PathBuf, String>,
    pub kinds: BTreeMap<PathBuf, FileKind>,
    pub links: BTreeMap<PathBuf, PathBuf>,
    pub dax_files: Vec<PathBuf>,
    /// Block devices the kernel would report busy (O_EXCL open fails).
    pub busy_devices: Vec<PathBuf>,
    /// Processes that have a device open ([`System::openers`]).
    pub open_by: Vec<Opener>,
    /// Exports that serve a device, by the device asked about ([`System::kernel_users`]).
    pub exported: BTreeMap<PathBuf, Vec<String>>,
    /// Device nodes on which another open file holds a `flock`.
    pub locked: Vec<PathBuf>,
    /// Secrets handed to [`System::run_secret`], in order (kept out of `calls`).
    pub delivered_secrets: Vec<String>,
    /// Files written with [`System::write_private`] and not removed, with their contents (kept
    /// out of `calls`, which only say that one was written).
    pub private_files: BTreeMap<PathBuf, String>,
    /// Every file written with [`System::write_private`], removed or not, in order.
    pub private_writes: Vec<(PathBuf, String)>,
    /// Binary files ([`System::read_bytes`]).
    pub bytes: BTreeMap<PathBuf, Vec<u8>>,
    /// After a command starting with the prefix runs, the file gets these contents.
    effects: Vec<(String, PathBuf, String)>,
    next_pid: i32,
}

impl FakeSystem {
    pub fn new() -> Self {
        FakeSystem { next_pid: 40_000, ..Default::default() }
    }

    /// Every command starting with `prefix` gets `answer`.
    pub fn answer(&mut self, prefix: &str, answer: Canned) -> &mut Self {
        self.answers.push((prefix.to_string(), VecDeque::from([answer]), true));
        self
    }

    /// The next command starting with `prefix` gets `answer` (queued; used once).
    pub fn answer_once(&mut self, prefix: &str, answer: Canned) -> &mut Self {
        if let Some(entry) = self.answers.iter_mut().find(|(p, _, sticky)| p == prefix && !*sticky) {
            entry.1.push_back(answer);
        } else {
            self.answers.push((prefix.to_string(), VecDeque::from([answer]), false));
        }
        self
    }

    pub fn file(&mut self, path: impl Into<PathBuf>, contents: impl Into<String>) -> &mut Self {
        self.files.insert(path.into(), contents.into());
        self
    }

    pub fn block_device(&mut self, path: impl Into<PathBuf>, major: u32, minor: u32) -> &mut Self {
        self.kinds.insert(path.into(), FileKind::BlockDevice { major, minor });
        self
    }

    pub fn link(&mut self, from: impl Into<PathBuf>, to: impl Into<PathBuf>) -> &mut Self {
        self.links.insert(from.into(), to.into());
        self
    }

    /// After a command starting with `prefix` runs, `path` reads as `contents` (for example the
    /// mount table after `mount`).
    pub fn on_run(&mut self, prefix: &str, path: impl Into<PathBuf>, contents: impl Into<String>) -> &mut Self {
        self.effects.push((prefix.to_string(), path.into(), contents.into()));
        self
    }

    fn answer_for(&mut self, line: &str) -> Output {
        let mut out = Output::default();
        // Queued one-time answers come before standing ones.
        let once =
            self.answers.iter().position(|(p, q, sticky)| !*sticky && !q.is_empty() && line.starts_with(p.as_str()));
        let standing = self.answers.iter().position(|(p, _, sticky)| *sticky && line.starts_with(p.as_str()));
        if let Some(i) = once.or(standing) {
            let (_, queue, sticky) = &mut self.answers[i];
            let c = if *sticky { queue[0].clone() } else { queue.pop_front().unwrap() };
            out = Output { status: c.status, stdout: c.stdout, stderr: c.stderr };
        }
        if out.status == 0 {
            for (prefix, path, contents) in &self.effects {
                if line.starts_with(prefix.as_str()) {
                    self.files.insert(path.clone(), contents.clone());
                }
            }
        }
        out
    }

    /// Commands run so far (not file reads), as shell-quoted lines.
    pub fn commands(&self) -> Vec<String> {
        self.calls.iter().filter_map(|c| c.strip_prefix("run: ").map(str::to_string)).collect()
    }
}

impl System for FakeSystem {
    fn run(&mut self, cmd: &CommandLine, _timeout: Duration) -> Result<Output, CommandError> {
        let line = cmd.to_string();
        self.calls.push(format!("run: {line}"));
        Ok(self.answer_for(&line))
    }

    fn run_secret(
        &mut self,
        cmd: &CommandLine,
        secrets: &[(usize, String)],
        _timeout: Duration,
    ) -> Result<Output, CommandError> {
        // Only the placeholder form is recorded; the secrets are kept apart so that a test can
        // check they were delivered.
        let line = cmd.to_string();
        self.calls.push(format!("run: {line}"));
        for (i, s) in secrets {
            assert!(*i < cmd.args.len(), "secret index {i} out of range for `{line}`");
            self.delivered_secrets.push(s.clone());
        }
        let out = self.answer_for(&line);
        let values: Vec<&str> = secrets.iter().map(|(_, s)| s.as_str()).collect();
        Ok(Output { status: out.status, stdout: redact(&out.stdout, &values), stderr: redact(&out.stderr, &values) })
    }

    fn read_bytes(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        if let Some(b) = self.bytes.get(path) {
            self.calls.push(format!("read: {}", path.display()));
            return Ok(b.clone());
        }
        self.read_to_string(path).map(String::into_bytes)
    }

    fn write_private(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        self.calls.push(format!("write-private: {} ({} bytes)", path.display(), contents.len()));
        if self.private_files.contains_key(path) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} (fake)", path.display())));
        }
        self.private_files.insert(path.to_path_buf(), contents.to_string());
        self.private_writes.push((path.to_path_buf(), contents.to_string()));
        Ok(())
    }

    fn lock_disk(&mut self, dev: &Path) -> io::Result<DiskLock> {
        self.calls.push(format!("lock: {}", dev.display()));
        Ok(DiskLock { device: dev.to_path_buf(), file: None })
    }

    fn unlock_disk(&mut self, lock: DiskLock) {
        self.calls.push(format!("unlock: {}", lock.device.display()));
        drop(lock.file);
    }

    fn busy(&mut self, dev: &Path) -> io::Result<bool> {
        self.calls.push(format!("busy?: {}", dev.display()));
        Ok(self.busy_devices.iter().any(|b| b == dev))
    }

    fn openers(&mut self, devices: &[(u32, u32)]) -> io::Result<Vec<Opener>> {
        self.calls.push(format!("openers?: {devices:?}"));
        Ok(self.open_by.iter().filter(|o| devices.contains(&o.device)).cloned().collect())
    }

    fn kernel_users(&mut self, dev: &Path) -> io::Result<Vec<String>> {
        self.calls.push(format!("kernel users?: {}", dev.display()));
        Ok(self.exported.get(dev).cloned().unwrap_or_default())
    }

    fn flock_free(&mut self, dev: &Path) -> io::Result<bool> {
        self.calls.push(format!("flock?: {}", dev.display()));
        Ok(!self.locked.iter().any(|l| l == dev))
    }

    fn read_to_string(&mut self, path: &Path) -> io::Result<String> {
        self.calls.push(format!("read: {}", path.display()));
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{} (fake)", path.display())))
    }

    fn write(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        self.calls.push(format!("write: {} <- {}", path.display(), contents.trim()));
        Ok(())
    }

    fn create_dir_all(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        self.calls.push(format!("mkdir: {} {mode:o}", path.display()));
        Ok(())
    }

    fn create_sparse_file(&mut self, path: &Path, size: u64) -> io::Result<()> {
        self.calls.push(format!("sparse-file: {} {size}", path.display()));
        Ok(())
    }

    fn chown(&mut self, path: &Path, uid: u32, gid: u32, mode: u32) -> io::Result<()> {
        self.calls.push(format!("chown: {} {uid}:{gid} {mode:o}", path.display()));
        Ok(())
    }

    fn file_kind(&mut self, path: &Path) -> FileKind {
        self.kinds.get(path).copied().unwrap_or(FileKind::Missing)
    }

    fn canonicalize(&mut self, path: &Path) -> io::Result<PathBuf> {
        Ok(self.links.get(path).cloned().unwrap_or_else(|| path.to_path_buf()))
    }

    fn list_dir(&mut self, path: &Path) -> io::Result<Vec<String>> {
        self.calls.push(format!("list: {}", path.display()));
        let mut names: Vec<String> = self
            .files
            .keys()
            .chain(self.kinds.keys())
            .filter_map(|p| p.strip_prefix(path).ok())
            .filter_map(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn spawn(&mut self, daemon: &DaemonSpec) -> io::Result<ProcessId> {
        self.calls.push(format!(
            "spawn: {}{}",
            daemon.netns.as_ref().map(|n| format!("[netns {n}] ")).unwrap_or_default(),
            daemon.command
        ));
        self.next_pid += 1;
        Ok(ProcessId { pid: self.next_pid, start_time: 1 })
    }

    fn tcp_reachable(&mut self, _address: &str, _port: u16) -> bool {
        true
    }

    fn is_alive(&mut self, _process: ProcessId) -> bool {
        true
    }

    fn statx_dax(&mut self, path: &Path) -> io::Result<bool> {
        self.calls.push(format!("statx: {}", path.display()));
        Ok(self.dax_files.iter().any(|p| path.starts_with(p)))
    }

    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        self.calls.push(format!("rm: {}", path.display()));
        self.private_files.remove(path);
        Ok(())
    }

    fn has_program(&mut self, _program: &str) -> bool {
        true
    }

    fn sleep(&mut self, _d: Duration) {}
}
