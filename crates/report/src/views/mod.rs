//! Which charts a result set gets, built from the summary and the runs: [`plan`] lists them as
//! data, [`draw_all`] draws them into outputs, which the one writer writes.

mod devices;
pub mod forest;
mod lines;
mod placement;
mod waits;

use results::manifest::Design;
use std::path::{Path, PathBuf};

use plotters::style::RGBColor;

use crate::charts::ChartError;
use crate::charts::{self, BarChart, Chart, LineChart};
use crate::output::{Output, layout};
use analysis::model::{CellSummary, ResultSet, Summary};
use stats::{Delta, Verdict};

/// A chart written, for the report: its file (relative to the results directory) and a caption.
#[derive(Clone, Debug)]
pub struct ChartFile {
    pub section: String,
    pub file: String,
    pub caption: String,
    /// The SVG text, which report.html inlines.
    pub svg: Option<String>,
}

/// The environment line(s) printed under every chart.
pub fn footnote(set: &ResultSet, cells: &[&CellSummary], bars: bool) -> Vec<String> {
    let m = &set.manifest;
    let h = &m.host;
    let first = cells.first().and_then(|c| set.workload(&c.key.workload));
    let mut lines = vec![format!(
        "{}{} ({} threads), {:.1} GiB RAM, Linux {}; PostgreSQL {}",
        if m.emulated { "Emulated tiers on " } else { "" },
        if h.cpu_model.is_empty() { "unknown CPU" } else { h.cpu_model.as_str() },
        h.cpu_threads,
        h.memory_bytes as f64 / (1u64 << 30) as f64,
        h.kernel,
        if m.postgres.builds.len() > 1 {
            m.postgres
                .builds
                .iter()
                .map(|b| {
                    let v = b.version.split_whitespace().find(|w| w.starts_with(|c: char| c.is_ascii_digit()));
                    format!("{} {}", b.name, v.unwrap_or("?"))
                })
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            m.postgres.version.clone()
        }
    )];
    if let Some(w) = first {
        let mut scripts: Vec<String> = Vec::new();
        for c in cells {
            if let Some(x) = set.workload(&c.key.workload)
                && !scripts.contains(&x.script)
            {
                scripts.push(x.script);
            }
        }
        let per_point = runs_per_point(cells);
        let how = if m.measurement.design == Design::Slices {
            // A slice's length is its run's measured duration.
            let slice_s = set.runs.iter().find(|r| r.cell.workload == w.name).map_or(w.duration_s, |r| r.duration_s);
            format!(
                "{per_point} rounds of {slice_s:.0} s slices per point (kept rounds, after the warm-up cut), every placement's server up at once (design slices, random order in each round)"
            )
        } else {
            format!(
                "{:.0} s measured after {:.0} s ramp-up; {per_point} runs per point, {} order",
                w.duration_s, w.ramp_up_s, m.order
            )
        };
        lines.push(format!(
            "{} {} scale {}, {how}{}",
            w.kind,
            scripts.join(" / "),
            w.scale,
            if bars {
                "; error bars: 95% CI; pale bars: not a real change (inconclusive, equivalent or one run)"
            } else {
                ""
            }
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
            let ratio = d.ratio >= 2.0 && !lower_is_better;
            let mut text = if ratio { format!("{:.1}x", d.ratio) } else { format!("{:+.1}%", d.pct) };
            let interval = |lo: f64, hi: f64| {
                if ratio {
                    format!("[{:.1}, {:.1}]", 1.0 + lo / 100.0, 1.0 + hi / 100.0)
                } else {
                    format!("[{lo:+.1}, {hi:+.1}]")
                }
            };
            if d.has_interval() {
                text.push_str(&format!(" {}", interval(d.pct_low, d.pct_high)));
            }
            // The interval that goes with the verdict, where it matters (as the terminal's table
            // and report.md decide it): the chart draws it on a line of its own.
            if d.holm_matters() {
                text.push_str(&format!("{}{}", crate::charts::HOLM_MARK, interval(d.holm_low, d.holm_high)));
            }
            match d.verdict {
                Verdict::RealChange => {}
                Verdict::Equivalent => text.push_str(" (equivalent)"),
                Verdict::Inconclusive => text.push_str(" (inconclusive)"),
                Verdict::NotSteady => text.push_str(" (not steady)"),
                Verdict::NoInterval => text.push_str(" (1 run)"),
            }
            // Only a real change is drawn in full colour.
            (text, d.verdict != Verdict::RealChange)
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
    context_suffix_of(k, memory, profile, true)
}

/// [`context_suffix`], with the build left out when the chart compares builds.
pub(super) fn context_suffix_of(k: &results::record::CellKey, memory: bool, profile: bool, build: bool) -> String {
    let mut s = String::new();
    if memory && !k.memory_limit.is_unlimited() {
        s.push_str(&format!("-mem{}", clean(&k.memory_limit.to_string())));
    }
    if profile && k.profile != "default" {
        s.push_str(&format!("-{}", clean(&k.profile)));
    }
    if build && k.build != results::record::DEFAULT_BUILD {
        s.push_str(&format!("-{}", clean(&k.build)));
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
            && a.key.build == b.key.build
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
    if c.key.build != results::record::DEFAULT_BUILD {
        s.push_str(&format!(", build {}", c.key.build));
    }
    s
}

/// Shades for the values of a dimension other than placement (profiles, memory limits).
const SHADES: [RGBColor; 4] =
    [RGBColor(0x3B, 0x5B, 0x92), RGBColor(0xE0, 0x9F, 0x3E), RGBColor(0x6F, 0xA2, 0x87), RGBColor(0x9E, 0x6F, 0xB5)];

/// One chart of a report: what it draws, its file stem under `charts/` and the report section
/// it is shown in.
#[derive(Clone, Debug)]
pub struct ChartSpec {
    pub section: String,
    pub stem: String,
    pub chart: Chart,
}

impl ChartSpec {
    /// `charts/<stem>`, relative to the results directory (without extension).
    pub fn path(&self) -> PathBuf {
        layout().charts_dir().join(&self.stem)
    }

    /// How report.md shows it.
    pub fn file(&self) -> ChartFile {
        ChartFile {
            section: self.section.clone(),
            file: format!("charts/{}.png", self.stem),
            caption: format!("{} ({})", self.chart.title(), self.chart.interval_note()),
            svg: None,
        }
    }

    /// The PNG and the SVG.
    pub fn render(&self) -> Result<[Output; 2], ChartError> {
        charts::render(&self.chart, &self.path())
    }
}

struct Ctx<'a> {
    set: &'a ResultSet,
    summary: &'a Summary,
    placements: Vec<String>,
    specs: Vec<ChartSpec>,
}

impl Ctx<'_> {
    fn color(&self, placement: &str) -> RGBColor {
        charts::placement_color(self.placements.iter().position(|p| p == placement).unwrap_or(0))
    }

    fn legend(&self, name: &str) -> String {
        let Some(p) = self.set.manifest.placements.iter().find(|p| p.name == name) else { return name.to_string() };
        let mut profile = p.profile.as_ref().map(|f| format!(", profile {f}")).unwrap_or_default();
        if let Some(b) = &p.build {
            profile.push_str(&format!(", build {b}"));
        }
        if p.data_device == p.wal_device {
            format!("{name}: data + WAL on {}{profile}", p.data_device)
        } else {
            format!("{name}: data on {}, WAL on {}{profile}", p.data_device, p.wal_device)
        }
    }

    fn bar(&mut self, mut chart: BarChart, stem: String, section: &str) {
        if chart.groups.iter().flat_map(|g| &g.bars).any(|b| b.annotation.contains(crate::charts::HOLM_MARK)) {
            chart.footnote.push(
                "after Holm: the change's interval after Holm's correction for the number of changes of the figure (its verdict's), where it is wider and the 95% one excludes 0".into(),
            );
        }
        self.specs.push(ChartSpec { section: section.to_string(), stem, chart: Chart::Bar(chart) });
    }

    fn line(&mut self, chart: LineChart, stem: String, section: &str) {
        self.specs.push(ChartSpec { section: section.to_string(), stem, chart: Chart::Line(chart) });
    }
}

/// Every chart of a result set, in report order. Nothing is drawn yet.
pub fn plan(set: &ResultSet, summary: &Summary) -> Vec<ChartSpec> {
    let mut cx = Ctx { set, summary, placements: set.placements(), specs: Vec::new() };
    forest::published_vs_measured(&mut cx);
    forest::study_forest(&mut cx);
    placement::per_cell_bars(&mut cx);
    placement::normalised(&mut cx);
    lines::scaling(&mut cx);
    placement::dimension_comparison(&mut cx, "memory", |c| c.key.memory_limit.to_string());
    placement::dimension_comparison(&mut cx, "profile", |c| c.key.profile.clone());
    placement::dimension_comparison(&mut cx, "build", |c| c.key.build.clone());
    lines::stability(&mut cx);
    devices::device_io(&mut cx);
    devices::ceilings(&mut cx);
    waits::waits(&mut cx);
    cx.specs
}

/// Draws every chart of a result set, one at a time as the iterator is driven (so a writer
/// holds one chart's pixels at once): each chart's caption for the report (with its SVG) and
/// its outputs, the PNG and the SVG under `charts/`. Nothing is written here.
pub fn draw_all(
    set: &ResultSet,
    summary: &Summary,
) -> impl Iterator<Item = Result<(ChartFile, [Output; 2]), ChartError>> {
    plan(set, summary).into_iter().map(|spec| {
        let outputs = spec.render()?;
        let mut file = spec.file();
        file.svg = outputs.iter().find_map(|o| match &o.body {
            crate::output::Body::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            crate::output::Body::Png(_) => None,
        });
        Ok((file, outputs))
    })
}

/// The runs (or kept rounds) behind each point, as a range: contests stop at different counts,
/// so the minimum alone would understate most points.
fn runs_per_point(cells: &[&CellSummary]) -> String {
    let fewest = cells.iter().map(|c| c.runs).min().unwrap_or(0);
    let most = cells.iter().map(|c| c.runs).max().unwrap_or(0);
    if fewest == most { fewest.to_string() } else { format!("{fewest}-{most}") }
}

/// Whether a file under `charts/` is a chart (a stale one is removed by a re-render).
pub fn is_chart(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "png" || x == "svg")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rerender_removes_the_charts_it_no_longer_draws() {
        let dir = tempfile::tempdir().unwrap();
        let keep = dir.path().join("throughput.png");
        let stale = dir.path().join("by-profile-old.svg");
        let other = dir.path().join("notes.txt");
        for p in [&keep, &stale, &other] {
            std::fs::write(p, "x").unwrap();
        }
        crate::export::remove_stale(dir.path(), Path::new(""), std::slice::from_ref(&keep), is_chart).unwrap();
        assert!(keep.exists() && other.exists() && !stale.exists());
    }
    use results::record::CellKey;
    use stats::Estimate;

    fn cell(placement: &str, workload: &str, clients: u32, memory: &str, profile: &str) -> CellSummary {
        let e = Estimate::of(&[99.0, 101.0]).unwrap();
        CellSummary {
            key: CellKey {
                placement: placement.into(),
                workload: workload.into(),
                clients,
                memory_limit: memory.parse().unwrap(),
                profile: profile.into(),
                build: results::record::DEFAULT_BUILD.into(),
            },
            is_baseline: placement == "a",
            runs: 2,
            failed_runs: 0,
            tps: e,
            latency_ms: e,
            latency_p99_ms: None,
            tps_delta: None,
            latency_delta: None,
            latency_p99_delta: None,
            nopm: None,
            nopm_delta: None,
            statements: vec![],
        }
    }

    #[test]
    fn a_footer_gives_the_range_of_runs_per_point() {
        let (mut a, mut b) =
            (cell("a", "tpcb", 8, "unlimited", "default"), cell("b", "tpcb", 8, "unlimited", "default"));
        assert_eq!(runs_per_point(&[&a, &b]), "2");
        (a.runs, b.runs) = (11, 18);
        assert_eq!(runs_per_point(&[&b, &a]), "11-18");
    }

    #[test]
    fn file_names_tell_memory_limits_and_profiles_apart() {
        assert_eq!(file_stem("throughput", &cell("a", "tpcb", 8, "unlimited", "default")), "throughput-tpcb-c8");
        assert_eq!(
            file_stem("latency", &cell("a", "select only", 16, "192MiB", "seed004-performance")),
            "latency-select_only-c16-mem192MiB-seed004-performance"
        );
        // A memory label is `unlimited` or digits and a unit (1.5 GiB is labelled 1536MiB).
        let k = cell("a", "tpcb", 8, "1536MiB", "fast/wal").key;
        assert_eq!(context_suffix(&k, true, true), "-mem1536MiB-fast_wal");
        assert_eq!(context_suffix(&k, false, true), "-fast_wal", "the compared dimension is left out");
        assert_eq!(context_suffix(&k, true, false), "-mem1536MiB");
    }

    #[test]
    fn chart_files_live_under_charts() {
        let spec = ChartSpec {
            section: "Scaling".into(),
            stem: "scaling-tpcb".into(),
            chart: Chart::Line(LineChart {
                title: "t: scaling with clients".into(),
                subtitle: String::new(),
                x_label: String::new(),
                y_label: String::new(),
                series: vec![],
                vlines: vec![],
                footnote: vec![],
                integer_x: true,
            }),
        };
        assert_eq!(spec.path(), PathBuf::from("charts/scaling-tpcb"));
        let f = spec.file();
        assert_eq!(
            (f.file.as_str(), f.caption.as_str(), f.section.as_str()),
            ("charts/scaling-tpcb.png", "t: scaling with clients (no intervals drawn)", "Scaling")
        );
    }

    #[test]
    fn groups_differ_only_by_placement_in_first_appearance_order() {
        let summary = Summary {
            cells: vec![
                cell("a", "rw", 8, "unlimited", "default"),
                cell("b", "rw", 8, "unlimited", "default"),
                cell("a", "rw", 16, "unlimited", "default"),
                cell("b", "rw", 8, "unlimited", "fast"),
                cell("c", "rw", 16, "unlimited", "default"),
            ],
            missing: vec![],
            warnings: vec![],
            analysis: analysis::contest::Analysis {
                design: Design::Runs,
                method: stats::Method::WelchLog,
                equivalence_margin_pct: 2.0,
                tests: Default::default(),
                dropped_rounds: Default::default(),
                rule: None,
                contests: Default::default(),
            },
            controls: vec![],
            contrast: None,
            model_checks: vec![],
            calibration: None,
        };
        let keys: Vec<Vec<String>> = groups(&summary)
            .iter()
            .map(|g| g.iter().map(|c| format!("{}@{}/{}", c.key.placement, c.key.clients, c.key.profile)).collect())
            .collect();
        assert_eq!(keys, [vec!["a@8/default", "b@8/default"], vec!["a@16/default", "c@16/default"], vec!["b@8/fast"]]);
        assert_eq!(describe_group(&summary.cells[3]), "workload rw, 8 clients, server memory unlimited, profile fast");
    }

    #[test]
    fn bar_annotations() {
        let d = |pct: f64, low: f64, high: f64| {
            Delta {
                pct,
                ratio: 1.0 + pct / 100.0,
                pct_low: low,
                pct_high: high,
                within_noise: low <= 0.0 && high >= 0.0,
                p_value: if low > 0.0 || high < 0.0 { 0.001 } else { 0.5 },
                p_adjusted: if low > 0.0 || high < 0.0 { 0.001 } else { 0.5 },
                ..Delta::unknown()
            }
            .classified(2.0)
        };
        assert_eq!(annotation(None, true, false), ("baseline".into(), false));
        assert_eq!(annotation(None, false, false), ("n/a".into(), false));
        assert_eq!(annotation(Some(&d(44.6, 30.0, 60.0)), false, false), ("+44.6% [+30.0, +60.0]".into(), false));
        assert_eq!(annotation(Some(&d(150.0, 100.0, 200.0)), false, false), ("2.5x [2.0, 3.0]".into(), false));
        assert_eq!(
            annotation(Some(&d(150.0, 100.0, 200.0)), false, true),
            ("+150.0% [+100.0, +200.0]".into(), false),
            "latency: no x"
        );
        assert_eq!(
            annotation(Some(&d(-3.0, -8.0, 2.0)), false, false),
            ("-3.0% [-8.0, +2.0] (inconclusive)".into(), true)
        );
        assert_eq!(
            annotation(Some(&d(0.5, -1.0, 1.8)), false, false),
            ("+0.5% [-1.0, +1.8] (equivalent)".into(), true)
        );
        // Where Holm's correction widened an interval that excludes 0, the label shows the
        // interval after Holm too (the verdict's), as the terminal and report.md do.
        let widened = |pct: f64, (lo, hi): (f64, f64), (hlo, hhi): (f64, f64), p_adjusted: f64| {
            let x = d(pct, lo, hi);
            Delta { holm_low: hlo, holm_high: hhi, p_adjusted, ..x }.classified(2.0)
        };
        assert_eq!(
            annotation(Some(&widened(138.8, (16.7, 388.5), (-4.2, 498.0), 0.08)), false, false),
            ("2.4x [1.2, 4.9], after Holm [1.0, 6.0] (inconclusive)".into(), true)
        );
        assert_eq!(
            annotation(Some(&widened(44.6, (30.0, 60.0), (25.5, 66.0), 0.004)), false, false),
            ("+44.6% [+30.0, +60.0], after Holm [+25.5, +66.0]".into(), false)
        );
        assert_eq!(
            annotation(Some(&widened(-3.0, (-8.0, 2.0), (-9.0, 3.0), 0.9)), false, false),
            ("-3.0% [-8.0, +2.0] (inconclusive)".into(), true),
            "an interval that holds 0 still does after Holm: not shown"
        );
        assert_eq!(
            annotation(Some(&d(-3.0, f64::NAN, f64::NAN)), false, false),
            ("-3.0% (1 run)".into(), true),
            "one run is never drawn as significant"
        );
    }
}
