//! Prints the coverage of the shipped estimator and of the designs tried against it on every
//! series kind of the coverage gate (docs/benchmarks.md, "Coverage"):
//! `cargo run --release -p stats --features simulate --example coverage [CONTESTS] [MAX_ROUNDS] [DESIGN...]`
//! (MAX_ROUNDS: the rounds the budget allows, the main job's 16 unless given; DESIGN: shipped,
//! nolife, before, longwu4, longwu8, ext2cut, ext15cut, ext2any, ext2curve20, oracle05, oracle20,
//! issue24, pooled, pooledfull, pooledcheck, pooledcheck3, pooledcheck10, pooledcheck20, pooledcurve,
//! pooledcurve05, pooledcut2, pooledcut3, pooledcut4, pooledcut6, pooledcutall, issue24check,
//! fixed03, fixed0, stein, full, batch, mser5, plain; all unless given).

use stats::rounds::simulate::{Design, TYPICAL, Trigger, coverage_of_every_kind};
use stats::rounds::{Final, Rule};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(4000);
    let max_rounds: Option<u32> = args.get(1).and_then(|a| a.parse().ok());
    let chosen: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    // Issue 24's rule: the designs below are variations of it.
    let issue24 = Rule::issue24(2, 6, Some(5.0));
    let designs = [
        (
            "shipped",
            "shipped (issue 37: prior pooled from 18 series, warm-up check, cut past a curve of tau <= 4, not steady past a sixth)",
            Design::Pooled { rule: Rule::new(2, 6, Some(5.0), &TYPICAL), series: 18 },
        ),
        (
            "nolife",
            "issue 37 as first shipped: no offset between server lives",
            Design::Pooled { rule: Rule::workload_prior(2, 6, Some(5.0), &TYPICAL), series: 18 },
        ),
        (
            "before",
            "the estimator before the long warm-up check (workload-prior-life-offset)",
            Design::Pooled { rule: Rule::life_offset(2, 6, Some(5.0), &TYPICAL), series: 18 },
        ),
        (
            "longwu4",
            "shipped, not steady when the cut moved past a quarter of the rounds",
            Design::Pooled {
                rule: Rule { long_warm_up: Some(0.25), ..Rule::new(2, 6, Some(5.0), &TYPICAL) },
                series: 18,
            },
        ),
        (
            "longwu8",
            "shipped, not steady when the cut moved past an eighth of the rounds",
            Design::Pooled {
                rule: Rule { long_warm_up: Some(0.125), ..Rule::new(2, 6, Some(5.0), &TYPICAL) },
                series: 18,
            },
        ),
        (
            "ext2cut",
            "shipped, to twice the rounds when the cut moved",
            Design::Extended {
                rule: Rule::new(2, 6, Some(5.0), &TYPICAL),
                series: 18,
                up_to: 32,
                trigger: Trigger::CutMoved,
            },
        ),
        (
            "ext15cut",
            "shipped, to 1.5 times the rounds when the cut moved",
            Design::Extended {
                rule: Rule::new(2, 6, Some(5.0), &TYPICAL),
                series: 18,
                up_to: 24,
                trigger: Trigger::CutMoved,
            },
        ),
        (
            "ext2any",
            "shipped, to twice the rounds when the cut moved or not steady",
            Design::Extended {
                rule: Rule::new(2, 6, Some(5.0), &TYPICAL),
                series: 18,
                up_to: 32,
                trigger: Trigger::CutMovedOrUnsteady,
            },
        ),
        (
            "ext2curve20",
            "shipped, to twice the rounds when a warm-up curve is significant at 20%",
            Design::Extended {
                rule: Rule::new(2, 6, Some(5.0), &TYPICAL),
                series: 18,
                up_to: 32,
                trigger: Trigger::Curve(0.2),
            },
        ),
        (
            "oracle05",
            "a bound: paired t after 2 rounds, not steady by a test knowing the warm-up's shape (tau 10) and the noise, at 5%",
            Design::KnownShape { discard: 2, tau: 10.0, alpha: 0.05 },
        ),
        ("oracle20", "the same bound, the test at 20%", Design::KnownShape { discard: 2, tau: 10.0, alpha: 0.20 }),
        ("issue24", "issue 24 (per-contest lag-1)", Design::Shipped(issue24)),
        ("pooled", "prior pooled from 18 series", Design::Pooled { rule: issue24, series: 18 }),
        (
            "pooledfull",
            "prior pooled from 18 series, corrected interval only",
            Design::Pooled { rule: Rule { interval: Final::Full, ..issue24 }, series: 18 },
        ),
        (
            "pooledcheck",
            "prior, corrected interval only, warm-up check",
            Design::Pooled { rule: Rule { interval: Final::Full, warm_up_check: true, ..issue24 }, series: 18 },
        ),
        (
            "pooledcheck3",
            "prior, corrected interval only, warm-up check, 3 rounds cut",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, discard: 3, ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcheck10",
            "prior, corrected interval only, warm-up check, steady check at 10%",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, trend_alpha: 0.10, ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcheck20",
            "prior, corrected interval only, warm-up check, steady check at 20%",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, trend_alpha: 0.20, ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcurve",
            "prior, corrected interval only, warm-up check, the curve's level when its warm-up is significant at 20%",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, curve_alpha: Some(0.2), ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcurve05",
            "prior, corrected interval only, warm-up check, the curve's level when its warm-up is significant at 5%",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, curve_alpha: Some(0.05), ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcut4",
            "prior, corrected interval only, warm-up check, the cut moves on while a curve of tau <= 4 is left",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, cut_curve_max_tau: Some(4.0), ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcut3",
            "prior, corrected interval only, warm-up check, the cut moves on while a curve of tau <= 3 is left",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, cut_curve_max_tau: Some(3.0), ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcut6",
            "prior, corrected interval only, warm-up check, the cut moves on while a curve of tau <= 6 is left",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, cut_curve_max_tau: Some(6.0), ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcut2",
            "prior, corrected interval only, warm-up check, the cut moves on while a curve of tau <= 2 is left",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, cut_curve_max_tau: Some(2.0), ..issue24 },
                series: 18,
            },
        ),
        (
            "pooledcutall",
            "prior, corrected interval only, warm-up check, the cut moves on while any curve is left",
            Design::Pooled {
                rule: Rule { interval: Final::Full, warm_up_check: true, cut_curve_max_tau: Some(30.0), ..issue24 },
                series: 18,
            },
        ),
        ("issue24check", "issue 24 with the warm-up check", Design::Shipped(Rule { warm_up_check: true, ..issue24 })),
        ("fixed03", "fixed rho 0.3", Design::Shipped(Rule { rho_prior: Some(0.3), ..issue24 })),
        ("fixed0", "fixed rho 0", Design::Shipped(Rule { rho_prior: Some(0.0), ..issue24 })),
        ("stein", "Stein only", Design::Shipped(Rule { interval: Final::Stein, ..issue24 })),
        ("full", "full only", Design::Shipped(Rule { interval: Final::Full, ..issue24 })),
        ("batch", "batch means (4 batches)", Design::Shipped(Rule { interval: Final::WiderBatch(4), ..issue24 })),
        ("mser5", "MSER-5 + first reach", Design::Mser5FirstReach { min_rounds: 6, target: 0.05 }),
        ("plain", "plain paired t, cut 2", Design::PlainT { discard: 2 }),
    ];
    println!(
        "{n} contests of three contenders each, fixed seed, at most {} rounds",
        max_rounds.map_or("16".to_string(), |m| m.to_string())
    );
    println!(
        "| series | design | covered or not steady | covered | not steady | not steady: widened covers | median / 90th pct / mean half-width | mean z^2 | mean rounds |"
    );
    println!("|---|---|---|---|---|---|---|---:|---:|");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (key, dname, d) in designs {
        if !chosen.is_empty() && !chosen.contains(&key) {
            continue;
        }
        for (name, c) in coverage_of_every_kind(d, n, max_rounds, threads) {
            println!(
                "| {name} | {dname} | {:.1}% ± {:.1} | {:.1}% | {:.1}% | {:.1}% | ±{:.1}% / ±{:.1}% / ±{:.1}% | {:.2} | {:.1} |",
                c.honest * 100.0,
                c.mc_error * 100.0,
                c.covered * 100.0,
                c.not_steady * 100.0,
                c.unsteady_widened_covered * 100.0,
                c.median_half_width * 100.0,
                c.p90_half_width * 100.0,
                c.mean_half_width * 100.0,
                c.mean_z2,
                c.mean_rounds
            );
        }
    }
}
