//! The interval on a contest's mean log ratio: plain, corrected for correlated rounds (the
//! series' own lag-1 or a workload's prior), batch means, and the offset between server lives
//! added ([`with_life_offset`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{MAX_RHO, MIN_CORRECTED_DF, RHO_UPPER_Z, Rule, prior};
use crate::{mean_sd, t_p_value, t975};

/// An interval on a kept series' mean log ratio.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LogInterval {
    pub n: usize,
    pub mean: f64,
    /// Standard error of the mean, corrected for lag-1 autocorrelation.
    pub se: f64,
    /// Degrees of freedom of the t quantile.
    pub df: f64,
    /// The lag-1 autocorrelation of the rounds as measured (within segments).
    pub lag1: f64,
    /// The bias-corrected value the variance correction used (0 when negative).
    pub rho: f64,
    /// Standard deviation of one round's log ratio.
    pub sd: f64,
}

impl LogInterval {
    pub fn half_width(&self) -> f64 {
        t975(self.df.max(1.0)) * self.se
    }

    pub fn p_value(&self) -> f64 {
        if self.se > 0.0 {
            t_p_value(self.mean / self.se, self.df)
        } else if self.mean == 0.0 {
            1.0
        } else {
            0.0
        }
    }
}

/// Lag-1 autocorrelation of `x` about its mean, pairs only within a segment; NaN for fewer
/// than 3 values.
pub fn lag1(x: &[f64], segments: &[u32]) -> f64 {
    if x.len() < 3 {
        return f64::NAN;
    }
    let (m, _) = mean_sd(x);
    let den: f64 = x.iter().map(|v| (v - m).powi(2)).sum();
    if den == 0.0 {
        return 0.0;
    }
    let num: f64 = (1..x.len()).filter(|&t| segments[t] == segments[t - 1]).map(|t| (x[t] - m) * (x[t - 1] - m)).sum();
    num / den
}

/// The variance factor of a mean of `n` AR(1) values with lag-1 correlation `rho`:
/// 1 + 2 sum_k (1 - k/n) rho^k.
pub(super) fn ar1_factor(n: usize, rho: f64) -> f64 {
    let mut f = 1.0;
    let mut p = 1.0;
    for k in 1..n {
        p *= rho;
        f += 2.0 * (1.0 - k as f64 / n as f64) * p;
    }
    f
}

/// The plain paired t interval (independent rounds assumed): what Stein's pilot sizes from.
pub fn plain_interval(x: &[f64]) -> Option<LogInterval> {
    let n = x.len();
    if n < 2 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let (mean, sd) = mean_sd(x);
    Some(LogInterval { n, mean, se: sd / (n as f64).sqrt(), df: (n - 1) as f64, lag1: f64::NAN, rho: 0.0, sd })
}

/// The interval on the mean of a kept series that allows for lag-1 correlated rounds: the
/// autocorrelation is estimated within segments, corrected for its small-sample bias
/// (Marriott and Pope 1954: E[r] = rho - (1 + 3 rho) / n), raised to an 80% upper confidence
/// bound (+0.84 / sqrt(n)) and clamped to [0, 0.9]; the variance of
/// the mean is s^2 f (n - 1) / (n (n - f)) with f the AR(1) factor (unbiased for AR(1) rounds,
/// s^2 / n for independent ones), and the degrees of freedom shrink to n / f - 1, but not below
/// [`MIN_CORRECTED_DF`] (or n - 1 when fewer): the variance already carries the upper bound on rho,
/// and one degree of freedom on top (t = 12.7) gave a tail of intervals 10x too wide at the
/// main job's 12-18 rounds, without buying coverage (docs/benchmarks.md, "Coverage").
pub fn log_interval(x: &[f64], segments: &[u32]) -> Option<LogInterval> {
    let n = x.len();
    if n < 2 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let r = lag1(x, segments);
    // An 80% upper confidence bound (z = 0.84, se about 1 / sqrt(n)): the point estimate alone
    // left AR(1) rounds with rho 0.3 at 92% coverage when the target stops the contest early.
    let rho = if r.is_finite() {
        (prior::corrected(r, n) + RHO_UPPER_Z / (n as f64).sqrt()).clamp(0.0, MAX_RHO)
    } else {
        0.0
    };
    ar1_interval(x, rho, r)
}

/// The interval on the mean of a kept series whose rounds have the lag-1 correlation `rho`
/// (a workload's prior, [`prior`]): the variance and degrees of freedom as in
/// [`log_interval`], with `rho` given instead of estimated from the series.
pub fn prior_interval(x: &[f64], segments: &[u32], rho: f64) -> Option<LogInterval> {
    if x.len() < 2 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    ar1_interval(x, rho.clamp(0.0, MAX_RHO), lag1(x, segments))
}

/// The interval of a kept series under the rule's correlation: the prior's when it has one,
/// else the series' own ([`log_interval`]).
/// With the rule's offset between server lives added ([`with_life_offset`]).
pub fn corrected_interval(rule: &Rule, x: &[f64], segments: &[u32]) -> Option<LogInterval> {
    let i = match rule.rho_prior {
        Some(rho) => prior_interval(x, segments, rho),
        None => log_interval(x, segments),
    }?;
    Some(with_rule_offset(rule, i, segments))
}

/// `i` with the rule's offset between server lives added, if it has one: every interval a
/// contest can end with goes through here ([`corrected_interval`], the batch-means, Stein's
/// and the warm-up curve's).
pub fn with_rule_offset(rule: &Rule, i: LogInterval, segments: &[u32]) -> LogInterval {
    match rule.life_sd {
        Some(sd) => with_life_offset(i, sd, rule.life_df, segments),
        None => i,
    }
}

/// An interval on a mean log ratio that also allows for the offset between the two servers'
/// lives: each segment (a set of server lives) shifts the ratio by an unknown offset with
/// standard deviation `life_sd`, the same in every round of the segment, so the rounds'
/// spread does not show it and more rounds do not shrink it. The mean of rounds from segments
/// of n_s rounds carries life_sd^2 * sum (n_s / n)^2 of it (all of it for one segment). The
/// variance is added to the rounds' own; the degrees of freedom follow Welch-Satterthwaite,
/// with `life_df` for the offset's variance (None: taken as known).
pub fn with_life_offset(i: LogInterval, life_sd: f64, life_df: Option<f64>, segments: &[u32]) -> LogInterval {
    if life_sd.is_nan() || life_sd <= 0.0 || segments.is_empty() {
        return i;
    }
    let mut per_segment: BTreeMap<u32, usize> = BTreeMap::new();
    for s in segments {
        *per_segment.entry(*s).or_default() += 1;
    }
    let n = segments.len() as f64;
    let share: f64 = per_segment.values().map(|&k| (k as f64 / n).powi(2)).sum();
    let offset_var = life_sd * life_sd * share;
    let own_var = i.se * i.se;
    let var = own_var + offset_var;
    // Welch-Satterthwaite: var^2 / (own^2 / df + offset^2 / life_df).
    let own_part = if own_var > 0.0 { own_var * own_var / i.df.max(1.0) } else { 0.0 };
    let offset_part = life_df.map_or(0.0, |d| offset_var * offset_var / d.max(1.0));
    let df = if own_part + offset_part > 0.0 { var * var / (own_part + offset_part) } else { MAX_LIFE_DF };
    LogInterval { se: var.sqrt(), df: df.min(MAX_LIFE_DF), ..i }
}

/// The most degrees of freedom an interval with the offset between server lives gets (its
/// variance taken as known and dominating): a normal quantile, near enough.
pub(super) const MAX_LIFE_DF: f64 = 1000.0;

pub(super) fn ar1_interval(x: &[f64], rho: f64, lag1: f64) -> Option<LogInterval> {
    let n = x.len();
    let (mean, sd) = mean_sd(x);
    let f = ar1_factor(n, rho).min(n as f64 - 1.0);
    let var = sd * sd * f * (n as f64 - 1.0) / (n as f64 * (n as f64 - f));
    let df = (n as f64 / f - 1.0).max(MIN_CORRECTED_DF.min(n as f64 - 1.0)).max(1.0);
    Some(LogInterval { n, mean, se: var.sqrt(), df, lag1, rho, sd })
}

/// The batch-means interval on the mean of a kept series: the rounds, in order, split into
/// `batches` consecutive batches of (nearly) equal size, the standard error from the spread of
/// the batch means, `batches - 1` degrees of freedom. Correlation between neighbouring rounds
/// stays mostly inside a batch, so the spread of the batch means carries it without estimating
/// it. Fewer batches when the series is short (at least 2 rounds per batch, at least 2 batches);
/// None below 4 rounds.
pub fn batch_interval(x: &[f64], segments: &[u32], batches: usize) -> Option<LogInterval> {
    let n = x.len();
    let b = batches.min(n / 2);
    if b < 2 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let means: Vec<f64> = (0..b)
        .map(|i| {
            let part = &x[i * n / b..(i + 1) * n / b];
            part.iter().sum::<f64>() / part.len() as f64
        })
        .collect();
    let (mean, sd) = mean_sd(x);
    let (_, batch_sd) = mean_sd(&means);
    Some(LogInterval {
        n,
        mean,
        se: batch_sd / (b as f64).sqrt(),
        df: (b - 1) as f64,
        lag1: lag1(x, segments),
        rho: 0.0,
        sd,
    })
}
