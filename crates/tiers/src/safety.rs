//! Refusals checked before the first destructive step: a device that is mounted (or any of its
//! partitions), is swap, is held by LVM/md/dm, backs the running system, is exported by nvmet or
//! LIO or backs a loop device, is open or locked by a process, carries a filesystem or
//! partition-table signature (unless wiping is allowed), is not a block device, is not the
//! model/serial the experiment file names, or is named by two device entries.
//!
//! Every check fails closed: when a probe cannot answer (blkid or wipefs fails, sysfs cannot be
//! read where it must be), the device is refused rather than assumed empty.

use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::CommandLine;
use journal::mounts::parse_proc_mounts;

use crate::inspect::{blkid, nvme, wipefs};
use crate::system::{FileKind, System};

/// Mount points whose device backs the running system.
pub const SYSTEM_MOUNTS: [&str; 7] = ["/", "/boot", "/boot/efi", "/usr", "/var", "/home", "/opt"];

/// Why a device was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("{device} is not a block device ({what})")]
    NotBlockDevice { device: String, what: String },
    #[error("{device} is mounted at {target}{}", via.as_ref().map(|v| format!(" (through {v})")).unwrap_or_default())]
    Mounted { device: String, target: String, via: Option<String> },
    #[error("{device} backs the running system ({target} is mounted from {via})")]
    BacksSystem { device: String, target: String, via: String },
    #[error("{device} is in use as swap{}", via.as_ref().map(|v| format!(" (through {v})")).unwrap_or_default())]
    Swap { device: String, via: Option<String> },
    #[error("{device} is held by {holders} (LVM, md RAID or device-mapper)")]
    Held { device: String, holders: String },
    #[error(
        "{device} carries {found}; it may hold data. If it really may be wiped, set allow_wipe = true for this device in the experiment file"
    )]
    HasSignature { device: String, found: String },
    #[error(
        "{device}: {actual_field} mismatch: the experiment file says {expected:?}, the device reports {actual:?}; is this the right device?"
    )]
    IdentityMismatch { device: String, actual_field: String, expected: String, actual: String },
    #[error("{device}: could not be checked ({detail}); refusing rather than assuming it is empty")]
    ProbeFailed { device: String, detail: String },
    #[error(
        "{device} is busy: the kernel refused to open it exclusively (it is mounted in another mount namespace, or claimed by a driver, swap or device-mapper)"
    )]
    Busy { device: String },
    #[error(
        "{device} is served by the kernel ({paths}): nvmet, LIO and loop devices open a disk without claiming it, so it may be in use right now. pgtier never formats or exports a device an export or loop device uses, nor a partition or the whole disk of one, nor a namespace of a controller a passthru subsystem exports; remove that export (or detach the loop device, losetup -d) if nothing needs it"
    )]
    Exported { device: String, paths: String },
    #[error(
        "{device} is in use by another program: {processes}. A program using a disk directly (a virtual machine's raw disk, an iSCSI or NVMe target, a storage daemon, fio) would lose its data; pgtier never formats a disk, or a partition of it, that a process has open: stop it, or name another device"
    )]
    OpenedBy { device: String, processes: String },
    #[error(
        "{device} is locked: an exclusive flock cannot be taken on it{}, so another program holds a lock on it (udev's own lock lasts a moment; this one did not go away in 3 s); pgtier never formats a disk another program has locked: find it (/proc/locks) and stop it",
        via.as_ref().map(|v| format!(" (through {v})")).unwrap_or_default()
    )]
    Locked { device: String, via: Option<String> },
    #[error(
        "{device} is not the namespace pgtier exported: its wwid is {actual:?}, the export was given uuid.{expected}; another target answered at that address and subsystem NQN (nothing was written)"
    )]
    WrongNamespace { device: String, expected: String, actual: String },
    #[error(
        "subsystem {nqn} exposes more than one namespace ({namespaces}) and the experiment file names none; pgtier formats only the namespace it is told to, never the first listed: add nsid = <NSID> to the device (nothing was written)"
    )]
    NsidNeeded { nqn: String, namespaces: String },
    #[error(
        "subsystem {nqn}: {device} is the only namespace `nvme list` shows, but the controller did not confirm it is its only one ({why}), and the experiment file names none; add nsid = <NSID> (and uuid) to the device (nothing was written)"
    )]
    NsidUnconfirmed { nqn: String, device: String, why: String },
    #[error(
        "{device} is not the namespace the experiment file names: uuid {expected} was given, the namespace shows {actual}; check the device's `uuid` (`nvme id-ns {device} -o json` shows its nguid, /sys/block/<dev>/wwid its identifier); nothing was written"
    )]
    NamespaceNotNamed { device: String, expected: String, actual: String },
    #[error("{device} is open or mapped by process(es) {pids}")]
    OpenByProcess { device: String, pids: String },
    #[error(
        "NVMe subsystem {nqn} is already connected on this host ({controllers}); pgtier only uses connections it makes itself, so that its teardown (nvme disconnect -n) cannot cut off anyone else. If nothing uses it, disconnect it first"
    )]
    AlreadyConnected { nqn: String, controllers: String },
    #[error("devices {first} and {second} name the same block device ({device}); give each device its own disk")]
    SameDevice { first: String, second: String, device: String },
    #[error(
        "device {partition_of} ({partition}) is a partition of the disk of device {disk_of} ({disk}); give each device its own disk"
    )]
    PartitionOfOther { disk_of: String, disk: String, partition_of: String, partition: String },
}

/// The kernel name of a device node (`/dev/nvme1n1p1` -> `nvme1n1p1`).
pub fn kernel_name(dev: &Path) -> String {
    dev.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The sysfs directory of the whole disk that `dev` is (or is a partition of).
pub fn disk_sysfs_dir(sys: &mut dyn System, dev: &Path) -> PathBuf {
    let class = Path::new("/sys/class/block").join(kernel_name(dev));
    if sys.read_to_string(&class.join("partition")).is_ok()
        && let Ok(real) = sys.canonicalize(&class)
        && let Some(parent) = real.parent()
    {
        return parent.to_path_buf();
    }
    class
}

/// The device and its partitions, as `/dev/...` paths.
pub(crate) fn device_and_partitions(sys: &mut dyn System, dev: &Path) -> Vec<PathBuf> {
    let name = kernel_name(dev);
    let mut all = vec![dev.to_path_buf()];
    if let Ok(entries) = sys.list_dir(&Path::new("/sys/class/block").join(&name)) {
        for e in entries {
            if e.starts_with(&name) && e != name {
                all.push(PathBuf::from("/dev").join(e));
            }
        }
    }
    all
}

/// `MAJ:MIN` of a block device: from the node, else from sysfs.
fn dev_number(sys: &mut dyn System, dev: &Path) -> Option<(u32, u32)> {
    if let FileKind::BlockDevice { major, minor } = sys.file_kind(dev) {
        return Some((major, minor));
    }
    let text = sys.read_to_string(&Path::new("/sys/class/block").join(kernel_name(dev)).join("dev")).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Refuses two device entries (`name`, node) that name one block device, such as `/dev/nvme0n1`
/// and its `/dev/disk/by-id` link: it would be formatted and mounted twice. Nodes that are not
/// block devices are left to [`check_block_device`].
/// A disk and a partition of it are refused too (compared by the partition's parent in sysfs).
pub fn check_distinct(sys: &mut dyn System, devices: &[(&str, &Path)]) -> Result<(), Refusal> {
    // (number, the whole disk's number when it is a partition, name, node)
    type Seen<'a> = ((u32, u32), Option<(u32, u32)>, &'a str, &'a Path);
    let mut seen: Vec<Seen> = Vec::new();
    for (name, dev) in devices {
        let FileKind::BlockDevice { major, minor } = sys.file_kind(dev) else { continue };
        let number = (major, minor);
        let disk = disk_of_partition(sys, number);
        for (n, d, first, first_dev) in &seen {
            if *n == number {
                return Err(Refusal::SameDevice {
                    first: first.to_string(),
                    second: name.to_string(),
                    device: dev.display().to_string(),
                });
            }
            let (whole, part) = if disk == Some(*n) {
                ((*first, *first_dev), (*name, *dev))
            } else if *d == Some(number) {
                ((*name, *dev), (*first, *first_dev))
            } else {
                continue;
            };
            return Err(Refusal::PartitionOfOther {
                disk_of: whole.0.to_string(),
                disk: whole.1.display().to_string(),
                partition_of: part.0.to_string(),
                partition: part.1.display().to_string(),
            });
        }
        seen.push((number, disk, name, dev));
    }
    Ok(())
}

/// The whole disk's device number when `number` is a partition: `/sys/dev/block/M:m` resolves
/// to `.../block/<disk>/<partition>`, which has a `partition` file, and the disk's `dev` is
/// one level up.
fn disk_of_partition(sys: &mut dyn System, (major, minor): (u32, u32)) -> Option<(u32, u32)> {
    let node = sys.canonicalize(Path::new(&format!("/sys/dev/block/{major}:{minor}"))).ok()?;
    sys.read_to_string(&node.join("partition")).ok()?;
    let dev = sys.read_to_string(&node.parent()?.join("dev")).ok()?;
    let (a, b) = dev.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `/` first, then the other system mount points, then everything else.
fn system_rank(target: &str) -> usize {
    SYSTEM_MOUNTS.iter().position(|s| *s == target).unwrap_or(SYSTEM_MOUNTS.len())
}

/// Checks that `dev` is a block device.
pub fn check_block_device(sys: &mut dyn System, dev: &Path) -> Result<(), Refusal> {
    match sys.file_kind(dev) {
        FileKind::BlockDevice { .. } => Ok(()),
        other => Err(Refusal::NotBlockDevice {
            device: dev.display().to_string(),
            what: match other {
                FileKind::Missing => "it does not exist".into(),
                FileKind::File => "it is a regular file".into(),
                FileKind::Directory => "it is a directory".into(),
                _ => "it is some other kind of file".into(),
            },
        }),
    }
}

/// The serial number of the whole disk that `dev` is (or is a partition of), found the way
/// lsblk finds it (util-linux `lsblk.c`, `COL_SERIAL`): udev's database first (`SCSI_IDENT_SERIAL`,
/// `ID_SCSI_SERIAL`, `ID_SERIAL_SHORT`, `ID_SERIAL`), then sysfs `device/serial` (NVMe
/// controllers, and the `serial` of virtio disks), then a SCSI disk's VPD page 0x80
/// (`device/vpd_pg80`: a 4-byte header, then the serial; SATA/SAS `sd` disks have no
/// `device/serial` attribute).
pub fn disk_serial(sys: &mut dyn System, dev: &Path) -> Option<String> {
    let disk = disk_sysfs_dir(sys, dev);
    let clean = |s: &str| {
        let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
        (!s.is_empty()).then_some(s)
    };
    if let Ok(num) = sys.read_to_string(&disk.join("dev"))
        && let Ok(db) = sys.read_to_string(&Path::new("/run/udev/data").join(format!("b{}", num.trim())))
    {
        let prop = |key: &str| {
            db.lines()
                .find_map(|l| {
                    l.strip_prefix("E:").and_then(|kv| kv.strip_prefix(key)).and_then(|v| v.strip_prefix('='))
                })
                .and_then(clean)
        };
        if let Some(s) =
            ["SCSI_IDENT_SERIAL", "ID_SCSI_SERIAL", "ID_SERIAL_SHORT", "ID_SERIAL"].iter().find_map(|k| prop(k))
        {
            return Some(s);
        }
    }
    for attr in ["device/serial", "serial"] {
        if let Some(s) = sys.read_to_string(&disk.join(attr)).ok().and_then(|s| clean(&s)) {
            return Some(s);
        }
    }
    let page = sys.read_bytes(&disk.join("device/vpd_pg80")).ok()?;
    // SPC: byte 1 is the page code (0x80), bytes 2-3 the length of what follows.
    if page.len() < 4 || page[1] != 0x80 {
        return None;
    }
    let len = (u16::from_be_bytes([page[2], page[3]]) as usize).min(page.len() - 4);
    clean(&String::from_utf8_lossy(&page[4..4 + len]).replace('\0', " "))
}

/// Checks the model and serial the kernel reports against the expected ones: the model from
/// sysfs `device/model` of the whole disk (for an NVMe namespace that is its controller), the
/// serial as [`disk_serial`] finds it. A field that cannot be found is a mismatch.
pub fn check_identity(
    sys: &mut dyn System,
    dev: &Path,
    model: Option<&str>,
    serial: Option<&str>,
) -> Result<(), Refusal> {
    let base = disk_sysfs_dir(sys, dev).join("device");
    let mismatch = |field: &str, expected: &str, actual: String| Refusal::IdentityMismatch {
        device: dev.display().to_string(),
        actual_field: field.to_string(),
        expected: expected.to_string(),
        actual,
    };
    if let Some(expected) = model {
        let actual = sys.read_to_string(&base.join("model")).unwrap_or_default();
        if actual.trim() != expected.trim() {
            return Err(mismatch(
                "model",
                expected,
                if actual.trim().is_empty() {
                    format!("nothing ({} is missing or empty)", base.join("model").display())
                } else {
                    actual.trim().to_string()
                },
            ));
        }
    }
    if let Some(expected) = serial {
        match disk_serial(sys, dev) {
            Some(actual) if actual == expected.trim() => {}
            Some(actual) => return Err(mismatch("serial", expected, actual)),
            None => {
                return Err(mismatch(
                    "serial",
                    expected,
                    format!(
                        "nothing (no serial in udev's database, {}/serial or {}/vpd_pg80)",
                        base.display(),
                        base.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks that the NVMe namespace `dev` is the one exported with `device_uuid` `uuid`: the
/// kernel's `/sys/block/<X>/wwid` names a namespace by its UUID first (`uuid.<uuid>`, lower
/// case), before its NGUID or EUI-64. An unreadable wwid is a mismatch.
pub fn check_namespace_uuid(sys: &mut dyn System, dev: &Path, uuid: &str) -> Result<(), Refusal> {
    let real = sys.canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    let wwid = Path::new("/sys/class/block").join(kernel_name(&real)).join("wwid");
    let actual = match sys.read_to_string(&wwid) {
        Ok(s) => s.trim().to_string(),
        Err(e) => format!("unreadable ({}: {e})", wwid.display()),
    };
    if actual.eq_ignore_ascii_case(&format!("uuid.{uuid}")) {
        Ok(())
    } else {
        Err(Refusal::WrongNamespace { device: dev.display().to_string(), expected: uuid.to_string(), actual })
    }
}

/// Checks that NVMe namespace `dev` is the one named by `id`, a UUID or an NGUID (32 hex
/// digits, dashes and case ignored): the kernel's `wwid` (`uuid.<uuid>`, or `eui.<nguid>`
/// when the namespace has no UUID), `uuid` and `nguid` attributes are read, and any of them
/// naming `id` is enough.
pub fn check_namespace_named(sys: &mut dyn System, dev: &Path, id: &str) -> Result<(), Refusal> {
    let real = sys.canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    let class = Path::new("/sys/class/block").join(kernel_name(&real));
    let wanted = hex_id(id);
    let mut shown = Vec::new();
    for attr in ["wwid", "uuid", "nguid"] {
        let Ok(value) = sys.read_to_string(&class.join(attr)) else { continue };
        let value = value.trim().to_string();
        let bare = value.strip_prefix("uuid.").or_else(|| value.strip_prefix("eui.")).unwrap_or(&value);
        if !wanted.is_empty() && hex_id(bare) == wanted {
            return Ok(());
        }
        shown.push(format!("{attr} {value}"));
    }
    let actual = if shown.is_empty() {
        format!("nothing readable in {}/{{wwid,uuid,nguid}}", class.display())
    } else {
        shown.join(", ")
    };
    Err(Refusal::NamespaceNotNamed { device: dev.display().to_string(), expected: id.to_string(), actual })
}

/// A UUID or NGUID as bare lower-case hex digits (`"6B2C...-..."` -> `"6b2c..."`).
pub fn hex_id(id: &str) -> String {
    id.trim().chars().filter(|c| *c != '-').map(|c| c.to_ascii_lowercase()).collect()
}

/// Checks that nothing uses `dev` or its partitions, and (unless `allow_wipe`) that it carries
/// no signature. Order: holders, mounts (by path and by device number), swap, the kernel's
/// claim (O_EXCL), the kernel's exports (nvmet, LIO, loop), processes that have it open or
/// mapped, another's flock, signatures.
pub fn check_not_in_use(sys: &mut dyn System, dev: &Path, allow_wipe: bool) -> Result<(), Refusal> {
    let members = check_unused(sys, dev, true)?;
    if !allow_wipe {
        let device = dev.display().to_string();
        let found =
            signatures(sys, &members).map_err(|detail| Refusal::ProbeFailed { device: device.clone(), detail })?;
        if !found.is_empty() {
            return Err(Refusal::HasSignature { device, found: found.join(", ") });
        }
    }
    Ok(())
}

/// The same users again, immediately before mkfs: udev may have activated an old volume group
/// or array on the disk (or its new partition) since the checks, for LVM's event
/// autoactivation runs after `udevadm settle` returns. No flock (pgtier holds the disk's own
/// lock by then) and no signatures (the file's `allow_wipe` was judged before).
pub fn check_still_unused(sys: &mut dyn System, disk: &Path) -> Result<(), Refusal> {
    check_unused(sys, disk, false).map(|_| ())
}

/// Holders, mounts, swap, the O_EXCL open, the kernel's exports, processes and (with `lock`) a
/// flock, of `dev` and its partitions; returns those members.
fn check_unused(sys: &mut dyn System, dev: &Path, lock: bool) -> Result<Vec<PathBuf>, Refusal> {
    let device = dev.display().to_string();
    let members = device_and_partitions(sys, dev);
    let canon = |sys: &mut dyn System, p: &Path| sys.canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let member_set: Vec<PathBuf> = members.iter().map(|m| canon(sys, m)).collect();
    let numbers: Vec<Option<(u32, u32)>> = members.iter().map(|m| dev_number(sys, m)).collect();

    // Holders first: a device under LVM/md/dm is in use even when not mounted directly.
    // An unreadable holders directory is a failed check, not an empty one (every block device
    // has one in sysfs).
    for m in &members {
        let dir = Path::new("/sys/class/block").join(kernel_name(m)).join("holders");
        let holders = sys.list_dir(&dir).map_err(|e| Refusal::ProbeFailed {
            device: device.clone(),
            detail: format!("its holders ({}) could not be read: {e}", dir.display()),
        })?;
        if !holders.is_empty() {
            return Err(Refusal::Held { device: device.clone(), holders: holders.join(", ") });
        }
    }

    let mounted = |target: String, hit: usize| {
        let via = (hit != 0).then(|| member_set[hit].display().to_string());
        if SYSTEM_MOUNTS.contains(&target.as_str()) {
            Refusal::BacksSystem { device: device.clone(), target, via: member_set[hit].display().to_string() }
        } else {
            Refusal::Mounted { device: device.clone(), target, via }
        }
    };
    if let Some((target, hit)) = mounted_member(sys, &numbers, &member_set) {
        return Err(mounted(target, hit));
    }
    if let Some(hit) = swap_member(sys, &member_set) {
        let via = (hit != 0).then(|| member_set[hit].display().to_string());
        return Err(Refusal::Swap { device, via });
    }
    // The kernel's own answer, which also sees mounts of other mount namespaces: a block device
    // that is mounted or claimed anywhere cannot be opened with O_EXCL.
    for m in &members {
        match sys.busy(m) {
            Ok(false) => {}
            Ok(true) => {
                let device = if m == dev { device } else { format!("{device} (through {})", m.display()) };
                return Err(Refusal::Busy { device });
            }
            Err(e) => return Err(Refusal::ProbeFailed { device, detail: format!("open {} O_EXCL: {e}", m.display()) }),
        }
    }

    check_no_other_user(sys, dev, &members, &numbers, lock)?;
    Ok(members)
}

/// Users the kernel does not claim the device for (see [`crate::users`]): the kernel's exports
/// (nvmet, LIO, loop devices), processes that have the device or a partition of it open or
/// mapped (asked again for about 2 s, so that udev's short probe of a disk is not taken for a
/// user), and a `flock` another open file holds.
fn check_no_other_user(
    sys: &mut dyn System,
    dev: &Path,
    members: &[PathBuf],
    numbers: &[Option<(u32, u32)>],
    lock: bool,
) -> Result<(), Refusal> {
    let device = dev.display().to_string();
    let exports = sys.kernel_users(dev).map_err(|e| Refusal::ProbeFailed {
        device: device.clone(),
        detail: format!("its nvmet, LIO and loop exports: {e}"),
    })?;
    if !exports.is_empty() {
        return Err(Refusal::Exported { device, paths: exports.join(", ") });
    }
    let wanted: Vec<(u32, u32)> = numbers.iter().flatten().copied().collect();
    if wanted.len() != members.len() {
        let missing: Vec<String> =
            members.iter().zip(numbers).filter(|(_, n)| n.is_none()).map(|(m, _)| m.display().to_string()).collect();
        return Err(Refusal::ProbeFailed {
            device,
            detail: format!("the device number of {} could not be read", missing.join(", ")),
        });
    }
    // A partition named alone: a program that has its whole disk open (a VM's raw disk) uses
    // it too, and the whole disk is where a lock is taken.
    let mut nodes: Vec<PathBuf> = members.to_vec();
    let mut wanted = wanted;
    if let Some(parent) = wanted.first().and_then(|n| disk_of_partition(sys, *n)) {
        wanted.push(parent);
        nodes.push(PathBuf::from("/dev").join(kernel_name(&disk_sysfs_dir(sys, dev))));
    }
    // A device some process has open in every scan is in use, whichever process it is (a
    // script that runs fio job after job); one seen for a moment only (udev's probe) is not.
    let mut still: Vec<crate::users::Opener> = Vec::new();
    for attempt in 0..5 {
        let found =
            sys.openers(&wanted).map_err(|e| Refusal::ProbeFailed { device: device.clone(), detail: e.to_string() })?;
        still = if attempt == 0 {
            found
        } else {
            let held: Vec<(u32, u32)> = still.iter().map(|o| o.device).collect();
            found.into_iter().filter(|f| held.contains(&f.device)).collect()
        };
        if still.is_empty() {
            break;
        }
        if attempt < 4 {
            sys.sleep(Duration::from_millis(500));
        }
    }
    if !still.is_empty() {
        let named: Vec<String> = still
            .iter()
            .map(|o| {
                let node = wanted
                    .iter()
                    .position(|n| *n == o.device)
                    .filter(|i| *i != 0)
                    .map(|i| nodes[i].display().to_string());
                match node {
                    Some(m) => format!("{o} (through {m})"),
                    None => o.to_string(),
                }
            })
            .collect();
        return Err(Refusal::OpenedBy { device, processes: named.join("; ") });
    }
    for m in nodes.iter().filter(|_| lock) {
        match sys.flock_free(m) {
            Ok(true) => {}
            Ok(false) => {
                let via = (m != dev).then(|| m.display().to_string());
                return Err(Refusal::Locked { device, via });
            }
            Err(e) => return Err(Refusal::ProbeFailed { device, detail: format!("flock {}: {e}", m.display()) }),
        }
    }
    Ok(())
}

/// Where a member of the device (by index in `member_set`, the canonical paths, and `numbers`,
/// their device numbers) is mounted, a system mount point first: by device number in
/// /proc/self/mountinfo (which also catches a root filesystem shown as /dev/root), then by
/// source path in /proc/self/mounts.
fn mounted_member(
    sys: &mut dyn System,
    numbers: &[Option<(u32, u32)>],
    member_set: &[PathBuf],
) -> Option<(String, usize)> {
    if let Ok(info) = sys.read_to_string(Path::new("/proc/self/mountinfo")) {
        let mut hits: Vec<(String, usize)> = Vec::new();
        for line in info.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(num), Some(target)) = (f.get(2), f.get(4)) else { continue };
            let Some((a, b)) = num.split_once(':') else { continue };
            let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) else { continue };
            if let Some(hit) = numbers.iter().position(|n| *n == Some((a, b))) {
                let target = journal::mounts::unescape(target);
                hits.push((target, hit));
            }
        }
        // A system mount point is the more important thing to say.
        hits.sort_by_key(|(t, _)| system_rank(t));
        if let Some(hit) = hits.into_iter().next() {
            return Some(hit);
        }
    }
    let mounts = parse_proc_mounts(&sys.read_to_string(Path::new("/proc/self/mounts")).unwrap_or_default());
    let mut hits: Vec<(String, usize)> = Vec::new();
    for m in &mounts {
        if !m.source.starts_with("/dev/") {
            continue;
        }
        let src = sys.canonicalize(Path::new(&m.source)).unwrap_or_else(|_| PathBuf::from(&m.source));
        if let Some(hit) = member_set.iter().position(|x| *x == src) {
            hits.push((m.target.display().to_string(), hit));
        }
    }
    hits.sort_by_key(|(t, _)| system_rank(t));
    hits.into_iter().next()
}

/// The member of the device (index in `member_set`) that /proc/swaps lists, if any.
fn swap_member(sys: &mut dyn System, member_set: &[PathBuf]) -> Option<usize> {
    let swaps = sys.read_to_string(Path::new("/proc/swaps")).unwrap_or_default();
    swaps.lines().skip(1).filter_map(|line| line.split_whitespace().next()).find_map(|src| {
        let src = sys.canonicalize(Path::new(src)).unwrap_or_else(|_| PathBuf::from(src));
        member_set.iter().position(|x| *x == src)
    })
}

/// Every signature on the members, as phrases: `blkid -p` (exit 0 = found, 2 = nothing) and
/// `wipefs -J --no-act` (which also lists secondary signatures such as a backup GPT). Any other
/// outcome is an error: the caller refuses the device.
fn signatures(sys: &mut dyn System, members: &[PathBuf]) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    for m in members {
        let cmd = CommandLine::new("blkid").args(["-p", "-o", "export"]).arg(m);
        let out = sys.run(&cmd, Duration::from_secs(60)).map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        match out.status {
            0 => {
                for s in blkid::signatures(&blkid::parse_export(&out.stdout)) {
                    let mut what = format!("a {} {} signature on {}", s.name, s.kind, m.display());
                    if let Some(l) = s.label.filter(|l| !l.is_empty()) {
                        what.push_str(&format!(" (label {l})"));
                    }
                    names.push(s.name.to_lowercase());
                    found.push(what);
                }
            }
            2 => {}
            s => return Err(format!("`{cmd}` exited with status {s}: {}", out.stderr.trim())),
        }
        let cmd = CommandLine::new("wipefs").args(["-J", "--no-act"]).arg(m);
        let out = sys.run(&cmd, Duration::from_secs(60)).map_err(|e| e.to_string())?;
        if out.status != 0 {
            return Err(format!("`{cmd}` exited with status {}: {}", out.status, out.stderr.trim()));
        }
        let listed = wipefs::parse_json(&out.stdout).map_err(|e| e.to_string())?;
        for s in listed {
            // blkid names the protective MBR of a GPT disk "gpt"; wipefs lists it as "PMBR".
            let kind = s.kind.to_lowercase();
            if names.contains(&kind) || (kind == "pmbr" && names.iter().any(|n| n == "gpt")) {
                continue;
            }
            names.push(kind);
            found.push(format!("a {} signature at offset {:#x} of {} (wipefs)", s.kind, s.offset, m.display()));
        }
    }
    Ok(found)
}

/// Checks that no process has `dev` (a character device such as `/dev/dax0.0`) open or mapped.
pub fn check_not_open(sys: &mut dyn System, dev: &Path) -> Result<(), Refusal> {
    let wanted = dev.display().to_string();
    let mut pids = Vec::new();
    for entry in sys.list_dir(Path::new("/proc")).unwrap_or_default() {
        if !entry.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let proc_dir = Path::new("/proc").join(&entry);
        let mapped = sys
            .read_to_string(&proc_dir.join("maps"))
            .map(|m| m.lines().any(|l| l.split_whitespace().nth(5) == Some(wanted.as_str())))
            .unwrap_or(false);
        let open = !mapped && {
            let fds = sys.list_dir(&proc_dir.join("fd")).unwrap_or_default();
            fds.iter().any(|fd| sys.canonicalize(&proc_dir.join("fd").join(fd)).is_ok_and(|t| t == dev))
        };
        if mapped || open {
            pids.push(entry);
        }
    }
    if pids.is_empty() { Ok(()) } else { Err(Refusal::OpenByProcess { device: wanted, pids: pids.join(", ") }) }
}

/// Checks that subsystem `nqn` is not connected already (from `nvme list-subsys -o json`).
pub fn check_nvme_not_connected(subsystems: &[nvme::NvmeSubsystem], nqn: &str) -> Result<(), Refusal> {
    let hits: Vec<String> = subsystems
        .iter()
        .filter(|s| s.nqn.trim() == nqn.trim())
        .map(|s| {
            let ctrls: Vec<String> = s.controllers.iter().map(|c| c.name.clone()).collect();
            if ctrls.is_empty() { s.name.clone() } else { format!("{}: {}", s.name, ctrls.join(", ")) }
        })
        .collect();
    if hits.is_empty() {
        Ok(())
    } else {
        Err(Refusal::AlreadyConnected { nqn: nqn.to_string(), controllers: hits.join("; ") })
    }
}
