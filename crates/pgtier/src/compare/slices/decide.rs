//! The sliced scheduler's decisions, without I/O: the contests and their order, the sessions
//! they share, when a contest stops, which contests fell short of their target, and each
//! contest's share.
//! `slices/mod.rs` does the process work (servers, slices, records) and asks these.

use std::time::Duration;

use analysis::contest as analysis;
use results::RunStatus;
use results::record::MemoryLabel;
use results::record::{CellKey, RunRecord};
use runner::matrix::MatrixSpec;

/// The cells of one workload and client count under one build, memory limit and profile.
pub(super) struct Contest {
    pub(super) build: usize,
    pub(super) profile: usize,
    pub(super) memory: usize,
    pub(super) workload: usize,
    pub(super) clients: u32,
    pub(super) threads: u32,
    /// Placement indices, the baseline first.
    pub(super) placements: Vec<usize>,
    pub(super) rounds: u32,
    /// The segment its rounds belong to now (results::RunRecord::segment): 1 in its first
    /// session, one more for each session after and for each server restart.
    pub(super) segment: u32,
    pub(super) records: Vec<RunRecord>,
    /// Seconds its rounds took.
    pub(super) seconds: f64,
    /// The widest half-width of its changes after the last round (percentage points).
    pub(super) widest: Option<f64>,
    /// The estimator's view after the last round.
    pub(super) progress: Option<stats::rounds::Progress>,
    pub(super) stopped: Option<String>,
    /// It failed (a placement's server failed twice, or the baseline was dropped).
    pub(super) failed: bool,
    /// Kept as it was from the result set being resumed (its rounds are not made again).
    pub(super) kept: bool,
    /// What happened to its servers (a restart, a placement dropped), said with its stop reason.
    pub(super) notes: Vec<String>,
}

impl Contest {
    pub(super) fn name(&self, spec: &MatrixSpec) -> String {
        analysis::contest_of(&self.cell(spec, self.placements[0]))
    }

    pub(super) fn cell(&self, spec: &MatrixSpec, placement: usize) -> CellKey {
        CellKey {
            placement: spec.placements[placement].name.clone(),
            workload: spec.workloads[self.workload].name.clone(),
            clients: self.clients,
            memory_limit: MemoryLabel::of(spec.memory_limits[self.memory].bytes),
            profile: spec.profiles[self.profile].name.clone(),
            build: spec.builds[self.build].name.clone(),
        }
    }

    /// Where the contest stands by the report's own estimator (the warm-up cut, Stein's rule,
    /// the corrected intervals, the steady-state check); None until the baseline and a
    /// contender have a round.
    pub(super) fn progress(&self, baseline: &str, rule: &analysis::Rules) -> Option<stats::rounds::Progress> {
        let ok: Vec<&RunRecord> = self.records.iter().filter(|r| r.status == RunStatus::Ok).collect();
        analysis::contest_progress(&ok, baseline, rule)
    }

    /// Sets `progress` and `widest` from the records so far.
    pub(super) fn reassess(&mut self, baseline: &str, rule: &analysis::Rules) {
        self.progress = self.progress(baseline, rule);
        self.widest = self.progress.as_ref().and_then(|p| p.widest()).map(|w| w * 100.0);
    }
}

/// Contests in the order they run: by profile, memory limit, workload and client count.
pub(super) fn contests(spec: &MatrixSpec, baseline: &str) -> Vec<Contest> {
    let mut placements: Vec<usize> = (0..spec.placements.len()).collect();
    placements.sort_by_key(|&i| spec.placements[i].name != baseline);
    let mut out = Vec::new();
    for build in 0..spec.builds.len() {
        for profile in 0..spec.profiles.len() {
            for memory in 0..spec.memory_limits.len() {
                for (workload, w) in spec.workloads.iter().enumerate() {
                    for &clients in &w.clients {
                        out.push(Contest {
                            build,
                            profile,
                            memory,
                            workload,
                            clients,
                            threads: w.threads.unwrap_or(clients.min(spec.cores.max(1))).min(clients).max(1),
                            placements: placements.clone(),
                            rounds: 0,
                            segment: 0,
                            records: Vec::new(),
                            seconds: 0.0,
                            widest: None,
                            progress: None,
                            stopped: None,
                            failed: false,
                            kept: false,
                            notes: Vec::new(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// What the estimator says after a round: kept rounds against what Stein's rule asks for,
/// rounds cut, and whether the kept rounds are steady.
pub(super) fn progress_note(p: &stats::rounds::Progress) -> String {
    let mut note = format!("; {} kept", p.kept);
    if let Some(n) = p.needed {
        note.push_str(&format!(", {n} needed"));
    }
    if p.steady.iter().any(|s| !s) {
        note.push_str(", not steady");
    }
    note
}

/// Why a contest stops after this round, if it does: its target met under Stein's rule (the
/// kept rounds its pilot asked for, every interval within the target, the rounds steady), its
/// share of the budget spent, or `min_rounds` rounds without budget or target.
pub(super) fn stop_reason(
    c: &Contest,
    m: &experiment::Measurement,
    share: Option<f64>,
    spent: f64,
    round_secs: f64,
) -> Option<String> {
    let hw = c.widest.map(|w| format!("±{w:.1}%")).unwrap_or_else(|| "no interval yet".into());
    if c.rounds < m.min_rounds {
        return None;
    }
    let steady = c.progress.as_ref().is_none_or(|p| p.steady.iter().all(|s| *s));
    if let (Some(t), Some(p)) = (m.target_halfwidth_pct, &c.progress)
        && steady
        && p.done(t / 100.0)
    {
        return Some(format!(
            "target ±{t}% met after {} rounds ({hw}; {} kept, Stein's rule asked for {})",
            c.rounds,
            p.kept,
            p.needed.unwrap_or(p.kept)
        ));
    }
    let unsteady = if steady { "" } else { ", not steady" };
    match (share, m.target_halfwidth_pct) {
        (Some(share), _) if spent + round_secs > share => {
            Some(format!("its share of the budget ({share:.0} s) spent after {} rounds ({hw}{unsteady})", c.rounds))
        }
        (None, None) => Some(format!("{} rounds (min_rounds; no budget or target set) ({hw}{unsteady})", c.rounds)),
        (None, Some(_)) if c.rounds >= m.min_rounds * 10 => {
            Some(format!("{} rounds without reaching the target and no budget set ({hw}{unsteady})", c.rounds))
        }
        _ => None,
    }
}

/// Groups of contests that share one session (memory limit and profile), in order.
pub(super) fn session_groups(all: &[Contest]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, c) in all.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if all[g[0]].build == c.build && all[g[0]].profile == c.profile && all[g[0]].memory == c.memory => {
                g.push(i)
            }
            _ => groups.push(vec![i]),
        }
    }
    groups
}

/// The contests measured that missed their target: wider than `target` (percent), or without
/// an interval (a restart's warm-up took the rounds); failed ones not. They are not revisited:
/// a revisit restarts every server, and a contest of two server lives, each warming up, is
/// outside the coverage gate (docs/benchmarks.md, "No revisits").
pub(super) fn short_of_target(all: &[Contest], target: f64) -> Vec<usize> {
    (0..all.len())
        .filter(|&i| !all[i].failed && all[i].rounds > 0 && all[i].widest.is_none_or(|w| w > target))
        .collect()
}

/// The seconds a contest may take: what is left of `budget` after `elapsed` over the `remaining`
/// contests still to measure, this one included (None without a budget).
pub(super) fn share(budget: Option<Duration>, elapsed: Duration, remaining: usize) -> Option<f64> {
    let left = (budget?.as_secs_f64() - elapsed.as_secs_f64()).max(0.0);
    Some(left / remaining.max(1) as f64)
}

/// Which contests wrote to each placement's database (`<placement>/<build>`) since it was copied
/// or last settled: what decides a settle before a contest (`[measurement] settle`).
#[derive(Default)]
pub(super) struct Written(std::collections::HashMap<String, Vec<String>>);

impl Written {
    /// The contests that wrote to any of `slots` since, in the order first seen: a contest on
    /// them settles first when this is not empty.
    pub(super) fn since(&self, slots: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in slots.iter().filter_map(|s| self.0.get(s)).flatten() {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
        out
    }

    /// `slots` were settled, or freshly copied: nothing written to them since.
    pub(super) fn clean(&mut self, slots: &[String]) {
        for s in slots {
            self.0.remove(s);
        }
    }

    /// `contest` (whose workload writes) runs on `slots`.
    pub(super) fn wrote(&mut self, slots: &[String], contest: &str) {
        for s in slots {
            let list = self.0.entry(s.clone()).or_default();
            if !list.iter().any(|c| c == contest) {
                list.push(contest.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contest(rounds: u32, widest: Option<f64>) -> Contest {
        Contest {
            build: 0,
            profile: 0,
            memory: 0,
            workload: 0,
            clients: 8,
            threads: 2,
            placements: vec![0, 1],
            rounds,
            segment: 1,
            records: vec![],
            seconds: 0.0,
            widest,
            progress: widest.map(|w| progress(rounds as usize - 2, Some(8), w, true)),
            stopped: None,
            failed: false,
            kept: false,
            notes: vec![],
        }
    }

    /// The estimator's view: `kept` rounds, Stein's rule asking for `needed`, one contender
    /// whose interval is ±`widest_pct`.
    fn progress(kept: usize, needed: Option<usize>, widest_pct: f64, steady: bool) -> stats::rounds::Progress {
        let df = kept.max(2) as f64 - 1.0;
        let se = (1.0 + widest_pct / 100.0).ln() / stats::t975(df);
        let interval = stats::rounds::LogInterval { n: kept, mean: 0.0, se, df, lag1: 0.0, rho: 0.0, sd: se };
        stats::rounds::Progress {
            kept,
            needed,
            intervals: vec![Some(interval)],
            steady: vec![steady],
            drift: vec![0.0],
            kept_rounds: vec![],
        }
    }

    fn measurement(budget: bool, target: Option<f64>) -> experiment::Measurement {
        experiment::Measurement {
            design: experiment::Design::Slices,
            budget: budget.then(|| Duration::from_secs(600)),
            target_halfwidth_pct: target,
            min_rounds: 6,
            ..Default::default()
        }
    }

    #[test]
    fn a_contest_stops_at_its_target_at_its_share_or_at_min_rounds() {
        let m = measurement(true, Some(5.0));
        assert_eq!(stop_reason(&contest(3, Some(1.0)), &m, Some(100.0), 20.0, 10.0), None, "not before min_rounds");
        assert_eq!(
            stop_reason(&contest(6, Some(4.2)), &m, Some(100.0), 60.0, 10.0),
            None,
            "within the target, but Stein's rule asks for 8 kept rounds"
        );
        let why = stop_reason(&contest(10, Some(4.2)), &m, Some(100.0), 60.0, 10.0).unwrap();
        assert!(why.starts_with("target ±5% met after 10 rounds (±4.2%; 8 kept, Stein's rule asked for 8)"), "{why}");
        // Not steady: never stopped for its target, only by its share.
        let mut moving = contest(10, Some(4.2));
        moving.progress = Some(progress(8, Some(8), 4.2, false));
        assert_eq!(stop_reason(&moving, &m, Some(100.0), 60.0, 10.0), None);
        let why = stop_reason(&moving, &m, Some(100.0), 95.0, 10.0).unwrap();
        assert!(why.contains("spent after 10 rounds (±4.2%, not steady)"), "{why}");
        assert_eq!(stop_reason(&contest(7, Some(6.0)), &m, Some(100.0), 70.0, 10.0), None, "room for one more round");
        let why = stop_reason(&contest(9, Some(6.0)), &m, Some(100.0), 95.0, 10.0).unwrap();
        assert!(why.contains("share of the budget (100 s) spent after 9 rounds (±6.0%)"), "{why}");
        // Neither budget nor target: min_rounds rounds.
        let why = stop_reason(&contest(6, None), &measurement(false, None), None, 60.0, 10.0).unwrap();
        assert!(why.starts_with("6 rounds (min_rounds"), "{why}");
        // A target without a budget: a cap of ten times min_rounds.
        let m = measurement(false, Some(1.0));
        assert_eq!(stop_reason(&contest(30, Some(3.0)), &m, None, 300.0, 10.0), None);
        assert!(stop_reason(&contest(60, Some(3.0)), &m, None, 600.0, 10.0).unwrap().contains("without reaching"));
    }

    /// One workload at 1 and 4 clients (2 threads), two memory limits, one profile and build.
    fn test_spec() -> MatrixSpec {
        use runner::matrix::*;
        use std::collections::BTreeMap;
        MatrixSpec {
            placements: vec![],
            workloads: vec![WorkloadSpec {
                name: "tpcb".into(),
                kind: WorkloadKind::Pgbench(PgbenchWorkload {
                    builtin: runner::pgbench::Builtin::TpcbLike,
                    scale: 1,
                    init_args: vec![],
                    extra_args: vec![],
                    per_statement: false,
                }),
                clients: vec![1, 4],
                threads: Some(2),
                duration: Duration::from_secs(1),
                ramp_up: Duration::ZERO,
            }],
            memory_limits: vec![
                MemoryLimit { bytes: None, settings: BTreeMap::new() },
                MemoryLimit { bytes: Some(256 << 20), settings: BTreeMap::new() },
            ],
            profiles: vec![Profile { name: "default".into(), settings: BTreeMap::new(), optional: BTreeMap::new() }],
            builds: vec![BuildTarget { name: "default".into(), bin_dir: None }],
            repetitions: 1,
            order: Order::Interleaved,
            cores: 2,
            seed: None,
        }
    }

    #[test]
    fn the_contests_short_of_their_target_are_named() {
        // Target ±5%: the ±9% and ±7% contests, and one without an interval yet; a failed one
        // and one not measured never.
        let mut all = vec![contest(10, Some(4.0)), contest(10, Some(9.0)), contest(10, Some(7.0)), contest(4, None)];
        assert_eq!(short_of_target(&all, 5.0), vec![1, 2, 3]);
        all[2].failed = true;
        all[3].rounds = 0;
        assert_eq!(short_of_target(&all, 5.0), vec![1]);
    }

    #[test]
    fn a_contests_share_is_what_is_left_over_the_contests_to_come() {
        let budget = Some(Duration::from_secs(600));
        assert_eq!(share(budget, Duration::from_secs(120), 4), Some(120.0));
        assert_eq!(share(budget, Duration::from_secs(700), 2), Some(0.0), "overspent: nothing");
        assert_eq!(share(budget, Duration::ZERO, 0), Some(600.0), "the last contest gets all");
        assert_eq!(share(None, Duration::ZERO, 3), None);
    }

    #[test]
    fn contests_run_by_build_profile_memory_workload_and_clients_baseline_first() {
        let spec = runner::matrix::MatrixSpec {
            placements: ["b", "a"]
                .iter()
                .map(|n| runner::matrix::PlacementTarget {
                    name: n.to_string(),
                    data_dir: "/x".into(),
                    wal_dir: "/x".into(),
                    devices: vec![],
                    tablespaces: Default::default(),
                    profile: None,
                    install: None,
                })
                .collect(),
            ..test_spec()
        };
        let all = contests(&spec, "a");
        assert_eq!(all.len(), 4, "2 memory limits x 2 client counts");
        assert!(all.iter().all(|c| c.placements == vec![1, 0]), "the baseline first");
        let order: Vec<(usize, u32)> = all.iter().map(|c| (c.memory, c.clients)).collect();
        assert_eq!(order, vec![(0, 1), (0, 4), (1, 1), (1, 4)]);
        // Threads: the workload's, never more than its clients.
        assert_eq!(all.iter().map(|c| c.threads).collect::<Vec<_>>(), vec![1, 2, 1, 2]);
        assert_eq!(session_groups(&all), vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn contests_of_one_memory_limit_and_profile_share_a_session() {
        let mut all = vec![contest(0, None), contest(0, None), contest(0, None)];
        all[2].memory = 1;
        assert_eq!(session_groups(&all), vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn a_contest_after_a_writer_settles_once_and_a_fresh_copy_is_clean() {
        let slots = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (both, a) = (slots(&["a/default", "b/default"]), slots(&["a/default"]));
        let mut w = Written::default();
        assert!(w.since(&both).is_empty(), "fresh copies: the first contest is not settled");
        w.wrote(&both, "tpcb c8");
        w.wrote(&both, "tpcb c8");
        assert_eq!(w.since(&both), ["tpcb c8"], "the read-only contest after it settles");
        w.clean(&both);
        assert!(w.since(&both).is_empty(), "settled: a second read-only contest is not settled again");
        // A writer on one placement only (the other dropped) still settles both: alike.
        w.wrote(&a, "tpcc w1");
        w.wrote(&a, "tpcb c8");
        assert_eq!(w.since(&both), ["tpcc w1", "tpcb c8"]);
        // A fresh copy of the data set onto a placement clears it.
        w.clean(&a);
        assert!(w.since(&both).is_empty());
    }
}
