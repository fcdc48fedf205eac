//! `report.md`: the summary table with deltas and intervals, warnings, the environment and
//! devices, the methodology as it actually ran, and the charts.

use crate::document::{Document, Figure, Item, Table};
use crate::export::{ExportError, Exporter, Output, layout};
use crate::views::{self, ChartFile};
use analysis::claims::{self, ClaimCheck, ClaimVerdict};
use analysis::evidence::{self, Study};
use analysis::model::{ResultSet, Summary, describe, statement_label};
use results::Manifest;
use results::manifest::DaxRequest;
use stats::{Delta, Verdict};

mod environment;
mod findings;
mod reproducibility;
mod sections;
mod tables;
mod warnings;

/// `report.md`, one function per section, embedding the charts `views::draw_all` drew.
pub struct MarkdownExporter {
    pub charts: Vec<views::ChartFile>,
}

fn fmt_delta(d: Option<&Delta>, baseline: bool) -> String {
    match d {
        _ if baseline => "baseline".into(),
        None => "n/a".into(),
        Some(d) if d.has_interval() => format!("{} **{}**", d.text_with_holm(""), d.verdict.as_str()),
        Some(d) => d.text(""),
    }
}

/// `12.3%`, or `n/a` for a figure without a spread (one run).
fn pct_or_na(v: f64) -> String {
    if v.is_finite() { format!("{v:.1}%") } else { "n/a".into() }
}

/// The report's view model: every section, in order, built from the analysis once; report.md
/// and report.html are both rendered from it.
pub fn document(set: &ResultSet, summary: &Summary, charts: &[ChartFile]) -> Document {
    let m = &set.manifest;
    let mut d = Document { title: m.experiment_name.clone(), blocks: Vec::new() };
    let study = Study::of(set, summary);
    let checks = claims::check_all(set, summary, &study);
    header(&mut d, m);
    if let Some(line) = summary.calibration_line() {
        d.para(line);
    }
    sections::control(&mut d, &summary.controls, &summary.model_checks, &m.baseline);
    findings::published_vs_measured(&mut d, m, &checks);
    figures(&mut d, charts, views::forest::CLAIMS_SECTION);
    findings::findings(&mut d, set, summary, &study, &checks);
    figures(&mut d, charts, views::forest::FOREST_SECTION);
    tables::results_table(&mut d, summary, &findings::whys(set, summary, &study));
    tables::tpcc_table(&mut d, set, summary);
    tables::statement_tables(&mut d, summary);
    tables::failed_runs(&mut d, set);
    tables::device_io(&mut d, set, summary);
    sections::idle_io(&mut d, &analysis::idle_io::of(set));
    findings::bottlenecks(&mut d, summary, &study);
    findings::fidelity_section(&mut d, m);
    tables::missing_cells(&mut d, summary);
    warnings::warnings(&mut d, set, summary);
    charts_section(&mut d, charts);
    environment::environment(&mut d, m);
    environment::builds(&mut d, m);
    environment::devices(&mut d, m);
    environment::device_ceilings(&mut d, m);
    environment::placements(&mut d, m);
    environment::settings(&mut d, set);
    environment::method(&mut d, set);
    reproducibility::reproducibility(&mut d, set);
    d
}

impl Exporter for MarkdownExporter {
    fn export(&self, set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
        let d = document(set, summary, &self.charts);
        let (text, appendices) = crate::document::markdown::render_all(&d);
        let mut out = vec![Output::bytes(layout().report_md(), text.into_bytes())];
        out.extend(appendices.into_iter().map(|(file, text)| Output::bytes(file, text.into_bytes())));
        Ok(out)
    }
}

/// `report.html`: the same document as report.md, the charts' SVG inline.
pub struct HtmlExporter {
    pub charts: Vec<views::ChartFile>,
}

impl Exporter for HtmlExporter {
    fn export(&self, set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
        let d = document(set, summary, &self.charts);
        Ok(vec![Output::bytes(REPORT_HTML, crate::document::html::render(&d).into_bytes())])
    }
}

/// The appendix files report.md may link (beside it).
pub const APPENDICES: [&str; 3] = [environment::RUN_ORDER_FILE, warnings::RUNS_FILE, reproducibility::CONFIG_FILE];

/// report.html's name in the results directory (beside report.md).
pub const REPORT_HTML: &str = "report.html";

/// The title, the description, when it ran and the emulation notice.
fn header(d: &mut Document, m: &Manifest) {
    if !m.experiment_description.is_empty() {
        d.para(m.experiment_description.trim());
    }
    if let Some(study) = m.experiment_study.as_deref().filter(|s| !s.trim().is_empty()) {
        d.para(format!("Reproduces: {}", study.trim()));
    }
    d.para(format!(
        "Baseline placement: **{}**. {} tiers. Started {}{}.",
        m.baseline,
        if m.emulated { "Emulated" } else { "Real" },
        m.started_at,
        m.finished_at
            .as_ref()
            .map(|f| format!(", finished {f}"))
            .unwrap_or_else(|| " (not finished: the matrix was interrupted)".into())
    ));
    if m.emulated {
        d.note(
            "These results come from **emulated** devices (RAM-, file- and network-backed block devices standing in for the real classes). They show what the pipeline measures and how placements compare on this machine, not what the real hardware does.",
        );
    }
}

/// The charts shown in a section of their own (the study's forest plot under Findings, the
/// claims' figure under Published vs measured) rather than under Charts.
const PLACED: [&str; 2] = [views::forest::CLAIMS_SECTION, views::forest::FOREST_SECTION];

/// The figures of one section, where that section is.
fn figures(d: &mut Document, charts: &[ChartFile], section: &str) {
    for c in charts.iter().filter(|c| c.section == section) {
        d.figure(Figure { png: c.file.clone(), svg: c.svg.clone(), caption: c.caption.clone() });
    }
}

/// Every chart, by section.
fn charts_section(d: &mut Document, charts: &[ChartFile]) {
    d.heading(2, "Charts");
    let mut sections: Vec<&str> = Vec::new();
    for c in charts.iter().filter(|c| !PLACED.contains(&c.section.as_str())) {
        if !sections.contains(&c.section.as_str()) {
            sections.push(&c.section);
        }
    }
    for section in sections {
        d.heading(3, section);
        figures(d, charts, section);
    }
    if charts.is_empty() {
        d.para("No charts (no successful runs).");
    }
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The profile column: the profile, and the build when the experiment compares builds.
fn profile_cell(k: &results::record::CellKey) -> String {
    if k.build == results::record::DEFAULT_BUILD { k.profile.clone() } else { format!("{} @ {}", k.profile, k.build) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_in_tables() {
        let d = Delta { pct: 12.34, ratio: 1.1234, pct_low: 2.0, pct_high: 22.5, p_adjusted: 0.01, ..Delta::unknown() }
            .classified(2.0);
        assert_eq!(fmt_delta(Some(&d), true), "baseline");
        assert_eq!(fmt_delta(None, false), "n/a");
        assert_eq!(fmt_delta(Some(&d), false), "+12.3% [+2.0, +22.5] **real change**");
        let one = Delta { pct: 5.0, ..Delta::unknown() };
        assert_eq!(fmt_delta(Some(&one), false), "+5.0% (no interval: 1 run)");
    }

    #[test]
    fn charts_by_section_in_first_appearance_order() {
        let chart = |section: &str, file: &str| ChartFile {
            section: section.into(),
            file: format!("charts/{file}.png"),
            caption: format!("caption {file}"),
            svg: None,
        };
        let mut d = Document { title: "t".into(), blocks: Vec::new() };
        charts_section(&mut d, &[chart("B", "b1"), chart("A", "a1"), chart("B", "b2")]);
        assert_eq!(
            crate::document::markdown::render(&d),
            "# t\n\n## Charts\n\n### B\n\n![caption b1](charts/b1.png)\n\n![caption b2](charts/b2.png)\n\n### A\n\n![caption a1](charts/a1.png)\n"
        );
        let mut d = Document { title: "t".into(), blocks: Vec::new() };
        charts_section(&mut d, &[]);
        assert_eq!(crate::document::markdown::render(&d), "# t\n\n## Charts\n\nNo charts (no successful runs).\n");
    }
}
