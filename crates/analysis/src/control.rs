//! The negative control (`[measurement] control = true`): a twin of the baseline measured as one
//! more contender of every contest. Nothing differs between the two, so the control's change is
//! the method's own error in that contest: when its interval excludes 0, the contest's verdicts
//! are untrustworthy, and every table and finding of that contest says so with the control's
//! figure.

use serde::Serialize;

use crate::cell::CellSummary;
use crate::contest as analysis;
use results::record::CellKey;
use stats::{Delta, Verdict};

/// What the control showed in one contest.
#[derive(Clone, Debug, Serialize)]
pub struct ControlCheck {
    /// The contest (`analysis::contest_of`).
    pub contest: String,
    /// The control's cell.
    pub key: CellKey,
    /// Its headline change (TPS, or NOPM for TPC-C) and its latency change against the baseline.
    pub headline: Option<Delta>,
    pub latency: Option<Delta>,
    /// Every other figure it was checked on: p99 latency and each statement's latency, named.
    pub others: Vec<(String, Delta)>,
    /// Figures the control was checked on in this contest.
    pub figures: usize,
    /// An interval of the control excludes 0 after Holm's correction over all of its figures in
    /// the study (one family): the contest's verdicts are untrustworthy.
    pub moved: bool,
}

impl ControlCheck {
    /// The figures that moved, each as `-6.0% [-11.0, -1.2] latency`.
    fn moved_figures(&self) -> Vec<String> {
        [(self.headline.as_ref(), "throughput"), (self.latency.as_ref(), "latency")]
            .into_iter()
            .filter_map(|(d, what)| d.map(|d| (d, what.to_string())))
            .chain(self.others.iter().map(|(what, d)| (d, what.clone())))
            .filter(|(d, _)| excludes_zero(d))
            .map(|(d, what)| format!("{} {what}", d.text_with_holm("")))
            .collect()
    }

    /// `untrustworthy: the control (a twin of the baseline) moved +6.1% [+1.2, +11.3] TPS`.
    pub fn warning(&self) -> Option<String> {
        if !self.moved {
            return None;
        }
        Some(format!(
            "untrustworthy: the control (a twin of the baseline) moved {}",
            self.moved_figures().join(" and ")
        ))
    }
}

/// The control's figure moved: its interval after Holm's correction over the control's own
/// figures (equal to the 95% one for a family of one) excludes 0.
pub fn excludes_zero(d: &Delta) -> bool {
    d.has_interval() && (d.holm_low > 0.0 || d.holm_high < 0.0) && d.verdict != Verdict::NoInterval
}

/// One check per contest that measured the control placement `control`.
pub fn checks(cells: &[CellSummary], control: &str) -> Vec<ControlCheck> {
    cells
        .iter()
        .filter(|c| c.key.placement == control)
        .map(|c| {
            let headline = c.headline().1;
            let latency = c.latency_delta;
            let mut others: Vec<(String, Delta)> = Vec::new();
            if let Some(d) = c.latency_p99_delta.filter(|_| c.latency_p99_ms.is_some()) {
                others.push(("p99 latency".into(), d));
            }
            if c.nopm.is_some()
                && let Some(d) = c.tps_delta
            {
                others.push(("TPS".into(), d));
            }
            for st in &c.statements {
                if let Some(d) = st.delta {
                    others.push((format!("{} latency", crate::cell::statement_label(&st.statement)), d));
                }
            }
            let all = || headline.iter().chain(latency.iter()).chain(others.iter().map(|(_, d)| d));
            ControlCheck {
                contest: analysis::contest_of(&c.key),
                key: c.key.clone(),
                moved: all().any(excludes_zero),
                figures: all().filter(|d| d.has_interval()).count(),
                headline,
                latency,
                others,
            }
        })
        .collect()
}

/// The check of the contest `key` belongs to, if the study has a control.
pub fn of<'a>(checks: &'a [ControlCheck], key: &CellKey) -> Option<&'a ControlCheck> {
    let contest = analysis::contest_of(key);
    checks.iter().find(|c| c.contest == contest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::record::MemoryLabel;
    use stats::Method;

    fn delta(pct: f64, low: f64, high: f64) -> Delta {
        Delta {
            pct,
            ratio: 1.0 + pct / 100.0,
            pct_low: low,
            pct_high: high,
            p_value: 0.5,
            p_adjusted: 0.5,
            holm_low: low,
            holm_high: high,
            se: f64::NAN,
            df: 10.0,
            method: Method::PairedLog,
            within_noise: low <= 0.0 && high >= 0.0,
            verdict: Verdict::Inconclusive,
        }
    }

    fn check(headline: Delta, latency: Delta) -> ControlCheck {
        ControlCheck {
            contest: "tpcb".into(),
            key: CellKey {
                placement: "control".into(),
                workload: "tpcb".into(),
                clients: 8,
                memory_limit: MemoryLabel::Unlimited,
                profile: "default".into(),
                build: "default".into(),
            },
            moved: [headline, latency].iter().any(excludes_zero),
            headline: Some(headline),
            latency: Some(latency),
            others: vec![],
            figures: 2,
        }
    }

    #[test]
    fn the_control_is_judged_on_every_figure_after_holm_over_its_own() {
        // Seventeen figures of one control, as judge() leaves them: one statement's 95%
        // interval excludes 0 (p 0.01) but not after Holm over the 17 (p 0.17): it held.
        let mut stmt = delta(-4.0, -7.0, -1.0);
        stmt.p_value = 0.01;
        (stmt.holm_low, stmt.holm_high, stmt.p_adjusted) = (-9.0, 1.5, 0.17);
        let mut c = check(delta(0.4, -3.1, 4.0), delta(-0.3, -3.8, 3.3));
        c.others = (0..15).map(|i| (format!("statement {i} latency"), delta(0.1, -2.0, 2.2))).collect();
        c.others.push(("UPDATE pgbench_accounts latency".into(), stmt));
        let all = c.headline.iter().chain(c.latency.iter()).chain(c.others.iter().map(|(_, d)| d));
        c.moved = all.clone().any(excludes_zero);
        assert!(!c.moved, "raw -4.0% [-7.0, -1.0] but [-9.0, +1.5] after Holm");
        // The same statement still outside 0 after Holm: the control moved, and says on what.
        let mut moved_stmt = stmt;
        (moved_stmt.holm_low, moved_stmt.holm_high) = (-8.0, -0.4);
        c.others.push(("INSERT INTO pgbench_history latency".into(), moved_stmt));
        c.moved = c.headline.iter().chain(c.latency.iter()).chain(c.others.iter().map(|(_, d)| d)).any(excludes_zero);
        assert!(c.moved);
        let w = c.warning().unwrap();
        assert!(w.contains("INSERT INTO pgbench_history latency") && !w.contains("UPDATE"), "{w}");
    }

    #[test]
    fn a_control_whose_interval_excludes_zero_makes_its_contest_untrustworthy() {
        let held = check(delta(0.4, -3.1, 4.0), delta(-0.3, -3.8, 3.3));
        assert!(!held.moved);
        assert_eq!(held.warning(), None);
        assert_eq!(held.headline.as_ref().map(|d| d.text("")).as_deref(), Some("+0.4% [-3.1, +4.0]"));
        let moved = check(delta(2.0, -1.0, 5.0), delta(-6.0, -11.0, -1.2));
        assert!(moved.moved, "the latency interval excludes 0");
        assert_eq!(
            moved.warning().unwrap(),
            "untrustworthy: the control (a twin of the baseline) moved -6.0% [-11.0, -1.2] latency"
        );
    }
}
