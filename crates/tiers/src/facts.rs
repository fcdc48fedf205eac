//! What a provisioned device is, as the kernel reports it (sysfs) and as XFS was made on it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use journal::CommandLine;
use serde::Serialize;

use crate::inspect::xfs::{self, XfsInfo};
use crate::system::System;

/// Facts recorded for every device in the results.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceFacts {
    /// Kernel name of the block device holding the filesystem (`loop3`, `zram1`, `nvme1n1p1`).
    pub kernel_name: String,
    /// The whole disk when the filesystem is on a partition.
    pub disk: String,
    pub size_bytes: Option<u64>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub firmware: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    /// The queue advertises DAX support.
    pub queue_dax: Option<bool>,
    /// For loop devices: the backing file and whether direct I/O is on.
    pub loop_backing_file: Option<PathBuf>,
    pub loop_direct_io: Option<bool>,
    /// `xfs_info` of the mounted filesystem, raw and parsed.
    pub xfs_info_raw: Option<String>,
    pub xfs_info: Option<XfsInfo>,
}

fn read_trim(sys: &mut dyn System, p: &Path) -> Option<String> {
    sys.read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Collects the facts of `device` (a `/dev/...` path) mounted at `mountpoint`.
pub fn collect(sys: &mut dyn System, device: &Path, mountpoint: Option<&Path>) -> DeviceFacts {
    let real = sys.canonicalize(device).unwrap_or_else(|_| device.to_path_buf());
    let name = real.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let class = Path::new("/sys/class/block").join(&name);
    let disk = crate::safety::disk_sysfs_dir(sys, &real)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone());
    let disk_dir = Path::new("/sys/class/block").join(&disk);
    let queue = disk_dir.join("queue");
    let mut f = DeviceFacts {
        kernel_name: name.clone(),
        disk: disk.clone(),
        size_bytes: read_trim(sys, &class.join("size")).and_then(|s| s.parse::<u64>().ok()).map(|s| s * 512),
        model: read_trim(sys, &disk_dir.join("device/model")),
        serial: crate::safety::disk_serial(sys, &real),
        firmware: read_trim(sys, &disk_dir.join("device/firmware_rev"))
            .or_else(|| read_trim(sys, &disk_dir.join("device/rev"))),
        rotational: read_trim(sys, &queue.join("rotational")).map(|s| s == "1"),
        scheduler: read_trim(sys, &queue.join("scheduler")),
        logical_block_size: read_trim(sys, &queue.join("logical_block_size")).and_then(|s| s.parse().ok()),
        physical_block_size: read_trim(sys, &queue.join("physical_block_size")).and_then(|s| s.parse().ok()),
        queue_dax: read_trim(sys, &queue.join("dax")).map(|s| s == "1"),
        loop_backing_file: read_trim(sys, &disk_dir.join("loop/backing_file")).map(PathBuf::from),
        loop_direct_io: read_trim(sys, &disk_dir.join("loop/dio")).map(|s| s == "1"),
        ..Default::default()
    };
    if let Some(mp) = mountpoint
        && let Ok(out) = sys.run(&CommandLine::new("xfs_info").arg(mp), Duration::from_secs(60))
        && out.status == 0
    {
        f.xfs_info = xfs::parse_info(&out.stdout).ok();
        f.xfs_info_raw = Some(out.stdout);
    }
    f
}
