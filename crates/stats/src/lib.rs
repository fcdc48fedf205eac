//! pgtier's estimator: numerics alone, with no knowledge of PostgreSQL, results files or charts.
//! The scheduler decides with it while it measures and the report estimates with it afterwards;
//! [`rounds::simulate`] proves it on series with a known answer (the coverage gate).
//!
//! Statistics across repetitions: mean, standard deviation, coefficient of variation, 95%
//! confidence intervals (Student's t, exact for fractional degrees of freedom), and the change of
//! a contender against a baseline as a ratio with an interval that is not forced symmetric
//! (Welch's t on log values, or a paired t on per-block log ratios), its p-value, a family-wise
//! correction (Holm) and a three-way verdict: a real change, an equivalence, or inconclusive.

pub mod rounds;

use serde::Serialize;
use statrs::distribution::{Beta, ChiSquared, ContinuousCDF, Normal, StudentsT};

/// The `p` quantile of Student's t with `df` degrees of freedom (fractional df allowed); NaN for
/// df < 1 or p outside (0, 1).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let valid = df >= 1.0 && p > 0.0 && p < 1.0;
    if !valid {
        return f64::NAN;
    }
    StudentsT::new(0.0, 1.0, df).map(|t| t.inverse_cdf(p)).unwrap_or(f64::NAN)
}

/// Two-sided 97.5% quantile of Student's t (the 95% interval's multiplier).
pub fn t975(df: f64) -> f64 {
    t_quantile(0.975, df)
}

/// The error model tested on statistics that are each Student's t if the intervals are right:
/// `(t, degrees of freedom)`, each mapped to the standard normal deviate of its two-sided
/// p-value, their squares summed. Under the model the sum is chi-square on k degrees of freedom:
/// `(sum of squares, k, p-value of a sum at least that large)`; None without a finite one.
pub fn chi_square_of_t(ts: &[(f64, f64)]) -> Option<(f64, usize, f64)> {
    let normal = Normal::new(0.0, 1.0).ok()?;
    let z2: Vec<f64> = ts
        .iter()
        .filter(|(t, df)| t.is_finite() && df.is_finite())
        .map(|&(t, df)| {
            // The deviate of the same two-sided tail, from the upper tail so that tiny p-values
            // keep their size.
            let p = t_p_value(t, df).max(1e-300);
            let z = normal.inverse_cdf(1.0 - p / 2.0);
            let z = if z.is_finite() { z } else { -normal.inverse_cdf(p / 2.0) };
            z * z
        })
        .collect();
    if z2.is_empty() {
        return None;
    }
    let sum: f64 = z2.iter().sum();
    let p = ChiSquared::new(z2.len() as f64).ok()?.sf(sum);
    Some((sum, z2.len(), p))
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom.
pub fn t_p_value(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { f64::NAN } else { 0.0 };
    }
    match StudentsT::new(0.0, 1.0, df.max(1.0)) {
        Ok(d) => (2.0 * (1.0 - d.cdf(t.abs()))).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// Summary of repeated measurements of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n-1); NaN for a single value (no spread can be measured).
    pub stdev: f64,
    /// Coefficient of variation, % (stdev / mean); NaN for a single value.
    pub cv_pct: f64,
    /// Half-width of the 95% confidence interval of the mean (NaN for fewer than 2 values).
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
    /// Mean and sample standard deviation of the natural logarithms (NaN when a value is not
    /// positive): what ratio intervals are built from.
    #[serde(skip)]
    pub log_mean: f64,
    #[serde(skip)]
    pub log_stdev: f64,
}

/// Mean and sample standard deviation (n - 1; NaN for one value).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd =
        if n > 1 { (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { f64::NAN };
    (mean, sd)
}

impl Estimate {
    pub fn of(values: &[f64]) -> Option<Estimate> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let (mean, stdev) = mean_sd(values);
        let (log_mean, log_stdev) = if values.iter().all(|v| *v > 0.0) {
            mean_sd(&values.iter().map(|v| v.ln()).collect::<Vec<_>>())
        } else {
            (f64::NAN, f64::NAN)
        };
        Some(Estimate {
            n,
            mean,
            stdev,
            cv_pct: if mean != 0.0 { stdev / mean.abs() * 100.0 } else { f64::NAN },
            ci95: if n > 1 { t975((n - 1) as f64) * stdev / (n as f64).sqrt() } else { f64::NAN },
            min: values.iter().cloned().fold(f64::INFINITY, f64::min),
            max: values.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            log_mean,
            log_stdev,
        })
    }

    /// Whether a spread (and so an interval) exists.
    pub fn has_interval(&self) -> bool {
        self.n >= 2 && self.ci95.is_finite()
    }
}

/// How a ratio's interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Ratio of geometric means; Welch's t on the log values of two independent samples.
    WelchLog,
    /// Geometric mean of per-block ratios; paired t on the log ratios of blocks measured side by
    /// side (time slices of one round).
    PairedLog,
    /// Ratio of arithmetic means with a delta-method interval (values that are not all positive).
    DeltaMethod,
}

impl Method {
    pub fn as_str(&self) -> &'static str {
        match self {
            Method::WelchLog => "welch-log",
            Method::PairedLog => "paired-log",
            Method::DeltaMethod => "delta-method",
        }
    }
}

/// What a delta says, once its interval is set against the equivalence margin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The interval excludes 0 (after the family-wise correction) and reaches beyond the margin.
    RealChange,
    /// The whole interval lies inside ±margin: no change that matters.
    Equivalent,
    /// Neither: the measurements cannot tell.
    Inconclusive,
    /// The interval would call it a real change or an equivalence, but the contest's rounds
    /// were still moving (the steady-state check failed): not on that evidence.
    NotSteady,
    /// No interval (a side with a single run).
    NoInterval,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::RealChange => "real change",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotSteady => "not steady",
            Verdict::NoInterval => "no interval",
        }
    }
}

/// How a contender compares to the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Delta {
    /// (ratio - 1) x 100.
    pub pct: f64,
    /// contender / baseline (1.0 = same as baseline).
    pub ratio: f64,
    /// 95% interval of `pct` (NaN when either side has fewer than 2 runs); not symmetric around
    /// `pct` for the log methods.
    pub pct_low: f64,
    pub pct_high: f64,
    /// Two-sided p-value of "no change", before any correction for the number of deltas.
    pub p_value: f64,
    /// After the family-wise correction (Holm) over the deltas of the same figure in the study;
    /// equal to `p_value` until [`holm`] is applied.
    pub p_adjusted: f64,
    /// The interval after Holm's correction: the same estimate at level 1 - 0.05 / m, where m is
    /// this change's Holm multiplier (`p_adjusted / p_value`, at most the family's size), so it
    /// excludes 0 exactly when `p_adjusted` < 0.05 (a real change also needs not to be an
    /// equivalence and its contest to be steady). Not a simultaneous interval: m depends on the
    /// data. Equal to the 95% interval until
    /// [`Delta::adjusted`] is applied (a family of one); NaN without an interval.
    pub holm_low: f64,
    pub holm_high: f64,
    /// Standard error of the estimate: of the mean log ratio for the log methods, of the ratio
    /// for the delta method (NaN without an interval).
    pub se: f64,
    pub df: f64,
    pub method: Method,
    /// The interval contains 0 (unadjusted).
    pub within_noise: bool,
    pub verdict: Verdict,
}

impl Delta {
    /// Two independent samples summarised as estimates: ratio of geometric means with Welch's t
    /// on the logs (the delta method on arithmetic means when a value is not positive).
    pub fn between(baseline: &Estimate, contender: &Estimate) -> Option<Delta> {
        if baseline.mean == 0.0 {
            return None;
        }
        if !(baseline.log_mean.is_finite() && contender.log_mean.is_finite()) {
            return Some(Self::delta_method(baseline, contender));
        }
        let d = contender.log_mean - baseline.log_mean;
        if baseline.n < 2 || contender.n < 2 {
            return Some(Self::without_interval(d.exp(), Method::WelchLog));
        }
        let vb = baseline.log_stdev.powi(2) / baseline.n as f64;
        let vc = contender.log_stdev.powi(2) / contender.n as f64;
        let df = if vb + vc > 0.0 {
            (vb + vc).powi(2) / (vb.powi(2) / (baseline.n - 1) as f64 + vc.powi(2) / (contender.n - 1) as f64)
        } else {
            (baseline.n + contender.n - 2) as f64
        };
        Some(Self::from_log(d, (vb + vc).sqrt(), df, Method::WelchLog))
    }

    /// Blocks measured side by side: (baseline, contender) per block. The geometric mean of the
    /// per-block ratios with a paired t interval on their logs (n-1 degrees of freedom).
    pub fn paired(pairs: &[(f64, f64)]) -> Option<Delta> {
        if pairs.is_empty() || pairs.iter().any(|(b, c)| !(*b > 0.0 && *c > 0.0)) {
            return None;
        }
        let logs: Vec<f64> = pairs.iter().map(|(b, c)| (c / b).ln()).collect();
        let (m, sd) = mean_sd(&logs);
        if logs.len() < 2 {
            return Some(Self::without_interval(m.exp(), Method::PairedLog));
        }
        Some(Self::from_log(m, sd / (logs.len() as f64).sqrt(), (logs.len() - 1) as f64, Method::PairedLog))
    }

    /// A change from a mean log ratio `d`, its standard error and degrees of freedom.
    pub fn from_log(d: f64, se: f64, df: f64, method: Method) -> Delta {
        let half = t975(df.max(1.0)) * se;
        let (lo, hi) = (((d - half).exp() - 1.0) * 100.0, ((d + half).exp() - 1.0) * 100.0);
        let p = if !se.is_finite() {
            f64::NAN
        } else if se > 0.0 {
            t_p_value(d / se, df)
        } else if d == 0.0 {
            1.0
        } else {
            0.0
        };
        Delta {
            pct: (d.exp() - 1.0) * 100.0,
            ratio: d.exp(),
            pct_low: lo,
            pct_high: hi,
            p_value: p,
            p_adjusted: p,
            holm_low: lo,
            holm_high: hi,
            se,
            df,
            method,
            within_noise: lo <= 0.0 && hi >= 0.0,
            verdict: Verdict::Inconclusive,
        }
        .classified(DEFAULT_EQUIVALENCE_PCT)
    }

    /// No figure at all (a missing side).
    pub fn unknown() -> Delta {
        Self::without_interval(f64::NAN, Method::WelchLog)
    }

    fn without_interval(ratio: f64, method: Method) -> Delta {
        Delta {
            pct: (ratio - 1.0) * 100.0,
            ratio,
            pct_low: f64::NAN,
            pct_high: f64::NAN,
            p_value: f64::NAN,
            p_adjusted: f64::NAN,
            holm_low: f64::NAN,
            holm_high: f64::NAN,
            se: f64::NAN,
            df: f64::NAN,
            method,
            within_noise: false,
            verdict: Verdict::NoInterval,
        }
    }

    /// Ratio of arithmetic means, delta-method interval (for figures that can be 0).
    fn delta_method(baseline: &Estimate, contender: &Estimate) -> Delta {
        let ratio = contender.mean / baseline.mean;
        if baseline.n < 2 || contender.n < 2 {
            return Self::without_interval(ratio, Method::DeltaMethod);
        }
        let rb = baseline.stdev.powi(2) / baseline.n as f64 / baseline.mean.powi(2);
        let rc = contender.stdev.powi(2) / contender.n as f64 / contender.mean.powi(2).max(f64::MIN_POSITIVE);
        let se = ratio.abs() * (rb + rc).sqrt();
        let df = if rb + rc > 0.0 {
            (rb + rc).powi(2) / (rb.powi(2) / (baseline.n - 1) as f64 + rc.powi(2) / (contender.n - 1) as f64)
        } else {
            (baseline.n + contender.n - 2) as f64
        };
        let half = t975(df.max(1.0)) * se * 100.0;
        let pct = (ratio - 1.0) * 100.0;
        let p = if !se.is_finite() {
            f64::NAN
        } else if se > 0.0 {
            t_p_value((ratio - 1.0) / se, df)
        } else if ratio == 1.0 {
            1.0
        } else {
            0.0
        };
        Delta {
            pct,
            ratio,
            pct_low: pct - half,
            pct_high: pct + half,
            p_value: p,
            p_adjusted: p,
            holm_low: pct - half,
            holm_high: pct + half,
            se,
            df,
            method: Method::DeltaMethod,
            within_noise: pct - half <= 0.0 && pct + half >= 0.0,
            verdict: Verdict::Inconclusive,
        }
        .classified(DEFAULT_EQUIVALENCE_PCT)
    }

    /// The change after Holm's correction over a family of `family` changes of one figure:
    /// `p_adjusted` from [`holm`], and the interval at the level that goes with it
    /// ([`Delta::holm_low`]). Call [`Delta::classified`] after it.
    pub fn adjusted(mut self, p_adjusted: f64, family: usize) -> Delta {
        self.p_adjusted = p_adjusted;
        if !(self.has_interval() && self.se.is_finite() && self.se > 0.0) {
            return self;
        }
        let m = self.holm_multiplier(family);
        let q = t_quantile(1.0 - 0.025 / m, self.df.max(1.0));
        let half = q * self.se;
        (self.holm_low, self.holm_high) = match self.method {
            Method::DeltaMethod => (self.pct - half * 100.0, self.pct + half * 100.0),
            _ => {
                let d = self.ratio.ln();
                (((d - half).exp() - 1.0) * 100.0, ((d + half).exp() - 1.0) * 100.0)
            }
        };
        self
    }

    /// Holm's multiplier of this change: how much its p-value was raised (1 for the last of a
    /// step-down that stopped late, the family's size for the smallest), between 1 and `family`.
    /// A p-value of 0 (or underflowed) takes the family's size: Bonferroni's, the widest.
    fn holm_multiplier(&self, family: usize) -> f64 {
        let k = family.max(1) as f64;
        if self.p_value > 0.0 && self.p_adjusted.is_finite() {
            (self.p_adjusted / self.p_value).clamp(1.0, k)
        } else {
            k
        }
    }

    /// Whether Holm's correction widened the interval (a family of more than one).
    pub fn holm_widened(&self) -> bool {
        // A tolerance: at m = 1 the two intervals are the same up to rounding.
        let eps = 1e-9 * (1.0 + self.pct_high.abs().max(self.pct_low.abs()));
        self.holm_low.is_finite() && (self.holm_low < self.pct_low - eps || self.holm_high > self.pct_high + eps)
    }

    /// `[+1.2, +30.4]`: the interval that goes with the verdict ([`Delta::holm_low`]).
    pub fn holm_text(&self) -> String {
        if self.holm_low.is_finite() {
            format!("[{:+.1}, {:+.1}]", self.holm_low, self.holm_high)
        } else {
            String::new()
        }
    }

    /// The verdict against an equivalence margin of ±`margin_pct`: *equivalent* when the whole
    /// interval lies inside the margin, else a *real change* when the (adjusted) p-value is
    /// below 5% (the interval excludes 0), else *inconclusive*.
    pub fn classified(mut self, margin_pct: f64) -> Delta {
        self.verdict = if !self.has_interval() {
            Verdict::NoInterval
        } else if self.pct_low >= -margin_pct && self.pct_high <= margin_pct {
            Verdict::Equivalent
        } else if self.p_adjusted < 0.05 && !self.within_noise {
            Verdict::RealChange
        } else {
            Verdict::Inconclusive
        };
        self
    }

    /// `+12.3% [+4.5, +20.1]` followed by `noise_mark` when the interval contains 0; without an
    /// interval (one run on a side), `+12.3% (no interval: 1 run)`.
    pub fn text(&self, noise_mark: &str) -> String {
        if self.has_interval() {
            format!(
                "{:+.1}% [{:+.1}, {:+.1}]{}",
                self.pct,
                self.pct_low,
                self.pct_high,
                if self.within_noise { noise_mark } else { "" }
            )
        } else {
            format!("{:+.1}% (no interval: 1 run)", self.pct)
        }
    }

    /// Whether the interval after Holm is worth printing beside the 95% one: wider, the 95% one
    /// excludes 0 (the verdict may then differ from what the 95% interval suggests; one that
    /// holds 0 still does after the correction), and the verdict is not an equivalence (judged
    /// on the 95% interval against the margin, as the two one-sided tests are).
    pub fn holm_matters(&self) -> bool {
        self.holm_widened() && !self.within_noise && self.verdict != Verdict::Equivalent
    }

    /// [`Delta::text`], then `, after Holm [-4.2, +498.0]` when [`Delta::holm_matters`]: the
    /// interval that goes with the verdict.
    pub fn text_with_holm(&self, noise_mark: &str) -> String {
        if self.holm_matters() {
            format!("{}, after Holm {}", self.text(noise_mark), self.holm_text())
        } else {
            self.text(noise_mark)
        }
    }

    /// Whether an interval exists (both sides repeated).
    pub fn has_interval(&self) -> bool {
        self.pct_low.is_finite()
    }

    /// Half of the interval's width in percentage points.
    pub fn half_width_pct(&self) -> f64 {
        (self.pct_high - self.pct_low) / 2.0
    }
}

/// The equivalence margin when the experiment file sets none: ±2%.
pub const DEFAULT_EQUIVALENCE_PCT: f64 = 2.0;

/// Holm's step-down adjustment of p-values (family-wise error rate); NaN entries are left out of
/// the family and stay NaN. Same as R's `p.adjust(p, "holm")`.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_finite()).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let m = idx.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// The Clopper-Pearson ("exact") two-sided 95% interval of a binomial proportion: `k`
/// successes in `n` trials; (0, 1) for n = 0.
pub fn clopper_pearson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let q = |p: f64, a: f64, b: f64| Beta::new(a, b).map(|d| d.inverse_cdf(p)).unwrap_or(f64::NAN);
    let low = if k == 0 { 0.0 } else { q(0.025, k as f64, (n - k + 1) as f64) };
    let high = if k == n { 1.0 } else { q(0.975, (k + 1) as f64, (n - k) as f64) };
    (low, high)
}

/// Indices of values further than `k` median absolute deviations from the median (robust
/// outlier detection on a per-second series).
pub fn outliers_mad(values: &[f64], k: f64) -> Vec<usize> {
    if values.len() < 5 {
        return Vec::new();
    }
    let med = median(values);
    let dev: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
    let mad = median(&dev) * 1.4826;
    if mad == 0.0 {
        return Vec::new();
    }
    values.iter().enumerate().filter(|(_, v)| ((*v - med) / mad).abs() > k).map(|(i, _)| i).collect()
}

pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// MSER-5 truncation (White 1997; Franklin and White 2008): the number of leading observations
/// to discard from a series that starts in a transient. The series is batched in means of 5;
/// the truncation point minimises the squared standard error of the remaining batch means,
/// searched over the first half. Returns observations to drop (a multiple of 5), 0 for short
/// series.
pub fn mser5(series: &[f64]) -> usize {
    let batches: Vec<f64> = series.chunks_exact(5).map(|c| c.iter().sum::<f64>() / 5.0).collect();
    let k = batches.len();
    if k < 4 {
        return 0;
    }
    let mut best = (f64::INFINITY, 0usize);
    for d in 0..=k / 2 {
        let rest = &batches[d..];
        let n = rest.len() as f64;
        let m = rest.iter().sum::<f64>() / n;
        let ss = rest.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        let stat = ss / (n * n);
        if stat < best.0 {
            best = (stat, d);
        }
    }
    best.1 * 5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_models_chi_square_against_published_values() {
        // A t of 2.776445 on 4 df is the 97.5% point (two-sided p 0.05): its normal deviate is
        // 1.959964; four of them sum to 15.3661, whose chi-square(4) upper tail is 0.00400
        // (tables: chi-square(4) 0.995 quantile 14.860, 0.999 quantile 18.467).
        let (sum, k, p) = chi_square_of_t(&[(2.776445, 4.0); 4]).unwrap();
        assert_eq!(k, 4);
        assert!((sum - 4.0 * 1.959964f64.powi(2)).abs() < 1e-4, "{sum}");
        assert!(p > 0.001 && p < 0.005, "{p}");
        // Chi-square(4)'s 95% point, 9.487729: four normal deviates of sqrt(9.487729 / 4)
        // (t on very many df) give p 0.05.
        let t = (9.487729f64 / 4.0).sqrt();
        let (_, _, p) = chi_square_of_t(&[(t, 1e7); 4]).unwrap();
        assert!((p - 0.05).abs() < 1e-4, "{p}");
        assert!(chi_square_of_t(&[(f64::NAN, 4.0)]).is_none());
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_against_published_values() {
        // Student's t tables (two-sided 95%): df 1 12.706, 2 4.303, 3 3.182, 10 2.228, 30 2.042,
        // 100 1.984; fractional df as R's qt(0.975, df): 1.5 6.0167, 2.5 3.5747.
        for (df, t) in [
            (1.0, 12.7062),
            (1.5, 6.0167),
            (2.0, 4.3027),
            (2.5, 3.5747),
            (3.0, 3.1824),
            (10.0, 2.2281),
            (30.0, 2.0423),
            (100.0, 1.9840),
        ] {
            assert!(close(t975(df), t, 5e-4), "df {df}: {} vs {t}", t975(df));
        }
        assert!(close(t_quantile(0.95, 5.0), 2.0150, 5e-4), "one-sided 95%, df 5");
        assert!(t975(0.5).is_nan());
        // p-values, as scipy 1.17's 2 * t.cdf(-|t|, df): t 2.0, df 10 -> 0.073388; t 3.0, df 4.5
        // -> 0.034381.
        assert!(close(t_p_value(2.0, 10.0), 0.073388, 1e-5));
        assert!(close(t_p_value(-3.0, 4.5), 0.034381, 1e-5), "{}", t_p_value(-3.0, 4.5));
    }

    #[test]
    fn estimate_of_known_values() {
        let e = Estimate::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(e.mean, 12.0);
        assert!((e.stdev - 2.0).abs() < 1e-12);
        assert!((e.cv_pct - 16.666_666).abs() < 1e-3);
        // t(0.975, 2) = 4.303; 4.303 * 2 / sqrt(3)
        assert!((e.ci95 - 4.302_653 * 2.0 / 3f64.sqrt()).abs() < 1e-5);
        let one = Estimate::of(&[5.0]).unwrap();
        assert!(one.ci95.is_nan() && one.cv_pct.is_nan() && one.stdev.is_nan(), "one run: n/a, never 0%");
        assert!(!one.has_interval());
    }

    #[test]
    fn welch_log_ratio_against_scipy() {
        // scipy 1.17: ttest_ind(log c, log b, equal_var=False): t = 29.2186, df = 3.48437,
        // p = 2.7238e-05; confidence_interval(0.95) on the logs -> +44.0005% .. +56.2726%;
        // point exp(mean log c - mean log b) - 1 = +50.0111%.
        let b = Estimate::of(&[100.0, 102.0, 98.0]).unwrap();
        let c = Estimate::of(&[150.0, 148.0, 152.0]).unwrap();
        let d = Delta::between(&b, &c).unwrap();
        assert_eq!(d.method, Method::WelchLog);
        assert!(close(d.pct, 50.0111, 1e-3) && close(d.df, 3.48437, 1e-4), "{d:?}");
        assert!(close(d.pct_low, 44.0005, 1e-3) && close(d.pct_high, 56.2726, 1e-3), "{d:?}");
        assert!(close(d.p_value, 2.7238e-05, 1e-8), "{}", d.p_value);
        assert!(d.pct_high - d.pct > d.pct - d.pct_low, "not forced symmetric");
        assert_eq!(d.verdict, Verdict::RealChange);
        // Noisy: t = 0.32059, df = 3.95490, p = 0.76474, interval -55.838% .. +179.997%.
        let b = Estimate::of(&[100.0, 140.0, 60.0]).unwrap();
        let c = Estimate::of(&[110.0, 70.0, 150.0]).unwrap();
        let d = Delta::between(&b, &c).unwrap();
        assert!(close(d.p_value, 0.76474, 1e-4) && close(d.pct_low, -55.838, 1e-2) && close(d.pct_high, 179.997, 1e-2));
        assert!(d.within_noise);
        assert_eq!(d.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn paired_log_ratio_against_scipy() {
        // scipy 1.17 ttest_rel(log c, log b): t = 6.13046, df = 4, p = 0.0035877; interval
        // +2.0734% .. +5.6010%, point +3.8222%. Unpaired on the same data: -7.289% .. +16.266%.
        let b = [100.0, 90.0, 110.0, 95.0, 105.0];
        let c = [104.0, 95.0, 113.0, 97.0, 110.0];
        let pairs: Vec<(f64, f64)> = b.iter().copied().zip(c.iter().copied()).collect();
        let d = Delta::paired(&pairs).unwrap();
        assert_eq!((d.method, d.df), (Method::PairedLog, 4.0));
        assert!(
            close(d.pct, 3.8222, 1e-3) && close(d.pct_low, 2.0734, 1e-3) && close(d.pct_high, 5.6010, 1e-3),
            "{d:?}"
        );
        assert!(close(d.p_value, 0.0035877, 1e-6));
        let u = Delta::between(&Estimate::of(&b).unwrap(), &Estimate::of(&c).unwrap()).unwrap();
        assert!(close(u.pct_low, -7.2894, 1e-3) && close(u.pct_high, 16.2656, 1e-3), "{u:?}");
    }

    #[test]
    fn verdicts() {
        let d = |lo: f64, hi: f64, p: f64| {
            Delta {
                pct: (lo + hi) / 2.0,
                ratio: 1.0,
                pct_low: lo,
                pct_high: hi,
                p_value: p,
                p_adjusted: p,
                holm_low: lo,
                holm_high: hi,
                se: f64::NAN,
                df: 10.0,
                method: Method::PairedLog,
                within_noise: lo <= 0.0 && hi >= 0.0,
                verdict: Verdict::Inconclusive,
            }
            .classified(2.0)
        };
        assert_eq!(d(-1.5, 1.2, 0.6).verdict, Verdict::Equivalent);
        assert_eq!(
            d(0.4, 1.8, 0.01).verdict,
            Verdict::Equivalent,
            "a change smaller than the margin is no change that matters"
        );
        assert_eq!(d(3.0, 9.0, 0.001).verdict, Verdict::RealChange);
        assert_eq!(d(-4.0, 6.0, 0.7).verdict, Verdict::Inconclusive);
        let mut adjusted = d(1.0, 9.0, 0.03);
        adjusted.p_adjusted = 0.09;
        assert_eq!(adjusted.classified(2.0).verdict, Verdict::Inconclusive, "not significant after Holm");
        let single = Delta::between(&Estimate::of(&[100.0]).unwrap(), &Estimate::of(&[120.0]).unwrap()).unwrap();
        assert_eq!(single.verdict, Verdict::NoInterval);
        assert!(!single.has_interval() && close(single.pct, 20.0, 1e-9));
    }

    #[test]
    fn clopper_pearson_matches_r() {
        // The bounds from their definition, by bisection on the binomial distribution's sums
        // (P(X >= k | low) = 0.025, P(X <= k | high) = 0.025), as R's binom.test gives them:
        // 7/69 0.041771 0.197918; 0/30 0 0.115703 (= 1 - 0.025^(1/30)); 3/30 0.021117 0.265288;
        // 30/30 0.884297 1.
        for (k, n, lo, hi) in
            [(7, 69, 0.041771, 0.197918), (0, 30, 0.0, 0.115703), (3, 30, 0.021117, 0.265288), (30, 30, 0.884297, 1.0)]
        {
            let (l, h) = clopper_pearson(k, n);
            assert!(close(l, lo, 1e-6) && close(h, hi, 1e-6), "{k}/{n}: {l} {h}");
        }
        assert_eq!(clopper_pearson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn holm_matches_r() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
        let a = holm(&[0.01, 0.04, 0.03, 0.005]);
        for (x, y) in a.iter().zip([0.03, 0.06, 0.06, 0.02]) {
            assert!(close(*x, y, 1e-12), "{a:?}");
        }
        // NaN stays out of the family: p.adjust(c(0.02, NA, 0.04), "holm") = 0.04 NA 0.04
        let b = holm(&[0.02, f64::NAN, 0.04]);
        assert!(close(b[0], 0.04, 1e-12) && b[1].is_nan() && close(b[2], 0.04, 1e-12), "{b:?}");
    }

    #[test]
    fn holm_intervals_go_with_holm_verdicts() {
        // Four changes of one figure, each a mean log ratio with se 0.05 on 10 df.
        let raw: Vec<Delta> =
            [0.16, 0.14, 0.12, 0.02].iter().map(|&d| Delta::from_log(d, 0.05, 10.0, Method::PairedLog)).collect();
        let p: Vec<f64> = raw.iter().map(|d| d.p_value).collect();
        let adj = holm(&p);
        for (d, a) in raw.iter().zip(&adj) {
            let h = d.adjusted(*a, 4).classified(2.0);
            // The interval that goes with the verdict excludes 0 exactly when Holm's p is below 5%.
            assert_eq!(h.holm_low > 0.0 || h.holm_high < 0.0, *a < 0.05, "{h:?}");
            assert_eq!(h.verdict == Verdict::RealChange, *a < 0.05, "{h:?}");
            // Never narrower than the 95% interval, never wider than Bonferroni's over 4.
            assert!(h.holm_low <= h.pct_low + 1e-9 && h.holm_high >= h.pct_high - 1e-9, "{h:?}");
            let bonf = crate::t_quantile(1.0 - 0.025 / 4.0, 10.0) * 0.05;
            assert!(h.holm_low >= ((d.ratio.ln() - bonf).exp() - 1.0) * 100.0 - 1e-9, "{h:?}");
        }
        // The smallest p-value's multiplier is the family's size: Bonferroni's level, whose t
        // quantile Dunn's table (1961; Bonferroni t, 4 comparisons, 10 df, 5%) gives as 3.038.
        let first = raw[0].adjusted(adj[0], 4);
        let half = 3.038 * 0.05;
        assert!(close(first.holm_low, ((0.16f64 - half).exp() - 1.0) * 100.0, 1e-2), "{first:?}");
        assert!(close(first.holm_high, ((0.16f64 + half).exp() - 1.0) * 100.0, 1e-2), "{first:?}");
        // A family of one: the 95% interval itself.
        let alone = raw[3].adjusted(raw[3].p_value, 1);
        assert!(close(alone.holm_low, alone.pct_low, 1e-9) && close(alone.holm_high, alone.pct_high, 1e-9));
        assert!(!alone.holm_widened() && first.holm_widened());
        assert!(first.holm_matters() && first.text_with_holm("").contains(", after Holm ["), "{first:?}");
        let null = raw[3].adjusted(1.0, 4);
        assert!(null.within_noise && null.holm_widened() && !null.holm_matters(), "{null:?}");
        assert_eq!(null.text_with_holm(" ~"), null.text(" ~"));
        // The delta method widens around the ratio, symmetric in percent.
        let b = Estimate::of(&[0.0, 10.0, 20.0]).unwrap();
        let c = Estimate::of(&[5.0, 15.0, 25.0]).unwrap();
        let dm = Delta::between(&b, &c).unwrap();
        let wide = dm.adjusted(1.0, 3);
        assert!(close(wide.holm_high - wide.pct, wide.pct - wide.holm_low, 1e-9) && wide.holm_widened(), "{wide:?}");
    }

    #[test]
    fn zero_values_fall_back_to_the_delta_method() {
        let b = Estimate::of(&[0.0, 2.0, 1.0]).unwrap();
        let c = Estimate::of(&[2.0, 3.0, 4.0]).unwrap();
        let d = Delta::between(&b, &c).unwrap();
        assert_eq!(d.method, Method::DeltaMethod);
        assert!(close(d.pct, 200.0, 1e-9));
    }

    #[test]
    fn coverage_of_the_paired_and_welch_intervals_by_simulation() {
        // Fixed seed: 4,000 experiments with a true ratio of 1.10 and log-normal noise of 8% per
        // measurement plus a shared 15% block effect. The 95% intervals must cover the truth in
        // about 95% of them (binomial sd 0.34 percentage points: accept 93.5-96.5%), and the
        // paired interval must be the narrower one when blocks share their noise.
        let mut rng = crate::rounds::simulate::Rng(0x5eed);
        let (mut cover_p, mut cover_w, mut width_p, mut width_w) = (0, 0, 0.0, 0.0);
        let n = 4000;
        for _ in 0..n {
            let pairs: Vec<(f64, f64)> = (0..8)
                .map(|_| {
                    let block = 0.15 * rng.normal();
                    ((block + 0.08 * rng.normal()).exp() * 1000.0, (block + 0.08 * rng.normal()).exp() * 1100.0)
                })
                .collect();
            let p = Delta::paired(&pairs).unwrap();
            let (b, c): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
            let w = Delta::between(&Estimate::of(&b).unwrap(), &Estimate::of(&c).unwrap()).unwrap();
            cover_p += (p.pct_low <= 10.0 && p.pct_high >= 10.0) as usize;
            cover_w += (w.pct_low <= 10.0 && w.pct_high >= 10.0) as usize;
            width_p += p.half_width_pct();
            width_w += w.half_width_pct();
        }
        let (cp, cw) = (cover_p as f64 / n as f64 * 100.0, cover_w as f64 / n as f64 * 100.0);
        assert!((93.5..=96.5).contains(&cp), "paired coverage {cp}%");
        assert!(cw >= 93.5, "Welch coverage {cw}% (conservative when blocks share noise)");
        assert!(width_p < width_w / 1.5, "pairing removes the shared block noise: {width_p} vs {width_w}");
    }

    #[test]
    fn mser5_cuts_a_warm_up() {
        // 15 observations climbing from 60 to 100, then 45 at 100 with small noise.
        let mut s: Vec<f64> = (0..15).map(|i| 60.0 + i as f64 * 40.0 / 15.0).collect();
        s.extend((0..45).map(|i| 100.0 + if i % 2 == 0 { 1.0 } else { -1.0 }));
        let cut = mser5(&s);
        assert!((10..=20).contains(&cut), "cut {cut}");
        let flat: Vec<f64> = (0..40).map(|i| 100.0 + (i % 3) as f64).collect();
        assert!(mser5(&flat) <= 5, "a stationary series loses at most a batch");
        assert_eq!(mser5(&[1.0, 2.0, 3.0]), 0);
    }

    #[test]
    fn mad_outliers() {
        let mut v: Vec<f64> = (0..20).map(|i| 98.0 + (i % 5) as f64).collect();
        v[7] = 10.0;
        assert_eq!(outliers_mad(&v, 3.5), vec![7]);
    }
}
