//! Which charts a result set gets, built from the summary and the runs.

use std::path::{Path, PathBuf};

use plotters::style::RGBColor;
use results::record::RunStatus;

use crate::charts::{self, Bar, BarChart, BarGroup, Line, LineChart};
use crate::export::{ExportError, Exporter};
use crate::model::{CellSummary, ResultSet, Summary};
use crate::stats::{Delta, Estimate};

/// A chart written, for the report: its file (relative to the results directory) and a caption.
#[derive(Clone, Debug)]
pub struct ChartFile {
    pub section: String,
    pub file: String,
    pub caption: String,
}

/// The environment line(s) printed under every chart.
pub fn footnote(set: &ResultSet, cells: &[&CellSummary], bars: bool) -> Vec<String> {
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
        let mut scripts: Vec<&str> = Vec::new();
        for c in cells {
            if let Some(x) = set.runs.iter().find(|r| r.cell == c.key)
                && !scripts.contains(&x.script.as_str())
            {
                scripts.push(&x.script);
            }
        }
        lines.push(format!(
            "{} {} scale {}, {:.0} s measured after {:.0} s ramp-up; {} runs per point, {} order{}",
            r.workload_kind,
            scripts.join(" / "),
            r.scale,
            r.duration_s,
            r.ramp_up_s,
            cells.iter().map(|c| c.runs).min().unwrap_or(0),
            m.order,
            if bars { "; error bars: 95% CI; pale bars: within noise" } else { "" }
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

fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

fn file_stem(kind: &str, c: &CellSummary) -> String {
    format!("{kind}-{}-c{}{}", clean(&c.key.workload), c.key.clients, context_suffix(&c.key, true, true))
}

/// The part of a chart's file name that tells memory limits and settings profiles apart
/// (`-mem192MiB`, `-<profile>`); left out for the unlimited / default value and for the dimension
/// the chart itself compares.
fn context_suffix(k: &results::record::CellKey, memory: bool, profile: bool) -> String {
    let mut s = String::new();
    if memory && k.memory_limit != "unlimited" {
        s.push_str(&format!("-mem{}", clean(&k.memory_limit)));
    }
    if profile && k.profile != "default" {
        s.push_str(&format!("-{}", clean(&k.profile)));
    }
    s
}

/// Groups of cells that differ only by placement.
pub fn groups(summary: &Summary) -> Vec<Vec<&CellSummary>> {
    group_by(summary, |a, b| {
        a.key.workload == b.key.workload
            && a.key.clients == b.key.clients
            && a.key.memory_limit == b.key.memory_limit
            && a.key.profile == b.key.profile
    })
}

fn group_by(summary: &Summary, same: impl Fn(&CellSummary, &CellSummary) -> bool) -> Vec<Vec<&CellSummary>> {
    let mut out: Vec<Vec<&CellSummary>> = Vec::new();
    for c in &summary.cells {
        match out.iter_mut().find(|g| g.first().is_some_and(|o| same(o, c))) {
            Some(g) => g.push(c),
            None => out.push(vec![c]),
        }
    }
    out
}

/// `workload tpcb, 8 clients, server memory 256MiB` for titles.
pub fn describe_group(c: &CellSummary) -> String {
    let mut s = format!("workload {}, {} clients", c.key.workload, c.key.clients);
    // Always said, "unlimited" included: a reader comparing charts must not have to guess.
    s.push_str(&format!(", server memory {}", c.key.memory_limit));
    if c.key.profile != "default" {
        s.push_str(&format!(", profile {}", c.key.profile));
    }
    s
}

struct Ctx<'a> {
    set: &'a ResultSet,
    summary: &'a Summary,
    dir: PathBuf,
    placements: Vec<String>,
    written: Vec<PathBuf>,
    files: Vec<ChartFile>,
}

impl Ctx<'_> {
    fn color(&self, placement: &str) -> RGBColor {
        charts::placement_color(self.placements.iter().position(|p| p == placement).unwrap_or(0))
    }

    fn legend(&self, name: &str) -> String {
        match self.set.manifest.placements.iter().find(|p| p.name == name) {
            Some(p) if p.data_device == p.wal_device => format!("{name}: data + WAL on {}", p.data_device),
            Some(p) => format!("{name}: data on {}, WAL on {}", p.data_device, p.wal_device),
            None => name.to_string(),
        }
    }

    fn done(&mut self, stem: PathBuf, section: &str, caption: String) {
        self.files.push(ChartFile {
            section: section.to_string(),
            file: format!("charts/{}.png", stem.file_name().unwrap_or_default().to_string_lossy()),
            caption,
        });
        self.written.push(stem.with_extension("png"));
        self.written.push(stem.with_extension("svg"));
    }

    fn bar(&mut self, chart: BarChart, stem: String, section: &str) -> Result<(), ExportError> {
        let p = self.dir.join(&stem);
        charts::render_bar_chart(&chart, &p)
            .map_err(|e| ExportError::Write { path: p.clone(), message: e.to_string() })?;
        self.done(p, section, chart.title.clone());
        Ok(())
    }

    fn line(&mut self, chart: LineChart, stem: String, section: &str) -> Result<(), ExportError> {
        let p = self.dir.join(&stem);
        charts::render_line_chart(&chart, &p)
            .map_err(|e| ExportError::Write { path: p.clone(), message: e.to_string() })?;
        self.done(p, section, chart.title.clone());
        Ok(())
    }
}

/// Every chart of a result set; returns the files written and, for the report, captions.
pub fn render_all(
    set: &ResultSet,
    summary: &Summary,
    out: &Path,
) -> Result<(Vec<PathBuf>, Vec<ChartFile>), ExportError> {
    let dir = results::ResultsDir::new(out).charts_dir();
    std::fs::create_dir_all(&dir).map_err(|e| ExportError::Write { path: dir.clone(), message: e.to_string() })?;
    let mut cx = Ctx { set, summary, dir, placements: set.placements(), written: Vec::new(), files: Vec::new() };
    per_cell_bars(&mut cx)?;
    normalised(&mut cx)?;
    scaling(&mut cx)?;
    dimension_comparison(&mut cx, "memory", |c| c.key.memory_limit.clone())?;
    dimension_comparison(&mut cx, "profile", |c| c.key.profile.clone())?;
    stability(&mut cx)?;
    device_io(&mut cx)?;
    ceilings(&mut cx)?;
    Ok((cx.written, cx.files))
}

/// Throughput, average latency and p99 latency per placement, for each cell group.
fn per_cell_bars(cx: &mut Ctx) -> Result<(), ExportError> {
    let set = cx.set;
    for g in groups(cx.summary) {
        let c0 = g[0];
        let what = describe_group(c0);
        type Pick = fn(&CellSummary) -> Option<(Estimate, Option<Delta>)>;
        let kinds: [(&str, &str, &str, Pick, bool); 3] = [
            ("throughput", "throughput", "", |c| Some((c.headline().0, c.headline().1)), false),
            ("latency", "average latency", "average latency (ms)", |c| Some((c.latency_ms, c.latency_delta)), true),
            (
                "latency-p99",
                "99th percentile latency",
                "p99 latency (ms)",
                |c| c.latency_p99_ms.map(|e| (e, c.latency_p99_delta)),
                true,
            ),
        ];
        for (kind, name, y_label, pick, lower) in kinds {
            if g.iter().any(|c| pick(c).is_none()) {
                continue;
            }
            let groups = g
                .iter()
                .map(|c| {
                    let (e, d) = pick(c).expect("checked above");
                    let (annotation, noise) = annotation(d.as_ref(), c.is_baseline, lower);
                    BarGroup {
                        label: c.key.placement.clone(),
                        bars: vec![Bar {
                            legend: cx.legend(&c.key.placement),
                            value: e.mean,
                            error: e.ci95.is_finite().then_some(e.ci95),
                            color: cx.color(&c.key.placement),
                            annotation,
                            within_noise: noise,
                        }],
                    }
                })
                .collect();
            let chart = BarChart {
                title: format!("{}: {name} by placement", set.manifest.experiment_name),
                subtitle: format!(
                    "{what}; % change against baseline {} ({} is better)",
                    set.manifest.baseline,
                    if lower { "lower" } else { "higher" }
                ),
                x_label: "placement".into(),
                y_label: if y_label.is_empty() { c0.headline().2.into() } else { y_label.into() },
                groups,
                footnote: footnote(set, &g, true),
                value_decimals: if lower { 2 } else { 0 },
                value_suffix: "",
                reference: None,
            };
            cx.bar(chart, file_stem(kind, c0), &what)?;
        }
    }
    Ok(())
}

/// Throughput normalised to the baseline (= 1.0) across workloads (seed 003's figure).
fn normalised(cx: &mut Ctx) -> Result<(), ExportError> {
    let set = cx.set;
    let by_context =
        group_by(cx.summary, |a, b| a.key.memory_limit == b.key.memory_limit && a.key.profile == b.key.profile);
    for cells in by_context {
        let contenders: Vec<&CellSummary> =
            cells.iter().copied().filter(|c| !c.is_baseline && c.tps_delta.is_some()).collect();
        if contenders.is_empty() {
            continue;
        }
        let many_clients = cells.iter().map(|c| c.key.clients).collect::<std::collections::BTreeSet<_>>().len() > 1;
        let mut labels: Vec<(String, u32)> = Vec::new();
        for c in &cells {
            let k = (c.key.workload.clone(), c.key.clients);
            if !labels.contains(&k) {
                labels.push(k);
            }
        }
        let groups = labels
            .iter()
            .map(|(w, clients)| BarGroup {
                label: if many_clients { format!("{w} @{clients}") } else { w.clone() },
                bars: contenders
                    .iter()
                    .filter(|c| &c.key.workload == w && c.key.clients == *clients)
                    .map(|c| {
                        let d = c.headline().1.expect("filtered");
                        let half = if d.has_interval() { (d.pct_high - d.pct_low) / 200.0 } else { f64::NAN };
                        Bar {
                            legend: cx.legend(&c.key.placement),
                            value: d.ratio,
                            error: half.is_finite().then_some(half),
                            color: cx.color(&c.key.placement),
                            annotation: if d.within_noise { "~ noise".into() } else { String::new() },
                            within_noise: d.within_noise,
                        }
                    })
                    .collect(),
            })
            .collect();
        let c0 = cells[0];
        let mut ctx = String::new();
        ctx.push_str(&format!(", server memory {}", c0.key.memory_limit));
        if c0.key.profile != "default" {
            ctx.push_str(&format!(", profile {}", c0.key.profile));
        }
        let chart = BarChart {
            title: format!("{}: throughput normalised to {}", set.manifest.experiment_name, set.manifest.baseline),
            subtitle: format!("baseline = 1.0 (dashed){ctx}; ~ marks a ratio within noise"),
            x_label: if many_clients { "workload @ clients".into() } else { "workload".into() },
            y_label: "throughput relative to baseline".into(),
            groups,
            footnote: footnote(set, &cells, true),
            value_decimals: 2,
            value_suffix: "",
            reference: Some((1.0, format!("{} = 1.0", set.manifest.baseline))),
        };
        let stem = format!("normalised-throughput{}", context_suffix(&c0.key, true, true));
        cx.bar(chart, stem, "Normalised throughput")?;
    }
    Ok(())
}

/// TPS against clients per placement, the peak of each marked and the delta at peak stated.
fn scaling(cx: &mut Ctx) -> Result<(), ExportError> {
    let set = cx.set;
    // One line per placement; with a single placement and several settings profiles (seed 004:
    // default against the performance profile), one line per profile instead.
    let mut profiles: Vec<String> = Vec::new();
    for c in &cx.summary.cells {
        if !profiles.contains(&c.key.profile) {
            profiles.push(c.key.profile.clone());
        }
    }
    let by_profile = cx.placements.len() == 1 && profiles.len() > 1;
    let by_context = group_by(cx.summary, |a, b| {
        a.key.workload == b.key.workload
            && a.key.memory_limit == b.key.memory_limit
            && (by_profile || a.key.profile == b.key.profile)
    });
    let shades = [
        RGBColor(0x3B, 0x5B, 0x92),
        RGBColor(0xE0, 0x9F, 0x3E),
        RGBColor(0x6F, 0xA2, 0x87),
        RGBColor(0x9E, 0x6F, 0xB5),
    ];
    let names: Vec<String> = if by_profile { profiles.clone() } else { cx.placements.clone() };
    let reference = if by_profile { profiles[0].clone() } else { set.manifest.baseline.clone() };
    for cells in by_context {
        let clients: std::collections::BTreeSet<u32> = cells.iter().map(|c| c.key.clients).collect();
        if clients.len() < 2 {
            continue;
        }
        let mut series = Vec::new();
        let mut peaks: Vec<(String, u32, f64)> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut pts: Vec<&CellSummary> = cells
                .iter()
                .copied()
                .filter(|c| if by_profile { &c.key.profile == name } else { &c.key.placement == name })
                .collect();
            if pts.is_empty() {
                continue;
            }
            pts.sort_by_key(|c| c.key.clients);
            let peak =
                pts.iter().max_by(|a, b| a.headline().0.mean.total_cmp(&b.headline().0.mean)).expect("non-empty");
            peaks.push((name.clone(), peak.key.clients, peak.headline().0.mean));
            series.push(Line {
                name: if by_profile { format!("profile {name}") } else { cx.legend(name) },
                color: if by_profile { shades[i % shades.len()] } else { cx.color(name) },
                points: pts.iter().map(|c| (c.key.clients as f64, c.headline().0.mean)).collect(),
                errors: Some(pts.iter().map(|c| c.headline().0.ci95).collect()),
                markers: true,
                dashed: false,
                mark: Some((
                    peak.key.clients as f64,
                    peak.headline().0.mean,
                    format!("peak {} @{}", charts::group_digits(peak.headline().0.mean, 0), peak.key.clients),
                )),
            });
        }
        let base = peaks.iter().find(|p| p.0 == reference).cloned();
        let who = if cells[0].nopm.is_some() { "virtual users" } else { "clients" };
        let deltas: Vec<String> = match &base {
            Some((_, bc, bt)) => peaks
                .iter()
                .filter(|p| p.0 != reference)
                .map(|(n, c, t)| {
                    format!("{n} {:+.1}% at its peak ({c} {who}; {reference} peaks at {bc})", (t / bt - 1.0) * 100.0)
                })
                .collect(),
            None => vec![],
        };
        let c0 = cells[0];
        let mut context = format!("workload {}", c0.key.workload);
        context.push_str(&format!(", server memory {}", c0.key.memory_limit));
        if !by_profile && c0.key.profile != "default" {
            context.push_str(&format!(", profile {}", c0.key.profile));
        }
        let chart = LineChart {
            title: format!("{}: scaling with {who}", set.manifest.experiment_name),
            subtitle: format!(
                "{context}; delta at peak: {}",
                if deltas.is_empty() { "n/a".into() } else { deltas.join("; ") }
            ),
            x_label: who.into(),
            y_label: cells[0].headline().2.into(),
            series,
            vlines: vec![],
            footnote: footnote(set, &cells, false),
            integer_x: true,
        };
        let stem = format!("scaling-{}{}", clean(&c0.key.workload), context_suffix(&c0.key, true, !by_profile));
        cx.line(chart, stem, "Scaling")?;
    }
    Ok(())
}

/// The same cells under each value of another dimension (memory limit or profile), side by side
/// per placement, annotated with each placement's change against the baseline under that value.
fn dimension_comparison(cx: &mut Ctx, what: &str, value: fn(&CellSummary) -> String) -> Result<(), ExportError> {
    let set = cx.set;
    let values: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for c in &cx.summary.cells {
            let x = value(c);
            if !v.contains(&x) {
                v.push(x);
            }
        }
        v
    };
    if values.len() < 2 {
        return Ok(());
    }
    let others = group_by(cx.summary, |a, b| {
        a.key.workload == b.key.workload
            && a.key.clients == b.key.clients
            && (what == "memory" || a.key.memory_limit == b.key.memory_limit)
            && (what == "profile" || a.key.profile == b.key.profile)
    });
    let shades = [
        RGBColor(0x3B, 0x5B, 0x92),
        RGBColor(0xE0, 0x9F, 0x3E),
        RGBColor(0x6F, 0xA2, 0x87),
        RGBColor(0x9E, 0x6F, 0xB5),
    ];
    for cells in others {
        let groups = cx
            .placements
            .iter()
            .filter(|p| cells.iter().any(|c| &c.key.placement == *p))
            .map(|p| BarGroup {
                label: p.clone(),
                bars: values
                    .iter()
                    .enumerate()
                    .filter_map(|(vi, v)| {
                        let c = cells.iter().find(|c| &c.key.placement == p && &value(c) == v)?;
                        let (e, _, _) = c.headline();
                        // The change against the same placement under the first value of the
                        // dimension (e.g. the default profile, or the first memory limit).
                        let reference = cells.iter().find(|r| &r.key.placement == p && value(r) == values[0])?;
                        let d = (vi > 0).then(|| Delta::between(&reference.headline().0, &e)).flatten();
                        let (annotation, noise) = annotation(d.as_ref(), vi == 0, false);
                        let annotation = if vi == 0 { "reference".to_string() } else { annotation };
                        Some(Bar {
                            legend: format!("{what} {v}"),
                            value: e.mean,
                            error: e.ci95.is_finite().then_some(e.ci95),
                            color: shades[vi % shades.len()],
                            annotation,
                            within_noise: noise,
                        })
                    })
                    .collect(),
            })
            .collect();
        let c0 = cells[0];
        let chart = BarChart {
            title: format!("{}: throughput by {what}", set.manifest.experiment_name),
            subtitle: format!(
                "workload {}, {} clients{}; labels: change against {what} {} on the same placement",
                c0.key.workload,
                c0.key.clients,
                if what == "memory" {
                    format!(", profile {}", c0.key.profile)
                } else {
                    format!(", server memory {}", c0.key.memory_limit)
                },
                values[0]
            ),
            x_label: "placement".into(),
            y_label: c0.headline().2.into(),
            groups,
            footnote: footnote(set, &cells, true),
            value_decimals: 0,
            value_suffix: "",
            reference: None,
        };
        // Named by the other dimension too, so that charts of two profiles (or memory limits)
        // do not overwrite each other.
        let stem = format!(
            "by-{what}-{}-c{}{}",
            clean(&c0.key.workload),
            c0.key.clients,
            context_suffix(&c0.key, what != "memory", what != "profile")
        );
        cx.bar(chart, stem, if what == "memory" { "Memory-limited against unlimited" } else { "Settings profiles" })?;
    }
    Ok(())
}

/// TPS per second over the first repetition of each placement, checkpoints marked.
fn stability(cx: &mut Ctx) -> Result<(), ExportError> {
    let set = cx.set;
    for g in groups(cx.summary) {
        let c0 = g[0];
        let mut series = Vec::new();
        let mut vlines = Vec::new();
        let mut outliers = 0;
        for c in &g {
            let Some(run) =
                set.runs.iter().filter(|r| r.cell == c.key && r.status == RunStatus::Ok).min_by_key(|r| r.repetition)
            else {
                continue;
            };
            if run.series.is_empty() {
                continue;
            }
            // Counted on the run that is drawn.
            let tps: Vec<f64> = run.series.iter().map(|s| s.tps).collect();
            outliers += crate::stats::outliers_mad(&tps, 3.5).len();
            series.push(Line {
                name: format!("{} (run {})", c.key.placement, run.repetition),
                color: cx.color(&c.key.placement),
                points: run.series.iter().map(|s| (s.t, s.tps)).collect(),
                errors: None,
                markers: false,
                dashed: false,
                mark: None,
            });
            for t in &run.checkpoints_at_s {
                vlines.push((*t, format!("checkpoint ({})", c.key.placement)));
            }
        }
        if series.is_empty() {
            continue;
        }
        let chart = LineChart {
            title: format!("{}: throughput over each run", set.manifest.experiment_name),
            subtitle: format!(
                "{}; 1 s per point; dashed: checkpoints; outlier seconds (> 3.5 MAD): {}",
                describe_group(c0),
                outliers
            ),
            x_label: "seconds into the measured run".into(),
            y_label: "throughput (transactions/s)".into(),
            series,
            vlines,
            footnote: footnote(set, &g, false),
            integer_x: false,
        };
        cx.line(chart, file_stem("stability", c0), &describe_group(c0))?;
    }
    Ok(())
}

/// Read and write IOPS and bandwidth per device of each placement (mean over the runs).
fn device_io(cx: &mut Ctx) -> Result<(), ExportError> {
    let set = cx.set;
    let read = RGBColor(0x4C, 0x72, 0xB0);
    let write = RGBColor(0xC4, 0x4E, 0x52);
    for g in groups(cx.summary) {
        let c0 = g[0];
        let mut iops_groups = Vec::new();
        let mut mbs_groups = Vec::new();
        for c in &g {
            let runs = set.device_runs(&c.key);
            let Some(first) = runs.first() else { continue };
            for d in &first.devices {
                let pick = |f: fn(&results::record::DeviceIo) -> f64| {
                    let v: Vec<f64> = runs
                        .iter()
                        .filter_map(|r| r.devices.iter().find(|x| x.kernel_name == d.kernel_name))
                        .map(f)
                        .collect();
                    Estimate::of(&v)
                };
                let label = device_label(&c.key.placement, d);
                let bars = |r: Option<Estimate>, w: Option<Estimate>| {
                    [(r, "read", read), (w, "write", write)]
                        .into_iter()
                        .filter_map(|(e, name, color)| {
                            let e = e?;
                            Some(Bar {
                                legend: name.to_string(),
                                value: e.mean,
                                error: e.ci95.is_finite().then_some(e.ci95),
                                color,
                                annotation: String::new(),
                                within_noise: false,
                            })
                        })
                        .collect::<Vec<_>>()
                };
                iops_groups
                    .push(BarGroup { label: label.clone(), bars: bars(pick(|x| x.read_iops), pick(|x| x.write_iops)) });
                mbs_groups.push(BarGroup { label, bars: bars(pick(|x| x.read_mb_s), pick(|x| x.write_mb_s)) });
            }
        }
        if iops_groups.is_empty() {
            continue;
        }
        for (kind, groups, y, decimals) in [
            ("iops", iops_groups, "I/O operations per second (mean over the run)", 0),
            ("bandwidth", mbs_groups, "MB/s (mean over the run)", 1),
        ] {
            let chart = BarChart {
                title: format!(
                    "{}: device {} per placement",
                    set.manifest.experiment_name,
                    if kind == "iops" { "IOPS" } else { "bandwidth" }
                ),
                subtitle: format!("{}; from /proc/diskstats, each device of the placement", describe_group(c0)),
                x_label: "placement: device (role)".into(),
                y_label: y.into(),
                groups,
                footnote: footnote(set, &g, true),
                value_decimals: decimals,
                value_suffix: "",
                reference: None,
            };
            cx.bar(chart, file_stem(kind, c0), &describe_group(c0))?;
        }
    }
    Ok(())
}

/// Peak device IOPS during the runs as a share of what fio measured on that device: writes
/// against the 8 KiB write+fdatasync ceiling, reads against the 4 KiB QD32 random-read ceiling.
fn ceilings(cx: &mut Ctx) -> Result<(), ExportError> {
    let set = cx.set;
    if set.manifest.device_probes.is_empty() {
        return Ok(());
    }
    let read = RGBColor(0x4C, 0x72, 0xB0);
    let write = RGBColor(0xC4, 0x4E, 0x52);
    for g in groups(cx.summary) {
        let c0 = g[0];
        let mut groups = Vec::new();
        for c in &g {
            let runs = set.device_runs(&c.key);
            let Some(first) = runs.first() else { continue };
            for d in &first.devices {
                let Some(probe) = set.manifest.device_probes.iter().find(|p| p.device == d.device) else { continue };
                let peak = |f: fn(&results::record::DeviceIo) -> f64| {
                    runs.iter()
                        .filter_map(|r| r.devices.iter().find(|x| x.kernel_name == d.kernel_name))
                        .map(f)
                        .fold(0.0, f64::max)
                };
                let mut bars = Vec::new();
                // WAL writes are small synchronous writes: their ceiling is fio's write+fdatasync
                // rate. Data, table and index reads are random reads: their ceiling is fio's QD32
                // random-read rate. (Buffered data writeback has no probe of its own.)
                let holds_wal = d.role.contains("wal");
                let holds_data = d.role.split('+').any(|r| r != "wal");
                for (relevant, value, ceiling, name, color) in [
                    (
                        holds_wal,
                        peak(|x| x.peak_write_iops),
                        probe.wal_write_iops,
                        "WAL device: peak write IOPS / fio 8k write+fdatasync IOPS",
                        write,
                    ),
                    (
                        holds_data,
                        peak(|x| x.peak_read_iops),
                        probe.randread_iops,
                        "data device: peak read IOPS / fio 4k random-read QD32 IOPS",
                        read,
                    ),
                ] {
                    if relevant && ceiling > 0.0 {
                        bars.push(Bar {
                            legend: name.to_string(),
                            value: value / ceiling * 100.0,
                            error: None,
                            color,
                            annotation: format!(
                                "{} / {}",
                                charts::group_digits(value, 0),
                                charts::group_digits(ceiling, 0)
                            ),
                            within_noise: false,
                        });
                    }
                }
                groups.push(BarGroup { label: device_label(&c.key.placement, d), bars });
            }
        }
        if groups.is_empty() {
            continue;
        }
        let chart = BarChart {
            title: format!("{}: device I/O against its fio ceiling", set.manifest.experiment_name),
            subtitle: format!("{}; peak 1-second IOPS as % of fio's figure for the same device", describe_group(c0)),
            x_label: "placement: device (role)".into(),
            y_label: "% of the device's fio ceiling".into(),
            groups,
            footnote: footnote(set, &g, false),
            value_decimals: 0,
            value_suffix: "%",
            reference: Some((100.0, "fio ceiling = 100%".into())),
        };
        cx.bar(chart, file_stem("ceiling", c0), &describe_group(c0))?;
    }
    Ok(())
}

/// `placement: device`, with the roles when the device holds several.
fn device_label(placement: &str, d: &results::record::DeviceIo) -> String {
    if d.role.contains('+') {
        format!("{placement}: {} ({})", d.device, d.role)
    } else {
        format!("{placement}: {}", d.device)
    }
}

/// Every chart, as an exporter.
pub struct ChartsExporter;

impl Exporter for ChartsExporter {
    fn name(&self) -> &'static str {
        "charts"
    }

    fn export(&self, set: &ResultSet, summary: &Summary, out: &Path) -> Result<Vec<PathBuf>, ExportError> {
        render_all(set, summary, out).map(|(w, _)| w)
    }
}
