//! The negative control (`[measurement] control = true`): a twin of the baseline measured as one
//! more contender of every contest. Nothing differs between the two, so the control's change is
//! the method's own error in that contest: when its interval excludes 0, the contest's verdicts
//! are untrustworthy, and every table and finding of that contest says so with the control's
//! figure.

use serde::Serialize;

use crate::analysis;
use crate::model::CellSummary;
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
    /// An interval of the control excludes 0: the contest's verdicts are untrustworthy.
    pub moved: bool,
}

impl ControlCheck {
    /// `untrustworthy: the control (a twin of the baseline) moved +6.1% [+1.2, +11.3] TPS`.
    pub fn warning(&self) -> Option<String> {
        if !self.moved {
            return None;
        }
        let moved: Vec<String> = [(self.headline.as_ref(), "throughput"), (self.latency.as_ref(), "latency")]
            .into_iter()
            .filter_map(|(d, what)| d.filter(|d| excludes_zero(d)).map(|d| format!("{} {what}", d.text(""))))
            .collect();
        Some(format!("untrustworthy: the control (a twin of the baseline) moved {}", moved.join(" and ")))
    }

    /// `steady (+0.4% [-3.1, +4.0])`, `moved (...)` or `no interval`.
    pub fn status(&self) -> String {
        match &self.headline {
            Some(d) if d.has_interval() => {
                format!("{} ({})", if self.moved { "moved" } else { "held" }, d.text(""))
            }
            _ => "no interval".into(),
        }
    }
}

fn excludes_zero(d: &Delta) -> bool {
    d.has_interval() && (d.pct_low > 0.0 || d.pct_high < 0.0) && d.verdict != Verdict::NoInterval
}

/// One check per contest that measured the control placement `control`.
pub fn checks(cells: &[CellSummary], control: &str) -> Vec<ControlCheck> {
    cells
        .iter()
        .filter(|c| c.key.placement == control)
        .map(|c| {
            let headline = c.headline().1;
            let latency = c.latency_delta;
            ControlCheck {
                contest: analysis::contest_of(&c.key),
                key: c.key.clone(),
                moved: headline.iter().chain(latency.iter()).any(excludes_zero),
                headline,
                latency,
            }
        })
        .collect()
}

/// `## Negative control` first in the report: the control's change in every contest, and which
/// contests' verdicts it makes untrustworthy.
pub fn section(d: &mut crate::document::Document, checks: &[ControlCheck], baseline: &str) {
    use crate::document::Table;
    if checks.is_empty() {
        return;
    }
    let moved = checks.iter().filter(|c| c.moved).count();
    d.heading(2, "Negative control");
    d.para(format!(
        "The placement `{}` is a twin of the baseline {baseline} (identical devices of its class), measured as one more contender of every contest: nothing can differ, so its change is the method's own error. {}",
        checks[0].key.placement,
        if moved == 0 {
            format!("It held in all {} contests: no interval of it excludes 0.", checks.len())
        } else {
            format!(
                "It **moved in {moved} of {} contests**: those contests' verdicts are marked untrustworthy below.",
                checks.len()
            )
        }
    ));
    let mut t = Table::new(&[
        "contest",
        "control's throughput change [95% CI]",
        "latency change [95% CI]",
        "the contest's verdicts",
    ])
    .caption(
        "The negative control against the baseline per contest; intervals are 95% (paired by round), uncorrected.",
    );
    for c in checks {
        let text = |x: Option<&Delta>| x.map(|x| x.text("")).unwrap_or_else(|| "n/a".into());
        t.row(vec![
            c.contest.clone(),
            text(c.headline.as_ref()),
            text(c.latency.as_ref()),
            if c.moved { "**untrustworthy**".into() } else { "stand".into() },
        ]);
    }
    d.table(t);
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
        }
    }

    #[test]
    fn a_control_whose_interval_excludes_zero_makes_its_contest_untrustworthy() {
        let held = check(delta(0.4, -3.1, 4.0), delta(-0.3, -3.8, 3.3));
        assert!(!held.moved);
        assert_eq!(held.warning(), None);
        assert_eq!(held.status(), "held (+0.4% [-3.1, +4.0])");
        let moved = check(delta(2.0, -1.0, 5.0), delta(-6.0, -11.0, -1.2));
        assert!(moved.moved, "the latency interval excludes 0");
        assert_eq!(
            moved.warning().unwrap(),
            "untrustworthy: the control (a twin of the baseline) moved -6.0% [-11.0, -1.2] latency"
        );
    }
}
