//! The study at a glance: a forest plot of every change of the headline figure, and each
//! published claim's figure against its measured interval.

use plotters::style::RGBColor;

use super::Ctx;
use crate::charts::{ForestChart, ForestRow, Mark};
use analysis::claims::{self, ClaimVerdict};
use analysis::evidence::Study;
use stats::Verdict;

/// The report section of the forest plot (shown under Findings).
pub const FOREST_SECTION: &str = "Findings";
/// The report section of the published-vs-measured figure.
pub const CLAIMS_SECTION: &str = "Published vs measured";

/// A verdict's marker and colour: shape and colour both tell it apart.
pub fn verdict_mark(v: Verdict) -> (Mark, RGBColor) {
    match v {
        Verdict::RealChange => (Mark::Circle, RGBColor(0x1F, 0x4E, 0x9A)),
        Verdict::Equivalent => (Mark::Square, RGBColor(0x2E, 0x8B, 0x57)),
        Verdict::Inconclusive => (Mark::Ring, RGBColor(0xD9, 0x7A, 0x00)),
        Verdict::NotSteady => (Mark::Triangle, RGBColor(0xA0, 0x30, 0x60)),
        Verdict::NoInterval => (Mark::Cross, RGBColor(0x77, 0x77, 0x77)),
    }
}

fn claim_mark(v: ClaimVerdict) -> (Mark, RGBColor) {
    match v {
        ClaimVerdict::Reproduced => (Mark::Circle, RGBColor(0x2E, 0x8B, 0x57)),
        ClaimVerdict::SameDirection => (Mark::Square, RGBColor(0x1F, 0x4E, 0x9A)),
        ClaimVerdict::Contradicted => (Mark::Cross, RGBColor(0xB0, 0x20, 0x20)),
        ClaimVerdict::Inconclusive => (Mark::Ring, RGBColor(0xD9, 0x7A, 0x00)),
        _ => (Mark::Triangle, RGBColor(0x77, 0x77, 0x77)),
    }
}

/// The cell a row stands for, without what every row shares.
fn cell_label(k: &results::record::CellKey) -> String {
    let mut s = format!("{} c{}", k.workload, k.clients);
    if !k.memory_limit.is_unlimited() {
        s.push_str(&format!(" mem {}", k.memory_limit));
    }
    if k.profile != "default" {
        s.push_str(&format!(" {}", k.profile));
    }
    if k.build != results::record::DEFAULT_BUILD {
        s.push_str(&format!(" @{}", k.build));
    }
    s
}

/// Every contender's change of its headline figure (NOPM for TPC-C, TPS otherwise), one row each.
pub(super) fn study_forest(cx: &mut Ctx) {
    let margin = cx.summary.analysis.equivalence_margin_pct;
    let mut rows = Vec::new();
    let mut seen: Vec<Verdict> = Vec::new();
    let contrast = cx.summary.contrast.as_ref();
    // The study's contrast when it has one (a cell against the same cell under the reference
    // value), else every contender placement against the baseline.
    let changes: Vec<(String, stats::Delta, &str)> = match contrast {
        Some(x) => x
            .changes
            .iter()
            .filter_map(|c| {
                let (d, figure) = c.headline();
                Some((format!("{} vs {}", cell_label(&c.cell), x.dimension.describe(&x.reference)), d?, figure))
            })
            .collect(),
        None => cx
            .summary
            .cells
            .iter()
            .filter(|c| !c.is_baseline)
            .filter_map(|c| {
                let figure = if c.nopm.is_some() { "NOPM" } else { "TPS" };
                Some((format!("{}: {}", cell_label(&c.key), c.key.placement), c.headline().1?, figure))
            })
            .collect(),
    };
    for (label, d, figure) in changes {
        let (mark, color) = verdict_mark(d.verdict);
        if !seen.contains(&d.verdict) {
            seen.push(d.verdict);
        }
        rows.push(ForestRow {
            label,
            value: format!("{} {figure}", d.text("")),
            point: d.pct,
            low: d.pct_low,
            high: d.pct_high,
            holm: d.holm_widened().then_some((d.holm_low, d.holm_high)),
            mark,
            color,
            published: None,
        });
    }
    if rows.is_empty() {
        return;
    }
    let order =
        [Verdict::RealChange, Verdict::Equivalent, Verdict::Inconclusive, Verdict::NotSteady, Verdict::NoInterval];
    let legend = order
        .iter()
        .filter(|v| seen.contains(v))
        .map(|v| {
            let (m, col) = verdict_mark(*v);
            (m, v.as_str().to_string(), col)
        })
        .collect();
    let m = &cx.set.manifest;
    let (against, of_what) = match contrast {
        Some(x) => {
            let r = x.dimension.describe(&x.reference);
            (r.clone(), format!("each cell against the same cell under {r} (Welch: separate runs)"))
        }
        None => (m.baseline.clone(), "each cell against the baseline cell".to_string()),
    };
    let chart = ForestChart {
        title: format!("{}: every change against {against}", m.experiment_name),
        subtitle: format!(
            "throughput (NOPM for TPC-C) of {of_what}; thick: 95% intervals, thin: after Holm's correction (the verdict's); shaded: the equivalence margin ±{margin:.1}%"
        ),
        x_label: format!("change against {against} (log scale)"),
        rows,
        margin_pct: margin,
        legend,
        footnote: super::footnote(cx.set, &cx.summary.cells.iter().collect::<Vec<_>>(), false),
    };
    cx.specs.push(super::ChartSpec {
        section: FOREST_SECTION.into(),
        stem: "forest-changes".into(),
        chart: crate::charts::Chart::Forest(chart),
    });
}

/// Each claim measured in this result set: the study's figure (a diamond, or a grey band for a
/// range) against the measured change and its interval.
pub(super) fn published_vs_measured(cx: &mut Ctx) {
    let study = Study::of(cx.set, cx.summary);
    let checks = claims::check_all(cx.set, cx.summary, &study);
    let mut rows = Vec::new();
    let mut seen = Vec::new();
    for c in &checks {
        let Some(d) = &c.measured else { continue };
        let (mark, color) = claim_mark(c.verdict);
        if !seen.contains(&c.verdict) {
            seen.push(c.verdict);
        }
        rows.push(ForestRow {
            label: format!("{}: {} vs {}", c.claim.name, c.claim.placement, c.claim.against),
            value: format!("{} (study {})", d.text(""), c.claim.figure),
            point: d.pct,
            low: d.pct_low,
            high: d.pct_high,
            holm: None,
            mark,
            color,
            published: Some((c.claim.low_pct, c.claim.high_pct)),
        });
    }
    if rows.is_empty() {
        return;
    }
    let legend = seen
        .iter()
        .map(|v| {
            let (m, col) = claim_mark(*v);
            (m, v.as_str().to_string(), col)
        })
        .collect();
    let m = &cx.set.manifest;
    let chart = ForestChart {
        title: format!("{}: published vs measured", m.experiment_name),
        subtitle: "each claim's study figure (◇, or a grey band for a range) against the measured change and its 95% interval; shaded: the equivalence margin".into(),
        x_label: "change (log scale)".into(),
        rows,
        margin_pct: cx.summary.analysis.equivalence_margin_pct,
        legend,
        footnote: super::footnote(cx.set, &cx.summary.cells.iter().collect::<Vec<_>>(), false),
    };
    cx.specs.push(super::ChartSpec {
        section: CLAIMS_SECTION.into(),
        stem: "published-vs-measured".into(),
        chart: crate::charts::Chart::Forest(chart),
    });
}
