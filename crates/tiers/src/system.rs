//! The machine as the provisioner sees it. [`RealSystem`] touches the real machine;
//! [`FakeSystem`] answers from recorded outputs of real tools and records every call, so plans for
//! hardware this machine lacks (PMem, NVMe/TCP) are tested by the exact calls they make.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use journal::{CommandError, CommandLine, Output, ProcessId};

pub use crate::users::Opener;

/// What a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Missing,
    BlockDevice { major: u32, minor: u32 },
    File,
    Directory,
    Other,
}

/// A long-running helper process (nbdkit, nbdfuse).
#[derive(Clone, Debug)]
pub struct DaemonSpec {
    pub label: String,
    pub command: CommandLine,
    /// Run it inside this named network namespace (only the network namespace is entered, so it
    /// does not pin the mounts of the harness).
    pub netns: Option<String>,
    /// Its stdout and stderr go here, appended after a line starting with [`LOG_START_MARK`].
    pub log: PathBuf,
}

/// How the line written into a helper's log before each start begins: what follows the last such
/// line is this start's output (a resumed run appends to the logs of the attempt it resumes).
pub const LOG_START_MARK: &str = "== pgtier: starting ";

/// The part of a helper's log written since its latest start.
pub fn since_last_start(log: &str) -> &str {
    match log.rfind(&format!("\n{LOG_START_MARK}")) {
        Some(i) => &log[i + 1..],
        None => log,
    }
}

/// An exclusive BSD lock (`flock`) on a whole disk, held until it is given back with
/// [`System::unlock_disk`] (or dropped).
#[derive(Debug)]
pub struct DiskLock {
    pub device: PathBuf,
    file: Option<File>,
}

/// Every interaction the provisioner has with the machine.
pub trait System {
    /// Runs a command and returns its output, whatever its exit status.
    fn run(&mut self, cmd: &CommandLine, timeout: Duration) -> Result<Output, CommandError>;
    /// Runs `cmd` with the argument at each index of `secrets` replaced by the secret. `cmd`
    /// holds a placeholder there and is the only form that may be recorded or printed; outputs
    /// and errors come back with every secret replaced by `<redacted>`.
    fn run_secret(
        &mut self,
        cmd: &CommandLine,
        secrets: &[(usize, String)],
        timeout: Duration,
    ) -> Result<Output, CommandError>;
    /// True when the kernel refuses to open the block device exclusively (`O_EXCL`): it is
    /// mounted (in any mount namespace) or claimed by swap, device-mapper, md or a driver.
    fn busy(&mut self, dev: &Path) -> io::Result<bool>;
    /// Every process that has one of the block devices `devices` (device numbers) open or
    /// mapped ([`crate::users::OPENERS`], run through [`System::run`]).
    fn openers(&mut self, devices: &[(u32, u32)]) -> io::Result<Vec<Opener>> {
        crate::users::openers_via(&mut |cmd, timeout| self.run(cmd, timeout), devices)
    }
    /// nvmet, LIO and loop-device exports that serve `dev`, its disk or a partition of it: the
    /// kernel opens those without claiming them ([`crate::users::KERNEL_USERS`], run through
    /// [`System::run`]).
    fn kernel_users(&mut self, dev: &Path) -> io::Result<Vec<String>> {
        crate::users::kernel_users_via(&mut |cmd, timeout| self.run(cmd, timeout), dev)
    }
    /// True when an exclusive non-blocking `flock` on the device node `dev` can be taken (and
    /// is given back at once); udev's shared lock while it probes is waited out for a moment.
    fn flock_free(&mut self, dev: &Path) -> io::Result<bool>;
    fn read_to_string(&mut self, path: &Path) -> io::Result<String>;
    /// A file's bytes (sysfs binary attributes such as a SCSI disk's `device/vpd_pg80`).
    fn read_bytes(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_to_string(path).map(String::into_bytes)
    }
    fn write(&mut self, path: &Path, contents: &str) -> io::Result<()>;
    /// Creates `path`, which must not exist, readable by its owner only (mode 0600 from the
    /// start), and writes `contents`: a secret, never recorded.
    fn write_private(&mut self, path: &Path, contents: &str) -> io::Result<()>;
    /// Takes an exclusive `flock` on the disk node `dev` (opened read-only), waiting while udev
    /// holds its shared lock for a moment.
    fn lock_disk(&mut self, dev: &Path) -> io::Result<DiskLock>;
    fn unlock_disk(&mut self, lock: DiskLock) {
        drop(lock)
    }
    fn create_dir_all(&mut self, path: &Path, mode: u32) -> io::Result<()>;
    fn create_sparse_file(&mut self, path: &Path, size: u64) -> io::Result<()>;
    fn chown(&mut self, path: &Path, uid: u32, gid: u32, mode: u32) -> io::Result<()>;
    fn file_kind(&mut self, path: &Path) -> FileKind;
    fn canonicalize(&mut self, path: &Path) -> io::Result<PathBuf>;
    /// Names of the entries of a directory, sorted.
    fn list_dir(&mut self, path: &Path) -> io::Result<Vec<String>>;
    fn spawn(&mut self, daemon: &DaemonSpec) -> io::Result<ProcessId>;
    fn tcp_reachable(&mut self, address: &str, port: u16) -> bool;
    fn is_alive(&mut self, process: ProcessId) -> bool;
    /// Whether the kernel reports the DAX attribute (statx STATX_ATTR_DAX) on `path`.
    fn statx_dax(&mut self, path: &Path) -> io::Result<bool>;
    fn remove_file(&mut self, path: &Path) -> io::Result<()>;
    /// True when `program` is installed.
    fn has_program(&mut self, program: &str) -> bool;
    fn sleep(&mut self, d: Duration);
}

/// The real machine.
#[derive(Default)]
pub struct RealSystem;

impl System for RealSystem {
    fn run(&mut self, cmd: &CommandLine, timeout: Duration) -> Result<Output, CommandError> {
        cmd.output(Some(timeout))
    }

    fn run_secret(
        &mut self,
        cmd: &CommandLine,
        secrets: &[(usize, String)],
        timeout: Duration,
    ) -> Result<Output, CommandError> {
        let mut real = cmd.clone();
        for (i, secret) in secrets {
            if let Some(a) = real.args.get_mut(*i) {
                *a = secret.clone();
            }
        }
        let values: Vec<&str> = secrets.iter().map(|(_, s)| s.as_str()).collect();
        let shown = cmd.to_string();
        match real.output(Some(timeout)) {
            Ok(out) => Ok(Output {
                status: out.status,
                stdout: redact(&out.stdout, &values),
                stderr: redact(&out.stderr, &values),
            }),
            // The errors carry the command line: give them the placeholder form.
            Err(CommandError::Spawn { source, .. }) => Err(CommandError::Spawn {
                command: shown,
                source: io::Error::new(source.kind(), redact(&source.to_string(), &values)),
            }),
            Err(CommandError::Timeout { after, .. }) => Err(CommandError::Timeout { command: shown, after }),
            Err(CommandError::Failed { status, stderr, stdout, .. }) => Err(CommandError::Failed {
                command: shown,
                status,
                stderr: redact(&stderr, &values),
                stdout: redact(&stdout, &values),
            }),
        }
    }

    fn busy(&mut self, dev: &Path) -> io::Result<bool> {
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(dev) {
            Ok(_) => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(true),
            Err(e) => Err(e),
        }
    }

    fn flock_free(&mut self, dev: &Path) -> io::Result<bool> {
        let file = File::open(dev)?;
        let start = std::time::Instant::now();
        loop {
            // SAFETY: flock on a descriptor we own; closing it gives the lock back.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(e);
            }
            if start.elapsed() > Duration::from_secs(3) {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn read_to_string(&mut self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn read_bytes(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        std::fs::write(path, contents)
    }

    fn write_private(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()
    }

    fn lock_disk(&mut self, dev: &Path) -> io::Result<DiskLock> {
        let file = File::open(dev)?;
        let start = std::time::Instant::now();
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(DiskLock { device: dev.to_path_buf(), file: Some(file) });
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) || start.elapsed() > Duration::from_secs(30) {
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn create_dir_all(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        std::fs::create_dir_all(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }

    fn create_sparse_file(&mut self, path: &Path, size: u64) -> io::Result<()> {
        let f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        f.set_len(size)
    }

    fn chown(&mut self, path: &Path, uid: u32, gid: u32, mode: u32) -> io::Result<()> {
        std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }

    fn file_kind(&mut self, path: &Path) -> FileKind {
        match std::fs::metadata(path) {
            Err(_) => FileKind::Missing,
            Ok(m) => {
                let ft = m.file_type();
                if ft.is_block_device() {
                    let rdev = m.rdev();
                    FileKind::BlockDevice { major: libc::major(rdev), minor: libc::minor(rdev) }
                } else if ft.is_file() {
                    FileKind::File
                } else if ft.is_dir() {
                    FileKind::Directory
                } else {
                    FileKind::Other
                }
            }
        }
    }

    fn canonicalize(&mut self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn list_dir(&mut self, path: &Path) -> io::Result<Vec<String>> {
        let mut names: Vec<String> =
            std::fs::read_dir(path)?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        Ok(names)
    }

    fn spawn(&mut self, daemon: &DaemonSpec) -> io::Result<ProcessId> {
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&daemon.log)?;
        {
            use std::io::Write;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            writeln!(log, "\n{LOG_START_MARK}{} (unix time {}) ==", daemon.label, now.as_secs())?;
        }
        let mut cmd = Command::new(&daemon.command.program);
        cmd.args(&daemon.command.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Own process group: a Ctrl-C at the terminal reaches the harness only, which then
            // tears down in order.
            .process_group(0);
        if let Some(ns) = &daemon.netns {
            let fd = File::open(Path::new("/run/netns").join(ns))?;
            let raw = fd.as_raw_fd();
            // SAFETY: setns is async-signal-safe; the fd stays open until after spawn returns.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setns(raw, libc::CLONE_NEWNET) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let child = cmd.spawn()?;
            drop(fd);
            return identity(child.id());
        }
        let child = cmd.spawn()?;
        identity(child.id())
    }

    fn tcp_reachable(&mut self, address: &str, port: u16) -> bool {
        let Ok(ip) = address.parse::<std::net::IpAddr>() else {
            return false;
        };
        std::net::TcpStream::connect_timeout(&(ip, port).into(), Duration::from_millis(300)).is_ok()
    }

    fn is_alive(&mut self, process: ProcessId) -> bool {
        process.is_alive()
    }

    fn statx_dax(&mut self, path: &Path) -> io::Result<bool> {
        statx_dax(path)
    }

    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn has_program(&mut self, program: &str) -> bool {
        journal::command::which(program).is_some()
    }

    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d)
    }
}

fn identity(pid: u32) -> io::Result<ProcessId> {
    // The child is ours and cannot have been reaped yet, so its /proc entry exists.
    ProcessId::of(pid as i32).ok_or_else(|| io::Error::other(format!("process {pid} vanished at start")))
}

/// `text` with every non-empty secret replaced by `<redacted>`.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut t = text.to_string();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        t = t.replace(s, "<redacted>");
    }
    t
}

/// STATX_ATTR_DAX from linux/stat.h: "File is currently in DAX state".
pub const STATX_ATTR_DAX: u64 = 0x0020_0000;

/// Asks the kernel whether `path` is in DAX state (statx attributes).
pub fn statx_dax(path: &Path) -> io::Result<bool> {
    use std::ffi::CString;
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(io::Error::other)?;
    let mut buf: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and a zeroed statx buffer of the right type.
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, libc::STATX_BASIC_STATS, &mut buf) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if buf.stx_attributes_mask & STATX_ATTR_DAX == 0 {
        // Kernels before 5.8 (and filesystems without DAX) do not report the attribute at all.
        return Err(io::Error::new(io::ErrorKind::Unsupported, "statx does not report STATX_ATTR_DAX here"));
    }
    Ok(buf.stx_attributes & STATX_ATTR_DAX != 0)
}

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
