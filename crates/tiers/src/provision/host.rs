//! Steps on a storage target host: commands over its ssh connection (their undos recorded
//! first, as [`Undo::Remote`]), and the refusal checks of the device it exports, made there by
//! the same rules as a local device's through [`HostSystem`].

use std::io;

use journal::remote::RemoteOp;

use super::*;
use crate::plan::HostStep;
use crate::spec::RemoteShell;
use crate::system::FileKind;

/// How each storage target host of `specs` is reached, by name.
pub(super) fn shells(specs: &[DeviceSpec]) -> HashMap<String, RemoteShell> {
    specs
        .iter()
        .filter_map(|d| d.target_host.as_ref())
        .filter_map(|t| t.shell.clone().map(|s| (t.name.clone(), s)))
        .collect()
}

/// The command line that runs `words` on the host `shell` reaches.
fn ssh(shell: &RemoteShell, words: &[String]) -> CommandLine {
    journal::command::ssh_command(&shell.options, &shell.destination, words)
}

impl Executor<'_> {
    fn shell(&self, host: &str) -> Result<RemoteShell, String> {
        self.shells.get(host).cloned().ok_or_else(|| {
            format!("host {host} has no ssh connection for this run (the controller opens it before provisioning)")
        })
    }

    /// Runs `words` on `host`, `undo` recorded before. A `mkdir` or `ln -s` that failed there
    /// made nothing (both are atomic), so its undo is released: the item that was in the way
    /// (EEXIST) belongs to another owner and teardown must not remove it. Only when ssh itself
    /// failed (status 255, or no status) is the undo kept, as the command may have run.
    /// An export's records are kept for the device (`exports`): the NVMe/TCP connection and
    /// the mount on top of them hold them, so that teardown never unexports a namespace under
    /// a filesystem that could not be unmounted.
    pub(super) fn on_host(
        &mut self,
        n: usize,
        device: Option<&str>,
        (host, kind): (&str, HostStep),
        words: &[String],
        undo: Option<&RemoteOp>,
    ) -> Result<(), StepError> {
        let shell = self.shell(host)?;
        let (words, undo) = self.with_host_nqn(words, undo)?;
        let (words, undo) = (&words[..], undo.as_ref());
        let mut recorded = None;
        if let Some(op) = undo {
            let undo = Undo::Remote {
                host: host.to_string(),
                options: shell.options.clone(),
                destination: shell.destination.clone(),
                op: op.clone(),
            };
            let id = self.journal.record(undo, format!("on host {host}")).map_err(|e| e.to_string())?;
            if kind == HostStep::Export
                && let Some(d) = device
            {
                self.exports.entry(d.to_string()).or_default().push(id);
            }
            recorded = Some((id, op));
        }
        // A directory an earlier device's step made that this one's uses (the shared port,
        // the hosts/ entry) is held by this device's connection too.
        if kind == HostStep::Export
            && let Some(d) = device
        {
            let used: Vec<RecordId> = self
                .made_dirs
                .iter()
                .filter(|(h, p, _)| h == host && words.iter().any(|w| w == p || w.starts_with(&format!("{p}/"))))
                .map(|(_, _, id)| *id)
                .collect();
            let ids = self.exports.entry(d.to_string()).or_default();
            for id in used {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        let cmd = ssh(&shell, words);
        let result = self.run_inner(n, &cmd, &[], Duration::from_secs(120));
        if result.is_ok()
            && let Some((id, RemoteOp::Rmdir { path, .. })) = recorded
        {
            self.made_dirs.push((host.to_string(), path.clone(), id));
        }
        if let Err(e) = result {
            let status = self.commands.last().filter(|c| c.command == cmd.to_string()).map(|c| c.status);
            // Made, but its mark could not be written: the item is this run's, so its undo stays,
            // made to remove it without a mark (the new record first, so that one always exists).
            if let Some((id, op)) = recorded
                && status == Some(crate::plan::host_words::MADE_NOT_MARKED)
                && let Some(unmarked) = unmarked(op)
            {
                let undo = Undo::Remote {
                    host: host.to_string(),
                    options: shell.options.clone(),
                    destination: shell.destination.clone(),
                    op: unmarked,
                };
                let new = self
                    .journal
                    .record(undo, format!("on host {host} (made, not marked)"))
                    .map_err(|e| e.to_string())?;
                self.journal.release(id).map_err(|e| e.to_string())?;
                if let Some(ids) = device.and_then(|d| self.exports.get_mut(d)) {
                    for i in ids.iter_mut().filter(|i| **i == id) {
                        *i = new;
                    }
                }
                return Err(format!(
                    "{e} (the item was made, but its mark could not be written there: teardown removes it without looking for a mark)"
                )
                .into());
            }
            if let Some((id, op)) = recorded
                && matches!(op, RemoteOp::Rmdir { .. } | RemoteOp::Unlink { .. })
                && status.is_some_and(|s| s != 255)
            {
                self.journal.release(id).map_err(|e| e.to_string())?;
                if let Some(ids) = device.and_then(|d| self.exports.get_mut(d)) {
                    ids.retain(|i| *i != id);
                }
                return Err(format!(
                    "{e} (nothing was made there, and teardown leaves what is in the way alone: pgtier never takes over another's configuration)"
                )
                .into());
            }
            return Err(e.into());
        }
        Ok(())
    }

    /// `words` and `undo` with [`crate::build::target::THIS_HOST_NQN`] replaced by this
    /// machine's host NQN from /etc/nvme/hostnqn (the one `nvme connect` then uses).
    fn with_host_nqn(
        &mut self,
        words: &[String],
        undo: Option<&RemoteOp>,
    ) -> Result<(Vec<String>, Option<RemoteOp>), String> {
        use crate::build::target::THIS_HOST_NQN;
        let in_undo = |u: &RemoteOp| matches!(u, RemoteOp::Rmdir { path, mark } | RemoteOp::Unlink { path, mark } if path.contains(THIS_HOST_NQN) || mark.as_deref().is_some_and(|m| m.contains(THIS_HOST_NQN)));
        if !words.iter().any(|w| w.contains(THIS_HOST_NQN)) && !undo.is_some_and(in_undo) {
            return Ok((words.to_vec(), undo.cloned()));
        }
        let nqn = self
            .sys
            .read_to_string(Path::new("/etc/nvme/hostnqn"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .ok_or_else(|| {
                "the target host admits this machine's host NQN alone, and this machine has no /etc/nvme/hostnqn: give host_nqn and host_id in the experiment file (or allow_any_host = true)".to_string()
            })?;
        let w = words.iter().map(|w| w.replace(THIS_HOST_NQN, &nqn)).collect();
        let u = undo.map(|u| match u {
            RemoteOp::Rmdir { path, mark } => RemoteOp::Rmdir {
                path: path.replace(THIS_HOST_NQN, &nqn),
                mark: mark.as_ref().map(|m| m.replace(THIS_HOST_NQN, &nqn)),
            },
            RemoteOp::Unlink { path, mark } => RemoteOp::Unlink {
                path: path.replace(THIS_HOST_NQN, &nqn),
                mark: mark.as_ref().map(|m| m.replace(THIS_HOST_NQN, &nqn)),
            },
            other => other.clone(),
        });
        Ok((w, u))
    }

    /// The journal records of the target's export of `devices` (see [`Executor::on_host`]).
    pub(super) fn exports_of(&self, devices: &[String]) -> Vec<RecordId> {
        let mut ids: Vec<RecordId> = devices.iter().filter_map(|d| self.exports.get(d)).flatten().copied().collect();
        ids.sort_by_key(|i| i.0);
        ids.dedup();
        ids
    }

    /// The exported device's model and serial on `host`, read there as for a local device.
    pub(super) fn host_device_identity(
        &mut self,
        n: usize,
        host: &str,
        device: &Path,
        (model, serial): (Option<&str>, Option<&str>),
    ) -> Result<(), StepError> {
        let shell = self.shell(host)?;
        let refused = self.probe(n, |s| {
            let mut h = HostSystem { inner: s, shell: &shell };
            let dev = h.canonicalize(device).unwrap_or_else(|_| device.to_path_buf());
            safety::check_identity(&mut h, &dev, model, serial)
        });
        refused.map_err(StepError::Refused)
    }

    /// The exports of one host name distinct disks there ([`Action::HostDevicesDistinct`]).
    pub(super) fn host_devices_distinct(
        &mut self,
        n: usize,
        host: &str,
        devices: &[(String, PathBuf)],
    ) -> Result<(), StepError> {
        let shell = self.shell(host)?;
        let refused = self.probe(n, |s| {
            let mut h = HostSystem { inner: s, shell: &shell };
            let resolved: Vec<(&str, PathBuf)> = devices
                .iter()
                .map(|(name, p)| (name.as_str(), h.canonicalize(p).unwrap_or_else(|_| p.clone())))
                .collect();
            let pairs: Vec<(&str, &Path)> = resolved.iter().map(|(n, p)| (*n, p.as_path())).collect();
            safety::check_distinct(&mut h, &pairs)
        });
        refused.map_err(StepError::Refused)
    }

    /// The exported device's checks on `host`: its stable name resolved there, a block device,
    /// not in use, no signature unless `allow_wipe`.
    pub(super) fn host_device_check(
        &mut self,
        n: usize,
        host: &str,
        device: &Path,
        allow_wipe: bool,
    ) -> Result<(), StepError> {
        let shell = self.shell(host)?;
        let refused = self.probe(n, |s| {
            let mut h = HostSystem { inner: s, shell: &shell };
            let dev = h.canonicalize(device).unwrap_or_else(|_| device.to_path_buf());
            safety::check_block_device(&mut h, &dev).and_then(|()| safety::check_not_in_use(&mut h, &dev, allow_wipe))
        });
        // The step names the host: `[on host <name>] check ...`.
        refused.map_err(StepError::Refused)
    }
}

/// The undo of a marked item without its mark (for an item made whose mark could not be written).
fn unmarked(op: &RemoteOp) -> Option<RemoteOp> {
    match op {
        RemoteOp::Rmdir { path, mark: Some(_) } => Some(RemoteOp::Rmdir { path: path.clone(), mark: None }),
        RemoteOp::Unlink { path, mark: Some(_) } => Some(RemoteOp::Unlink { path: path.clone(), mark: None }),
        _ => None,
    }
}

/// Opens `$1` read-only with O_EXCL (perl's sysopen: a shell cannot ask for O_EXCL) and exits
/// 0 when it could, 3 when the kernel said EBUSY (mounted, claimed by a driver, swap,
/// device-mapper, a ZFS pool), 2 on another error, 4 without perl (perl-base is essential on
/// Debian and Ubuntu).
const EXCL_OPEN: &str = r#"command -v perl >/dev/null 2>&1 || { echo "perl is not installed (it makes the O_EXCL open)" >&2; exit 4; }
exec perl -MFcntl -e 'sysopen(my $f, $ARGV[0], O_RDONLY | O_EXCL) and exit 0; print STDERR "$!
"; exit($!{EBUSY} ? 3 : 2)' -- "$1""#;

/// Another host seen through its ssh connection, for read-only checks: commands run there,
/// files are read with `cat`, links resolved with `readlink -e`, kinds found with `stat`, the
/// O_EXCL open ([`System::busy`]) made by perl there. What would change the host is refused.
pub struct HostSystem<'a> {
    /// What runs the ssh commands here (the machine, or a recorder or fake around it).
    pub inner: &'a mut dyn System,
    /// How the host is reached.
    pub shell: &'a RemoteShell,
}

fn refused(what: &str) -> io::Error {
    io::Error::other(format!("{what} is not done on another host through a check"))
}

impl HostSystem<'_> {
    fn words(&mut self, words: &[&str]) -> io::Result<String> {
        let w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        let out = self.inner.run(&ssh(self.shell, &w), Duration::from_secs(60)).map_err(io::Error::other)?;
        if out.status != 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, out.stderr.trim().to_string()));
        }
        Ok(out.stdout)
    }
}

impl System for HostSystem<'_> {
    fn run(&mut self, cmd: &CommandLine, timeout: Duration) -> Result<journal::Output, journal::CommandError> {
        let mut w = vec![cmd.program.clone()];
        w.extend(cmd.args.iter().cloned());
        self.inner.run(&ssh(self.shell, &w), timeout)
    }
    fn run_secret(
        &mut self,
        cmd: &CommandLine,
        _: &[(usize, String)],
        _: Duration,
    ) -> Result<journal::Output, journal::CommandError> {
        Err(journal::CommandError::Spawn { command: cmd.to_string(), source: refused("a command with a secret") })
    }
    fn busy(&mut self, dev: &Path) -> io::Result<bool> {
        let w: Vec<String> = ["sh", "-c", EXCL_OPEN, "sh", &dev.display().to_string()].map(String::from).to_vec();
        let out = self.inner.run(&ssh(self.shell, &w), Duration::from_secs(60)).map_err(io::Error::other)?;
        match out.status {
            0 => Ok(false),
            3 => Ok(true),
            s => Err(io::Error::other(format!("exit status {s}: {}", out.stderr.trim()))),
        }
    }
    fn flock_free(&mut self, dev: &Path) -> io::Result<bool> {
        // util-linux's flock(1): 3 when the lock is still held after the wait.
        let w: Vec<String> = ["flock", "--exclusive", "--wait", "3", "--conflict-exit-code", "3"]
            .into_iter()
            .map(String::from)
            .chain([dev.display().to_string(), "true".to_string()])
            .collect();
        let out = self.inner.run(&ssh(self.shell, &w), Duration::from_secs(60)).map_err(io::Error::other)?;
        match out.status {
            0 => Ok(true),
            3 => Ok(false),
            s => Err(io::Error::other(format!("flock exit status {s}: {}", out.stderr.trim()))),
        }
    }
    fn read_to_string(&mut self, path: &Path) -> io::Result<String> {
        self.words(&["cat", "--", &path.display().to_string()])
    }
    fn write(&mut self, _: &Path, _: &str) -> io::Result<()> {
        Err(refused("writing a file"))
    }
    fn write_private(&mut self, _: &Path, _: &str) -> io::Result<()> {
        Err(refused("writing a file"))
    }
    fn lock_disk(&mut self, _: &Path) -> io::Result<DiskLock> {
        Err(refused("locking a disk"))
    }
    fn create_dir_all(&mut self, _: &Path, _: u32) -> io::Result<()> {
        Err(refused("making a directory"))
    }
    fn create_sparse_file(&mut self, _: &Path, _: u64) -> io::Result<()> {
        Err(refused("making a file"))
    }
    fn chown(&mut self, _: &Path, _: u32, _: u32, _: u32) -> io::Result<()> {
        Err(refused("chown"))
    }
    fn file_kind(&mut self, path: &Path) -> FileKind {
        match self.words(&["stat", "-L", "-c", "%F %t %T", "--", &path.display().to_string()]) {
            Err(_) => FileKind::Missing,
            Ok(out) => file_kind_of_stat(&out),
        }
    }
    fn canonicalize(&mut self, path: &Path) -> io::Result<PathBuf> {
        let out = self.words(&["readlink", "-e", "--", &path.display().to_string()])?;
        match out.trim() {
            "" => {
                Err(io::Error::new(io::ErrorKind::NotFound, format!("readlink -e {} printed nothing", path.display())))
            }
            p => Ok(PathBuf::from(p)),
        }
    }
    fn list_dir(&mut self, path: &Path) -> io::Result<Vec<String>> {
        let out = self.words(&["ls", "-A", "-1", "--", &path.display().to_string()])?;
        let mut names: Vec<String> = out.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
        names.sort();
        Ok(names)
    }
    fn spawn(&mut self, _: &DaemonSpec) -> io::Result<journal::ProcessId> {
        Err(refused("starting a process"))
    }
    fn tcp_reachable(&mut self, _: &str, _: u16) -> bool {
        false
    }
    fn is_alive(&mut self, _: journal::ProcessId) -> bool {
        false
    }
    fn statx_dax(&mut self, _: &Path) -> io::Result<bool> {
        Err(refused("statx"))
    }
    fn remove_file(&mut self, _: &Path) -> io::Result<()> {
        Err(refused("removing a file"))
    }
    fn has_program(&mut self, program: &str) -> bool {
        self.words(&["sh", "-c", r#"command -v "$1""#, "sh", program]).is_ok()
    }
    fn sleep(&mut self, d: Duration) {
        self.inner.sleep(d)
    }
}

/// `stat -L -c '%F %t %T'` (type, major and minor in hex) as a [`FileKind`].
fn file_kind_of_stat(out: &str) -> FileKind {
    let t = out.trim();
    if let Some(rest) = t.strip_prefix("block special file ") {
        let mut it = rest.split_whitespace().map(|h| u32::from_str_radix(h, 16));
        if let (Some(Ok(major)), Some(Ok(minor))) = (it.next(), it.next()) {
            return FileKind::BlockDevice { major, minor };
        }
        return FileKind::Other;
    }
    if t.starts_with("regular") {
        FileKind::File
    } else if t.starts_with("directory") {
        FileKind::Directory
    } else {
        FileKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_output_is_a_file_kind() {
        assert_eq!(file_kind_of_stat("block special file 103 1\n"), FileKind::BlockDevice { major: 0x103, minor: 1 });
        assert_eq!(file_kind_of_stat("regular empty file 0 0"), FileKind::File);
        assert_eq!(file_kind_of_stat("directory 0 0"), FileKind::Directory);
        assert_eq!(file_kind_of_stat("character special file 1 3"), FileKind::Other);
    }
}
