//! The study's own contrast: when a study measures one placement and varies something else
//! (a PostgreSQL build, a settings profile, a memory limit or the client count), each cell is
//! compared with the same cell under that dimension's reference value (the default profile, the
//! first build, no memory limit, the fewest clients), with intervals and verdicts, as
//! placements are compared with the baseline.
//!
//! The cells of two values ran as separate runs (no round puts them side by side), so a change is
//! the ratio of geometric means with Welch's t on the logarithms of the two cells' runs
//! ([`Delta::between`]): an interval that assumes the runs of each cell independent of each
//! other and of the other cell's. Holm's correction runs over the contrast's changes of each
//! figure ([`analysis::adjust_and_classify`]), then the verdict against the equivalence margin.

use std::collections::BTreeMap;

use results::record::CellKey;
use serde::Serialize;

use crate::cell::CellSummary;
use crate::contest::{self as analysis, Figure};
use stats::{Delta, Estimate};

/// What a study varies besides the placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dimension {
    Build,
    Profile,
    MemoryLimit,
    Clients,
}

impl Dimension {
    /// In the order a contrast is chosen: the first that varies is the study's.
    pub const ALL: [Dimension; 4] = [Dimension::Build, Dimension::Profile, Dimension::MemoryLimit, Dimension::Clients];

    /// `profile`, `build`, `memory limit`, `client count`.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Build => "build",
            Dimension::Profile => "profile",
            Dimension::MemoryLimit => "memory limit",
            Dimension::Clients => "client count",
        }
    }

    /// A cell's value of the dimension, as the report prints it.
    pub fn value(self, k: &CellKey) -> String {
        match self {
            Dimension::Build => k.build.clone(),
            Dimension::Profile => k.profile.clone(),
            Dimension::MemoryLimit => k.memory_limit.to_string(),
            Dimension::Clients => k.clients.to_string(),
        }
    }

    /// `profile default`, `2 clients`.
    pub fn describe(self, value: &str) -> String {
        match self {
            Dimension::Clients => format!("{value} clients"),
            Dimension::MemoryLimit => format!("memory {value}"),
            _ => format!("{} {value}", self.name()),
        }
    }

    /// The key without this dimension: what the cells of one comparison share.
    fn rest(self, k: &CellKey) -> (String, String, u32, String, String, String) {
        let mut r = (
            k.placement.clone(),
            k.workload.clone(),
            k.clients,
            k.memory_limit.to_string(),
            k.profile.clone(),
            k.build.clone(),
        );
        match self {
            Dimension::Build => r.5.clear(),
            Dimension::Profile => r.4.clear(),
            Dimension::MemoryLimit => r.3.clear(),
            Dimension::Clients => r.2 = 0,
        }
        r
    }
}

/// How the contrast's intervals are formed, as the report states it.
pub const ASSUMPTION: &str = "the cells of two values ran as separate runs, not side by side in rounds, so each change is the ratio of the two cells' geometric means with a Welch t interval on the logarithms of their runs (the interval assumes the runs independent; a drift of the machine between runs widens the spread but is not removed by pairing)";

/// One cell against the same cell under the reference value.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub cell: CellKey,
    pub reference: CellKey,
    pub tps: Option<Delta>,
    pub latency: Option<Delta>,
    pub latency_p99: Option<Delta>,
    pub nopm: Option<Delta>,
}

impl Change {
    /// NOPM's change for TPC-C, TPS's otherwise, with the figure's short name.
    pub fn headline(&self) -> (Option<Delta>, &'static str) {
        match self.nopm {
            Some(d) => (Some(d), "NOPM"),
            None => (self.tps, "TPS"),
        }
    }
}

/// The study's contrast: its dimension, the reference value and every change against it.
#[derive(Clone, Debug, Serialize)]
pub struct Contrast {
    pub dimension: Dimension,
    pub reference: String,
    /// Every value, the reference first.
    pub values: Vec<String>,
    pub changes: Vec<Change>,
    /// The changes with an interval per figure: the families Holm's correction ran over.
    pub tests: BTreeMap<Figure, usize>,
}

impl Contrast {
    /// The change of a cell against its reference (None for a reference cell or one without it).
    pub fn change_of(&self, k: &CellKey) -> Option<&Change> {
        self.changes.iter().find(|c| &c.cell == k)
    }

    /// Whether a cell holds the reference value.
    pub fn is_reference(&self, k: &CellKey) -> bool {
        self.dimension.value(k) == self.reference
    }
}

/// The study's contrast over the summary's cells: None when the study compares placements
/// (more than one) or varies nothing else.
pub fn of(cells: &[CellSummary], margin_pct: f64) -> Option<Contrast> {
    let first = cells.first()?;
    if cells.iter().any(|c| c.key.placement != first.key.placement) {
        return None;
    }
    let (dimension, values) = Dimension::ALL.into_iter().find_map(|d| {
        let values = values_of(cells, d);
        (values.len() > 1).then_some((d, values))
    })?;
    let reference = values[0].clone();
    let mut changes = Vec::new();
    for c in cells.iter().filter(|c| dimension.value(&c.key) != reference) {
        let rest = dimension.rest(&c.key);
        let Some(r) = cells.iter().find(|r| dimension.value(&r.key) == reference && dimension.rest(&r.key) == rest)
        else {
            continue;
        };
        let between = |a: Option<Estimate>, b: Option<Estimate>| Delta::between(&a?, &b?);
        changes.push(Change {
            cell: c.key.clone(),
            reference: r.key.clone(),
            tps: Delta::between(&r.tps, &c.tps),
            latency: Delta::between(&r.latency_ms, &c.latency_ms),
            latency_p99: between(r.latency_p99_ms, c.latency_p99_ms),
            nopm: between(r.nopm, c.nopm),
        });
    }
    let mut family: Vec<(Figure, &mut Delta)> = Vec::new();
    for ch in changes.iter_mut() {
        for (f, d) in [
            (Figure::Tps, &mut ch.tps),
            (Figure::Latency, &mut ch.latency),
            (Figure::LatencyP99, &mut ch.latency_p99),
            (Figure::Nopm, &mut ch.nopm),
        ] {
            if let Some(d) = d.as_mut() {
                family.push((f, d));
            }
        }
    }
    let tests = analysis::adjust_and_classify(&mut family, margin_pct);
    Some(Contrast { dimension, reference, values, changes, tests })
}

/// In a contrast study, each statement's change is against the same statement of the cell's
/// reference cell (as the cell's figures are), not against the baseline placement, which is the
/// only placement. All of them are one Holm family, as the study's statements are.
pub(crate) fn fill_statement_deltas(cells: &mut [CellSummary], contrast: &mut Contrast, margin_pct: f64) {
    let mut found: Vec<(usize, usize, Delta)> = Vec::new();
    for ch in &contrast.changes {
        let Some(reference) = cells.iter().find(|c| c.key == ch.reference) else { continue };
        let Some(i) = cells.iter().position(|c| c.key == ch.cell) else { continue };
        for (j, st) in cells[i].statements.iter().enumerate() {
            let d = reference
                .statements
                .iter()
                .find(|r| r.statement == st.statement)
                .and_then(|r| Delta::between(&r.latency_ms, &st.latency_ms));
            if let Some(d) = d {
                found.push((i, j, d));
            }
        }
    }
    // Every statement's change of the contrast is one family, as the study's are.
    let mut family: Vec<&mut Delta> = found.iter_mut().map(|(_, _, d)| d).collect();
    let n = analysis::judge_family(&mut family, margin_pct);
    if n > 0 {
        contrast.tests.insert(Figure::StatementLatency, n);
    }
    for c in cells.iter_mut().filter(|c| contrast.changes.iter().any(|ch| ch.cell == c.key)) {
        for st in &mut c.statements {
            st.delta = None;
        }
    }
    for (i, j, d) in found {
        cells[i].statements[j].delta = Some(d);
    }
}

/// The dimension's values in the cells, the reference first: the default profile, the default
/// build (else the first), no memory limit (else the first), the fewest clients.
fn values_of(cells: &[CellSummary], d: Dimension) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    for c in cells {
        let v = d.value(&c.key);
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let reference = match d {
        Dimension::Build => values.iter().position(|v| v == results::record::DEFAULT_BUILD),
        Dimension::Profile => values.iter().position(|v| v == "default"),
        Dimension::MemoryLimit => values.iter().position(|v| v == "unlimited"),
        Dimension::Clients => {
            values.sort_by_key(|v| v.parse::<u32>().unwrap_or(u32::MAX));
            None
        }
    };
    if let Some(i) = reference {
        let v = values.remove(i);
        values.insert(0, v);
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::record::MemoryLabel;
    use stats::Verdict;

    fn cell(profile: &str, clients: u32, tps: &[f64]) -> CellSummary {
        let e = Estimate::of(tps).unwrap();
        let lat: Vec<f64> = tps.iter().map(|t| 1000.0 / t).collect();
        CellSummary {
            key: CellKey {
                placement: "nvme".into(),
                workload: "tpcb".into(),
                clients,
                memory_limit: MemoryLabel::Unlimited,
                profile: profile.into(),
                build: results::record::DEFAULT_BUILD.into(),
            },
            is_baseline: true,
            runs: tps.len(),
            failed_runs: 0,
            tps: e,
            latency_ms: Estimate::of(&lat).unwrap(),
            latency_p99_ms: None,
            tps_delta: None,
            latency_delta: None,
            latency_p99_delta: None,
            nopm: None,
            nopm_delta: None,
            statements: vec![],
        }
    }

    #[test]
    fn statements_change_against_the_reference_cell() {
        let e = |x: f64| x.exp() * 1000.0;
        let statement = |text: &str, ms: &[f64]| crate::cell::StatementSummary {
            statement: text.into(),
            latency_ms: Estimate::of(ms).unwrap(),
            delta: None,
        };
        let mut cells =
            vec![cell("default", 2, &[e(-0.1), e(0.0), e(0.1)]), cell("tuned", 2, &[e(0.1), e(0.2), e(0.3)])];
        // The same logs as below, as latencies: tuned's UPDATE takes e^0.2 times as long.
        cells[0].statements =
            vec![statement("UPDATE", &[e(-0.1), e(0.0), e(0.1)]), statement("END;", &[1.0, 1.0, 1.0])];
        cells[1].statements = vec![statement("UPDATE", &[e(0.1), e(0.2), e(0.3)])];
        let mut c = of(&cells, 2.0).unwrap();
        fill_statement_deltas(&mut cells, &mut c, 2.0);
        assert!(cells[0].statements.iter().all(|s| s.delta.is_none()), "the reference has no change");
        let d = cells[1].statements[0].delta.expect("against default's UPDATE");
        assert!((d.pct - 22.140).abs() < 1e-3 && (d.pct_low + 2.634).abs() < 1e-3, "{d:?}");
        assert_eq!(c.tests.get(&Figure::StatementLatency), Some(&1), "the statements are a family of their own");
    }

    #[test]
    fn a_profile_contrast_has_welchs_interval_on_the_logs() {
        // Logs of the default cell: -0.1, 0, +0.1 (mean 0, sd 0.1); of the tuned cell: 0.1, 0.2,
        // 0.3 (mean 0.2, sd 0.1). Welch: se = sqrt(0.01/3 + 0.01/3) = 0.081650, df = 4,
        // t(0.975, 4) = 2.776445 (tables), half-width 0.226696: change e^0.2 - 1 = +22.140%,
        // interval [e^-0.026696 - 1, e^0.426696 - 1] = [-2.634%, +53.219%]; t = 2.449490, two-sided
        // p = 0.0705 (tables: between 0.05 at 2.776 and 0.10 at 2.132).
        let e = |x: f64| x.exp() * 1000.0;
        let cells = vec![
            cell("default", 2, &[e(-0.1), e(0.0), e(0.1)]),
            cell("tuned", 2, &[e(0.1), e(0.2), e(0.3)]),
            cell("default", 1, &[500.0, 510.0, 490.0]),
            cell("tuned", 1, &[500.0, 505.0, 495.0]),
        ];
        let c = of(&cells, 2.0).expect("one placement, two profiles");
        assert_eq!(
            (c.dimension, c.reference.as_str(), c.values.clone()),
            (Dimension::Profile, "default", vec!["default".to_string(), "tuned".to_string()])
        );
        assert_eq!(c.changes.len(), 2, "one per client count");
        let ch = c.change_of(&cells[1].key).unwrap();
        assert_eq!(ch.reference, cells[0].key, "the same cell under the default profile");
        let d = ch.tps.unwrap();
        assert!((d.pct - 22.140).abs() < 1e-3, "{d:?}");
        assert!((d.df - 4.0).abs() < 1e-9, "{d:?}");
        assert!((d.pct_low + 2.634).abs() < 1e-3 && (d.pct_high - 53.219).abs() < 1e-3, "{d:?}");
        assert!((d.p_value - 0.0705).abs() < 5e-4, "{d:?}");
        assert_eq!(d.verdict, Verdict::Inconclusive, "the interval holds 0");
        // Holm over the two TPS changes: the smaller p-value doubled at most.
        assert_eq!(c.tests[&Figure::Tps], 2);
        assert!(d.p_adjusted >= d.p_value);
        assert!(c.is_reference(&cells[2].key) && c.change_of(&cells[2].key).is_none());
    }

    #[test]
    fn placements_or_nothing_varied_give_no_contrast_and_clients_sort_by_number() {
        let mut two = vec![cell("default", 8, &[1.0, 2.0]), cell("default", 8, &[1.0, 2.0])];
        two[1].key.placement = "pmem".into();
        assert!(of(&two, 2.0).is_none(), "placements are the study's contrast");
        assert!(of(&[cell("default", 8, &[1.0, 2.0])], 2.0).is_none());
        let sweep =
            [cell("default", 16, &[1.0, 2.0]), cell("default", 2, &[1.0, 2.0]), cell("default", 10, &[1.0, 2.0])];
        let c = of(&sweep, 2.0).unwrap();
        assert_eq!(
            (c.dimension, c.values.clone()),
            (Dimension::Clients, vec!["2".to_string(), "10".into(), "16".into()])
        );
        assert_eq!(c.changes.len(), 2);
    }
}
