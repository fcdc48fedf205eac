//! The report's tables of figures: results with intervals, TPC-C, per statement, failed runs,
//! device I/O and the cells that were not measured.

use super::*;
use analysis::model::CellSummary;

/// The results table: every cell with its TPS and latency changes against the baseline, and
/// how the changes were judged.
pub(super) fn results_table(d: &mut Document, summary: &Summary, whys: &[String]) {
    d.heading(2, "Results");
    statistics_note(d, summary);
    let mut t = Table::new(&[
        "placement",
        "workload",
        "clients:",
        "memory",
        "profile",
        "runs:",
        "TPS (mean ± CI95):",
        "CV:",
        "TPS change",
        "avg latency ms:",
        "latency change",
        "p99 latency change",
        "why",
    ]);
    for (i, c) in summary.cells.iter().enumerate() {
        let (tps, latency, p99, reference) = changes_of(summary, c);
        t.row(vec![
            c.key.placement.clone(),
            c.key.workload.clone(),
            c.key.clients.to_string(),
            c.key.memory_limit.to_string(),
            profile_cell(&c.key),
            c.runs.to_string(),
            format!(
                "{:.1} ± {}",
                c.tps.mean,
                if c.tps.ci95.is_finite() { format!("{:.1}", c.tps.ci95) } else { "n/a".into() }
            ),
            pct_or_na(c.tps.cv_pct),
            fmt_change(tps.as_ref(), reference),
            format!("{:.3}", c.latency_ms.mean),
            fmt_change(latency.as_ref(), reference),
            if c.latency_p99_ms.is_some() { fmt_change(p99.as_ref(), reference) } else { "n/a".into() },
            whys.get(i).cloned().unwrap_or_default(),
        ]);
    }
    let against = match &summary.contrast {
        Some(x) => format!("the same cell under {}", x.dimension.describe(&x.reference)),
        None => "the baseline cell".to_string(),
    };
    d.table(t.caption(format!(
        "Results per cell: mean TPS ± the half-width of its 95% confidence interval (Student's t over the cell's runs or kept rounds); each change against {against} with its own 95% interval, the interval after Holm's correction where it matters (wider, and the 95% one excludes 0), and its verdict."
    )));
    d.para(format!(
        "Why: what moved between {against} and this one, behind the change of its headline figure (NOPM for TPC-C, TPS otherwise), from the evidence columns of summary.csv (means over the cell's runs); each cell's bottleneck and its rule are under Bottlenecks."
    ));
}

/// A cell's TPS, latency and p99 changes as the results table shows them: against the same cell
/// under the contrast's reference value when the study has one, else against the baseline
/// placement; and the word for a cell that is itself the reference (None when it is not).
fn changes_of(
    summary: &Summary,
    c: &CellSummary,
) -> (Option<Delta>, Option<Delta>, Option<Delta>, Option<&'static str>) {
    match &summary.contrast {
        Some(x) => match x.change_of(&c.key) {
            Some(ch) => (ch.tps, ch.latency, ch.latency_p99, None),
            None => (None, None, None, x.is_reference(&c.key).then_some("reference")),
        },
        None => (c.tps_delta, c.latency_delta, c.latency_p99_delta, c.is_baseline.then_some("baseline")),
    }
}

/// [`fmt_delta`], a reference cell named by its word.
fn fmt_change(d: Option<&Delta>, reference: Option<&str>) -> String {
    match reference {
        Some(word) => word.to_string(),
        None => fmt_delta(d, false),
    }
}

/// How to read the changes: the design and the interval it gives, the verdicts, the families
/// Holm's correction ran over, and rounds cut as warm-up.
pub(super) fn statistics_note(d: &mut Document, summary: &Summary) {
    let a = &summary.analysis;
    let how = match a.rule.filter(|_| a.paired()) {
        Some(rule) if rule.life_sd.is_some() => {
            "every placement's server was up at once and the load alternated between them in rounds of short slices (random order in each round); a change is the geometric mean of the per-round ratios of the rounds kept, with a t interval on their logarithms that allows for correlated rounds with the workload's round-to-round correlation (its prior) and for the offset two identical servers can keep for as long as they live, which pairing by round cannot cancel (the workload's prior too; coverage within 94-97% proven by simulation: docs/benchmarks.md, \"The estimator of issue 37\" and \"An offset between server lives\")"
        }
        Some(rule) if rule.rho_prior.is_some() => {
            "every placement's server was up at once and the load alternated between them in rounds of short slices (random order in each round); a change is the geometric mean of the per-round ratios of the rounds kept, with a t interval on their logarithms that allows for correlated rounds with the workload's round-to-round correlation (its prior; coverage within 94-97% proven by simulation: docs/benchmarks.md, \"The estimator of issue 37\")"
        }
        Some(_) => {
            "every placement's server was up at once and the load alternated between them in rounds of short slices (random order in each round); a change is the geometric mean of the per-round ratios of the rounds kept, with a t interval on their logarithms that allows for correlated rounds (the lag-1 autocorrelation's 80% upper bound, bias-corrected) and, where a target stopped the contest, is never narrower than Stein's two-stage interval from the pilot's rounds (coverage proven by simulation: docs/benchmarks.md, \"Coverage\")"
        }
        None => {
            "each repetition is an independent run; a change is the ratio of geometric means, with a Welch t interval on the logarithms (not symmetric around the change)"
        }
    };
    // With a contrast of its own, the study's changes are the contrast's (placements: none).
    let family = summary.contrast.as_ref().map_or(&a.tests, |x| &x.tests);
    let tests: Vec<String> = family.iter().map(|(f, n)| format!("{n} {} change(s)", f.name())).collect();
    d.para(format!(
        "Design **{}**: {how}. Verdicts: **real change** when the interval excludes 0 after Holm's correction for the number of changes of the same figure ({}), **equivalent** when the whole 95% interval lies inside ±{:.1}% (the experiment's equivalence margin), **inconclusive** otherwise. Each change shows its own 95% interval and, where that excludes 0 and the correction widened it, the interval after Holm (the same estimate at level 1 − 0.05/m, m the change's Holm multiplier, at most the family's size), which excludes 0 exactly when the change is significant after the correction (a real change, unless it is an equivalence or its contest is not steady); p-values and both intervals are in summary.csv.",
        a.design,
        if tests.is_empty() { "none with an interval".to_string() } else { tests.join(", ") },
        a.equivalence_margin_pct,
    ));
    if let Some(x) = &summary.contrast {
        contrast_note(d, x, a.equivalence_margin_pct);
    }
    if let Some(rule) = a.rule {
        d.para(format!(
            "Warm-up cut: the first {} round(s) of every segment (a session, or a server life) do not count, then one more while the kept rounds of any contender still trend (a slope and a leading-rounds test at {:.0}%), alike for every placement and by round; a contest whose kept rounds still trend (at {:.0}%, Bonferroni over its contenders) is **not steady** and its changes are neither real changes nor equivalences. runs.csv says of each run whether it counts (`kept`); summary.csv gives each contender's lag-1 autocorrelation and trend.{}",
            rule.discard,
            rule.cut_alpha * 100.0,
            rule.trend_alpha * 100.0,
            estimator_note(&rule, summary.calibration.as_ref()),
        ));
        let mut t = Table::new(&[
            "contest",
            "rounds cut:",
            "rounds kept:",
            "rounds Stein's rule asked for:",
            "steady",
            "lag-1 autocorrelation",
            "correlation assumed",
            "server-life offset assumed",
        ]);
        for (c, x) in &a.contests {
            let lag1: Vec<String> =
                x.lag1.iter().filter(|(_, r)| r.is_finite()).map(|(p, r)| format!("{p} {r:+.2}")).collect();
            t.row(vec![
                c.to_string(),
                x.cut.rounds_dropped().to_string(),
                x.kept.to_string(),
                x.needed.map_or("-".into(), |n| n.to_string()),
                if x.steady { "yes" } else { "**no**" }.to_string(),
                lag1.join(", "),
                x.rho_prior.map_or("each contender's own".into(), |r| format!("{r:.2} (prior)")),
                x.life_sd.map_or("none".into(), |s| {
                    if s > 0.0 { format!("sd {:.1}% (prior)", s * 100.0) } else { "0 (prior)".into() }
                }),
            ]);
        }
        if !t.rows.is_empty() {
            d.table(t.caption("Contests: rounds cut as warm-up and kept, the rounds Stein's rule asked for to reach the target interval, and whether the kept rounds were steady."));
        }
    }
}

/// How the rule's intervals allow for correlated rounds, and what else its cut and steady check do.
fn estimator_note(rule: &stats::rounds::Rule, calibration: Option<&results::manifest::CalibrationRecord>) -> String {
    let source = match calibration {
        None => "pooled from the main job's committed runs",
        Some(c) if c.host_calibrated => "estimated by this host's calibration, `pgtier calibrate`",
        Some(_) => "uncalibrated host: the fallback, from the development machine's committed runs",
    };
    let note = match rule.rho_prior {
        Some(_) => format!(
            " The intervals assume the workload's round-to-round correlation (its prior, SOURCE: the table's column \"correlation assumed\") over every kept round; a contender whose own lag-1 lies far above it is warned of.{} The cut also moves on while the rounds still follow a warm-up curve with a time constant of at most {} rounds, and the steady check also fits such a curve to the rounds from the fixed cut on: a warm-up still under way makes the contest not steady.{}",
            match rule.life_sd {
                Some(_) => " Each interval also adds the variance of the offset between two server lives (the table's last column, its prior too): two identical servers up at once can keep a level apart for as long as they live, every round sees the same two lives, so neither pairing nor more rounds remove it.",
                None => "",
            },
            rule.cut_curve_max_tau.unwrap_or(0.0),
            match rule.long_warm_up {
                Some(share) => format!(" A cut that moved past the fixed rounds by {} of a segment's rounds or more makes the contest not steady too: a warm-up that long is seldom over when the cut stops seeing it (simulated: with it 11-17% of stationary contests are called not steady, 3-8% without).", if (share - 1.0 / 6.0).abs() < 1e-9 { "a sixth".to_string() } else { format!("{:.0}%", share * 100.0) }),
                None => String::new(),
            }
        ),
        None => " The intervals allow for each contender's own round-to-round correlation (its kept rounds' lag-1, bias-corrected, at its 80% upper bound), and are the wider of that and Stein's.".to_string(),
    };
    note.replace("SOURCE", source)
}

pub(super) fn tpcc_table(d: &mut Document, set: &ResultSet, summary: &Summary) {
    let tpcc: Vec<_> = summary.cells.iter().filter(|c| c.nopm.is_some()).collect();
    if !tpcc.is_empty() {
        d.para(
            "TPC-C cells: new orders per minute as HammerDB computes them (growth of sum(d_next_o_id) over the measured interval); TPS above is HammerDB's TPM / 60 (commits + rollbacks of all databases); latency percentiles are the new-order transaction's, every type's are in each run's tpcc-report.json.",
        );
        // Where the emulated devices' QD1 latencies were probed, each change says how far its
        // tiers are from the classes they stand for.
        let probed = set.manifest.emulated && !analysis::fidelity::devices(&set.manifest).is_empty();
        let mut heads =
            vec!["placement", "workload", "virtual users:", "memory", "profile", "NOPM (mean ± CI95):", "NOPM change"];
        if probed {
            heads.push("emulated tiers against their classes");
        }
        let mut t = Table::new(&heads);
        for c in tpcc {
            let n = c.nopm.expect("filtered");
            let mut row = vec![
                c.key.placement.clone(),
                c.key.workload.clone(),
                c.key.clients.to_string(),
                c.key.memory_limit.to_string(),
                profile_cell(&c.key),
                format!("{:.0} ± {}", n.mean, if n.ci95.is_finite() { format!("{:.0}", n.ci95) } else { "n/a".into() }),
                fmt_delta(c.nopm_delta.as_ref(), c.is_baseline),
            ];
            match (probed, c.is_baseline) {
                (false, _) => {}
                (true, true) => row.push(String::new()),
                (true, false) => {
                    let (m, p, b) = (&set.manifest, &c.key.placement, &set.manifest.baseline);
                    let far = analysis::fidelity::how_far(m, p, b).unwrap_or_else(|| "same devices".into());
                    row.push(match analysis::fidelity::note(m, p, b) {
                        Some(_) => format!("**emulation cannot reproduce this**: {far}"),
                        None => far,
                    });
                }
            }
            t.row(row);
        }
        d.table(t.caption(
            "TPC-C cells: mean NOPM ± the half-width of its 95% confidence interval; each change against the baseline cell with its own 95% interval and its verdict.",
        ));
    }
}

/// Per-statement average latency (pgbench `-r`), one table per workload: seed 001 quotes the
/// UPDATE statement's latency. Each value with its change against the baseline cell.
pub(super) fn statement_tables(d: &mut Document, summary: &Summary) {
    let mut workloads: Vec<&str> = Vec::new();
    for c in summary.cells.iter().filter(|c| !c.statements.is_empty()) {
        if !workloads.contains(&c.key.workload.as_str()) {
            workloads.push(&c.key.workload);
        }
    }
    if workloads.is_empty() {
        return;
    }
    // A contrast study has one placement: its changes are against the reference cell.
    let against = match &summary.contrast {
        Some(k) => format!("the same statement under {}", k.dimension.describe(&k.reference)),
        None => "the baseline's same statement".to_string(),
    };
    d.para(format!(
        "Per-statement average latency in ms (pgbench -r; mean of the repetitions, change against {against} with its 95% interval; every figure in statements.csv):",
    ));
    for w in workloads {
        let cells: Vec<_> = summary.cells.iter().filter(|c| c.key.workload == w && !c.statements.is_empty()).collect();
        let mut heads: Vec<String> = ["placement", "clients:", "memory", "profile"].map(String::from).to_vec();
        heads.extend(cells[0].statements.iter().map(|st| format!("{}:", statement_label(&st.statement))));
        d.para(format!("**{w}**"));
        let mut t = Table::new(&heads);
        for c in cells {
            let values: Vec<String> = c
                .statements
                .iter()
                .map(|st| match &st.delta {
                    None => format!("{:.3}", st.latency_ms.mean),
                    Some(d) => format!("{:.3} ({})", st.latency_ms.mean, d.text_with_holm(" ~")),
                })
                .collect();
            let mut row = vec![
                c.key.placement.clone(),
                c.key.clients.to_string(),
                c.key.memory_limit.to_string(),
                profile_cell(&c.key),
            ];
            row.extend(values);
            t.row(row);
        }
        d.table(t.caption(format!(
            "Per-statement average latency of {w} in ms (mean of the repetitions), with each change against {against} and its 95% interval (`~`: the interval includes no change)."
        )));
    }
}

/// Every failed run with what failed and why (the same text as runs.csv's `failure`).
pub(super) fn failed_runs(d: &mut Document, set: &ResultSet) {
    let failed: Vec<_> = set.runs.iter().filter(|r| r.status != results::RunStatus::Ok).collect();
    if failed.is_empty() {
        return;
    }
    d.para(format!(
        "**Failed runs** ({} of {}; left out of every figure, evidence in runs/<id>/):",
        failed.len(),
        set.runs.len()
    ));
    d.list(failed.iter().map(|r| {
        format!(
            "`{}` ({}): {}",
            r.run_id,
            r.failure_kind.map(|k| k.as_str()).unwrap_or("failed"),
            r.failure.as_deref().unwrap_or("no reason recorded").replace('\n', " ")
        )
    }));
}

/// Device I/O per cell (seed 001 quotes read and write IOPS at peak; seed 002 per device).
pub(super) fn device_io(d: &mut Document, set: &ResultSet, summary: &Summary) {
    let mut io_rows = Vec::new();
    for c in &summary.cells {
        let runs = set.device_runs(&c.key);
        let Some(first) = runs.first() else { continue };
        for dev in &first.devices {
            let all: Vec<_> =
                runs.iter().filter_map(|r| r.devices.iter().find(|x| x.kernel_name == dev.kernel_name)).collect();
            let n = all.len().max(1) as f64;
            let mean = |f: fn(&results::record::DeviceIo) -> f64| all.iter().map(|x| f(x)).sum::<f64>() / n;
            let peak = |f: fn(&results::record::DeviceIo) -> f64| all.iter().map(|x| f(x)).fold(0.0, f64::max);
            io_rows.push(vec![
                c.key.placement.clone(),
                c.key.workload.clone(),
                c.key.clients.to_string(),
                c.key.memory_limit.to_string(),
                profile_cell(&c.key),
                format!("{} ({})", dev.device, dev.role),
                format!("{:.0} / {:.0}", mean(|x| x.read_iops), mean(|x| x.write_iops)),
                format!("{:.0} / {:.0}", peak(|x| x.peak_read_iops), peak(|x| x.peak_write_iops)),
                format!("{:.1} / {:.1}", mean(|x| x.read_mb_s), mean(|x| x.write_mb_s)),
                format!("{:.2}", mean(|x| x.avg_wait_ms)),
            ]);
        }
    }
    if !io_rows.is_empty() {
        d.para(
            "Device I/O during the measured runs (/proc/diskstats; mean of the runs, peak = highest one-second rate of any run; per run in devices.csv):",
        );
        let mut t = Table::new(&[
            "placement",
            "workload",
            "clients:",
            "memory",
            "profile",
            "device (role)",
            "read / write IOPS:",
            "peak read / write IOPS:",
            "read / write MB/s:",
            "avg wait ms:",
        ]);
        t.rows = io_rows;
        d.table(t.caption("Device I/O per cell and device: means of the runs (no interval), peaks the highest one-second rate of any run."));
    }
}

/// Planned cells without a successful run.
pub(super) fn missing_cells(d: &mut Document, summary: &Summary) {
    if !summary.missing.is_empty() {
        d.para("**Missing cells** (planned, no successful run):");
        d.list(summary.missing.iter().map(describe));
    }
}

/// The study's contrast: what it varies, what each change is against, and how its interval is
/// formed.
fn contrast_note(d: &mut Document, x: &analysis::contrast::Contrast, margin: f64) {
    d.para(format!(
        "**The study's contrast: {}.** The study measures one placement and varies the {} ({}): every change below is a cell against the same cell under {} (the table's changes, the findings and the forest plot), not against a placement. How the interval is formed: {}. Holm's correction runs over the contrast's changes of each figure; the verdicts are as above (margin ±{margin:.1}%).",
        x.dimension.name(),
        x.dimension.name(),
        x.values.join(", "),
        x.dimension.describe(&x.reference),
        analysis::contrast::ASSUMPTION,
    ));
}
