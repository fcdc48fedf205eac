//! How deltas are computed from a result set's runs: paired by round for the `slices` design
//! (after MSER-5 cuts a warm-up transient), from independent runs for the `runs` design; then
//! Holm's correction over every delta of the same figure and the three-way verdict against the
//! experiment's equivalence margin.

use std::collections::BTreeMap;

use results::record::{CellKey, RunRecord};
use serde::Serialize;

use crate::stats::{Delta, Estimate, Method, holm, mser5};

/// A figure of a run that deltas are computed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    Tps,
    Latency,
    LatencyP99,
    Nopm,
}

impl Figure {
    pub const ALL: [Figure; 4] = [Figure::Tps, Figure::Latency, Figure::LatencyP99, Figure::Nopm];

    pub fn of(self, r: &RunRecord) -> Option<f64> {
        match self {
            Figure::Tps => Some(r.metrics.tps),
            Figure::Latency => Some(r.metrics.latency_ms_avg),
            Figure::LatencyP99 => r.metrics.latency_ms_p99,
            Figure::Nopm => r.metrics.nopm,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Figure::Tps => "throughput (TPS)",
            Figure::Latency => "average latency",
            Figure::LatencyP99 => "p99 latency",
            Figure::Nopm => "NOPM",
        }
    }
}

/// How a result set's deltas were computed, said in the report.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// `slices` or `runs`.
    pub design: String,
    pub method: Method,
    pub equivalence_margin_pct: f64,
    /// Deltas with an interval per figure: the family Holm's correction runs over.
    pub tests: BTreeMap<Figure, usize>,
    /// Leading rounds MSER-5 dropped per contest (slices only; contests with none are left out).
    pub dropped_rounds: BTreeMap<String, usize>,
}

impl Analysis {
    pub fn paired(&self) -> bool {
        self.method == Method::PairedLog
    }
}

/// The cells that differ only in placement, measured against each other.
pub fn contest_of(k: &CellKey) -> String {
    let build = if k.build == results::record::DEFAULT_BUILD { String::new() } else { format!(" {}", k.build) };
    format!("{} c{} mem {} {}{build}", k.workload, k.clients, k.memory_limit, k.profile)
}

/// The successful runs of each cell, ordered by repetition (round), with the leading rounds a
/// slices contest's warm-up transient took (MSER-5 on the contenders' per-round log ratios of
/// the headline figure) left out.
pub fn usable_runs<'a>(
    ok: &BTreeMap<CellKey, Vec<&'a RunRecord>>,
    baseline: &str,
    paired: bool,
) -> (BTreeMap<CellKey, Vec<&'a RunRecord>>, BTreeMap<String, usize>) {
    let mut out: BTreeMap<CellKey, Vec<&RunRecord>> =
        ok.iter().map(|(k, v)| (k.clone(), sorted_by_repetition(v))).collect();
    let mut dropped = BTreeMap::new();
    if !paired {
        return (out, dropped);
    }
    let mut cuts: BTreeMap<String, usize> = BTreeMap::new();
    for (k, runs) in &out {
        let Some(base) = out.get(&k.with_placement(baseline)).filter(|_| k.placement != baseline) else { continue };
        let figure = headline_figure(runs);
        let series: Vec<f64> = pair_values(base, runs, figure)
            .iter()
            .filter(|(b, c)| *b > 0.0 && *c > 0.0)
            .map(|(b, c)| (c / b).ln())
            .collect();
        let cut = mser5(&series);
        let e = cuts.entry(contest_of(k)).or_default();
        *e = (*e).max(cut);
    }
    for (k, runs) in out.iter_mut() {
        let cut = cuts.get(&contest_of(k)).copied().unwrap_or(0);
        if cut > 0 && cut < runs.len() {
            runs.drain(..cut);
            dropped.insert(contest_of(k), cut);
        }
    }
    (out, dropped)
}

fn sorted_by_repetition<'a>(runs: &[&'a RunRecord]) -> Vec<&'a RunRecord> {
    let mut v = runs.to_vec();
    v.sort_by_key(|r| (r.repetition, r.sequence));
    v
}

/// NOPM for TPC-C runs, TPS otherwise.
pub fn headline_figure(runs: &[&RunRecord]) -> Figure {
    if runs.iter().all(|r| r.metrics.nopm.is_some()) && !runs.is_empty() { Figure::Nopm } else { Figure::Tps }
}

/// (baseline, contender) values of runs of the same repetition (round).
fn pair_values(base: &[&RunRecord], cont: &[&RunRecord], f: Figure) -> Vec<(f64, f64)> {
    cont.iter()
        .filter_map(|c| {
            let b = base.iter().find(|b| b.repetition == c.repetition)?;
            Some((f.of(b)?, f.of(c)?))
        })
        .collect()
}

/// The estimate of a figure over a cell's runs, when every run has it.
pub fn estimate(runs: &[&RunRecord], f: Figure) -> Option<Estimate> {
    let v: Vec<f64> = runs.iter().filter_map(|r| f.of(r)).collect();
    if v.len() == runs.len() { Estimate::of(&v) } else { None }
}

/// The change of a figure from the baseline's runs to the contender's: paired by round when
/// `paired` (and at least two rounds pair up), else from the two samples.
pub fn delta(base: &[&RunRecord], cont: &[&RunRecord], f: Figure, paired: bool) -> Option<Delta> {
    if paired {
        let pairs = pair_values(base, cont, f);
        if pairs.len() >= 2 {
            return Delta::paired(&pairs);
        }
    }
    Delta::between(&estimate(base, f)?, &estimate(cont, f)?)
}

/// Holm's correction over each family (all deltas of one figure in the study), then the verdict
/// against the margin. `deltas` holds every delta of the study with its figure.
pub fn adjust_and_classify(deltas: &mut [(Figure, &mut Delta)], margin_pct: f64) -> BTreeMap<Figure, usize> {
    let mut tests = BTreeMap::new();
    for f in Figure::ALL {
        let idx: Vec<usize> = (0..deltas.len()).filter(|&i| deltas[i].0 == f).collect();
        let p: Vec<f64> = idx.iter().map(|&i| deltas[i].1.p_value).collect();
        let adjusted = holm(&p);
        let n = p.iter().filter(|p| p.is_finite()).count();
        if n > 0 {
            tests.insert(f, n);
        }
        for (j, &i) in idx.iter().enumerate() {
            let d = &mut *deltas[i].1;
            d.p_adjusted = adjusted[j];
            *d = d.classified(margin_pct);
        }
    }
    tests
}
