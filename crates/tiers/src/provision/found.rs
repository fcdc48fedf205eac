//! What steps find: a device named by path, namespace or subsystem resolved to its block
//! device, and a mount verified (options, DAX in effect by statx and /proc/mounts).

use super::*;
use crate::safety::Refusal;

impl Executor<'_> {
    pub(super) fn resolve(&mut self, n: usize, what: &Resolve) -> Result<String, StepError> {
        match what {
            Resolve::Canonical { path } => {
                Ok(self.sys.canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?.display().to_string())
            }
            Resolve::PmemNamespace { namespace } => self.pmem_namespace_device(n, namespace),
            Resolve::NvmeNamespace { nqn, nsid } => self.nvme_namespace_device(n, nqn, *nsid),
            Resolve::PartitionStart { disk, least_sectors } => self.partition_start(disk, *least_sectors),
            Resolve::Partition { disk, number } => self.partition_node(disk, *number),
        }
    }

    /// The block device of fsdax namespace `namespace`, once its node exists.
    fn pmem_namespace_device(&mut self, n: usize, namespace: &str) -> Result<String, StepError> {
        let list = self.ndctl_list(n)?;
        let ns = ndctl::find(&list, namespace).ok_or_else(|| format!("no PMem namespace {namespace}"))?;
        if ns.mode != ndctl::PmemMode::Fsdax {
            return Err(format!("namespace {namespace} is in {} mode, not fsdax", ns.mode.as_str()).into());
        }
        let blockdev = ns
            .blockdev
            .clone()
            .ok_or_else(|| format!("namespace {namespace} has no block device (mode {})", ns.mode.as_str()))?;
        let dev = format!("/dev/{}", blockdev.trim_start_matches("/dev/"));
        wait_for(self.sys, Duration::from_secs(10), |s| {
            matches!(s.file_kind(Path::new(&dev)), FileKind::BlockDevice { .. })
        })
        .map_err(|_| format!("{dev} (namespace {namespace}) is not a block device"))?;
        // A namespace just made (or re-made) is new to udev, whose rules may activate an old
        // volume group found on it: after udev is done, nothing may hold or mount it (its
        // signatures were judged by the checks before; a re-made namespace has lost them).
        self.settle_udev(n);
        self.probe(n, |s| safety::check_not_in_use(s, Path::new(&dev), true)).map_err(StepError::Refused)?;
        Ok(dev)
    }

    /// The block device of the namespace (`nsid`, or the only one) of subsystem `nqn`; about
    /// 30 s of retries, as the namespace appears asynchronously after nvme connect. Without
    /// `nsid`, a subsystem with more than one namespace is refused, by what `nvme list` shows
    /// and by the controller's own list of active namespaces (`nvme list-ns`, which does not
    /// wait for the kernel to make block devices): never the first one listed. Then `udevadm
    /// settle`, so that the checks that follow read holders after udev's rules ran (LVM
    /// autoactivation of an old volume group on the namespace, for one).
    fn nvme_namespace_device(&mut self, n: usize, nqn: &str, nsid: Option<u32>) -> Result<String, StepError> {
        let wanted = nsid.map(|n| format!(" with NSID {n}")).unwrap_or_default();
        for attempt in 0.. {
            let subsystems = self.nvme_subsystems(n)?;
            let list = self.run_plain(n, CommandLine::new("nvme").args(["list", "-o", "json"]))?;
            let namespaces = nvme::parse_list(&list.stdout).map_err(|e| e.to_string())?;
            let found = match nvme::match_namespace_for_nqn(&namespaces, &subsystems, nqn, nsid) {
                nvme::NqnMatch::Found(dev) => Ok(dev),
                // Settled by sysfs, then the same checks as a device found outright.
                nvme::NqnMatch::Ambiguous(candidates) => Ok(self.settle_ambiguous(&candidates, nqn, &wanted)?),
                nvme::NqnMatch::NeedsNsid(several) => {
                    let namespaces = several.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                    return Err(StepError::Refused(Refusal::NsidNeeded { nqn: nqn.to_string(), namespaces }));
                }
                nvme::NqnMatch::NotListed => Err("nvme list-subsys does not list it".to_string()),
                nvme::NqnMatch::NoLiveController => {
                    Err("it is listed, but none of its controllers is live".to_string())
                }
                nvme::NqnMatch::NoNamespace => Err(format!("it is listed, but no namespace{wanted} belongs to it")),
            };
            let why = match found {
                // nvme-cli 2.x may list the namespace before udev made its node.
                Ok(dev) if matches!(self.sys.file_kind(Path::new(&dev)), FileKind::BlockDevice { .. }) => {
                    if nsid.is_none() {
                        self.only_active_namespace(n, &subsystems, nqn, &dev)?;
                    }
                    self.settle_udev(n);
                    return Ok(dev);
                }
                Ok(dev) => format!("{dev} is listed but is not a block device yet"),
                Err(why) => why,
            };
            if attempt >= 60 {
                return Err(format!("subsystem {nqn}: no namespace{wanted} after 30 s ({why})").into());
            }
            self.sys.sleep(Duration::from_millis(500));
        }
        unreachable!("the loop returns")
    }

    /// Without an NSID in the file: the controller's active namespace list (`nvme list-ns
    /// /dev/<controller>`) must hold one namespace only, whatever `nvme list` showed so far
    /// (a second namespace may not have its block device yet). A controller that cannot say
    /// (no live controller, a failed or empty answer) is a refusal too: without `nsid` only
    /// the controller's own word that there is one namespace lets pgtier format it.
    fn only_active_namespace(
        &mut self,
        n: usize,
        subsystems: &[nvme::NvmeSubsystem],
        nqn: &str,
        dev: &str,
    ) -> Result<(), StepError> {
        let controller = subsystems
            .iter()
            .filter(|s| s.nqn.trim() == nqn.trim())
            .flat_map(|s| s.controllers.iter())
            .find(|c| c.state.as_deref().is_none_or(|s| s.trim().eq_ignore_ascii_case("live")))
            .map(|c| c.name.clone());
        let unconfirmed = |why: String| {
            Err(StepError::Refused(Refusal::NsidUnconfirmed { nqn: nqn.to_string(), device: dev.to_string(), why }))
        };
        let Some(controller) = controller else {
            return unconfirmed("nvme list-subsys names no live controller of it to ask".into());
        };
        let cmd = CommandLine::new("nvme").args(["list-ns".to_string(), format!("/dev/{controller}")]);
        let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(60))).map_err(|e| e.to_string())?;
        if out.status != 0 {
            return unconfirmed(format!("`{cmd}` exited with status {}: {}", out.status, out.stderr.trim()));
        }
        match nvme::parse_list_ns(&out.stdout) {
            Ok(ids) if ids.len() == 1 => Ok(()),
            Ok(ids) if ids.len() > 1 => {
                let namespaces = ids.iter().map(|id| format!("NSID {id}")).collect::<Vec<_>>().join(", ");
                Err(StepError::Refused(Refusal::NsidNeeded {
                    nqn: nqn.to_string(),
                    namespaces: format!("{namespaces}, by `{cmd}`"),
                }))
            }
            Ok(_) => unconfirmed(format!("`{cmd}` lists no active namespace")),
            Err(e) => unconfirmed(format!("`{cmd}`: {e}")),
        }
    }

    /// Of the devices `nvme list` could mean, the one sysfs says belongs to `nqn` (each
    /// namespace's controller or subsystem has a subsysnqn attribute); else a refusal.
    fn settle_ambiguous(&mut self, candidates: &[String], nqn: &str, wanted: &str) -> Result<String, StepError> {
        let mut sure = Vec::new();
        for c in candidates {
            let attr = Path::new("/sys/class/block").join(safety::kernel_name(Path::new(c))).join("device/subsysnqn");
            if self.sys.read_to_string(&attr).is_ok_and(|v| v.trim() == nqn.trim()) {
                sure.push(c.clone());
            }
        }
        if let [one] = sure.as_slice() {
            return Ok(one.clone());
        }
        Err(format!(
            "cannot tell which block device is the namespace{wanted} of subsystem {nqn}: `nvme list -o json` names no subsystem, its device names fit {} (read as subsystem instance or as controller), and sysfs device/subsysnqn did not settle it; refusing to guess. `nvme list -v` shows the subsystem of each namespace",
            candidates.join(" and ")
        )
        .into())
    }

    /// The first sector of a partition on `disk` (a plan variable), aligned to the disk's
    /// geometry, at least `least_sectors` in.
    fn partition_start(&mut self, disk: &str, least_sectors: u64) -> Result<String, StepError> {
        let disk = self.value(&Value::var(disk))?;
        let real = self.sys.canonicalize(Path::new(&disk)).unwrap_or_else(|_| PathBuf::from(&disk));
        let class = Path::new("/sys/class/block").join(safety::kernel_name(&real));
        let mut read = |p: &str| -> u64 {
            self.sys.read_to_string(&class.join(p)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
        };
        let geometry = parted::Geometry {
            logical_sector: read("queue/logical_block_size").max(512),
            minimum_io: read("queue/minimum_io_size"),
            optimal_io: read("queue/optimal_io_size"),
            alignment_offset: read("alignment_offset"),
        };
        Ok(format!("{}s", parted::aligned_start(&geometry, least_sectors)))
    }

    /// Partition `number` of `disk` (a plan variable), once udev made its node.
    fn partition_node(&mut self, disk: &str, number: u32) -> Result<String, StepError> {
        let disk = self.value(&Value::var(disk))?;
        let part = parted::partition_node(&disk, number);
        wait_for(self.sys, Duration::from_secs(30), |s| {
            matches!(s.file_kind(Path::new(&part)), FileKind::BlockDevice { .. })
        })
        .map_err(|_| {
            format!("partition node {part} did not appear within 30 s (does this kernel support partition tables?)")
        })?;
        Ok(part)
    }

    pub(super) fn verify_mount(
        &mut self,
        target: &Path,
        requested: &[String],
        dax: DaxPolicy,
        emulated: bool,
    ) -> Result<MountCheck, String> {
        let table = self
            .sys
            .read_to_string(Path::new("/proc/self/mounts"))
            .map_err(|e| format!("read /proc/self/mounts: {e}"))?;
        let entry = journal::mounts::parse_proc_mounts(&table)
            .into_iter()
            .rev()
            .find(|m| m.target == target)
            .ok_or_else(|| format!("{} is not in /proc/mounts after mount", target.display()))?;
        let not_shown = requested.iter().filter(|o| !entry.options.iter().any(|e| e == *o)).cloned().collect();
        let status = self.dax_status(target, &entry, dax, emulated);
        Ok(MountCheck {
            requested_options: requested.to_vec(),
            effective_options: entry.options.clone(),
            not_shown,
            dax: status,
        })
    }

    /// Whether DAX is in effect on the mount `entry` at `target`: the mount option and a probe
    /// file's statx attribute must both say so; else why not.
    fn dax_status(
        &mut self,
        target: &Path,
        entry: &journal::mounts::MountEntry,
        dax: DaxPolicy,
        emulated: bool,
    ) -> DaxStatus {
        let in_opts = matches!(entry.option("dax"), Some("always") | Some(""));
        let mut status = DaxStatus {
            requested: dax,
            in_mount_options: in_opts,
            statx_dax: None,
            honoured: false,
            note: String::new(),
        };
        if dax != DaxPolicy::Off {
            let probe = target.join(".pgtier-dax-probe");
            let statx = match self.sys.write(&probe, "dax probe\n") {
                Ok(()) => {
                    let r = self.sys.statx_dax(&probe).ok();
                    let _ = self.sys.remove_file(&probe);
                    r
                }
                Err(_) => None,
            };
            status.statx_dax = statx;
            // Both must say so: the mount option (the kernel kept dax=always) and the file (the
            // kernel put it in DAX state).
            status.honoured = in_opts && statx == Some(true);
            status.note = if status.honoured {
                "DAX in effect (dax=always in /proc/mounts, statx reports the DAX attribute)".into()
            } else if emulated {
                format!(
                    "DAX was asked for but NOT honoured: /proc/mounts shows dax={}, statx DAX attribute {}; this emulated device has no DAX support, so I/O goes through the page cache",
                    entry.option("dax").unwrap_or("(none)"),
                    match statx {
                        Some(true) => "set",
                        Some(false) => "not set",
                        None => "unknown",
                    }
                )
            } else {
                format!(
                    "DAX was asked for but NOT honoured: /proc/mounts shows {}, statx DAX attribute {}; {}",
                    match entry.option("dax") {
                        Some("") => "dax (legacy option)".to_string(),
                        Some(v) => format!("dax={v}"),
                        None => "no dax option".to_string(),
                    },
                    match statx {
                        Some(true) => "set",
                        Some(false) => "not set",
                        None => "not reported",
                    },
                    match (in_opts, statx) {
                        (true, None) => {
                            "DAX cannot be confirmed (statx reports the DAX attribute from Linux 5.8 on)".to_string()
                        }
                        _ => format!(
                            "the kernel fell back to page-cache I/O; {}",
                            self.kernel_says_about_dax(&entry.source)
                        ),
                    }
                )
            };
        }
        status
    }

    /// What the kernel log says about DAX for the filesystem's device, as a clause.
    pub(super) fn kernel_says_about_dax(&mut self, source: &str) -> String {
        let name = safety::kernel_name(Path::new(source));
        let out = self.sys.run(&CommandLine::new("dmesg"), Duration::from_secs(30));
        let Ok(out) = out.map_err(|e| e.to_string()) else {
            return format!("the kernel log could not be read; see dmesg for {name}");
        };
        let said: Vec<String> =
            dmesg::dax_messages(&out.stdout, &name).into_iter().filter(|m| !m.starts_with("DAX enabled")).collect();
        match said.last() {
            Some(m) => format!("the kernel log says: \"{name}: {m}\""),
            None => format!("the kernel log (dmesg) says nothing about DAX on {name}"),
        }
    }
}
