//! The read-only parts of a plan: [`Check`]s that refuse before anything is written, and the
//! run-time lookups ([`Resolve`]) whose answers later steps use.

use super::*;

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
    /// The PMem namespace exists and is in fsdax mode (or may be reconfigured); with DAX asked
    /// for, an fsdax namespace's `align` is a multiple of 2 MiB, which DAX needs to map files
    /// with 2 MiB pages (PMD faults): below that DAX = required is refused, optional noted.
    PmemFsdax { namespace: String, allow_reconfigure: bool, dax: DaxPolicy },
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
    /// The NVMe namespace bound to `device` is the one a target host of this run exports: its
    /// `/sys/block/<X>/wwid` is `uuid.<uuid>`, the `device_uuid` pgtier gave it there.
    NvmeNamespaceUuid { device: Value, uuid: String },
    /// The NVMe namespace bound to `device` has the UUID or NGUID the experiment file gives
    /// (`uuid`): its `/sys/block/<X>/{wwid,uuid,nguid}`.
    NvmeNamespaceNamed { device: Value, id: String },
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
                "check {device} is not mounted (in any mount namespace), not swap, not held by LVM/md/dm, not backing the running system, not exported by nvmet or LIO nor backing a loop device, not open or mapped by any process (/proc), not locked (flock){}",
                if *allow_wipe {
                    " (existing signatures may be wiped: allow_wipe = true)"
                } else {
                    ", and carries no filesystem or partition-table signature (blkid -p, wipefs --no-act)"
                }
            ),
            Check::PmemFsdax { namespace, allow_reconfigure, dax } => write!(
                f,
                "check ndctl list -N -i: namespace {namespace} exists and is in fsdax mode{}{}",
                if *allow_reconfigure { " (or may be reconfigured: allow_reconfigure = true)" } else { "" },
                if *dax == DaxPolicy::Off { "" } else { ", its align a multiple of 2 MiB (huge-page DAX mappings)" }
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
            Check::NvmeNamespaceUuid { device, uuid } => {
                write!(f, "check /sys/block/{device}/wwid is uuid.{uuid} (the namespace the target host exports)")
            }
            Check::NvmeNamespaceNamed { device, id } => {
                write!(f, "check /sys/block/{device}/{{wwid,uuid,nguid}} names {id} (the file's uuid)")
            }
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

impl Resolve {
    /// The lookup as a reader would do it, binding its answer to `<bind>`.
    pub fn describe(&self, bind: &str) -> String {
        match self {
            Resolve::Canonical { path } => {
                format!("readlink -f {} -> <{bind}>", path.display())
            }
            Resolve::PmemNamespace { namespace } => {
                format!("ndctl list -N -i: namespace {namespace} -> /dev/<blockdev> as <{bind}>")
            }
            Resolve::PartitionStart { disk, least_sectors } => format!(
                "read /sys/class/block/<{disk}>/{{queue/optimal_io_size,queue/minimum_io_size,queue/logical_block_size,alignment_offset}}: first sector at or after {least_sectors}s (512-byte) that parted's align-check opt accepts -> <{bind}>"
            ),
            Resolve::NvmeNamespace { nqn, nsid } => match nsid {
                Some(n) => format!(
                    "nvme list-subsys -o json; nvme list -o json: namespace {n} of subsystem {nqn} -> <{bind}>; udevadm settle"
                ),
                None => format!(
                    "nvme list-subsys -o json; nvme list -o json; nvme list-ns <controller>: the only namespace of subsystem {nqn} (refused if it has more: the file names none) -> <{bind}>; udevadm settle"
                ),
            },
            Resolve::Partition { disk, number } => {
                format!("wait for partition {number} of <{disk}> to appear -> <{bind}>")
            }
        }
    }
}
