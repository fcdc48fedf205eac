//! The machine as the provisioner sees it. [`RealSystem`] touches the real machine;
//! [`FakeSystem`] answers from recorded outputs of real tools and records every call, so plans for
//! hardware this machine lacks (PMem, NVMe/TCP) are tested by the exact calls they make.

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

mod fake;
pub use fake::{Canned, FakeSystem};

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
