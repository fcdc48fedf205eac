//! The summary table printed on the terminal at the end of a compare.

use analysis::model::{CellSummary, Summary};

/// One line per cell: the headline figure (TPS, or NOPM for TPC-C), the change against the
/// baseline with its 95% interval, the interval after Holm's correction (the one that goes with the
/// verdict; blank when the correction did not widen it or the 95% interval already holds 0), the
/// verdict, and the mean latency; the client count as `c`. Memory limit and profile get a column
/// when the matrix varies them. Each column is as wide as its widest text (at least its header), so
/// the rows stay aligned under their headers whatever a name or an interval's width, and the main
/// job's table fits 100 columns (the coefficient of variation and every other figure are in
/// summary.csv and report.md).
pub fn summary_table(summary: &Summary) -> String {
    let varies = |f: &dyn Fn(&CellSummary) -> &str| {
        summary.cells.iter().map(f).collect::<std::collections::BTreeSet<_>>().len() > 1
    };
    let show_memory =
        summary.cells.iter().map(|c| c.key.memory_limit).collect::<std::collections::BTreeSet<_>>().len() > 1;
    let show_profile = varies(&|c| c.key.profile.as_str()) || varies(&|c| c.key.build.as_str());
    // Each column: its header, whether it is right-aligned, and its least width (a column is as
    // wide as its widest text, so a wide interval or a long name never pushes the others along).
    let nopm = summary.cells.iter().filter(|c| c.nopm_delta.is_some() || c.nopm.is_some()).count();
    let figure = match nopm {
        0 => "tps",
        n if n == summary.cells.len() => "NOPM",
        _ => "tps|NOPM",
    };
    let mut columns: Vec<(&str, bool, usize)> = vec![("placement", false, 9), ("workload", false, 8)];
    if show_memory {
        columns.push(("memory", false, 6));
    }
    if show_profile {
        columns.push(("profile", false, 7));
    }
    columns.extend([
        ("c", true, 1),
        (figure, true, figure.len()),
        ("change [95% CI]", true, 15),
        ("after Holm", true, 10),
        ("verdict", false, 7),
        ("ms", true, 2),
    ]);
    let mut rows: Vec<Vec<String>> = vec![columns.iter().map(|c| c.0.to_string()).collect()];
    for c in &summary.cells {
        let (head, head_delta, _) = c.headline();
        let (delta, holm, verdict) = match (&head_delta, c.is_baseline) {
            (_, true) => ("baseline".to_string(), String::new(), ""),
            (Some(d), _) => {
                (d.text(""), if d.holm_matters() { d.holm_text() } else { String::new() }, d.verdict.as_str())
            }
            (None, _) => ("n/a".into(), String::new(), ""),
        };
        let mut row = vec![c.key.placement.clone(), c.key.workload.clone()];
        if show_memory {
            row.push(c.key.memory_limit.to_string());
        }
        if show_profile {
            row.push(if c.key.build == results::record::DEFAULT_BUILD {
                c.key.profile.clone()
            } else {
                format!("{} @ {}", c.key.profile, c.key.build)
            });
        }
        row.extend([
            c.key.clients.to_string(),
            if head.mean.abs() >= 1000.0 { format!("{:.0}", head.mean) } else { format!("{:.1}", head.mean) },
            delta,
            holm,
            verdict.to_string(),
            format!("{:.3}", c.latency_ms.mean),
        ]);
        rows.push(row);
    }
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, (_, _, least))| rows.iter().map(|r| r[i].chars().count()).fold(*least, usize::max))
        .collect();
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&columns)
            .zip(&widths)
            .map(|((t, (_, right, _)), &w)| if *right { format!("{t:>w$}") } else { format!("{t:<w$}") })
            .collect();
        text.push_str(&cells.join(" "));
        text.push('\n');
    }
    let a = &summary.analysis;
    text.push_str(&format!(
        "(design {}; c: clients; ms: mean latency; cv% and the other figures: summary.csv, report.md)\n(real change: after Holm, excludes 0; equivalent: within ±{:.1}%; else inconclusive)\n",
        a.design, a.equivalence_margin_pct
    ));
    if let Some(line) = summary.calibration_line() {
        text.push_str(&line.replace("**", ""));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::model::CellSummary;
    use results::manifest::Design;
    use results::record::CellKey;
    use stats::{Delta, Estimate, Method, Verdict};

    fn cell(placement: &str, delta: Option<Delta>) -> CellSummary {
        let e = Estimate::of(&[990.0, 1010.0]).unwrap();
        CellSummary {
            key: CellKey {
                placement: placement.into(),
                workload: "read-only".into(),
                clients: 8,
                memory_limit: results::record::MemoryLabel::Unlimited,
                profile: "default".into(),
                build: results::record::DEFAULT_BUILD.into(),
            },
            is_baseline: delta.is_none(),
            runs: 2,
            failed_runs: 0,
            tps: e,
            latency_ms: e,
            latency_p99_ms: None,
            tps_delta: delta,
            latency_delta: None,
            latency_p99_delta: None,
            nopm: None,
            nopm_delta: None,
            statements: vec![],
        }
    }

    fn delta(pct: f64, (lo, hi): (f64, f64), (hlo, hhi): (f64, f64), verdict: Verdict) -> Delta {
        Delta {
            pct,
            ratio: 1.0 + pct / 100.0,
            pct_low: lo,
            pct_high: hi,
            p_value: 0.01,
            p_adjusted: 0.08,
            holm_low: hlo,
            holm_high: hhi,
            se: f64::NAN,
            df: 4.0,
            method: Method::PairedLog,
            within_noise: false,
            verdict,
        }
    }

    /// Every column keeps its place whatever its texts' widths: wide intervals before and after
    /// Holm (the tails of the correlation correction), a long placement name, a change without
    /// an interval, each row as wide as the header.
    #[test]
    fn wide_intervals_keep_the_columns_aligned() {
        let cells = vec![
            cell("nvme", None),
            cell("all-on-pmem", Some(delta(138.8, (16.7, 388.5), (-28.6, 664.6), Verdict::Inconclusive))),
            cell(
                "wal-on-pmem-tablespaces-on-nvme",
                Some(delta(1234.5, (2.1, 97074.3), (-1234.5, 1234567.8), Verdict::Inconclusive)),
            ),
            cell(
                "one-run",
                Some(Delta { pct_low: f64::NAN, ..delta(2345.6, (0.0, 0.0), (0.0, 0.0), Verdict::NoInterval) }),
            ),
        ];
        let summary = Summary {
            cells,
            missing: vec![],
            warnings: vec![],
            analysis: analysis::contest::Analysis {
                design: Design::Slices,
                method: Method::PairedLog,
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
        let text = summary_table(&summary);
        let lines: Vec<&str> = text.lines().take(5).collect();
        let width = |l: &str| l.chars().count();
        assert!(lines.iter().all(|l| width(l) == width(lines[0])), "every row as wide as the header:\n{text}");
        let at = |l: &str, word: &str| l.find(word).unwrap_or_else(|| panic!("{word} in {l}"));
        let (holm_end, verdict) = (at(lines[0], "after Holm") + "after Holm".len(), at(lines[0], "verdict"));
        for (l, holm, v) in [
            (lines[2], "[-28.6, +664.6]", "inconclusive"),
            (lines[3], "[-1234.5, +1234567.8]", "inconclusive"),
            (lines[4], "", "no interval"),
        ] {
            assert_eq!(l.rfind(v), Some(verdict), "the verdict under its header:\n{text}");
            assert!(l[..holm_end].ends_with(holm), "the interval after Holm ends under its header:\n{text}");
        }
    }
}
