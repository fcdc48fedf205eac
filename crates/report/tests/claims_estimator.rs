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
    let study = analysis::evidence::Study::of(&set, &summary);
    let checks = analysis::claims::check_all(&set, &summary, &study);
    let d = checks[0].measured.expect("device IOPS measured in both cells");
    assert_eq!(d.method, stats::Method::PairedLog, "{d:?}");
    // The contest kept fewer rounds than it ran: the estimate used the kept ones alone.
    let contest = summary.analysis.contests.values().next().unwrap();
    assert!(contest.cut.rounds_dropped() > 0, "the fixture's cut drops rounds");
    let kept = contest.kept as f64;
    assert!(d.df <= kept - 1.0 + 1e-9, "df {} from at most the {} kept rounds", d.df, kept);
}

#[test]
fn a_statement_claim_across_profiles_takes_the_contrasts_own_change() {
    // Seed 004's profile contrast: a claim on one statement's latency, seed004-performance
    // against the default profile, is judged on the contrast's change of that statement (Holm
    // over the contrast's statements, as the results table shows it), not on Welch over the runs.
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed004-profiles");
    let mut set = report::ResultSet::load(&fixture).unwrap();
    set.manifest.claims = vec![results::manifest::ClaimRecord {
        name: "update-accounts".into(),
        text: "the performance profile changes UPDATE pgbench_accounts".into(),
        origin: "test".into(),
        placement: "local-nvme".into(),
        against: "local-nvme".into(),
        workload: "tpcb".into(),
        clients: Some(1),
        memory_limit: Some("160MiB".into()),
        profile: Some("seed004-performance".into()),
        metric: "statement-latency".into(),
        statement: Some("UPDATE pgbench_accounts".into()),
        figure: "-10%".into(),
        low_pct: -10.0,
        high_pct: -10.0,
        across: "profiles".into(),
        ..Default::default()
    }];
    let summary = report::summarize(&set);
    let contrast = summary.contrast.as_ref().expect("the study's contrast is the profile");
    assert_eq!(contrast.dimension, analysis::contrast::Dimension::Profile);
    let cell = summary
        .cells
        .iter()
        .find(|c| c.key.profile == "seed004-performance" && c.key.clients == 1 && c.key.placement == "local-nvme")
        .unwrap();
    let own = cell.statements.iter().find(|s| s.statement.starts_with("UPDATE pgbench_accounts")).unwrap();
    let expected = own.delta.expect("the contrast's statement change");
    let study = analysis::evidence::Study::of(&set, &summary);
    let checks = analysis::claims::check_all(&set, &summary, &study);
    let measured = checks[0].measured.expect("measured");
    assert_eq!((measured.pct, measured.p_adjusted), (expected.pct, expected.p_adjusted), "{:?}", checks[0]);
}
