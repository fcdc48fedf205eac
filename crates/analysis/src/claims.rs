//! Published vs measured: each `[[claim]]` of the experiment file (recorded in the manifest) set
//! against the measured change of its cell, with a verdict by a rule written out in [`RULE`].

use results::manifest::ClaimRecord;
use results::manifest::Design;
use results::record::{CellKey, MemoryLabel, RunRecord, RunStatus};
use serde::Serialize;

use crate::evidence::Study;
use crate::model::{CellSummary, ResultSet, Summary, statement_label};
use stats::{Delta, Estimate, Verdict};

/// What the measurement says about a published figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimVerdict {
    /// The published figure lies in the measured change's 95% interval, and the change is real
    /// (or, for a published "no difference", the change is equivalent).
    Reproduced,
    /// The change is real and goes the published way, but its interval excludes the figure.
    SameDirection,
    /// The interval excludes the published figure and shows no change in its direction.
    Contradicted,
    /// The interval holds the published figure and no change alike, or there is no interval.
    Inconclusive,
    /// The claim compares two result sets: `cargo xtask report --baseline A --contender B`.
    NeedsTwoResultSets,
    /// The cell was not measured (a missing or failed cell).
    NotMeasured,
    /// The cell's data set sits in memory unlike the study's (one held in memory, the other
    /// read from the device): the figure is not comparable here, whatever it shows.
    NotComparable,
}

impl ClaimVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimVerdict::Reproduced => "reproduced",
            ClaimVerdict::SameDirection => "same direction, different size",
            ClaimVerdict::Contradicted => "contradicted",
            ClaimVerdict::Inconclusive => "inconclusive",
            ClaimVerdict::NeedsTwoResultSets => "needs two result sets",
            ClaimVerdict::NotMeasured => "not measured",
            ClaimVerdict::NotComparable => "not comparable here",
        }
    }
}

/// The verdict rule, as report.md states it.
pub const RULE: &str = "**reproduced**: the published figure (or range) lies in the measured change's 95% interval and the change is a real change (for a published figure inside the equivalence margin: the change is equivalent); **same direction, different size**: the change is real and goes the published way, but its interval excludes the figure; **contradicted**: the interval excludes the published figure and shows no real change in its direction (a real change the other way, an equivalence, or no change at all); **inconclusive**: the interval (or, for a change that is not a real one, its interval after Holm's correction) holds both the published figure and no change, or there is no interval; **not comparable here**: the claim states the study's data set and memory, and the cell's data set sits in memory unlike it (the shares out of memory more than 15 points apart), so no verdict is drawn on it.";

/// The verdict of a published change `low..high` (%, a point when equal) against a measured
/// change, by [`RULE`]; with a sentence on why.
pub fn judge(low: f64, high: f64, d: &Delta, margin_pct: f64) -> (ClaimVerdict, String) {
    if !d.has_interval() {
        return (ClaimVerdict::Inconclusive, "no interval (a side with a single run)".into());
    }
    if d.verdict == Verdict::NotSteady {
        return (
            ClaimVerdict::Inconclusive,
            "the contest was not steady (its rounds still moving, or a warm-up cut so long that a warm-up may be left): no verdict on that evidence".into(),
        );
    }
    let overlaps = low <= d.pct_high && high >= d.pct_low;
    let published_nothing = low >= -margin_pct && high <= margin_pct;
    let mid = (low + high) / 2.0;
    if overlaps {
        return match d.verdict {
            Verdict::RealChange => (ClaimVerdict::Reproduced, "the published figure lies in the interval".into()),
            Verdict::Equivalent if published_nothing => {
                (ClaimVerdict::Reproduced, "no change that matters, as published".into())
            }
            _ if d.within_noise => (
                ClaimVerdict::Inconclusive,
                "the interval holds the published figure, and no change as well".into(),
            ),
            _ => (
                ClaimVerdict::Inconclusive,
                "the interval holds the published figure, but the change is not a real change after the correction for the number of changes".into(),
            ),
        };
    }
    // Not a real change: the interval that goes with that verdict is the one after Holm's
    // correction, and where it holds the published figure (and so no change as well) the claim
    // is not contradicted.
    if d.verdict == Verdict::Inconclusive && low <= d.holm_high && high >= d.holm_low {
        return (
            ClaimVerdict::Inconclusive,
            "the interval after Holm's correction holds the published figure, and no change as well".into(),
        );
    }
    let size = if d.pct.abs() < mid.abs() { "smaller" } else { "larger" };
    if low == 0.0 && high == 0.0 {
        // A negative control: nothing can change there.
        return match d.verdict {
            Verdict::RealChange => (
                ClaimVerdict::Contradicted,
                "a real change where nothing can change: the comparison itself is biased (position, carry-over or noise)".into(),
            ),
            _ => (ClaimVerdict::Contradicted, "the interval excludes no change".into()),
        };
    }
    match d.verdict {
        Verdict::RealChange if d.pct.signum() == mid.signum() && !(low < 0.0 && high > 0.0) => {
            (ClaimVerdict::SameDirection, format!("a real change the published way, {size} than published"))
        }
        Verdict::RealChange => (ClaimVerdict::Contradicted, "a real change the other way".into()),
        Verdict::Equivalent => {
            (ClaimVerdict::Contradicted, "no change that matters, against a published change".into())
        }
        _ => (
            ClaimVerdict::Contradicted,
            "the interval excludes the published figure, and no real change is shown".into(),
        ),
    }
}

/// How far the share of a data set out of memory may differ between the study's regime and the
/// cell's before the claim is not comparable (percentage points): 15 keeps the seed-000 3.4x claim
/// (742 GB on 200 GB: 73% out of memory) on a cell of 606 MiB in 192 MiB (68%), and none on a data
/// set held in memory (0%) or the study's 1 GB run (99.9%) on that cell.
pub const REGIME_TOLERANCE_PCT: f64 = 15.0;

/// The share of a data set of `data` bytes that does not fit in `memory` bytes, percent.
pub fn out_of_memory_pct(data: u64, memory: u64) -> f64 {
    if data == 0 {
        return 0.0;
    }
    (100.0 * (1.0 - memory as f64 / data as f64)).max(0.0)
}

/// The regime of a claim's cell beside the study's, and whether they are alike: the cell's data
/// set (its runs' largest database size) against its memory (its limit, else the host's).
fn regime(set: &ResultSet, c: &ClaimRecord, cell: &CellKey) -> Option<(String, bool)> {
    let (study_data, study_memory) = (c.study_data_set_bytes?, c.study_memory_bytes?);
    let data = set
        .runs
        .iter()
        .filter(|r| r.cell == *cell)
        .filter_map(|r| r.postgres.as_ref().map(|p| p.database_size_bytes))
        .max()
        .filter(|b| *b > 0)? as u64;
    let memory = memory_label(c).bytes().unwrap_or(set.manifest.host.memory_bytes);
    if memory == 0 {
        return None;
    }
    let (study, here) = (out_of_memory_pct(study_data, study_memory), out_of_memory_pct(data, memory));
    let say = |d: u64, m: u64, out: f64| {
        let held = if out <= 0.0 { "all held in memory".to_string() } else { format!("{out:.0}% of it out of memory") };
        format!("a data set {} the memory ({held})", ratio_text(d as f64 / m as f64))
    };
    Some((
        format!("the study: {}; this cell: {}", say(study_data, study_memory, study), say(data, memory, here)),
        (study - here).abs() <= REGIME_TOLERANCE_PCT,
    ))
}

/// `3.7 times`, `0.03 times`.
fn ratio_text(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0} times")
    } else if r >= 0.1 {
        format!("{r:.2} times")
    } else {
        format!("{r:.3} times")
    }
}

/// One claim with its measurement and verdict.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimCheck {
    pub claim: ClaimRecord,
    /// The cell(s) measured: `tpcb, 8 clients, memory unlimited` (at the peak: each placement's
    /// peak client count).
    pub cell: String,
    pub measured: Option<Delta>,
    pub verdict: ClaimVerdict,
    pub why: String,
    /// Where the emulated tiers distort the comparison (see `fidelity`).
    pub fidelity: Option<String>,
    /// The study's regime beside the cell's, when the claim states the study's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regime: Option<String>,
}

/// The claim's cell, of the result set's first build (claims name no build).
fn key(summary: &Summary, c: &ClaimRecord, placement: &str, clients: u32) -> CellKey {
    CellKey {
        placement: placement.to_string(),
        workload: c.workload.clone(),
        clients,
        memory_limit: memory_label(c),
        profile: c.profile.clone().unwrap_or_else(|| "default".into()),
        build: summary
            .cells
            .first()
            .map_or_else(|| results::record::DEFAULT_BUILD.to_string(), |x| x.key.build.clone()),
    }
}

fn memory_label(c: &ClaimRecord) -> MemoryLabel {
    c.memory_limit.as_deref().and_then(|m| m.parse().ok()).unwrap_or(MemoryLabel::of(None))
}

/// The peak client count of a placement's cells of the claim's workload, memory limit and
/// profile (the highest mean of the headline figure).
fn peak(summary: &Summary, c: &ClaimRecord, placement: &str) -> Option<u32> {
    peak_of(summary, c, placement, c.profile.as_deref())
}

/// [`peak`] under the profile `profile`.
fn peak_of(summary: &Summary, c: &ClaimRecord, placement: &str, profile: Option<&str>) -> Option<u32> {
    summary
        .cells
        .iter()
        .filter(|x| {
            x.key.placement == placement
                && x.key.workload == c.workload
                && x.key.memory_limit == memory_label(c)
                && Some(x.key.profile.as_str()) == profile
        })
        .max_by(|a, b| a.headline().0.mean.total_cmp(&b.headline().0.mean))
        .map(|x| x.key.clients)
}

/// A run's value of the claim's metric.
fn value(c: &ClaimRecord, r: &RunRecord, study: &Study) -> Option<f64> {
    match c.metric.as_str() {
        "tps" => Some(r.metrics.tps),
        "latency" => Some(r.metrics.latency_ms_avg),
        "latency-p99" => r.metrics.latency_ms_p99,
        "nopm" => r.metrics.nopm,
        "statement-latency" => {
            let want = c.statement.as_deref().unwrap_or_default();
            r.statements.iter().find(|s| statement_matches(&s.statement, want)).map(|s| s.latency_ms)
        }
        "device-iops" => study.runs.get(&r.run_id).and_then(|e| e.device_iops),
        "device-mb-s" => study.runs.get(&r.run_id).and_then(|e| e.device_mb_s),
        _ => None,
    }
}

fn statement_matches(text: &str, want: &str) -> bool {
    let want = want.trim().to_ascii_lowercase();
    statement_label(text).to_ascii_lowercase() == want || text.trim().to_ascii_lowercase().starts_with(&want)
}

/// The summary's own change for the metric of a cell (paired and Holm-corrected as the results
/// table shows it), when the metric is one the summary has.
fn summary_delta(c: &ClaimRecord, cell: &CellSummary) -> Option<Option<Delta>> {
    Some(match c.metric.as_str() {
        "tps" => cell.tps_delta,
        "latency" => cell.latency_delta,
        "latency-p99" => cell.latency_p99_delta,
        "nopm" => cell.nopm_delta,
        "statement-latency" => {
            let want = c.statement.as_deref().unwrap_or_default();
            cell.statements.iter().find(|s| statement_matches(&s.statement, want)).and_then(|s| s.delta)
        }
        _ => return None,
    })
}

/// The study's contrast's own change for the claim's metric (Holm-corrected over the contrast),
/// when it is one the contrast has: a statement's latency is the contender cell's own, which the
/// contrast fills in against its reference ([`crate::contrast::fill_statement_deltas`]).
fn contrast_delta(c: &ClaimRecord, ch: &crate::contrast::Change, cell: &CellSummary) -> Option<Option<Delta>> {
    Some(match c.metric.as_str() {
        "tps" => ch.tps,
        "latency" => ch.latency,
        "latency-p99" => ch.latency_p99,
        "nopm" => ch.nopm,
        "statement-latency" => return summary_delta(c, cell),
        _ => return None,
    })
}

/// The change of the claim's metric from the runs of two cells: within one slices contest, the
/// study's estimator on its kept rounds (paired by round, the correlation correction), else
/// Welch on the logs; not corrected for the number of claims.
fn runs_delta(
    set: &ResultSet,
    summary: &Summary,
    c: &ClaimRecord,
    study: &Study,
    base: &CellKey,
    cont: &CellKey,
) -> Option<Delta> {
    let margin = summary.analysis.equivalence_margin_pct;
    let values = |k: &CellKey| -> Vec<(u32, f64)> {
        set.runs
            .iter()
            .filter(|r| &r.cell == k && r.status == RunStatus::Ok)
            .filter_map(|r| Some((r.repetition, value(c, r, study)?)))
            .collect()
    };
    let (b, x) = (values(base), values(cont));
    // Slices are side by side only within a contest (never across profiles or client counts:
    // separate sessions or contests): there, the study's own estimator on the rounds it kept.
    if set.manifest.measurement.design == Design::Slices
        && crate::contest::contest_of(base) == crate::contest::contest_of(cont)
        && let Some(rule) = summary.analysis.rule.as_ref()
    {
        let kept = |k: &CellKey| -> Vec<&results::RunRecord> {
            let mut v: Vec<&results::RunRecord> = set
                .runs
                .iter()
                .filter(|r| &r.cell == k && r.status == RunStatus::Ok && summary.analysis.counts(r))
                .collect();
            v.sort_by_key(|r| (r.repetition, r.sequence));
            v
        };
        let (kb, kx) = (kept(base), kept(cont));
        let rules = crate::contest::Rules { rule: *rule, priors: crate::priors::Priors::of_manifest(&set.manifest) };
        if let Some(d) = crate::contest::delta_of(&kb, &kx, &|r| value(c, r, study), Some(&rules)) {
            return Some(d.classified(margin));
        }
    }
    let est = |v: &[(u32, f64)]| Estimate::of(&v.iter().map(|(_, x)| *x).collect::<Vec<_>>());
    Delta::between(&est(&b)?, &est(&x)?).map(|d| d.classified(margin))
}

/// Every claim of the result set, checked.
pub fn check_all(set: &ResultSet, summary: &Summary, study: &Study) -> Vec<ClaimCheck> {
    let margin = summary.analysis.equivalence_margin_pct;
    set.manifest
        .claims
        .iter()
        .map(|c| {
            let fidelity = crate::fidelity::note(&set.manifest, &c.placement, &c.against);
            let done = |cell: String, measured: Option<Delta>, verdict: ClaimVerdict, why: String| ClaimCheck {
                claim: c.clone(),
                cell,
                measured,
                verdict,
                why,
                fidelity: fidelity.clone(),
                regime: None,
            };
            if c.across == "result-sets" {
                return done(
                    describe_cell(c, None),
                    None,
                    ClaimVerdict::NeedsTwoResultSets,
                    "it compares two result sets: `cargo xtask report --baseline A --contender B` judges it".into(),
                );
            }
            // Across profiles: the claim's profile against the default one, on its placement.
            let profiles = c.across == "profiles";
            let reference = if profiles { Some("default") } else { c.profile.as_deref() };
            let (bc, cc) = if c.at_peak {
                (peak_of(summary, c, &c.against, reference), peak(summary, c, &c.placement))
            } else {
                (c.clients, c.clients)
            };
            let (Some(bc), Some(cc)) = (bc, cc) else {
                return done(
                    describe_cell(c, None),
                    None,
                    ClaimVerdict::NotMeasured,
                    "the cell has no successful run".into(),
                );
            };
            let mut base = key(summary, c, &c.against, bc);
            if profiles {
                base.profile = "default".into();
            }
            let cont = key(summary, c, &c.placement, cc);
            let cell_text = describe_cell(c, Some((bc, cc)));
            let in_summary = |k: &CellKey| summary.cells.iter().find(|x| &x.key == k);
            let Some(cont_cell) = in_summary(&cont).filter(|_| in_summary(&base).is_some()) else {
                return done(cell_text, None, ClaimVerdict::NotMeasured, "the cell has no successful run".into());
            };
            // The table's own change when the two cells are the ones it compares (the study's
            // contrast for a claim across profiles).
            let contrast = summary
                .contrast
                .as_ref()
                .filter(|x| profiles && x.dimension == crate::contrast::Dimension::Profile && x.reference == "default")
                .and_then(|x| x.change_of(&cont))
                .filter(|ch| ch.reference == base);
            let own = match contrast {
                Some(ch) => contrast_delta(c, ch, cont_cell),
                None if profiles => None,
                None => summary_delta(c, cont_cell).filter(|_| bc == cc && c.against == set.manifest.baseline),
            };
            let measured = match own {
                Some(d) => d,
                None => runs_delta(set, summary, c, study, &base, &cont),
            };
            match measured {
                None => {
                    done(cell_text, None, ClaimVerdict::Inconclusive, "no figure for this metric in these runs".into())
                }
                Some(d) => {
                    let (mut verdict, mut why) = judge(c.low_pct, c.high_pct, &d, margin);
                    // The negative control moved in this contest: the measured figure is suspect.
                    if let Some(w) = summary.control_of(&cont).and_then(|x| x.warning()) {
                        why.push_str(&format!("; {w}"));
                    }
                    let regime = regime(set, c, &cont);
                    if let Some((text, false)) = &regime {
                        verdict = ClaimVerdict::NotComparable;
                        why = format!(
                            "the data set sits in memory unlike the study's ({text}), so the figure says nothing about the study's; measure a cell in its regime ([claim.emulate] memory_limit, or a memory limit of about the study's ratio of data set to memory)"
                        );
                    }
                    ClaimCheck { regime: regime.map(|(t, _)| t), ..done(cell_text, Some(d), verdict, why) }
                }
            }
        })
        .collect()
}

/// The claims that compare two result sets (`across = "result-sets"`: two releases, two
/// PostgreSQL versions), judged on the same cell of the baseline set `a` and the contender set
/// `b`: the contender's claims, else the baseline's. Welch on the logs of the two sets' runs.
pub fn check_across(a: &ResultSet, sa: &Summary, b: &ResultSet, sb: &Summary) -> Vec<ClaimCheck> {
    let (ea, eb) = (Study::of(a, sa), Study::of(b, sb));
    let margin = a.manifest.measurement.equivalence_margin_pct;
    let of = |m: &results::Manifest| m.claims.iter().filter(|c| c.across == "result-sets").cloned().collect::<Vec<_>>();
    let claims = if of(&b.manifest).is_empty() { of(&a.manifest) } else { of(&b.manifest) };
    claims
        .into_iter()
        .map(|c| {
            let clients = |s: &Summary| if c.at_peak { peak(s, &c, &c.placement) } else { c.clients };
            let (ka, kb) = match (clients(sa), clients(sb)) {
                (Some(x), Some(y)) => (key(sa, &c, &c.placement, x), key(sb, &c, &c.placement, y)),
                _ => {
                    return ClaimCheck {
                        cell: describe_cell(&c, None),
                        claim: c,
                        measured: None,
                        verdict: ClaimVerdict::NotMeasured,
                        why: "the cell has no successful run in one of the sets".into(),
                        fidelity: None,
                        regime: None,
                    };
                }
            };
            let values = |set: &ResultSet, st: &Study, k: &CellKey| -> Vec<f64> {
                set.runs
                    .iter()
                    .filter(|r| &r.cell == k && r.status == RunStatus::Ok)
                    .filter_map(|r| value(&c, r, st))
                    .collect()
            };
            let measured = match (Estimate::of(&values(a, &ea, &ka)), Estimate::of(&values(b, &eb, &kb))) {
                (Some(x), Some(y)) => Delta::between(&x, &y).map(|d| d.classified(margin)),
                _ => None,
            };
            let cell = describe_cell(&c, Some((ka.clients, kb.clients)));
            let (verdict, why) = match &measured {
                Some(d) => judge(c.low_pct, c.high_pct, d, margin),
                None => (ClaimVerdict::NotMeasured, "no figure for this metric in both sets".into()),
            };
            ClaimCheck { claim: c, cell, measured, verdict, why, fidelity: None, regime: None }
        })
        .collect()
}

/// `tpcb, 8 clients, memory unlimited`; at the peak, each placement's peak.
fn describe_cell(c: &ClaimRecord, clients: Option<(u32, u32)>) -> String {
    let who = match (c.at_peak, clients, c.clients) {
        (true, Some((b, x)), _) if b == x => format!("at the peak ({x} clients)"),
        (true, Some((b, x)), _) => format!("at each peak ({} {x}, {} {b} clients)", c.placement, c.against),
        (true, None, _) => "at the peak".into(),
        (false, _, Some(n)) => format!("{n} clients"),
        (false, _, None) => "every client count".into(),
    };
    let statement = c.statement.as_ref().map(|s| format!(", statement {s}")).unwrap_or_default();
    if c.across == "profiles" {
        let profile = c.profile.as_deref().unwrap_or("default");
        let memory = c.memory_limit.as_deref().unwrap_or("unlimited");
        return format!("{} {who}, memory {memory}{statement}, profile {profile} against default", c.workload);
    }
    format!(
        "{} {who}, memory {}{}{statement}",
        c.workload,
        c.memory_limit.as_deref().unwrap_or("unlimited"),
        c.profile.as_ref().filter(|p| *p != "default").map(|p| format!(", profile {p}")).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::Method;

    /// A measured change with an interval and the verdict it would get.
    fn d(pct: f64, lo: f64, hi: f64, verdict: Verdict) -> Delta {
        Delta {
            pct,
            ratio: 1.0 + pct / 100.0,
            pct_low: lo,
            pct_high: hi,
            p_value: 0.01,
            p_adjusted: 0.01,
            holm_low: lo,
            holm_high: hi,
            se: f64::NAN,
            df: 4.0,
            method: Method::WelchLog,
            within_noise: lo <= 0.0 && hi >= 0.0,
            verdict,
        }
    }

    #[test]
    fn a_change_that_is_not_real_is_judged_on_its_interval_after_holm() {
        // +12% [+3, +21] alone, but [-1, +50] after Holm: inconclusive after the correction.
        let mut x = d(12.0, 3.0, 21.0, Verdict::Inconclusive);
        (x.holm_low, x.holm_high, x.within_noise) = (-1.0, 50.0, false);
        let (v, why) = judge(44.6, 44.6, &x, 2.0);
        assert_eq!(v, ClaimVerdict::Inconclusive, "{why}");
        assert!(why.contains("after Holm"), "{why}");
        // The same change against a negative-control claim (no change published): inconclusive too.
        assert_eq!(judge(0.0, 0.0, &x, 2.0).0, ClaimVerdict::Inconclusive);
        // Without the correction widening it, the published figure outside is a contradiction.
        let alone = d(12.0, 3.0, 21.0, Verdict::Inconclusive);
        assert_eq!(judge(44.6, 44.6, &alone, 2.0).0, ClaimVerdict::Contradicted);
    }

    #[test]
    fn verdict_rules_on_fixed_inputs() {
        use ClaimVerdict::*;
        let v = |lo: f64, hi: f64, m: Delta| judge(lo, hi, &m, 2.0).0;
        // +44.6% published.
        assert_eq!(v(44.6, 44.6, d(40.0, 30.0, 51.0, Verdict::RealChange)), Reproduced);
        assert_eq!(v(44.6, 44.6, d(12.0, 8.0, 16.0, Verdict::RealChange)), SameDirection);
        assert_eq!(v(44.6, 44.6, d(-9.0, -14.0, -4.0, Verdict::RealChange)), Contradicted);
        assert_eq!(v(44.6, 44.6, d(0.3, -1.0, 1.5, Verdict::Equivalent)), Contradicted);
        assert_eq!(
            v(44.6, 44.6, d(3.0, -5.0, 12.0, Verdict::Inconclusive)),
            Contradicted,
            "excludes the figure, shows no change"
        );
        assert_eq!(v(44.6, 44.6, d(20.0, -5.0, 50.0, Verdict::Inconclusive)), Inconclusive, "holds both");
        // A ratio: 3.4x = +240%.
        assert_eq!(v(240.0, 240.0, d(210.0, 150.0, 280.0, Verdict::RealChange)), Reproduced);
        assert_eq!(
            judge(240.0, 240.0, &d(90.0, 70.0, 110.0, Verdict::RealChange), 2.0).1,
            "a real change the published way, smaller than published"
        );
        // A fall: -30.8% latency.
        assert_eq!(v(-30.8, -30.8, d(-41.0, -44.0, -38.0, Verdict::RealChange)), SameDirection);
        assert_eq!(
            judge(-30.8, -30.8, &d(-41.0, -44.0, -38.0, Verdict::RealChange), 2.0).1,
            "a real change the published way, larger than published"
        );
        // A range: +2%..+7%.
        assert_eq!(v(2.0, 7.0, d(5.0, 3.0, 8.0, Verdict::RealChange)), Reproduced);
        assert_eq!(v(2.0, 7.0, d(12.0, 9.0, 15.0, Verdict::RealChange)), SameDirection);
        // A published "no difference that matters" (inside the margin) against an equivalence.
        assert_eq!(v(-1.0, 1.0, d(0.2, -1.2, 1.6, Verdict::Equivalent)), Reproduced);
        // A negative control ("no change"): an equivalence reproduces it, a real change either
        // way contradicts it (never "the published way"), an interval holding 0 is inconclusive,
        // and a contest still moving gives no verdict.
        assert_eq!(v(0.0, 0.0, d(0.4, -3.0, 3.5, Verdict::Equivalent)), Reproduced);
        assert_eq!(v(0.0, 0.0, d(9.7, 1.8, 18.2, Verdict::RealChange)), Contradicted);
        assert_eq!(v(0.0, 0.0, d(-7.0, -12.0, -2.0, Verdict::RealChange)), Contradicted);
        assert_eq!(v(0.0, 0.0, d(1.0, -6.0, 8.0, Verdict::Inconclusive)), Inconclusive);
        assert!(judge(0.0, 0.0, &d(9.7, 1.8, 18.2, Verdict::RealChange), 2.0).1.contains("where nothing can change"));
        assert_eq!(v(0.0, 0.0, d(9.7, 1.8, 18.2, Verdict::NotSteady)), Inconclusive);
        // No interval.
        let single = Delta { pct: 40.0, ..Delta::unknown() };
        assert_eq!(judge(44.6, 44.6, &single, 2.0), (Inconclusive, "no interval (a side with a single run)".into()));
    }

    #[test]
    fn statements_match_by_label_or_beginning() {
        assert!(statement_matches(
            "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
            "UPDATE pgbench_accounts"
        ));
        assert!(statement_matches("update pgbench_accounts set x", "update pgbench_accounts"));
        assert!(!statement_matches("UPDATE pgbench_tellers SET tbalance = 1;", "UPDATE pgbench_accounts"));
    }
}
