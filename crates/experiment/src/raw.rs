//! The experiment file exactly as written: strict (unknown keys are errors), with the places of
//! the values that later checks refer to.

use std::collections::BTreeMap;

use runner::matrix::Order;
use runner::pgbench::Builtin;
use serde::Deserialize;
use tiers::spec::{Backing, DaxPolicy, DeviceClass};
use toml::Spanned;

use crate::keyword::{TransparentHugepages, Word, WorkloadKindWord};
use crate::model::FaultKind;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    pub experiment: Spanned<RawExperiment>,
    #[serde(default)]
    pub postgres: Option<Spanned<RawPostgres>>,
    #[serde(default)]
    pub device: Vec<Spanned<RawDevice>>,
    #[serde(default)]
    pub placement: Vec<Spanned<RawPlacement>>,
    #[serde(default)]
    pub workload: Vec<Spanned<RawWorkload>>,
    #[serde(default)]
    pub emulate: Option<Spanned<RawEmulate>>,
    #[serde(default)]
    pub kernel: Option<Spanned<RawKernel>>,
    #[serde(default)]
    pub fault: Vec<Spanned<RawFault>>,
    #[serde(default)]
    pub measurement: Option<Spanned<RawMeasurement>>,
    #[serde(default)]
    pub claim: Vec<Spanned<RawClaim>>,
    #[serde(default)]
    pub host: Vec<Spanned<RawHost>>,
}

/// Another machine of the experiment, reached over OpenSSH (`[[host]]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    pub name: Spanned<String>,
    /// The SSH destination's IP address (the server's pg_hba.conf admits exactly this address).
    pub address: Spanned<String>,
    /// The remote user (default `root`).
    #[serde(default)]
    pub user: Option<Spanned<String>>,
    /// The SSH port (default 22).
    #[serde(default)]
    pub port: Option<Spanned<i64>>,
    /// The private key (default: OpenSSH's own choice: the agent, `~/.ssh/id_*`).
    #[serde(default)]
    pub identity_file: Option<Spanned<String>>,
    /// The known_hosts file holding the host's key (default `~/.ssh/known_hosts`).
    #[serde(default)]
    pub known_hosts: Option<Spanned<String>>,
    /// What the host does: `client` (runs the benchmark client), `server` (its devices and
    /// PostgreSQL: the matrix runs there), `target` (serves NVMe/TCP devices).
    pub roles: Spanned<Vec<Spanned<String>>>,
    /// pgtier's state directory on the host (run records, work directories; default
    /// `/var/lib/pgtier`), for a server host.
    #[serde(default)]
    pub state_dir: Option<Spanned<String>>,
}

/// A figure the study published (`[[claim]]`): which cell, which metric, the figure.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClaim {
    /// Short name for the report (default `claim[<index>]`).
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    /// The study's words.
    pub text: Spanned<String>,
    /// The contender placement.
    pub placement: Spanned<String>,
    /// The placement it is compared with (default: the experiment's baseline).
    #[serde(default)]
    pub against: Option<Spanned<String>>,
    pub workload: Spanned<String>,
    /// A client count of the workload, or `"peak"`: the peak of its scaling curve. May be left
    /// out when the workload has one client count.
    #[serde(default)]
    pub clients: Option<Spanned<toml::Value>>,
    /// One of the memory limits (`"unlimited"`, `"1GiB"`); may be left out when there is one.
    #[serde(default)]
    pub memory_limit: Option<Spanned<String>>,
    /// One of the profiles; may be left out when there is one.
    #[serde(default)]
    pub profile: Option<Spanned<String>>,
    /// `tps`, `latency`, `latency-p99`, `nopm`, `statement-latency`, `device-iops`, `device-mb-s`.
    pub metric: Spanned<Word<crate::model::ClaimMetric>>,
    /// `statement-latency`: the statement, as its first words (`UPDATE pgbench_accounts`).
    #[serde(default)]
    pub statement: Option<Spanned<String>>,
    /// The study's figure: `"+13.4%"`, `"-30.8%"`, `"3.4x"`, `"+2%..+7%"`.
    pub figure: Spanned<String>,
    /// `placements` (default: two placements of this result set) or `result-sets` (the same
    /// cell in two result sets, e.g. two releases or PostgreSQL versions).
    #[serde(default)]
    pub across: Option<Spanned<Word<crate::model::ClaimAcross>>>,
    /// The study's regime when it measured the figure: its data set's size (`"742GB"`) and,
    /// with it, its server's memory (`"200GB"`); the claim is judged only in a cell whose data set
    /// sits in memory alike.
    #[serde(default)]
    pub study_data_set: Option<Spanned<String>>,
    #[serde(default)]
    pub study_memory: Option<Spanned<String>>,
    /// The cell under `--emulate`, when the emulated matrix has other client counts or memory
    /// limits than the study.
    #[serde(default)]
    pub emulate: Option<Spanned<RawClaimEmulate>>,
}

/// `[claim.emulate]`: the cell a claim is checked on when emulating.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClaimEmulate {
    #[serde(default)]
    pub clients: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub memory_limit: Option<Spanned<String>>,
}

/// How the matrix is measured: the design, its time budget and its precision target.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeasurement {
    /// `slices` (every placement's server up at once, the load alternating in short slices) or
    /// `runs` (a server start, ramp-up and measured run per cell and repetition).
    #[serde(default)]
    pub design: Option<Spanned<Word<crate::model::Design>>>,
    /// Slices: the length of one slice.
    #[serde(default)]
    pub slice: Option<Spanned<String>>,
    /// Slices: discarded load per placement after its servers start (default: the workload's
    /// ramp_up).
    #[serde(default)]
    pub warm_up: Option<Spanned<String>>,
    /// Slices: the measured phase's time budget over all contests.
    #[serde(default)]
    pub budget: Option<Spanned<String>>,
    /// Slices: a contest stops once every delta's 95% interval is at most this wide (`"5%"`).
    #[serde(default)]
    pub target_halfwidth: Option<Spanned<String>>,
    /// A delta whose whole 95% interval lies inside ±this is called equivalent (`"2%"`).
    #[serde(default)]
    pub equivalence_margin: Option<Spanned<String>>,
    /// Slices: rounds every contest gets before its interval is judged.
    #[serde(default)]
    pub min_rounds: Option<Spanned<u32>>,
    /// Slices: leading rounds of every segment that do not count (the warm-up cut).
    #[serde(default)]
    pub warm_up_rounds: Option<Spanned<u32>>,
    /// Slices: read every relation of the data set into each server's caches (pg_prewarm)
    /// before every contest's warm-up (default true; false for cold-cache figures).
    #[serde(default)]
    pub prewarm: Option<Spanned<bool>>,
    /// Slices: VACUUM (ANALYZE) and CHECKPOINT each placement's database before a contest that
    /// follows one that wrote to it (default true; false keeps the carry-over).
    #[serde(default)]
    pub settle: Option<Spanned<bool>>,
    /// A negative control: a twin of the baseline placement measured as one more contender.
    #[serde(default)]
    pub control: Option<Spanned<bool>>,
    /// The CPUs pgbench may run on (`"0"`); with `pin_servers`, which the servers may.
    #[serde(default)]
    pub pin_client: Option<Spanned<String>>,
    /// The CPUs every server of this machine may run on (`"1"`, `"1-3"`).
    #[serde(default)]
    pub pin_servers: Option<Spanned<String>>,
    /// A test of the method: every server life's CPU quota, in CPUs (`0.6`), before the spread.
    #[serde(default)]
    pub handicap_cpus: Option<Spanned<f64>>,
    /// With `handicap_cpus`: the spread of the quota between server lives (`"8%"`, `"0%"`).
    #[serde(default)]
    pub handicap_spread: Option<Spanned<String>>,
}

/// A fault injected into one measured run (fault-handling studies, and pgtier's own tests).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    /// The run, by its position in the executed order (1-based); in the slices design, the
    /// measured slice by its sequence number (warm-ups are not counted).
    pub run: Spanned<u32>,
    /// When, into the measured interval.
    pub after: Spanned<String>,
    /// `io-errors`, `fill-device`, `kill-server`, `stop-target` or `hang-client`.
    pub kind: Spanned<Word<FaultKind>>,
    #[serde(default)]
    pub device: Option<Spanned<String>>,
}

/// Kernel settings the study changed; applied only when the file asks, restored afterwards.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    /// `"vm.swappiness" = "0"`, ...
    #[serde(default)]
    pub sysctls: BTreeMap<String, Spanned<toml::Value>>,
    /// `always`, `madvise` or `never`.
    #[serde(default)]
    pub transparent_hugepages: Option<Spanned<Word<TransparentHugepages>>>,
    /// e.g. `performance`.
    #[serde(default)]
    pub cpu_governor: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The study this file reproduces (a reference for readers).
    #[serde(default)]
    pub study: Option<String>,
    pub baseline: Spanned<String>,
    #[serde(default)]
    pub repetitions: Option<Spanned<u32>>,
    #[serde(default)]
    pub order: Option<Spanned<Word<Order>>>,
    /// Seconds each fio job runs on each device before the matrix (`"0s"` = no probe).
    #[serde(default)]
    pub device_probe: Option<Spanned<String>>,
    /// How long a benchmark may outlive its duration before the watchdog ends it (default 30s or
    /// half the duration, whichever is longer).
    #[serde(default)]
    pub watchdog_grace: Option<Spanned<String>>,
    /// Where the data sets are built once before they are copied onto each placement:
    /// `{ device = "<a device of this file>" }` or `{ dir = "/absolute/path" }` (default: the
    /// state directory, `$PGTIER_STATE_DIR/work/<run id>/golden`).
    #[serde(default)]
    pub golden_copy: Option<Spanned<RawGoldenCopy>>,
}

/// `golden_copy = { device = "..." }` or `{ dir = "..." }` (one of the two).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGoldenCopy {
    #[serde(default)]
    pub device: Option<Spanned<String>>,
    #[serde(default)]
    pub dir: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPostgres {
    /// `"auto"` (default) or a directory holding initdb, postgres and pgbench.
    #[serde(default)]
    pub bin_dir: Option<Spanned<String>>,
    /// The OS user the server runs as (default `postgres`).
    #[serde(default)]
    pub os_user: Option<Spanned<String>>,
    /// Settings profiles from `configs/postgres/<name>.toml`; each one is a matrix dimension.
    #[serde(default)]
    pub profiles: Option<Spanned<Vec<Spanned<String>>>>,
    /// Settings applied on top of every profile.
    #[serde(default)]
    pub settings: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    /// Memory limits of the server's cgroup (`"unlimited"`, `"1GiB"`, or
    /// `{ limit = "1GiB", settings = { shared_buffers = "256MB" } }`); a matrix dimension.
    #[serde(default)]
    pub memory_limits: Option<Spanned<Vec<Spanned<RawMemoryLimit>>>>,
    /// PostgreSQL builds to compare (`[{ name = "pg15", bin_dir = "..." }, ...]`); a matrix
    /// dimension. Without it, `bin_dir` is the one build.
    #[serde(default)]
    pub builds: Option<Spanned<Vec<Spanned<RawBuild>>>>,
}

/// One PostgreSQL build.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBuild {
    pub name: Spanned<String>,
    /// `"auto"` or a directory holding initdb and postgres (pgbench too, or the system's is used).
    pub bin_dir: Spanned<String>,
}

/// A memory limit, alone or with settings that apply only under it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawMemoryLimit {
    Plain(String),
    WithSettings(RawMemoryLimitTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemoryLimitTable {
    pub limit: String,
    /// Plain values: spans do not survive serde's untagged enums.
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawThrottle {
    #[serde(default)]
    pub read_iops: Option<u64>,
    #[serde(default)]
    pub write_iops: Option<u64>,
    #[serde(default)]
    pub read_bandwidth: Option<Spanned<String>>,
    #[serde(default)]
    pub write_bandwidth: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDeviceEmulate {
    /// `loop-file`, `zram`, `tmpfs-loop` or `nbd`.
    #[serde(default)]
    pub backing: Option<Spanned<Word<Backing>>>,
    #[serde(default)]
    pub size: Option<Spanned<String>>,
    /// Added per-I/O latency (nbd backing).
    #[serde(default)]
    pub latency: Option<Spanned<String>>,
    #[serde(default)]
    pub zram_algorithm: Option<String>,
    /// Caps that make the emulated device behave like a slower one.
    #[serde(default)]
    pub throttle: Option<Spanned<RawThrottle>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevice {
    pub name: Spanned<String>,
    pub class: Spanned<Word<DeviceClass>>,
    #[serde(default)]
    pub description: Option<String>,
    // Local devices.
    #[serde(default)]
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub serial: Option<String>,
    // PMem.
    #[serde(default)]
    pub namespace: Option<Spanned<String>>,
    #[serde(default)]
    pub allow_reconfigure: Option<bool>,
    // NVMe over TCP.
    #[serde(default)]
    pub address: Option<Spanned<String>>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub nqn: Option<Spanned<String>>,
    #[serde(default)]
    pub host_nqn: Option<String>,
    #[serde(default)]
    pub host_id: Option<Spanned<String>>,
    #[serde(default)]
    pub nsid: Option<u32>,
    /// The namespace's UUID or NGUID, checked after connect.
    #[serde(default)]
    pub uuid: Option<Spanned<String>>,
    #[serde(default)]
    pub dhchap_secret_env: Option<String>,
    #[serde(default)]
    pub dhchap_secret_file: Option<String>,
    /// The `[[host]]` with the `target` role that serves this NVMe/TCP device.
    #[serde(default)]
    pub target: Option<Spanned<String>>,
    /// The block device on the target host that nvmet exports (real hardware).
    #[serde(default)]
    pub export: Option<Spanned<String>>,
    /// Let any host that reaches the target host's port connect (nvmet's
    /// `attr_allow_any_host`); by default only this machine's host NQN is admitted.
    #[serde(default)]
    pub allow_any_host: Option<Spanned<bool>>,
    // Filesystem and preparation.
    #[serde(default)]
    pub mkfs_options: Vec<String>,
    #[serde(default)]
    pub mount_options: Vec<String>,
    /// `off`, `optional` or `required` (default `required` for pmem, `off` otherwise).
    #[serde(default)]
    pub dax: Option<Spanned<Word<DaxPolicy>>>,
    #[serde(default)]
    pub partition: Option<bool>,
    #[serde(default)]
    pub allow_wipe: Option<bool>,
    #[serde(default)]
    pub discard: Option<bool>,
    /// Fraction of the device written before mkfs (seed 002's preconditioning).
    #[serde(default)]
    pub precondition_fill: Option<Spanned<f64>>,
    #[serde(default)]
    pub throttle: Option<Spanned<RawThrottle>>,
    #[serde(default)]
    pub emulate: Option<Spanned<RawDeviceEmulate>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlacement {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub data: Spanned<String>,
    pub wal: Spanned<String>,
    /// Tablespace role (`tables`, `indexes`, `temp`) -> device.
    #[serde(default)]
    pub tablespaces: BTreeMap<String, Spanned<String>>,
    /// The settings profile this placement's server runs in place of the matrix's.
    #[serde(default)]
    pub profile: Option<Spanned<String>>,
    /// The PostgreSQL build (of `[postgres] builds`) this placement's server runs.
    #[serde(default)]
    pub build: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub name: Spanned<String>,
    /// `pgbench` or `tpcc`.
    pub kind: Spanned<Word<WorkloadKindWord>>,
    #[serde(default)]
    pub builtin: Option<Spanned<Word<Builtin>>>,
    #[serde(default)]
    pub scale: Option<Spanned<u32>>,
    /// Client counts: integers, or strings like `"20%"` of the machine's hardware threads.
    pub clients: Spanned<Vec<Spanned<toml::Value>>>,
    #[serde(default)]
    pub threads: Option<Spanned<u32>>,
    pub duration: Spanned<String>,
    #[serde(default)]
    pub ramp_up: Option<Spanned<String>>,
    #[serde(default)]
    pub per_statement: Option<bool>,
    #[serde(default)]
    pub init_args: Vec<String>,
    #[serde(default)]
    pub extra_args: Vec<String>,
    // TPC-C (kind = "tpcc"); `clients` are the virtual users.
    #[serde(default)]
    pub warehouses: Option<Spanned<u32>>,
    /// `spec` (default) or `hammerdb`.
    #[serde(default)]
    pub mode: Option<Spanned<Word<tpcc::Mode>>>,
    /// `procedures` (default, as HammerDB) or `client-sql`.
    #[serde(default)]
    pub side: Option<Spanned<Word<tpcc::Side>>>,
    #[serde(default)]
    pub keying_and_thinking: Option<bool>,
    #[serde(default)]
    pub all_warehouses: Option<bool>,
    #[serde(default)]
    pub load_workers: Option<u32>,
}

/// Overrides that make the study fit a small machine (`--emulate`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEmulate {
    #[serde(default)]
    pub scale: Option<Spanned<u32>>,
    /// TPC-C warehouses when emulating.
    #[serde(default)]
    pub warehouses: Option<Spanned<u32>>,
    #[serde(default)]
    pub duration: Option<Spanned<String>>,
    #[serde(default)]
    pub ramp_up: Option<Spanned<String>>,
    #[serde(default)]
    pub clients: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub threads: Option<Spanned<u32>>,
    #[serde(default)]
    pub memory_limits: Option<Spanned<Vec<Spanned<RawMemoryLimit>>>>,
    /// Default size of emulated devices.
    #[serde(default)]
    pub device_size: Option<Spanned<String>>,
    #[serde(default)]
    pub repetitions: Option<Spanned<u32>>,
    #[serde(default)]
    pub device_probe: Option<Spanned<String>>,
    /// Apply the [kernel] settings when emulating too (default: record them, change nothing on a
    /// shared development box).
    #[serde(default)]
    pub apply_kernel_settings: Option<bool>,
    /// Settings applied on top of every profile when emulating (e.g. a smaller shared_buffers).
    #[serde(default)]
    pub settings: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    /// `[measurement]` keys that apply when emulating.
    #[serde(default)]
    pub measurement: Option<Spanned<RawMeasurement>>,
}

/// `configs/postgres/<name>.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    #[serde(default)]
    pub description: Option<String>,
    /// Where the settings come from (a study, the PostgreSQL docs).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub settings: BTreeMap<String, Spanned<toml::Value>>,
    /// Settings applied only by builds that know them (a vendor build's own settings, a setting
    /// of a newer major); the report notes where one was left out.
    #[serde(default)]
    pub optional_settings: BTreeMap<String, Spanned<toml::Value>>,
    /// Settings this profile lists but PostgreSQL does not have (e.g. from another distribution);
    /// recorded and skipped, with the reason.
    #[serde(default)]
    pub skipped: BTreeMap<String, String>,
}
