//! Statistics across repetitions: mean, standard deviation, coefficient of variation, 95%
//! confidence intervals (Student's t), and the change of a contender against a baseline with its
//! own interval.

use serde::Serialize;

/// Two-sided 97.5% quantile of Student's t for `df` degrees of freedom.
pub fn t975(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df.is_nan() || df < 1.0 {
        return f64::NAN;
    }
    let lo = df.floor() as usize;
    if lo >= 30 {
        // 2.042 at 30 down to 1.960 at infinity, roughly as 1/df.
        return 1.960 + (2.042 - 1.960) * 30.0 / df;
    }
    // Linear interpolation for fractional (Welch) degrees of freedom.
    let a = TABLE[lo - 1];
    let b = TABLE[lo];
    a + (b - a) * (df - lo as f64)
}

/// Summary of repeated measurements of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n-1); 0 for a single value.
    pub stdev: f64,
    /// Coefficient of variation, % (stdev / mean).
    pub cv_pct: f64,
    /// Half-width of the 95% confidence interval of the mean (NaN for fewer than 2 values).
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
}

impl Estimate {
    pub fn of(values: &[f64]) -> Option<Estimate> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 { values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
        let stdev = var.sqrt();
        Some(Estimate {
            n,
            mean,
            stdev,
            cv_pct: if mean != 0.0 { stdev / mean.abs() * 100.0 } else { 0.0 },
            ci95: if n > 1 { t975((n - 1) as f64) * stdev / (n as f64).sqrt() } else { f64::NAN },
            min: values.iter().cloned().fold(f64::INFINITY, f64::min),
            max: values.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// How a contender compares to the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Delta {
    /// (contender / baseline - 1) x 100.
    pub pct: f64,
    /// contender / baseline (1.0 = same as baseline).
    pub ratio: f64,
    /// 95% interval of `pct` (NaN when either side has fewer than 2 runs).
    pub pct_low: f64,
    pub pct_high: f64,
    /// The interval contains 0: the difference is within the noise of the measurements.
    pub within_noise: bool,
}

impl Delta {
    /// Ratio of means with a delta-method interval and Welch-Satterthwaite degrees of freedom.
    pub fn between(baseline: &Estimate, contender: &Estimate) -> Option<Delta> {
        if baseline.mean == 0.0 {
            return None;
        }
        let ratio = contender.mean / baseline.mean;
        let pct = (ratio - 1.0) * 100.0;
        if baseline.n < 2 || contender.n < 2 {
            return Some(Delta { pct, ratio, pct_low: f64::NAN, pct_high: f64::NAN, within_noise: false });
        }
        let vb = baseline.stdev.powi(2) / baseline.n as f64;
        let vc = contender.stdev.powi(2) / contender.n as f64;
        // Var(C/B) ~ (C/B)^2 (vc/C^2 + vb/B^2)
        let (rb, rc) = (vb / baseline.mean.powi(2), vc / contender.mean.powi(2).max(f64::MIN_POSITIVE));
        let se = ratio.abs() * (rb + rc).sqrt();
        // Welch-Satterthwaite on the relative variances the interval is built from (on the
        // absolute ones, the side with the larger mean would dominate the degrees of freedom).
        let df = if rb + rc > 0.0 {
            (rb + rc).powi(2) / (rb.powi(2) / (baseline.n - 1) as f64 + rc.powi(2) / (contender.n - 1) as f64)
        } else {
            (baseline.n + contender.n - 2) as f64
        };
        let half = t975(df.max(1.0)) * se * 100.0;
        let (lo, hi) = (pct - half, pct + half);
        Some(Delta { pct, ratio, pct_low: lo, pct_high: hi, within_noise: lo <= 0.0 && hi >= 0.0 })
    }

    /// Whether an interval exists (both sides repeated).
    /// `+12.3% [+4.5, +20.1]` followed by `noise_mark` when within noise; without an interval
    /// (one run on a side), `+12.3% (no interval: 1 run)`.
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

    pub fn has_interval(&self) -> bool {
        self.pct_low.is_finite()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_of_known_values() {
        let e = Estimate::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(e.mean, 12.0);
        assert!((e.stdev - 2.0).abs() < 1e-12);
        assert!((e.cv_pct - 16.666_666).abs() < 1e-3);
        // t(0.975, 2) = 4.303; 4.303 * 2 / sqrt(3)
        assert!((e.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert!(Estimate::of(&[5.0]).unwrap().ci95.is_nan());
    }

    #[test]
    fn delta_arithmetic() {
        let b = Estimate::of(&[100.0, 100.0, 100.0]).unwrap();
        let c = Estimate::of(&[144.6, 144.6, 144.6]).unwrap();
        let d = Delta::between(&b, &c).unwrap();
        assert!((d.pct - 44.6).abs() < 1e-9);
        assert!((d.ratio - 1.446).abs() < 1e-12);
        assert!(!d.within_noise, "no variance: a clear change");
        // Latency down 30.8%.
        let l = Delta::between(&Estimate::of(&[10.0, 10.0]).unwrap(), &Estimate::of(&[6.92, 6.92]).unwrap()).unwrap();
        assert!((l.pct + 30.8).abs() < 1e-9);
    }

    #[test]
    fn noisy_delta_is_within_noise() {
        let b = Estimate::of(&[100.0, 140.0, 60.0]).unwrap();
        let c = Estimate::of(&[110.0, 70.0, 150.0]).unwrap();
        let d = Delta::between(&b, &c).unwrap();
        assert!(d.has_interval());
        assert!(d.within_noise, "{d:?}");
        assert!(d.pct_low < 0.0 && d.pct_high > 0.0);
    }

    #[test]
    fn single_runs_have_no_interval() {
        let d = Delta::between(&Estimate::of(&[100.0]).unwrap(), &Estimate::of(&[120.0]).unwrap()).unwrap();
        assert!(!d.has_interval());
        assert!((d.pct - 20.0).abs() < 1e-9);
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t975(1.0), 12.706);
        assert!((t975(2.5) - (4.303 + 3.182) / 2.0).abs() < 1e-9);
        assert!((t975(1000.0) - 1.96).abs() < 0.01);
    }

    #[test]
    fn mad_outliers() {
        let mut v: Vec<f64> = (0..20).map(|i| 98.0 + (i % 5) as f64).collect();
        v[7] = 10.0;
        assert_eq!(outliers_mad(&v, 3.5), vec![7]);
    }
}
