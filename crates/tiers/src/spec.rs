//! What a device should be: its class, the real device it names, its filesystem, and how it is
//! emulated on a machine that lacks it. Built by the experiment crate from the experiment file.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// The storage class a device stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceClass {
    /// A local block device (NVMe, SAS/SATA SSD, HDD, RAID volume).
    Nvme,
    /// Persistent memory in AppDirect mode, as an fsdax namespace mounted with DAX.
    Pmem,
    /// A namespace of a remote NVMe subsystem reached over TCP.
    NvmeTcp,
}

impl DeviceClass {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceClass::Nvme => "nvme",
            DeviceClass::Pmem => "pmem",
            DeviceClass::NvmeTcp => "nvme-tcp",
        }
    }

    /// The emulation backing used when the file names none.
    pub fn default_backing(self) -> Backing {
        match self {
            DeviceClass::Nvme => Backing::LoopFile,
            DeviceClass::Pmem => Backing::Zram,
            DeviceClass::NvmeTcp => Backing::Nbd,
        }
    }
}

impl fmt::Display for DeviceClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether DAX is asked for on a mount, and what happens when the kernel does not honour it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DaxPolicy {
    /// Do not ask for DAX.
    Off,
    /// Ask for `dax=always`; if the kernel falls back to page-cache I/O, carry on and say so.
    Optional,
    /// Ask for `dax=always`; if the kernel falls back, fail the run.
    Required,
}

/// How a device is emulated with `--emulate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backing {
    /// A sparse file on local disk behind a loop device with direct I/O (stands in for NVMe).
    LoopFile,
    /// A RAM-backed zram block device (stands in for PMem).
    Zram,
    /// A file on tmpfs behind a loop device (another stand-in for PMem).
    TmpfsLoop,
    /// A file served by nbdkit over TCP from its own network namespace, attached with nbdfuse
    /// and a loop device (stands in for NVMe over TCP).
    Nbd,
}

impl Backing {
    pub fn as_str(self) -> &'static str {
        match self {
            Backing::LoopFile => "loop-file",
            Backing::Zram => "zram",
            Backing::TmpfsLoop => "tmpfs-loop",
            Backing::Nbd => "nbd",
        }
    }
}

/// The real device a spec names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RealDevice {
    /// A local block device, best named by a stable path such as `/dev/disk/by-id/...`.
    Local { path: PathBuf, model: Option<String>, serial: Option<String> },
    /// An fsdax PMem namespace, found with `ndctl list`.
    Pmem {
        /// ndctl namespace name (`namespace0.0`) or block device name (`pmem0`).
        namespace: String,
        /// Allow `ndctl create-namespace -f -e NS -m fsdax` when the namespace is in another mode.
        allow_reconfigure: bool,
    },
    /// An NVMe/TCP subsystem.
    NvmeTcp(NvmeTcpTarget),
}

/// Where an NVMe/TCP subsystem lives and how to authenticate to it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NvmeTcpTarget {
    pub address: String,
    pub port: u16,
    pub nqn: String,
    /// The host NQN and host ID pgtier connects as. Both or neither: a host NQN without its ID
    /// is paired by nvme-cli with the machine's /etc/nvme/hostid, a pair Linux 6.5 and later
    /// reject (EINVAL) once that ID is known with another NQN. With neither, pgtier reads both
    /// from /etc/nvme/hostnqn and /etc/nvme/hostid and passes them explicitly. A
    /// `nqn.2014-08.org.nvmexpress:uuid:<uuid>` host NQN alone implies its UUID as the ID (as
    /// libnvme derives it).
    pub host_nqn: Option<String>,
    pub host_id: Option<String>,
    /// Where the DH-HMAC-CHAP secret comes from; the secret itself is never stored.
    pub dhchap_secret: Option<SecretSource>,
    /// Which namespace of the subsystem to use (NSID). Without it the subsystem must expose
    /// exactly one namespace: with more, pgtier refuses rather than pick one.
    pub nsid: Option<u32>,
    /// The namespace's UUID or NGUID (as `nvme id-ns` and `/sys/block/<dev>/wwid` show it),
    /// checked once the namespace is found: a different namespace is refused before anything
    /// is written.
    pub uuid: Option<String>,
}

/// A secret read at execution time; only its source is ever printed or recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum SecretSource {
    Env { name: String },
    File { path: PathBuf },
}

impl SecretSource {
    /// The secret itself, read now (the environment variable, or the file's contents trimmed).
    pub fn read(&self) -> Result<String, String> {
        match self {
            SecretSource::Env { name } => std::env::var(name)
                .map_err(|_| format!("environment variable {name} (the DH-HMAC-CHAP secret) is not set")),
            SecretSource::File { path } => std::fs::read_to_string(path)
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("read secret file {}: {e}", path.display())),
        }
    }
}

impl fmt::Display for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::Env { name } => write!(f, "<secret from ${name}>"),
            SecretSource::File { path } => write!(f, "<secret from {}>", path.display()),
        }
    }
}

/// Optional GPT partitioning before mkfs (seed 003: `mklabel gpt`, `mkpart primary 2048s 100%`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionSpec {
    /// The least start of the partition, in 512-byte sectors (2048 = 1 MiB). The executor moves
    /// it up to the device's alignment (`queue/optimal_io_size`, `alignment_offset`: a RAID
    /// volume whose stripe width does not divide 1 MiB fails `parted align-check opt` at 2048s),
    /// and starts PMem partitions at 2 MiB at least, so that huge-page DAX mappings stay aligned.
    pub start_sector: u64,
}

/// Caps that make a device behave like a slower one (cgroup blkio throttle).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Throttle {
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bytes_per_sec: Option<u64>,
    pub write_bytes_per_sec: Option<u64>,
}

impl Throttle {
    pub fn is_empty(&self) -> bool {
        self.read_iops.is_none()
            && self.write_iops.is_none()
            && self.read_bytes_per_sec.is_none()
            && self.write_bytes_per_sec.is_none()
    }
}

/// Filling the device before the run so that an SSD is measured in steady state (seed 002).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Precondition {
    /// Fraction of the device to write sequentially before mkfs (1.0 = whole device).
    pub fill_fraction: f64,
}

/// How the device is emulated with `--emulate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Emulation {
    pub backing: Backing,
    pub size_bytes: u64,
    /// Added latency per I/O (nbd backing only).
    pub latency: Option<Duration>,
    /// zram compression algorithm.
    pub zram_algorithm: String,
    /// Put nbdkit's error filter in front of the device (nbd backing): I/O fails with EIO while
    /// the device's error file exists, so a fault can be switched on mid-run.
    pub error_injection: bool,
}

/// One device of an experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceSpec {
    pub name: String,
    pub class: DeviceClass,
    pub description: Option<String>,
    pub real: RealDevice,
    /// Extra mkfs.xfs options, as separate arguments.
    pub mkfs_options: Vec<String>,
    /// Mount options (`noatime`, `inode64`, `allocsize=16m`, `logbsize=256k`, ...).
    pub mount_options: Vec<String>,
    pub dax: DaxPolicy,
    pub partition: Option<PartitionSpec>,
    /// The experiment file explicitly allows wiping whatever this device holds.
    pub allow_wipe: bool,
    /// Discard (TRIM) the whole device before mkfs.
    pub discard: bool,
    pub precondition: Option<Precondition>,
    pub throttle: Option<Throttle>,
    pub emulation: Emulation,
    /// The storage target host that serves this NVMe/TCP device (`target = "<host>"`), when it
    /// is another machine of the experiment; None: the target is not pgtier's (real) or a
    /// network namespace of this machine (`--emulate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_host: Option<TargetHost>,
}

/// A `[[host]]` with the `target` role serving a device: on real hardware pgtier exports
/// `export` there with the kernel's NVMe/TCP target (nvmet, configfs); with `--emulate` it runs
/// the nbdkit stand-in there. Either way the server reaches it at `address`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetHost {
    /// The host's name in the experiment file.
    pub name: String,
    /// The host's address facing the server: the SSH destination, where nbdkit or the nvmet
    /// port listens.
    pub address: String,
    /// The block device on the host that nvmet exports (real hardware).
    pub export: PathBuf,
    /// Admit any host that reaches the port (`attr_allow_any_host` 1), asked for by name in
    /// the experiment file; by default only this machine's host NQN is allowed.
    pub allow_any_host: bool,
    /// The exported device's model and serial, as the experiment file gives them (checked on
    /// the host before anything is exported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_serial: Option<String>,
    /// How commands reach the host (set by the controller for a run; not part of the resolved
    /// configuration, since it names the run's control socket).
    #[serde(skip)]
    pub shell: Option<RemoteShell>,
}

/// How a command reaches another host: `ssh <options> <destination> -- <words, quoted>` over
/// the run's multiplexed connection (opened by the controller before the plan runs), and the
/// run's own directory there (mode 0700, removed at teardown by the controller's undo).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteShell {
    /// The host's name in the experiment file.
    pub host: String,
    /// Every ssh option of every command to the host (its control socket included).
    pub options: Vec<String>,
    /// `user@address`.
    pub destination: String,
    /// The run's directory on the host.
    pub work_dir: String,
}

impl DeviceSpec {
    /// A device with plain settings: mounted `noatime`, DAX required on PMem and off elsewhere,
    /// nothing wiped, partitioned, discarded, preconditioned or throttled; emulated by its class's
    /// default backing, 512 MiB, lz4 for zram, no added latency. Callers change what they need.
    pub fn new(name: &str, class: DeviceClass, real: RealDevice) -> DeviceSpec {
        DeviceSpec {
            name: name.into(),
            class,
            description: None,
            real,
            mkfs_options: vec![],
            mount_options: vec!["noatime".into()],
            dax: if class == DeviceClass::Pmem { DaxPolicy::Required } else { DaxPolicy::Off },
            partition: None,
            allow_wipe: false,
            discard: false,
            precondition: None,
            throttle: None,
            emulation: Emulation {
                backing: class.default_backing(),
                size_bytes: 512 << 20,
                latency: None,
                zram_algorithm: "lz4".into(),
                error_injection: false,
            },
            target_host: None,
        }
    }
}
