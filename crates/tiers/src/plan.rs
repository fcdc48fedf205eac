//! The provisioning plan: every step, in order, with its reason. A plan is data; `--dry-run`
//! prints it and [`crate::provision::execute`] carries it out.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::spec::{DaxPolicy, NvmeTcpTarget, SecretSource};

/// A command argument: literal, a value produced by an earlier step, or a secret read at
/// execution time (never printed).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Value {
    Lit(String),
    Var(String),
    Secret(SecretSource),
}

impl Value {
    pub fn lit(s: impl Into<String>) -> Value {
        Value::Lit(s.into())
    }
    pub fn var(s: impl Into<String>) -> Value {
        Value::Var(s.into())
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Lit(s) => f.write_str(&journal::command::shell_quote(s)),
            Value::Var(v) => write!(f, "<{v}>"),
            // Quoted like a literal, so that the placeholder reads as one word.
            Value::Secret(s) => f.write_str(&journal::command::shell_quote(&s.to_string())),
        }
    }
}

/// A command whose arguments may refer to earlier results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Template {
    pub program: String,
    pub args: Vec<Value>,
}

impl Template {
    pub fn new(program: &str) -> Template {
        Template { program: program.to_string(), args: Vec::new() }
    }
    pub fn lit(mut self, a: impl Into<String>) -> Template {
        self.args.push(Value::Lit(a.into()));
        self
    }
    pub fn lits<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Template {
        self.args.extend(args.into_iter().map(|a| Value::Lit(a.into())));
        self
    }
    pub fn val(mut self, v: Value) -> Template {
        self.args.push(v);
        self
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program)?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// A read-only check made before the first destructive step.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "check", rename_all = "kebab-case")]
pub enum Check {
    /// The path exists and is a block device.
    IsBlockDevice { device: Value },
    /// Model and serial (from sysfs) match what the experiment file says.
    Identity { device: Value, model: Option<String>, serial: Option<String> },
    /// Not mounted (nor any partition), not swap, not held by LVM/md/dm, not backing the running
    /// system, and no filesystem or partition-table signature unless wiping is allowed.
    NotInUse { device: Value, allow_wipe: bool },
    /// The PMem namespace exists and is in fsdax mode (or may be reconfigured).
    PmemFsdax { namespace: String, allow_reconfigure: bool },
    /// Whatever device the PMem namespace has now (`pmemN` block device, `daxN.M` character
    /// device) is not in use, and (unless wiping is allowed) carries no signature.
    PmemNotInUse { namespace: String, allow_wipe: bool },
    /// The NVMe subsystem is not connected yet (teardown disconnects it, so it must be ours).
    NvmeNotConnected { nqn: String },
    /// `nvme version`, before the first NVMe/TCP step: the connect is written for the nvme-cli
    /// found; with a DH-HMAC-CHAP secret it needs nvme-cli 2.0 or later (1.16 has no such option).
    NvmeCli { secret: bool },
    /// The host NQN and host ID come as a pair (or neither, or a uuid host NQN that implies its ID).
    NvmeHostIdentity { host_nqn: Option<String>, host_id: Option<String> },
    /// The device is large enough for `bytes` (what for: `what`), before anything is written.
    Room { device: Value, bytes: u64, what: String },
    /// The same for a PMem namespace, by the size `ndctl list -N -i` gives it (its block device
    /// is only looked up after the checks, and may only exist after a reconfigure).
    PmemRoom { namespace: String, bytes: u64, what: String },
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::IsBlockDevice { device } => write!(f, "check {device} is a block device"),
            Check::Identity { device, model, serial } => write!(
                f,
                "check {device} identity: model {}, serial {}",
                model.as_deref().unwrap_or("(any)"),
                serial.as_deref().unwrap_or("(any)")
            ),
            Check::NotInUse { device, allow_wipe } => write!(
                f,
                "check {device} is not mounted (in any mount namespace), not swap, not held by LVM/md/dm, not backing the running system{}",
                if *allow_wipe {
                    " (existing signatures may be wiped: allow_wipe = true)"
                } else {
                    ", and carries no filesystem or partition-table signature (blkid -p, wipefs --no-act)"
                }
            ),
            Check::PmemFsdax { namespace, allow_reconfigure } => write!(
                f,
                "check ndctl list -N -i: namespace {namespace} exists and is in fsdax mode{}",
                if *allow_reconfigure { " (or may be reconfigured: allow_reconfigure = true)" } else { "" }
            ),
            Check::PmemNotInUse { namespace, allow_wipe } => write!(
                f,
                "check the device of namespace {namespace} (pmemN or daxN.M) is not mounted, not swap, not held, not open{}",
                if *allow_wipe {
                    " (existing signatures may be wiped: allow_wipe = true)"
                } else {
                    ", and carries no filesystem or partition-table signature (blkid -p, wipefs --no-act)"
                }
            ),
            Check::NvmeNotConnected { nqn } => {
                write!(f, "check nvme list-subsys -o json: subsystem {nqn} is not connected yet")
            }
            Check::NvmeCli { secret } => write!(
                f,
                "check nvme version: nvme-cli and libnvme versions (the connect below depends on them{})",
                if *secret { "; a DH-HMAC-CHAP secret needs nvme-cli 2.0 or later" } else { "" }
            ),
            Check::NvmeHostIdentity { host_nqn, host_id } => write!(
                f,
                "check the host NQN and host ID come together (host_nqn {}, host_id {})",
                host_nqn.as_deref().unwrap_or("not given"),
                host_id.as_deref().unwrap_or("not given")
            ),
            Check::Room { device, bytes, what } => {
                write!(f, "check {device} holds {} ({what})", human_bytes(*bytes))
            }
            Check::PmemRoom { namespace, bytes, what } => {
                write!(f, "check ndctl list -N -i: namespace {namespace} holds {} ({what})", human_bytes(*bytes))
            }
        }
    }
}

/// How to find a device whose kernel name is only known at execution time.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "resolve", rename_all = "kebab-case")]
pub enum Resolve {
    /// Follow symlinks (`/dev/disk/by-id/...` to `/dev/nvme1n1`).
    Canonical { path: PathBuf },
    /// The block device of a PMem namespace (`ndctl list -N`).
    PmemNamespace { namespace: String },
    /// The namespace block device of a connected NVMe subsystem, by NQN.
    NvmeNamespace { nqn: String, nsid: Option<u32> },
    /// Partition `number` of the disk bound to `disk`; waits for the node to appear.
    Partition { disk: String, number: u32 },
    /// The first sector of a partition on the disk bound to `disk`, as `NNNs`: at least
    /// `least_sectors` (512-byte units; 2 MiB for PMem), moved up to the disk's alignment
    /// (`queue/optimal_io_size`, `queue/minimum_io_size`, `alignment_offset`), the way parted's
    /// `align-check opt` judges it.
    PartitionStart { disk: String, least_sectors: u64 },
}

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
    /// `ndctl create-namespace -f -e NS -m fsdax`, only if the namespace is not in fsdax mode
    /// already (destroys the namespace's data).
    PmemReconfigure {
        namespace: String,
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
            Action::PmemReconfigure { namespace } => {
                format!("ndctl create-namespace -f -e {namespace} -m fsdax  # only if not in fsdax mode already")
            }
            Action::NvmeConnect { target, secret_file, .. } => {
                let mut line = connect_command(target, secret_file.as_deref()).to_string();
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
            Action::LockDisk { disk } => {
                format!("udevadm settle; flock --exclusive <{disk}>  # held until the filesystem is made")
            }
            Action::UnlockDisk { disk } => format!("release the lock on <{disk}>; udevadm settle"),
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
            Action::Resolve { what, bind } => match what {
                Resolve::Canonical { path } => {
                    format!("readlink -f {} -> <{bind}>", path.display())
                }
                Resolve::PmemNamespace { namespace } => {
                    format!("ndctl list -N -i: namespace {namespace} -> /dev/<blockdev> as <{bind}>")
                }
                Resolve::PartitionStart { disk, least_sectors } => format!(
                    "read /sys/class/block/<{disk}>/{{queue/optimal_io_size,queue/minimum_io_size,queue/logical_block_size,alignment_offset}}: first sector at or after {least_sectors}s (512-byte) that parted's align-check opt accepts -> <{bind}>"
                ),
                Resolve::NvmeNamespace { nqn, nsid } => format!(
                    "nvme list-subsys -o json; nvme list -o json: namespace{} of subsystem {nqn} -> <{bind}>",
                    nsid.map(|n| format!(" {n}")).unwrap_or_default()
                ),
                Resolve::Partition { disk, number } => {
                    format!("wait for partition {number} of <{disk}> to appear -> <{bind}>")
                }
            },
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
        )
    }

    /// True for `nvme connect`: it changes the machine (a new controller and namespace appear;
    /// teardown disconnects them) but writes nothing to any device. The safety checks of a remote
    /// namespace can only run after it.
    pub fn is_attach(&self) -> bool {
        matches!(self, Action::NvmeConnect { .. })
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
            _ => None,
        }
    }
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// The device this step belongs to, if any.
    pub device: Option<String>,
    pub action: Action,
    pub reason: String,
}

/// Every step, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Where each device will be mounted.
    pub mountpoints: Vec<(String, PathBuf)>,
    /// The directory that holds everything the run creates on local disk.
    pub work_dir: PathBuf,
    pub emulated: bool,
}

impl Plan {
    pub(crate) fn push(&mut self, device: Option<&str>, action: Action, reason: impl Into<String>) {
        self.steps.push(Step { device: device.map(str::to_string), action, reason: reason.into() });
    }
}

impl Plan {
    /// Adds a check that the device `device` (a device of this plan) has room for `bytes`, after
    /// that device's other checks, so that it runs before anything is written. For callers that
    /// put more than PostgreSQL's directories there (a data set's golden copy, which a real study
    /// may place on one of its devices rather than on the small system disk).
    pub fn add_room_check(&mut self, device: &str, bytes: u64, what: &str) {
        let namespace = self.steps.iter().find_map(|s| match &s.action {
            Action::Check(Check::PmemFsdax { namespace, .. }) if s.device.as_deref() == Some(device) => {
                Some(namespace.clone())
            }
            _ => None,
        });
        let disk = self
            .steps
            .iter()
            .find_map(|s| match &s.action {
                Action::Check(Check::NotInUse { device: d, .. }) if s.device.as_deref() == Some(device) => {
                    Some(d.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| Value::var(device));
        let at = self
            .steps
            .iter()
            .rposition(|s| s.device.as_deref() == Some(device) && matches!(s.action, Action::Check(_)))
            .map(|i| i + 1)
            .unwrap_or_else(|| self.first_destructive_step().unwrap_or(self.steps.len()));
        self.steps.insert(
            at,
            Step {
                device: Some(device.to_string()),
                action: Action::Check(match namespace {
                    Some(namespace) => Check::PmemRoom { namespace, bytes, what: what.to_string() },
                    None => Check::Room { device: disk, bytes, what: what.to_string() },
                }),
                reason: format!("{what} goes on this device: refuse now rather than fail when it is full"),
            },
        );
    }

    /// Index of the first step that may write to a device or change the machine beyond
    /// attaching a remote subsystem; every safety check comes before it.
    pub fn first_destructive_step(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.action.is_destructive() && !s.action.is_attach())
    }

    /// What teardown will do, newest first, as a reader would type it.
    pub fn teardown(&self) -> Vec<String> {
        self.steps.iter().rev().filter_map(|s| s.action.teardown()).collect()
    }
}

impl fmt::Display for Plan {
    /// One line per command, its reason under it; the tool requirements on one line; a rule
    /// after the last safety check; the teardown at the end.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.steps.len();
        let width = (2 * n.to_string().len() + 1).max(3);
        let first_destructive = self.first_destructive_step();
        let mut i = 0;
        while i < n {
            if Some(i) == first_destructive && i > 0 && !self.emulated {
                writeln!(
                    f,
                    "{:>width$}  ---- nothing above writes to any device{}; every check above passes before anything below runs ----",
                    "",
                    if self.steps[..i].iter().any(|s| s.action.is_attach()) {
                        " (nvme connect only attaches the remote subsystem, so that it can be checked)"
                    } else {
                        ""
                    }
                )?;
            }
            let s = &self.steps[i];
            if let Action::RequireTool { .. } = s.action {
                let mut j = i;
                let mut tools = Vec::new();
                while j < n {
                    let Action::RequireTool { program, package } = &self.steps[j].action else { break };
                    tools.push(format!("{program} ({package})"));
                    j += 1;
                }
                let label = if j - i > 1 { format!("{}-{}", i + 1, j) } else { format!("{}", i + 1) };
                writeln!(f, "{label:>width$}. require: {}", tools.join(", "))?;
                writeln!(
                    f,
                    "{:>width$}  why: used below; missing programs stop the run before anything is touched",
                    ""
                )?;
                i = j;
                continue;
            }
            let who = s.device.as_deref().map(|d| format!("[{d}] ")).unwrap_or_default();
            writeln!(f, "{:>width$}. {who}{}", i + 1, s.action.describe())?;
            writeln!(f, "{:>width$}  why: {}", "", s.reason)?;
            i += 1;
        }
        let teardown = self.teardown();
        if !teardown.is_empty() {
            writeln!(f, "\nTeardown (from the run record, newest first; it never formats or writes to a device):")?;
            for t in teardown {
                writeln!(f, "  - {t}")?;
            }
        }
        Ok(())
    }
}

/// The `nvme connect` of a target, as run with nvme-cli 2.0 to 2.10 (and 1.x without a
/// secret); `<...>` values are read when it runs.
pub fn connect_command(t: &NvmeTcpTarget, secret_file: Option<&std::path::Path>) -> Template {
    let mut c = Template::new("nvme").lits([
        "connect",
        "--transport",
        "tcp",
        "--traddr",
        &t.address,
        "--trsvcid",
        &t.port.to_string(),
        "--nqn",
        &t.nqn,
    ]);
    let (nqn, id) = crate::build::host_identity(t);
    c = c.lit("--hostnqn").val(nqn).lit("--hostid").val(id);
    if let Some(f) = secret_file {
        c = c.lit("--config").lit(f.display().to_string());
    }
    c.lits(["--output-format", "json"])
}

/// `1.5 GiB`-style sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[i]) }
}

/// How an added per-I/O latency is made on the emulated NBD target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "mechanism", rename_all = "kebab-case")]
pub enum EmulatedDelay {
    /// nbdkit's delay filter (`delay-read=Nms`): whole milliseconds only.
    DelayFilter { ms: u64 },
    /// A small nbdkit plugin compiled by nbdkit's cc plugin that sleeps `us` microseconds
    /// (`clock_nanosleep`, timer slack 1 ns) before each read and write. Needs a C compiler.
    MicrosecondPlugin { us: u64 },
}

impl EmulatedDelay {
    /// The mechanism for `d`: the delay filter for whole milliseconds, the plugin otherwise
    /// (whole microseconds; anything finer is cut off). `None` for no delay.
    pub fn for_latency(d: Duration) -> Option<EmulatedDelay> {
        let us = d.as_micros() as u64;
        if us == 0 {
            None
        } else if us.is_multiple_of(1000) {
            Some(EmulatedDelay::DelayFilter { ms: us / 1000 })
        } else {
            Some(EmulatedDelay::MicrosecondPlugin { us })
        }
    }

    /// The delay actually applied.
    pub fn applied(self) -> Duration {
        match self {
            EmulatedDelay::DelayFilter { ms } => Duration::from_millis(ms),
            EmulatedDelay::MicrosecondPlugin { us } => Duration::from_micros(us),
        }
    }

    /// `+200 µs per read and write (nbdkit cc plugin)`-style text.
    pub fn describe(self) -> String {
        match self {
            EmulatedDelay::DelayFilter { ms } => format!("+{ms} ms per read and write (nbdkit delay filter)"),
            EmulatedDelay::MicrosecondPlugin { us } => {
                format!("+{us} µs per read and write (nbdkit cc plugin, clock_nanosleep)")
            }
        }
    }
}

/// The nbdkit plugin behind [`EmulatedDelay::MicrosecondPlugin`], compiled at start by nbdkit's
/// cc plugin (`nbdkit cc FILE file=IMAGE delay_us=N`). Debian ships no nbdkit-plugin.h with
/// nbdkit, so the plugin declares the leading part of `struct nbdkit_plugin` (API version 2)
/// itself; nbdkit reads only `_struct_size` bytes of it, which is how it stays compatible with
/// plugins built against older headers.
pub const MICROSECOND_DELAY_PLUGIN: &str = include_str!("usdelay.c");
