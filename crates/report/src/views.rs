//! Which charts a result set gets, built from the summary.

use std::path::{Path, PathBuf};

use crate::charts::{self, Bar, BarChart};
use crate::export::{ExportError, Exporter};
use crate::model::{CellSummary, ResultSet, Summary};
use crate::stats::Delta;

/// The environment line(s) printed under every chart.
pub fn footnote(set: &ResultSet, cells: &[&CellSummary]) -> Vec<String> {
    let m = &set.manifest;
    let h = &m.host;
    let first = cells.first().and_then(|c| set.runs.iter().find(|r| r.cell == c.key));
    let mut lines = vec![format!(
        "{}{} ({} threads), {:.1} GiB RAM, Linux {}; PostgreSQL {}",
        if m.emulated { "Emulated tiers on " } else { "" },
        if h.cpu_model.is_empty() { "unknown CPU" } else { h.cpu_model.as_str() },
        h.cpu_threads,
        h.memory_bytes as f64 / (1u64 << 30) as f64,
        h.kernel,
        m.postgres.version
    )];
    if let Some(r) = first {
        lines.push(format!(
            "{} {} scale {}, {} clients, {} threads, {:.0} s measured after {:.0} s ramp-up; {} runs per bar, {} order; server memory {}; error bars: 95% CI; pale bars: within noise",
            r.workload_kind,
            r.script,
            r.scale,
            r.cell.clients,
            r.threads,
            r.duration_s,
            r.ramp_up_s,
            cells.iter().map(|c| c.runs).min().unwrap_or(0),
            m.order,
            r.cell.memory_limit
        ));
    }
    lines
}

fn annotation(delta: Option<&Delta>, is_baseline: bool, lower_is_better: bool) -> (String, bool) {
    if is_baseline {
        return ("baseline".into(), false);
    }
    match delta {
        None => ("n/a".into(), false),
        Some(d) => {
            let mut text =
                if d.ratio >= 2.0 && !lower_is_better { format!("{:.1}x", d.ratio) } else { format!("{:+.1}%", d.pct) };
            if d.within_noise {
                text.push_str(" (noise)");
            } else if !d.has_interval() {
                text.push_str(" (1 run)");
            }
            (text, d.within_noise)
        }
    }
}

fn file_stem(kind: &str, c: &CellSummary) -> String {
    let clean =
        |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect::<String>();
    let mut s = format!("{kind}-{}-c{}", clean(&c.key.workload), c.key.clients);
    if c.key.memory_limit != "unlimited" {
        s.push_str(&format!("-mem{}", clean(&c.key.memory_limit)));
    }
    if c.key.profile != "default" {
        s.push_str(&format!("-{}", clean(&c.key.profile)));
    }
    s
}

/// Groups of cells that differ only by placement.
pub fn groups(summary: &Summary) -> Vec<Vec<&CellSummary>> {
    let mut out: Vec<Vec<&CellSummary>> = Vec::new();
    for c in &summary.cells {
        let same = |o: &&CellSummary| {
            o.key.workload == c.key.workload
                && o.key.clients == c.key.clients
                && o.key.memory_limit == c.key.memory_limit
                && o.key.profile == c.key.profile
        };
        match out.iter_mut().find(|g| g.first().is_some_and(same)) {
            Some(g) => g.push(c),
            None => out.push(vec![c]),
        }
    }
    out
}

/// Throughput and latency bar charts per workload (and client count, memory limit, profile).
pub struct ChartsExporter;

impl Exporter for ChartsExporter {
    fn name(&self) -> &'static str {
        "charts"
    }

    fn export(&self, set: &ResultSet, summary: &Summary, out: &Path) -> Result<Vec<PathBuf>, ExportError> {
        let dir = out.join("charts");
        std::fs::create_dir_all(&dir).map_err(|e| ExportError::Write { path: dir.clone(), message: e.to_string() })?;
        let placements = set.placements();
        let legend = |name: &str| {
            let p = set.manifest.placements.iter().find(|p| p.name == name);
            match p {
                Some(p) if p.data_device == p.wal_device => {
                    format!("{name}: data + WAL on {}", p.data_device)
                }
                Some(p) => format!("{name}: data on {}, WAL on {}", p.data_device, p.wal_device),
                None => name.to_string(),
            }
        };
        let color = |name: &str| charts::placement_color(placements.iter().position(|p| p == name).unwrap_or(0));
        let mut written = Vec::new();
        for g in groups(summary) {
            let c0 = g[0];
            let what = describe_group(c0);
            for kind in ["throughput", "latency"] {
                let bars = g
                    .iter()
                    .map(|c| {
                        let (value, err, delta) = if kind == "throughput" {
                            (c.tps.mean, c.tps.ci95, c.tps_delta.as_ref())
                        } else {
                            (c.latency_ms.mean, c.latency_ms.ci95, c.latency_delta.as_ref())
                        };
                        let (annotation, noise) = annotation(delta, c.is_baseline, kind == "latency");
                        Bar {
                            label: c.key.placement.clone(),
                            legend: legend(&c.key.placement),
                            value,
                            error: err.is_finite().then_some(err),
                            color: color(&c.key.placement),
                            annotation,
                            within_noise: noise,
                        }
                    })
                    .collect();
                let chart = BarChart {
                    title: format!(
                        "{}: {} by placement",
                        set.manifest.experiment_name,
                        if kind == "throughput" { "throughput" } else { "average latency" }
                    ),
                    subtitle: format!(
                        "{what}; % change against baseline {} ({})",
                        set.manifest.baseline,
                        if kind == "throughput" { "higher is better" } else { "lower is better" }
                    ),
                    x_label: "placement".into(),
                    y_label: if kind == "throughput" {
                        "throughput (transactions/s)".into()
                    } else {
                        "average latency (ms)".into()
                    },
                    bars,
                    footnote: footnote(set, &g),
                    value_decimals: if kind == "throughput" { 0 } else { 2 },
                };
                let stem = dir.join(file_stem(kind, c0));
                charts::render_bar_chart(&chart, &stem)
                    .map_err(|e| ExportError::Write { path: stem.clone(), message: e.to_string() })?;
                written.push(stem.with_extension("png"));
                written.push(stem.with_extension("svg"));
            }
        }
        Ok(written)
    }
}

/// `workload tpcb (pgbench tpcb-like), 8 clients, memory 256MiB` for titles.
pub fn describe_group(c: &CellSummary) -> String {
    let mut s = format!("workload {}, {} clients", c.key.workload, c.key.clients);
    if c.key.memory_limit != "unlimited" {
        s.push_str(&format!(", server memory {}", c.key.memory_limit));
    }
    if c.key.profile != "default" {
        s.push_str(&format!(", profile {}", c.key.profile));
    }
    s
}

/// The chart files of a group, relative to the results directory.
pub fn chart_files(c: &CellSummary) -> [String; 2] {
    [format!("charts/{}.png", file_stem("throughput", c)), format!("charts/{}.png", file_stem("latency", c))]
}
