//! What a PostgreSQL server needs in memory, from its settings: what is certain (shared memory,
//! a baseline per process) and what is only an estimate (ANALYZE samples, sorts, VACUUM's
//! dead-tuple arrays). Experiment validation uses it to refuse or warn about a memory limit
//! before anything runs; a run killed by the OOM killer uses it to name the settings that
//! plausibly needed the memory.

use std::collections::BTreeMap;

const MIB: u64 = 1 << 20;

/// Shared memory besides the buffers, their descriptors and the WAL buffers (SLRU buffers,
/// hash tables...). Fitted to PostgreSQL 15's own `postgres -C shared_memory_size`: 41 MB at
/// shared_buffers = 32MB, 143 MB at 128MB (the default), 1074 MB at 1GB, and 14 MB more for
/// 300 more connections.
const FIXED_SHARED: u64 = 2_900_000;
/// Per allowed connection (lock table entries, PGPROC, snapshots).
const PER_CONNECTION_SHARED: u64 = 48 << 10;
/// Buffer descriptors, the buffer lookup table and the checkpoint sort array: about 1/38 of
/// shared_buffers.
const DESCRIPTORS_PER_BUFFER_BYTE: u64 = 38;
/// Private memory of a backend or auxiliary process that does nothing special (catalog caches,
/// page tables of the shared memory mapping): 1.5-3 MiB seen per idle backend.
const PER_PROCESS: u64 = 2 * MIB + MIB / 2;
/// Auxiliary processes (postmaster, checkpointer, background writer, WAL writer, autovacuum
/// launcher, logical replication launcher).
const AUXILIARY_PROCESSES: u64 = 6;
/// Memory an ANALYZE holds per sampled row: measured on PostgreSQL 15 with pgbench_accounts
/// (peak private memory of the backend 15 MB at default_statistics_target = 100, 42 MB at 300,
/// 133 MB at 1000, i.e. 300 x target rows of about 440 bytes each).
const ANALYZE_BYTES_PER_SAMPLED_ROW: u64 = 440;

/// One part of the server's memory.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryItem {
    /// What the memory is for, with the arithmetic (`6 x autovacuum_work_mem = 64MB`).
    pub what: String,
    pub bytes: u64,
    /// The settings that decide it.
    pub settings: Vec<String>,
    pub kind: MemoryKind,
}

/// How sure the figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    /// Always allocated (shared memory, every process's baseline).
    Certain,
    /// An estimate of what the workload will very likely use (an automatic ANALYZE's sample).
    Likely,
    /// The most the settings allow, touched only when the data calls for it (work_mem per sort,
    /// VACUUM's dead-tuple array).
    UpperBound,
}

/// The memory a server with these settings needs.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPlan {
    pub items: Vec<MemoryItem>,
}

/// What the data set tells the estimate: the rows of its largest table (ANALYZE samples at most
/// that many).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DataShape {
    pub largest_table_rows: Option<u64>,
}

impl MemoryPlan {
    /// The plan of a server with `settings` (PostgreSQL's defaults for those not given) serving
    /// `clients` connections.
    pub fn of(settings: &BTreeMap<String, String>, clients: u32, data: DataShape) -> MemoryPlan {
        let size = |k: &str, default: u64| setting_size(settings, k, default);
        let int = |k: &str, default: i64| setting_int(settings, k, default);
        let on = |k: &str, default: bool| {
            settings.get(k).map(|v| matches!(v.trim(), "on" | "true" | "yes" | "1")).unwrap_or(default)
        };
        let shared_buffers = size("shared_buffers", 128 * MIB);
        // wal_buffers = -1: 1/32 of shared_buffers, at least 64 kB, at most one WAL segment.
        let wal_buffers = match settings.get("wal_buffers").map(|s| s.trim()) {
            None | Some("-1") => (shared_buffers / 32).clamp(64 << 10, 16 * MIB),
            Some(v) => pg_size(v).unwrap_or(4 * MIB),
        };
        let max_connections = int("max_connections", 100).max(1) as u64;
        let autovacuum = on("autovacuum", true);
        let workers = if autovacuum { int("autovacuum_max_workers", 3).max(0) as u64 } else { 0 };
        let work_mem = size("work_mem", 4 * MIB);

        let overhead =
            FIXED_SHARED + max_connections * PER_CONNECTION_SHARED + shared_buffers / DESCRIPTORS_PER_BUFFER_BYTE;
        let mut items = vec![
            MemoryItem {
                what: format!(
                    "shared memory: shared_buffers {} + wal_buffers {} + about {} for buffer descriptors, locks and process slots of {} connections",
                    show(shared_buffers),
                    show(wal_buffers),
                    show(overhead),
                    max_connections
                ),
                bytes: shared_buffers + wal_buffers + overhead,
                settings: vec!["shared_buffers".into(), "wal_buffers".into(), "max_connections".into()],
                kind: MemoryKind::Certain,
            },
            MemoryItem {
                what: format!(
                    "processes: {} client backends + {workers} autovacuum workers + {AUXILIARY_PROCESSES} auxiliary processes x about {} each",
                    clients,
                    show(PER_PROCESS)
                ),
                bytes: (clients as u64 + workers + AUXILIARY_PROCESSES) * PER_PROCESS,
                settings: vec!["autovacuum_max_workers".into()],
                kind: MemoryKind::Certain,
            },
        ];
        if autovacuum {
            items.extend(autovacuum_items(settings, workers, data));
        }
        items.push(MemoryItem {
            what: format!(
                "sorts and hashes: {clients} clients x work_mem {} (if every client sorted at once)",
                show(work_mem)
            ),
            bytes: clients as u64 * work_mem,
            settings: vec!["work_mem".into()],
            kind: MemoryKind::UpperBound,
        });
        MemoryPlan { items }
    }

    fn sum(&self, kinds: &[MemoryKind]) -> u64 {
        self.items.iter().filter(|i| kinds.contains(&i.kind)).map(|i| i.bytes).sum()
    }

    /// Memory the server always uses.
    pub fn certain_bytes(&self) -> u64 {
        self.sum(&[MemoryKind::Certain])
    }

    /// Certain plus what the workload very likely uses.
    pub fn likely_bytes(&self) -> u64 {
        self.sum(&[MemoryKind::Certain, MemoryKind::Likely])
    }

    /// The most the settings allow.
    pub fn upper_bound_bytes(&self) -> u64 {
        self.sum(&[MemoryKind::Certain, MemoryKind::Likely, MemoryKind::UpperBound])
    }

    /// The items of these kinds, largest first, as `what = 12 MiB` clauses.
    pub fn describe(&self, kinds: &[MemoryKind]) -> Vec<String> {
        let mut items: Vec<&MemoryItem> = self.items.iter().filter(|i| kinds.contains(&i.kind)).collect();
        items.sort_by_key(|i| std::cmp::Reverse(i.bytes));
        items.iter().map(|i| format!("{} = {}", i.what, show(i.bytes))).collect()
    }
}

/// `160 MiB`, `1.5 GiB`, `64 kiB`.
pub fn show(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else if bytes >= MIB {
        format!("{:.0} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{:.0} kiB", bytes as f64 / 1024.0)
    }
}

/// What autovacuum may need: an ANALYZE's sample of the largest table (likely) and VACUUM's
/// dead-tuple arrays (an upper bound).
fn autovacuum_items(settings: &BTreeMap<String, String>, workers: u64, data: DataShape) -> Vec<MemoryItem> {
    let maintenance = setting_size(settings, "maintenance_work_mem", 64 * MIB);
    let vacuum_mem = match settings.get("autovacuum_work_mem").map(|s| s.trim()) {
        None | Some("-1") => maintenance,
        Some(v) => pg_size(v).unwrap_or(maintenance),
    }
    .min(1 << 30);
    let vacuum_key = if settings.get("autovacuum_work_mem").is_some_and(|v| v.trim() != "-1") {
        "autovacuum_work_mem"
    } else {
        "maintenance_work_mem"
    };
    let target = setting_int(settings, "default_statistics_target", 100).clamp(1, 10_000) as u64;
    let mut items = Vec::new();
    let sample = 300 * target;
    let rows = data.largest_table_rows.map_or(sample, |r| sample.min(r));
    let bound = if rows < sample { format!(", at most the table's {} rows", group(rows)) } else { String::new() };
    items.push(MemoryItem {
            what: format!(
                "an automatic ANALYZE of the largest table: a sample of {} rows (300 x default_statistics_target {target}{bound}) at about {ANALYZE_BYTES_PER_SAMPLED_ROW} bytes each",
                group(rows)
            ),
            bytes: rows * ANALYZE_BYTES_PER_SAMPLED_ROW,
            settings: vec!["default_statistics_target".into()],
            kind: MemoryKind::Likely,
        });
    if workers > 0 {
        items.push(MemoryItem {
                what: format!(
                    "VACUUM dead-tuple arrays: {workers} autovacuum workers x {vacuum_key} {} (allocated as dead rows are found)",
                    show(vacuum_mem)
                ),
                bytes: workers * vacuum_mem,
                settings: vec!["autovacuum_max_workers".into(), vacuum_key.into()],
                kind: MemoryKind::UpperBound,
            });
    }
    items
}

fn setting_size(settings: &BTreeMap<String, String>, key: &str, default: u64) -> u64 {
    settings.get(key).and_then(|v| pg_size(v)).unwrap_or(default)
}

fn setting_int(settings: &BTreeMap<String, String>, key: &str, default: i64) -> i64 {
    settings.get(key).and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(default)
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// PostgreSQL memory units (`128MB` = 128 MiB, `8kB`, `1GB`); bare numbers are 8 kB pages
/// (shared_buffers, wal_buffers) as PostgreSQL reads them for those settings.
pub fn pg_size(s: &str) -> Option<u64> {
    let t = s.trim().trim_matches('\'');
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    Some(match unit.trim() {
        "" => n * 8192,
        "B" => n,
        "kB" => n << 10,
        "MB" => n << 20,
        "GB" => n << 30,
        "TB" => n << 40,
        _ => return None,
    })
}

/// A size setting whose bare numbers are megabytes (max_wal_size, min_wal_size), in bytes.
pub fn pg_size_mb_default(s: &str) -> Option<u64> {
    let t = s.trim().trim_matches('\'');
    if t.chars().all(|c| c.is_ascii_digit()) {
        return t.parse::<u64>().ok().map(|mb| mb << 20);
    }
    pg_size(t)
}

/// Huge pages the kernel has reserved (`/proc/meminfo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HugePages {
    pub total: u64,
    pub free: u64,
    pub page_bytes: u64,
}

impl HugePages {
    /// Parses `/proc/meminfo` text.
    pub fn parse(meminfo: &str) -> Option<HugePages> {
        let field = |name: &str| {
            meminfo.lines().find_map(|l| {
                let rest = l.strip_prefix(name)?.strip_prefix(':')?;
                rest.split_whitespace().next()?.parse::<u64>().ok()
            })
        };
        Some(HugePages {
            total: field("HugePages_Total")?,
            free: field("HugePages_Free")?,
            page_bytes: field("Hugepagesize")? * 1024,
        })
    }

    /// This machine's, when it has them.
    pub fn of_this_machine() -> Option<HugePages> {
        HugePages::parse(&std::fs::read_to_string("/proc/meminfo").ok()?)
    }

    /// Pages needed to map `bytes` of shared memory.
    pub fn pages_for(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.page_bytes.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn shared_memory_matches_postgresql_15() {
        // `postgres -C shared_memory_size` of PostgreSQL 15.18 (MB): defaults 143; shared_buffers
        // 32MB 41, 1GB 1074; max_connections 400 157.
        for (pairs, mb) in [
            (vec![], 143u64),
            (vec![("shared_buffers", "32MB")], 41),
            (vec![("shared_buffers", "1GB")], 1074),
            (vec![("max_connections", "400")], 157),
        ] {
            let p = MemoryPlan::of(&settings(&pairs), 1, DataShape::default());
            let got = p.items[0].bytes as f64 / MIB as f64;
            assert!((got - mb as f64).abs() <= 1.5, "{pairs:?}: {got:.1} MiB, PostgreSQL says {mb}");
        }
    }

    #[test]
    fn seed_004_performance_profile_in_160_mib() {
        // The emulated seed-004 run that the OOM killer stopped: ANALYZE at target 1000.
        let s = settings(&[
            ("shared_buffers", "32MB"),
            ("autovacuum_max_workers", "6"),
            ("autovacuum_work_mem", "64MB"),
            ("default_statistics_target", "1000"),
        ]);
        let p = MemoryPlan::of(&s, 2, DataShape { largest_table_rows: Some(2_000_000) });
        assert!(p.certain_bytes() < 160 * MIB, "the server itself fits: {}", show(p.certain_bytes()));
        assert!(p.likely_bytes() > 160 * MIB, "with ANALYZE's sample it does not: {}", show(p.likely_bytes()));
        let analyze = p.items.iter().find(|i| i.settings == ["default_statistics_target"]).unwrap();
        assert_eq!(analyze.bytes, 300_000 * 440);
        let vacuum = p.items.iter().find(|i| i.what.contains("VACUUM")).unwrap();
        assert_eq!((vacuum.bytes, vacuum.kind), (6 * 64 * MIB, MemoryKind::UpperBound));
        assert!(p.describe(&[MemoryKind::Likely])[0].contains("default_statistics_target 1000"));
    }

    #[test]
    fn analyze_sample_is_bounded_by_the_table() {
        let s = settings(&[("default_statistics_target", "1000")]);
        let p = MemoryPlan::of(&s, 1, DataShape { largest_table_rows: Some(100_000) });
        let analyze = p.items.iter().find(|i| i.kind == MemoryKind::Likely).unwrap();
        assert_eq!(analyze.bytes, 100_000 * 440);
        let off = MemoryPlan::of(&settings(&[("autovacuum", "off")]), 1, DataShape::default());
        assert!(off.items.iter().all(|i| i.kind != MemoryKind::Likely), "no autovacuum, no automatic ANALYZE");
    }

    #[test]
    fn wal_buffers_and_units() {
        assert_eq!(pg_size("128MB"), Some(128 * MIB));
        assert_eq!(pg_size("16384"), Some(128 * MIB), "bare numbers are 8 kB pages");
        assert_eq!(pg_size("1GB"), Some(1 << 30));
        assert_eq!(pg_size("lots"), None);
        let big = MemoryPlan::of(&settings(&[("shared_buffers", "8GB")]), 1, DataShape::default());
        assert!(big.items[0].what.contains("wal_buffers 16 MiB"), "{}", big.items[0].what);
    }

    #[test]
    fn huge_pages_from_meminfo() {
        let text = "MemTotal:       24000000 kB\nHugePages_Total:      20\nHugePages_Free:       18\nHugePages_Rsvd:        0\nHugepagesize:       2048 kB\n";
        let h = HugePages::parse(text).unwrap();
        assert_eq!(h, HugePages { total: 20, free: 18, page_bytes: 2 << 20 });
        assert_eq!(h.pages_for(41 * MIB), 21);
    }
}
