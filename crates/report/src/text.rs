//! The summary table printed on the terminal at the end of a compare.

use crate::model::{CellSummary, Summary};

/// One line per cell: the headline figure (TPS, or NOPM for TPC-C), its coefficient of variation,
/// the change against the baseline with its 95% interval, the interval after Holm's correction
/// (the one that goes with the verdict; blank when the correction did not widen it or the 95%
/// interval already holds 0), the verdict,
/// and the mean latency. Memory limit and profile get a column when the matrix varies them.
pub fn summary_table(summary: &Summary) -> String {
    let mut text = String::new();
    let varies = |f: &dyn Fn(&CellSummary) -> &str| {
        summary.cells.iter().map(f).collect::<std::collections::BTreeSet<_>>().len() > 1
    };
    let show_memory =
        summary.cells.iter().map(|c| c.key.memory_limit).collect::<std::collections::BTreeSet<_>>().len() > 1;
    let show_profile = varies(&|c| c.key.profile.as_str()) || varies(&|c| c.key.build.as_str());
    let extra = |memory: &str, profile: &str| {
        let mut e = String::new();
        if show_memory {
            e.push_str(&format!(" {memory:<10}"));
        }
        if show_profile {
            e.push_str(&format!(" {profile:<20}"));
        }
        e
    };
    text.push_str(&format!(
        "{:<16} {:<14}{} {:>7} {:>12} {:>8} {:>28} {:>20} {:<13} {:>11}\n",
        "placement",
        "workload",
        extra("memory", "profile"),
        "clients",
        "tps|NOPM",
        "cv%",
        "change [95% CI]",
        "after Holm",
        "verdict",
        "latency ms"
    ));
    for c in &summary.cells {
        let (head, head_delta, _) = c.headline();
        let (delta, holm, verdict) = match (&head_delta, c.is_baseline) {
            (_, true) => ("baseline".to_string(), String::new(), ""),
            (Some(d), _) => {
                (d.text(""), if d.holm_matters() { d.holm_text() } else { String::new() }, d.verdict.as_str())
            }
            (None, _) => ("n/a".into(), String::new(), ""),
        };
        let cv = if head.cv_pct.is_finite() { format!("{:.1}", head.cv_pct) } else { "n/a".into() };
        text.push_str(&format!(
            "{:<16} {:<14}{} {:>7} {:>12.1} {:>8} {:>28} {:>20} {:<13} {:>11.3}\n",
            c.key.placement,
            c.key.workload,
            extra(
                &c.key.memory_limit.to_string(),
                &if c.key.build == results::record::DEFAULT_BUILD {
                    c.key.profile.clone()
                } else {
                    format!("{} @ {}", c.key.profile, c.key.build)
                }
            ),
            c.key.clients,
            head.mean,
            cv,
            delta,
            holm,
            verdict,
            c.latency_ms.mean
        ));
    }
    let a = &summary.analysis;
    text.push_str(&format!(
        "(design {}; real change: the interval after Holm's correction excludes 0; equivalent: the 95% interval inside ±{:.1}%; inconclusive: neither)\n",
        a.design, a.equivalence_margin_pct
    ));
    text
}
