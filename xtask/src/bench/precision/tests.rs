use super::*;

#[test]
fn failed_trials_are_listed_and_left_out() {
    let args = PrecisionArgs {
        trials: 0,
        aa_trials: 2,
        designs: vec!["slices:2s".into()],
        budget: "180s".into(),
        calibrate_runs: 0,
        from: None,
        estimator: None,
        cut_tau: None,
    };
    let failed = vec!["aa trial 2, design slices:2s: compare failed (exit 1); see x.log".to_string()];
    let text = render(&args, &[], &[], &failed, 10.0);
    assert!(text.contains("Trials that failed and are left out of the figures (1):"), "{text}");
    assert!(text.contains("- aa trial 2, design slices:2s: compare failed (exit 1)"), "{text}");
    assert!(!render(&args, &[], &[], &[], 10.0).contains("Trials that failed"));
}

#[test]
fn aa_rates_count_per_change_and_per_experiment() {
    let row = |trial, placement: &str, pct: f64, low: f64, high: f64, verdict| Row {
        experiment: "aa",
        design: "shipped".into(),
        trial,
        cell: placement.into(),
        placement: placement.into(),
        pct,
        low,
        high,
        verdict,
        se: 0.015,
        method: "paired-log",
        wall_s: 60.0,
        rounds: 10,
        load: Some(1.5),
        start_step: Some(if placement == "b" { -1 } else { 1 }),
        device_step: None,
    };
    // Two experiments of two changes: one interval excludes 0 (trial 1, b) but is not a
    // real change after Holm; trial 2's c is one.
    let rows = [
        row(1, "b", 3.0, 0.5, 6.0, Verdict::Inconclusive),
        row(1, "c", -1.0, -4.0, 2.0, Verdict::Equivalent),
        row(2, "b", 1.0, -2.0, 4.0, Verdict::Equivalent),
        row(2, "c", 8.0, 4.0, 12.0, Verdict::RealChange),
    ];
    let args = PrecisionArgs {
        trials: 0,
        aa_trials: 2,
        designs: vec!["shipped".into()],
        budget: "5min".into(),
        calibrate_runs: 0,
        from: None,
        estimator: None,
        cut_tau: None,
    };
    let mut s = String::new();
    aa_rates(&mut s, &args, &rows);
    // Clopper-Pearson 2/4: [6.76, 93.24]; 1/2: [1.26, 98.74].
    assert!(
        s.contains("2 of 4 intervals exclude 0 before any correction (50.0%, Clopper-Pearson 95% [6.8, 93.2])"),
        "{s}"
    );
    assert!(s.contains("1 of 2 experiments call a change real after Holm (50.0% [1.3, 98.7])"), "{s}");
    assert!(s.contains("0 of 4 changes were in contests called not steady"), "{s}");
    assert!(
        s.contains("2 intervals of steady contests exclude 0. Load average at the experiments' start: 1.5 to 1.5."),
        "{s}"
    );
    // z^2 = (ln(1 + change) / 0.015)^2: 3.88, 0.45, 0.44, 26.32, mean 7.77 over the changes.
    assert!(s.contains("z = change / its standard error 7.77 ["), "{s}");
    // b: mean 2.0, sd 1.414, t(0.975, 1) 12.706: +-12.71.
    assert!(s.contains("| b | 2 | +2.00% [-10.71, +14.71] |"), "{s}");
    // b started before the baseline in both trials (3, 1), c after it (-1, 8).
    assert!(
        s.contains(
            "| server start (data-set copy, port, cgroup) | +2.00% [-10.71, +14.71] (2) | +3.50% [-53.68, +60.68] (2) |"
        ),
        "{s}"
    );
    assert!(s.contains("| device creation (loop, zram, link, port) | none | none |"), "{s}");
    // Per experiment: (3 - 1) / 2 = 1, (1 + 8) / 2 = 4.5; sd 2.475, t(0.975, 1) 12.706: +-22.24.
    assert!(
        s.contains("the mean of each experiment's changes: +2.75% [-19.49, +24.99] (2); 2 of 2 experiments above 0."),
        "{s}"
    );
    assert_eq!(campaign_entry("aa-t12-shipped", &["shipped".into()]), Some(("aa", 12, "shipped".into())));
    assert_eq!(
        campaign_entry("seed000-tpcb-t3-slices-2s", &["slices:2s".into()]),
        Some(("seed000-tpcb", 3, "slices:2s".into()))
    );
    assert_eq!(campaign_entry("aa-t12-shipped+c4", &["shipped".into()]), None);
    let prepared = experiment_text("aa", "shipped+prepared+c4", "5min").unwrap();
    assert!(prepared.contains("extra_args = [\"-M\", \"prepared\"]") && prepared.contains("clients = [4]"));
    assert!(prepared.contains("target_halfwidth = \"5%\""), "the shipped measurement all the same");
    if std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) >= 2 {
        let pinned = experiment_text("aa", "shipped+pinned", "5min").unwrap();
        assert!(pinned.contains("budget = \"5min\"\npin_client = \"0\"\npin_servers = \"1"), "{pinned}");
    }
    let readonly = experiment_text("aa", "shipped+readonly", "3min").unwrap();
    assert!(readonly.contains("builtin = \"select-only\"") && !readonly.contains("tpcb-like"), "{readonly}");
    assert!(experiment_text("aa", "shipped+pinless", "5min").is_err());
    assert!(experiment_text("aa", "slices+c4", "5min").is_err());
    assert!(
        experiment_text("aa", "shipped", "5min")
            .unwrap()
            .contains("target_halfwidth = \"5%\"\nequivalence_margin = \"5%\"\nbudget = \"5min\"")
    );
}
