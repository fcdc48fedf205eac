//! What is left of a warm-up: a level plus an exponential approach fitted to a segment's rounds
//! from the fixed cut on, on evidence the adaptive cut did not choose. The steady check asks
//! whether it still biases the kept rounds ([`leftover_warm_up`]); the shipped cut moves on
//! while a short one is left ([`super::warm_up_cut`]).

use super::{Cut, LogInterval, MAX_RHO, Round, Rule, ar1_factor};
use crate::{mean_sd, t_p_value};

/// The share of the kept mean's standard error a fitted leftover warm-up must exceed.
const WARM_UP_BIAS_SE: f64 = 0.25;

/// The time constants (in rounds) of the warm-up curves [`leftover_warm_up`] fits.
const WARM_UP_TAUS: [f64; 11] = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0];

/// Whether what is left of a warm-up biases the kept rounds of a contender, on evidence the
/// adaptive cut did not choose: in each segment, the rounds from the fixed cut
/// (`rule.discard`) on are fitted with a level plus an exponential approach, x = mu + a
/// e^(-t / tau) (tau the best of [`WARM_UP_TAUS`] by least squares); the warm-up is left when
/// `a` is significant at `alpha` (its variance inflated for the rule's correlation) and its
/// fitted mean over the kept rounds exceeds [`WARM_UP_BIAS_SE`] of the kept mean's standard
/// error. A warm-up the
/// cut removed leaves a significant `a` but no bias in the kept rounds.
pub fn leftover_warm_up(rule: &Rule, rounds: &[Round], cut: &Cut, alpha: f64) -> bool {
    leftover_warm_up_bias(rule, rounds, cut, alpha).is_some()
}

/// The bias a leftover warm-up ([`leftover_warm_up`]) puts on the kept rounds' mean log ratio
/// (the largest of the segments'), None when no warm-up is left.
pub fn leftover_warm_up_bias(rule: &Rule, rounds: &[Round], cut: &Cut, alpha: f64) -> Option<f64> {
    cut.first_kept
        .keys()
        .filter_map(|&seg| fit_warm_up(rule, rounds, cut, seg, f64::INFINITY))
        .filter(|f| f.is_left(alpha))
        .map(|f| f.bias)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()))
}

/// A level plus an exponential approach fitted to one segment's rounds from the fixed cut on
/// ([`leftover_warm_up`], [`curve_interval`]).
#[derive(Clone, Copy, Debug)]
pub struct WarmUpFit {
    /// The curve's level (the steady state) and its standard error (given the time constant,
    /// inflated for the rule's correlation), on `df` degrees of freedom.
    pub level: f64,
    pub se_level: f64,
    pub df: f64,
    /// The two-sided p-value of "no warm-up left" (the curve's amplitude is 0).
    pub p_value: f64,
    /// The fitted curve's mean over the kept rounds (their bias), and the kept mean's standard
    /// error.
    pub bias: f64,
    pub se_mean: f64,
    /// Rounds fitted.
    pub n: usize,
}

impl WarmUpFit {
    /// Whether the fitted warm-up is still under way in the kept rounds: its amplitude
    /// significant at `alpha` and its bias on the kept mean above [`WARM_UP_BIAS_SE`] of the
    /// kept mean's standard error (the steady check's test and the cut's).
    pub fn is_left(&self, alpha: f64) -> bool {
        self.p_value < alpha && self.bias.abs() > WARM_UP_BIAS_SE * self.se_mean
    }
}

/// The fit of [`WarmUpFit`] for segment `seg`, time constants up to `max_tau` rounds; None
/// with fewer than 6 rounds from the fixed cut or no kept round.
pub fn fit_warm_up(rule: &Rule, rounds: &[Round], cut: &Cut, seg: u32, max_tau: f64) -> Option<WarmUpFit> {
    let rho = rule.rho_prior.unwrap_or(0.0).clamp(0.0, MAX_RHO);
    let infl = (1.0 + rho) / (1.0 - rho);
    let first_kept = *cut.first_kept.get(&seg)?;
    let first = first_kept - cut.dropped.get(&seg).copied().unwrap_or(0);
    let from = first + rule.discard;
    let r: Vec<&Round> = rounds.iter().filter(|r| r.segment == seg && r.round >= from).collect();
    let n = r.len();
    if n < 6 || !r.iter().any(|r| r.round >= first_kept) {
        return None;
    }
    let x: Vec<f64> = r.iter().map(|r| r.log_ratio).collect();
    let (mx, _) = mean_sd(&x);
    let mut best: Option<(f64, f64, f64, f64, Vec<f64>)> = None; // (rss, a, see, me, e)
    for tau in WARM_UP_TAUS.into_iter().filter(|&t| t <= max_tau) {
        let e: Vec<f64> = r.iter().map(|r| (-((r.round - from) as f64) / tau).exp()).collect();
        let (me, _) = mean_sd(&e);
        let see: f64 = e.iter().map(|v| (v - me).powi(2)).sum();
        if see < 1e-12 {
            continue;
        }
        let a = e.iter().zip(&x).map(|(u, v)| (u - me) * (v - mx)).sum::<f64>() / see;
        let rss: f64 = e.iter().zip(&x).map(|(u, v)| (v - mx - a * (u - me)).powi(2)).sum();
        if best.as_ref().is_none_or(|b| rss < b.0) {
            best = Some((rss, a, see, me, e));
        }
    }
    let (rss, a, see, me, e) = best?;
    let s2 = rss / (n as f64 - 2.0);
    let se_a = (s2 * infl / see).sqrt();
    let df = ((n as f64 - 2.0) / infl).max(1.0);
    let p_value = if se_a > 0.0 { t_p_value(a / se_a, df) } else { 1.0 };
    let kept: Vec<f64> = r.iter().zip(&e).filter(|(r, _)| r.round >= first_kept).map(|(_, e)| *e).collect();
    let bias = a * kept.iter().sum::<f64>() / kept.len() as f64;
    let se_mean = (s2 * ar1_factor(kept.len(), rho) / kept.len() as f64).sqrt();
    let level = mx - a * me;
    let se_level = (s2 * infl * (1.0 / n as f64 + me * me / see)).sqrt();
    Some(WarmUpFit { level, se_level, df, p_value, bias, se_mean, n })
}

/// The interval on the steady state of a one-segment contender whose warm-up curve is
/// significant at the rule's `curve_alpha`: the curve's level instead of the kept mean.
pub fn curve_interval(rule: &Rule, rounds: &[Round], cut: &Cut, contenders: usize) -> Option<LogInterval> {
    let alpha = rule.curve_alpha? / contenders.max(1) as f64;
    if cut.first_kept.len() != 1 {
        return None;
    }
    let seg = *cut.first_kept.keys().next()?;
    let f = fit_warm_up(rule, rounds, cut, seg, f64::INFINITY)?;
    (f.p_value < alpha).then_some(LogInterval {
        n: f.n,
        mean: f.level,
        se: f.se_level,
        df: f.df,
        lag1: f64::NAN,
        rho: rule.rho_prior.unwrap_or(0.0),
        sd: f64::NAN,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{Final, assess};
    use super::*;

    #[test]
    fn a_warm_up_left_in_the_kept_rounds_is_found() {
        let r = |round, log_ratio| Round { segment: 1, round, log_ratio };
        let noise = |t: u32| 0.03 * ((t * 7919 % 13) as f64 / 6.0 - 1.0);
        let rule = Rule {
            discard: 2,
            pilot: 6,
            target: None,
            trend_alpha: 0.05,
            cut_alpha: 0.2,
            interval: Final::Full,
            rho_prior: Some(0.1),
            life_sd: None,
            life_df: None,
            warm_up_check: true,
            curve_alpha: None,
            cut_curve_max_tau: None,
            long_warm_up: None,
        };
        // The cut kept rounds 11-16 of a warm-up with a time constant of 10 rounds: its last
        // rounds alone look flat, the rounds from the fixed cut on show the curve.
        let slow: Vec<Round> = (1..=16).map(|t| r(t, 0.5 * (-((t - 1) as f64) / 10.0).exp() + noise(t))).collect();
        let late = Cut { first_kept: BTreeMap::from([(1, 11)]), dropped: BTreeMap::from([(1, 10)]), ..Cut::default() };
        assert!(leftover_warm_up(&rule, &slow, &late, 0.05 / 3.0));
        assert!(!assess(&rule, &slow, &late, 3).steady);
        // A fast transient the cut removed, and flat rounds: nothing left.
        let fast: Vec<Round> = (1..=16).map(|t| r(t, 0.5 * (-((t - 1) as f64) / 1.0).exp() + noise(t))).collect();
        let cut = Cut { first_kept: BTreeMap::from([(1, 10)]), dropped: BTreeMap::from([(1, 9)]), ..Cut::default() };
        assert!(!leftover_warm_up(&rule, &fast, &cut, 0.05 / 3.0));
        let flat: Vec<Round> = (1..=16).map(|t| r(t, noise(t))).collect();
        let fixed = Cut { first_kept: BTreeMap::from([(1, 3)]), dropped: BTreeMap::from([(1, 2)]), ..Cut::default() };
        assert!(!leftover_warm_up(&rule, &flat, &fixed, 0.05 / 3.0));
    }
}
