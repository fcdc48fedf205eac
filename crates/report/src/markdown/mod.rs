//! `report.md`: the summary table with deltas and intervals, warnings, the environment and
//! devices, the methodology as it actually ran, and the charts.

use crate::claims::{self, ClaimCheck, ClaimVerdict};
use crate::evidence::{self, Study};
use crate::export::{ExportError, Exporter, Output, layout};
use crate::model::{ResultSet, Summary, describe};
use crate::stats::{Delta, Verdict};
use crate::views::{self, ChartFile};
use results::Manifest;
use results::manifest::DaxRequest;
use std::fmt::Write as _;

mod environment;
mod findings;
mod tables;

/// `report.md`, one function per section, embedding the charts `views::render_all` wrote.
pub struct MarkdownExporter {
    pub charts: Vec<views::ChartFile>,
}

fn fmt_delta(d: Option<&Delta>, baseline: bool) -> String {
    match d {
        _ if baseline => "baseline".into(),
        None => "n/a".into(),
        Some(d) if d.has_interval() => format!("{} **{}**", d.text(""), d.verdict.as_str()),
        Some(d) => d.text(""),
    }
}

/// `12.3%`, or `n/a` for a figure without a spread (one run).
fn pct_or_na(v: f64) -> String {
    if v.is_finite() { format!("{v:.1}%") } else { "n/a".into() }
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

impl Exporter for MarkdownExporter {
    fn export(&self, set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
        let m = &set.manifest;
        let mut s = String::new();
        let study = Study::of(set, summary);
        let checks = claims::check_all(set, summary, &study);
        header(&mut s, m);
        crate::control::markdown_section(&mut s, &summary.controls, &m.baseline);
        findings::published_vs_measured(&mut s, m, &checks);
        findings::findings(&mut s, set, summary, &study, &checks);
        tables::results_table(&mut s, summary, &findings::whys(set, summary, &study));
        tables::tpcc_table(&mut s, set, summary);
        tables::statement_tables(&mut s, summary);
        tables::failed_runs(&mut s, set);
        tables::device_io(&mut s, set, summary);
        crate::idle_io::markdown_section(&mut s, &crate::idle_io::of(set));
        findings::bottlenecks(&mut s, summary, &study);
        findings::fidelity_section(&mut s, m);
        tables::missing_cells(&mut s, summary);
        warnings(&mut s, m, summary);
        charts(&mut s, &self.charts);
        environment::environment(&mut s, m);
        environment::builds(&mut s, m);
        environment::devices(&mut s, m);
        environment::device_ceilings(&mut s, m);
        environment::placements(&mut s, m);
        environment::settings(&mut s, set);
        environment::method(&mut s, set);
        Ok(vec![Output::bytes(layout().report_md(), s.into_bytes())])
    }
}

/// The title, the description, when it ran and the emulation notice.
fn header(s: &mut String, m: &Manifest) {
    let _ = writeln!(s, "# {}\n", m.experiment_name);
    if !m.experiment_description.is_empty() {
        let _ = writeln!(s, "{}\n", m.experiment_description.trim());
    }
    let _ = writeln!(
        s,
        "Baseline placement: **{}**. {} tiers. Started {}{}.\n",
        m.baseline,
        if m.emulated { "Emulated" } else { "Real" },
        m.started_at,
        m.finished_at
            .as_ref()
            .map(|f| format!(", finished {f}"))
            .unwrap_or_else(|| " (not finished: the matrix was interrupted)".into())
    );
    if m.emulated {
        let _ = writeln!(
            s,
            "> These results come from **emulated** devices (RAM-, file- and network-backed block devices standing in for the real classes). They show what the pipeline measures and how placements compare on this machine, not what the real hardware does.\n"
        );
    }
}

/// The run's warnings, then the summary's.
fn warnings(s: &mut String, m: &Manifest, summary: &Summary) {
    let warnings: Vec<String> =
        m.warnings.iter().map(ToString::to_string).chain(summary.warnings.iter().map(ToString::to_string)).collect();
    let _ = writeln!(s, "\n## Warnings\n");
    if warnings.is_empty() {
        let _ = writeln!(s, "None.");
    }
    for w in &warnings {
        let _ = writeln!(s, "- {w}");
    }
}

/// Every chart, by section.
fn charts(s: &mut String, charts: &[ChartFile]) {
    let _ = writeln!(s, "\n## Charts\n");
    let mut sections: Vec<&str> = Vec::new();
    for c in charts {
        if !sections.contains(&c.section.as_str()) {
            sections.push(&c.section);
        }
    }
    for section in sections {
        let _ = writeln!(s, "### {section}\n");
        for c in charts.iter().filter(|c| c.section == section) {
            let _ = writeln!(s, "![{}]({})\n", c.caption, c.file);
        }
    }
    if charts.is_empty() {
        let _ = writeln!(s, "No charts (no successful runs).\n");
    }
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The host, PostgreSQL, the tools and the kernel settings.
/// The profile column: the profile, and the build when the experiment compares builds.
fn profile_cell(k: &results::record::CellKey) -> String {
    if k.build == results::record::DEFAULT_BUILD { k.profile.clone() } else { format!("{} @ {}", k.profile, k.build) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_labels() {
        assert_eq!(
            statement_label("UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;"),
            "UPDATE pgbench_accounts"
        );
        assert_eq!(
            statement_label("SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"),
            "SELECT … FROM pgbench_accounts"
        );
        assert_eq!(
            statement_label("INSERT INTO pgbench_history (tid, bid) VALUES (:tid, :bid);"),
            "INSERT INTO pgbench_history"
        );
        assert_eq!(statement_label("  BEGIN;"), "BEGIN");
        assert_eq!(statement_label("SELECT 1"), "SELECT 1");
        assert_eq!(statement_label("\\set aid random(1, 100000 * :scale)"), "\\set aid random(1, …");
    }

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
        };
        let mut s = String::new();
        charts(&mut s, &[chart("B", "b1"), chart("A", "a1"), chart("B", "b2")]);
        assert_eq!(
            s,
            "\n## Charts\n\n### B\n\n![caption b1](charts/b1.png)\n\n![caption b2](charts/b2.png)\n\n### A\n\n![caption a1](charts/a1.png)\n\n"
        );
        let mut s = String::new();
        charts(&mut s, &[]);
        assert_eq!(s, "\n## Charts\n\nNo charts (no successful runs).\n\n");
    }
}
