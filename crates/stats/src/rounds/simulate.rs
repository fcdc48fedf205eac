//! The coverage gate of the whole estimator: synthetic contests with a known ratio, measured
//! round by round under a stopping rule exactly as the scheduler measures them (the warm-up
//! cut, the stopping rule, the interval and the steady-state check all as shipped), counting
//! how often a contender's 95% interval misses the truth while the contest is called steady.
//! A contest has three contenders against its baseline, as the main job has (a real change, a
//! null cell, and a control that is the baseline's twin and warms up with it), and the budget
//! the main job's share gives (16 rounds). `cargo xtask test` runs the gate with a fixed seed;
//! `cargo run --release -p stats --features simulate --example coverage` prints the table behind
//! docs/benchmarks.md ("Coverage").

use super::prior::{self, Prior};
use super::{Round, Rule, lag1};
use crate::{mean_sd, mser5, t975};

mod machines;
pub use machines::{machine_kinds, simulated_calibration};

/// Contenders of a simulated contest (the main job's: two placements under test and the
/// control); placement 0 is the baseline, the last contender the control.
pub const CONTENDERS: usize = 3;
// The types below spell 3 and 4 out: an array length of a const in a struct field, built in a
// closure, gave rustc 1.95 an internal compiler error.
const PLACEMENTS: usize = CONTENDERS + 1;
const CONTROL: usize = CONTENDERS;

/// What the synthetic rounds do besides the known change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Series {
    /// Independent rounds.
    Iid,
    /// Each placement's noise is AR(1) over rounds with this lag-1 correlation.
    Ar1(f64),
    /// The baseline starts slow and warms up: its log throughput is `-amplitude e^(-(t-1)/tau)`
    /// in round t (the contenders' ratios start high). The control, the baseline's twin on the
    /// same kind of device, warms up alike (so its ratio cannot show it).
    WarmUp { amplitude: f64, tau: f64 },
    /// The first contender's log ratio approaches its steady state by `per_round` a round
    /// until round `settles`, flat after; the truth is the steady-state value.
    Drift { per_round: f64, settles: u32 },
    /// The slice in position k of a round gets `offsets[k]` on its log throughput; the order of
    /// the placements is drawn at random each round, which must cancel it.
    Position { offsets: [f64; 4] },
    /// A revisit: every server restarts at round `at`, a new segment: each placement's life
    /// offset is drawn again ([`Contest::life_sd`]), and the baseline and the control warm up
    /// again (`amplitude`, `tau` as in [`Series::WarmUp`]).
    Revisit { at: u32, amplitude: f64, tau: f64 },
    /// Server lives without a warm-up: every server restarts after each `every` rounds (as a
    /// prewarmed restart would), a new segment, each placement's life offset drawn again; what
    /// the offset's variance over several lives and the per-segment steady check are tested on.
    Lives { every: u32 },
}

/// The contest the rounds come from.
#[derive(Clone, Copy, Debug)]
pub struct Contest {
    pub series: Series,
    /// The contenders' true ratios against the baseline (ln); the last is the control's.
    pub true_log_ratio: [f64; 3],
    /// Standard deviation of one placement's log throughput in one slice, beyond what all
    /// placements of a round share.
    pub sd: f64,
    /// Standard deviation of what the placements of a round share (machine noise), cancelled by
    /// pairing.
    pub common_sd: f64,
    /// Standard deviation of each placement's offset for a server life: drawn at every server
    /// start (the first round, and a revisit's), the same in every round of the life, so pairing
    /// cannot cancel it; the truth is the ratio without it. A ratio's offset has sd
    /// `life_sd * sqrt(2)` (two lives).
    pub life_sd: f64,
    /// Rounds the budget allows at most.
    pub max_rounds: u32,
}

/// An estimator design: how it stops and what interval it gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Design {
    /// pgtier as shipped: [`Rule`] with its warm-up cut, Stein's rule, the corrected interval and
    /// the steady-state check.
    Shipped(Rule),
    /// pgtier before it (kept to show that the coverage test catches it): MSER-5 on each
    /// contender's series, the largest cut applied to all, a paired t interval, stopping as
    /// soon as the widest half-width reaches the target after `min_rounds`.
    Mser5FirstReach { min_rounds: u32, target: f64 },
    /// As [`Design::Shipped`], the rule's prior correlation pooled ([`prior::pool`]) for each
    /// contest afresh from `series` contender series of a simulated A/A campaign of the
    /// contest's noise (its correlation, none of its warm-up, drift, position or revisit; true
    /// ratios 0; the rounds after the rule's fixed cut): the prior's own error counts.
    Pooled { rule: Rule, series: usize },
    /// As [`Design::Shipped`], the rule's priors estimated for each contest afresh as `pgtier
    /// calibrate` estimates them on the machine the contest runs on ([`simulated_calibration`]):
    /// `runs` A/A contests of the contest's noise (three twins of the baseline each, true ratios
    /// 0, the machine's correlation and offset between server lives, none of its warm-up, drift,
    /// position or revisit), never the truth the contest is drawn from.
    Calibrated { rule: Rule, runs: usize },
    /// As [`Design::Shipped`] with the priors of `prior` whatever the machine: an uncalibrated
    /// host's fallback.
    Fixed { rule: Rule, prior: Prior, memory_limited: bool },
    /// As [`Design::Pooled`], and a contest that shows a warm-up at its budget's end (`trigger`)
    /// goes on to `up_to` rounds.
    Extended { rule: Rule, series: usize, up_to: u32, trigger: Trigger },
    /// A bound on what any steady check can find of a warm-up at the budget's rounds: the rounds
    /// after a fixed cut of `discard`, the paired t interval, and a test that knows the warm-up's
    /// shape, e^(-(t-1)/`tau`), and the contest's true per-round noise: the contest is not
    /// steady when a contender's rounds' projection on that curve is significant at `alpha`
    /// (Bonferroni over the contenders). No real check knows either.
    KnownShape { discard: u32, tau: f64, alpha: f64 },
    /// The negative control of the gate: a plain paired t over the rounds after a fixed cut of
    /// `discard`, run to the budget, every contest called steady.
    PlainT { discard: u32 },
}

/// What makes a contest go on past its budget ([`Design::Extended`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// The warm-up cut moved past its fixed rounds in a segment, or a segment is unsettled.
    CutMoved,
    /// As `CutMoved`, or a contender is not steady.
    CutMovedOrUnsteady,
    /// A warm-up curve from the fixed cut significant at this level (Bonferroni over the
    /// contenders), or a segment unsettled.
    Curve(f64),
}

/// What one contender's estimate came to.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    pub covered: bool,
    pub steady: bool,
    /// The interval widened by [`super::DRIFT_ALLOWANCE`] times the contender's drift on each
    /// side covers the truth (what a not-steady change that still stands relies on).
    pub widened_covered: bool,
    /// Half-width of the 95% interval on the ratio (fraction), NaN without an interval.
    pub half_width: f64,
    /// (estimate - truth) / standard error, on the log scale; NaN without an interval.
    pub z: f64,
    pub rounds: u32,
    /// The interval's degrees of freedom (NaN without one).
    pub df: f64,
    /// The truth is 0 and the change would be called real, by whatever path: its interval
    /// excludes 0 in a steady contest, or (not steady) still does widened by the drift
    /// allowance (before Holm's correction: an upper bound on what the report calls real).
    pub null_called_real: bool,
}

impl Outcome {
    /// An interval that misses the truth while the contest is called steady: the error the
    /// coverage test bounds.
    pub fn misleads(&self) -> bool {
        self.steady && !self.covered
    }
}

/// SplitMix64 with Box-Muller normals: a fixed-seed generator for the simulations.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (2.0 * std::f64::consts::PI * self.uniform()).cos()
    }
    fn shuffle(&mut self, v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// Rounds of one contest as they come: per round, each contender's (segment, log ratio).
struct Generator {
    c: Contest,
    noise: [f64; PLACEMENTS],
    /// Each placement's level offset in the current segment (server start).
    shift: [f64; PLACEMENTS],
    round: u32,
}

impl Generator {
    fn new(c: Contest) -> Generator {
        Generator { c, noise: [f64::NAN; PLACEMENTS], shift: [0.0; PLACEMENTS], round: 0 }
    }

    fn segment(&self) -> u32 {
        match self.c.series {
            Series::Revisit { at, .. } if self.round >= at => 2,
            Series::Lives { every } => 1 + self.round.saturating_sub(1) / every.max(1),
            _ => 1,
        }
    }

    fn next(&mut self, rng: &mut Rng) -> [Round; CONTENDERS] {
        self.round += 1;
        let t = self.round;
        let c = self.c;
        let restart = match c.series {
            Series::Revisit { at, .. } => t == at,
            Series::Lives { every } => t > 1 && (t - 1).is_multiple_of(every.max(1)),
            _ => false,
        };
        if t == 1 || restart {
            self.shift = [(); PLACEMENTS].map(|_| c.life_sd * rng.normal());
        }
        let common = c.common_sd * rng.normal();
        let mut order: [usize; PLACEMENTS] = std::array::from_fn(|i| i);
        rng.shuffle(&mut order);
        let mut log_y = [0.0; PLACEMENTS];
        for (p, y) in log_y.iter_mut().enumerate() {
            let z = rng.normal() * c.sd;
            self.noise[p] = match c.series {
                Series::Ar1(rho) if self.noise[p].is_finite() => rho * self.noise[p] + (1.0 - rho * rho).sqrt() * z,
                _ => z,
            };
            let truth = if p == 0 { 0.0 } else { c.true_log_ratio[p - 1] };
            *y = truth + common + self.noise[p] + self.shift[p];
        }
        let warm = |since: u32, amplitude: f64, tau: f64| amplitude * (-(since as f64) / tau).exp();
        match c.series {
            Series::WarmUp { amplitude, tau } => {
                for p in [0, CONTROL] {
                    log_y[p] -= warm(t - 1, amplitude, tau);
                }
            }
            Series::Revisit { at, amplitude, tau, .. } => {
                let since = if t >= at { t - at } else { t - 1 };
                for p in [0, CONTROL] {
                    log_y[p] -= warm(since, amplitude, tau);
                }
            }
            Series::Drift { per_round, settles } => log_y[1] -= per_round * settles.saturating_sub(t) as f64,
            Series::Position { offsets } => {
                for (slot, &p) in order.iter().enumerate() {
                    log_y[p] += offsets[slot];
                }
            }
            Series::Iid | Series::Ar1(_) | Series::Lives { .. } => {}
        }
        let seg = self.segment();
        std::array::from_fn(|c| Round { segment: seg, round: t, log_ratio: log_y[c + 1] - log_y[0] })
    }

    /// The truth a contender's estimate should cover: its steady-state ratio.
    fn truth(&self, contender: usize) -> f64 {
        self.c.true_log_ratio[contender]
    }
}

/// An estimate on the log scale: its mean, standard error and interval half-width.
struct Estimate {
    mean: f64,
    se: f64,
    half_width: f64,
    df: f64,
}

fn outcome(e: Estimate, truth: f64, steady: bool, drift: f64, rounds: u32) -> Outcome {
    let Estimate { mean, se, half_width, df } = e;
    Outcome {
        covered: (mean - truth).abs() <= half_width,
        steady,
        widened_covered: (mean - truth).abs() <= half_width + super::DRIFT_ALLOWANCE * drift,
        half_width: half_width.exp() - 1.0,
        z: if se > 0.0 { (mean - truth) / se } else { f64::NAN },
        rounds,
        df,
        null_called_real: truth == 0.0
            && mean.abs() > half_width
            && (steady || mean.abs() > half_width + super::DRIFT_ALLOWANCE * drift),
    }
}

const NO_INTERVAL: Outcome = Outcome {
    covered: false,
    steady: true,
    widened_covered: false,
    half_width: f64::NAN,
    z: f64::NAN,
    rounds: 0,
    df: f64::NAN,
    null_called_real: false,
};

/// Runs one contest to its stop under `design`; an outcome per contender.
pub fn run_contest(design: Design, contest: Contest, rng: &mut Rng) -> [Outcome; CONTENDERS] {
    let (design, extend) = match design {
        Design::Extended { rule, series, up_to, trigger } => (Design::Pooled { rule, series }, Some((up_to, trigger))),
        d => (d, None),
    };
    let design = match design {
        Design::Pooled { rule, series } => Design::Shipped(Rule {
            rho_prior: Some(simulated_prior(contest, series, rule.discard as usize, rng)),
            life_sd: rule.life_sd.map(|_| simulated_life_prior(contest, LIFE_NULL_CHANGES, rng)),
            life_df: rule.life_sd.map(|_| LIFE_NULL_CHANGES as f64 / 2.0),
            ..rule
        }),
        Design::Calibrated { rule, runs } => Design::Shipped(simulated_calibration(rule, contest, runs, rng)),
        Design::Fixed { rule, prior, memory_limited } => Design::Shipped(rule.with_prior(&prior, memory_limited)),
        d => d,
    };
    let mut g = Generator::new(contest);
    let mut rounds: [Vec<Round>; CONTENDERS] = std::array::from_fn(|_| vec![]);
    loop {
        let r = g.next(rng);
        for (c, r) in r.into_iter().enumerate() {
            rounds[c].push(r);
        }
        let last = g.round >= contest.max_rounds;
        match design {
            Design::Shipped(rule) => {
                // Before the pilot is complete the contest cannot stop (Stein's rule needs it).
                if !last && g.round < rule.discard + rule.pilot as u32 {
                    continue;
                }
                let cut = super::warm_up_cut(&rule, &rounds);
                let p = super::progress_with(&rule, &rounds, &cut);
                let last = last
                    && !extend
                        .is_some_and(|(up_to, trigger)| g.round < up_to && warming(&rule, &rounds, &cut, &p, trigger));
                // As the scheduler (`stop_reason`): the target stops a contest only when it is steady.
                let steady = p.steady.iter().all(|s| *s);
                if (steady && p.done(rule.target.unwrap_or(f64::INFINITY))) || last {
                    return std::array::from_fn(|c| match p.intervals[c] {
                        Some(i) => outcome(
                            Estimate { mean: i.mean, se: i.se, half_width: i.half_width(), df: i.df },
                            g.truth(c),
                            p.steady[c],
                            p.drift[c],
                            g.round,
                        ),
                        None => Outcome { steady: p.steady[c], rounds: g.round, ..NO_INTERVAL },
                    });
                }
            }
            Design::Mser5FirstReach { min_rounds, target } => {
                let series: Vec<Vec<f64>> = rounds.iter().map(|r| r.iter().map(|x| x.log_ratio).collect()).collect();
                let cut = series.iter().map(|s| mser5(s)).max().unwrap_or(0);
                let kept: Vec<&[f64]> = series.iter().map(|s| if cut < s.len() { &s[cut..] } else { &s[..] }).collect();
                let hw: Vec<(f64, f64)> = kept.iter().map(|x| paired_half_width(x)).collect();
                let widest = hw.iter().map(|h| h.0).fold(0.0, f64::max);
                if (g.round >= min_rounds && widest.exp() - 1.0 <= target) || last {
                    return std::array::from_fn(|c| {
                        let (m, _) = mean_sd(kept[c]);
                        let df = (kept[c].len() as f64 - 1.0).max(1.0);
                        outcome(
                            Estimate { mean: m, se: hw[c].1, half_width: hw[c].0, df },
                            g.truth(c),
                            true,
                            0.0,
                            g.round,
                        )
                    });
                }
            }
            Design::Pooled { .. } | Design::Extended { .. } | Design::Calibrated { .. } | Design::Fixed { .. } => {
                unreachable!("made a Shipped design above")
            }
            Design::KnownShape { discard, tau, alpha } => {
                if last {
                    // The per-round sd of a log ratio: each placement's own noise twice (the
                    // common noise and the lives' offsets cancel within a segment).
                    let sd = contest.sd * std::f64::consts::SQRT_2;
                    let z = crate::t_quantile(1.0 - alpha / CONTENDERS as f64 / 2.0, 1e6);
                    let steady = rounds.iter().all(|r| {
                        let r: Vec<&Round> = r.iter().skip(discard as usize).collect();
                        let e: Vec<f64> = r.iter().map(|r| (-((r.round - 1) as f64) / tau).exp()).collect();
                        let (me, _) = mean_sd(&e);
                        let see: f64 = e.iter().map(|v| (v - me).powi(2)).sum();
                        let proj: f64 = e.iter().zip(&r).map(|(u, r)| (u - me) * r.log_ratio).sum();
                        (proj / (sd * see.sqrt())).abs() < z
                    });
                    return std::array::from_fn(|c| {
                        let x: Vec<f64> = rounds[c].iter().skip(discard as usize).map(|r| r.log_ratio).collect();
                        let (m, _) = mean_sd(&x);
                        let (hw, se) = paired_half_width(&x);
                        let df = (x.len() as f64 - 1.0).max(1.0);
                        outcome(Estimate { mean: m, se, half_width: hw, df }, g.truth(c), steady, 0.0, g.round)
                    });
                }
            }
            Design::PlainT { discard } => {
                if last {
                    return std::array::from_fn(|c| {
                        let x: Vec<f64> = rounds[c].iter().skip(discard as usize).map(|r| r.log_ratio).collect();
                        let (m, _) = mean_sd(&x);
                        let (hw, se) = paired_half_width(&x);
                        let df = (x.len() as f64 - 1.0).max(1.0);
                        outcome(Estimate { mean: m, se, half_width: hw, df }, g.truth(c), true, 0.0, g.round)
                    });
                }
            }
        }
    }
}

/// Whether a contest shows a warm-up by `trigger`.
fn warming(rule: &Rule, rounds: &[Vec<Round>], cut: &super::Cut, p: &super::Progress, trigger: Trigger) -> bool {
    let moved = !cut.unsettled.is_empty()
        || cut
            .first_kept
            .iter()
            .any(|(seg, first)| first - cut.dropped.get(seg).copied().unwrap_or(0) + rule.discard < *first);
    match trigger {
        Trigger::CutMoved => moved,
        Trigger::CutMovedOrUnsteady => moved || p.steady.iter().any(|s| !s),
        Trigger::Curve(alpha) => {
            let a = alpha / rounds.len().max(1) as f64;
            !cut.unsettled.is_empty()
                || rounds.iter().any(|r| {
                    cut.first_kept
                        .keys()
                        .any(|&seg| super::fit_warm_up(rule, r, cut, seg, f64::INFINITY).is_some_and(|f| f.p_value < a))
                })
        }
    }
}

/// The prior an A/A campaign of `series` contender series of the contest's noise would give.
fn simulated_prior(contest: Contest, series: usize, discard: usize, rng: &mut Rng) -> f64 {
    let noise = match contest.series {
        Series::Ar1(rho) => Series::Ar1(rho),
        _ => Series::Iid,
    };
    let aa = Contest { series: noise, true_log_ratio: [0.0; 3], ..contest };
    let mut pooled = Vec::with_capacity(series);
    while pooled.len() < series {
        let mut g = Generator::new(aa);
        let mut x: [Vec<f64>; CONTENDERS] = std::array::from_fn(|_| vec![]);
        for _ in 0..aa.max_rounds {
            for (c, r) in g.next(rng).into_iter().enumerate() {
                x[c].push(r.log_ratio);
            }
        }
        for x in x.iter().take(series - pooled.len()) {
            let kept = &x[discard.min(x.len())..];
            pooled.push((lag1(kept, &vec![1; kept.len()]), kept.len()));
        }
    }
    prior::pool(&pooled)
}

/// Null changes a simulated prior of the offset between server lives is pooled from: as many as
/// the product's priors have per workload and memory regime (16).
const LIFE_NULL_CHANGES: usize = 16;

/// The offset between server lives that the null changes of `n / 2` simulated main-job runs
/// would give by [`prior::pool_life_sd`], as the product's priors are made: two null changes per
/// run sharing the baseline's life (the control and the null cell), each the difference of two
/// lives' offsets (sd `contest.life_sd` each) plus its own error, with a standard error drawn
/// from 1.5-7% (the committed runs' range).
fn simulated_life_prior(contest: Contest, n: usize, rng: &mut Rng) -> f64 {
    let mut changes = Vec::with_capacity(n + 1);
    while changes.len() < n {
        let baseline = contest.life_sd * rng.normal();
        for _ in 0..2 {
            let se = 0.015 + 0.055 * rng.uniform();
            changes.push((contest.life_sd * rng.normal() - baseline + se * rng.normal(), se));
        }
    }
    changes.truncate(n);
    prior::pool_life_sd(&changes)
}

/// The plain paired t half-width and standard error (log scale).
fn paired_half_width(x: &[f64]) -> (f64, f64) {
    if x.len() < 2 {
        return (f64::INFINITY, f64::INFINITY);
    }
    let (_, sd) = mean_sd(x);
    let se = sd / (x.len() as f64).sqrt();
    (t975((x.len() - 1) as f64) * se, se)
}

/// Coverage of a design on a kind of contest over `n` replications.
#[derive(Clone, Copy, Debug)]
pub struct Coverage {
    pub replications: usize,
    /// Share of contender estimates whose interval covers the truth or whose contest was called
    /// not steady.
    pub honest: f64,
    /// Share of contender intervals that cover the truth.
    pub covered: f64,
    /// Share of contender estimates called not steady.
    pub not_steady: f64,
    /// Of those, the share whose interval widened by [`super::DRIFT_ALLOWANCE`] times their
    /// drift covers the truth (NaN when none was called not steady).
    pub unsteady_widened_covered: f64,
    /// Monte Carlo standard error of `honest`.
    pub mc_error: f64,
    pub mean_half_width: f64,
    /// The median half-width (the mean is dominated by a few contests with almost no degrees
    /// of freedom).
    pub median_half_width: f64,
    /// The 90th percentile of the half-widths: the tail.
    pub p90_half_width: f64,
    /// The mean of z^2 over the estimates (1 for a standard error that is right on average;
    /// a t with few degrees of freedom gives a little more).
    pub mean_z2: f64,
    pub mean_rounds: f64,
    /// Of the changes whose truth is 0 (the null cell and the control), the share called a real
    /// change by any path ([`Outcome::null_called_real`]).
    pub nulls_called_real: f64,
    /// Of studies of [`MODEL_CONTESTS`] contests, the share whose controls' t statistics fail
    /// the error model's chi-square test at [`MODEL_LEVEL`] (`crate::chi_square_of_t`, as
    /// `analysis::control::model_checks` tests a study's throughput family).
    pub model_failed: f64,
}

/// Contests of a simulated study whose controls the error model's test is run over (the main
/// job's four).
pub const MODEL_CONTESTS: usize = 4;

/// The level of the error model's test per figure family: 5% over the product's three
/// families (throughput, latency, p99 latency), Bonferroni.
pub const MODEL_LEVEL: f64 = 0.05 / 3.0;

/// Runs `n` contests of one kind under a design with a fixed seed.
pub fn coverage(design: Design, contest: Contest, n: usize, seed: u64) -> Coverage {
    let mut rng = Rng(seed);
    let (mut honest, mut covered, mut unsteady, mut hw, mut rounds, mut with_hw) = (0, 0, 0, 0.0, 0.0, 0);
    let (mut z2, mut with_z, mut widened) = (0.0, 0, 0);
    let (mut nulls, mut nulls_real) = (0, 0);
    let (mut studies, mut studies_failed, mut study) = (0, 0, Vec::with_capacity(MODEL_CONTESTS));
    let mut widths = Vec::with_capacity(CONTENDERS * n);
    for _ in 0..n {
        for (c, o) in run_contest(design, contest, &mut rng).into_iter().enumerate() {
            if c == CONTENDERS - 1 && o.z.is_finite() {
                study.push((o.z, o.df));
                if study.len() == MODEL_CONTESTS {
                    studies += 1;
                    studies_failed += crate::chi_square_of_t(&study).is_some_and(|(_, _, p)| p < MODEL_LEVEL) as usize;
                    study.clear();
                }
            }
            if contest.true_log_ratio[c] == 0.0 {
                nulls += 1;
                nulls_real += o.null_called_real as usize;
            }
            honest += !o.misleads() as usize;
            covered += o.covered as usize;
            unsteady += !o.steady as usize;
            widened += (!o.steady && o.widened_covered) as usize;
            if o.half_width.is_finite() {
                hw += o.half_width;
                with_hw += 1;
                widths.push(o.half_width);
            }
            if o.z.is_finite() {
                z2 += o.z * o.z;
                with_z += 1;
            }
            rounds += o.rounds as f64;
        }
    }
    let m = (CONTENDERS * n) as f64;
    let h = honest as f64 / m;
    widths.sort_by(f64::total_cmp);
    Coverage {
        replications: n,
        honest: h,
        covered: covered as f64 / m,
        not_steady: unsteady as f64 / m,
        unsteady_widened_covered: if unsteady > 0 { widened as f64 / unsteady as f64 } else { f64::NAN },
        // The contenders of a contest share the baseline: count contests, not estimates.
        mc_error: (h * (1.0 - h) / n as f64).sqrt(),
        mean_half_width: hw / with_hw.max(1) as f64,
        median_half_width: crate::median(&widths),
        p90_half_width: widths.get(widths.len() * 9 / 10).copied().unwrap_or(f64::NAN),
        mean_z2: z2 / with_z.max(1) as f64,
        mean_rounds: rounds / m,
        nulls_called_real: nulls_real as f64 / nulls.max(1) as f64,
        model_failed: studies_failed as f64 / studies.max(1) as f64,
    }
}

/// The prior the simulated rules start from (the pooled one of the development machine's
/// committed runs as of issue 37): the regime the gate simulates, not any user's. The shipped
/// design pools its own from simulated series ([`Design::Pooled`]).
pub const TYPICAL: Prior = Prior {
    rho: 0.140,
    series: 36,
    life_sd_unlimited: 0.0335,
    life_sd_limited: 0.016,
    null_changes: 24,
    life_df: 12.0,
};

/// The budget of the main job's share per contest: 12-18 rounds kept, 16 made.
pub const MAIN_JOB_ROUNDS: u32 = 16;

/// The series kinds the coverage gate runs, with the main job's noise: per-placement sd 0.08
/// per slice (per-round log ratio sd about 0.11: the target then needs more rounds than the
/// budget allows), machine noise 0.3 shared by the round, true changes +5%, 0 and 0 (the
/// control), the main job's 16 rounds, each server life offset as the pooled prior says
/// ([`TYPICAL`]'s, unlimited memory, for a ratio); two with half the noise and no offset
/// between server lives (as one workload's prior has none), where Stein's rule stops the contest before
/// the budget.
pub fn standard_contests() -> Vec<(&'static str, Contest)> {
    let base = Contest {
        series: Series::Iid,
        true_log_ratio: [(1.05f64).ln(), 0.0, 0.0],
        sd: 0.08,
        common_sd: 0.3,
        life_sd: TYPICAL.life_sd_unlimited / std::f64::consts::SQRT_2,
        max_rounds: MAIN_JOB_ROUNDS,
    };
    let with = |series| Contest { series, ..base };
    let slow = |factor: f64, tau| with(Series::WarmUp { amplitude: factor.ln(), tau });
    vec![
        ("i.i.d.", base),
        ("i.i.d., target within reach", Contest { sd: 0.04, life_sd: 0.0, ..base }),
        ("AR(1) rho 0.3, target within reach", Contest { sd: 0.04, life_sd: 0.0, series: Series::Ar1(0.3), ..base }),
        ("AR(1) rho 0.1", with(Series::Ar1(0.1))),
        ("AR(1) rho 0.2", with(Series::Ar1(0.2))),
        ("AR(1) rho 0.3", with(Series::Ar1(0.3))),
        ("AR(1) rho 0.5", with(Series::Ar1(0.5))),
        ("warm-up transient", with(Series::WarmUp { amplitude: 0.5, tau: 3.0 })),
        ("slow warm-up x3 over 6 rounds", slow(3.0, 6.0)),
        ("slow warm-up x3 over 10 rounds", slow(3.0, 10.0)),
        ("slow warm-up x1.65 over 10 rounds", slow(1.65, 10.0)),
        ("drift to a steady state", with(Series::Drift { per_round: 0.004, settles: 10 })),
        ("position effect", with(Series::Position { offsets: [0.06, 0.02, -0.02, -0.06] })),
        ("revisit (two segments)", with(Series::Revisit { at: 9, amplitude: 0.5, tau: 3.0 })),
        ("two server lives, no warm-up", with(Series::Lives { every: MAIN_JOB_ROUNDS / 2 })),
    ]
}

/// Runs every kind of [`standard_contests`] under `design` on `threads` threads (each kind with
/// the same fixed seed, so the figures do not depend on the threads); `max_rounds` overrides
/// the budget.
pub fn coverage_of_every_kind(
    design: Design,
    n: usize,
    max_rounds: Option<u32>,
    threads: usize,
) -> Vec<(&'static str, Coverage)> {
    coverage_of_kinds(design, &standard_contests(), n, max_rounds, threads)
}

/// Runs every one of `kinds` under `design` on `threads` threads (each with the same fixed
/// seed); `max_rounds` overrides the budget.
pub fn coverage_of_kinds(
    design: Design,
    kinds: &[(&'static str, Contest)],
    n: usize,
    max_rounds: Option<u32>,
    threads: usize,
) -> Vec<(&'static str, Coverage)> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Coverage>>> = Mutex::new(vec![None; kinds.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(_, contest)) = kinds.get(i) else { break };
                    let contest = Contest { max_rounds: max_rounds.unwrap_or(contest.max_rounds), ..contest };
                    let c = coverage(design, contest, n, 0x5eed);
                    out.lock().expect("no thread panicked holding it")[i] = Some(c);
                }
            });
        }
    });
    let out = out.into_inner().expect("no thread panicked holding it");
    kinds.iter().zip(out).map(|((name, _), c)| (*name, c.expect("every kind ran"))).collect()
}

#[cfg(test)]
mod tests;
