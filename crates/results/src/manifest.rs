//! What ran, where, with what: the resolved configuration, the environment and the devices.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether a device's filesystem was asked to be mounted with DAX (the experiment file's `dax`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DaxRequest {
    #[default]
    Off,
    Optional,
    Required,
}

/// The order the runs were made in: `interleaved` (A B C A B C ...: drift of the machine spreads
/// over every placement) or `sequential` (A A B B C C).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    #[default]
    Interleaved,
    Sequential,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

impl std::fmt::Display for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A device as provisioned, for the record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceRecord {
    pub name: String,
    /// `nvme`, `pmem` or `nvme-tcp`.
    pub class: String,
    pub emulated: bool,
    /// One sentence on what stands behind the device.
    pub description: String,
    pub block_device: String,
    pub mountpoint: String,
    pub requested_mount_options: Vec<String>,
    pub effective_mount_options: Vec<String>,
    pub dax_requested: DaxRequest,
    /// Whether DAX is in effect (only meaningful when requested).
    pub dax_honoured: bool,
    pub dax_note: String,
    /// Caps applied to emulate a slower device (cgroup blkio throttle), if any.
    pub throttle: Option<String>,
    /// Model, serial, firmware, size, rotational flag, scheduler, xfs_info, ...
    pub facts: serde_json::Value,
    /// A real NVMe/TCP device's connection settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme_tcp: Option<NvmeTcpConnectionRecord>,
}

/// The settings of the NVMe/TCP connection a device is a namespace of, by nvme-cli option
/// (`ctrl-loss-tmo`, `reconnect-delay`, `nr-io-queues`, `queue-size`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NvmeTcpConnectionRecord {
    /// The controller the connect created (`nvme6`), when nvme-cli said.
    pub controller: Option<String>,
    /// What pgtier passed to `nvme connect`, or "kernel default" for a setting it passes none of.
    pub requested: BTreeMap<String, String>,
    /// What the controller reports in sysfs (a setting it could not read is missing).
    pub in_force: BTreeMap<String, String>,
}

/// Where one placement puts PGDATA, pg_wal and tablespaces.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlacementRecord {
    pub name: String,
    pub description: String,
    pub data_device: String,
    pub wal_device: String,
    /// Tablespace role (`tables`, `indexes`, `temp`) -> device.
    pub tablespaces: BTreeMap<String, String>,
    /// The settings profile its server runs in place of the matrix's (`[[placement]] profile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The PostgreSQL build its server runs (`[[placement]] build`): set on every placement when
    /// the placements name their builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// What kind of benchmark a workload is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// pgbench with a builtin script.
    #[default]
    Pgbench,
    /// The `tpcc` crate's TPC-C (HammerDB TPROC-C semantics).
    Tpcc,
}

impl WorkloadKind {
    /// `pgbench` or `tpcc`, as run records spell it (`workload_kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Pgbench => "pgbench",
            WorkloadKind::Tpcc => "tpcc",
        }
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A workload as it ran (the experiment file's `[[workload]]`, `--emulate` overrides applied).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadRecord {
    pub name: String,
    pub kind: WorkloadKind,
    /// The pgbench builtin script (`tpcb-like`), or TPC-C's mode and side
    /// (`tpcc-hammerdb-procedures`), as run records spell it.
    pub script: String,
    /// pgbench scale, or TPC-C warehouses.
    pub scale: u32,
    /// Client counts (TPC-C: virtual users), resolved against the machine's hardware threads.
    pub clients: Vec<u32>,
    /// Threads per run as set (`None`: min(clients, cores); each run's record has its own).
    pub threads: Option<u32>,
    pub duration_s: f64,
    /// The discarded run before each measured one.
    pub ramp_up_s: f64,
}

/// The machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    /// The kernel's build (`uname -v`: distribution package and date).
    pub kernel_version: String,
    /// The kernel's command line (/proc/cmdline): hardening and tuning parameters change what
    /// is measured (and whether some kernels' bugs show).
    pub kernel_cmdline: String,
    pub os: String,
    pub cpu_model: String,
    pub cpu_cores: usize,
    pub cpu_threads: usize,
    pub memory_bytes: u64,
    pub virtualization: String,
    pub cpu_governor: Option<String>,
    pub transparent_hugepages: Option<String>,
    /// Kernel settings that matter for databases, as read before the run.
    pub sysctls: BTreeMap<String, String>,
    /// The load average when the run started (a busy machine is a noisy one).
    pub load_average: Option<String>,
}

/// PostgreSQL as it ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PostgresInfo {
    pub version: String,
    pub bin_dir: String,
    /// Profile name -> settings written for it.
    pub profiles: BTreeMap<String, BTreeMap<String, String>>,
    /// Settings in a profile that this PostgreSQL does not know, skipped with a note.
    pub skipped_settings: Vec<String>,
    /// Every build the matrix ran (one when the experiment names no builds).
    #[serde(default)]
    pub builds: Vec<BuildRecord>,
}

/// A PostgreSQL build as it ran: what it is, and which client drove it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BuildRecord {
    pub name: String,
    /// `postgres --version`.
    pub version: String,
    pub major: u32,
    pub bin_dir: String,
    /// `pg_config --configure`, when the build ships pg_config.
    pub configure: Option<String>,
    /// The pgbench that drove it and its `--version` (the system's when the build has none).
    pub client_bin_dir: String,
    pub client_version: String,
    /// Optional settings of a profile this build does not know, left out (`profile: setting`).
    pub optional_left_out: Vec<String>,
}

/// A data set built once and copied onto each placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetRecord {
    pub key: String,
    /// Where the golden copy was built (`[experiment] golden_copy`; empty in older result sets).
    pub golden_dir: String,
    pub command: String,
    pub database_size_bytes: u64,
    pub pgdata_size_bytes: u64,
    pub build_seconds: f64,
    /// Seconds to copy it onto each placement.
    pub relocate_seconds: BTreeMap<String, f64>,
}

/// A device's ceilings, measured with fio before the matrix (see `tiers::probe`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceProbeRecord {
    pub device: String,
    pub fio_version: String,
    /// 8 KiB sequential writes, each followed by fdatasync (a WAL commit stand-in).
    pub wal_write_iops: f64,
    pub wal_sync_p50_us: f64,
    pub wal_sync_p99_us: f64,
    /// 4 KiB random reads, queue depth 32, direct I/O.
    pub randread_iops: f64,
    pub randread_p99_us: f64,
    pub runtime_s: f64,
    pub raw_files: Vec<String>,
    /// 4 KiB random reads at queue depth 1, direct I/O, on a file written in full first: mean and
    /// median completion latency, µs (0 in result sets of older versions).
    pub read_qd1_mean_us: f64,
    pub read_qd1_p50_us: f64,
    /// One 8 KiB write followed by fdatasync at queue depth 1: mean time per pair, µs
    /// (1,000,000 / write+fdatasync IOPS).
    pub write_sync_qd1_mean_us: f64,
    /// What the probe saw go wrong on the device (fio errors, a file system that shut down, a
    /// lost NBD connection), empty when it survived.
    pub failure: Option<String>,
    /// The queue depth the QD32 random reads reached (fio's `iodepth_level`): 1 on a DAX file,
    /// where libaio completes each read as it is submitted. None in older result sets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub randread_depth: Option<u32>,
}

/// A figure a study published, as the experiment file's `[[claim]]` states it, resolved to the
/// cells of this result set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClaimRecord {
    /// Short name (`claim[2]` when the file gives none).
    pub name: String,
    /// The study's words.
    pub text: String,
    /// Where the claim is written: `tiers/pmem-vs-nvme.toml:142`.
    pub origin: String,
    /// The contender's placement and the placement it is compared with (the baseline unless the
    /// claim names another).
    pub placement: String,
    pub against: String,
    pub workload: String,
    /// The client count of the cell; None with `at_peak` (the peak of the scaling curve) or
    /// when the workload has one client count.
    pub clients: Option<u32>,
    pub at_peak: bool,
    /// As in the cells (`unlimited`, `192MiB`); None: every memory limit must agree (the only one).
    pub memory_limit: Option<String>,
    pub profile: Option<String>,
    /// `tps`, `latency`, `latency-p99`, `nopm`, `statement-latency`, `device-iops`, `device-mb-s`.
    pub metric: String,
    /// For `statement-latency`: the statement (its beginning, e.g. `UPDATE pgbench_accounts`).
    pub statement: Option<String>,
    /// The study's figure as written (`+44.6%`, `3.4x`, `-2.10%`, `+2%..+7%`).
    pub figure: String,
    /// The figure as a change in %: a point (low = high) or a range.
    pub low_pct: f64,
    pub high_pct: f64,
    /// `placements` (judged in this result set) or `result-sets` (two result sets, e.g. two
    /// releases or PostgreSQL versions: `cargo xtask report --baseline A --contender B`).
    pub across: String,
    /// Why the emulated cell differs from the study's (`clients 72 -> 8`), said next to the verdict.
    pub emulation_note: Option<String>,
    /// The study's data set and server memory when it measured the figure (bytes; `[[claim]]
    /// study_data_set`, `study_memory`): the claim is judged only where the cell's data set sits
    /// in memory alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study_data_set_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study_memory_bytes: Option<u64>,
}

/// `manifest.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub pgtier_version: String,
    pub git_commit: Option<String>,
    pub command_line: String,
    pub experiment_name: String,
    pub experiment_description: String,
    /// The study the experiment file reproduces, as its `study` key cites it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment_study: Option<String>,
    pub experiment_file: String,
    pub baseline: String,
    pub emulated: bool,
    pub repetitions: u32,
    pub order: Order,
    /// The configuration after `--emulate` overrides, as used.
    pub resolved_config: serde_json::Value,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// When an interrupted matrix was continued (`compare --resume`), each time.
    pub resumed_at: Vec<String>,
    pub host: HostFacts,
    pub postgres: PostgresInfo,
    /// Tool -> version line.
    pub tools: BTreeMap<String, String>,
    pub devices: Vec<DeviceRecord>,
    /// fio ceilings of each device (empty when probing is off).
    pub device_probes: Vec<DeviceProbeRecord>,
    pub placements: Vec<PlacementRecord>,
    /// The workloads (empty in result sets of older versions; their runs' records say the same).
    pub workloads: Vec<WorkloadRecord>,
    pub datasets: Vec<DatasetRecord>,
    /// Planned run ids in execution order.
    pub run_order: Vec<String>,
    /// The matrix cell of every planned run id.
    pub planned_cells: BTreeMap<String, crate::record::CellKey>,
    /// Kernel settings changed for the run (and restored at teardown), one line each.
    pub kernel_changes: Vec<String>,
    /// Seconds spent provisioning, loading, relocating, measuring and tearing down.
    pub phase_seconds: BTreeMap<String, f64>,
    pub warnings: Vec<crate::Warning>,
    /// How the matrix was measured and analysed (absent in result sets of older versions: the
    /// `runs` design, a 2% equivalence margin).
    #[serde(default)]
    pub measurement: MeasurementRecord,
    /// The study's published figures this result set is checked against (`[[claim]]`).
    #[serde(default)]
    pub claims: Vec<ClaimRecord>,
    /// Where the benchmark client ran, when not on this machine (`[[host]] roles = ["client"]`);
    /// absent for a local run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRecord>,
    /// The storage target hosts that served devices (`[[host]] roles = ["target"]`); absent for
    /// a run without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetRecord>,
    /// What each contest's interval assumed rather than estimated (the round-to-round
    /// correlation, the offset between server lives) and where it came from: this host's own
    /// calibration (`pgtier calibrate`) or, uncalibrated, the fallback. None: result sets before
    /// it, whose priors were the development machine's committed runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationRecord>,
}

/// A storage target host: the devices it served, how, and what lies between it and the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetRecord {
    /// Its name in the experiment file.
    pub host: String,
    /// Its address facing the server (the SSH destination, where nbdkit or the nvmet port
    /// listened).
    pub address: String,
    /// The devices it served.
    pub devices: Vec<String>,
    /// What served them there (`nbdkit (--emulate)`, `nvmet`).
    pub serves: String,
    /// The route from the server to the host as the kernel chose it.
    pub network_path: String,
    /// The network round trip, median of TCP connects from the server to the host's SSH port.
    pub rtt_ms: Option<f64>,
    /// How `rtt_ms` was measured.
    pub rtt_method: String,
    /// How the host was reached (OpenSSH's version, the multiplexed connection, host-key checking).
    pub transport: String,
    /// Opening the multiplexed connection, milliseconds.
    pub ssh_setup_ms: f64,
    /// A command's round trip over it (median), milliseconds.
    pub ssh_command_ms: f64,
    /// This run's directory on the host (image files, pid files, logs), removed at teardown.
    pub work_dir: String,
    /// The host's kernel release (`uname -r`) and command line (/proc/cmdline), as read there.
    pub kernel: String,
    pub kernel_cmdline: String,
    /// What protects its exports (DH-HMAC-CHAP, the host NQN alone, or any host).
    pub access: String,
}

/// The benchmark client's host, how it was reached and what lies between it and the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientRecord {
    /// Its name in the experiment file.
    pub host: String,
    /// Its address (the SSH destination, and the only address pg_hba.conf admits).
    pub address: String,
    /// The address the server listened on for it.
    pub server_address: String,
    /// The route from the server to the client as the kernel chose it
    /// (`veth pgtc0 169.254.200.1 -> 169.254.200.2`).
    pub network_path: String,
    /// The network round trip, median of TCP connects from the server to the host's SSH port.
    pub rtt_ms: Option<f64>,
    /// How `rtt_ms` was measured.
    pub rtt_method: String,
    /// How the host was reached (OpenSSH's version, the multiplexed connection, host-key checking).
    pub transport: String,
    /// Opening the multiplexed connection (`ssh -o ControlMaster=yes -N -f`), milliseconds.
    pub ssh_setup_ms: f64,
    /// A command's round trip over it (`ssh ... true`, median), milliseconds.
    pub ssh_command_ms: f64,
    /// `pgbench --version` on the host.
    pub pgbench: String,
    /// How the client authenticated (the password itself is recorded nowhere).
    pub authentication: String,
    /// This run's directory on the host (the password file, transaction logs), removed at
    /// teardown.
    pub work_dir: String,
    /// pgtier's binary shipped to the host for the TPC-C driver (its `--version` there and its
    /// path); absent when no TPC-C workload ran there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpcc_driver: Option<String>,
}

/// How a result set was measured, as the manifest spells it (`"slices"`, `"runs"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Design {
    /// Every placement's server up at once, the load alternating in rounds of slices; deltas
    /// paired by round.
    Slices,
    /// A measured run per cell and repetition; deltas from independent runs.
    #[default]
    Runs,
}

impl Design {
    pub fn as_str(self) -> &'static str {
        match self {
            Design::Slices => "slices",
            Design::Runs => "runs",
        }
    }
}

impl std::fmt::Display for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The measurement design as it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MeasurementRecord {
    /// `slices` (servers up at once, the load alternating in rounds of slices; deltas paired by
    /// round) or `runs` (a measured run per cell and repetition; deltas from independent runs).
    pub design: Design,
    /// A delta whose whole 95% interval lies inside ±this many percent is called equivalent.
    pub equivalence_margin_pct: f64,
    /// The seed of the random run order (`--seed` repeats it).
    pub seed: Option<u64>,
    /// Slices: the target half-width and the budget, when set.
    pub target_halfwidth_pct: Option<f64>,
    pub budget_s: Option<f64>,
    /// Slices: why the measured phase stopped, per contest (target met, budget spent).
    pub stopped: BTreeMap<String, String>,
    /// Slices: leading rounds of every segment that do not count (the warm-up cut, fixed before
    /// measuring; 0 in result sets of older versions, which cut by MSER-5).
    #[serde(default)]
    pub warm_up_rounds: u32,
    /// Slices: per session, the order its placements' data sets were copied and their servers
    /// started (drawn at random from the seed: the first gets the first port and cgroup).
    #[serde(default)]
    pub server_order: BTreeMap<String, Vec<String>>,
    /// Emulated tiers: the order the stand-in devices were made in (drawn from the seed: the
    /// first gets the first loop device, zram id, link and port); empty on real devices.
    #[serde(default)]
    pub device_order: Vec<String>,
    /// The negative control's placement (`[measurement] control = true`): a twin of the
    /// baseline, so any change it shows is the method's own error.
    #[serde(default)]
    pub control: Option<String>,
    /// Slices: kept rounds of the stopping rule's pilot (`min_rounds`).
    #[serde(default = "default_min_rounds")]
    pub min_rounds: u32,
    /// CPU pinning (`[measurement] pin_client`, `pin_servers`): the CPU lists pgbench and the
    /// servers were confined to, as the kernel reported them back; None: the scheduler's choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<PinningRecord>,
    /// A test of the method (`[measurement] handicap_cpus`, `handicap_spread`): each server life
    /// ran under a CPU quota of its own, listed per session in `sessions/<session>/handicap.tsv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handicap: Option<HandicapRecord>,
    /// Slices: whether every placement's data set was read into its server (pg_prewarm) before
    /// every contest's warm-up (`[measurement] prewarm`); false in result sets of older versions.
    #[serde(default)]
    pub prewarm: bool,
    /// Slices: each prewarm, in the order made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prewarms: Vec<PrewarmRecord>,
    /// Slices: whether each placement's database was settled (VACUUM (ANALYZE), CHECKPOINT)
    /// before a contest that followed one that wrote to it (`[measurement] settle`); false in
    /// result sets of older versions.
    #[serde(default)]
    pub settle: bool,
    /// Slices: each settle, in the order made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settles: Vec<SettleRecord>,
    /// Slices: the estimator the scheduler decided with and the report estimates with; result
    /// sets of older versions were estimated by issue 24's (the field absent).
    #[serde(default)]
    pub estimator: Estimator,
}

/// The estimator of a slices result set's rounds (`stats::rounds::Rule`), recorded so that a
/// result set reads the same with every later version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Issue 24's: the round-to-round correlation estimated per contest from the kept rounds'
    /// own lag-1; the trend test as the steady check. Result sets without the field.
    #[default]
    PerContestLag1,
    /// Issue 37's as first shipped: the workload's prior correlation, the warm-up check beside
    /// the trend test, and a cut that moves on past a short warm-up curve.
    WorkloadPrior,
    /// As [`Estimator::WorkloadPrior`], and every interval allows for the offset between server
    /// lives, the workload's prior too.
    WorkloadPriorLifeOffset,
    /// As [`Estimator::WorkloadPriorLifeOffset`], and a contest whose warm-up cut moved past
    /// its fixed rounds by a sixth of a segment's rounds or more is not steady.
    LongWarmUp,
}

impl Estimator {
    pub fn as_str(self) -> &'static str {
        match self {
            Estimator::PerContestLag1 => "per-contest-lag1",
            Estimator::WorkloadPrior => "workload-prior",
            Estimator::WorkloadPriorLifeOffset => "workload-prior-life-offset",
            Estimator::LongWarmUp => "long-warm-up",
        }
    }
}

/// One placement's settle before a contest: `VACUUM (ANALYZE)` of every table of its database,
/// then `CHECKPOINT`, because an earlier contest (`after`) wrote to it. Its per-table output is
/// `sessions/<session>/<raw>`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SettleRecord {
    pub session: String,
    pub contest: String,
    pub placement: String,
    /// The earlier contests that wrote to the database since it was copied or last settled.
    pub after: Vec<String>,
    /// Tables vacuumed; dead rows and rows modified since the last ANALYZE over them before, as
    /// PostgreSQL's statistics counted them; dead rows after (None when unknown).
    pub tables: u32,
    pub dead_rows: i64,
    pub modified_rows: i64,
    pub dead_rows_after: Option<i64>,
    /// The VACUUM each table got (`VACUUM (ANALYZE, INDEX_CLEANUP ON)`).
    #[serde(default)]
    pub command: String,
    pub vacuum_seconds: f64,
    pub checkpoint_seconds: f64,
    /// The per-table record, relative to the session's directory.
    pub raw: String,
    /// Why it failed (the contest then went on without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One placement's prewarm before a contest's warm-up (a new segment: after a session start or a
/// restart too). Its per-relation output is `sessions/<session>/<raw>`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrewarmRecord {
    pub session: String,
    pub contest: String,
    /// The contest's segment the prewarm opened (1 = its first).
    pub segment: u32,
    pub placement: String,
    /// Relations read, blocks `pg_prewarm` returned over all of them, and their size.
    pub relations: u32,
    pub blocks: u64,
    pub mib: f64,
    pub seconds: f64,
    /// The server cgroup's page cache right after, and its memory limit (MiB), when it has a cgroup.
    pub page_cache_mib: Option<f64>,
    pub memory_limit_mib: Option<f64>,
    /// The per-relation record, relative to the session's directory.
    pub raw: String,
    /// Why it failed (the contest then went on without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `[measurement] handicap_cpus` and `handicap_spread`: each life's quota is `cpus * exp(spread *
/// z)`, z standard normal from the run's seed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HandicapRecord {
    pub cpus: f64,
    pub spread_pct: f64,
}

/// CPU lists in the kernel's form (`0`, `1-3`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinningRecord {
    pub client: String,
    pub servers: String,
}

fn default_min_rounds() -> u32 {
    6
}

impl Default for MeasurementRecord {
    fn default() -> Self {
        MeasurementRecord {
            design: Design::Runs,
            equivalence_margin_pct: 2.0,
            seed: None,
            target_halfwidth_pct: None,
            budget_s: None,
            stopped: BTreeMap::new(),
            warm_up_rounds: 0,
            server_order: BTreeMap::new(),
            device_order: Vec::new(),
            control: None,
            min_rounds: default_min_rounds(),
            pinning: None,
            handicap: None,
            prewarm: false,
            prewarms: Vec::new(),
            settle: false,
            settles: Vec::new(),
            estimator: Estimator::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_records_its_nvme_tcp_connection_only_when_it_has_one() {
        let emulated = serde_json::to_value(DeviceRecord::default()).unwrap();
        assert!(emulated.get("nvme_tcp").is_none(), "{emulated}");
        let settings = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let d = DeviceRecord {
            nvme_tcp: Some(NvmeTcpConnectionRecord {
                controller: Some("nvme6".into()),
                requested: settings(&[("ctrl-loss-tmo", "60"), ("queue-size", "kernel default")]),
                in_force: settings(&[("ctrl-loss-tmo", "60"), ("queue-size", "128")]),
            }),
            ..Default::default()
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["nvme_tcp"]["requested"]["queue-size"], "kernel default");
        assert_eq!(v["nvme_tcp"]["in_force"]["queue-size"], "128");
        assert_eq!(serde_json::from_value::<DeviceRecord>(v).unwrap(), d);
        // A manifest written before the field reads as no connection.
        let old: DeviceRecord = serde_json::from_str(r#"{"name": "lb-data"}"#).unwrap();
        assert_eq!(old.nvme_tcp, None);
    }

    #[test]
    fn the_design_keeps_its_spelling() {
        for (d, text) in [(Design::Slices, "\"slices\""), (Design::Runs, "\"runs\"")] {
            assert_eq!(serde_json::to_string(&d).unwrap(), text);
            assert_eq!(serde_json::from_str::<Design>(text).unwrap(), d);
        }
        // A manifest without the field (an older version) was measured by runs.
        let m: MeasurementRecord = serde_json::from_str("{}").unwrap();
        assert_eq!(m.design, Design::Runs);
        assert!(serde_json::from_str::<Design>("\"slice\"").is_err());
    }

    #[test]
    fn order_and_dax_are_spelled_as_before() {
        for (o, text) in [(Order::Interleaved, "interleaved"), (Order::Sequential, "sequential")] {
            assert_eq!((serde_json::to_value(o).unwrap(), o.to_string()), (serde_json::json!(text), text.to_string()));
            assert_eq!(serde_json::from_value::<Order>(serde_json::json!(text)).unwrap(), o);
        }
        for (d, text) in
            [(DaxRequest::Off, "off"), (DaxRequest::Optional, "optional"), (DaxRequest::Required, "required")]
        {
            assert_eq!(serde_json::to_value(d).unwrap(), serde_json::json!(text));
            assert_eq!(serde_json::from_value::<DaxRequest>(serde_json::json!(text)).unwrap(), d);
        }
    }
}

/// Where a study's priors came from, and the priors themselves: written into every manifest, and
/// (with `host_calibrated`) as the calibration file `pgtier calibrate` keeps per host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CalibrationRecord {
    /// The priors were measured on this host, for this key, by `pgtier calibrate`.
    pub host_calibrated: bool,
    /// One sentence on where the priors come from.
    pub source: String,
    /// The calibration file read (or written).
    pub file: Option<String>,
    /// When the calibration's measurements were made (RFC 3339), and the A/A result sets they
    /// came from.
    pub measured_at: Option<String>,
    pub result_sets: Vec<String>,
    /// What makes the calibration valid: the host (CPU model and count, memory, kernel), the
    /// PostgreSQL build, the baseline's device classes, the workloads, scales, clients, memory
    /// limits and slice. A calibration is used only where every entry is equal.
    pub key: BTreeMap<String, String>,
    /// Each workload's prior.
    pub priors: Vec<PriorRecord>,
}

impl CalibrationRecord {
    /// The prior recorded for `workload`, if any.
    pub fn prior(&self, workload: &str) -> Option<&PriorRecord> {
        self.priors.iter().find(|p| p.workload == workload)
    }
}

/// A workload's prior as recorded (the numbers of `stats::rounds::prior::Prior`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PriorRecord {
    pub workload: String,
    /// The pooled round-to-round correlation of the per-round log ratios, and the series it was
    /// pooled from.
    pub rho: f64,
    pub series: usize,
    /// The standard deviation of the offset between two server lives on the log ratio, memory
    /// unlimited and limited, and the null changes it was estimated from.
    pub life_sd_unlimited: f64,
    pub life_sd_limited: f64,
    pub null_changes: usize,
    /// The degrees of freedom of the offset's variance.
    pub life_df: f64,
    /// Where this workload's numbers come from, when not from the calibration as a whole (a
    /// workload the calibration did not measure gets the fallback's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
