//! A result set is estimated by the estimator its manifest records: issue 24's (the correlation
//! per contest) when the field is absent, issue 37's (the workload's prior) when it says so, and
//! with the offset between server lives added when it says that; the latter two warn of a
//! contender whose own lag-1 lies far above the prior.

use std::path::PathBuf;

use results::manifest::Estimator;
use stats::Verdict;

fn fixture() -> report::ResultSet {
    load("seed000-slices")
}

fn load(name: &str) -> report::ResultSet {
    report::ResultSet::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

fn all_on_pmem(summary: &report::Summary) -> stats::Delta {
    let c = summary.cells.iter().find(|c| c.key.placement == "all-on-pmem").unwrap();
    c.tps_delta.expect("a change against the baseline")
}

#[test]
fn a_result_set_reads_with_the_estimator_it_recorded() {
    // The fixture is issue 24's read-only 192MiB contest (no prewarm, no settle): 22 rounds in
    // which the all-on-pmem/nvme ratio falls by a fifth over issue 24's kept rounds, which its
    // estimator called steady (issue 37).
    let mut set = fixture();
    assert_eq!(set.manifest.measurement.estimator, Estimator::PerContestLag1, "the fixture predates the field");
    let before = report::summarize(&set);
    let contest = before.analysis.contests.values().next().unwrap();
    assert_eq!(contest.rho_prior, None, "issue 24's estimator takes each contender's own lag-1");
    assert!(contest.steady && contest.trend["all-on-pmem"].change_over_span < -0.2, "{contest:?}");
    assert_eq!(all_on_pmem(&before).verdict, Verdict::RealChange);

    set.manifest.measurement.estimator = Estimator::WorkloadPrior;
    let after = report::summarize(&set);
    let contest = after.analysis.contests.values().next().unwrap();
    assert_eq!(contest.rho_prior, Some(analysis::priors::of("read-only").rho), "the read-only workload's prior");
    // The cut moves on past the warm-up, and what is left of it still shows on the rounds from
    // the fixed cut on: not steady. The obvious change (2.3x) still stands: its interval after
    // Holm lies beyond twice the drift of its kept rounds (trend plus leftover warm-up).
    assert!(contest.cut.rounds_dropped() > before.analysis.contests.values().next().unwrap().cut.rounds_dropped());
    assert!(!contest.steady && !contest.warm_up_left.is_empty(), "{contest:?}");
    let drift = contest.drift["all-on-pmem"];
    let a = all_on_pmem(&after);
    assert!(drift > 0.05 && (1.0 + a.holm_low / 100.0).ln() > 2.0 * drift, "drift {drift} against {a:?}");
    assert!(a.pct > 100.0 && a.pct_low > 50.0 && a.verdict == Verdict::RealChange, "{a:?}");
    // Its other figures, whose drift was not measured, are withheld.
    let cell = after.cells.iter().find(|c| c.key.placement == "all-on-pmem").unwrap();
    let latency = cell.latency_delta.expect("a latency change");
    assert!(latency.pct < -50.0 && latency.verdict == Verdict::NotSteady, "{latency:?}");
    // report.md says which estimator it used.
    let md = report::document::markdown::render(&report::markdown::document(&set, &after, &[]));
    assert!(
        md.contains("allows for correlated rounds with the workload's round-to-round correlation (its prior"),
        "{md}"
    );
    assert!(md.contains("| 0.08 (prior) |"), "the contests' table gives the correlation assumed");
    let said: Vec<String> = after.warnings.iter().map(|w| w.to_string()).collect();
    assert!(said.iter().any(|w| w.contains("not steady") && w.contains("still follow a warm-up curve")), "{said:#?}");
    assert!(said.iter().any(|w| w.contains("except all-on-pmem's headline change, real however")), "{said:#?}");
    eprintln!("all-on-pmem: {:+.1}% [{:+.1}, {:+.1}] after Holm, drift {:.3}", a.pct, a.holm_low, a.holm_high, drift);
}

#[test]
fn rounds_far_more_correlated_than_the_prior_are_warned_of() {
    let mut set = load("seed000-control");
    set.manifest.measurement.estimator = Estimator::WorkloadPrior;
    // The control's kept rounds reordered into one slow wave (rising, then falling): the same
    // values, a lag-1 far above the read-only prior.
    let mut control: Vec<&mut results::RunRecord> =
        set.runs.iter_mut().filter(|r| r.cell.placement == "control" && r.status == results::RunStatus::Ok).collect();
    control.sort_by_key(|r| (r.segment, r.repetition));
    let mut tps: Vec<f64> = control.iter().map(|r| r.metrics.tps).collect();
    tps.sort_by(f64::total_cmp);
    // The even-ranked values rising, then the odd-ranked ones falling.
    let rising = tps.iter().step_by(2).copied();
    let falling = tps.iter().skip(1).step_by(2).rev().copied();
    let wave: Vec<f64> = rising.chain(falling).collect();
    for (r, v) in control.iter_mut().zip(wave) {
        r.metrics.tps = v;
    }
    let summary = report::summarize(&set);
    let warned: Vec<String> = summary
        .warnings
        .iter()
        .filter(|w| matches!(w, analysis::warnings::SummaryWarning::CorrelatedRounds { .. }))
        .map(|w| w.to_string())
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", summary.warnings);
    assert!(warned[0].contains("control's kept rounds have a lag-1 autocorrelation of +0."), "{}", warned[0]);
    assert!(warned[0].contains("far above the workload's prior of 0.08"), "{}", warned[0]);
    // Without the wave, none.
    let plain = report::summarize(&{
        let mut s = load("seed000-control");
        s.manifest.measurement.estimator = Estimator::WorkloadPrior;
        s
    });
    let n = plain
        .warnings
        .iter()
        .filter(|w| matches!(w, analysis::warnings::SummaryWarning::CorrelatedRounds { .. }))
        .count();
    assert_eq!(n, 0, "{:?}", plain.warnings);
}

#[test]
fn the_offset_between_server_lives_widens_the_intervals_not_the_changes() {
    // The same rounds, read with issue 37's first estimator and with the one that allows for
    // the offset between server lives (the read-only workload's prior, memory limited).
    let mut set = load("seed000-control");
    set.manifest.measurement.estimator = Estimator::WorkloadPrior;
    let before = report::summarize(&set);
    set.manifest.measurement.estimator = Estimator::WorkloadPriorLifeOffset;
    let after = report::summarize(&set);
    let contest = after.analysis.contests.values().next().unwrap();
    let life_sd = analysis::priors::of("read-only").life_sd(true);
    assert!(life_sd > 0.01, "the read-only prior has an offset: {life_sd}");
    assert_eq!(contest.life_sd, Some(life_sd));
    assert_eq!(before.analysis.contests.values().next().unwrap().life_sd, None);
    for placement in ["wal-on-pmem", "control", "all-on-pmem"] {
        let delta = |s: &report::Summary| {
            s.cells.iter().find(|c| c.key.placement == placement).and_then(|c| c.tps_delta).expect("a change")
        };
        let (b, a) = (delta(&before), delta(&after));
        assert!((a.pct - b.pct).abs() < 1e-9, "{placement}: the change itself stays: {b:?} {a:?}");
        // On the log scale the half-width grows from t se to about t sqrt(se^2 + sd^2).
        let hw = |d: &stats::Delta| ((1.0 + d.pct_high / 100.0).ln() - (1.0 + d.pct_low / 100.0).ln()) / 2.0;
        assert!(hw(&a) > hw(&b) && hw(&a) > 1.9 * life_sd, "{placement}: {b:?} -> {a:?}");
        assert!(hw(&a) < (hw(&b).powi(2) + (2.1 * life_sd).powi(2)).sqrt(), "{placement}: {b:?} -> {a:?}");
    }
    let md = report::document::markdown::render(&report::markdown::document(&set, &after, &[]));
    assert!(md.contains("for the offset two identical servers can keep for as long as they live"), "{md}");
    assert!(md.contains("server-life offset assumed"), "the contests' table gives the offset assumed");
    assert!(md.contains(&format!("| sd {:.1}% (prior) |", life_sd * 100.0)), "{md}");
}

#[test]
fn a_long_warm_up_cut_is_not_steady() {
    // The same rounds read with the estimator before the long warm-up check and with it.
    let mut set = fixture();
    set.manifest.measurement.estimator = Estimator::WorkloadPriorLifeOffset;
    let before = report::summarize(&set);
    set.manifest.measurement.estimator = Estimator::LongWarmUp;
    let after = report::summarize(&set);
    let (b, a) = (before.analysis.contests.values().next().unwrap(), after.analysis.contests.values().next().unwrap());
    // The cut is the same: 14 rounds of 22, 12 past the fixed 2 (a sixth of 22 is under 4).
    assert_eq!((b.cut.first_kept.clone(), a.cut.first_kept.clone()), ([(1, 15)].into(), [(1, 15)].into()));
    assert!(b.cut.long_warm_up.is_empty() && a.cut.long_warm_up == [1], "{a:?}");
    assert!(!a.steady);
    let said: Vec<String> = after.warnings.iter().map(|w| w.to_string()).collect();
    assert!(said.iter().any(|w| w.contains("not steady (the warm-up cut of segment 1 took 14 rounds, past its fixed rounds by a sixth of the segment or more")), "{said:#?}");
    // The obvious change still stands beyond its drift, as before.
    assert_eq!(all_on_pmem(&after).verdict, Verdict::RealChange);
    assert_eq!(all_on_pmem(&before).pct, all_on_pmem(&after).pct);
}
