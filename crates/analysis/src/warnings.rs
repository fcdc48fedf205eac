//! What the summary warns a reader about: noisy, failed or unsteady cells, intervals wider than
//! their target, and the runs' own warnings, a warning that many runs share said once.

use std::fmt;

use results::Warning;
use results::record::CellKey;
use serde::Serialize;

use crate::cell::describe;
use results::ResultSet;

/// One warning of the summary (`summary.json`, report.md, the terminal), stored as its sentence.
#[derive(Clone, Debug, PartialEq)]
pub enum SummaryWarning {
    /// Runs design: a cell's repetitions disagree (TPS coefficient of variation above 5%).
    Noisy { cell: CellKey, cv_pct: f64 },
    /// Failed runs of a cell, left out of its figures.
    FailedRuns { cell: CellKey, count: usize },
    /// Seconds of a cell's runs far from their run's median TPS.
    OutlierSeconds { cell: CellKey, outliers: usize, seconds: usize },
    /// A change's interval is wider than the target half-width, and why the measurement stopped.
    WideInterval { cell: CellKey, half_width_pct: f64, target_pct: f64, stopped: String },
    /// Slices: a contest was not steady (a trend in its kept rounds, a segment still trending
    /// with 4 rounds left, a warm-up curve left, or a warm-up cut past a sixth of a segment's
    /// rounds): its changes are `not steady`, neither real changes nor equivalences,
    /// except the headline changes of the contenders in `standing`, whose intervals lie beyond
    /// twice their drift ([`crate::contest::withhold_unsteady`]).
    NotSteady { contest: String, detail: String, standing: Vec<String> },
    /// Slices under a workload's prior correlation: a contender's own lag-1 over its kept rounds
    /// lies far above the prior ([`stats::rounds::prior::far_above`]), so its interval, which
    /// assumes the prior, may be too narrow.
    CorrelatedRounds { contest: String, placement: String, lag1: f64, kept: usize, prior: f64 },
    /// The negative control's interval excludes 0 in a contest: its verdicts are untrustworthy.
    ControlMoved { contest: String, detail: String },
    /// The error model failed across the contests ([`crate::control::model_checks`]): the
    /// intervals were about `inflation` times too narrow on this run; `withheld` real changes
    /// stood on the model alone and are inconclusive.
    ErrorModel { detail: String, inflation: f64, withheld: usize },
    /// pgbench was pinned and these cells are client-bound: the pinned client may be their
    /// ceiling (docs/benchmarks.md, "Precision per minute": on 2 cores it cut the gains 3-6 fold).
    PinnedClientCeiling { pin_client: String, bound: Vec<String>, cells: usize },
    /// The machine's state moved between the rounds (runs) of a contest's cells: in `cells`,
    /// per cell, the ranges that crossed a threshold of [`machine_moved`].
    MachineMoved { contest: String, cells: Vec<String> },
    /// Some cells have a single successful run.
    SingleRunCells,
    /// One run's own warning.
    Run { run_id: String, warning: Warning },
    /// The same kind of warning on more than three runs: the runs, and the first one's warning.
    Runs { run_ids: Vec<String>, first: Warning },
}

impl fmt::Display for SummaryWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryWarning::Noisy { cell, cv_pct } => write!(
                f,
                "{}: repetitions disagree (TPS coefficient of variation {cv_pct:.1}% > 5%); treat its figures as noisy",
                describe(cell)
            ),
            SummaryWarning::FailedRuns { cell, count } => {
                write!(f, "{}: {count} run(s) failed and are left out of the figures", describe(cell))
            }
            SummaryWarning::OutlierSeconds { cell, outliers, seconds } => write!(
                f,
                "{}: {outliers} of {seconds} seconds lie more than 3.5 median absolute deviations from their run's median TPS (stalls or bursts; see the stability chart)",
                describe(cell)
            ),
            SummaryWarning::WideInterval { cell, half_width_pct, target_pct, stopped } => write!(
                f,
                "{}: the change's 95% interval is ±{half_width_pct:.1}%, wider than the target ±{target_pct:.1}% ({stopped})",
                describe(cell)
            ),
            SummaryWarning::NotSteady { contest, detail, standing } => {
                write!(f, "contest {contest}: not steady ({detail}); its changes are not called real changes or equivalences on this evidence, measure it longer")?;
                if !standing.is_empty() {
                    write!(
                        f,
                        "; except {}'s headline change, real however the rounds moved: its interval lies beyond twice the drift seen on the far side of 0",
                        standing.join(" and ")
                    )?;
                }
                Ok(())
            }
            SummaryWarning::CorrelatedRounds { contest, placement, lag1, kept, prior } => write!(
                f,
                "contest {contest}: {placement}'s kept rounds have a lag-1 autocorrelation of {lag1:+.2} over {kept} rounds, far above the workload's prior of {prior:.2} that its interval assumes: the interval may be too narrow; measure it again, or longer"
            ),
            SummaryWarning::ErrorModel { detail, inflation, withheld } => write!(
                f,
                "the intervals do not hold on this run: {detail}. Changes are judged with every interval widened {inflation:.1} times: {withheld} that were real changes on the intervals alone are inconclusive. Measure again (a noisier machine than its calibration, or a calibration from another state of it)"
            ),
            SummaryWarning::ControlMoved { contest, detail } => write!(
                f,
                "contest {contest}: {detail}; nothing differs between the two, so its other verdicts are not to be trusted: measure it again"
            ),
            SummaryWarning::PinnedClientCeiling { pin_client, bound, cells } => write!(
                f,
                "pgbench was pinned (`pin_client = \"{pin_client}\"`) and {} of {cells} cells are client-bound ({}): the pinned client may be their ceiling, which makes the placements alike and their intervals narrow; give `pin_client` more CPUs, or measure without pinning, before reading their changes as the storage's",
                bound.len(),
                bound.join("; ")
            ),
            SummaryWarning::MachineMoved { contest, cells } => write!(
                f,
                "contest {contest}: the machine's state moved between its rounds ({}); the paired rounds cancel only what stays steady, so part of its changes may be the machine's: measure it again on a quieter machine",
                cells.join("; ")
            ),
            SummaryWarning::SingleRunCells => f.write_str(
                "some cells have a single successful run: no confidence interval, so no delta can be called a real change",
            ),
            SummaryWarning::Run { run_id, warning } => write!(f, "{run_id}: {warning}"),
            SummaryWarning::Runs { run_ids, first } => write!(
                f,
                "{} runs ({}): {first} (figures of the first; each run's own are in its result.json)",
                run_ids.len(),
                run_ids.join(", ")
            ),
        }
    }
}

impl Serialize for SummaryWarning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Whether two runs' warnings say the same thing, figures aside: the same variant (for the
/// client's CPU, the same client); sentences of no variant when they differ only in digits.
fn same_kind(a: &Warning, b: &Warning) -> bool {
    match (a, b) {
        (Warning::ClientCpuBound { client: x, .. }, Warning::ClientCpuBound { client: y, .. }) => x == y,
        (Warning::Other(x), Warning::Other(y)) => {
            let shape = |s: &str| s.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect::<String>();
            shape(x) == shape(y)
        }
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Per-run warnings; the same kind of warning on more than three runs becomes one line.
pub(crate) fn run_warnings(set: &ResultSet) -> Vec<SummaryWarning> {
    let mut groups: Vec<Vec<(&str, &Warning)>> = Vec::new();
    for r in &set.runs {
        for w in &r.warnings {
            match groups.iter_mut().find(|g| same_kind(g[0].1, w)) {
                Some(runs) => runs.push((r.run_id.as_str(), w)),
                None => groups.push(vec![(r.run_id.as_str(), w)]),
            }
        }
    }
    let mut out = Vec::new();
    for runs in groups {
        if runs.len() <= 3 {
            out.extend(
                runs.iter().map(|(id, w)| SummaryWarning::Run { run_id: id.to_string(), warning: (*w).clone() }),
            );
        } else {
            out.push(SummaryWarning::Runs {
                run_ids: runs.iter().map(|(id, _)| id.to_string()).collect(),
                first: runs[0].1.clone(),
            });
        }
    }
    out
}

/// [`machine_moved`]'s thresholds on the range of a cell's counted rounds. CPU used outside
/// the study: 20 points of the machine's CPU time, more than the ±8-10% half-widths the design
/// aims at, so that a CPU-bound cell's rounds with that much more outside load lose more than
/// its interval allows (slices pair rounds, which cancels outside load steady within a round,
/// not load that comes and goes). Steal: 10 points, half that, as the hypervisor takes the CPU
/// from the whole machine. The 1-minute load: 2 more runnable tasks per CPU, a doubling of
/// the work waiting for each CPU at the study's own load; wide, because the load average lags a
/// minute (a contest after one with more clients starts with its predecessor's load) and counts
/// the study's own processes (steady across a cell's rounds: the same clients).
pub const OUTSIDE_RANGE_PCT: f64 = 20.0;
pub const STEAL_RANGE_PCT: f64 = 10.0;
pub const LOAD_RANGE_PER_CPU: f64 = 2.0;

/// The lowest and highest of `v` (None when empty).
fn range(v: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    v.into_iter().filter(|x| x.is_finite()).fold(None, |r, x| match r {
        None => Some((x, x)),
        Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
    })
}

/// The machine's state over a cell's rounds: the ranges of the 1-minute load (both ends of
/// every round), of the CPU used outside the study (% of the machine) and of steal.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineRanges {
    pub rounds: usize,
    pub cpus: u32,
    pub load: Option<(f64, f64)>,
    pub outside_pct: Option<(f64, f64)>,
    pub steal_pct: Option<(f64, f64)>,
}

impl MachineRanges {
    /// Over the runs that recorded the machine's state (None when none did).
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a results::RunRecord>) -> Option<MachineRanges> {
        let states: Vec<&results::record::MachineState> = runs.into_iter().filter_map(|r| r.machine.as_ref()).collect();
        (!states.is_empty()).then(|| MachineRanges {
            rounds: states.len(),
            cpus: states.iter().map(|m| m.cpus).max().unwrap_or(0),
            load: range(states.iter().flat_map(|m| [m.load1_start, m.load1_end]).flatten()),
            outside_pct: range(states.iter().filter_map(|m| m.outside_pct)),
            steal_pct: range(states.iter().map(|m| m.steal_pct)),
        })
    }

    /// The ranges that cross a threshold, as phrases ("CPU used outside the study 3-61% of
    /// the machine").
    pub fn moved(&self) -> Vec<String> {
        let wide = |r: Option<(f64, f64)>, limit: f64| r.filter(|(lo, hi)| hi - lo > limit);
        let mut out = Vec::new();
        if let Some((lo, hi)) = wide(self.outside_pct, OUTSIDE_RANGE_PCT) {
            out.push(format!("CPU used outside the study {lo:.0}-{hi:.0}% of the machine"));
        }
        if let Some((lo, hi)) = wide(self.steal_pct, STEAL_RANGE_PCT) {
            out.push(format!("steal {lo:.0}-{hi:.0}%"));
        }
        if let Some((lo, hi)) = wide(self.load, LOAD_RANGE_PER_CPU * self.cpus.max(1) as f64) {
            out.push(format!("1-minute load {lo:.1}-{hi:.1} on {} CPUs", self.cpus));
        }
        out
    }
}

/// Contests during which the machine's state moved: a cell whose counted rounds (its runs, in
/// the runs design) saw the CPU used outside the study, steal or the load vary by more than the
/// thresholds above. Per cell, not over the contest: what a placement's own device costs in
/// kernel threads and helpers (counted outside the study) differs between placements, steadily.
pub(crate) fn machine_moved(set: &ResultSet, analysis: &crate::contest::Analysis) -> Vec<SummaryWarning> {
    let mut cells: std::collections::BTreeMap<&CellKey, Vec<&results::RunRecord>> = Default::default();
    for r in set.runs.iter().filter(|r| r.status == results::RunStatus::Ok && analysis.counts(r)) {
        cells.entry(&r.cell).or_default().push(r);
    }
    let mut contests: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (cell, runs) in cells {
        let Some(ranges) = MachineRanges::of(runs.iter().copied()) else { continue };
        let moved = ranges.moved();
        if ranges.rounds >= 2 && !moved.is_empty() {
            contests.entry(crate::contest::contest_of(cell)).or_default().push(format!(
                "{}: {}",
                cell.placement,
                moved.join(", ")
            ));
        }
    }
    contests.into_iter().map(|(contest, cells)| SummaryWarning::MachineMoved { contest, cells }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(core_pct: f64, client: &str) -> Warning {
        Warning::ClientCpuBound { client: client.into(), core_pct, threads: 2 }
    }

    #[test]
    fn the_same_kind_figures_aside() {
        assert!(same_kind(&client(95.0, "pgbench"), &client(105.0, "pgbench")), "figures differ, digits too");
        assert!(!same_kind(&client(95.0, "pgbench"), &client(95.0, "TPC-C")), "another client");
        let checkpoint = |at: f64| Warning::CheckpointInRun { at_s: vec![at] };
        assert!(same_kind(&checkpoint(3.0), &checkpoint(17.0)));
        assert!(!same_kind(&checkpoint(3.0), &Warning::MachineCpuBound { machine_pct: 95.0, hardware_threads: 2 }));
        let other = |s: &str| Warning::Other(s.into());
        assert!(same_kind(&other("a note on run 3"), &other("a note on run 4")));
        assert!(!same_kind(&other("a note on run 3"), &other("another note")));
    }

    #[test]
    fn sentences_as_before() {
        let w = SummaryWarning::Runs {
            run_ids: vec!["0001-a".into(), "0002-b".into()],
            first: Warning::CheckpointInRun { at_s: vec![3.0] },
        };
        assert_eq!(
            w.to_string(),
            "2 runs (0001-a, 0002-b): a checkpoint started inside the measured run (at 3 s): runs with and without a checkpoint are not comparable; prefer longer runs (figures of the first; each run's own are in its result.json)"
        );
        assert_eq!(serde_json::to_value(&w).unwrap(), serde_json::Value::String(w.to_string()));
    }
}
