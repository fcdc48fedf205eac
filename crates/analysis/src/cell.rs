//! One matrix cell's summary across its repetitions, and how cells and statements are named in
//! messages: the leaf every judgement of a result set builds on.

use results::record::CellKey;
use serde::Serialize;
use stats::{Delta, Estimate};

/// One matrix cell across its repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    pub key: CellKey,
    pub is_baseline: bool,
    /// Successful runs that went into the figures.
    pub runs: usize,
    pub failed_runs: usize,
    pub tps: Estimate,
    pub latency_ms: Estimate,
    pub latency_p99_ms: Option<Estimate>,
    /// Change against the baseline placement for the same workload, clients, memory limit and
    /// profile (None on baseline rows and when the baseline cell has no data).
    pub tps_delta: Option<Delta>,
    pub latency_delta: Option<Delta>,
    pub latency_p99_delta: Option<Delta>,
    /// TPC-C: new orders per minute (HammerDB's NOPM) and its change against the baseline.
    pub nopm: Option<Estimate>,
    pub nopm_delta: Option<Delta>,
    /// Average latency of each statement of the script (pgbench `-r`), in script order, with its
    /// change against the baseline cell's same statement.
    pub statements: Vec<StatementSummary>,
}

/// One statement of a pgbench script across a cell's repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct StatementSummary {
    pub statement: String,
    pub latency_ms: Estimate,
    pub delta: Option<Delta>,
}

impl CellSummary {
    /// The figure a reader compares first: NOPM for TPC-C, TPS otherwise, with its change and unit.
    pub fn headline(&self) -> (Estimate, Option<Delta>, &'static str) {
        match self.nopm {
            Some(n) => (n, self.nopm_delta, "new orders per minute (NOPM)"),
            None => (self.tps, self.tps_delta, "throughput (transactions/s)"),
        }
    }
}

/// A statement of a pgbench script as a column heading: `UPDATE pgbench_accounts`,
/// `SELECT … FROM pgbench_accounts`, `INSERT INTO pgbench_history`, `BEGIN`.
pub fn statement_label(text: &str) -> String {
    let t = text.trim().trim_end_matches(';');
    let words: Vec<&str> = t.split_whitespace().collect();
    let upper = |i: usize| words.get(i).map(|w| w.to_ascii_uppercase()).unwrap_or_default();
    match upper(0).as_str() {
        "UPDATE" if words.len() >= 2 => format!("UPDATE {}", words[1]),
        "INSERT" if words.len() >= 3 && upper(1) == "INTO" => format!("INSERT INTO {}", words[2]),
        "SELECT" => match words.iter().position(|w| w.eq_ignore_ascii_case("FROM")) {
            Some(i) if i + 1 < words.len() => format!("SELECT … FROM {}", words[i + 1]),
            _ => t.to_string(),
        },
        _ if words.len() <= 3 => t.to_string(),
        _ => format!("{} …", words[..3].join(" ")),
    }
}

/// `tpcb, 8 clients, placement nvme` for messages.
pub fn describe(k: &CellKey) -> String {
    let mut s = format!("{} / {} / {} clients", k.placement, k.workload, k.clients);
    s.push_str(&format!(" / memory {}", k.memory_limit));
    if k.profile != "default" {
        s.push_str(&format!(" / profile {}", k.profile));
    }
    if k.build != results::record::DEFAULT_BUILD {
        s.push_str(&format!(" / build {}", k.build));
    }
    s
}
