//! What a dry run can tell, without root and without touching anything, that the real run would
//! refuse: a device the file names that is not on this machine (a by-id path, a PMem namespace),
//! a golden copy that does not fit where it goes, and memory the machine does not have (servers,
//! memory limits, emulated devices held in memory). The dry run ends with these, one
//! `would refuse: ...` line each, and exits non-zero when there is any. The real run checks
//! all of this again, and more (signatures, holders, mounts), before anything is written.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use experiment::GoldenCopy;
use tiers::plan::human_bytes;
use tiers::spec::{DeviceSpec, RealDevice};

use super::golden;
use super::setup::Setup;
use crate::paths;

/// Every refusal the dry run of `s` can see, in the order of the file's devices, then the
/// golden copy's room.
pub fn refusals(s: &Setup) -> Vec<String> {
    let mut out = Vec::new();
    if !s.exp.emulated {
        for d in s.exp.used_devices() {
            out.extend(missing_device(d, Path::new("/sys/bus/nd/devices")));
        }
    }
    out.extend(golden_room(s));
    out.extend(super::preflight::memory_problems(&s.exp, crate::host::memory_bytes()));
    out
}

/// Why real device `d` is not usable here as far as a look at /dev and sysfs can tell, if it
/// is not; `nd_devices` is where the kernel lists PMem namespaces. A device served by a target
/// host of the file, and an NVMe/TCP subsystem (reached only by connecting), are not looked at.
fn missing_device(d: &DeviceSpec, nd_devices: &Path) -> Option<String> {
    if d.target_host.is_some() {
        return None;
    }
    match &d.real {
        RealDevice::Local { path, .. } => match std::fs::metadata(path) {
            Err(_) => Some(format!(
                "device {}: {} does not exist on this machine (`ls -l /dev/disk/by-id/` lists the drives here by id)",
                d.name,
                path.display()
            )),
            Ok(m) if !m.file_type().is_block_device() => {
                Some(format!("device {}: {} is not a block device", d.name, path.display()))
            }
            Ok(_) => None,
        },
        RealDevice::Pmem { namespace, .. } => {
            let found = nd_devices.join(namespace).exists() || Path::new("/dev").join(namespace).exists();
            (!found).then(|| {
                format!(
                    "device {}: PMem namespace {namespace} does not exist on this machine (`ndctl list -N` lists the namespaces here)",
                    d.name
                )
            })
        }
        RealDevice::NvmeTcp(_) => None,
    }
}

/// The golden copy's room, where a dry run can measure it: the state directory's or the named
/// directory's free space, an emulated device's size, a real device's size when it is here.
fn golden_room(s: &Setup) -> Option<String> {
    let exp = &s.exp;
    let need = exp.golden_room().with_margin();
    let short = |place: String, room: u64| {
        (room < need).then(|| {
            format!(
                "the golden copy of the data sets needs about {} with a 5% margin, and {place} has {}; set [experiment] golden_copy to a device of this file or a directory with room",
                human_bytes(need),
                human_bytes(room)
            )
        })
    };
    match &exp.golden_copy {
        GoldenCopy::StateDir => {
            let dir = paths::work_root();
            let free = runner::dataset::available_bytes(&dir)?;
            short(format!("the state directory ({}; PGTIER_STATE_DIR moves it)", dir.display()), free)
        }
        GoldenCopy::Dir { path, .. } => {
            if !path.is_dir() && !path.parent().is_some_and(Path::is_dir) {
                return Some(format!(
                    "the golden copy's directory {}: neither it nor its parent exists on this machine",
                    path.display()
                ));
            }
            let free = runner::dataset::available_bytes(path)?;
            short(format!("the filesystem of {}", path.display()), free)
        }
        GoldenCopy::Device { name, .. } => {
            let d = exp.device(name)?;
            let size = if exp.emulated { d.emulation.size_bytes } else { golden::real_size(d)?.1 };
            short(format!("device {name} ({} after XFS's own use)", human_bytes(size / 100 * 97)), size / 100 * 97)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(path: &str) -> DeviceSpec {
        let toml = format!(
            "[experiment]\nname = \"t\"\nbaseline = \"p\"\n[[device]]\nname = \"d\"\nclass = \"nvme\"\npath = \"{path}\"\n[[placement]]\nname = \"p\"\ndata = \"d\"\nwal = \"d\"\n[[workload]]\nname = \"w\"\nkind = \"pgbench\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"1s\"\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.toml");
        std::fs::write(&file, toml).unwrap();
        let opts = experiment::LoadOptions {
            emulate: false,
            configs_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs"),
            hardware_threads: 2,
        };
        let exp = experiment::load(&file, &opts).unwrap_or_else(|e| panic!("{e}"));
        exp.devices.into_iter().next().unwrap()
    }

    #[test]
    fn a_device_that_is_not_here_is_named_with_its_path() {
        let nd = tempfile::tempdir().unwrap();
        let why = missing_device(&local("/dev/disk/by-id/nvme-NOT_HERE_SERIAL"), nd.path()).unwrap();
        assert!(why.contains("device d: /dev/disk/by-id/nvme-NOT_HERE_SERIAL does not exist on this machine"), "{why}");
        // Not a block device: a character device.
        let why = missing_device(&local("/dev/null"), nd.path()).unwrap();
        assert_eq!(why, "device d: /dev/null is not a block device");
    }
}
