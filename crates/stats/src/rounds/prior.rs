//! What the interval assumes rather than estimates per contest, as numbers ([`Prior`]), and how
//! such numbers are pooled from many contests: the round-to-round correlation ([`pool`]), and
//! the offset between server lives ([`pool_life_sd`]). Which prior a contest gets is the
//! caller's to say ([`super::Rule::with_prior`]); stats names no workload.
//!
//! The correlation: at the main job's 12-18 kept rounds a contest's own lag-1 is too noisy to
//! plug in (its 80% upper bound turned a lag-1 of +0.42 at 13 rounds into rho 0.88 and an
//! interval 4.4 times as wide on 3 degrees of freedom), while over many contests it is well
//! determined. A contest's own lag-1 far above its prior is a warning ([`far_above`]), not a
//! wider interval.
//!
//! The offset between server lives: two identical servers, up at once and measured slice by
//! slice, can keep a level apart for as long as they live (seen on a workload held in memory:
//! a twin of the baseline 15% above it for a whole contest). Paired
//! rounds cannot cancel it, since every round sees the same two lives, and no contest of one
//! life can estimate it; the null changes of many contests can ([`pool_life_sd`]). Its variance
//! is added to each change's ([`super::with_life_offset`]).

/// A prior: what a contest's interval assumes rather than estimates. Numbers only; where they
/// come from (a workload's pooled runs, a host's calibration) is the caller's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prior {
    /// The pooled, bias-corrected lag-1 autocorrelation of the per-round log ratios, raised to
    /// its upper bound ([`UPPER_Z`] standard errors over the contests).
    pub rho: f64,
    /// Contender series it was pooled from.
    pub series: usize,
    /// The standard deviation of the offset between two server lives on the log ratio, for
    /// contests with the servers' memory unlimited and limited (the maximum-likelihood estimate
    /// over null changes, [`pool_life_sd`]): [`Prior::life_sd`].
    pub life_sd_unlimited: f64,
    pub life_sd_limited: f64,
    /// Null changes each was estimated from.
    pub null_changes: usize,
    /// The degrees of freedom of the offset's variance ([`Prior::life_df`]).
    pub life_df: f64,
}

impl Prior {
    /// The offset between server lives of a contest whose servers' memory is `limited` or not.
    pub fn life_sd(&self, memory_limited: bool) -> f64 {
        if memory_limited { self.life_sd_limited } else { self.life_sd_unlimited }
    }

    /// The degrees of freedom of the offset's variance: for priors pooled from a study's null
    /// changes, half of them, since they come in pairs that share the baseline's life (the
    /// control and the null cell of one contest); for a calibration's twins, one per twin
    /// ([`life_sd_from_twins`]).
    pub fn life_df(&self) -> f64 {
        self.life_df
    }
}

/// How many standard errors of the pooled mean the prior is raised by (0: the coverage gate
/// with the prior pooled afresh from 18 simulated series per contest held 94.8-96.0% on every
/// stationary kind; 1 gave 96.9-97.8%, above the 97% of a calibrated interval).
pub const UPPER_Z: f64 = 0.0;

/// The maximum-likelihood standard deviation of the offset between server lives from null
/// changes `(log change, its standard error)`: each change is normal with variance
/// se^2 + sd^2, sd on a grid of 0.0005 from 0 to 0.15.
pub fn pool_life_sd(changes: &[(f64, f64)]) -> f64 {
    let c: Vec<(f64, f64)> =
        changes.iter().copied().filter(|(x, se)| x.is_finite() && se.is_finite() && *se > 0.0).collect();
    if c.is_empty() {
        return f64::NAN;
    }
    let nll = |sd: f64| -> f64 {
        c.iter()
            .map(|(x, se)| {
                let v = se * se + sd * sd;
                0.5 * v.ln() + 0.5 * x * x / v
            })
            .sum()
    };
    (0..=300).map(|i| i as f64 * 0.0005).min_by(|a, b| nll(*a).total_cmp(&nll(*b))).unwrap_or(0.0)
}

/// The offset between server lives from A/A contests, each the changes `(log change, its
/// standard error)` of K >= 2 twins against one baseline: `(sd, degrees of freedom)`.
///
/// The K + 1 lives of a contest (the baseline's change is 0) are K + 1 levels l_j + e_j, the
/// life's offset (variance s^2) plus the mean of its rounds' own noise (variance t^2, a change's
/// standard error being about sqrt(2) t); their sample variance, on K degrees of freedom,
/// estimates s^2 + t^2, so the offset between two lives (2 s^2) is twice it less the changes'
/// mean squared standard error. Contests are pooled by their degrees of freedom. Counting the
/// twins' changes as independent would give far fewer: they share the baseline's life (about
/// 4K / (K + 3) degrees of freedom, 2 for 3 twins, where this gives 3).
pub fn life_sd_from_twins(contests: &[Vec<(f64, f64)>]) -> (f64, f64) {
    let mut sum = 0.0;
    let mut df = 0.0;
    for c in contests {
        let c: Vec<(f64, f64)> = c.iter().copied().filter(|(x, se)| x.is_finite() && se.is_finite()).collect();
        if c.len() < 2 {
            continue;
        }
        let levels: Vec<f64> = std::iter::once(0.0).chain(c.iter().map(|(x, _)| *x)).collect();
        let (_, sd) = crate::mean_sd(&levels);
        let mean_se2 = c.iter().map(|(_, se)| se * se).sum::<f64>() / c.len() as f64;
        let k = c.len() as f64;
        sum += k * (2.0 * sd * sd - mean_se2);
        df += k;
    }
    if df == 0.0 {
        return (f64::NAN, 0.0);
    }
    ((sum / df).max(0.0).sqrt(), df)
}

/// A series' lag-1, bias-corrected (Marriott and Pope 1954: E[r] = rho - (1 + 3 rho) / n).
pub fn corrected(lag1: f64, n: usize) -> f64 {
    (n as f64 * lag1 + 1.0) / (n as f64 - 3.0)
}

/// Pools series' (lag-1, kept rounds) into a prior: the mean bias-corrected lag-1 plus
/// [`UPPER_Z`] standard errors of that mean, within [0, 0.9].
pub fn pool(series: &[(f64, usize)]) -> f64 {
    let c: Vec<f64> = series.iter().filter(|(r, n)| r.is_finite() && *n > 4).map(|&(r, n)| corrected(r, n)).collect();
    if c.len() < 2 {
        return f64::NAN;
    }
    let (m, sd) = crate::mean_sd(&c);
    (m + UPPER_Z * sd / (c.len() as f64).sqrt()).clamp(0.0, 0.9)
}

/// Whether a contest's own lag-1 (over `n` kept rounds) lies far above the prior: its
/// bias-corrected value more than 2 / sqrt(n) (about two standard errors) above. Its interval
/// may then be too narrow, and the report says so.
pub fn far_above(lag1: f64, n: usize, prior: f64) -> bool {
    n > 4 && lag1.is_finite() && corrected(lag1, n) > prior + 2.0 / (n as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_life_offset_is_recovered_from_simulated_null_changes() {
        // 400 null changes with standard errors 1-6% and a true offset sd of 4%.
        let mut rng = super::super::simulate::Rng(7);
        let c: Vec<(f64, f64)> = (0..400)
            .map(|i| {
                let se = 0.01 + 0.05 * (i % 10) as f64 / 9.0;
                ((se * se + 0.04f64 * 0.04).sqrt() * rng.normal(), se)
            })
            .collect();
        assert!((pool_life_sd(&c) - 0.04).abs() < 0.006, "{}", pool_life_sd(&c));
        // None: every change within its own error.
        let c: Vec<(f64, f64)> = (0..400).map(|i| (0.02 * rng.normal(), 0.02 + 0.0 * i as f64)).collect();
        assert!(pool_life_sd(&c) < 0.006, "{}", pool_life_sd(&c));
    }

    #[test]
    fn the_life_offset_is_recovered_from_simulated_twins() {
        // 3 twins per contest, an offset sd between two lives of 6% (3/sqrt(2) ... per life),
        // each life's mean noise 2%: 2,000 contests recover it; 4 contests give 12 df.
        let mut rng = super::super::simulate::Rng(11);
        let (life, noise) = (0.06 / 2f64.sqrt(), 0.02);
        let contest = |rng: &mut super::super::simulate::Rng| -> Vec<(f64, f64)> {
            let base = life * rng.normal() + noise * rng.normal();
            (0..3).map(|_| (life * rng.normal() + noise * rng.normal() - base, noise * 2f64.sqrt())).collect()
        };
        let many: Vec<Vec<(f64, f64)>> = (0..2000).map(|_| contest(&mut rng)).collect();
        let (sd, df) = life_sd_from_twins(&many);
        assert!((sd - 0.06).abs() < 0.003, "{sd}");
        assert_eq!(df, 6000.0);
        // No offset: the estimate is near 0 (noise only).
        let none: Vec<Vec<(f64, f64)>> = (0..2000)
            .map(|_| {
                let base = noise * rng.normal();
                (0..3).map(|_| (noise * rng.normal() - base, noise * 2f64.sqrt())).collect()
            })
            .collect();
        assert!(life_sd_from_twins(&none).0 < 0.01, "{}", life_sd_from_twins(&none).0);
        assert_eq!(life_sd_from_twins(&many[..4]).1, 12.0);
        assert!(life_sd_from_twins(&[vec![(0.1, 0.01)]]).0.is_nan(), "one twin has no spread");
    }

    #[test]
    fn a_lag1_far_above_the_prior_is_flagged() {
        // 16 rounds: corrected(0.5) = 9 / 13 = 0.69, more than 0.5 above a prior of 0.1.
        assert!(far_above(0.5, 16, 0.1));
        assert!(!far_above(0.2, 16, 0.1));
        assert!(!far_above(f64::NAN, 16, 0.1));
    }
}
