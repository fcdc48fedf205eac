//! The steady-state check's tests on a contender's kept rounds: the slope over the rounds and the
//! leading rounds against the rest, each with one level per segment (server life), so the
//! offset between two lives is not read as a trend.

use std::collections::BTreeMap;

use serde::Serialize;

use super::prior;
use super::{MAX_RHO, lag1};
use crate::{mean_sd, t_p_value};

/// A trend over the kept rounds: the least-squares slope of the log ratio on the round number.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Trend {
    /// Change of the log ratio per round.
    pub slope: f64,
    /// The fitted change over the longest segment's kept rounds (first to last), as a fraction
    /// of the ratio.
    pub change_over_span: f64,
    /// Two-sided p-value of "no trend" (residual variance corrected for correlated rounds as in
    /// [`super::log_interval`]).
    pub p_value: f64,
}

/// The trend test of the steady-state check: one slope shared by every segment, each segment
/// (server life) with its own level, so the offset between two lives is not read as a trend;
/// None for fewer than 4 rounds or without 2 residual degrees of freedom. `rho`: the correlation
/// of the rounds (a workload's prior); None estimates it from the residuals, which reads the curvature of a warm-up that is still under way as correlated rounds and swallows
/// the trend (docs/benchmarks.md, "The gate on the main job's regimes").
pub fn trend(x: &[f64], rounds: &[u32], segments: &[u32], rho: Option<f64>) -> Option<Trend> {
    let n = x.len();
    let t: Vec<f64> = rounds.iter().map(|&r| r as f64).collect();
    let (tc, lives) = within_segments(&t, segments);
    let (xc, _) = within_segments(x, segments);
    let resid_df = n as f64 - 1.0 - lives as f64;
    if n < 4 || resid_df < 2.0 {
        return None;
    }
    let stt: f64 = tc.iter().map(|v| v * v).sum();
    if stt == 0.0 {
        return None;
    }
    let slope = tc.iter().zip(&xc).map(|(a, b)| a * b).sum::<f64>() / stt;
    let resid: Vec<f64> = tc.iter().zip(&xc).map(|(a, b)| b - slope * a).collect();
    let s2 = resid.iter().map(|e| e * e).sum::<f64>() / resid_df;
    let rho = rho.map_or_else(|| plug_in_rho(&resid, segments), |r| r.clamp(0.0, MAX_RHO));
    // A slope's variance under AR(1) errors grows by about (1 + rho) / (1 - rho).
    let infl = (1.0 + rho) / (1.0 - rho);
    let se = (s2 * infl / stt).sqrt();
    let df = (resid_df / infl).max(1.0);
    let p_value = if se > 0.0 { t_p_value(slope / se, df) } else { 1.0 };
    // The drift a segment's rounds show: the slope over the longest segment.
    let span = segment_spans(&t, segments).into_iter().fold(0.0, f64::max);
    Some(Trend { slope, change_over_span: (slope * span).exp() - 1.0, p_value })
}

/// Each value less the mean of its segment, and how many segments there are (`segments` in
/// round order, one per value).
fn within_segments(x: &[f64], segments: &[u32]) -> (Vec<f64>, usize) {
    let mut sums: BTreeMap<u32, (f64, usize)> = BTreeMap::new();
    for (v, s) in x.iter().zip(segments) {
        let e = sums.entry(*s).or_default();
        e.0 += v;
        e.1 += 1;
    }
    let out = x.iter().zip(segments).map(|(v, s)| v - sums[s].0 / sums[s].1 as f64).collect();
    (out, sums.len().max(1))
}

/// The span (last less first) of each segment's round numbers.
fn segment_spans(t: &[f64], segments: &[u32]) -> Vec<f64> {
    let mut span: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    for (v, s) in t.iter().zip(segments) {
        let e = span.entry(*s).or_insert((*v, *v));
        e.0 = e.0.min(*v);
        e.1 = e.1.max(*v);
    }
    span.values().map(|(a, b)| b - a).collect()
}

/// The leading-rounds test: the mean of the first third of the rounds (at least 2) against the
/// mean of the rest, a two-sample t on their pooled spread with the lag-1 correction; the
/// two-sided p-value, None for fewer than 6 rounds. More sensitive than the slope to a
/// transient that has mostly decayed. Over several segments (server lives) each round is taken
/// less its segment's mean, so the offset between lives is not read as a transient. `rho` as
/// in [`trend`].
pub fn leading_rounds_p(x: &[f64], segments: &[u32], rho: Option<f64>) -> Option<f64> {
    let n = x.len();
    if n < 6 {
        return None;
    }
    let (centred, lives) = within_segments(x, segments);
    let x: &[f64] = if lives > 1 { &centred } else { x };
    let k = (n / 3).max(2);
    let (a, b) = x.split_at(k);
    let (ma, sa) = mean_sd(a);
    let (mb, sb) = mean_sd(b);
    let df_resid = n as f64 - 1.0 - lives as f64;
    let pooled = (((k - 1) as f64 * sa * sa + (n - k - 1) as f64 * sb * sb) / df_resid.max(1.0)).max(0.0);
    let rho = rho.map_or_else(|| plug_in_rho(x, segments), |r| r.clamp(0.0, MAX_RHO));
    let infl = (1.0 + rho) / (1.0 - rho);
    let se = (pooled * infl * (1.0 / k as f64 + 1.0 / (n - k) as f64)).sqrt();
    let df = (df_resid / infl).max(1.0);
    Some(if se > 0.0 { t_p_value((ma - mb) / se, df) } else { 1.0 })
}

/// A series' own bias-corrected lag-1 within [0, 0.9] (0 when it cannot be computed).
fn plug_in_rho(x: &[f64], segments: &[u32]) -> f64 {
    let r = lag1(x, segments);
    if r.is_finite() { prior::corrected(r, x.len()).clamp(0.0, MAX_RHO) } else { 0.0 }
}

/// Whether a series still moves: the slope test or the leading-rounds test (each at half of
/// `alpha`) rejects. `rho` as in [`trend`].
pub fn still_moving(x: &[f64], rounds: &[u32], segments: &[u32], alpha: f64, rho: Option<f64>) -> bool {
    let slope = trend(x, rounds, segments, rho).is_some_and(|t| t.p_value < alpha / 2.0);
    slope || leading_rounds_p(x, segments, rho).is_some_and(|p| p < alpha / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two server lives, each flat with its own level (an offset of 0.2 between them), with a
    /// little alternating noise: no trend, where a slope over both lives reads the step as one.
    #[test]
    fn the_offset_between_two_lives_is_not_a_trend() {
        let noise = |i: usize| if i.is_multiple_of(2) { 0.01 } else { -0.01 };
        let x: Vec<f64> = (0..16).map(|i| if i < 8 { 0.0 } else { 0.2 } + noise(i)).collect();
        let rounds: Vec<u32> = (0..16).map(|i| if i < 8 { 3 + i } else { 16 + i }).collect();
        let two: Vec<u32> = (0..16).map(|i| if i < 8 { 1 } else { 2 }).collect();
        let one = vec![1; 16];
        let within = trend(&x, &rounds, &two, Some(0.0)).unwrap();
        assert!(within.p_value > 0.3 && within.slope.abs() < 2e-3, "{within:?}");
        let across = trend(&x, &rounds, &one, Some(0.0)).unwrap();
        assert!(across.p_value < 1e-6, "{across:?}");
        assert!(leading_rounds_p(&x, &two, Some(0.0)).unwrap() > 0.5);
        assert!(leading_rounds_p(&x, &one, Some(0.0)).unwrap() < 0.01);
    }

    /// A slope shared by both lives is still found, and its drift is over one life's span.
    #[test]
    fn a_slope_within_the_lives_is_a_trend() {
        let x: Vec<f64> = (0..16).map(|i| 0.01 * (i % 8) as f64 + if i < 8 { 0.0 } else { 0.5 }).collect();
        let rounds: Vec<u32> = (0..16).map(|i| 3 + i + if i < 8 { 0 } else { 4 }).collect();
        let two: Vec<u32> = (0..16).map(|i| if i < 8 { 1 } else { 2 }).collect();
        let t = trend(&x, &rounds, &two, Some(0.0)).unwrap();
        assert!((t.slope - 0.01).abs() < 1e-9 && t.p_value < 1e-6, "{t:?}");
        assert!((t.change_over_span - (0.07f64.exp() - 1.0)).abs() < 1e-9, "{t:?}");
    }

    /// One segment: the ordinary least-squares slope on n - 2 degrees of freedom.
    #[test]
    fn one_segment_is_the_plain_regression() {
        let x = [0.0, 0.1, 0.15, 0.35, 0.4, 0.45];
        let rounds = [1, 2, 3, 4, 5, 6];
        let t = trend(&x, &rounds, &[1; 6], Some(0.0)).unwrap();
        // Slope of the least-squares line through these points: 0.0957 per round (by hand:
        // S_tx / S_tt = 1.675 / 17.5).
        assert!((t.slope - 1.675 / 17.5).abs() < 1e-12, "{t:?}");
    }
}
