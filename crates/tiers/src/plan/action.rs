//! What a step does: [`Action`], with the command line a reader would type for it.

use super::*;

/// What a step does.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Write a file this run needs (removed at teardown); `what` says what it is.
    WriteFile {
        path: PathBuf,
        contents: String,
        what: String,
    },
    /// `ndctl create-namespace -f -e NS -m fsdax` (with `--align=2M` when DAX is wanted), only
    /// if the namespace is not in fsdax mode already (destroys the namespace's data); the
    /// alignment ndctl reports for the new namespace is checked.
    PmemReconfigure {
        namespace: String,
        dax: crate::DaxPolicy,
    },
    /// `nvme connect` to an NVMe/TCP subsystem, once per subsystem (its namespaces may be
    /// several devices); teardown disconnects the controller this connect created. A secret goes
    /// through `secret_file` (libnvme's JSON configuration, mode 0600, removed right after the
    /// connect), never on the command line.
    NvmeConnect {
        target: NvmeTcpTarget,
        secret_file: Option<PathBuf>,
        /// The devices of the experiment that are namespaces of this subsystem.
        devices: Vec<String>,
    },
    /// `udevadm settle` (when udevadm exists: udevd's re-read of the table parted wrote is
    /// over), then an exclusive BSD lock (`flock`) on the whole disk bound to `disk`, as
    /// systemd-udevd honours: while it is held udevd neither probes the disk nor re-reads its
    /// partition table (which removes and re-adds the partition nodes). Not held while parted
    /// runs: Debian's libparted runs `udevadm settle` itself, which waits for the locked disk.
    LockDisk {
        disk: String,
    },
    /// Release the lock of [`Action::LockDisk`], then `udevadm settle` (when udevadm exists).
    UnlockDisk {
        disk: String,
    },
    /// Immediately before mkfs: `udevadm settle` (its failure fails the step; not for a disk the
    /// run holds locked, settled before its lock and whose events udev holds back), LVM's
    /// autoactivation units (`lvm-activate-*`, which udev starts with `systemd-run --no-block`
    /// and settle does not wait for) waited out, then the whole disk bound to `disk` and its
    /// partitions checked again for holders, mounts, swap, the O_EXCL open, the kernel's exports
    /// and processes ([`crate::safety::check_still_unused`]).
    StillUnused {
        disk: String,
    },
    /// `wipefs --all` of the device bound to `device` (only a device the experiment file names,
    /// with `allow_wipe`, past its checks): every signature libblkid sees is erased (magic strings
    /// only, no data). With `partitions_first`, each partition the disk has when the step runs
    /// (sysfs) is wiped before the disk. wipefs opens each device `O_EXCL` and fails if it is in
    /// use.
    WipeSignatures {
        device: String,
        partitions_first: bool,
    },
    /// A program must be installed.
    RequireTool {
        program: String,
        package: String,
    },
    Check(Check),
    /// Create a directory (removed again at teardown when `remove_on_teardown`).
    MakeDir {
        path: PathBuf,
        mode: u32,
        remove_on_teardown: bool,
    },
    /// Create a sparse file of `size` bytes (removed at teardown).
    SparseFile {
        path: PathBuf,
        size: u64,
    },
    /// `losetup --find --show [--direct-io=on] FILE`; the device is bound to `bind`.
    AttachLoop {
        file: PathBuf,
        direct_io: bool,
        bind: String,
    },
    /// Create a zram device (`hot_add`), set its compressor and size; bound to `bind`.
    CreateZram {
        size: u64,
        algorithm: String,
        bind: String,
    },
    /// `ip netns add NAME`.
    CreateNetns {
        name: String,
    },
    /// A veth pair with one end moved into `netns`, both ends addressed and up.
    CreateVeth {
        host_if: String,
        target_if: String,
        netns: String,
        host_cidr: String,
        target_cidr: String,
    },
    /// Start a long-running helper; ready once `ready_tcp` accepts connections.
    StartDaemon {
        label: String,
        command: Template,
        netns: Option<String>,
        log: PathBuf,
        ready_tcp: Option<(String, u16)>,
    },
    /// Start nbdfuse; ready once `file` exists.
    StartFuse {
        mountpoint: PathBuf,
        command: Template,
        file: PathBuf,
        log: PathBuf,
    },
    /// Find a device and bind it to `bind`.
    Resolve {
        what: Resolve,
        bind: String,
    },
    /// Run a command.
    Run {
        command: Template,
        timeout_secs: u64,
    },
    /// Mount `source` at `target`.
    Mount {
        source: Value,
        target: PathBuf,
        fstype: String,
        options: Vec<String>,
    },
    /// Check the mount in /proc/mounts against what was asked, including DAX.
    VerifyMount {
        target: PathBuf,
        requested: Vec<String>,
        dax: DaxPolicy,
        emulated: bool,
    },
    /// Hand a directory to the owner of the data (`chown`, `chmod`).
    Chown {
        path: PathBuf,
        uid: u32,
        gid: u32,
        mode: u32,
    },
    /// Run `words` on the storage target host `host` over its ssh connection (every word quoted
    /// for the host's shell); `undo`, when there is one, is recorded in the run record before
    /// the command runs.
    OnHost {
        host: String,
        words: Vec<String>,
        undo: Option<journal::remote::RemoteOp>,
        kind: HostStep,
    },
    /// The device a target host exports, checked there over ssh by the rules of a local device:
    /// a block device (its stable name resolved on the host), not held by LVM/md/dm, not
    /// mounted, not swap, and no signature unless `allow_wipe`.
    HostDeviceCheck {
        host: String,
        device: PathBuf,
        allow_wipe: bool,
    },
    /// The devices the run exports from one target host (device name, export path) name
    /// distinct disks there, none a partition of another's: each resolved and compared by its
    /// device number on the host. nvmet opens a disk without claiming it, so two exports of one
    /// disk would both pass every other check, and the second mkfs would destroy the first.
    HostDevicesDistinct {
        host: String,
        devices: Vec<(String, PathBuf)>,
    },
    /// The model and serial of the device a target host exports, read there (sysfs, udev, VPD
    /// page 0x80, as for a local device), against those the experiment file gives.
    HostDeviceIdentity {
        host: String,
        device: PathBuf,
        model: Option<String>,
        serial: Option<String>,
    },
}

/// What a step on a target host does to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostStep {
    /// Reads only (a version, a module list).
    Check,
    /// Changes the host (a file in the run's directory there, a helper process).
    Change,
    /// Exports a device over NVMe/TCP (nvmet's configfs): writes nothing to any device, like
    /// `nvme connect` on the server, and comes before the checks of the namespace it exports.
    Export,
}

impl Action {
    /// The step as a reader would type it, with later-known values in `<angle brackets>`.
    pub fn describe(&self) -> String {
        match self {
            Action::RequireTool { program, package } => {
                format!("require {program} (Debian package {package})")
            }
            Action::WriteFile { path, contents, what } => {
                format!("write {} ({what}, {} lines)", path.display(), contents.lines().count())
            }
            Action::PmemReconfigure { namespace, dax } => format!(
                "ndctl create-namespace -f -e {namespace} -m fsdax{}  # only if not in fsdax mode already",
                if *dax == crate::DaxPolicy::Off { "" } else { " --align=2M" }
            ),
            Action::NvmeConnect { target, secret_file, .. } => describe_connect(target, secret_file.as_deref()),
            Action::LockDisk { disk } => {
                format!("udevadm settle; flock --exclusive <{disk}>  # held until the filesystem is made")
            }
            Action::UnlockDisk { disk } => format!("release the lock on <{disk}>; udevadm settle"),
            Action::StillUnused { disk } => format!(
                "udevadm settle; wait for lvm-activate-* units; check <{disk}> and its partitions again: no holders (LVM/md/dm), not mounted, not swap, not busy, not exported, not open by any process"
            ),
            Action::WipeSignatures { device, partitions_first: true } => {
                format!("wipefs --all <each partition of <{device}> now, from sysfs>; wipefs --all <{device}>")
            }
            Action::WipeSignatures { device, partitions_first: false } => format!("wipefs --all <{device}>"),
            Action::Check(c) => c.to_string(),
            Action::MakeDir { path, mode, .. } => {
                format!("mkdir -p -m {mode:o} {}", path.display())
            }
            Action::SparseFile { path, size } => {
                format!("truncate -s {size} {}  # sparse, {}", path.display(), human_bytes(*size))
            }
            Action::AttachLoop { file, direct_io, bind } => format!(
                "losetup --find --show{} {}  -> <{bind}>",
                if *direct_io { " --direct-io=on" } else { "" },
                file.display()
            ),
            Action::CreateZram { size, algorithm, bind } => format!(
                "cat /sys/class/zram-control/hot_add -> <{bind}>; echo {algorithm} > /sys/block/<{bind}>/comp_algorithm; echo {size} > /sys/block/<{bind}>/disksize  # {}",
                human_bytes(*size)
            ),
            Action::CreateNetns { name } => format!("ip netns add {name}"),
            Action::CreateVeth { host_if, target_if, netns, host_cidr, target_cidr } => format!(
                "ip link add {host_if} type veth peer name {target_if}; ip link set {target_if} netns {netns}; ip addr add {host_cidr} dev {host_if}; ip -n {netns} addr add {target_cidr} dev {target_if}; ip link set {host_if} up; ip -n {netns} link set {target_if} up; ip -n {netns} link set lo up"
            ),
            Action::StartDaemon { command, netns, ready_tcp, .. } => format!(
                "{}{command} &{}",
                netns.as_ref().map(|n| format!("[in netns {n}] ")).unwrap_or_default(),
                ready_tcp.as_ref().map(|(a, p)| format!("  # wait for {a}:{p}")).unwrap_or_default()
            ),
            Action::StartFuse { command, file, .. } => {
                format!("{command} &  # wait for {}", file.display())
            }
            Action::Resolve { what, bind } => what.describe(bind),
            Action::Run { command, .. } => command.to_string(),
            Action::Mount { source, target, fstype, options } => format!(
                "mount -t {fstype}{} {source} {}",
                if options.is_empty() { String::new() } else { format!(" -o {}", options.join(",")) },
                target.display()
            ),
            Action::VerifyMount { target, requested, dax, .. } => format!(
                "check /proc/mounts for {}: options {}{}",
                target.display(),
                if requested.is_empty() { "(defaults)".to_string() } else { requested.join(",") },
                match dax {
                    DaxPolicy::Off => String::new(),
                    DaxPolicy::Optional => "; DAX via /proc/mounts and statx (optional)".into(),
                    DaxPolicy::Required => "; DAX via /proc/mounts and statx (required)".into(),
                }
            ),
            Action::Chown { path, uid, gid, mode } => {
                format!("chown {uid}:{gid} {}; chmod {mode:o} {}", path.display(), path.display())
            }
            Action::OnHost { host, words, .. } => {
                format!("[on host {host}] {}", super::host_words::describe_words(words))
            }
            Action::HostDeviceIdentity { host, device, model, serial } => format!(
                "[on host {host}] check {} identity: model {}, serial {}",
                device.display(),
                model.as_deref().unwrap_or("(any)"),
                serial.as_deref().unwrap_or("(any)")
            ),
            Action::HostDevicesDistinct { host, devices } => format!(
                "[on host {host}] check {} name distinct disks there (by device number; no disk and a partition of it)",
                devices.iter().map(|(n, p)| format!("{} ({n})", p.display())).collect::<Vec<_>>().join(", ")
            ),
            Action::HostDeviceCheck { host, device, allow_wipe } => format!(
                "[on host {host}] check {} is a block device (readlink -e, stat), not held by LVM/md/dm, not mounted, not swap, not busy (O_EXCL open), not exported by nvmet or LIO nor backing a loop device, not open or mapped by any process there (/proc), not locked (flock){}",
                device.display(),
                if *allow_wipe {
                    " (existing signatures may be wiped: allow_wipe = true)"
                } else {
                    ", and carries no filesystem or partition-table signature (blkid -p, wipefs --no-act)"
                }
            ),
        }
    }

    /// True for steps that change the machine (everything but tool requirements, checks,
    /// lookups and disk locks).
    pub fn is_destructive(&self) -> bool {
        !matches!(
            self,
            Action::RequireTool { .. }
                | Action::Check(_)
                | Action::Resolve { .. }
                | Action::VerifyMount { .. }
                | Action::LockDisk { .. }
                | Action::UnlockDisk { .. }
                | Action::StillUnused { .. }
                | Action::HostDeviceCheck { .. }
                | Action::HostDevicesDistinct { .. }
                | Action::HostDeviceIdentity { .. }
                | Action::OnHost { kind: HostStep::Check, .. }
        )
    }

    /// True for `nvme connect`: it changes the machine (a new controller and namespace appear;
    /// teardown disconnects them) but writes nothing to any device. The safety checks of a remote
    /// namespace can only run after it.
    pub fn is_attach(&self) -> bool {
        matches!(self, Action::NvmeConnect { .. } | Action::OnHost { kind: HostStep::Export, .. })
    }

    /// What teardown does for this step, if anything (never a format or a write to a device).
    pub fn teardown(&self) -> Option<String> {
        match self {
            Action::MakeDir { path, remove_on_teardown: true, .. } => Some(format!("rm -r {}", path.display())),
            Action::SparseFile { path, .. } | Action::WriteFile { path, .. } => Some(format!("rm {}", path.display())),
            Action::AttachLoop { file, .. } => Some(format!("losetup -d <loop device of {}>", file.display())),
            Action::CreateZram { bind, .. } => Some(format!("reset and remove <{bind}> (zram)")),
            Action::CreateNetns { name } => Some(format!("ip netns delete {name}")),
            Action::CreateVeth { host_if, .. } => Some(format!("ip link delete {host_if}")),
            Action::StartDaemon { label, .. } => Some(format!("stop {label} (SIGTERM, then SIGKILL)")),
            Action::StartFuse { mountpoint, .. } => Some(format!("fusermount3 -u {}", mountpoint.display())),
            Action::NvmeConnect { target, .. } => Some(format!(
                "nvme disconnect -d <the controller this connect created> (subsystem {}; only if every filesystem on it was unmounted)",
                target.nqn
            )),
            Action::Mount { target, .. } => Some(format!("umount {}", target.display())),
            Action::OnHost { host, undo: Some(u), .. } => Some(format!("[on host {host}] {}", u.describe())),
            _ => None,
        }
    }
}

/// `nvme connect` as the executor runs it, and where the DH-HMAC-CHAP key goes when there is one.
pub(super) fn describe_connect(target: &NvmeTcpTarget, secret_file: Option<&std::path::Path>) -> String {
    let mut line = connect_command(target, secret_file).to_string();
    if let (Some(file), Some(src)) = (secret_file, &target.dhchap_secret) {
        line.push_str(&format!(
                "  # {} (mode 0600, removed right after) holds the host's DH-HMAC-CHAP key {} as libnvme's dhchap_key; nvme-cli 2.11 and later: nvme connect --config {} --output-format json",
                file.display(),
                src,
                file.display()
            ));
    }
    line
}
