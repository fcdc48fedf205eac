//! The CSV tables (schema in docs/results.md): one `#[derive(Serialize)]` row struct per file,
//! whose field names are the header and whose field order is the column order.

use results::record::MemoryLabel;
use serde::Serialize;

use super::csv::{Fixed, csv_bytes};
use super::{ExportError, Exporter, Output, layout};
use analysis::evidence::{self, EvidenceColumns, Study};
use analysis::model::{CellSummary, ResultSet, Summary};
use stats::Delta;

/// An optional number: empty when absent.
fn fixed<const D: usize>(v: Option<f64>) -> Option<Fixed<D>> {
    v.map(Fixed)
}

/// A change against the baseline as three columns: the change, its interval's low and high end
/// (`0.00` and blanks on a baseline row, blanks when unknown).
#[derive(Clone, Copy, Default)]
struct DeltaColumns {
    pct: Option<Fixed<2>>,
    low: Option<Fixed<2>>,
    high: Option<Fixed<2>>,
    /// The interval after Holm's correction (the one that goes with the verdict).
    holm_low: Option<Fixed<2>>,
    holm_high: Option<Fixed<2>>,
}

fn delta_columns(d: Option<&Delta>, baseline: bool) -> DeltaColumns {
    match d {
        Some(d) => DeltaColumns {
            pct: Some(Fixed(d.pct)),
            low: Some(Fixed(d.pct_low)),
            high: Some(Fixed(d.pct_high)),
            holm_low: Some(Fixed(d.holm_low)),
            holm_high: Some(Fixed(d.holm_high)),
        },
        None if baseline => DeltaColumns { pct: Some(Fixed(0.0)), ..Default::default() },
        None => DeltaColumns::default(),
    }
}

/// `runs.csv`: one row per run. A failed run's figures are blank, all of them: partial figures
/// of a run that did not finish are not measurements.
#[derive(Serialize, Default)]
struct RunRow<'a> {
    run_id: &'a str,
    sequence: u32,
    placement: &'a str,
    workload: &'a str,
    clients: u32,
    memory_limit: MemoryLabel,
    profile: &'a str,
    repetition: u32,
    status: &'a str,
    workload_kind: &'a str,
    script: &'a str,
    threads: u32,
    scale: u32,
    duration_s: Fixed<1>,
    ramp_up_s: Fixed<1>,
    tps: Option<Fixed<3>>,
    latency_ms_avg: Option<Fixed<3>>,
    latency_ms_stddev: Option<Fixed<3>>,
    latency_ms_p50: Option<Fixed<3>>,
    latency_ms_p90: Option<Fixed<3>>,
    latency_ms_p95: Option<Fixed<3>>,
    latency_ms_p99: Option<Fixed<3>>,
    latency_ms_p999: Option<Fixed<3>>,
    transactions: Option<u64>,
    failed_transactions: Option<u64>,
    nopm: Option<Fixed<1>>,
    tpm: Option<Fixed<1>>,
    started_at: &'a str,
    finished_at: &'a str,
    failure: &'a str,
    failure_kind: &'a str,
    /// The PostgreSQL build (`default` when the experiment names none).
    build: &'a str,
    /// Slices: the segment of rounds (one server life of the session); 0 for runs.
    segment: u32,
    /// Whether the run counts in the estimate (`false`: failed, or a round the warm-up cut left
    /// out).
    kept: bool,
}

fn run_rows<'a>(set: &'a ResultSet, summary: &'a Summary) -> impl Iterator<Item = RunRow<'a>> {
    set.runs.iter().map(|r| {
        let ok = r.status == results::RunStatus::Ok;
        // Figures only of a run that finished.
        let m = ok.then_some(&r.metrics);
        RunRow {
            run_id: &r.run_id,
            sequence: r.sequence,
            placement: &r.cell.placement,
            workload: &r.cell.workload,
            clients: r.cell.clients,
            memory_limit: r.cell.memory_limit,
            profile: set.profile_of(&r.cell.placement, &r.cell.profile),
            repetition: r.repetition,
            status: if ok { "ok" } else { "failed" },
            workload_kind: &r.workload_kind,
            script: &r.script,
            threads: r.threads,
            scale: r.scale,
            duration_s: Fixed(r.duration_s),
            ramp_up_s: Fixed(r.ramp_up_s),
            tps: m.map(|m| Fixed(m.tps)),
            latency_ms_avg: m.map(|m| Fixed(m.latency_ms_avg)),
            latency_ms_stddev: fixed(m.and_then(|m| m.latency_ms_stddev)),
            latency_ms_p50: fixed(m.and_then(|m| m.latency_ms_p50)),
            latency_ms_p90: fixed(m.and_then(|m| m.latency_ms_p90)),
            latency_ms_p95: fixed(m.and_then(|m| m.latency_ms_p95)),
            latency_ms_p99: fixed(m.and_then(|m| m.latency_ms_p99)),
            latency_ms_p999: fixed(m.and_then(|m| m.latency_ms_p999)),
            transactions: m.map(|m| m.transactions),
            failed_transactions: m.map(|m| m.failed_transactions),
            nopm: fixed(m.and_then(|m| m.nopm)),
            tpm: fixed(m.and_then(|m| m.tpm)),
            started_at: &r.started_at,
            finished_at: &r.finished_at,
            failure: r.failure.as_deref().unwrap_or_default(),
            failure_kind: r.failure_kind.map(|k| k.as_str()).unwrap_or_default(),
            build: set.build_of(&r.cell.placement, &r.cell.build),
            segment: r.segment,
            kept: ok && summary.analysis.counts(r),
        }
    })
}

/// `summary.csv`: one row per cell, with its changes against the baseline cell.
#[derive(Serialize, Default)]
struct SummaryRow<'a> {
    placement: &'a str,
    workload: &'a str,
    clients: u32,
    memory_limit: MemoryLabel,
    profile: &'a str,
    runs: usize,
    failed_runs: usize,
    tps_mean: Fixed<3>,
    tps_stdev: Fixed<3>,
    tps_cv_pct: Fixed<2>,
    tps_ci95: Fixed<3>,
    latency_ms_mean: Fixed<3>,
    latency_ms_stdev: Fixed<3>,
    latency_ms_p99_mean: Option<Fixed<3>>,
    tps_delta_pct: Option<Fixed<2>>,
    tps_delta_ci95_low_pct: Option<Fixed<2>>,
    tps_delta_ci95_high_pct: Option<Fixed<2>>,
    tps_ratio: Option<Fixed<4>>,
    latency_delta_pct: Option<Fixed<2>>,
    latency_delta_ci95_low_pct: Option<Fixed<2>>,
    latency_delta_ci95_high_pct: Option<Fixed<2>>,
    /// Blank on baseline rows, `unknown` without an interval.
    within_noise: &'static str,
    nopm_mean: Option<Fixed<1>>,
    nopm_ci95: Option<Fixed<1>>,
    nopm_delta_pct: Option<Fixed<2>>,
    nopm_delta_ci95_low_pct: Option<Fixed<2>>,
    nopm_delta_ci95_high_pct: Option<Fixed<2>>,
    /// The headline change's verdict (NOPM for TPC-C, TPS otherwise): `real change`,
    /// `equivalent`, `inconclusive`, `no interval`; blank on baseline rows.
    verdict: &'static str,
    tps_verdict: &'static str,
    /// Two-sided p-value of the TPS change, and after Holm's correction over all TPS changes.
    tps_p_value: Option<Fixed<5>>,
    tps_p_holm: Option<Fixed<5>>,
    /// `paired-log` (slices, paired by round), `welch-log` (independent runs) or `delta-method`.
    delta_method: &'static str,
    latency_verdict: &'static str,
    latency_p99_delta_pct: Option<Fixed<2>>,
    latency_p99_delta_ci95_low_pct: Option<Fixed<2>>,
    latency_p99_delta_ci95_high_pct: Option<Fixed<2>>,
    latency_p99_verdict: &'static str,
    nopm_verdict: &'static str,
    nopm_p_holm: Option<Fixed<5>>,
    build: &'a str,
    /// Slices, contender rows: whether the contest's kept rounds were steady (`false`: the
    /// verdicts are `not steady`), the lag-1 autocorrelation of this contender's kept per-round
    /// log ratios, its trend over the kept rounds (% change of the ratio from the first kept
    /// round to the last) with its p-value, the kept rounds and the rounds the warm-up cut
    /// left out (over the contest), and what Stein's rule asked for.
    steady: &'static str,
    lag1_autocorrelation: Option<Fixed<3>>,
    trend_pct_over_kept: Option<Fixed<2>>,
    trend_p_value: Option<Fixed<5>>,
    kept_rounds: Option<usize>,
    rounds_cut: Option<u32>,
    rounds_needed: Option<usize>,
    /// With a negative control: `held` or `moved` (one of its figures' intervals excluded 0 after
    /// Holm's correction over the control's own figures in this contest, so the contest's
    /// verdicts are untrustworthy); empty without one.
    control: &'static str,
    /// Each change's interval after Holm's correction over the changes of its figure: the same
    /// estimate at level 1 - 0.05/m (m its Holm multiplier), excluding 0 exactly when the
    /// change is significant after the correction; equal to the 95% interval for a family of one.
    tps_delta_holm_low_pct: Option<Fixed<2>>,
    tps_delta_holm_high_pct: Option<Fixed<2>>,
    latency_delta_holm_low_pct: Option<Fixed<2>>,
    latency_delta_holm_high_pct: Option<Fixed<2>>,
    latency_p99_delta_holm_low_pct: Option<Fixed<2>>,
    latency_p99_delta_holm_high_pct: Option<Fixed<2>>,
    nopm_delta_holm_low_pct: Option<Fixed<2>>,
    nopm_delta_holm_high_pct: Option<Fixed<2>>,
}

fn verdict_of(d: Option<&Delta>, baseline: bool) -> &'static str {
    match d {
        _ if baseline => "",
        Some(d) => d.verdict.as_str(),
        None => "",
    }
}

fn p_of(p: Option<f64>) -> Option<Fixed<5>> {
    p.filter(|p| p.is_finite()).map(Fixed)
}

fn summary_row<'a>(set: &'a ResultSet, c: &'a CellSummary, summary: &'a Summary) -> SummaryRow<'a> {
    let contest = summary.analysis.contests.get(&analysis::contest::contest_of(&c.key)).filter(|_| !c.is_baseline);
    let trend = contest.and_then(|a| a.trend.get(&c.key.placement));
    let td = delta_columns(c.tps_delta.as_ref(), c.is_baseline);
    let ld = delta_columns(c.latency_delta.as_ref(), c.is_baseline);
    let pd = if c.latency_p99_ms.is_some() {
        delta_columns(c.latency_p99_delta.as_ref(), c.is_baseline)
    } else {
        DeltaColumns::default()
    };
    let nd =
        if c.nopm.is_some() { delta_columns(c.nopm_delta.as_ref(), c.is_baseline) } else { DeltaColumns::default() };
    let within_noise = match (&c.tps_delta, c.is_baseline) {
        (_, true) => "",
        (Some(d), _) if d.has_interval() => {
            if d.within_noise {
                "true"
            } else {
                "false"
            }
        }
        _ => "unknown",
    };
    SummaryRow {
        placement: &c.key.placement,
        workload: &c.key.workload,
        clients: c.key.clients,
        memory_limit: c.key.memory_limit,
        profile: set.profile_of(&c.key.placement, &c.key.profile),
        runs: c.runs,
        failed_runs: c.failed_runs,
        tps_mean: Fixed(c.tps.mean),
        tps_stdev: Fixed(c.tps.stdev),
        tps_cv_pct: Fixed(c.tps.cv_pct),
        tps_ci95: Fixed(c.tps.ci95),
        latency_ms_mean: Fixed(c.latency_ms.mean),
        latency_ms_stdev: Fixed(c.latency_ms.stdev),
        latency_ms_p99_mean: fixed(c.latency_p99_ms.map(|e| e.mean)),
        tps_delta_pct: td.pct,
        tps_delta_ci95_low_pct: td.low,
        tps_delta_ci95_high_pct: td.high,
        tps_ratio: match c.tps_delta {
            Some(d) => Some(Fixed(d.ratio)),
            None => c.is_baseline.then_some(Fixed(1.0)),
        },
        latency_delta_pct: ld.pct,
        latency_delta_ci95_low_pct: ld.low,
        latency_delta_ci95_high_pct: ld.high,
        within_noise,
        nopm_mean: fixed(c.nopm.map(|e| e.mean)),
        nopm_ci95: fixed(c.nopm.map(|e| e.ci95)),
        nopm_delta_pct: nd.pct,
        nopm_delta_ci95_low_pct: nd.low,
        nopm_delta_ci95_high_pct: nd.high,
        verdict: verdict_of(c.headline().1.as_ref(), c.is_baseline),
        tps_verdict: verdict_of(c.tps_delta.as_ref(), c.is_baseline),
        tps_p_value: p_of(c.tps_delta.map(|d| d.p_value)),
        tps_p_holm: p_of(c.tps_delta.map(|d| d.p_adjusted)),
        delta_method: c.headline().1.map(|d| d.method.as_str()).unwrap_or(""),
        latency_verdict: verdict_of(c.latency_delta.as_ref(), c.is_baseline),
        latency_p99_delta_pct: pd.pct,
        latency_p99_delta_ci95_low_pct: pd.low,
        latency_p99_delta_ci95_high_pct: pd.high,
        latency_p99_verdict: verdict_of(c.latency_p99_delta.as_ref(), c.is_baseline),
        nopm_verdict: if c.nopm.is_some() { verdict_of(c.nopm_delta.as_ref(), c.is_baseline) } else { "" },
        nopm_p_holm: p_of(c.nopm_delta.map(|d| d.p_adjusted)),
        build: set.build_of(&c.key.placement, &c.key.build),
        steady: match contest {
            Some(a) if a.steady => "true",
            Some(_) => "false",
            None => "",
        },
        lag1_autocorrelation: fixed(contest.and_then(|a| a.lag1.get(&c.key.placement).copied())),
        trend_pct_over_kept: fixed(trend.map(|t| t.change_over_span * 100.0)),
        trend_p_value: p_of(trend.map(|t| t.p_value)),
        kept_rounds: contest.map(|a| a.kept),
        rounds_cut: contest.map(|a| a.cut.rounds_dropped()),
        rounds_needed: contest.and_then(|a| a.needed),
        control: match summary.control_of(&c.key) {
            Some(x) if x.moved => "moved",
            Some(_) => "held",
            None => "",
        },
        tps_delta_holm_low_pct: td.holm_low,
        tps_delta_holm_high_pct: td.holm_high,
        latency_delta_holm_low_pct: ld.holm_low,
        latency_delta_holm_high_pct: ld.holm_high,
        latency_p99_delta_holm_low_pct: pd.holm_low,
        latency_p99_delta_holm_high_pct: pd.holm_high,
        nopm_delta_holm_low_pct: nd.holm_low,
        nopm_delta_holm_high_pct: nd.holm_high,
    }
}

/// The machine's state over a run (after the evidence columns): the 1-minute load at its start
/// and end, steal and the CPU used outside the study, % of all CPUs' time. Kept for a failed
/// run too (the machine's, not the run's figures: a busy machine may be why it failed); blank
/// in result sets of older versions and for what a run could not read.
#[derive(Serialize, Default)]
struct MachineColumns {
    load1_start: Option<Fixed<2>>,
    load1_end: Option<Fixed<2>>,
    steal_pct: Option<Fixed<2>>,
    outside_cpu_pct: Option<Fixed<2>>,
}

fn machine_columns(r: &results::RunRecord) -> MachineColumns {
    let Some(m) = &r.machine else { return MachineColumns::default() };
    MachineColumns {
        load1_start: fixed(m.load1_start),
        load1_end: fixed(m.load1_end),
        steal_pct: Some(Fixed(m.steal_pct)),
        outside_cpu_pct: fixed(m.outside_pct),
    }
}

/// A run's evidence columns (blank for a failed run, like its figures).
fn run_evidence(study: &Study, r: &results::RunRecord) -> EvidenceColumns {
    study.runs.get(&r.run_id).map(|e| EvidenceColumns(evidence::columns(e))).unwrap_or_default()
}

/// A cell's evidence: the mean over the runs its figures come from.
fn cell_evidence(study: &Study, c: &CellSummary) -> EvidenceColumns {
    study.cells.get(&c.key).map(|e| EvidenceColumns(evidence::columns(e))).unwrap_or_default()
}

/// The last columns of summary.csv: why the headline figure moved against the baseline, and
/// where the emulated tiers distort that comparison.
#[derive(Serialize, Default)]
struct CauseColumns {
    why: String,
    emulation_note: String,
}

fn cause_columns(set: &ResultSet, study: &Study, c: &CellSummary) -> CauseColumns {
    let baseline = &set.manifest.baseline;
    if c.is_baseline {
        return CauseColumns::default();
    }
    CauseColumns {
        why: study.cause(&c.key, baseline, c.headline().1.as_ref()).unwrap_or_default(),
        emulation_note: {
            let (m, p) = (&set.manifest, &c.key.placement);
            match (analysis::fidelity::note(m, p, baseline), analysis::fidelity::how_far(m, p, baseline)) {
                (Some(_), Some(far)) => format!("emulation cannot reproduce this: {far}"),
                (note, far) => note.or(far).unwrap_or_default(),
            }
        },
    }
}

/// `statements.csv`: one row per statement of the script per cell (pgbench `-r`).
#[derive(Serialize, Default)]
struct StatementRow<'a> {
    placement: &'a str,
    workload: &'a str,
    clients: u32,
    memory_limit: MemoryLabel,
    profile: &'a str,
    /// 1-based position in the script.
    statement_index: usize,
    statement: &'a str,
    runs: usize,
    latency_ms_mean: Fixed<4>,
    latency_ms_ci95: Fixed<4>,
    latency_delta_pct: Option<Fixed<2>>,
    latency_delta_ci95_low_pct: Option<Fixed<2>>,
    latency_delta_ci95_high_pct: Option<Fixed<2>>,
    /// The change's p-value before and after Holm's correction over every statement's change in
    /// the study, its interval after the correction, and its verdict (blank on baseline rows).
    latency_p_value: Option<Fixed<5>>,
    latency_p_holm: Option<Fixed<5>>,
    latency_delta_holm_low_pct: Option<Fixed<2>>,
    latency_delta_holm_high_pct: Option<Fixed<2>>,
    latency_verdict: &'static str,
}

fn statement_rows(summary: &Summary) -> impl Iterator<Item = StatementRow<'_>> {
    summary.cells.iter().flat_map(|c| {
        c.statements.iter().enumerate().map(move |(i, st)| {
            let d = delta_columns(st.delta.as_ref(), c.is_baseline);
            StatementRow {
                placement: &c.key.placement,
                workload: &c.key.workload,
                clients: c.key.clients,
                memory_limit: c.key.memory_limit,
                profile: &c.key.profile,
                statement_index: i + 1,
                statement: &st.statement,
                runs: st.latency_ms.n,
                latency_ms_mean: Fixed(st.latency_ms.mean),
                latency_ms_ci95: Fixed(st.latency_ms.ci95),
                latency_delta_pct: d.pct,
                latency_delta_ci95_low_pct: d.low,
                latency_delta_ci95_high_pct: d.high,
                latency_p_value: p_of(st.delta.map(|d| d.p_value)),
                latency_p_holm: p_of(st.delta.map(|d| d.p_adjusted)),
                latency_delta_holm_low_pct: d.holm_low,
                latency_delta_holm_high_pct: d.holm_high,
                latency_verdict: verdict_of(st.delta.as_ref(), c.is_baseline),
            }
        })
    })
}

/// `series.csv`: one row per second of every run.
#[derive(Serialize, Default)]
struct SeriesRow<'a> {
    run_id: &'a str,
    placement: &'a str,
    workload: &'a str,
    clients: u32,
    repetition: u32,
    t_s: Fixed<1>,
    tps: Fixed<1>,
    latency_ms: Fixed<3>,
    latency_ms_stddev: Option<Fixed<3>>,
    failed: Option<u64>,
}

fn series_rows(set: &ResultSet) -> impl Iterator<Item = SeriesRow<'_>> {
    set.runs.iter().flat_map(|r| {
        r.series.iter().map(move |s| SeriesRow {
            run_id: &r.run_id,
            placement: &r.cell.placement,
            workload: &r.cell.workload,
            clients: r.cell.clients,
            repetition: r.repetition,
            t_s: Fixed(s.t),
            tps: Fixed(s.tps),
            latency_ms: Fixed(s.latency_ms),
            latency_ms_stddev: fixed(s.latency_ms_stddev),
            failed: s.failed,
        })
    })
}

/// `devices.csv`: one row per device per run (from /proc/diskstats).
#[derive(Serialize, Default)]
struct DeviceRow<'a> {
    run_id: &'a str,
    placement: &'a str,
    workload: &'a str,
    clients: u32,
    repetition: u32,
    device: &'a str,
    role: &'a str,
    kernel_name: &'a str,
    read_iops: Fixed<1>,
    write_iops: Fixed<1>,
    read_mb_s: Fixed<2>,
    write_mb_s: Fixed<2>,
    avg_wait_ms: Fixed<3>,
    peak_read_iops: Fixed<1>,
    peak_write_iops: Fixed<1>,
}

fn device_rows(set: &ResultSet) -> impl Iterator<Item = DeviceRow<'_>> {
    set.runs.iter().flat_map(|r| {
        r.devices.iter().map(move |d| DeviceRow {
            run_id: &r.run_id,
            placement: &r.cell.placement,
            workload: &r.cell.workload,
            clients: r.cell.clients,
            repetition: r.repetition,
            device: &d.device,
            role: &d.role,
            kernel_name: &d.kernel_name,
            read_iops: Fixed(d.read_iops),
            write_iops: Fixed(d.write_iops),
            read_mb_s: Fixed(d.read_mb_s),
            write_mb_s: Fixed(d.write_mb_s),
            avg_wait_ms: Fixed(d.avg_wait_ms),
            peak_read_iops: Fixed(d.peak_read_iops),
            peak_write_iops: Fixed(d.peak_write_iops),
        })
    })
}

/// `runs.csv`, `summary.csv`, `series.csv`, `devices.csv` and `statements.csv`.
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn export(&self, set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
        let l = layout();
        // The evidence (and, per cell, the cause of its change; per run, the machine's state) is
        // appended after the columns older readers know.
        let study = Study::of(set, summary);
        let runs = run_rows(set, summary)
            .zip(set.runs.iter())
            .map(|(row, r)| (row, run_evidence(&study, r), machine_columns(r)));
        let cells = summary
            .cells
            .iter()
            .map(|c| (summary_row(set, c, summary), cell_evidence(&study, c), cause_columns(set, &study, c)));
        let mut out = vec![
            Output::bytes(l.devices_csv(), csv_bytes(device_rows(set))),
            Output::bytes(l.runs_csv(), csv_bytes(runs)),
            Output::bytes(l.summary_csv(), csv_bytes(cells)),
            Output::bytes(l.series_csv(), csv_bytes(series_rows(set))),
            Output::bytes(l.statements_csv(), csv_bytes(statement_rows(summary))),
        ];
        if let Some(x) = &summary.contrast {
            out.push(Output::bytes(l.contrast_csv(), csv_bytes(super::contrast::rows(x))));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<R: Serialize + Default>() -> String {
        String::from_utf8(csv_bytes(std::iter::empty::<R>())).unwrap()
    }

    #[test]
    fn empty_tables_still_have_their_header() {
        assert_eq!(
            header::<SeriesRow>(),
            "run_id,placement,workload,clients,repetition,t_s,tps,latency_ms,latency_ms_stddev,failed\n"
        );
        let runs = header::<RunRow>();
        assert_eq!(runs.matches(',').count(), 33, "34 columns in runs.csv");
        assert!(runs.trim_end().ends_with("failure,failure_kind,build,segment,kept"), "new columns at the end");
        let summary = header::<SummaryRow>();
        assert_eq!(summary.matches(',').count(), 55, "56 columns in summary.csv");
        assert!(
            summary.trim_end().ends_with(
                "rounds_needed,control,tps_delta_holm_low_pct,tps_delta_holm_high_pct,latency_delta_holm_low_pct,latency_delta_holm_high_pct,latency_p99_delta_holm_low_pct,latency_p99_delta_holm_high_pct,nopm_delta_holm_low_pct,nopm_delta_holm_high_pct"
            ),
            "new columns at the end"
        );
    }

    #[test]
    fn fixed_numbers_and_blanks() {
        #[derive(Serialize, Default)]
        struct Row {
            a: Fixed<2>,
            b: Option<Fixed<3>>,
            c: Fixed<1>,
            d: Option<u64>,
        }
        let rows = [Row { a: Fixed(12.3456), b: Some(Fixed(-2.0)), c: Fixed(f64::NAN), d: None }];
        assert_eq!(String::from_utf8(csv_bytes(rows)).unwrap(), "a,b,c,d\n12.35,-2.000,,\n");
    }

    #[test]
    fn baseline_and_unknown_delta_columns() {
        let base = delta_columns(None, true);
        assert_eq!((base.pct, base.low, base.high), (Some(Fixed(0.0)), None, None));
        let unknown = delta_columns(None, false);
        assert_eq!((unknown.pct, unknown.low), (None, None));
    }
}
