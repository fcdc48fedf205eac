//! What undoes a side effect. Every variant is idempotent: it first looks whether there is
//! anything left to undo, so a teardown can be repeated (after a crash, or twice in a row).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::command::CommandLine;
use crate::mounts;
pub use crate::outcome::{Outcome, UndoError};
use crate::process::ProcessId;

/// The inverse of one recorded side effect.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Undo {
    /// Unmount a filesystem mounted at `target`.
    Unmount { target: PathBuf },
    /// Detach every loop device whose backing file is `backing_file`.
    DetachLoop { backing_file: PathBuf },
    /// Reset and remove the zram device `/dev/zram{id}` (created by `hot_add`) — unless the
    /// machine restarted since (`boot_id` differs): then that device is gone and the number may
    /// belong to someone else's.
    RemoveZram {
        id: u32,
        #[serde(default)]
        boot_id: Option<String>,
    },
    /// Stop a process: `signal`, then SIGKILL after `grace_ms`.
    StopProcess { label: String, process: ProcessId, signal: String, grace_ms: u64 },
    /// Unmount a FUSE mount (`fusermount3 -u`) and wait for its daemon to exit.
    StopFuse { mountpoint: PathBuf, process: ProcessId },
    /// Delete a network interface (and with it its veth peer).
    DeleteLink { name: String },
    /// Delete a named network namespace.
    DeleteNetns { name: String },
    /// Remove a cgroup directory (its processes must be gone).
    RemoveCgroup { path: PathBuf },
    /// Remove a file this run created.
    RemoveFile { path: PathBuf },
    /// Remove a directory tree this run created.
    RemoveDirAll { path: PathBuf },
    /// Disconnect an NVMe-oF connection pgtier made: the controller it created (`nvme
    /// disconnect -d`) when its name is known, else every controller of the subsystem (`-n`,
    /// recorded before the connect, when no name exists yet). Skipped when the machine restarted
    /// since (`boot_id` differs): the connection did not survive, and a connection to the same
    /// subsystem made after the restart is not pgtier's. A controller that no longer exists, or
    /// now belongs to another subsystem, is left alone.
    NvmeDisconnect {
        nqn: String,
        #[serde(default)]
        boot_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        controller: Option<String>,
    },
    /// Write back a kernel setting (sysctl, sysfs) to the value it had before the run.
    RestoreFile { path: PathBuf, contents: String },
    /// Last resort after a crash: unmount, detach and stop whatever still refers to `work_dir`.
    Sweep { work_dir: PathBuf },
    /// Close the OpenSSH master connection to a host of the experiment (`ssh -O exit`), and
    /// remove its control socket if the master died and left it. `options` are the ssh options
    /// the connection was opened with (ControlPath, known_hosts, identity, port).
    CloseSshMaster { host: String, control_path: PathBuf, options: Vec<String>, destination: String },
    /// Remove a directory this run made on another host (`rm -rf` over ssh, the path quoted).
    RemoveRemoteDir { host: String, options: Vec<String>, destination: String, path: String },
    /// Run pgtier's own cleanup on a server host (`words`: the shipped binary with its state
    /// directory there, `cleanup --wait ...`): the host undoes its run records itself, after its
    /// run, if one is still tearing down, has ended.
    RemoteCleanup { host: String, options: Vec<String>, destination: String, words: Vec<String> },
    /// Undo an effect on another host (a storage target host: nbdkit, nvmet's configfs items)
    /// over ssh, with the options and destination the run reached it with.
    Remote { host: String, options: Vec<String>, destination: String, op: crate::remote::RemoteOp },
}

impl fmt::Display for Undo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undo::Unmount { target } => write!(f, "umount {}", target.display()),
            Undo::DetachLoop { backing_file } => {
                write!(f, "detach loop devices backed by {}", backing_file.display())
            }
            Undo::RemoveZram { id, .. } => write!(f, "reset and remove /dev/zram{id}"),
            Undo::StopProcess { label, process, signal, .. } => {
                write!(f, "stop {label} (pid {}) with SIG{signal}", process.pid)
            }
            Undo::StopFuse { mountpoint, process } => {
                write!(f, "fusermount3 -u {} (nbdfuse pid {})", mountpoint.display(), process.pid)
            }
            Undo::DeleteLink { name } => write!(f, "ip link delete {name}"),
            Undo::DeleteNetns { name } => write!(f, "ip netns delete {name}"),
            Undo::RemoveCgroup { path } => write!(f, "rmdir cgroup {}", path.display()),
            Undo::RemoveFile { path } => write!(f, "rm {}", path.display()),
            Undo::RemoveDirAll { path } => write!(f, "rm -r {}", path.display()),
            Undo::NvmeDisconnect { nqn, controller: None, .. } => write!(f, "nvme disconnect -n {nqn}"),
            Undo::NvmeDisconnect { nqn, controller: Some(c), .. } => {
                write!(f, "nvme disconnect -d {c} (the controller of {nqn} pgtier connected)")
            }
            Undo::RestoreFile { path, contents } => {
                write!(f, "restore {} to {:?}", path.display(), contents.trim())
            }
            Undo::Sweep { work_dir } => {
                write!(f, "sweep leftovers referring to {}", work_dir.display())
            }
            Undo::CloseSshMaster { host, control_path, .. } => {
                write!(f, "ssh -O exit (the connection to host {host}, {})", control_path.display())
            }
            Undo::RemoveRemoteDir { host, path, .. } => write!(f, "rm -rf {path} on host {host}"),
            Undo::RemoteCleanup { host, .. } => write!(f, "pgtier cleanup on host {host} (its own run records)"),
            Undo::Remote { host, op, .. } => write!(f, "{} on host {host}", op.describe()),
        }
    }
}

impl Undo {
    /// Performs the undo. Errors describe what is still in place.
    pub fn perform(&self) -> Result<Outcome, UndoError> {
        match self {
            Undo::Unmount { target } => unmount(target),
            Undo::DetachLoop { backing_file } => detach_loops(backing_file),
            Undo::RemoveZram { id, boot_id } => {
                if boot_id.as_ref().is_some_and(|b| Some(b) != current_boot_id().as_ref()) {
                    return Ok(Outcome::NothingLeft);
                }
                remove_zram(*id)
            }
            Undo::StopProcess { process, signal, grace_ms, label } => stop_process(label, process, signal, *grace_ms),
            Undo::StopFuse { mountpoint, process } => stop_fuse(mountpoint, process),
            Undo::DeleteLink { name } => {
                if !Path::new("/sys/class/net").join(name).exists() {
                    return Ok(Outcome::NothingLeft);
                }
                run(CommandLine::new("ip").args(["link", "delete", name.as_str()]))?;
                Ok(Outcome::Done)
            }
            Undo::DeleteNetns { name } => {
                if !Path::new("/run/netns").join(name).exists() {
                    return Ok(Outcome::NothingLeft);
                }
                run(CommandLine::new("ip").args(["netns", "delete", name.as_str()]))?;
                Ok(Outcome::Done)
            }
            Undo::RemoveCgroup { path } => remove_cgroup(path),
            Undo::RemoveFile { path } => match std::fs::remove_file(path) {
                Ok(()) => Ok(Outcome::Done),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Outcome::NothingLeft),
                Err(source) => Err(UndoError::Io { what: format!("rm {}", path.display()), source }),
            },
            Undo::RemoveDirAll { path } => remove_dir_all(path),
            Undo::CloseSshMaster { control_path, options, destination, .. } => {
                close_ssh_master(control_path, options, destination)
            }
            Undo::RemoveRemoteDir { options, destination, path, .. } => {
                let remote = crate::command::posix_command(&["rm".into(), "-rf".into(), "--".into(), path.clone()]);
                let cmd = CommandLine::new("ssh").args(options).arg(destination).arg("--").arg(remote);
                cmd.run_with_timeout(Some(std::time::Duration::from_secs(30)))?;
                Ok(Outcome::Done)
            }
            Undo::RemoteCleanup { options, destination, words, .. } => {
                let cmd = CommandLine::new("ssh")
                    .args(options)
                    .arg(destination)
                    .arg("--")
                    .arg(crate::command::posix_command(words));
                cmd.run_with_timeout(Some(std::time::Duration::from_secs(900)))?;
                Ok(Outcome::Done)
            }
            Undo::Remote { options, destination, op, .. } => op.perform(options, destination),
            Undo::NvmeDisconnect { nqn, boot_id, controller } => {
                nvme_disconnect(nqn, boot_id.as_ref(), controller.as_deref())
            }
            Undo::RestoreFile { path, contents } => {
                let now = std::fs::read_to_string(path).unwrap_or_default();
                if now.trim() == contents.trim() {
                    return Ok(Outcome::NothingLeft);
                }
                std::fs::write(path, contents)
                    .map_err(|source| UndoError::Io { what: format!("write {}", path.display()), source })?;
                Ok(Outcome::Done)
            }
            Undo::Sweep { work_dir } => sweep(work_dir),
        }
    }
}

/// The process stopped with `signal` (killed after `grace_ms`), and gone from /proc.
fn stop_process(label: &str, process: &ProcessId, signal: &str, grace_ms: u64) -> Result<Outcome, UndoError> {
    if !process.is_alive() {
        // Ended by itself (or exiting): gone, and reaped, before this returns.
        return wait_exited(label, process, Duration::from_millis(grace_ms)).map(|_| Outcome::NothingLeft);
    }
    let sig = parse_signal(signal)?;
    if process.terminate(sig, Duration::from_millis(grace_ms)) {
        eprintln!("  {label} (pid {}) ignored SIG{signal}; killed", process.pid);
    }
    if process.is_alive() {
        return Err(UndoError::StillThere(format!("{label} (pid {}) is still running", process.pid)));
    }
    wait_exited(label, process, EXIT_WAIT).map(|_| Outcome::Done)
}

/// `fusermount3 -u`, then the FUSE server (nbdfuse) stopped if it has not exited by itself.
fn stop_fuse(mountpoint: &Path, process: &ProcessId) -> Result<Outcome, UndoError> {
    let mut did = Outcome::NothingLeft;
    if mounts::is_mountpoint(mountpoint) {
        let _ = CommandLine::new("fusermount3").arg("-u").arg(mountpoint).run();
        did = Outcome::Done;
    }
    if !process.wait_gone(Duration::from_secs(5)) {
        process.terminate(Signal::SIGTERM, Duration::from_secs(5));
        did = Outcome::Done;
    }
    if mounts::is_mountpoint(mountpoint) {
        unmount(mountpoint)?;
    }
    if process.is_alive() {
        return Err(UndoError::StillThere(format!("nbdfuse (pid {}) is still running", process.pid)));
    }
    wait_exited("nbdfuse", process, EXIT_WAIT).map(|_| did)
}

/// `rm -r`, refused while anything is mounted in the tree.
fn remove_dir_all(path: &Path) -> Result<Outcome, UndoError> {
    if !path.exists() {
        return Ok(Outcome::NothingLeft);
    }
    if mounts::mounts_under(path).iter().any(|m| m != path) || mounts::is_mountpoint(path) {
        return Err(UndoError::StillThere(format!(
            "{} still has something mounted in it; not removing",
            path.display()
        )));
    }
    std::fs::remove_dir_all(path)
        .map_err(|source| UndoError::Io { what: format!("rm -r {}", path.display()), source })?;
    Ok(Outcome::Done)
}

/// `nvme disconnect` of the controller pgtier created, or of the subsystem by NQN; nothing after
/// a restart.
fn nvme_disconnect(nqn: &str, boot_id: Option<&String>, controller: Option<&str>) -> Result<Outcome, UndoError> {
    if boot_id.is_some_and(|b| Some(b) != current_boot_id().as_ref()) {
        return Ok(Outcome::NothingLeft);
    }
    if let Some(c) = controller {
        return disconnect_controller(c, nqn);
    }
    let out = CommandLine::new("nvme").args(["disconnect", "-n", nqn]).output(Some(Duration::from_secs(60)))?;
    // No subsystem at all ("Failed to scan topology") or none of ours: nothing to undo.
    if out.stdout.contains("disconnected 0 controller") || out.stderr.contains("Failed to scan topology") {
        Ok(Outcome::NothingLeft)
    } else if out.status == 0 {
        Ok(Outcome::Done)
    } else {
        Err(UndoError::NvmeDisconnect { nqn: nqn.to_string(), stderr: out.stderr.trim().to_string() })
    }
}

/// How long a stopped helper may take to finish exiting (its last threads, its reaping).
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Waits until `process` is gone from /proc (reaped when it is our child), so that nothing
/// reports a helper stopped while it is still exiting; an error when it is still there.
fn wait_exited(label: &str, process: &ProcessId, limit: Duration) -> Result<(), UndoError> {
    if process.wait_gone(limit) {
        Ok(())
    } else {
        Err(UndoError::StillThere(format!("{label} (pid {}) has not finished exiting", process.pid)))
    }
}

/// `nvme disconnect -d CTRL`, once sysfs confirms that CTRL is still a controller of `nqn`.
fn disconnect_controller(ctrl: &str, nqn: &str) -> Result<Outcome, UndoError> {
    let dir = Path::new("/sys/class/nvme").join(ctrl);
    let ours = |d: &Path| std::fs::read_to_string(d.join("subsysnqn")).is_ok_and(|s| s.trim() == nqn.trim());
    if !ours(&dir) {
        return Ok(Outcome::NothingLeft);
    }
    let out = CommandLine::new("nvme").args(["disconnect", "-d", ctrl]).output(Some(Duration::from_secs(60)))?;
    // Deleting a controller is asynchronous.
    let start = Instant::now();
    while ours(&dir) {
        if start.elapsed() > Duration::from_secs(30) {
            return Err(UndoError::StillThere(format!(
                "nvme disconnect -d {ctrl}: controller still present ({})",
                if out.stderr.trim().is_empty() { out.stdout.trim() } else { out.stderr.trim() }
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(Outcome::Done)
}

fn parse_signal(name: &str) -> Result<Signal, UndoError> {
    let full = if name.starts_with("SIG") { name.to_string() } else { format!("SIG{name}") };
    full.parse::<Signal>().map_err(|_| UndoError::UnknownSignal(name.to_string()))
}

fn run(cmd: CommandLine) -> Result<(), UndoError> {
    cmd.run_with_timeout(Some(Duration::from_secs(60)))?;
    Ok(())
}

fn unmount(target: &Path) -> Result<Outcome, UndoError> {
    if !mounts::is_mountpoint(target) {
        return Ok(Outcome::NothingLeft);
    }
    let start = Instant::now();
    loop {
        let out = CommandLine::new("umount").arg(target).output(Some(Duration::from_secs(120)));
        if !mounts::is_mountpoint(target) {
            return Ok(Outcome::Done);
        }
        if start.elapsed() > Duration::from_secs(30) {
            let target = target.to_path_buf();
            return Err(match out {
                Ok(o) => UndoError::Unmount { target, stderr: o.stderr.trim().to_string(), source: None },
                Err(e) => UndoError::Unmount { target, stderr: String::new(), source: Some(Box::new(e)) },
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Loop devices (as `/dev/loopN`) whose backing file is `file`.
pub fn loops_backed_by(file: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return found;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Ok(backing) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            let backing = backing.trim().trim_end_matches(" (deleted)");
            if Path::new(backing) == file {
                found.push(PathBuf::from(format!("/dev/{name}")));
            }
        }
    }
    found
}

fn detach_loops(file: &Path) -> Result<Outcome, UndoError> {
    let devices = loops_backed_by(file);
    if devices.is_empty() {
        return Ok(Outcome::NothingLeft);
    }
    for dev in &devices {
        let _ = CommandLine::new("losetup").arg("-d").arg(dev).output(Some(Duration::from_secs(60)));
    }
    // Detaching is asynchronous: wait until the kernel has let go.
    let start = Instant::now();
    while !loops_backed_by(file).is_empty() {
        if start.elapsed() > Duration::from_secs(30) {
            return Err(UndoError::StillThere(format!(
                "loop device(s) {} still attached to {}",
                devices.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
                file.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(Outcome::Done)
}

fn remove_zram(id: u32) -> Result<Outcome, UndoError> {
    let dev = PathBuf::from(format!("/sys/block/zram{id}"));
    if !dev.exists() {
        return Ok(Outcome::NothingLeft);
    }
    let start = Instant::now();
    loop {
        let reset = std::fs::write(dev.join("reset"), "1");
        let removed = std::fs::write("/sys/class/zram-control/hot_remove", id.to_string());
        if !dev.exists() {
            return Ok(Outcome::Done);
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Err(UndoError::StillThere(format!(
                "/dev/zram{id} could not be removed (reset: {:?}, hot_remove: {:?})",
                reset.err(),
                removed.err()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn remove_cgroup(path: &Path) -> Result<Outcome, UndoError> {
    if !path.exists() {
        return Ok(Outcome::NothingLeft);
    }
    // A parent shared with another run (which made cgroups of its own below it) stays.
    let has_children = std::fs::read_dir(path)
        .map(|rd| rd.flatten().any(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false)))
        .unwrap_or(false);
    if has_children {
        return Ok(Outcome::NothingLeft);
    }
    let start = Instant::now();
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(Outcome::Done),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Outcome::NothingLeft),
            Err(source) => {
                if start.elapsed() > Duration::from_secs(10) {
                    let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
                    return Err(UndoError::Cgroup {
                        path: path.to_path_buf(),
                        source,
                        procs: procs.split_whitespace().collect::<Vec<_>>().join(" "),
                    });
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn sweep(work_dir: &Path) -> Result<Outcome, UndoError> {
    let mut did = Outcome::NothingLeft;
    let needle = work_dir.to_string_lossy().into_owned();
    let mut errors = Vec::new();
    // Deepest mounts first.
    let mut targets = mounts::mounts_under(work_dir);
    targets.sort_by_key(|t| std::cmp::Reverse(t.as_os_str().len()));
    for (i, t) in targets.iter().enumerate() {
        // A FUSE mount must wait until the loop devices on its file are detached.
        for dev in loops_under(work_dir) {
            let _ = CommandLine::new("losetup").arg("-d").arg(&dev).output(Some(Duration::from_secs(30)));
        }
        if i == 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        match unmount(t) {
            Ok(Outcome::Done) => did = Outcome::Done,
            Ok(Outcome::NothingLeft) => {}
            Err(e) => errors.push(e),
        }
    }
    for dev in loops_under(work_dir) {
        let _ = CommandLine::new("losetup").arg("-d").arg(&dev).output(Some(Duration::from_secs(30)));
        did = Outcome::Done;
    }
    // Only programs pgtier starts; a shell or pager that happens to name the work directory
    // is someone else's.
    const OURS: [&str; 7] = ["nbdkit", "nbdfuse", "postgres", "pgbench", "fio", "initdb", "pg_ctl"];
    for pid in crate::process::pids_with_cmdline_containing(&needle) {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !OURS.contains(&comm.trim()) {
            continue;
        }
        if let Some(p) = ProcessId::of(pid) {
            p.terminate(Signal::SIGTERM, Duration::from_secs(5));
            did = Outcome::Done;
        }
    }
    if errors.is_empty() { Ok(did) } else { Err(UndoError::Several(errors)) }
}

/// Loop devices whose backing file lies under `dir`.
pub fn loops_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return found;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(backing) = std::fs::read_to_string(e.path().join("loop/backing_file"))
            && Path::new(backing.trim()).starts_with(dir)
        {
            found.push(PathBuf::from(format!("/dev/{name}")));
        }
    }
    found
}

/// This boot's identity (changes at every restart).
pub fn current_boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string())
}

/// `ssh -O exit` through the control socket; a socket whose master is gone is removed.
fn close_ssh_master(control_path: &Path, options: &[String], destination: &str) -> Result<Outcome, UndoError> {
    if !control_path.exists() {
        return Ok(Outcome::NothingLeft);
    }
    let cmd = CommandLine::new("ssh").args(options).args(["-O", "exit"]).arg(destination);
    let out = cmd.output(Some(std::time::Duration::from_secs(15)))?;
    // The master removes its socket as it exits; wait for that a moment.
    for _ in 0..50 {
        if !control_path.exists() {
            return Ok(Outcome::Done);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if out.status != 0 {
        // No master answers: the socket is stale.
        std::fs::remove_file(control_path)
            .map_err(|source| UndoError::Io { what: format!("rm {}", control_path.display()), source })?;
        return Ok(Outcome::Done);
    }
    Err(UndoError::StillThere(format!("the ssh master's socket {} is still there", control_path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_proc(pid: i32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn a_failed_undo_keeps_its_cause() {
        use std::error::Error as _;
        let d = tempfile::tempdir().unwrap();
        // unlink(2) of a directory fails (EISDIR), unlike a missing file (nothing left).
        let e = Undo::RemoveFile { path: d.path().to_path_buf() }.perform().unwrap_err();
        assert!(e.to_string().starts_with(&format!("rm {}: ", d.path().display())), "{e}");
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("an io::Error source");
        assert_eq!(e.to_string(), format!("rm {}: {source}", d.path().display()));
        let e = Undo::StopProcess {
            label: "x".into(),
            process: ProcessId::of(std::process::id() as i32).unwrap(),
            signal: "NOSUCH".into(),
            grace_ms: 0,
        }
        .perform()
        .unwrap_err();
        assert_eq!(e.to_string(), "unknown signal NOSUCH");
    }

    #[test]
    fn a_stopped_process_is_gone_when_the_undo_returns() {
        let _forking = crate::forking();
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let process = ProcessId::of(child.id() as i32).unwrap();
        let undo = Undo::StopProcess { label: "sleep".into(), process, signal: "TERM".into(), grace_ms: 5000 };
        assert_eq!(undo.perform().ok(), Some(Outcome::Done));
        assert!(!in_proc(process.pid), "reaped, not a zombie or still exiting");
        assert_eq!(undo.perform().ok(), Some(Outcome::NothingLeft), "idempotent");
        assert!(child.wait().is_err(), "nothing left to wait for");
    }

    #[test]
    fn a_process_that_ended_by_itself_is_reaped_by_the_undo() {
        let _forking = crate::forking();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let process = ProcessId::of(child.id() as i32).unwrap();
        // Exited and not reaped: a zombie, which `is_alive` already calls dead.
        while process.is_alive() {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(in_proc(process.pid));
        let undo = Undo::StopProcess { label: "true".into(), process, signal: "TERM".into(), grace_ms: 5000 };
        assert_eq!(undo.perform().ok(), Some(Outcome::NothingLeft));
        assert!(!in_proc(process.pid), "the zombie is reaped before the undo returns");
        assert!(child.wait().is_err(), "nothing left to wait for");
    }
}
