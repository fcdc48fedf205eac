//! pgtier's own lines on the terminal: kept to a width, so that a captured run reads without
//! wrapped lines.

/// The terminal width pgtier's own lines keep to.
pub const WIDTH: usize = 100;

/// `line` broken at spaces into lines of at most `width` characters (a word longer than that
/// stands alone), its leading spaces kept, every line after the first indented by `indent`; each
/// line ends in a newline.
pub fn wrap(line: &str, width: usize, indent: &str) -> String {
    if line.chars().count() <= width {
        return format!("{line}\n");
    }
    let lead = &line[..line.len() - line.trim_start_matches(' ').len()];
    let mut out = String::new();
    let mut current = lead.to_string();
    let mut has_word = false;
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        if has_word && current.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&current);
            out.push('\n');
            current = indent.to_string();
            has_word = false;
        }
        if has_word {
            current.push(' ');
        }
        current.push_str(word);
        has_word = true;
    }
    out.push_str(&current);
    out.push('\n');
    out
}

/// Every line of `text` longer than [`WIDTH`] wrapped (continuations indented by two spaces).
pub fn fit(text: &str) -> String {
    text.lines().map(|l| wrap(l, WIDTH, "  ")).collect()
}

/// The warnings at the end of a run (or of `report DIR`): the whole run's (`manifest`) and the
/// summary's, most telling first, each said once, folded as [`folded_warnings`] folds them.
pub fn warnings(
    manifest: &[results::Warning],
    summary: &[analysis::warnings::SummaryWarning],
    report_md: &std::path::Path,
) -> String {
    let mut ranked: Vec<(u8, String)> = manifest
        .iter()
        .map(|w| (run_warning_rank(w), w.to_string()))
        .chain(summary.iter().map(|w| (summary_warning_rank(w), terminal_text(w))))
        .collect();
    ranked.sort_by_key(|(rank, _)| *rank);
    let mut unique: Vec<String> = Vec::new();
    for (_, w) in ranked {
        if !unique.contains(&w) {
            unique.push(w);
        }
    }
    folded_warnings(&unique, report_md)
}

/// A summary warning as the terminal says it: a warning of many runs says what it is before
/// which runs (report.md lists the runs first).
fn terminal_text(w: &analysis::warnings::SummaryWarning) -> String {
    match w {
        analysis::warnings::SummaryWarning::Runs { run_ids, first } => {
            format!("{first} ({} runs: {})", run_ids.len(), run_ids.join(", "))
        }
        other => other.to_string(),
    }
}

/// How much a warning changes the reading of the results, 0 most: the intervals do not hold
/// (the error model, the control), then what bounds every cell (CPU-bound, a pinned client, a
/// machine that moved), then what is missing or cannot be read as storage (failed runs, a data set
/// in memory, a contest not steady), then the rest; a DAX note last (provisioning printed it).
fn summary_warning_rank(w: &analysis::warnings::SummaryWarning) -> u8 {
    use analysis::warnings::SummaryWarning as S;
    match w {
        S::ErrorModel { .. } | S::ControlMoved { .. } => 0,
        S::PinnedClientCeiling { .. } | S::MachineMoved { .. } => 1,
        S::Run { warning, .. } | S::Runs { first: warning, .. } => run_warning_rank(warning),
        S::FailedRuns { .. } | S::NotSteady { .. } => 2,
        S::WideInterval { .. } | S::SingleRunCells => 3,
        S::Noisy { .. } => 4,
        S::CorrelatedRounds { .. } | S::OutlierSeconds { .. } => 5,
    }
}

/// [`summary_warning_rank`] of a run's or the whole run's warning.
fn run_warning_rank(w: &results::Warning) -> u8 {
    use results::Warning as W;
    match w {
        W::MachineCpuBound { .. } | W::ClientCpuBound { .. } | W::PlacementUnusable { .. } => 1,
        W::RunsFailed { .. } | W::FitsInMemory { .. } | W::TpccErrors { .. } => 2,
        W::Resumed { .. } => 3,
        W::CheckpointInRun { .. } | W::Other(_) => 4,
        W::DaxNotInEffect { .. } => 6,
    }
}

/// The warnings at the end of the terminal's output: how many, the first few shortened to a
/// line, and where all of them are (report.md, Warnings).
const SHOWN_WARNINGS: usize = 5;
const WARNING_WIDTH: usize = 200;

fn folded_warnings(warnings: &[String], report_md: &std::path::Path) -> String {
    if warnings.is_empty() {
        return String::new();
    }
    let mut text = String::new();
    for w in warnings.iter().take(SHOWN_WARNINGS) {
        let line = match w.char_indices().nth(WARNING_WIDTH) {
            Some((i, _)) => format!("{} ...", &w[..i]),
            None => w.clone(),
        };
        text.push_str(&wrap(&format!("warning: {line}"), WIDTH, "  "));
    }
    let more = warnings.len().saturating_sub(SHOWN_WARNINGS);
    text.push_str(&wrap(
        &format!(
            "{} warning(s){}; all of them in full: {}, \"Warnings\"",
            warnings.len(),
            if more > 0 { format!(", {more} not shown") } else { String::new() },
            report_md.display()
        ),
        WIDTH,
        "  ",
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        let text = wrap("  [rw c2] round 3: a 100, b 200; widest change ±7.2%; 4 kept", 24, "      ");
        assert_eq!(text, "  [rw c2] round 3: a\n      100, b 200; widest\n      change ±7.2%; 4\n      kept\n");
        assert!(text.lines().all(|l| l.chars().count() <= 24), "{text}");
        assert_eq!(wrap("short", 100, "  "), "short\n");
        assert_eq!(wrap("averyveryverylongword x", 5, " "), "averyveryverylongword\n x\n");
    }

    #[test]
    fn fit_leaves_short_lines_alone() {
        assert_eq!(fit("a   b\nc\n"), "a   b\nc\n", "aligned columns keep their spaces");
        assert!(fit(&"word ".repeat(60)).lines().all(|l| l.chars().count() <= WIDTH));
    }
}

#[cfg(test)]
mod folded_warnings_tests {
    use super::*;

    #[test]
    fn warnings_are_counted_shortened_and_pointed_at() {
        let long = format!("cell x: runs {}", "0001-a, ".repeat(700));
        let mut ws = vec![long.clone()];
        ws.extend((0..17).map(|i| format!("warning number {i}")));
        let text = folded_warnings(&ws, std::path::Path::new("/r/report.md"));
        let lines: Vec<&str> = text.lines().collect();
        // The long one shortened to 200 characters and wrapped at 100, the others a line each.
        assert_eq!(lines.iter().filter(|l| l.starts_with("warning: ")).count(), SHOWN_WARNINGS, "{text}");
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{text}");
        assert!(lines[1].starts_with("  ") && lines[2].ends_with(" ..."), "{text}");
        assert_eq!(
            lines.last().copied(),
            Some("18 warning(s), 13 not shown; all of them in full: /r/report.md, \"Warnings\"")
        );
        assert_eq!(folded_warnings(&[], std::path::Path::new("/r")), "");
    }

    #[test]
    fn the_warnings_that_change_the_reading_most_come_first() {
        use results::Warning as W;
        let dax = run_warning_rank(&W::DaxNotInEffect { device: "pm".into(), note: "x".into() });
        let cpu = summary_warning_rank(&analysis::warnings::SummaryWarning::Runs {
            run_ids: vec!["0001".into()],
            first: W::MachineCpuBound { machine_pct: 97.0, hardware_threads: 2 },
        });
        let memory = run_warning_rank(&W::FitsInMemory {
            dataset: "s40".into(),
            size_mib: 606.0,
            memory: results::record::MemoryLabel::Unlimited,
        });
        let model = summary_warning_rank(&analysis::warnings::SummaryWarning::ErrorModel {
            detail: "x".into(),
            inflation: 1.5,
            withheld: 0,
        });
        assert!(model < cpu && cpu < memory && memory < dax, "{model} {cpu} {memory} {dax}");
    }
}
