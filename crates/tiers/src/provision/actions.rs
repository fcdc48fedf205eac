//! The executor's actions that change something: directories, loop and zram devices, helper
//! processes, PMem namespaces, mounts; each records its undo first.

use super::*;

/// A helper process of a device (the NBD target, nbdfuse): what it is to faults and the
/// survival check (`role`: `nbdkit`, `nbdfuse`), to the journal (`label`), how it runs.
pub(super) struct Helper<'a> {
    pub role: &'a str,
    pub label: &'a str,
    pub command: &'a Template,
    pub netns: Option<String>,
    pub log: &'a Path,
}

impl Executor<'_> {
    /// `mount -t FSTYPE [-o OPTIONS] SOURCE TARGET`, recorded as holding the NVMe/TCP connection
    /// under it, if any.
    pub(super) fn mount(
        &mut self,
        n: usize,
        step: &Step,
        source: &Value,
        target: &Path,
        (fstype, options): (&str, &[String]),
    ) -> Result<(), StepError> {
        let source = self.value(source)?;
        // A filesystem on an NVMe/TCP namespace holds the connection under it.
        let holds = step.device.as_ref().and_then(|d| self.connections.get(d)).cloned().unwrap_or_default();
        self.journal
            .record_holding(Undo::Unmount { target: target.to_path_buf() }, "mount", &holds)
            .map_err(|e| e.to_string())?;
        let mut cmd = CommandLine::new("mount").args(["-t", fstype]);
        if !options.is_empty() {
            cmd = cmd.args(["-o", &options.join(",")]);
        }
        self.run_plain(n, cmd.arg(&source).arg(target))?;
        Ok(())
    }

    /// Checks the mount (options, DAX) and keeps what it found; a DAX that was required and is
    /// not in effect on real hardware stops the run.
    pub(super) fn verify_and_keep_mount(
        &mut self,
        target: &Path,
        requested: &[String],
        dax: DaxPolicy,
        emulated: bool,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), StepError> {
        let check = self.verify_mount(target, requested, dax, emulated)?;
        if !check.dax.note.is_empty() {
            on_event(Event::Note(format!("{}: {}", target.display(), check.dax.note)));
        }
        // DAX has its own note above; any other option the kernel does not show was ignored
        // or is spelled differently in /proc/mounts: worth knowing before trusting a figure.
        let unseen: Vec<&str> = check.not_shown.iter().map(String::as_str).filter(|o| !o.starts_with("dax")).collect();
        if !unseen.is_empty() {
            on_event(Event::Note(format!(
                "{}: mount option(s) {} asked for but not shown in /proc/mounts (ignored, or spelled differently by the kernel)",
                target.display(),
                unseen.join(", ")
            )));
        }
        if dax == DaxPolicy::Required && !check.dax.honoured && !emulated {
            return Err(format!(
                "DAX was required but is not in effect on {}: {} (set dax = \"optional\" to carry on without it)",
                target.display(),
                check.dax.note
            )
            .into());
        }
        self.mounts.insert(target.to_path_buf(), check);
        Ok(())
    }

    /// A directory; one removed at teardown must not exist yet (a run only uses a directory it
    /// created itself), and gets the crash safety net of a sweep.
    pub(super) fn make_dir(&mut self, path: &Path, mode: u32, remove_on_teardown: bool) -> Result<(), StepError> {
        if remove_on_teardown {
            if self.sys.file_kind(path) != FileKind::Missing {
                return Err(format!(
                    "{} already exists; a run only uses a directory it created itself",
                    path.display()
                )
                .into());
            }
            self.record(Undo::RemoveDirAll { path: path.to_path_buf() }, "work directory")?;
            self.sys.create_dir_all(path, mode).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
            self.record(Undo::Sweep { work_dir: path.to_path_buf() }, "safety net after a crash")?;
        } else {
            self.sys.create_dir_all(path, mode).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// `losetup --find --show` on `file`, bound to `bind`, its stale page cache dropped.
    pub(super) fn attach_loop(
        &mut self,
        n: usize,
        file: &Path,
        direct_io: bool,
        bind: &str,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), StepError> {
        self.record(Undo::DetachLoop { backing_file: file.to_path_buf() }, bind)?;
        let mut cmd = CommandLine::new("losetup").args(["--find", "--show"]);
        if direct_io {
            cmd = cmd.arg("--direct-io=on");
        }
        let out = self.run_plain(n, cmd.arg(file))?;
        let dev = out.stdout.trim().to_string();
        if !dev.starts_with("/dev/loop") {
            return Err(format!("losetup printed {dev:?}, not a loop device").into());
        }
        // A loop device keeps the page cache of its previous binding when that one ended in I/O
        // errors (seen: a fresh sparse file "appears to contain an existing filesystem (xfs)"
        // right after a test killed the NBD target under the same loop device); drop it, so what
        // mkfs's checks read is the new file's.
        self.run_plain(n, CommandLine::new("blockdev").args(["--flushbufs", dev.as_str()]))?;
        if direct_io {
            let name = dev.trim_start_matches("/dev/");
            let dio = self.sys.read_to_string(&Path::new("/sys/block").join(name).join("loop/dio")).unwrap_or_default();
            if dio.trim() == "0" {
                on_event(Event::Note(format!("{dev}: the kernel did not enable direct I/O on this loop device")));
            }
        }
        self.bindings.insert(bind.to_string(), dev);
        Ok(())
    }

    /// A zram device of `size` bytes (hot_add), bound to `bind`.
    pub(super) fn create_zram(
        &mut self,
        size: u64,
        algorithm: &str,
        bind: &str,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), StepError> {
        let id_text = self
            .sys
            .read_to_string(Path::new("/sys/class/zram-control/hot_add"))
            .map_err(|e| format!("read /sys/class/zram-control/hot_add (is the zram module loaded?): {e}"))?;
        let id: u32 = id_text.trim().parse().map_err(|_| format!("hot_add printed {id_text:?}"))?;
        self.record(Undo::RemoveZram { id, boot_id: journal::undo::current_boot_id() }, bind)?;
        let sys_dir = PathBuf::from(format!("/sys/block/zram{id}"));
        if let Err(e) = self.sys.write(&sys_dir.join("comp_algorithm"), algorithm) {
            on_event(Event::Note(format!("zram{id}: compressor {algorithm} not available ({e}); kernel default kept")));
        }
        self.sys
            .write(&sys_dir.join("disksize"), &size.to_string())
            .map_err(|e| format!("set /sys/block/zram{id}/disksize: {e}"))?;
        let dev = format!("/dev/zram{id}");
        wait_for(self.sys, Duration::from_secs(10), |s| {
            matches!(s.file_kind(Path::new(&dev)), FileKind::BlockDevice { .. })
        })
        .map_err(|_| format!("{dev} did not appear"))?;
        self.bindings.insert(bind.to_string(), dev);
        Ok(())
    }

    /// Starts a helper process of the step's device (no secret may be on its command line),
    /// records `undo(process)` and the command as run; the device's helpers list it by its role,
    /// the journal by its label.
    pub(super) fn spawn_helper(
        &mut self,
        n: usize,
        step: &Step,
        helper: Helper<'_>,
        undo: impl FnOnce(journal::ProcessId) -> Undo,
    ) -> Result<journal::ProcessId, StepError> {
        let Helper { role, label, command, netns, log } = helper;
        let Ready { cmd, secrets } = self.command(command)?;
        if !secrets.is_empty() {
            return Err("a helper process cannot be given a secret on its command line".to_string().into());
        }
        let shown = cmd.to_string();
        let spec = DaemonSpec { label: label.to_string(), command: cmd, netns, log: log.to_path_buf() };
        let process = self.sys.spawn(&spec).map_err(|e| format!("start {shown}: {e}"))?;
        self.record(undo(process), label)?;
        if let Some(d) = &step.device {
            self.helpers.entry(d.clone()).or_default().push((role.to_string(), process));
        }
        self.commands.push(ExecutedCommand {
            step: n,
            command: format!("{shown} &"),
            status: 0,
            stdout: String::new(),
            stderr: String::new(),
            seconds: 0.0,
        });
        Ok(process)
    }

    /// `ndctl create-namespace -f -e NS -m fsdax`, unless the namespace is in fsdax mode already.
    pub(super) fn pmem_reconfigure(
        &mut self,
        n: usize,
        namespace: &str,
        dax: DaxPolicy,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), StepError> {
        let list = self.ndctl_list(n)?;
        let current = ndctl::find(&list, namespace)
            .ok_or_else(|| format!("ndctl list -N -i shows no namespace {namespace:?}"))?;
        if current.mode == ndctl::PmemMode::Fsdax && current.enabled && current.blockdev.is_some() {
            on_event(Event::Note(format!(
                "{namespace} is in fsdax mode already ({}); not reconfigured",
                current.blockdev.as_deref().unwrap_or_default()
            )));
            return Ok(());
        }
        let before = current.mode.as_str().to_string();
        self.ndctl_cache = None;
        // With DAX wanted, 2 MiB explicitly: a re-made namespace otherwise keeps the alignment
        // it had (or ndctl's default for its kind), which may allow 4 KiB mappings only.
        let mut args = vec!["create-namespace", "-f", "-e", namespace, "-m", "fsdax"];
        if dax != DaxPolicy::Off {
            args.push("--align=2M");
        }
        let out = self.run_inner(n, &CommandLine::new("ndctl").args(args), &[], Duration::from_secs(600))?;
        let made = ndctl::parse_create_namespace(&out.stdout).map_err(|e| e.to_string())?;
        if made.mode != ndctl::PmemMode::Fsdax {
            return Err(
                format!("ndctl create-namespace made {} in {} mode, not fsdax", made.dev, made.mode.as_str()).into()
            );
        }
        let align = match made.align {
            Some(a) => format!("align {a} ({}) as ndctl reports it", crate::plan::human_bytes(a)),
            None => "ndctl reports no align".to_string(),
        };
        on_event(Event::Note(format!(
            "{namespace} reconfigured from {before} to fsdax ({}); {align}",
            made.blockdev.as_deref().unwrap_or("no block device reported")
        )));
        match made.align {
            Some(a) if dax != DaxPolicy::Off && !a.is_multiple_of(super::checks::PMD_BYTES) => {
                let why = format!(
                    "ndctl create-namespace --align=2M made {} with {align}: DAX can map its files with 4 KiB pages only",
                    made.dev
                );
                if dax == DaxPolicy::Required {
                    return Err(format!(
                        "{why}; the experiment file requires DAX (set dax = \"optional\" to measure it as it is)"
                    )
                    .into());
                }
                on_event(Event::Note(format!("{why} (dax = \"optional\": measured as it is)")));
            }
            None if dax != DaxPolicy::Off => on_event(Event::Note(format!(
                "ndctl create-namespace --align=2M made {} but reports no align, so the 2 MiB alignment is not confirmed",
                made.dev
            ))),
            _ => {}
        }
        Ok(())
    }

    /// A veth pair `host_if`/`target_if` with one end in `netns`, both addressed and up.
    pub(super) fn create_veth(
        &mut self,
        n: usize,
        (host_if, target_if): (&str, &str),
        netns: &str,
        (host_cidr, target_cidr): (&str, &str),
    ) -> Result<(), StepError> {
        let ip = |args: &[&str]| CommandLine::new("ip").args(args);
        // Two links in one subnet would let this run's nbdfuse reach another run's target (and
        // format its disk): refused before anything is made.
        let shown = self.run_plain(n, ip(&["-o", "-4", "addr", "show"]))?;
        if let Some(holder) = subnet_holder(&shown.stdout, host_cidr) {
            return Err(format!(
                "the link subnet of {host_cidr} is already held by {holder} (another pgtier run on this host, or this host's own network): a second link in it would reach the other's NBD target; start the run again (its subnet follows from the run's token) or end the other run"
            )
            .into());
        }
        self.record(Undo::DeleteLink { name: host_if.to_string() }, "veth pair")?;
        for args in [
            &["link", "add", host_if, "type", "veth", "peer", "name", target_if][..],
            &["link", "set", target_if, "netns", netns],
            &["addr", "add", host_cidr, "dev", host_if],
            &["-n", netns, "addr", "add", target_cidr, "dev", target_if],
            &["link", "set", host_if, "up"],
            &["-n", netns, "link", "set", target_if, "up"],
            &["-n", netns, "link", "set", "lo", "up"],
        ] {
            self.run_plain(n, ip(args))?;
        }
        Ok(())
    }

    /// A helper daemon (the NBD target), recorded to be stopped; waits until it accepts
    /// connections on `ready_tcp` when given.
    pub(super) fn start_daemon(
        &mut self,
        n: usize,
        step: &Step,
        daemon: Helper<'_>,
        ready_tcp: Option<&(String, u16)>,
    ) -> Result<(), StepError> {
        let (label, log) = (daemon.label, daemon.log);
        let process = self.spawn_helper(n, step, daemon, |process| Undo::StopProcess {
            label: label.to_string(),
            process,
            signal: "TERM".into(),
            grace_ms: 5000,
        })?;
        if let Some((addr, port)) = ready_tcp {
            wait_for(self.sys, Duration::from_secs(15), |s| s.is_alive(process) && s.tcp_reachable(addr, *port))
                .map_err(|_| format!("{label} did not accept connections on {addr}:{port}; log: {}", tail(log)))?;
        }
        Ok(())
    }

    /// nbdfuse presenting an NBD export as `file` below `mountpoint`, recorded to be unmounted.
    pub(super) fn start_fuse(
        &mut self,
        n: usize,
        step: &Step,
        (mountpoint, file): (&Path, &Path),
        command: &Template,
        log: &Path,
    ) -> Result<(), StepError> {
        let fuse = Helper { role: "nbdfuse", label: "nbdfuse", command, netns: None, log };
        self.spawn_helper(n, step, fuse, |process| Undo::StopFuse { mountpoint: mountpoint.to_path_buf(), process })?;
        wait_for(self.sys, Duration::from_secs(15), |s| s.file_kind(file) == FileKind::File)
            .map_err(|_| format!("nbdfuse did not present {}; log: {}", file.display(), tail(log)))?;
        Ok(())
    }

    /// Holds `disk` (a plan variable) with a BSD lock, as systemd-udevd honours, once udev is idle.
    pub(super) fn lock_disk(&mut self, n: usize, disk: &str) -> Result<(), StepError> {
        let dev = self.value(&Value::var(disk))?;
        self.settle_udev(n);
        let lock = self.sys.lock_disk(Path::new(&dev)).map_err(|e| format!("lock {dev} (flock): {e}"))?;
        self.locks.insert(disk.to_string(), lock);
        Ok(())
    }

    /// Releases the lock on `disk` and lets udev re-read it.
    pub(super) fn unlock_disk(&mut self, n: usize, disk: &str) {
        if let Some(lock) = self.locks.remove(disk) {
            self.sys.unlock_disk(lock);
        }
        self.settle_udev(n);
    }

    /// `wipefs --all` of the device bound to `device`, after each of its partitions (as sysfs
    /// lists them now) when `partitions_first`.
    pub(super) fn wipe_signatures(&mut self, n: usize, device: &str, partitions_first: bool) -> Result<(), StepError> {
        let dev = PathBuf::from(self.value(&Value::var(device))?);
        let mut members = if partitions_first { safety::device_and_partitions(self.sys, &dev) } else { vec![dev] };
        members[1..].sort();
        // The disk last: wiping its partition table makes the kernel drop the partition nodes.
        members.rotate_left(1);
        for m in members {
            self.ndctl_cache = None;
            self.run_plain(n, CommandLine::new("wipefs").arg("--all").arg(&m))?;
        }
        Ok(())
    }
}

/// The interface and address in `ip -o -4 addr show` output whose network overlaps `cidr`'s.
fn subnet_holder(shown: &str, cidr: &str) -> Option<String> {
    let parse = |c: &str| -> Option<(u32, u32)> {
        let (addr, len) = c.split_once('/')?;
        let addr: std::net::Ipv4Addr = addr.parse().ok()?;
        let len: u32 = len.parse().ok().filter(|l| *l <= 32)?;
        Some((u32::from(addr), len))
    };
    let (want, want_len) = parse(cidr)?;
    shown.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "inet")?;
        let (have, have_len) = parse(words.get(at + 1)?)?;
        let len = want_len.min(have_len);
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        (want & mask == have & mask).then(|| format!("{} ({})", words.get(1).unwrap_or(&"?"), words[at + 1]))
    })
}

#[cfg(test)]
mod link_tests {
    use super::subnet_holder;

    #[test]
    fn a_link_subnet_another_interface_holds_is_found() {
        let shown = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n\
                     7: pgt064c0d0h    inet 169.254.74.1/30 scope global pgt064c0d0h\\       valid_lft forever\n";
        assert_eq!(subnet_holder(shown, "169.254.74.1/30").as_deref(), Some("pgt064c0d0h (169.254.74.1/30)"));
        assert_eq!(subnet_holder(shown, "169.254.74.5/30"), None, "the next /30 is free");
        assert_eq!(subnet_holder(shown, "169.254.75.1/30"), None);
        assert!(
            subnet_holder("3: eth0    inet 169.254.0.9/16 brd 169.254.255.255\n", "169.254.74.1/30").is_some(),
            "a wider network holds it"
        );
        assert_eq!(subnet_holder("", "169.254.74.1/30"), None);
    }
}
