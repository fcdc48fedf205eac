//! One measured run and everything measured in it.

use serde::{Deserialize, Serialize};

/// The matrix cell a run belongs to; repetitions of a cell share it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellKey {
    pub placement: String,
    pub workload: String,
    pub clients: u32,
    /// `unlimited` or a size such as `256MiB`.
    pub memory_limit: MemoryLabel,
    /// Settings profile name.
    pub profile: String,
    /// The PostgreSQL build that ran the server (`[postgres] builds`); `default` when the
    /// experiment names one, and then left out of the JSON, as in result sets of older versions.
    #[serde(default = "default_build", skip_serializing_if = "is_default_build")]
    pub build: String,
}

/// The build of an experiment that names none.
pub const DEFAULT_BUILD: &str = "default";

fn default_build() -> String {
    DEFAULT_BUILD.into()
}

fn is_default_build(b: &str) -> bool {
    b == DEFAULT_BUILD
}

impl CellKey {
    /// The same cell on another placement.
    pub fn with_placement(&self, placement: &str) -> CellKey {
        CellKey { placement: placement.to_string(), ..self.clone() }
    }
}

/// A cell's memory limit (the server's cgroup) as result files label it: `unlimited`, or the
/// size in the largest of GiB, MiB and bytes that it is a whole number of (`256MiB`, `1GiB`,
/// `1000B`). Serialised as that label. Ordered by size, unlimited last; no limit by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryLabel {
    Bytes(u64),
    #[default]
    Unlimited,
}

impl MemoryLabel {
    /// The label of a limit (`None`: unlimited).
    pub fn of(limit: Option<u64>) -> MemoryLabel {
        limit.map_or(MemoryLabel::Unlimited, MemoryLabel::Bytes)
    }

    pub fn bytes(self) -> Option<u64> {
        match self {
            MemoryLabel::Bytes(b) => Some(b),
            MemoryLabel::Unlimited => None,
        }
    }

    pub fn is_unlimited(self) -> bool {
        self == MemoryLabel::Unlimited
    }
}

impl std::fmt::Display for MemoryLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const GIB: u64 = 1 << 30;
        const MIB: u64 = 1 << 20;
        let label = match *self {
            MemoryLabel::Unlimited => "unlimited".to_string(),
            MemoryLabel::Bytes(b) if b % GIB == 0 => format!("{}GiB", b / GIB),
            MemoryLabel::Bytes(b) if b % MIB == 0 => format!("{}MiB", b / MIB),
            MemoryLabel::Bytes(b) => format!("{b}B"),
        };
        f.pad(&label)
    }
}

impl std::str::FromStr for MemoryLabel {
    type Err = String;

    fn from_str(s: &str) -> Result<MemoryLabel, String> {
        if s == "unlimited" {
            return Ok(MemoryLabel::Unlimited);
        }
        let (number, unit) = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("B", 1)]
            .into_iter()
            .find_map(|(suffix, unit)| s.strip_suffix(suffix).map(|n| (n, unit)))
            .ok_or_else(|| format!("memory limit {s:?} is neither `unlimited` nor a size in GiB, MiB or B"))?;
        let n: u64 = number.parse().map_err(|_| format!("memory limit {s:?}: {number:?} is not a whole number"))?;
        n.checked_mul(unit).map(MemoryLabel::Bytes).ok_or_else(|| format!("memory limit {s:?} is too large"))
    }
}

impl Serialize for MemoryLabel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemoryLabel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<MemoryLabel, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    Ok,
    Failed,
}

/// What failed in a failed run (`failure_kind` in result.json and runs.csv).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// Preparing the run failed (the default for a failure no other kind explains).
    Setup,
    /// The placement could not run a server.
    ServerStart,
    /// A server process was killed by a signal or the postmaster ended.
    ServerCrash,
    /// The kernel's OOM killer killed a process in the server's cgroup.
    OutOfMemory,
    /// The workload failed while nothing happened to the server.
    Workload,
    /// The workload outlived its duration and was stopped.
    Watchdog,
    /// Not run: its placement's server did not start in an earlier run.
    PlacementUnusable,
    /// An emulated tier of the placement died during the run (a helper process gone, failed NBD
    /// requests, the kernel's I/O errors): whatever pgbench printed, it measured a broken device.
    DeviceLost,
}

impl FailureKind {
    pub const ALL: [FailureKind; 8] = [
        FailureKind::Setup,
        FailureKind::ServerStart,
        FailureKind::ServerCrash,
        FailureKind::OutOfMemory,
        FailureKind::Workload,
        FailureKind::Watchdog,
        FailureKind::PlacementUnusable,
        FailureKind::DeviceLost,
    ];

    /// The kind as result.json and runs.csv spell it (`server-start`, `out-of-memory`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Setup => "setup",
            FailureKind::ServerStart => "server-start",
            FailureKind::ServerCrash => "server-crash",
            FailureKind::OutOfMemory => "out-of-memory",
            FailureKind::Workload => "workload",
            FailureKind::Watchdog => "watchdog",
            FailureKind::PlacementUnusable => "placement-unusable",
            FailureKind::DeviceLost => "device-lost",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Headline figures of a run, over the measured interval only (ramp-up excluded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metrics {
    /// Transactions per second, without initial connection time.
    pub tps: f64,
    pub latency_ms_avg: f64,
    pub latency_ms_stddev: Option<f64>,
    pub transactions: u64,
    pub failed_transactions: u64,
    pub retried_transactions: Option<u64>,
    pub initial_connection_ms: Option<f64>,
    pub latency_ms_p50: Option<f64>,
    pub latency_ms_p90: Option<f64>,
    pub latency_ms_p95: Option<f64>,
    pub latency_ms_p99: Option<f64>,
    pub latency_ms_p999: Option<f64>,
    /// TPC-C: new orders per minute (HammerDB's NOPM) and transactions per minute (TPM).
    pub nopm: Option<f64>,
    pub tpm: Option<f64>,
}

/// Average latency of one statement of the script (`pgbench -r`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatementLatency {
    pub latency_ms: f64,
    pub failures: Option<u64>,
    pub statement: String,
}

/// One second of a run (pgbench `-P 1` or the driver's own sampling).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecondSample {
    /// Seconds since the start of the measured interval (end of this sample).
    pub t: f64,
    pub tps: f64,
    pub latency_ms: f64,
    pub latency_ms_stddev: Option<f64>,
    pub failed: Option<u64>,
}

/// I/O of one device during the measured interval (from /proc/diskstats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceIo {
    pub device: String,
    /// `data`, `wal`, `data+wal`, or a tablespace role.
    pub role: String,
    pub kernel_name: String,
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    /// Average time per completed I/O (read+write), ms.
    pub avg_wait_ms: f64,
    pub peak_read_iops: f64,
    pub peak_write_iops: f64,
    /// Completed reads and writes over the interval (absent in result sets of older versions).
    pub reads: u64,
    pub writes: u64,
    /// Share of the interval the device had I/O in flight (io_ticks of /proc/diskstats), %;
    /// NaN-free: 0 in result sets of older versions.
    pub util_pct: f64,
}

/// One second of I/O on one device (by kernel name).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoSample {
    /// Seconds since the start of the measured interval (end of this sample).
    pub t: f64,
    pub device: String,
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
}

/// CPU time split over the measured interval, in % of all CPUs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuSplit {
    pub user_pct: f64,
    pub system_pct: f64,
    pub iowait_pct: f64,
    pub idle_pct: f64,
    /// CPU seconds used by the benchmark client and by the server's processes.
    pub client_cpu_s: f64,
    pub server_cpu_s: f64,
    /// Share of one core the client used (100 = one full core).
    pub client_core_pct: f64,
}

/// The machine's state over one measured run (in design `slices`, one round's slice): how loaded
/// the machine was and by whom. Absent in result sets of older versions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MachineState {
    /// The 1-minute load average (/proc/loadavg) at the start and at the end of the interval.
    /// It counts the study's own runnable processes too (the client and each connection's
    /// backend), and lags: it is the last minute's, not the interval's alone.
    pub load1_start: Option<f64>,
    pub load1_end: Option<f64>,
    /// Logical CPUs (the `cpuN` lines of /proc/stat).
    pub cpus: u32,
    /// All CPUs' time over the interval (the growth of /proc/stat's `cpu` line), CPU-seconds.
    pub cpu_time_s: f64,
    /// Time the hypervisor ran something else while this machine's CPUs wanted to run (steal),
    /// % of all CPUs' time over the interval.
    pub steal_pct: f64,
    /// Busy CPU of the whole machine (user, nice, system, irq, softirq: not idle, iowait or
    /// steal; guest time is inside user), CPU-seconds.
    pub busy_cpu_s: f64,
    /// CPU of the study's own processes over the interval, CPU-seconds: every PostgreSQL
    /// server of the run (the run's parent cgroup, which holds each server's cgroup), and
    /// pgtier's own process and its children reaped in the interval (getrusage: the pgbench
    /// client, the in-process TPC-C driver, the samplers). None without a server cgroup.
    pub study_cpu_s: Option<f64>,
    /// `busy_cpu_s - study_cpu_s` (at least 0), CPU-seconds and % of all CPUs' time: other
    /// users' processes, and kernel work no study process is charged for (kernel threads such
    /// as the loop devices' and write-back's, helpers of emulated tiers such as nbdkit).
    pub outside_cpu_s: Option<f64>,
    pub outside_pct: Option<f64>,
}

/// PostgreSQL's own counters as deltas over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PgCounters {
    pub blks_hit: i64,
    pub blks_read: i64,
    pub xact_commit: i64,
    pub xact_rollback: i64,
    pub checkpoints_timed: i64,
    pub checkpoints_req: i64,
    pub buffers_checkpoint: i64,
    pub buffers_clean: i64,
    pub buffers_backend: i64,
    pub wal_bytes: Option<i64>,
    pub wal_sync: Option<i64>,
    pub wal_write_time_ms: Option<f64>,
    pub wal_sync_time_ms: Option<f64>,
    pub temp_bytes: i64,
    pub database_size_bytes: i64,
}

/// One wait event's share of sampled backend time (pg_stat_activity).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WaitShare {
    /// `IO:WALSync`, `LWLock:WALWrite`, `Lock:transactionid`, `Client:ClientRead`, `CPU` (active,
    /// no wait event), `Idle` (not active, no wait event).
    pub event: String,
    /// Samples of backends seen in this event.
    pub samples: u64,
    /// samples / all samples of the group, %.
    pub share_pct: f64,
}

/// Wait events of the server's processes sampled from pg_stat_activity during the measured
/// interval, on a connection of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WaitEvents {
    /// Time between two snapshots as asked, ms (the sampler aims at 10 per second).
    pub interval_ms: f64,
    /// Snapshots taken over the interval.
    pub snapshots: u64,
    /// Client backends of the benchmark's database, one sample per backend per snapshot:
    /// shares of backend time, largest first.
    pub backend: Vec<WaitShare>,
    /// Backend samples in `backend` (snapshots x backends seen).
    pub backend_samples: u64,
    /// The WAL writer, checkpointer, background writer and autovacuum workers: shares per
    /// process type, largest first.
    pub background: std::collections::BTreeMap<String, Vec<WaitShare>>,
    /// CPU seconds of the sampler itself: its thread in this process, and the server process
    /// that answered its queries.
    pub sampler_cpu_s: f64,
    pub sampler_backend_cpu_s: Option<f64>,
    /// The raw samples, relative to the run's directory.
    pub raw_file: String,
}

impl WaitEvents {
    /// The share of backend time of `event` (0 when never seen).
    pub fn share(&self, event: &str) -> f64 {
        self.backend.iter().find(|w| w.event == event).map(|w| w.share_pct).unwrap_or(0.0)
    }
}

/// Memory of the server's cgroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryUse {
    pub limit_bytes: Option<u64>,
    pub peak_bytes: Option<u64>,
    pub page_cache_bytes: Option<u64>,
}

/// Everything about one measured run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Directory name under `runs/`: `<sequence>-<placement>-<workload>-c<clients>-r<repetition>`.
    pub run_id: String,
    /// Position in the executed order (1-based).
    pub sequence: u32,
    pub cell: CellKey,
    pub repetition: u32,
    /// Design `slices`: the stretch of rounds measured with the same server lives (1-based;
    /// a new session, or a server restarted after it died, begins the next). Rounds pair only
    /// within a segment and each segment's warm-up rounds are cut alike. 0 for the `runs` design
    /// and for result sets of older versions.
    #[serde(default)]
    pub segment: u32,
    /// `pgbench` or `tpcc`.
    pub workload_kind: String,
    /// The pgbench builtin script or TPC-C mode.
    pub script: String,
    pub threads: u32,
    /// pgbench scale or TPC-C warehouses.
    pub scale: u32,
    pub duration_s: f64,
    pub ramp_up_s: f64,
    pub started_at: String,
    pub finished_at: String,
    pub status: RunStatus,
    pub failure: Option<String>,
    /// What failed (see [`FailureKind`]).
    #[serde(default)]
    pub failure_kind: Option<FailureKind>,
    /// Faults injected into this run (experiment file `[[fault]]`), as sentences.
    #[serde(default)]
    pub faults: Vec<String>,
    pub metrics: Metrics,
    #[serde(default)]
    pub statements: Vec<StatementLatency>,
    #[serde(default)]
    pub series: Vec<SecondSample>,
    #[serde(default)]
    pub devices: Vec<DeviceIo>,
    /// Per-second I/O of each device of the placement.
    #[serde(default)]
    pub io_series: Vec<IoSample>,
    /// CPU seconds the once-a-second sampler itself used during the run.
    #[serde(default)]
    pub sampler_cpu_s: f64,
    #[serde(default)]
    pub cpu: Option<CpuSplit>,
    /// The machine's load, steal and CPU used outside the study over the measured interval.
    #[serde(default)]
    pub machine: Option<MachineState>,
    #[serde(default)]
    pub postgres: Option<PgCounters>,
    /// Wait events sampled during the measured interval (absent in result sets of older
    /// versions).
    #[serde(default)]
    pub wait_events: Option<WaitEvents>,
    #[serde(default)]
    pub memory: Option<MemoryUse>,
    /// Checkpoints that started during the measured interval (seconds since its start).
    #[serde(default)]
    pub checkpoints_at_s: Vec<f64>,
    /// Settings that differed from PostgreSQL's defaults while the run went on (pg_settings).
    #[serde(default)]
    pub server_settings: std::collections::BTreeMap<String, String>,
    /// The exact benchmark command line.
    pub command: String,
    /// Raw tool output files, relative to the run's directory.
    #[serde(default)]
    pub raw_files: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<crate::Warning>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_kinds_are_spelled_as_before() {
        for k in FailureKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(k.as_str().into()));
            assert_eq!(serde_json::from_value::<FailureKind>(k.as_str().into()).unwrap(), k);
        }
        let spelled: Vec<&str> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            spelled,
            [
                "setup",
                "server-start",
                "server-crash",
                "out-of-memory",
                "workload",
                "watchdog",
                "placement-unusable",
                "device-lost"
            ]
        );
    }

    #[test]
    fn memory_labels() {
        assert_eq!(MemoryLabel::of(None).to_string(), "unlimited");
        assert_eq!(MemoryLabel::of(Some(300 << 20)).to_string(), "300MiB");
        assert_eq!(MemoryLabel::of(Some(1 << 30)).to_string(), "1GiB");
        assert_eq!(MemoryLabel::of(Some(1000)).to_string(), "1000B");
        for label in ["unlimited", "160MiB", "1GiB", "1000B", "1536MiB"] {
            let l: MemoryLabel = label.parse().unwrap();
            assert_eq!(l.to_string(), label);
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("{label:?}"));
            assert_eq!(serde_json::from_str::<MemoryLabel>(&format!("{label:?}")).unwrap(), l);
        }
        assert_eq!("1536MiB".parse::<MemoryLabel>().unwrap().bytes(), Some(1536 << 20));
        assert!("lots".parse::<MemoryLabel>().is_err() && "1.5GiB".parse::<MemoryLabel>().is_err());
        assert_eq!(format!("{:<10}|", MemoryLabel::Unlimited), "unlimited |", "pads like a string");
    }
}
