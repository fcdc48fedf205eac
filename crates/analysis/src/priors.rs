//! The priors a contest's interval assumes ([`stats::rounds::prior::Prior`]: the round-to-round
//! correlation and the offset between server lives), and where they come from: the one place
//! that maps a contest onto the numbers it assumes ([`Priors::of`]).
//!
//! A study records its priors in its manifest ([`results::manifest::CalibrationRecord`]): this
//! host's own calibration (`pgtier calibrate`, estimated by [`crate::calibration`]) or, on an
//! uncalibrated host, the [`fallback`]. Result sets from before that record were estimated with
//! the development machine's committed runs ([`of`]), and still are.

use stats::rounds::prior::Prior;

/// Where the priors come from: the kept rounds' lag-1 of every contender in the main job's
/// three fresh-clone runs of issue 24, committed as their summary.csv (lag1_autocorrelation,
/// kept_rounds). Named one by one: a later run committed beside them does not move the priors.
pub const SOURCE: &[&str] = &[
    "docs/bench-output/fresh1-20261203T073119Z-summary.csv",
    "docs/bench-output/fresh2-20261203T074724Z-summary.csv",
    "docs/bench-output/fresh3-20261203T110045Z-summary.csv",
];

/// The priors of the workloads measured, pooled from [`SOURCE`] (the test
/// `the_priors_are_the_committed_runs` recomputes them).
pub const PRIORS: &[(&str, Prior)] = &[
    (
        "read-only",
        Prior {
            rho: 0.076,
            series: 18,
            life_sd_unlimited: 0.05,
            life_sd_limited: 0.0205,
            null_changes: 16,
            life_df: 8.0,
        },
    ),
    (
        "tpcb",
        Prior { rho: 0.203, series: 18, life_sd_unlimited: 0.0, life_sd_limited: 0.0, null_changes: 8, life_df: 4.0 },
    ),
];

/// The prior of a workload without its own: every series of [`SOURCE`] pooled.
/// Its offsets between server lives: every null change of [`LIFE_SOURCE`] pooled (the test
/// `the_life_offsets_are_the_committed_runs` recomputes every prior's).
pub const POOLED: Prior = Prior {
    rho: 0.140,
    series: 36,
    life_sd_unlimited: 0.0335,
    life_sd_limited: 0.016,
    null_changes: 24,
    life_df: 12.0,
};

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

/// The prior of `workload`: its own, else the pooled one.
pub fn of(workload: &str) -> Prior {
    PRIORS.iter().find(|(w, _)| *w == workload).map(|(_, p)| *p).unwrap_or(POOLED)
}

/// The fallback of an uncalibrated host for `workload`: the development machine's committed
/// prior ([`of`]), each number raised to at least the pooled one's ([`POOLED`]), so that no
/// workload assumes less correlation or a smaller offset between server lives than the committed
/// runs showed on average (tpcb's own offset was 0 on 4 degrees of freedom). Measured on
/// another machine: an interval built on it is labelled "uncalibrated host".
pub fn fallback(workload: &str) -> Prior {
    let own = of(workload);
    Prior {
        rho: own.rho.max(POOLED.rho),
        series: own.series,
        life_sd_unlimited: own.life_sd_unlimited.max(POOLED.life_sd_unlimited),
        life_sd_limited: own.life_sd_limited.max(POOLED.life_sd_limited),
        null_changes: own.null_changes.min(POOLED.null_changes),
        life_df: own.life_df.min(POOLED.life_df),
    }
}

/// The priors a result set's contests assume.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Priors {
    /// Result sets without a calibration record: the committed runs' ([`of`]).
    #[default]
    Committed,
    /// The priors the manifest records, per workload; a workload it does not name gets the
    /// [`fallback`].
    Recorded(Vec<(String, Prior)>),
}

impl Priors {
    /// The priors a result set recorded.
    pub fn of_manifest(m: &results::Manifest) -> Priors {
        match &m.calibration {
            None => Priors::Committed,
            Some(c) => Priors::Recorded(c.priors.iter().map(|p| (p.workload.clone(), from_record(p))).collect()),
        }
    }

    /// The prior of `workload`'s contests.
    pub fn of(&self, workload: &str) -> Prior {
        match self {
            Priors::Committed => of(workload),
            Priors::Recorded(v) => {
                v.iter().find(|(w, _)| w == workload).map(|(_, p)| *p).unwrap_or_else(|| fallback(workload))
            }
        }
    }
}

/// A prior as the manifest records it.
pub fn to_record(workload: &str, p: &Prior, note: Option<String>) -> results::manifest::PriorRecord {
    results::manifest::PriorRecord {
        workload: workload.to_string(),
        rho: p.rho,
        series: p.series,
        life_sd_unlimited: p.life_sd_unlimited,
        life_sd_limited: p.life_sd_limited,
        null_changes: p.null_changes,
        life_df: p.life_df,
        note,
    }
}

/// A recorded prior's numbers.
pub fn from_record(r: &results::manifest::PriorRecord) -> Prior {
    Prior {
        rho: r.rho,
        series: r.series,
        life_sd_unlimited: r.life_sd_unlimited,
        life_sd_limited: r.life_sd_limited,
        null_changes: r.null_changes,
        life_df: r.life_df,
    }
}

/// The record of an uncalibrated host: every workload's [`fallback`], said where it came from.
pub fn uncalibrated(workloads: &[&str], why: &str) -> results::manifest::CalibrationRecord {
    results::manifest::CalibrationRecord {
        host_calibrated: false,
        source: format!(
            "{why}; the fallback priors, from {} committed runs of pgtier's development machine (a 2-core VM), raised to at least their pooled values; run `calibrate --config` with this file (`cargo xtask calibrate` or `pgtier calibrate`) for intervals calibrated on this host",
            LIFE_SOURCE.len()
        ),
        priors: workloads.iter().map(|w| to_record(w, &fallback(w), None)).collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::rounds::prior::{pool, pool_life_sd};

    #[test]
    fn the_fallback_is_never_below_the_pooled_prior() {
        for w in ["read-only", "tpcb", "tpcc"] {
            let f = fallback(w);
            assert!(f.rho >= POOLED.rho && f.rho >= of(w).rho, "{w}");
            for limited in [false, true] {
                assert!(f.life_sd(limited) >= POOLED.life_sd(limited) && f.life_sd(limited) >= of(w).life_sd(limited));
            }
        }
        assert_eq!(fallback("tpcb").life_sd_unlimited, POOLED.life_sd_unlimited, "tpcb's own offset was 0");
        let recorded = Priors::Recorded(vec![("tpcb".into(), POOLED)]);
        assert_eq!(recorded.of("tpcb"), POOLED);
        assert_eq!(recorded.of("read-only"), fallback("read-only"), "a workload not recorded gets the fallback");
        assert_eq!(Priors::Committed.of("tpcb"), of("tpcb"));
    }

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
        for (workload, p) in PRIORS.iter().copied().chain([("", POOLED)]) {
            let s: Vec<(f64, usize)> =
                rows.iter().filter(|(w, ..)| workload.is_empty() || *w == workload).map(|&(_, r, n)| (r, n)).collect();
            assert_eq!(s.len(), p.series, "{p:?}");
            assert!((pool(&s) - p.rho).abs() < 0.0005, "{workload}: pooled {:.4}", pool(&s));
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
                let se = (log(num(hi)) - log(num(lo))) / 2.0 / stats::t975(kept - 1.0);
                out.push((row[w].to_string(), &row[m] != "unlimited", log(num(d)), se));
            }
        }
        out
    }

    #[test]
    fn the_life_offsets_are_the_committed_runs() {
        let rows = null_changes();
        for (workload, p) in PRIORS.iter().copied().chain([("", POOLED)]) {
            for limited in [false, true] {
                let c: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|(w, l, ..)| (workload.is_empty() || *w == workload) && *l == limited)
                    .map(|&(_, _, x, se)| (x, se))
                    .collect();
                assert_eq!(c.len(), p.null_changes, "{p:?}");
                assert_eq!(
                    p.life_df,
                    p.null_changes as f64 / 2.0,
                    "half the null changes: they share baselines in pairs"
                );
                let pooled = pool_life_sd(&c);
                assert!((pooled - p.life_sd(limited)).abs() < 1e-9, "{p:?}, limited {limited}: pooled {pooled:.4}");
            }
        }
    }
}
