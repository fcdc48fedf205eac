//! Charts that compare placements (and the values of another dimension) cell by cell.

use super::{
    Ctx, SHADES, annotation, clean, context_suffix, context_suffix_of, describe_group, file_stem, footnote, group_by,
    groups,
};
use crate::charts::{Bar, BarChart, BarGroup};
use analysis::model::CellSummary;
use stats::{Delta, Estimate, Verdict};

/// Throughput, average latency and p99 latency per placement, for each cell group.
pub(super) fn per_cell_bars(cx: &mut Ctx) {
    let set = cx.set;
    for g in groups(cx.summary) {
        let c0 = g[0];
        let what = describe_group(c0);
        type Pick = fn(&CellSummary) -> Option<(Estimate, Option<Delta>)>;
        let kinds: [(&str, &str, &str, Pick, bool); 3] = [
            ("throughput", "throughput", "", |c| Some((c.headline().0, c.headline().1)), false),
            ("latency", "average latency", "average latency (ms)", |c| Some((c.latency_ms, c.latency_delta)), true),
            (
                "latency-p99",
                "99th percentile latency",
                "p99 latency (ms)",
                |c| c.latency_p99_ms.map(|e| (e, c.latency_p99_delta)),
                true,
            ),
        ];
        for (kind, name, y_label, pick, lower) in kinds {
            if g.iter().any(|c| pick(c).is_none()) {
                continue;
            }
            let groups = g
                .iter()
                .map(|c| {
                    let (e, d) = pick(c).expect("checked above");
                    let (annotation, noise) = annotation(d.as_ref(), c.is_baseline, lower);
                    BarGroup {
                        label: c.key.placement.clone(),
                        bars: vec![Bar {
                            legend: cx.legend(&c.key.placement),
                            value: e.mean,
                            error: e.ci95.is_finite().then_some(e.ci95),
                            range: None,
                            color: cx.color(&c.key.placement),
                            annotation,
                            within_noise: noise,
                        }],
                    }
                })
                .collect();
            let chart = BarChart {
                title: format!("{}: {name} by placement", set.manifest.experiment_name),
                subtitle: format!(
                    "{what}; % change against baseline {} ({} is better)",
                    set.manifest.baseline,
                    if lower { "lower" } else { "higher" }
                ),
                x_label: "placement".into(),
                y_label: if y_label.is_empty() { c0.headline().2.into() } else { y_label.into() },
                groups,
                footnote: footnote(set, &g, true),
                value_decimals: if lower { 2 } else { 0 },
                value_suffix: "",
                reference: None,
            };
            cx.bar(chart, file_stem(kind, c0), &what);
        }
    }
}

/// Throughput normalised to the baseline (= 1.0) across workloads (seed 003's figure).
pub(super) fn normalised(cx: &mut Ctx) {
    let set = cx.set;
    let by_context = group_by(cx.summary, |a, b| {
        a.key.memory_limit == b.key.memory_limit && a.key.profile == b.key.profile && a.key.build == b.key.build
    });
    for cells in by_context {
        let contenders: Vec<&CellSummary> =
            cells.iter().copied().filter(|c| !c.is_baseline && c.headline().1.is_some()).collect();
        if contenders.is_empty() {
            continue;
        }
        let many_clients = cells.iter().map(|c| c.key.clients).collect::<std::collections::BTreeSet<_>>().len() > 1;
        let mut labels: Vec<(String, u32)> = Vec::new();
        for c in &cells {
            let k = (c.key.workload.clone(), c.key.clients);
            if !labels.contains(&k) {
                labels.push(k);
            }
        }
        let groups = labels
            .iter()
            .map(|(w, clients)| BarGroup {
                label: if many_clients { format!("{w} @{clients}") } else { w.clone() },
                bars: contenders
                    .iter()
                    .filter(|c| &c.key.workload == w && c.key.clients == *clients)
                    .map(|c| {
                        let d = c.headline().1.expect("filtered");
                        let range = d.has_interval().then(|| (1.0 + d.pct_low / 100.0, 1.0 + d.pct_high / 100.0));
                        let (annotation, pale) = match d.verdict {
                            Verdict::RealChange => (String::new(), false),
                            Verdict::Equivalent => ("≈ equivalent".into(), true),
                            Verdict::Inconclusive => ("? inconclusive".into(), true),
                            Verdict::NotSteady => ("~ not steady".into(), true),
                            Verdict::NoInterval => ("1 run".into(), true),
                        };
                        Bar {
                            legend: cx.legend(&c.key.placement),
                            value: d.ratio,
                            error: None,
                            range,
                            color: cx.color(&c.key.placement),
                            annotation,
                            within_noise: pale,
                        }
                    })
                    .collect(),
            })
            .collect();
        let c0 = cells[0];
        let mut ctx = String::new();
        ctx.push_str(&format!(", server memory {}", c0.key.memory_limit));
        if c0.key.profile != "default" {
            ctx.push_str(&format!(", profile {}", c0.key.profile));
        }
        let chart = BarChart {
            title: format!("{}: throughput normalised to {}", set.manifest.experiment_name, set.manifest.baseline),
            subtitle: format!(
                "baseline = 1.0 (dashed){ctx}; error bars: 95% interval of the ratio; pale bars: not a real change"
            ),
            x_label: if many_clients { "workload @ clients".into() } else { "workload".into() },
            y_label: "throughput relative to baseline".into(),
            groups,
            footnote: footnote(set, &cells, true),
            value_decimals: 2,
            value_suffix: "",
            reference: Some((1.0, format!("{} = 1.0", set.manifest.baseline))),
        };
        let stem = format!("normalised-throughput{}", context_suffix(&c0.key, true, true));
        cx.bar(chart, stem, "Normalised throughput");
    }
}

/// The same cells under each value of another dimension (memory limit or profile), side by side
/// per placement, annotated with each placement's change against the baseline under that value.
pub(super) fn dimension_comparison(cx: &mut Ctx, what: &str, value: fn(&CellSummary) -> String) {
    let set = cx.set;
    let values: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for c in &cx.summary.cells {
            let x = value(c);
            if !v.contains(&x) {
                v.push(x);
            }
        }
        v
    };
    if values.len() < 2 {
        return;
    }
    let others = group_by(cx.summary, |a, b| {
        a.key.workload == b.key.workload
            && a.key.clients == b.key.clients
            && (what == "memory" || a.key.memory_limit == b.key.memory_limit)
            && (what == "profile" || a.key.profile == b.key.profile)
            && (what == "build" || a.key.build == b.key.build)
    });
    for cells in others {
        // The study's contrast, when it is this dimension: its changes carry Holm's correction.
        let contrast = cx.summary.contrast.as_ref().filter(|x| x.dimension.name().starts_with(what));
        let groups = dimension_groups(&cx.placements, &cells, &values, (what, value), contrast);
        let c0 = cells[0];
        let chart = BarChart {
            title: format!("{}: throughput by {what}", set.manifest.experiment_name),
            subtitle: format!(
                "workload {}, {} clients{}; labels: change against {what} {} on the same placement",
                c0.key.workload,
                c0.key.clients,
                match what {
                    "memory" => format!(", profile {}", c0.key.profile),
                    "build" => format!(", server memory {}, profile {}", c0.key.memory_limit, c0.key.profile),
                    _ => format!(", server memory {}", c0.key.memory_limit),
                },
                values[0]
            ),
            x_label: "placement".into(),
            y_label: c0.headline().2.into(),
            groups,
            footnote: footnote(set, &cells, true),
            value_decimals: 0,
            value_suffix: "",
            reference: None,
        };
        // Named by the other dimension too, so that charts of two profiles (or memory limits)
        // do not overwrite each other.
        let stem = format!(
            "by-{what}-{}-c{}{}",
            clean(&c0.key.workload),
            c0.key.clients,
            context_suffix_of(&c0.key, what != "memory", what != "profile", what != "build")
        );
        let section = match what {
            "memory" => "Memory-limited against unlimited",
            "build" => "PostgreSQL builds",
            _ => "Settings profiles",
        };
        cx.bar(chart, stem, section);
    }
}

/// One bar group per placement, one bar per value of the dimension, labelled with the change
/// against the same placement under the dimension's first value.
fn dimension_groups(
    placements: &[String],
    cells: &[&CellSummary],
    values: &[String],
    (what, value): (&str, fn(&CellSummary) -> String),
    contrast: Option<&analysis::contrast::Contrast>,
) -> Vec<BarGroup> {
    placements
        .iter()
        .filter(|p| cells.iter().any(|c| &c.key.placement == *p))
        .map(|p| BarGroup {
            label: p.clone(),
            bars: values
                .iter()
                .enumerate()
                .filter_map(|(vi, v)| {
                    let c = cells.iter().find(|c| &c.key.placement == p && &value(c) == v)?;
                    let (e, _, _) = c.headline();
                    // The change against the same placement under the first value of the
                    // dimension (e.g. the default profile, or the first memory limit).
                    let reference = cells.iter().find(|r| &r.key.placement == p && value(r) == values[0])?;
                    let own = contrast.and_then(|x| x.change_of(&c.key)).and_then(|ch| ch.headline().0);
                    let d = (vi > 0).then(|| own.or_else(|| Delta::between(&reference.headline().0, &e))).flatten();
                    let (annotation, noise) = annotation(d.as_ref(), vi == 0, false);
                    let annotation = if vi == 0 { "reference".to_string() } else { annotation };
                    Some(Bar {
                        legend: format!("{what} {v}"),
                        value: e.mean,
                        error: e.ci95.is_finite().then_some(e.ci95),
                        range: None,
                        color: SHADES[vi % SHADES.len()],
                        annotation,
                        within_noise: noise,
                    })
                })
                .collect(),
        })
        .collect()
}
