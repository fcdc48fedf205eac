//! The report's tables of figures: results with intervals, TPC-C, per statement, failed runs,
//! device I/O and the cells that were not measured.

use super::*;

/// The results table: every cell with its TPS and latency changes against the baseline, and
/// how the changes were judged.
pub(super) fn results_table(s: &mut String, summary: &Summary, whys: &[String]) {
    let _ = writeln!(s, "## Results\n");
    statistics_note(s, summary);
    let _ = writeln!(
        s,
        "| placement | workload | clients | memory | profile | runs | TPS (mean ± CI95) | CV | TPS change | avg latency ms | latency change | p99 latency change | why |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---|---:|---:|---:|---|---:|---|---|---|");
    for (i, c) in summary.cells.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.1} ± {} | {} | {} | {:.3} | {} | {} | {} |",
            c.key.placement,
            c.key.workload,
            c.key.clients,
            c.key.memory_limit,
            profile_cell(&c.key),
            c.runs,
            c.tps.mean,
            if c.tps.ci95.is_finite() { format!("{:.1}", c.tps.ci95) } else { "n/a".into() },
            pct_or_na(c.tps.cv_pct),
            fmt_delta(c.tps_delta.as_ref(), c.is_baseline),
            c.latency_ms.mean,
            fmt_delta(c.latency_delta.as_ref(), c.is_baseline),
            if c.latency_p99_ms.is_some() {
                fmt_delta(c.latency_p99_delta.as_ref(), c.is_baseline)
            } else {
                "n/a".into()
            },
            whys.get(i).map(String::as_str).unwrap_or(""),
        );
    }
    let _ = writeln!(
        s,
        "\nWhy: what moved between the baseline cell and this one, behind the change of its headline figure (NOPM for TPC-C, TPS otherwise), from the evidence columns of summary.csv (means over the cell's runs); each cell's bottleneck and its rule are under Bottlenecks."
    );
}

/// How to read the changes: the design and the interval it gives, the verdicts, the families
/// Holm's correction ran over, and rounds cut as warm-up.
pub(super) fn statistics_note(s: &mut String, summary: &Summary) {
    let a = &summary.analysis;
    let how = if a.paired() {
        "every placement's server was up at once and the load alternated between them in rounds of short slices (random order in each round); a change is the geometric mean of the per-round ratios of the rounds kept, with a t interval on their logarithms that allows for correlated rounds (the lag-1 autocorrelation's 80% upper bound, bias-corrected) and, where a target stopped the contest, is never narrower than Stein's two-stage interval from the pilot's rounds (coverage proven by simulation: docs/benchmarks.md, \"Coverage\")"
    } else {
        "each repetition is an independent run; a change is the ratio of geometric means, with a Welch t interval on the logarithms (not symmetric around the change)"
    };
    let tests: Vec<String> = a.tests.iter().map(|(f, n)| format!("{n} {} change(s)", f.name())).collect();
    let _ = writeln!(
        s,
        "Design **{}**: {how}. Verdicts: **real change** when the interval excludes 0 after Holm's correction for the number of changes of the same figure ({}), **equivalent** when the whole 95% interval lies inside ±{:.1}% (the experiment's equivalence margin), **inconclusive** otherwise. The intervals printed are each change's own 95% interval, before the correction, so one that excludes 0 can still be inconclusive; p-values before and after the correction are in summary.csv.\n",
        a.design,
        if tests.is_empty() { "none with an interval".to_string() } else { tests.join(", ") },
        a.equivalence_margin_pct,
    );
    if let Some(rule) = a.rule {
        let _ = writeln!(
            s,
            "Warm-up cut: the first {} round(s) of every segment (a session, or a server life) do not count, then one more while the kept rounds of any contender still trend (a slope and a leading-rounds test at {:.0}%), alike for every placement and by round; a contest whose kept rounds still trend (at {:.0}%, Bonferroni over its contenders) is **not steady** and its changes are neither real changes nor equivalences. runs.csv says of each run whether it counts (`kept`); summary.csv gives each contender's lag-1 autocorrelation and trend.\n",
            rule.discard,
            rule.cut_alpha * 100.0,
            rule.trend_alpha * 100.0,
        );
        let rows: Vec<String> = a
            .contests
            .iter()
            .map(|(c, x)| {
                let lag1: Vec<String> =
                    x.lag1.iter().filter(|(_, r)| r.is_finite()).map(|(p, r)| format!("{p} {r:+.2}")).collect();
                format!(
                    "| {c} | {} | {} | {} | {} | {} |",
                    x.cut.rounds_dropped(),
                    x.kept,
                    x.needed.map_or("-".into(), |n| n.to_string()),
                    if x.steady { "yes" } else { "**no**" },
                    lag1.join(", ")
                )
            })
            .collect();
        if !rows.is_empty() {
            let _ = writeln!(
                s,
                "| contest | rounds cut | rounds kept | rounds Stein's rule asked for | steady | lag-1 autocorrelation |\n|---|---:|---:|---:|---|---|\n{}\n",
                rows.join("\n")
            );
        }
    }
}

pub(super) fn tpcc_table(s: &mut String, set: &ResultSet, summary: &Summary) {
    let tpcc: Vec<_> = summary.cells.iter().filter(|c| c.nopm.is_some()).collect();
    if !tpcc.is_empty() {
        let _ = writeln!(
            s,
            "\nTPC-C cells: new orders per minute as HammerDB computes them (growth of sum(d_next_o_id) over the measured interval); TPS above is HammerDB's TPM / 60 (commits + rollbacks of all databases); latency percentiles are the new-order transaction's, every type's are in each run's tpcc-report.json.\n"
        );
        // Where the emulated devices' QD1 latencies were probed, each change says how far its
        // tiers are from the classes they stand for.
        let probed = set.manifest.emulated && !crate::fidelity::devices(&set.manifest).is_empty();
        let _ = writeln!(
            s,
            "| placement | workload | virtual users | memory | profile | NOPM (mean ± CI95) | NOPM change |{}\n|---|---|---:|---|---|---:|---|{}",
            if probed { " emulated tiers against their classes |" } else { "" },
            if probed { "---|" } else { "" }
        );
        for c in tpcc {
            let n = c.nopm.expect("filtered");
            let fidelity = match (probed, c.is_baseline) {
                (false, _) => String::new(),
                (true, true) => " |".into(),
                (true, false) => {
                    let (m, p, b) = (&set.manifest, &c.key.placement, &set.manifest.baseline);
                    let far = crate::fidelity::how_far(m, p, b).unwrap_or_else(|| "same devices".into());
                    match crate::fidelity::note(m, p, b) {
                        Some(_) => format!(" **emulation cannot reproduce this**: {far} |"),
                        None => format!(" {far} |"),
                    }
                }
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.0} ± {} | {} |{}",
                c.key.placement,
                c.key.workload,
                c.key.clients,
                c.key.memory_limit,
                profile_cell(&c.key),
                n.mean,
                if n.ci95.is_finite() { format!("{:.0}", n.ci95) } else { "n/a".into() },
                fmt_delta(c.nopm_delta.as_ref(), c.is_baseline),
                fidelity
            );
        }
    }
}

/// Per-statement average latency (pgbench `-r`), one table per workload: seed 001 quotes the
/// UPDATE statement's latency. Each value with its change against the baseline cell.
pub(super) fn statement_tables(s: &mut String, summary: &Summary) {
    let mut workloads: Vec<&str> = Vec::new();
    for c in summary.cells.iter().filter(|c| !c.statements.is_empty()) {
        if !workloads.contains(&c.key.workload.as_str()) {
            workloads.push(&c.key.workload);
        }
    }
    if workloads.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nPer-statement average latency in ms (pgbench -r; mean of the repetitions, change against the baseline's same statement with its 95% interval; every figure in statements.csv):\n"
    );
    for w in workloads {
        let cells: Vec<_> = summary.cells.iter().filter(|c| c.key.workload == w && !c.statements.is_empty()).collect();
        let heads: Vec<String> = cells[0].statements.iter().map(|st| statement_label(&st.statement)).collect();
        let _ = writeln!(s, "**{w}**\n");
        let _ = writeln!(s, "| placement | clients | memory | profile | {} |", heads.join(" | "));
        let _ = writeln!(s, "|---|---:|---|---|{}", "---:|".repeat(heads.len()));
        for c in cells {
            let values: Vec<String> = c
                .statements
                .iter()
                .map(|st| match (&st.delta, c.is_baseline) {
                    (_, true) | (None, _) => format!("{:.3}", st.latency_ms.mean),
                    (Some(d), false) => format!("{:.3} ({})", st.latency_ms.mean, d.text(" ~")),
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                c.key.placement,
                c.key.clients,
                c.key.memory_limit,
                profile_cell(&c.key),
                values.join(" | ")
            );
        }
        let _ = writeln!(s);
    }
}

/// Every failed run with what failed and why (the same text as runs.csv's `failure`).
pub(super) fn failed_runs(s: &mut String, set: &ResultSet) {
    let failed: Vec<_> = set.runs.iter().filter(|r| r.status != results::RunStatus::Ok).collect();
    if failed.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n**Failed runs** ({} of {}; left out of every figure, evidence in runs/<id>/):\n",
        failed.len(),
        set.runs.len()
    );
    for r in failed {
        let _ = writeln!(
            s,
            "- `{}` ({}): {}",
            r.run_id,
            r.failure_kind.map(|k| k.as_str()).unwrap_or("failed"),
            r.failure.as_deref().unwrap_or("no reason recorded").replace('\n', " ")
        );
    }
}

/// Device I/O per cell (seed 001 quotes read and write IOPS at peak; seed 002 per device).
pub(super) fn device_io(s: &mut String, set: &ResultSet, summary: &Summary) {
    let mut io_rows = Vec::new();
    for c in &summary.cells {
        let runs = set.device_runs(&c.key);
        let Some(first) = runs.first() else { continue };
        for d in &first.devices {
            let all: Vec<_> =
                runs.iter().filter_map(|r| r.devices.iter().find(|x| x.kernel_name == d.kernel_name)).collect();
            let n = all.len().max(1) as f64;
            let mean = |f: fn(&results::record::DeviceIo) -> f64| all.iter().map(|x| f(x)).sum::<f64>() / n;
            let peak = |f: fn(&results::record::DeviceIo) -> f64| all.iter().map(|x| f(x)).fold(0.0, f64::max);
            io_rows.push(format!(
                "| {} | {} | {} | {} | {} | {} ({}) | {:.0} / {:.0} | {:.0} / {:.0} | {:.1} / {:.1} | {:.2} |",
                c.key.placement,
                c.key.workload,
                c.key.clients,
                c.key.memory_limit,
                profile_cell(&c.key),
                d.device,
                d.role,
                mean(|x| x.read_iops),
                mean(|x| x.write_iops),
                peak(|x| x.peak_read_iops),
                peak(|x| x.peak_write_iops),
                mean(|x| x.read_mb_s),
                mean(|x| x.write_mb_s),
                mean(|x| x.avg_wait_ms),
            ));
        }
    }
    if !io_rows.is_empty() {
        let _ = writeln!(
            s,
            "\nDevice I/O during the measured runs (/proc/diskstats; mean of the runs, peak = highest one-second rate of any run; per run in devices.csv):\n"
        );
        let _ = writeln!(
            s,
            "| placement | workload | clients | memory | profile | device (role) | read / write IOPS | peak read / write IOPS | read / write MB/s | avg wait ms |"
        );
        let _ = writeln!(s, "|---|---|---:|---|---|---|---:|---:|---:|---:|");
        for r in io_rows {
            let _ = writeln!(s, "{r}");
        }
    }
}

/// Planned cells without a successful run.
pub(super) fn missing_cells(s: &mut String, summary: &Summary) {
    if !summary.missing.is_empty() {
        let _ = writeln!(s, "\n**Missing cells** (planned, no successful run):\n");
        for k in &summary.missing {
            let _ = writeln!(s, "- {}", describe(k));
        }
    }
}
