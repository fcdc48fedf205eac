//! What the interval assumes per workload, pooled from committed runs of the main job rather
//! than estimated per contest: the round-to-round correlation, and the offset between server
//! lives.
//!
//! The correlation: at the main job's 12-18 kept rounds a contest's own lag-1 is too noisy to
//! plug in (its 80% upper bound turned a lag-1 of +0.42 at 13 rounds into rho 0.88 and an
//! interval 4.4 times as wide on 3 degrees of freedom), while over many contests it is well
//! determined. A contest's own lag-1 far above its prior is a warning ([`far_above`]), not a
//! wider interval.
//!
//! The offset between server lives: two identical servers, up at once and measured slice by
//! slice, can keep a level apart for as long as they live (seen on the read-only workload held
//! in memory: a control 15% above its twin for a whole contest, a null cell 8.5% below). Paired
//! rounds cannot cancel it, since every round sees the same two lives, and no contest of one
//! life can estimate it; the null changes of many contests can ([`pool_life_sd`]). Its variance
//! is added to each change's ([`super::with_life_offset`]).

/// One workload's prior.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prior {
    pub workload: &'static str,
    /// The pooled, bias-corrected lag-1 autocorrelation of the per-round log ratios, raised to
    /// its upper bound ([`UPPER_Z`] standard errors over the contests).
    pub rho: f64,
    /// Contender series it was pooled from.
    pub series: usize,
    /// The standard deviation of the offset between two server lives on the log ratio, for
    /// contests with the servers' memory unlimited and limited (the maximum-likelihood estimate
    /// over [`LIFE_SOURCE`]'s null changes, [`pool_life_sd`]): [`Prior::life_sd`].
    pub life_sd_unlimited: f64,
    pub life_sd_limited: f64,
    /// Null changes each was estimated from.
    pub null_changes: usize,
}

impl Prior {
    /// The offset between server lives of a contest whose servers' memory is `limited` or not.
    pub fn life_sd(&self, memory_limited: bool) -> f64 {
        if memory_limited { self.life_sd_limited } else { self.life_sd_unlimited }
    }

    /// The degrees of freedom of the offset's variance: half its null changes, since they come
    /// in pairs that share the baseline's life (the control and the null cell of one contest).
    pub fn life_df(&self) -> f64 {
        self.null_changes as f64 / 2.0
    }
}

/// Where the priors come from: the kept rounds' lag-1 of every contender in the main job's
/// three fresh-clone runs of issue 24, committed as their summary.csv (lag1_autocorrelation,
/// kept_rounds). Named one by one: a later run committed beside them does not move the priors.
pub const SOURCE: &[&str] = &[
    "docs/bench-output/fresh1-20261203T073119Z-summary.csv",
    "docs/bench-output/fresh2-20261203T074724Z-summary.csv",
    "docs/bench-output/fresh3-20261203T110045Z-summary.csv",
];

/// How many standard errors of the pooled mean the prior is raised by (0: the coverage gate
/// with the prior pooled afresh from 18 simulated series per contest held 94.8-96.0% on every
/// stationary kind; 1 gave 96.9-97.8%, above the 97% of a calibrated interval).
pub const UPPER_Z: f64 = 0.0;

/// The priors of the workloads measured, pooled from [`SOURCE`] (the test
/// `the_priors_are_the_committed_runs` recomputes them).
pub const PRIORS: &[Prior] = &[
    Prior {
        workload: "read-only",
        rho: 0.076,
        series: 18,
        life_sd_unlimited: 0.05,
        life_sd_limited: 0.0205,
        null_changes: 16,
    },
    Prior { workload: "tpcb", rho: 0.203, series: 18, life_sd_unlimited: 0.0, life_sd_limited: 0.0, null_changes: 8 },
];

/// The prior of a workload without its own: every series of [`SOURCE`] pooled.
/// Its offsets between server lives: every null change of [`LIFE_SOURCE`] pooled (the test
/// `the_life_offsets_are_the_committed_runs` recomputes every prior's).
pub const POOLED: Prior =
    Prior { workload: "", rho: 0.140, series: 36, life_sd_unlimited: 0.0335, life_sd_limited: 0.016, null_changes: 24 };

/// Where the offsets between server lives come from: the eight committed summaries of the main
/// job run as a user runs it (issue 24's three fresh-clone runs and issue 37's five), each
/// null change of them ([`is_null`]) with its published interval.
pub const LIFE_SOURCE: &[&str] = &[
    "docs/bench-output/fresh1-20261203T073119Z-summary.csv",
    "docs/bench-output/fresh2-20261203T074724Z-summary.csv",
    "docs/bench-output/fresh3-20261203T110045Z-summary.csv",
    "docs/bench-output/mainjob1-20261206T030507Z-summary.csv",
    "docs/bench-output/mainjob2-20261206T031810Z-summary.csv",
    "docs/bench-output/mainjob3-20261206T061431Z-summary.csv",
    "docs/bench-output/mainjob4-20261206T062739Z-summary.csv",
    "docs/bench-output/mainjob5-20261206T220657Z-summary.csv",
];

/// The main job's changes whose truth is 0: the negative control's (a twin of the baseline) on
/// every workload, and WAL on PMem under select-only (the data where the baseline's is, and no
/// WAL written), at both memory limits.
pub fn is_null(placement: &str, workload: &str) -> bool {
    placement == "control" || (placement == "wal-on-pmem" && workload == "read-only")
}

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

/// The prior of `workload`: its own, else the pooled one.
pub fn of(workload: &str) -> Prior {
    PRIORS.iter().copied().find(|p| p.workload == workload).unwrap_or(POOLED)
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

    /// The committed runs' (workload, lag-1, kept rounds) of every contender row.
    fn committed() -> Vec<(String, f64, usize)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let files: Vec<_> = SOURCE.iter().map(|f| root.join(f)).collect();
        let mut out = vec![];
        for f in files {
            let mut r = csv::Reader::from_path(&f).expect("csv");
            let h = r.headers().expect("header").clone();
            let col = |name: &str| h.iter().position(|c| c == name).expect(name);
            let (w, l, k) = (col("workload"), col("lag1_autocorrelation"), col("kept_rounds"));
            for row in r.records() {
                let row = row.expect("row");
                if let (Ok(lag1), Ok(kept)) = (row[l].parse::<f64>(), row[k].parse::<usize>()) {
                    out.push((row[w].to_string(), lag1, kept));
                }
            }
        }
        out
    }

    #[test]
    fn the_priors_are_the_committed_runs() {
        let rows = committed();
        for p in PRIORS.iter().chain([&POOLED]) {
            let s: Vec<(f64, usize)> = rows
                .iter()
                .filter(|(w, ..)| p.workload.is_empty() || *w == p.workload)
                .map(|&(_, r, n)| (r, n))
                .collect();
            assert_eq!(s.len(), p.series, "{p:?}");
            assert!((pool(&s) - p.rho).abs() < 0.0005, "{p:?}: pooled {:.4}", pool(&s));
        }
        assert_eq!(of("tpcb").rho, 0.203);
        assert_eq!(of("tpcc").rho, POOLED.rho, "a workload without its own gets the pooled one");
    }

    /// The committed runs' null changes: (workload, memory limited, log change, standard
    /// error), the standard error from the published 95% interval on the log scale and t at
    /// kept rounds - 1.
    fn null_changes() -> Vec<(String, bool, f64, f64)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut out = vec![];
        for f in LIFE_SOURCE {
            let mut r = csv::Reader::from_path(root.join(f)).expect("csv");
            let h = r.headers().expect("header").clone();
            let col = |name: &str| h.iter().position(|c| c == name).expect(name);
            let (p, w, k, m) = (col("placement"), col("workload"), col("kept_rounds"), col("memory_limit"));
            let (d, lo, hi) = (col("tps_delta_pct"), col("tps_delta_ci95_low_pct"), col("tps_delta_ci95_high_pct"));
            for row in r.records() {
                let row = row.expect("row");
                if !is_null(&row[p], &row[w]) {
                    continue;
                }
                let num = |i: usize| row[i].parse::<f64>().expect("a number");
                let log = |pct: f64| (1.0 + pct / 100.0).ln();
                let kept = row[k].parse::<f64>().expect("kept rounds");
                let se = (log(num(hi)) - log(num(lo))) / 2.0 / crate::t975(kept - 1.0);
                out.push((row[w].to_string(), &row[m] != "unlimited", log(num(d)), se));
            }
        }
        out
    }

    #[test]
    fn the_life_offsets_are_the_committed_runs() {
        let rows = null_changes();
        for p in PRIORS.iter().chain([&POOLED]) {
            for limited in [false, true] {
                let c: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|(w, l, ..)| (p.workload.is_empty() || *w == p.workload) && *l == limited)
                    .map(|&(_, _, x, se)| (x, se))
                    .collect();
                assert_eq!(c.len(), p.null_changes, "{p:?}");
                let pooled = pool_life_sd(&c);
                assert!((pooled - p.life_sd(limited)).abs() < 1e-9, "{p:?}, limited {limited}: pooled {pooled:.4}");
            }
        }
    }

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
    fn a_lag1_far_above_the_prior_is_flagged() {
        // 16 rounds: corrected(0.5) = 9 / 13 = 0.69, more than 0.5 above a prior of 0.1.
        assert!(far_above(0.5, 16, 0.1));
        assert!(!far_above(0.2, 16, 0.1));
        assert!(!far_above(f64::NAN, 16, 0.1));
    }
}
