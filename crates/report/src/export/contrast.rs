//! `contrast.csv`: the study's own contrast ([`analysis::contrast`]), one row per cell against the
//! same cell under the reference value, each figure's change with its 95% interval, p-values
//! before and after Holm's correction and the verdict; written only when the study has one.

use serde::Serialize;

use super::csv::Fixed;
use analysis::contrast::{Change, Contrast};
use stats::Delta;

/// One row of contrast.csv (field order = column order).
#[derive(Serialize, Default)]
pub(crate) struct ContrastRow {
    dimension: &'static str,
    value: String,
    reference: String,
    placement: String,
    workload: String,
    clients: u32,
    memory_limit: String,
    profile: String,
    tps_delta_pct: Option<Fixed<2>>,
    tps_delta_ci95_low_pct: Option<Fixed<2>>,
    tps_delta_ci95_high_pct: Option<Fixed<2>>,
    tps_p_value: Option<Fixed<5>>,
    tps_p_adjusted: Option<Fixed<5>>,
    tps_verdict: &'static str,
    latency_delta_pct: Option<Fixed<2>>,
    latency_delta_ci95_low_pct: Option<Fixed<2>>,
    latency_delta_ci95_high_pct: Option<Fixed<2>>,
    latency_verdict: &'static str,
    nopm_delta_pct: Option<Fixed<2>>,
    nopm_delta_ci95_low_pct: Option<Fixed<2>>,
    nopm_delta_ci95_high_pct: Option<Fixed<2>>,
    nopm_verdict: &'static str,
    /// `welch-log`: the two cells' runs taken as independent samples.
    method: &'static str,
    /// Each change's interval after Holm's correction over the contrast's changes of its figure
    /// (the one that goes with the verdict; equal to the 95% one for a family of one).
    tps_delta_holm_low_pct: Option<Fixed<2>>,
    tps_delta_holm_high_pct: Option<Fixed<2>>,
    latency_delta_holm_low_pct: Option<Fixed<2>>,
    latency_delta_holm_high_pct: Option<Fixed<2>>,
    nopm_delta_holm_low_pct: Option<Fixed<2>>,
    nopm_delta_holm_high_pct: Option<Fixed<2>>,
    /// The p99 latency's change, as summary.csv has it: its 95% interval, its verdict and its
    /// interval after Holm's correction over the contrast's p99 changes (blank when the runs did
    /// not report a p99).
    latency_p99_delta_pct: Option<Fixed<2>>,
    latency_p99_delta_ci95_low_pct: Option<Fixed<2>>,
    latency_p99_delta_ci95_high_pct: Option<Fixed<2>>,
    latency_p99_verdict: &'static str,
    latency_p99_delta_holm_low_pct: Option<Fixed<2>>,
    latency_p99_delta_holm_high_pct: Option<Fixed<2>>,
}

fn holm(d: Option<&Delta>) -> (Option<Fixed<2>>, Option<Fixed<2>>) {
    match d {
        Some(d) => (Some(Fixed(d.holm_low)), Some(Fixed(d.holm_high))),
        None => (None, None),
    }
}

fn cols(d: Option<&Delta>) -> (Option<Fixed<2>>, Option<Fixed<2>>, Option<Fixed<2>>, &'static str) {
    match d {
        Some(d) => (Some(Fixed(d.pct)), Some(Fixed(d.pct_low)), Some(Fixed(d.pct_high)), d.verdict.as_str()),
        None => (None, None, None, ""),
    }
}

fn row(x: &Contrast, c: &Change) -> ContrastRow {
    let (tps, tps_low, tps_high, tps_verdict) = cols(c.tps.as_ref());
    let (lat, lat_low, lat_high, latency_verdict) = cols(c.latency.as_ref());
    let (nopm, nopm_low, nopm_high, nopm_verdict) = cols(c.nopm.as_ref());
    let (p99, p99_low, p99_high, latency_p99_verdict) = cols(c.latency_p99.as_ref());
    ContrastRow {
        dimension: x.dimension.name(),
        value: x.dimension.value(&c.cell),
        reference: x.reference.clone(),
        placement: c.cell.placement.clone(),
        workload: c.cell.workload.clone(),
        clients: c.cell.clients,
        memory_limit: c.cell.memory_limit.to_string(),
        profile: c.cell.profile.clone(),
        tps_delta_pct: tps,
        tps_delta_ci95_low_pct: tps_low,
        tps_delta_ci95_high_pct: tps_high,
        tps_p_value: c.tps.map(|d| Fixed(d.p_value)),
        tps_p_adjusted: c.tps.map(|d| Fixed(d.p_adjusted)),
        tps_verdict,
        latency_delta_pct: lat,
        latency_delta_ci95_low_pct: lat_low,
        latency_delta_ci95_high_pct: lat_high,
        latency_verdict,
        nopm_delta_pct: nopm,
        nopm_delta_ci95_low_pct: nopm_low,
        nopm_delta_ci95_high_pct: nopm_high,
        nopm_verdict,
        method: c.headline().0.map_or("", |d| d.method.as_str()),
        tps_delta_holm_low_pct: holm(c.tps.as_ref()).0,
        tps_delta_holm_high_pct: holm(c.tps.as_ref()).1,
        latency_delta_holm_low_pct: holm(c.latency.as_ref()).0,
        latency_delta_holm_high_pct: holm(c.latency.as_ref()).1,
        nopm_delta_holm_low_pct: holm(c.nopm.as_ref()).0,
        nopm_delta_holm_high_pct: holm(c.nopm.as_ref()).1,
        latency_p99_delta_pct: p99,
        latency_p99_delta_ci95_low_pct: p99_low,
        latency_p99_delta_ci95_high_pct: p99_high,
        latency_p99_verdict,
        latency_p99_delta_holm_low_pct: holm(c.latency_p99.as_ref()).0,
        latency_p99_delta_holm_high_pct: holm(c.latency_p99.as_ref()).1,
    }
}

/// Every change of the contrast, in its order.
pub(crate) fn rows(x: &Contrast) -> Vec<ContrastRow> {
    x.changes.iter().map(|c| row(x, c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::contrast::Dimension;
    use results::record::{CellKey, MemoryLabel};
    use stats::{Method, Verdict};

    fn d(pct: f64, (lo, hi): (f64, f64), (holm_lo, holm_hi): (f64, f64), verdict: Verdict) -> Delta {
        Delta {
            pct,
            ratio: 1.0 + pct / 100.0,
            pct_low: lo,
            pct_high: hi,
            p_value: 0.01,
            p_adjusted: 0.03,
            holm_low: holm_lo,
            holm_high: holm_hi,
            se: f64::NAN,
            df: 4.0,
            method: Method::WelchLog,
            within_noise: false,
            verdict,
        }
    }

    fn key(profile: &str) -> CellKey {
        CellKey {
            placement: "nvme".into(),
            workload: "tpcb".into(),
            clients: 2,
            memory_limit: MemoryLabel::Unlimited,
            profile: profile.into(),
            build: results::record::DEFAULT_BUILD.into(),
        }
    }

    /// contrast.csv has the p99 latency's change, interval, verdict and interval after Holm, as
    /// summary.csv has them, each in its own column.
    #[test]
    fn the_p99_latency_change_has_its_columns() {
        let x = Contrast {
            dimension: Dimension::Profile,
            reference: "default".into(),
            values: vec!["default".into(), "tuned".into()],
            changes: vec![Change {
                cell: key("tuned"),
                reference: key("default"),
                tps: Some(d(10.0, (2.0, 18.0), (1.0, 19.0), Verdict::RealChange)),
                latency: Some(d(-9.0, (-15.0, -2.0), (-16.0, -1.0), Verdict::RealChange)),
                latency_p99: Some(d(-20.0, (-30.0, -8.5), (-33.25, -4.75), Verdict::RealChange)),
                nopm: None,
            }],
            tests: Default::default(),
        };
        let text = String::from_utf8(super::super::csv::csv_bytes(rows(&x))).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| {
            let i = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}: {header:?}"));
            row[i]
        };
        assert_eq!(col("latency_p99_delta_pct"), "-20.00");
        assert_eq!(col("latency_p99_delta_ci95_low_pct"), "-30.00");
        assert_eq!(col("latency_p99_delta_ci95_high_pct"), "-8.50");
        assert_eq!(col("latency_p99_verdict"), "real change");
        assert_eq!(col("latency_p99_delta_holm_low_pct"), "-33.25");
        assert_eq!(col("latency_p99_delta_holm_high_pct"), "-4.75");
        assert!(
            text.lines().next().unwrap().ends_with(
                ",nopm_delta_holm_high_pct,latency_p99_delta_pct,latency_p99_delta_ci95_low_pct,latency_p99_delta_ci95_high_pct,latency_p99_verdict,latency_p99_delta_holm_low_pct,latency_p99_delta_holm_high_pct"
            ),
            "new columns at the end: {text}"
        );
    }
}
