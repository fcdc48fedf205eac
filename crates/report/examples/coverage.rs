//! Prints the coverage of the shipped estimator and of the one before it on every series kind
//! of the coverage test (docs/benchmarks.md, "Coverage"):
//! `cargo run --release -p report --example coverage [REPLICATIONS] [MAX_ROUNDS]` (MAX_ROUNDS:
//! the rounds the budget allows, 30 unless given; the main job keeps 12-18).

use report::rounds::simulate::{Contest, Design, coverage, standard_contests};
use report::rounds::{Final, Rule};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let max_rounds: Option<u32> = std::env::args().nth(2).and_then(|a| a.parse().ok());
    let shipped =
        Rule { discard: 2, pilot: 6, target: Some(0.05), trend_alpha: 0.05, cut_alpha: 0.2, interval: Final::Wider };
    let designs = [
        ("shipped", Design::Shipped(shipped)),
        ("Stein only", Design::Shipped(Rule { interval: Final::Stein, ..shipped })),
        ("full only", Design::Shipped(Rule { interval: Final::Full, ..shipped })),
        ("batch means (4 batches), not shipped", Design::Shipped(Rule { interval: Final::WiderBatch(4), ..shipped })),
        ("MSER-5 + first reach", Design::Mser5FirstReach { min_rounds: 6, target: 0.05 }),
    ];
    println!(
        "{n} contests of two contenders each, fixed seed{}",
        max_rounds.map(|m| format!(", at most {m} rounds")).unwrap_or_default()
    );
    println!(
        "| series | design | covered or not steady | covered | not steady | mean half-width | median half-width | mean rounds |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, contest) in standard_contests() {
        let contest = Contest { max_rounds: max_rounds.unwrap_or(contest.max_rounds), ..contest };
        for (dname, d) in designs {
            let c = coverage(d, contest, n, 0x5eed);
            println!(
                "| {name} | {dname} | {:.1}% ± {:.1} | {:.1}% | {:.1}% | ±{:.1}% | ±{:.1}% | {:.1} |",
                c.honest * 100.0,
                c.mc_error * 100.0,
                c.covered * 100.0,
                c.not_steady * 100.0,
                c.mean_half_width * 100.0,
                c.median_half_width * 100.0,
                c.mean_rounds
            );
        }
    }
}
