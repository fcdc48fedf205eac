//! A claim on a figure the results table has no change for (device IOPS) in a slices study is
//! measured by the study's own estimator: the contest's kept rounds, paired by round, with the
//! correlation correction (issue 37, item 5), not a plain paired t over every round.

use std::path::PathBuf;

#[test]
fn a_device_claim_in_a_slices_contest_uses_the_studys_estimator() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed000-slices");
    let mut set = report::ResultSet::load(&fixture).unwrap();
    let mut claim = set.manifest.claims[0].clone();
    claim.name = "device-iops-pmem".into();
    claim.metric = "device-iops".into();
    set.manifest.claims = vec![claim];
    let summary = report::summarize(&set);
    let study = report::evidence::Study::of(&set, &summary);
    let checks = report::claims::check_all(&set, &summary, &study);
    let d = checks[0].measured.expect("device IOPS measured in both cells");
    assert_eq!(d.method, stats::Method::PairedLog, "{d:?}");
    // The contest kept fewer rounds than it ran: the estimate used the kept ones alone.
    let contest = summary.analysis.contests.values().next().unwrap();
    assert!(contest.cut.rounds_dropped() > 0, "the fixture's cut drops rounds");
    let kept = contest.kept as f64;
    assert!(d.df <= kept - 1.0 + 1e-9, "df {} from at most the {} kept rounds", d.df, kept);
}
