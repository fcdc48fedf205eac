//! The report's judgement: published claims against measured figures, the findings, the
//! "why" of each cell, the bottlenecks and the emulation's fidelity.

use super::*;
use analysis::model::CellSummary;

/// The study's published figures against what was measured, first.
pub(super) fn published_vs_measured(d: &mut Document, m: &Manifest, checks: &[ClaimCheck]) {
    if checks.is_empty() {
        return;
    }
    d.heading(2, "Published vs measured");
    if m.emulated {
        d.para(
            "These verdicts come from **emulated** tiers: they check that the pipeline measures the study's kind of figure, not what the study's hardware does. A verdict whose tiers' emulated latencies are far from the real classes' says so.",
        );
    }
    let mut t = Table::new(&["claim", "the study", "measured (cell)", "verdict", "why"]);
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
        let measured = c.measured.as_ref().map(|d| format!("{} ", d.text_with_holm(""))).unwrap_or_default();
        let mut why = c.why.clone();
        if let Some(regime) = c.regime.as_ref().filter(|_| c.verdict != ClaimVerdict::NotComparable) {
            why.push_str(&format!("; in the study's regime: {regime}"));
        }
        if let Some(n) = &r.emulation_note {
            why.push_str(&format!("; emulated cell: {n}"));
        }
        if let Some(f) = &c.fidelity {
            why.push_str(&format!("; **{f}**"));
        }
        t.row(vec![
            if r.across == "profiles" {
                format!(
                    "{}: {what} of profile {} against default on {}",
                    r.name,
                    r.profile.as_deref().unwrap_or("default"),
                    r.placement
                )
            } else {
                format!("{}: {what} of {} against {}", r.name, r.placement, r.against)
            },
            format!("{} \"{}\"", r.figure, r.text.replace('|', "/")),
            format!("{measured}({})", c.cell),
            format!("**{}**", c.verdict.as_str()),
            why.replace('|', "/"),
        ]);
    }
    d.table(t.caption(
        "Published vs measured: each claim's published figure against the measured change of its cell, with the change's 95% interval, the interval after Holm's correction where it matters (wider, and the 95% one excludes 0), and the verdict.",
    ));
    d.para(format!(
        "Verdicts: {} Claims are not corrected for their number; a claim on a cell of the results table uses that table's change.",
        claims::RULE
    ));
}

/// A few sentences written from the verdicts: the claims, the largest real change of each
/// workload with its cause, the baselines' bottlenecks, the emulation's distortions.
pub(super) fn findings(d: &mut Document, set: &ResultSet, summary: &Summary, study: &Study, checks: &[ClaimCheck]) {
    let mut lines: Vec<String> = Vec::new();
    lines.extend(claims_line(checks, set.manifest.emulated));
    if let Some(x) = &summary.contrast {
        lines.extend(contrast_findings(x, study));
    }
    for g in crate::views::groups(summary).into_iter().filter(|_| summary.contrast.is_none()) {
        let untrustworthy = g.first().and_then(|c| summary.control_of(&c.key)).and_then(|c| c.warning());
        lines.extend(group_finding(&g, &set.manifest.baseline, study).map(|l| match &untrustworthy {
            Some(w) => format!("**{w}**: {l}"),
            None => l,
        }));
    }
    lines.extend(emulation_line(&set.manifest));
    if lines.is_empty() {
        return;
    }
    d.heading(2, "Findings");
    d.list(lines);
}

/// "Published claims: 2 reproduced, 1 contradicted of 3." or nothing without claims.
fn claims_line(checks: &[ClaimCheck], emulated: bool) -> Option<String> {
    if checks.is_empty() {
        return None;
    }
    let count = |v: ClaimVerdict| checks.iter().filter(|c| c.verdict == v).count();
    let parts: Vec<String> = [
        ClaimVerdict::Reproduced,
        ClaimVerdict::SameDirection,
        ClaimVerdict::Contradicted,
        ClaimVerdict::Inconclusive,
        ClaimVerdict::NotComparable,
        ClaimVerdict::NeedsTwoResultSets,
        ClaimVerdict::NotMeasured,
    ]
    .iter()
    .filter(|v| count(**v) > 0)
    .map(|v| format!("{} {}", count(*v), v.as_str()))
    .collect();
    Some(format!(
        "Published claims: {} of {}{}.",
        parts.join(", "),
        checks.len(),
        if emulated { " (emulated tiers: a check of the pipeline, not of the hardware)" } else { "" }
    ))
}

/// One group of cells (workload, clients, memory, profile): the baseline's bottleneck and the
/// largest real change with its cause, or the verdicts when nothing changed for real.
fn group_finding(g: &[&CellSummary], baseline: &str, study: &Study) -> Option<String> {
    let base = g.iter().find(|c| c.is_baseline)?;
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
    Some(match best {
        Some((c, d)) => format!(
            "{context}: the baseline {baseline} is {bottleneck}; the largest real change is {} {} {}: {}.",
            c.key.placement,
            d.text_with_holm(""),
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
    })
}

/// The study's contrast: a count of its verdicts, then one line per comparison (the cells that
/// share everything but the dimension): each value's change against the reference with its
/// interval and verdict, and the reference cell's bottleneck.
fn contrast_findings(x: &analysis::contrast::Contrast, study: &Study) -> Vec<String> {
    let dim = x.dimension;
    let headlines: Vec<Delta> = x.changes.iter().filter_map(|c| c.headline().0).collect();
    let count = |v: Verdict| headlines.iter().filter(|d| d.verdict == v).count();
    let verdicts: Vec<String> = [Verdict::RealChange, Verdict::Equivalent, Verdict::Inconclusive, Verdict::NoInterval]
        .into_iter()
        .filter(|v| count(*v) > 0)
        .map(|v| format!("{} {}", count(v), v.as_str()))
        .collect();
    let mut lines = vec![format!(
        "The study's contrast is the {} ({} against {}): {} of {} changes of the headline figure.",
        dim.name(),
        x.values[1..].join(", "),
        x.reference,
        verdicts.join(", "),
        headlines.len()
    )];
    let mut references: Vec<&results::record::CellKey> = Vec::new();
    for c in &x.changes {
        if !references.contains(&&c.reference) {
            references.push(&c.reference);
        }
    }
    for r in references {
        let changes: Vec<String> = x
            .changes
            .iter()
            .filter(|c| &c.reference == r)
            .filter_map(|c| {
                let (d, figure) = c.headline();
                let d = d?;
                let latency = c
                    .latency
                    .map(|l| format!(" (average latency {} {})", l.text_with_holm(""), l.verdict.as_str()))
                    .unwrap_or_default();
                Some(format!(
                    "{} against {}: {} {figure}, **{}**{latency}",
                    dim.describe(&dim.value(&c.cell)),
                    x.reference,
                    d.text_with_holm(""),
                    d.verdict.as_str()
                ))
            })
            .collect();
        if changes.is_empty() {
            continue;
        }
        let bottleneck = study.cells.get(r).map(evidence::verdict_text).unwrap_or_else(|| "not judged".into());
        lines.push(format!(
            "{}: {}; the reference cell is {bottleneck}.",
            contrast_context(r, dim),
            changes.join("; ")
        ));
    }
    lines
}

/// `tpcb at 2 clients, memory 256MiB`: what a comparison's cells share, without the dimension.
fn contrast_context(k: &results::record::CellKey, dim: analysis::contrast::Dimension) -> String {
    use analysis::contrast::Dimension;
    let mut s = k.workload.clone();
    if dim != Dimension::Clients {
        s.push_str(&format!(" at {} clients", k.clients));
    }
    if dim != Dimension::MemoryLimit {
        s.push_str(&format!(", memory {}", k.memory_limit));
    }
    if dim != Dimension::Profile && k.profile != "default" {
        s.push_str(&format!(", profile {}", k.profile));
    }
    if dim != Dimension::Build && k.build != results::record::DEFAULT_BUILD {
        s.push_str(&format!(", build {}", k.build));
    }
    s
}

/// The placements whose comparison rests on emulated latencies outside the real classes' ratio.
fn emulation_line(m: &Manifest) -> Option<String> {
    let baseline = &m.baseline;
    let distorted: Vec<String> = m
        .placements
        .iter()
        .filter(|p| &p.name != baseline)
        .filter(|p| analysis::fidelity::note(m, &p.name, baseline).is_some())
        .map(|p| p.name.clone())
        .collect();
    (!distorted.is_empty()).then(|| format!(
        "Emulation: the comparison of {} with {baseline} rests on emulated latencies outside the real classes' ratio (see Emulation fidelity); its deltas show the stand-ins, not the classes.",
        distorted.join(", ")
    ))
}

/// The "why" of every cell of the results table: for a contender, what moved against the
/// baseline cell (with figures) and where the emulation distorts the comparison; for the
/// baseline, its bottleneck.
pub(super) fn whys(set: &ResultSet, summary: &Summary, study: &Study) -> Vec<String> {
    let baseline = &set.manifest.baseline;
    summary
        .cells
        .iter()
        .map(|c| {
            if let Some(x) = &summary.contrast {
                return contrast_why(x, c, study);
            }
            if c.is_baseline {
                return study
                    .cells
                    .get(&c.key)
                    .map(|e| format!("baseline: {}", evidence::verdict_text(e)))
                    .unwrap_or_else(|| "baseline".into());
            }
            let mut w =
                study.cause(&c.key, baseline, c.headline().1.as_ref()).unwrap_or_else(|| "no baseline cell".into());
            if let Some(n) = analysis::fidelity::note(&set.manifest, &c.key.placement, baseline) {
                w.push_str(&format!("; **{n}**"));
            }
            if let Some(u) = summary.control_of(&c.key).and_then(|c| c.warning()) {
                w.push_str(&format!("; **{u}**"));
            }
            w.replace('|', "/")
        })
        .collect()
}

/// Each cell's bottleneck with the clause of the rule that produced it, and its largest wait
/// events.
pub(super) fn bottlenecks(d: &mut Document, summary: &Summary, study: &Study) {
    if summary.cells.is_empty() {
        return;
    }
    d.heading(3, "Bottlenecks");
    d.para(format!("Rule: {}", evidence::RULE));
    let mut t = Table::new(&[
        "placement",
        "workload",
        "clients:",
        "memory",
        "profile",
        "bottleneck",
        "by the rule",
        "largest wait events (share of backend time)",
    ]);
    for c in &summary.cells {
        let Some(e) = study.cells.get(&c.key) else { continue };
        let j = evidence::judge(e);
        let top: Vec<String> = e.waits.iter().take(4).map(|(ev, sh)| format!("{ev} {sh:.0}%")).collect();
        t.row(vec![
            c.key.placement.clone(),
            c.key.workload.clone(),
            c.key.clients.to_string(),
            c.key.memory_limit.to_string(),
            c.key.profile.clone(),
            j.bottleneck.label().to_string(),
            j.rule.replace('|', "/"),
            if top.is_empty() { "no samples".into() } else { top.join(", ") },
        ]);
    }
    d.table(t.caption(
        "Each cell's bottleneck by the rule above, and its largest wait events (means over the cell's runs).",
    ));
}

/// Each emulated device's QD1 latencies against the class it stands for.
pub(super) fn fidelity_section(d: &mut Document, m: &Manifest) {
    let devices = analysis::fidelity::devices(m);
    if devices.is_empty() || !m.emulated {
        return;
    }
    d.heading(3, "Emulation fidelity");
    d.para(
        "An emulated tier is a mechanism, not the class it stands for. QD1 latencies from the fio probe (4 KiB random read, direct I/O; one 8 KiB write + fdatasync) against each class's documented range; a delta or claim whose two placements' emulated ratio lies outside the real classes' ratio is marked where it is shown.",
    );
    let mut t = Table::new(&[
        "device",
        "stands for",
        "what it is",
        "read QD1 µs:",
        "write+fdatasync QD1 µs:",
        "class: read / write+fdatasync µs",
    ]);
    for dev in &devices {
        let range = dev
            .class_range
            .map(|r| {
                let f = |v: f64| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v}") };
                format!(
                    "{}-{} / {}-{} (read {}, write {})",
                    f(r.read_us.0),
                    f(r.read_us.1),
                    f(r.write_sync_us.0),
                    f(r.write_sync_us.1),
                    analysis::fidelity::DeviceLatency::place(dev.read_us, r.read_us),
                    analysis::fidelity::DeviceLatency::place(dev.write_sync_us, r.write_sync_us)
                )
            })
            .unwrap_or_else(|| "no documented range".into());
        t.row(vec![
            dev.device.clone(),
            dev.class.to_string(),
            dev.description.clone(),
            format!("{:.0}", dev.read_us),
            format!("{:.0}", dev.write_sync_us),
            range,
        ]);
    }
    d.table(t.caption("Emulated devices: QD1 latencies from the fio probe (one run each, no interval) against the documented range of the class each stands for."));
    let mut seen = Vec::new();
    let mut sources = Vec::new();
    for dev in &devices {
        if let Some(r) = dev.class_range
            && !seen.contains(&r.class)
        {
            seen.push(r.class);
            sources.push(format!("{}: {}", r.class, r.source));
        }
    }
    d.list(sources);
    let mut calibrations: Vec<String> = Vec::new();
    for p in m.placements.iter().filter(|p| p.name != m.baseline) {
        for d in analysis::fidelity::distortions(m, &p.name, &m.baseline) {
            let line = format!("{} against {}: {}; to calibrate, {}", p.name, m.baseline, d.text(), d.calibration());
            if !calibrations.contains(&line) {
                calibrations.push(line);
            }
        }
    }
    if !calibrations.is_empty() {
        d.para("Outside the real classes' ratio:");
        d.list(calibrations);
    }
}

/// The why of a cell of a study's contrast: what moved against the same cell under the reference
/// value, or the reference cell's bottleneck.
fn contrast_why(x: &analysis::contrast::Contrast, c: &CellSummary, study: &Study) -> String {
    let verdict = |k: &results::record::CellKey| study.cells.get(k).map(evidence::verdict_text);
    let w = match x.change_of(&c.key) {
        Some(ch) => match (study.cells.get(&ch.reference), study.cells.get(&ch.cell)) {
            (Some(r), Some(e)) => evidence::cause_against(r, e, ch.headline().0.as_ref(), "the reference"),
            _ => "no evidence".into(),
        },
        None if x.is_reference(&c.key) => {
            verdict(&c.key).map(|v| format!("reference: {v}")).unwrap_or_else(|| "reference".into())
        }
        None => format!("no cell under {}", x.dimension.describe(&x.reference)),
    };
    w.replace('|', "/")
}
