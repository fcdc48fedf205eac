//! The run matrix: placements x workloads x client counts x memory limits x settings profiles x
//! repetitions, planned in a recorded order (runs are made by `execute`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::pgbench::Builtin;
use results::record::{CellKey, MemoryLabel};

/// Where a placement puts PGDATA and pg_wal.
#[derive(Clone, Debug, Serialize)]
pub struct PlacementTarget {
    pub name: String,
    /// PGDATA directory (on the data device).
    pub data_dir: PathBuf,
    /// WAL directory (on the WAL device).
    pub wal_dir: PathBuf,
    /// Devices whose I/O is recorded: (role, device name, kernel name for /proc/diskstats).
    pub devices: Vec<DeviceRole>,
    /// Tablespace role (`tables`, `indexes`, `temp`) -> directory on its device.
    pub tablespaces: BTreeMap<String, PathBuf>,
    /// The settings profile its server runs in place of the matrix's (`[[placement]] profile`).
    pub profile: Option<Profile>,
    /// The PostgreSQL build its server runs in place of the matrix's (`[[placement]] build`).
    #[serde(skip)]
    pub install: Option<crate::install::PgInstall>,
}

/// Tablespace roles a placement may put on their own device (seed 001: `--tablespace`,
/// `--index-tablespace`; `temp` becomes `temp_tablespaces`).
pub const TABLESPACE_ROLES: [&str; 3] = ["tables", "indexes", "temp"];

#[derive(Clone, Debug, Serialize)]
pub struct DeviceRole {
    /// `data`, `wal` or `data+wal`.
    pub role: String,
    pub device: String,
    pub kernel_name: String,
}

/// A pgbench workload.
#[derive(Clone, Debug, Serialize)]
pub struct PgbenchWorkload {
    pub builtin: Builtin,
    pub scale: u32,
    pub init_args: Vec<String>,
    pub extra_args: Vec<String>,
    /// `-r`: per-statement latencies.
    pub per_statement: bool,
}

/// A TPC-C workload (HammerDB TPROC-C semantics, `tpcc` crate).
#[derive(Clone, Debug, Serialize)]
pub struct TpccWorkload {
    pub warehouses: u32,
    pub mode: tpcc::Mode,
    pub side: tpcc::Side,
    pub keying_and_thinking: bool,
    pub all_warehouses: bool,
    /// Parallel loader connections.
    pub load_workers: u32,
}

impl TpccWorkload {
    pub fn config(&self) -> tpcc::TpccConfig {
        tpcc::TpccConfig {
            warehouses: self.warehouses,
            mode: self.mode,
            side: self.side,
            keying_and_thinking: self.keying_and_thinking,
            all_warehouses: self.all_warehouses,
        }
    }

    /// `tpcc-spec-procedures`-style name of what runs.
    pub fn script(&self) -> String {
        format!(
            "tpcc-{}-{}",
            self.mode.as_str(),
            match self.side {
                tpcc::Side::ServerProcedures => "procedures",
                tpcc::Side::ClientSql => "client-sql",
            }
        )
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WorkloadKind {
    Pgbench(PgbenchWorkload),
    Tpcc(TpccWorkload),
}

/// One workload of the experiment.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadSpec {
    pub name: String,
    pub kind: WorkloadKind,
    /// Client counts to run (already resolved against the machine's hardware threads).
    pub clients: Vec<u32>,
    /// Threads per run; `None` = min(clients, cores).
    pub threads: Option<u32>,
    pub duration: Duration,
    /// Excluded from every figure: a separate, discarded run just before the measured one.
    pub ramp_up: Duration,
}

impl WorkloadSpec {
    /// Rough size of the data set on disk (tables and indexes), to check device sizes.
    pub fn estimated_bytes(&self) -> u64 {
        self.dataset(&[]).data_bytes()
    }

    /// What the memory estimate needs to know of the data: the rows of the largest table
    /// (pgbench_accounts: 100,000 per scale unit; TPC-C order_line: about 300,000 per warehouse).
    pub fn data_shape(&self) -> crate::memory::DataShape {
        let rows = match &self.kind {
            WorkloadKind::Pgbench(p) => u64::from(p.scale) * 100_000,
            WorkloadKind::Tpcc(t) => u64::from(t.warehouses) * 300_000,
        };
        crate::memory::DataShape { largest_table_rows: Some(rows) }
    }

    /// Whether the workload writes to its data set (so leaves dead rows and unhinted tuples for
    /// what runs after it): every workload but pgbench's builtin select-only.
    pub fn writes(&self) -> bool {
        !matches!(&self.kind, WorkloadKind::Pgbench(p) if p.builtin == crate::pgbench::Builtin::SelectOnly)
    }

    pub fn scale(&self) -> u32 {
        match &self.kind {
            WorkloadKind::Pgbench(p) => p.scale,
            WorkloadKind::Tpcc(t) => t.warehouses,
        }
    }

    /// The data set this workload runs on; `tablespace_roles` are the roles any placement uses.
    pub fn dataset(&self, tablespace_roles: &[String]) -> crate::dataset::DatasetSpec {
        match &self.kind {
            WorkloadKind::Pgbench(p) => crate::dataset::DatasetSpec::Pgbench {
                scale: p.scale,
                init_args: p.init_args.clone(),
                tablespaces: tablespace_roles.to_vec(),
            },
            WorkloadKind::Tpcc(t) => crate::dataset::DatasetSpec::Tpcc {
                warehouses: t.warehouses,
                workers: t.load_workers,
                hammerdb_schema: t.mode == tpcc::Mode::HammerDbFaithful,
            },
        }
    }
}

/// A named set of PostgreSQL settings.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    pub name: String,
    pub settings: BTreeMap<String, String>,
    /// Settings applied only by builds that know them (`[optional_settings]` of the profile).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub optional: BTreeMap<String, String>,
}

impl Profile {
    /// The settings a build runs with: every setting, and the optional ones the build knows
    /// (`known`: the names its `postgres --describe-config` lists; None: all of them).
    pub fn for_build(&self, known: Option<&std::collections::BTreeSet<String>>) -> Profile {
        let mut settings = self.settings.clone();
        for (k, v) in &self.optional {
            if known.is_none_or(|known| known.contains(k)) {
                settings.insert(k.clone(), v.clone());
            }
        }
        Profile { name: self.name.clone(), settings, optional: BTreeMap::new() }
    }
}

/// The build of an experiment that names none.
pub const DEFAULT_BUILD: &str = results::record::DEFAULT_BUILD;

/// A PostgreSQL build the matrix runs (`[postgres] builds`): a matrix dimension like profiles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuildTarget {
    pub name: String,
    /// None: found automatically (the installed server).
    pub bin_dir: Option<PathBuf>,
}

impl PlacementTarget {
    /// Where this placement keeps `build`'s copy of the data: each build its own directories
    /// when the matrix has several (their on-disk formats differ), the placement's own otherwise.
    pub fn for_build(&self, build: &str, several: bool) -> PlacementTarget {
        if !several {
            return self.clone();
        }
        let under = |p: &std::path::Path| {
            let name = p.file_name().map(|n| n.to_os_string()).unwrap_or_default();
            p.parent().map(|d| d.join(build).join(name)).unwrap_or_else(|| p.to_path_buf())
        };
        PlacementTarget {
            name: self.name.clone(),
            data_dir: under(&self.data_dir),
            wal_dir: under(&self.wal_dir),
            devices: self.devices.clone(),
            tablespaces: self.tablespaces.iter().map(|(r, p)| (r.clone(), under(p))).collect(),
            profile: self.profile.clone(),
            install: self.install.clone(),
        }
    }

    /// `env` with this placement's own build when it names one (`[[placement]] build`).
    pub fn env_for<'e>(&self, env: &crate::RunnerEnv<'e>) -> crate::RunnerEnv<'e> {
        let mut env = env.clone();
        if let Some(install) = &self.install {
            env.server.install = install.clone();
        }
        env
    }
}

/// A memory limit for the server's cgroup, with settings that only apply under it (a server
/// limited to 1 GiB cannot keep an 80 GB shared_buffers).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryLimit {
    /// `None` = unlimited.
    pub bytes: Option<u64>,
    pub settings: BTreeMap<String, String>,
}

impl MemoryLimit {
    pub fn unlimited() -> MemoryLimit {
        MemoryLimit { bytes: None, settings: BTreeMap::new() }
    }

    /// `256MiB`-style label of the limit (`unlimited` for none), for messages.
    pub fn label(&self) -> String {
        MemoryLabel::of(self.bytes).to_string()
    }
}

/// `A B C A B C` (default: drift of the machine spreads over every placement) or `A A B B C C`:
/// the result model's own type, so that the manifest records the order the matrix had.
pub use results::manifest::Order;

/// The whole matrix.
#[derive(Clone, Debug, Serialize)]
pub struct MatrixSpec {
    pub placements: Vec<PlacementTarget>,
    pub workloads: Vec<WorkloadSpec>,
    pub memory_limits: Vec<MemoryLimit>,
    pub profiles: Vec<Profile>,
    /// At least one; the first is the reference of the by-build comparison.
    pub builds: Vec<BuildTarget>,
    pub repetitions: u32,
    pub order: Order,
    pub cores: u32,
    /// Seeds the random order of the placements inside each block (interleaved order), so the
    /// baseline is not always first; recorded in the manifest, `--seed` repeats it. None keeps
    /// the placements in the file's order.
    pub seed: Option<u64>,
}

impl MatrixSpec {
    /// Tablespace roles used by any placement, in a fixed order.
    pub fn tablespace_roles(&self) -> Vec<String> {
        TABLESPACE_ROLES
            .iter()
            .filter(|r| self.placements.iter().any(|p| p.tablespaces.contains_key(**r)))
            .map(|r| r.to_string())
            .collect()
    }
}

/// One run to make.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedRun {
    pub sequence: u32,
    pub run_id: String,
    pub cell: CellKey,
    pub repetition: u32,
    /// Design `slices`: the segment of rounds this slice belongs to (see
    /// [`RunRecord::segment`](results::record::RunRecord)); 0 otherwise.
    pub segment: u32,
    pub placement: usize,
    pub workload: usize,
    pub profile: usize,
    /// Index into the matrix's builds.
    pub build: usize,
    /// Index into the matrix's memory limits.
    pub memory: usize,
    pub memory_limit: Option<u64>,
    pub clients: u32,
    pub threads: u32,
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
/// a small generator whose sequence for a seed never changes, so a recorded seed repeats a run
/// order exactly on any version of pgtier.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Fisher-Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// Which parts of a cell the matrix varies (and run ids therefore name).
#[derive(Clone, Copy, Debug, Default)]
pub struct Varies {
    pub memory: bool,
    pub profile: bool,
    pub build: bool,
}

impl MatrixSpec {
    pub fn varies(&self) -> Varies {
        Varies { memory: self.memory_limits.len() > 1, profile: self.profiles.len() > 1, build: self.builds.len() > 1 }
    }
}

/// The run id of a run: `<sequence>-<placement>-<workload>-c<clients>[-m<memory>][-<profile>][-<build>]-r<repetition>`
/// (memory, profile and build only when the matrix varies them).
pub fn run_id(sequence: u32, cell: &CellKey, repetition: u32, varies: Varies) -> String {
    let Varies { memory: memory_varies, profile: profile_varies, build: build_varies } = varies;
    let mut id = format!("{sequence:04}-{}-{}-c{}", sanitize(&cell.placement), sanitize(&cell.workload), cell.clients);
    if memory_varies {
        id.push_str(&format!("-m{}", sanitize(&cell.memory_limit.to_string())));
    }
    if profile_varies {
        id.push_str(&format!("-{}", sanitize(&cell.profile)));
    }
    if build_varies {
        id.push_str(&format!("-{}", sanitize(&cell.build)));
    }
    id.push_str(&format!("-r{repetition}"));
    id
}

/// Expands the matrix into runs in execution order.
pub fn plan_runs(m: &MatrixSpec) -> Vec<PlannedRun> {
    // (build, profile, memory limit, workload, clients) combinations, then placements and
    // repetitions.
    let mut combos = Vec::new();
    for bi in 0..m.builds.len().max(1) {
        for (pi, _) in m.profiles.iter().enumerate() {
            for (mi, _) in m.memory_limits.iter().enumerate() {
                for (wi, w) in m.workloads.iter().enumerate() {
                    for &c in &w.clients {
                        combos.push((bi, pi, mi, wi, c));
                    }
                }
            }
        }
    }
    let mut order = Vec::new();
    let mut rng = m.seed.map(SplitMix64::new);
    match m.order {
        Order::Interleaved => {
            for rep in 1..=m.repetitions {
                for &combo in &combos {
                    let mut block: Vec<usize> = (0..m.placements.len()).collect();
                    if let Some(rng) = rng.as_mut() {
                        rng.shuffle(&mut block);
                    }
                    for pl in block {
                        order.push((rep, pl, combo));
                    }
                }
            }
        }
        Order::Sequential => {
            for pl in 0..m.placements.len() {
                for &combo in &combos {
                    for rep in 1..=m.repetitions {
                        order.push((rep, pl, combo));
                    }
                }
            }
        }
    }
    order
        .into_iter()
        .enumerate()
        .map(|(i, (rep, pl, (bi, pi, mi, wi, clients)))| {
            let w = &m.workloads[wi];
            let mem = m.memory_limits[mi].bytes;
            let threads = w.threads.unwrap_or(clients.min(m.cores.max(1))).min(clients).max(1);
            let cell = CellKey {
                placement: m.placements[pl].name.clone(),
                workload: w.name.clone(),
                clients,
                memory_limit: MemoryLabel::of(mem),
                profile: m.profiles[pi].name.clone(),
                build: m.builds.get(bi).map_or_else(|| results::record::DEFAULT_BUILD.to_string(), |b| b.name.clone()),
            };
            let run_id = run_id(i as u32 + 1, &cell, rep, m.varies());
            PlannedRun {
                sequence: i as u32 + 1,
                run_id,
                cell,
                repetition: rep,
                segment: 0,
                placement: pl,
                workload: wi,
                profile: pi,
                build: bi,
                memory: mi,
                memory_limit: mem,
                clients,
                threads,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(order: Order) -> MatrixSpec {
        let pl = |n: &str| PlacementTarget {
            name: n.into(),
            data_dir: "/d".into(),
            wal_dir: "/w".into(),
            devices: vec![],
            tablespaces: BTreeMap::new(),
            profile: None,
            install: None,
        };
        let w = |n: &str, b| WorkloadSpec {
            name: n.into(),
            kind: WorkloadKind::Pgbench(PgbenchWorkload {
                builtin: b,
                scale: 1,
                init_args: vec![],
                extra_args: vec![],
                per_statement: false,
            }),
            clients: vec![1, 8],
            threads: None,
            duration: Duration::from_secs(1),
            ramp_up: Duration::ZERO,
        };
        MatrixSpec {
            placements: vec![pl("A"), pl("B"), pl("C")],
            workloads: vec![w("tpcb", Builtin::TpcbLike), w("ro", Builtin::SelectOnly)],
            memory_limits: vec![MemoryLimit { bytes: Some(256 << 20), settings: BTreeMap::new() }],
            profiles: vec![Profile { name: "default".into(), settings: BTreeMap::new(), optional: BTreeMap::new() }],
            builds: vec![BuildTarget { name: "default".into(), bin_dir: None }],
            repetitions: 2,
            order,
            cores: 2,
            seed: None,
        }
    }

    #[test]
    fn only_select_only_counts_as_not_writing() {
        let m = spec(Order::Interleaved);
        assert!(m.workloads[0].writes(), "tpcb-like updates and inserts");
        assert!(!m.workloads[1].writes(), "select-only reads");
    }

    #[test]
    fn a_seed_shuffles_each_block_and_repeats_exactly() {
        let mut m = spec(Order::Interleaved);
        m.seed = Some(42);
        let a = plan_runs(&m);
        assert_eq!(a, plan_runs(&m), "the same seed, the same order");
        let blocks: Vec<Vec<&str>> =
            a.chunks(3).map(|b| b.iter().map(|r| r.cell.placement.as_str()).collect()).collect();
        for b in &blocks {
            let mut sorted = b.clone();
            sorted.sort();
            assert_eq!(sorted, ["A", "B", "C"], "every block holds each placement once: {b:?}");
        }
        assert!(blocks.iter().any(|b| b[0] != "A"), "the baseline is not always first: {blocks:?}");
        m.seed = Some(43);
        assert_ne!(a, plan_runs(&m), "another seed, another order");
    }

    #[test]
    fn optional_settings_apply_where_the_build_knows_them() {
        let p = Profile {
            name: "vendor".into(),
            settings: BTreeMap::from([("shared_buffers".to_string(), "1GB".to_string())]),
            optional: BTreeMap::from([("lwlock_shared_limit".to_string(), "16".to_string())]),
        };
        let plain: std::collections::BTreeSet<String> = ["shared_buffers".to_string()].into();
        assert_eq!(p.for_build(Some(&plain)).settings.len(), 1, "left out where unknown");
        let mut vendor = plain.clone();
        vendor.insert("lwlock_shared_limit".into());
        assert_eq!(p.for_build(Some(&vendor)).settings["lwlock_shared_limit"], "16");
    }

    #[test]
    fn several_builds_keep_their_own_copies_and_name_their_runs() {
        let mut m = spec(Order::Interleaved);
        m.builds.push(BuildTarget { name: "pg17".into(), bin_dir: Some("/opt/pg17/bin".into()) });
        let runs = plan_runs(&m);
        assert_eq!(runs.len(), 3 * 2 * 2 * 2 * 2, "builds are a dimension");
        let r17 = runs.iter().find(|r| r.cell.build == "pg17").unwrap();
        assert!(r17.run_id.ends_with("-pg17-r1"), "{}", r17.run_id);
        let t = m.placements[0].for_build("pg17", true);
        assert_eq!((t.data_dir.to_str(), t.wal_dir.to_str()), (Some("/pg17/d"), Some("/pg17/w")));
        assert_eq!(m.placements[0].for_build("default", false).data_dir.to_str(), Some("/d"));
    }

    #[test]
    fn splitmix64_matches_its_reference_sequence() {
        // The first outputs for seed 1234567 of the reference implementation (Vigna,
        // splitmix64.c): 6457827717110365317, 3203168211198807973, 9817491932198370423.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(
            [r.next_u64(), r.next_u64(), r.next_u64()],
            [6457827717110365317, 3203168211198807973, 9817491932198370423]
        );
    }

    #[test]
    fn interleaved_order_alternates_placements() {
        let runs = plan_runs(&spec(Order::Interleaved));
        assert_eq!(runs.len(), 3 * 2 * 2 * 2);
        let first: Vec<&str> = runs.iter().take(6).map(|r| r.cell.placement.as_str()).collect();
        assert_eq!(first, ["A", "B", "C", "A", "B", "C"]);
        assert_eq!(runs[0].run_id, "0001-A-tpcb-c1-r1");
        assert_eq!(runs[3].cell.clients, 8);
        assert_eq!(runs[3].threads, 2, "threads default to min(clients, cores)");
        assert_eq!(runs[0].threads, 1);
        assert!(runs[12..].iter().all(|r| r.repetition == 2));
    }

    #[test]
    fn sequential_order_groups_placements() {
        let runs = plan_runs(&spec(Order::Sequential));
        assert!(runs[..8].iter().all(|r| r.cell.placement == "A"));
        assert_eq!(runs[0].repetition, 1);
        assert_eq!(runs[1].repetition, 2);
    }

    #[test]
    fn memory_labels() {
        let label = |bytes| MemoryLimit { bytes, settings: BTreeMap::new() }.label();
        assert_eq!(label(None), "unlimited");
        assert_eq!(label(Some(300 << 20)), "300MiB");
        assert_eq!(label(Some(1 << 30)), "1GiB");
    }
}
