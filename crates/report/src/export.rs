//! Exporters: one result model, several formats behind one trait.

use std::path::{Path, PathBuf};

use results::write_atomic;

use crate::model::{ResultSet, Summary};
use crate::stats::Delta;

/// Writes one view of a result set into its directory.
pub trait Exporter {
    fn name(&self) -> &'static str;
    /// Returns the files written.
    fn export(&self, set: &ResultSet, summary: &Summary, out: &Path) -> Result<Vec<PathBuf>, ExportError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{path}: {message}")]
    Write { path: PathBuf, message: String },
}

pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    write_atomic(path, bytes).map_err(|e| ExportError::Write { path: path.to_path_buf(), message: e.to_string() })
}

fn csv_bytes(header: &[&str], rows: Vec<Vec<String>>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).expect("in-memory CSV");
    for r in rows {
        w.write_record(&r).expect("in-memory CSV");
    }
    w.into_inner().expect("in-memory CSV")
}

/// Numbers in CSV: fixed precision, empty for unknown.
pub(crate) fn num(v: f64, decimals: usize) -> String {
    if v.is_finite() { format!("{v:.decimals$}") } else { String::new() }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| num(v, decimals)).unwrap_or_default()
}

/// `runs.csv`, `summary.csv` and `series.csv` (schema in docs/results.md).
pub struct CsvExporter;

/// Columns of `runs.csv`.
pub const RUNS_COLUMNS: &[&str] = &[
    "run_id",
    "sequence",
    "placement",
    "workload",
    "clients",
    "memory_limit",
    "profile",
    "repetition",
    "status",
    "workload_kind",
    "script",
    "threads",
    "scale",
    "duration_s",
    "ramp_up_s",
    "tps",
    "latency_ms_avg",
    "latency_ms_stddev",
    "latency_ms_p50",
    "latency_ms_p90",
    "latency_ms_p95",
    "latency_ms_p99",
    "latency_ms_p999",
    "transactions",
    "failed_transactions",
    "nopm",
    "tpm",
    "started_at",
    "finished_at",
    "failure",
    "failure_kind",
];

/// Columns of `summary.csv`.
pub const SUMMARY_COLUMNS: &[&str] = &[
    "placement",
    "workload",
    "clients",
    "memory_limit",
    "profile",
    "runs",
    "failed_runs",
    "tps_mean",
    "tps_stdev",
    "tps_cv_pct",
    "tps_ci95",
    "latency_ms_mean",
    "latency_ms_stdev",
    "latency_ms_p99_mean",
    "tps_delta_pct",
    "tps_delta_ci95_low_pct",
    "tps_delta_ci95_high_pct",
    "tps_ratio",
    "latency_delta_pct",
    "latency_delta_ci95_low_pct",
    "latency_delta_ci95_high_pct",
    "within_noise",
    "nopm_mean",
    "nopm_ci95",
    "nopm_delta_pct",
    "nopm_delta_ci95_low_pct",
    "nopm_delta_ci95_high_pct",
];

/// Columns of `devices.csv`: one row per device per run (from /proc/diskstats).
pub const DEVICES_COLUMNS: &[&str] = &[
    "run_id",
    "placement",
    "workload",
    "clients",
    "repetition",
    "device",
    "role",
    "kernel_name",
    "read_iops",
    "write_iops",
    "read_mb_s",
    "write_mb_s",
    "avg_wait_ms",
    "peak_read_iops",
    "peak_write_iops",
];

/// Columns of `statements.csv`: one row per statement of the script per cell (pgbench `-r`).
pub const STATEMENTS_COLUMNS: &[&str] = &[
    "placement",
    "workload",
    "clients",
    "memory_limit",
    "profile",
    "statement_index",
    "statement",
    "runs",
    "latency_ms_mean",
    "latency_ms_ci95",
    "latency_delta_pct",
    "latency_delta_ci95_low_pct",
    "latency_delta_ci95_high_pct",
];

/// Columns of `series.csv`.
pub const SERIES_COLUMNS: &[&str] = &[
    "run_id",
    "placement",
    "workload",
    "clients",
    "repetition",
    "t_s",
    "tps",
    "latency_ms",
    "latency_ms_stddev",
    "failed",
];

fn delta_cols(d: Option<&Delta>, baseline: bool) -> [String; 3] {
    match d {
        Some(d) => [num(d.pct, 2), num(d.pct_low, 2), num(d.pct_high, 2)],
        None if baseline => ["0.00".into(), String::new(), String::new()],
        None => Default::default(),
    }
}

impl Exporter for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, set: &ResultSet, summary: &Summary, out: &Path) -> Result<Vec<PathBuf>, ExportError> {
        let runs = set
            .runs
            .iter()
            .map(|r| {
                let m = &r.metrics;
                let ok = r.status == results::RunStatus::Ok;
                // A failed run's figures are blank, all of them: partial figures of a run that
                // did not finish are not measurements.
                let f = |v: f64, d| if ok { num(v, d) } else { String::new() };
                let o = |v: Option<f64>, d| if ok { opt(v, d) } else { String::new() };
                vec![
                    r.run_id.clone(),
                    r.sequence.to_string(),
                    r.cell.placement.clone(),
                    r.cell.workload.clone(),
                    r.cell.clients.to_string(),
                    r.cell.memory_limit.clone(),
                    r.cell.profile.clone(),
                    r.repetition.to_string(),
                    if ok { "ok".into() } else { "failed".into() },
                    r.workload_kind.clone(),
                    r.script.clone(),
                    r.threads.to_string(),
                    r.scale.to_string(),
                    num(r.duration_s, 1),
                    num(r.ramp_up_s, 1),
                    f(m.tps, 3),
                    f(m.latency_ms_avg, 3),
                    o(m.latency_ms_stddev, 3),
                    o(m.latency_ms_p50, 3),
                    o(m.latency_ms_p90, 3),
                    o(m.latency_ms_p95, 3),
                    o(m.latency_ms_p99, 3),
                    o(m.latency_ms_p999, 3),
                    if ok { m.transactions.to_string() } else { String::new() },
                    if ok { m.failed_transactions.to_string() } else { String::new() },
                    o(m.nopm, 1),
                    o(m.tpm, 1),
                    r.started_at.clone(),
                    r.finished_at.clone(),
                    r.failure.clone().unwrap_or_default(),
                    r.failure_kind.clone().unwrap_or_default(),
                ]
            })
            .collect();
        let statements = summary
            .cells
            .iter()
            .flat_map(|c| {
                c.statements.iter().enumerate().map(move |(i, st)| {
                    let d = delta_cols(st.delta.as_ref(), c.is_baseline);
                    vec![
                        c.key.placement.clone(),
                        c.key.workload.clone(),
                        c.key.clients.to_string(),
                        c.key.memory_limit.clone(),
                        c.key.profile.clone(),
                        (i + 1).to_string(),
                        st.statement.clone(),
                        st.latency_ms.n.to_string(),
                        num(st.latency_ms.mean, 4),
                        num(st.latency_ms.ci95, 4),
                        d[0].clone(),
                        d[1].clone(),
                        d[2].clone(),
                    ]
                })
            })
            .collect();
        let summary_rows = summary
            .cells
            .iter()
            .map(|c| {
                let td = delta_cols(c.tps_delta.as_ref(), c.is_baseline);
                let ld = delta_cols(c.latency_delta.as_ref(), c.is_baseline);
                let noise = match (&c.tps_delta, c.is_baseline) {
                    (_, true) => String::new(),
                    (Some(d), _) if d.has_interval() => d.within_noise.to_string(),
                    _ => "unknown".into(),
                };
                vec![
                    c.key.placement.clone(),
                    c.key.workload.clone(),
                    c.key.clients.to_string(),
                    c.key.memory_limit.clone(),
                    c.key.profile.clone(),
                    c.runs.to_string(),
                    c.failed_runs.to_string(),
                    num(c.tps.mean, 3),
                    num(c.tps.stdev, 3),
                    num(c.tps.cv_pct, 2),
                    num(c.tps.ci95, 3),
                    num(c.latency_ms.mean, 3),
                    num(c.latency_ms.stdev, 3),
                    c.latency_p99_ms.map(|e| num(e.mean, 3)).unwrap_or_default(),
                    td[0].clone(),
                    td[1].clone(),
                    td[2].clone(),
                    c.tps_delta
                        .map(|d| num(d.ratio, 4))
                        .unwrap_or_else(|| if c.is_baseline { "1.0000".into() } else { String::new() }),
                    ld[0].clone(),
                    ld[1].clone(),
                    ld[2].clone(),
                    noise,
                    c.nopm.map(|e| num(e.mean, 1)).unwrap_or_default(),
                    c.nopm.map(|e| num(e.ci95, 1)).unwrap_or_default(),
                ]
                .into_iter()
                .chain(if c.nopm.is_some() {
                    delta_cols(c.nopm_delta.as_ref(), c.is_baseline).to_vec()
                } else {
                    vec![String::new(); 3]
                })
                .collect()
            })
            .collect();
        let series = set
            .runs
            .iter()
            .flat_map(|r| {
                r.series.iter().map(move |s| {
                    vec![
                        r.run_id.clone(),
                        r.cell.placement.clone(),
                        r.cell.workload.clone(),
                        r.cell.clients.to_string(),
                        r.repetition.to_string(),
                        num(s.t, 1),
                        num(s.tps, 1),
                        num(s.latency_ms, 3),
                        opt(s.latency_ms_stddev, 3),
                        s.failed.map(|f| f.to_string()).unwrap_or_default(),
                    ]
                })
            })
            .collect();
        let devices = set
            .runs
            .iter()
            .flat_map(|r| {
                r.devices.iter().map(move |d| {
                    vec![
                        r.run_id.clone(),
                        r.cell.placement.clone(),
                        r.cell.workload.clone(),
                        r.cell.clients.to_string(),
                        r.repetition.to_string(),
                        d.device.clone(),
                        d.role.clone(),
                        d.kernel_name.clone(),
                        num(d.read_iops, 1),
                        num(d.write_iops, 1),
                        num(d.read_mb_s, 2),
                        num(d.write_mb_s, 2),
                        num(d.avg_wait_ms, 3),
                        num(d.peak_read_iops, 1),
                        num(d.peak_write_iops, 1),
                    ]
                })
            })
            .collect();
        let layout = results::ResultsDir::new(out);
        let files = [
            (layout.devices_csv(), csv_bytes(DEVICES_COLUMNS, devices)),
            (layout.runs_csv(), csv_bytes(RUNS_COLUMNS, runs)),
            (layout.summary_csv(), csv_bytes(SUMMARY_COLUMNS, summary_rows)),
            (layout.series_csv(), csv_bytes(SERIES_COLUMNS, series)),
            (layout.statements_csv(), csv_bytes(STATEMENTS_COLUMNS, statements)),
        ];
        let mut written = Vec::new();
        for (p, b) in files {
            write(&p, &b)?;
            written.push(p);
        }
        Ok(written)
    }
}

/// `summary.json`: the summary and warnings, for other tools.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, _set: &ResultSet, summary: &Summary, out: &Path) -> Result<Vec<PathBuf>, ExportError> {
        let p = out.join("summary.json");
        let bytes = serde_json::to_vec_pretty(summary)
            .map_err(|e| ExportError::Write { path: p.clone(), message: e.to_string() })?;
        write(&p, &bytes)?;
        Ok(vec![p])
    }
}
