//! A result set summarised: each cell against the baseline with its verdicts ([`summarize`]),
//! by the estimator the result set records ([`rule_of`]). The types it fills are below it
//! ([`crate::cell`], [`crate::summary`]) and re-exported here.

use results::manifest::Design;
use std::collections::BTreeMap;

use results::record::{CellKey, MemoryLabel, RunRecord, RunStatus};

use crate::contest::{self as analysis, Analysis, Figure};
use crate::warnings::{SummaryWarning, run_warnings};
use stats::{Delta, Estimate, Method, Verdict};

pub use crate::cell::{CellSummary, StatementSummary, describe, statement_label};
pub use crate::summary::Summary;
pub use results::ResultSet;

fn cell_order(set: &ResultSet) -> Vec<CellKey> {
    // The planned order (run ids are "<seq>-<placement>-..."): cells by first appearance, then
    // placements in manifest order within each group.
    let mut keys: Vec<CellKey> = Vec::new();
    for r in &set.runs {
        if !keys.contains(&r.cell) {
            keys.push(r.cell.clone());
        }
    }
    let placements = set.placements();
    let group = |k: &CellKey| (k.workload.clone(), k.clients, k.memory_limit, k.profile.clone(), k.build.clone());
    let mut groups: Vec<(String, u32, MemoryLabel, String, String)> = Vec::new();
    for k in &keys {
        let g = group(k);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut out = Vec::new();
    for g in groups {
        for p in &placements {
            if let Some(k) = keys.iter().find(|k| group(k) == g && &k.placement == p) {
                out.push(k.clone());
            }
        }
    }
    out
}

/// The estimator's rule for a result set's measurement section: what the scheduler decided with
/// while it measured, and what the report estimates with afterwards (each contest with its
/// workload's prior, [`crate::priors::of`] through [`stats::rounds::Rule::with_prior`]).
pub fn rule_of(m: &results::manifest::MeasurementRecord) -> stats::rounds::Rule {
    use results::manifest::Estimator;
    use stats::rounds::Rule;
    let (w, n, t, p) = (m.warm_up_rounds, m.min_rounds, m.target_halfwidth_pct, &crate::priors::POOLED);
    match m.estimator {
        Estimator::PerContestLag1 => Rule::issue24(w, n, t),
        Estimator::WorkloadPrior => Rule::workload_prior(w, n, t, p),
        Estimator::WorkloadPriorLifeOffset => Rule::life_offset(w, n, t, p),
        Estimator::LongWarmUp => Rule::new(w, n, t, p),
    }
}

/// The rule of a result set's measurement section ([`rule_of`]) and the priors its manifest
/// records: what the scheduler decides with while it measures, and the report estimates with.
pub fn rules_of(m: &results::Manifest) -> crate::contest::Rules {
    crate::contest::Rules { rule: rule_of(&m.measurement), priors: crate::priors::Priors::of_manifest(m) }
}

/// Summarises a result set.
pub fn summarize(set: &ResultSet) -> Summary {
    summarize_with(set, rule_of(&set.manifest.measurement))
}

/// Summarises a result set with a slices `rule` other than the one it records: the same rounds
/// under another estimator (`cargo xtask bench precision --from` compares candidates so).
pub fn summarize_with(set: &ResultSet, rule: stats::rounds::Rule) -> Summary {
    summarize_with_priors(set, rule, crate::priors::Priors::of_manifest(&set.manifest))
}

/// Summarises a result set with a slices `rule` and `priors` other than those it records (a
/// calibration's estimate, [`crate::calibration`]).
pub fn summarize_with_priors(set: &ResultSet, rule: stats::rounds::Rule, priors: crate::priors::Priors) -> Summary {
    let baseline = set.manifest.baseline.clone();
    let measurement = &set.manifest.measurement;
    let paired = measurement.design == Design::Slices;
    let rules = paired.then_some(crate::contest::Rules { rule, priors });
    let rule = paired.then_some(rule);
    let mut by_cell: BTreeMap<CellKey, Vec<&RunRecord>> = BTreeMap::new();
    for r in &set.runs {
        by_cell.entry(r.cell.clone()).or_default().push(r);
    }
    let ok: BTreeMap<CellKey, Vec<&RunRecord>> = by_cell
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().copied().filter(|r| r.status == RunStatus::Ok).collect::<Vec<_>>()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let (usable, contests) = analysis::usable_runs(&ok, &baseline, rules.as_ref());
    let mut warnings = Vec::new();
    let mut cells = Vec::new();
    for k in cell_order(set) {
        let failed = by_cell.get(&k).map(|r| r.iter().filter(|r| r.status != RunStatus::Ok).count()).unwrap_or(0);
        let Some(runs) = usable.get(&k) else { continue };
        let (Some(tps), Some(lat)) = (analysis::estimate(runs, Figure::Tps), analysis::estimate(runs, Figure::Latency))
        else {
            continue;
        };
        let is_baseline = k.placement == baseline;
        let base = usable.get(&k.with_placement(&baseline)).filter(|_| !is_baseline);
        let d = |f: Figure| base.and_then(|b| analysis::delta(b, runs, f, rules.as_ref()));
        let nopm = analysis::estimate(runs, Figure::Nopm);
        let cell = CellSummary {
            statements: statement_summaries(runs, base.map(Vec::as_slice), rules.as_ref()),
            runs: tps.n,
            failed_runs: failed,
            is_baseline,
            tps,
            latency_ms: lat,
            latency_p99_ms: analysis::estimate(runs, Figure::LatencyP99),
            tps_delta: d(Figure::Tps),
            latency_delta: d(Figure::Latency),
            latency_p99_delta: d(Figure::LatencyP99),
            nopm_delta: nopm.and_then(|_| d(Figure::Nopm)),
            nopm,
            key: k.clone(),
        };
        warnings.extend(cell_warnings(&cell, runs, paired));
        cells.push(cell);
    }
    let margin = measurement.equivalence_margin_pct;
    let control = measurement.control.as_deref();
    let tests = judge(&mut cells, margin, control);
    for (name, c) in &contests {
        let Some(prior) = c.rho_prior else { continue };
        for (placement, &lag1) in c.lag1.iter().filter(|(_, r)| stats::rounds::prior::far_above(**r, c.kept, prior)) {
            warnings.push(SummaryWarning::CorrelatedRounds {
                contest: name.clone(),
                placement: placement.clone(),
                lag1,
                kept: c.kept,
                prior,
            });
        }
    }
    for c in cells.iter_mut().filter(|c| !c.is_baseline) {
        let contest = contests.get(&analysis::contest_of(&c.key));
        let steady = contest.is_none_or(|a| a.steady);
        // The drift was measured on the headline figure's rounds (NOPM for TPC-C, else TPS):
        // only that change may stand despite it.
        let drift = contest.and_then(|a| a.drift.get(&c.key.placement).copied());
        let nopm_is_headline = c.nopm_delta.is_some();
        let (headline, other) = if nopm_is_headline {
            (&mut c.nopm_delta, &mut c.tps_delta)
        } else {
            (&mut c.tps_delta, &mut c.nopm_delta)
        };
        if let Some(d) = headline.as_mut() {
            analysis::withhold_unsteady(d, steady, drift);
        }
        let statements = c.statements.iter_mut().filter_map(|s| s.delta.as_mut());
        for d in [other, &mut c.latency_delta, &mut c.latency_p99_delta].into_iter().flatten().chain(statements) {
            analysis::withhold_unsteady(d, steady, None);
        }
    }
    for (name, c) in contests.iter().filter(|(_, c)| !c.steady) {
        let standing = cells
            .iter()
            .filter(|cell| !cell.is_baseline && analysis::contest_of(&cell.key) == *name)
            .filter(|cell| cell.nopm_delta.or(cell.tps_delta).is_some_and(|d| d.verdict == Verdict::RealChange))
            .map(|cell| cell.key.placement.clone())
            .collect();
        warnings.push(SummaryWarning::NotSteady { contest: name.clone(), detail: not_steady_detail(c), standing });
    }
    if let Some(target) = measurement.target_halfwidth_pct {
        warnings.extend(wide_intervals(&cells, target, measurement));
    }
    if cells.iter().any(|c| c.runs < 2) {
        warnings.push(SummaryWarning::SingleRunCells);
    }
    let missing = missing_cells(set, &usable);
    warnings.extend(run_warnings(set));
    let analysis = Analysis {
        design: measurement.design,
        method: if paired { Method::PairedLog } else { Method::WelchLog },
        equivalence_margin_pct: margin,
        tests,
        dropped_rounds: contests
            .iter()
            .filter(|(_, c)| c.cut.rounds_dropped() > 0)
            .map(|(n, c)| (n.clone(), c.cut.rounds_dropped() as usize))
            .collect(),
        rule,
        contests,
    };
    let controls = control.map(|c| crate::control::checks(&cells, c)).unwrap_or_default();
    for c in &controls {
        if let Some(w) = c.warning() {
            warnings.push(SummaryWarning::ControlMoved { contest: c.contest.clone(), detail: w });
        }
    }
    // The error model checked across contests: where it fails, no change stands on it alone.
    let model_checks = crate::control::model_checks(&controls);
    let inflation = model_checks.iter().filter(|m| m.failed).map(|m| m.inflation).fold(1.0, f64::max);
    if inflation > 1.0 {
        let mut withheld = 0;
        for c in cells.iter_mut().filter(|c| !c.is_baseline && control.is_none_or(|x| c.key.placement != *x)) {
            let statements = c.statements.iter_mut().filter_map(|s| s.delta.as_mut());
            for d in [&mut c.tps_delta, &mut c.nopm_delta, &mut c.latency_delta, &mut c.latency_p99_delta]
                .into_iter()
                .flatten()
                .chain(statements)
            {
                let before = d.verdict;
                crate::control::withhold_beyond_the_model(d, inflation);
                withheld += (before != d.verdict) as usize;
            }
        }
        let failed: Vec<String> = model_checks.iter().filter(|m| m.failed).map(|m| m.text()).collect();
        warnings.push(SummaryWarning::ErrorModel { detail: failed.join("; "), inflation, withheld });
    }
    let mut contrast = crate::contrast::of(&cells, margin);
    if let Some(k) = contrast.as_mut() {
        crate::contrast::fill_statement_deltas(&mut cells, k, margin);
    }
    warnings.extend(crate::warnings::machine_moved(set, &analysis));
    let calibration = set.manifest.calibration.clone();
    let mut summary = Summary { cells, missing, warnings, analysis, controls, model_checks, contrast, calibration };
    if let Some(w) = pinned_client_ceiling(set, &summary) {
        summary.warnings.push(w);
    }
    summary
}

/// Why a contest is not steady, in figures.
fn not_steady_detail(c: &analysis::ContestAnalysis) -> String {
    let mut parts = Vec::new();
    if !c.cut.unsettled.is_empty() {
        let segs: Vec<String> = c.cut.unsettled.iter().map(|s| s.to_string()).collect();
        parts.push(format!("segment {} still trending with 4 rounds left", segs.join(", ")));
    }
    for seg in &c.cut.long_warm_up {
        let cut = c.cut.dropped.get(seg).copied().unwrap_or(0);
        parts.push(format!(
            "the warm-up cut of segment {seg} took {cut} rounds, past its fixed rounds by a sixth of the segment or more: a warm-up that long may not be over in the kept rounds"
        ));
    }
    for (p, t) in c.trending() {
        parts.push(format!(
            "{p}'s ratio moved {:+.1}% over the kept rounds (p = {:.3})",
            t.change_over_span * 100.0,
            t.p_value
        ));
    }
    for (p, bias) in &c.warm_up_left {
        parts.push(format!(
            "{p}'s rounds from the fixed cut on still follow a warm-up curve, which moves its kept rounds' mean by {:+.1}%",
            bias * 100.0
        ));
    }
    if parts.is_empty() {
        parts.push("a trend over the kept rounds".into());
    }
    parts.join("; ")
}

/// Holm's correction over every delta of each figure in the study (each statement's latency
/// included: all of them one family), then the verdicts against the margin; returns the size of
/// each family. The negative control is no hypothesis of the study: its figures (throughput,
/// average and p99 latency, NOPM and each statement's latency, in every contest) are one family
/// of their own, so that "the control moved" (a figure outside 0 after Holm) has a false-alarm
/// rate of at most 5% per study when the method is right (with a family per contest, a study of
/// four contests set it off about a third of the time: docs/benchmarks.md).
fn judge(cells: &mut [CellSummary], margin: f64, control: Option<&str>) -> BTreeMap<Figure, usize> {
    let mut family: Vec<(Figure, &mut Delta)> = Vec::new();
    let mut controls: Vec<(Figure, &mut Delta)> = Vec::new();
    for c in cells.iter_mut() {
        let is_control = Some(c.key.placement.as_str()) == control;
        let p99_measured = c.latency_p99_ms.is_some();
        let mut mine: Vec<(Figure, &mut Delta)> = Vec::new();
        for (f, d) in [
            (Figure::Tps, &mut c.tps_delta),
            (Figure::Latency, &mut c.latency_delta),
            (Figure::LatencyP99, &mut c.latency_p99_delta),
            (Figure::Nopm, &mut c.nopm_delta),
        ] {
            if let Some(d) = d.as_mut().filter(|_| f != Figure::LatencyP99 || p99_measured) {
                mine.push((f, d));
            }
        }
        let statements = c.statements.iter_mut().filter_map(|st| st.delta.as_mut());
        if is_control {
            controls.extend(mine);
            controls.extend(statements.map(|d| (Figure::StatementLatency, d)));
        } else {
            family.extend(mine);
            family.extend(statements.map(|d| (Figure::StatementLatency, d)));
        }
    }
    let tests = analysis::adjust_and_classify(&mut family, margin);
    // The control's figures: one family over the study, whatever the figure.
    let mut controls: Vec<&mut Delta> = controls.into_iter().map(|(_, d)| d).collect();
    analysis::judge_family(&mut controls, margin);
    tests
}

/// Cells whose headline change's interval is wider than the target, with why the contest stopped.
fn wide_intervals(
    cells: &[CellSummary],
    target: f64,
    measurement: &results::manifest::MeasurementRecord,
) -> Vec<SummaryWarning> {
    cells
        .iter()
        .filter_map(|c| {
            let (_, d, _) = c.headline();
            let d = d.filter(|d| d.has_interval() && d.half_width_pct() > target)?;
            Some(SummaryWarning::WideInterval {
                cell: c.key.clone(),
                half_width_pct: d.half_width_pct(),
                target_pct: target,
                stopped: measurement
                    .stopped
                    .get(&analysis::contest_of(&c.key))
                    .map_or("budget spent", String::as_str)
                    .to_string(),
            })
        })
        .collect()
}

/// Each statement's average latency (pgbench -r) over the runs that report every statement, in
/// script order, with its change against the baseline's same statement: with a slices `rule`,
/// the estimator of every other figure (kept rounds paired by round, the correlation-corrected
/// interval); else Welch on the logs.
fn statement_summaries(
    runs: &[&RunRecord],
    base: Option<&[&RunRecord]>,
    rule: Option<&crate::contest::Rules>,
) -> Vec<StatementSummary> {
    let Some(first) = runs.iter().find(|r| !r.statements.is_empty()) else { return Vec::new() };
    first
        .statements
        .iter()
        .filter_map(|st| {
            let value = |r: &RunRecord| analysis::statement_latency(r, &st.statement);
            let values: Vec<f64> = runs.iter().filter_map(|r| value(r)).collect();
            let latency_ms = (values.len() == runs.len()).then(|| Estimate::of(&values)).flatten()?;
            let delta = base.and_then(|base| analysis::delta_of(base, runs, &value, rule));
            Some(StatementSummary { statement: st.statement.clone(), latency_ms, delta })
        })
        .collect()
}

/// What a reader must know about one cell: noisy repetitions (runs design), failed runs, outlier
/// seconds.
fn cell_warnings(c: &CellSummary, runs: &[&RunRecord], paired: bool) -> Vec<SummaryWarning> {
    let mut w = Vec::new();
    if !paired && c.tps.n >= 2 && c.tps.cv_pct > 5.0 {
        w.push(SummaryWarning::Noisy { cell: c.key.clone(), cv_pct: c.tps.cv_pct });
    }
    if c.failed_runs > 0 {
        w.push(SummaryWarning::FailedRuns { cell: c.key.clone(), count: c.failed_runs });
    }
    // Outlier seconds (stalls or bursts) in the per-second series of the cell's runs.
    let (mut outliers, mut seconds) = (0usize, 0usize);
    for r in runs {
        let tps: Vec<f64> = r.series.iter().map(|s| s.tps).collect();
        outliers += stats::outliers_mad(&tps, 3.5).len();
        seconds += tps.len();
    }
    if outliers > 0 {
        w.push(SummaryWarning::OutlierSeconds { cell: c.key.clone(), outliers, seconds });
    }
    w
}

/// Cells planned but without data.
fn missing_cells(set: &ResultSet, usable: &BTreeMap<CellKey, Vec<&RunRecord>>) -> Vec<CellKey> {
    let mut missing = Vec::new();
    for k in set.manifest.run_order.iter().filter_map(|id| planned_cell(set, id)) {
        if !usable.contains_key(&k) && !missing.contains(&k) {
            missing.push(k);
        }
    }
    missing
}

/// The cell a planned run id belongs to, when the manifest records it.
fn planned_cell(set: &ResultSet, run_id: &str) -> Option<CellKey> {
    set.manifest.planned_cells.get(run_id).cloned()
}

/// With pgbench pinned, the cells whose backends mostly waited for it: the pinned client may be
/// their ceiling, which narrows intervals by shrinking the changes.
fn pinned_client_ceiling(set: &ResultSet, summary: &Summary) -> Option<SummaryWarning> {
    let pinning = set.manifest.measurement.pinning.as_ref()?;
    let study = crate::evidence::Study::of(set, summary);
    let bound: Vec<String> = summary
        .cells
        .iter()
        .filter(|c| {
            study
                .cells
                .get(&c.key)
                .is_some_and(|e| crate::evidence::judge(e).bottleneck == crate::evidence::Bottleneck::Client)
        })
        .map(|c| describe(&c.key))
        .collect();
    (!bound.is_empty()).then(|| crate::warnings::SummaryWarning::PinnedClientCeiling {
        pin_client: pinning.client.clone(),
        bound,
        cells: summary.cells.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::Manifest;
    use results::manifest::{WorkloadKind, WorkloadRecord};
    use results::record::{Metrics, RunRecord, RunStatus};

    #[test]
    fn the_controls_figures_are_one_family_over_the_study() {
        use stats::Verdict;
        // The control in two contests, each with a throughput change of p 0.02 (its 95% interval
        // excludes 0): judged in one family of the study's four control figures, neither is
        // outside 0 after Holm (0.02 x 4; a family per contest gave 0.04, and "moved" twice);
        // the contenders' changes keep their own families.
        let delta = |pct: f64, p: f64| Delta {
            pct,
            ratio: 1.0 + pct / 100.0,
            pct_low: pct - 2.0,
            pct_high: pct + 2.0,
            p_value: p,
            p_adjusted: p,
            holm_low: pct - 2.0,
            holm_high: pct + 2.0,
            se: (1.0 + pct / 100.0).ln() / 2.17,
            df: 20.0,
            method: stats::Method::PairedLog,
            within_noise: false,
            verdict: Verdict::Inconclusive,
        };
        let cell = |placement: &str, clients: u32, tps: Delta, lat: Delta| CellSummary {
            key: CellKey {
                placement: placement.into(),
                workload: "rw".into(),
                clients,
                memory_limit: MemoryLabel::Unlimited,
                profile: "default".into(),
                build: results::record::DEFAULT_BUILD.into(),
            },
            is_baseline: false,
            runs: 20,
            failed_runs: 0,
            tps: Estimate::of(&[1.0, 2.0]).unwrap(),
            latency_ms: Estimate::of(&[1.0, 2.0]).unwrap(),
            latency_p99_ms: None,
            tps_delta: Some(tps),
            latency_delta: Some(lat),
            latency_p99_delta: None,
            nopm: None,
            nopm_delta: None,
            statements: vec![],
        };
        let mut cells = vec![
            cell("control", 1, delta(3.0, 0.02), delta(-1.0, 0.5)),
            cell("control", 8, delta(3.0, 0.02), delta(-1.0, 0.5)),
            cell("pmem", 1, delta(40.0, 0.001), delta(-30.0, 0.001)),
        ];
        let families = judge(&mut cells, 2.0, Some("control"));
        for c in &cells[..2] {
            let d = c.tps_delta.unwrap();
            assert!((d.p_adjusted - 0.08).abs() < 1e-12, "Holm over the 4 figures of the control: {d:?}");
        }
        let checks = crate::control::checks(&cells, "control");
        assert!(checks.iter().all(|c| !c.moved), "{checks:?}");
        // The contender's families hold its own changes only.
        assert_eq!(families.get(&Figure::Tps), Some(&1));
        assert_eq!(cells[2].tps_delta.unwrap().verdict, Verdict::RealChange);
    }

    fn run(seq: u32, placement: &str, rep: u32, tps: f64, lat: f64) -> RunRecord {
        let cell = CellKey {
            placement: placement.into(),
            workload: "rw".into(),
            clients: 8,
            memory_limit: MemoryLabel::Unlimited,
            profile: "default".into(),
            build: results::record::DEFAULT_BUILD.into(),
        };
        RunRecord {
            run_id: format!("{seq:04}-{placement}-r{rep}"),
            sequence: seq,
            cell,
            repetition: rep,
            segment: 0,
            workload_kind: "pgbench".into(),
            script: "tpcb-like".into(),
            threads: 2,
            scale: 1,
            duration_s: 10.0,
            ramp_up_s: 0.0,
            started_at: String::new(),
            finished_at: String::new(),
            status: RunStatus::Ok,
            failure: None,
            failure_kind: None,
            faults: vec![],
            metrics: Metrics { tps, latency_ms_avg: lat, ..Default::default() },
            statements: vec![],
            series: vec![],
            devices: vec![],
            io_series: vec![],
            sampler_cpu_s: 0.0,
            cpu: None,
            machine: None,
            postgres: None,
            wait_events: None,
            memory: None,
            checkpoints_at_s: vec![],
            server_settings: Default::default(),
            command: String::new(),
            raw_files: vec![],
            warnings: vec![],
        }
    }

    fn set(runs: Vec<RunRecord>, planned: &[(&str, &str)]) -> ResultSet {
        let mut m = Manifest { baseline: "a".into(), ..Default::default() };
        for (id, placement) in planned {
            m.run_order.push(id.to_string());
            let mut k = runs[0].cell.clone();
            k.placement = placement.to_string();
            m.planned_cells.insert(id.to_string(), k);
        }
        m.placements = ["a", "b", "c"]
            .iter()
            .map(|p| results::manifest::PlacementRecord { name: p.to_string(), ..Default::default() })
            .collect();
        ResultSet { dir: "/nonexistent".into(), manifest: m, runs }
    }

    #[test]
    fn statement_labels() {
        assert_eq!(
            statement_label("UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;"),
            "UPDATE pgbench_accounts"
        );
        assert_eq!(
            statement_label("SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"),
            "SELECT … FROM pgbench_accounts"
        );
        assert_eq!(
            statement_label("INSERT INTO pgbench_history (tid, bid) VALUES (:tid, :bid);"),
            "INSERT INTO pgbench_history"
        );
        assert_eq!(statement_label("  BEGIN;"), "BEGIN");
        assert_eq!(statement_label("SELECT 1"), "SELECT 1");
        assert_eq!(statement_label("\\set aid random(1, 100000 * :scale)"), "\\set aid random(1, …");
    }

    #[test]
    fn deltas_against_the_baseline_and_warnings() {
        let runs = vec![
            run(1, "a", 1, 100.0, 10.0),
            run(2, "b", 1, 150.0, 7.0),
            run(3, "a", 2, 102.0, 10.2),
            run(4, "b", 2, 148.0, 7.1),
            run(5, "a", 3, 98.0, 9.8),
            run(6, "b", 3, 152.0, 6.9),
        ];
        let s = summarize(&set(runs, &[("0007-c-r1", "c")]));
        assert_eq!(s.cells.len(), 2);
        let (a, b) = (&s.cells[0], &s.cells[1]);
        assert!(a.is_baseline && a.tps_delta.is_none());
        let d = b.tps_delta.unwrap();
        // The ratio of geometric means: exp(mean ln b - mean ln a) - 1 = +50.011%.
        assert!((d.pct - 50.011).abs() < 1e-3, "{d:?}");
        assert!(!d.within_noise && d.pct_low > 40.0 && d.pct_high < 60.0, "{d:?}");
        let l = b.latency_delta.unwrap();
        assert!((l.pct + 30.0).abs() < 0.01, "{l:?}");
        assert_eq!(s.missing.len(), 1, "the planned cell of placement c has no run");
        assert!(s.warnings.is_empty(), "CV is 2%: no warning: {:?}", s.warnings);
    }

    #[test]
    fn noisy_cells_failed_runs_and_nopm_headline() {
        let mut runs = vec![
            run(1, "a", 1, 100.0, 10.0),
            run(2, "b", 1, 130.0, 8.0),
            run(3, "a", 2, 60.0, 12.0),
            run(4, "b", 2, 90.0, 9.0),
        ];
        let mut failed = run(5, "b", 3, 0.0, 0.0);
        failed.status = RunStatus::Failed;
        runs.push(failed);
        for r in &mut runs {
            // Not proportional to TPS, so the NOPM delta differs from the TPS delta.
            r.metrics.nopm = Some(r.metrics.tps * 10.0 + if r.cell.placement == "b" { 200.0 } else { 0.0 });
        }
        let s = summarize(&set(runs, &[]));
        let b = &s.cells[1];
        assert_eq!((b.runs, b.failed_runs), (2, 1));
        assert!(b.tps_delta.unwrap().within_noise, "two noisy runs each side: inside the noise");
        let (h, hd, unit) = b.headline();
        assert!(unit.contains("NOPM") && (h.mean - 1300.0).abs() < 1e-9);
        let (hd, nd, td) = (hd.unwrap(), b.nopm_delta.unwrap(), b.tps_delta.unwrap());
        assert!((hd.pct - nd.pct).abs() < 1e-9, "the headline is the NOPM change");
        assert!((hd.pct - td.pct).abs() > 1.0, "not the TPS change: {hd:?} vs {td:?}");
        assert!(s.warnings.iter().any(|w| w.to_string().contains("repetitions disagree")));
        assert!(s.warnings.iter().any(|w| w.to_string().contains("1 run(s) failed")));
    }

    #[test]
    fn workloads_from_the_manifest_or_else_from_the_runs() {
        let mut set = set(vec![run(1, "a", 1, 100.0, 10.0), run(2, "b", 1, 150.0, 7.0)], &[]);
        let from_runs = set.workload("rw").unwrap();
        assert_eq!(
            (from_runs.kind, from_runs.script.as_str(), from_runs.scale, from_runs.clients.clone()),
            (WorkloadKind::Pgbench, "tpcb-like", 1, vec![8])
        );
        assert_eq!((from_runs.duration_s, from_runs.ramp_up_s), (10.0, 0.0));
        assert!(set.workload("ro").is_none());
        set.manifest.workloads = vec![WorkloadRecord {
            name: "rw".into(),
            kind: WorkloadKind::Tpcc,
            script: "tpcc-spec-procedures".into(),
            scale: 4,
            ..Default::default()
        }];
        let w = set.workload("rw").unwrap();
        assert_eq!(
            (w.kind, w.script.as_str(), w.scale),
            (WorkloadKind::Tpcc, "tpcc-spec-procedures", 4),
            "the manifest's"
        );
    }

    #[test]
    fn a_warning_many_runs_share_is_said_once() {
        use results::Warning;
        let mut runs: Vec<RunRecord> =
            (1..=6).map(|i| run(i, if i % 2 == 1 { "a" } else { "b" }, i, 100.0, 10.0)).collect();
        for (r, pct) in runs.iter_mut().zip([95.0, 99.0, 101.0, 120.0, 97.0]) {
            // 95% and 101%: a different number of digits, the same warning.
            r.warnings.push(Warning::ClientCpuBound { client: "pgbench".into(), core_pct: pct, threads: 2 });
        }
        runs[5].warnings.push(Warning::CheckpointInRun { at_s: vec![4.0] });
        let s = summarize(&set(runs, &[]));
        let texts: Vec<String> = s.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!(
            texts[0].starts_with(
                "5 runs (0001-a-r1, 0002-b-r2, 0003-a-r3, 0004-b-r4, 0005-a-r5): the pgbench client used 95% of a core"
            ),
            "{texts:?}"
        );
        assert!(texts[0].ends_with("(figures of the first; each run's own are in its result.json)"), "{texts:?}");
        assert!(texts[1].starts_with("0006-b-r6: a checkpoint started inside the measured run (at 4 s)"), "{texts:?}");
    }
}
