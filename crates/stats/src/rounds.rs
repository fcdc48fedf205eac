//! How a `slices` contest's rounds become a change with an interval that holds its 95%: which
//! rounds count (a warm-up cut fixed before measuring, by round within each segment, alike for
//! every contender), an interval on the mean log ratio that allows for correlated rounds
//! (lag-1 autocorrelation, bias-corrected), a steady-state check on what is kept (a trend test
//! with the same correction), and a stopping rule with known coverage (Stein's two-stage
//! procedure: the pilot's spread fixes the number of rounds, the interval keeps the pilot's
//! degrees of freedom). Pure functions: the scheduler (xtask) decides with them while it
//! measures, the report estimates with them afterwards, and the coverage test
//! ([`simulate`]) proves them on series with a known answer.

mod interval;
pub mod prior;
/// The coverage gate's simulation: stats' own tests and, with the `simulate` feature, its examples.
#[cfg(any(test, feature = "simulate"))]
pub mod simulate;
mod trend;
mod warm_up;

use interval::ar1_factor;
pub use interval::{
    LogInterval, batch_interval, corrected_interval, lag1, log_interval, plain_interval, prior_interval,
    with_life_offset, with_rule_offset,
};

pub use trend::{Trend, leading_rounds_p, still_moving, trend};
pub use warm_up::{WarmUpFit, curve_interval, fit_warm_up, leftover_warm_up, leftover_warm_up_bias};

use prior::Prior;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::t975;

/// One round of a contender: its log ratio against the baseline in that round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    /// The stretch of rounds with the same server lives (a new session or a restart begins
    /// the next one).
    pub segment: u32,
    /// The round number (the run's repetition).
    pub round: u32,
    /// ln(contender / baseline) of the headline figure.
    pub log_ratio: f64,
}

/// How a contest is measured and estimated, fixed before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rule {
    /// Leading rounds of every segment that do not count (the warm-up cut).
    pub discard: u32,
    /// Kept rounds of the pilot: the stopping rule sizes the contest from their spread, and
    /// the interval keeps their degrees of freedom.
    pub pilot: usize,
    /// The 95% half-width the contest should reach, on the ratio (0.05 for ±5%).
    pub target: Option<f64>,
    /// A kept series whose trend test gives a p-value below this is not steady (per
    /// contender; Bonferroni over the contenders of the contest).
    pub trend_alpha: f64,
    /// The level of the tests that move the warm-up cut on (higher than `trend_alpha`: a cut
    /// too many costs a round, one too few a biased estimate).
    pub cut_alpha: f64,
    /// Which interval a contest with a target ends with.
    pub interval: Final,
    /// The round-to-round correlation the interval and the trend tests assume: a workload's
    /// prior ([`prior::Prior::rho`], set by [`Rule::with_prior`]). None (what [`Rule::issue24`]
    /// gives) estimates it per contest from the kept rounds' own lag-1, as issue 24 shipped.
    #[serde(skip)]
    pub rho_prior: Option<f64>,
    /// The standard deviation of the offset between two server lives on the log ratio, whose
    /// variance every interval adds ([`with_life_offset`]): a workload's prior
    /// ([`prior::Prior::life_sd`], set by [`Rule::with_prior`]). None (the estimators before
    /// it) adds nothing.
    #[serde(skip)]
    pub life_sd: Option<f64>,
    /// The degrees of freedom of that offset's variance (it is estimated from a few dozen null
    /// changes, [`prior::Prior::life_df`]); None takes it as known.
    #[serde(skip)]
    pub life_df: Option<f64>,
    /// The steady check also fits a warm-up curve to the rounds from the fixed cut on
    /// ([`leftover_warm_up`]): evidence the adaptive cut did not choose.
    #[serde(skip)]
    pub warm_up_check: bool,
    /// When the warm-up curve of [`fit_warm_up`] is significant at this level, the estimate is
    /// the curve's level (its steady state) instead of the kept rounds' mean (one segment
    /// only): measured, not shipped (docs/benchmarks.md, "The gate with its calibration bound").
    #[serde(skip)]
    pub curve_alpha: Option<f64>,
    /// The warm-up cut also moves on while a warm-up curve with a time constant of at most this
    /// many rounds is left ([`leftover_warm_up`] at the cut's level): measured, not shipped.
    #[serde(skip)]
    pub cut_curve_max_tau: Option<f64>,
    /// A segment whose warm-up cut moved past its fixed rounds by at least this share of the
    /// segment's rounds is not steady: a warm-up that long is seldom over when the cut stops
    /// seeing it ([`Cut::long_warm_up`]). None: no such check (the estimators before it).
    #[serde(skip)]
    pub long_warm_up: Option<f64>,
}

/// The interval a contest sized by Stein's rule ends with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Final {
    /// Stein's: the pilot's spread and degrees of freedom over all kept rounds.
    Stein,
    /// Every kept round's own spread, corrected for correlation.
    Full,
    /// The wider of the two.
    Wider,
    /// The wider of Stein's and the batch-means interval of every kept round with this many
    /// batches ([`batch_interval`]).
    WiderBatch(u8),
}

impl Rule {
    /// The shipped rule (issue 37) for a measurement with `warm_up_rounds` cut per segment, at
    /// least `min_rounds` kept, and a target 95% half-width in percent (analysis's `rule_of` reads
    /// them from a result set's measurement section): the round-to-round correlation from
    /// `prior` ([`Rule::with_prior`] sets each contest's own), the
    /// corrected interval over every kept round (Stein's rule only sizes the contest), the
    /// warm-up check beside the trend test, and a cut that also moves on while a warm-up curve
    /// of time constant at most [`CUT_CURVE_MAX_TAU`] rounds is left (docs/benchmarks.md,
    /// "The estimator of issue 37").
    /// Every interval also allows for the offset between server lives ([`with_life_offset`],
    /// the prior's [`prior::Prior::life_sd`]).
    /// A segment whose cut moved past its fixed rounds by a sixth of its rounds or more is not
    /// steady ([`LONG_WARM_UP_SHARE`]).
    pub fn new(warm_up_rounds: u32, min_rounds: u32, target_halfwidth_pct: Option<f64>, prior: &Prior) -> Rule {
        Rule {
            long_warm_up: Some(LONG_WARM_UP_SHARE),
            ..Rule::life_offset(warm_up_rounds, min_rounds, target_halfwidth_pct, prior)
        }
    }

    /// The rule result sets recorded as `workload-prior-life-offset` were estimated by:
    /// [`Rule::new`] without the long warm-up check.
    pub fn life_offset(warm_up_rounds: u32, min_rounds: u32, target_halfwidth_pct: Option<f64>, prior: &Prior) -> Rule {
        Rule {
            life_sd: Some(prior.life_sd_unlimited),
            life_df: Some(prior.life_df()),
            ..Rule::workload_prior(warm_up_rounds, min_rounds, target_halfwidth_pct, prior)
        }
    }

    /// The rule issue 37 first shipped, which result sets recorded as `workload-prior` were
    /// estimated by: [`Rule::new`] without the offset between server lives.
    pub fn workload_prior(
        warm_up_rounds: u32,
        min_rounds: u32,
        target_halfwidth_pct: Option<f64>,
        prior: &Prior,
    ) -> Rule {
        Rule {
            rho_prior: Some(prior.rho),
            interval: Final::Full,
            warm_up_check: true,
            cut_curve_max_tau: Some(CUT_CURVE_MAX_TAU),
            ..Rule::issue24(warm_up_rounds, min_rounds, target_halfwidth_pct)
        }
    }

    /// The rule issue 24 shipped, which result sets without an `estimator` in their
    /// measurement section were estimated by: the correlation estimated per contest from the
    /// kept rounds' own lag-1 (bias-corrected, raised to an 80% upper bound, at most 0.9), the
    /// wider of Stein's and the corrected interval, and the trend test as the only steady check.
    pub fn issue24(warm_up_rounds: u32, min_rounds: u32, target_halfwidth_pct: Option<f64>) -> Rule {
        Rule {
            discard: warm_up_rounds,
            pilot: (min_rounds as usize).max(MIN_PILOT),
            target: target_halfwidth_pct.map(|t| t / 100.0),
            trend_alpha: TREND_ALPHA,
            cut_alpha: CUT_ALPHA,
            interval: Final::Wider,
            rho_prior: None,
            life_sd: None,
            life_df: None,
            warm_up_check: false,
            curve_alpha: None,
            cut_curve_max_tau: None,
            long_warm_up: None,
        }
    }

    /// The rule for a contest whose prior is `p`: a rule that takes its correlation from a prior
    /// takes `p`'s; a rule that estimates it per contest is unchanged. Likewise the offset
    /// between server lives, the one for servers whose memory is `memory_limited` or not.
    pub fn with_prior(self, p: &Prior, memory_limited: bool) -> Rule {
        Rule {
            rho_prior: self.rho_prior.map(|_| p.rho),
            life_sd: self.life_sd.map(|_| p.life_sd(memory_limited)),
            life_df: self.life_df.map(|_| p.life_df()),
            ..self
        }
    }
}

/// The longest time constant (in rounds) of a warm-up curve the shipped cut moves on past:
/// 4 held the stationary kinds of the coverage gate at 94.6-96.2% (3: the warm-up transient at
/// 93.0%; 6: more stationary contests called not steady).
pub const CUT_CURVE_MAX_TAU: f64 = 4.0;

/// The share of a segment's rounds that its warm-up cut may move past the fixed cut before the
/// contest is not steady: a sixth (3 rounds of a contest of 13-18, 4 of 19-24) brings a slow
/// warm-up of x1.65 over 10 rounds to 94.9% covered or not steady, for 11-17% of stationary
/// contests called not steady (a quarter: 94.1% and 9-15%; docs/benchmarks.md, "No revisits,
/// and a long warm-up is not steady").
pub const LONG_WARM_UP_SHARE: f64 = 1.0 / 6.0;

/// The smallest pilot the interval is built from (4 kept rounds: 3 degrees of freedom).
pub const MIN_PILOT: usize = 4;
/// The default level of the steady-state check.
pub const TREND_ALPHA: f64 = 0.05;
/// The default level of the warm-up cut's tests.
pub const CUT_ALPHA: f64 = 0.2;
/// The one-sided normal quantile of the upper confidence bound on the lag-1 autocorrelation
/// that the interval's correction uses (80%).
const RHO_UPPER_Z: f64 = 0.84;
/// Largest lag-1 autocorrelation the variance correction uses.
const MAX_RHO: f64 = 0.9;
/// The fewest degrees of freedom the correlation-corrected interval uses.
const MIN_CORRECTED_DF: f64 = 3.0;

/// Which rounds of a contest count: the first kept round of every segment, and the segments
/// whose rounds still trended after the largest cut allowed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cut {
    pub first_kept: BTreeMap<u32, u32>,
    /// Rounds of each segment (over the whole contest) left out.
    pub dropped: BTreeMap<u32, u32>,
    pub unsettled: Vec<u32>,
    /// Segments whose cut moved past the fixed rounds by [`Rule::long_warm_up`]'s share of
    /// their rounds or more (unsettled ones not repeated).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub long_warm_up: Vec<u32>,
}

impl Cut {
    /// Whether a round counts in the estimate.
    pub fn keeps(&self, r: &Round) -> bool {
        self.first_kept.get(&r.segment).is_some_and(|&first| r.round >= first)
    }

    /// Rounds left out over all segments.
    pub fn rounds_dropped(&self) -> u32 {
        self.dropped.values().sum()
    }
}

/// The warm-up cut of a contest, by round and alike for every contender: in each segment the
/// first `rule.discard` rounds (counted from the segment's first round in the whole contest,
/// so a failed slice shifts nothing), then one round more while any contender's remaining
/// rounds of the segment still trend (the trend test at `rule.trend_alpha`, Bonferroni over the
/// contenders), while 4 rounds of it remain. A stationary segment keeps the fixed cut unless the
/// test errs (`trend_alpha` of the time); a segment still trending with 4 rounds left is
/// unsettled and its contest is not steady.
pub fn warm_up_cut(rule: &Rule, contenders: &[Vec<Round>]) -> Cut {
    let mut segments: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    for r in contenders.iter().flatten() {
        let e = segments.entry(r.segment).or_insert((r.round, r.round));
        e.0 = e.0.min(r.round);
        e.1 = e.1.max(r.round);
    }
    let alpha = rule.cut_alpha / contenders.len().max(1) as f64;
    let mut cut = Cut::default();
    for (&seg, &(first, last)) in &segments {
        // At least 4 rounds of the segment stay (what the slope test needs).
        let limit = last.saturating_sub(3).max(first);
        let mut start = first + rule.discard;
        loop {
            let trending = contenders.iter().any(|rounds| {
                let kept: Vec<&Round> = rounds.iter().filter(|r| r.segment == seg && r.round >= start).collect();
                let x: Vec<f64> = kept.iter().map(|r| r.log_ratio).collect();
                let t: Vec<u32> = kept.iter().map(|r| r.round).collect();
                let left = rule.cut_curve_max_tau.is_some_and(|max_tau| {
                    let at = Cut {
                        first_kept: BTreeMap::from([(seg, start)]),
                        dropped: BTreeMap::from([(seg, start - first)]),
                        ..Cut::default()
                    };
                    fit_warm_up(rule, rounds, &at, seg, max_tau).is_some_and(|f| f.is_left(alpha))
                });
                left || still_moving(&x, &t, &vec![seg; x.len()], alpha, rule.rho_prior)
            });
            if !trending {
                break;
            }
            if start >= limit.max(first + rule.discard) {
                cut.unsettled.push(seg);
                break;
            }
            start += 1;
        }
        let moved = start.saturating_sub(first + rule.discard);
        let rounds = last - first + 1;
        if !cut.unsettled.contains(&seg)
            && rule.long_warm_up.is_some_and(|share| moved > 0 && moved as f64 >= share * rounds as f64)
        {
            cut.long_warm_up.push(seg);
        }
        cut.first_kept.insert(seg, start);
        cut.dropped.insert(seg, (start - first).min(last - first + 1));
    }
    cut
}

/// What a contender's kept rounds say.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Assessment {
    /// Rounds that count, and rounds left out by the warm-up cut.
    pub kept: usize,
    pub cut: usize,
    pub interval: Option<LogInterval>,
    pub trend: Option<Trend>,
    /// The trend test passed (or too few rounds to test), and no warm-up is left.
    pub steady: bool,
    /// With the rule's warm-up check: the bias a warm-up still under way puts on the kept mean
    /// log ratio ([`leftover_warm_up_bias`]); None when none is left.
    pub warm_up_bias: Option<f64>,
}

impl Assessment {
    /// The drift seen in the kept rounds, on the log scale: the trend's fitted change over
    /// them plus the bias a leftover warm-up puts on their mean (each 0 where none was fitted).
    /// A not-steady contender's change still stands when its interval lies beyond
    /// [`DRIFT_ALLOWANCE`] times this on the far side of 0 ([`stands_despite_drift`]).
    pub fn drift(&self) -> f64 {
        let trend = self.trend.map_or(0.0, |t| (1.0 + t.change_over_span).ln().abs());
        let trend = if trend.is_finite() { trend } else { 0.0 };
        trend + self.warm_up_bias.map_or(0.0, f64::abs)
    }
}

/// How many times its own drift ([`Assessment::drift`]) the interval of a contender that is not
/// steady is widened by on each side before its change may still be called: the kept mean's
/// bias is at most the drift's point estimate when the steady state lies within the kept
/// rounds' range, and twice allows for the drift's own error (simulated: docs/benchmarks.md,
/// "A change beyond its contest's drift").
pub const DRIFT_ALLOWANCE: f64 = 2.0;

/// Whether an interval on a log ratio (`low`, `high`) excludes 0 even when widened by
/// [`DRIFT_ALLOWANCE`] times `drift` on each side.
pub fn stands_despite_drift(low: f64, high: f64, drift: f64) -> bool {
    let allowance = DRIFT_ALLOWANCE * drift;
    drift.is_finite() && (low - allowance > 0.0 || high + allowance < 0.0)
}

/// The kept rounds of one contender (by the contest's [`Cut`]), their interval and the
/// steady-state check: the trend test over everything kept (Bonferroni over the `contenders`),
/// and no unsettled segment.
pub fn assess(rule: &Rule, rounds: &[Round], cut: &Cut, contenders: usize) -> Assessment {
    let kept_rounds: Vec<&Round> = rounds.iter().filter(|r| cut.keeps(r)).collect();
    let x: Vec<f64> = kept_rounds.iter().map(|r| r.log_ratio).collect();
    let seg: Vec<u32> = kept_rounds.iter().map(|r| r.segment).collect();
    let num: Vec<u32> = kept_rounds.iter().map(|r| r.round).collect();
    let interval = corrected_interval(rule, &x, &seg);
    let trend = trend(&x, &num, &seg, rule.rho_prior);
    let alpha = rule.trend_alpha / contenders.max(1) as f64;
    let warm_up_bias = rule.warm_up_check.then(|| leftover_warm_up_bias(rule, rounds, cut, alpha)).flatten();
    let steady = cut.unsettled.is_empty()
        && cut.long_warm_up.is_empty()
        && trend.is_none_or(|t| t.p_value.is_nan() || t.p_value >= alpha)
        && warm_up_bias.is_none();
    Assessment { kept: x.len(), cut: rounds.len() - x.len(), interval, trend, steady, warm_up_bias }
}

/// The interval of a kept series as the report gives it: with a target and a complete pilot,
/// the wider of Stein's (the pilot's plain spread and degrees of freedom over every kept round)
/// and the correlation-corrected one of every kept round ([`Final`] chooses); else the
/// corrected one. The coverage test runs exactly this.
pub fn estimate(rule: &Rule, x: &[f64], segments: &[u32]) -> Option<LogInterval> {
    let all = match rule.interval {
        Final::WiderBatch(b) => with_rule_offset(rule, batch_interval(x, segments, b as usize)?, segments),
        _ => corrected_interval(rule, x, segments)?,
    };
    let pilot = (rule.target.is_some() && x.len() >= rule.pilot).then(|| plain_interval(&x[..rule.pilot])).flatten();
    let Some(p) = pilot else { return Some(all) };
    // Stein's interval from the rounds' own spread, the offset between lives added as to every
    // other (its `all` already carries it, which Stein's spread replaces).
    let stein = with_rule_offset(rule, stein_interval(&p, &all), segments);
    Some(match rule.interval {
        Final::Stein => stein,
        Final::Full => all,
        Final::Wider | Final::WiderBatch(_) if stein.half_width() > all.half_width() => stein,
        Final::Wider | Final::WiderBatch(_) => all,
    })
}

/// The kept rounds a contender needs under Stein's rule (None before its pilot is complete or
/// without a target).
pub fn needed(rule: &Rule, x: &[f64]) -> Option<usize> {
    if rule.target.is_none() || x.len() < rule.pilot {
        return None;
    }
    rounds_needed(rule, &plain_interval(&x[..rule.pilot])?)
}

/// Stein's two-stage rule: the kept rounds the contest needs for the target, from the pilot's
/// (the first `rule.pilot` kept rounds') corrected spread and degrees of freedom; None before
/// the pilot is complete or without a target.
pub fn rounds_needed(rule: &Rule, pilot: &LogInterval) -> Option<usize> {
    let target = rule.target?;
    if pilot.n < rule.pilot {
        return None;
    }
    let h = (1.0 + target).ln();
    // The long-run spread of one round: se * sqrt(n).
    let sd = pilot.se * (pilot.n as f64).sqrt();
    let n = (t975(pilot.df.max(1.0)) * sd / h).powi(2).ceil() as usize;
    Some(n.max(pilot.n))
}

/// The final interval under Stein's rule: the mean of every kept round, the pilot's spread and
/// degrees of freedom (so the coverage does not depend on where the rounds stopped).
pub fn stein_interval(pilot: &LogInterval, all: &LogInterval) -> LogInterval {
    let sd = pilot.se * (pilot.n as f64).sqrt();
    LogInterval { se: sd / (all.n as f64).sqrt(), df: pilot.df, ..*all }
}

/// Where a contest stands after its latest round.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Kept rounds (the fewest any contender has).
    pub kept: usize,
    /// Kept rounds the stopping rule asks for (None before the pilot is complete, or without a
    /// target).
    pub needed: Option<usize>,
    /// Each contender's interval as the report will give it (None without two kept rounds).
    pub intervals: Vec<Option<LogInterval>>,
    /// Whether each contender's kept rounds passed the steady-state check.
    pub steady: Vec<bool>,
    /// Each contender's drift over its kept rounds ([`Assessment::drift`]).
    pub drift: Vec<f64>,
    /// The rounds each contender kept.
    pub kept_rounds: Vec<Vec<u32>>,
}

impl Progress {
    /// The widest half-width, on the ratio (fraction), once every contender has an interval.
    pub fn widest(&self) -> Option<f64> {
        self.intervals.iter().map(|i| i.map(|i| i.half_width().exp() - 1.0)).try_fold(0.0f64, |w, h| Some(w.max(h?)))
    }

    /// The stopping rule is satisfied: every contender's pilot is complete, the kept rounds
    /// reach what the pilots asked for, and (the correction for correlated rounds can widen
    /// an interval beyond Stein's) the widest interval is within `target`.
    pub fn done(&self, target: f64) -> bool {
        self.needed.is_some_and(|n| self.kept >= n) && self.widest().is_some_and(|w| w <= target)
    }
}

/// The shipped estimator over a contest's rounds: each contender's rounds, in round order.
pub fn progress(rule: &Rule, contenders: &[Vec<Round>]) -> Progress {
    let cut = warm_up_cut(rule, contenders);
    progress_with(rule, contenders, &cut)
}

/// As [`progress`], with the contest's cut given.
pub fn progress_with(rule: &Rule, contenders: &[Vec<Round>], cut: &Cut) -> Progress {
    let k = contenders.len();
    let mut out =
        Progress { kept: 0, needed: None, intervals: vec![], steady: vec![], drift: vec![], kept_rounds: vec![] };
    let mut needed: Option<usize> = rule.target.map(|_| 0);
    let mut fewest = usize::MAX;
    for rounds in contenders {
        let a = assess(rule, rounds, cut, k);
        let kept: Vec<&Round> = rounds.iter().filter(|r| cut.keeps(r)).collect();
        let x: Vec<f64> = kept.iter().map(|r| r.log_ratio).collect();
        let seg: Vec<u32> = kept.iter().map(|r| r.segment).collect();
        needed = match (needed, self::needed(rule, &x)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        let interval = curve_interval(rule, rounds, cut, k)
            .map(|i| with_rule_offset(rule, i, &seg))
            .or_else(|| estimate(rule, &x, &seg));
        fewest = fewest.min(a.kept);
        out.intervals.push(interval);
        out.steady.push(a.steady);
        out.drift.push(a.drift());
        out.kept_rounds.push(kept.iter().map(|r| r.round).collect());
    }
    out.kept = if k == 0 { 0 } else { fewest };
    out.needed = needed.filter(|_| k > 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn independent_rounds_give_the_paired_t_interval() {
        // Rounds that alternate (lag-1 -0.83): no correction, the paired t interval exactly
        // (mean 0.035, sd 0.025 sqrt(6/5) = 0.0273861, t(0.975, 5) = 2.570582).
        let x = [0.01, 0.06, 0.01, 0.06, 0.01, 0.06];
        let i = log_interval(&x, &[1; 6]).unwrap();
        assert_eq!(i.rho, 0.0);
        assert!(close(i.mean, 0.035, 1e-12) && close(i.df, 5.0, 1e-12));
        assert!(close(i.half_width(), 2.570582 * 0.0273861 / 6f64.sqrt(), 1e-6), "{i:?}");
        // Five rounds without a pattern (lag-1 -0.22): the upper bound on rho widens a little.
        let y = log_interval(&[0.04, 0.055, 0.03, 0.01, 0.0525], &[1; 5]).unwrap();
        assert!(y.rho > 0.0 && y.se > y.sd / 5f64.sqrt(), "{y:?}");
    }

    #[test]
    fn every_interval_a_contest_can_end_with_carries_the_offset_between_lives() {
        // 12 rounds of one life, an offset sd of 5% on the ratio: whatever interval the rule
        // ends with (Stein's, the batch-means', the wider of either and the corrected one), its
        // standard error is at least the offset's (issue 48, item 7).
        let x: Vec<f64> = (0..12).map(|t| 0.02 + 0.01 * ((t * 7 % 5) as f64 - 2.0)).collect();
        let prior = prior::Prior {
            rho: 0.1,
            series: 10,
            life_sd_unlimited: 0.05,
            life_sd_limited: 0.05,
            null_changes: 20,
            life_df: 10.0,
        };
        for interval in [Final::Stein, Final::Full, Final::Wider, Final::WiderBatch(4)] {
            let rule = Rule { interval, ..Rule::new(0, 6, Some(5.0), &prior) };
            let i = estimate(&rule, &x, &[1; 12]).unwrap();
            assert!(i.se >= 0.05, "{interval:?}: {i:?}");
        }
    }

    #[test]
    fn correlated_rounds_widen_the_interval() {
        // A slow wave: strong positive lag-1 correlation.
        let x: Vec<f64> = (0..16).map(|t| 0.05 + 0.03 * (t as f64 / 3.0).sin()).collect();
        let i = log_interval(&x, &[1; 16]).unwrap();
        assert!(i.lag1 > 0.6 && i.rho > i.lag1, "{i:?}");
        let plain = i.sd / 4.0;
        assert!(i.se > 2.0 * plain && i.df < 8.0, "{i:?}");
        // Across a segment boundary no pair is formed.
        assert!(lag1(&[1.0, 2.0, 1.0, 2.0], &[1, 2, 3, 4]) == 0.0);
    }

    #[test]
    fn batch_means_take_their_spread_from_the_batches() {
        // Batches (1, 2), (3, 4), (5, 6), (7, 8): means 1.5, 3.5, 5.5, 7.5, sd sqrt(20 / 3).
        let x: Vec<f64> = (1..=8).map(f64::from).collect();
        let i = batch_interval(&x, &[1; 8], 4).unwrap();
        assert!(close(i.mean, 4.5, 1e-12) && i.df == 3.0, "{i:?}");
        assert!(close(i.se, (20.0f64 / 3.0).sqrt() / 2.0, 1e-12), "{i:?}");
        // Five rounds allow two batches of at least two rounds: (1, 2) and (3, 4, 5).
        let i = batch_interval(&x[..5], &[1; 5], 4).unwrap();
        assert!(i.df == 1.0 && close(i.se, (4.0 - 1.5) / 2f64.sqrt() / 2f64.sqrt(), 1e-12), "{i:?}");
        assert!(batch_interval(&x[..3], &[1; 3], 4).is_none());
    }

    #[test]
    fn the_ar1_factor_against_its_closed_form() {
        // n = 4, rho = 0.5: 1 + 2 (3/4 0.5 + 2/4 0.25 + 1/4 0.125) = 2.0625.
        assert!(close(ar1_factor(4, 0.5), 2.0625, 1e-12));
        assert_eq!(ar1_factor(10, 0.0), 1.0);
    }

    #[test]
    fn the_warm_up_cut_falls_by_round_within_each_segment() {
        let r = |segment, round, log_ratio| Round { segment, round, log_ratio };
        let rule = Rule {
            discard: 2,
            pilot: 4,
            target: None,
            trend_alpha: 0.05,
            cut_alpha: 0.2,
            interval: Final::Wider,
            rho_prior: None,
            life_sd: None,
            life_df: None,
            warm_up_check: false,
            curve_alpha: None,
            cut_curve_max_tau: None,
            long_warm_up: None,
        };
        // Flat rounds; segment 1 from round 1 (the first contender's round 2 failed), segment 2
        // from round 9.
        let flat = |t: u32| 0.02 * ((t * 7919 % 13) as f64 / 6.0 - 1.0);
        let a: Vec<Round> =
            [1, 3, 4, 5, 6, 7, 8].iter().map(|&t| r(1, t, flat(t))).chain((9..=16).map(|t| r(2, t, flat(t)))).collect();
        let b: Vec<Round> = (1..=8).map(|t| r(1, t, flat(t))).chain((9..=16).map(|t| r(2, t, flat(t)))).collect();
        let cut = warm_up_cut(&rule, &[a.clone(), b]);
        assert_eq!(cut.first_kept, BTreeMap::from([(1, 3), (2, 11)]));
        assert!(cut.unsettled.is_empty());
        let kept: Vec<u32> = a.iter().filter(|x| cut.keeps(x)).map(|x| x.round).collect();
        assert_eq!(kept, [3, 4, 5, 6, 7, 8, 11, 12, 13, 14, 15, 16]);
        // A segment that starts high and decays, with noise: cut further, while it still trends.
        // (A smooth curve without noise looks like correlated rounds and is not cut: its lag-1
        // correction swallows the trend; the coverage test runs noisy transients.)
        let decaying: Vec<Round> = (1..=16).map(|t| r(1, t, 0.6 * (-(t as f64) / 3.0).exp() + 2.5 * flat(t))).collect();
        let cut = warm_up_cut(&rule, std::slice::from_ref(&decaying));
        assert!(cut.first_kept[&1] > 3 && cut.unsettled.is_empty(), "{cut:?}");
        // With the long warm-up check, a cut past the fixed rounds by a sixth of the segment's
        // 16 rounds (3) or more makes the contest not steady; flat rounds are not cut further.
        assert_eq!(cut.first_kept[&1], 7, "4 rounds past the fixed cut");
        let long = Rule { long_warm_up: Some(LONG_WARM_UP_SHARE), ..rule };
        let with_check = warm_up_cut(&long, std::slice::from_ref(&decaying));
        assert_eq!(with_check.first_kept, cut.first_kept, "the check does not move the cut");
        assert_eq!(with_check.long_warm_up, [1]);
        assert!(assess(&rule, &decaying, &cut, 1).steady && !assess(&long, &decaying, &with_check, 1).steady);
        let flat16: Vec<Round> = (1..=16).map(|t| r(1, t, flat(t))).collect();
        assert!(warm_up_cut(&long, &[flat16]).long_warm_up.is_empty());
        // One that rises throughout never settles.
        let rising: Vec<Round> = (1..=16).map(|t| r(1, t, 0.05 * t as f64 + flat(t))).collect();
        let cut = warm_up_cut(&rule, std::slice::from_ref(&rising));
        assert_eq!((cut.first_kept[&1], cut.unsettled.clone()), (13, vec![1]), "4 rounds left");
        assert!(!assess(&rule, &rising, &cut, 1).steady);
    }

    #[test]
    fn a_change_stands_only_beyond_twice_its_drift() {
        // A contender whose ratio falls 10% over its kept rounds (trend only): drift ln(1/0.9).
        let a = Assessment {
            kept: 8,
            cut: 2,
            interval: None,
            trend: Some(Trend { slope: -0.015, change_over_span: -0.1, p_value: 0.001 }),
            steady: false,
            warm_up_bias: Some(-0.02),
        };
        let drift = a.drift();
        assert!(close(drift, (1.0f64 / 0.9).ln() + 0.02, 1e-12), "{drift}");
        // 2 x 0.1254 = 0.2507 on the log scale: an interval from +30% (0.262) stands, one from
        // +25% (0.223) does not; alike below 0.
        assert!(stands_despite_drift(1.30f64.ln(), 1.6f64.ln(), drift));
        assert!(!stands_despite_drift(1.25f64.ln(), 1.6f64.ln(), drift));
        assert!(stands_despite_drift(0.5f64.ln(), 0.77f64.ln(), drift));
        assert!(!stands_despite_drift(0.5f64.ln(), 0.8f64.ln(), drift));
        assert!(!stands_despite_drift(0.5f64.ln(), 0.77f64.ln(), f64::NAN), "an unknown drift never stands");
        let flat = Assessment { trend: None, warm_up_bias: None, ..a };
        assert_eq!(flat.drift(), 0.0);
    }

    #[test]
    fn a_trend_is_found_and_a_flat_series_is_steady() {
        let rounds: Vec<u32> = (1..=20).collect();
        let seg = vec![1; 20];
        let noise = |t: u32| 0.01 * ((t * 7919 % 13) as f64 / 6.0 - 1.0);
        let rising: Vec<f64> = rounds.iter().map(|&t| 0.01 * t as f64 + noise(t)).collect();
        let tr = trend(&rising, &rounds, &seg, None).unwrap();
        assert!(tr.p_value < 0.001 && close(tr.slope, 0.01, 0.002), "{tr:?}");
        assert!(close(tr.change_over_span, (0.19f64).exp() - 1.0, 0.05));
        let flat: Vec<f64> = rounds.iter().map(|&t| 0.05 + noise(t)).collect();
        assert!(trend(&flat, &rounds, &seg, None).unwrap().p_value > 0.05);
    }

    #[test]
    fn stein_sizes_the_contest_from_the_pilot() {
        // Pilot of 6 with sd 0.10, no correlation: n = (t(0.975, 5) 0.10 / ln 1.05)^2 =
        // (2.570582 * 0.10 / 0.048790)^2 = 27.76 -> 28.
        let pilot = LogInterval { n: 6, mean: 0.0, se: 0.10 / 6f64.sqrt(), df: 5.0, lag1: 0.0, rho: 0.0, sd: 0.10 };
        let rule = Rule {
            discard: 0,
            pilot: 6,
            target: Some(0.05),
            trend_alpha: 0.05,
            cut_alpha: 0.2,
            interval: Final::Stein,
            rho_prior: None,
            life_sd: None,
            life_df: None,
            warm_up_check: false,
            curve_alpha: None,
            cut_curve_max_tau: None,
            long_warm_up: None,
        };
        assert_eq!(rounds_needed(&rule, &pilot), Some(28));
        let small = LogInterval { se: 0.01 / 6f64.sqrt(), sd: 0.01, ..pilot };
        assert_eq!(rounds_needed(&rule, &small), Some(6), "never fewer than the pilot");
        assert_eq!(rounds_needed(&Rule { target: None, ..rule }, &pilot), None);
        let all = LogInterval { n: 28, mean: 0.03, se: 0.001, df: 27.0, ..pilot };
        let s = stein_interval(&pilot, &all);
        assert!(close(s.half_width(), 2.570582 * 0.10 / 28f64.sqrt(), 1e-5) && s.df == 5.0 && s.mean == 0.03);
    }
}
