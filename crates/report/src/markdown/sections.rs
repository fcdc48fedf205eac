//! Sections of the report drawn from a judgement the analysis crate made: the negative control
//! and the idle placements' writes.

use analysis::control::{ControlCheck, excludes_zero};
use analysis::idle_io::{IdleIo, WARN_SHARE_PCT};
use stats::Delta;

use crate::document::{Document, Table};

/// `## Negative control` first in the report: the control's change in every contest, and which
/// contests' verdicts it makes untrustworthy.
pub fn control(d: &mut Document, checks: &[ControlCheck], model: &[analysis::control::ModelCheck], baseline: &str) {
    if checks.is_empty() {
        return;
    }
    let moved = checks.iter().filter(|c| c.moved).count();
    d.heading(2, "Negative control");
    d.para(format!(
        "The placement `{}` is a twin of the baseline {baseline} (identical devices of its class), measured as one more contender of every contest: nothing can differ, so its change is the method's own error. {}",
        checks[0].key.placement,
        if moved == 0 && checks.iter().all(|c| c.figures == 0) {
            "It has no interval in any contest (a side with a single run): it checks nothing here.".to_string()
        } else if moved == 0 {
            format!(
                "It held in all {} contests on all {} figures checked: no interval of it excludes 0 after Holm's correction over all of its figures (one family).",
                checks.len(),
                checks.iter().map(|c| c.figures).sum::<usize>()
            )
        } else {
            format!(
                "It **moved in {moved} of {} contests**: those contests' verdicts are marked untrustworthy below.",
                checks.len()
            )
        }
    ));
    let mut t = Table::new(&[
        "contest",
        "control's throughput change [95% CI]",
        "latency change [95% CI]",
        "other figures checked",
        "the contest's verdicts",
    ])
    .caption(
        "The negative control against the baseline per contest, on every figure with an interval (throughput, average and p99 latency, each statement's latency; the estimator of the study's own changes); intervals are 95% (paired by round), and after Holm's correction where that is wider, over every figure of the control in the study (one family): the control moved when one of those excludes 0 (at most a 5% false alarm per study when the method is right).",
    );
    for c in checks {
        let text = |x: Option<&Delta>| x.map(|x| x.text_with_holm("")).unwrap_or_else(|| "n/a".into());
        let moved_others: Vec<String> = c
            .others
            .iter()
            .filter(|(_, d)| excludes_zero(d))
            .map(|(what, d)| format!("{what} {}", d.text_with_holm("")))
            .collect();
        t.row(vec![
            c.contest.clone(),
            text(c.headline.as_ref()),
            text(c.latency.as_ref()),
            if moved_others.is_empty() {
                match c.others.iter().filter(|(_, d)| d.has_interval()).count() {
                    0 => "none with an interval".to_string(),
                    n => format!("{n} held"),
                }
            } else {
                format!("moved: {}", moved_others.join("; "))
            },
            if c.moved { "**untrustworthy**".into() } else { "stand".into() },
        ]);
    }
    d.table(t);
    if !model.is_empty() {
        let failed = model.iter().any(|m| m.failed);
        let checks: Vec<String> = model.iter().map(|m| m.text()).collect();
        d.para(format!(
            "The error model across the contests: in each figure family the control's changes, each a t statistic if the intervals are right, are tested together (their normal deviates' squares against chi-square; level {:.0}% over the families, Bonferroni): {}. {}",
            analysis::control::MODEL_ALPHA * 100.0,
            checks.join("; "),
            if failed {
                "**The intervals do not hold on this run**: every change is judged with its interval widened as much, and a change that was real only on the narrower one is inconclusive (Warnings says how many)."
            } else {
                "The intervals hold: the controls moved no more than their intervals say."
            }
        ));
    }
}

/// The report's section: per contest, what the idle placements wrote during slices.
pub fn idle_io(d: &mut Document, rows: &[IdleIo]) {
    if rows.is_empty() {
        return;
    }
    d.heading(3, "Idle placements' background writes during slices");
    d.para(format!(
        "Bytes written to the study's devices while a slice ran, from each slice's /proc/diskstats at its start and end (runs/<id>/diskstats.*.txt): on the active placement's devices, and on the others' (their servers idle: checkpointer, background writer, the kernel's write-back). A device two placements share counts as the active one's, so the idle share is a lower bound. Above {WARN_SHARE_PCT:.0}% the idle servers' writes compete with the measured slice."
    ));
    let mut t = Table::new(&[
        "contest",
        "slices:",
        "written by the active placement:",
        "by the idle placements:",
        "idle share:",
    ])
    .caption("Write rates during slices, per contest (sums over all slices; no interval).");
    for r in rows {
        let mb_s = |b: u64| b as f64 / 1e6 / r.seconds.max(1e-9);
        t.row(vec![
            r.contest.clone(),
            r.slices.to_string(),
            format!("{:.2} MB/s", mb_s(r.active_bytes)),
            format!("{:.2} MB/s", mb_s(r.idle_bytes)),
            format!("{:.1}%", r.idle_share_pct()),
        ]);
    }
    d.table(t);
    let high: Vec<String> = rows
        .iter()
        .filter(|r| r.idle_share_pct() > WARN_SHARE_PCT)
        .map(|r| format!("{} ({:.0}%)", r.contest, r.idle_share_pct()))
        .collect();
    if !high.is_empty() {
        d.para(format!(
            "**The idle placements wrote more than {WARN_SHARE_PCT:.0}% of the bytes during others' slices in {}**: their write-back competes with the measured slice for the CPU and, where devices share a backing (emulated loop files on one disk), for the disk. It lands on every placement alike only when the placements write alike.",
            high.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_table_gives_rates_and_the_share() {
        let r = IdleIo { contest: "c".into(), slices: 2, active_bytes: 900, idle_bytes: 100, seconds: 4.0 };
        let mut d = Document { title: "t".into(), blocks: Vec::new() };
        idle_io(&mut d, &[r]);
        let crate::document::Block::Table(t) = &d.blocks[2] else { panic!("a table") };
        assert_eq!(t.rows[0], ["c", "2", "0.00 MB/s", "0.00 MB/s", "10.0%"]);
    }
}
