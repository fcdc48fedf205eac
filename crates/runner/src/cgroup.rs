//! A cgroup for the PostgreSQL server: an optional memory limit (so that reads reach the device
//! instead of the page cache) and accounting of the server's memory and CPU. cgroup v1 (memory
//! and cpuacct hierarchies) and v2 (unified) are both supported.

use std::fs::File;
use std::path::{Path, PathBuf};

use journal::{Journal, RecordId, Undo};

use crate::RunnerError;
use crate::error::IoContext;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1: separate memory, (optional) cpuacct, blkio and cpu (quota) hierarchies.
    V1 { memory: PathBuf, cpuacct: Option<PathBuf>, blkio: Option<PathBuf>, cpu: Option<PathBuf> },
    /// cgroup v2: one unified hierarchy.
    V2 { root: PathBuf },
}

impl Hierarchy {
    /// Looks at /sys/fs/cgroup.
    pub fn detect() -> Option<Hierarchy> {
        let root = Path::new("/sys/fs/cgroup");
        if root.join("cgroup.controllers").exists() {
            return Some(Hierarchy::V2 { root: root.to_path_buf() });
        }
        let memory = root.join("memory");
        if memory.join("memory.limit_in_bytes").exists() {
            let cpuacct =
                [root.join("cpuacct"), root.join("cpu,cpuacct")].into_iter().find(|p| p.join("cpuacct.usage").exists());
            let blkio = Some(root.join("blkio")).filter(|p| p.join("blkio.throttle.read_iops_device").exists());
            let cpu =
                [root.join("cpu"), root.join("cpu,cpuacct")].into_iter().find(|p| p.join("cpu.cfs_quota_us").exists());
            return Some(Hierarchy::V1 { memory, cpuacct, blkio, cpu });
        }
        None
    }
}

/// The server's cgroup (one per server start).
#[derive(Debug)]
pub struct ServerCgroup {
    pub hierarchy: Hierarchy,
    /// Memory (v1) or unified (v2) directory.
    pub dir: PathBuf,
    /// cpuacct directory (v1 only).
    pub cpu_dir: Option<PathBuf>,
    /// blkio directory (v1 only, when throttles are set).
    pub blkio_dir: Option<PathBuf>,
    /// cpu directory (v1 only, when a CPU quota is set and the cpu hierarchy is not cpuacct's).
    pub quota_dir: Option<PathBuf>,
    pub limit_bytes: Option<u64>,
    /// The CPU quota, in CPUs (`handicap_cpus`); None: none.
    pub cpu_quota: Option<f64>,
    /// Journal records of the directories this cgroup created, oldest first.
    records: Vec<RecordId>,
}

/// An I/O cap on one block device for the server's processes (emulates a slower device).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BlkioThrottle {
    pub device: String,
    pub major: u32,
    pub minor: u32,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bytes_per_sec: Option<u64>,
    pub write_bytes_per_sec: Option<u64>,
}

impl BlkioThrottle {
    /// `riops=N wiops=N rbps=N wbps=N` as cgroup v2's io.max takes it.
    fn io_max(&self) -> String {
        let mut s = format!("{}:{}", self.major, self.minor);
        for (k, v) in [
            ("riops", self.read_iops),
            ("wiops", self.write_iops),
            ("rbps", self.read_bytes_per_sec),
            ("wbps", self.write_bytes_per_sec),
        ] {
            if let Some(v) = v {
                s.push_str(&format!(" {k}={v}"));
            }
        }
        s
    }

    /// (cgroup v1 file, value) pairs.
    fn v1_files(&self) -> Vec<(&'static str, String)> {
        let dev = format!("{}:{}", self.major, self.minor);
        [
            ("blkio.throttle.read_iops_device", self.read_iops),
            ("blkio.throttle.write_iops_device", self.write_iops),
            ("blkio.throttle.read_bps_device", self.read_bytes_per_sec),
            ("blkio.throttle.write_bps_device", self.write_bytes_per_sec),
        ]
        .into_iter()
        .filter_map(|(f, v)| v.map(|v| (f, format!("{dev} {v}"))))
        .collect()
    }
}

/// What a server's cgroup limits: memory, I/O to some devices, CPU time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits<'a> {
    pub memory_bytes: Option<u64>,
    pub throttles: &'a [BlkioThrottle],
    /// A CPU quota, in CPUs (`handicap_cpus`).
    pub cpu_quota: Option<f64>,
}

/// Memory figures of the cgroup.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryStats {
    pub current: Option<u64>,
    pub peak: Option<u64>,
    pub page_cache: Option<u64>,
}

/// Creates `base/rel` one level at a time. `pgtier` (the first level) is shared by every run and
/// never recorded (it is removed when found empty); deeper levels belong to this run and are
/// recorded before they are made. Concurrent runs may create or remove `pgtier` meanwhile.
fn create_dirs(
    journal: &Journal,
    base: &Path,
    rel: &Path,
    records: &mut Vec<RecordId>,
) -> Result<PathBuf, RunnerError> {
    for _attempt in 0..5 {
        let mut p = base.to_path_buf();
        let mut vanished = false;
        for (depth, c) in rel.components().enumerate() {
            p.push(c);
            if p.exists() {
                continue;
            }
            if depth > 0 {
                records.push(journal.record(Undo::RemoveCgroup { path: p.clone() }, "server cgroup")?);
            }
            match std::fs::create_dir(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    vanished = true;
                    break;
                }
                Err(e) => return Err(RunnerError::io(format!("create cgroup {}", p.display()), e)),
            }
        }
        if !vanished {
            return Ok(p);
        }
    }
    Err(RunnerError::Setup(format!("create cgroup {}: its parent keeps disappearing", base.join(rel).display())))
}

/// The CFS period of a CPU quota, microseconds (the kernel's default).
const CPU_PERIOD_US: u64 = 100_000;

fn write(p: &Path, v: &str) -> Result<(), RunnerError> {
    std::fs::write(p, v).io_context(|| format!("write {v:?} to {}", p.display()))
}

impl ServerCgroup {
    /// Creates `pgtier/<run>/<name>` in each hierarchy, with the limits given.
    pub fn create(
        journal: &Journal,
        hierarchy: &Hierarchy,
        run: &str,
        name: &str,
        limits: Limits<'_>,
    ) -> Result<ServerCgroup, RunnerError> {
        let Limits { memory_bytes: limit_bytes, throttles, cpu_quota } = limits;
        let rel = PathBuf::from("pgtier").join(run).join(name);
        let mut records = Vec::new();
        // The kernel's CFS quota per 100 ms period, at least its 1 ms minimum.
        let quota_us = cpu_quota.map(|c| ((c * CPU_PERIOD_US as f64).round() as u64).max(1000));
        match hierarchy {
            Hierarchy::V1 { memory, cpuacct, blkio, cpu } => {
                let dir = create_dirs(journal, memory, &rel, &mut records)?;
                if let Some(limit) = limit_bytes {
                    write(&dir.join("memory.limit_in_bytes"), &limit.to_string())?;
                }
                let cpu_dir = match cpuacct {
                    Some(c) => Some(create_dirs(journal, c, &rel, &mut records)?),
                    None => None,
                };
                let blkio_dir = match (blkio, throttles.is_empty()) {
                    (_, true) => None,
                    (Some(b), false) => {
                        let d = create_dirs(journal, b, &rel, &mut records)?;
                        for t in throttles {
                            for (file, value) in t.v1_files() {
                                write(&d.join(file), &value)?;
                            }
                        }
                        Some(d)
                    }
                    (None, false) => {
                        return Err(RunnerError::Setup(
                            "an I/O throttle needs the cgroup v1 blkio controller (/sys/fs/cgroup/blkio), which is not mounted".into(),
                        ));
                    }
                };
                let quota_dir = match (cpu, quota_us) {
                    (_, None) => None,
                    (Some(c), Some(q)) => {
                        let d = create_dirs(journal, c, &rel, &mut records)?;
                        write(&d.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                        write(&d.join("cpu.cfs_quota_us"), &q.to_string())?;
                        // cpu and cpuacct mounted together: one directory, joined once.
                        (Some(&d) != cpu_dir.as_ref()).then_some(d)
                    }
                    (None, Some(_)) => {
                        return Err(RunnerError::Setup(
                            "a CPU quota (handicap_cpus) needs the cgroup v1 cpu controller (/sys/fs/cgroup/cpu), which is not mounted".into(),
                        ));
                    }
                };
                Ok(ServerCgroup {
                    hierarchy: hierarchy.clone(),
                    dir,
                    cpu_dir,
                    blkio_dir,
                    quota_dir,
                    limit_bytes,
                    cpu_quota,
                    records,
                })
            }
            Hierarchy::V2 { root } => {
                // A leaf can only use the controllers every ancestor enables for its children.
                let mut parent = root.clone();
                let mut so_far = PathBuf::new();
                // Only what is used: memory (limit and accounting) and io for throttles; CPU time
                // comes from cpu.stat, which v2 keeps without the cpu controller.
                let mut wanted = vec!["+memory"];
                if !throttles.is_empty() {
                    wanted.push("+io");
                }
                if quota_us.is_some() {
                    wanted.push("+cpu");
                }
                for c in rel.components() {
                    for w in &wanted {
                        let _ = std::fs::write(parent.join("cgroup.subtree_control"), w);
                    }
                    so_far.push(c);
                    parent = create_dirs(journal, root, &so_far, &mut records)?;
                }
                let dir = parent;
                if let Some(limit) = limit_bytes {
                    write(&dir.join("memory.max"), &limit.to_string())?;
                }
                for t in throttles {
                    write(&dir.join("io.max"), &t.io_max())?;
                }
                if let Some(q) = quota_us {
                    write(&dir.join("cpu.max"), &format!("{q} {CPU_PERIOD_US}"))?;
                }
                Ok(ServerCgroup {
                    hierarchy: hierarchy.clone(),
                    dir,
                    cpu_dir: None,
                    blkio_dir: None,
                    quota_dir: None,
                    limit_bytes,
                    cpu_quota,
                    records,
                })
            }
        }
    }

    /// Open `cgroup.procs` files; a child writes "0" to each before exec to join the cgroup.
    pub fn open_procs_files(&self) -> Result<Vec<File>, RunnerError> {
        let mut files = Vec::new();
        for d in self.dirs() {
            let p = d.join("cgroup.procs");
            files
                .push(std::fs::OpenOptions::new().write(true).open(&p).io_context(|| format!("open {}", p.display()))?);
        }
        Ok(files)
    }

    /// Removes the directories this cgroup created (its processes must have exited), and
    /// pgtier's top cgroup when no other run uses it any more.
    pub fn remove(self, journal: &Journal) -> Result<(), RunnerError> {
        for id in self.records.iter().rev() {
            journal.undo_now(*id).map_err(RunnerError::Undo)?;
        }
        for d in self.dirs() {
            // <hierarchy>/pgtier/<run>/<server>: the run's directory, then pgtier's, if empty.
            for up in [d.parent(), d.parent().and_then(Path::parent)].into_iter().flatten() {
                if up.file_name().is_some_and(|n| n == "pgtier") || up.parent().is_some_and(|p| p.ends_with("pgtier")) {
                    let _ = std::fs::remove_dir(up);
                }
            }
        }
        Ok(())
    }

    /// Every directory of the cgroup, one per hierarchy it is in.
    fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.dir).chain(self.cpu_dir.iter()).chain(self.blkio_dir.iter()).chain(self.quota_dir.iter())
    }

    /// PIDs in the cgroup.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    pub fn memory(&self) -> MemoryStats {
        let num = |f: &str| std::fs::read_to_string(self.dir.join(f)).ok().and_then(|s| s.trim().parse::<u64>().ok());
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).unwrap_or_default();
        let stat_value = |key: &str| {
            stat.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
            })
        };
        match self.hierarchy {
            Hierarchy::V1 { .. } => MemoryStats {
                current: num("memory.usage_in_bytes"),
                peak: num("memory.max_usage_in_bytes"),
                page_cache: stat_value("cache"),
            },
            Hierarchy::V2 { .. } => {
                MemoryStats { current: num("memory.current"), peak: num("memory.peak"), page_cache: stat_value("file") }
            }
        }
    }

    /// Processes the kernel's OOM killer has killed inside this cgroup (`oom_kill` in
    /// `memory.oom_control` on v1, in `memory.events` on v2); None when the kernel does not say.
    pub fn oom_kills(&self) -> Option<u64> {
        let file = match self.hierarchy {
            Hierarchy::V1 { .. } => "memory.oom_control",
            Hierarchy::V2 { .. } => "memory.events",
        };
        parse_oom_kill(&std::fs::read_to_string(self.dir.join(file)).ok()?)
    }

    /// The memory cgroup's path as the kernel names it (`/pgtier/<run>/<server>`, in the kernel
    /// log's `oom_memcg=`).
    pub fn kernel_path(&self) -> String {
        let root = match &self.hierarchy {
            Hierarchy::V1 { memory, .. } => memory,
            Hierarchy::V2 { root } => root,
        };
        match self.dir.strip_prefix(root) {
            Ok(rel) => format!("/{}", rel.display()),
            Err(_) => self.dir.display().to_string(),
        }
    }

    /// Resets the peak counter (v1 only; v2's memory.peak cannot be reset on older kernels).
    pub fn reset_peak(&self) {
        if let Hierarchy::V1 { .. } = self.hierarchy {
            let _ = std::fs::write(self.dir.join("memory.max_usage_in_bytes"), "0");
        }
    }

    /// CPU time of all processes in the cgroup so far, in seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        match (&self.hierarchy, &self.cpu_dir) {
            (Hierarchy::V1 { .. }, Some(c)) => cpu_seconds_in(&self.hierarchy, c),
            (Hierarchy::V2 { .. }, _) => cpu_seconds_in(&self.hierarchy, &self.dir),
            _ => None,
        }
    }

    /// CPU time so far of every server of the run, in seconds: the run's cgroup
    /// (`pgtier/<run>`), the parent of each server's, counts its descendants' time (cpuacct on
    /// v1, `cpu.stat` on v2, both hierarchical), servers already stopped included.
    pub fn run_cpu_seconds(&self) -> Option<f64> {
        let dir = match (&self.hierarchy, &self.cpu_dir) {
            (Hierarchy::V1 { .. }, Some(c)) => c,
            (Hierarchy::V2 { .. }, _) => &self.dir,
            _ => return None,
        };
        cpu_seconds_in(&self.hierarchy, dir.parent()?)
    }
}

/// CPU time of a cgroup directory so far (`cpuacct.usage` on v1, `usage_usec` of `cpu.stat` on
/// v2), in seconds.
fn cpu_seconds_in(hierarchy: &Hierarchy, dir: &Path) -> Option<f64> {
    match hierarchy {
        Hierarchy::V1 { .. } => std::fs::read_to_string(dir.join("cpuacct.usage"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(|ns| ns as f64 / 1e9),
        Hierarchy::V2 { .. } => std::fs::read_to_string(dir.join("cpu.stat")).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("usage_usec ").and_then(|v| v.trim().parse::<u64>().ok()))
                .map(|us| us as f64 / 1e6)
        }),
    }
}

/// The `oom_kill N` line of `memory.oom_control` (v1) or `memory.events` (v2).
fn parse_oom_kill(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("oom_kill ").and_then(|v| v.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_kill_counters() {
        // cgroup v1 memory.oom_control and v2 memory.events, as kernel 6.18 writes them.
        assert_eq!(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), Some(2));
        assert_eq!(parse_oom_kill("low 0\nhigh 0\nmax 31\noom 1\noom_kill 1\noom_group_kill 0\n"), Some(1));
        assert_eq!(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\n"), None);
    }

    #[test]
    fn throttle_files() {
        let t = BlkioThrottle {
            device: "raid".into(),
            major: 7,
            minor: 3,
            read_iops: Some(400),
            write_iops: Some(300),
            read_bytes_per_sec: None,
            write_bytes_per_sec: Some(100 << 20),
        };
        assert_eq!(t.io_max(), "7:3 riops=400 wiops=300 wbps=104857600");
        assert_eq!(
            t.v1_files(),
            vec![
                ("blkio.throttle.read_iops_device", "7:3 400".to_string()),
                ("blkio.throttle.write_iops_device", "7:3 300".to_string()),
                ("blkio.throttle.write_bps_device", "7:3 104857600".to_string()),
            ]
        );
    }
}
