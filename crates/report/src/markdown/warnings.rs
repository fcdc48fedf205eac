//! The Warnings section, readable at any size: the cells' warnings grouped by kind, a warning
//! that many runs share said once with its count per cell, the run ids in an appendix (a file
//! beside report.md, a `<details>` list in report.html).

use super::*;
use analysis::warnings::SummaryWarning;

/// The file beside report.md that lists the runs of each shared warning.
pub const RUNS_FILE: &str = "report-warning-runs.md";

/// The run's warnings, then the summary's, grouped.
pub(super) fn warnings(d: &mut Document, set: &ResultSet, summary: &Summary) {
    d.heading(2, "Warnings");
    let mut items: Vec<Item> = set.manifest.warnings.iter().map(|w| item(w.to_string())).collect();
    let mut shared: Vec<(String, Vec<String>)> = Vec::new();
    let mut kinds: Vec<(&'static str, Vec<String>)> = Vec::new();
    for w in &summary.warnings {
        if let SummaryWarning::Runs { run_ids, first } = w {
            let n = shared.len() + 1;
            items.push(item(format!(
                "{first} — on {} of {} runs: {} (figures of the first run; each run's own are in its result.json; the runs: appendix {n})",
                run_ids.len(),
                set.runs.len(),
                per_cell(set, run_ids)
            )));
            shared.push((first.to_string(), run_ids.clone()));
            continue;
        }
        match kind(w) {
            Some(k) => match kinds.iter_mut().find(|(x, _)| *x == k) {
                Some((_, list)) => list.push(w.to_string()),
                None => kinds.push((k, vec![w.to_string()])),
            },
            None => items.push(item(w.to_string())),
        }
    }
    for (k, list) in kinds {
        if list.len() == 1 {
            items.extend(list.into_iter().map(item));
        } else {
            items.push(Item { text: format!("{k} ({} cells):", list.len()), children: list });
        }
    }
    if items.is_empty() {
        d.para("None.");
    }
    d.items(items);
    for (n, (sentence, run_ids)) in shared.into_iter().enumerate() {
        let mut runs = Document::default();
        runs.para(sentence);
        runs.list(run_ids.iter().map(|id| format!("`{id}`")));
        d.appendix(
            format!("Appendix {}: the {} runs of a shared warning", n + 1, run_ids.len()),
            RUNS_FILE,
            runs.blocks,
        );
    }
}

fn item(text: String) -> Item {
    Item { text, children: Vec::new() }
}

/// What a cell's warning is about, for grouping several cells' warnings of one kind.
fn kind(w: &SummaryWarning) -> Option<&'static str> {
    match w {
        SummaryWarning::Noisy { .. } => Some("Noisy cells (repetitions disagree)"),
        SummaryWarning::FailedRuns { .. } => Some("Cells with failed runs"),
        SummaryWarning::OutlierSeconds { .. } => Some("Cells with outlier seconds"),
        SummaryWarning::WideInterval { .. } => Some("Intervals wider than the target"),
        SummaryWarning::NotSteady { .. } => Some("Contests not steady"),
        SummaryWarning::CorrelatedRounds { .. } => Some("Rounds more correlated than the workload's prior"),
        SummaryWarning::MachineMoved { .. } => Some("Contests during which the machine's state moved"),
        _ => None,
    }
}

/// `read-only c8 mem 192MiB all-on-pmem 22 of 22, ...`: how many of each cell's runs share the
/// warning, cells in the order of the runs.
fn per_cell(set: &ResultSet, run_ids: &[String]) -> String {
    let mut cells: Vec<(&results::record::CellKey, usize)> = Vec::new();
    for r in set.runs.iter().filter(|r| run_ids.contains(&r.run_id)) {
        match cells.iter_mut().find(|(k, _)| **k == r.cell) {
            Some((_, n)) => *n += 1,
            None => cells.push((&r.cell, 1)),
        }
    }
    cells
        .iter()
        .map(|(k, n)| {
            let of = set.runs.iter().filter(|r| &r.cell == *k).count();
            format!("{} {n} of {of}", describe(k))
        })
        .collect::<Vec<_>>()
        .join(", ")
}
