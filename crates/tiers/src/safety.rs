//! Refusals checked before the first destructive step: a device that is mounted (or any of its
//! partitions), is swap, is held by LVM/md/dm, backs the running system, carries a filesystem or
//! partition-table signature (unless wiping is allowed), is not a block device, or is not the
//! model/serial the experiment file names.

use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::CommandLine;
use journal::mounts::parse_proc_mounts;

use crate::inspect::blkid;
use crate::system::{FileKind, System};

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
        "{device} is a {actual_field} mismatch: the experiment file says {expected:?}, the device reports {actual:?}"
    )]
    IdentityMismatch { device: String, actual_field: String, expected: String, actual: String },
}

/// The kernel name of a device node (`/dev/nvme1n1p1` -> `nvme1n1p1`).
pub fn kernel_name(dev: &Path) -> String {
    dev.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The device and its partitions, as `/dev/...` paths.
fn device_and_partitions(sys: &mut dyn System, dev: &Path) -> Vec<PathBuf> {
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

/// Checks the model and serial the kernel reports against the expected ones.
pub fn check_identity(
    sys: &mut dyn System,
    dev: &Path,
    model: Option<&str>,
    serial: Option<&str>,
) -> Result<(), Refusal> {
    let base = Path::new("/sys/class/block").join(kernel_name(dev)).join("device");
    for (field, expected) in [("model", model), ("serial", serial)] {
        let Some(expected) = expected else { continue };
        let actual = sys.read_to_string(&base.join(field)).unwrap_or_default();
        if actual.trim() != expected.trim() {
            return Err(Refusal::IdentityMismatch {
                device: dev.display().to_string(),
                actual_field: field.to_string(),
                expected: expected.to_string(),
                actual: actual.trim().to_string(),
            });
        }
    }
    Ok(())
}

/// Checks that nothing uses `dev` or its partitions, and (unless `allow_wipe`) that it carries
/// no signature.
pub fn check_not_in_use(sys: &mut dyn System, dev: &Path, allow_wipe: bool) -> Result<(), Refusal> {
    let device = dev.display().to_string();
    let members = device_and_partitions(sys, dev);
    let canon = |sys: &mut dyn System, p: &Path| sys.canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let member_set: Vec<PathBuf> = members.iter().map(|m| canon(sys, m)).collect();

    // Holders first: a device under LVM/md/dm is in use even when not mounted directly.
    for m in &members {
        let holders =
            sys.list_dir(&Path::new("/sys/class/block").join(kernel_name(m)).join("holders")).unwrap_or_default();
        if !holders.is_empty() {
            return Err(Refusal::Held { device: device.clone(), holders: holders.join(", ") });
        }
    }

    let mounts = parse_proc_mounts(&sys.read_to_string(Path::new("/proc/self/mounts")).unwrap_or_default());
    for m in &mounts {
        if !m.source.starts_with("/dev/") {
            continue;
        }
        let src = canon(sys, Path::new(&m.source));
        if let Some(hit) = member_set.iter().find(|x| **x == src) {
            let via = (hit != &member_set[0]).then(|| hit.display().to_string());
            let target = m.target.display().to_string();
            if ["/", "/boot", "/boot/efi", "/usr", "/var"].contains(&target.as_str()) {
                return Err(Refusal::BacksSystem { device, target, via: src.display().to_string() });
            }
            return Err(Refusal::Mounted { device, target, via });
        }
    }

    let swaps = sys.read_to_string(Path::new("/proc/swaps")).unwrap_or_default();
    for line in swaps.lines().skip(1) {
        if let Some(src) = line.split_whitespace().next() {
            let src = canon(sys, Path::new(src));
            if let Some(hit) = member_set.iter().find(|x| **x == src) {
                let via = (hit != &member_set[0]).then(|| hit.display().to_string());
                return Err(Refusal::Swap { device, via });
            }
        }
    }

    if !allow_wipe {
        let mut found = Vec::new();
        for m in &members {
            let out = sys
                .run(&CommandLine::new("blkid").args(["-p", "-o", "export"]).arg(m), Duration::from_secs(60))
                .map(|o| o.stdout)
                .unwrap_or_default();
            for s in blkid::signatures(&blkid::parse_export(&out)) {
                let mut what = format!("a {} {} signature on {}", s.name, s.kind, m.display());
                if let Some(l) = s.label.filter(|l| !l.is_empty()) {
                    what.push_str(&format!(" (label {l})"));
                }
                found.push(what);
            }
        }
        if !found.is_empty() {
            return Err(Refusal::HasSignature { device, found: found.join(", ") });
        }
    }
    Ok(())
}
