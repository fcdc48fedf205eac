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

/// The error model checked across the study's contests (issue 48, item 3): in each figure
/// family, the control's changes of every contest are each a t statistic on its interval's
/// degrees of freedom if the intervals are right (the control's truth is 0); their normal
/// deviates' squares sum to chi-square on as many degrees of freedom
/// ([`stats::chi_square_of_t`]). A sum far above it (p below [`MODEL_ALPHA`] over the families,
/// Bonferroni) says the intervals do not hold on this run, whatever the calibration predicted.
#[derive(Clone, Debug, Serialize)]
pub struct ModelCheck {
    /// `throughput` (the headline: TPS, or NOPM), `latency` or `p99 latency`.
    pub figure: String,
    /// The contests whose control has an interval on the figure.
    pub contests: usize,
    /// The sum of the squared normal deviates, and its p-value under the model.
    pub sum_z2: f64,
    pub p_value: f64,
    pub failed: bool,
    /// How many times too narrow the intervals were on this run, as the controls show it:
    /// sqrt(sum / contests), at least 1.
    pub inflation: f64,
}

/// The study-wide level of the error model's test, shared by its figure families.
pub const MODEL_ALPHA: f64 = 0.05;

/// The error model's check per figure family, over contests with a control (none below two).
pub fn model_checks(checks: &[ControlCheck]) -> Vec<ModelCheck> {
    let t = |d: &Delta| (d.has_interval() && d.se > 0.0 && d.ratio > 0.0).then(|| (d.ratio.ln() / d.se, d.df));
    let families: Vec<(&str, Vec<(f64, f64)>)> = vec![
        ("throughput", checks.iter().filter_map(|c| c.headline.as_ref().and_then(t)).collect()),
        ("latency", checks.iter().filter_map(|c| c.latency.as_ref().and_then(t)).collect()),
        (
            "p99 latency",
            checks
                .iter()
                .filter_map(|c| c.others.iter().find(|(n, _)| n == "p99 latency").and_then(|(_, d)| t(d)))
                .collect(),
        ),
    ];
    let families: Vec<(&str, Vec<(f64, f64)>)> = families.into_iter().filter(|(_, v)| v.len() >= 2).collect();
    let alpha = MODEL_ALPHA / families.len().max(1) as f64;
    families
        .into_iter()
        .filter_map(|(figure, ts)| {
            let (sum_z2, contests, p_value) = stats::chi_square_of_t(&ts)?;
            Some(ModelCheck {
                figure: figure.to_string(),
                contests,
                sum_z2,
                p_value,
                failed: p_value < alpha,
                inflation: (sum_z2 / contests as f64).sqrt().max(1.0),
            })
        })
        .collect()
}

impl ModelCheck {
    /// `the control's throughput changes over 4 contests: sum of z^2 23.1 (chi-square 4: p
    /// 0.0001), the intervals about 2.4 times too narrow`.
    pub fn text(&self) -> String {
        format!(
            "the control's {} changes over {} contests: sum of z^2 {:.1} against chi-square on {} degrees of freedom (p {:.4}){}",
            self.figure,
            self.contests,
            self.sum_z2,
            self.contests,
            self.p_value,
            if self.failed {
                format!(", the intervals about {:.1} times too narrow on this run", self.inflation)
            } else {
                String::new()
            }
        )
    }
}

/// After the verdicts, when the error model failed on the study (`inflation` > 1, the largest
/// of its failed families'): a real change whose interval after Holm, widened that many times
/// about its estimate, no longer excludes 0 stands on the model alone and is inconclusive.
pub fn withhold_beyond_the_model(d: &mut Delta, inflation: f64) {
    if d.verdict != Verdict::RealChange || inflation <= 1.0 || !d.has_interval() {
        return;
    }
    let log = |pct: f64| (1.0 + pct / 100.0).ln();
    let m = d.ratio.ln();
    let (lo, hi) = (m - log(d.holm_low), log(d.holm_high) - m);
    if m - inflation * lo <= 0.0 && m + inflation * hi >= 0.0 {
        d.verdict = Verdict::Inconclusive;
    }
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
    fn the_error_model_fails_when_the_controls_move_together_and_holds_when_they_do_not() {
        let t_delta = |pct: f64, se: f64| Delta {
            se,
            df: 12.0,
            ratio: 1.0 + pct / 100.0,
            ..delta(pct, pct - 2.2 * se * 100.0, pct + 2.2 * se * 100.0)
        };
        let four = |pct: f64| -> Vec<ControlCheck> {
            (0..4).map(|_| check(t_delta(pct, 0.02), t_delta(-pct, 0.02))).collect()
        };
        // Each control 1 standard error off (z about 1): chi-square(4) p 0.42, held.
        let held = model_checks(&four(2.0));
        assert_eq!(held.len(), 2, "throughput and latency, two contests or more each");
        assert!(held.iter().all(|m| !m.failed && m.inflation < 1.1), "{held:?}");
        // Each 2.5 standard errors off in the same direction: sum of z^2 about 21, failed.
        let failed = model_checks(&four(5.0));
        assert!(failed.iter().all(|m| m.failed && m.inflation > 2.0), "{failed:?}");
        assert!(failed[0].text().contains("times too narrow"), "{}", failed[0].text());
        // One contest: no test.
        assert!(model_checks(&four(5.0)[..1]).is_empty());
        // A real change of +10% [+2, +18] stands on the model alone at 2.4 times: withheld;
        // +40% [+30, +51] does not.
        let mut small = Delta { verdict: Verdict::RealChange, ..delta(10.0, 2.0, 18.0) };
        withhold_beyond_the_model(&mut small, 2.4);
        assert_eq!(small.verdict, Verdict::Inconclusive);
        let mut large = Delta { verdict: Verdict::RealChange, ..delta(40.0, 30.0, 51.0) };
        withhold_beyond_the_model(&mut large, 2.4);
        assert_eq!(large.verdict, Verdict::RealChange);
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
