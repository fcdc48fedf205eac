//! Line charts: scaling with clients, throughput over each run.

use results::manifest::Design;
use results::record::RunStatus;

use super::{Ctx, SHADES, clean, context_suffix, describe_group, file_stem, footnote, group_by, groups};
use crate::charts::{self, Line, LineChart};
use analysis::model::CellSummary;
use stats::{Delta, Estimate};

/// TPS against clients per placement, the peak of each marked and the delta at peak stated.
pub(super) fn scaling(cx: &mut Ctx) {
    let set = cx.set;
    // One line per placement; with a single placement and several settings profiles (seed 004:
    // default against the performance profile), one line per profile instead.
    let mut profiles: Vec<String> = Vec::new();
    for c in &cx.summary.cells {
        if !profiles.contains(&c.key.profile) {
            profiles.push(c.key.profile.clone());
        }
    }
    let by_profile = cx.placements.len() == 1 && profiles.len() > 1;
    let by_context = group_by(cx.summary, |a, b| {
        a.key.workload == b.key.workload
            && a.key.memory_limit == b.key.memory_limit
            && a.key.build == b.key.build
            && (by_profile || a.key.profile == b.key.profile)
    });
    let names: Vec<String> = if by_profile { profiles.clone() } else { cx.placements.clone() };
    let reference = if by_profile { profiles[0].clone() } else { set.manifest.baseline.clone() };
    for cells in by_context {
        let clients: std::collections::BTreeSet<u32> = cells.iter().map(|c| c.key.clients).collect();
        if clients.len() < 2 {
            continue;
        }
        let mut series = Vec::new();
        let mut peaks: Vec<Peak> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut pts: Vec<&CellSummary> = cells
                .iter()
                .copied()
                .filter(|c| if by_profile { &c.key.profile == name } else { &c.key.placement == name })
                .collect();
            if pts.is_empty() {
                continue;
            }
            pts.sort_by_key(|c| c.key.clients);
            let peak =
                pts.iter().max_by(|a, b| a.headline().0.mean.total_cmp(&b.headline().0.mean)).expect("non-empty");
            peaks.push(Peak {
                name: name.clone(),
                clients: peak.key.clients,
                estimate: peak.headline().0,
                // The cell's own change (paired by round where the design pairs) when the
                // reference peaks at the same client count.
                own_delta: if by_profile { None } else { peak.headline().1 },
            });
            series.push(Line {
                name: if by_profile { format!("profile {name}") } else { cx.legend(name) },
                color: if by_profile { SHADES[i % SHADES.len()] } else { cx.color(name) },
                points: pts.iter().map(|c| (c.key.clients as f64, c.headline().0.mean)).collect(),
                errors: Some(pts.iter().map(|c| c.headline().0.ci95).collect()),
                markers: true,
                dashed: false,
                mark: Some((
                    peak.key.clients as f64,
                    peak.headline().0.mean,
                    format!("peak {} @{}", charts::group_digits(peak.headline().0.mean, 0), peak.key.clients),
                )),
            });
        }
        let who = if cells[0].nopm.is_some() { "virtual users" } else { "clients" };
        let c0 = cells[0];
        let mut context = format!("workload {}", c0.key.workload);
        context.push_str(&format!(", server memory {}", c0.key.memory_limit));
        if !by_profile && c0.key.profile != "default" {
            context.push_str(&format!(", profile {}", c0.key.profile));
        }
        let chart = LineChart {
            title: format!("{}: scaling with {who}", set.manifest.experiment_name),
            subtitle: format!("{context}; {}", peak_deltas(&peaks, &reference, who)),
            x_label: who.into(),
            y_label: cells[0].headline().2.into(),
            series,
            vlines: vec![],
            footnote: footnote(set, &cells, false),
            integer_x: true,
        };
        let stem = format!("scaling-{}{}", clean(&c0.key.workload), context_suffix(&c0.key, true, !by_profile));
        cx.line(chart, stem, "Scaling");
    }
}

/// One line's peak.
struct Peak {
    name: String,
    clients: u32,
    estimate: Estimate,
    /// The peak cell's change against the baseline cell of the same client count.
    own_delta: Option<Delta>,
}

/// `delta at peak against <reference> (peaks at 64 clients): a +12.0% [+8.1, +16.0] (peaks at
/// 32), b ...`: each line's peak against the reference line's peak with its 95% interval (the
/// cell's own change when both peak at the same client count, else Welch on the two peaks'
/// runs), the reference named once.
fn peak_deltas(peaks: &[Peak], reference: &str, who: &str) -> String {
    let Some(base) = peaks.iter().find(|p| p.name == reference) else {
        return "delta at peak: n/a".into();
    };
    let deltas: Vec<String> = peaks
        .iter()
        .filter(|p| p.name != reference)
        .map(|p| {
            let d = if p.clients == base.clients { p.own_delta } else { None }
                .or_else(|| Delta::between(&base.estimate, &p.estimate));
            let text = match d {
                Some(d) if d.has_interval() => d.text(""),
                _ => format!("{:+.1}%", (p.estimate.mean / base.estimate.mean - 1.0) * 100.0),
            };
            format!("{} {text} (peaks at {})", p.name, p.clients)
        })
        .collect();
    if deltas.is_empty() {
        return "delta at peak: n/a".into();
    }
    format!("delta at peak against {reference} (peaks at {} {who}): {}", base.clients, deltas.join(", "))
}

/// TPS per second over the first repetition of each placement, checkpoints marked; for the
/// slices design (a run is a slice of a few seconds) each slice's TPS over the rounds instead.
pub(super) fn stability(cx: &mut Ctx) {
    let set = cx.set;
    if set.manifest.measurement.design == Design::Slices {
        return rounds(cx);
    }
    for g in groups(cx.summary) {
        let c0 = g[0];
        let mut series = Vec::new();
        let mut vlines = Vec::new();
        let mut outliers = 0;
        for c in &g {
            let Some(run) =
                set.runs.iter().filter(|r| r.cell == c.key && r.status == RunStatus::Ok).min_by_key(|r| r.repetition)
            else {
                continue;
            };
            if run.series.is_empty() {
                continue;
            }
            // Counted on the run that is drawn.
            let tps: Vec<f64> = run.series.iter().map(|s| s.tps).collect();
            outliers += stats::outliers_mad(&tps, 3.5).len();
            series.push(Line {
                name: format!("{} (run {})", c.key.placement, run.repetition),
                color: cx.color(&c.key.placement),
                points: run.series.iter().map(|s| (s.t, s.tps)).collect(),
                errors: None,
                markers: false,
                dashed: false,
                mark: None,
            });
            for t in &run.checkpoints_at_s {
                vlines.push((*t, format!("checkpoint ({})", c.key.placement)));
            }
        }
        if series.is_empty() {
            continue;
        }
        let chart = LineChart {
            title: format!("{}: throughput over each run", set.manifest.experiment_name),
            subtitle: format!(
                "{}; 1 s per point; dashed: checkpoints; outlier seconds (> 3.5 MAD): {}",
                describe_group(c0),
                outliers
            ),
            x_label: "seconds into the measured run".into(),
            y_label: "throughput (transactions/s)".into(),
            series,
            vlines,
            footnote: footnote(set, &g, false),
            integer_x: false,
        };
        cx.line(chart, file_stem("stability", c0), &describe_group(c0));
    }
}

/// The slices design: each placement's slice TPS (or NOPM) round by round, so a trend, a
/// warm-up or a disturbed round shows.
fn rounds(cx: &mut Ctx) {
    let set = cx.set;
    for g in groups(cx.summary) {
        let c0 = g[0];
        let tpcc = g.iter().any(|c| c.nopm.is_some());
        let mut series = Vec::new();
        let mut slice_s = 0.0;
        for c in &g {
            let mut runs: Vec<_> = set.runs.iter().filter(|r| r.cell == c.key && r.status == RunStatus::Ok).collect();
            runs.sort_by_key(|r| r.repetition);
            let points: Vec<(f64, f64)> = runs
                .iter()
                .filter_map(|r| {
                    let v = if tpcc { r.metrics.nopm? } else { r.metrics.tps };
                    Some((f64::from(r.repetition), v))
                })
                .collect();
            if let Some(r) = runs.first() {
                slice_s = r.duration_s;
            }
            if points.is_empty() {
                continue;
            }
            series.push(Line {
                name: c.key.placement.clone(),
                color: cx.color(&c.key.placement),
                points,
                errors: None,
                markers: true,
                dashed: false,
                mark: None,
            });
        }
        if series.is_empty() {
            continue;
        }
        // Where each segment's kept rounds begin: the rounds left of a line are the warm-up cut.
        let contest = cx.summary.analysis.contests.get(&analysis::contest::contest_of(&c0.key));
        let vlines: Vec<(f64, String)> = contest
            .map(|a| {
                a.cut
                    .first_kept
                    .iter()
                    .map(|(seg, first)| {
                        let n = a.cut.dropped.get(seg).copied().unwrap_or(0);
                        (f64::from(*first) - 0.5, format!("kept from here ({n} cut)"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let steadiness = match contest {
            Some(a) if !a.steady => format!("; NOT STEADY: {}", not_steady_reason(a)),
            _ => String::new(),
        };
        let chart = LineChart {
            title: format!("{}: throughput round by round", set.manifest.experiment_name),
            subtitle: format!(
                "{}; one point per {slice_s:.0} s slice; rounds left of a dashed line are the warm-up cut (not counted); a change is the mean of the kept per-round ratios{steadiness}",
                describe_group(c0)
            ),
            x_label: "round".into(),
            y_label: if tpcc { "new orders per minute (NOPM)".into() } else { "throughput (transactions/s)".into() },
            series,
            vlines,
            footnote: footnote(set, &g, false),
            integer_x: true,
        };
        cx.line(chart, file_stem("stability", c0), &describe_group(c0));
    }
}

/// Why a contest is not steady, in a few words for a chart's subtitle (the report's warning says
/// it in full): the kept rounds still move, or the warm-up cut was so long that a warm-up may
/// be left in them, or both.
fn not_steady_reason(a: &analysis::contest::ContestAnalysis) -> String {
    let moved = !a.cut.unsettled.is_empty() || !a.warm_up_left.is_empty() || a.trending().next().is_some();
    let long: Vec<String> = a
        .cut
        .long_warm_up
        .iter()
        .map(|seg| format!("{} rounds", a.cut.dropped.get(seg).copied().unwrap_or(0)))
        .collect();
    match (moved, long.is_empty()) {
        (false, false) => {
            format!("a warm-up cut this long ({}) may leave a warm-up in the kept rounds", long.join(", "))
        }
        (true, false) => format!("the kept rounds still move, after a long warm-up cut ({})", long.join(", ")),
        _ => "the kept rounds still move".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_not_steady_chart_says_why() {
        let mut a = analysis::contest::ContestAnalysis::default();
        a.cut.long_warm_up = vec![1];
        a.cut.dropped = [(1, 8)].into();
        assert_eq!(not_steady_reason(&a), "a warm-up cut this long (8 rounds) may leave a warm-up in the kept rounds");
        a.warm_up_left = [("all-on-pmem".to_string(), 0.04)].into();
        assert_eq!(not_steady_reason(&a), "the kept rounds still move, after a long warm-up cut (8 rounds)");
        a.cut.long_warm_up.clear();
        assert_eq!(not_steady_reason(&a), "the kept rounds still move");
    }

    #[test]
    fn peak_deltas_name_the_reference_once() {
        let peak = |name: &str, clients, values: &[f64]| Peak {
            name: name.into(),
            clients,
            estimate: Estimate::of(values).unwrap(),
            own_delta: None,
        };
        let peaks = vec![peak("das", 8, &[200.0]), peak("lb", 8, &[150.0]), peak("lbc", 4, &[250.0])];
        assert_eq!(
            peak_deltas(&peaks, "das", "virtual users"),
            "delta at peak against das (peaks at 8 virtual users): lb -25.0% (peaks at 8), lbc +25.0% (peaks at 4)"
        );
        // With repetitions, each delta at the peak gets its interval.
        let peaks = vec![peak("das", 8, &[200.0, 210.0, 190.0]), peak("lb", 4, &[150.0, 155.0, 145.0])];
        let text = peak_deltas(&peaks, "das", "clients");
        assert!(
            text.starts_with("delta at peak against das (peaks at 8 clients): lb -25.0% [")
                && text.ends_with("] (peaks at 4)"),
            "{text}"
        );
        assert_eq!(peak_deltas(&peaks[1..], "das", "clients"), "delta at peak: n/a");
        assert_eq!(peak_deltas(&peaks[..1], "das", "clients"), "delta at peak: n/a");
    }
}
