//! A fleet's report: the same matrix run on several server hosts (`fleet.json` and
//! `hosts/<name>/`), the host as the dimension. How each host was reached and how its part
//! ended first, then, against the first host (the reference), what differs in each host's
//! environment and every matching cell's change with its interval and verdict; a
//! `comparisons/<host>/` comparison of the two result sets per host (as `report --baseline
//! --contender` writes it) and `hosts.csv`, one row per host and cell.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use results::fleet::{FleetRecord, HostStatus};
use serde::Serialize;

use crate::ReportError;
use crate::compare::Comparison;
use crate::export::{ExportError, Output, csv_bytes, write_outputs};
use analysis::model::{ResultSet, describe, summarize};

/// What the fleet's report found.
pub struct FleetReport {
    /// The hosts whose result sets are here, in the file's order.
    pub hosts: Vec<String>,
    /// Each other host against the reference (the first host with a result set).
    pub comparisons: Vec<(String, Comparison)>,
}

/// One row of `hosts.csv`.
#[derive(Default, Serialize)]
struct HostCellRow {
    host: String,
    cell: String,
    runs: usize,
    tps_mean: f64,
    tps_ci95: f64,
    latency_ms_mean: f64,
    /// Against the reference host's same cell (empty on the reference's rows).
    tps_vs_reference_pct: Option<f64>,
    tps_vs_reference_low: Option<f64>,
    tps_vs_reference_high: Option<f64>,
    verdict: Option<&'static str>,
    /// The change's interval after Holm's correction over the cells (the one that goes with the
    /// verdict), as summary.csv has it.
    tps_vs_reference_holm_low: Option<f64>,
    tps_vs_reference_holm_high: Option<f64>,
}

/// Writes `report.md`, `hosts.csv` and `comparisons/<host>/` into the fleet's directory.
pub fn render(dir: &Path) -> Result<(FleetReport, Vec<PathBuf>), ReportError> {
    let record = match FleetRecord::read(dir) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            return Err(
                ExportError::Write { path: dir.join(results::fleet::FLEET_FILE), message: e.to_string() }.into()
            );
        }
        None => {
            return Err(ExportError::Write {
                path: dir.join(results::fleet::FLEET_FILE),
                message: "not a fleet".into(),
            }
            .into());
        }
    };
    let mut sets: Vec<(String, PathBuf, ResultSet)> = Vec::new();
    for h in &record.hosts {
        let d = FleetRecord::host_dir(dir, &h.name);
        if let Ok(set) = ResultSet::load(&d) {
            sets.push((h.name.clone(), d, set));
        }
    }
    let mut files = Vec::new();
    let mut comparisons = Vec::new();
    let mut rows = Vec::new();
    if let Some((reference, rdir, rset)) = sets.first() {
        rows.extend(host_rows(reference, rset, None));
        for (name, d, set) in sets.iter().skip(1) {
            let out = dir.join("comparisons").join(name);
            let (cmp, written) = crate::compare::compare_sets((rdir, rset), (d, set), &out)?;
            files.extend(written);
            rows.extend(host_rows(name, set, Some(&cmp)));
            comparisons.push((name.clone(), cmp));
        }
    }
    let md = markdown(&record, &sets, &comparisons);
    let outputs = [Output::bytes("report.md", md.into_bytes()), Output::bytes("hosts.csv", csv_bytes(rows))];
    files.extend(write_outputs(dir, outputs)?);
    Ok((FleetReport { hosts: sets.iter().map(|(n, ..)| n.clone()).collect(), comparisons }, files))
}

fn host_rows(host: &str, set: &ResultSet, cmp: Option<&Comparison>) -> Vec<HostCellRow> {
    let summary = summarize(set);
    summary
        .cells
        .iter()
        .map(|c| {
            let cell = describe(&c.key);
            let delta = cmp.and_then(|m| m.cells.iter().find(|x| x.cell == cell)).and_then(|x| x.tps.as_ref());
            HostCellRow {
                host: host.to_string(),
                cell,
                runs: c.runs,
                tps_mean: c.tps.mean,
                tps_ci95: c.tps.ci95,
                latency_ms_mean: c.latency_ms.mean,
                tps_vs_reference_pct: delta.map(|d| d.pct),
                tps_vs_reference_low: delta.map(|d| d.pct_low),
                tps_vs_reference_high: delta.map(|d| d.pct_high),
                verdict: delta.map(|d| d.verdict.as_str()),
                tps_vs_reference_holm_low: delta.map(|d| d.holm_low).filter(|x| x.is_finite()),
                tps_vs_reference_holm_high: delta.map(|d| d.holm_high).filter(|x| x.is_finite()),
            }
        })
        .collect()
}

fn markdown(
    record: &FleetRecord,
    sets: &[(String, PathBuf, ResultSet)],
    comparisons: &[(String, Comparison)],
) -> String {
    let mut md = String::new();
    match record.hosts.as_slice() {
        [one] => {
            let _ = writeln!(md, "# {} on server host {}\n", record.experiment_name, one.name);
        }
        hosts => {
            let _ = writeln!(md, "# Fleet: {} on {} server hosts\n", record.experiment_name, hosts.len());
        }
    }
    if record.hosts.len() == 1 {
        let _ = writeln!(
            md,
            "The matrix ({}, run order seed {}) ran on server host {}, driven over ssh{}.\n",
            record.experiment_file,
            record.seed,
            record.hosts[0].name,
            if record.emulated { " on **emulated** tiers" } else { "" }
        );
    } else {
        let _ = writeln!(
            md,
            "The same matrix ({}, run order seed {}) ran on every host at the same time, each driven over its own ssh connection{}. Each host's own report is in `hosts/<name>/report.md`; below, every host against the first with results{}.\n",
            record.experiment_file,
            record.seed,
            if record.emulated { " on **emulated** tiers" } else { "" },
            sets.first().map(|(n, ..)| format!(" (**{n}**, the reference)")).unwrap_or_default()
        );
    }
    hosts_section(&mut md, record, sets);
    if !comparisons.is_empty() {
        let _ = writeln!(
            md,
            "\nIn the tables below the TPS columns are each host's mean; the change is the ratio of the two hosts' geometric means with Welch's 95% interval on the logs (runs on two machines are independent samples, not pairs), Holm-corrected over the cells, judged against the equivalence margin of the reference host's result set."
        );
    }
    for (name, cmp) in comparisons {
        let reference = &sets[0].0;
        let _ = writeln!(md, "\n## {name} against {reference}\n");
        // Each host reads the profiles from its own shipped copy: their paths always differ.
        let changes: Vec<&crate::compare::Change> = cmp.changes.iter().filter(|c| !is_shipped_copy(&c.what)).collect();
        if changes.is_empty() {
            let _ = writeln!(
                md,
                "Nothing pgtier records differs between the two hosts' environments and configurations.\n"
            );
        } else {
            let _ = writeln!(md, "What differs between the hosts (read it before any delta: it can explain one):\n");
            let _ = writeln!(md, "| what | {reference} | {name} |\n|---|---|---|");
            for c in changes.iter().take(30) {
                crate::compare::change_row(&mut md, c);
            }
            if changes.len() > 30 {
                let _ = writeln!(md, "\n{} more in `comparisons/{name}/comparison.md`.", changes.len() - 30);
            }
        }
        let _ = writeln!(
            md,
            "\n| cell | {reference} TPS | {name} TPS | change (95% interval; after Holm where it matters) | verdict |\n|---|---|---|---|---|"
        );
        for c in &cmp.cells {
            let change = c.tps.as_ref().map(change_text).unwrap_or_else(|| "-".into());
            let verdict = c.tps.as_ref().map(|d| d.verdict.as_str()).unwrap_or("-");
            let _ =
                writeln!(md, "| {} | {:.1} | {:.1} | {change} | {verdict} |", c.cell, c.baseline_tps, c.contender_tps);
        }
        if !cmp.unmatched.is_empty() {
            let _ = writeln!(md, "\nCells without a counterpart: {}", cmp.unmatched.join("; "));
        }
        if let Some(advice) = precision_advice(cmp, &sets[0].2) {
            let _ = writeln!(md, "\n{advice}");
        }
        let _ = writeln!(md, "\n![{name} against {reference}](comparisons/{name}/comparison-throughput.png)");
    }
    match (record.hosts.len(), sets.len()) {
        (1, 1) => {
            let _ = writeln!(md, "\nOne server host: its results are in [its report](hosts/{}/report.md).", sets[0].0);
        }
        (_, n) if n < 2 => {
            let _ = writeln!(md, "\nFewer than two hosts have results: nothing to compare yet.");
        }
        _ => {}
    }
    md
}

/// A host's change against the reference: `+12.3% [+4.5, +20.1]`, then `, after Holm [+1.2,
/// +23.9]` when the correction widened an interval that excludes 0 (the verdict's interval).
fn change_text(d: &stats::Delta) -> String {
    if d.has_interval() { d.text_with_holm("") } else { format!("{:+.1}% (one run each: no interval)", d.pct) }
}

fn hosts_section(md: &mut String, record: &FleetRecord, sets: &[(String, PathBuf, ResultSet)]) {
    let _ = writeln!(md, "## Hosts\n");
    let _ = writeln!(
        md,
        "| host | address | part | runs ok (of made or planned) | CPU | threads | memory | kernel | PostgreSQL | clock offset | ssh set-up / command |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for h in &record.hosts {
        let set = sets.iter().find(|(n, ..)| n == &h.name).map(|(.., s)| s);
        let status = match h.status {
            HostStatus::Complete => "complete",
            HostStatus::Failed => "failed",
            HostStatus::Lost => "connection lost",
            HostStatus::Pending => "not run",
        };
        let (runs, cpu, threads, mem, kernel, pg) = match set {
            Some(s) => (
                format!(
                    "{} of {}",
                    s.runs.iter().filter(|r| r.status == results::RunStatus::Ok).count(),
                    s.runs.len().max(s.manifest.run_order.len())
                ),
                s.manifest.host.cpu_model.clone(),
                s.manifest.host.cpu_threads.to_string(),
                format!("{:.1} GiB", s.manifest.host.memory_bytes as f64 / (1u64 << 30) as f64),
                s.manifest.host.kernel.clone(),
                s.manifest.postgres.version.clone(),
            ),
            None => ("no result set here".into(), "-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
        };
        let clock = match (h.clock_offset_ms, h.clock_uncertainty_ms) {
            (Some(o), Some(u)) => format!("{o:+.1} ms ± {u:.1}"),
            _ => "not measured".into(),
        };
        let ssh = match (h.ssh_setup_ms, h.ssh_command_ms) {
            (Some(a), Some(b)) => format!("{a:.0} / {b:.0} ms"),
            _ => "-".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {status} | {runs} | {cpu} | {threads} | {mem} | {kernel} | {pg} | {clock} | {ssh} |",
            h.name, h.address
        );
    }
    for h in record.hosts.iter().filter(|h| h.cause.is_some()) {
        let _ = writeln!(md, "\n- **{}**: {}", h.name, h.cause.as_deref().unwrap_or_default());
    }
    let _ = writeln!(
        md,
        "\nClock offset: the host's clock minus the controller's, from the fastest of 5 `date` round trips over ssh (± half that round trip); per-second series of different hosts line up after subtracting it."
    );
}

/// A difference that is only where each host's shipped copy of the profiles is
/// (`config.profiles[0].file`).
fn is_shipped_copy(what: &str) -> bool {
    what.starts_with("config.profiles[") && what.ends_with("].file")
}

/// When no cell of a host comparison is a real change or an equivalence: how wide the
/// intervals are and about how many repetitions per host would bring them to the equivalence
/// margin. Runs on two hosts cannot be paired: from each interval the spread of log TPS is
/// recovered (half-width = t(df) x sd x sqrt(2/n), with n = df/2 + 1 the runs a host has in
/// that cell, exact for Welch's df when both hosts have n runs of equal spread), and the advice
/// is [`repetitions_needed`] for the median cell: 80% power to call a true change of the margin.
fn precision_advice(cmp: &Comparison, reference: &ResultSet) -> Option<String> {
    use stats::{Verdict, t_quantile};
    let deltas: Vec<&stats::Delta> = cmp.cells.iter().filter_map(|c| c.tps.as_ref()).collect();
    if deltas.is_empty() || deltas.iter().any(|d| d.verdict != Verdict::Inconclusive) {
        return None;
    }
    let with: Vec<&&stats::Delta> = deltas.iter().filter(|d| d.has_interval() && d.df >= 1.0).collect();
    if with.is_empty() {
        return Some("**Unreliable:** one run a cell on a host gives no interval: repeat the runs (`repetitions` of at least 3) to compare hosts.".into());
    }
    // The runs a host has in a cell, from its Welch df (2n - 2 for n runs each of equal spread),
    // and the spread of log TPS within a host, from the cell's own interval.
    let runs_of = |d: &stats::Delta| (d.df / 2.0 + 1.0).max(2.0);
    let mut sds: Vec<f64> = with
        .iter()
        .map(|d| {
            let hw_log = ((1.0 + d.pct_high / 100.0).ln() - (1.0 + d.pct_low / 100.0).ln()) / 2.0;
            hw_log / (t_quantile(0.975, d.df) * (2.0 / runs_of(d)).sqrt())
        })
        .collect();
    sds.sort_by(f64::total_cmp);
    let sd = sds[sds.len() / 2];
    let mut runs: Vec<f64> = with.iter().map(|d| runs_of(d)).collect();
    runs.sort_by(f64::total_cmp);
    let runs = format!("{:.0}", runs[runs.len() / 2]);
    let mean_hw = with.iter().map(|d| d.half_width_pct()).sum::<f64>() / with.len() as f64;
    let margin = reference.manifest.measurement.equivalence_margin_pct;
    let needed = repetitions_needed(sd, margin)
        .map(|n| format!("about {n} repetitions a host"))
        .unwrap_or_else(|| "more than 10,000 repetitions a host".into());
    Some(format!(
        "**Unreliable:** no cell is a real change or an equivalence; the intervals' half-widths average ±{mean_hw:.1}% with {runs} runs a cell on each host (independent samples: runs on two hosts cannot be paired; the median cell's run-to-run spread is {:.1}%). To call a true change of {margin}% (the equivalence margin) real with 80% power (two-sided 5%), {needed} would be needed.",
        sd * 100.0
    ))
}

/// The smallest number of runs a host (2 to 10,000) that gives 80% power to call a true change
/// of `margin_pct` real (two-sided 5%) between two hosts of spread `sd` (of log TPS):
/// (t(0.975, 2n-2) + t(0.80, 2n-2)) x sd x sqrt(2/n) <= ln(1 + margin), the t form of
/// n = 2 (z(0.975) + z(0.80))² sd² / δ². The n at which the expected half-width alone reaches
/// the margin is too few: there a true change of the margin is detected about half the time.
fn repetitions_needed(sd: f64, margin_pct: f64) -> Option<u32> {
    use stats::t_quantile;
    let target = (1.0 + margin_pct / 100.0).ln();
    (2..=10_000u32).find(|n| {
        let (n, df) = (f64::from(*n), 2.0 * f64::from(*n) - 2.0);
        (t_quantile(0.975, df) + t_quantile(0.80, df)) * sd * (2.0 / n).sqrt() <= target
    })
}

#[cfg(test)]
mod tests {
    use super::{change_text, repetitions_needed};

    /// The fleet's table shows the interval after Holm beside the 95% one when it matters.
    #[test]
    fn a_host_change_shows_its_interval_after_holm() {
        let d = stats::Delta {
            pct: 30.0,
            ratio: 1.3,
            pct_low: 4.0,
            pct_high: 62.5,
            p_value: 0.02,
            p_adjusted: 0.04,
            holm_low: 0.5,
            holm_high: 68.3,
            se: f64::NAN,
            df: 4.0,
            method: stats::Method::WelchLog,
            within_noise: false,
            verdict: stats::Verdict::RealChange,
        };
        assert_eq!(change_text(&d), "+30.0% [+4.0, +62.5], after Holm [+0.5, +68.3]");
        let one = stats::Delta { pct_low: f64::NAN, pct_high: f64::NAN, holm_low: f64::NAN, ..d };
        assert_eq!(change_text(&one), "+30.0% (one run each: no interval)");
    }

    #[test]
    fn repetitions_needed_for_80_percent_power_against_hand_figures() {
        // n = 2 (t(0.975, 2n-2) + t(0.80, 2n-2))² sd² / δ², iterated from the normal form
        // n = 2 (1.960 + 0.842)² sd² / δ² (z quantiles).
        // sd 0.05, margin 5% (δ = ln 1.05 = 0.04879, sd²/δ² = 1.0503): z gives 2 x 7.849 x
        // 1.0503 = 16.5; at n = 17 (df 32: 2.037 + 0.853 = 2.890) 2 x 8.352 x 1.0503 = 17.5 > 17;
        // at n = 18 (df 34: 2.032 + 0.852 = 2.885) 17.48 <= 18. (Half-width alone: 10.)
        assert_eq!(repetitions_needed(0.05, 5.0), Some(18));
        // sd 0.01, margin 5% (sd²/δ² = 0.04201): n = 2 (df 2: 4.303 + 1.061 = 5.364) needs
        // 2 x 28.77 x 0.04201 = 2.42 > 2; n = 3 (df 4: 2.776 + 0.941 = 3.717) needs 1.16 <= 3.
        assert_eq!(repetitions_needed(0.01, 5.0), Some(3));
        // sd 0.2, margin 2% (δ = ln 1.02 = 0.019803, sd²/δ² = 102.0): z gives 2 x 7.849 x 102.0
        // = 1601; the t quantiles at df 3200 add about 1.
        let n = repetitions_needed(0.2, 2.0).unwrap();
        assert!((1595..=1610).contains(&n), "{n}");
        // sd 0.5, margin 2%: z gives about 10,000 x 1.0006: beyond the range.
        assert_eq!(repetitions_needed(0.5, 2.0), None, "beyond 10,000");
    }
}
