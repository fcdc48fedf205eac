//! Two result sets taken at different times or on different machines (seed 001: the same
//! benchmark across software releases): what changed in the environment and configuration
//! first, then the deltas of every matching cell, with intervals, as a table and a chart.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::ReportError;
use crate::charts::{self, Bar, BarChart, BarGroup, Chart};
use crate::export::csv::Fixed;
use crate::export::{ExportError, Output, csv_bytes, write_outputs};
use analysis::model::{ResultSet, describe, summarize};
use stats::Delta;

/// One difference between the two environments or configurations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub what: String,
    pub baseline: String,
    pub contender: String,
}

/// One cell present in both result sets.
#[derive(Clone, Debug, Serialize)]
pub struct CellComparison {
    pub cell: String,
    pub baseline_tps: f64,
    pub contender_tps: f64,
    pub tps: Option<Delta>,
    pub latency: Option<Delta>,
    /// Per-statement latency changes (pgbench -r), e.g. the UPDATE statement of seed 001.
    pub statements: Vec<(String, f64, f64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub changes: Vec<Change>,
    pub cells: Vec<CellComparison>,
    /// Cells in only one of the two sets.
    pub unmatched: Vec<String>,
    /// The published claims that compare two result sets (`across = "result-sets"`), judged here.
    pub claims: Vec<analysis::claims::ClaimCheck>,
}

fn s(v: &Value) -> String {
    match v {
        Value::String(x) => x.clone(),
        Value::Null => "(none)".into(),
        other => other.to_string(),
    }
}

/// Scalar differences between two JSON documents, as dotted paths.
pub fn json_diff(a: &Value, b: &Value, path: &str, out: &mut Vec<Change>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                json_diff(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), &p, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (xa, ya)) in x.iter().zip(y).enumerate() {
                json_diff(xa, ya, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Null, Value::Object(m)) | (Value::Object(m), Value::Null) if m.is_empty() => {}
        (Value::Null, Value::Array(v)) | (Value::Array(v), Value::Null) if v.is_empty() => {}
        _ if a != b => out.push(Change { what: path.to_string(), baseline: s(a), contender: s(b) }),
        _ => {}
    }
}

/// What differs between the two runs' environments and configurations.
pub fn environment_changes(a: &ResultSet, b: &ResultSet) -> Vec<Change> {
    let (ma, mb) = (&a.manifest, &b.manifest);
    let mut out = Vec::new();
    let mut push = |what: &str, x: String, y: String| {
        if x != y {
            out.push(Change { what: what.into(), baseline: x, contender: y });
        }
    };
    push("CPU", ma.host.cpu_model.clone(), mb.host.cpu_model.clone());
    push(
        "CPU cores/threads",
        format!("{}/{}", ma.host.cpu_cores, ma.host.cpu_threads),
        format!("{}/{}", mb.host.cpu_cores, mb.host.cpu_threads),
    );
    push("memory", format!("{} bytes", ma.host.memory_bytes), format!("{} bytes", mb.host.memory_bytes));
    push("kernel", ma.host.kernel.clone(), mb.host.kernel.clone());
    if !(ma.host.kernel_cmdline.is_empty() && mb.host.kernel_cmdline.is_empty()) {
        push("kernel command line", ma.host.kernel_cmdline.clone(), mb.host.kernel_cmdline.clone());
    }
    push("operating system", ma.host.os.clone(), mb.host.os.clone());
    push("virtualisation", ma.host.virtualization.clone(), mb.host.virtualization.clone());
    push("host", ma.host.hostname.clone(), mb.host.hostname.clone());
    push("CPU governor", format!("{:?}", ma.host.cpu_governor), format!("{:?}", mb.host.cpu_governor));
    push(
        "transparent huge pages",
        format!("{:?}", ma.host.transparent_hugepages),
        format!("{:?}", mb.host.transparent_hugepages),
    );
    push("PostgreSQL", ma.postgres.version.clone(), mb.postgres.version.clone());
    push("emulated tiers", ma.emulated.to_string(), mb.emulated.to_string());
    push("pgtier commit", ma.git_commit.clone().unwrap_or_default(), mb.git_commit.clone().unwrap_or_default());
    push(
        "load average at start",
        ma.host.load_average.clone().unwrap_or_default(),
        mb.host.load_average.clone().unwrap_or_default(),
    );
    let keys: std::collections::BTreeSet<&String> = ma.host.sysctls.keys().chain(mb.host.sysctls.keys()).collect();
    for k in keys {
        push(
            &format!("sysctl {k}"),
            ma.host.sysctls.get(k).cloned().unwrap_or_default(),
            mb.host.sysctls.get(k).cloned().unwrap_or_default(),
        );
    }
    let tools: std::collections::BTreeSet<&String> = ma.tools.keys().chain(mb.tools.keys()).collect();
    for t in tools {
        push(
            &format!("tool {t}"),
            ma.tools.get(t).cloned().unwrap_or_default(),
            mb.tools.get(t).cloned().unwrap_or_default(),
        );
    }
    for da in &ma.devices {
        let Some(db) = mb.devices.iter().find(|d| d.name == da.name) else {
            push(&format!("device {}", da.name), da.description.clone(), "(absent)".into());
            continue;
        };
        push(&format!("device {} description", da.name), da.description.clone(), db.description.clone());
        push(
            &format!("device {} mount options", da.name),
            da.effective_mount_options.join(","),
            db.effective_mount_options.join(","),
        );
        push(&format!("device {} DAX in effect", da.name), da.dax_honoured.to_string(), db.dax_honoured.to_string());
        for f in ["model", "serial", "firmware", "size_bytes", "rotational", "scheduler"] {
            push(
                &format!("device {} {f}", da.name),
                s(da.facts.get(f).unwrap_or(&Value::Null)),
                s(db.facts.get(f).unwrap_or(&Value::Null)),
            );
        }
    }
    let mut cfg = Vec::new();
    json_diff(&ma.resolved_config, &mb.resolved_config, "config", &mut cfg);
    cfg.retain(|c| c.what != "config.file");
    out.extend(cfg);
    out
}

/// A row of `comparison.csv`: one matching cell.
#[derive(Serialize, Default)]
struct CompareRow<'a> {
    cell: &'a str,
    baseline_tps: Fixed<3>,
    contender_tps: Fixed<3>,
    tps_delta_pct: Fixed<2>,
    tps_delta_ci95_low_pct: Fixed<2>,
    tps_delta_ci95_high_pct: Fixed<2>,
    latency_delta_pct: Option<Fixed<2>>,
    /// `unknown` without an interval.
    within_noise: &'static str,
    /// `real change` (after Holm's correction over the cells), `equivalent` (inside ±2%),
    /// `inconclusive`, `no interval`.
    tps_verdict: &'static str,
    /// The TPS change's interval after Holm's correction over the cells (the one that goes with
    /// the verdict; equal to the 95% one for a single cell), as summary.csv has it.
    tps_delta_holm_low_pct: Option<Fixed<2>>,
    tps_delta_holm_high_pct: Option<Fixed<2>>,
    /// The average latency's change: its 95% interval, its verdict and its interval after Holm.
    latency_delta_ci95_low_pct: Option<Fixed<2>>,
    latency_delta_ci95_high_pct: Option<Fixed<2>>,
    latency_verdict: &'static str,
    latency_delta_holm_low_pct: Option<Fixed<2>>,
    latency_delta_holm_high_pct: Option<Fixed<2>>,
}

impl CompareRow<'_> {
    fn of(c: &CellComparison) -> CompareRow<'_> {
        let nan = Delta::unknown();
        let d = c.tps.unwrap_or(nan);
        CompareRow {
            cell: &c.cell,
            baseline_tps: Fixed(c.baseline_tps),
            contender_tps: Fixed(c.contender_tps),
            tps_delta_pct: Fixed(d.pct),
            tps_delta_ci95_low_pct: Fixed(d.pct_low),
            tps_delta_ci95_high_pct: Fixed(d.pct_high),
            latency_delta_pct: c.latency.map(|l| Fixed(l.pct)),
            within_noise: match (d.has_interval(), d.within_noise) {
                (false, _) => "unknown",
                (true, true) => "true",
                (true, false) => "false",
            },
            tps_verdict: d.verdict.as_str(),
            tps_delta_holm_low_pct: c.tps.map(|d| Fixed(d.holm_low)),
            tps_delta_holm_high_pct: c.tps.map(|d| Fixed(d.holm_high)),
            latency_delta_ci95_low_pct: c.latency.map(|l| Fixed(l.pct_low)),
            latency_delta_ci95_high_pct: c.latency.map(|l| Fixed(l.pct_high)),
            latency_verdict: c.latency.map_or("", |l| l.verdict.as_str()),
            latency_delta_holm_low_pct: c.latency.map(|l| Fixed(l.holm_low)),
            latency_delta_holm_high_pct: c.latency.map(|l| Fixed(l.holm_high)),
        }
    }
}

/// Compares two result sets and writes `comparison.md`, `comparison.csv` and a chart to `out`.
pub fn compare(baseline: &Path, contender: &Path, out: &Path) -> Result<(Comparison, Vec<PathBuf>), ReportError> {
    let a = ResultSet::load(baseline)?;
    let b = ResultSet::load(contender)?;
    compare_sets((baseline, &a), (contender, &b), out)
}

/// [`compare`] of two result sets already loaded from `baseline` and `contender`.
pub fn compare_sets(
    (baseline, a): (&Path, &ResultSet),
    (contender, b): (&Path, &ResultSet),
    out: &Path,
) -> Result<(Comparison, Vec<PathBuf>), ReportError> {
    let cmp = comparison(a, b);
    std::fs::create_dir_all(out).map_err(|e| ExportError::Write { path: out.to_path_buf(), message: e.to_string() })?;
    let md = Output::bytes("comparison.md", markdown(&cmp, (baseline, a), (contender, b)).into_bytes());
    let csv = Output::bytes("comparison.csv", csv_bytes(cmp.cells.iter().map(CompareRow::of)));
    let [png, svg] =
        charts::render(&Chart::Bar(ratio_chart(&cmp, baseline, contender)), Path::new("comparison-throughput"))
            .map_err(|e| ExportError::Write { path: out.join("comparison-throughput"), message: e.to_string() })?;
    let files = write_outputs(out, [md, csv, png, svg])?;
    Ok((cmp, files))
}

/// The environment changes, every matching cell's deltas and the cells without a counterpart.
fn comparison(a: &ResultSet, b: &ResultSet) -> Comparison {
    let (sa, sb) = (summarize(a), summarize(b));
    let changes = environment_changes(a, b);
    let mut cells = Vec::new();
    let mut unmatched = Vec::new();
    for ca in &sa.cells {
        let Some(cb) = sb.cells.iter().find(|c| c.key == ca.key) else {
            unmatched.push(format!("{} (only in the baseline set)", describe(&ca.key)));
            continue;
        };
        let stmt = |set: &ResultSet| -> BTreeMap<String, f64> {
            let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in set.runs.iter().filter(|r| r.cell == ca.key && r.status == results::RunStatus::Ok) {
                for st in &r.statements {
                    m.entry(st.statement.clone()).or_default().push(st.latency_ms);
                }
            }
            m.into_iter().map(|(k, v)| (k, v.iter().sum::<f64>() / v.len() as f64)).collect()
        };
        let (xa, xb) = (stmt(a), stmt(b));
        let statements = xa.iter().filter_map(|(k, va)| xb.get(k).map(|vb| (k.clone(), *va, *vb))).collect();
        cells.push(CellComparison {
            cell: describe(&ca.key),
            baseline_tps: ca.tps.mean,
            contender_tps: cb.tps.mean,
            tps: Delta::between(&ca.tps, &cb.tps),
            latency: Delta::between(&ca.latency_ms, &cb.latency_ms),
            statements,
        });
    }
    for cb in &sb.cells {
        if !sa.cells.iter().any(|c| c.key == cb.key) {
            unmatched.push(format!("{} (only in the contender set)", describe(&cb.key)));
        }
    }
    // Holm's correction over the cells compared, then the verdicts (the baseline set's margin).
    let margin = a.manifest.measurement.equivalence_margin_pct;
    let mut family: Vec<(analysis::contest::Figure, &mut Delta)> = Vec::new();
    for c in cells.iter_mut() {
        if let Some(d) = c.tps.as_mut() {
            family.push((analysis::contest::Figure::Tps, d));
        }
        if let Some(d) = c.latency.as_mut() {
            family.push((analysis::contest::Figure::Latency, d));
        }
    }
    analysis::contest::adjust_and_classify(&mut family, margin);
    let claims = analysis::claims::check_across(a, &sa, b, &sb);
    Comparison { changes, cells, unmatched, claims }
}

/// `comparison.md`: what changed first, then the deltas.
fn markdown(cmp: &Comparison, (baseline, a): (&Path, &ResultSet), (contender, b): (&Path, &ResultSet)) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Comparison: {} against {}\n", contender.display(), baseline.display());
    let _ = writeln!(
        md,
        "Baseline set: `{}` ({}, started {}).  ",
        baseline.display(),
        a.manifest.experiment_name,
        a.manifest.started_at
    );
    let _ = writeln!(
        md,
        "Contender set: `{}` ({}, started {}).\n",
        contender.display(),
        b.manifest.experiment_name,
        b.manifest.started_at
    );
    changes_section(&mut md, cmp);
    claims_section(&mut md, cmp, a.manifest.emulated || b.manifest.emulated);
    deltas_section(&mut md, cmp);
    if !cmp.unmatched.is_empty() {
        let _ = writeln!(md, "\nCells without a counterpart: {}", cmp.unmatched.join("; "));
    }
    let _ = writeln!(md, "\n![comparison](comparison-throughput.png)");
    md
}

/// What the records show differing between the two sets (machine, tools, devices, configuration).
fn changes_section(md: &mut String, cmp: &Comparison) {
    let _ = writeln!(md, "## What changed between the two runs\n");
    if cmp.changes.is_empty() {
        let _ = writeln!(md, "Nothing pgtier records differs: same machine facts, tools, devices and configuration.\n");
    } else {
        let _ = writeln!(
            md,
            "Read these before any delta: a change below can explain a delta as well as the thing under test.\n"
        );
        let _ = writeln!(md, "| what | baseline | contender |\n|---|---|---|");
        for c in &cmp.changes {
            change_row(md, c);
        }
    }
}

/// One change as a row of a three-column table (what, baseline, contender).
pub(crate) fn change_row(md: &mut String, c: &Change) {
    let _ = writeln!(md, "| {} | {} | {} |", c.what, c.baseline.replace('|', "\\|"), c.contender.replace('|', "\\|"));
}

/// The study's claims checked across the two result sets.
fn claims_section(md: &mut String, cmp: &Comparison, emulated: bool) {
    if !cmp.claims.is_empty() {
        let _ = writeln!(md, "\n## Published vs measured (the study's figures across result sets)\n");
        if emulated {
            let _ = writeln!(
                md,
                "At least one set ran on **emulated** tiers: a verdict checks the pipeline, not the hardware.\n"
            );
        }
        let _ = writeln!(md, "| claim | the study | measured (cell) | verdict | why |\n|---|---|---|---|---|");
        for c in &cmp.claims {
            let _ = writeln!(
                md,
                "| {}: {} of {} | {} \"{}\" | {}({}) | **{}** | {} |",
                c.claim.name,
                c.claim.metric,
                c.claim.placement,
                c.claim.figure,
                c.claim.text.replace('|', "/"),
                c.measured.as_ref().map(|d| format!("{} ", d.text_with_holm(""))).unwrap_or_default(),
                c.cell,
                c.verdict.as_str(),
                c.why
            );
        }
        let _ = writeln!(
            md,
            "\nVerdicts: {} The changes listed above can explain a verdict as well as the thing under test.",
            analysis::claims::RULE
        );
    }
}

/// TPS and latency deltas per matched cell, and the per-statement latencies.
fn deltas_section(md: &mut String, cmp: &Comparison) {
    let _ = writeln!(md, "\n## Deltas (contender against baseline, same cell)\n");
    let _ = writeln!(
        md,
        "| cell | baseline TPS | contender TPS | TPS change [95% CI] | latency change [95% CI] |\n|---|---:|---:|---|---|"
    );
    let fmt = |d: &Option<Delta>| {
        d.as_ref().map_or("n/a".to_string(), |d| {
            if d.has_interval() { format!("{} **{}**", d.text_with_holm(""), d.verdict.as_str()) } else { d.text("") }
        })
    };
    for c in &cmp.cells {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {:.1} | {} | {} |",
            c.cell,
            c.baseline_tps,
            c.contender_tps,
            fmt(&c.tps),
            fmt(&c.latency)
        );
    }
    let with_statements: Vec<&CellComparison> = cmp.cells.iter().filter(|c| !c.statements.is_empty()).collect();
    if !with_statements.is_empty() {
        let _ = writeln!(md, "\n### Per-statement average latency (pgbench -r)\n");
        let _ = writeln!(md, "| cell | statement | baseline ms | contender ms | change |\n|---|---|---:|---:|---:|");
        for c in with_statements {
            for (st, x, y) in &c.statements {
                let _ =
                    writeln!(md, "| {} | `{}` | {:.3} | {:.3} | {:+.1}% |", c.cell, st, x, y, (y / x - 1.0) * 100.0);
            }
        }
    }
}

/// The contender/baseline TPS ratio per cell.
fn ratio_chart(cmp: &Comparison, baseline: &Path, contender: &Path) -> BarChart {
    let (labels, common) = short_labels(&cmp.cells.iter().map(|c| c.cell.as_str()).collect::<Vec<_>>());
    // With many cells the verdict words would overlap: faded bars say it (and the table).
    let many = cmp.cells.len() > 6;
    let groups = cmp
        .cells
        .iter()
        .zip(labels)
        .filter_map(|(c, label)| {
            let d = c.tps?;
            Some(BarGroup {
                label,
                bars: vec![Bar {
                    legend: String::new(),
                    value: d.ratio,
                    error: None,
                    range: d.has_interval().then(|| (1.0 + d.pct_low / 100.0, 1.0 + d.pct_high / 100.0)),
                    color: charts::placement_color(1),
                    annotation: match d.verdict {
                        stats::Verdict::RealChange => format!("{:+.1}%", d.pct),
                        _ if many => format!("{:+.1}%", d.pct),
                        v => format!("{:+.1}% ({})", d.pct, v.as_str()),
                    },
                    within_noise: d.verdict != stats::Verdict::RealChange,
                }],
            })
        })
        .collect();
    BarChart {
        title: "contender against baseline result set".into(),
        subtitle: format!(
            "TPS ratio per cell (1.0 = baseline set){}; {} environment/configuration difference(s) listed in comparison.md",
            if many { ", faded: not a real change" } else { "" },
            cmp.changes.len()
        ),
        x_label: if common.is_empty() { "cell".into() } else { format!("cell (every one: {})", common.join(" / ")) },
        y_label: "contender TPS / baseline TPS".into(),
        groups,
        footnote: vec![format!("baseline: {}", baseline.display()), format!("contender: {}", contender.display())],
        value_decimals: 2,
        value_suffix: "",
        reference: Some((1.0, "baseline set = 1.0".into())),
    }
}

/// Short bar labels: the parts of a cell name (`placement / workload / 2 clients / memory
/// 256MiB / profile p`) that differ between the cells, `c2` for `2 clients`; and the parts
/// common to every cell, said once.
fn short_labels(cells: &[&str]) -> (Vec<String>, Vec<String>) {
    let split: Vec<Vec<&str>> = cells.iter().map(|c| c.split(" / ").collect()).collect();
    let common: Vec<String> = split
        .first()
        .map(|first| {
            first
                .iter()
                .filter(|p| split.len() > 1 && split.iter().all(|s| s.contains(p)))
                .map(|p| p.to_string())
                .collect()
        })
        .unwrap_or_default();
    let short = |p: &str| match p.strip_suffix(" clients") {
        Some(n) => format!("c{n}"),
        None => p.strip_prefix("profile ").or_else(|| p.strip_prefix("memory ")).unwrap_or(p).to_string(),
    };
    let labels = split
        .iter()
        .map(|parts| {
            let own: Vec<String> = parts.iter().filter(|p| !common.iter().any(|c| c == *p)).map(|p| short(p)).collect();
            if own.is_empty() {
                parts.iter().map(|p| short(p)).collect::<Vec<_>>().join(" / ")
            } else {
                own.join(" / ")
            }
        })
        .collect();
    (labels, common)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_labels_keep_what_differs() {
        let (labels, common) = short_labels(&[
            "nvme / tpcb / 1 clients / memory 256MiB",
            "nvme / tpcb / 2 clients / memory 256MiB",
            "nvme / tpcb / 2 clients / memory 256MiB / profile perf",
        ]);
        assert_eq!(labels, ["c1", "c2", "c2 / perf"]);
        assert_eq!(common, ["nvme", "tpcb", "memory 256MiB"]);
        let (labels, common) = short_labels(&["nvme / tpcb / 1 clients"]);
        assert_eq!((labels, common.len()), (vec!["nvme / tpcb / c1".to_string()], 0));
    }

    /// comparison.csv has each change's interval after Holm beside its 95% one and its verdict.
    #[test]
    fn comparison_rows_have_the_intervals_after_holm() {
        let d = |pct: f64, (lo, hi): (f64, f64), (hlo, hhi): (f64, f64)| Delta {
            pct,
            ratio: 1.0 + pct / 100.0,
            pct_low: lo,
            pct_high: hi,
            p_value: 0.004,
            p_adjusted: 0.02,
            holm_low: hlo,
            holm_high: hhi,
            se: f64::NAN,
            df: 4.0,
            method: stats::Method::WelchLog,
            within_noise: false,
            verdict: stats::Verdict::RealChange,
        };
        let c = CellComparison {
            cell: "nvme / tpcb / 2 clients".into(),
            baseline_tps: 100.0,
            contender_tps: 150.0,
            tps: Some(d(50.0, (20.0, 87.5), (10.25, 104.0))),
            latency: Some(d(-33.0, (-47.0, -16.0), (-51.5, -8.75))),
            statements: vec![],
        };
        let text = String::from_utf8(csv_bytes([CompareRow::of(&c)])).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}"))];
        assert_eq!((col("tps_delta_holm_low_pct"), col("tps_delta_holm_high_pct")), ("10.25", "104.00"));
        assert_eq!((col("latency_delta_ci95_low_pct"), col("latency_delta_ci95_high_pct")), ("-47.00", "-16.00"));
        assert_eq!(col("latency_verdict"), "real change");
        assert_eq!((col("latency_delta_holm_low_pct"), col("latency_delta_holm_high_pct")), ("-51.50", "-8.75"));
    }

    #[test]
    fn json_diff_lists_scalar_paths() {
        let a: Value = serde_json::json!({"x": 1, "y": {"z": "a", "w": [1, 2]}});
        let b: Value = serde_json::json!({"x": 1, "y": {"z": "b", "w": [1, 3]}, "n": true});
        let mut out = Vec::new();
        json_diff(&a, &b, "", &mut out);
        let paths: Vec<&str> = out.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(paths, ["n", "y.w[1]", "y.z"]);
        assert_eq!(out[2].baseline, "a");
    }
}
