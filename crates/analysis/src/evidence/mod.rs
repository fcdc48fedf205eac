//! The evidence behind every figure, flat: per run and per cell, PostgreSQL's WAL and buffer
//! counters, device I/O per placement role, the CPU split and the shares of backend time per wait
//! event; from it a bottleneck verdict with the rule that produced it, and for every delta one
//! sentence saying what moved, with figures.

use std::collections::BTreeMap;

use results::record::{CellKey, RunRecord, RunStatus};
use serde::Serialize;

use crate::summary::Summary;
use results::ResultSet;
use stats::Delta;

mod cause;
mod columns;
mod judge;

pub use cause::{Study, cause, cause_against};
pub use columns::{COLUMNS, EvidenceColumns, columns};
pub use judge::{Judgement, judge, verdict_text};

/// Placement roles with their own device columns (a `data+wal` device fills both `data` and
/// `wal`; a tablespace role its own).
pub const ROLES: [&str; 5] = ["data", "wal", "tables", "indexes", "temp"];

/// What a wait event (or its absence) says the backend was doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// Writing or syncing WAL, or waiting for another backend's WAL flush (IO:WAL*, LWLock:WALWrite).
    WalSync,
    /// Reading data files (IO:DataFileRead, IO:DataFilePrefetch, IO:*Read, LWLock:BufferIO).
    DataRead,
    /// Writing, extending or syncing data files (the other IO:* events).
    DataWrite,
    /// Heavyweight locks and other LWLocks (Lock:*, LWLock:*).
    Lock,
    /// Active with no wait event: on a CPU, or waiting in the run queue for one.
    Cpu,
    /// Waiting for the client's next statement (Client:ClientRead, Client:ClientWrite).
    Client,
    /// Everything else (IPC, timeouts, idle).
    Other,
}

impl Category {
    pub const ALL: [Category; 7] = [
        Category::WalSync,
        Category::DataRead,
        Category::DataWrite,
        Category::Lock,
        Category::Cpu,
        Category::Client,
        Category::Other,
    ];

    /// The category of a wait event as the sampler names it (`IO:WALSync`, `CPU`).
    pub fn of(event: &str) -> Category {
        let (ty, ev) = event.split_once(':').unwrap_or((event, ""));
        match ty {
            "CPU" => Category::Cpu,
            "Client" => Category::Client,
            "IO" if ev.starts_with("WAL") => Category::WalSync,
            "LWLock" if ev == "WALWrite" => Category::WalSync,
            "LWLock" if ev == "BufferIO" => Category::DataRead,
            "IO" if ev.contains("Read") || ev.contains("Prefetch") => Category::DataRead,
            "IO" => Category::DataWrite,
            "Lock" | "LWLock" => Category::Lock,
            _ => Category::Other,
        }
    }

    /// As in a sentence: "WAL sync wait".
    pub fn noun(self) -> &'static str {
        match self {
            Category::WalSync => "WAL sync wait",
            Category::DataRead => "data-read wait",
            Category::DataWrite => "data-write wait",
            Category::Lock => "lock wait",
            Category::Cpu => "time on CPU (no wait event)",
            Category::Client => "waiting for the client",
            Category::Other => "other waits",
        }
    }

    /// As a legend or a short label.
    pub fn label(self) -> &'static str {
        match self {
            Category::WalSync => "WAL sync",
            Category::DataRead => "data reads",
            Category::DataWrite => "data writes",
            Category::Lock => "locks",
            Category::Cpu => "CPU",
            Category::Client => "client",
            Category::Other => "other",
        }
    }

    fn column(self) -> &'static str {
        match self {
            Category::WalSync => "wait_wal_pct",
            Category::DataRead => "wait_data_read_pct",
            Category::DataWrite => "wait_data_write_pct",
            Category::Lock => "wait_lock_pct",
            Category::Cpu => "wait_cpu_pct",
            Category::Client => "wait_client_pct",
            Category::Other => "wait_other_pct",
        }
    }
}

/// What limited a run (or a cell).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    WalSync,
    DataRead,
    DataWrite,
    CpuServer,
    Client,
    Lock,
    Mixed,
    /// Neither wait events nor a counter rule say anything.
    NotJudged,
}

impl Bottleneck {
    pub fn label(self) -> &'static str {
        match self {
            Bottleneck::WalSync => "WAL-sync-bound",
            Bottleneck::DataRead => "data-read-bound",
            Bottleneck::DataWrite => "data-write-bound",
            Bottleneck::CpuServer => "CPU-bound (server)",
            Bottleneck::Client => "client-bound",
            Bottleneck::Lock => "lock-bound",
            Bottleneck::Mixed => "mixed",
            Bottleneck::NotJudged => "not judged",
        }
    }

    fn of_category(c: Category) -> Bottleneck {
        match c {
            Category::WalSync => Bottleneck::WalSync,
            Category::DataRead => Bottleneck::DataRead,
            Category::DataWrite => Bottleneck::DataWrite,
            Category::Lock => Bottleneck::Lock,
            Category::Cpu => Bottleneck::CpuServer,
            Category::Client => Bottleneck::Client,
            Category::Other => Bottleneck::Mixed,
        }
    }
}

/// The bottleneck rule, as report.md and docs/results.md state it.
pub const RULE: &str = "From the wait-event samples (pg_stat_activity ten times a second, client backends of the benchmark's database): each sample counts in one category (WAL sync: IO:WAL* and LWLock:WALWrite; data reads: IO:*Read, IO:DataFilePrefetch, LWLock:BufferIO; data writes: the other IO events; locks: Lock:* and the other LWLocks; CPU: active with no wait event; client: Client:*). The run is bound by the category holding at least 40% of backend time and 1.5 times the next one (WAL-sync-, data-read-, data-write-, lock-bound, CPU-bound (server), client-bound), and mixed otherwise. Without samples (result sets of older versions) the counters decide, first rule that holds: client and server used at least 90% of the hardware threads (CPU-bound (server) when the server used more CPU than the client, client-bound otherwise); WAL fsync busy for at least 50% of the measured time (pg_stat_wal); the data device busy at least 80% of the time (io_ticks; data-read-bound when it read more than it wrote); else not judged.";

/// Category thresholds of [`RULE`].
const SHARE: f64 = 40.0;
const LEAD: f64 = 1.5;
const CPU_SATURATED: f64 = 90.0;
const WAL_BUSY: f64 = 50.0;
const DEVICE_BUSY: f64 = 80.0;

/// Device figures of one placement role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RoleIo {
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub avg_wait_ms: f64,
    /// NaN when the result set predates io_ticks.
    pub util_pct: f64,
}

/// The evidence of one run, or the mean over a cell's runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    pub runs: usize,
    pub duration_s: f64,
    pub transactions: f64,
    pub wal_bytes: Option<f64>,
    pub wal_syncs: Option<f64>,
    pub wal_sync_time_ms: Option<f64>,
    pub blocks_read: Option<f64>,
    pub buffers_backend: Option<f64>,
    pub buffers_checkpoint: Option<f64>,
    pub buffers_clean: Option<f64>,
    pub checkpoints: Option<f64>,
    /// Writes completed by the placement's devices (each device once).
    pub device_writes: Option<f64>,
    /// Read + write IOPS and MB/s of the placement's devices (each device once).
    pub device_iops: Option<f64>,
    pub device_mb_s: Option<f64>,
    pub roles: BTreeMap<String, RoleIo>,
    /// /proc/stat over the interval, % of all CPUs (the whole machine, other load included).
    pub cpu_user_pct: Option<f64>,
    pub cpu_system_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cpu_idle_pct: Option<f64>,
    pub client_cpu_s: Option<f64>,
    pub server_cpu_s: Option<f64>,
    pub hardware_threads: f64,
    /// Shares of backend time per wait event, % (largest first); empty without samples.
    pub waits: Vec<(String, f64)>,
    pub wait_samples: f64,
}

fn mean_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

impl Evidence {
    /// The evidence of one run; `hardware_threads` of the machine it ran on.
    pub fn of_run(r: &RunRecord, hardware_threads: f64) -> Evidence {
        let pg = r.postgres.as_ref();
        let cpu = r.cpu.as_ref();
        let mut roles = BTreeMap::new();
        for d in &r.devices {
            let io = RoleIo {
                read_iops: d.read_iops,
                write_iops: d.write_iops,
                read_mb_s: d.read_mb_s,
                write_mb_s: d.write_mb_s,
                avg_wait_ms: d.avg_wait_ms,
                util_pct: if d.util_pct > 0.0 || d.reads + d.writes > 0 { d.util_pct } else { f64::NAN },
            };
            for role in d.role.split('+') {
                roles.insert(role.to_string(), io);
            }
        }
        let devices = (!r.devices.is_empty()).then_some(&r.devices);
        let waits = r.wait_events.as_ref().filter(|w| w.backend_samples > 0);
        Evidence {
            runs: 1,
            duration_s: r.duration_s,
            transactions: if r.metrics.transactions > 0 {
                r.metrics.transactions as f64
            } else {
                pg.map(|p| p.xact_commit as f64).unwrap_or(0.0)
            },
            wal_bytes: pg.and_then(|p| p.wal_bytes).map(|v| v as f64),
            wal_syncs: pg.and_then(|p| p.wal_sync).map(|v| v as f64),
            wal_sync_time_ms: pg.and_then(|p| p.wal_sync_time_ms),
            blocks_read: pg.map(|p| p.blks_read as f64),
            buffers_backend: pg.map(|p| p.buffers_backend as f64),
            buffers_checkpoint: pg.map(|p| p.buffers_checkpoint as f64),
            buffers_clean: pg.map(|p| p.buffers_clean as f64),
            checkpoints: pg.map(|p| (p.checkpoints_timed + p.checkpoints_req) as f64),
            device_writes: devices.map(|d| {
                d.iter().map(|x| if x.writes > 0 { x.writes as f64 } else { x.write_iops * r.duration_s }).sum()
            }),
            device_iops: devices.map(|d| d.iter().map(|x| x.read_iops + x.write_iops).sum()),
            device_mb_s: devices.map(|d| d.iter().map(|x| x.read_mb_s + x.write_mb_s).sum()),
            roles,
            cpu_user_pct: cpu.map(|c| c.user_pct),
            cpu_system_pct: cpu.map(|c| c.system_pct),
            cpu_iowait_pct: cpu.map(|c| c.iowait_pct),
            cpu_idle_pct: cpu.map(|c| c.idle_pct),
            client_cpu_s: cpu.map(|c| c.client_cpu_s),
            server_cpu_s: cpu.map(|c| c.server_cpu_s),
            hardware_threads: hardware_threads.max(1.0),
            waits: waits
                .map(|w| w.backend.iter().map(|s| (s.event.clone(), s.share_pct)).collect())
                .unwrap_or_default(),
            wait_samples: waits.map(|w| w.backend_samples as f64).unwrap_or(0.0),
        }
    }

    /// The mean over runs (each run weighs alike; a figure only over the runs that have it).
    pub fn mean(runs: &[Evidence]) -> Evidence {
        let n = runs.len();
        if n == 0 {
            return Evidence::default();
        }
        let m = |f: fn(&Evidence) -> Option<f64>| mean_of(runs.iter().map(f));
        let mut roles = BTreeMap::new();
        for role in runs.iter().flat_map(|r| r.roles.keys()) {
            if roles.contains_key(role) {
                continue;
            }
            let mine: Vec<&RoleIo> = runs.iter().filter_map(|r| r.roles.get(role)).collect();
            let avg = |f: fn(&RoleIo) -> f64| {
                let v: Vec<f64> = mine.iter().map(|x| f(x)).filter(|x| x.is_finite()).collect();
                if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
            };
            roles.insert(
                role.clone(),
                RoleIo {
                    read_iops: avg(|x| x.read_iops),
                    write_iops: avg(|x| x.write_iops),
                    read_mb_s: avg(|x| x.read_mb_s),
                    write_mb_s: avg(|x| x.write_mb_s),
                    avg_wait_ms: avg(|x| x.avg_wait_ms),
                    util_pct: avg(|x| x.util_pct),
                },
            );
        }
        let sampled: Vec<&Evidence> = runs.iter().filter(|r| r.wait_samples > 0.0).collect();
        let mut shares: BTreeMap<&str, f64> = BTreeMap::new();
        for r in &sampled {
            for (e, s) in &r.waits {
                *shares.entry(e.as_str()).or_default() += s / sampled.len() as f64;
            }
        }
        let mut waits: Vec<(String, f64)> = shares.into_iter().map(|(e, s)| (e.to_string(), s)).collect();
        waits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Evidence {
            runs: n,
            duration_s: runs.iter().map(|r| r.duration_s).sum::<f64>() / n as f64,
            transactions: runs.iter().map(|r| r.transactions).sum::<f64>() / n as f64,
            wal_bytes: m(|r| r.wal_bytes),
            wal_syncs: m(|r| r.wal_syncs),
            wal_sync_time_ms: m(|r| r.wal_sync_time_ms),
            blocks_read: m(|r| r.blocks_read),
            buffers_backend: m(|r| r.buffers_backend),
            buffers_checkpoint: m(|r| r.buffers_checkpoint),
            buffers_clean: m(|r| r.buffers_clean),
            checkpoints: m(|r| r.checkpoints),
            device_writes: m(|r| r.device_writes),
            device_iops: m(|r| r.device_iops),
            device_mb_s: m(|r| r.device_mb_s),
            roles,
            cpu_user_pct: m(|r| r.cpu_user_pct),
            cpu_system_pct: m(|r| r.cpu_system_pct),
            cpu_iowait_pct: m(|r| r.cpu_iowait_pct),
            cpu_idle_pct: m(|r| r.cpu_idle_pct),
            client_cpu_s: m(|r| r.client_cpu_s),
            server_cpu_s: m(|r| r.server_cpu_s),
            hardware_threads: runs[0].hardware_threads,
            waits,
            wait_samples: sampled.iter().map(|r| r.wait_samples).sum(),
        }
    }

    fn per_tx(&self, v: Option<f64>) -> Option<f64> {
        v.filter(|_| self.transactions > 0.0).map(|v| v / self.transactions)
    }

    /// WAL fsync time as a share of the measured time, %.
    pub fn wal_sync_busy_pct(&self) -> Option<f64> {
        self.wal_sync_time_ms.filter(|_| self.duration_s > 0.0).map(|t| t / (self.duration_s * 1000.0) * 100.0)
    }

    /// Time per WAL fsync, µs.
    pub fn wal_sync_us_per_sync(&self) -> Option<f64> {
        match (self.wal_sync_time_ms, self.wal_syncs) {
            (Some(t), Some(n)) if n > 0.0 => Some(t * 1000.0 / n),
            _ => None,
        }
    }

    pub fn wal_bytes_per_tx(&self) -> Option<f64> {
        self.per_tx(self.wal_bytes)
    }

    pub fn device_writes_per_tx(&self) -> Option<f64> {
        self.per_tx(self.device_writes)
    }

    pub fn blocks_read_per_tx(&self) -> Option<f64> {
        self.per_tx(self.blocks_read)
    }

    pub fn client_cpu_ms_per_tx(&self) -> Option<f64> {
        self.per_tx(self.client_cpu_s.map(|s| s * 1000.0))
    }

    pub fn server_cpu_ms_per_tx(&self) -> Option<f64> {
        self.per_tx(self.server_cpu_s.map(|s| s * 1000.0))
    }

    /// Client and server CPU as a share of all hardware threads over the measured time, %: what
    /// this run used (the machine's own figure, other load included, is [`Self::machine_busy_pct`]).
    pub fn run_cpu_pct(&self) -> Option<f64> {
        match (self.client_cpu_s, self.server_cpu_s) {
            (Some(c), Some(s)) if self.duration_s > 0.0 && c + s > 0.0 => {
                Some((c + s) / self.duration_s / self.hardware_threads * 100.0)
            }
            _ => None,
        }
    }

    /// The machine's busy share over the interval (/proc/stat: 100 - idle - iowait), %.
    pub fn machine_busy_pct(&self) -> Option<f64> {
        match (self.cpu_idle_pct, self.cpu_iowait_pct) {
            (Some(i), Some(w)) => Some((100.0 - i - w).max(0.0)),
            _ => None,
        }
    }

    pub fn has_waits(&self) -> bool {
        self.wait_samples > 0.0
    }

    /// The share of backend time in a category, %.
    pub fn share(&self, c: Category) -> f64 {
        // An empty sum is -0.0; adding 0.0 makes it print as 0.0.
        self.waits.iter().filter(|(e, _)| Category::of(e) == c).map(|(_, s)| s).sum::<f64>() + 0.0
    }

    /// Categories by share, largest first.
    pub fn categories(&self) -> Vec<(Category, f64)> {
        let mut v: Vec<(Category, f64)> = Category::ALL.iter().map(|c| (*c, self.share(*c))).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }

    /// The largest events of a category, as `IO:WALSync 50%, LWLock:WALWrite 12%`.
    fn events_of(&self, c: Category, n: usize) -> String {
        let v: Vec<String> = self
            .waits
            .iter()
            .filter(|(e, _)| Category::of(e) == c)
            .take(n)
            .map(|(e, s)| format!("{e} {s:.0}%"))
            .collect();
        v.join(", ")
    }

    /// CPU as said in a sentence: `96% of 2 threads`.
    fn cpu_text(&self) -> Option<String> {
        self.run_cpu_pct().map(|p| format!("{p:.0}% of {} threads", self.hardware_threads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(shares: &[(&str, f64)]) -> Evidence {
        Evidence {
            runs: 1,
            duration_s: 12.0,
            transactions: 12_000.0,
            hardware_threads: 2.0,
            client_cpu_s: Some(4.0),
            server_cpu_s: Some(19.0),
            waits: shares.iter().map(|(e, s)| (e.to_string(), *s)).collect(),
            wait_samples: 960.0,
            ..Default::default()
        }
    }

    #[test]
    fn categories_of_wait_events() {
        for (e, c) in [
            ("IO:WALSync", Category::WalSync),
            ("IO:WALWrite", Category::WalSync),
            ("LWLock:WALWrite", Category::WalSync),
            ("IO:DataFileRead", Category::DataRead),
            ("LWLock:BufferIO", Category::DataRead),
            ("IO:DataFileExtend", Category::DataWrite),
            ("IO:DataFileWrite", Category::DataWrite),
            ("Lock:transactionid", Category::Lock),
            ("LWLock:WALInsert", Category::Lock),
            ("CPU", Category::Cpu),
            ("Client:ClientRead", Category::Client),
            ("IPC:ProcArrayGroupUpdate", Category::Other),
            ("Idle", Category::Other),
        ] {
            assert_eq!(Category::of(e), c, "{e}");
        }
    }

    #[test]
    fn bottleneck_rule_on_fixed_shares() {
        let j = judge(&waits(&[
            ("IO:WALSync", 50.0),
            ("LWLock:WALWrite", 12.0),
            ("CPU", 25.0),
            ("Client:ClientRead", 13.0),
        ]));
        assert_eq!(j.bottleneck, Bottleneck::WalSync);
        assert_eq!(
            j.rule,
            "WAL sync 62% of backend time (IO:WALSync 50%, LWLock:WALWrite 12%), at least 40% and 1.5x the next (CPU 25%); client and server used 96% of 2 threads"
        );
        let j = judge(&waits(&[("CPU", 45.0), ("IO:WALSync", 35.0), ("Client:ClientRead", 20.0)]));
        assert_eq!(j.bottleneck, Bottleneck::Mixed, "45% is not 1.5x 35%: {}", j.rule);
        assert!(j.rule.starts_with("no category holds 40% of backend time and 1.5x the next: CPU 45%, WAL sync 35%"));
        assert_eq!(judge(&waits(&[("CPU", 70.0), ("IO:WALSync", 30.0)])).bottleneck, Bottleneck::CpuServer);
        assert_eq!(judge(&waits(&[("Client:ClientRead", 64.0), ("CPU", 36.0)])).bottleneck, Bottleneck::Client);
        assert_eq!(judge(&waits(&[("IO:DataFileRead", 58.0), ("CPU", 30.0)])).bottleneck, Bottleneck::DataRead);
        assert_eq!(
            judge(&waits(&[("IO:DataFileExtend", 30.0), ("IO:DataFileWrite", 20.0), ("CPU", 30.0)])).bottleneck,
            Bottleneck::DataWrite
        );
        assert_eq!(judge(&waits(&[("Lock:transactionid", 60.0), ("CPU", 20.0)])).bottleneck, Bottleneck::Lock);
    }

    #[test]
    fn bottleneck_rule_without_samples_falls_back_to_the_counters() {
        let counters = |client: f64, server: f64, wal_ms: f64| Evidence {
            runs: 1,
            duration_s: 10.0,
            transactions: 1000.0,
            hardware_threads: 2.0,
            client_cpu_s: Some(client),
            server_cpu_s: Some(server),
            wal_sync_time_ms: Some(wal_ms),
            wal_syncs: Some(1000.0),
            ..Default::default()
        };
        assert_eq!(
            judge(&counters(3.0, 16.0, 6000.0)).bottleneck,
            Bottleneck::CpuServer,
            "95% of 2 threads comes first"
        );
        assert_eq!(judge(&counters(12.0, 7.0, 0.0)).bottleneck, Bottleneck::Client);
        let j = judge(&counters(1.0, 4.0, 6000.0));
        assert_eq!(j.bottleneck, Bottleneck::WalSync);
        assert_eq!(
            j.rule,
            "no wait-event samples; WAL fsync busy for 60% of the measured time (at least 50%; pg_stat_wal), 6000 µs per fsync"
        );
        assert_eq!(judge(&counters(1.0, 4.0, 1000.0)).bottleneck, Bottleneck::NotJudged);
    }

    #[test]
    fn a_cause_sentence_says_what_moved_with_figures() {
        let base =
            waits(&[("IO:WALSync", 50.0), ("LWLock:WALWrite", 12.0), ("CPU", 25.0), ("Client:ClientRead", 13.0)]);
        let cont = waits(&[("IO:WALSync", 9.0), ("CPU", 70.0), ("Client:ClientRead", 21.0)]);
        let up = Delta { pct: 44.6, ..Delta::unknown() };
        assert_eq!(
            cause(&base, &cont, Some(&up)),
            "WAL sync wait fell from 62% to 9% of backend time; time on CPU (no wait event) rose from 25% to 70%; the run became CPU-bound (server) (96% of 2 threads; the baseline is WAL-sync-bound), so the remaining gain is capped by CPU"
        );
        let same = cause(&base, &base, None);
        assert!(
            same.starts_with("No wait category moved by 3 points or more") && same.contains("both are WAL-sync-bound"),
            "{same}"
        );
    }

    #[test]
    fn csv_columns_line_up_with_their_names() {
        let e = waits(&[("IO:WALSync", 62.0), ("CPU", 38.0)]);
        let v = columns(&e);
        assert_eq!(v.len(), COLUMNS.len());
        let at = |name: &str| v[COLUMNS.iter().position(|c| *c == name).unwrap()].clone();
        assert_eq!(at("wait_wal_pct").as_deref(), Some("62.0"));
        assert_eq!(at("wait_top1_event").as_deref(), Some("IO:WALSync"));
        assert_eq!(at("run_cpu_pct").as_deref(), Some("95.8"));
        assert_eq!(at("bottleneck").as_deref(), Some("WAL-sync-bound"));
        assert_eq!(at("wal_bytes"), None, "unknown is blank");
        assert_eq!(at("wait_lock_pct").as_deref(), Some("0.0"), "never -0.0");
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(EvidenceColumns::default()).unwrap();
        let header = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let header = header.lines().next().unwrap().to_string();
        assert!(
            header.starts_with("wal_bytes,wal_syncs,") && header.trim_end().ends_with("bottleneck,bottleneck_rule"),
            "{header}"
        );
    }
}
