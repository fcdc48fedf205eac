//! Wait events per workload: one stacked bar of backend-time shares per cell, each cell's
//! bottleneck above its bar.

use plotters::style::RGBColor;

use super::{ChartSpec, Ctx, clean, footnote};
use crate::charts::{Chart, StackedBar, StackedChart};
use analysis::evidence::{self, Category, Study};
use analysis::model::CellSummary;

/// Events drawn apart; the rest of a workload's events are summed as "other events".
const MAX_EVENTS: usize = 8;

/// A colour per event, by its category (shades within a category).
fn color(event: &str, nth_in_category: usize) -> RGBColor {
    let shades: &[RGBColor] = match Category::of(event) {
        Category::WalSync => &[RGBColor(0xC4, 0x4E, 0x52), RGBColor(0xE8, 0x8A, 0x7E), RGBColor(0x8E, 0x2B, 0x30)],
        Category::DataRead => &[RGBColor(0x55, 0xA8, 0x68), RGBColor(0x9B, 0xD1, 0x9E), RGBColor(0x2E, 0x6B, 0x3C)],
        Category::DataWrite => &[RGBColor(0x81, 0x72, 0xB3), RGBColor(0xB9, 0xAE, 0xDB), RGBColor(0x55, 0x48, 0x86)],
        Category::Lock => &[RGBColor(0xDD, 0x84, 0x52), RGBColor(0xF2, 0xB8, 0x8C), RGBColor(0xA6, 0x58, 0x2B)],
        Category::Cpu => &[RGBColor(0x4C, 0x72, 0xB0)],
        Category::Client => &[RGBColor(0xC8, 0xC8, 0xC8)],
        Category::Other => &[RGBColor(0x93, 0x78, 0x60), RGBColor(0xC9, 0xB2, 0x9B)],
    };
    shades[nth_in_category % shades.len()]
}

/// The label of a cell's bar: its placement, with what else tells it apart in the workload.
fn bar_label(c: &CellSummary, several_clients: bool, several_memory: bool, several_profiles: bool) -> String {
    let mut l = c.key.placement.clone();
    if several_clients {
        l.push_str(&format!(" c{}", c.key.clients));
    }
    if several_memory {
        l.push_str(&format!(" {}", c.key.memory_limit));
    }
    if several_profiles {
        l.push_str(&format!(" {}", c.key.profile));
    }
    l
}

pub(super) fn waits(cx: &mut Ctx) {
    let study = Study::of(cx.set, cx.summary);
    let mut workloads: Vec<&str> = Vec::new();
    for c in &cx.summary.cells {
        if !workloads.contains(&c.key.workload.as_str()) {
            workloads.push(&c.key.workload);
        }
    }
    for w in workloads {
        let cells: Vec<&CellSummary> = cx
            .summary
            .cells
            .iter()
            .filter(|c| c.key.workload == w && study.cells.get(&c.key).is_some_and(|e| e.has_waits()))
            .collect();
        if cells.is_empty() {
            continue;
        }
        let distinct = |f: fn(&CellSummary) -> String| {
            let mut v: Vec<String> = cells.iter().map(|c| f(c)).collect();
            v.sort();
            v.dedup();
            v.len() > 1
        };
        let (sc, sm, sp) = (
            distinct(|c| c.key.clients.to_string()),
            distinct(|c| c.key.memory_limit.to_string()),
            distinct(|c| c.key.profile.clone()),
        );
        let (drawn, mut series) = drawn_events(&study, &cells);
        let other = "other events".to_string();
        series.push((other.clone(), RGBColor(0xCF, 0xC6, 0xB4)));
        let bars = wait_bars(&study, &cells, &drawn, &other, (sc, sm, sp));
        let samples: f64 = cells.iter().map(|c| study.cells[&c.key].wait_samples).sum();
        let chart = StackedChart {
            title: format!("{}: wait events of {w}", cx.set.manifest.experiment_name),
            subtitle: format!(
                "share of client-backend time per wait event (CPU = active, no wait event), pg_stat_activity 10 times a second, mean of each cell's runs ({samples:.0} backend samples); above each bar: its bottleneck"
            ),
            x_label: "placement".into(),
            y_label: "share of backend time".into(),
            bars,
            series,
            footnote: footnote(cx.set, &cells, false),
        };
        cx.specs.push(ChartSpec {
            section: "Wait events".into(),
            stem: format!("waits-{}", clean(w)),
            chart: Chart::Stacked(chart),
        });
    }
}

/// The events drawn apart (the largest share each reaches in any cell, at most `MAX_EVENTS`
/// of at least 1%), stacked by category then name, with their colours.
fn drawn_events(study: &Study, cells: &[&CellSummary]) -> (Vec<String>, Vec<(String, RGBColor)>) {
    let mut peak: Vec<(String, f64)> = Vec::new();
    for c in cells {
        for (e, sh) in &study.cells[&c.key].waits {
            match peak.iter_mut().find(|(x, _)| x == e) {
                Some(p) => p.1 = p.1.max(*sh),
                None => peak.push((e.clone(), *sh)),
            }
        }
    }
    peak.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut drawn: Vec<String> =
        peak.iter().take(MAX_EVENTS).filter(|(_, s)| *s >= 1.0).map(|(e, _)| e.clone()).collect();
    // Stacked by category (WAL at the bottom, the client on top), then by name.
    drawn.sort_by_key(|e| (Category::of(e), e.clone()));
    let mut series: Vec<(String, RGBColor)> = Vec::new();
    for e in &drawn {
        let nth = series.iter().filter(|(x, _)| Category::of(x) == Category::of(e)).count();
        series.push((e.clone(), color(e, nth)));
    }
    (drawn, series)
}

/// One stacked bar per cell: the drawn events' shares, the rest as "other events", and the
/// cell's bottleneck above it.
fn wait_bars(
    study: &Study,
    cells: &[&CellSummary],
    drawn: &[String],
    other: &str,
    (sc, sm, sp): (bool, bool, bool),
) -> Vec<StackedBar> {
    cells
        .iter()
        .map(|c| {
            let e = &study.cells[&c.key];
            let mut segments: Vec<(String, f64)> = drawn
                .iter()
                .map(|d| (d.clone(), e.waits.iter().find(|(x, _)| x == d).map(|(_, s)| *s).unwrap_or(0.0)))
                .collect();
            let rest: f64 = e.waits.iter().filter(|(x, _)| !drawn.contains(x)).map(|(_, s)| s).sum();
            segments.push((other.to_string(), rest));
            StackedBar {
                label: bar_label(c, sc, sm, sp),
                segments,
                note: evidence::judge(e).bottleneck.label().to_string(),
            }
        })
        .collect()
}
