//! `report.md`: the summary table with deltas and intervals, warnings, the environment and
//! devices, the methodology as it actually ran, and the charts.

use crate::claims::{self, ClaimCheck, ClaimVerdict};
use crate::evidence::{self, Study};
use crate::export::{ExportError, Exporter, Output, layout};
use crate::model::{ResultSet, Summary, describe};
use crate::stats::{Delta, Verdict};
use crate::views::{self, ChartFile};
use results::Manifest;
use results::manifest::DaxRequest;
use std::fmt::Write as _;

/// `report.md`, one function per section, embedding the charts `views::render_all` wrote.
pub struct MarkdownExporter {
    pub charts: Vec<views::ChartFile>,
}

fn fmt_delta(d: Option<&Delta>, baseline: bool) -> String {
    match d {
        _ if baseline => "baseline".into(),
        None => "n/a".into(),
        Some(d) if d.has_interval() => format!("{} **{}**", d.text(""), d.verdict.as_str()),
        Some(d) => d.text(""),
    }
}

/// `12.3%`, or `n/a` for a figure without a spread (one run).
fn pct_or_na(v: f64) -> String {
    if v.is_finite() { format!("{v:.1}%") } else { "n/a".into() }
}

/// A statement of a pgbench script as a column heading: `UPDATE pgbench_accounts`,
/// `SELECT … FROM pgbench_accounts`, `INSERT INTO pgbench_history`, `BEGIN`.
pub fn statement_label(text: &str) -> String {
    let t = text.trim().trim_end_matches(';');
    let words: Vec<&str> = t.split_whitespace().collect();
    let upper = |i: usize| words.get(i).map(|w| w.to_ascii_uppercase()).unwrap_or_default();
    match upper(0).as_str() {
        "UPDATE" if words.len() >= 2 => format!("UPDATE {}", words[1]),
        "INSERT" if words.len() >= 3 && upper(1) == "INTO" => format!("INSERT INTO {}", words[2]),
        "SELECT" => match words.iter().position(|w| w.eq_ignore_ascii_case("FROM")) {
            Some(i) if i + 1 < words.len() => format!("SELECT … FROM {}", words[i + 1]),
            _ => t.to_string(),
        },
        _ if words.len() <= 3 => t.to_string(),
        _ => format!("{} …", words[..3].join(" ")),
    }
}

impl Exporter for MarkdownExporter {
    fn export(&self, set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
        let m = &set.manifest;
        let mut s = String::new();
        let study = Study::of(set, summary);
        let checks = claims::check_all(set, summary, &study);
        header(&mut s, m);
        published_vs_measured(&mut s, m, &checks);
        findings(&mut s, set, summary, &study, &checks);
        results_table(&mut s, summary, &whys(set, summary, &study));
        tpcc_table(&mut s, set, summary);
        statement_tables(&mut s, summary);
        failed_runs(&mut s, set);
        device_io(&mut s, set, summary);
        bottlenecks(&mut s, summary, &study);
        fidelity_section(&mut s, m);
        missing_cells(&mut s, summary);
        warnings(&mut s, m, summary);
        charts(&mut s, &self.charts);
        environment(&mut s, m);
        builds(&mut s, m);
        devices(&mut s, m);
        device_ceilings(&mut s, m);
        placements(&mut s, m);
        settings(&mut s, set);
        method(&mut s, set);
        Ok(vec![Output::bytes(layout().report_md(), s.into_bytes())])
    }
}

/// The title, the description, when it ran and the emulation notice.
fn header(s: &mut String, m: &Manifest) {
    let _ = writeln!(s, "# {}\n", m.experiment_name);
    if !m.experiment_description.is_empty() {
        let _ = writeln!(s, "{}\n", m.experiment_description.trim());
    }
    let _ = writeln!(
        s,
        "Baseline placement: **{}**. {} tiers. Started {}{}.\n",
        m.baseline,
        if m.emulated { "Emulated" } else { "Real" },
        m.started_at,
        m.finished_at
            .as_ref()
            .map(|f| format!(", finished {f}"))
            .unwrap_or_else(|| " (not finished: the matrix was interrupted)".into())
    );
    if m.emulated {
        let _ = writeln!(
            s,
            "> These results come from **emulated** devices (RAM-, file- and network-backed block devices standing in for the real classes). They show what the pipeline measures and how placements compare on this machine, not what the real hardware does.\n"
        );
    }
}

/// The study's published figures against what was measured, first.
fn published_vs_measured(s: &mut String, m: &Manifest, checks: &[ClaimCheck]) {
    if checks.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Published vs measured\n");
    if m.emulated {
        let _ = writeln!(
            s,
            "These verdicts come from **emulated** tiers: they check that the pipeline measures the study's kind of figure, not what the study's hardware does. A verdict whose tiers' emulated latencies are far from the real classes' says so.\n"
        );
    }
    let _ = writeln!(s, "| claim | the study | measured (cell) | verdict | why |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for c in checks {
        let r = &c.claim;
        let what = match r.metric.as_str() {
            "tps" => "TPS",
            "latency" => "average latency",
            "latency-p99" => "p99 latency",
            "nopm" => "NOPM",
            "statement-latency" => "statement latency",
            "device-iops" => "device read+write IOPS",
            "device-mb-s" => "device read+write MB/s",
            other => other,
        };
        let measured = c.measured.as_ref().map(|d| format!("{} ", d.text(""))).unwrap_or_default();
        let mut why = c.why.clone();
        if let Some(n) = &r.emulation_note {
            why.push_str(&format!("; emulated cell: {n}"));
        }
        if let Some(f) = &c.fidelity {
            why.push_str(&format!("; **{f}**"));
        }
        let _ = writeln!(
            s,
            "| {}: {what} of {} against {} | {} \"{}\" | {measured}({}) | **{}** | {} |",
            r.name,
            r.placement,
            r.against,
            r.figure,
            r.text.replace('|', "/"),
            c.cell,
            c.verdict.as_str(),
            why.replace('|', "/")
        );
    }
    let _ = writeln!(s, "\nVerdicts: {} Claims are not corrected for their number; a claim on a cell of the results table uses that table's change.\n", claims::RULE);
}

/// A few sentences written from the verdicts: the claims, the largest real change of each
/// workload with its cause, the baselines' bottlenecks, the emulation's distortions.
fn findings(s: &mut String, set: &ResultSet, summary: &Summary, study: &Study, checks: &[ClaimCheck]) {
    let mut lines: Vec<String> = Vec::new();
    if !checks.is_empty() {
        let count = |v: ClaimVerdict| checks.iter().filter(|c| c.verdict == v).count();
        let parts: Vec<String> = [
            ClaimVerdict::Reproduced,
            ClaimVerdict::SameDirection,
            ClaimVerdict::Contradicted,
            ClaimVerdict::Inconclusive,
            ClaimVerdict::NeedsTwoResultSets,
            ClaimVerdict::NotMeasured,
        ]
        .iter()
        .filter(|v| count(**v) > 0)
        .map(|v| format!("{} {}", count(*v), v.as_str()))
        .collect();
        lines.push(format!(
            "Published claims: {} of {}{}.",
            parts.join(", "),
            checks.len(),
            if set.manifest.emulated { " (emulated tiers: a check of the pipeline, not of the hardware)" } else { "" }
        ));
    }
    let baseline = &set.manifest.baseline;
    for g in crate::views::groups(summary) {
        let Some(base) = g.iter().find(|c| c.is_baseline) else { continue };
        let context = format!(
            "{} at {} clients, memory {}{}",
            base.key.workload,
            base.key.clients,
            base.key.memory_limit,
            if base.key.profile == "default" { String::new() } else { format!(", profile {}", base.key.profile) }
        );
        let bottleneck = study.cells.get(&base.key).map(evidence::verdict_text).unwrap_or_else(|| "not judged".into());
        let real: Vec<_> = g
            .iter()
            .filter(|c| !c.is_baseline)
            .filter_map(|c| c.headline().1.map(|d| (c, d)))
            .filter(|(_, d)| d.verdict == Verdict::RealChange)
            .collect();
        let best = real.iter().max_by(|a, b| a.1.pct.abs().total_cmp(&b.1.pct.abs()));
        let line = match best {
            Some((c, d)) => format!(
                "{context}: the baseline {baseline} is {bottleneck}; the largest real change is {} {} {}: {}.",
                c.key.placement,
                d.text(""),
                if c.nopm.is_some() { "NOPM" } else { "TPS" },
                study.cause(&c.key, baseline, Some(d)).unwrap_or_default()
            ),
            None => {
                let verdicts: Vec<String> = g
                    .iter()
                    .filter(|c| !c.is_baseline)
                    .filter_map(|c| c.headline().1.map(|d| format!("{} {}", c.key.placement, d.verdict.as_str())))
                    .collect();
                format!(
                    "{context}: the baseline {baseline} is {bottleneck}; no real change ({}).",
                    if verdicts.is_empty() { "no contender measured".to_string() } else { verdicts.join(", ") }
                )
            }
        };
        lines.push(line);
    }
    let distorted: Vec<String> = set
        .manifest
        .placements
        .iter()
        .filter(|p| &p.name != baseline)
        .filter(|p| crate::fidelity::note(&set.manifest, &p.name, baseline).is_some())
        .map(|p| p.name.clone())
        .collect();
    if !distorted.is_empty() {
        lines.push(format!(
            "Emulation: the comparison of {} with {baseline} rests on emulated latencies outside the real classes' ratio (see Emulation fidelity); its deltas show the stand-ins, not the classes.",
            distorted.join(", ")
        ));
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Findings\n");
    for l in lines {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s);
}

/// The "why" of every cell of the results table: for a contender, what moved against the
/// baseline cell (with figures) and where the emulation distorts the comparison; for the
/// baseline, its bottleneck.
fn whys(set: &ResultSet, summary: &Summary, study: &Study) -> Vec<String> {
    let baseline = &set.manifest.baseline;
    summary
        .cells
        .iter()
        .map(|c| {
            if c.is_baseline {
                return study
                    .cells
                    .get(&c.key)
                    .map(|e| format!("baseline: {}", evidence::verdict_text(e)))
                    .unwrap_or_else(|| "baseline".into());
            }
            let mut w = study.cause(&c.key, baseline, c.headline().1.as_ref()).unwrap_or_else(|| "no baseline cell".into());
            if let Some(n) = crate::fidelity::note(&set.manifest, &c.key.placement, baseline) {
                w.push_str(&format!("; **{n}**"));
            }
            w.replace('|', "/")
        })
        .collect()
}

/// Each cell's bottleneck with the clause of the rule that produced it, and its largest wait
/// events.
fn bottlenecks(s: &mut String, summary: &Summary, study: &Study) {
    if summary.cells.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n### Bottlenecks\n");
    let _ = writeln!(s, "Rule: {}\n", evidence::RULE);
    let _ = writeln!(s, "| placement | workload | clients | memory | profile | bottleneck | by the rule | largest wait events (share of backend time) |");
    let _ = writeln!(s, "|---|---|---:|---|---|---|---|---|");
    for c in &summary.cells {
        let Some(e) = study.cells.get(&c.key) else { continue };
        let j = evidence::judge(e);
        let top: Vec<String> = e.waits.iter().take(4).map(|(ev, sh)| format!("{ev} {sh:.0}%")).collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.key.placement,
            c.key.workload,
            c.key.clients,
            c.key.memory_limit,
            c.key.profile,
            j.bottleneck.label(),
            j.rule.replace('|', "/"),
            if top.is_empty() { "no samples".into() } else { top.join(", ") }
        );
    }
}

/// Each emulated device's QD1 latencies against the class it stands for.
fn fidelity_section(s: &mut String, m: &Manifest) {
    let devices = crate::fidelity::devices(m);
    if devices.is_empty() || !m.emulated {
        return;
    }
    let _ = writeln!(s, "\n### Emulation fidelity\n");
    let _ = writeln!(
        s,
        "An emulated tier is a mechanism, not the class it stands for. QD1 latencies from the fio probe (4 KiB random read, direct I/O; one 8 KiB write + fdatasync) against each class's documented range; a delta or claim whose two placements' emulated ratio lies outside the real classes' ratio is marked where it is shown.\n"
    );
    let _ = writeln!(s, "| device | stands for | what it is | read QD1 µs | write+fdatasync QD1 µs | class: read / write+fdatasync µs |");
    let _ = writeln!(s, "|---|---|---|---:|---:|---|");
    for d in &devices {
        let range = d
            .class_range
            .map(|r| {
                let f = |v: f64| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v}") };
                format!(
                    "{}-{} / {}-{} (read {}, write {})",
                    f(r.read_us.0),
                    f(r.read_us.1),
                    f(r.write_sync_us.0),
                    f(r.write_sync_us.1),
                    crate::fidelity::DeviceLatency::place(d.read_us, r.read_us),
                    crate::fidelity::DeviceLatency::place(d.write_sync_us, r.write_sync_us)
                )
            })
            .unwrap_or_else(|| "no documented range".into());
        let _ = writeln!(s, "| {} | {} | {} | {:.0} | {:.0} | {range} |", d.device, d.class, d.description, d.read_us, d.write_sync_us);
    }
    let mut seen = Vec::new();
    for d in &devices {
        if let Some(r) = d.class_range
            && !seen.contains(&r.class)
        {
            seen.push(r.class);
            let _ = writeln!(s, "\n- {}: {}", r.class, r.source);
        }
    }
    let mut calibrations: Vec<String> = Vec::new();
    for p in m.placements.iter().filter(|p| p.name != m.baseline) {
        for d in crate::fidelity::distortions(m, &p.name, &m.baseline) {
            let line = format!("{} against {}: {}; to calibrate, {}", p.name, m.baseline, d.text(), d.calibration());
            if !calibrations.contains(&line) {
                calibrations.push(line);
            }
        }
    }
    if !calibrations.is_empty() {
        let _ = writeln!(s, "\nOutside the real classes' ratio:\n");
        for c in calibrations {
            let _ = writeln!(s, "- {c}");
        }
    }
}

/// The results table: every cell with its TPS and latency changes against the baseline, and
/// how the changes were judged.
fn results_table(s: &mut String, summary: &Summary, whys: &[String]) {
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
            if c.latency_p99_ms.is_some() { fmt_delta(c.latency_p99_delta.as_ref(), c.is_baseline) } else { "n/a".into() },
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
fn statistics_note(s: &mut String, summary: &Summary) {
    let a = &summary.analysis;
    let how = if a.paired() {
        "every placement's server was up at once and the load alternated between them in rounds of short slices (random order in each round); a change is the geometric mean of the per-round ratios, with a paired Student's t interval on their logarithms"
    } else {
        "each repetition is an independent run; a change is the ratio of geometric means, with a Welch t interval on the logarithms (not symmetric around the change)"
    };
    let tests: Vec<String> = a.tests.iter().map(|(f, n)| format!("{n} {} change(s)", f.name())).collect();
    let _ = writeln!(
        s,
        "Design **{}**: {how}. Verdicts: **real change** when the interval excludes 0 after Holm's correction for the number of changes of the same figure ({}), **equivalent** when the whole 95% interval lies inside ±{:.1}% (the experiment's equivalence margin), **inconclusive** otherwise; p-values before and after the correction are in summary.csv.\n",
        a.design,
        if tests.is_empty() { "none with an interval".to_string() } else { tests.join(", ") },
        a.equivalence_margin_pct,
    );
    if !a.dropped_rounds.is_empty() {
        let cut: Vec<String> = a.dropped_rounds.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        let _ = writeln!(
            s,
            "Leading rounds left out as warm-up by MSER-5 truncation of the per-round ratios (their runs are kept in runs/): {}.\n",
            cut.join("; ")
        );
    }
}

fn tpcc_table(s: &mut String, set: &ResultSet, summary: &Summary) {
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
fn statement_tables(s: &mut String, summary: &Summary) {
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
fn failed_runs(s: &mut String, set: &ResultSet) {
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
fn device_io(s: &mut String, set: &ResultSet, summary: &Summary) {
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
fn missing_cells(s: &mut String, summary: &Summary) {
    if !summary.missing.is_empty() {
        let _ = writeln!(s, "\n**Missing cells** (planned, no successful run):\n");
        for k in &summary.missing {
            let _ = writeln!(s, "- {}", describe(k));
        }
    }
}

/// The run's warnings, then the summary's.
fn warnings(s: &mut String, m: &Manifest, summary: &Summary) {
    let warnings: Vec<String> =
        m.warnings.iter().map(ToString::to_string).chain(summary.warnings.iter().map(ToString::to_string)).collect();
    let _ = writeln!(s, "\n## Warnings\n");
    if warnings.is_empty() {
        let _ = writeln!(s, "None.");
    }
    for w in &warnings {
        let _ = writeln!(s, "- {w}");
    }
}

/// Every chart, by section.
fn charts(s: &mut String, charts: &[ChartFile]) {
    let _ = writeln!(s, "\n## Charts\n");
    let mut sections: Vec<&str> = Vec::new();
    for c in charts {
        if !sections.contains(&c.section.as_str()) {
            sections.push(&c.section);
        }
    }
    for section in sections {
        let _ = writeln!(s, "### {section}\n");
        for c in charts.iter().filter(|c| c.section == section) {
            let _ = writeln!(s, "![{}]({})\n", c.caption, c.file);
        }
    }
    if charts.is_empty() {
        let _ = writeln!(s, "No charts (no successful runs).\n");
    }
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The host, PostgreSQL, the tools and the kernel settings.
/// The profile column: the profile, and the build when the experiment compares builds.
fn profile_cell(k: &results::record::CellKey) -> String {
    if k.build == results::record::DEFAULT_BUILD { k.profile.clone() } else { format!("{} @ {}", k.profile, k.build) }
}

/// The PostgreSQL builds that ran, and the client that drove each (the system's pgbench when a
/// build has none): only when the experiment compares builds or a build was driven by another
/// build's client.
fn builds(s: &mut String, m: &Manifest) {
    let b = &m.postgres.builds;
    if b.len() < 2 && b.iter().all(|b| b.client_bin_dir == b.bin_dir) {
        return;
    }
    let _ = writeln!(s, "## PostgreSQL builds\n");
    let _ = writeln!(s, "| build | server | binaries | driven by | optional settings left out |\n|---|---|---|---|---|");
    for b in b {
        let _ = writeln!(
            s,
            "| {} | {} | `{}` | {} (`{}`){} | {} |",
            b.name,
            b.version,
            b.bin_dir,
            b.client_version,
            b.client_bin_dir,
            if b.client_bin_dir == b.bin_dir { "" } else { ": this build has no pgbench of its own" },
            if b.optional_left_out.is_empty() { "none".to_string() } else { b.optional_left_out.join(", ") }
        );
    }
    for b in b.iter().filter(|b| b.configure.is_some()) {
        let _ = writeln!(s, "\n`{}` was built with: `{}`", b.name, b.configure.as_deref().unwrap_or(""));
    }
    let _ = writeln!(s);
}

fn environment(s: &mut String, m: &Manifest) {
    let h = &m.host;
    let _ = writeln!(s, "## Environment\n");
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| host | {} |", h.hostname);
    let _ = writeln!(s, "| CPU | {} ({} cores, {} threads) |", h.cpu_model, h.cpu_cores, h.cpu_threads);
    let _ = writeln!(s, "| memory | {} |", gib(h.memory_bytes));
    let _ = writeln!(s, "| OS | {}, Linux {} |", h.os, h.kernel);
    let _ = writeln!(s, "| virtualisation | {} |", h.virtualization);
    let _ = writeln!(s, "| CPU governor | {} |", h.cpu_governor.as_deref().unwrap_or("not exposed"));
    let _ = writeln!(s, "| transparent huge pages | {} |", h.transparent_hugepages.as_deref().unwrap_or("unknown"));
    if let Some(l) = &h.load_average {
        let _ = writeln!(s, "| load average at start | {l} |");
    }
    let _ = writeln!(s, "| PostgreSQL | {} ({}) |", m.postgres.version, m.postgres.bin_dir);
    for (tool, v) in &m.tools {
        let _ = writeln!(s, "| {tool} | {v} |");
    }
    if !h.sysctls.is_empty() {
        let _ = writeln!(
            s,
            "\nKernel settings before the run: {}",
            h.sysctls.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", ")
        );
    }
    if !m.kernel_changes.is_empty() {
        let _ = writeln!(s, "\nChanged for the run (restored afterwards):\n");
        for c in &m.kernel_changes {
            let _ = writeln!(s, "- {c}");
        }
    }
}

/// Each device: class, block device, mount options, DAX and throttles.
fn devices(s: &mut String, m: &Manifest) {
    let _ = writeln!(s, "\n## Devices\n");
    let _ = writeln!(s, "| device | class | what it is | block device | mount options (effective) | DAX |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for d in &m.devices {
        let dax = match d.dax_requested {
            DaxRequest::Off => "not requested".to_string(),
            _ if d.dax_honoured => "requested, in effect".to_string(),
            _ => "**requested, NOT in effect** (page-cache I/O)".to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            d.name,
            d.class,
            d.description,
            d.block_device,
            d.effective_mount_options.join(","),
            dax
        );
    }
    for d in m.devices.iter().filter(|d| !d.dax_note.is_empty()) {
        let _ = writeln!(s, "\n- {}: {}", d.name, d.dax_note);
    }
    for d in &m.devices {
        if let Some(t) = &d.throttle {
            let _ = writeln!(s, "\n- {} is capped to behave like a slower device: {t}", d.name);
        }
    }
}

/// What fio measured on each device before the matrix.
fn device_ceilings(s: &mut String, m: &Manifest) {
    if !m.device_probes.is_empty() {
        let _ = writeln!(s, "\n### Device ceilings (fio, before the matrix)\n");
        let _ = writeln!(
            s,
            "| device | 8 KiB write+fdatasync IOPS | fdatasync p50 / p99 (us) | 4 KiB random read QD32 IOPS | read p99 (us) | raw |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---|");
        for p in &m.device_probes {
            let _ = writeln!(
                s,
                "| {} | {:.0} | {:.0} / {:.0} | {:.0} | {:.0} | {} |",
                p.device,
                p.wal_write_iops,
                p.wal_sync_p50_us,
                p.wal_sync_p99_us,
                p.randread_iops,
                p.randread_p99_us,
                p.raw_files.iter().map(|f| format!("[{f}]({f})")).collect::<Vec<_>>().join(" ")
            );
        }
    }
}

/// Where each placement puts PGDATA and pg_wal.
fn placements(s: &mut String, m: &Manifest) {
    let _ = writeln!(s, "\n## Placements\n");
    for p in &m.placements {
        let _ = writeln!(
            s,
            "- **{}**: PGDATA on `{}`, pg_wal on `{}`{}",
            p.name,
            p.data_device,
            p.wal_device,
            if p.description.is_empty() { String::new() } else { format!(" ({})", p.description) }
        );
    }
}

/// The settings of each profile as written and as the server reported them.
fn settings(s: &mut String, set: &ResultSet) {
    let m = &set.manifest;
    let _ = writeln!(s, "\n## PostgreSQL settings\n");
    for (profile, settings) in &m.postgres.profiles {
        let _ = writeln!(
            s,
            "Profile **{profile}** (written by pgtier): {}",
            if settings.is_empty() {
                "PostgreSQL defaults".into()
            } else {
                settings.iter().map(|(k, v)| format!("`{k} = {v}`")).collect::<Vec<_>>().join(", ")
            }
        );
        if let Some(r) = set.runs.iter().find(|r| &r.cell.profile == profile && !r.server_settings.is_empty()) {
            let _ = writeln!(
                s,
                "\nNon-default settings while running (pg_settings, run {}): {}\n",
                r.run_id,
                r.server_settings.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", ")
            );
        }
    }
    if !m.postgres.skipped_settings.is_empty() {
        let _ = writeln!(s, "\nSkipped settings: {}", m.postgres.skipped_settings.join("; "));
    }
}

/// How the matrix ran: the command, the data sets, the procedure per run and the run order.
fn method(s: &mut String, set: &ResultSet) {
    let m = &set.manifest;
    let _ = writeln!(s, "\n## Method\n");
    let _ = writeln!(s, "Command: `{}`\n", m.command_line);
    for d in &m.datasets {
        let _ = writeln!(
            s,
            "- Data set `{}`: `{}`; database {:.0} MiB, PGDATA+WAL {:.0} MiB; built once in {:.1} s, then copied onto each placement ({}).",
            d.key,
            d.command,
            d.database_size_bytes as f64 / 1048576.0,
            d.pgdata_size_bytes as f64 / 1048576.0,
            d.build_seconds,
            d.relocate_seconds.iter().map(|(p, t)| format!("{p} {t:.1} s")).collect::<Vec<_>>().join(", ")
        );
    }
    let seed = m.measurement.seed.map(|s| format!(" (random order seed {s}; `--seed {s}` repeats it)")).unwrap_or_default();
    if m.measurement.design == "slices" {
        let _ = writeln!(
            s,
            "- Design **slices**: for each memory limit and profile, every placement's server was started at once (each in its own cgroup with the limit, on its own port of the private socket), CHECKPOINTed, then the page cache was dropped once. Each contest (a workload and client count) began with a discarded warm-up per placement, then rounds of one slice per placement in a random order{seed}. Idle placements wait between their slices (their background writer and the kernel's write-back go on meanwhile), alike for every placement."
        );
        let budget = m.measurement.budget_s.map(|b| format!("a budget of {b:.0} s")).unwrap_or_else(|| "no budget".into());
        let target = m.measurement.target_halfwidth_pct.map(|t| format!("a target of ±{t}%")).unwrap_or_else(|| "no target".into());
        let _ = writeln!(s, "- Rounds per contest were decided as the run went ({budget}, {target}); why each contest stopped:");
        for (c, why) in &m.measurement.stopped {
            let _ = writeln!(s, "  - {c}: {why}");
        }
        let _ = writeln!(
            s,
            "- The copy is made once per placement and data set: later slices start from the data as earlier ones left it (read-write workloads grow history tables and leave dead tuples), alike for every placement."
        );
        let _ = writeln!(s, "- {} slices:", set.runs.len());
    } else {
        let _ = writeln!(
            s,
            "- Before every measured run: the placement's server is started (in its memory-limited cgroup where a limit is set), CHECKPOINT, sync, page cache dropped, a ramp-up run whose figures are discarded, then the measured run; the server is stopped afterwards."
        );
        let _ = writeln!(
            s,
            "- The copy is made once per placement and data set: later runs on a placement start from the data as earlier runs left it (read-write workloads grow history tables and leave dead tuples). The run order spreads that drift across placements; it is not reset between runs."
        );
        let _ = writeln!(s, "- {} repetitions per cell, {} order{seed} ({} runs):", m.repetitions, m.order, m.run_order.len());
    }
    let _ = writeln!(s, "\n<details><summary>run order and exact commands</summary>\n");
    for r in &set.runs {
        let _ = writeln!(
            s,
            "- `{}` ({}): `{}`",
            r.run_id,
            if r.status == results::RunStatus::Ok { "ok" } else { "failed" },
            r.command
        );
    }
    let _ = writeln!(s, "\n</details>\n");
    if !m.phase_seconds.is_empty() {
        let _ = writeln!(
            s,
            "Time spent: {}\n",
            m.phase_seconds.iter().map(|(k, v)| format!("{k} {v:.0} s")).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(
        s,
        "Raw output of every run (pgbench stdout/stderr, server log) is in `runs/<run id>/`; figures per run in `runs.csv`, per cell in `summary.csv`, per second in `series.csv`; `manifest.json` holds the resolved configuration and environment."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn deltas_in_tables() {
        let d = Delta { pct: 12.34, ratio: 1.1234, pct_low: 2.0, pct_high: 22.5, p_adjusted: 0.01, ..Delta::unknown() }
            .classified(2.0);
        assert_eq!(fmt_delta(Some(&d), true), "baseline");
        assert_eq!(fmt_delta(None, false), "n/a");
        assert_eq!(fmt_delta(Some(&d), false), "+12.3% [+2.0, +22.5] **real change**");
        let one = Delta { pct: 5.0, ..Delta::unknown() };
        assert_eq!(fmt_delta(Some(&one), false), "+5.0% (no interval: 1 run)");
    }

    #[test]
    fn charts_by_section_in_first_appearance_order() {
        let chart = |section: &str, file: &str| ChartFile {
            section: section.into(),
            file: format!("charts/{file}.png"),
            caption: format!("caption {file}"),
        };
        let mut s = String::new();
        charts(&mut s, &[chart("B", "b1"), chart("A", "a1"), chart("B", "b2")]);
        assert_eq!(
            s,
            "\n## Charts\n\n### B\n\n![caption b1](charts/b1.png)\n\n![caption b2](charts/b2.png)\n\n### A\n\n![caption a1](charts/a1.png)\n\n"
        );
        let mut s = String::new();
        charts(&mut s, &[]);
        assert_eq!(s, "\n## Charts\n\nNo charts (no successful runs).\n\n");
    }
}
