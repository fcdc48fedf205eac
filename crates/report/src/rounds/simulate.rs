//! The coverage check of the whole estimator: synthetic contests with a known ratio, measured
//! round by round under a stopping rule exactly as the scheduler measures them (the warm-up
//! cut, the stopping rule, the interval and the steady-state check all as shipped), counting
//! how often a contender's 95% interval misses the truth while the contest is called steady.
//! `cargo xtask test` runs it with a fixed seed; `cargo run --release -p report --example
//! coverage` prints the table behind docs/benchmarks.md ("Coverage").

use super::{Round, Rule, progress};
use crate::stats::{mean_sd, mser5, t975};

/// What the synthetic rounds do besides the known change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Series {
    /// Independent rounds.
    Iid,
    /// Each placement's noise is AR(1) over rounds with this lag-1 correlation.
    Ar1(f64),
    /// The baseline starts slow and warms up: its log throughput is `-amplitude e^(-(t-1)/tau)`
    /// in round t (the contenders' ratios start high).
    WarmUp { amplitude: f64, tau: f64 },
    /// The first contender's log ratio drifts by `per_round` each round (the truth is its mean
    /// over the rounds kept).
    Drift { per_round: f64 },
    /// The slice in position k of a round gets `offsets[k]` on its log throughput; the order of
    /// the placements is drawn at random each round, which must cancel it.
    Position { offsets: [f64; 3] },
    /// A server restart at round `at`: a new segment whose rounds start with the baseline's
    /// warm-up transient again.
    Restart { at: u32, amplitude: f64, tau: f64 },
}

/// The contest the rounds come from.
#[derive(Clone, Copy, Debug)]
pub struct Contest {
    pub series: Series,
    /// The contenders' true ratios against the baseline (ln).
    pub true_log_ratio: [f64; 2],
    /// Standard deviation of one placement's log throughput in one slice, beyond what all
    /// placements of a round share.
    pub sd: f64,
    /// Standard deviation of what the placements of a round share (machine noise), cancelled by
    /// pairing.
    pub common_sd: f64,
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
}

/// What one contender's estimate came to.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    pub covered: bool,
    pub steady: bool,
    /// Half-width of the 95% interval on the ratio (fraction), NaN without an interval.
    pub half_width: f64,
    pub rounds: u32,
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
    noise: [f64; 3],
    round: u32,
}

impl Generator {
    fn new(c: Contest) -> Generator {
        Generator { c, noise: [f64::NAN; 3], round: 0 }
    }

    fn segment(&self) -> u32 {
        match self.c.series {
            Series::Restart { at, .. } if self.round >= at => 2,
            _ => 1,
        }
    }

    fn next(&mut self, rng: &mut Rng) -> [Round; 2] {
        self.round += 1;
        let t = self.round;
        let c = self.c;
        let common = c.common_sd * rng.normal();
        let mut order = [0usize, 1, 2];
        rng.shuffle(&mut order);
        let mut log_y = [0.0; 3];
        for (p, y) in log_y.iter_mut().enumerate() {
            let z = rng.normal() * c.sd;
            self.noise[p] = match c.series {
                Series::Ar1(rho) if self.noise[p].is_finite() => rho * self.noise[p] + (1.0 - rho * rho).sqrt() * z,
                _ => z,
            };
            let truth = if p == 0 { 0.0 } else { c.true_log_ratio[p - 1] };
            *y = truth + common + self.noise[p];
        }
        match c.series {
            Series::WarmUp { amplitude, tau } => log_y[0] -= amplitude * (-((t - 1) as f64) / tau).exp(),
            Series::Restart { at, amplitude, tau } => {
                let since = if t >= at { t - at } else { t - 1 };
                log_y[0] -= amplitude * (-(since as f64) / tau).exp();
            }
            Series::Drift { per_round } => log_y[1] += per_round * t as f64,
            Series::Position { offsets } => {
                for (slot, &p) in order.iter().enumerate() {
                    log_y[p] += offsets[slot];
                }
            }
            Series::Iid | Series::Ar1(_) => {}
        }
        let seg = self.segment();
        [1, 2].map(|p| Round { segment: seg, round: t, log_ratio: log_y[p] - log_y[0] })
    }

    /// The truth a contender's estimate should cover, given the rounds it kept.
    fn truth(&self, contender: usize, kept_rounds: &[u32]) -> f64 {
        let base = self.c.true_log_ratio[contender];
        match self.c.series {
            Series::Drift { per_round } if contender == 0 && !kept_rounds.is_empty() => {
                base + per_round * kept_rounds.iter().map(|&r| r as f64).sum::<f64>() / kept_rounds.len() as f64
            }
            _ => base,
        }
    }
}

/// Runs one contest to its stop under `design`; an outcome per contender.
pub fn run_contest(design: Design, contest: Contest, rng: &mut Rng) -> [Outcome; 2] {
    let mut g = Generator::new(contest);
    let mut rounds: [Vec<Round>; 2] = [vec![], vec![]];
    loop {
        let r = g.next(rng);
        rounds[0].push(r[0]);
        rounds[1].push(r[1]);
        let last = g.round >= contest.max_rounds;
        match design {
            Design::Shipped(rule) => {
                let p = progress(&rule, &rounds);
                if p.done(rule.target.unwrap_or(f64::INFINITY)) || last {
                    return [0, 1].map(|c| {
                        let i = p.intervals[c];
                        let truth = g.truth(c, &p.kept_rounds[c]);
                        let (covered, hw) = match i {
                            Some(i) => ((i.mean - truth).abs() <= i.half_width(), i.half_width().exp() - 1.0),
                            None => (false, f64::NAN),
                        };
                        Outcome { covered, steady: p.steady[c], half_width: hw, rounds: g.round }
                    });
                }
            }
            Design::Mser5FirstReach { min_rounds, target } => {
                let series: Vec<Vec<f64>> = rounds.iter().map(|r| r.iter().map(|x| x.log_ratio).collect()).collect();
                let cut = series.iter().map(|s| mser5(s)).max().unwrap_or(0);
                let kept: Vec<&[f64]> = series.iter().map(|s| if cut < s.len() { &s[cut..] } else { &s[..] }).collect();
                let hw: Vec<f64> = kept.iter().map(|x| paired_half_width(x)).collect();
                let widest = hw.iter().cloned().fold(0.0, f64::max);
                if (g.round >= min_rounds && widest.exp() - 1.0 <= target) || last {
                    return [0, 1].map(|c| {
                        let (m, _) = mean_sd(kept[c]);
                        let kept_rounds: Vec<u32> = (cut as u32 + 1..=g.round).collect();
                        let truth = g.truth(c, &kept_rounds);
                        Outcome {
                            covered: (m - truth).abs() <= hw[c],
                            steady: true,
                            half_width: hw[c].exp() - 1.0,
                            rounds: g.round,
                        }
                    });
                }
            }
        }
    }
}

fn paired_half_width(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return f64::INFINITY;
    }
    let (_, sd) = mean_sd(x);
    t975((x.len() - 1) as f64) * sd / (x.len() as f64).sqrt()
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
    /// Monte Carlo standard error of `honest`.
    pub mc_error: f64,
    pub mean_half_width: f64,
    /// The median half-width (the mean is dominated by a few contests with almost no degrees
    /// of freedom).
    pub median_half_width: f64,
    pub mean_rounds: f64,
}

/// Runs `n` contests of one kind under a design with a fixed seed.
pub fn coverage(design: Design, contest: Contest, n: usize, seed: u64) -> Coverage {
    let mut rng = Rng(seed);
    let (mut honest, mut covered, mut unsteady, mut hw, mut rounds, mut with_hw) = (0, 0, 0, 0.0, 0.0, 0);
    let mut widths = Vec::with_capacity(2 * n);
    for _ in 0..n {
        for o in run_contest(design, contest, &mut rng) {
            honest += !o.misleads() as usize;
            covered += o.covered as usize;
            unsteady += !o.steady as usize;
            if o.half_width.is_finite() {
                hw += o.half_width;
                with_hw += 1;
                widths.push(o.half_width);
            }
            rounds += o.rounds as f64;
        }
    }
    let m = (2 * n) as f64;
    let h = honest as f64 / m;
    Coverage {
        replications: n,
        honest: h,
        covered: covered as f64 / m,
        not_steady: unsteady as f64 / m,
        // Two contenders of a contest share the baseline: count contests, not estimates.
        mc_error: (h * (1.0 - h) / n as f64).sqrt(),
        mean_half_width: hw / with_hw.max(1) as f64,
        median_half_width: crate::stats::median(&widths),
        mean_rounds: rounds / m,
    }
}

/// The series kinds the coverage test runs, with the main job's noise: per-placement sd 0.08
/// per slice (per-round log ratio sd about 0.11: the target then needs more rounds than the 30
/// the budget allows), machine noise 0.3 shared by the round, true changes +5% and 0; and two
/// with half the noise, where Stein's rule stops the contest before the budget.
pub fn standard_contests() -> Vec<(&'static str, Contest)> {
    let base = Contest {
        series: Series::Iid,
        true_log_ratio: [(1.05f64).ln(), 0.0],
        sd: 0.08,
        common_sd: 0.3,
        max_rounds: 30,
    };
    let with = |series| Contest { series, ..base };
    vec![
        ("i.i.d.", base),
        ("i.i.d., target within reach", Contest { sd: 0.04, ..base }),
        ("AR(1) rho 0.3, target within reach", Contest { sd: 0.04, series: Series::Ar1(0.3), ..base }),
        ("AR(1) rho 0.1", with(Series::Ar1(0.1))),
        ("AR(1) rho 0.2", with(Series::Ar1(0.2))),
        ("AR(1) rho 0.3", with(Series::Ar1(0.3))),
        ("warm-up transient", with(Series::WarmUp { amplitude: 0.5, tau: 3.0 })),
        ("slow drift", with(Series::Drift { per_round: 0.004 })),
        ("position effect", with(Series::Position { offsets: [0.06, 0.0, -0.06] })),
        ("restart mid-contest", with(Series::Restart { at: 12, amplitude: 0.5, tau: 3.0 })),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::Final;

    /// Contests per series kind: the Monte Carlo standard error of a coverage near 95% is then
    /// about 0.55 percentage points (two contenders per contest, counted once).
    const CONTESTS: usize = 1500;

    fn shipped() -> Rule {
        Rule { discard: 2, pilot: 6, target: Some(0.05), trend_alpha: 0.05, cut_alpha: 0.2, interval: Final::Wider }
    }

    #[test]
    fn the_shipped_estimator_holds_its_95_percent_on_every_series_kind() {
        for (name, contest) in standard_contests() {
            if name.starts_with("restart") {
                continue; // a known limit, in docs/benchmarks.md ("Coverage")
            }
            let c = coverage(Design::Shipped(shipped()), contest, CONTESTS, 0x5eed);
            assert!(
                c.honest >= 0.94,
                "{name}: {:.1}% ± {:.1} of the estimates cover the truth or are called not steady",
                c.honest * 100.0,
                c.mc_error * 100.0
            );
        }
    }

    #[test]
    fn the_shipped_estimator_holds_its_95_percent_at_the_main_jobs_round_counts() {
        // The main job's 3-minute share per contest keeps 12-18 rounds: the same kinds with a
        // budget of 16 rounds (1000 contests each: Monte Carlo error about 0.7 points).
        for (name, contest) in standard_contests() {
            if name.starts_with("restart") {
                continue;
            }
            let c = coverage(Design::Shipped(shipped()), Contest { max_rounds: 16, ..contest }, 1000, 0x5eed);
            assert!(c.honest >= 0.94, "{name} at 16 rounds: {:.1}% ± {:.1}", c.honest * 100.0, c.mc_error * 100.0);
        }
    }

    #[test]
    fn the_coverage_test_fails_the_estimator_before_it() {
        // MSER-5 with the largest cut of all contenders, a plain paired t, and a stop as soon as
        // the half-width first reaches the target: below 94% on correlated rounds.
        let before = Design::Mser5FirstReach { min_rounds: 6, target: 0.05 };
        let (_, ar) = standard_contests().into_iter().find(|(n, _)| *n == "AR(1) rho 0.3").unwrap();
        let c = coverage(before, ar, CONTESTS, 0x5eed);
        assert!(c.honest < 0.90, "{:.1}%", c.honest * 100.0);
        let (_, iid) = standard_contests()[0];
        assert!(coverage(before, iid, CONTESTS, 0x5eed).honest < 0.94, "stopping at the first reach costs coverage");
    }

    #[test]
    fn stein_sizes_a_contest_that_reaches_its_target() {
        // Little noise: the pilot asks for few rounds and the contest stops there, covered.
        let quiet = Contest { sd: 0.01, ..standard_contests()[0].1 };
        let mut rng = Rng(1);
        let o = run_contest(Design::Shipped(shipped()), quiet, &mut rng);
        assert!(o.iter().all(|o| o.rounds < 12 && o.half_width <= 0.05), "{o:?}");
    }
}
