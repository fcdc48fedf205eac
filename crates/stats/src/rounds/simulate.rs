//! The coverage gate of the whole estimator: synthetic contests with a known ratio, measured
//! round by round under a stopping rule exactly as the scheduler measures them (the warm-up
//! cut, the stopping rule, the interval and the steady-state check all as shipped), counting
//! how often a contender's 95% interval misses the truth while the contest is called steady.
//! A contest has three contenders against its baseline, as the main job has (a real change, a
//! null cell, and a control that is the baseline's twin and warms up with it), and the budget
//! the main job's share gives (16 rounds). `cargo xtask test` runs the gate with a fixed seed;
//! `cargo run --release -p stats --example coverage` prints the table behind
//! docs/benchmarks.md ("Coverage").

use super::prior::{self, Prior};
use super::{Round, Rule, lag1};
use crate::{mean_sd, mser5, t975};

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

/// `rule` with the priors a calibration of `runs` A/A contests on the contest's machine gives, as
/// `pgtier calibrate` estimates them (`analysis::calibration`): each A/A contest the contest's
/// noise with true ratios 0 (its correlation and its offsets between server lives; none of its
/// warm-up, drift, position or revisit), the rule's fixed cut; the correlation pooled over every
/// twin's kept rounds ([`prior::pool`]), then each twin's interval at that correlation without an
/// offset, and the offset from the spread of each contest's lives
/// ([`prior::life_sd_from_twins`]) with its degrees of freedom.
pub fn simulated_calibration(rule: Rule, contest: Contest, runs: usize, rng: &mut Rng) -> Rule {
    let noise = match contest.series {
        Series::Ar1(rho) => Series::Ar1(rho),
        _ => Series::Iid,
    };
    let aa = Contest { series: noise, true_log_ratio: [0.0; 3], ..contest };
    let discard = rule.discard as usize;
    let mut kept: Vec<Vec<f64>> = Vec::with_capacity(runs * CONTENDERS);
    for _ in 0..runs {
        let mut g = Generator::new(aa);
        let mut x: [Vec<f64>; CONTENDERS] = std::array::from_fn(|_| vec![]);
        for _ in 0..aa.max_rounds {
            for (c, r) in g.next(rng).into_iter().enumerate() {
                x[c].push(r.log_ratio);
            }
        }
        kept.extend(x.into_iter().map(|x| x[discard.min(x.len())..].to_vec()));
    }
    let series: Vec<(f64, usize)> = kept.iter().map(|k| (lag1(k, &vec![1; k.len()]), k.len())).collect();
    let rho = prior::pool(&series);
    let rho = if rho.is_finite() { rho } else { TYPICAL.rho };
    let no_offset = Rule { rho_prior: rule.rho_prior.map(|_| rho), life_sd: None, life_df: None, ..rule };
    let contests: Vec<Vec<(f64, f64)>> = kept
        .chunks(CONTENDERS)
        .map(|twins| {
            twins
                .iter()
                .filter_map(|k| super::estimate(&no_offset, k, &vec![1; k.len()]).map(|i| (i.mean, i.se)))
                .collect()
        })
        .collect();
    let (sd, df) = prior::life_sd_from_twins(&contests);
    Rule {
        rho_prior: rule.rho_prior.map(|_| rho),
        life_sd: rule.life_sd.map(|_| if sd.is_finite() { sd } else { 0.0 }),
        life_df: rule.life_sd.map(|_| df.max(1.0)),
        ..rule
    }
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

/// The machines a user may run on, unlike the development machine the committed priors come
/// from (issue 48): the main job's contest (its noise, a +5% change, a null cell and the
/// control) on machines whose offset between server lives (on a ratio) is 0, 5% or 10%, whose
/// rounds are AR(1) with rho 0.5, or whose first contender drifts 1% a round all contest long
/// (its truth the level it reaches in the budget's last round).
pub fn machine_kinds() -> Vec<(&'static str, Contest)> {
    let base = standard_contests()[0].1;
    let offset = |ratio_sd: f64| ratio_sd / std::f64::consts::SQRT_2;
    vec![
        ("no offset, no correlation", Contest { life_sd: 0.0, ..base }),
        ("offset 5%", Contest { life_sd: offset(0.05), ..base }),
        ("offset 10%", Contest { life_sd: offset(0.10), ..base }),
        ("AR(1) 0.5, offset 3.35%", Contest { series: Series::Ar1(0.5), ..base }),
        ("AR(1) 0.5, no offset", Contest { series: Series::Ar1(0.5), life_sd: 0.0, ..base }),
        (
            "drift 1% a round, sustained",
            Contest { series: Series::Drift { per_round: 0.01, settles: MAIN_JOB_ROUNDS }, ..base },
        ),
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
mod tests {
    use super::*;

    /// Contests per series kind: the Monte Carlo standard error of a coverage near 95% is then
    /// about 0.35 percentage points (three contenders per contest, counted once).
    const CONTESTS: usize = 4000;

    /// Kinds on which the shipped estimator is known to fall short of 94% (docs/benchmarks.md,
    /// "No revisits"): the gate asserts that they still do, so that a change that fixes one must
    /// move it into the gate. A revisit's second segment (87.6%): the scheduler no longer
    /// revisits a contest, so only a crash restart makes one, and its warning says the contest
    /// is outside the gate.
    const KNOWN_SHORT: &[&str] = &["revisit (two segments)"];

    /// Kinds on which the shipped estimator's intervals are known to be too wide: they cover
    /// the truth more than 97% of the time, where a calibrated 95% interval covers 94-97
    /// (issue 37, item 4). Asserted like [`KNOWN_SHORT`]: none for the shipped estimator.
    const KNOWN_WIDE: &[&str] = &[];

    /// The kinds issue 24's estimator fails (below 94%, or above 97% covered): the gate's
    /// negative test on the estimator the shipped one replaced.
    const ISSUE24_SHORT: &[&str] = &[
        "AR(1) rho 0.5",
        "warm-up transient",
        "slow warm-up x3 over 6 rounds",
        "slow warm-up x3 over 10 rounds",
        "slow warm-up x1.65 over 10 rounds",
        "revisit (two segments)",
    ];
    /// Only where the offset between server lives is 0 since the gate's contests have one
    /// (before: the i.i.d. and AR(1) 0.1-0.3 rounds, drift and the position effect too), and
    /// where two lives average it (issue 24 counted a life's offset as rounds' noise).
    const ISSUE24_WIDE: &[&str] = &["i.i.d., target within reach", "two server lives, no warm-up"];

    /// The kinds the estimator without the offset between server lives fails (below 94%).
    const NO_LIFE_SHORT: &[&str] = &[
        "i.i.d.",
        "AR(1) rho 0.1",
        "AR(1) rho 0.2",
        "AR(1) rho 0.3",
        "AR(1) rho 0.5",
        "warm-up transient",
        "slow warm-up x1.65 over 10 rounds",
        "drift to a steady state",
        "position effect",
        "revisit (two segments)",
    ];

    /// The design the main job ships (2 rounds cut, a pilot of 6, a ±5% target), as `Rule::new`
    /// makes it, with its correlation prior pooled from 18 series of the kind and its offset
    /// between server lives from 16 null changes (as the product's priors are pooled from the
    /// main job's real runs per workload): the gate tests what the report and the scheduler use,
    /// the priors' own error included.
    fn shipped() -> Design {
        Design::Pooled { rule: Rule::new(2, 6, Some(5.0), &TYPICAL), series: 18 }
    }

    /// What the gate finds of a design: the kinds below 94% (honest: covered or called not
    /// steady), the kinds above 97% covered, the kinds where the intervals of the estimates
    /// called not steady, widened by [`super::super::DRIFT_ALLOWANCE`] times their drift (what a
    /// change that stands despite not being steady relies on), cover less than 95%, and the
    /// table of every kind for the assertions' messages.
    struct Bounds {
        short: Vec<&'static str>,
        wide: Vec<&'static str>,
        drift_short: Vec<&'static str>,
        table: String,
    }

    fn outside_the_bounds(design: Design) -> Bounds {
        let mut b = Bounds { short: vec![], wide: vec![], drift_short: vec![], table: String::new() };
        for (name, c) in coverage_of_every_kind(design, CONTESTS, None, 2) {
            b.table.push_str(&format!(
                "{name}: {:.1}% ± {:.1} covered or not steady, {:.1}% covered, {:.1}% not steady ({:.1}% covered widened by the drift allowance), median ±{:.1}%, mean z^2 {:.2}\n",
                c.honest * 100.0,
                c.mc_error * 100.0,
                c.covered * 100.0,
                c.not_steady * 100.0,
                c.unsteady_widened_covered * 100.0,
                c.median_half_width * 100.0,
                c.mean_z2
            ));
            if c.honest < 0.94 {
                b.short.push(name);
            }
            if c.covered > 0.97 {
                b.wide.push(name);
            }
            if c.unsteady_widened_covered < 0.95 {
                b.drift_short.push(name);
            }
        }
        b
    }

    /// The gate on every kind: an interval that misleads (misses the truth in a contest called
    /// steady) at most 6% of the time, and intervals that cover at most 97% of the time
    /// (wider than a 95% interval needs to be is a wrong figure too). The kinds outside either
    /// bound are asserted to be the known ones.
    #[test]
    fn the_coverage_gate_at_the_main_jobs_round_counts() {
        let Bounds { short, wide, drift_short, table } = outside_the_bounds(shipped());
        assert_eq!(short, KNOWN_SHORT, "kinds below 94%:\n{table}");
        assert_eq!(wide, KNOWN_WIDE, "kinds whose intervals cover more than 97%:\n{table}");
        // A change of a contest that is not steady stands when its interval lies beyond twice
        // its drift: on every kind, the intervals so widened cover the truth at least 95% of
        // the time (allowances of 1 and 1.5 fall short on the slow warm-up and the revisit).
        assert!(drift_short.is_empty(), "kinds whose not-steady intervals, widened, cover less than 95%:\n{table}");
    }

    #[test]
    fn the_gate_fails_the_estimator_of_issue_24() {
        // The negative test of item 3: the estimator before this one misses the slow warm-ups
        // and the revisit, and (the offsets between server lives simulated) AR(1) 0.5 and the
        // warm-up transient; it is too wide where the target is within reach.
        let Bounds { short, wide, table, .. } = outside_the_bounds(Design::Shipped(Rule::issue24(2, 6, Some(5.0))));
        assert_eq!(short, ISSUE24_SHORT, "kinds below 94%:\n{table}");
        assert_eq!(wide, ISSUE24_WIDE, "kinds whose intervals cover more than 97%:\n{table}");
    }

    /// Contests per machine of [`machine_kinds`]: a calibration is simulated for each, so
    /// fewer than the gate's (Monte Carlo standard error about 0.6 points on coverage, 0.4 on
    /// the share of nulls called real).
    const MACHINE_CONTESTS: usize = 1500;

    /// The most nulls a design may call real: 5%, what a calibrated 95% interval gives before
    /// Holm's correction, plus two Monte Carlo standard errors at [`MACHINE_CONTESTS`] (two
    /// nulls a contest).
    const NULLS_REAL_BOUND: f64 = 0.058;

    /// What the gate finds of a design on the machines of [`machine_kinds`]: the kinds below
    /// 94% covered or not steady, above 97% covered, with more than 5% of nulls called real, or
    /// a mean z^2 outside [0.8, 1.6] (about nu / (nu - 2) for the intervals' 6 to 12 degrees of
    /// freedom; a standard error too small on average shows as more), and the table.
    fn machines(design: Design) -> (Vec<&'static str>, String) {
        machines_with(design).0
    }

    /// The machines a design fails, and the table.
    type Verdicts = (Vec<&'static str>, String);

    /// [`machines`], and each machine's share of studies whose error model failed.
    fn machines_with(design: Design) -> (Verdicts, Vec<(&'static str, f64)>) {
        let mut failed = vec![];
        let mut table = String::new();
        let mut model = vec![];
        for (name, c) in coverage_of_kinds(design, &machine_kinds(), MACHINE_CONTESTS, None, 2) {
            table.push_str(&format!(
                "{name}: {:.1}% covered or not steady, {:.1}% covered, mean z^2 {:.2}, median ±{:.1}%, nulls called real {:.1}%, error model failed {:.1}%\n",
                c.honest * 100.0,
                c.covered * 100.0,
                c.mean_z2,
                c.median_half_width * 100.0,
                c.nulls_called_real * 100.0,
                c.model_failed * 100.0
            ));
            model.push((name, c.model_failed));
            let z2_ok = (0.8..=1.6).contains(&c.mean_z2) || name.starts_with("drift");
            if c.honest < 0.94 || c.covered > 0.97 || c.nulls_called_real > NULLS_REAL_BOUND || !z2_ok {
                failed.push(name);
            }
        }
        ((failed, table), model)
    }

    /// Issue 48's gate: the priors estimated as `pgtier calibrate` estimates them on the machine
    /// itself (4 A/A runs, the default), never read from the truth, on machines unlike the
    /// development machine: coverage 94-97%, nulls called real by any path at most 5% (within the
    /// simulation's error), mean z^2 in its band, on every machine but the sustained drift's
    /// (90.8% covered or not steady: the drifting contender is flagged in about 3 contests of 4,
    /// and its nulls stay within the bound).
    #[test]
    fn the_gate_on_machines_unlike_the_development_machine() {
        let rule = Rule::new(2, 6, Some(5.0), &TYPICAL);
        let ((failed, table), model) = machines_with(Design::Calibrated { rule, runs: 4 });
        assert_eq!(failed, ["drift 1% a round, sustained"], "machines the calibrated estimator fails:\n{table}");
        // The error model's test of a study's controls: few false alarms where the priors are
        // the machine's own (1.7% at its level; the calibration's own error adds some).
        assert!(model.iter().all(|(_, f)| *f <= 0.08), "the error model's false alarms:\n{table}");
    }

    /// The gate's negative test: tpcb's committed prior (no offset between server lives, as
    /// shipped before calibration) on machines with one, and the uncalibrated fallback on a
    /// machine with twice its offset.
    #[test]
    fn the_machine_gate_fails_the_priors_of_another_machine() {
        let rule = Rule::new(2, 6, Some(5.0), &TYPICAL);
        let tpcb = Prior { life_sd_unlimited: 0.0, life_sd_limited: 0.0, ..TYPICAL };
        let ((failed, table), model) = machines_with(Design::Fixed { rule, prior: tpcb, memory_limited: false });
        for kind in ["offset 5%", "offset 10%", "AR(1) 0.5, offset 3.35%"] {
            assert!(failed.contains(&kind), "{kind} passed with tpcb's committed prior:\n{table}");
        }
        // The error model's test sees it: most studies on a machine with three times the offset.
        assert!(model.iter().any(|(k, f)| *k == "offset 10%" && *f > 0.5), "the error model missed it:\n{table}");
        let read_only = Prior { life_sd_unlimited: 0.05, ..TYPICAL };
        let (failed, table) = machines(Design::Fixed { rule, prior: read_only, memory_limited: false });
        assert!(failed.contains(&"offset 10%"), "the fallback held at twice its offset:\n{table}");
        assert!(failed.contains(&"no offset, no correlation"), "the fallback is too wide without an offset:\n{table}");
    }

    #[test]
    fn the_gate_fails_the_estimator_without_the_offset_between_server_lives() {
        // Issue 37's estimator as first shipped, on contests whose server lives are offset as
        // the main job's committed runs show: too narrow on every kind but the flagged ones.
        let rule = Rule::workload_prior(2, 6, Some(5.0), &TYPICAL);
        let Bounds { short, wide, table, .. } = outside_the_bounds(Design::Pooled { rule, series: 18 });
        assert_eq!(short, NO_LIFE_SHORT, "kinds below 94%:\n{table}");
        assert!(wide.is_empty(), "kinds whose intervals cover more than 97%:\n{table}");
    }

    #[test]
    fn the_gate_fails_the_estimator_without_the_long_warm_up_check() {
        // The estimator result sets recording `workload-prior-life-offset` were read with: a
        // slow warm-up of x1.65 over 10 rounds whose cut moved far is still called steady.
        let rule = Rule::life_offset(2, 6, Some(5.0), &TYPICAL);
        let Bounds { short, wide, table, .. } = outside_the_bounds(Design::Pooled { rule, series: 18 });
        assert_eq!(short, ["slow warm-up x1.65 over 10 rounds", "revisit (two segments)"], "kinds below 94%:\n{table}");
        assert!(wide.is_empty(), "kinds whose intervals cover more than 97%:\n{table}");
    }

    #[test]
    fn a_plain_paired_t_fails_the_gate() {
        // The negative test at the main job's 16 rounds: a fixed cut of 2 rounds and a plain
        // paired t, without the correction for correlated rounds or the trend tests.
        let plain = Design::PlainT { discard: 2 };
        let kinds = standard_contests();
        let (_, ar) = kinds.iter().find(|(n, _)| *n == "AR(1) rho 0.3").unwrap();
        let c = coverage(plain, *ar, CONTESTS, 0x5eed);
        assert!(c.honest < 0.92, "AR(1) 0.3: {:.1}%", c.honest * 100.0);
        let (_, warm) = kinds.iter().find(|(n, _)| *n == "warm-up transient").unwrap();
        let c = coverage(plain, *warm, CONTESTS, 0x5eed);
        assert!(c.honest < 0.94, "warm-up transient: {:.1}%", c.honest * 100.0);
    }

    #[test]
    fn the_coverage_test_fails_the_estimator_before_it() {
        // MSER-5 with the largest cut of all contenders, a plain paired t, and a stop as soon as
        // the half-width first reaches the target: below 94% on correlated rounds.
        let before = Design::Mser5FirstReach { min_rounds: 6, target: 0.05 };
        let (_, ar) = standard_contests().into_iter().find(|(n, _)| *n == "AR(1) rho 0.3").unwrap();
        let c = coverage(before, Contest { max_rounds: 30, ..ar }, 1500, 0x5eed);
        assert!(c.honest < 0.90, "{:.1}%", c.honest * 100.0);
    }

    #[test]
    fn stein_sizes_a_contest_that_reaches_its_target() {
        // Little noise: the pilot asks for few rounds and the contest stops there, covered.
        // No offset between server lives (simulated or assumed: the pooled prior's alone puts
        // the interval above ±5%).
        let quiet = Contest { sd: 0.01, life_sd: 0.0, max_rounds: 30, ..standard_contests()[0].1 };
        let mut rng = Rng(1);
        let rule = Rule { life_sd: Some(0.0), ..Rule::new(2, 6, Some(5.0), &TYPICAL) };
        let o = run_contest(Design::Pooled { rule, series: 18 }, quiet, &mut rng);
        assert!(o.iter().all(|o| o.rounds < 12 && o.half_width <= 0.05), "{o:?}");
    }

    #[test]
    fn the_control_warms_up_with_the_baseline() {
        // A warm-up of the baseline alone: the control's ratio does not show it, the others do.
        let c = Contest { sd: 0.0, common_sd: 0.0, life_sd: 0.0, ..standard_contests()[8].1 };
        let mut g = Generator::new(c);
        let first = g.next(&mut Rng(3));
        assert!(first[0].log_ratio > 1.0 && first[1].log_ratio > 1.0, "{first:?}");
        assert!(first[2].log_ratio.abs() < 1e-12, "{first:?}");
    }
}
