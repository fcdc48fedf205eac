//! A host's calibration from its dimensioning run (`pgtier calibrate`): an A/A result set whose
//! contenders are all twins of the baseline, so every change's truth is 0. What each workload's
//! contests need to assume there ([`stats::rounds::prior::Prior`]) is estimated from it, as the
//! committed priors were from the development machine's null changes: the round-to-round
//! correlation pooled over every twin's kept rounds, then the offset between server lives from
//! the spread of each contest's lives (the baseline's and its twins') less what the changes' own
//! standard errors account for (the interval with that correlation and no offset,
//! [`stats::rounds::prior::life_sd_from_twins`]), separately for servers with memory unlimited
//! and limited.

use std::collections::BTreeMap;

use results::manifest::PriorRecord;
use results::record::MemoryLabel;
use stats::rounds::prior::{Prior, pool};

use crate::ResultSet;
use crate::priors::{Priors, fallback};

/// What one workload's twins gave: the prior, and how much evidence stands behind each number.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadCalibration {
    pub workload: String,
    pub prior: Prior,
    /// Twin series whose lag-1 was pooled, and twin changes (memory unlimited, limited) the
    /// offsets were estimated from.
    pub series: usize,
    pub null_changes: (usize, usize),
    /// What could not be estimated and came from the fallback instead.
    pub fell_back: Vec<&'static str>,
}

impl WorkloadCalibration {
    /// The manifest's record of it.
    pub fn record(&self) -> PriorRecord {
        let note = (!self.fell_back.is_empty())
            .then(|| format!("from the fallback, too few twins to estimate: {}", self.fell_back.join(", ")));
        crate::priors::to_record(&self.workload, &self.prior, note)
    }
}

/// One A/A contest's twins: whether its servers' memory was limited, and each twin's change
/// (log) with its standard error.
type Twins = (bool, Vec<(f64, f64)>);

/// Every workload's calibration from A/A result sets of one key (every contender a twin of the
/// baseline; each set its own server lives).
pub fn estimate(sets: &[ResultSet]) -> Vec<WorkloadCalibration> {
    let Some(set) = sets.first() else { return vec![] };
    let workloads: Vec<String> = set.manifest.workloads.iter().map(|w| w.name.clone()).collect();
    // Both passes assume no offset: the priors given set it to 0 (`Rule::with_prior`).
    let rule = crate::rule_of(&set.manifest.measurement);
    let zero_offset = |rho: &BTreeMap<String, f64>| {
        Priors::Recorded(
            workloads
                .iter()
                .map(|w| {
                    let r = rho.get(w).copied().unwrap_or_else(|| fallback(w).rho);
                    (w.clone(), Prior { rho: r, life_sd_unlimited: 0.0, life_sd_limited: 0.0, ..fallback(w) })
                })
                .collect(),
        )
    };
    let mut series: BTreeMap<String, Vec<(f64, usize)>> = BTreeMap::new();
    for set in sets {
        let first = crate::summarize_with_priors(set, rule, zero_offset(&BTreeMap::new()));
        for (name, c) in &first.analysis.contests {
            let Some(w) = workloads.iter().find(|w| name.starts_with(&format!("{w} c"))) else { continue };
            for lag1 in c.lag1.values() {
                series.entry(w.clone()).or_default().push((*lag1, c.kept));
            }
        }
    }
    let rho: BTreeMap<String, f64> =
        series.iter().map(|(w, s)| (w.clone(), pool(s))).filter(|(_, r)| r.is_finite()).collect();
    // The first pass gave each twin's lag-1; the second, each twin's change with the pooled
    // correlation and no offset.
    let second: Vec<crate::Summary> =
        sets.iter().map(|s| crate::summarize_with_priors(s, rule, zero_offset(&rho))).collect();
    workloads
        .iter()
        .map(|w| {
            // Each contest's twins: (memory limited, log change, standard error).
            let mut contests: BTreeMap<(usize, String), Twins> = BTreeMap::new();
            let cells = second.iter().enumerate().flat_map(|(i, s)| s.cells.iter().map(move |c| (i, c)));
            for (i, c) in cells.filter(|(_, c)| &c.key.workload == w && !c.is_baseline) {
                let Some(d) = c.tps_delta.as_ref().filter(|d| d.se.is_finite() && d.se > 0.0 && d.ratio > 0.0) else {
                    continue;
                };
                let limited = c.key.memory_limit != MemoryLabel::Unlimited;
                contests
                    .entry((i, crate::contest::contest_of(&c.key)))
                    .or_insert((limited, vec![]))
                    .1
                    .push((d.ratio.ln(), d.se));
            }
            let fb = fallback(w);
            let mut fell_back = vec![];
            let n_series = series.get(w).map_or(0, Vec::len);
            let rho_w = rho.get(w).copied().unwrap_or_else(|| {
                fell_back.push("the correlation");
                fb.rho
            });
            let mut offset = |limited: bool, fb_sd: f64, what: &'static str| -> (f64, f64, usize) {
                let of: Vec<Vec<(f64, f64)>> =
                    contests.values().filter(|(l, _)| *l == limited).map(|(_, v)| v.clone()).collect();
                let n = of.iter().map(Vec::len).sum();
                let (sd, df) = stats::rounds::prior::life_sd_from_twins(&of);
                if sd.is_finite() {
                    (sd, df, n)
                } else {
                    if sets.iter().any(|s| measured_limit(s, w, limited)) {
                        fell_back.push(what);
                    }
                    (fb_sd, f64::INFINITY, n)
                }
            };
            let (life_sd_unlimited, df_u, n_u) = offset(false, fb.life_sd_unlimited, "the offset, memory unlimited");
            let (life_sd_limited, df_l, n_l) = offset(true, fb.life_sd_limited, "the offset, memory limited");
            // The offset's degrees of freedom: the fewer of the two memory states measured.
            let life_df = match df_u.min(df_l) {
                d if d.is_finite() => d,
                _ => fb.life_df,
            };
            WorkloadCalibration {
                workload: w.clone(),
                prior: Prior {
                    rho: rho_w,
                    series: n_series,
                    life_sd_unlimited,
                    life_sd_limited,
                    null_changes: n_u + n_l,
                    life_df,
                },
                series: n_series,
                null_changes: (n_u, n_l),
                fell_back,
            }
        })
        .collect()
}

/// Whether the A/A run measured `workload` with memory `limited` (or unlimited) at all: a
/// memory limit the file does not have needs no estimate.
fn measured_limit(set: &ResultSet, workload: &str, limited: bool) -> bool {
    set.runs.iter().any(|r| r.cell.workload == workload && (r.cell.memory_limit != MemoryLabel::Unlimited) == limited)
}
