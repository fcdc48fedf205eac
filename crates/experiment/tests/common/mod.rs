//! What the experiment crate's tests share: the repository, load options, and a small valid
//! experiment file.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use experiment::LoadOptions;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn opts(emulate: bool) -> LoadOptions {
    LoadOptions { emulate, configs_dir: repo().join("configs"), hardware_threads: 40 }
}

/// Two placements on an NVMe and a PMem device, one pgbench workload, an [emulate] section.
pub const BASE: &str = r#"
[experiment]
name = "t"
baseline = "fast"

[postgres]
profiles = ["default"]
memory_limits = ["unlimited"]

[[device]]
name = "d1"
class = "nvme"
path = "/dev/disk/by-id/nvme-A"

[[device]]
name = "d2"
class = "pmem"
namespace = "namespace0.0"

[[placement]]
name = "fast"
data = "d1"
wal = "d1"

[[placement]]
name = "pm"
data = "d2"
wal = "d2"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 100
clients = [1, 2, "20%", "99.9%"]
duration = "10min"

[emulate]
scale = 5
duration = "5s"
clients = [4]
memory_limits = ["256MiB"]
device_size = "1GiB"
[emulate.settings]
shared_buffers = "32MB"
"#;
