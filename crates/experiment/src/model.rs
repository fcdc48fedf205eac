//! The resolved experiment: what `tiers`, `runner` and xtask consume once the file validated
//! (its JSON is the `resolved_config` of a results manifest, compared by `compare --resume`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use runner::matrix::{MemoryLimit, Order, Profile, WorkloadSpec};
use serde::Serialize;
use tiers::spec::DeviceSpec;

/// Where a value came from: file, line and key, for messages about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub key: String,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, " `{}`", self.key)
    }
}

/// A settings profile with where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileInfo {
    pub profile: Profile,
    pub file: PathBuf,
    pub description: String,
    pub source: Option<String>,
    /// Settings the profile lists but skips, with the reason.
    pub skipped: BTreeMap<String, String>,
    /// Where each of the profile's settings was set (the profile file, the experiment's
    /// `[postgres.settings]` or `[emulate.settings]`).
    #[serde(skip)]
    pub origins: BTreeMap<String, Origin>,
}

/// A PostgreSQL build of the experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Build {
    pub name: String,
    /// None: the installed server, found automatically.
    pub bin_dir: Option<PathBuf>,
    /// Where it was set.
    #[serde(skip)]
    pub origin: Origin,
}

/// Shared memory one cell's server maps, and whether it asks for huge pages: what the preflight
/// checks against the huge pages this machine has reserved.
#[derive(Clone, Debug, PartialEq)]
pub struct HugePagesNeed {
    pub profile: String,
    pub memory_limit: String,
    pub shared_memory_bytes: u64,
    /// Where `huge_pages = on` was set.
    pub origin: Origin,
}

/// Where one placement puts PGDATA and pg_wal (device names).
#[derive(Clone, Debug, Serialize)]
pub struct Placement {
    pub name: String,
    pub description: String,
    pub data: String,
    pub wal: String,
    /// Tablespace role (`tables`, `indexes`, `temp`) -> device name.
    pub tablespaces: BTreeMap<String, String>,
    /// The settings profile its server runs in place of the matrix's (`[[placement]] profile`),
    /// with `[postgres.settings]` and `[emulate.settings]` on top: a profile contrast made a
    /// placement contrast, so that the slices design pairs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileInfo>,
    /// The PostgreSQL build (of `[postgres] builds`) its server runs (`[[placement]] build`): a
    /// build contrast made a placement contrast. Set on every placement once one names a build
    /// (the others run the first build); then builds are no longer a matrix dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

impl Placement {
    /// Every device this placement uses.
    pub fn devices(&self) -> Vec<&str> {
        let mut v = vec![self.data.as_str(), self.wal.as_str()];
        v.extend(self.tablespaces.values().map(String::as_str));
        v
    }
}

/// Where the data sets' golden copies are built (`[experiment] golden_copy`): each data set is
/// built there once, stopped, and copied onto every placement.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum GoldenCopy {
    /// Below the state directory (`$PGTIER_STATE_DIR/work/<run id>/golden`), the default.
    #[default]
    StateDir,
    /// In a directory pgtier makes on the mounted filesystem of this device of the experiment.
    Device { name: String, origin: Origin },
    /// In a directory pgtier makes below this absolute path (which exists, or whose parent does).
    Dir { path: PathBuf, origin: Origin },
}

impl GoldenCopy {
    /// Where the file says it (None for the default).
    pub fn origin(&self) -> Option<&Origin> {
        match self {
            GoldenCopy::StateDir => None,
            GoldenCopy::Device { origin, .. } | GoldenCopy::Dir { origin, .. } => Some(origin),
        }
    }
}

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Every I/O of the device fails with EIO (nbdkit's error filter; emulated nbd devices).
    IoErrors,
    /// The device's filesystem fills up (a filler file takes the free space).
    FillDevice,
    /// The PostgreSQL server is killed (SIGKILL to the postmaster).
    KillServer,
    /// The NVMe/TCP target goes away (nbdkit is killed; emulated nbd devices).
    StopTarget,
    /// The benchmark client stops responding (SIGSTOP); the watchdog must end the run.
    HangClient,
}

/// A fault injected at `after` into the measured interval of run number `run`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultSpec {
    pub run: u32,
    pub after: Duration,
    pub kind: FaultKind,
    pub device: Option<String>,
}

/// Kernel settings to apply for the run (and restore afterwards).
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelSettings {
    pub sysctls: BTreeMap<String, String>,
    pub transparent_hugepages: Option<String>,
    pub cpu_governor: Option<String>,
    /// False when the file lists settings but they are not applied (emulated run).
    pub apply: bool,
}

impl KernelSettings {
    pub fn is_empty(&self) -> bool {
        self.sysctls.is_empty() && self.transparent_hugepages.is_none() && self.cpu_governor.is_none()
    }
}

/// The experiment, validated and resolved (overrides applied when emulating).
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    pub file: PathBuf,
    pub name: String,
    pub description: String,
    pub study: Option<String>,
    pub baseline: String,
    pub repetitions: u32,
    pub order: Order,
    /// How long each fio probe job runs per device (zero: no probe).
    pub device_probe: Duration,
    /// Set by the file: how long a benchmark may outlive its duration before the watchdog acts.
    pub watchdog_grace: Option<Duration>,
    pub emulated: bool,
    /// The first build's binaries (None: found automatically).
    pub bin_dir: Option<PathBuf>,
    /// The PostgreSQL builds compared (one, named `default`, unless `[postgres] builds` names
    /// several).
    pub builds: Vec<Build>,
    pub os_user: String,
    pub profiles: Vec<ProfileInfo>,
    pub memory_limits: Vec<MemoryLimit>,
    /// Where each memory limit was set (same order as `memory_limits`).
    #[serde(skip)]
    pub memory_limit_origins: Vec<Origin>,
    /// Cells whose server asks for `huge_pages = on`.
    #[serde(skip)]
    pub huge_pages_needs: Vec<HugePagesNeed>,
    pub devices: Vec<DeviceSpec>,
    pub placements: Vec<Placement>,
    pub workloads: Vec<WorkloadSpec>,
    pub kernel: KernelSettings,
    pub measurement: Measurement,
    pub faults: Vec<FaultSpec>,
    /// Things worth knowing that are not errors.
    pub warnings: Vec<String>,
    /// Where the data sets' golden copies are built. Left out of the resolved configuration: it
    /// changes no measurement, and a `--resume` may move it (after a run refused for lack of room).
    #[serde(skip)]
    pub golden_copy: GoldenCopy,
    /// The study's published figures (`[[claim]]`). Left out of the resolved configuration: a
    /// claim changes what the report checks, not what is measured, so adding one never stops a
    /// `--resume`.
    #[serde(skip)]
    pub claims: Vec<Claim>,
    /// Other machines (`[[host]]`), reached over OpenSSH. Left out of the resolved configuration
    /// when there are none, so a local run's stays as it was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<Host>,
}

impl Experiment {
    /// The builds the matrix runs as a dimension: all of `[postgres] builds`, or none when the
    /// placements name their builds (`[[placement]] build`; empty: one context, each placement
    /// on its own build).
    pub fn matrix_builds(&self) -> &[Build] {
        if self.placements.iter().any(|p| p.build.is_some()) { &[] } else { &self.builds }
    }

    /// Whether any server runs build `name`: every build when builds are a matrix dimension;
    /// otherwise those the placements name.
    pub fn runs_build(&self, name: &str) -> bool {
        !self.matrix_builds().is_empty() || self.placements.iter().any(|p| p.build.as_deref() == Some(name))
    }

    /// The index in `builds` of the build placement `p`'s server runs, when it names its own.
    pub fn placement_build(&self, p: usize) -> Option<usize> {
        let name = self.placements.get(p)?.build.as_ref()?;
        self.builds.iter().position(|b| &b.name == name)
    }

    /// The host that runs the benchmark client, when it is not this machine.
    pub fn client_host(&self) -> Option<&Host> {
        self.hosts.iter().find(|h| h.roles.contains(&HostRole::Client))
    }

    /// The hosts that run the matrix (a fleet when there are several); none: this machine.
    pub fn server_hosts(&self) -> Vec<&Host> {
        self.hosts.iter().filter(|h| h.roles.contains(&HostRole::Server)).collect()
    }

    /// The experiment as server host `name` runs it: the server hosts are left out (the host is
    /// this machine there), the client host stays.
    pub fn as_server_host(&mut self) {
        self.hosts.retain(|h| !h.roles.contains(&HostRole::Server));
    }

    /// The hosts that serve a device of the placements (`target` role), each once, in file order.
    pub fn target_hosts(&self) -> Vec<&Host> {
        let used = self.used_devices();
        self.hosts
            .iter()
            .filter(|h| used.iter().any(|d| d.target_host.as_ref().is_some_and(|t| t.name == h.name)))
            .collect()
    }

    pub fn device(&self, name: &str) -> Option<&DeviceSpec> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// Devices used by at least one placement, in file order.
    pub fn used_devices(&self) -> Vec<&DeviceSpec> {
        self.devices.iter().filter(|d| self.placements.iter().any(|p| p.devices().contains(&d.name.as_str()))).collect()
    }
}

/// How a matrix is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// Every placement's server of one memory limit and profile is up at once, and the load
    /// alternates between them in short slices (rounds in a random order), so that what the
    /// machine does meanwhile lands on every placement alike; deltas are paired by round.
    Slices,
    /// A server start, CHECKPOINT, dropped caches, ramp-up and measured run per cell and
    /// repetition; deltas compare independent runs.
    Runs,
}

impl Design {
    pub fn as_str(&self) -> &'static str {
        match self {
            Design::Slices => "slices",
            Design::Runs => "runs",
        }
    }
}

/// The measurement design and its precision target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measurement {
    pub design: Design,
    /// Slices: the length of one slice.
    pub slice: Duration,
    /// Slices: discarded load per placement after its servers start; None = the workload's
    /// ramp_up.
    pub warm_up: Option<Duration>,
    /// Slices: the time budget of the measured phase (None: `min_rounds` rounds per contest).
    pub budget: Option<Duration>,
    /// Slices: the half-width (percentage points) each delta's 95% interval should reach.
    pub target_halfwidth_pct: Option<f64>,
    /// A delta whose whole 95% interval lies inside ±this many percent is called equivalent.
    pub equivalence_margin_pct: f64,
    /// Slices: rounds every contest gets before its interval is judged: the pilot whose spread
    /// sizes the contest (Stein's rule).
    pub min_rounds: u32,
    /// Slices: leading rounds of every segment (a session, or a server life) that do not count:
    /// the fixed part of the warm-up cut (the report's trend tests may cut more).
    pub warm_up_rounds: u32,
    /// Slices: before every contest's warm-up (so after every server start and restart too),
    /// every relation and index of the data set is read into each placement's server
    /// (`pg_prewarm`: shared_buffers, and the page cache inside the server's memory limit), so a
    /// memory-limited cell does not spend its first rounds filling its cache. False: cold-cache
    /// figures (the page cache is dropped once per session, then only the warm-up load warms).
    pub prewarm: bool,
    /// Slices: before a contest, when an earlier contest wrote to the placements' databases (since
    /// they were copied or last settled), each placement's database is brought to a clean state:
    /// `VACUUM (ANALYZE)` of every table, then `CHECKPOINT`, so that a read-only contest after a
    /// read-write one does not spend its first rounds pruning and setting hint bits on the rows
    /// the other updated (writes that fade over its rounds). False: each contest measures the
    /// data as the earlier ones left it.
    pub settle: bool,
    /// A negative control: the placement [`CONTROL_PLACEMENT`], a twin of the baseline (on
    /// identical emulated devices of its own when emulating, on the baseline's own devices on
    /// real hardware), is measured as one more contender; nothing can differ, so a change it
    /// shows is the method's own error.
    pub control: bool,
    /// CPU pinning: pgbench on some CPUs, every server on the others (None: the scheduler's
    /// choice), so a slice's client and server do not compete for one CPU.
    pub pinning: Option<Pinning>,
    /// A test of the method, not a measurement of storage (`handicap_cpus`, `handicap_spread`):
    /// every server life gets a CPU quota of its own, drawn from the run's seed, so that an A/A
    /// run has an offset between server lives of known size.
    pub handicap: Option<Handicap>,
}

/// `[measurement] handicap_cpus` and `handicap_spread`: each server life's CPU quota is
/// `cpus * exp(spread * z)`, z standard normal, drawn per life from the run's seed. A server that
/// is CPU-bound at that quota runs at a throughput in proportion to it, so the lives of one
/// placement differ by about `spread` (the offset between server lives, on the log scale).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Handicap {
    pub cpus: f64,
    /// The standard deviation of the quota's logarithm, as a percentage (`8.0`).
    pub spread_pct: f64,
}

impl Handicap {
    /// One life's quota, in CPUs: `z` is that life's standard normal draw.
    pub fn quota(&self, z: f64) -> f64 {
        self.cpus * (self.spread_pct / 100.0 * z).exp()
    }
}

/// `[measurement] pin_client` and `pin_servers`: the CPUs (as the kernel numbers them) the
/// benchmark client and the servers of this machine may run on; disjoint, neither empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pinning {
    pub client: Vec<u32>,
    pub servers: Vec<u32>,
}

/// The name of the negative control's placement (`[measurement] control = true`).
pub const CONTROL_PLACEMENT: &str = "control";

/// The suffix of the negative control's own emulated devices (`nvme-data` -> `nvme-data-control`).
pub const CONTROL_DEVICE_SUFFIX: &str = "-control";

impl Default for Measurement {
    fn default() -> Self {
        Measurement {
            design: Design::Runs,
            slice: Duration::from_secs(4),
            warm_up: None,
            budget: None,
            target_halfwidth_pct: None,
            equivalence_margin_pct: 2.0,
            min_rounds: 6,
            warm_up_rounds: 2,
            prewarm: true,
            settle: true,
            control: false,
            pinning: None,
            handicap: None,
        }
    }
}

/// What a published figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimMetric {
    Tps,
    Latency,
    LatencyP99,
    Nopm,
    /// The average latency of one statement of the script (pgbench `-r`).
    StatementLatency,
    /// Read + write IOPS of the placement's devices (seed 002's "IOPS ... the sum of read/write").
    DeviceIops,
    /// Read + write MB/s of the placement's devices.
    DeviceMbS,
}

/// What a claim compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimAcross {
    /// Two placements of one result set.
    Placements,
    /// The same cell in two result sets (two releases, two PostgreSQL versions).
    ResultSets,
    /// One placement's cell under the claim's profile against the same cell under the default
    /// profile (a study whose contrast is its settings profile, such as seed 004's).
    Profiles,
}

/// A figure the study published, resolved to the cells of this (possibly emulated) matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    pub name: String,
    pub text: String,
    /// Where it is written (file, line, `claim[i]`).
    pub origin: Origin,
    pub placement: String,
    pub against: String,
    pub workload: String,
    /// None with `at_peak`.
    pub clients: Option<u32>,
    /// The delta at the peak of the scaling curve.
    pub at_peak: bool,
    /// The cell's memory limit as cells name it (`unlimited`, `192MiB`).
    pub memory_limit: String,
    pub profile: String,
    pub metric: ClaimMetric,
    pub statement: Option<String>,
    /// As written, and as a change in percent (a point: low = high).
    pub figure: String,
    pub low_pct: f64,
    pub high_pct: f64,
    pub across: ClaimAcross,
    /// How the emulated cell differs from the study's, when it does.
    pub emulation_note: Option<String>,
    /// The study's data set and server memory when it measured the figure (bytes), when the
    /// file says (`study_data_set`, `study_memory`).
    pub study_regime: Option<StudyRegime>,
}

/// The study's regime behind a claim: its data set's size and its server's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct StudyRegime {
    pub data_set_bytes: u64,
    pub memory_bytes: u64,
}

/// What a `[[host]]` does in the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostRole {
    /// Runs the benchmark client (pgbench), which reaches the server over TCP.
    Client,
    /// Holds the devices and runs PostgreSQL: the whole matrix runs there, driven by a copy of
    /// pgtier the controller ships to it. Several server hosts are a fleet: each runs the same
    /// matrix, and one report compares them.
    Server,
    /// Serves NVMe/TCP devices (`target = "<host>"` on a device): nvmet on real hardware, the
    /// nbdkit stand-in with `--emulate`.
    Target,
}

/// Another machine of the experiment, reached over OpenSSH with strict host-key checking.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Host {
    pub name: String,
    /// The SSH destination, and the address the server admits the client from.
    pub address: std::net::IpAddr,
    pub user: String,
    pub port: u16,
    /// None: OpenSSH's own choice (the agent, `~/.ssh/id_*`).
    pub identity_file: Option<PathBuf>,
    /// None: OpenSSH's default user file, `~/.ssh/known_hosts`.
    pub known_hosts: Option<PathBuf>,
    pub roles: Vec<HostRole>,
    /// pgtier's state directory on a server host (default `/var/lib/pgtier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<PathBuf>,
    #[serde(skip)]
    pub origin: Origin,
}
