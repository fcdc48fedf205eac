//! How deltas are computed from a result set's runs: paired by round for the `slices` design
//! (the estimator of [`crate::rounds`]: a warm-up cut by round, Stein's pilot, an interval
//! corrected for correlated rounds, a steady-state check), from independent runs for the
//! `runs` design; then
//! Holm's correction over every delta of the same figure and the three-way verdict against the
//! experiment's equivalence margin.

use std::collections::BTreeMap;

use results::record::{CellKey, MemoryLabel, RunRecord};
use serde::Serialize;

use stats::rounds::{self, Cut, Progress, Round, Rule, Trend};
use stats::{Delta, Estimate, Method, Verdict, holm};

/// A figure of a run that deltas are computed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    Tps,
    Latency,
    LatencyP99,
    Nopm,
    /// The average latency of one statement of the script (pgbench `-r`): every statement of
    /// every cell is one family.
    StatementLatency,
}

impl Figure {
    pub const ALL: [Figure; 5] =
        [Figure::Tps, Figure::Latency, Figure::LatencyP99, Figure::Nopm, Figure::StatementLatency];

    /// The figure of a run; a statement's latency needs its statement ([`statement_latency`]).
    pub fn of(self, r: &RunRecord) -> Option<f64> {
        match self {
            Figure::Tps => Some(r.metrics.tps),
            Figure::Latency => Some(r.metrics.latency_ms_avg),
            Figure::LatencyP99 => r.metrics.latency_ms_p99,
            Figure::Nopm => r.metrics.nopm,
            Figure::StatementLatency => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Figure::Tps => "throughput (TPS)",
            Figure::Latency => "average latency",
            Figure::LatencyP99 => "p99 latency",
            Figure::Nopm => "NOPM",
            Figure::StatementLatency => "statement latency",
        }
    }
}

/// A statement's average latency in a run (pgbench `-r`), by its text.
pub fn statement_latency(r: &RunRecord, statement: &str) -> Option<f64> {
    r.statements.iter().find(|x| x.statement == statement).map(|x| x.latency_ms)
}

/// How a result set's deltas were computed, said in the report.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// `slices` or `runs`.
    pub design: results::manifest::Design,
    pub method: Method,
    pub equivalence_margin_pct: f64,
    /// Deltas with an interval per figure: the family Holm's correction runs over.
    pub tests: BTreeMap<Figure, usize>,
    /// Leading rounds the warm-up cut dropped per contest (slices only; contests with none are
    /// left out).
    pub dropped_rounds: BTreeMap<String, usize>,
    /// Slices: the rule the rounds were estimated by.
    pub rule: Option<Rule>,
    /// Slices: each contest's cut, steady-state check and serial correlation.
    pub contests: BTreeMap<String, ContestAnalysis>,
}

impl Analysis {
    pub fn paired(&self) -> bool {
        self.method == Method::PairedLog
    }

    /// Whether a successful run counts in the estimate: always for the runs design; for slices,
    /// unless the warm-up cut of its contest left its round out.
    pub fn counts(&self, r: &RunRecord) -> bool {
        self.contests
            .get(&contest_of(&r.cell))
            .is_none_or(|c| c.cut.keeps(&Round { segment: r.segment, round: r.repetition, log_ratio: 0.0 }))
    }

    /// Whether the contest of a cell passed the steady-state check (true for the runs design).
    pub fn steady(&self, k: &CellKey) -> bool {
        self.contests.get(&contest_of(k)).is_none_or(|c| c.steady)
    }
}

/// What the slices estimator found in one contest (the headline figure's per-round ratios).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ContestAnalysis {
    pub cut: Cut,
    /// Every contender's kept rounds passed the steady-state check, no segment stayed
    /// unsettled, and no segment's warm-up cut was long (`cut.long_warm_up`).
    pub steady: bool,
    /// Per contender: the lag-1 autocorrelation of its kept per-round log ratios, and its trend
    /// over the kept rounds (change over the span, p-value).
    pub lag1: BTreeMap<String, f64>,
    pub trend: BTreeMap<String, Trend>,
    /// Per contender whose rounds from the fixed cut on still follow a warm-up curve: the bias
    /// it puts on the kept rounds' mean, as a fraction of the ratio (the rule's warm-up check).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub warm_up_left: BTreeMap<String, f64>,
    /// Per contender: the drift of its kept rounds on the log scale (the trend's change over
    /// them plus a leftover warm-up's bias; [`stats::rounds::Assessment::drift`]).
    pub drift: BTreeMap<String, f64>,
    /// Kept rounds (the fewest of any contender) and what Stein's rule asked for.
    pub kept: usize,
    pub needed: Option<usize>,
    /// The round-to-round correlation the contest's intervals assumed: its workload's prior, or
    /// None when each interval estimated its own (issue 24's estimator).
    pub rho_prior: Option<f64>,
    /// The offset between server lives the intervals allowed for (sd on the log ratio): its
    /// workload's prior, or None (the estimators before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub life_sd: Option<f64>,
}

impl ContestAnalysis {
    /// The contenders whose kept rounds trend at the steady check's level
    /// ([`rounds::TREND_ALPHA`], Bonferroni over the contenders).
    pub fn trending(&self) -> impl Iterator<Item = (&String, &Trend)> {
        let alpha = rounds::TREND_ALPHA / self.trend.len().max(1) as f64;
        self.trend.iter().filter(move |(_, t)| t.p_value < alpha)
    }
}

/// A slices rule and the priors each contest of it gets (a result set's:
/// [`crate::model::rules_of`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub rule: Rule,
    pub priors: crate::priors::Priors,
}

/// The rule for the contest of cell `k`: its workload's priors, for servers whose memory is
/// limited or not.
fn rule_for(rules: &Rules, k: &CellKey) -> Rule {
    rules.rule.with_prior(&rules.priors.of(&k.workload), k.memory_limit != MemoryLabel::Unlimited)
}

/// The cells that differ only in placement, measured against each other.
pub fn contest_of(k: &CellKey) -> String {
    let build = if k.build == results::record::DEFAULT_BUILD { String::new() } else { format!(" {}", k.build) };
    format!("{} c{} mem {} {}{build}", k.workload, k.clients, k.memory_limit, k.profile)
}

/// The successful runs of each cell ordered by round, with the rounds of a slices contest's
/// warm-up cut left out (`rule` given: by round within each segment, alike for every placement
/// of the contest; see [`rounds::warm_up_cut`]), and what the estimator found per contest.
pub fn usable_runs<'a>(
    ok: &BTreeMap<CellKey, Vec<&'a RunRecord>>,
    baseline: &str,
    rule: Option<&Rules>,
) -> (BTreeMap<CellKey, Vec<&'a RunRecord>>, BTreeMap<String, ContestAnalysis>) {
    let mut out: BTreeMap<CellKey, Vec<&RunRecord>> =
        ok.iter().map(|(k, v)| (k.clone(), sorted_by_repetition(v))).collect();
    let mut contests = BTreeMap::new();
    let Some(rule) = rule else { return (out, contests) };
    let mut members: BTreeMap<String, Vec<CellKey>> = BTreeMap::new();
    for k in out.keys().filter(|k| k.placement != baseline && out.contains_key(&k.with_placement(baseline))) {
        members.entry(contest_of(k)).or_default().push(k.clone());
    }
    for (name, cells) in &members {
        let rule = &rule_for(rule, &cells[0]);
        let base = &out[&cells[0].with_placement(baseline)];
        let series: Vec<Vec<Round>> =
            cells.iter().map(|k| ratio_rounds(base, &out[k], headline_figure(&out[k]))).collect();
        let cut = rounds::warm_up_cut(rule, &series);
        let p = rounds::progress_with(rule, &series, &cut);
        let mut c = ContestAnalysis {
            steady: p.steady.iter().all(|s| *s),
            kept: p.kept,
            needed: p.needed,
            rho_prior: rule.rho_prior,
            life_sd: rule.life_sd,
            ..Default::default()
        };
        for (k, rounds) in cells.iter().zip(&series) {
            let a = rounds::assess(rule, rounds, &cut, cells.len());
            c.lag1.insert(k.placement.clone(), a.interval.map_or(f64::NAN, |i| i.lag1));
            if let Some(t) = a.trend {
                c.trend.insert(k.placement.clone(), t);
            }
            if let Some(bias) = a.warm_up_bias {
                c.warm_up_left.insert(k.placement.clone(), bias.exp_m1());
            }
            c.drift.insert(k.placement.clone(), a.drift());
        }
        c.cut = cut;
        contests.insert(name.clone(), c);
    }
    for (k, runs) in out.iter_mut() {
        if let Some(c) = contests.get(&contest_of(k)) {
            runs.retain(|r| c.cut.keeps(&Round { segment: r.segment, round: r.repetition, log_ratio: 0.0 }));
        }
    }
    (out, contests)
}

/// The per-round log ratios of a contender against the baseline, in round order.
fn ratio_rounds(base: &[&RunRecord], cont: &[&RunRecord], f: Figure) -> Vec<Round> {
    ratio_rounds_of(base, cont, &|r| f.of(r))
}

/// [`ratio_rounds`] of any figure of a run.
fn ratio_rounds_of(base: &[&RunRecord], cont: &[&RunRecord], value: &dyn Fn(&RunRecord) -> Option<f64>) -> Vec<Round> {
    cont.iter()
        .filter_map(|c| {
            let b = base.iter().find(|b| b.repetition == c.repetition && b.segment == c.segment)?;
            let (b, v) = (value(b)?, value(c)?);
            (b > 0.0 && v > 0.0).then(|| Round { segment: c.segment, round: c.repetition, log_ratio: (v / b).ln() })
        })
        .collect()
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

/// The estimate of a figure over a cell's runs, when every run has it.
pub fn estimate(runs: &[&RunRecord], f: Figure) -> Option<Estimate> {
    let v: Vec<f64> = runs.iter().filter_map(|r| f.of(r)).collect();
    if v.len() == runs.len() { Estimate::of(&v) } else { None }
}

/// The change of a figure from the baseline's runs to the contender's: with a slices `rule`,
/// from the per-round ratios (paired by round, the interval of [`rounds::estimate`]: Stein's
/// pilot and the correction for correlated rounds) when at least two rounds pair up; else from
/// the two samples (Welch on the logs).
pub fn delta(base: &[&RunRecord], cont: &[&RunRecord], f: Figure, rule: Option<&Rules>) -> Option<Delta> {
    delta_of(base, cont, &|r| f.of(r), rule)
}

/// [`delta`] of any figure of a run (a statement's latency): every figure of a study goes
/// through the same rounds, cut, correlation correction and interval.
pub fn delta_of(
    base: &[&RunRecord],
    cont: &[&RunRecord],
    value: &dyn Fn(&RunRecord) -> Option<f64>,
    rule: Option<&Rules>,
) -> Option<Delta> {
    if let Some(rule) = rule {
        let r = ratio_rounds_of(base, cont, value);
        if r.len() >= 2 {
            let rule = &rule_for(rule, &cont[0].cell);
            let x: Vec<f64> = r.iter().map(|r| r.log_ratio).collect();
            let seg: Vec<u32> = r.iter().map(|r| r.segment).collect();
            let i = rounds::estimate(rule, &x, &seg)?;
            return Some(Delta::from_log(i.mean, i.se, i.df, Method::PairedLog));
        }
    }
    let estimate = |runs: &[&RunRecord]| {
        let v: Vec<f64> = runs.iter().filter_map(|r| value(r)).collect();
        if v.len() == runs.len() { Estimate::of(&v) } else { None }
    };
    Delta::between(&estimate(base)?, &estimate(cont)?)
}

/// The slices contests' progress as the scheduler sees it after a round: the cut, the kept
/// rounds, what Stein's rule asks for and the widest interval (the same estimator as the
/// report's). `runs` holds the contest's successful runs, every placement's.
pub fn contest_progress(runs: &[&RunRecord], baseline: &str, rule: &Rules) -> Option<Progress> {
    let mut by_cell: BTreeMap<CellKey, Vec<&RunRecord>> = BTreeMap::new();
    for r in runs {
        by_cell.entry(r.cell.clone()).or_default().push(r);
    }
    let base_key = by_cell.keys().find(|k| k.placement == baseline)?.clone();
    let base = sorted_by_repetition(&by_cell[&base_key]);
    let series: Vec<Vec<Round>> = by_cell
        .iter()
        .filter(|(k, _)| k.placement != baseline)
        .map(|(_, v)| {
            let v = sorted_by_repetition(v);
            ratio_rounds(&base, &v, headline_figure(&v))
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(rounds::progress(&rule_for(rule, &base_key), &series))
}

/// After the verdicts: a change of a contest that is not steady is neither a real change nor an
/// equivalence on that evidence, unless (`drift` given: the headline figure, whose rounds the
/// drift was measured on) its interval after Holm lies beyond [`stats::rounds::DRIFT_ALLOWANCE`]
/// times the contender's drift on the far side of 0: a change far larger than anything the
/// rounds' movement could account for stays a real change (its contest still warned of).
pub fn withhold_unsteady(d: &mut Delta, steady: bool, drift: Option<f64>) {
    if steady || !matches!(d.verdict, Verdict::RealChange | Verdict::Equivalent) {
        return;
    }
    let log = |pct: f64| (1.0 + pct / 100.0).ln();
    let stands = d.verdict == Verdict::RealChange
        && drift.is_some_and(|drift| rounds::stands_despite_drift(log(d.holm_low), log(d.holm_high), drift));
    if !stands {
        d.verdict = Verdict::NotSteady;
    }
}

/// Holm's correction over each family (all deltas of one figure in the study), then the verdict
/// against the margin. `deltas` holds every delta of the study with its figure.
pub fn adjust_and_classify(deltas: &mut [(Figure, &mut Delta)], margin_pct: f64) -> BTreeMap<Figure, usize> {
    let mut tests = BTreeMap::new();
    for f in Figure::ALL {
        let mut family: Vec<&mut Delta> =
            deltas.iter_mut().filter(|(figure, _)| *figure == f).map(|(_, d)| &mut **d).collect();
        let n = judge_family(&mut family, margin_pct);
        if n > 0 {
            tests.insert(f, n);
        }
    }
    tests
}

/// Holm's correction over one family of changes (each change's p-value adjusted, its interval
/// after Holm), then each change's verdict against the margin; returns the number of tests (the
/// changes with a p-value). The one place Holm's correction is applied.
pub fn judge_family(family: &mut [&mut Delta], margin_pct: f64) -> usize {
    let p: Vec<f64> = family.iter().map(|d| d.p_value).collect();
    let adjusted = holm(&p);
    let n = p.iter().filter(|p| p.is_finite()).count();
    for (d, a) in family.iter_mut().zip(adjusted) {
        **d = d.adjusted(a, n).classified(margin_pct);
    }
    n
}
