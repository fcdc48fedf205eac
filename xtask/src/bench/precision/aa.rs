//! The A/A figures of `bench precision`: error rates per design and the changes by position.

use super::*;

/// The A/A experiments' error rates per design: intervals that exclude 0 before any correction
/// (per change), experiments with a real change after Holm's correction (per experiment), each
/// with its Clopper-Pearson 95% interval, and every placement's mean change over the trials (a
/// position effect shows as a mean away from 0).
pub(super) fn aa_rates(s: &mut String, args: &PrecisionArgs, rows: &[Row]) {
    for design in &args.designs {
        let r: Vec<&Row> = rows.iter().filter(|r| r.experiment == "aa" && &r.design == design).collect();
        if r.is_empty() {
            continue;
        }
        let with_interval: Vec<&&Row> = r.iter().filter(|r| r.low.is_finite()).collect();
        let excl = with_interval.iter().filter(|r| r.low > 0.0 || r.high < 0.0).count() as u64;
        let n = with_interval.len() as u64;
        let mut trials: Vec<u32> = r.iter().map(|r| r.trial).collect();
        trials.dedup();
        let bad =
            trials.iter().filter(|&&t| r.iter().any(|x| x.trial == t && x.verdict == Verdict::RealChange)).count();
        // A contest still moving gets no verdict; its interval is counted above all the same.
        let not_steady = r.iter().filter(|r| r.verdict == Verdict::NotSteady).count();
        let steady_excl =
            with_interval.iter().filter(|r| r.verdict != Verdict::NotSteady && (r.low > 0.0 || r.high < 0.0)).count();
        let loads: Vec<f64> = r.iter().filter_map(|r| r.load).collect();
        let (lo, hi) = loads.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let (cl, ch) = stats::clopper_pearson(excl, n);
        let (el, eh) = stats::clopper_pearson(bad as u64, trials.len() as u64);
        s.push_str(&format!(
            "\nA/A, design {design}: {excl} of {n} intervals exclude 0 before any correction ({:.1}%, Clopper-Pearson 95% [{:.1}, {:.1}]); {bad} of {} experiments call a change real after Holm ({:.1}% [{:.1}, {:.1}]).\n\n",
            pct(excl, n),
            cl * 100.0,
            ch * 100.0,
            trials.len(),
            pct(bad as u64, trials.len() as u64),
            el * 100.0,
            eh * 100.0,
        ));
        s.push_str(&format!(
            "{not_steady} of {} changes were in contests called not steady (no verdict); {steady_excl} intervals of steady contests exclude 0. Load average at the experiments' start: {}.\n\n",
            r.len(),
            if loads.is_empty() { "not recorded".to_string() } else { format!("{lo:.1} to {hi:.1}") }
        ));
        calibration(s, &with_interval);
        s.push_str("| placement | trials | mean change [95% CI over trials] |\n|---|---:|---|\n");
        let mut placements: Vec<&str> = r.iter().map(|r| r.placement.as_str()).collect();
        placements.sort();
        placements.dedup();
        for p in placements {
            let v: Vec<f64> = r.iter().filter(|r| r.placement == p).map(|r| r.pct).collect();
            match stats::Estimate::of(&v) {
                Some(e) if e.has_interval() => s.push_str(&format!(
                    "| {p} | {} | {:+.2}% [{:+.2}, {:+.2}] |\n",
                    e.n,
                    e.mean,
                    e.mean - e.ci95,
                    e.mean + e.ci95
                )),
                Some(e) => s.push_str(&format!("| {p} | {} | {:+.2}% |\n", e.n, e.mean)),
                None => {}
            }
        }
        positions(s, &r);
    }
}

/// The A/A changes by where the contender stood against the baseline in each order a session
/// draws: an order that favours a server shows as a difference between before and after. And
/// the mean of each experiment's changes: something that favours the baseline itself (not drawn
/// at random) shows as a mean away from 0.
fn positions(s: &mut String, r: &[&Row]) {
    let interval = |v: &[f64]| match stats::Estimate::of(v) {
        Some(e) if e.has_interval() => {
            format!("{:+.2}% [{:+.2}, {:+.2}] ({})", e.mean, e.mean - e.ci95, e.mean + e.ci95, e.n)
        }
        Some(e) => format!("{:+.2}% ({})", e.mean, e.n),
        None => "none".to_string(),
    };
    type Step = fn(&Row) -> Option<i32>;
    let orders: [(&str, Step); 2] = [
        ("server start (data-set copy, port, cgroup)", |r| r.start_step),
        ("device creation (loop, zram, link, port)", |r| r.device_step),
    ];
    if r.iter().all(|r| r.start_step.is_none() && r.device_step.is_none()) {
        return;
    }
    s.push_str("\nBy position against the baseline (mean change [95% CI] (changes); an experiment's changes share its baseline's rounds, so these intervals are somewhat narrow):\n\n| order | contender before the baseline | contender after it |\n|---|---|---|\n");
    for (name, step) in orders {
        let side = |before: bool| -> Vec<f64> {
            r.iter().filter(|x| step(x).is_some_and(|k| (k < 0) == before)).map(|x| x.pct).collect()
        };
        s.push_str(&format!("| {name} | {} | {} |\n", interval(&side(true)), interval(&side(false))));
    }
    let mut trials: Vec<u32> = r.iter().map(|x| x.trial).collect();
    trials.sort();
    trials.dedup();
    let per_experiment: Vec<f64> = trials
        .iter()
        .filter_map(|&t| {
            let v: Vec<f64> = r.iter().filter(|x| x.trial == t).map(|x| x.pct).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let above = per_experiment.iter().filter(|&&x| x > 0.0).count();
    s.push_str(&format!(
        "\nThe contenders against the baseline, the mean of each experiment's changes: {}; {above} of {} experiments above 0.\n",
        interval(&per_experiment),
        per_experiment.len()
    ));
}

/// The calibration of the A/A intervals: the mean of z^2, z = change / its standard error on the
/// log scale (the estimator's own: about df / (df - 2) for calibrated intervals on df degrees of
/// freedom, 1.2-1.3 at the main job's, less for too wide ones), and z = change / (half-width /
/// 1.96) as issue 24's campaign was read (about 0.9 for calibrated intervals at 8-12 degrees of
/// freedom), each with a 95% interval over the experiments (each experiment's mean z^2 one
/// value: its changes share the baseline's rounds).
fn calibration(s: &mut String, rows: &[&&Row]) {
    let by_se = |r: &Row| (r.se > 0.0 && r.se.is_finite()).then(|| ((r.pct / 100.0).ln_1p() / r.se).powi(2));
    let by_half_width = |r: &Row| {
        let (m, lo, hi) = ((r.pct / 100.0).ln_1p(), (r.low / 100.0).ln_1p(), (r.high / 100.0).ln_1p());
        let se = (hi - lo) / 2.0 / 1.96;
        (se > 0.0).then(|| (m / se).powi(2))
    };
    let mut trials: Vec<u32> = rows.iter().map(|r| r.trial).collect();
    trials.sort();
    trials.dedup();
    let figure = |z2: &dyn Fn(&Row) -> Option<f64>| {
        let per_experiment: Vec<f64> = trials
            .iter()
            .filter_map(|&t| {
                let v: Vec<f64> = rows.iter().filter(|r| r.trial == t).filter_map(|r| z2(r)).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        let all: Vec<f64> = rows.iter().filter_map(|r| z2(r)).collect();
        let mean = all.iter().sum::<f64>() / all.len().max(1) as f64;
        match stats::Estimate::of(&per_experiment) {
            Some(e) if e.has_interval() => {
                format!("{mean:.2} [{:.2}, {:.2}] over {} changes", e.mean - e.ci95, e.mean + e.ci95, all.len())
            }
            _ => format!("{mean:.2} over {} changes", all.len()),
        }
    };
    s.push_str(&format!(
        "Calibration, mean z^2 [95% interval over the experiments]: z = change / its standard error {} (calibrated: about df / (df - 2), 1.2-1.3 at 10-14 degrees of freedom); z = change / (half-width / 1.96) {} (as issue 24's campaign was read; calibrated: about 0.9). Less is too wide.\n\n",
        figure(&by_se),
        figure(&by_half_width),
    ));
}
