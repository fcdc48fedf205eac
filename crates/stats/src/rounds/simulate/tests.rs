use super::*;

/// Contests per series kind: the Monte Carlo standard error of a coverage near 95% is then
/// about 0.35 percentage points (three contenders per contest, counted once).
const CONTESTS: usize = 4000;

/// Kinds on which the shipped estimator is known to fall short of 94% (docs/benchmarks.md,
/// "No revisits"): the gate asserts that they still do, so that a change that fixes one must
/// move it into the gate. A revisit's second segment (87.6%): the scheduler no longer
/// revisits a contest, so only a crash restart makes one, and its warning says the contest
/// is outside the gate.
const KNOWN_SHORT: &[&str] = &["revisit (two segments)"];

/// Kinds on which the shipped estimator's intervals are known to be too wide: they cover
/// the truth more than 97% of the time, where a calibrated 95% interval covers 94-97
/// (issue 37, item 4). Asserted like [`KNOWN_SHORT`]: none for the shipped estimator.
const KNOWN_WIDE: &[&str] = &[];

/// The kinds issue 24's estimator fails (below 94%, or above 97% covered): the gate's
/// negative test on the estimator the shipped one replaced.
const ISSUE24_SHORT: &[&str] = &[
    "AR(1) rho 0.5",
    "warm-up transient",
    "slow warm-up x3 over 6 rounds",
    "slow warm-up x3 over 10 rounds",
    "slow warm-up x1.65 over 10 rounds",
    "revisit (two segments)",
];
/// Only where the offset between server lives is 0 since the gate's contests have one
/// (before: the i.i.d. and AR(1) 0.1-0.3 rounds, drift and the position effect too), and
/// where two lives average it (issue 24 counted a life's offset as rounds' noise).
const ISSUE24_WIDE: &[&str] = &["i.i.d., target within reach", "two server lives, no warm-up"];

/// The kinds the estimator without the offset between server lives fails (below 94%).
const NO_LIFE_SHORT: &[&str] = &[
    "i.i.d.",
    "AR(1) rho 0.1",
    "AR(1) rho 0.2",
    "AR(1) rho 0.3",
    "AR(1) rho 0.5",
    "warm-up transient",
    "slow warm-up x1.65 over 10 rounds",
    "drift to a steady state",
    "position effect",
    "revisit (two segments)",
];

/// The design the main job ships (2 rounds cut, a pilot of 6, a ±5% target), as `Rule::new`
/// makes it, with its correlation prior pooled from 18 series of the kind and its offset
/// between server lives from 16 null changes (as the product's priors are pooled from the
/// main job's real runs per workload): the gate tests what the report and the scheduler use,
/// the priors' own error included.
fn shipped() -> Design {
    Design::Pooled { rule: Rule::new(2, 6, Some(5.0), &TYPICAL), series: 18 }
}

/// What the gate finds of a design: the kinds below 94% (honest: covered or called not
/// steady), the kinds above 97% covered, the kinds where the intervals of the estimates
/// called not steady, widened by [`super::super::DRIFT_ALLOWANCE`] times their drift (what a
/// change that stands despite not being steady relies on), cover less than 95%, and the
/// table of every kind for the assertions' messages.
struct Bounds {
    short: Vec<&'static str>,
    wide: Vec<&'static str>,
    drift_short: Vec<&'static str>,
    table: String,
}

fn outside_the_bounds(design: Design) -> Bounds {
    let mut b = Bounds { short: vec![], wide: vec![], drift_short: vec![], table: String::new() };
    for (name, c) in coverage_of_every_kind(design, CONTESTS, None, 2) {
        b.table.push_str(&format!(
            "{name}: {:.1}% ± {:.1} covered or not steady, {:.1}% covered, {:.1}% not steady ({:.1}% covered widened by the drift allowance), median ±{:.1}%, mean z^2 {:.2}\n",
            c.honest * 100.0,
            c.mc_error * 100.0,
            c.covered * 100.0,
            c.not_steady * 100.0,
            c.unsteady_widened_covered * 100.0,
            c.median_half_width * 100.0,
            c.mean_z2
        ));
        if c.honest < 0.94 {
            b.short.push(name);
        }
        if c.covered > 0.97 {
            b.wide.push(name);
        }
        if c.unsteady_widened_covered < 0.95 {
            b.drift_short.push(name);
        }
    }
    b
}

/// The gate on every kind: an interval that misleads (misses the truth in a contest called
/// steady) at most 6% of the time, and intervals that cover at most 97% of the time
/// (wider than a 95% interval needs to be is a wrong figure too). The kinds outside either
/// bound are asserted to be the known ones.
#[test]
fn the_coverage_gate_at_the_main_jobs_round_counts() {
    let Bounds { short, wide, drift_short, table } = outside_the_bounds(shipped());
    assert_eq!(short, KNOWN_SHORT, "kinds below 94%:\n{table}");
    assert_eq!(wide, KNOWN_WIDE, "kinds whose intervals cover more than 97%:\n{table}");
    // A change of a contest that is not steady stands when its interval lies beyond twice
    // its drift: on every kind, the intervals so widened cover the truth at least 95% of
    // the time (allowances of 1 and 1.5 fall short on the slow warm-up and the revisit).
    assert!(drift_short.is_empty(), "kinds whose not-steady intervals, widened, cover less than 95%:\n{table}");
}

#[test]
fn the_gate_fails_the_estimator_of_issue_24() {
    // The negative test of item 3: the estimator before this one misses the slow warm-ups
    // and the revisit, and (the offsets between server lives simulated) AR(1) 0.5 and the
    // warm-up transient; it is too wide where the target is within reach.
    let Bounds { short, wide, table, .. } = outside_the_bounds(Design::Shipped(Rule::issue24(2, 6, Some(5.0))));
    assert_eq!(short, ISSUE24_SHORT, "kinds below 94%:\n{table}");
    assert_eq!(wide, ISSUE24_WIDE, "kinds whose intervals cover more than 97%:\n{table}");
}

/// Contests per machine of [`machine_kinds`]: a calibration is simulated for each, so
/// fewer than the gate's (Monte Carlo standard error about 0.6 points on coverage, 0.4 on
/// the share of nulls called real).
const MACHINE_CONTESTS: usize = 1500;

/// The most nulls a design may call real: 5%, what a calibrated 95% interval gives before
/// Holm's correction, plus two Monte Carlo standard errors at [`MACHINE_CONTESTS`] (two
/// nulls a contest).
const NULLS_REAL_BOUND: f64 = 0.058;

/// What the gate finds of a design on the machines of [`machine_kinds`]: the kinds below
/// 94% covered or not steady, above 97% covered, with more than 5% of nulls called real, or
/// a mean z^2 outside [0.8, 1.6] (about nu / (nu - 2) for the intervals' 6 to 12 degrees of
/// freedom; a standard error too small on average shows as more), and the table.
fn machines(design: Design) -> (Vec<&'static str>, String) {
    machines_with(design).0
}

/// The machines a design fails, and the table.
type Verdicts = (Vec<&'static str>, String);

/// [`machines`], and each machine's share of studies whose error model failed.
fn machines_with(design: Design) -> (Verdicts, Vec<(&'static str, f64)>) {
    let mut failed = vec![];
    let mut table = String::new();
    let mut model = vec![];
    for (name, c) in coverage_of_kinds(design, &machine_kinds(), MACHINE_CONTESTS, None, 2) {
        table.push_str(&format!(
            "{name}: {:.1}% covered or not steady, {:.1}% covered, mean z^2 {:.2}, median ±{:.1}%, nulls called real {:.1}%, error model failed {:.1}%\n",
            c.honest * 100.0,
            c.covered * 100.0,
            c.mean_z2,
            c.median_half_width * 100.0,
            c.nulls_called_real * 100.0,
            c.model_failed * 100.0
        ));
        model.push((name, c.model_failed));
        let z2_ok = (0.8..=1.6).contains(&c.mean_z2) || name.starts_with("drift");
        if c.honest < 0.94 || c.covered > 0.97 || c.nulls_called_real > NULLS_REAL_BOUND || !z2_ok {
            failed.push(name);
        }
    }
    ((failed, table), model)
}

/// Issue 48's gate: the priors estimated as `pgtier calibrate` estimates them on the machine
/// itself (4 A/A runs, the default), never read from the truth, on machines unlike the
/// development machine: coverage 94-97%, nulls called real by any path at most 5% (within the
/// simulation's error), mean z^2 in its band, on every machine but the sustained drift's
/// (90.8% covered or not steady: the drifting contender is flagged in about 3 contests of 4,
/// and its nulls stay within the bound).
#[test]
fn the_gate_on_machines_unlike_the_development_machine() {
    let rule = Rule::new(2, 6, Some(5.0), &TYPICAL);
    let ((failed, table), model) = machines_with(Design::Calibrated { rule, runs: 4 });
    assert_eq!(failed, ["drift 1% a round, sustained"], "machines the calibrated estimator fails:\n{table}");
    // The error model's test of a study's controls: few false alarms where the priors are
    // the machine's own (1.7% at its level; the calibration's own error adds some).
    assert!(model.iter().all(|(_, f)| *f <= 0.08), "the error model's false alarms:\n{table}");
}

/// The gate's negative test: tpcb's committed prior (no offset between server lives, as
/// shipped before calibration) on machines with one, and the uncalibrated fallback on a
/// machine with twice its offset.
#[test]
fn the_machine_gate_fails_the_priors_of_another_machine() {
    let rule = Rule::new(2, 6, Some(5.0), &TYPICAL);
    let tpcb = Prior { life_sd_unlimited: 0.0, life_sd_limited: 0.0, ..TYPICAL };
    let ((failed, table), model) = machines_with(Design::Fixed { rule, prior: tpcb, memory_limited: false });
    for kind in ["offset 5%", "offset 10%", "AR(1) 0.5, offset 3.35%"] {
        assert!(failed.contains(&kind), "{kind} passed with tpcb's committed prior:\n{table}");
    }
    // The error model's test sees it: most studies on a machine with three times the offset.
    assert!(model.iter().any(|(k, f)| *k == "offset 10%" && *f > 0.5), "the error model missed it:\n{table}");
    let read_only = Prior { life_sd_unlimited: 0.05, ..TYPICAL };
    let (failed, table) = machines(Design::Fixed { rule, prior: read_only, memory_limited: false });
    assert!(failed.contains(&"offset 10%"), "the fallback held at twice its offset:\n{table}");
    assert!(failed.contains(&"no offset, no correlation"), "the fallback is too wide without an offset:\n{table}");
}

#[test]
fn the_gate_fails_the_estimator_without_the_offset_between_server_lives() {
    // Issue 37's estimator as first shipped, on contests whose server lives are offset as
    // the main job's committed runs show: too narrow on every kind but the flagged ones.
    let rule = Rule::workload_prior(2, 6, Some(5.0), &TYPICAL);
    let Bounds { short, wide, table, .. } = outside_the_bounds(Design::Pooled { rule, series: 18 });
    assert_eq!(short, NO_LIFE_SHORT, "kinds below 94%:\n{table}");
    assert!(wide.is_empty(), "kinds whose intervals cover more than 97%:\n{table}");
}

#[test]
fn the_gate_fails_the_estimator_without_the_long_warm_up_check() {
    // The estimator result sets recording `workload-prior-life-offset` were read with: a
    // slow warm-up of x1.65 over 10 rounds whose cut moved far is still called steady.
    let rule = Rule::life_offset(2, 6, Some(5.0), &TYPICAL);
    let Bounds { short, wide, table, .. } = outside_the_bounds(Design::Pooled { rule, series: 18 });
    assert_eq!(short, ["slow warm-up x1.65 over 10 rounds", "revisit (two segments)"], "kinds below 94%:\n{table}");
    assert!(wide.is_empty(), "kinds whose intervals cover more than 97%:\n{table}");
}

#[test]
fn a_plain_paired_t_fails_the_gate() {
    // The negative test at the main job's 16 rounds: a fixed cut of 2 rounds and a plain
    // paired t, without the correction for correlated rounds or the trend tests.
    let plain = Design::PlainT { discard: 2 };
    let kinds = standard_contests();
    let (_, ar) = kinds.iter().find(|(n, _)| *n == "AR(1) rho 0.3").unwrap();
    let c = coverage(plain, *ar, CONTESTS, 0x5eed);
    assert!(c.honest < 0.92, "AR(1) 0.3: {:.1}%", c.honest * 100.0);
    let (_, warm) = kinds.iter().find(|(n, _)| *n == "warm-up transient").unwrap();
    let c = coverage(plain, *warm, CONTESTS, 0x5eed);
    assert!(c.honest < 0.94, "warm-up transient: {:.1}%", c.honest * 100.0);
}

#[test]
fn the_coverage_test_fails_the_estimator_before_it() {
    // MSER-5 with the largest cut of all contenders, a plain paired t, and a stop as soon as
    // the half-width first reaches the target: below 94% on correlated rounds.
    let before = Design::Mser5FirstReach { min_rounds: 6, target: 0.05 };
    let (_, ar) = standard_contests().into_iter().find(|(n, _)| *n == "AR(1) rho 0.3").unwrap();
    let c = coverage(before, Contest { max_rounds: 30, ..ar }, 1500, 0x5eed);
    assert!(c.honest < 0.90, "{:.1}%", c.honest * 100.0);
}

#[test]
fn stein_sizes_a_contest_that_reaches_its_target() {
    // Little noise: the pilot asks for few rounds and the contest stops there, covered.
    // No offset between server lives (simulated or assumed: the pooled prior's alone puts
    // the interval above ±5%).
    let quiet = Contest { sd: 0.01, life_sd: 0.0, max_rounds: 30, ..standard_contests()[0].1 };
    let mut rng = Rng(1);
    let rule = Rule { life_sd: Some(0.0), ..Rule::new(2, 6, Some(5.0), &TYPICAL) };
    let o = run_contest(Design::Pooled { rule, series: 18 }, quiet, &mut rng);
    assert!(o.iter().all(|o| o.rounds < 12 && o.half_width <= 0.05), "{o:?}");
}

#[test]
fn the_control_warms_up_with_the_baseline() {
    // A warm-up of the baseline alone: the control's ratio does not show it, the others do.
    let c = Contest { sd: 0.0, common_sd: 0.0, life_sd: 0.0, ..standard_contests()[8].1 };
    let mut g = Generator::new(c);
    let first = g.next(&mut Rng(3));
    assert!(first[0].log_ratio > 1.0 && first[1].log_ratio > 1.0, "{first:?}");
    assert!(first[2].log_ratio.abs() < 1e-12, "{first:?}");
}
